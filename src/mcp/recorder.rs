//! Keeps the recording on disk while a session runs, write-ahead: every call's begin and end
//! is a journal line ([`super::journal`]), held until the relay's next [`Recorder::flush`],
//! which writes the lines of all the messages in hand in one write before any of them is
//! relayed (a group commit: the only per-batch write besides the relay's own, on the relay's
//! thread). A compactor thread turns the journal into the cassette (the engine's report, a
//! ToolStorm schema-v1 file any ToolStorm loads) and its sidecar, each replaced atomically, the sidecar first; off the relay's path, and on a
//! long session put off until twenty times its own cost has passed (at most two seconds). At the
//! end the compactor writes both files a last time and the journal, no longer needed, is
//! removed; killed before that, the journal stays and every reader recovers from it.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::journal::{self, Rebuild, Writer};
use super::session::{CallRecord, McpSession, journal_path, sidecar_path};
use crate::json::Value;
use crate::obj;
use crate::storm::{OutputOnRecord, Storm};

/// The longest a completed call waits to reach the cassette (it is in the journal at once).
const MAX_DELAY: Duration = Duration::from_secs(2);
/// A compaction waits this many times the last one's cost: compacting takes at most a
/// twentieth of a core from the relay.
const PACE: u32 = 20;
/// And at least this long after the last one: the journal is the record, the files follow.
const MIN_GAP: Duration = Duration::from_millis(500);

/// What the last compaction left on disk.
#[derive(Clone, Debug, Default)]
pub struct Compacted {
    /// Calls in the cassette.
    pub calls: usize,
    /// Faults injected in it.
    pub faults: u64,
    /// Duplicate effects in it.
    pub duplicates: usize,
    /// Why the recording stopped growing (it no longer fits a valid cassette), if it did.
    pub full: Option<String>,
    /// The last write that failed, if one did.
    pub error: Option<String>,
}

/// The journal and its compactor.
#[derive(Debug)]
pub struct Recorder {
    journal: Writer,
    cassette: PathBuf,
    wake: Option<SyncSender<()>>,
    /// Set when the journal has lines the compactor has not been woken for: a call that ends
    /// while it is already due to run wakes nobody (a wake-up is a context switch, and one per
    /// call would take the relay's core).
    dirty: Arc<AtomicBool>,
    full: Arc<AtomicBool>,
    /// Why the compactor could not go on, when it could not.
    trouble: Arc<std::sync::Mutex<Option<String>>>,
    thread: Option<JoinHandle<Compacted>>,
    effects_seen: usize,
    /// The bytes the ended calls take in the cassette and in the sidecar (their text, as
    /// the compactor assembles it): the recording stops taking calls before a file would be
    /// too large, so the files always hold every call the journal does.
    cassette_bytes: usize,
    sidecar_bytes: usize,
    /// The journal says the client closed the session.
    client_closed: bool,
    /// The last begin line without its arguments: about what each call in flight adds to
    /// the journal when it ends (its counters; its output is bounded apart).
    end_line_bytes: usize,
    /// The calls whose begin lines are held for the next write, and those whose begin lines
    /// a failed write lost (not yet taken by [`Recorder::take_lost_begins`]).
    begins_held: Vec<u64>,
    begins_lost: Vec<u64>,
    /// The recording's lock, held for the whole session: another proxy recording to the same
    /// file waits its turn (a client that starts a server per call may run several at once).
    /// The last field, so it is let go last, after the journal's writer and the compactor.
    _lock: Lock,
}

/// The most one call can add to a file: its arguments and output (each captured up to
/// 128,000 bytes), its answer in the sidecar, and their envelopes.
const MAX_CALL_BYTES: usize = 420_000;

/// The bytes a file may take, with room left for what every recording has once (its
/// header, its counters).
const ROOM: usize = crate::json::MAX_DOCUMENT_BYTES - 64 * 1024;

/// The counters every call line carries (`,"coverage":{...},"budget_rejections":N`), so the
/// last line read gives the report's.
fn counters_text(storm: &Storm, line: &mut String) {
    line.push_str(",\"coverage\":");
    let rejections = storm.write_counters(line);
    line.push_str(",\"budget_rejections\":");
    crate::json::write_int(rejections, line);
}

/// Starts a call line: `{"id":N,"begin":` (or `"end":`).
fn call_line(id: u64, kind: &str, line: &mut String) {
    line.push_str("{\"id\":");
    crate::json::write_int(id, line);
    line.push_str(",\"");
    line.push_str(kind);
    line.push_str("\":");
}

impl Recorder {
    /// Starts the journal of the recording at `cassette` with the run's fixed facts — and,
    /// when this session continues an earlier one, that session's calls (`prior`: its records,
    /// the engine already resumed from its report) — writes the recording's first state so it
    /// can be opened at once, and starts the compactor. `lock` is the recording's lock
    /// ([`lock`]), held until the end.
    pub fn start(
        cassette: &Path,
        lock: Lock,
        session_id: &str,
        storm: &Storm,
        facts: &McpSession,
        prior: Option<&McpSession>,
    ) -> io::Result<Recorder> {
        let report = storm.report().to_value();
        let field = |k: &str| {
            report
                .as_object()
                .and_then(|o| o.get(k))
                .cloned()
                .unwrap_or(Value::Null)
        };
        let base = obj! {
            "seed" => field("seed"),
            "clock" => field("clock"),
            "rules" => field("rules"),
            "capture" => field("capture"),
            "coverage" => field("coverage"),
        };
        // The session of the files on disk now: until the first compaction they are still
        // theirs, and readers must know the journal is meant to take their place.
        let supersedes = McpSession::load(&sidecar_path(cassette))
            .ok()
            .and_then(|s| s.session_id);
        let header = journal::header(session_id, supersedes.as_deref(), &base, facts);
        // Staged: the earlier session's calls are all in it before it replaces any journal
        // there (a kill meanwhile leaves the recording as it was).
        let mut journal = Writer::create_staged(cassette, &header)?;
        let mut effects_seen = 0;
        let (mut cassette_bytes, mut sidecar_bytes) = (0, 0);
        if let Some(prior) = prior {
            let before = storm.report();
            effects_seen = before.effects.len();
            let effects = before.effects.iter().map(|e| e.to_value()).collect();
            journal.append(&obj! {"prior_effects" => Value::Array(effects)})?;
            for call in &before.calls {
                // The earlier session's calls, whole (their arguments too).
                let record = prior.call(call.id);
                let kind = if record.is_some() { "end" } else { "begin" };
                let mut line = String::with_capacity(1024);
                call_line(call.id, kind, &mut line);
                call.write_canonical(&mut line);
                cassette_bytes += line.len() + 256;
                if let Some(record) = record {
                    line.push_str(",\"effects\":[],\"record\":");
                    let before = line.len();
                    record.write_compact(&mut line);
                    sidecar_bytes += line.len() - before + 1;
                }
                counters_text(storm, &mut line);
                line.push('}');
                journal.append_text(&line)?;
            }
        }
        journal.publish()?;
        let mut rebuild = Rebuild::own();
        let first = compact(&mut rebuild, cassette, &mut None);
        if let Some(e) = first.error {
            return Err(io::Error::other(e));
        }
        let (tx, rx) = sync_channel(1);
        let full = Arc::new(AtomicBool::new(false));
        let dirty = Arc::new(AtomicBool::new(false));
        let trouble = Arc::new(std::sync::Mutex::new(None));
        let thread = {
            let cassette = cassette.to_path_buf();
            let full = Arc::clone(&full);
            let dirty = Arc::clone(&dirty);
            let trouble = Arc::clone(&trouble);
            std::thread::Builder::new()
                .name("toolstorm-compactor".into())
                .spawn(move || compactor(rx, rebuild, &cassette, &full, &dirty, &trouble))?
        };
        Ok(Recorder {
            _lock: lock,
            journal,
            cassette: cassette.to_path_buf(),
            wake: Some(tx),
            dirty,
            full,
            trouble,
            thread: Some(thread),
            effects_seen,
            cassette_bytes,
            sidecar_bytes,
            client_closed: false,
            end_line_bytes: 0,
            begins_held: Vec::new(),
            begins_lost: Vec::new(),
        })
    }

    /// The cassette's path.
    pub fn path(&self) -> &Path {
        &self.cassette
    }

    /// Whether the recording stopped growing: the compactor could not go on, or one more
    /// call (at its largest) beside the `in_flight` ones (at a typical size) might not fit a
    /// file. Many large calls in flight at once can still overflow the estimate: then the
    /// files keep the last compaction that fit, and readers say so.
    pub fn full(&self, in_flight: usize) -> bool {
        let need = MAX_CALL_BYTES + 2048 * in_flight;
        self.full.load(Ordering::Relaxed)
            || self.cassette_bytes + need > ROOM
            || self.sidecar_bytes + need > ROOM
            || self.journal.written()
                + (2 * MAX_CALL_BYTES + in_flight * (self.end_line_bytes + 2048)) as u64
                > super::journal::MAX_JOURNAL_BYTES
    }

    /// Whether the files have room for the answer of a call that ends now, beside the
    /// `in_flight` calls still to end (at a typical size): `sizes` gives what it takes (its
    /// output in the cassette, its record in the sidecar), asked only near the limits. Calls
    /// in flight are taken while there is room for one more at its largest, but their answers
    /// come later: those the files have no room for are recorded without them.
    pub fn has_room(&self, in_flight: usize, sizes: impl FnOnce() -> (usize, usize)) -> bool {
        let reserve = 2048 * (in_flight + 1);
        if self.cassette_bytes.max(self.sidecar_bytes) + MAX_CALL_BYTES + reserve <= ROOM {
            return true;
        }
        let (cassette, sidecar) = sizes();
        self.cassette_bytes + cassette + reserve <= ROOM
            && self.sidecar_bytes + sidecar + reserve <= ROOM
    }

    /// Why the recording's files could not follow the journal, if they could not (then
    /// [`Recorder::full`] is true).
    pub fn trouble(&self) -> Option<String> {
        self.trouble.lock().ok().and_then(|t| t.clone())
    }

    fn poke(&self) {
        if self.dirty.swap(true, Ordering::AcqRel) {
            return; // the compactor is already due to run
        }
        if let Some(tx) = &self.wake {
            match tx.try_send(()) {
                Ok(()) | Err(TrySendError::Full(())) => {}
                Err(TrySendError::Disconnected(())) => {}
            }
        }
    }

    /// Call `id` has begun: held for the journal, which [`Recorder::flush`] writes before
    /// its request goes anywhere. `executing`: its request is on its way to the server (now,
    /// or once its latency has passed), so the line has it as executed: a proxy killed while
    /// the server has it leaves a call that may have run (a lost acknowledgement's call is
    /// executed by definition). A call whose request never leaves gets an end line saying so.
    pub fn begin(&mut self, storm: &Storm, id: u64, executing: bool) {
        // Written in place, among the lines held.
        let mut counted = 0;
        let mut held = false;
        let before = self.journal.written();
        self.journal.hold_with(|line| {
            call_line(id, "begin", line);
            let Some(arguments) = storm.write_begun_call(id, executing, line) else {
                return false;
            };
            counted = arguments;
            counters_text(storm, line);
            line.push('}');
            held = true;
            true
        });
        if held {
            self.begins_held.push(id);
        }
        // The arguments are counted here, once: the end line does not repeat them.
        self.cassette_bytes += counted;
        // Its counters come again in its end line: what a call in flight will add.
        let line = self.journal.written().saturating_sub(before) as usize;
        self.end_line_bytes = line.saturating_sub(counted);
    }

    /// Call `id` has ended (its effects recorded, its outcome final): held for the journal,
    /// which [`Recorder::flush`] writes before its answer is relayed. The line has the call
    /// without its arguments (its begin line has them, unless a journal write has failed),
    /// and without its output when that is the result the record's answer holds; readers take
    /// them from there. `output_in_answer`: the engine was given no output for the call, as
    /// the answer's result is its output.
    pub fn end(&mut self, storm: &Storm, id: u64, record: &CallRecord, output_in_answer: bool) {
        let (mut cassette, mut sidecar) = (0, 0);
        let mut effects_seen = self.effects_seen;
        // The output the client received as the answer's result is on record in the
        // answer: the call's line leaves it out, and readers take it from there.
        let result = record.delivered.result();
        // The relay says so only of an answer that is `{"result": output}`.
        debug_assert!(
            result.is_some() || !output_in_answer,
            "no result holds call #{id}'s output"
        );
        let result = match result {
            Some(_) if output_in_answer => OutputOnRecord::Yes,
            Some(r) => OutputOnRecord::IfIdentical(r),
            None => OutputOnRecord::No,
        };
        // Its begin line is in the journal: after a failed write no end line is taken.
        self.journal.hold_with(|line| {
            call_line(id, "end", line);
            let start = line.len();
            let Some((_, output_left_out)) = storm.write_call_unless(id, false, result, line)
            else {
                return false;
            };
            cassette += line.len() - start + 1;
            let effects = storm.effects_from(effects_seen);
            effects_seen += effects.len();
            line.push_str(",\"effects\":[");
            for (i, e) in effects.iter().enumerate() {
                if i > 0 {
                    line.push(',');
                }
                let before = line.len();
                e.write_canonical(line);
                cassette += line.len() - before + 1;
            }
            line.push_str("],\"record\":");
            let before = line.len();
            let response = record.write_compact(line);
            sidecar += line.len() - before + 1;
            if output_left_out {
                // The output's text is the answer's result: `{"result":` and `}` less.
                cassette += response.saturating_sub(11) + 10;
            }
            counters_text(storm, line);
            line.push('}');
            true
        });
        self.effects_seen = effects_seen;
        self.cassette_bytes += cassette;
        self.sidecar_bytes += sidecar;
        // The engine need not keep what the journal has: a long session costs the journal,
        // not memory.
        storm.release_payloads(id);
    }

    /// The session learned something (the handshake, the tool list): held like a call's end.
    /// After a failed write (when no call line is taken any more) it is written at once, by
    /// itself: facts count no call, and the recording's stop must be on record.
    pub fn facts(&mut self, facts: &McpSession) -> io::Result<()> {
        let line = crate::json::compact(&obj! {"facts" => facts.to_value()});
        if self.journal.lost_lines() {
            let r = self.journal.append_alone(&line);
            self.poke();
            return r;
        }
        self.journal.hold(&line);
        Ok(())
    }

    /// The client closed the session: written at once (with the lines held), so a proxy
    /// killed while the server exits still leaves a session the client ended.
    pub fn client_closed(&mut self) -> io::Result<()> {
        if std::mem::replace(&mut self.client_closed, true) {
            return Ok(());
        }
        let line = "{\"client_closed\":true}";
        if self.journal.lost_lines() {
            // It counts no call: it may go even after a failed write.
            let r = self.journal.append_alone(line);
            self.poke();
            return r;
        }
        self.journal.hold(line);
        self.flush()
    }

    /// Writes the lines held, in one write, and has the compactor follow. The relay calls
    /// this before it relays anything the lines describe.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.journal.holds() {
            return Ok(());
        }
        let r = self.journal.flush();
        if r.is_err() {
            self.begins_lost.append(&mut self.begins_held);
        }
        self.begins_held.clear();
        self.poke();
        r
    }

    /// The calls whose begin lines failed writes lost since this was last asked: they are
    /// not on record, so none of them may reach the server or be answered as recorded.
    pub fn take_lost_begins(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.begins_lost)
    }

    /// The session is over: the journal says so, the compactor writes the files a last time,
    /// and the journal goes when they hold everything it does.
    pub fn finish(mut self, code: i32, storm: &Storm) -> Compacted {
        let mut line = format!("{{\"finished\":{code}");
        counters_text(storm, &mut line);
        line.push('}');
        let ended = self.journal.append_text(&line);
        drop(self.wake.take());
        let done = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        if ended.is_ok() && done.error.is_none() && done.full.is_none() {
            let _ = std::fs::remove_file(journal_path(&self.cassette));
        }
        // The lock file goes as the recorder does (`Lock`'s drop), while still held.
        done
    }
}

/// A recording's lock, held: its file is removed when it is let go — at the session's end,
/// and on every way out of a start that failed after taking it (an address refused, a
/// server that cannot start), so no `*.mcp.lock` is left beside a recording. It goes while
/// still held: a session waiting on it finds, once it holds it, that the path names no file
/// or another one, and takes the lock anew ([`lock`]), so no two sessions ever hold the
/// recording at once. A file the path no longer names (another session's) is left alone.
#[derive(Debug)]
pub struct Lock {
    file: std::fs::File,
    path: PathBuf,
}

impl Drop for Lock {
    fn drop(&mut self) {
        if still_named(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The lock file of the recording at `cassette`.
fn lock_path(cassette: &Path) -> std::path::PathBuf {
    journal_path(cassette).with_extension("lock")
}

/// Whether a proxy is recording to `cassette` now: it holds the recording's lock. Asked with a
/// shared lock taken and let go at once (a proxy starting at that moment waits a moment);
/// `false` when there is no lock file or it cannot be read.
pub fn is_live(cassette: &Path) -> bool {
    let Ok(file) = crate::fsread::open_regular(&lock_path(cassette)) else {
        return false;
    };
    matches!(
        file.try_lock_shared(),
        Err(std::fs::TryLockError::WouldBlock)
    )
}

/// Whether `path` still names the open `file`.
fn still_named(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Takes the lock of the recording at `cassette` (`incident.mcp.lock`), waiting while another
/// session holds it; `waiting` is told once when it has to wait.
/// `interrupted` is asked while it waits; when it says so, the wait ends with an
/// [`io::ErrorKind::Interrupted`] error.
pub fn lock(
    cassette: &Path,
    waiting: &mut dyn FnMut(),
    interrupted: &mut dyn FnMut() -> bool,
) -> io::Result<Lock> {
    let path = lock_path(cassette);
    let open = || {
        crate::fsread::open_own(&path, true, false)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    };
    let mut file = open()?;
    let mut told = false;
    let mut tries = 0;
    loop {
        tries += 1;
        match file.try_lock() {
            // The session before may have removed the file as it ended (holding it): a lock
            // on a file the path no longer names is no lock; take the new one.
            Ok(()) if still_named(&file, &path) => return Ok(Lock { file, path }),
            Ok(()) => file = open()?,
            Err(std::fs::TryLockError::WouldBlock) => {
                // A reader asking whether the session is live holds it for a moment: only a
                // lock still held after a wait is another session's.
                if !told && tries > 1 {
                    waiting();
                    told = true;
                }
                if interrupted() {
                    return Err(io::Error::new(
                        io::ErrorKind::Interrupted,
                        "interrupted while waiting for the recording's lock",
                    ));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// The compactor's loop: wait to be woken, keep to the pace, compact; a last time at the end.
fn compactor(
    rx: Receiver<()>,
    mut rebuild: Rebuild,
    cassette: &Path,
    full: &AtomicBool,
    dirty: &AtomicBool,
    trouble: &std::sync::Mutex<Option<String>>,
) -> Compacted {
    let mut last_digest = None;
    let mut done = Compacted::default();
    let mut pace: Option<(Instant, Duration)> = None;
    let mut open = true;
    while open {
        if rx.recv().is_err() {
            break;
        }
        if let Some((when, cost)) = pace {
            // Keep to the pace: more calls ending meanwhile wait for the same compaction (only
            // the session's end cuts the wait short).
            let due = when + (cost * PACE).clamp(MIN_GAP, MAX_DELAY);
            while open {
                let left = due.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                match rx.recv_timeout(left) {
                    Ok(()) => {}
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => open = false,
                }
            }
        }
        while rx.try_recv().is_ok() {}
        // Calls that end from here on are not in this compaction: they wake the next one.
        dirty.store(false, Ordering::Release);
        if done.full.is_some() {
            continue;
        }
        let start = Instant::now();
        done = compact(&mut rebuild, cassette, &mut last_digest);
        pace = Some((Instant::now(), start.elapsed()));
        let why = match (&done.full, &done.error) {
            (Some(f), _) => Some(format!("the recording is full ({f})")),
            (None, Some(e)) => Some(format!("the recording's files could not be written ({e})")),
            (None, None) => None,
        };
        if let Some(why) = why {
            // The journal cannot become a recording any more (too large to read, or the
            // files cannot be written): the relay stops recording and says so.
            if let Ok(mut t) = trouble.lock() {
                *t = Some(why);
            }
            full.store(true, Ordering::Release);
        }
    }
    if done.full.is_none() {
        done = compact(&mut rebuild, cassette, &mut last_digest);
    }
    done
}

/// Reads what the journal gained and writes the recording it now describes: text assembled
/// from the journal's lines, sidecar first, each file replaced atomically.
fn compact(rebuild: &mut Rebuild, cassette: &Path, last: &mut Option<String>) -> Compacted {
    let mut out = Compacted::default();
    if let Err(e) = rebuild.read_more(&journal_path(cassette)) {
        out.error = Some(match e {
            journal::JournalError::Io(e) => e.to_string(),
            journal::JournalError::Invalid(c) => c.to_string(),
        });
        return out;
    }
    let (digest, _, _) = match rebuild.measure() {
        Ok(m) => m,
        Err(e) => {
            out.full = Some(e.to_string());
            return out;
        }
    };
    out.calls = rebuild.progress().calls;
    (out.faults, out.duplicates) = rebuild.counts();
    let mut side_hash = <sha2::Sha256 as sha2::Digest>::new();
    let _ = rebuild.emit_sidecar(&digest, &mut |b| sha2::Digest::update(&mut side_hash, b));
    let side_digest = crate::json::hex(&sha2::Digest::finalize(side_hash));
    let stamp = format!("{digest}{side_digest}");
    if last.as_deref() == Some(stamp.as_str()) {
        return out;
    }
    // Streamed from the journal's text into each file: no second copy in memory.
    let stream = |file: &mut std::fs::File, cassette_file: bool| -> io::Result<()> {
        let mut w = io::BufWriter::with_capacity(256 * 1024, file);
        let mut failed = None;
        let mut sink = |b: &[u8]| {
            if failed.is_none()
                && let Err(e) = io::Write::write_all(&mut w, b)
            {
                failed = Some(e);
            }
        };
        let emitted = if cassette_file {
            rebuild.emit_cassette(&mut sink).map(|()| sink(b"\n"))
        } else {
            rebuild.emit_sidecar(&digest, &mut sink)
        };
        if let Some(e) = failed {
            return Err(e);
        }
        emitted.map_err(io::Error::other)?;
        io::Write::flush(&mut w)
    };
    let written = crate::atomic::write_own_with(&sidecar_path(cassette), |f| stream(f, false))
        .and_then(|()| crate::atomic::write_with(cassette, |f| stream(f, true)));
    match written {
        Ok(()) => *last = Some(stamp),
        Err(e) => {
            out.error = Some(format!(
                "{}: {}",
                crate::fsread::python_class(&e),
                crate::fsread::python_message(cassette, &e)
            ))
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::session::Delivered;

    #[test]
    #[cfg(target_os = "linux")] // a full disk, as /dev/full gives it
    fn after_a_failed_write_no_call_line_lands_after_the_lost_ones() {
        let dir = std::env::temp_dir().join(format!("toolstorm-recorder-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let cassette = dir.join("lost-begin.json");
        let storm = Storm::builder().capture(true).build().expect("storm");
        let lock = lock(&cassette, &mut || {}, &mut || false).expect("lock");
        let mut facts = McpSession {
            max_calls: 100,
            ..McpSession::default()
        };
        let mut r = Recorder::start(&cassette, lock, "s1", &storm, &facts, None).expect("start");
        let args = obj! {"order_id" => "o-1"};
        let handle = storm
            .begin_call("create_shipment", args.clone(), None)
            .expect("call");
        r.begin(&storm, handle.id(), true);
        // The begin line's write fails (a full disk): its line is not in the journal.
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let file = r.journal.swap_file(full);
        assert!(r.flush().is_err());
        r.journal.swap_file(file);
        let result = obj! {"content" => Value::Array(vec![])};
        storm.body_started(&handle);
        storm.end_call(&handle, Ok(result.clone()));
        let record = CallRecord::bare(
            handle.id(),
            Value::from(1),
            Delivered::Result(obj! {"result" => result}),
        );
        // The disk has room again, but the end line (whose counters count the lost call) is
        // refused: the relay withholds the answer it describes.
        r.end(&storm, handle.id(), &record, false);
        assert!(r.flush().is_err(), "no call line after a lost one");
        // Facts count no call: the recording's stop still goes on record, at once.
        facts.recording_stopped = Some(crate::mcp::session::Stopped {
            reason: "the journal could not be written".into(),
            after_calls: 0,
            refused: 0,
        });
        r.facts(&facts).expect("a facts line");
        r.client_closed().expect("the client's close");
        let rebuilt = Rebuild::read(&journal_path(&cassette)).expect("a readable journal");
        let (c, side) = rebuilt
            .recording()
            .expect("a valid recording: a prefix of the session");
        assert!(c.report.calls.is_empty(), "{:?}", c.report.calls);
        assert!(side.recording_stopped.is_some());
        assert_eq!(side.client_closed, Some(true));
        let done = r.finish(0, &storm);
        assert!(done.error.is_none(), "{:?}", done.error);
    }
}
