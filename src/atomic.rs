//! Atomic file writes: a private temporary file (`.toolstorm-<pid>-<random>.tmp`, made by
//! `tempfile`) in the destination folder, written and flushed to disk, then renamed over the
//! target. A reader — or a crash — sees the old file or the complete new one, never a
//! truncated mix.
//!
//! - An existing file keeps its permissions; a new file is private (0600), as the reference
//!   writes its cassettes and verdicts.
//! - A symlink is written through: the file it points to is replaced and the link stays (a
//!   dangling link creates its target) — for a path the user named. A file we name ourselves
//!   (a sidecar) is written with [`write_own_with`], which refuses a link.
//! - Only a regular file is ever replaced: a FIFO, device or socket at the target (or where
//!   its links lead: `/dev/full`) is refused with an error naming it, never turned into a file.
//! - Temporary files a killed writer left behind (ours by name, from a process that is gone,
//!   or older than a day) are removed on the next write to the same folder.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Prefix of our temporary files.
const TEMP_PREFIX: &str = ".toolstorm-";
/// Suffix of our temporary files.
const TEMP_SUFFIX: &str = ".tmp";
/// A temporary file older than this is stale whoever made it.
const STALE_AFTER: Duration = Duration::from_secs(24 * 60 * 60);
/// The most symlinks followed to find the file to replace.
const MAX_LINKS: usize = 40;

/// How much of a file already at an output's path is read to tell what it is.
const SNIFFED: u64 = 64 * 1024;

/// Refuses to let an output replace a file that is not one of its kind: nothing there, an
/// empty file, or a file whose first bytes `ours` recognises may be written over; anything
/// else — the recording a replay serves, a scenario, the user's own file, named by mistake —
/// is an error that says what the output replaces, and the file is left as it is. Links are
/// followed, as the write follows them; a folder or a special file is left to the write to
/// refuse.
pub fn refuse_foreign(path: &Path, ours: impl Fn(&[u8]) -> bool, what: &str) -> io::Result<()> {
    let Ok(meta) = fs::metadata(path) else {
        return Ok(());
    };
    if !meta.is_file() || meta.len() == 0 {
        return Ok(());
    }
    let mut head = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(File::open(path)?, SNIFFED), &mut head)?;
    if ours(&head) {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "the file there is not {what}, and only {what} is replaced (choose another path, \
             or remove the file)"
        ),
    ))
}

/// Writes `bytes` to `path` atomically, creating parent folders.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, |file| file.write_all(bytes))
}

/// [`write()`] with the content produced by `fill`, which may fail (tests inject errors here);
/// on any failure the temporary file is removed and the old target is untouched.
pub fn write_with(path: &Path, fill: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    let target = resolve_links(path)?;
    crate::fsread::refuse_special(&target)?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir)?;
    sweep_stale(&dir);
    let existing = fs::metadata(&target).ok().filter(fs::Metadata::is_file);
    let mut temp = tempfile::Builder::new()
        .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
        .suffix(TEMP_SUFFIX)
        .tempfile_in(&dir)?;
    fill(temp.as_file_mut())?;
    if let Some(meta) = existing {
        temp.as_file().set_permissions(meta.permissions())?;
    }
    temp.as_file().sync_all()?;
    // On failure the temporary file is dropped, which removes it.
    temp.persist(&target).map_err(|e| e.error)?;
    // Make the rename itself durable where the platform allows it.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// [`write_with`] for a file whose name we derive (a recording's sidecar): a symlink there is
/// refused, not written through (it could lead anywhere).
pub fn write_own_with(
    path: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    crate::fsread::refuse_special(path)?;
    write_with(path, fill)
}

/// The file a write to `path` replaces: `path` itself, or what its symlinks lead to.
pub fn resolve_links(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let next = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links to follow: {}",
        path.display()
    )))
}

/// Removes temporary files of ours in `dir` that a killed writer left: made by a process that
/// no longer runs (where the OS says so), or older than a day. Errors are ignored: a sweep is
/// housekeeping, never a reason to fail a write.
fn sweep_stale(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_owner) else {
            continue;
        };
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if !meta.is_file() || pid == me {
            continue;
        }
        let old = meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age > STALE_AFTER);
        if old || !process_alive(pid) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The process id in one of our temporary file names.
fn temp_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(TEMP_PREFIX)?.strip_suffix(TEMP_SUFFIX)?;
    rest.split_once('-')?.0.parse().ok()
}

/// Whether process `pid` runs; assumed so where the OS cannot tell (then only age counts).
fn process_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .expect("dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(TEMP_PREFIX))
            .collect()
    }

    #[test]
    fn replaces_whole_file_and_leaves_no_temp() {
        let dir = std::env::temp_dir().join(format!("toolstorm-atomic-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let target = dir.join("sub/out.json");
        write(&target, b"old").expect("first write");
        write(&target, b"new content").expect("second write");
        assert_eq!(fs::read(&target).expect("read"), b"new content");
        assert!(leftovers(&dir.join("sub")).is_empty());
        // A target that is a directory fails and keeps nothing behind.
        assert!(write(&dir.join("sub"), b"x").is_err());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn temp_names_carry_the_writer() {
        assert_eq!(temp_owner(".toolstorm-4242-aB3xYz.tmp"), Some(4242));
        assert_eq!(temp_owner(".toolstorm-x-1.tmp"), None);
        assert_eq!(temp_owner("toolstorm-1-1.tmp"), None);
        assert_eq!(temp_owner(".toolstorm-1-1.json"), None);
    }
}
