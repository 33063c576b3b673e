//! Serving a recording as an MCP server, offline and strictly: `initialize`, `tools/list` and
//! `server/discover` are answered from the sidecar; each `tools/call` must be the next
//! recorded call (same tool, same arguments after redaction) and gets back exactly what the
//! client received when it was recorded — injected faults included, silence included. A call
//! whose arguments were too large to record (kept summarised), or whose request is too long
//! to read whole, is matched by its tool and place. A call
//! that does not match gets an `isError` result naming the closest recorded call and how its
//! arguments differ; at the end, recorded calls never asked for are listed. The session
//! passes only when every call matched and every recorded call was used.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use super::http::listen::control;
use super::journal;
use super::session::{Delivered, McpSession, SessionError, journal_path, sidecar_path};
use super::summary;
use super::wire::{self, Message, error_line, response_line, result_line};
use crate::cassette::{Cassette, ClosestRecord, LoadError, diff_arguments};
use crate::error::ConfigError;
use crate::json::{Value, canonical};
use crate::obj;
use crate::redact::Redactor;
use crate::report::Status;

/// `raw` (a recorded answer line) answering `id` instead of the id it was recorded with.
fn with_id(raw: &[u8], id: &wire::Id) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + 1);
    match wire::member(raw, "id") {
        Some(r) => {
            out.extend_from_slice(&raw[..r.start]);
            out.extend_from_slice(id.0.as_bytes());
            out.extend_from_slice(&raw[r.end..]);
        }
        None => out.extend_from_slice(raw),
    }
    out.push(b'\n');
    out
}

/// The `kind` of the verdict `--replay-report` writes.
pub const REPORT_KIND: &str = "toolstorm-mcp-replay";

/// One recorded `tools/call`.
#[derive(Debug, Clone)]
struct Recorded {
    id: u64,
    tool: String,
    /// Redacted, as recorded.
    arguments: Value,
    canonical: String,
    delivered: Delivered,
    /// Still in flight when the recording stopped (no answer on record): served silently, and
    /// not missed when never asked for.
    in_flight: bool,
    /// Cancelled by its client: whatever it got came after it had cancelled the call, so the
    /// replay gives it only once the replayed client cancels too.
    cancelled: bool,
}

impl Recorded {
    /// Its arguments were summarised when it was recorded (too large to record, or the request
    /// too long to read whole): replay checks what the summary kept ([`summary::matches`]).
    fn summarised(&self) -> bool {
        summary::is_summarised(&self.arguments)
    }
}

/// Why a recording cannot be served.
#[derive(Debug)]
pub enum ReplayError {
    /// The cassette cannot be read.
    Cassette(LoadError),
    /// The sidecar cannot be read.
    Sidecar(std::path::PathBuf, SessionError),
    /// The two do not belong together.
    Mismatch(ConfigError),
    /// The journal of an unfinished session cannot be read.
    Journal(std::path::PathBuf, journal::JournalError),
}

/// How a replay session went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayOutcome {
    /// Calls that matched their recording.
    pub matched: usize,
    /// Calls that did not.
    pub mismatched: usize,
    /// Recorded calls never asked for (cassette call ids).
    pub unused: Vec<u64>,
    /// Calls asked for whose recorded answer could not be given back (too large to keep).
    pub unreproduced: Vec<u64>,
}

impl ReplayOutcome {
    /// The verdict as `--replay-report` writes it: `done` is false while the session runs
    /// (and stays false when the replay was killed before the client left). `reproduced`
    /// judges what was asked so far, as the exit status does: a replay killed after every
    /// recorded call was matched has reproduced the recording. `recording_failed` names the
    /// checks the recording itself fails (what `check` says of it): `passed` is true only
    /// when the replay reproduced a recording that passes, so a gate reading `passed` never
    /// passes the replay of an incident.
    pub fn to_value(
        &self,
        recording: &Path,
        recorded: usize,
        done: bool,
        recording_failed: &[String],
    ) -> Value {
        let ids = |v: &[u64]| Value::Array(v.iter().map(|i| Value::from(*i)).collect());
        let failed = Value::Array(
            recording_failed
                .iter()
                .map(|n| Value::from(n.as_str()))
                .collect(),
        );
        obj! {
            "kind" => REPORT_KIND,
            "schema_version" => 1,
            "recording" => recording.display().to_string(),
            "recorded_calls" => recorded,
            "matched" => self.matched,
            "mismatched" => self.mismatched,
            "unused" => ids(&self.unused),
            "unreproduced" => ids(&self.unreproduced),
            "finished" => done,
            "reproduced" => self.passed(),
            "recording_failed" => failed,
            "passed" => self.passed() && recording_failed.is_empty(),
        }
    }

    /// Every call matched and every recorded call was used.
    pub fn passed(&self) -> bool {
        self.mismatched == 0 && self.unused.is_empty() && self.unreproduced.is_empty()
    }
}

/// A recording ready to be served.
#[derive(Debug)]
pub struct Recording {
    session: McpSession,
    calls: Vec<Recorded>,
    /// Served to HTTP clients (a listener's router reads what `serve` writes): an HTTP
    /// status and a cut stream are given back as they were, with the router's control lines.
    http: bool,
}

impl Recording {
    /// The verdict before the client asks anything: every recorded call unused.
    pub fn outcome_before_any_call(&self) -> ReplayOutcome {
        ReplayOutcome {
            unused: self
                .calls
                .iter()
                .filter(|r| !r.in_flight)
                .map(|r| r.id)
                .collect(),
            ..ReplayOutcome::default()
        }
    }

    /// Reads a recording — through its journal when the proxy did not finish — and checks
    /// that cassette and sidecar belong together; every finished call must have its record.
    /// The second value is the one-line note of a recovery from the journal.
    pub fn load(cassette: &Path) -> Result<(Recording, Option<String>), ReplayError> {
        let (c, session, note) = match journal::recover(cassette) {
            Ok(Some(r)) => (r.cassette, r.session, r.note),
            Ok(None) => {
                let c = Cassette::load(cassette).map_err(ReplayError::Cassette)?;
                let side = sidecar_path(cassette);
                let session =
                    McpSession::load(&side).map_err(|e| ReplayError::Sidecar(side.clone(), e))?;
                session
                    .check_bound(&c)
                    .map_err(|e| ReplayError::Sidecar(side, SessionError::Invalid(e)))?;
                (c, session, None)
            }
            Err(e) => return Err(ReplayError::Journal(journal_path(cassette), e)),
        };
        let mut calls = Vec::with_capacity(c.report.calls.len());
        for call in &c.report.calls {
            let in_flight = call.status == Status::Running;
            let delivered = match session.call(call.id) {
                Some(record) => record.delivered.clone(),
                None if in_flight => Delivered::Nothing,
                None => {
                    return Err(ReplayError::Mismatch(
                        ConfigError::new("Invalid MCP session file")
                            .at("calls")
                            .because(format!("no record of cassette call #{}", call.id)),
                    ));
                }
            };
            calls.push(Recorded {
                id: call.id,
                tool: call.tool.to_lossy(),
                canonical: canonical(&call.arguments),
                arguments: call.arguments.clone(),
                delivered,
                in_flight,
                cancelled: call.status == Status::Cancelled,
            });
        }
        Ok((
            Recording {
                session,
                calls,
                http: false,
            },
            note,
        ))
    }

    /// Serves HTTP clients from now on (`serve` writes to a listener's router): a recorded
    /// HTTP status is sent again as that status, a cut stream is cut again.
    pub fn over_http(&mut self) {
        self.http = true;
    }

    /// The number of recorded calls.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The recorded answer to `method` with `params`, if the session saw one.
    fn exchange(&self, method: &str, params: &Value) -> Option<&Value> {
        let cursor = |p: &Value| p.as_object().and_then(|o| o.get("cursor")).cloned();
        let same = self
            .session
            .exchanges
            .iter()
            .find(|x| x.method == method && cursor(&x.params) == cursor(params));
        same.or_else(|| self.session.exchanges.iter().find(|x| x.method == method))
            .map(|x| &x.response)
    }

    /// What the client of recorded call `r` received, answering `id`: `None` when it got no
    /// answer. An answer too large to have been kept is an error, and `r` is listed in
    /// `unreproduced`.
    fn answer(&self, r: &Recorded, id: &wire::Id, unreproduced: &mut Vec<u64>) -> Option<Vec<u8>> {
        Some(match &r.delivered {
            Delivered::Result(b) => response_line(id, b),
            Delivered::Error(b) => self.with_status(b, response_line(id, b), id),
            Delivered::Nothing => return None,
            // On stdio the recording proxy gave these as a JSON-RPC error and as silence.
            Delivered::HttpStatus(h) if self.http => {
                let body = response_line(id, &h.body);
                let body = body.strip_suffix(b"\n").unwrap_or(&body);
                control::status(&id.0, h.status, h.retry_after, body)
            }
            Delivered::HttpStatus(h) => response_line(id, &h.body),
            Delivered::Cut if self.http => control::cut(&id.0),
            Delivered::Cut => return None,
            Delivered::Unrecorded => result_line(
                id,
                wire::text_result(
                    "the recorded answer was too large to keep in the recording",
                    true,
                ),
            ),
            Delivered::Unreadable(u) => match &u.raw {
                // The bytes the client got then, answering this request's id.
                Some(raw) => with_id(raw.as_bytes(), id),
                None => {
                    unreproduced.push(r.id);
                    error_line(
                        id,
                        -32603,
                        &format!(
                            "the recorded answer ({} bytes, sha256 {}) was too large to keep: replay cannot give it back",
                            u.bytes, u.sha256
                        ),
                        None,
                    )
                }
            },
        })
    }

    /// What goes out now for recorded call `r` asked as `id`: its answer, or nothing when it
    /// got none (an empty line), or when it was cancelled (then its answer is held in `held`
    /// until the client cancels it).
    fn answer_or_hold(
        &self,
        r: &Recorded,
        id: &wire::Id,
        unreproduced: &mut Vec<u64>,
        held: &mut Vec<(wire::Id, Vec<u8>)>,
    ) -> Vec<u8> {
        match self.answer(r, id, unreproduced) {
            Some(out) if r.cancelled => {
                held.push((id.clone(), out));
                Vec::new()
            }
            Some(out) => out,
            None => Vec::new(),
        }
    }

    /// Over HTTP, a recorded error that an HTTP server answered with an error status (the
    /// proxy keeps it in `error.data.http_status`, and the listener gave the client that
    /// status with it) goes out with that status again; else `line` as it is.
    fn with_status(&self, body: &Value, line: Vec<u8>, id: &wire::Id) -> Vec<u8> {
        let status = body
            .as_object()
            .and_then(|o| o.get("error"))
            .and_then(Value::as_object)
            .and_then(|e| e.get("data"))
            .and_then(Value::as_object)
            .and_then(|d| d.get("http_status"))
            .and_then(Value::as_i64)
            .and_then(|s| u16::try_from(s).ok())
            .filter(|s| (400..600).contains(s));
        match status {
            Some(status) if self.http => {
                let body = line.strip_suffix(b"\n").unwrap_or(&line);
                control::status(&id.0, status, None, body)
            }
            _ => line,
        }
    }

    /// Serves the recording on `client_in`/`client_out` until the client closes its side.
    pub fn serve(
        &self,
        client_in: impl Read,
        client_out: &mut dyn Write,
        log: &mut dyn Write,
        progress: &mut dyn FnMut(&ReplayOutcome),
    ) -> std::io::Result<ReplayOutcome> {
        let mut next = 0usize;
        let mut matched = 0;
        let mut mismatched = 0;
        let mut unreproduced = Vec::new();
        let redactor = Redactor::builtin();
        // The answers of cancelled calls, by request id, until the client cancels them.
        let mut held: Vec<(wire::Id, Vec<u8>)> = Vec::new();
        let mut reader = BufReader::new(client_in);
        let mut line = Vec::new();
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            // A request too long to read whole is known by its id and method (a call by its
            // tool too: its arguments were summarised when it was recorded).
            let (message, unread) = match wire::classify(text) {
                Message::Other(why) => (wire::unread_message(text), Some(why)),
                Message::Invalid(why) => {
                    // Refused as the recording proxy refused it: at once, never matched.
                    let mut out = wire::error_line_as(
                        "null",
                        -32600,
                        &format!("Invalid Request: {why}"),
                        None,
                    );
                    if !out.ends_with(b"\n") {
                        out.push(b'\n');
                    }
                    client_out.write_all(&out)?;
                    client_out.flush()?;
                    continue;
                }
                m => (Some(m), None),
            };
            let (id, method, params) = match message {
                Some(Message::Request { id, method, params }) => (id, method, params),
                Some(Message::Notification { method, params })
                    if method == "notifications/cancelled" =>
                {
                    // A held answer goes out once its call is cancelled, as it did then.
                    let request = params.as_object().and_then(|o| o.get("requestId"));
                    if let Some(at) = request
                        .map(wire::Id::of)
                        .and_then(|r| held.iter().position(|(id, _)| *id == r))
                    {
                        let (_, out) = held.remove(at);
                        client_out.write_all(&out)?;
                        client_out.flush()?;
                    }
                    continue;
                }
                _ => continue, // other notifications and anything else: no answer
            };
            let out = match method.as_str() {
                "initialize" | "tools/list" | "server/discover" => {
                    match self.exchange(&method, &params) {
                        Some(body) => self.with_status(body, response_line(&id, body), &id),
                        None => error_line(
                            &id,
                            -32601,
                            &format!("the recording holds no answer to {method}"),
                            None,
                        ),
                    }
                }
                "ping" => result_line(&id, obj! {}),
                "tools/call" if unread.is_some() => {
                    let (tool, arguments) = wire::call_parts(text).unwrap_or_default();
                    let tool = super::session::recorded_tool(&tool).0;
                    match self.calls.get(next) {
                        Some(r)
                            if r.tool == tool
                                && r.summarised()
                                && summary::matches(&r.arguments, arguments, redactor) =>
                        {
                            next += 1;
                            matched += 1;
                            self.answer_or_hold(r, &id, &mut unreproduced, &mut held)
                        }
                        other => {
                            mismatched += 1;
                            let text = match other {
                                Some(r) if r.tool == tool => format!(
                                    "a call to {tool} too long to read whole: its arguments are \
                                     not those of call #{} (compared by what the record kept of \
                                     them: small members as they are, large ones by size and \
                                     digest)",
                                    r.id
                                ),
                                Some(r) => format!(
                                    "a call to {tool} too long to read whole; the recording \
                                     expects call #{} to {} here",
                                    r.id, r.tool
                                ),
                                None => format!(
                                    "a call to {tool} too long to read whole; the recording \
                                     expects no more calls"
                                ),
                            };
                            let _ = writeln!(
                                log,
                                "toolstorm-tui mcp --replay: {}",
                                crate::printable::line(&text)
                            );
                            result_line(&id, wire::text_result(&text, true))
                        }
                    }
                }
                _ if unread.is_some() => error_line(
                    &id,
                    -32600,
                    &format!(
                        "the replay cannot read this request ({})",
                        unread.as_deref().unwrap_or_default()
                    ),
                    None,
                ),
                "tools/call" => {
                    let o = params.as_object();
                    let tool = o
                        .and_then(|o| o.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let tool = super::session::recorded_tool(tool).0;
                    let args = o
                        .and_then(|o| o.get("arguments"))
                        .cloned()
                        .unwrap_or_else(|| obj! {});
                    let given = redactor.scrub(&args).unwrap_or(Value::Null);
                    match self.calls.get(next) {
                        Some(r)
                            if r.tool == tool
                                && if r.summarised() {
                                    let text = canonical(&args);
                                    summary::matches(&r.arguments, text.as_bytes(), redactor)
                                } else {
                                    r.canonical == canonical(&given)
                                } =>
                        {
                            next += 1;
                            matched += 1;
                            self.answer_or_hold(r, &id, &mut unreproduced, &mut held)
                        }
                        other => {
                            mismatched += 1;
                            let text = self.explain(&tool, &given, next, other.is_none());
                            let _ = writeln!(
                                log,
                                "toolstorm-tui mcp --replay: {}",
                                crate::printable::line(&text.replace('\n', " | "))
                            );
                            result_line(&id, wire::text_result(&text, true))
                        }
                    }
                }
                _ => error_line(
                    &id,
                    -32601,
                    &format!("Method not found: the recording holds no answer to {method}"),
                    None,
                ),
            };
            // Nothing for a call that got no answer then, or got it only once cancelled.
            if !out.is_empty() {
                client_out.write_all(&out)?;
                client_out.flush()?;
            }
            if method == "tools/call" {
                // What is not asked for yet counts as unused: a client that kills the replay
                // after its last call leaves the verdict the exit status would have given.
                let unused = self.calls[next.min(self.calls.len())..]
                    .iter()
                    .filter(|r| !r.in_flight)
                    .map(|r| r.id)
                    .collect();
                progress(&ReplayOutcome {
                    matched,
                    mismatched,
                    unused,
                    unreproduced: unreproduced.clone(),
                });
            }
        }
        let left: Vec<&Recorded> = self.calls[next..].iter().filter(|r| !r.in_flight).collect();
        let unused: Vec<u64> = left.iter().map(|r| r.id).collect();
        if !unused.is_empty() {
            let list: Vec<String> = left
                .iter()
                .map(|r| format!("#{} {}", r.id, crate::printable::quoted(&r.tool)))
                .collect();
            let _ = writeln!(
                log,
                "toolstorm-tui mcp --replay: {} recorded call(s) never asked for: {}",
                unused.len(),
                list.join(", ")
            );
        }
        if !unreproduced.is_empty() {
            let _ = writeln!(
                log,
                "toolstorm-tui mcp --replay: {} answer(s) could not be given back (too large to keep when recorded): call(s) {}",
                unreproduced.len(),
                unreproduced
                    .iter()
                    .map(|i| format!("#{i}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        Ok(ReplayOutcome {
            matched,
            mismatched,
            unused,
            unreproduced,
        })
    }

    /// Why a call did not match: the expected record, and the closest pending one with its
    /// argument differences (the `replay` command's explainer).
    fn explain(&self, tool: &str, given: &Value, next: usize, past_end: bool) -> String {
        if past_end {
            return format!(
                "Replay mismatch: the client called {}, but all {} recorded calls were already used",
                crate::printable::quoted(tool),
                self.calls.len()
            );
        }
        let expected = &self.calls[next];
        let closest = self.calls[next..]
            .iter()
            .map(|r| ClosestRecord {
                position: r.id as usize,
                tool: r.tool.clone(),
                same_tool: r.tool == tool,
                diffs: diff_arguments(&r.arguments, given),
            })
            .min_by_key(|c| (!c.same_tool, c.diffs.len(), c.position));
        let mut lines = vec![format!(
            "Replay mismatch: the next recorded call is #{} {}, this was {}",
            expected.id,
            crate::printable::quoted(&expected.tool),
            crate::printable::quoted(tool)
        )];
        if let Some(c) = closest {
            lines.extend(c.explain_lines());
        }
        lines.join("\n")
    }
}
