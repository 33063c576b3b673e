//! The session facts a ToolStorm cassette (schema v1) has no room for, kept in a sidecar next
//! to it (`incident.json` → `incident.mcp.json`): the protocol version, client and server
//! info, the handshake and `tools/list` exchanges, and per recorded call what the client
//! actually received (a result, a JSON-RPC error, or nothing), the evidence each of its effects
//! rests on, and whether it was an idempotent replay. Versioned and validated as strictly as a
//! cassette: unknown fields, wrong types and calls out of order are errors naming the JSON
//! path. Responses are stored redacted, as the cassette's payloads are.

use std::path::{Path, PathBuf};

use super::evidence::Evidence;
use super::scenario::{Annotations, McpCheck};
use crate::error::ConfigError;
use crate::json::{MAX_DOCUMENT_BYTES, Object, Value, compact, parse};
use crate::obj;
use crate::redact::Redactor;
use crate::rule::require_keys;

/// The sidecar format version.
mod repeats;

pub use repeats::UnknownRepeat;

pub const SCHEMA_VERSION: i64 = 1;
/// The `kind` every sidecar names.
pub const KIND: &str = "toolstorm-mcp-session";
/// Depth of a stored response body's root inside the sidecar (`calls[i].response.result`).
const BODY_DEPTH: usize = 4;

/// What the client received for one call.
#[derive(Clone, Debug, PartialEq)]
pub enum Delivered {
    /// A result (`{"result": ...}`), as relayed or as the proxy made it.
    Result(Value),
    /// A JSON-RPC error (`{"error": ...}`).
    Error(Value),
    /// Nothing at all (an injected `no_answer`, or the client cancelled first).
    Nothing,
    /// Something the sidecar could not keep (over 128 KB or too deeply nested); replay cannot
    /// give it back.
    Unrecorded,
    /// An answer the proxy could not read as a message (over 8 MB, nested too deeply, a batch,
    /// not UTF-8): relayed untouched, known by its size and digest, and kept whole when it is
    /// small enough, so replay can give it back exactly.
    Unreadable(Unreadable),
    /// An HTTP status in place of a JSON-RPC answer (the `http_status` delivery, as a gateway
    /// answers): replay sends the same status and body.
    HttpStatus(HttpStatus),
    /// An event stream that ended without the answer (the `stream_cut` delivery: the client
    /// saw its stream begin and close): replay cuts its stream at the same point.
    Cut,
}

/// The HTTP status a client got in place of its answer, and what came with it.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpStatus {
    /// The status (429, 502, 503, 504).
    pub status: u16,
    /// The `Retry-After` header's seconds, when one was sent.
    pub retry_after: Option<u64>,
    /// The body (`{"error": ...}`), sent as a JSON-RPC error under `application/json`.
    pub body: Value,
}

impl HttpStatus {
    /// The sidecar's `response` object of an `http_status` record.
    fn to_value(&self) -> Value {
        obj! {
            "status" => i64::from(self.status),
            "retry_after" => self.retry_after.map(|s| s as i64),
            "body" => self.body.clone(),
        }
    }

    fn from_value(v: &Value, at: &str) -> Result<HttpStatus, ConfigError> {
        let o = require_keys(v, &["status", "retry_after", "body"], &[])
            .map_err(|e| bad(at, &e.detail.unwrap_or_default()))?;
        let status = o
            .get("status")
            .and_then(Value::as_i64)
            .and_then(|n| u16::try_from(n).ok())
            .filter(|n| (400..600).contains(n))
            .ok_or_else(|| bad(&format!("{at}.status"), "expected an HTTP error status"))?;
        let retry_after =
            match o.get("retry_after") {
                Some(Value::Null) | None => None,
                Some(r) => Some(r.as_i64().and_then(|n| u64::try_from(n).ok()).ok_or_else(
                    || bad(&format!("{at}.retry_after"), "expected null or seconds"),
                )?),
            };
        let body = body_of(
            o.get("body").unwrap_or(&Value::Null),
            "error",
            &format!("{at}.body"),
        )?;
        Ok(HttpStatus {
            status,
            retry_after,
            body,
        })
    }
}

impl Delivered {
    /// What the client received, line by line, as a person reads it: each content block's
    /// text (what the model sees), the structured content, a JSON-RPC error's code, message
    /// and data. Nothing for no answer.
    pub fn received(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        match self {
            Delivered::Result(body) => out = result_parts(body),
            Delivered::Error(body) | Delivered::HttpStatus(HttpStatus { body, .. }) => {
                if let Delivered::HttpStatus(h) = self {
                    out.push(("http_status".into(), h.status.to_string()));
                    if let Some(s) = h.retry_after {
                        out.push(("retry_after".into(), s.to_string()));
                    }
                }
                let e = body
                    .as_object()
                    .and_then(|o| o.get("error"))
                    .and_then(Value::as_object);
                for k in ["code", "message", "data"] {
                    if let Some(v) = e.and_then(|e| e.get(k)) {
                        let text = v
                            .as_str()
                            .map_or_else(|| crate::json::one_line(v), str::to_owned);
                        out.push((k.to_owned(), text));
                    }
                }
            }
            Delivered::Unreadable(u) => {
                if let Some(raw) = &u.raw {
                    out.push(("bytes".into(), raw.clone()));
                }
            }
            Delivered::Nothing | Delivered::Unrecorded | Delivered::Cut => {}
        }
        out
    }
}

/// What is known of an answer that could not be read.
#[derive(Clone, Debug, PartialEq)]
pub struct Unreadable {
    /// Its length in bytes (without the line ending).
    pub bytes: u64,
    /// SHA-256 of those bytes, in hex.
    pub sha256: String,
    /// Why it could not be read.
    pub reason: String,
    /// The line itself, when it is UTF-8 and at most [`MAX_RAW`] bytes, with the value of
    /// every secret key and every literal secret redacted ([`crate::redact::Redactor::redact_raw`]).
    pub raw: Option<String>,
}

/// The longest unreadable answer kept whole.
pub const MAX_RAW: usize = 256 * 1024;

impl Delivered {
    /// The result of a `Result` answer (`{"result": ...}`), which may be the call's output.
    pub fn result(&self) -> Option<&Value> {
        match self {
            Delivered::Result(Value::Object(o)) if o.len() == 1 => o.get("result"),
            _ => None,
        }
    }

    /// The name files use.
    pub fn kind(&self) -> &'static str {
        match self {
            Delivered::Result(_) => "result",
            Delivered::Error(_) => "error",
            Delivered::Nothing => "nothing",
            Delivered::Unrecorded => "unrecorded",
            Delivered::Unreadable(_) => "unreadable",
            Delivered::HttpStatus(_) => "http_status",
            Delivered::Cut => "stream_cut",
        }
    }

    /// What the client saw, for people: `result`, `result (isError)`, `JSON-RPC error -32003:
    /// ...`, `nothing`.
    pub fn describe(&self) -> String {
        match self {
            Delivered::Result(body) => {
                let is_error = body
                    .as_object()
                    .and_then(|o| o.get("result"))
                    .and_then(Value::as_object)
                    .and_then(|o| o.get("isError"))
                    .and_then(Value::as_bool);
                if is_error == Some(true) {
                    "a result with isError: true (the model sees the error)".into()
                } else {
                    "the result".into()
                }
            }
            Delivered::Error(body) => {
                let o = body
                    .as_object()
                    .and_then(|o| o.get("error"))
                    .and_then(Value::as_object);
                let code = o.and_then(|o| o.get("code")).map(crate::json::one_line);
                let msg = o.and_then(|o| o.get("message")).and_then(Value::as_str);
                format!(
                    "a JSON-RPC error {}: {}",
                    code.unwrap_or_default(),
                    crate::printable::quoted(msg.unwrap_or(""))
                )
            }
            Delivered::Nothing => "nothing (no answer)".into(),
            Delivered::Cut => "an event stream that ended without the answer".into(),
            Delivered::HttpStatus(h) => format!(
                "HTTP {}{} in place of the answer",
                h.status,
                h.retry_after
                    .map(|s| format!(" (Retry-After: {s})"))
                    .unwrap_or_default()
            ),
            Delivered::Unrecorded => "an answer too large to record".into(),
            Delivered::Unreadable(u) => format!(
                "an answer the proxy could not read ({} bytes, {}; sha256 {}), relayed untouched{}",
                u.bytes,
                u.reason,
                u.sha256.get(..12).unwrap_or(&u.sha256),
                if u.raw.is_some() {
                    ""
                } else {
                    "; too large to keep"
                }
            ),
        }
    }
}

/// The parts of a `{"result": ...}` answer as (kind, text): each content block's text (or the
/// block as JSON), the structured content, or the bare result when it is not an object.
fn result_parts(body: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let result = body.as_object().and_then(|o| o.get("result"));
    let r = result.and_then(Value::as_object);
    for block in r
        .and_then(|r| r.get("content"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let b = block.as_object();
        let kind = b
            .and_then(|b| b.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("block");
        match b.and_then(|b| b.get("text")).and_then(Value::as_str) {
            Some(text) => out.push((kind.to_owned(), text.to_owned())),
            None => out.push((kind.to_owned(), crate::json::one_line(block))),
        }
    }
    if let Some(sc) = r.and_then(|r| r.get("structuredContent")) {
        out.push(("structured".into(), crate::json::one_line(sc)));
    }
    if r.is_none()
        && let Some(v) = result
    {
        out.push(("result".into(), crate::json::one_line(v)));
    }
    out
}

/// One recorded call's session facts.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    /// The cassette call id (1-based).
    pub call: u64,
    /// The client's JSON-RPC request id.
    pub request_id: Value,
    /// What the client received.
    pub delivered: Delivered,
    /// The evidence of each effect this call committed, in the cassette's effect order.
    pub effects: Vec<Evidence>,
    /// The call whose commit this one only replayed (same commit id), if any.
    pub replay_of: Option<u64>,
    /// What else happened (cancelled by the client, the server exited, ...).
    pub note: Option<String>,
    /// Commits only the server's annotations suggest (name, key): not effects, but a repeat
    /// of one is a possible duplicate.
    pub possible: Vec<(String, String)>,
    /// The server's answer a lost acknowledgement dropped (`{"result": ...}`, redacted): what
    /// committed, and the commit id a later retry may get back.
    pub dropped: Option<Value>,
    /// The headers of the HTTP request that carried the call, by name, as the recording keeps
    /// them (credentials' values never, the rest redacted like arguments); empty on stdio.
    pub request_headers: Vec<(String, String)>,
    /// Set when nobody saw the call's outcome: the request reached the server, and its answer
    /// never reached the client whole (its stream was cut, the server exited mid-call or
    /// mid-line). The server may have committed or not: the call is indeterminate.
    pub unknown: Option<Unknown>,
}

/// Why a call's outcome is unknown, and what it would have committed had it run to its end.
#[derive(Clone, Debug, PartialEq)]
pub struct Unknown {
    /// What happened, e.g. `the server's answer was cut at byte 40`.
    pub why: String,
    /// The effects (name, key, redacted) the call commits when it runs, as its arguments
    /// give them (the scenario's `effects` entry, or the annotations): a later call that
    /// commits one of them again may be a second commit.
    pub effects: Vec<(String, String)>,
    /// Whether the call was still with the server when the session ended (whatever ended it:
    /// a signal, the client leaving, the server exiting): `Session finished` fails on it.
    pub at_end: bool,
}

impl Unknown {
    /// The sidecar's `outcome_unknown` object (`at_session_end` only when true).
    fn to_value(&self) -> Value {
        let mut v = obj! {"why" => self.why.as_str(), "effects" => pairs_value(&self.effects)};
        if let (true, Value::Object(o)) = (self.at_end, &mut v) {
            o.push("at_session_end", true);
        }
        v
    }

    fn from_value(v: &Value, at: &str) -> Result<Unknown, ConfigError> {
        let o = require_keys(v, &["why", "effects"], &["at_session_end"])
            .map_err(|e| bad(at, &e.detail.unwrap_or_default()))?;
        let why = o
            .get("why")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(&format!("{at}.why"), "expected a string"))?
            .to_owned();
        let effects = pairs_of(o.get("effects"), &format!("{at}.effects"))?;
        let at_end = match o.get("at_session_end") {
            None => false,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| bad(&format!("{at}.at_session_end"), "expected true or false"))?,
        };
        Ok(Unknown {
            why,
            effects,
            at_end,
        })
    }
}

/// `[{"name": ..., "key": ...}]`.
fn pairs_value(pairs: &[(String, String)]) -> Value {
    Value::Array(
        pairs
            .iter()
            .map(|(n, k)| obj! {"name" => n.as_str(), "key" => k.as_str()})
            .collect(),
    )
}

/// Reads [`pairs_value`] back (absent: none).
fn pairs_of(v: Option<&Value>, at: &str) -> Result<Vec<(String, String)>, ConfigError> {
    match v.unwrap_or(&Value::Null) {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let field = |k: &str| p.as_object().and_then(|o| o.get(k)).and_then(Value::as_str);
                match (field("name"), field("key")) {
                    (Some(n), Some(k)) => Ok((n.to_owned(), k.to_owned())),
                    _ => Err(bad(
                        &format!("{at}[{i}]"),
                        "expected {\"name\": ..., \"key\": ...}",
                    )),
                }
            })
            .collect(),
        _ => Err(bad(at, "expected a list")),
    }
}

/// A request and its answer outside `tools/call` (`initialize`, `tools/list`,
/// `server/discover`), kept so replay can answer them.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    /// The method.
    pub method: String,
    /// The request's params (redacted).
    pub params: Value,
    /// The answer (`{"result": ...}` or `{"error": ...}`, redacted).
    pub response: Value,
}

/// A session's facts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpSession {
    /// The protocol version the two sides agreed on.
    pub protocol_version: Option<String>,
    /// The client's `clientInfo`.
    pub client_info: Value,
    /// The server's `serverInfo`.
    pub server_info: Value,
    /// The server command the proxy started.
    pub server_command: Vec<String>,
    /// The scenario file, when faults were injected.
    pub scenario: Option<String>,
    /// Every rule's probability as the session ran them, when the scenario (or the proxy's
    /// `--probability`) set one for all: the run's plan, with its seed. Absent otherwise, and
    /// in sidecars written before it was kept.
    pub probability: Option<f64>,
    /// The call budget of the session (what `check` judges the recording against).
    pub max_calls: i64,
    /// The scenario's own checks.
    pub checks: Vec<McpCheck>,
    /// Handshake and listing exchanges, in order.
    pub exchanges: Vec<Exchange>,
    /// Per recorded call, in call order.
    pub calls: Vec<CallRecord>,
    /// The proxy session that wrote this sidecar (files of one recording share it; absent in
    /// sidecars written before sessions were named).
    pub session_id: Option<String>,
    /// The digest of the cassette this sidecar was written with: a sidecar next to another
    /// cassette is refused.
    pub cassette_digest: Option<String>,
    /// Whether the session ended (the proxy finished its work); `false` for a recording taken
    /// while calls were still in flight or after the proxy was killed. Absent in older
    /// sidecars.
    pub finished: Option<bool>,
    /// The recording stopped taking calls before the session ended (it is full, or its
    /// journal could not be written): from then on the proxy answered every `tools/call`
    /// with an error instead of letting it reach the server unrecorded.
    pub recording_stopped: Option<Stopped>,
    /// The client closed the session (its end of the stream, or it stopped reading): after
    /// that no call can be asked. With `finished` false, the proxy was stopped while the
    /// server exited. Absent in sidecars written before this was kept.
    pub client_closed: Option<bool>,
    /// How the two sides were reached, when either was over HTTP (absent for stdio on both
    /// sides, and in sidecars written before HTTP).
    pub transport: Option<Box<Transport>>,
    /// The agent that made this recording, when the proxy was told (`mcp --agent-cmd`): how
    /// the explorer starts it again.
    pub agent: Option<Box<AgentCommand>>,
    /// Requests of the client's the proxy answered itself as invalid (-32600) instead of
    /// relaying, each as why (the first [`REFUSED_KEPT`]). Absent when there were none.
    pub refused_requests: Vec<String>,
    /// What the scenario said a repeat resting on annotations alone means (absent: the
    /// default, [`Annotations::Declared`]; older sidecars are judged by it too).
    pub annotations: Annotations,
}

/// Invalid requests a sidecar keeps the reasons of, at most.
pub const REFUSED_KEPT: usize = 64;

/// How to start the agent of a recording again ([`McpSession::agent`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentCommand {
    /// A shell command line, its secrets redacted; `{mcp_config}`, `{seed}`, `{record}`,
    /// `{run_dir}`, `{mcp_url}` are the run's.
    pub command: String,
    /// The folder it runs in (the proxy's when it recorded).
    pub cwd: String,
    /// The command that resets the agent's world before it runs (`mcp --before`, `sh -c` in
    /// the same folder, its secrets redacted): run again before every re-run, as a campaign
    /// runs its `--before`. Absent when none was given (and in older sidecars).
    pub before: Option<String>,
}

/// How the proxy reached its client and its server ([`McpSession::transport`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Transport {
    /// The client's side: `stdio` or `streamable-http`.
    pub client: String,
    /// The server's side: `stdio` or `streamable-http`.
    pub server: String,
    /// The server's URL, its credentials redacted.
    pub url: Option<String>,
    /// Where the proxy listened for its clients.
    pub listen: Option<String>,
    /// The headers the client's requests carried, by name: credentials' values never, the
    /// rest redacted like arguments. (Sidecars written before `added_headers` have the
    /// proxy's `--header`s here too.)
    pub request_headers: Vec<(String, String)>,
    /// The headers the proxy added to each request it sent the server (`--header`), by name:
    /// every value `[REDACTED]` unless the name is a harmless one
    /// ([`crate::mcp::http::headers::recorded_added`]). Absent in older sidecars.
    pub added_headers: Vec<(String, String)>,
}

/// Request headers as the sidecar keeps them: an object of names and (redacted) values.
fn headers_value(headers: &[(String, String)]) -> Value {
    let mut h = Object::new();
    for (n, v) in headers {
        h.push(n.as_str(), v.as_str());
    }
    Value::Object(h)
}

/// [`headers_value`] read back (null is none); `at` names the member in errors.
fn headers_from(v: &Value, at: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let h = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Object(h) => h,
        _ => return Err(bad(at, "expected an object of header names")),
    };
    h.iter()
        .map(|(k, v)| match v.as_str() {
            Some(v) => Ok((k.to_lossy(), v.to_owned())),
            None => Err(bad(at, "expected strings as values")),
        })
        .collect()
}

impl Transport {
    fn to_value(&self) -> Value {
        let mut v = obj! {
            "client" => self.client.as_str(),
            "server" => self.server.as_str(),
            "url" => self.url.as_deref(),
            "listen" => self.listen.as_deref(),
            "request_headers" => headers_value(&self.request_headers),
        };
        // Written only when there are some: a recording without `--header` reads as before.
        if let (false, Value::Object(o)) = (self.added_headers.is_empty(), &mut v) {
            o.push("added_headers", headers_value(&self.added_headers));
        }
        v
    }

    fn from_value(v: &Value) -> Result<Transport, ConfigError> {
        let o = require_keys(
            v,
            &["client", "server"],
            &["url", "listen", "request_headers", "added_headers"],
        )
        .map_err(|e| bad("transport", &e.detail.unwrap_or_default()))?;
        let text = |k: &str| match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Str(t)) => Ok(Some(t.to_lossy())),
            _ => Err(bad(&format!("transport.{k}"), "expected null or a string")),
        };
        let request_headers = headers_from(
            o.get("request_headers").unwrap_or(&Value::Null),
            "transport.request_headers",
        )?;
        let added_headers = headers_from(
            o.get("added_headers").unwrap_or(&Value::Null),
            "transport.added_headers",
        )?;
        Ok(Transport {
            client: text("client")?.ok_or_else(|| bad("transport.client", "expected a string"))?,
            server: text("server")?.ok_or_else(|| bad("transport.server", "expected a string"))?,
            url: text("url")?,
            listen: text("listen")?,
            request_headers,
            added_headers,
        })
    }
}

/// Why and when a recording stopped taking calls ([`McpSession::recording_stopped`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stopped {
    /// What stopped it, in words.
    pub reason: String,
    /// Calls begun before it stopped.
    pub after_calls: u64,
    /// `tools/call` requests answered with an error since (as far as the journal knows).
    pub refused: u64,
}

/// The sidecar of a cassette: `incident.json` → `incident.mcp.json`.
pub fn sidecar_path(cassette: &Path) -> PathBuf {
    beside(cassette, "mcp.json")
}

/// A file kept beside the recording at `cassette`: `incident.json` → `incident.EXT`.
pub fn beside(cassette: &Path, ext: &str) -> PathBuf {
    let name = cassette
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    cassette.with_file_name(format!("{stem}.{ext}"))
}

/// A command line as the sidecar keeps it: the value of an option named like a secret
/// (`--token=...`, `--api-key X`, `GITHUB_TOKEN=...`) is replaced by `[REDACTED]`
/// ([`Redactor::redact_argv`]).
pub fn redact_argv(argv: &[String]) -> Vec<String> {
    Redactor::builtin().redact_argv(argv)
}

/// The write-ahead journal of a recording: `incident.json` → `incident.mcp.journal`.
pub fn journal_path(cassette: &Path) -> PathBuf {
    let side = sidecar_path(cassette);
    side.with_extension("journal")
}

/// The longest tool name the engine takes; longer names are cut (their glob prefix kept) and
/// marked with a digest of the whole.
const MAX_TOOL: usize = 200;

/// A tool name the engine can record: names over 200 characters keep their first 180 and a
/// digest of the whole, so globs on the prefix still match and two long names stay apart.
pub fn recorded_tool(tool: &str) -> (String, Option<String>) {
    if (1..=MAX_TOOL).contains(&tool.chars().count()) {
        return (tool.to_owned(), None);
    }
    if tool.is_empty() {
        return (
            "(unnamed)".to_owned(),
            Some("the tool name was empty".into()),
        );
    }
    let head: String = tool.chars().take(180).collect();
    let cut = format!("{head}~{}", &crate::json::sha256_hex(tool.as_bytes())[..16]);
    let note = format!(
        "the tool name ({} characters) was cut to its first 180 and a digest",
        tool.chars().count()
    );
    (cut, Some(note))
}

/// A response body as the sidecar keeps it: redacted, and within the size and depth a
/// document may have; `None` when it cannot be kept.
pub fn keep(body: &Value) -> Option<Value> {
    keep_borrowed(body).map(std::borrow::Cow::into_owned)
}

/// [`keep`] that borrows `body` when the sidecar keeps it as it is (nothing in it redacted),
/// and makes the redacted copy otherwise.
pub fn keep_borrowed(body: &Value) -> Option<std::borrow::Cow<'_, Value>> {
    Redactor::builtin().scrub_within(body, BODY_DEPTH - 1).ok()
}

fn bad(path: &str, why: &str) -> ConfigError {
    ConfigError::new("Invalid MCP session file")
        .at(path)
        .because(why)
}

fn unreadable_of(v: &Value, at: &str) -> Result<Unreadable, ConfigError> {
    let o = require_keys(v, &["bytes", "sha256", "reason", "raw"], &[])
        .map_err(|e| bad(at, &e.detail.unwrap_or_default()))?;
    let bytes =
        o.get("bytes")
            .and_then(Value::as_i64)
            .filter(|n| *n >= 0)
            .ok_or_else(|| bad(&format!("{at}.bytes"), "expected a byte count"))? as u64;
    let sha256 = o
        .get("sha256")
        .and_then(Value::as_str)
        .filter(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| bad(&format!("{at}.sha256"), "expected a SHA-256 digest in hex"))?
        .to_owned();
    let reason = o
        .get("reason")
        .and_then(Value::as_str)
        .ok_or_else(|| bad(&format!("{at}.reason"), "expected a string"))?
        .to_owned();
    let raw = match o.get("raw") {
        Some(Value::Null) | None => None,
        // Redacted again as it is read: a file written before raw answers were redacted
        // never has its secrets served back (the scan leaves redacted text as it is).
        Some(Value::Str(t)) => Some(crate::redact::Redactor::builtin().redact_raw(&t.to_lossy())),
        Some(_) => return Err(bad(&format!("{at}.raw"), "expected null or a string")),
    };
    Ok(Unreadable {
        bytes,
        sha256,
        reason,
        raw,
    })
}

fn body_of(v: &Value, key: &str, at: &str) -> Result<Value, ConfigError> {
    match v.as_object() {
        Some(o) if o.len() == 1 && o.contains_key(key) => Ok(v.clone()),
        _ => Err(bad(at, &format!("expected {{\"{key}\": ...}}"))),
    }
}

impl CallRecord {
    /// A record of call `call` that says nothing but what the client got (for tests).
    #[cfg(test)]
    pub(crate) fn bare(call: u64, request_id: Value, delivered: Delivered) -> CallRecord {
        CallRecord {
            call,
            request_id,
            delivered,
            effects: vec![],
            replay_of: None,
            note: None,
            possible: Vec::new(),
            dropped: None,
            request_headers: Vec::new(),
            unknown: None,
        }
    }

    /// What the server answered when the client never got it (its answer dropped by a lost
    /// acknowledgement, or come after its HTTP client left), as (kind, text) parts like
    /// [`Delivered::received`]: empty when the client got what the server said.
    pub fn server_answered(&self) -> Vec<(String, String)> {
        let Some(d) = &self.dropped else {
            return Vec::new();
        };
        let parts = result_parts(d);
        if parts.is_empty() {
            // Nothing but an empty result (say `{}`): said as it is, never left out.
            let result = d.as_object().and_then(|o| o.get("result")).unwrap_or(d);
            return vec![("result".into(), crate::json::one_line(result))];
        }
        parts
    }

    /// The record as the sidecar keeps it.
    pub fn to_value(&self) -> Value {
        let (kind, response) = match &self.delivered {
            Delivered::Result(b) | Delivered::Error(b) => (self.delivered.kind(), b.clone()),
            Delivered::Unreadable(u) => (
                self.delivered.kind(),
                obj! {
                    "bytes" => u.bytes,
                    "sha256" => u.sha256.as_str(),
                    "reason" => u.reason.as_str(),
                    "raw" => u.raw.as_deref(),
                },
            ),
            Delivered::HttpStatus(h) => (self.delivered.kind(), h.to_value()),
            other => (other.kind(), Value::Null),
        };
        let mut o = obj! {
            "call" => self.call,
            "request_id" => self.request_id.clone(),
            "delivered" => kind,
            "response" => response,
            "effects" => Value::Array(self.effects.iter().map(|e| Value::from(e.as_str())).collect()),
            "replay_of" => self.replay_of,
            "note" => self.note.as_deref(),
        };
        if let (Some(d), Value::Object(m)) = (&self.dropped, &mut o) {
            m.push("dropped_response", d.clone());
        }
        if !self.possible.is_empty()
            && let Value::Object(m) = &mut o
        {
            m.push("possible_effects", pairs_value(&self.possible));
        }
        if !self.request_headers.is_empty()
            && let Value::Object(m) = &mut o
        {
            m.push("request_headers", headers_value(&self.request_headers));
        }
        if let (Some(u), Value::Object(m)) = (&self.unknown, &mut o) {
            m.push("outcome_unknown", u.to_value());
        }
        o
    }

    /// Appends the compact text of [`CallRecord::to_value`] to `out`, written from the record
    /// itself (the journal writes one per call: no tree is built for it). Gives the bytes
    /// the `response` took.
    pub fn write_compact(&self, out: &mut String) -> usize {
        use crate::json::{write_compact, write_int, write_str};
        out.push_str("{\"call\":");
        write_int(self.call, out);
        out.push_str(",\"request_id\":");
        write_compact(&self.request_id, out);
        out.push_str(",\"delivered\":\"");
        out.push_str(self.delivered.kind());
        out.push_str("\",\"response\":");
        let response = out.len();
        match &self.delivered {
            Delivered::Result(b) | Delivered::Error(b) => write_compact(b, out),
            Delivered::Unreadable(u) => write_compact(
                &obj! {
                    "bytes" => u.bytes,
                    "sha256" => u.sha256.as_str(),
                    "reason" => u.reason.as_str(),
                    "raw" => u.raw.as_deref(),
                },
                out,
            ),
            Delivered::HttpStatus(h) => write_compact(&h.to_value(), out),
            _ => out.push_str("null"),
        }
        let response = out.len() - response;
        out.push_str(",\"effects\":[");
        for (i, e) in self.effects.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_str(e.as_str(), out);
        }
        out.push_str("],\"replay_of\":");
        match self.replay_of {
            Some(r) => write_int(r, out),
            None => out.push_str("null"),
        }
        out.push_str(",\"note\":");
        match &self.note {
            Some(n) => write_str(n, out),
            None => out.push_str("null"),
        }
        if let Some(d) = &self.dropped {
            out.push_str(",\"dropped_response\":");
            write_compact(d, out);
        }
        if !self.possible.is_empty() {
            out.push_str(",\"possible_effects\":[");
            for (i, (name, key)) in self.possible.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"name\":");
                write_str(name, out);
                out.push_str(",\"key\":");
                write_str(key, out);
                out.push('}');
            }
            out.push(']');
        }
        if !self.request_headers.is_empty() {
            out.push_str(",\"request_headers\":{");
            for (i, (name, value)) in self.request_headers.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(name, out);
                out.push(':');
                write_str(value, out);
            }
            out.push('}');
        }
        if let Some(u) = &self.unknown {
            out.push_str(",\"outcome_unknown\":");
            crate::json::write_compact(&u.to_value(), out);
        }
        out.push('}');
        response
    }

    /// Validates a record (`at` names it in messages).
    pub fn from_value(v: &Value, at: &str) -> Result<CallRecord, ConfigError> {
        let keys = [
            "call",
            "request_id",
            "delivered",
            "response",
            "effects",
            "replay_of",
            "note",
        ];
        let o = require_keys(
            v,
            &keys,
            &[
                "possible_effects",
                "dropped_response",
                "request_headers",
                "outcome_unknown",
            ],
        )
        .map_err(|e| bad(at, &e.detail.unwrap_or_default()))?;
        let field = |k: &str| o.get(k).unwrap_or(&Value::Null);
        let possible = pairs_of(o.get("possible_effects"), &format!("{at}.possible_effects"))?;
        let unknown = match field("outcome_unknown") {
            Value::Null => None,
            u => Some(Unknown::from_value(u, &format!("{at}.outcome_unknown"))?),
        };
        let call = field("call")
            .as_i64()
            .filter(|n| *n >= 1)
            .ok_or_else(|| bad(&format!("{at}.call"), "expected a call id ≥ 1"))?
            as u64;
        // Any JSON-RPC id a client used (a string, a number, even null or an object from a
        // client that breaks the rules) is kept as it came.
        let request_id = field("request_id").clone();
        let response = field("response");
        let here = format!("{at}.response");
        let delivered = match field("delivered").as_str() {
            Some("result") => Delivered::Result(body_of(response, "result", &here)?),
            Some("error") => Delivered::Error(body_of(response, "error", &here)?),
            Some("nothing") if response.is_null() => Delivered::Nothing,
            Some("unrecorded") if response.is_null() => Delivered::Unrecorded,
            Some("stream_cut") if response.is_null() => Delivered::Cut,
            Some("nothing" | "unrecorded" | "stream_cut") => {
                return Err(bad(&here, "expected null"));
            }
            Some("unreadable") => Delivered::Unreadable(unreadable_of(response, &here)?),
            Some("http_status") => Delivered::HttpStatus(HttpStatus::from_value(response, &here)?),
            _ => {
                return Err(bad(
                    &format!("{at}.delivered"),
                    "expected result, error, nothing, unrecorded, unreadable, http_status or stream_cut",
                ));
            }
        };
        let Value::Array(items) = field("effects") else {
            return Err(bad(
                &format!("{at}.effects"),
                "expected a list of evidence names",
            ));
        };
        let effects = items
            .iter()
            .enumerate()
            .map(|(i, e)| {
                e.as_str().and_then(Evidence::parse).ok_or_else(|| {
                    bad(
                        &format!("{at}.effects[{i}]"),
                        "expected server, scenario or annotations",
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let replay_of = match field("replay_of") {
            Value::Null => None,
            v => Some(
                v.as_i64()
                    .filter(|n| (1..call as i64).contains(n))
                    .ok_or_else(|| {
                        bad(
                            &format!("{at}.replay_of"),
                            "expected null or an earlier call id",
                        )
                    })? as u64,
            ),
        };
        let note = match field("note") {
            Value::Null => None,
            Value::Str(t) => Some(t.to_lossy()),
            _ => return Err(bad(&format!("{at}.note"), "expected null or a string")),
        };
        let dropped = match field("dropped_response") {
            Value::Null => None,
            d => Some(body_of(d, "result", &format!("{at}.dropped_response"))?),
        };
        let request_headers =
            headers_from(field("request_headers"), &format!("{at}.request_headers"))?;
        Ok(CallRecord {
            call,
            request_id,
            delivered,
            effects,
            replay_of,
            note,
            possible,
            dropped,
            request_headers,
            unknown,
        })
    }
}

impl McpSession {
    /// A peer's name and version from its `clientInfo` / `serverInfo` (`shipping 0.1.0`).
    pub fn peer_name(info: &Value) -> String {
        let field = |k: &str| {
            info.as_object()
                .and_then(|o| o.get(k))
                .and_then(Value::as_str)
        };
        match (field("name"), field("version")) {
            (Some(n), Some(v)) => format!("{n} {v}"),
            (Some(n), None) => n.to_owned(),
            _ => "unnamed".to_owned(),
        }
    }

    /// The document.
    pub fn to_value(&self) -> Value {
        let strings =
            |v: &[String]| Value::Array(v.iter().map(|s| Value::from(s.as_str())).collect());
        let exchanges = self
            .exchanges
            .iter()
            .map(|x| {
                obj! {
                    "method" => x.method.as_str(),
                    "params" => x.params.clone(),
                    "response" => x.response.clone(),
                }
            })
            .collect();
        let mut o = Object::new();
        o.push("schema_version", SCHEMA_VERSION);
        o.push("kind", KIND);
        o.push("protocol_version", self.protocol_version.as_deref());
        o.push("client_info", self.client_info.clone());
        o.push("server_info", self.server_info.clone());
        o.push("server_command", strings(&self.server_command));
        o.push("scenario", self.scenario.as_deref());
        if let Some(p) = self.probability {
            o.push("probability", Value::Float(p));
        }
        o.push("max_calls", self.max_calls);
        o.push(
            "checks",
            Value::Array(
                self.checks
                    .iter()
                    .map(|c| Value::from(c.as_str()))
                    .collect(),
            ),
        );
        o.push("exchanges", Value::Array(exchanges));
        o.push(
            "calls",
            Value::Array(self.calls.iter().map(CallRecord::to_value).collect()),
        );
        if let Some(id) = &self.session_id {
            o.push("session", id.as_str());
        }
        if let Some(d) = &self.cassette_digest {
            o.push("cassette_digest", d.as_str());
        }
        if let Some(f) = self.finished {
            o.push("finished", f);
        }
        if let Some(c) = self.client_closed {
            o.push("client_closed", c);
        }
        if let Some(t) = &self.transport {
            o.push("transport", t.to_value());
        }
        if let Some(a) = &self.agent {
            let mut agent = obj! {"command" => a.command.as_str(), "cwd" => a.cwd.as_str()};
            if let (Some(before), Value::Object(o)) = (&a.before, &mut agent) {
                o.push("before", before.as_str());
            }
            o.push("agent", agent);
        }
        if !self.refused_requests.is_empty() {
            let why = self
                .refused_requests
                .iter()
                .map(|w| Value::from(w.as_str()));
            o.push("refused_requests", Value::Array(why.collect()));
        }
        if self.annotations != Annotations::Declared {
            o.push("annotations", self.annotations.as_str());
        }
        if let Some(st) = &self.recording_stopped {
            o.push(
                "recording_stopped",
                obj! {
                    "reason" => st.reason.as_str(),
                    "after_calls" => st.after_calls as i64,
                    "refused" => st.refused as i64,
                },
            );
        }
        Value::Object(o)
    }

    /// The file text: compact JSON and a newline.
    pub fn to_text(&self) -> String {
        compact(&self.to_value()) + "\n"
    }

    /// Validates a parsed sidecar.
    pub fn from_value(v: &Value) -> Result<McpSession, ConfigError> {
        let keys = [
            "schema_version",
            "kind",
            "protocol_version",
            "client_info",
            "server_info",
            "server_command",
            "scenario",
            "max_calls",
            "checks",
            "exchanges",
            "calls",
        ];
        let optional = [
            "session",
            "cassette_digest",
            "finished",
            "recording_stopped",
            "client_closed",
            "transport",
            "agent",
            "refused_requests",
            "annotations",
            "probability",
        ];
        let o = require_keys(v, &keys, &optional).map_err(|e| ConfigError {
            message: "Invalid MCP session file",
            path: e.path,
            detail: e.detail.or(Some(e.message.into())),
        })?;
        let field = |k: &str| o.get(k).unwrap_or(&Value::Null);
        if field("schema_version").as_i64() != Some(SCHEMA_VERSION) {
            return Err(bad("schema_version", "expected 1"));
        }
        if field("kind").as_str() != Some(KIND) {
            return Err(bad("kind", &format!("expected \"{KIND}\"")));
        }
        let opt_text = |k: &str| match field(k) {
            Value::Null => Ok(None),
            Value::Str(t) => Ok(Some(t.to_lossy())),
            _ => Err(bad(k, "expected null or a string")),
        };
        let protocol_version = opt_text("protocol_version")?;
        let scenario = opt_text("scenario")?;
        let probability = match field("probability") {
            Value::Null => None,
            v => Some(
                v.as_number_f64()
                    .filter(|p| (0.0..=1.0).contains(p))
                    .ok_or_else(|| bad("probability", "expected a number from 0 to 1"))?,
            ),
        };
        let session_id = opt_text("session")?;
        let cassette_digest = opt_text("cassette_digest")?;
        if cassette_digest
            .as_deref()
            .is_some_and(|d| d.len() != 64 || !d.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err(bad("cassette_digest", "expected a SHA-256 digest in hex"));
        }
        let finished = match field("finished") {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            _ => return Err(bad("finished", "expected true or false")),
        };
        let client_closed = match field("client_closed") {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            _ => return Err(bad("client_closed", "expected true or false")),
        };
        let transport = match field("transport") {
            Value::Null => None,
            v => Some(Box::new(Transport::from_value(v)?)),
        };
        let agent = match field("agent") {
            Value::Null => None,
            v => {
                let ao = require_keys(v, &["command", "cwd"], &["before"]).map_err(|_| {
                    bad(
                        "agent",
                        "expected {\"command\": ..., \"cwd\": ..., \"before\": ... (optional)}",
                    )
                })?;
                let text = |k: &str| {
                    ao.get(k)
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| bad(&format!("agent.{k}"), "expected a string"))
                };
                let before = match ao.get("before") {
                    None | Some(Value::Null) => None,
                    Some(_) => Some(text("before")?),
                };
                Some(Box::new(AgentCommand {
                    command: text("command")?,
                    cwd: text("cwd")?,
                    before,
                }))
            }
        };
        let refused_requests = match field("refused_requests") {
            Value::Null => Vec::new(),
            Value::Array(items) => items
                .iter()
                .take(REFUSED_KEPT)
                .enumerate()
                .map(|(i, w)| {
                    w.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| bad(&format!("refused_requests[{i}]"), "expected a string"))
                })
                .collect::<Result<_, _>>()?,
            _ => return Err(bad("refused_requests", "expected a list of strings")),
        };
        let annotations = match field("annotations") {
            Value::Null => Annotations::Declared,
            v => v.as_str().and_then(Annotations::parse).ok_or_else(|| {
                bad(
                    "annotations",
                    "expected \"declared\", \"warn\" or \"commit\"",
                )
            })?,
        };
        let recording_stopped = match field("recording_stopped") {
            Value::Null => None,
            v => {
                let so = require_keys(v, &["reason", "after_calls", "refused"], &[])
                    .map_err(|e| bad("recording_stopped", &e.detail.unwrap_or_default()))?;
                let count = |k: &str| {
                    so.get(k)
                        .and_then(Value::as_i64)
                        .filter(|n| *n >= 0)
                        .map(|n| n as u64)
                        .ok_or_else(|| bad(&format!("recording_stopped.{k}"), "expected a count"))
                };
                Some(Stopped {
                    reason: so
                        .get("reason")
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad("recording_stopped.reason", "expected a string"))?
                        .to_owned(),
                    after_calls: count("after_calls")?,
                    refused: count("refused")?,
                })
            }
        };
        for k in ["client_info", "server_info"] {
            if !matches!(field(k), Value::Null | Value::Object(_)) {
                return Err(bad(k, "expected null or an object"));
            }
        }
        let Value::Array(cmd) = field("server_command") else {
            return Err(bad("server_command", "expected a list of strings"));
        };
        let server_command = cmd
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| bad(&format!("server_command[{i}]"), "expected a string"))
            })
            .collect::<Result<_, _>>()?;
        let max_calls = field("max_calls")
            .as_i64()
            .filter(|n| (1..=super::scenario::MAX_RECORDED_CALLS).contains(n))
            .ok_or_else(|| bad("max_calls", "expected an integer between 1 and 10000"))?;
        let Value::Array(check_items) = field("checks") else {
            return Err(bad("checks", "expected a list of check names"));
        };
        let checks = check_items
            .iter()
            .enumerate()
            .map(|(i, c)| match c.as_str() {
                Some("retry_after_respected") => Ok(McpCheck::RetryAfterRespected),
                _ => Err(bad(
                    &format!("checks[{i}]"),
                    "expected retry_after_respected",
                )),
            })
            .collect::<Result<_, _>>()?;
        let Value::Array(xs) = field("exchanges") else {
            return Err(bad("exchanges", "expected a list"));
        };
        let exchanges = xs
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let at = format!("exchanges[{i}]");
                let xo = require_keys(x, &["method", "params", "response"], &[])
                    .map_err(|e| bad(&at, &e.detail.unwrap_or_default()))?;
                let method = xo
                    .get("method")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad(&format!("{at}.method"), "expected a string"))?
                    .to_owned();
                let response = xo.get("response").cloned().unwrap_or(Value::Null);
                let ok = response.as_object().is_some_and(|r| {
                    r.len() == 1 && (r.contains_key("result") || r.contains_key("error"))
                });
                if !ok {
                    return Err(bad(
                        &format!("{at}.response"),
                        "expected {\"result\": ...} or {\"error\": ...}",
                    ));
                }
                Ok(Exchange {
                    method,
                    params: xo.get("params").cloned().unwrap_or(Value::Null),
                    response,
                })
            })
            .collect::<Result<_, _>>()?;
        let Value::Array(items) = field("calls") else {
            return Err(bad("calls", "expected a list of call records"));
        };
        let mut calls: Vec<CallRecord> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let record = CallRecord::from_value(item, &format!("calls[{i}]"))?;
            if calls.last().is_some_and(|p| p.call >= record.call) {
                return Err(bad(&format!("calls[{i}].call"), "call ids must increase"));
            }
            calls.push(record);
        }
        Ok(McpSession {
            protocol_version,
            client_info: field("client_info").clone(),
            server_info: field("server_info").clone(),
            server_command,
            scenario,
            probability,
            max_calls,
            checks,
            exchanges,
            calls,
            session_id,
            cassette_digest,
            finished,
            recording_stopped,
            client_closed,
            transport,
            agent,
            refused_requests,
            annotations,
        })
    }

    /// Reads and validates a sidecar file (at most 8,000,001 bytes are read).
    pub fn load(path: &Path) -> Result<McpSession, SessionError> {
        let bytes = crate::fsread::read_document(path).map_err(SessionError::Io)?;
        if bytes.len() > MAX_DOCUMENT_BYTES {
            return Err(SessionError::Invalid(
                ConfigError::new("Invalid MCP session file")
                    .because("the file exceeds 8,000,000 bytes"),
            ));
        }
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            SessionError::Invalid(
                ConfigError::new("Invalid MCP session file")
                    .because(format!("not UTF-8 at byte {}", e.valid_up_to())),
            )
        })?;
        let v = parse(text).map_err(|e| {
            SessionError::Invalid(
                ConfigError::new("Invalid or excessively nested JSON").because(e.to_string()),
            )
        })?;
        McpSession::from_value(&v).map_err(SessionError::Invalid)
    }

    /// The evidence of the cassette's effect `index` (the nth effect of its call is the nth
    /// evidence of that call's record).
    pub fn evidence_of(&self, report: &crate::report::Report, index: usize) -> Option<Evidence> {
        let e = report.effects.get(index)?;
        let nth = report.effects[..index]
            .iter()
            .filter(|o| o.call_id == e.call_id)
            .count();
        self.call(e.call_id)?.effects.get(nth).copied()
    }

    /// Refuses a sidecar written for another cassette (its digest is not this cassette's).
    /// Sidecars from before recordings were bound say nothing, and are taken as they are.
    pub fn check_bound(&self, cassette: &crate::cassette::Cassette) -> Result<(), ConfigError> {
        match &self.cassette_digest {
            Some(d) if *d != cassette.digest() => Err(bad(
                "cassette_digest",
                "this sidecar was written for another cassette (its digest differs): it belongs \
                 to another recording; copy the cassette and its sidecar together",
            )),
            _ => Ok(()),
        }
    }

    /// The record of cassette call `call`, if the sidecar has one.
    pub fn call(&self, call: u64) -> Option<&CallRecord> {
        self.calls
            .binary_search_by_key(&call, |c| c.call)
            .ok()
            .map(|i| &self.calls[i])
    }
}

/// Why a sidecar could not be read.
#[derive(Debug)]
pub enum SessionError {
    /// The OS refused.
    Io(std::io::Error),
    /// Not a valid sidecar.
    Invalid(ConfigError),
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionError::Io(e) => write!(f, "{e}"),
            SessionError::Invalid(e) => write!(f, "{e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> McpSession {
        McpSession {
            protocol_version: Some("2025-06-18".into()),
            client_info: obj! {"name" => "agent", "version" => "1"},
            server_info: obj! {"name" => "shipping", "version" => "1"},
            server_command: vec!["python3".into(), "server.py".into()],
            scenario: Some("faults.json".into()),
            probability: Some(0.5),
            max_calls: 10000,
            checks: vec![McpCheck::RetryAfterRespected],
            exchanges: vec![Exchange {
                method: "tools/list".into(),
                params: Value::Null,
                response: obj! {"result" => obj! {"tools" => Value::Array(vec![])}},
            }],
            calls: vec![
                CallRecord {
                    call: 1,
                    request_id: Value::from(3),
                    delivered: Delivered::Nothing,
                    effects: vec![Evidence::Scenario],
                    replay_of: None,
                    note: Some("answer lost (injected)".into()),
                    possible: vec![("write".into(), "{}".into())],
                    dropped: Some(obj! {"result" => obj! {"content" => Value::Array(vec![])}}),
                    request_headers: vec![("mcp-session-id".into(), "s-1".into())],
                    unknown: Some(Unknown {
                        why: "the server exited mid-call".into(),
                        effects: vec![("shipment".into(), "A1".into())],
                        at_end: true,
                    }),
                },
                CallRecord {
                    call: 2,
                    request_id: Value::from("4"),
                    delivered: Delivered::Result(
                        obj! {"result" => obj! {"content" => Value::Array(vec![])}},
                    ),
                    effects: vec![],
                    replay_of: Some(1),
                    note: None,
                    possible: Vec::new(),
                    dropped: None,
                    request_headers: Vec::new(),
                    unknown: None,
                },
            ],
            session_id: Some("0123456789abcdef".into()),
            cassette_digest: Some("ab".repeat(32)),
            finished: Some(false),
            recording_stopped: Some(Stopped {
                reason: "the journal could not be written (disk full)".into(),
                after_calls: 1,
                refused: 2,
            }),
            client_closed: Some(true),
            transport: None,
            agent: Some(Box::new(AgentCommand {
                command: "python agent.py --api-key [REDACTED] --mcp-config {mcp_config}".into(),
                cwd: "/work/agent".into(),
                before: Some("rm -f orders.db".into()),
            })),
            refused_requests: vec!["the request's id is null".into()],
            annotations: Annotations::Warn,
        }
    }

    /// A session whose `write` is listed with `annotations`, called twice with the same
    /// arguments; the first call's answer lost when `lost`.
    fn repeated_write(annotations: Value, lost: bool) -> McpSession {
        let call = |n: u64, lost: bool| CallRecord {
            call: n,
            request_id: Value::from(n as i64),
            delivered: if lost {
                Delivered::Nothing
            } else {
                Delivered::Result(obj! {"result" => obj! {}})
            },
            effects: Vec::new(),
            replay_of: None,
            note: None,
            possible: vec![("write".into(), "{}".into())],
            dropped: lost.then(|| obj! {"result" => obj! {}}),
            request_headers: Vec::new(),
            unknown: None,
        };
        let mut tool = obj! {"name" => "write"};
        if let (Value::Object(o), false) = (&mut tool, annotations.is_null()) {
            o.push("annotations", annotations);
        }
        McpSession {
            exchanges: vec![Exchange {
                method: "tools/list".into(),
                params: Value::Null,
                response: obj! {"result" => obj! {"tools" => Value::Array(vec![tool])}},
            }],
            calls: vec![call(1, lost), call(2, false)],
            max_calls: 100,
            ..McpSession::default()
        }
    }

    #[test]
    fn the_dropped_answer_reads_as_what_the_server_answered() {
        let mut r = CallRecord::bare(
            2,
            Value::from(4),
            Delivered::Result(obj! {"result" => obj! {"isError" => true}}),
        );
        assert!(r.server_answered().is_empty(), "nothing was dropped");
        r.dropped = Some(obj! {"result" => obj! {
            "content" => Value::Array(vec![obj! {"type" => "text", "text" => "{\"row_id\":1}"}]),
            "structuredContent" => obj! {"row_id" => 1},
        }});
        assert_eq!(
            r.server_answered(),
            vec![
                ("text".to_owned(), "{\"row_id\":1}".to_owned()),
                ("structured".to_owned(), "{\"row_id\": 1}".to_owned()),
            ]
        );
    }

    #[test]
    fn only_a_retry_after_a_lost_answer_of_a_declared_write_is_a_duplicate() {
        let declared = || obj! {"idempotentHint" => false};
        let s = repeated_write(declared(), true);
        assert_eq!(
            s.declared_duplicates(),
            [(2, 1, "write".to_owned(), "{}".to_owned())]
        );
        assert!(s.warned_duplicates().is_empty());
        // The client saw the first answer: a deliberate second call, a warning.
        let seen = repeated_write(declared(), false);
        assert!(seen.declared_duplicates().is_empty());
        assert_eq!(seen.warned_duplicates().len(), 1);
        // No annotations: the server declared nothing.
        assert!(
            repeated_write(Value::Null, true)
                .declared_duplicates()
                .is_empty()
        );
        // `"annotations": "warn"`: only warnings.
        let mut warn = repeated_write(declared(), true);
        warn.annotations = Annotations::Warn;
        assert!(warn.declared_duplicates().is_empty());
        assert_eq!(warn.warned_duplicates().len(), 1);
    }

    #[test]
    fn a_commit_after_an_unknown_outcome_is_a_possible_duplicate_unless_it_committed_nothing() {
        let answered =
            |call: u64| CallRecord::bare(call, Value::from(call as i64), Delivered::Nothing);
        let unknown = |call: u64| CallRecord {
            unknown: Some(Unknown {
                why: "cut".into(),
                effects: vec![("shipment".into(), "A1".into())],
                at_end: false,
            }),
            ..answered(call)
        };
        let effect = |call_id: u64, key: &str| crate::report::Effect {
            name: "shipment".into(),
            key: key.into(),
            call_id,
            at: 0.0,
            identity: 1,
            redacted: false,
        };
        let mut s = sample();
        s.calls = vec![unknown(1), answered(2), answered(3)];
        // #2 committed nothing (a replay, the server's empty list): #3 committed A1 again.
        let found = s.unknown_repeats(&[effect(3, "A1")]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].unknown, found[0].call), (1, 3));
        assert_eq!(
            found[0].line(),
            "possible duplicate commit: #1's outcome is unknown (cut) and #3 committed shipment A1 again"
        );
        // Another key is no repeat of it.
        assert!(s.unknown_repeats(&[effect(2, "B2")]).is_empty());
        // A commit before the call whose outcome is unknown may have been committed again.
        s.calls = vec![answered(1), unknown(2)];
        let found = s.unknown_repeats(&[effect(1, "A1")]);
        assert_eq!(
            found.iter().map(UnknownRepeat::line).collect::<Vec<_>>(),
            [
                "possible duplicate commit: #2's outcome is unknown (cut) and #1 committed shipment A1 before it"
            ]
        );
        // Two calls whose outcome nobody saw may both have committed.
        s.calls = vec![unknown(1), unknown(2)];
        let found = s.unknown_repeats(&[]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].also_unknown && found[0].call == 2, "{found:?}");
        assert!(found[0].line().contains("#2 may have committed"));
    }

    #[test]
    fn round_trips_and_finds_calls() {
        let s = sample();
        let again = McpSession::from_value(&parse(&s.to_text()).expect("json")).expect("valid");
        assert_eq!(again, s);
        assert_eq!(again.call(2).map(|c| c.replay_of), Some(Some(1)));
        assert!(again.call(3).is_none());
    }

    #[test]
    fn headers_the_proxy_added_are_kept_apart_and_older_transports_still_read() {
        let mut s = sample();
        s.transport = Some(Box::new(Transport {
            client: "stdio".into(),
            server: "streamable-http".into(),
            url: Some("http://h/mcp".into()),
            added_headers: vec![("x-upstream-auth".into(), crate::redact::MARKER.into())],
            ..Transport::default()
        }));
        let text = s.to_text();
        assert!(
            text.contains(
                r#""request_headers":{},"added_headers":{"x-upstream-auth":"[REDACTED]"}"#
            ),
            "{text}"
        );
        let again = McpSession::from_value(&parse(&text).expect("json")).expect("valid");
        assert_eq!(again, s);
        // A sidecar from before: no `added_headers`, the `--header`s among the client's.
        let older = text.replace(
            r#""request_headers":{},"added_headers":{"x-upstream-auth":"[REDACTED]"}"#,
            r#""request_headers":{"x-team":"ops"}"#,
        );
        let t = McpSession::from_value(&parse(&older).expect("json"))
            .expect("an older sidecar reads")
            .transport
            .expect("transport");
        assert_eq!(t.request_headers, [("x-team".to_owned(), "ops".to_owned())]);
        assert!(t.added_headers.is_empty());
        // Nothing added: the transport is written as before.
        if let Some(t) = s.transport.as_mut() {
            t.added_headers.clear();
        }
        assert!(!s.to_text().contains("added_headers"));
    }

    #[test]
    fn a_record_written_as_text_is_its_value_compact() {
        let mut records = sample().calls;
        let unreadable = Unreadable {
            bytes: 12,
            sha256: "0f".repeat(32),
            reason: "not UTF-8".into(),
            raw: None,
        };
        for delivered in [
            Delivered::Error(obj! {"error" => obj! {"code" => -32000, "message" => "é\"\n"}}),
            Delivered::Unreadable(unreadable),
            Delivered::Unrecorded,
            Delivered::Cut,
            Delivered::HttpStatus(HttpStatus {
                status: 429,
                retry_after: Some(30),
                body: obj! {"error" => obj! {"code" => -32000, "message" => "busy"}},
            }),
        ] {
            records.push(CallRecord {
                call: 3,
                request_id: Value::Float(1.5),
                delivered,
                effects: vec![Evidence::Server, Evidence::Annotations],
                replay_of: Some(2),
                note: Some("a note with \u{1F600} and \"quotes\"".into()),
                possible: vec![("a".into(), "k\t1".into()), ("b".into(), "k2".into())],
                dropped: None,
                request_headers: vec![
                    ("authorization".into(), "[REDACTED]".into()),
                    ("x-trace".into(), "é\"1".into()),
                ],
                unknown: Some(Unknown {
                    why: "cut at byte 9 \"here\"".into(),
                    effects: vec![("shipment".into(), "A\t1".into())],
                    at_end: false,
                }),
            });
        }
        for r in &records {
            let mut text = String::new();
            r.write_compact(&mut text);
            assert_eq!(text, compact(&r.to_value()), "{r:?}");
            // And it reads back as it was.
            assert_eq!(
                &CallRecord::from_value(&r.to_value(), "c").expect("reads"),
                r
            );
        }
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        let text = sample().to_text();
        let cases = [
            (
                text.replace("\"kind\":\"toolstorm-mcp-session\"", "\"kind\":\"x\""),
                "kind",
            ),
            (
                text.replace("\"effects\":[\"scenario\"]", "\"effects\":[\"gossip\"]"),
                "calls[0].effects[0]",
            ),
            (
                text.replace("\"delivered\":\"nothing\"", "\"delivered\":\"result\""),
                "calls[0].response",
            ),
            (
                text.replace("\"replay_of\":1", "\"replay_of\":2"),
                "calls[1].replay_of",
            ),
            (
                text.replace("\"call\":2", "\"call\":1")
                    .replace("\"replay_of\":1", "\"replay_of\":null"),
                "calls[1].call",
            ),
            (
                text.replace("{\"mcp-session-id\":\"s-1\"}", "[\"s-1\"]"),
                "calls[0].request_headers",
            ),
            (
                text.replace("{\"mcp-session-id\":\"s-1\"}", "{\"mcp-session-id\":1}"),
                "calls[0].request_headers",
            ),
        ];
        for (t, path) in cases {
            let e = McpSession::from_value(&parse(&t).expect("json")).expect_err(path);
            assert_eq!(e.path.as_deref(), Some(path), "{e}");
        }
        let extra = text.replacen("{\"schema_version\"", "{\"extra\":1,\"schema_version\"", 1);
        assert!(McpSession::from_value(&parse(&extra).expect("json")).is_err());
    }

    #[test]
    fn sidecar_names() {
        assert_eq!(
            sidecar_path(Path::new("a/incident.json")),
            Path::new("a/incident.mcp.json")
        );
        assert_eq!(
            sidecar_path(Path::new("trace")),
            Path::new("trace.mcp.json")
        );
    }
}
