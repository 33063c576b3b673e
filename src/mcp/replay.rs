//! Serving a recording as an MCP server, offline and strictly: `initialize`, `tools/list` and
//! `server/discover` are answered from the sidecar; each `tools/call` must be the next
//! recorded call (same tool, same arguments after redaction) and gets back exactly what the
//! client received when it was recorded — injected faults included, silence included. A call
//! that does not match gets an `isError` result naming the closest recorded call and how its
//! arguments differ; at the end, recorded calls never asked for are listed. The session
//! passes only when every call matched and every recorded call was used.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use super::session::{Delivered, McpSession, SessionError, sidecar_path};
use super::wire::{self, Message, error_line, response_line, result_line};
use crate::cassette::{Cassette, ClosestRecord, LoadError, diff_arguments};
use crate::error::ConfigError;
use crate::json::{Value, canonical};
use crate::obj;
use crate::redact::Redactor;

/// One recorded `tools/call`.
#[derive(Debug, Clone)]
struct Recorded {
    id: u64,
    tool: String,
    /// Redacted, as recorded.
    arguments: Value,
    canonical: String,
    delivered: Delivered,
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
}

/// How a replay session went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayOutcome {
    /// Calls that matched their recording.
    pub matched: usize,
    /// Calls that did not.
    pub mismatched: usize,
    /// Recorded calls never asked for (cassette call ids).
    pub unused: Vec<u64>,
}

impl ReplayOutcome {
    /// Every call matched and every recorded call was used.
    pub fn passed(&self) -> bool {
        self.mismatched == 0 && self.unused.is_empty()
    }
}

/// A recording ready to be served.
#[derive(Debug)]
pub struct Recording {
    session: McpSession,
    calls: Vec<Recorded>,
}

impl Recording {
    /// Reads a cassette and its sidecar; every recorded call must have its sidecar record.
    pub fn load(cassette: &Path) -> Result<Recording, ReplayError> {
        let c = Cassette::load(cassette).map_err(ReplayError::Cassette)?;
        let side = sidecar_path(cassette);
        let session = McpSession::load(&side).map_err(|e| ReplayError::Sidecar(side.clone(), e))?;
        let mut calls = Vec::with_capacity(c.report.calls.len());
        for call in &c.report.calls {
            let Some(record) = session.call(call.id) else {
                return Err(ReplayError::Mismatch(
                    ConfigError::new("Invalid MCP session file")
                        .at("calls")
                        .because(format!("no record of cassette call #{}", call.id)),
                ));
            };
            calls.push(Recorded {
                id: call.id,
                tool: call.tool.to_lossy(),
                canonical: canonical(&call.arguments),
                arguments: call.arguments.clone(),
                delivered: record.delivered.clone(),
            });
        }
        Ok(Recording { session, calls })
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

    /// Serves the recording on `client_in`/`client_out` until the client closes its side.
    pub fn serve(
        &self,
        client_in: impl Read,
        client_out: &mut dyn Write,
        log: &mut dyn Write,
    ) -> std::io::Result<ReplayOutcome> {
        let mut next = 0usize;
        let mut matched = 0;
        let mut mismatched = 0;
        let redactor = Redactor::default();
        let mut reader = BufReader::new(client_in);
        let mut line = Vec::new();
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let Message::Request { id, method, params } = wire::classify(text) else {
                continue; // notifications (initialized, cancelled) and anything else: no answer
            };
            let out = match method.as_str() {
                "initialize" | "tools/list" | "server/discover" => {
                    match self.exchange(&method, &params) {
                        Some(body) => response_line(&id, body),
                        None => error_line(
                            &id,
                            -32601,
                            &format!("the recording holds no answer to {method}"),
                            None,
                        ),
                    }
                }
                "ping" => result_line(&id, obj! {}),
                "tools/call" => {
                    let o = params.as_object();
                    let tool = o
                        .and_then(|o| o.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let args = o
                        .and_then(|o| o.get("arguments"))
                        .cloned()
                        .unwrap_or_else(|| obj! {});
                    let given = redactor.scrub(&args).unwrap_or(Value::Null);
                    match self.calls.get(next) {
                        Some(r) if r.tool == tool && r.canonical == canonical(&given) => {
                            next += 1;
                            matched += 1;
                            match &r.delivered {
                                Delivered::Result(b) | Delivered::Error(b) => response_line(&id, b),
                                Delivered::Nothing => continue, // it got no answer then either
                                Delivered::Unrecorded => result_line(
                                    &id,
                                    wire::text_result(
                                        "the recorded answer was too large to keep in the recording",
                                        true,
                                    ),
                                ),
                            }
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
            client_out.write_all(&out)?;
            client_out.flush()?;
        }
        let unused: Vec<u64> = self.calls[next..].iter().map(|r| r.id).collect();
        if !unused.is_empty() {
            let list: Vec<String> = self.calls[next..]
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
        Ok(ReplayOutcome {
            matched,
            mismatched,
            unused,
        })
    }

    /// Why a call did not match: the expected record, and the closest pending one with its
    /// argument differences (the `replay` command's explainer).
    fn explain(&self, tool: &str, given: &Value, next: usize, past_end: bool) -> String {
        if past_end {
            return format!(
                "Replay mismatch: {} called {}, but all {} recorded calls were already used",
                crate::printable::quoted(tool),
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
