//! The stdio transport: a reader thread per byte stream (a child's output, our stdin) cuts it
//! into whole messages, one per line, and sends them to the relay within the direction's byte
//! budget ([`super::transport`]); a line too long to read as a message goes in pieces.

use std::io::{BufRead, BufReader, Read};

use crate::mcp::transport::{Event, Flow, Look, PIECE, Side, read_here, trim};
use crate::mcp::wire;

/// Reads messages from `from` until it ends, sending them to the relay as [`Event`]s with
/// `tx` (false: the relay is gone, and the reader stops). Sending never waits for the
/// relay: one direction must never wait for the other's messages to be taken (a server
/// blocked on its output while the relay is blocked writing its input would deadlock); the
/// byte budget bounds memory per direction instead.
///
/// `look`, when given, runs on each line the reader parses (the server's reader has it work
/// out the record of an answer).
pub fn read_messages(
    from: impl Read,
    side: Side,
    tx: &dyn Fn(Event) -> bool,
    flow: &Flow,
    look: Option<Look>,
) {
    let mut r = BufReader::with_capacity(64 * 1024, from);
    let mut line = Vec::new();
    let send = |e: Event, n: usize| {
        flow.acquire(n);
        tx(e)
    };
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if buf.is_empty() {
            if !line.is_empty() {
                // The last line has no newline: a whole message still (a sender's last, written
                // without one), or a line cut short.
                let n = line.len();
                let line = std::mem::take(&mut line);
                let event = if is_cut(&line) {
                    Event::Cut(side, line)
                } else {
                    let message = read_here(&line, flow, look);
                    Event::Line(side, line, message)
                };
                let _ = send(event, n);
            }
            break;
        }
        let (take, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        line.extend_from_slice(&buf[..take]);
        r.consume(take);
        if done {
            let n = line.len();
            let message = read_here(&line, flow, look);
            if !send(Event::Line(side, std::mem::take(&mut line), message), n) {
                return;
            }
        } else if line.len() > wire::MAX_PARSED_LINE {
            // Too long to read as a message: pass it on as it comes.
            let mut rest = std::mem::take(&mut line);
            loop {
                let n = rest.len();
                if !send(Event::Piece(side, std::mem::take(&mut rest), false), n) {
                    return;
                }
                let buf = r.fill_buf().unwrap_or_default();
                if buf.is_empty() {
                    let _ = send(Event::Piece(side, Vec::new(), true), 0);
                    break;
                }
                let n = buf.len().min(PIECE);
                match memchr::memchr(b'\n', &buf[..n]) {
                    Some(i) => {
                        let piece = buf[..=i].to_vec();
                        r.consume(i + 1);
                        let len = piece.len();
                        if !send(Event::Piece(side, piece, true), len) {
                            return;
                        }
                        break;
                    }
                    None => {
                        rest.extend_from_slice(&buf[..n]);
                        r.consume(n);
                    }
                }
            }
        }
    }
    let _ = tx(Event::Eof(side));
}

/// Whether a stream's last bytes, which no newline ended, are a line cut short: not a JSON
/// value (blank bytes are no line at all).
fn is_cut(line: &[u8]) -> bool {
    let body = trim(line);
    if body.iter().all(u8::is_ascii_whitespace) {
        return false;
    }
    !wire::is_json(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_pieces_and_the_end_arrive_in_order() {
        let (tx, rx) = std::sync::mpsc::channel();
        let flow = Flow::new();
        read_messages(
            &b"a\nb"[..],
            Side::Server,
            &|e| tx.send(e).is_ok(),
            &flow,
            None,
        );
        let got: Vec<Event> = rx.try_iter().collect();
        assert!(matches!(&got[0], Event::Line(Side::Server, l, _) if l == b"a\n"));
        // `b` is no JSON value and no newline ended it: a line cut short.
        assert!(matches!(&got[1], Event::Cut(Side::Server, l) if l == b"b"));
        assert!(matches!(&got[2], Event::Eof(Side::Server)));
    }

    #[test]
    fn a_last_line_without_its_newline_is_a_message_when_whole_and_cut_when_not() {
        for (input, cut) in [
            (&br#"{"jsonrpc":"2.0","id":1,"result":{}}"#[..], false),
            (&br#"{"jsonrpc":"2.0","id":1,"result":{"cont"#[..], true),
            (&b"\xff\xfe"[..], true),
        ] {
            let (tx, rx) = std::sync::mpsc::channel();
            read_messages(
                input,
                Side::Server,
                &|e| tx.send(e).is_ok(),
                &Flow::new(),
                None,
            );
            let got: Vec<Event> = rx.try_iter().collect();
            match &got[0] {
                Event::Cut(Side::Server, l) => assert!(cut && l == input, "{input:?}"),
                Event::Line(Side::Server, l, _) => assert!(!cut && l == input, "{input:?}"),
                other => panic!("{input:?}: {other:?}"),
            }
            assert!(matches!(&got[1], Event::Eof(Side::Server)), "{input:?}");
        }
    }
}
