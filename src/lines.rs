//! A stream as blocks of whole lines, for readers that work a block at a time: JSON-lines
//! chunks decoded in parallel, a manifest hashed and parsed in one pass.

use std::io::{self, Read};

/// The line of `bytes` that starts at `at`, without its `\n` (and one `\r` before it: also
/// at the end), and where the next one starts: how every reader of lines cuts them.
pub fn line_at(bytes: &[u8], at: usize) -> (&[u8], usize) {
    let rest = &bytes[at..];
    let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
    let line = match &rest[..end] {
        [head @ .., b'\r'] => head,
        line => line,
    };
    (line, (at + end + 1).min(bytes.len()))
}

/// Cuts a stream into blocks of about `size` bytes that end at a newline (a line longer than
/// that makes a longer block); the last block holds whatever follows the last newline.
pub struct LineBlocks<R> {
    reader: R,
    /// The start of a line the last block cut off.
    carry: Vec<u8>,
    size: usize,
    done: bool,
}

impl<R: Read> LineBlocks<R> {
    pub fn new(reader: R, size: usize) -> LineBlocks<R> {
        LineBlocks { reader, carry: Vec::new(), size, done: false }
    }

    /// The next block, in `buf` (its allocation reused); None after the last one. After an
    /// error there is nothing more.
    pub fn next_into(&mut self, mut buf: Vec<u8>) -> Option<io::Result<Vec<u8>>> {
        if self.done {
            return None;
        }
        buf.clear();
        buf.extend_from_slice(&self.carry);
        self.carry.clear();
        buf.reserve(self.size);
        loop {
            let start = buf.len();
            // read_to_end fills spare capacity without zeroing it first.
            let n = match (&mut self.reader).take(self.size as u64).read_to_end(&mut buf) {
                Ok(n) => n,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            if n < self.size {
                self.done = true;
                return (!buf.is_empty()).then_some(Ok(buf));
            }
            if let Some(last_nl) = memchr::memrchr(b'\n', &buf[start..]).map(|i| i + start) {
                self.carry.extend_from_slice(&buf[last_nl + 1..]);
                buf.truncate(last_nl + 1);
                return Some(Ok(buf));
            }
            // A line longer than a block: keep reading until it ends.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out pieces of varying size (1 byte to 100 KB), as a pipe or a network may.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.1 = (self.1 * 31 + 7) % 100_003;
            let n = (self.1 + 1).min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn blocks_hold_whole_lines_and_together_every_byte() {
        // Short lines, a line longer than two blocks, more short lines, and a last line
        // without a newline.
        let size = 1 << 20;
        let mut text = Vec::new();
        for i in 0..200_000 {
            text.extend_from_slice(format!("{{\"n\":{i}}}\n").as_bytes());
        }
        text.extend(std::iter::repeat_n(b'x', 2 * size + 17));
        text.push(b'\n');
        for i in 0..200_000 {
            text.extend_from_slice(format!("{{\"m\":{i}}}\n").as_bytes());
        }
        text.extend_from_slice(b"{\"last\":true}");
        let mut blocks = LineBlocks::new(Trickle(&text, 0), size);
        let parts: Vec<Vec<u8>> = std::iter::from_fn(|| blocks.next_into(Vec::new())).map(Result::unwrap).collect();
        assert!(parts.len() >= 3, "{}", parts.len());
        let (last, whole) = parts.split_last().unwrap();
        assert!(whole.iter().all(|p| p.ends_with(b"\n")), "a block ends inside a line");
        assert!(whole.iter().any(|p| p.len() > 2 * size), "the long line is one block");
        assert!(last.ends_with(b"\n{\"last\":true}"), "the rest, after the last newline, ends the last block");
        assert!(parts.concat() == text, "the blocks are the stream, in order");
    }
}
