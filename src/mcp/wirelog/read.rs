//! Reading a wire log back: a bounded read, each line an [`Entry`]; a line that is no entry
//! (a torn last line, a foreign one) is skipped and counted, never a failure. Each entry is
//! marked by what became of it ([`Fate`]), from the digests on both sides of the proxy.

use std::path::Path;

use super::{Dir, Exchange, MAX_LOG};
use crate::hashing::Set;
use crate::json::{self, Value};

/// What the reader takes at most: the log's bound and a little (an appended session's).
const MAX_READ: usize = (MAX_LOG as usize) * 2;

/// One message of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Milliseconds since the session started.
    pub ms: f64,
    pub dir: Dir,
    /// Its size on the wire.
    pub bytes: u64,
    /// The keyed digest of its bytes (none for a long line passed on in pieces).
    pub sha: Option<String>,
    pub method: Option<String>,
    /// Its id, as JSON text.
    pub id: Option<String>,
    /// The message, redacted.
    pub message: Option<Value>,
    /// Its text, redacted, when it is no JSON.
    pub raw: Option<String>,
    /// Why its body is not kept, when it is not.
    pub note: Option<String>,
    /// The HTTP status it went with, when the proxy answered with one (a fault's
    /// `http_status`), and its `Retry-After` seconds.
    pub http: Option<(u16, Option<u64>)>,
    /// An HTTP exchange rather than a message: a request of the client's and its answer's
    /// head (status and headers).
    pub exchange: Option<Exchange>,
    pub fate: Fate,
}

/// What became of a message, as the digests tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Received and passed on unchanged, or sent as it was received.
    Relayed,
    /// Sent by the proxy, no side having sent those bytes (an injected fault's answer, an
    /// error in the server's place).
    Made,
    /// Received and never passed on as it came (a lost acknowledgement, a request a fault
    /// answered, a message changed on its way).
    Held,
    /// Cannot tell (no digest).
    Unknown,
}

/// A wire log as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Wire {
    pub entries: Vec<Entry>,
    /// Lines that were no entry (a torn last line among them).
    pub skipped: usize,
    /// Why the log stopped, when it reached its bound.
    pub stopped: Option<String>,
    /// Messages the log left out because its writer was behind the relay.
    pub gaps: u64,
    /// The log is there but could not be read (a FIFO, a folder, no permission): the file and
    /// why, for the view to say instead of "no log".
    pub unreadable: Option<String>,
}

/// Reads the wire log at `path`; none when there is none, and a log without entries that
/// says why when one is there but cannot be read.
pub fn read(path: &Path) -> Option<Wire> {
    match crate::fsread::read_document_within(path, MAX_READ) {
        Ok(bytes) => Some(parse(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(Wire {
            unreadable: Some(format!("{}: {e}", path.display())),
            ..Wire::default()
        }),
    }
}

/// The entries of a log's bytes.
pub fn parse(bytes: &[u8]) -> Wire {
    let mut wire = Wire::default();
    for line in bytes.split(|b| *b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Some(v) = std::str::from_utf8(line)
            .ok()
            .and_then(|t| json::parse(t).ok())
        else {
            wire.skipped += 1;
            continue;
        };
        let Some(o) = v.as_object() else {
            wire.skipped += 1;
            continue;
        };
        if let Some(n) = o.get("gap").and_then(Value::as_i64) {
            wire.gaps += u64::try_from(n).unwrap_or(0);
            continue;
        }
        if let Some(s) = o.get("stopped").and_then(Value::as_str) {
            wire.stopped = Some(s.to_owned());
            continue;
        }
        match entry(o) {
            Some(e) => wire.entries.push(e),
            None => wire.skipped += 1,
        }
    }
    // The HTTP side's exchanges reach the file at the relay's next hand-off, after messages
    // that came later: in time order, as they happened (a stable sort keeps ties as written).
    wire.entries.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    mark(&mut wire.entries);
    wire
}

fn entry(o: &json::Object) -> Option<Entry> {
    let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
    let dir = Dir::parse(o.get("dir").and_then(Value::as_str)?)?;
    Some(Entry {
        ms: o.get("ms").and_then(Value::as_number_f64)?,
        dir,
        bytes: u64::try_from(o.get("bytes").and_then(Value::as_i64)?).ok()?,
        sha: text("digest"),
        method: text("method"),
        id: o.get("id").map(json::compact),
        message: o.get("message").cloned(),
        raw: text("raw"),
        note: text("note"),
        http: o.get("http").and_then(Value::as_object).and_then(|h| {
            let status = u16::try_from(h.get("status")?.as_i64()?).ok()?;
            let retry = h
                .get("retry_after")
                .and_then(Value::as_i64)
                .and_then(|r| u64::try_from(r).ok());
            Some((status, retry))
        }),
        exchange: o
            .get("exchange")
            .and_then(Value::as_object)
            .and_then(|x| exchange(x, dir)),
        fate: Fate::Unknown,
    })
}

/// An exchange's fields (`method`, `path`, `status`, the two header objects).
fn exchange(x: &json::Object, dir: Dir) -> Option<Exchange> {
    let headers = |key: &str| -> Vec<(String, String)> {
        x.get(key)
            .and_then(Value::as_object)
            .map(|h| {
                h.iter()
                    .filter_map(|(n, v)| Some((n.as_str()?.to_owned(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default()
    };
    Some(Exchange {
        dir,
        method: x.get("method")?.as_str()?.to_owned(),
        path: x
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        status: u16::try_from(x.get("status")?.as_i64()?).ok()?,
        request: headers("request_headers"),
        response: headers("response_headers"),
    })
}

/// Marks each entry's fate: a received message whose digest went out is relayed, one
/// whose digest never did is held; a sent one whose digest came in is relayed, one
/// whose digest never did the proxy made.
fn mark(entries: &mut [Entry]) {
    let seen: Set<(bool, String)> = entries
        .iter()
        .filter_map(|e| Some((e.dir.received(), e.sha.clone()?)))
        .collect();
    let fates: Vec<Fate> = entries
        .iter()
        .map(|e| match &e.sha {
            None => Fate::Unknown,
            Some(s) => {
                let other = seen.contains(&(!e.dir.received(), s.clone()));
                match (e.dir.received(), other) {
                    (_, true) => Fate::Relayed,
                    (true, false) => Fate::Held,
                    (false, false) => Fate::Made,
                }
            }
        })
        .collect();
    for (e, f) in entries.iter_mut().zip(fates) {
        e.fate = f;
    }
}
