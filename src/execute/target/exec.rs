//! `exec:CMD ARG…`: one run of a command per message (no shell), the payload on stdin and the
//! keys and origin headers in the environment; its exit status says what happened.

use std::io::Write;
use std::process::{Command, Stdio};

use futures_util::future::BoxFuture;

use super::{Delivery, Target};
use crate::execute::message::Message;

/// Runs a command per message (no shell): the record on stdin, the key in
/// `DLQF_IDEMPOTENCY_KEY`; exit status 0 is delivered, 75 (EX_TEMPFAIL) a transient failure,
/// any other a rejection.
pub struct ExecTarget {
    argv: Vec<String>,
}

impl ExecTarget {
    pub fn new(argv: Vec<String>) -> ExecTarget {
        ExecTarget { argv }
    }
}

impl Target for ExecTarget {
    /// The payload on stdin; the keys and origin headers in the environment.
    fn send<'a>(&'a self, message: &'a Message<'a>) -> BoxFuture<'a, Delivery> {
        let argv = self.argv.clone();
        let name = argv[0].clone();
        let mut env = vec![("DLQF_IDEMPOTENCY_KEY".to_string(), message.key.to_string())];
        env.extend(message.origin_key_text().map(|k| ("DLQF_ORIGIN_KEY".to_string(), k)));
        if !message.headers.is_empty() {
            env.push(("DLQF_ORIGIN_HEADERS".to_string(), message.headers_json().to_string()));
        }
        let body = message.body();
        Box::pin(async move {
            let run = tokio::task::spawn_blocking(move || -> std::io::Result<std::process::Output> {
                let mut child = Command::new(&argv[0])
                    .args(&argv[1..])
                    .envs(env)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()?;
                // A command may exit without reading its input: its exit status still counts.
                match child.stdin.take().expect("piped").write_all(&body) {
                    Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e),
                    _ => {}
                }
                child.wait_with_output()
            })
            .await;
            match run {
                Ok(Ok(out)) if out.status.success() => Delivery::Delivered,
                Ok(Ok(out)) => {
                    let err = String::from_utf8_lossy(&out.stderr);
                    let why = format!("{name} exited with {}: {}", out.status, err.trim().chars().take(200).collect::<String>());
                    if out.status.code() == Some(EX_TEMPFAIL) { Delivery::Unavailable(why) } else { Delivery::Rejected(why) }
                }
                Ok(Err(e)) => Delivery::Down(format!("cannot run {name}: {e}")),
                Err(e) => Delivery::Down(format!("{name}: command task failed: {e}")),
            }
        })
    }
}

/// The exit status (sysexits' EX_TEMPFAIL) by which an `exec:` command says "try again later".
const EX_TEMPFAIL: i32 = 75;

