//! Stack traces as signatures (`normalize = "stack"`): the root cause's exception type and its
//! first frames in the application's own code, as Sentry groups, so two causes behind one
//! wrapper, or one error type raised in two places, are two buckets.

mod in_app;
mod parse;
mod shape;

pub use in_app::InApp;
pub use parse::{Exception, Frame, Language};

use super::template::{Explained, Mask};

/// How a stack normaliser chooses frames: how many, and which are the application's.
#[derive(Clone)]
pub struct StackRules {
    pub frames: usize,
    pub in_app: InApp,
    /// This set of rules among all made in the process (copies share it): it keys the
    /// signatures remembered (`shape`) in 8 bytes, where the rules' text runs to hundreds.
    serial: u64,
}

impl PartialEq for StackRules {
    fn eq(&self, other: &StackRules) -> bool {
        self.frames == other.frames && self.in_app == other.in_app
    }
}

impl Eq for StackRules {}

impl std::fmt::Debug for StackRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StackRules").field("frames", &self.frames).field("in_app", &self.in_app).finish()
    }
}

impl Default for StackRules {
    fn default() -> StackRules {
        StackRules::new(DEFAULT_FRAMES, InApp::default())
    }
}

pub const DEFAULT_FRAMES: usize = 3;

impl StackRules {
    pub fn new(frames: usize, in_app: InApp) -> StackRules {
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        StackRules { frames, in_app, serial: MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) }
    }

    /// `Type at frame, frame, frame`: the root cause's type and its first `frames` in-app
    /// frames nearest the raise (all frames when none is in-app). A Python frame nearest the
    /// raise carries its source line, which tells two raises in one function apart. Text with
    /// no frame is the root cause of a message (its type and the template of its message).
    pub fn signature(&self, trace: &str) -> String {
        self.with_signature(trace, str::to_string)
    }

    /// `with` given the signature of `trace` (remembered by the trace's shape, not copied).
    pub fn with_signature<T>(&self, trace: &str, with: impl FnOnce(&str) -> T) -> T {
        // An absent trace (an optional field) is most rows of some dumps: nothing to parse.
        if trace.is_empty() {
            return with("");
        }
        shape::with_remembered(self.serial, shape::Written::Text(trace), || self.compute(trace), with)
    }

    /// `with_signature` for a trace still written as a JSON string (its escapes in place, its
    /// closing quote last): remembered by the shape of the text as written, so a row whose
    /// shape was seen needs no unescaping. `unescape` gives the text when it must be parsed.
    pub fn with_signature_escaped<T>(&self, raw: &str, unescape: impl Fn(&str) -> String, with: impl FnOnce(&str) -> T) -> T {
        self.with_signature_escaped_by(raw, StackRules::escaped_digest(raw), unescape, with)
    }

    /// The digest `with_signature_escaped` remembers a trace written as a JSON string by, for
    /// a caller that reads one trace under several rules (a row's slots) to take once. None
    /// for an empty trace, which has no signature to remember.
    pub fn escaped_digest(raw: &str) -> Option<u128> {
        if raw == "\"" {
            return None;
        }
        shape::digest(shape::Written::Json(raw))
    }

    /// `with_signature_escaped` given the trace's digest (`escaped_digest`).
    pub fn with_signature_escaped_by<T>(&self, raw: &str, digest: Option<u128>, unescape: impl Fn(&str) -> String, with: impl FnOnce(&str) -> T) -> T {
        if raw == "\"" {
            return with("");
        }
        shape::with_digest(self.serial, digest, || self.compute(&unescape(raw)), with)
    }

    /// The signature of a trace parsed now, and whether it had frames (so that it does not
    /// depend on its messages and may be remembered by shape).
    fn compute(&self, trace: &str) -> (String, bool) {
        match self.choose(trace) {
            Some((root, chosen)) => (self.name(&root, &chosen), true),
            None => (super::root_cause(trace), false),
        }
    }

    /// The signature and, for a reviewer, the root cause and each frame chosen.
    pub fn explain(&self, trace: &str) -> Explained {
        let Some((root, chosen)) = self.choose(trace) else {
            let template = super::root_cause(trace);
            return Explained { masks: vec![Mask { rule: "no frames", value: template.clone() }], template };
        };
        let cause = if root.message.is_empty() { root.kind.to_string() } else { format!("{}: {}", root.kind, root.message) };
        let mut masks = vec![Mask { rule: "root cause", value: cause }];
        masks.extend(chosen.iter().map(|f| Mask { rule: "frame", value: f.raw.to_string() }));
        Explained { template: self.name(&root, &chosen), masks }
    }

    /// The root cause of a trace with frames, and the frames its signature names.
    fn choose<'t>(&self, trace: &'t str) -> Option<(Exception<'t>, Vec<Frame<'t>>)> {
        let (language, mut root) = parse::root_cause(trace)?;
        let frames = std::mem::take(&mut root.frames);
        let in_app: Vec<bool> = frames.iter().map(|f| self.in_app.contains(language, f)).collect();
        let any_in_app = in_app.contains(&true);
        let chosen = frames.into_iter().zip(in_app).filter(|(_, own)| !any_in_app || *own).map(|(f, _)| f).take(self.frames).collect();
        Some((root, chosen))
    }

    /// `Type at module.function, …`; the type alone where no frame is asked for (`frames = 0`).
    fn name(&self, root: &Exception, chosen: &[Frame]) -> String {
        let kind = if root.kind.is_empty() { "?" } else { root.kind };
        if chosen.is_empty() {
            return kind.to_string();
        }
        let mut out = format!("{kind} at ");
        for (i, frame) in chosen.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&frame.name());
            if i == 0 && !frame.source.is_empty() {
                let source = frame.source.split_whitespace().collect::<Vec<_>>().join(" ");
                out.push_str(&format!(" ({})", cap(&source, 80)));
            }
        }
        out
    }
}

fn cap(text: &str, chars: usize) -> &str {
    text.char_indices().nth(chars).map_or(text, |(at, _)| &text[..at])
}

#[cfg(test)]
mod tests;
