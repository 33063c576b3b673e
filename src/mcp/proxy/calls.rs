//! The `tools/call` lifecycle: decide (the engine's rules, in arrival order), delay, forward
//! or answer in the server's place, judge what the server committed, and end the call —
//! journaling each step before anyone can act on it: a call's begin before its request goes
//! anywhere, its end before its answer is relayed.
//!
//! Every exchange is judged, also those the proxy cannot read whole: a request too large or
//! too deep keeps its ordinal and its decision (rules apply by tool name) and is recorded with
//! its arguments summarised; an answer we cannot parse is recorded as an answer (size, reason,
//! SHA-256, and the bytes themselves when they are small enough), with evidence from the
//! scenario and the annotations as for any other.

use std::time::{Duration, Instant};

use super::answers::{read_answer, sniffed_answer};
use super::link::{Answer, HeldAnswer, Pending, Relay, Timer, raw_id};
use super::pieces::sniff_call;
use super::stop::NO_ROOM;
use crate::error::{Error, Result};
use crate::json::{Object, Value, canonical, sha256_hex};
use crate::mcp::evidence::{Evidence, would_commit};
use crate::mcp::http::listen::control;
use crate::mcp::scenario::Delivery;
use crate::mcp::session::{CallRecord, Delivered, HttpStatus, MAX_RAW, Unknown, Unreadable};
use crate::mcp::summary::{summarise_arguments, summary};
use crate::mcp::transport::{Kept, trim};
use crate::mcp::wire::{self, FAULT_META_KEY, Id, error_line_as, result_line_as};
use crate::obj;
use crate::rule::FaultKind;
use crate::storm::Prelude;

/// What a call committed, as its record keeps it.
#[derive(Debug, Default)]
struct Committed {
    /// The evidence of each effect, in effect order.
    effects: Vec<Evidence>,
    /// The call whose commit this one only replayed.
    replay_of: Option<u64>,
    /// Commits only the annotations suggest (name, key).
    possible: Vec<(String, String)>,
    /// The server's answer a lost acknowledgement dropped.
    dropped: Option<Value>,
    /// Whether the call's output is the result its record's answer holds (the engine was
    /// given none: [`Answer::InRecord`]).
    output_in_answer: bool,
    /// Why nobody saw the call's outcome, when nobody did (it is indeterminate).
    unknown: Option<String>,
    /// Whether the call was still with the server when the session ended.
    at_end: bool,
}

/// The tool a `tools/call`'s params name, as the record keeps it, and a note when the name
/// is not a plain string: missing (`(unnamed)`), not a string (its JSON text in parentheses),
/// or a string that is not Unicode (a lone surrogate: kept with U+FFFD in its place). Every
/// such call is judged and recorded like any other; the server answers what it makes of it.
pub(super) fn tool_name(params: Option<&crate::json::Object>) -> (String, Option<String>) {
    match params.and_then(|o| o.get("name")) {
        Some(Value::Str(t)) => match t.as_str() {
            Some(name) => (name.to_owned(), None),
            None => (
                t.to_lossy(),
                Some("the tool name is not valid Unicode (a lone surrogate): recorded with U+FFFD in its place".into()),
            ),
        },
        None => (
            "(unnamed)".to_owned(),
            Some("the request named no tool".into()),
        ),
        Some(other) => {
            let text = canonical(other);
            let text: String = text.chars().take(60).collect();
            (
                format!("({text})"),
                Some(format!("the tool name was not a string ({text})")),
            )
        }
    }
}

impl Relay {
    /// A `tools/call` from the client: decide, then forward, delay or answer.
    pub(super) fn tools_call(&mut self, id: Id, mut params: Value, line: Vec<u8>) {
        let arguments = params
            .as_object_mut()
            .and_then(|o| o.remove("arguments"))
            .unwrap_or_else(|| obj! {});
        let headers = self.request_headers(&line);
        let o = params.as_object();
        let (tool, odd_name) = tool_name(o);
        // A retry that answers an `input_required` result continues the same logical call.
        let continues =
            o.is_some_and(|o| o.contains_key("requestState") || o.contains_key("inputResponses"));
        if continues && let Some(call) = self.continued_call(&tool) {
            let raw = exact_id(&line, &id);
            self.rekey(call, id, raw);
            self.send_server(&line);
            return;
        }
        let raw = exact_id(&line, &id);
        if self.refuses_call(&raw) {
            return;
        }
        if let Some((call, prelude)) = self.begin(&tool, arguments, odd_name, raw, id.clone()) {
            if let Some(p) = self.pending.get_mut(&call) {
                p.request_headers = headers;
            }
            self.start(call, prelude, Some(line));
        } else {
            self.client_requests.insert(id);
            self.send_server(&line);
        }
    }

    /// A client line we cannot read as a message that is still a `tools/call`: judged like any
    /// other, its arguments summarised. True when it was handled.
    pub(super) fn unreadable_request(&mut self, line: &[u8], why: &str) -> bool {
        let Some(s) = sniff_call(trim(line)) else {
            return false;
        };
        if self.refuses_call(&s.raw_id) {
            return true;
        }
        let args = summarise_arguments(&format!("not recorded: {why}"), &s.arguments);
        let note =
            format!("the request could not be read whole ({why}): its arguments are summarised");
        match self.begin(&s.tool, args, Some(note), s.raw_id, s.id.clone()) {
            Some((call, prelude)) => self.start(call, prelude, Some(line.to_vec())),
            None => {
                self.client_requests.insert(s.id);
                self.send_server(line);
            }
        }
        true
    }

    /// Begins call `tool` in the engine and on the journal; `None` when it is not recorded
    /// (past the budget). The caller has asked [`Relay::refuses_call`] first.
    pub(super) fn begin(
        &mut self,
        tool: &str,
        arguments: Value,
        note: Option<String>,
        raw_id: String,
        id: Id,
    ) -> Option<(u64, Prelude)> {
        let (tool, cut) = super::super::session::recorded_tool(tool);
        let mut note = match (note, cut) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        let mut arguments = arguments;
        let handle = match self.storm.begin_call(&tool, arguments.clone(), None) {
            Ok(h) => h,
            Err(Error::BudgetExceeded(_)) => {
                self.recording = false;
                let msg = format!(
                    "the session's call budget ({}) is reached: relaying from now on without injecting or recording",
                    self.session.max_calls
                );
                self.note_once("cap", &msg);
                return None;
            }
            Err(e) => {
                // The arguments cannot be captured (too large, too deep): the call keeps its
                // ordinal and decision, with its arguments summarised — member by member, or
                // whole when even that cannot be captured.
                let why = e.reference_line();
                let text = canonical(&arguments);
                let why_not = format!("not recorded: {why}");
                note = Some(match note {
                    Some(n) => format!("{n}; its arguments are summarised ({why})"),
                    None => format!("its arguments are summarised ({why})"),
                });
                let mut begun = None;
                for candidate in [
                    summarise_arguments(&why_not, text.as_bytes()),
                    summary(&why_not, text.as_bytes()),
                ] {
                    match self.storm.begin_call(&tool, candidate.clone(), None) {
                        Ok(h) => {
                            arguments = candidate;
                            begun = Some(h);
                            break;
                        }
                        Err(e) => {
                            let msg = format!(
                                "a call to {} was relayed but not recorded: {}",
                                crate::printable::quoted(&tool),
                                e.reference_line()
                            );
                            if matches!(e, Error::BudgetExceeded(_)) {
                                self.note(&msg);
                                return None;
                            }
                        }
                    }
                }
                match begun {
                    Some(h) => h,
                    None => {
                        self.note(&format!(
                            "a call to {} was relayed but not recorded",
                            crate::printable::quoted(&tool)
                        ));
                        return None;
                    }
                }
            }
        };
        // Headers an HTTP client first sent with this call (`Mcp-Name`, `Mcp-Param-*`) go on
        // record with the facts before the call does.
        if self.headers_grew()
            && let Err(e) = self.facts_changed()
        {
            self.journal_failed(&e);
        }
        let rule = handle.rule_index().map(|i| self.rules[i].clone());
        let delivery = rule.as_ref().map_or(Delivery::IsError, |r| {
            self.scenario
                .as_ref()
                .map_or(Delivery::IsError, |s| s.delivery_of(&r.name.to_lossy()))
        });
        let prelude = self.storm.prelude(&handle);
        let call = handle.id();
        if let Some(r) = self.recorder.as_mut() {
            r.begin(&self.storm, call, matches!(prelude, Prelude::Run { .. }));
        }
        let request_id = crate::json::parse(&raw_id).unwrap_or(Value::Null);
        self.pending.insert(
            call,
            Pending {
                handle,
                tool,
                arguments,
                request_id,
                raw_id,
                id: id.clone(),
                rule,
                delivery,
                line: None,
                injected: None,
                forwarded: false,
                cancelled: false,
                awaiting_input: false,
                note,
                request_headers: Vec::new(),
                cut_at: None,
            },
        );
        self.by_request.entry(id).or_default().push_back(call);
        Some((call, prelude))
    }

    /// Carries out a call's prelude: answer in the server's place (now or after the rule's
    /// delay), or forward `line` (now or after injected latency). Without a line (a long
    /// request passed on in pieces) a forwarded call counts as sent.
    pub(super) fn start(&mut self, call: u64, prelude: Prelude, line: Option<Vec<u8>>) {
        let Some(p) = self.pending.get_mut(&call) else {
            return;
        };
        match prelude {
            Prelude::Skip(outcome) => {
                let delay = match (&p.rule, &outcome) {
                    (Some(r), Err(Error::Timeout(_))) if r.kind == FaultKind::Timeout => r.delay,
                    _ => 0.0,
                };
                p.injected = Some(outcome);
                if delay > 0.0 {
                    let at = Instant::now() + Duration::from_secs_f64(delay.min(86_400.0));
                    self.schedule(at, Timer::Answer(call));
                } else {
                    self.answer_injected(call);
                }
            }
            Prelude::Run { latency } => {
                p.line = line;
                match latency.filter(|l| *l > 0.0) {
                    Some(l) if p.line.is_some() => {
                        let at = Instant::now() + Duration::from_secs_f64(l.min(86_400.0));
                        self.schedule(at, Timer::Forward(call));
                    }
                    _ => self.forward(call),
                }
            }
        }
    }

    /// The open call (waiting for input) to `tool`, if any.
    fn continued_call(&self, tool: &str) -> Option<u64> {
        self.pending
            .iter()
            .filter(|(_, p)| p.awaiting_input && p.tool == tool && p.injected.is_none())
            .map(|(c, _)| *c)
            .min()
    }

    /// A continued call answers to its new request id from now on.
    pub(super) fn rekey(&mut self, call: u64, id: Id, raw: String) {
        let Some(p) = self.pending.get_mut(&call) else {
            return;
        };
        let old = std::mem::replace(&mut p.id, id.clone());
        p.request_id = crate::json::parse(&raw).unwrap_or(Value::Null);
        p.raw_id = raw;
        p.awaiting_input = false;
        self.unlink(&old, call);
        self.by_request.entry(id).or_default().push_back(call);
    }

    fn unlink(&mut self, id: &Id, call: u64) {
        if let Some(q) = self.by_request.get_mut(id) {
            q.retain(|c| *c != call);
            if q.is_empty() {
                self.by_request.remove(id);
            }
        }
    }

    /// Takes call `call` out of hand.
    pub(super) fn take(&mut self, call: u64) -> Option<Pending> {
        let p = self.pending.remove(&call)?;
        let id = p.id.clone();
        self.unlink(&id, call);
        Some(p)
    }

    /// The call a server answer with `id` belongs to: the oldest one the server has.
    pub(super) fn answered_call(&self, id: &Id) -> Option<u64> {
        self.by_request
            .get(id)?
            .iter()
            .copied()
            .find(|c| self.pending.get(c).is_some_and(|p| p.forwarded))
    }

    /// Whether call `call`'s answer would be dropped (a lost acknowledgement still to come).
    pub(super) fn will_lose_answer(&self, call: u64) -> bool {
        self.pending.get(&call).is_some_and(|p| self.will_lose(p))
    }

    fn will_lose(&self, p: &Pending) -> bool {
        !p.cancelled
            && p.rule
                .as_ref()
                .is_some_and(|r| r.kind == FaultKind::ResponseLost)
    }

    /// Sends a call's request to the server (after any injected latency).
    pub(super) fn forward(&mut self, call: u64) {
        let Some(p) = self.pending.get_mut(&call) else {
            return;
        };
        let line = p.line.take();
        let before = self.server_held.len();
        let sent = line.is_none_or(|l| self.send_server(&l));
        // A request the server never got did not run — nor does one whose bytes, held for
        // the server, the write does not get past (`Relay::flush` takes it back). A request
        // held behind a long line in progress, or one sent in pieces, is taken as sent.
        let held_to = self.server_held.len();
        if sent && let Some(p) = self.pending.get_mut(&call) {
            p.forwarded = true;
            self.storm.body_started(&p.handle);
            if held_to > before {
                self.unsent.push((call, before..held_to));
            }
        }
    }

    /// The client cancelled `id`; true when the proxy handled it (the server never saw the
    /// call, so it must not see the cancellation either).
    pub(super) fn cancelled(&mut self, id: &Id) -> bool {
        let Some(call) = self.by_request.get(id).and_then(|q| {
            q.iter()
                .copied()
                .find(|c| self.pending.get(c).is_some_and(|p| !p.cancelled))
        }) else {
            return false;
        };
        let Some(p) = self.pending.get_mut(&call) else {
            return false;
        };
        p.cancelled = true;
        if p.forwarded {
            // The server has it: pass the cancellation on and record what it answers, if
            // anything (a call cancelled after the server committed is still a commit).
            return false;
        }
        if let Some(p) = self.take(call) {
            let note = "cancelled by the client before it reached the server";
            self.abandon(p, Err(cancellation()), note, None);
        }
        true
    }

    // ----- ending a call -----

    /// Ends a call: the engine records its outcome, the journal its end — and only then does
    /// `send` reach the client.
    fn conclude(
        &mut self,
        mut p: Pending,
        outcome: Result<Value>,
        delivered: Delivered,
        send: Option<Vec<u8>>,
        committed: Committed,
        note: Option<String>,
    ) {
        let went_nowhere = send.is_some() && !self.client_reading();
        let (outcome, delivered) = match (outcome, delivered) {
            // The answer that held the output goes nowhere: the engine keeps the output.
            (Ok(_), Delivered::Result(Value::Object(mut o)))
                if went_nowhere && committed.output_in_answer =>
            {
                (
                    Ok(o.remove("result").unwrap_or(Value::Null)),
                    Delivered::Nothing,
                )
            }
            (outcome, _) if went_nowhere => (outcome, Delivered::Nothing),
            pair => pair,
        };
        let mut output_in_answer =
            committed.output_in_answer && outcome.is_ok() && delivered.result().is_some();
        let note = match (p.note.clone(), note) {
            (Some(a), Some(b)) => Some(format!("{b}; {a}")),
            (a, b) => b.or(a),
        };
        let note = if went_nowhere {
            Some(match note {
                Some(n) => format!("{n}; the client had stopped reading"),
                None => "the client had stopped reading: the answer went nowhere".into(),
            })
        } else {
            note
        };
        let unknown = committed
            .unknown
            .map(|why| self.unknown_outcome(&p, why, committed.at_end));
        let mut record = CallRecord {
            call: p.handle.id(),
            request_id: p.request_id.clone(),
            delivered,
            effects: committed.effects,
            replay_of: committed.replay_of,
            note,
            possible: committed.possible,
            dropped: committed.dropped,
            request_headers: std::mem::take(&mut p.request_headers),
            unknown,
        };
        let room = self.answer_has_room(&record, &outcome, output_in_answer);
        if room {
            self.storm.end_call(&p.handle, outcome);
        } else {
            self.unkept(&p.handle, &mut record, outcome);
            output_in_answer = false;
        }
        if let Some(r) = self.recorder.as_mut() {
            r.end(&self.storm, record.call, &record, output_in_answer);
        }
        if !room {
            let _ = self.stop_recording(NO_ROOM, 0);
        }
        if let Some(bytes) = send {
            let before = self.client_held.len();
            self.send_client(&bytes);
            if self.client_held.len() > before {
                let at = before..self.client_held.len();
                self.answers_held.push(HeldAnswer {
                    at,
                    ids: vec![p.raw_id],
                    rest: None,
                });
            }
        }
    }

    /// The record of a call whose outcome nobody saw: `why`, and the effects it commits when
    /// it runs, named as the cassette names effects (redacted).
    fn unknown_outcome(&self, p: &Pending, why: String, at_end: bool) -> Unknown {
        let r = self.storm.redactor();
        let named = |s: String| r.replace_secrets(&crate::json::Text::from(s)).to_lossy();
        let effects = would_commit(self.scenario.as_ref(), &self.tools, &p.tool, &p.arguments)
            .into_iter()
            .map(|o| (named(o.name), named(o.key)))
            .collect();
        Unknown {
            why,
            effects,
            at_end,
        }
    }

    /// Ends a call that never reached the server, with `line` (an error) for the client.
    pub(super) fn end_unsent(
        &mut self,
        p: Pending,
        outcome: Result<Value>,
        delivered: Delivered,
        line: Vec<u8>,
    ) {
        self.conclude(
            p,
            outcome,
            delivered,
            Some(line),
            Committed::default(),
            None,
        );
    }

    /// Ends a call whose client gets nothing (more) from us: cancelled, the session over, or
    /// answered already.
    /// `unknown` says why nobody saw its outcome, when nobody did.
    fn abandon(
        &mut self,
        p: Pending,
        outcome: Result<Value>,
        note: impl Into<String>,
        unknown: Option<String>,
    ) {
        let note = Some(note.into());
        // A call the server still holds when the proxy gives up on it is one the session
        // ended with in flight (a client's cancellation before it reached the server has none).
        let at_end = unknown.is_some();
        let committed = Committed {
            unknown,
            at_end,
            ..Committed::default()
        };
        self.conclude(p, outcome, Delivered::Nothing, None, committed, note);
    }

    /// Gives an injected fault's outcome to the client (per the rule's delivery).
    pub(super) fn answer_injected(&mut self, call: u64) {
        let Some(mut p) = self.take(call) else {
            return;
        };
        let outcome = p.injected.take().unwrap_or(Ok(Value::Null));
        let (delivered, send) = match &outcome {
            Ok(replacement) => {
                let body = self.replacement_result(replacement);
                let line = result_line_as(&p.raw_id, body.clone());
                (Delivered::Result(obj! {"result" => body}), Some(line))
            }
            Err(e) => self.fault_answer(&p, e),
        };
        let note = matches!(delivered, Delivered::Nothing)
            .then(|| "no answer (injected): the client's timeout takes over".to_owned());
        self.conclude(p, outcome, delivered, send, Committed::default(), note);
    }

    /// Injected answers still waiting on a timer are given now (the session is ending).
    pub(super) fn answer_due_faults(&mut self) {
        for call in self.pending_where(|p| p.injected.is_some()) {
            self.answer_injected(call);
        }
    }

    /// A replacement value as a `tools/call` result: used as is when it already is one.
    fn replacement_result(&self, replacement: &Value) -> Value {
        let looks_like_result = replacement
            .as_object()
            .is_some_and(|o| o.contains_key("content"));
        let mut body = if looks_like_result {
            replacement.clone()
        } else {
            let text = match replacement.as_str() {
                Some(s) => s.to_owned(),
                None => crate::json::compact(replacement),
            };
            let mut r = wire::text_result(&text, false);
            if let (Value::Object(o), Value::Object(_)) = (&mut r, replacement) {
                o.push("structuredContent", replacement.clone());
            }
            r
        };
        self.mark(&mut body);
        body
    }

    /// Adds `resultType` (stateless protocol) to a result the proxy made.
    fn mark(&self, body: &mut Value) {
        let stateless = self
            .session
            .protocol_version
            .as_deref()
            .is_some_and(wire::is_stateless);
        if let Value::Object(o) = body
            && stateless
            && !o.contains_key("resultType")
        {
            o.push("resultType", "complete");
        }
    }

    /// An injected error as the rule's delivery gives it: what the client receives, and the
    /// line that carries it (none for no answer).
    fn fault_answer(&self, p: &Pending, e: &Error) -> (Delivered, Option<Vec<u8>>) {
        let mut fault = Object::new();
        if let Some(r) = p.rule.as_ref() {
            fault.push("rule", r.name.clone());
            fault.push("kind", r.kind.as_str());
        }
        if let Error::RateLimited { retry_after } = e {
            fault.push("retryAfter", Value::Float(*retry_after));
        }
        let text = e.reference_line();
        let over_http = self.ends.http.is_some();
        // A status goes only as a stream's head: once the server sent something on the
        // answer's stream first, the stream is cut instead (and recorded so).
        let started = self
            .ends
            .http
            .as_ref()
            .is_some_and(|c| c.answer_started(&p.id));
        let delivery = match p.delivery {
            Delivery::HttpStatus if !over_http => Delivery::JsonRpcError,
            Delivery::HttpStatus if started => Delivery::StreamCut,
            Delivery::StreamCut if !over_http => Delivery::NoAnswer,
            d => d,
        };
        match delivery {
            Delivery::IsError => {
                let mut body = wire::text_result(&text, true);
                if let Value::Object(o) = &mut body {
                    o.push("_meta", obj! {FAULT_META_KEY => Value::Object(fault)});
                }
                self.mark(&mut body);
                let line = result_line_as(&p.raw_id, body.clone());
                (Delivered::Result(obj! {"result" => body}), Some(line))
            }
            Delivery::JsonRpcError => {
                let code = match e {
                    Error::ResponseLost(_) => -32000, // the SDKs' "connection closed"
                    Error::Timeout(_) => -32001,      // the SDKs' "request timed out"
                    Error::RateLimited { .. } => -32010,
                    _ => -32011,
                };
                let data = Value::Object(fault);
                let line = error_line_as(&p.raw_id, code, &text, Some(data.clone()));
                let delivered = Delivered::Error(obj! {
                    "error" => obj! {"code" => code, "message" => text.as_str(), "data" => data},
                });
                (delivered, Some(line))
            }
            Delivery::NoAnswer => (Delivered::Nothing, None),
            Delivery::StreamCut => (Delivered::Cut, Some(control::cut(&p.raw_id))),
            Delivery::HttpStatus => {
                let (status, retry_after) = match e {
                    Error::RateLimited { retry_after } => {
                        (429, Some(retry_after.max(0.0).ceil() as u64))
                    }
                    Error::Timeout(_) => (504, None),
                    Error::ResponseLost(_) => (502, None),
                    _ => (503, None),
                };
                let mut data = fault;
                data.push("http_status", i64::from(status));
                if let Some(s) = retry_after {
                    data.push("retry_after", s as i64);
                }
                // The body is a JSON-RPC error, sent as `application/json`: what the client
                // got is kept whole, so replay sends the same status and body.
                let data = Value::Object(data);
                let body = error_line_as(&p.raw_id, -32000, &text, Some(data.clone()));
                let delivered = Delivered::HttpStatus(HttpStatus {
                    status,
                    retry_after,
                    body: obj! {
                        "error" => obj! {"code" => -32000, "message" => text.as_str(), "data" => data},
                    },
                });
                (
                    delivered,
                    Some(control::status(&p.raw_id, status, retry_after, trim(&body))),
                )
            }
        }
    }

    /// The server answered call `call`: with a message we read (`message`), or with a line we
    /// could not read (`unreadable` says why). `line` is what the server sent.
    pub(super) fn call_answered(
        &mut self,
        call: u64,
        message: Option<Value>,
        line: Vec<u8>,
        unreadable: Option<String>,
        kept: Option<Kept>,
    ) {
        let (result, error) = match message {
            Some(Value::Object(mut o)) => (o.remove("result"), o.remove("error")),
            _ => (None, None),
        };
        // An `input_required` result is not the call's end: the client will continue it.
        let needs_input = result
            .as_ref()
            .and_then(Value::as_object)
            .and_then(|r| r.get("resultType"))
            .and_then(Value::as_str)
            .is_some_and(|t| t != "complete");
        if needs_input {
            if let Some(p) = self.pending.get_mut(&call) {
                p.awaiting_input = true;
            }
            return self.send_client(&line);
        }
        let (answer, delivered) = match &unreadable {
            Some(why) => {
                let body = trim(&line);
                // Kept with its secrets redacted (a tolerant scan: it is not JSON we can read).
                let raw = (body.len() <= MAX_RAW)
                    .then(|| std::str::from_utf8(body).ok())
                    .flatten()
                    .map(|text| self.storm.redactor().redact_raw(text));
                let u = Unreadable {
                    bytes: body.len() as u64,
                    sha256: sha256_hex(body),
                    reason: why.clone(),
                    raw,
                };
                (sniffed_answer(body), Delivered::Unreadable(u))
            }
            None => read_answer(result, error, kept),
        };
        self.ended_by_server(
            call,
            answer,
            delivered,
            Some(line),
            unreadable.is_some(),
            true,
        );
    }

    /// The end of a call the server answered: effects, the after-success phase (a lost
    /// acknowledgement), the record, then what the client gets (`line`, unless the fault
    /// drops it; none when the answer goes out another way: in pieces, or in a batch).
    pub(super) fn ended_by_server(
        &mut self,
        call: u64,
        answer: Answer,
        delivered: Delivered,
        line: Option<Vec<u8>>,
        unreadable: bool,
        droppable: bool,
    ) {
        let Some(p) = self.take(call) else {
            if let Some(l) = line {
                self.send_client(&l);
            }
            return;
        };
        // A result the record holds is the engine's output as well when the engine redacts
        // as the record does; otherwise the engine gets a copy of its own to redact.
        let held = delivered.result();
        let in_record = matches!(answer, Answer::InRecord) && self.storm.redactor().is_builtin();
        let body_outcome = match answer {
            Answer::Result(r) => Ok(r),
            Answer::InRecord if !in_record => Ok(held.cloned().unwrap_or(Value::Null)),
            Answer::InRecord | Answer::Unknown => Ok(Value::Null),
            Answer::ToolError(t) => Err(Error::raised("ToolError", t)),
            Answer::RpcError(t) => Err(Error::raised("McpError", t)),
        };
        // The result, wherever it is held.
        let result = match &body_outcome {
            Ok(_) if in_record => held,
            Ok(r) => Some(r),
            Err(_) => None,
        };
        // What committed: effects are recorded while the call still runs.
        let mut committed = Committed {
            output_in_answer: in_record,
            unknown: lost_on_the_way(&delivered),
            ..Committed::default()
        };
        if let (Some(r), true) = (result, p.forwarded) {
            let commits = self.ledger.commits(
                self.scenario.as_ref(),
                &self.tools,
                p.handle.id(),
                &p.tool,
                &p.arguments,
                r,
            );
            committed.replay_of = commits.replay_of;
            committed.possible = commits
                .possible
                .into_iter()
                .map(|o| (o.name, o.key))
                .collect();
            for e in commits.effects {
                match self.storm.effect_for(&p.handle, &e.name, &e.key) {
                    Ok(()) => committed.effects.push(e.evidence),
                    Err(err) => {
                        let msg = format!(
                            "an effect of call #{} was not recorded: {}",
                            p.handle.id(),
                            err.reference_line()
                        );
                        self.note(&msg);
                    }
                }
            }
        }
        // An answer already on its way cannot be dropped: the rule stays selected, not
        // injected, and the record says why.
        let undroppable = !droppable && self.will_lose(&p);
        let outcome = if undroppable {
            body_outcome
        } else {
            self.storm.body_finished(&p.handle, body_outcome)
        };
        let (delivered, send, mut note) = match &outcome {
            Err(e @ Error::ResponseLost(_)) if !p.cancelled => {
                // What the server said is kept: it is what committed.
                if let Delivered::Result(body) = &delivered {
                    committed.dropped = Some(body.clone());
                }
                let (d, send) = self.fault_answer(&p, e);
                let mut n = format!(
                    "the server answered; its answer was dropped (injected {})",
                    FaultKind::ResponseLost.as_str()
                );
                if matches!(p.delivery, Delivery::HttpStatus) && matches!(d, Delivered::Cut) {
                    n.push_str(
                        "; its stream had begun (the server sent a message on it first), so \
                         the HTTP status due became a cut stream",
                    );
                }
                (d, send, Some(n))
            }
            _ if !p.cancelled
                && self
                    .ends
                    .http
                    .as_ref()
                    .is_some_and(|c| c.client_gone(&p.id)) =>
            {
                // The HTTP client left before the answer came (killed, or its own timeout):
                // nothing reached it. What the server said is kept: it is what committed.
                if let Delivered::Result(body) = &delivered {
                    committed.dropped = Some(body.clone());
                }
                let n = "the client was gone before the answer came (its connection had \
                         closed): nothing reached it";
                (Delivered::Nothing, None, Some(n.to_owned()))
            }
            _ => {
                let note = p
                    .cancelled
                    .then(|| "cancelled by the client; the server answered anyway".to_owned());
                (delivered, line, note)
            }
        };
        if undroppable {
            let n = "the answer came over 8 MB with its id last: it reached the client as it \
                     came, so the lost acknowledgement could not be injected";
            note = Some(match note {
                Some(x) => format!("{x}; {n}"),
                None => n.to_owned(),
            });
        }
        if unreadable {
            let n = "the answer could not be read as a message; it was relayed untouched";
            note = Some(match note {
                Some(x) => format!("{x}; {n}"),
                None => n.to_owned(),
            });
        }
        let final_outcome = if p.cancelled {
            Err(cancellation())
        } else {
            outcome
        };
        self.conclude(p, final_outcome, delivered, send, committed, note);
    }

    /// The server's output ended mid-line: its last bytes are no message and go nowhere. When
    /// they begin an answer to a call, the call keeps where its answer was cut (it is ended
    /// when the server's exit is known: [`Relay::server_died`]).
    pub(super) fn server_cut(&mut self, bytes: &[u8]) {
        let n = bytes.len() as u64;
        let body = trim(bytes);
        // Its id, when the cut left it whole (a scan finds the members it can).
        let id = wire::unread_answer_id(body).or_else(|| {
            let r = wire::member(body, "id")?;
            wire::member(body, "method")
                .is_none()
                .then(|| raw_id(&body[r]))?
        });
        let call = id.and_then(|id| self.answered_call(&id));
        match call.and_then(|c| self.pending.get_mut(&c)) {
            Some(p) => {
                p.cut_at = Some(n);
                let msg = format!(
                    "the server's output ended mid-line: its answer to call #{} was cut at byte \
                     {n}; the half line was not relayed",
                    p.handle.id()
                );
                self.note(&msg);
            }
            None => self.note(&format!(
                "the server's output ended mid-line ({n} bytes that are no message): not relayed"
            )),
        }
    }

    /// The server died: every call it held is answered with an error and recorded. A call
    /// the server had is indeterminate: it may have committed before the server left.
    pub(super) fn server_died(&mut self, status: Option<String>) {
        let mut calls: Vec<u64> = self.pending.keys().copied().collect();
        calls.sort_unstable();
        let message = format!(
            "the MCP server exited ({}) before answering",
            status.as_deref().unwrap_or("status unknown")
        );
        for call in calls {
            let Some(p) = self.take(call) else {
                continue;
            };
            if p.injected.is_some() && !p.forwarded {
                // An injected answer still due: give it now, it does not need the server.
                let id = p.id.clone();
                self.pending.insert(call, p);
                self.by_request.entry(id).or_default().push_back(call);
                self.answer_injected(call);
                continue;
            }
            let outcome = Err(Error::raised("ServerExited", message.clone()));
            let unknown = unseen(&p, &message);
            if p.cancelled || p.awaiting_input {
                // It was answered already (input required) or is not wanted: no second answer.
                self.abandon(p, outcome, message.clone(), unknown);
                continue;
            }
            let line = error_line_as(&p.raw_id, -32000, &message, None);
            let delivered = Delivered::Error(
                obj! {"error" => obj! {"code" => -32000, "message" => message.as_str()}},
            );
            let note = Some(message.clone());
            let committed = Committed {
                at_end: unknown.is_some(),
                unknown,
                ..Committed::default()
            };
            self.conclude(p, outcome, delivered, Some(line), committed, note);
        }
    }

    /// Ends every call still open (the session is over), recording it as cancelled.
    pub(super) fn finish_pending(&mut self, why: &str) {
        let mut calls: Vec<u64> = self.pending.keys().copied().collect();
        calls.sort_unstable();
        for call in calls {
            if let Some(p) = self.take(call) {
                let note = if p.cancelled {
                    format!("cancelled by the client; {why}")
                } else {
                    why.to_owned()
                };
                let unknown = unseen(&p, why);
                self.abandon(p, Err(cancellation()), note, unknown);
            }
        }
    }
}

/// Why nobody saw the outcome of call `p`, which ended without its answer (`ended` says how),
/// when the server had it: none for a call the server never got, or whose answer came
/// already (`input_required`).
fn unseen(p: &Pending, ended: &str) -> Option<String> {
    if !p.forwarded || p.awaiting_input {
        return None;
    }
    Some(match p.cut_at {
        Some(n) => format!(
            "the server's answer was cut at byte {n} (its output ended mid-line) and never \
             reached the client; {ended}"
        ),
        None => format!("{ended}, after the request had reached it: it may have committed or not"),
    })
}

/// Why the outcome is unknown, when `delivered` is an error the proxy's HTTP side made in the
/// server's place after the server had the request ([`wire::OUTCOME_DATA_KEY`]).
fn lost_on_the_way(delivered: &Delivered) -> Option<String> {
    let Delivered::Error(body) = delivered else {
        return None;
    };
    let e = body.as_object()?.get("error")?.as_object()?;
    let said = e.get("data")?.as_object()?.get(wire::OUTCOME_DATA_KEY)?;
    (said.as_str() == Some("unknown")).then(|| {
        let message = e.get("message").and_then(Value::as_str).unwrap_or("");
        format!("{message}; the request had reached the server: it may have committed or not")
    })
}

fn cancellation() -> Error {
    Error::Cancelled {
        type_name: "CancelledError".into(),
    }
}

/// The exact text of a line's top-level id (`fallback`, its canonical JSON, if it cannot be
/// found: a key written with escapes).
fn exact_id(line: &[u8], fallback: &Id) -> String {
    let body = trim(line);
    wire::member(body, "id")
        .and_then(|r| std::str::from_utf8(&body[r]).ok().map(str::to_owned))
        .unwrap_or_else(|| fallback.0.clone())
}
