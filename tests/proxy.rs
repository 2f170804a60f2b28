//! A loopback HTTP/1.1 proxy in front of a real service (moto's SQS) that can fail one
//! operation with 503, as a service in an outage does while its other operations answer:
//! from the start, or once the service has taken N messages.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

#[derive(Default)]
pub struct Faults {
    /// Requests whose `X-Amz-Target` ends with this fail during an outage.
    pub operation: String,
    /// The outage is on.
    pub outage: bool,
    /// The outage begins once this many messages were taken (counted from `Successful`).
    pub outage_after: Option<usize>,
    /// Messages the service took.
    pub taken: usize,
    /// Requests answered 503.
    pub failed: usize,
}

pub struct Proxy {
    pub url: String,
    pub faults: Arc<Mutex<Faults>>,
}

impl Proxy {
    /// A proxy to `upstream` (http://host:port) failing `operation` when told to.
    pub fn start(upstream: &str, operation: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let faults = Arc::new(Mutex::new(Faults { operation: operation.to_string(), ..Faults::default() }));
        let upstream = upstream.trim_start_matches("http://").trim_end_matches('/').to_string();
        let f = faults.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (f, upstream) = (f.clone(), upstream.clone());
                std::thread::spawn(move || serve(stream, &upstream, f));
            }
        });
        Proxy { url, faults }
    }
}

/// One HTTP message read whole: the head as sent (start line and headers) and the body.
struct Message {
    head: String,
    body: Vec<u8>,
}

impl Message {
    fn read(reader: &mut impl BufRead) -> Option<Message> {
        let mut head = String::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().ok()?;
                }
            }
            let end = line == "\r\n";
            head.push_str(&line);
            if end {
                break;
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).ok()?;
        Some(Message { head, body })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().filter_map(|l| l.split_once(':')).find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim())
    }

    fn write(&self, to: &mut impl Write) -> std::io::Result<()> {
        to.write_all(self.head.as_bytes())?;
        to.write_all(&self.body)
    }
}

fn serve(stream: TcpStream, upstream: &str, faults: Arc<Mutex<Faults>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    while let Some(request) = Message::read(&mut reader) {
        let operation = request.header("x-amz-target").unwrap_or_default().to_string();
        let fail = {
            let mut f = faults.lock().unwrap();
            let failing = operation.ends_with(&f.operation) && (f.outage || f.outage_after.is_some_and(|n| f.taken >= n));
            f.failed += usize::from(failing);
            failing
        };
        let answer = if fail {
            let body = br#"{"__type":"com.amazonaws.sqs#ServiceUnavailable","message":"Service is unable to handle request."}"#.to_vec();
            Message { head: format!("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: {}\r\n\r\n", body.len()), body }
        } else {
            let mut up = TcpStream::connect(upstream).unwrap();
            request.write(&mut up).unwrap();
            let answer = Message::read(&mut BufReader::new(up)).expect("an answer from upstream");
            if operation.ends_with(&faults.lock().unwrap().operation) {
                let taken = serde_json::from_slice::<serde_json::Value>(&answer.body).ok().and_then(|v| v["Successful"].as_array().map(Vec::len)).unwrap_or(0);
                faults.lock().unwrap().taken += taken;
            }
            answer
        };
        if answer.write(&mut writer).is_err() {
            return;
        }
    }
}
