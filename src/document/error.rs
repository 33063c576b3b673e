//! Why a file could not be opened, read, validated or run: one typed error for every kind of
//! file, carrying the path, the problem (an OS error, the size limit, bad UTF-8, a malformed
//! wrapper, an invalid document with its JSON path, a run that failed), the reference's class
//! and message, and one `Display`: the line both faces print after `toolstorm-tui: `.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::cassette::{LoadError, Utf8Problem};
use crate::error::ConfigError;
use crate::fsread::{python_class, python_message};
use crate::json::MAX_DOCUMENT_BYTES;

/// What went wrong, by kind: match on it to tell a missing file from an invalid one.
#[derive(Debug, Clone)]
pub enum Problem {
    /// The OS refused: no such file, a directory, no permission, a FIFO or device, a loop.
    Unreadable(OsError),
    /// More than 8,000,000 bytes.
    TooLarge,
    /// Not UTF-8.
    NotUtf8(Utf8Problem),
    /// A comparison wrapper without 1–100 runs, or a run without a report (`ValueError`).
    Comparison {
        /// The reference's message.
        message: &'static str,
        /// What was found.
        detail: String,
    },
    /// Not valid JSON, or not a valid document of its kind: the reference's message, the JSON
    /// path inside the file and why.
    Invalid(ConfigError),
    /// A valid scenario that could not be run with the settings given (e.g. a budget out of
    /// range).
    Run(ConfigError),
}

/// An OS error, kept so that it can be cloned (the explorer passes errors around as data).
#[derive(Debug)]
pub struct OsError(pub io::Error);

impl Clone for OsError {
    fn clone(&self) -> OsError {
        OsError(match self.0.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::new(self.0.kind(), self.0.to_string()),
        })
    }
}

/// A file that cannot be used, and why.
#[derive(Debug, Clone)]
pub struct Error {
    /// The file, when there is one (`None` for a scenario that only lives in the editor).
    pub path: Option<PathBuf>,
    /// What went wrong.
    pub problem: Problem,
}

impl Error {
    /// An error about `path`.
    pub fn new(path: &Path, problem: Problem) -> Error {
        Error {
            path: Some(path.to_path_buf()),
            problem,
        }
    }

    /// An OS error on `path` (reading, or writing a result file).
    pub fn io(path: &Path, e: io::Error) -> Error {
        Error::new(path, Problem::Unreadable(OsError(e)))
    }

    /// An invalid document at `path`.
    pub fn invalid(path: Option<&Path>, e: ConfigError) -> Error {
        Error {
            path: path.map(Path::to_path_buf),
            problem: Problem::Invalid(e),
        }
    }

    /// A scenario at `path` (or in memory) that could not be run.
    pub fn run(path: Option<&Path>, e: ConfigError) -> Error {
        Error {
            path: path.map(Path::to_path_buf),
            problem: Problem::Run(e),
        }
    }

    /// Whether the file is not there (deleted, or not yet created): a reason to wait rather
    /// than to call the file broken.
    pub fn is_missing(&self) -> bool {
        matches!(&self.problem, Problem::Unreadable(e) if e.0.kind() == io::ErrorKind::NotFound)
    }

    /// The Python exception class the reference reports.
    pub fn class_name(&self) -> &'static str {
        match &self.problem {
            Problem::Unreadable(e) => python_class(&e.0),
            Problem::TooLarge | Problem::Comparison { .. } => "ValueError",
            Problem::NotUtf8(_) => "UnicodeDecodeError",
            Problem::Invalid(_) | Problem::Run(_) => "ConfigurationError",
        }
    }

    /// The reference's exception message (`str(exc)`).
    pub fn reference_message(&self) -> String {
        match &self.problem {
            Problem::Unreadable(e) => {
                python_message(self.path.as_deref().unwrap_or(Path::new("")), &e.0)
            }
            Problem::TooLarge => "File exceeds 8 MB limit".to_owned(),
            Problem::NotUtf8(p) => p.python_message(),
            Problem::Comparison { message, .. } => (*message).to_owned(),
            Problem::Invalid(e) | Problem::Run(e) => e.message.to_owned(),
        }
    }

    /// The reference's `ConfigurationError`, when that is what this is.
    pub fn config_error(&self) -> Option<&ConfigError> {
        match &self.problem {
            Problem::Invalid(e) | Problem::Run(e) => Some(e),
            _ => None,
        }
    }

    /// The same error with `why` in place of the JSON path and reason: for a file that is
    /// valid but of another kind (a scenario or verdict file given where a recording belongs),
    /// what it is and what to do with it says more than the first field it lacks.
    pub fn explained(mut self, why: String) -> Error {
        match &mut self.problem {
            Problem::Comparison { detail, .. } => *detail = why,
            Problem::Invalid(e) | Problem::Run(e) => {
                e.path = None;
                e.detail = Some(why);
            }
            _ => {}
        }
        self
    }

    /// Where and why, for people: the file, then the JSON path and the reason.
    fn whereabouts(&self) -> Option<String> {
        let file = self.path.as_ref().map(|p| p.display().to_string());
        let (at, why): (Option<&str>, Option<String>) = match &self.problem {
            Problem::Unreadable(_) => return None,
            Problem::TooLarge => (
                None,
                Some(format!("file exceeds {MAX_DOCUMENT_BYTES} bytes")),
            ),
            Problem::NotUtf8(p) => (None, Some(format!("not UTF-8 at byte {}", p.start))),
            Problem::Comparison { detail, .. } => (None, Some(detail.clone())),
            Problem::Invalid(e) | Problem::Run(e) => (e.path.as_deref(), e.detail.clone()),
        };
        let mut s = file.unwrap_or_default();
        if let Some(at) = at {
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str("at ");
            s.push_str(at);
        }
        if let Some(why) = why {
            if !s.is_empty() {
                s.push_str(": ");
            }
            s.push_str(&why);
        }
        (!s.is_empty()).then_some(s)
    }
}

impl fmt::Display for Error {
    /// `{Class}: {reference message} ({file} at {json path}: {reason})`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class_name(), self.reference_message())?;
        match self.whereabouts() {
            Some(w) => write!(f, " ({w})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for Error {}

impl From<LoadError> for Error {
    fn from(e: LoadError) -> Error {
        match e {
            LoadError::Io { path, error } => Error::io(&path, error),
            LoadError::TooLarge { path } => Error::new(&path, Problem::TooLarge),
            LoadError::Utf8 { path, problem } => Error::new(&path, Problem::NotUtf8(problem)),
            LoadError::Comparison {
                path,
                message,
                detail,
            } => Error::new(&path, Problem::Comparison { message, detail }),
            LoadError::Config { path, run, error } => {
                let error = match run {
                    Some(i) => error.within(&format!("runs[{i}].report")),
                    None => error,
                };
                Error::invalid(Some(&path), error)
            }
        }
    }
}
