//! Reading the files users give us, safely: at most 8,000,001 bytes are ever read (so a huge
//! or endlessly growing file, or `/dev/zero`, costs bounded time and memory), and FIFOs,
//! devices and sockets are refused before they are opened (a FIFO would block forever).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::json::MAX_DOCUMENT_BYTES;

/// Reads at most `MAX_DOCUMENT_BYTES + 1` bytes of `path`; callers treat a longer result as
/// "too large". Errors keep the OS error (so `ENOENT`, `EISDIR`, `ELOOP`, `EACCES` reach the
/// user as such); special files get an `InvalidInput` error naming what they are.
pub fn read_document(path: &Path) -> io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() && !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({})", describe(&meta)),
        ));
    }
    // A directory opens on Linux; reading it then fails with EISDIR, as the reference reports.
    let file = File::open(path)?;
    let mut raw = Vec::new();
    file.take(MAX_DOCUMENT_BYTES as u64 + 1)
        .read_to_end(&mut raw)?;
    Ok(raw)
}

fn describe(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    let _ = meta;
    "a special file"
}
