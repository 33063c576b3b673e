//! Appending to a journal: one `write` per line or per group of held lines, a write that
//! fails part-way cut back so no line lands glued onto a torn one, disk space taken ahead of
//! the lines (Linux), and a journal written under another name first and published whole.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::json::{Value, compact};
use crate::mcp::session::journal_path;

/// Appends journal lines. [`Writer::append`] writes its line at once; [`Writer::hold`] keeps
/// lines until [`Writer::flush`] writes them all in one write (a group commit: the relay
/// holds the lines of the messages it has in hand and writes them before it relays any).
#[derive(Debug)]
pub struct Writer {
    file: File,
    path: PathBuf,
    /// Lines held, each with its newline.
    held: String,
    /// Bytes of whole lines written: a write that fails part-way is cut back to here, so the
    /// next line never lands glued onto a torn one.
    len: u64,
    /// A write failed, and the lines it held are not in the journal.
    lost: bool,
    /// Bytes of the file given disk space ahead of the lines (Linux): appends fill space
    /// already allocated instead of allocating page by page.
    reserved: u64,
}

/// How much disk space a journal takes ahead of its lines at a time.
#[cfg(target_os = "linux")]
const RESERVE: u64 = 256 * 1024;

impl Writer {
    /// Bytes the journal holds once the lines held are written.
    pub fn written(&self) -> u64 {
        self.len + self.held.len() as u64
    }

    /// Starts a new journal for the recording at `cassette` (replacing an old one), owner-only,
    /// and writes its header: [`Writer::create_staged`] published at once.
    pub fn create(cassette: &Path, header: &Value) -> io::Result<Writer> {
        let mut w = Writer::create_staged(cassette, header)?;
        w.publish()?;
        Ok(w)
    }

    /// Starts a new journal for the recording at `cassette` under a name no reader looks at
    /// (`*.mcp.journal.new`), owner-only, and writes its header; [`Writer::publish`] puts it
    /// in place of the old one in one rename. A session that must write lines before anyone
    /// may read the journal (an `--append`'s earlier calls) writes them here first: killed
    /// before it publishes, the recording is as it was.
    pub fn create_staged(cassette: &Path, header: &Value) -> io::Result<Writer> {
        let path = journal_path(cassette);
        let staged = staged_path(&path);
        // What a killed start left (or anything else at that name: a link is removed, not
        // followed); the new file is made afresh, never opened through a link.
        match std::fs::symlink_metadata(&staged) {
            Ok(m) if m.is_dir() => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} is a folder", staged.display()),
                ));
            }
            Ok(_) => std::fs::remove_file(&staged)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&staged)?;
        let mut w = Writer {
            file,
            path: staged,
            held: String::with_capacity(16 * 1024),
            len: 0,
            lost: false,
            reserved: 0,
        };
        w.append(header)?;
        Ok(w)
    }

    /// Puts a staged journal in place (a rename: readers see the old journal, or none, until
    /// then, and this one whole after). Only a regular file, or nothing, is replaced: anything
    /// else at the journal's name (a link, a FIFO, a device) is refused.
    pub fn publish(&mut self) -> io::Result<()> {
        let Some(path) = self
            .path
            .to_str()
            .and_then(|p| p.strip_suffix(STAGED_SUFFIX))
            .map(PathBuf::from)
        else {
            return Ok(()); // published already
        };
        crate::fsread::refuse_special(&path)?;
        std::fs::rename(&self.path, &path)?;
        self.path = path;
        Ok(())
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one entry as one line, written (with any lines held) before it returns.
    pub fn append(&mut self, entry: &Value) -> io::Result<()> {
        self.append_text(&compact(entry))
    }

    /// Appends an entry already written as one line of JSON (without its newline), written
    /// (with any lines held) before it returns.
    pub fn append_text(&mut self, entry: &str) -> io::Result<()> {
        self.hold(entry);
        self.flush()
    }

    /// Keeps an entry written as one line of JSON (without its newline) for the next
    /// [`Writer::flush`].
    pub fn hold(&mut self, entry: &str) {
        self.held.push_str(entry);
        self.held.push('\n');
    }

    /// Keeps the line `write` appends to the held text (one JSON object, without its
    /// newline), written in place; when `write` says false, what it appended is taken back.
    pub fn hold_with(&mut self, write: impl FnOnce(&mut String) -> bool) {
        let start = self.held.len();
        if write(&mut self.held) {
            self.held.push('\n');
        } else {
            self.held.truncate(start);
        }
    }

    /// Whether lines are held.
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }

    /// Whether a write failed (its lines are not in the journal): from then on a line must
    /// not count on an earlier one being there.
    pub fn lost_lines(&self) -> bool {
        self.lost
    }

    /// Writes to `file` from now on, giving back the file it wrote to (a test's way to make
    /// writes fail for a while).
    #[cfg(test)]
    pub fn swap_file(&mut self, file: File) -> File {
        std::mem::replace(&mut self.file, file)
    }

    /// Writes the lines held, in one write; on failure none of them is kept (the file is
    /// cut back to its last whole line). After a failed write no later line is taken (an
    /// error, the lines dropped): each line's counters count every call before it, so none
    /// may land after lines that were lost. The journal stays a prefix of the session.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let text = std::mem::take(&mut self.held);
        let r = if self.lost {
            Err(io::Error::other(
                "an earlier write was lost, and no later call may land after it",
            ))
        } else {
            self.write_text(&text)
        };
        self.held = text;
        self.held.clear();
        if self.held.capacity() > 1024 * 1024 {
            self.held.shrink_to(16 * 1024);
        }
        r
    }

    /// Writes one line at once, by itself (the lines held stay held), even after a failed
    /// write: only for lines that count no call (facts, the client's close).
    pub fn append_alone(&mut self, entry: &str) -> io::Result<()> {
        self.write_text(&format!("{entry}\n"))
    }

    /// One write of whole lines; on failure the file is cut back to its last whole line.
    fn write_text(&mut self, text: &str) -> io::Result<()> {
        self.reserve(self.len + text.len() as u64);
        let r = self.file.write_all(text.as_bytes());
        match r {
            Ok(()) => self.len += text.len() as u64,
            Err(_) => {
                self.lost = true;
                let _ = self.file.set_len(self.len);
                let _ = self.file.seek(SeekFrom::Start(self.len));
            }
        }
        r
    }

    /// Gives the file disk space up to past `end`, without changing its length (readers see
    /// only whole lines). Best effort: a file system that cannot do it is written as before.
    #[cfg(target_os = "linux")]
    fn reserve(&mut self, end: u64) {
        use nix::fcntl::{FallocateFlags, fallocate};
        if end <= self.reserved {
            return;
        }
        let upto = end.div_ceil(RESERVE) * RESERVE;
        let (Ok(from), Ok(len)) = (
            nix::libc::off_t::try_from(self.reserved),
            nix::libc::off_t::try_from(upto - self.reserved),
        ) else {
            return;
        };
        // When this fails (a file system without it, a full disk), the writes allocate as they
        // go; it is asked again at the next mark.
        let _ = fallocate(&self.file, FallocateFlags::FALLOC_FL_KEEP_SIZE, from, len);
        self.reserved = upto;
    }

    #[cfg(not(target_os = "linux"))]
    fn reserve(&mut self, _end: u64) {}
}

impl Drop for Writer {
    /// A journal that stays (the session could not be compacted) keeps no space past its end.
    fn drop(&mut self) {
        if self.reserved > self.len {
            let _ = self.file.set_len(self.len);
        }
    }
}

/// The suffix of a journal not yet published ([`Writer::create_staged`]).
const STAGED_SUFFIX: &str = ".new";

pub(super) fn staged_path(journal: &Path) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(STAGED_SUFFIX);
    PathBuf::from(name)
}
