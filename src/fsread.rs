//! Reading the files users give us, safely: at most 8,000,001 bytes are ever read (so a huge
//! or endlessly growing file, or `/dev/zero`, costs bounded time and memory), and FIFOs,
//! devices and sockets are refused, never waited on (a FIFO would block forever). The files
//! we keep beside them (a journal, a lock, a log) are opened the same way: regular files only,
//! without blocking, and never through a link. Also how an OS error on a path reads, in
//! Python's words (the reference's messages).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::json::MAX_DOCUMENT_BYTES;

/// Reads at most `MAX_DOCUMENT_BYTES + 1` bytes of `path`; callers treat a longer result as
/// "too large". Errors keep the OS error (so `ENOENT`, `EISDIR`, `ELOOP`, `EACCES` reach the
/// user as such); special files get an `InvalidInput` error naming what they are.
pub fn read_document(path: &Path) -> io::Result<Vec<u8>> {
    read_document_within(path, MAX_DOCUMENT_BYTES)
}

/// [`read_document`] with another limit: at most `max_bytes + 1` bytes are read.
pub fn read_document_within(path: &Path, max_bytes: usize) -> io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() && !meta.is_dir() {
        return Err(special(&meta));
    }
    // A directory opens on Linux; reading it then fails with EISDIR, as the reference reports.
    // Opened without blocking and looked at again once open: a FIFO put there since the look
    // above is refused, not waited on.
    let file = open_nonblocking(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() && !meta.is_dir() {
        return Err(special(&meta));
    }
    // Sized from the file's length (one allocation, no copies as it grows); the limit still
    // holds, whatever the length said.
    let expected = usize::try_from(meta.len()).unwrap_or(0).min(max_bytes + 1);
    let mut raw = Vec::with_capacity(expected + 1);
    file.take(max_bytes as u64 + 1).read_to_end(&mut raw)?;
    Ok(raw)
}

/// [`read_document`] as text: a file over the limit, or not UTF-8, is an `InvalidData` error.
pub fn read_text(path: &Path) -> io::Result<String> {
    let bytes = read_document(path)?;
    if bytes.len() > MAX_DOCUMENT_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the file exceeds 8,000,000 bytes",
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "the file is not UTF-8 text"))
}

/// Opens `path` for reading as a regular file (through links), without blocking: a FIFO,
/// device, socket or folder is refused with an `InvalidInput` error naming what it is.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = open_nonblocking(path)?;
    let meta = file.metadata()?;
    if meta.is_file() {
        Ok(file)
    } else if meta.is_dir() {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a folder, not a file",
        ))
    } else {
        Err(special(&meta))
    }
}

/// Refuses anything at `path` (not followed) but a regular file: what a writer must not
/// replace or write through (a link, a FIFO, a device, a socket, a folder). Nothing there
/// is fine.
pub fn refuse_special(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) if m.is_dir() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a folder, not a file",
        )),
        Ok(m) if m.file_type().is_symlink() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a symbolic link)",
        )),
        Ok(m) => Err(special(&m)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Opens a file we keep (a lock, a log) for writing, made if missing: `truncate` empties it.
/// Anything but a regular file at `path` — a link (not followed), a FIFO, a device — is
/// refused without blocking and without writing to it.
pub fn open_own(path: &Path, read: bool, truncate: bool) -> io::Result<File> {
    refuse_special(path)?;
    let mut options = std::fs::OpenOptions::new();
    options.read(read).write(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOFOLLOW)
            .mode(0o600);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(special(&meta));
    }
    if truncate {
        file.set_len(0)?;
    }
    Ok(file)
}

fn open_nonblocking(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, nix::libc::O_NONBLOCK);
    options.open(path)
}

fn special(meta: &std::fs::Metadata) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file ({})", describe(meta)),
    )
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

/// `message` in this tool's words when it says an OS error as Python would
/// (`FileNotFoundError: [Errno 2] No such file or directory: 'x'` → `cannot open 'x': no such
/// file or directory`, `OSError: cannot write …` → `cannot write …`, `ValueError: …` → `…`);
/// anything else (the tool's own `ConfigurationError`, say) as it is. Only the reference's own commands keep Python's line: their exact error lines are part
/// of compatibility (ToolStorm 0.2.0's `check`, `inspect`, `replay`, `demo`).
pub fn in_our_words(message: &str) -> std::borrow::Cow<'_, str> {
    const CLASSES: [&str; 5] = [
        "FileNotFoundError",
        "IsADirectoryError",
        "NotADirectoryError",
        "PermissionError",
        "FileExistsError",
    ];
    let Some((class, rest)) = message.split_once(": ") else {
        return message.into();
    };
    // Our own sentences, given Python's class for the reference's sake.
    if class == "ValueError" {
        return rest.into();
    }
    let os_error = class == "OSError";
    if !os_error && !CLASSES.contains(&class) {
        return message.into();
    }
    // `[Errno N] strerror: 'path'…` (or, for a refusal of our own, `strerror: 'path'…`); an
    // `OSError` without an errno is a sentence of our own already.
    let rest = match rest.strip_prefix("[Errno ") {
        Some(r) => r.split_once("] ").map_or(r, |(_, after)| after),
        None if os_error => return rest.into(),
        None => rest,
    };
    let Some((strerror, path)) = rest.split_once(": ") else {
        return message.into();
    };
    let mut said = strerror.chars();
    let strerror: String = match said.next() {
        Some(first) => first.to_lowercase().chain(said).collect(),
        None => String::new(),
    };
    format!("cannot open {path}: {strerror}").into()
}

/// The Python exception class for an OS error (`FileNotFoundError`, `IsADirectoryError`, ...).
pub fn python_class(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(2) => "FileNotFoundError",
        Some(21) => "IsADirectoryError",
        Some(20) => "NotADirectoryError",
        Some(1 | 13) => "PermissionError",
        Some(17) => "FileExistsError",
        _ => match e.kind() {
            io::ErrorKind::NotFound => "FileNotFoundError",
            io::ErrorKind::PermissionDenied => "PermissionError",
            io::ErrorKind::IsADirectory => "IsADirectoryError",
            io::ErrorKind::NotADirectory => "NotADirectoryError",
            io::ErrorKind::AlreadyExists => "FileExistsError",
            _ => "OSError",
        },
    }
}

/// Python's `str()` of an OS error on `path`: `[Errno 2] No such file or directory: 'x'`.
/// Errors of our own (a FIFO refused) name the path the same way.
pub fn python_message(path: &Path, e: &io::Error) -> String {
    let text = e.to_string();
    let strerror = text.split(" (os error").next().unwrap_or(&text);
    let shown = python_repr(&path.to_string_lossy());
    match e.raw_os_error() {
        Some(code) => format!("[Errno {code}] {strerror}: {shown}"),
        None => format!("{strerror}: {shown}"),
    }
}

/// Python's `repr()` of a string (as used in OS error messages).
pub fn python_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod words_tests {
    use super::in_our_words;

    #[test]
    fn an_os_error_is_said_in_our_words_and_anything_else_as_it_is() {
        for (python, ours) in [
            (
                "FileNotFoundError: [Errno 2] No such file or directory: 'a: b.json'",
                "cannot open 'a: b.json': no such file or directory",
            ),
            (
                "IsADirectoryError: [Errno 21] Is a directory: 'demo'",
                "cannot open 'demo': is a directory",
            ),
            (
                "PermissionError: [Errno 13] Permission denied: \"it's\"",
                "cannot open \"it's\": permission denied",
            ),
            (
                "OSError: cannot write the report",
                "cannot write the report",
            ),
            (
                "OSError: [Errno 40] Too many levels of symbolic links: 'a'",
                "cannot open 'a': too many levels of symbolic links",
            ),
            (
                "ConfigurationError: Invalid trace metadata",
                "ConfigurationError: Invalid trace metadata",
            ),
            ("FileNotFoundError", "FileNotFoundError"),
        ] {
            assert_eq!(in_our_words(python), ours);
        }
    }
}
