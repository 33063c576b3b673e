//! The relay: handles the readers' events one at a time (whoever runs it: see `inbox`),
//! relays their messages, learns what the session says of itself (the handshake, the tool
//! list), hands `tools/call` to the call lifecycle (`calls`), and ends the session — when the
//! client leaves (end of input, or it stops reading), when the server exits, or on a signal —
//! without ever skipping the finish: calls still open are ended and recorded, the journal
//! closed, the server stopped.

use std::time::{Duration, Instant};

use super::Ending;
use super::ServerEnd;
use super::inbox::{Hub, Runs, Served};
use super::link::{Awaited, EOF_GRACE, Relay, SIGNAL_GRACE, Timer};
use crate::json::Value;
use crate::mcp::session::{Exchange, keep};
use crate::mcp::transport::{Event, Flow, Kept, Side, trim};
use crate::mcp::wire::{self, Id, Message};
use crate::mcp::wirelog::WireLog;

impl Relay {
    /// Runs the session on the relay's thread (see [`Hub::serve`]) and takes the relay back
    /// when it ends, with the exit code; what it holds is written.
    pub(super) fn serve(
        self,
        hub: &Hub<Relay>,
        server: &mut dyn ServerEnd,
    ) -> Option<(Relay, i32)> {
        hub.start(self);
        let served = hub.serve(
            &mut |relay| {
                relay.fire_timers();
                relay.out_of_grace(server)
            },
            &Relay::stop_code,
        );
        let mut relay = hub.lock().relay.take()?;
        let code = match served {
            Served::Ended(code) => code,
            Served::ServerLeft => relay.server_left(server),
        };
        relay.flush();
        Some((relay, code))
    }

    /// The session is ending and the server did not leave in its grace: its group is stopped
    /// (what the timers ended is on record first); the exit code.
    fn out_of_grace(&mut self, server: &mut dyn ServerEnd) -> Option<i32> {
        let s = self.stopping?;
        if Instant::now() < s.until {
            return None;
        }
        self.flush();
        server.stop();
        self.answer_due_faults();
        self.finish_pending("the server had not answered when the session ended");
        Some(s.code)
    }

    /// The server's output ended: what it said before it left reaches the client first; the
    /// exit code.
    fn server_left(&mut self, server: &mut dyn ServerEnd) -> i32 {
        self.flush();
        let status = server.wait_for(Duration::from_secs(2));
        if let Some(s) = self.stopping {
            self.answer_due_faults();
            self.finish_pending("the server exited without answering");
            return s.code;
        }
        let in_flight = self.pending.values().filter(|p| !p.cancelled).count();
        self.server_died(status.clone());
        let trail = self.recorder.as_ref().map_or(String::new(), |r| {
            format!(" and recorded in {}", r.path().display())
        });
        self.note(&format!(
            "the server exited ({}) with {in_flight} call(s) in flight; they were answered with an error{trail}",
            status.as_deref().unwrap_or("status unknown"),
        ));
        1
    }

    pub(super) fn stop_code(&self) -> i32 {
        self.stopping.map_or(0, |s| s.code)
    }

    fn flow(&self, side: Side) -> &Flow {
        match side {
            Side::Client => &self.ends.to_server,
            Side::Server => &self.ends.to_client,
        }
    }

    pub(super) fn fire_timers(&mut self) {
        // The wire log's messages held go to its writer when due.
        if let Some(e) = self.wire.as_mut().and_then(WireLog::flush) {
            self.wire_failed(&e);
        }
        let now = Instant::now();
        while let Some(std::cmp::Reverse((at, _, _))) = self.timers.peek() {
            if *at > now {
                break;
            }
            let Some(std::cmp::Reverse((_, _, timer))) = self.timers.pop() else {
                break;
            };
            match timer {
                // A call the session's end already forwarded (or took back) waits no more.
                Timer::Forward(call) => {
                    if self.pending.get(&call).is_some_and(|p| p.line.is_some()) {
                        self.forward(call);
                    }
                }
                Timer::Answer(call) => self.answer_injected(call),
            }
        }
    }

    // ----- client → server -----

    fn client_line(&mut self, line: Vec<u8>, message: Message) {
        match message {
            Message::Request { id, method, params } => {
                if let Some(v) = wire::request_version(&params)
                    && self.session.protocol_version.as_deref() != Some(v.as_str())
                {
                    self.session.protocol_version = Some(v);
                    // Best effort after a failed write: facts count no call.
                    let _ = self.facts_changed();
                }
                if method == "tools/call" && self.recording {
                    return self.tools_call(id, params, line);
                }
                if method == "initialize" {
                    self.session.client_info = params
                        .as_object()
                        .and_then(|o| o.get("clientInfo"))
                        .and_then(keep)
                        .unwrap_or(Value::Null);
                    // Best effort after a failed write: facts count no call.
                    let _ = self.facts_changed();
                }
                if matches!(
                    method.as_str(),
                    "initialize" | "tools/list" | "server/discover"
                ) {
                    self.awaited.insert(
                        id.clone(),
                        Awaited {
                            method,
                            params: keep(&params).unwrap_or(Value::Null),
                        },
                    );
                }
                self.client_requests.insert(id);
                self.send_server(&line);
            }
            Message::Notification { method, params } => {
                if method == "notifications/cancelled"
                    && let Some(id) = params
                        .as_object()
                        .and_then(|o| o.get("requestId"))
                        .map(Id::of)
                    && self.cancelled(&id)
                {
                    return;
                }
                self.send_server(&line);
            }
            Message::Response { id, .. } => {
                if !self.server_requests.remove(&id) {
                    self.note(&format!(
                        "the client answered an id the server never asked with ({}); relayed",
                        id.0
                    ));
                }
                self.send_server(&line);
            }
            Message::Invalid(why) => {
                // No answer could find its way back by that id, and servers drop such a
                // request unanswered: the client is answered at once (-32600, id null, as
                // JSON-RPC answers a request whose id it cannot tell), and it never reaches
                // the server.
                self.note(&format!(
                    "the client sent an invalid request ({why}); answered -32600, not relayed"
                ));
                let answer =
                    wire::error_line_as("null", -32600, &format!("Invalid Request: {why}"), None);
                if self.session.refused_requests.len() < super::super::session::REFUSED_KEPT {
                    self.session.refused_requests.push(why);
                    // Best effort, as for the handshake's facts: the answer goes all the same.
                    let _ = self.facts_changed();
                }
                self.send_client(&answer);
            }
            Message::Other(why) => {
                if let Some(items) = batch_of(&line)
                    && self.client_batch(&items, &line)
                {
                    return;
                }
                if self.recording && self.unreadable_request(&line, &why) {
                    return;
                }
                self.note(&format!("the client sent {why}; relayed as is"));
                self.send_server(&line);
            }
        }
    }

    // ----- server → client -----

    /// A line from the server; `kept`, the record of an answer its reader made.
    fn server_line(&mut self, line: Vec<u8>, message: Message, kept: Option<Kept>) {
        match message {
            Message::Response { id, message } => {
                if let Some(call) = self.answered_call(&id) {
                    return self.call_answered(call, Some(message), line, None, kept);
                }
                if let Some(a) = self.awaited.remove(&id) {
                    self.learn(a, &message);
                }
                if !self.client_requests.remove(&id) {
                    self.note(&format!(
                        "the server answered an id the client never used ({}); relayed",
                        id.0
                    ));
                }
                self.send_client(&line)
            }
            Message::Request { id, .. } => {
                self.server_requests.insert(id);
                self.send_client(&line)
            }
            Message::Notification { .. } => self.send_client(&line),
            Message::Invalid(why) => {
                self.note(&format!(
                    "the server sent an invalid request ({why}); relayed as is"
                ));
                self.send_client(&line)
            }
            Message::Other(why) => {
                if let Some(items) = batch_of(&line)
                    && self.server_batch(&items, &line)
                {
                    return;
                }
                // An answer we cannot read may still answer a call: it is judged all the same.
                if let Some(call) =
                    wire::unread_answer_id(trim(&line)).and_then(|id| self.answered_call(&id))
                {
                    return self.call_answered(call, None, line, Some(why), None);
                }
                self.note(&format!("the server sent {why}; relayed as is"));
                self.send_client(&line)
            }
        }
    }

    /// Keeps what a handshake or listing answer says.
    fn learn(&mut self, a: Awaited, message: &Value) {
        let Some(o) = message.as_object() else {
            return;
        };
        if let Some(result) = o.get("result") {
            if a.method == "initialize"
                && let Some(r) = result.as_object()
            {
                if let Some(v) = r.get("protocolVersion").and_then(Value::as_str) {
                    self.session.protocol_version = Some(v.to_owned());
                }
                self.session.server_info =
                    r.get("serverInfo").and_then(keep).unwrap_or(Value::Null);
            }
            if a.method == "tools/list" {
                self.tools.learn(result);
            }
        }
        let body = if let Some(r) = o.get("result") {
            crate::obj! {"result" => r.clone()}
        } else {
            crate::obj! {"error" => o.get("error").cloned().unwrap_or(Value::Null)}
        };
        if let Some(response) = keep(&body) {
            let x = Exchange {
                method: a.method,
                params: a.params,
                response,
            };
            // An agent that lists its tools every turn gets the same answer: kept once.
            if self.session.exchanges.contains(&x) {
                return;
            }
            self.session.exchanges.push(x);
        }
        // Best effort after a failed write: facts count no call.
        let _ = self.facts_changed();
    }

    /// Ends the relay's work: the journal records the end and the compactor writes the
    /// recording a last time.
    pub(super) fn finish(mut self, code: i32) -> Ending {
        // How many calls were refused since the recording stopped, and the requests the
        // listener refused since the facts were last written, on record.
        let refused_late = self.headers_grew();
        if refused_late
            || self
                .session
                .recording_stopped
                .as_ref()
                .is_some_and(|st| st.refused > 0)
        {
            // Best effort after a failed write: facts count no call.
            let _ = self.facts_changed();
        }
        // What the last calls' ends held (journal lines, answers) goes out first.
        self.flush();
        if let Some(e) = self.wire.take().and_then(WireLog::finish) {
            self.wire_failed(&e);
        }
        let report = self.storm.report();
        let mut ending = Ending {
            code,
            calls: report.calls.len(),
            faults: report.faults_triggered(),
            duplicates: report.duplicate_effects(),
            trouble: None,
        };
        if let Some(r) = self.recorder.take() {
            let done = r.finish(code, &self.storm);
            ending.calls = done.calls;
            ending.faults = done.faults;
            ending.duplicates = done.duplicates;
            ending.trouble = done
                .error
                .or(done.full.map(|f| {
                    format!("the recording is full ({f}): its files keep the calls that fit")
                }))
                .or(self.session.recording_stopped.as_ref().map(|st| {
                    format!(
                        "the recording stopped after {} call(s): {}; {} later tools/call \
                         request(s) were answered with an error and not sent to the server",
                        st.after_calls, st.reason, st.refused
                    )
                }));
        }
        ending
    }
}

impl Runs for Relay {
    /// Handles one event (the server's end is the relay thread's: see [`Relay::serve`]).
    fn handle(&mut self, event: Event) {
        match event {
            Event::Line(side, line, read) => {
                let n = line.len();
                self.log_wire(received(side), &line);
                let (message, kept) = match read {
                    Some(r) => (r.message, r.kept),
                    None => (wire::classify(trim(&line)), None),
                };
                match side {
                    Side::Client => self.client_line(line, message),
                    Side::Server => self.server_line(line, message, kept),
                }
                self.flow(side).release(n);
            }
            Event::Piece(side, piece, last) => {
                let n = piece.len();
                self.log_piece(received(side), n, last);
                match side {
                    Side::Client => self.client_piece(piece, last),
                    Side::Server => self.server_piece(piece, last),
                }
                self.flow(side).release(n);
            }
            Event::Cut(side, bytes) => {
                let n = bytes.len();
                match side {
                    Side::Client => self.note(&format!(
                        "the client's input ended mid-line ({n} bytes that are no message): not relayed"
                    )),
                    Side::Server => self.server_cut(&bytes),
                }
                self.flow(side).release(n);
            }
            Event::Eof(Side::Client) => {
                // The client is done sending: the server's input closes and it has a grace
                // to answer what it holds and exit; its answers are still relayed.
                self.client_closed();
                self.begin_stopping(EOF_GRACE, 0);
            }
            Event::Eof(Side::Server) => {}
            Event::Interrupt(n) => self.begin_stopping(SIGNAL_GRACE, 128 + n),
        }
    }

    fn flush(&mut self) {
        Relay::flush(self);
    }

    fn held(&self) -> usize {
        Relay::held(self)
    }

    /// When the next timer is due, or the server's grace to leave ends.
    fn deadline(&self) -> Option<Instant> {
        let next = self.timers.peek().map(|t| t.0.0);
        let next = match (next, self.wire.as_ref().and_then(WireLog::due)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, None) => a,
            (None, b) => b,
        };
        match (next, self.stopping.map(|s| s.until)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, None) => a,
            (None, b) => b,
        }
    }

    fn note(&mut self, text: &str) {
        Relay::note(self, text);
    }
}

/// A message from `side`, as the wire log names it.
fn received(side: Side) -> crate::mcp::wirelog::Dir {
    match side {
        Side::Client => crate::mcp::wirelog::Dir::FromClient,
        Side::Server => crate::mcp::wirelog::Dir::FromServer,
    }
}

/// The messages of a batch line (a JSON array we can read), if it is one.
fn batch_of(line: &[u8]) -> Option<Vec<Value>> {
    let body = trim(line);
    if body.first() != Some(&b'[') || body.len() > wire::MAX_PARSED_LINE {
        return None;
    }
    match crate::json::parse(std::str::from_utf8(body).ok()?).ok()? {
        Value::Array(items) => Some(items),
        _ => None,
    }
}
