//! The test harness: a scratch directory (`Dir`) and a way to run the dlqf binary in it
//! (`TestCommand`) with assertions on exit code, stdout and stderr.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::io::Write;

pub struct Dir {
    tmp: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Dir {
        Dir { tmp: tempfile::tempdir().expect("temp dir") }
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// Creates `name` (and its folders) with `contents`.
    pub fn create(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, contents).unwrap();
        path
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.join(name)).unwrap()
    }

    pub fn command(&self) -> TestCommand {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dlqf"));
        cmd.current_dir(self.path());
        TestCommand { cmd, stdin: None }
    }

    /// The dlqf binary run by qemu's user-mode emulator on its baseline x86-64 CPU (`qemu64`:
    /// no SSE4, AVX, BMI or SHA extensions).
    pub fn command_on_baseline_cpu(&self, qemu: &str) -> TestCommand {
        let mut cmd = Command::new(qemu);
        cmd.args(["-cpu", "qemu64", env!("CARGO_BIN_EXE_dlqf")]).current_dir(self.path());
        TestCommand { cmd, stdin: None }
    }

    /// Runs `dlqf gen` with these arguments and returns the output path.
    pub fn gen(&self, name: &str, args: &[&str]) -> PathBuf {
        self.command().args(["gen", "-o", name]).args(args).ok();
        self.join(name)
    }
}

pub struct TestCommand {
    cmd: Command,
    stdin: Option<Vec<u8>>,
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl TestCommand {
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.cmd.args(args);
        self
    }

    pub fn arg(mut self, arg: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.arg(arg);
        self
    }

    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    pub fn env_remove(mut self, key: &str) -> Self {
        self.cmd.env_remove(key);
        self
    }

    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    pub fn run(mut self) -> Run {
        self.cmd.stdin(if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = self.cmd.spawn().expect("spawn dlqf");
        if let Some(bytes) = self.stdin.take() {
            child.stdin.take().unwrap().write_all(&bytes).unwrap();
        }
        let Output { status, stdout, stderr } = child.wait_with_output().unwrap();
        Run {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    /// Runs and expects exit 0; returns stdout.
    pub fn ok(self) -> String {
        self.expect_code(0).stdout
    }

    pub fn expect_code(self, code: i32) -> Run {
        let cmdline = format!("{:?}", self.cmd);
        let run = self.run();
        assert_eq!(run.code, code, "{cmdline}\nstdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
        run
    }

    /// Runs and parses stdout as JSON (expects exit 0).
    pub fn json(self) -> serde_json::Value {
        let out = self.ok();
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{out}"))
    }
}

/// A manifest's entry lines: everything after its header line (from that line's newline).
pub fn manifest_entries(text: &str) -> &str {
    &text[text.find('\n').expect("a manifest has a header line")..]
}

/// A vision record as one JSON line, with the fields the tests vary.
/// Whether `q.jsonl`, the file quarantine the replay tests use, holds nothing (the sink
/// creates it when it opens).
pub fn nothing_quarantined(dir: &Dir) -> bool {
    std::fs::read_to_string(dir.join("q.jsonl")).map_or(true, |t| t.is_empty())
}

pub fn vision_line(id: &str, stage: &str, reason: &str, revision: &str, ts: &str, attempts: i64) -> String {
    serde_json::json!({
        "capture_id": id, "store_id": "store-0001", "fixture_id": "fx-1", "planogram_id": "pg-1",
        "image_uri": format!("s3://captures/{id}.jpg"), "stage": stage, "reject_reason": reason,
        "registry_revision": revision, "capture_timestamp": ts, "attempts": attempts, "trace_id": "t"
    })
    .to_string()
}

/// The Python with DuckDB, pyspark and boto3 that `make test` prepares, for independent
/// cross-checks (tests that use it are `#[ignore]`d so a bare `cargo test` stays green; `make
/// test` runs them). Scripts that need only the standard library run on the system's python3.
pub fn python() -> String {
    std::env::var("DLQF_PYTHON").expect("DLQF_PYTHON is unset: run the tests through `make test`, which installs DuckDB")
}

pub fn support(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support").join(name)
}

/// `n` envelope records on `topics` (in turn), keyed `ord-i` except every fifth (no key), with
/// a payload and two headers; written to `e.jsonl` and planned (routing clears them: transient)
/// into `m.jsonl`. Returns the records.
pub fn envelope_dump(dir: &Dir, n: usize, topics: &[&str]) -> Vec<serde_json::Value> {
    use serde_json::Value;
    let records: Vec<Value> = (0..n)
        .map(|i| {
            serde_json::json!({
                "id": format!("dl-{i:05}"), "original_topic": topics[i % topics.len()], "original_partition": 0, "original_offset": i,
                "original_key": if i % 5 == 4 { Value::Null } else { Value::String(format!("ord-{i}")) },
                "original_value": {"order_id": format!("ord-{i}"), "total": i, "items": [{"sku": "A", "qty": 1}]},
                "original_headers": {"trace_id": format!("t{i}"), "source": "checkout"},
                "error_type": "TimeoutError", "error_message": "timed out", "first_failed_at": "2026-10-01T00:00:00Z",
                "last_failed_at": "2026-10-01T00:00:00Z", "retry_count": 0, "consumer_id": "c", "consumer_version": "1"
            })
        })
        .collect();
    dir.create("e.jsonl", records.iter().map(|r| r.to_string() + "\n").collect::<String>());
    dir.command().args(["plan", "e.jsonl", "--profile", "envelope", "-o", "m.jsonl"]).ok();
    records
}
