//! A real HTTP/1.1 server on loopback standing in for a replay stage: it records every
//! request's Idempotency-Key and body, and can fail, reject, conflict or slow down per key.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
pub struct Behaviour {
    /// Status to answer for a key (default 200).
    pub status: HashMap<String, u16>,
    /// Status for every key not in `status`.
    pub default_status: Option<u16>,
    pub delay: Duration,
}

#[derive(Default)]
pub struct Seen {
    pub requests: Vec<(String, String)>,
}

pub struct Stage {
    pub url: String,
    pub seen: Arc<Mutex<Seen>>,
    pub behaviour: Arc<Mutex<Behaviour>>,
}

impl Stage {
    pub fn start() -> Stage {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/replay", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Seen::default()));
        let behaviour = Arc::new(Mutex::new(Behaviour::default()));
        let (s, b) = (seen.clone(), behaviour.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (s, b) = (s.clone(), b.clone());
                std::thread::spawn(move || serve(stream, s, b));
            }
        });
        Stage { url, seen, behaviour }
    }

    pub fn keys(&self) -> Vec<String> {
        self.seen.lock().unwrap().requests.iter().map(|(k, _)| k.clone()).collect()
    }

    pub fn count(&self, key: &str) -> usize {
        self.seen.lock().unwrap().requests.iter().filter(|(k, _)| k == key).count()
    }
}

fn serve(stream: TcpStream, seen: Arc<Mutex<Seen>>, behaviour: Arc<Mutex<Behaviour>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        let mut key = String::new();
        let mut content_type = String::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (name, value) = h.split_once(':').unwrap_or((h, ""));
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "idempotency-key" => key = value.trim().to_string(),
                "content-type" => content_type = value.trim().to_string(),
                _ => {}
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let (status, delay) = {
            let b = behaviour.lock().unwrap();
            (b.status.get(&key).copied().or(b.default_status).unwrap_or(200), b.delay)
        };
        let body = String::from_utf8_lossy(&body).into_owned();
        assert_eq!(content_type, "application/json", "every replay is JSON");
        std::thread::sleep(delay);
        seen.lock().unwrap().requests.push((key, body));
        let reply = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}
