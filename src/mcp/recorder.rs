//! Keeps the recording on disk while a session runs: the cassette (the engine's report, a
//! ToolStorm schema-v1 file any ToolStorm loads) and its sidecar, each replaced atomically, the
//! sidecar first so a reader that sees a new cassette also sees its facts. It is rewritten after
//! every completed call; on a long session a rewrite is put off until ten times its own cost has
//! passed (so writing never dominates relaying), and a final write happens at the end.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::session::{McpSession, sidecar_path};
use crate::cassette::Cassette;
use crate::error::ConfigError;
use crate::report::Report;

/// The longest a completed call waits to reach the disk.
const MAX_DELAY: Duration = Duration::from_secs(2);

/// What a write did.
#[derive(Debug)]
pub enum Written {
    /// Both files are up to date.
    Saved,
    /// The report no longer makes a valid cassette (over 8 MB): the files on disk keep the last
    /// calls that fit.
    Full(ConfigError),
}

/// The recording's files and when they were last written.
#[derive(Debug)]
pub struct Recorder {
    cassette: PathBuf,
    sidecar: PathBuf,
    last: Option<(Instant, Duration)>,
    due: Option<Instant>,
}

impl Recorder {
    /// A recorder writing `cassette` and its sidecar.
    pub fn new(cassette: &Path) -> Recorder {
        Recorder {
            cassette: cassette.to_path_buf(),
            sidecar: sidecar_path(cassette),
            last: None,
            due: None,
        }
    }

    /// The cassette's path.
    pub fn path(&self) -> &Path {
        &self.cassette
    }

    /// Something changed at `now`: when the files should be rewritten (now, or later on a
    /// long session).
    pub fn changed(&mut self, now: Instant) -> Instant {
        let at = match self.last {
            Some((when, cost)) => (when + (cost * 10).min(MAX_DELAY)).max(now),
            None => now,
        };
        let due = self.due.map_or(at, |d| d.min(at));
        self.due = Some(due);
        due
    }

    /// Whether a rewrite is due at `now`.
    pub fn due(&self, now: Instant) -> bool {
        self.due.is_some_and(|d| d <= now)
    }

    /// Whether anything is waiting to be written.
    pub fn dirty(&self) -> bool {
        self.due.is_some()
    }

    /// Writes both files now.
    pub fn write(&mut self, report: Report, session: &McpSession) -> std::io::Result<Written> {
        let start = Instant::now();
        let value = report.to_value();
        drop(report);
        let cassette = match Cassette::from_owned(value) {
            Ok(c) => c,
            Err(e) => {
                self.due = None;
                return Ok(Written::Full(e));
            }
        };
        crate::atomic::write(&self.sidecar, session.to_text().as_bytes())?;
        cassette.save(&self.cassette)?;
        self.last = Some((Instant::now(), start.elapsed()));
        self.due = None;
        Ok(Written::Saved)
    }
}
