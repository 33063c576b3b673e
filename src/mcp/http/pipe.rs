//! The proxy's relay reads and writes byte streams of one message per line (a child's pipes,
//! our stdin and stdout). An HTTP side gives it the same: [`LinesIn`] is a stream read from
//! whole messages that async tasks send, and [`LinesOut`] cuts what the relay writes into
//! whole lines for them. Both channels are bounded, so a slow side slows the other as a full
//! pipe would.

use std::io::{Read, Write};

use tokio::sync::mpsc;

/// Messages in flight on one channel before its sender waits.
pub const DEPTH: usize = 64;

/// What an async task sends towards the relay: one message (no line break in it).
pub type LineSender = mpsc::Sender<Vec<u8>>;

/// A byte stream made of the messages sent on a channel, each followed by a newline; it ends
/// when every sender is gone.
#[derive(Debug)]
pub struct LinesIn {
    rx: mpsc::Receiver<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
}

/// A channel of messages and the stream that reads them.
pub fn lines_in() -> (LineSender, LinesIn) {
    let (tx, rx) = mpsc::channel(DEPTH);
    (
        tx,
        LinesIn {
            rx,
            current: Vec::new(),
            at: 0,
        },
    )
}

impl Read for LinesIn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at >= self.current.len() {
            // Called on a plain thread (the proxy's reader), never inside the runtime.
            match self.rx.blocking_recv() {
                Some(mut m) => {
                    m.push(b'\n');
                    self.current = m;
                    self.at = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// A writer that sends each whole line written to it (without its line ending) on a
/// channel; a write fails with `BrokenPipe` once the receiver is gone.
#[derive(Debug)]
pub struct LinesOut {
    tx: mpsc::Sender<Vec<u8>>,
    partial: Vec<u8>,
}

/// A writer of lines and the channel that receives them.
pub fn lines_out() -> (LinesOut, mpsc::Receiver<Vec<u8>>) {
    let (tx, rx) = mpsc::channel(DEPTH);
    (
        LinesOut {
            tx,
            partial: Vec::new(),
        },
        rx,
    )
}

/// Cuts what is written into whole lines: `partial` holds a line not yet ended; each whole,
/// non-blank line (without its line ending) goes to `each`.
pub fn cut_lines(
    partial: &mut Vec<u8>,
    buf: &[u8],
    mut each: impl FnMut(Vec<u8>) -> std::io::Result<()>,
) -> std::io::Result<usize> {
    let mut rest = buf;
    while let Some(end) = memchr::memchr(b'\n', rest) {
        partial.extend_from_slice(&rest[..end]);
        rest = &rest[end + 1..];
        let mut line = std::mem::take(partial);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            each(line)?;
        }
    }
    partial.extend_from_slice(rest);
    Ok(buf.len())
}

impl Write for LinesOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let tx = &self.tx;
        cut_lines(&mut self.partial, buf, |line| {
            tx.blocking_send(line)
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_cross_whole_in_both_directions() {
        let (mut out, mut rx) = lines_out();
        out.write_all(b"{\"a\":1}\n{\"b\"").expect("writes");
        out.write_all(b":2}\r\n\n").expect("writes");
        drop(out);
        let mut got = Vec::new();
        while let Some(l) = rx.blocking_recv() {
            got.push(l);
        }
        assert_eq!(got, vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()]);

        let (tx, mut input) = lines_in();
        std::thread::spawn(move || {
            for m in got {
                let _ = tx.blocking_send(m);
            }
        });
        let mut text = String::new();
        input.read_to_string(&mut text).expect("reads");
        assert_eq!(text, "{\"a\":1}\n{\"b\":2}\n");
    }

    #[test]
    fn a_gone_receiver_is_a_broken_pipe() {
        let (mut out, rx) = lines_out();
        drop(rx);
        let e = out.write_all(b"{}\n").expect_err("fails");
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
    }
}
