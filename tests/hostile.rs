//! The regression corpus of hostile inputs (`tests/hostile/<case>/`, each found by
//! `make fuzz`, with a README saying what it broke): every command that reads such a file
//! ends within a minute with an exit code dlqf documents, never a panic, a signal or a hang,
//! within 1 GiB of address space (an allocation a header claims beyond it is an abort).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::Dir;

/// The commands that read a file of this name, as `scripts/fuzz.py` runs them.
fn commands(name: &str) -> Vec<Vec<String>> {
    let list: Vec<Vec<&str>> = if name.ends_with(".manifest") {
        vec![vec!["show", name], vec!["execute", name, "--dry-run", "--target", "file:out", "--ledger", "out.db", "--quarantine", "file:out.q"]]
    } else if name.ends_with(".state") {
        vec![vec!["rank", name, "--format", "json"], vec!["trend", name, "--format", "json"], vec!["health", name, "--format", "json"], vec!["diff", name, name, "--format", "json"]]
    } else {
        let profile: &[&str] = if name.contains("envelope") { &["--profile", "envelope"] } else { &[] };
        let mut read: Vec<Vec<&str>> = [vec!["rank", name, "--format", "json"], vec!["trend", name, "--format", "json"], vec!["health", name, "--format", "json"], vec!["plan", name, "-o", "out.manifest"]]
            .into_iter()
            .map(|mut c| {
                c.extend(profile);
                c
            })
            .collect();
        if name.ends_with(".parquet") {
            // polars' own reader reads it whole.
            read.push(vec!["query", name, "--execute", "SELECT * FROM dlq"]);
        }
        read
    };
    list.into_iter().map(|c| c.into_iter().map(str::to_string).collect()).collect()
}

/// `command` limited to 1 GiB of address space (run on two threads, as threads reserve
/// address space too): an input that makes dlqf allocate what a header claims aborts instead
/// of passing unnoticed.
fn within_memory(command: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe, and nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 1 << 30, rlim_max: 1 << 30 };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        })
    }
}

#[test]
fn every_saved_hostile_input_is_an_error_or_a_report_never_a_crash() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    let mut cases: Vec<_> = std::fs::read_dir(&corpus).unwrap().map(|e| e.unwrap().path()).collect();
    cases.sort();
    assert!(!cases.is_empty());
    for case in cases {
        for file in std::fs::read_dir(&case).unwrap().map(|e| e.unwrap().path()).filter(|p| p.file_name().unwrap() != "README") {
            let name = file.file_name().unwrap().to_str().unwrap().to_string();
            for args in commands(&name) {
                let dir = Dir::new();
                std::fs::copy(&file, dir.join(&name)).unwrap();
                let mut command = Command::new(env!("CARGO_BIN_EXE_dlqf"));
                command.current_dir(dir.path()).args(["--threads", "2"]).args(&args).stdout(Stdio::null()).stderr(Stdio::piped());
                let mut child = within_memory(&mut command).spawn().unwrap();
                let started = Instant::now();
                let status = loop {
                    if let Some(status) = child.try_wait().unwrap() {
                        break status;
                    }
                    if started.elapsed() > Duration::from_secs(60) {
                        child.kill().unwrap();
                        panic!("{}: `{}` still ran after 60 s", case.display(), args.join(" "));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                };
                let mut stderr = String::new();
                std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
                let what = format!("{}: `{}`: {status}: {stderr}", case.display(), args.join(" "));
                assert!(matches!(status.code(), Some(0..=4)), "{what}");
                assert!(!stderr.contains("panicked"), "{what}");
            }
        }
    }
}
