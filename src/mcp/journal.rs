//! The write-ahead journal of a recording (`incident.mcp.journal`, JSON lines): what the proxy
//! appends before the client can see anything, and how a recording is rebuilt from it.
//!
//! Every line is one compact JSON object, written with a single `write` (no user-space
//! buffer), so a killed proxy leaves whole lines and at most one torn last line, which readers
//! ignore. The kernel keeps what was written even when the process is killed at once; only a
//! power loss could take it, and that is not this tool's promise.
//!
//! Lines, in order:
//! - the header: `{"kind": "toolstorm-mcp-journal", "schema_version": 2, "session": ID,
//!   "report": {seed, clock, rules, capture}, "facts": SIDECAR}` (the sidecar without calls);
//! - `{"facts": SIDECAR}` when the session learns something (the handshake, `tools/list`);
//! - `{"id": N, "begin": CALL, "coverage": {...}, "budget_rejections": N}` before a request
//!   reaches the server (or is answered by a fault), so a call in flight when the proxy dies is
//!   on record;
//! - `{"id": N, "end": CALL, "effects": [...], "record": RECORD, "coverage": {...},
//!   "budget_rejections": N}` before the call's answer is relayed; CALL is without its
//!   `arguments` (the begin line has them) and, when it is the result RECORD says the client
//!   received, without its `output`: readers put them back;
//! - `{"prior_effects": [...]}` and then a `begin` or `end` line per call, first, when the
//!   session continues an earlier recording (`--append`);
//! - `{"client_closed": true}` when the client closed its end (no call can be asked after it);
//! - `{"finished": CODE}` when the session ended and the proxy finished its work.
//!
//! [`Rebuild`] reads the lines (all at once, or as they come: the compactor tails the file) and
//! gives the recording they describe: a cassette that validates as any other, and its sidecar.

use std::collections::BTreeMap;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

mod writer;

pub use writer::Writer;
#[cfg(test)]
use writer::staged_path;

use super::session::{CallRecord, McpSession, journal_path, sidecar_path};
use crate::cassette::Cassette;
use crate::error::ConfigError;
use crate::json::{Object, Value, canonical, compact, parse};
use crate::obj;

/// The `kind` of a journal's header.
pub const KIND: &str = "toolstorm-mcp-journal";
/// The journal format version. Version 2 writes a call's arguments in its begin line only,
/// and its output only where the record of its answer does not hold it;
/// journals of version 1 (arguments in both lines) are read too.
pub const SCHEMA_VERSION: i64 = 2;
/// The longest line a reader accepts (a line holds one call, whose payloads are capped far
/// below this).
const MAX_LINE: usize = 8_000_000;
/// The most a reader takes from one journal: four times a recording file's limit (a journal
/// holds what both files do, and each call's counters). The recorder stops taking calls
/// before its journal reaches it, so only a journal that is not ours is refused.
pub const MAX_JOURNAL_BYTES: u64 = 4 * crate::json::MAX_DOCUMENT_BYTES as u64;

/// An end line's call made whole: the recorder writes a call's arguments once, in its begin
/// line, and its end line has the call without them (an `--append` line of an earlier
/// session's call, or a journal of schema 1, has them: taken as it is). Both texts are
/// canonical, so `arguments` is the first member of each.
fn with_arguments(end: String, begun: Option<&String>, line: usize) -> Result<String, ConfigError> {
    const HEAD: &str = "{\"arguments\":";
    if end.starts_with(HEAD) {
        return Ok(end);
    }
    let rest = end
        .strip_prefix('{')
        .filter(|r| r.starts_with('"'))
        .ok_or_else(|| bad(line, "end: expected a call with its members"))?;
    let begun = begun.ok_or_else(|| {
        bad(
            line,
            "end: a call without its arguments, and no begin line before it has them",
        )
    })?;
    let args = crate::mcp::wire::member(begun.as_bytes(), "arguments")
        .ok_or_else(|| bad(line, "end: the call's begin line has no arguments"))?;
    let mut whole = String::with_capacity(end.len() + args.len() + HEAD.len() + 1);
    whole.push_str(HEAD);
    whole.push_str(&begun[args]);
    whole.push(',');
    whole.push_str(rest);
    Ok(whole)
}

/// An end line's call made whole, its output put back: the recorder leaves out the output
/// when it is the result the line's record says the client received. `result` gives that
/// result's canonical text (read only when it is needed). The output goes after `ordinal`,
/// where canonical order has it.
fn with_output(
    call: String,
    result: impl FnOnce() -> Result<Option<String>, ConfigError>,
    line: usize,
) -> Result<String, ConfigError> {
    let members = crate::mcp::wire::members(call.as_bytes());
    if members.iter().any(|(k, _)| *k == b"output") {
        return Ok(call);
    }
    let at = members
        .iter()
        .find(|(k, _)| *k == b"ordinal")
        .map(|(_, r)| r.end)
        .ok_or_else(|| bad(line, "end: expected a call with an ordinal"))?;
    let result = result()?.ok_or_else(|| {
        bad(
            line,
            "end: a call without its output, and its record has no result to take it from",
        )
    })?;
    let mut whole = String::with_capacity(call.len() + result.len() + 10);
    whole.push_str(&call[..at]);
    whole.push_str(",\"output\":");
    whole.push_str(&result);
    whole.push_str(&call[at..]);
    Ok(whole)
}

/// The canonical text of a record's `response.result`, if it has one.
fn result_of(record: Option<&Value>) -> Option<String> {
    let response = record?.as_object()?.get("response")?.as_object()?;
    (response.len() == 1)
        .then(|| response.get("result"))
        .flatten()
        .map(canonical)
}

fn bad(line: usize, why: impl Into<String>) -> ConfigError {
    ConfigError::new("Invalid MCP journal")
        .at(format!("line {line}"))
        .because(why)
}

/// The header of a journal: the run's fixed facts. `supersedes`: the session of the
/// recording's files when the journal began (they may still be its files until the first
/// compaction); readers take a journal over the files only when the files are its own or
/// those (see [`recover`]).
pub fn header(
    session: &str,
    supersedes: Option<&str>,
    report: &Value,
    facts: &McpSession,
) -> Value {
    obj! {
        "kind" => KIND,
        "schema_version" => SCHEMA_VERSION,
        "session" => session,
        "supersedes" => supersedes.map_or(Value::Null, Value::from),
        "report" => report.clone(),
        "facts" => facts.to_value(),
    }
}

/// A recording rebuilt from its journal, line by line.
#[derive(Debug, Default)]
pub struct Rebuild {
    /// Bytes of the journal consumed (whole lines only).
    offset: u64,
    /// Complete lines read.
    lines: usize,
    session: Option<String>,
    /// The session of the files the journal began over.
    supersedes: Option<String>,
    report: Option<Object>,
    facts: McpSession,
    /// The latest form of each call, by id, as canonical JSON text (the recording is
    /// assembled from text: no value trees are kept for a long session).
    calls: BTreeMap<u64, String>,
    /// Ids of calls whose end is on record.
    ended: std::collections::BTreeSet<u64>,
    /// Each effect's canonical text, in record order.
    effects: Vec<String>,
    /// Each call's sidecar record, as compact JSON text.
    records: BTreeMap<u64, String>,
    coverage: Value,
    budget_rejections: u64,
    finished: Option<i64>,
    /// The client closed the session.
    client_closed: bool,
    /// Effect identities seen, and how many repeats: the recording's duplicate count.
    identities: std::collections::HashSet<i64>,
    duplicates: usize,
    /// A last line without its newline was seen (the writer was stopped mid-line, or is
    /// writing it now).
    torn: bool,
    /// The journal is this process's own (the compactor's): call lines are taken by their
    /// text; readers of a journal from elsewhere parse every line whole.
    trusted: bool,
}

/// What the journal says of the session's end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Calls begun.
    pub calls: usize,
    /// Ids of calls begun and not ended (in flight when the journal stops).
    pub in_flight: Vec<u64>,
    /// The proxy's exit code, when the session finished.
    pub finished: Option<i64>,
}

impl Rebuild {
    /// A rebuild of the journal this process is writing (see `trusted`).
    pub fn own() -> Rebuild {
        Rebuild {
            trusted: true,
            ..Rebuild::default()
        }
    }

    /// Reads a whole journal.
    pub fn read(path: &Path) -> Result<Rebuild, JournalError> {
        let mut r = Rebuild::default();
        r.read_more(path)?;
        if r.session.is_none() {
            return Err(JournalError::Invalid(bad(1, "no header line")));
        }
        Ok(r)
    }

    /// Reads the lines added to `path` since the last call.
    pub fn read_more(&mut self, path: &Path) -> Result<(), JournalError> {
        let mut file = crate::fsread::open_regular(path).map_err(JournalError::Io)?;
        let len = file.metadata().map_err(JournalError::Io)?.len();
        if len > MAX_JOURNAL_BYTES {
            return Err(JournalError::Invalid(
                ConfigError::new("Invalid MCP journal")
                    .because(format!("the file exceeds {MAX_JOURNAL_BYTES} bytes")),
            ));
        }
        if len < self.offset {
            return Err(JournalError::Invalid(
                ConfigError::new("Invalid MCP journal")
                    .because("the file was truncated while it was being read"),
            ));
        }
        file.seek(SeekFrom::Start(self.offset))
            .map_err(JournalError::Io)?;
        // A megabyte at a time: what is unread can be many (a fast session between two
        // compactions), and memory stays at a chunk and a line.
        const CHUNK: u64 = 1 << 20;
        let mut rest = len - self.offset;
        let mut bytes: Vec<u8> = Vec::new();
        self.torn = false;
        while rest > 0 {
            let before = bytes.len();
            (&mut file)
                .take(rest.min(CHUNK))
                .read_to_end(&mut bytes)
                .map_err(JournalError::Io)?;
            let got = (bytes.len() - before) as u64;
            if got == 0 {
                break;
            }
            rest -= got;
            let mut start = 0;
            while let Some(nl) = memchr::memchr(b'\n', &bytes[start..]) {
                self.lines += 1;
                self.apply(&bytes[start..start + nl])
                    .map_err(JournalError::Invalid)?;
                start += nl + 1;
                self.offset += nl as u64 + 1;
            }
            bytes.drain(..start);
        }
        // A last line without its newline is being written (or was torn by a kill).
        self.torn = !bytes.is_empty();
        Ok(())
    }

    fn apply(&mut self, line: &[u8]) -> Result<(), ConfigError> {
        let n = self.lines;
        if line.len() > MAX_LINE {
            return Err(bad(n, "a line over 8,000,000 bytes"));
        }
        let text = std::str::from_utf8(line).map_err(|_| bad(n, "not UTF-8"))?;
        if self.trusted && self.session.is_some() && self.apply_own(line)? {
            return Ok(());
        }
        let v = parse(text).map_err(|e| bad(n, e.to_string()))?;
        let Some(o) = v.as_object() else {
            return Err(bad(n, "expected an object"));
        };
        if self.session.is_none() {
            return self.apply_header(o);
        }
        let counters = |this: &mut Rebuild| -> Result<(), ConfigError> {
            if let Some(c) = o.get("coverage") {
                this.coverage = c.clone();
            }
            if let Some(b) = o.get("budget_rejections") {
                this.budget_rejections = b
                    .as_i64()
                    .filter(|b| *b >= 0)
                    .ok_or_else(|| bad(n, "budget_rejections: expected a count"))?
                    as u64;
            }
            Ok(())
        };
        if let Some(facts) = o.get("facts") {
            self.facts = McpSession::from_value(facts).map_err(|e| nested(n, "facts", e))?;
        } else if let Some(call) = o.get("begin") {
            let id = call_id(call).ok_or_else(|| bad(n, "begin: expected a call with an id"))?;
            self.calls.insert(id, canonical(call));
            counters(self)?;
        } else if let Some(call) = o.get("end") {
            let id = call_id(call).ok_or_else(|| bad(n, "end: expected a call with an id"))?;
            let record = o.get("record");
            let whole = with_output(canonical(call), || Ok(result_of(record)), n)?;
            let whole = with_arguments(whole, self.calls.get(&id), n)?;
            self.calls.insert(id, whole);
            self.ended.insert(id);
            if let Some(Value::Array(effects)) = o.get("effects") {
                self.add_effects(effects);
            }
            if let Some(r) = o.get("record") {
                let record = CallRecord::from_value(r, "record").map_err(|e| nested(n, "", e))?;
                self.records.insert(record.call, compact(r));
            }
            counters(self)?;
        } else if let Some(Value::Array(effects)) = o.get("prior_effects") {
            // The effects of the session this one continues, in their order.
            self.add_effects(effects);
        } else if o.get("client_closed").is_some() {
            self.client_closed = true;
        } else if let Some(code) = o.get("finished") {
            self.finished = Some(
                code.as_i64()
                    .ok_or_else(|| bad(n, "finished: expected an exit code"))?,
            );
            // The last counters (calls the budget refused have no line of their own).
            counters(self)?;
        } else {
            return Err(bad(
                n,
                "expected facts, begin, end, client_closed or finished",
            ));
        }
        Ok(())
    }

    /// A call line as this process's own recorder wrote it (canonical call text, one write),
    /// taken by its parts' text without parsing the payloads again: the compactor reads the
    /// journal its own proxy is writing. False when the line is not a call line.
    fn apply_own(&mut self, line: &[u8]) -> Result<bool, ConfigError> {
        let n = self.lines;
        let parts = crate::mcp::wire::members(line);
        let part = |key: &[u8]| {
            parts
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, r)| r.clone())
        };
        let (range, ended) = match (part(b"begin"), part(b"end")) {
            (Some(r), _) => (r, false),
            (None, Some(r)) => (r, true),
            _ => return Ok(false),
        };
        let text = |r: std::ops::Range<usize>| {
            std::str::from_utf8(&line[r])
                .map(str::to_owned)
                .map_err(|_| bad(n, "not UTF-8"))
        };
        let small = |key: &[u8]| -> Result<Option<Value>, ConfigError> {
            match part(key) {
                Some(r) => parse(&text(r)?)
                    .map(Some)
                    .map_err(|e| bad(n, e.to_string())),
                None => Ok(None),
            }
        };
        // The recorder writes the call's id first, so it is found without reading the call.
        let id = small(b"id")?
            .and_then(|v| v.as_i64())
            .filter(|id| *id >= 1)
            .ok_or_else(|| bad(n, "expected the call's id"))? as u64;
        let mut call = text(range)?;
        if ended {
            let record = || match part(b"record") {
                Some(r) => parse(&text(r)?)
                    .map(|v| result_of(Some(&v)))
                    .map_err(|e| bad(n, e.to_string())),
                None => Ok(None),
            };
            call = with_output(call, record, n)?;
            call = with_arguments(call, self.calls.get(&id), n)?;
        }
        self.calls.insert(id, call);
        if ended {
            self.ended.insert(id);
            if let Some(Value::Array(effects)) = small(b"effects")? {
                self.add_effects(&effects);
            }
            if let Some(r) = part(b"record") {
                self.records.insert(id, text(r)?);
            }
        }
        if let Some(c) = small(b"coverage")? {
            self.coverage = c;
        }
        if let Some(b) = small(b"budget_rejections")? {
            self.budget_rejections = b
                .as_i64()
                .filter(|b| *b >= 0)
                .ok_or_else(|| bad(n, "budget_rejections: expected a count"))?
                as u64;
        }
        Ok(true)
    }

    fn add_effects(&mut self, effects: &[Value]) {
        for e in effects {
            let identity = e
                .as_object()
                .and_then(|o| o.get("identity"))
                .and_then(Value::as_i64);
            if let Some(i) = identity
                && !self.identities.insert(i)
            {
                self.duplicates += 1;
            }
            self.effects.push(canonical(e));
        }
    }

    /// Faults injected so far (Σ triggered) and duplicate effects.
    pub fn counts(&self) -> (u64, usize) {
        let faults = self
            .coverage
            .as_object()
            .map(|o| {
                o.iter()
                    .filter_map(|(_, c)| c.as_object()?.get("triggered")?.as_i64())
                    .map(|t| t.max(0) as u64)
                    .sum()
            })
            .unwrap_or(0);
        (faults, self.duplicates)
    }

    fn apply_header(&mut self, o: &Object) -> Result<(), ConfigError> {
        if o.get("kind").and_then(Value::as_str) != Some(KIND) {
            return Err(bad(1, format!("expected a header of kind \"{KIND}\"")));
        }
        if !matches!(
            o.get("schema_version").and_then(Value::as_i64),
            Some(1 | SCHEMA_VERSION)
        ) {
            return Err(bad(
                1,
                format!("schema_version: expected 1 or {SCHEMA_VERSION}"),
            ));
        }
        let session = o
            .get("session")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(1, "session: expected a string"))?;
        let report = o
            .get("report")
            .and_then(Value::as_object)
            .ok_or_else(|| bad(1, "report: expected an object"))?;
        self.facts = McpSession::from_value(o.get("facts").unwrap_or(&Value::Null))
            .map_err(|e| nested(1, "facts", e))?;
        self.coverage = report.get("coverage").cloned().unwrap_or(obj! {});
        self.supersedes = match o.get("supersedes") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_str()
                    .ok_or_else(|| bad(1, "supersedes: expected a session id or null"))?
                    .to_owned(),
            ),
        };
        self.report = Some(report.clone());
        self.session = Some(session.to_owned());
        Ok(())
    }

    /// The session this journal belongs to.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Whether the last line read had no newline yet.
    pub fn torn(&self) -> bool {
        self.torn
    }

    /// How far the session got.
    pub fn progress(&self) -> Progress {
        Progress {
            calls: self.calls.len(),
            in_flight: self
                .calls
                .keys()
                .filter(|id| !self.ended.contains(id))
                .copied()
                .collect(),
            finished: self.finished,
        }
    }

    /// Writes the cassette's canonical text (as `Cassette::dumps` writes it, without the
    /// newline) to `sink`, piece by piece: assembled from the lines' text, so a long session
    /// costs its text once, not a tree of values or a second copy.
    pub fn emit_cassette(&self, sink: &mut dyn FnMut(&[u8])) -> Result<(), ConfigError> {
        let base = self
            .report
            .as_ref()
            .ok_or_else(|| bad(1, "no header line"))?;
        let field = |k: &str| canonical(base.get(k).unwrap_or(&Value::Null));
        sink(b"{\"budget_rejections\":");
        sink(self.budget_rejections.to_string().as_bytes());
        sink(b",\"calls\":[");
        join(sink, self.calls.values());
        sink(b"],\"capture\":");
        sink(field("capture").as_bytes());
        sink(b",\"clock\":");
        sink(field("clock").as_bytes());
        sink(b",\"coverage\":");
        sink(canonical(&self.coverage).as_bytes());
        sink(b",\"effects\":[");
        join(sink, self.effects.iter());
        sink(b"],\"rules\":");
        sink(field("rules").as_bytes());
        sink(b",\"schema_version\":");
        sink(crate::report::SCHEMA_VERSION.to_string().as_bytes());
        sink(b",\"seed\":");
        sink(field("seed").as_bytes());
        sink(b"}");
        Ok(())
    }

    /// Writes the sidecar's text (with its newline) to `sink`, bound to the cassette whose
    /// digest is `digest`.
    pub fn emit_sidecar(
        &self,
        digest: &str,
        sink: &mut dyn FnMut(&[u8]),
    ) -> Result<(), ConfigError> {
        let mut facts = self.facts.clone();
        facts.calls = Vec::new();
        facts.session_id = self.session.clone();
        facts.cassette_digest = Some(digest.to_owned());
        facts.finished = Some(self.finished.is_some());
        facts.client_closed = Some(self.client_closed);
        let head = facts.to_text();
        let head = head.trim_end();
        let at = crate::mcp::wire::member(head.as_bytes(), "calls")
            .ok_or_else(|| bad(1, "a sidecar without calls"))?;
        sink(&head.as_bytes()[..at.start]);
        sink(b"[");
        join(sink, self.records.values());
        sink(b"]");
        sink(&head.as_bytes()[at.end..]);
        sink(b"\n");
        Ok(())
    }

    /// The cassette's digest and both files' sizes, without writing them; `Err` when a file
    /// would be over the 8,000,000 bytes a document may have (the recording is full).
    pub fn measure(&self) -> Result<(String, usize, usize), ConfigError> {
        use sha2::Digest;
        let mut hasher = sha2::Sha256::new();
        let mut len = 0;
        self.emit_cassette(&mut |b| {
            len += b.len();
            hasher.update(b);
        })?;
        let digest = crate::json::hex(&hasher.finalize());
        if len + 1 > crate::json::MAX_DOCUMENT_BYTES {
            return Err(full(&format!("the cassette would hold {} bytes", len + 1)));
        }
        let mut side = 0;
        self.emit_sidecar(&digest, &mut |b| side += b.len())?;
        if side > crate::json::MAX_DOCUMENT_BYTES {
            return Err(full(&format!("the sidecar would hold {side} bytes")));
        }
        Ok((digest, len + 1, side))
    }

    /// The recording the journal describes, as the two files' text.
    pub fn texts(&self) -> Result<Texts, ConfigError> {
        let (digest, len, side_len) = self.measure()?;
        let mut cassette = Vec::with_capacity(len);
        self.emit_cassette(&mut |b| cassette.extend_from_slice(b))?;
        let mut sidecar = Vec::with_capacity(side_len);
        self.emit_sidecar(&digest, &mut |b| sidecar.extend_from_slice(b))?;
        let text = |v: Vec<u8>| String::from_utf8(v).map_err(|_| bad(1, "text that is not UTF-8"));
        Ok(Texts {
            cassette: text(cassette)?,
            sidecar: text(sidecar)?,
            digest,
        })
    }

    /// The recording the journal describes: a validated cassette and its sidecar.
    pub fn recording(&self) -> Result<(Cassette, McpSession), ConfigError> {
        let t = self.texts()?;
        let cassette = Cassette::loads(&t.cassette)?;
        let value = parse(&t.sidecar).map_err(|e| {
            ConfigError::new("Invalid or excessively nested JSON").because(e.to_string())
        })?;
        let mut session = McpSession::from_value(&value)?;
        // The digest of what the cassette holds, as every reader computes it.
        session.cassette_digest = Some(cassette.digest());
        Ok((cassette, session))
    }
}

/// The two files of a recording, as text.
#[derive(Debug)]
pub struct Texts {
    /// The cassette's canonical JSON (the file holds it and a newline).
    pub cassette: String,
    /// The sidecar's text, with its newline.
    pub sidecar: String,
    /// SHA-256 of the cassette's text: the report's digest.
    pub digest: String,
}

fn join<'a>(sink: &mut dyn FnMut(&[u8]), items: impl Iterator<Item = &'a String>) {
    for (i, item) in items.enumerate() {
        if i > 0 {
            sink(b",");
        }
        sink(item.as_bytes());
    }
}

/// The message of the error that says a journal holds more than its files can.
const FULL: &str = "The recording is full";

fn full(why: &str) -> ConfigError {
    ConfigError::new(FULL).because(format!("{why}; a document may have at most 8,000,000"))
}

fn call_id(call: &Value) -> Option<u64> {
    call.as_object()?
        .get("id")?
        .as_i64()
        .filter(|n| *n >= 1)
        .map(|n| n as u64)
}

fn nested(line: usize, under: &str, e: ConfigError) -> ConfigError {
    let at = match (under.is_empty(), e.path.as_deref()) {
        (true, Some(p)) => format!("line {line}: {p}"),
        (true, None) => format!("line {line}"),
        (false, Some(p)) => format!("line {line}: {under}.{p}"),
        (false, None) => format!("line {line}: {under}"),
    };
    let detail = e.detail.clone().unwrap_or_else(|| e.message.to_owned());
    ConfigError::new("Invalid MCP journal")
        .at(at)
        .because(detail)
}

/// Why a journal could not be read.
#[derive(Debug)]
pub enum JournalError {
    /// The OS refused.
    Io(io::Error),
    /// Not a journal we wrote.
    Invalid(ConfigError),
}

/// A recording as its readers see it after recovery.
#[derive(Debug)]
pub struct Recovered {
    /// The cassette.
    pub cassette: Cassette,
    /// Its sidecar.
    pub session: McpSession,
    /// One line for people when the journal was ahead of the files on disk (or they were
    /// missing): what was recovered.
    pub note: Option<String>,
    /// How far the session got.
    pub progress: Progress,
    /// The journal holds more calls than the files can (the recording passed its size
    /// limit): the files hold fewer calls than the session answered (`note` says so).
    pub short: bool,
}

/// The recording's files as they are, when both read and belong together.
fn files_of(cassette: &Path) -> Option<(Cassette, McpSession)> {
    let c = Cassette::load(cassette).ok()?;
    let s = McpSession::load(&sidecar_path(cassette)).ok()?;
    s.check_bound(&c).ok()?;
    Some((c, s))
}

/// Why a new cassette must not be written to `cassette`: an MCP recording's journal is beside
/// it (a proxy that is running or was killed), and every reader would take the journal's
/// recording for the file's. `None` when the path is free of one.
pub fn refuses_new_cassette(cassette: &Path) -> Option<String> {
    let journal = journal_path(cassette);
    journal.exists().then(|| {
        format!(
            "{} has an MCP recording's journal beside it ({}): readers would take that recording \
             for the new cassette; write the cassette elsewhere, or move the recording's files \
             ({}, {} and the journal) away first",
            cassette.display(),
            journal.display(),
            cassette.display(),
            sidecar_path(cassette).display()
        )
    })
}

/// Reads the recording at `cassette` through its journal, if it has one: `Ok(None)` when there
/// is no journal (read the files as they are). A journal is the recording's only when the
/// recording's sidecar, if one reads, is of the journal's session or of the one it began over
/// (`supersedes`): a journal from another session is refused, never taken for the files.
pub fn recover(cassette: &Path) -> Result<Option<Recovered>, JournalError> {
    let path = journal_path(cassette);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let rebuild = Rebuild::read(&path)?;
    let side = McpSession::load(&sidecar_path(cassette)).ok();
    if let Some(theirs) = side.as_ref().and_then(|s| s.session_id.as_deref())
        && rebuild.session.as_deref() != Some(theirs)
        && rebuild.supersedes.as_deref() != Some(theirs)
    {
        return Err(JournalError::Invalid(
            ConfigError::new("Invalid MCP journal").because(format!(
                "{} is the journal of session {}, but the recording's sidecar {} is of session \
                 {theirs}: a journal from another recording; move it away to read the files",
                crate::printable::quoted(&path.display().to_string()),
                rebuild.session.as_deref().unwrap_or("?"),
                crate::printable::quoted(&sidecar_path(cassette).display().to_string()),
            )),
        ));
    }
    let progress = rebuild.progress();
    let (c, s) = match rebuild.recording() {
        Ok(x) => x,
        // More than a recording can hold: the files keep the calls that fit.
        Err(e) if e.message == FULL => match files_of(cassette) {
            Some((c, s)) => {
                let note = format!(
                    "the journal {} holds {} call(s), more than a recording can ({}); the files hold the {} that fit",
                    crate::printable::quoted(&path.display().to_string()),
                    progress.calls,
                    e.detail.as_deref().unwrap_or(e.message),
                    c.report.calls.len()
                );
                return Ok(Some(Recovered {
                    cassette: c,
                    session: s,
                    note: Some(note),
                    progress,
                    short: true,
                }));
            }
            None => return Err(JournalError::Invalid(e)),
        },
        Err(e) => return Err(JournalError::Invalid(e)),
    };
    // Compare with what the compactor last wrote: silent when the files already say it all.
    let on_disk = Cassette::load(cassette).ok();
    let same = on_disk.as_ref().is_some_and(|d| d.digest() == c.digest())
        && side.as_ref().is_some_and(|d| *d == s);
    let note = (!same).then(|| {
        let had = match &on_disk {
            Some(d) => format!("the cassette on disk has {}", d.report.calls.len()),
            None => "there is no readable cassette on disk".to_owned(),
        };
        format!(
            "recovered {} call(s) from the journal {} ({had})",
            progress.calls,
            crate::printable::quoted(&path.display().to_string())
        )
    });
    Ok(Some(Recovered {
        cassette: c,
        session: s,
        note,
        progress,
        short: false,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::path::PathBuf;

    fn report_base() -> Value {
        obj! {"seed" => 1, "clock" => "RealClock", "rules" => Value::Array(vec![]),
        "capture" => true, "coverage" => obj! {}}
    }

    fn call(id: u64, status: &str) -> Value {
        crate::json::parse(&format!(
            r##"{{"id": {id}, "tool": "t", "ordinal": {id}, "key": "#{id}", "started": 0.0,
                "parent_id": null, "elapsed": 0.0, "status": "{status}", "fault": null,
                "kind": null, "executed": true, "injected": false, "arguments": {{}},
                "output": null, "error": null, "capture_error": false}}"##
        ))
        .expect("json")
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("toolstorm-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        dir.join(name)
    }

    /// The facts of a session small enough for a test.
    fn facts() -> McpSession {
        McpSession {
            max_calls: 100,
            ..McpSession::default()
        }
    }

    #[test]
    fn space_taken_ahead_is_never_seen_by_readers_and_is_given_back() {
        let cassette = scratch("ahead.json");
        let facts = facts();
        let path = journal_path(&cassette);
        let mut w =
            Writer::create(&cassette, &header("s1", None, &report_base(), &facts)).expect("w");
        let mut written = std::fs::metadata(&path).expect("journal").len();
        for i in 1..=40 {
            let line = compact(
                &obj! {"begin" => call(i, "running"), "coverage" => obj! {}, "budget_rejections" => 0},
            );
            w.append_text(&line).expect("begin");
            written += line.len() as u64 + 1;
            // Whatever was reserved, the file ends at its last whole line.
            assert_eq!(std::fs::metadata(&path).expect("journal").len(), written);
        }
        let rebuilt = Rebuild::read(&path).expect("a readable journal");
        assert_eq!(rebuilt.progress().in_flight.len(), 40);
        assert!(!rebuilt.torn());
        drop(w);
        let meta = std::fs::metadata(&path).expect("journal");
        assert_eq!(meta.len(), written);
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            // Blocks of 512 bytes: no more than the lines and a file system block or two.
            assert!(
                meta.blocks() * 512 < written + 64 * 1024,
                "{} bytes allocated for {written}",
                meta.blocks() * 512
            );
        }
    }

    #[test]
    fn a_torn_last_line_is_ignored_and_a_running_call_is_in_flight() {
        let cassette = scratch("torn.json");
        let facts = facts();
        let mut w =
            Writer::create(&cassette, &header("s1", None, &report_base(), &facts)).expect("w");
        w.append(
            &obj! {"begin" => call(1, "running"), "coverage" => obj! {}, "budget_rejections" => 0},
        )
        .expect("begin");
        w.append(
            &obj! {"begin" => call(2, "running"), "coverage" => obj! {}, "budget_rejections" => 0},
        )
        .expect("begin");
        let record = CallRecord::bare(1, Value::from(7), super::super::session::Delivered::Nothing);
        w.append(
            &obj! {"end" => call(1, "ok"), "effects" => Value::Array(vec![]),
            "record" => record.to_value(), "coverage" => obj! {}, "budget_rejections" => 0},
        )
        .expect("end");
        drop(w);
        // A half-written line, as a killed writer leaves it.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(journal_path(&cassette))
            .expect("open");
        f.write_all(b"{\"finished\": ").expect("torn");
        let r = Rebuild::read(&journal_path(&cassette)).expect("read");
        assert!(r.torn());
        let p = r.progress();
        assert_eq!(p.calls, 2);
        assert_eq!(p.in_flight, vec![2]);
        assert_eq!(p.finished, None);
        let (c, s) = r.recording().expect("valid recording");
        // The text assembled from the lines is the cassette's own canonical text.
        let t = r.texts().expect("texts");
        assert_eq!(t.digest, c.digest());
        assert_eq!(t.cassette + "\n", c.dumps());
        assert_eq!(c.report.calls.len(), 2);
        assert_eq!(s.calls.len(), 1);
        assert_eq!(s.finished, Some(false));
        assert_eq!(s.cassette_digest.as_deref(), Some(c.digest().as_str()));
        let rec = recover(&cassette).expect("ok").expect("a journal");
        assert!(
            rec.note
                .as_deref()
                .is_some_and(|n| n.starts_with("recovered 2 call(s) from the journal")),
            "{:?}",
            rec.note
        );
    }

    #[test]
    fn an_end_line_takes_what_it_leaves_out_from_its_begin_line_and_its_record() {
        let facts = facts();
        let counters = |line: Value| match line {
            Value::Object(mut o) => {
                o.push("coverage", obj! {});
                o.push("budget_rejections", 0);
                Value::Object(o)
            }
            other => other,
        };
        // A call as the recorder writes it (canonical text), with the members given, and
        // `None` for one to leave out.
        let shaped = |mut c: Value, args: Option<Value>, output: Option<Value>| {
            if let Value::Object(o) = &mut c {
                o.remove("arguments");
                o.remove("output");
                if let Some(a) = args {
                    o.push("arguments", a);
                }
                if let Some(out) = output {
                    o.push("output", out);
                }
            }
            parse(&canonical(&c)).expect("json")
        };
        let record = |call: u64, result: Option<Value>| {
            let delivered = match result {
                Some(r) => super::super::session::Delivered::Result(obj! {"result" => r}),
                None => super::super::session::Delivered::Nothing,
            };
            CallRecord::bare(call, Value::from(call as i64), delivered).to_value()
        };
        let args = obj! {"order_id" => "o-1", "note" => "é \"quoted\""};
        // Keys out of canonical order, a float and a negative zero: the output is the
        // result's canonical text.
        let result = parse(r#"{"z": -0.0, "content": [{"type": "text", "text": "ok"}], "n": 1.5}"#)
            .expect("json");
        // The same session twice: every call line whole, and as the recorder writes it.
        let journal = |name: &str, whole: bool| {
            let cassette = scratch(name);
            let mut w =
                Writer::create(&cassette, &header("s1", None, &report_base(), &facts)).expect("w");
            let or = |v: Value| whole.then_some(v);
            let lines = [
                obj! {"id" => 1, "begin" => shaped(call(1, "running"), Some(args.clone()), Some(Value::Null))},
                obj! {"id" => 2, "begin" => shaped(call(2, "running"), Some(obj! {"n" => 2}), Some(Value::Null))},
                obj! {"id" => 1, "end" => shaped(call(1, "ok"), or(args.clone()), or(result.clone())),
                "effects" => Value::Array(vec![]), "record" => record(1, Some(result.clone()))},
                // An end line with its members (an earlier session's call, or schema 1)
                // keeps them: here the output is not the result the client received.
                obj! {"id" => 2, "end" => shaped(call(2, "ok"), Some(obj! {"n" => 3}), Some(obj! {"kept" => true})),
                "effects" => Value::Array(vec![]), "record" => record(2, None)},
            ];
            for line in lines {
                w.append(&counters(line)).expect("line");
            }
            journal_path(&cassette)
        };
        let whole = Rebuild::read(&journal("whole.json", true)).expect("read");
        let path = journal("shaped.json", false);
        let read = Rebuild::read(&path).expect("read");
        let (c, _) = read.recording().expect("valid recording");
        assert_eq!(canonical(&c.report.calls[0].arguments), canonical(&args));
        assert_eq!(canonical(&c.report.calls[0].output), canonical(&result));
        assert_eq!(canonical(&c.report.calls[1].arguments), r#"{"n":3}"#);
        assert_eq!(canonical(&c.report.calls[1].output), r#"{"kept":true}"#);
        let text = read.texts().expect("texts");
        assert_eq!(text.cassette, whole.texts().expect("texts").cassette);
        // The compactor's own reading, by the lines' text, gives the same recording.
        let mut own = Rebuild::own();
        own.read_more(&path).expect("own");
        assert_eq!(own.texts().expect("texts").cassette, text.cassette);

        // What is left out and cannot be put back is named, not guessed.
        let ended = |record: Option<Value>| {
            let mut line = obj! {"id" => 1, "end" => shaped(call(1, "ok"), None, None)};
            if let (Value::Object(o), Some(r)) = (&mut line, record) {
                o.push("record", r);
            }
            counters(line)
        };
        let begun = counters(
            obj! {"id" => 1, "begin" => shaped(call(1, "running"), Some(args.clone()), Some(Value::Null))},
        );
        for (name, lines, why) in [
            (
                "orphan.json",
                vec![ended(Some(record(1, Some(result.clone()))))],
                "no begin line",
            ),
            (
                "no-result.json",
                vec![begun, ended(Some(record(1, None)))],
                "has no result",
            ),
        ] {
            let at = scratch(name);
            let mut w =
                Writer::create(&at, &header("s1", None, &report_base(), &facts)).expect("w");
            for line in &lines {
                w.append(line).expect("line");
            }
            drop(w);
            let bad_line = format!("line {}", lines.len() + 1);
            for trusted in [false, true] {
                let mut r = if trusted {
                    Rebuild::own()
                } else {
                    Rebuild::default()
                };
                match r.read_more(&journal_path(&at)) {
                    Err(JournalError::Invalid(e)) => {
                        assert_eq!(e.path.as_deref(), Some(bad_line.as_str()), "{e}");
                        assert!(e.to_string().contains(why), "{e}");
                    }
                    other => panic!("{name}: expected an invalid journal, got {other:?}"),
                }
            }
        }
    }

    #[test]
    fn a_journal_of_schema_1_is_read_and_one_of_a_later_schema_refused() {
        let facts = facts();
        for (version, readable) in [(1, true), (2, true), (3, false)] {
            let cassette = scratch(&format!("schema{version}.json"));
            let mut head = header("s1", None, &report_base(), &facts);
            if let Value::Object(o) = &mut head {
                o.remove("schema_version");
                o.push("schema_version", version);
            }
            let mut w = Writer::create(&cassette, &head).expect("w");
            w.append(&obj! {"begin" => call(1, "running"), "coverage" => obj! {},
            "budget_rejections" => 0})
                .expect("line");
            drop(w);
            let r = Rebuild::read(&journal_path(&cassette));
            assert_eq!(r.is_ok(), readable, "schema {version}: {r:?}");
        }
    }

    #[test]
    fn a_bad_line_is_named() {
        let cassette = scratch("bad.json");
        let facts = facts();
        let mut w =
            Writer::create(&cassette, &header("s1", None, &report_base(), &facts)).expect("w");
        w.append(&obj! {"gossip" => 1}).expect("line");
        match Rebuild::read(&journal_path(&cassette)) {
            Err(JournalError::Invalid(e)) => {
                assert_eq!(e.path.as_deref(), Some("line 2"), "{e}")
            }
            other => panic!("expected an invalid journal, got {other:?}"),
        }
    }

    /// A finished recording of one ended call at `cassette`, its journal gone; its session.
    fn finished(cassette: &Path) -> String {
        let facts = facts();
        let mut w =
            Writer::create(cassette, &header("s1", None, &report_base(), &facts)).expect("w");
        w.append(
            &obj! {"begin" => call(1, "running"), "coverage" => obj! {}, "budget_rejections" => 0},
        )
        .expect("begin");
        w.append(&obj! {"end" => call(1, "ok"), "effects" => Value::Array(vec![]), "coverage" => obj! {}, "budget_rejections" => 0})
            .expect("end");
        let texts = Rebuild::read(&journal_path(cassette))
            .expect("read")
            .texts()
            .expect("texts");
        std::fs::write(cassette, format!("{}\n", texts.cassette)).expect("cassette");
        std::fs::write(sidecar_path(cassette), &texts.sidecar).expect("sidecar");
        std::fs::remove_file(journal_path(cassette)).expect("rm");
        "s1".to_owned()
    }

    #[test]
    fn a_staged_journal_is_not_read_until_it_is_published() {
        let cassette = scratch("staged.json");
        let session = finished(&cassette);
        let head = header("s2", Some(&session), &report_base(), &facts());
        let w = Writer::create_staged(&cassette, &head).expect("staged");
        // Killed here: no journal where readers look; the files are the recording.
        assert!(recover(&cassette).expect("reads").is_none());
        assert_eq!(
            Cassette::load(&cassette).expect("files").report.calls.len(),
            1
        );
        // A start killed before publishing left its staged file: the next start replaces it.
        drop(w);
        let mut w = Writer::create_staged(&cassette, &head).expect("staged again");
        w.publish().expect("publish");
        // Published over the files of the session it supersedes: taken (no calls yet).
        let r = recover(&cassette).expect("reads").expect("a journal");
        assert_eq!(r.progress.calls, 0);
        assert!(!staged_path(&journal_path(&cassette)).exists());
    }

    #[test]
    fn a_journal_of_another_session_is_refused() {
        let cassette = scratch("foreign.json");
        finished(&cassette);
        for supersedes in [None, Some("s0")] {
            let head = header("s9", supersedes, &report_base(), &facts());
            Writer::create(&cassette, &head).expect("journal");
            match recover(&cassette) {
                Err(JournalError::Invalid(e)) => assert!(
                    e.to_string().contains("a journal from another recording"),
                    "{e}"
                ),
                other => panic!("expected a refusal, got {other:?}"),
            }
        }
        // One that supersedes the files' session is theirs.
        Writer::create(
            &cassette,
            &header("s9", Some("s1"), &report_base(), &facts()),
        )
        .expect("journal");
        assert!(recover(&cassette).expect("reads").is_some());
    }

    #[test]
    fn a_journal_that_cannot_be_a_recording_is_an_error_not_the_stale_files() {
        let cassette = scratch("broken.json");
        finished(&cassette);
        let mut w = Writer::create(&cassette, &header("s1", None, &report_base(), &facts()))
            .expect("journal");
        // A call that faults under a rule the report does not have: the cassette it makes
        // does not validate.
        let mut bad = call(1, "ok");
        if let Value::Object(o) = &mut bad {
            o.insert("fault", "nowhere");
        }
        w.append(&obj! {"end" => bad, "effects" => Value::Array(vec![]), "coverage" => obj! {}, "budget_rejections" => 0})
            .expect("end");
        match recover(&cassette) {
            Err(JournalError::Invalid(e)) => {
                assert!(!e.to_string().contains("full"), "{e}");
                assert!(e.to_string().contains("unknown fault rule"), "{e}");
            }
            other => panic!("expected the journal's error, got {other:?}"),
        }
    }
}
