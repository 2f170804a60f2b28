//! A real HTTP/1.1 server on loopback standing in for a replay stage: it records every
//! request's Idempotency-Key and body, and can fail, reject, conflict or slow down per key,
//! and inject faults: 503s at a rate, dropped connections, an outage after N successes.

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
    /// Share of requests answered 503 (drawn from a fixed-seed generator).
    pub fail_rate: f64,
    /// Share of requests whose connection is closed without an answer.
    pub drop_rate: f64,
    /// After this many 2xx answers, every request gets 503 (an outage).
    pub fail_after: Option<usize>,
    /// What a GET of the replay URL answers (default: 503 in an outage, else 200): a gateway
    /// in front of a dead backend answers a POST-only route's GET with 404 all the same.
    pub get_status: Option<u16>,
    /// What a GET of `/health` answers (default: as a GET of the replay URL).
    pub health_status: Option<u16>,
    draws: u64,
    successes: usize,
}

impl Behaviour {
    /// A number in [0, 1) from an LCG with a fixed seed.
    fn draw(&mut self) -> f64 {
        self.draws = self.draws.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.draws >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[derive(Default)]
pub struct Seen {
    /// Every request: its key and body.
    pub requests: Vec<(String, String)>,
    /// Every request's key and the status answered (0: the connection was dropped).
    pub answers: Vec<(String, u16)>,
    /// Every request's `X-Dlqf-*` headers (names lowercased), by key.
    pub origin: HashMap<String, Vec<(String, String)>>,
    /// Health probes (GETs) answered.
    pub probes: usize,
    /// Where among `answers` the first request that met the outage (`fail_after`) is.
    pub outage_from: Option<usize>,
    /// Requests in the stage now, per `X-Dlqf-Origin-Key`, and the most there ever were of one.
    pub in_flight_per_origin_key: HashMap<String, usize>,
    pub most_in_flight_of_one_origin_key: usize,
}

pub struct Stage {
    pub url: String,
    pub seen: Arc<Mutex<Seen>>,
    pub behaviour: Arc<Mutex<Behaviour>>,
}

impl Stage {
    /// The stage's health check URL (see `Behaviour::health_status`).
    pub fn health_url(&self) -> String {
        self.url.replace("/replay", "/health")
    }

    /// Requests that failed from the start of an outage (`fail_after`) on.
    pub fn failed_in_outage(&self) -> usize {
        let seen = self.seen.lock().unwrap();
        let from = seen.outage_from.unwrap_or(seen.answers.len());
        seen.answers[from..].iter().filter(|(_, s)| !(200..300).contains(s)).count()
    }

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

    /// Keys answered 2xx, with how many times each.
    pub fn delivered(&self) -> HashMap<String, usize> {
        let mut per_key = HashMap::new();
        for (k, status) in &self.seen.lock().unwrap().answers {
            if (200..300).contains(status) {
                *per_key.entry(k.clone()).or_default() += 1;
            }
        }
        per_key
    }

    /// Requests not answered 2xx.
    pub fn failed(&self) -> usize {
        self.seen.lock().unwrap().answers.iter().filter(|(_, s)| !(200..300).contains(s)).count()
    }
}

/// A loopback URL nothing listens on: connections are refused.
pub fn refused_url() -> String {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("http://127.0.0.1:{port}/replay")
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
        let mut origin = Vec::new();
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
                lower if lower.starts_with("x-dlqf-") => origin.push((lower.to_string(), value.trim().to_string())),
                _ => {}
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        // A health probe: answered as the server stands (a 5xx in an outage, else 200),
        // recorded apart from deliveries.
        if line.starts_with("GET ") {
            let status = {
                let b = behaviour.lock().unwrap();
                let down = if b.fail_after.is_some_and(|n| b.successes >= n) { 503 } else { b.default_status.filter(|s| *s >= 500).unwrap_or(200) };
                let route = b.get_status.unwrap_or(down);
                if line.contains("/health ") { b.health_status.unwrap_or(route) } else { route }
            };
            seen.lock().unwrap().probes += 1;
            if writer.write_all(format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n").as_bytes()).is_err() {
                return;
            }
            continue;
        }
        let (status, delay, in_outage) = {
            let mut b = behaviour.lock().unwrap();
            let mut status = b.status.get(&key).copied().or(b.default_status).unwrap_or(200);
            let (fail, drop) = (b.draw(), b.draw());
            let in_outage = b.fail_after.is_some_and(|n| b.successes >= n);
            if in_outage || fail < b.fail_rate {
                status = 503;
            } else if drop < b.drop_rate {
                status = 0;
            } else if (200..300).contains(&status) {
                b.successes += 1;
            }
            (status, b.delay, in_outage)
        };
        let body = String::from_utf8_lossy(&body).into_owned();
        assert_eq!(content_type, "application/json", "every replay is JSON");
        let origin_key = origin.iter().find(|(name, _)| name == "x-dlqf-origin-key").map(|(_, v)| v.clone());
        if let Some(k) = &origin_key {
            let mut seen = seen.lock().unwrap();
            let now = seen.in_flight_per_origin_key.entry(k.clone()).or_default();
            *now += 1;
            let now = *now;
            seen.most_in_flight_of_one_origin_key = seen.most_in_flight_of_one_origin_key.max(now);
        }
        std::thread::sleep(delay);
        {
            let mut seen = seen.lock().unwrap();
            seen.requests.push((key.clone(), body));
            seen.origin.insert(key.clone(), origin);
            if in_outage && seen.outage_from.is_none() {
                seen.outage_from = Some(seen.answers.len());
            }
            if let Some(k) = &origin_key {
                *seen.in_flight_per_origin_key.get_mut(k).expect("counted in") -= 1;
            }
            seen.answers.push((key, status));
        }
        if status == 0 {
            return; // dropped: the connection closes with no answer
        }
        let reply = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}
