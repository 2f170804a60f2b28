//! Stack signatures remembered by their trace's shape: a dump repeats a few traces with
//! different messages, and parsing each costs more than all the rest of reading its row.

use std::cell::RefCell;
use std::collections::HashMap;

/// Shapes remembered per thread before the memory starts over.
const REMEMBERED: usize = 4096;

type Memory = (Vec<u8>, HashMap<Vec<u8>, String, foldhash::fast::FixedState>);

thread_local! {
    static MEMORY: RefCell<Memory> = RefCell::new((Vec::new(), HashMap::default()));
}

/// `with` given the signature of `trace` under rules written as `rules`, by `compute` (which
/// also says whether the trace had frames) or from memory: traces of one shape with frames
/// have one signature, since a signature with frames never reads an exception's message.
pub fn with_remembered<T>(rules: &[u8], trace: &str, compute: impl FnOnce() -> (String, bool), with: impl FnOnce(&str) -> T) -> T {
    MEMORY.with(|memory| {
        let mut memory = memory.borrow_mut();
        let (key, known) = &mut *memory;
        key.clear();
        key.extend_from_slice(rules);
        shape(trace, key);
        if let Some(signature) = known.get(key.as_slice()) {
            return with(signature);
        }
        let (signature, with_frames) = compute();
        let out = with(&signature);
        if with_frames {
            if known.len() >= REMEMBERED {
                known.clear();
            }
            known.insert(key.clone(), signature);
        }
        out
    })
}

/// Every line of a trace as it is, except on unindented lines (where exceptions are
/// written: `Type: message`, `Caused by: Type: message`, .NET's `A: m ---> B: m`) the text
/// after each type, which is the message.
fn shape(trace: &str, into: &mut Vec<u8>) {
    for line in trace.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.starts_with([' ', '\t']) || !line.contains(": ") {
            into.extend_from_slice(line.as_bytes());
        } else {
            let (marker, rest) = ["Caused by: ", "[cause]: ", "Suppressed: "]
                .iter()
                .find_map(|m| line.strip_prefix(m).map(|rest| (*m, rest)))
                .unwrap_or(("", line));
            into.extend_from_slice(marker.as_bytes());
            for part in rest.split(" ---> ") {
                match part.split_once(": ") {
                    Some((kind, _)) => {
                        into.extend_from_slice(kind.as_bytes());
                        into.push(1);
                    }
                    None => {
                        into.extend_from_slice(part.as_bytes());
                        into.push(2);
                    }
                }
            }
        }
        into.push(b'\n');
    }
}
