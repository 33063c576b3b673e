//! The wire log of a recording (`incident.json` → `incident.wire.jsonl`, JSON lines): every
//! message of the session in order, as the proxy received it (`client>proxy`,
//! `server>proxy`) and as it sent it (`proxy>server`, `proxy>client`) — time since the session
//! started, size, a short digest of its bytes (a message relayed unchanged has the same digest
//! on both sides; one the proxy made or held has none to match — keyed with a random key of
//! the session's that is kept nowhere, so a digest says nothing of a secret the message held
//! and compares only within its session), method and id, and the
//! message redacted as the recording redacts bodies. A message past [`MAX_MESSAGE`] keeps
//! its size and a note; past [`MAX_LOG`] one line says the log stopped and nothing follows.
//! Lines are held and written with the relay's group commit, whole: a killed proxy leaves at
//! most a torn last line, which the reader ([`read`]) skips.

pub mod read;
#[cfg(test)]
mod tests;

use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::clock::Clock;

use crate::json::{self, Value};
use crate::redact::Redactor;

/// The most of one message the log keeps (bigger ones keep their size and a note).
pub const MAX_MESSAGE: usize = 64 * 1024;
/// The most the log takes on disk; the line that says it stopped fits in what is left.
pub const MAX_LOG: u64 = 16 * 1024 * 1024;
/// Room kept for the line that says the log stopped.
const STOP_ROOM: u64 = 256;
/// The free disk space the log leaves to the recording: below it, the log stops (the
/// recording's own files, their atomic copies and the journal need it more).
pub const DISK_KEPT: u64 = 32 * 1024 * 1024;
/// How often (bytes written) the free space is looked at.
const ROOM_CHECK_EVERY: u64 = 256 * 1024;
/// Hex digits of a message's SHA-256 kept as its digest.
const DIGEST_HEX: usize = 16;

/// Who sent a message to whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// The client's message, as the proxy received it.
    FromClient,
    /// The server's message, as the proxy received it.
    FromServer,
    /// What the proxy sent the server.
    ToServer,
    /// What the proxy sent the client.
    ToClient,
}

impl Dir {
    /// As the log writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::FromClient => "client>proxy",
            Dir::FromServer => "server>proxy",
            Dir::ToServer => "proxy>server",
            Dir::ToClient => "proxy>client",
        }
    }

    /// From the log's text.
    pub fn parse(s: &str) -> Option<Dir> {
        [
            Dir::FromClient,
            Dir::FromServer,
            Dir::ToServer,
            Dir::ToClient,
        ]
        .into_iter()
        .find(|d| d.as_str() == s)
    }

    /// Whether the proxy received it (rather than sent it).
    pub fn received(self) -> bool {
        matches!(self, Dir::FromClient | Dir::FromServer)
    }
}

/// The wire log of a recording at `cassette`.
pub fn wire_path(cassette: &Path) -> PathBuf {
    super::session::beside(cassette, "wire.jsonl")
}

/// The log being written.
pub struct WireLog {
    /// None once a write failed: the recording goes on without it.
    file: Option<std::fs::File>,
    /// The session's clock (the one the recording's calls are timed by).
    clock: Arc<dyn Clock>,
    /// The session's digest key (random, kept nowhere).
    key: [u8; 32],
    held: String,
    /// Bytes on disk and held.
    size: u64,
    /// The most the log takes ([`MAX_LOG`]; less in tests).
    max: u64,
    /// The log's size when the free disk space is next looked at.
    next_room_check: u64,
    stopped: bool,
}

impl WireLog {
    /// Starts the log beside the recording at `cassette` (emptied, or continued when the
    /// recording is appended to); times are the session's `clock`, as its calls' are.
    /// `key` keys the digests (random per session).
    pub fn create(
        cassette: &Path,
        append: bool,
        clock: Arc<dyn Clock>,
        key: [u8; 32],
    ) -> io::Result<WireLog> {
        let mut file = crate::fsread::open_own(&wire_path(cassette), false, !append)?;
        // Written at its end (what an earlier session of an appended recording left stays).
        let size = if append {
            file.seek(io::SeekFrom::End(0))?
        } else {
            0
        };
        // A torn line an earlier killed proxy left ends here, so the next is whole.
        if size > 0 {
            file.write_all(b"\n")?;
        }
        let mut log = WireLog {
            file: Some(file),
            clock,
            key,
            held: String::new(),
            size: size + u64::from(size > 0),
            max: MAX_LOG,
            next_room_check: 0,
            stopped: false,
        };
        if log.size + STOP_ROOM >= log.max {
            log.stopped = true;
        }
        Ok(log)
    }

    /// Logs one whole message (`bytes`, its line end included or not).
    pub fn message(&mut self, dir: Dir, bytes: &[u8]) {
        if self.stopped || self.file.is_none() {
            return;
        }
        let body = trim(bytes);
        let mut line = String::with_capacity(body.len().min(MAX_MESSAGE) + 160);
        self.head(dir, body.len(), &mut line);
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
        } else {
            body_fields(body, &mut line);
        }
        line.push_str("}\n");
        self.push(&line);
    }

    /// Logs a line too long to read as a message, passed on in pieces (`bytes` in all).
    pub fn long_line(&mut self, dir: Dir, bytes: u64) {
        if self.stopped || self.file.is_none() {
            return;
        }
        let mut line = String::with_capacity(160);
        self.head(dir, usize::try_from(bytes).unwrap_or(usize::MAX), &mut line);
        line.push_str(",\"note\":");
        json::write_str(
            &format!("a line of {bytes} bytes passed on in pieces: not kept"),
            &mut line,
        );
        line.push_str("}\n");
        self.push(&line);
    }

    fn head(&self, dir: Dir, bytes: usize, line: &mut String) {
        // Whole microseconds, written as milliseconds with three decimals.
        let micros = (self.clock.now().max(0.0) * 1e6) as u64;
        line.push_str("{\"ms\":");
        json::write_int(micros / 1000, line);
        line.push('.');
        let frac = micros % 1000;
        line.push(char::from(b'0' + (frac / 100) as u8));
        line.push(char::from(b'0' + (frac / 10 % 10) as u8));
        line.push(char::from(b'0' + (frac % 10) as u8));
        line.push_str(",\"dir\":\"");
        line.push_str(dir.as_str());
        line.push_str("\",\"bytes\":");
        json::write_int(bytes, line);
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
            if self.disk_low() {
                return self.stop(&format!(
                    "the disk had less than {} MB free: the wire log stopped to leave the room \
                     to the recording; later messages are not in it",
                    DISK_KEPT / (1024 * 1024)
                ));
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

    /// Whether the disk the log is on has less than [`DISK_KEPT`] free (unknown: not low).
    fn disk_low(&self) -> bool {
        #[cfg(unix)]
        if let Some(f) = &self.file
            && let Ok(st) = nix::sys::statvfs::fstatvfs(f)
        {
            // A block count is u64 here and u32 on some systems.
            #[allow(clippy::useless_conversion)]
            let free = u64::from(st.blocks_available()).saturating_mul(st.fragment_size());
            return free < DISK_KEPT;
        }
        false
    }

    /// Writes the lines held (the relay's group commit). After a failed write the log is
    /// given up; the error is for the relay's notes.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let Some(f) = self.file.as_mut() else {
            self.held.clear();
            return Ok(());
        };
        let r = f.write_all(self.held.as_bytes());
        self.held.clear();
        if self.held.capacity() > 256 * 1024 {
            self.held.shrink_to(256 * 1024);
        }
        if r.is_err() {
            self.file = None;
        }
        r
    }
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

/// The message without its line end.
fn trim(bytes: &[u8]) -> &[u8] {
    let mut end = bytes.len();
    while end > 0 && matches!(bytes[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &bytes[..end]
}
