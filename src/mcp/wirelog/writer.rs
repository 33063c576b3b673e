//! The wire log's own thread: turns the messages the relay hands it (bytes, direction, time)
//! into lines — digest, method and id, the message redacted — and writes them, so none of
//! that is on the relay's path. Bounded: [`MAX_MESSAGE`] per message, [`MAX_LOG`] in all, and
//! it stops while the disk has less than [`DISK_KEPT`] free.

use std::io::{self, Write};

use sha2::{Digest, Sha256};

use super::{DISK_KEPT, Dir, Exchange, MAX_LOG, MAX_MESSAGE};
use crate::json::{self, Value};
use crate::redact::Redactor;

/// Room kept for the line that says the log stopped.
const STOP_ROOM: u64 = 256;
/// How often (bytes written) the free space is looked at.
const ROOM_CHECK_EVERY: u64 = 256 * 1024;
/// Hex digits of a message's SHA-256 kept as its digest.
const DIGEST_HEX: usize = 16;

/// What the relay hands over: one message, or a long line by its size, or how many messages
/// were left out because the writer was behind.
#[derive(Debug)]
pub(super) enum Item {
    Message {
        micros: u64,
        dir: Dir,
        bytes: Vec<u8>,
    },
    Long {
        micros: u64,
        dir: Dir,
        bytes: u64,
    },
    Gap(u64),
    /// An HTTP exchange (its headers redacted already).
    Exchange {
        micros: u64,
        exchange: Box<Exchange>,
    },
}

/// The file and what has gone into it.
pub(super) struct Writer {
    pub(super) file: std::fs::File,
    pub(super) key: [u8; 32],
    /// Bytes on disk and held.
    pub(super) size: u64,
    /// The most the log takes ([`MAX_LOG`]; less in tests).
    pub(super) max: u64,
    pub(super) next_room_check: u64,
    pub(super) stopped: bool,
    pub(super) held: String,
}

impl Writer {
    pub(super) fn new(file: std::fs::File, key: [u8; 32], size: u64) -> Writer {
        Writer {
            file,
            key,
            size,
            max: MAX_LOG,
            next_room_check: 0,
            stopped: size + STOP_ROOM >= MAX_LOG,
            held: String::new(),
        }
    }

    /// Writes a batch's lines in one write.
    pub(super) fn batch(&mut self, items: Vec<Item>) -> io::Result<()> {
        for item in items {
            if self.stopped {
                break;
            }
            let line = match item {
                Item::Message { micros, dir, bytes } => self.message(micros, dir, &bytes),
                Item::Long { micros, dir, bytes } => long_line(micros, dir, bytes),
                Item::Exchange { micros, exchange } => exchange_line(micros, &exchange),
                Item::Gap(n) => {
                    let mut line = String::from("{\"gap\":");
                    json::write_int(n, &mut line);
                    line.push_str(
                        ",\"note\":\"messages not logged: the wire log fell behind the relay\"}\n",
                    );
                    line
                }
            };
            self.push(&line);
        }
        self.write_held()
    }

    /// Writes the lines held in one write.
    pub(super) fn write_held(&mut self) -> io::Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let r = self.file.write_all(self.held.as_bytes());
        self.held.clear();
        if self.held.capacity() > 256 * 1024 {
            self.held.shrink_to(256 * 1024);
        }
        r
    }

    fn message(&self, micros: u64, dir: Dir, bytes: &[u8]) -> String {
        let body = trim(bytes);
        let mut line = String::with_capacity(body.len().min(MAX_MESSAGE) + 160);
        head(micros, dir, body.len() as u64, &mut line);
        line.push_str(",\"digest\":\"");
        let mut h = Sha256::new();
        h.update(self.key);
        h.update(body);
        line.push_str(&json::hex(&h.finalize()[..DIGEST_HEX / 2]));
        line.push('"');
        if body.len() > MAX_MESSAGE {
            line.push_str(",\"note\":");
            json::write_str(
                &format!(
                    "{} bytes, past the wire log's {} KB per message: not kept",
                    body.len(),
                    MAX_MESSAGE / 1024
                ),
                &mut line,
            );
        } else if let Some(rest) = body.strip_prefix(b"\0") {
            control_fields(rest, &mut line);
        } else {
            body_fields(body, &mut line);
        }
        line.push_str("}\n");
        line
    }

    fn push(&mut self, line: &str) {
        let n = line.len() as u64;
        if self.size + n + STOP_ROOM > self.max {
            return self.stop(&format!(
                "the wire log reached its bound ({} bytes): later messages are not in it",
                self.max
            ));
        }
        if self.size >= self.next_room_check {
            self.next_room_check = self.size + ROOM_CHECK_EVERY;
            if self.stop_if_disk_low() {
                return;
            }
        }
        self.size += n;
        self.held.push_str(line);
    }

    /// One line says why the log stopped, and nothing follows it.
    fn stop(&mut self, why: &str) {
        self.stopped = true;
        self.held.push_str("{\"stopped\":");
        json::write_str(why, &mut self.held);
        self.held.push_str("}\n");
    }

    /// Stops the log (the line saying why held) when the disk it is on has less than
    /// [`DISK_KEPT`] free: whether it did.
    pub(super) fn stop_if_disk_low(&mut self) -> bool {
        if !self.disk_low() {
            return false;
        }
        self.stop(&format!(
            "the disk had less than {} MB free: the wire log stopped to leave the room to the \
             recording; later messages are not in it",
            DISK_KEPT / (1024 * 1024)
        ));
        true
    }

    /// Whether the disk the log is on has less than [`DISK_KEPT`] free (unknown: not low).
    fn disk_low(&self) -> bool {
        #[cfg(unix)]
        if let Ok(st) = nix::sys::statvfs::fstatvfs(&self.file) {
            // A block count is u64 here and u32 on some systems.
            #[allow(clippy::useless_conversion)]
            let free = u64::from(st.blocks_available()).saturating_mul(st.fragment_size());
            return free < DISK_KEPT;
        }
        false
    }
}

/// `{"ms":…,"dir":…,"bytes":…` (milliseconds with three decimals).
fn head(micros: u64, dir: Dir, bytes: u64, line: &mut String) {
    line.push_str("{\"ms\":");
    json::write_int(micros / 1000, line);
    line.push('.');
    let frac = micros % 1000;
    for d in [frac / 100, frac / 10 % 10, frac % 10] {
        line.push(char::from(b'0' + d as u8));
    }
    line.push_str(",\"dir\":\"");
    line.push_str(dir.as_str());
    line.push_str("\",\"bytes\":");
    json::write_int(bytes, line);
}

/// An HTTP exchange's line: `{"ms":…,"dir":…,"bytes":0,"exchange":{"method":…,"path":…,
/// "status":…,"request_headers":{…},"response_headers":{…}}}`.
fn exchange_line(micros: u64, x: &Exchange) -> String {
    let mut line = String::with_capacity(256);
    head(micros, x.dir, 0, &mut line);
    line.push_str(",\"exchange\":{\"method\":");
    json::write_str(&x.method, &mut line);
    line.push_str(",\"path\":");
    json::write_str(&x.path, &mut line);
    line.push_str(",\"status\":");
    json::write_int(u64::from(x.status), &mut line);
    for (key, headers) in [
        ("request_headers", &x.request),
        ("response_headers", &x.response),
    ] {
        line.push_str(",\"");
        line.push_str(key);
        line.push_str("\":{");
        for (i, (n, v)) in headers.iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            json::write_str(n, &mut line);
            line.push(':');
            json::write_str(v, &mut line);
        }
        line.push('}');
    }
    line.push_str("}}\n");
    line
}

/// A line too long to read as a message, passed on in pieces: its size and a note.
fn long_line(micros: u64, dir: Dir, bytes: u64) -> String {
    let mut line = String::with_capacity(160);
    head(micros, dir, bytes, &mut line);
    line.push_str(",\"note\":");
    json::write_str(
        &format!("a line of {bytes} bytes passed on in pieces: not kept"),
        &mut line,
    );
    line.push_str("}\n");
    line
}

/// `,"method":…,"id":…,"message":…` (or `"raw"` for text that is no JSON), redacted.
fn body_fields(body: &[u8], line: &mut String) {
    let text = String::from_utf8_lossy(body);
    match json::parse(&text) {
        Ok(v) => {
            if let Some(o) = v.as_object() {
                if let Some(m) = o.get("method").and_then(Value::as_str) {
                    line.push_str(",\"method\":");
                    json::write_str(m, line);
                }
                if let Some(id) = o.get("id") {
                    line.push_str(",\"id\":");
                    json::write_compact(&Redactor::builtin().redact(id), line);
                }
            } else if matches!(v, Value::Array(_)) {
                line.push_str(",\"method\":\"(batch)\"");
            }
            line.push_str(",\"message\":");
            json::write_compact(&Redactor::builtin().redact(&v), line);
        }
        Err(_) => {
            line.push_str(",\"raw\":");
            json::write_str(&Redactor::builtin().redact_raw(&text), line);
        }
    }
}

/// A control line the relay writes for an HTTP client (`\0status STATUS RETRY ID\tBODY`:
/// answer with an HTTP status; `\0cut ID`: cut the request's stream — the format of
/// `mcp::http::listen::control`): `,"id":…,"http":{…},"message":…` or a note.
fn control_fields(rest: &[u8], line: &mut String) {
    let text = String::from_utf8_lossy(rest);
    if let Some(id) = text.strip_prefix("cut ") {
        // The id as the JSON text it is (a string id keeps its quotes).
        line.push_str(",\"id\":");
        match json::parse(id) {
            Ok(v) => json::write_compact(&Redactor::builtin().redact(&v), line),
            Err(_) => json::write_str(id, line),
        }
        line.push_str(",\"note\":\"the HTTP stream of this request was cut: no answer\"");
        return;
    }
    let Some((head, body)) = text
        .strip_prefix("status ")
        .and_then(|t| t.split_once('\t'))
    else {
        line.push_str(",\"raw\":");
        json::write_str(&Redactor::builtin().redact_raw(&text), line);
        return;
    };
    let mut words = head.splitn(3, ' ');
    let status = words.next().and_then(|w| w.parse::<u16>().ok());
    let retry = words.next().and_then(|w| w.parse::<u64>().ok());
    line.push_str(",\"http\":{\"status\":");
    json::write_int(status.unwrap_or(0), line);
    if let Some(r) = retry {
        line.push_str(",\"retry_after\":");
        json::write_int(r, line);
    }
    line.push('}');
    body_fields(body.as_bytes(), line);
}

/// The message without its line end.
fn trim(bytes: &[u8]) -> &[u8] {
    let mut end = bytes.len();
    while end > 0 && matches!(bytes[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &bytes[..end]
}
