//! The wire log of a recording (`incident.json` → `incident.wire.jsonl`, JSON lines): every
//! message of the session in order, as the proxy received it (`client>proxy`,
//! `server>proxy`) and as it sent it (`proxy>server`, `proxy>client`) — time since the session
//! started, size, a short digest of its bytes (a message relayed unchanged has the same digest
//! on both sides; one the proxy made or held has none to match — keyed with a random key of
//! the session's that is kept nowhere, so a digest says nothing of a secret the message held
//! and compares only within its session), method and id, and the
//! message redacted as the recording redacts bodies. A message past [`MAX_MESSAGE`] keeps
//! its size and a note; past [`MAX_LOG`] one line says the log stopped and nothing follows.
//! HTTP requests have lines of their own ([`Exchange`]: method, path, status and both
//! sides' headers, redacted) — an HTTP client's to the proxy, and the proxy's to a remote
//! server — which the listener and the upstream leave in [`Exchanges`] for the relay's
//! hand-off; the reader puts every line in time order.
//! The relay hands the messages over at its group commit, at most [`HOLD`] after they pass,
//! and a thread of the log's own ([`writer`]) makes and writes their lines, whole: a killed proxy leaves at most a torn
//! last line, which the reader ([`read`]) skips. The relay never waits for it: when the
//! writer is behind by more than [`MAX_IN_FLIGHT`] bytes, a batch is left out and a line
//! says how many messages.

pub mod read;
#[cfg(test)]
mod tests;
mod writer;

use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use self::writer::{Item, Writer};
use crate::clock::Clock;

/// The most of one message the log keeps (bigger ones keep their size and a note).
pub const MAX_MESSAGE: usize = 64 * 1024;
/// The most the log takes on disk; the line that says it stopped fits in what is left.
pub const MAX_LOG: u64 = 16 * 1024 * 1024;
/// The free disk space the log leaves to the recording: below it, the log stops (the
/// recording's own files, their atomic copies and the journal need it more).
pub const DISK_KEPT: u64 = 32 * 1024 * 1024;
/// How long the relay holds messages before it hands them to the writer (a hand-off wakes
/// the writer's thread: one per message would cost a context switch each). The relay's
/// timers wake it then if nothing else does ([`WireLog::due`]).
pub const HOLD: Duration = Duration::from_millis(20);
/// Or as soon as it holds this many messages, or bytes.
const HOLD_MESSAGES: usize = 64;
const HOLD_BYTES: usize = 256 * 1024;

/// The most the relay has handed over and the writer not yet written.
pub const MAX_IN_FLIGHT: usize = 8 * 1024 * 1024;

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

/// One HTTP exchange, for the log: a request's method, path and headers, and its answer's
/// status and headers, as the recording keeps headers (secrets redacted). The listener logs
/// each request of its clients (`client>proxy`), the upstream each of its own to a remote
/// server (`proxy>server`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub dir: Dir,
    pub method: String,
    pub path: String,
    pub status: u16,
    pub request: Vec<(String, String)>,
    pub response: Vec<(String, String)>,
}

/// Where the HTTP side puts its exchanges: the relay's log takes them at its next hand-off,
/// so they cost the HTTP side no write and no wake-up. Nothing is kept until a log is
/// attached ([`WireLog::take_exchanges`]), and at most [`EXCHANGES_HELD`] wait.
#[derive(Clone, Default)]
pub struct Exchanges(Arc<Mutex<ExchangesHeld>>);

#[derive(Default)]
struct ExchangesHeld {
    /// The session's clock, once a log is attached.
    clock: Option<Arc<dyn Clock>>,
    items: Vec<Item>,
    oldest: Option<Instant>,
    left_out: u64,
}

/// Exchanges held for the relay's log at most; past it they are counted as left out.
pub(crate) const EXCHANGES_HELD: usize = 1024;

impl Exchanges {
    /// Whether a log takes exchanges (when not, the HTTP side need not gather them).
    pub fn active(&self) -> bool {
        self.0.lock().is_ok_and(|h| h.clock.is_some())
    }

    /// Logs `x`, timed now by the session's clock.
    pub fn log(&self, x: Exchange) {
        let Ok(mut h) = self.0.lock() else {
            return;
        };
        let Some(clock) = &h.clock else {
            return;
        };
        let micros = (clock.now().max(0.0) * 1e6) as u64;
        if h.items.len() >= EXCHANGES_HELD {
            h.left_out += 1;
            return;
        }
        h.items.push(Item::Exchange {
            micros,
            exchange: Box::new(x),
        });
        if h.oldest.is_none() {
            h.oldest = Some(Instant::now());
        }
    }
}

/// The wire log of a recording at `cassette`.
pub fn wire_path(cassette: &Path) -> PathBuf {
    super::session::beside(cassette, "wire.jsonl")
}

/// The log being written: the relay's side (its lines are made and written by [`writer`]).
pub struct WireLog {
    /// The session's clock (the one the recording's calls are timed by).
    clock: Arc<dyn Clock>,
    batch: Vec<Item>,
    batch_bytes: usize,
    /// Bytes handed to the writer and not yet written.
    in_flight: Arc<AtomicUsize>,
    tx: Option<SyncSender<(Vec<Item>, usize)>>,
    thread: Option<JoinHandle<()>>,
    /// The writer stopped (its bound, a full disk, a failed write): nothing more is taken.
    stopped: Arc<AtomicBool>,
    /// Why a write failed, once it did; said once.
    trouble: Arc<Mutex<Option<String>>>,
    told: bool,
    /// Messages left out since the last batch handed over.
    left_out: u64,
    /// When the oldest message held came.
    oldest: Option<Instant>,
    /// The HTTP side's exchanges, taken at each hand-off.
    exchanges: Option<Exchanges>,
}

impl WireLog {
    /// Starts the log beside the recording at `cassette` (emptied, or continued when the
    /// recording is appended to) and its writer; times are the session's `clock`, as its
    /// calls' are. `key` keys the digests (random per session).
    pub fn create(
        cassette: &Path,
        append: bool,
        clock: Arc<dyn Clock>,
        key: [u8; 32],
    ) -> io::Result<WireLog> {
        WireLog::start(cassette, append, clock, key, MAX_LOG)
    }

    fn start(
        cassette: &Path,
        append: bool,
        clock: Arc<dyn Clock>,
        key: [u8; 32],
        max: u64,
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
        let mut writer = Writer::new(file, key, size + u64::from(size > 0));
        writer.max = max;
        // A disk already short of room is seen now, while the line saying so still fits
        // (the recording beside it may fill the disk before the first message comes).
        if !writer.stopped && writer.stop_if_disk_low() {
            writer.write_held()?;
        }
        let (tx, rx) = sync_channel(256);
        let in_flight = Arc::new(AtomicUsize::new(0));
        let stopped = Arc::new(AtomicBool::new(writer.stopped));
        let trouble = Arc::new(Mutex::new(None));
        let thread = {
            let (in_flight, stopped, trouble) = (
                Arc::clone(&in_flight),
                Arc::clone(&stopped),
                Arc::clone(&trouble),
            );
            std::thread::Builder::new()
                .name("wire-log".into())
                .spawn(move || write_all(writer, &rx, &in_flight, &stopped, &trouble))?
        };
        Ok(WireLog {
            clock,
            batch: Vec::new(),
            batch_bytes: 0,
            in_flight,
            tx: Some(tx),
            thread: Some(thread),
            stopped,
            trouble,
            told: false,
            left_out: 0,
            oldest: None,
            exchanges: None,
        })
    }

    /// [`WireLog::create`] with a smaller bound (tests).
    #[cfg(test)]
    fn bounded(cassette: &Path, max: u64) -> io::Result<WireLog> {
        let clock = Arc::new(crate::clock::VirtualClock::default());
        WireLog::start(cassette, false, clock, [3; 32], max)
    }

    fn micros(&self) -> u64 {
        (self.clock.now().max(0.0) * 1e6) as u64
    }

    /// Logs one whole message (`bytes`, its line end included or not).
    pub fn message(&mut self, dir: Dir, bytes: &[u8]) {
        if self.stopped.load(Ordering::Relaxed) {
            return;
        }
        let micros = self.micros();
        self.hold();
        self.batch_bytes += bytes.len();
        self.batch.push(Item::Message {
            micros,
            dir,
            bytes: bytes.to_vec(),
        });
    }

    /// Logs a line too long to read as a message, passed on in pieces (`bytes` in all).
    pub fn long_line(&mut self, dir: Dir, bytes: u64) {
        if self.stopped.load(Ordering::Relaxed) {
            return;
        }
        let micros = self.micros();
        self.hold();
        self.batch.push(Item::Long { micros, dir, bytes });
    }

    /// Takes the HTTP side's exchanges into the log from now on, timed by its clock.
    pub fn take_exchanges(&mut self, exchanges: Exchanges) {
        if let Ok(mut h) = exchanges.0.lock() {
            h.clock = Some(Arc::clone(&self.clock));
        }
        self.exchanges = Some(exchanges);
    }

    /// Moves the exchanges waiting into what the log holds.
    fn gather_exchanges(&mut self) {
        let Some(x) = &self.exchanges else {
            return;
        };
        let Ok(mut h) = x.0.lock() else {
            return;
        };
        if let Some(t) = h.oldest.take() {
            self.oldest = Some(self.oldest.map_or(t, |o| o.min(t)));
        }
        self.left_out += std::mem::take(&mut h.left_out);
        self.batch.append(&mut h.items);
    }

    fn hold(&mut self) {
        if self.oldest.is_none() {
            self.oldest = Some(Instant::now());
        }
    }

    /// When the messages held are due to go to the writer, if any are held (the HTTP side's
    /// exchanges among them).
    pub fn due(&self) -> Option<Instant> {
        let waiting = self
            .exchanges
            .as_ref()
            .and_then(|x| x.0.lock().ok().and_then(|h| h.oldest));
        match (self.oldest, waiting) {
            (Some(a), Some(b)) => Some(a.min(b) + HOLD),
            (a, b) => a.or(b).map(|t| t + HOLD),
        }
    }

    /// Hands the messages held to the writer when they are due — [`HOLD`] after the oldest,
    /// or [`HOLD_MESSAGES`] or [`HOLD_BYTES`] of them — (at the relay's group commit and its
    /// timers; it never waits). Why the log could not be written, the first time the relay
    /// asks after it failed.
    pub fn flush(&mut self) -> Option<String> {
        self.hand_off(false)
    }

    /// [`WireLog::flush`]; `now`: whether or not they are due.
    fn hand_off(&mut self, now: bool) -> Option<String> {
        if !self.stopped.load(Ordering::Relaxed) {
            self.gather_exchanges();
        }
        let due = now
            || self.oldest.is_some_and(|t| t.elapsed() >= HOLD)
            || self.batch.len() >= HOLD_MESSAGES
            || self.batch_bytes >= HOLD_BYTES;
        if due && !self.batch.is_empty() {
            self.oldest = None;
            let mut batch = std::mem::take(&mut self.batch);
            let bytes = std::mem::take(&mut self.batch_bytes);
            if self.in_flight.load(Ordering::Relaxed) + bytes > MAX_IN_FLIGHT {
                self.left_out += batch.len() as u64;
            } else if let Some(tx) = &self.tx {
                let had_gap = self.left_out > 0;
                if had_gap {
                    batch.insert(0, Item::Gap(self.left_out));
                }
                let n = batch.len() as u64 - u64::from(had_gap);
                self.in_flight.fetch_add(bytes, Ordering::Relaxed);
                match tx.try_send((batch, bytes)) {
                    Ok(()) => self.left_out = 0,
                    // The writer is behind (or gone): this batch is left out too.
                    Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                        self.in_flight.fetch_sub(bytes, Ordering::Relaxed);
                        self.left_out += n;
                    }
                }
            }
        }
        if self.told {
            return None;
        }
        let why = self.trouble.lock().ok().and_then(|t| t.clone());
        self.told = why.is_some();
        why
    }

    /// Writes what is held and waits for the writer to finish (the session's end).
    pub fn finish(mut self) -> Option<String> {
        self.close();
        if self.told {
            return None;
        }
        self.trouble.lock().ok().and_then(|t| t.clone())
    }

    fn close(&mut self) {
        if !self.stopped.load(Ordering::Relaxed) {
            self.gather_exchanges();
        }
        if let Some(tx) = self.tx.take() {
            if !self.batch.is_empty() {
                let mut batch = std::mem::take(&mut self.batch);
                if self.left_out > 0 {
                    batch.insert(0, Item::Gap(self.left_out));
                }
                let _ = tx.send((batch, 0));
            }
            drop(tx);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for WireLog {
    /// The writer finishes what it was given (a session that ends without
    /// [`WireLog::finish`] still leaves whole lines).
    fn drop(&mut self) {
        self.close();
    }
}

/// The writer's loop: each batch written in one write, until the relay's side is gone or a
/// write fails.
fn write_all(
    mut writer: Writer,
    rx: &Receiver<(Vec<Item>, usize)>,
    in_flight: &AtomicUsize,
    stopped: &AtomicBool,
    trouble: &Mutex<Option<String>>,
) {
    for (items, bytes) in rx {
        let r = writer.batch(items);
        in_flight.fetch_sub(bytes, Ordering::Relaxed);
        if writer.stopped {
            stopped.store(true, Ordering::Relaxed);
        }
        if let Err(e) = r {
            stopped.store(true, Ordering::Relaxed);
            if let Ok(mut t) = trouble.lock() {
                *t = Some(e.to_string());
            }
            return;
        }
    }
}
