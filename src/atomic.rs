//! Atomic file writes: a temporary `.toolstorm-*` file in the destination folder (mode 0600),
//! written and flushed to disk, then renamed over the target. A reader — or a crash — sees the
//! old file or the complete new one, never a truncated mix.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` atomically, creating parent folders.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, |file| file.write_all(bytes))
}

/// [`write()`] with the content produced by `fill`, which may fail (tests inject errors here);
/// on any failure the temporary file is removed and the old target is untouched.
pub fn write_with(path: &Path, fill: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir)?;
    let (tmp, mut file) = create_temp(&dir)?;
    let result = (|| {
        fill(&mut file)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)?;
        // Make the rename itself durable where the platform allows it.
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn create_temp(dir: &Path) -> io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    for _ in 0..1000 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".toolstorm-{pid}-{n}.tmp"));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        match options.open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary file name",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_file_and_leaves_no_temp() {
        let dir = std::env::temp_dir().join(format!("toolstorm-atomic-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let target = dir.join("sub/out.json");
        write(&target, b"old").expect("first write");
        write(&target, b"new content").expect("second write");
        assert_eq!(fs::read(&target).expect("read"), b"new content");
        let leftovers: Vec<_> = fs::read_dir(dir.join("sub"))
            .expect("dir")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(".toolstorm-"))
            .collect();
        assert!(leftovers.is_empty());
        // A target that is a directory fails and keeps nothing behind.
        assert!(write(&dir.join("sub"), b"x").is_err());
        let _ = fs::remove_dir_all(&dir);
    }
}
