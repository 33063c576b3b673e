//! The relay's state, shared by its event handling (`relay`) and the call lifecycle (`calls`):
//! the engine run, the recording, the calls in hand, and the two ends it writes to — whole
//! messages only (a long line in progress holds the others back), a client that stopped
//! reading ends the session instead of the proxy.

use std::collections::{BinaryHeap, HashSet, VecDeque};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::Sha256;

use crate::error::Result;
use crate::hashing::{Map, Set};
use crate::json::Value;
use crate::mcp::evidence::{Ledger, ToolIndex};
use crate::mcp::recorder::Recorder;
use crate::mcp::scenario::{Delivery, McpScenario};
use crate::mcp::session::McpSession;
use crate::mcp::transport::{Flow, Outgoing, Side};
use crate::mcp::wire::Id;
use crate::mcp::wirelog::{Dir, WireLog};
use crate::rule::Rule;
use crate::storm::{CallHandle, Storm};

/// What a side's held buffer keeps of its capacity after a write (a huge message once does
/// not keep its megabytes for the rest of the session).
const HELD_KEPT: usize = 256 * 1024;

/// How long the server gets to exit after its input is closed at the client's end.
pub(super) const EOF_GRACE: Duration = Duration::from_secs(5);
/// How long it gets after a signal.
pub(super) const SIGNAL_GRACE: Duration = Duration::from_secs(2);

/// Something scheduled for later, by cassette call id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Timer {
    /// Forward a delayed (latency) call to the server.
    Forward(u64),
    /// Answer an injected timeout.
    Answer(u64),
}

/// A recorded fact about a non-`tools/call` request in flight.
#[derive(Debug)]
pub(super) struct Awaited {
    pub(super) method: String,
    pub(super) params: Value,
}

/// The two ends the relay writes to, and the byte budgets of what it reads.
pub(super) struct Ends {
    pub(super) client_out: Box<dyn Write + Send>,
    pub(super) server_in: Option<Box<dyn Write + Send>>,
    /// The clients' HTTP streams, when the proxy listens: what a fault does to a stream
    /// beyond writing a message (cut it, answer with an HTTP status).
    pub(super) http: Option<crate::mcp::http::listen::Control>,
    pub(super) log: Box<dyn Write + Send>,
    /// Server → client bytes in flight.
    pub(super) to_client: Arc<Flow>,
    /// Client → server bytes in flight.
    pub(super) to_server: Arc<Flow>,
}

/// The session is ending: why, and until when the server may take to leave.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stopping {
    pub(super) until: Instant,
    pub(super) code: i32,
}

/// The relay's state, on the thread that runs it.
pub(super) struct Relay {
    pub(super) storm: Storm,
    pub(super) rules: Vec<Rule>,
    pub(super) scenario: Option<McpScenario>,
    pub(super) recorder: Option<Recorder>,
    /// The session's facts (its calls live in the journal, not here).
    pub(super) session: McpSession,
    /// Calls in hand, by cassette call id.
    pub(super) pending: Map<u64, Pending>,
    /// Calls in hand by the client's request id, oldest first (a client may reuse an id
    /// while the first call is still open).
    pub(super) by_request: Map<Id, VecDeque<u64>>,
    pub(super) awaited: Map<Id, Awaited>,
    pub(super) client_requests: Set<Id>,
    pub(super) server_requests: Set<Id>,
    pub(super) tools: ToolIndex,
    pub(super) ledger: Ledger,
    pub(super) timers: BinaryHeap<std::cmp::Reverse<(Instant, u64, Timer)>>,
    pub(super) seq: u64,
    /// False past the session's call budget: then the proxy only relays.
    pub(super) recording: bool,
    /// Why the recording stopped taking calls (it is full, or the journal could not be
    /// written): from then on every `tools/call` is answered with an error, never relayed
    /// unrecorded.
    pub(super) stopped: Option<String>,
    pub(super) said: HashSet<String>,
    pub(super) ends: Ends,
    /// The client stopped reading: nothing more is written to it.
    pub(super) client_gone: bool,
    pub(super) to_client: Outgoing,
    pub(super) to_server: Outgoing,
    /// A long server line answering a call, being passed on in pieces.
    pub(super) long_answer: Option<LongAnswer>,
    /// A long client line being passed on in pieces: the call it carries, if it is one we
    /// hold (its pieces are swallowed when a fault answers in the server's place).
    pub(super) long_request: Option<LongRequest>,
    pub(super) stopping: Option<Stopping>,
    /// A long server line is being passed on in pieces (the next piece is not its first).
    pub(super) server_in_pieces: bool,
    /// Bytes for the client and for the server, held until [`Relay::flush`] writes them
    /// after the journal lines that describe them.
    pub(super) client_held: Vec<u8>,
    pub(super) server_held: Vec<u8>,
    /// Calls whose requests are among the bytes held for the server, with where each
    /// request lies in them: one that the write does not get past, the server never got;
    /// and one whose journal line could not be written is taken out.
    pub(super) unsent: Vec<(u64, std::ops::Range<usize>)>,
    /// Answers to calls among the bytes held for the client: where each lies, the request
    /// ids it answers, and (for a server's batch) the batch without them. One whose journal
    /// line could not be written is withheld, an error in its place (and the rest of its
    /// batch sent alone).
    pub(super) answers_held: Vec<HeldAnswer>,
    /// The wire log, when recording: every message in and out, written with the journal.
    pub(super) wire: Option<WireLog>,
    /// Bytes of the long lines in progress, received and sent, by side (client, server).
    pub(super) long_in: [u64; 2],
    pub(super) long_out: [u64; 2],
}

impl Relay {
    pub(super) fn new(
        storm: Storm,
        scenario: Option<McpScenario>,
        recorder: Option<Recorder>,
        session: McpSession,
        prior: Option<(&crate::report::Report, &McpSession)>,
        ends: Ends,
    ) -> Relay {
        let tools = session.tool_index();
        // The commits of the session this one continues: a retry that gets an earlier commit
        // id back is still an idempotent replay.
        let mut ledger = Ledger::default();
        if let Some((report, earlier)) = prior {
            for c in report.calls.iter().filter(|c| c.executed) {
                // What the server answered: the result, or the answer a fault dropped.
                let dropped = earlier
                    .call(c.id)
                    .and_then(|r| r.dropped.as_ref())
                    .and_then(|d| d.as_object())
                    .and_then(|o| o.get("result"));
                let answer = match (c.status, dropped) {
                    (crate::report::Status::Ok, _) => Some(&c.output),
                    (_, Some(d)) => Some(d),
                    _ => None,
                };
                if let Some(result) = answer {
                    let _ = ledger.commits(
                        scenario.as_ref(),
                        &tools,
                        c.id,
                        &c.tool.to_lossy(),
                        &c.arguments,
                        result,
                    );
                }
            }
        }
        Relay {
            rules: storm.rules().to_vec(),
            storm,
            scenario,
            recorder,
            session,
            pending: Map::default(),
            by_request: Map::default(),
            awaited: Map::default(),
            client_requests: Set::default(),
            server_requests: Set::default(),
            tools,
            ledger,
            timers: BinaryHeap::new(),
            seq: 0,
            recording: true,
            said: HashSet::new(),
            ends,
            client_gone: false,
            to_client: Outgoing::default(),
            to_server: Outgoing::default(),
            long_answer: None,
            long_request: None,
            stopping: None,
            server_in_pieces: false,
            client_held: Vec::new(),
            server_held: Vec::new(),
            unsent: Vec::new(),
            answers_held: Vec::new(),
            stopped: None,
            wire: None,
            long_in: [0; 2],
            long_out: [0; 2],
        }
    }

    pub(super) fn note(&mut self, text: &str) {
        let _ = writeln!(
            self.ends.log,
            "toolstorm-tui mcp: {}",
            crate::printable::line(text)
        );
    }

    /// Notes `text` once per session (keyed by `key`).
    pub(super) fn note_once(&mut self, key: &str, text: &str) {
        if self.said.insert(key.to_owned()) {
            self.note(text);
        }
    }

    pub(super) fn schedule(&mut self, at: Instant, timer: Timer) {
        self.seq += 1;
        self.timers.push(std::cmp::Reverse((at, self.seq, timer)));
    }

    /// Holds bytes for the client until the next [`Relay::flush`].
    pub(super) fn write_client(&mut self, bytes: &[u8]) {
        if !self.client_gone {
            self.client_held.extend_from_slice(bytes);
        }
    }

    /// Bytes held for either side.
    pub(super) fn held(&self) -> usize {
        self.client_held.len() + self.server_held.len()
    }

    /// The group commit: writes the journal lines held, then the bytes held for the server,
    /// then those for the client — so nothing reaches a side before the journal has it. The
    /// relay's runner (`inbox`) calls it after each batch of events; one write per side per
    /// batch of messages instead of one per message.
    pub(super) fn flush(&mut self) {
        if let Some(r) = self.recorder.as_mut()
            && let Err(e) = r.flush()
        {
            self.journal_failed(&e);
        }
        if let Some(e) = self.wire.as_mut().and_then(WireLog::flush) {
            self.wire_failed(&e);
        }
        if !self.server_held.is_empty() {
            let bytes = std::mem::take(&mut self.server_held);
            let (written, failed) = match self.ends.server_in.as_mut() {
                Some(w) => write_counted(w, &bytes),
                None => (0, true),
            };
            if failed {
                self.note_once("server-gone", "the server no longer reads its input");
                // A request the server never got whole did not run; those written before
                // the failure did reach it.
                for (call, at) in std::mem::take(&mut self.unsent) {
                    if at.end > written
                        && let Some(p) = self.pending.get_mut(&call)
                    {
                        p.forwarded = false;
                        self.storm.body_not_started(&p.handle);
                    }
                }
            }
            self.server_held = bytes;
            self.server_held.clear();
            self.server_held.shrink_to(HELD_KEPT);
        }
        self.unsent.clear();
        self.answers_held.clear();
        if !self.client_held.is_empty() {
            let bytes = std::mem::take(&mut self.client_held);
            let r = if self.client_gone {
                Ok(())
            } else {
                self.ends
                    .client_out
                    .write_all(&bytes)
                    .and_then(|()| self.ends.client_out.flush())
            };
            self.client_held = bytes;
            self.client_held.clear();
            self.client_held.shrink_to(HELD_KEPT);
            if let Err(e) = r {
                // The client went away: the session ends, and its finish still happens.
                self.client_gone = true;
                self.note(&format!(
                    "the client stopped reading ({e}); ending the session"
                ));
                self.client_closed();
                self.begin_stopping(EOF_GRACE, 0);
            }
        }
    }

    /// The client closed the session (its end of input, or it stopped reading): the journal
    /// says so at once, before the server is given its grace to exit.
    pub(super) fn client_closed(&mut self) {
        if let Some(r) = self.recorder.as_mut()
            && let Err(e) = r.client_closed()
        {
            self.journal_failed(&e);
        }
    }

    /// Sends a whole message to the client (held while a long line is in progress).
    pub(super) fn send_client(&mut self, bytes: &[u8]) {
        if !self.client_gone {
            self.log_wire(Dir::ToClient, bytes);
            self.to_client.message(bytes, &mut self.client_held);
        }
    }

    /// Whether the client can still get answers.
    pub(super) fn client_reading(&self) -> bool {
        !self.client_gone
    }

    /// Holds bytes for the server until the next [`Relay::flush`]; false when it no longer
    /// reads its input.
    pub(super) fn write_server(&mut self, bytes: &[u8]) -> bool {
        if !self.server_reads() {
            return false;
        }
        self.server_held.extend_from_slice(bytes);
        true
    }

    /// Whether the server still reads its input (said once when it does not).
    fn server_reads(&mut self) -> bool {
        if self.ends.server_in.is_none() {
            self.note_once("server-gone", "the server no longer reads its input");
            return false;
        }
        true
    }

    /// Sends a whole message to the server (held while a long line is in progress); false
    /// when it could not be written.
    pub(super) fn send_server(&mut self, bytes: &[u8]) -> bool {
        if self.to_server.mid_line() {
            // Held until the long line ends (and written then, if the server still reads).
            self.log_wire(Dir::ToServer, bytes);
            return !self.to_server.message(bytes, &mut self.server_held);
        }
        if !self.server_reads() {
            return false;
        }
        self.log_wire(Dir::ToServer, bytes);
        self.to_server.message(bytes, &mut self.server_held)
    }

    /// The wire log could not be written: said once; the recording goes on without it.
    pub(super) fn wire_failed(&mut self, e: &str) {
        self.note(&format!(
            "the wire log could not be written ({e}); the recording goes on without it"
        ));
    }

    /// A whole message on the wire log, when there is one.
    pub(super) fn log_wire(&mut self, dir: Dir, bytes: &[u8]) {
        if let Some(w) = self.wire.as_mut() {
            w.message(dir, bytes);
        }
    }

    /// A piece of a long line on the wire log: the line is logged (by its size) with its
    /// last piece. `at`: 0 the client's side, 1 the server's.
    pub(super) fn log_piece(&mut self, dir: Dir, bytes: usize, last: bool) {
        let Some(w) = self.wire.as_mut() else {
            return;
        };
        let counts = if dir.received() {
            &mut self.long_in
        } else {
            &mut self.long_out
        };
        let at = usize::from(matches!(dir, Dir::FromServer | Dir::ToServer));
        counts[at] += bytes as u64;
        if last {
            w.long_line(dir, std::mem::take(&mut counts[at]));
        }
    }

    /// Passes on a piece of a long line to `to`.
    pub(super) fn piece(&mut self, to: Side, bytes: &[u8], last: bool) {
        match to {
            Side::Client => {
                let out = self.to_client.piece(bytes, last);
                if !self.client_gone {
                    self.log_piece(Dir::ToClient, bytes.len(), last);
                }
                self.write_client(&out);
            }
            Side::Server => {
                let out = self.to_server.piece(bytes, last);
                if self.ends.server_in.is_some() {
                    self.log_piece(Dir::ToServer, bytes.len(), last);
                }
                self.write_server(&out);
            }
        }
    }

    /// The calls in hand that `which` picks, in call order.
    pub(super) fn pending_where(&self, which: impl Fn(&Pending) -> bool) -> Vec<u64> {
        let mut calls: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| which(p))
            .map(|(c, _)| *c)
            .collect();
        calls.sort_unstable();
        calls
    }

    /// The session is ending: the server's input closes, and it has `grace` to leave.
    pub(super) fn begin_stopping(&mut self, grace: Duration, code: i32) {
        // Requests held back by injected latency go now, before the server's input closes:
        // the client sent them, and the server may still answer.
        for call in self.pending_where(|p| p.line.is_some()) {
            self.forward(call);
        }
        self.flush();
        self.ends.server_in = None;
        if self.stopping.is_none() {
            self.stopping = Some(Stopping {
                until: Instant::now() + grace,
                code,
            });
        }
    }

    /// The headers of the HTTP request that carried a client's `line`, as the recording keeps
    /// them (taken: asked once per line); none on stdio.
    pub(super) fn request_headers(&self, line: &[u8]) -> Vec<(String, String)> {
        self.ends
            .http
            .as_ref()
            .map(|c| c.request_headers_of(line))
            .unwrap_or_default()
    }

    /// Takes the header names HTTP clients sent since the last look into the session's
    /// facts, and the requests the listener refused as invalid; whether there were new ones.
    pub(super) fn headers_grew(&mut self) -> bool {
        let mut grew = false;
        if let Some(c) = &self.ends.http {
            for why in c.refused_since() {
                if self.session.refused_requests.len() < crate::mcp::session::REFUSED_KEPT {
                    self.session.refused_requests.push(why);
                    grew = true;
                }
            }
        }
        if let (Some(c), Some(t)) = (&self.ends.http, self.session.transport.as_mut()) {
            for (n, v) in c.headers_seen() {
                if !t.request_headers.iter().any(|(k, _)| *k == n) {
                    t.request_headers.push((n, v));
                    grew = true;
                }
            }
        }
        grew
    }

    /// The journal learns the session's facts again (after the handshake or a listing).
    /// The session's facts changed: on record with the next lines (at once after a failed
    /// write; the result says whether that write went).
    pub(super) fn facts_changed(&mut self) -> std::io::Result<()> {
        self.headers_grew();
        match self.recorder.as_mut() {
            Some(r) => r.facts(&self.session),
            None => Ok(()),
        }
    }
}

/// Writes `bytes`, counting what went: how many bytes were written, and whether the write
/// (or the flush after it) failed.
fn write_counted(w: &mut impl Write, bytes: &[u8]) -> (usize, bool) {
    let mut written = 0;
    while written < bytes.len() {
        match w.write(&bytes[written..]) {
            Ok(0) => return (written, true),
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return (written, true),
        }
    }
    (written, w.flush().is_err())
}

/// A `tools/call` the proxy is handling.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) handle: CallHandle,
    pub(super) tool: String,
    pub(super) arguments: Value,
    /// The client's request id, as parsed (for the record) and as its exact text (for the
    /// answers we make).
    pub(super) request_id: Value,
    pub(super) raw_id: String,
    pub(super) id: Id,
    pub(super) rule: Option<Rule>,
    pub(super) delivery: Delivery,
    /// The request line, while it waits for injected latency.
    pub(super) line: Option<Vec<u8>>,
    /// The outcome of an injected fault, to give when its delay has passed.
    pub(super) injected: Option<Result<Value>>,
    pub(super) forwarded: bool,
    pub(super) cancelled: bool,
    /// An `input_required` result went to the client: the call waits for its continuation,
    /// and must not get a second answer.
    pub(super) awaiting_input: bool,
    /// What the record says besides (arguments summarised, name cut).
    pub(super) note: Option<String>,
    /// The headers of the HTTP request that carried it, as the recording keeps them.
    pub(super) request_headers: Vec<(String, String)>,
    /// The bytes of its answer the server wrote before its output ended mid-line (never
    /// relayed: the client gets no half message).
    pub(super) cut_at: Option<u64>,
}

/// A long server line answering a call, passed on in pieces.
#[derive(Debug)]
pub(super) struct LongAnswer {
    /// The call it answers; none yet when its id comes after its body (known at the end).
    pub(super) call: Option<u64>,
    /// The line's last bytes, where an id written last is.
    pub(super) tail: Vec<u8>,
    pub(super) hasher: Sha256,
    pub(super) bytes: u64,
    /// What its first piece says it is (an error or a result).
    pub(super) kind: Answer,
    /// The answer is dropped (a lost acknowledgement), not relayed.
    pub(super) swallow: bool,
}

/// An answer held for the client until its journal line is written ([`Relay::answers_held`]).
#[derive(Debug)]
pub(super) struct HeldAnswer {
    /// Where it lies in the bytes held for the client.
    pub(super) at: std::ops::Range<usize>,
    /// The request ids of the calls it answers.
    pub(super) ids: Vec<String>,
    /// The rest of its line, when it is a batch with members that answer no call.
    pub(super) rest: Option<Vec<u8>>,
}

/// A long client line being passed on in pieces.
#[derive(Debug)]
pub(super) struct LongRequest {
    /// The call it carries, when it is a `tools/call` we hold.
    pub(super) call: Option<u64>,
    /// Its id comes after its body: the call answers to it once the last piece is in.
    pub(super) id_last: bool,
    /// The line's last bytes, where an id written last is.
    pub(super) tail: Vec<u8>,
    /// A fault answers in the server's place: the pieces are not forwarded.
    pub(super) swallow: bool,
    /// The recording had stopped: the call is not sent, and the client hears so when the
    /// last piece is in (its id's JSON text, when it came before the body).
    pub(super) refused: Option<String>,
}

/// What an answer says, as far as the proxy could tell.
#[derive(Debug)]
pub(super) enum Answer {
    /// A result.
    Result(Value),
    /// A result the record's answer holds as it came (nothing in it is redacted): the call's
    /// output is on record there, so the engine is given none of its own.
    InRecord,
    /// A result we could not read (taken as a success: the server may have committed).
    Unknown,
    /// A result flagged `isError`.
    ToolError(String),
    /// A JSON-RPC error.
    RpcError(String),
}

impl Answer {
    /// Whether the server says the call succeeded (or we cannot tell).
    pub(super) fn is_success(&self) -> bool {
        matches!(self, Answer::Result(_) | Answer::InRecord | Answer::Unknown)
    }
}

/// An id as the map keys it, from its exact JSON text.
pub(super) fn raw_id(raw: &[u8]) -> Option<Id> {
    let text = std::str::from_utf8(raw).ok()?;
    crate::json::parse(text).ok().map(|v| Id::of(&v))
}

#[cfg(test)]
mod tests {
    use super::write_counted;

    /// A pipe whose reader leaves after `room` bytes, taking at most `chunk` per write.
    struct Leaving {
        got: Vec<u8>,
        room: usize,
        chunk: usize,
    }

    impl std::io::Write for Leaving {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.got.len() >= self.room {
                return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
            }
            let n = buf.len().min(self.chunk).min(self.room - self.got.len());
            self.got.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_write_that_fails_part_way_says_how_far_it_got() {
        let bytes = b"first request\nsecond request\n";
        let mut w = Leaving {
            got: Vec::new(),
            room: 14,
            chunk: 5,
        };
        // The first request (14 bytes) went whole; the second did not: only it is taken back.
        assert_eq!(write_counted(&mut w, bytes), (14, true));
        assert_eq!(w.got, b"first request\n".to_vec());
        let mut w = Leaving {
            got: Vec::new(),
            room: 100,
            chunk: 3,
        };
        assert_eq!(write_counted(&mut w, bytes), (bytes.len(), false));
        assert_eq!(w.got, bytes.to_vec());
    }
}
