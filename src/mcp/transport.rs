//! What a transport hands the relay, and the byte budget it moves it within: the proxy's
//! two transports — stdio lines ([`super::stdio`]) and Streamable HTTP ([`super::http`]) —
//! stand side by side on this, neither built on the other. Each cuts what it receives into
//! whole messages (one per line, or — for a line too long to read as a message — the line in
//! pieces, the last one flagged) and hands them to a [`Sink`] as [`Event`]s; the proxy's inbox
//! is the sink.
//!
//! Memory is bounded by bytes in flight, not by message count: a sender waits while the
//! messages it sent and the relay has not yet handled add up to more than the budget ([`Flow`];
//! one message is always let through, so a single huge message still moves); what the relay
//! has handled and holds to write is at most 64 KB and one message, written before it waits
//! for the next ([`Outgoing`]). A slow client therefore slows the server's reader, whose pipe
//! then fills and makes the server wait — the back-pressure a direct pipe would give.

use std::sync::{Arc, Condvar, Mutex};

use crate::mcp::session::Delivered;
use crate::mcp::wire::{self, Message};

/// Bytes of an oversized line passed on at once.
pub const PIECE: usize = 1 << 20;
/// Bytes a direction may have read and the relay not yet handled before its reader waits.
pub const BUDGET: usize = 16 * 1024 * 1024;
/// The longest line a reader thread parses itself.
pub const PARSED_HERE: usize = 64 * 1024;
/// A reader parses ahead only while less than this is in flight (the relay parses the rest).
pub const PARSE_AHEAD: usize = 1024 * 1024;

/// Where a message came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The agent (our stdin).
    Client,
    /// The MCP server (the child's stdout).
    Server,
}

/// Something for the relay to handle.
#[derive(Debug)]
pub enum Event {
    /// A whole line (with its line ending, if it had one), and what it says when the reader
    /// thread read it (a line up to [`PARSED_HERE`] bytes while less than [`PARSE_AHEAD`] is
    /// in flight: parsing is the largest part of a message's cost, and off the relay's thread
    /// it runs beside the relay on another core; the relay reads the others, so parsed trees
    /// in flight stay within a megabyte of text).
    Line(Side, Vec<u8>, Option<ReadAhead>),
    /// A piece of an oversized line; `true` on its last piece.
    Piece(Side, Vec<u8>, bool),
    /// The side's output ended in the middle of a line: its last bytes, no message (a line
    /// without its newline that is no JSON value). Never relayed as a message.
    Cut(Side, Vec<u8>),
    /// The side closed its output.
    Eof(Side),
    /// A signal ends the session (its number).
    Interrupt(i32),
}

/// Where a transport hands its events: taken in the order queued. The proxy's inbox is one
/// (`proxy::inbox::Tx`): whether the sender then runs the relay itself or wakes the relay's
/// thread is the inbox's business, not the transport's.
pub trait Sink: Send + Sync + std::fmt::Debug {
    /// Queues `event` and no more (events queued together are taken together: [`Sink::run`]
    /// after them). False once the relay is gone.
    fn queue(&self, event: Event) -> bool;

    /// Has what was queued handled.
    fn run(&self);

    /// Queues `event`, then has it handled. False once the relay is gone.
    fn send(&self, event: Event) -> bool {
        let sent = self.queue(event);
        if sent {
            self.run();
        }
        sent
    }
}

/// A line read on its reader's thread: the message, and what the record keeps of it when it
/// is an answer (worked out there too, by the reader's [`Look`]).
#[derive(Debug)]
pub struct ReadAhead {
    /// What the line says.
    pub message: Message,
    /// The record of an answer, when the reader's look made it.
    pub kept: Option<Kept>,
}

/// What the record keeps of an answer's result or error.
#[derive(Debug, PartialEq)]
pub enum Kept {
    /// The member itself: nothing in it is redacted, and it is within the sidecar's limits
    /// (no copy is made; the record takes the member when the call ends).
    AsItIs,
    /// A redacted copy, or [`Delivered::Unrecorded`] when the member is past the limits.
    Copy(Delivered),
}

/// What a reader works out beside parsing a line, off the relay's thread.
pub type Look = fn(&mut Message) -> Option<Kept>;

/// The bytes a direction has in flight, shared by its reader (a thread, or the async tasks
/// of an HTTP side) and the relay.
#[derive(Debug, Default)]
pub struct Flow {
    state: Mutex<Budget>,
    freed: Condvar,
    /// Wakes async tasks waiting for room.
    freed_async: tokio::sync::Notify,
}

/// What the budget's lock guards.
#[derive(Debug, Default)]
struct Budget {
    in_flight: usize,
    /// Whether the reader waits for room: only then does a release wake it (a wake-up is a
    /// system call, and the relay releases on every message).
    waiting: bool,
}

impl Flow {
    /// A new, empty budget.
    pub fn new() -> Arc<Flow> {
        Arc::new(Flow::default())
    }

    /// Waits until `n` more bytes fit (or nothing is in flight), then counts them.
    pub fn acquire(&self, n: usize) {
        let Ok(mut b) = self.state.lock() else {
            return;
        };
        while b.in_flight > 0 && b.in_flight + n > BUDGET {
            b.waiting = true;
            b = match self.freed.wait(b) {
                Ok(b) => b,
                Err(_) => return,
            };
        }
        b.waiting = false;
        b.in_flight += n;
    }

    /// [`Flow::acquire`] for an async task: waits without holding its thread.
    pub async fn acquire_async(&self, n: usize) {
        loop {
            let freed = self.freed_async.notified();
            let mut freed = std::pin::pin!(freed);
            // Registered before the check: a release between the check and the wait wakes it.
            freed.as_mut().enable();
            {
                let Ok(mut b) = self.state.lock() else {
                    return;
                };
                if b.in_flight == 0 || b.in_flight + n <= BUDGET {
                    b.in_flight += n;
                    return;
                }
                b.waiting = true;
            }
            freed.await;
        }
    }

    /// Counts `n` bytes without waiting (a message from code that cannot wait).
    pub fn count(&self, n: usize) {
        if let Ok(mut b) = self.state.lock() {
            b.in_flight += n;
        }
    }

    /// The relay is done with `n` bytes (written, or dropped).
    pub fn release(&self, n: usize) {
        if let Ok(mut b) = self.state.lock() {
            b.in_flight = b.in_flight.saturating_sub(n);
            if b.waiting {
                // Every waiter checks again, and one that still finds no room says so again.
                b.waiting = false;
                self.freed.notify_all();
                self.freed_async.notify_waiters();
            }
        }
    }

    /// Bytes in flight now.
    pub fn in_flight(&self) -> usize {
        self.state.lock().map(|b| b.in_flight).unwrap_or(0)
    }
}

/// What a line says, when the reader reads it: a short line while little is in flight (a
/// parsed tree can be many times its text, and the budget counts text).
pub fn read_here(line: &[u8], flow: &Flow, look: Option<Look>) -> Option<ReadAhead> {
    (line.len() <= PARSED_HERE && flow.in_flight() < PARSE_AHEAD).then(|| {
        let mut message = wire::classify(trim(line));
        let kept = look.and_then(|look| look(&mut message));
        ReadAhead { message, kept }
    })
}

/// The line without its line ending.
pub fn trim(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The bytes going to one side, whole messages only: while a long line is being passed on in
/// pieces, anything else for that side waits until the line has ended; a message that came
/// without its newline (the sender's last) gets one, so the next cannot be glued onto it.
#[derive(Debug, Default)]
pub struct Outgoing {
    mid_line: bool,
    held: Vec<Vec<u8>>,
}

impl Outgoing {
    /// Whether a long line is in progress (a whole message now would be held).
    pub fn mid_line(&self) -> bool {
        self.mid_line
    }

    /// A whole message, with a newline: appended to `out` (true), or held while a long line
    /// is in progress (false).
    pub fn message(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> bool {
        let out = if self.mid_line {
            self.held.push(Vec::with_capacity(bytes.len() + 1));
            match self.held.last_mut() {
                Some(held) => held,
                None => return false,
            }
        } else {
            out
        };
        out.extend_from_slice(bytes);
        if !bytes.ends_with(b"\n") {
            out.push(b'\n');
        }
        !self.mid_line
    }

    /// What to write now for a piece of a long line; when it is the last piece, the messages
    /// held meanwhile follow it.
    pub fn piece(&mut self, bytes: &[u8], last: bool) -> Vec<u8> {
        let mut out = bytes.to_vec();
        self.mid_line = !last;
        if last {
            if !out.ends_with(b"\n") {
                out.push(b'\n');
            }
            for held in std::mem::take(&mut self.held) {
                out.extend_from_slice(&held);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_wait_for_a_long_line_and_get_their_newline() {
        let mut o = Outgoing::default();
        let mut out = Vec::new();
        assert!(o.message(b"{}", &mut out));
        assert_eq!(out, b"{}\n");
        assert_eq!(o.piece(b"{\"a\":", false), b"{\"a\":".to_vec());
        assert!(o.mid_line());
        assert!(!o.message(b"{\"b\":1}\n", &mut out));
        assert_eq!(out, b"{}\n", "held, not written");
        assert_eq!(o.piece(b"1}", true), b"1}\n{\"b\":1}\n".to_vec());
        assert!(o.message(b"x\n", &mut out));
        assert_eq!(out, b"{}\nx\n");
    }

    #[test]
    fn the_budget_lets_one_message_through_and_waits_for_more() {
        let flow = Flow::new();
        flow.acquire(BUDGET * 2); // a single huge message always moves
        assert_eq!(flow.in_flight(), BUDGET * 2);
        let f2 = Arc::clone(&flow);
        let t = std::thread::spawn(move || f2.acquire(10));
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(
            !t.is_finished(),
            "the second message waits for the first to be written"
        );
        flow.release(BUDGET * 2);
        t.join().expect("join");
        assert_eq!(flow.in_flight(), 10);
    }
}
