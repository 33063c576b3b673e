//! Cassettes (spec §8, §14.3): a validated, key-sorted report document with its canonical
//! bytes and digest; loading from text and files with the reference's limits and messages;
//! crash-safe saving; reading the documents the command line accepts (bare reports, run files,
//! comparisons); and the `inspect` / `check` outputs.

mod replay;
mod skeleton;
mod validate;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

pub use replay::{ArgumentDiff, ClosestRecord, DiffKind, Replay, diff_arguments};
pub use validate::{
    CALL_KEYS, COVERAGE_KEYS, EFFECT_KEYS, MAX_RULES, MAX_TRACE_ITEMS, PORTABLE_ERRORS,
    REPORT_KEYS, validate_report,
};

use crate::contract::{Check, Contract, checks_to_value, verdict};
use crate::error::ConfigError;
use crate::json::{
    MAX_DOCUMENT_BYTES, Object, ParseError, ParseErrorKind, Value, canonical, canonical_fits,
    canonical_len, fingerprint, one_line, parse,
};
use crate::redact::{Redactor, check_json};
use crate::report::Report;

/// Most runs a comparison document may hold.
pub const MAX_COMPARISON_RUNS: usize = 100;

/// A validated trace: its typed view, and the canonical (key-sorted) document when the typed
/// view cannot rebuild it.
#[derive(Clone, Debug, PartialEq)]
pub struct Cassette {
    /// The typed view (durations as `f64`), with every call's payloads.
    pub report: Report,
    /// The document as re-parsed from its canonical text (keys in sorted order; ints kept),
    /// kept only when its bytes differ from the typed view's: a duration written as an
    /// integer, an error recorded on a running call. Files the reference or this program wrote
    /// never need it, so a loaded trace is held once, not twice.
    data: Option<Value>,
}

/// A JSON parse failure as the reference reports it.
pub fn json_error(e: &ParseError) -> ConfigError {
    let message = if e.kind == ParseErrorKind::TooLarge {
        "JSON document exceeds size limit"
    } else {
        "Invalid or excessively nested JSON"
    };
    let full = e.to_string();
    let detail = full
        .strip_prefix("Invalid or excessively nested JSON: ")
        .unwrap_or(&full)
        .to_owned();
    ConfigError::new(message).because(detail)
}

impl Cassette {
    /// The reference's constructor: canonicalise, enforce 8 MB, re-parse, validate.
    pub fn from_value(value: &Value) -> Result<Cassette, ConfigError> {
        Cassette::from_owned(value.clone())
    }

    /// [`Cassette::from_value`] without a copy. Sorting the keys in place gives exactly what
    /// re-parsing the canonical text gives (floats, integers and strings round-trip), so the
    /// text is only measured, never built.
    pub fn from_owned(data: Value) -> Result<Cassette, ConfigError> {
        check_json(&data, 0).map_err(|e| {
            ConfigError::new("Value cannot be safely serialized as JSON").because(e.message)
        })?;
        Cassette::from_parsed(data)
    }

    /// [`Cassette::from_owned`] for a value that came from [`parse`], which already enforces
    /// finite numbers and the depth limit.
    fn from_parsed(mut data: Value) -> Result<Cassette, ConfigError> {
        if !canonical_fits(&data, MAX_DOCUMENT_BYTES) {
            let size = canonical_len(&data);
            return Err(
                ConfigError::new("Cassette exceeds 8 MB limit").because(format!(
                    "canonical form is {size} bytes; at most {MAX_DOCUMENT_BYTES} allowed"
                )),
            );
        }
        data.sort_keys().map_err(|key| {
            ConfigError::new("Invalid or excessively nested JSON")
                .because(format!("duplicate object key {key:?}"))
        })?;
        let checked = validate::check_document(&data)?;
        Ok(Cassette::assemble(checked, data))
    }

    /// The cassette of a checked, key-sorted document: the payloads go into the typed view —
    /// moved when the view rebuilds the document, which is then dropped; copied when the
    /// document is kept for its bytes.
    fn assemble(checked: validate::Checked, mut data: Value) -> Cassette {
        let mut report = checked.report;
        let calls = data
            .as_object_mut()
            .and_then(|o| o.get_mut("calls"))
            .and_then(Value::as_array_mut);
        for (call, raw) in report.calls.iter_mut().zip(calls.into_iter().flatten()) {
            let Some(o) = raw.as_object_mut() else {
                continue;
            };
            // The document is dropped when the typed view rebuilds it: move, don't copy.
            for (slot, name) in [
                (&mut call.arguments, "arguments"),
                (&mut call.output, "output"),
            ] {
                if let Some(v) = o.get_mut(name) {
                    *slot = if checked.rebuildable {
                        std::mem::take(v)
                    } else {
                        v.clone()
                    };
                }
            }
        }
        Cassette {
            report,
            data: (!checked.rebuildable).then_some(data),
        }
    }

    /// Reads `text` when it is shaped like a bare trace, each record checked and let go as it
    /// is read: `Ok` with the verdict [`Cassette::loads`] would give, or the text back for
    /// anything else (a run file, a comparison, a malformed document) — [`Cassette::loads`]
    /// and the document readers take it from there.
    pub fn read_owned(text: String) -> Result<Result<Cassette, ConfigError>, String> {
        match skeleton::read(&mut skeleton::Whole::new(&text)) {
            Ok(Some(verdict)) => Ok(verdict),
            Ok(None) | Err(_) => Err(text),
        }
    }

    /// [`Cassette::read_owned`] of a document read from `src` a part at a time, `length` bytes
    /// long by its own account (a file's length): only the part being read is held, never the
    /// whole text. `Ok(None)` when it is not a bare trace this way reads (the caller reads it
    /// whole, from its start); an error when `src` cannot be read.
    pub fn read_stream(
        src: impl io::Read,
        length: usize,
    ) -> io::Result<Option<Result<Cassette, ConfigError>>> {
        skeleton::read(&mut skeleton::Chunks::new(src, length))
    }

    /// A cassette of a report taken from a run.
    pub fn from_report(report: &Report) -> Result<Cassette, ConfigError> {
        Cassette::from_owned(report.to_value())
    }

    /// [`Cassette::read_stream`] of the file at `path`: the verdict on a bare trace, its text
    /// never held whole; `None` for anything else, and for a file that does not open as a
    /// regular one or fails to read — the whole-file readers take those, and say what is wrong.
    pub fn stream_file(path: &Path) -> Option<Result<Cassette, ConfigError>> {
        let file = crate::fsread::open_regular(path).ok()?;
        let length = file
            .metadata()
            .map_or(0, |m| usize::try_from(m.len()).unwrap_or(usize::MAX));
        Cassette::read_stream(file, length).ok()?
    }

    /// Parses JSON text, then constructs.
    pub fn loads(text: &str) -> Result<Cassette, ConfigError> {
        if let Ok(Some(verdict)) = skeleton::read(&mut skeleton::Whole::new(text)) {
            return verdict;
        }
        let value = parse(text).map_err(|e| json_error(&e))?;
        Cassette::from_parsed(value)
    }

    /// Reads a file (at most 8,000,001 bytes) as `Cassette.load` does.
    pub fn load(path: impl AsRef<Path>) -> Result<Cassette, LoadError> {
        let path = path.as_ref();
        if let Some(verdict) = Cassette::stream_file(path) {
            return verdict.map_err(|e| LoadError::config(path, e));
        }
        let raw = read_bounded(path)?;
        if raw.len() > MAX_DOCUMENT_BYTES {
            return Err(LoadError::config(
                path,
                ConfigError::new("Cassette exceeds 8 MB limit").because(format!(
                    "the file is larger than {MAX_DOCUMENT_BYTES} bytes"
                )),
            ));
        }
        let text = match std::str::from_utf8(&raw) {
            Ok(t) => t,
            Err(e) => {
                let problem = Utf8Problem::new(&raw, &e);
                return Err(LoadError::config(
                    path,
                    ConfigError::new("Cassette must be UTF-8 JSON")
                        .because(problem.python_message()),
                ));
            }
        };
        Cassette::loads(text).map_err(|e| LoadError::config(path, e))
    }

    /// The file text: canonical JSON plus a newline.
    pub fn dumps(&self) -> String {
        let mut s = match &self.data {
            Some(data) => canonical(data),
            None => self.report.canonical(),
        };
        s.push('\n');
        s
    }

    /// SHA-256 of the canonical document (equals the run's report digest).
    pub fn digest(&self) -> String {
        match &self.data {
            Some(data) => fingerprint(data),
            None => self.report.digest(),
        }
    }

    /// A fresh copy of the document, keys in canonical order.
    pub fn to_value(&self) -> Value {
        match &self.data {
            Some(data) => data.clone(),
            None => {
                let mut v = self.report.to_value();
                // A report's keys are unique, so sorting cannot fail.
                let _ = v.sort_keys();
                v
            }
        }
    }

    /// Writes [`Cassette::dumps`] atomically (see [`crate::atomic::write`]).
    pub fn save(&self, path: impl AsRef<Path>) -> io::Result<()> {
        crate::atomic::write(path.as_ref(), self.dumps().as_bytes())
    }

    /// A replay session over this cassette.
    pub fn replay(&self, redactor: Option<Redactor>) -> Result<Replay, ConfigError> {
        Replay::new(self, redactor)
    }
}

fn read_bounded(path: &Path) -> Result<Vec<u8>, LoadError> {
    let io_err = |error| LoadError::Io {
        path: path.to_path_buf(),
        error,
    };
    crate::fsread::read_document(path).map_err(io_err)
}

/// Why a byte string is not UTF-8, in the terms Python's decoder uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Utf8Problem {
    /// Byte offset of the first bad byte.
    pub start: usize,
    /// One past the last byte of the bad sequence.
    pub end: usize,
    /// The first bad byte.
    pub byte: u8,
    /// `invalid start byte`, `invalid continuation byte` or `unexpected end of data`.
    pub reason: &'static str,
}

impl Utf8Problem {
    pub fn new(raw: &[u8], e: &std::str::Utf8Error) -> Utf8Problem {
        let start = e.valid_up_to();
        let byte = raw.get(start).copied().unwrap_or(0);
        match e.error_len() {
            None => Utf8Problem {
                start,
                end: raw.len(),
                byte,
                reason: "unexpected end of data",
            },
            Some(n) => {
                let starts_sequence = matches!(byte, 0xC2..=0xF4);
                let reason = if starts_sequence {
                    "invalid continuation byte"
                } else {
                    "invalid start byte"
                };
                Utf8Problem {
                    start,
                    end: start + n,
                    byte,
                    reason,
                }
            }
        }
    }

    /// Python's `str(UnicodeDecodeError)` for this problem.
    pub fn python_message(&self) -> String {
        if self.end > self.start + 1 {
            format!(
                "'utf-8' codec can't decode bytes in position {}-{}: {}",
                self.start,
                self.end - 1,
                self.reason
            )
        } else {
            format!(
                "'utf-8' codec can't decode byte 0x{:02x} in position {}: {}",
                self.byte, self.start, self.reason
            )
        }
    }
}

/// Why a document could not be read as cassettes. Each variant maps to the reference's
/// `toolstorm: {Class}: {message}` line and to a richer explanation naming the file and field.
#[derive(Debug)]
pub enum LoadError {
    /// The file could not be opened or read (`FileNotFoundError`, `IsADirectoryError`, ...).
    Io {
        /// The path as given.
        path: PathBuf,
        /// The OS error.
        error: io::Error,
    },
    /// More than 8,000,000 bytes (`ValueError: File exceeds 8 MB limit`).
    TooLarge {
        /// The path as given.
        path: PathBuf,
    },
    /// Not UTF-8 (`UnicodeDecodeError`).
    Utf8 {
        /// The path as given.
        path: PathBuf,
        /// Where and why.
        problem: Utf8Problem,
    },
    /// A malformed comparison (`ValueError`).
    Comparison {
        /// The path as given.
        path: PathBuf,
        /// The reference's message.
        message: &'static str,
        /// Where and why.
        detail: String,
    },
    /// JSON or validation failure (`ConfigurationError`).
    Config {
        /// The path as given.
        path: PathBuf,
        /// For comparisons, the 0-based run whose report failed.
        run: Option<usize>,
        /// The reference's message, with path and detail.
        error: ConfigError,
    },
}

impl LoadError {
    pub fn config(path: &Path, error: ConfigError) -> LoadError {
        LoadError::Config {
            path: path.to_path_buf(),
            run: None,
            error,
        }
    }

    /// The Python exception class the reference prints.
    pub fn class_name(&self) -> &'static str {
        match self {
            LoadError::Io { error, .. } => crate::fsread::python_class(error),
            LoadError::TooLarge { .. } | LoadError::Comparison { .. } => "ValueError",
            LoadError::Utf8 { .. } => "UnicodeDecodeError",
            LoadError::Config { .. } => "ConfigurationError",
        }
    }

    /// The reference's exception message (`str(exc)`).
    pub fn reference_message(&self) -> String {
        match self {
            LoadError::Io { path, error } => crate::fsread::python_message(path, error),
            LoadError::TooLarge { .. } => "File exceeds 8 MB limit".to_owned(),
            LoadError::Utf8 { problem, .. } => problem.python_message(),
            LoadError::Comparison { message, .. } => (*message).to_owned(),
            LoadError::Config { error, .. } => error.message.to_owned(),
        }
    }

    /// The reference's stderr line, `toolstorm: {Class}: {message}`.
    pub fn reference_line(&self) -> String {
        format!(
            "toolstorm: {}: {}",
            self.class_name(),
            self.reference_message()
        )
    }

    /// The reference's message for `ConfigurationError`s (what verdicts compare).
    pub fn config_error(&self) -> Option<&ConfigError> {
        match self {
            LoadError::Config { error, .. } => Some(error),
            _ => None,
        }
    }

    /// Our explanation: the file, the JSON path inside it, and what was found.
    pub fn explain(&self) -> String {
        match self {
            LoadError::Io { path, error } => format!("{}: {error}", path.display()),
            LoadError::TooLarge { path } => {
                format!(
                    "{}: file exceeds {MAX_DOCUMENT_BYTES} bytes",
                    path.display()
                )
            }
            LoadError::Utf8 { path, problem } => format!(
                "{}: not UTF-8: byte 0x{:02x} at offset {} ({})",
                path.display(),
                problem.byte,
                problem.start,
                problem.reason
            ),
            LoadError::Comparison {
                path,
                message,
                detail,
            } => {
                format!("{}: {message} ({detail})", path.display())
            }
            LoadError::Config { path, run, error } => {
                let mut where_ = String::new();
                if let Some(r) = run {
                    where_ = format!("runs[{r}].report");
                }
                if let Some(p) = &error.path {
                    if !where_.is_empty() && !p.starts_with('[') {
                        where_.push('.');
                    }
                    where_.push_str(p);
                }
                let mut s = format!("{}: {}", path.display(), error.message);
                s.push_str(&location_suffix(&where_, error.detail.as_deref()));
                s
            }
        }
    }
}

fn location_suffix(where_: &str, detail: Option<&str>) -> String {
    let mut s = String::new();
    if !where_.is_empty() {
        s.push_str(&format!(" at {where_}"));
    }
    if let Some(d) = detail {
        s.push_str(&format!(": {d}"));
    }
    s
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explain())
    }
}

impl std::error::Error for LoadError {}

/// Reads what `inspect` and `check` accept: a report, a run file (`report` key) or a
/// comparison (`runs` of 1–100 objects with `report`), each report validated as a cassette.
pub fn load_document(path: impl AsRef<Path>) -> Result<Vec<Cassette>, LoadError> {
    let path = path.as_ref();
    if let Some(verdict) = Cassette::stream_file(path) {
        return verdict
            .map(|c| vec![c])
            .map_err(|e| LoadError::config(path, e));
    }
    let raw = read_bounded(path)?;
    if raw.len() > MAX_DOCUMENT_BYTES {
        return Err(LoadError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    let text = std::str::from_utf8(&raw).map_err(|e| LoadError::Utf8 {
        path: path.to_path_buf(),
        problem: Utf8Problem::new(&raw, &e),
    })?;
    let data = parse(text).map_err(|e| LoadError::config(path, json_error(&e)))?;
    document_cassettes(path, data)
}

/// The document-shape rules of [`load_document`] over an already parsed value.
pub fn document_cassettes(path: &Path, data: Value) -> Result<Vec<Cassette>, LoadError> {
    let comparison = |message, detail: String| LoadError::Comparison {
        path: path.to_path_buf(),
        message,
        detail,
    };
    let mut o = match data {
        Value::Object(o) if o.contains_key("runs") || o.contains_key("report") => o,
        other => {
            return Cassette::from_parsed(other)
                .map(|c| vec![c])
                .map_err(|e| LoadError::config(path, e));
        }
    };
    if let Some(runs) = o.remove("runs") {
        let items = match runs {
            Value::Array(items) if (1..=MAX_COMPARISON_RUNS).contains(&items.len()) => items,
            Value::Array(items) => {
                return Err(comparison(
                    "Comparison needs 1–100 run records",
                    format!("runs holds {} records", items.len()),
                ));
            }
            other => {
                return Err(comparison(
                    "Comparison needs 1–100 run records",
                    format!("runs is {}, not an array", other.type_name()),
                ));
            }
        };
        let mut reports = Vec::with_capacity(items.len());
        for (i, run) in items.into_iter().enumerate() {
            match run {
                Value::Object(mut r) if r.contains_key("report") => {
                    reports.push(r.remove("report").unwrap_or(Value::Null));
                }
                _ => {
                    return Err(comparison(
                        "Each comparison run needs a report",
                        format!("runs[{i}] has no report"),
                    ));
                }
            }
        }
        return reports
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                Cassette::from_parsed(r).map_err(|error| LoadError::Config {
                    path: path.to_path_buf(),
                    run: Some(i),
                    error,
                })
            })
            .collect();
    }
    let report = o.remove("report").unwrap_or(Value::Null);
    Cassette::from_parsed(report)
        .map(|c| vec![c])
        .map_err(|e| LoadError::config(path, e.within("report")))
}

/// `inspect` text: one `Valid trace v1: {calls} calls, {effects} effects` line per cassette.
pub fn inspect_text(cassettes: &[Cassette]) -> String {
    cassettes
        .iter()
        .map(|c| {
            format!(
                "Valid trace v{}: {} calls, {} effects\n",
                crate::report::SCHEMA_VERSION,
                c.report.calls.len(),
                c.report.effects.len()
            )
        })
        .collect()
}

/// `inspect --json`'s summary of one cassette. The fields are the document's: validation
/// makes the schema version 1 and the coverage counts equal to the typed ones.
pub fn inspect_summary(c: &Cassette) -> Value {
    let mut o = Object::new();
    o.push("schema_version", crate::report::SCHEMA_VERSION);
    o.push("calls", c.report.calls.len());
    o.push("effects", c.report.effects.len());
    let mut coverage = Object::new();
    for (name, counts) in &c.report.coverage {
        coverage.push(name.clone(), counts.to_value());
    }
    o.push("coverage", coverage);
    o.push("capture", c.report.capture);
    Value::Object(o)
}

fn single_or_runs(mut items: Vec<Value>) -> Value {
    if items.len() == 1 {
        items.pop().unwrap_or(Value::Null)
    } else {
        let mut o = Object::new();
        o.push("runs", Value::Array(items));
        Value::Object(o)
    }
}

/// `inspect --json`: one line (Python `json.dumps` layout) plus a newline.
pub fn inspect_json(cassettes: &[Cassette]) -> String {
    let v = single_or_runs(cassettes.iter().map(inspect_summary).collect());
    one_line(&v) + "\n"
}

/// The outcome of `check` over a document's cassettes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckSummary {
    /// The checks of each cassette, in document order.
    pub runs: Vec<Vec<Check>>,
}

impl CheckSummary {
    /// Whether every cassette passed.
    pub fn passed(&self) -> bool {
        self.runs.iter().all(|c| verdict(c))
    }

    /// The command's exit code: 0 if every cassette passed, else 1.
    pub fn exit_code(&self) -> i32 {
        if self.passed() { 0 } else { 1 }
    }

    /// Text output: `PASS`/`FAIL`, then `✓`/`✗` lines, per cassette. One entry per printed
    /// line (a name holding a newline stays inside its line).
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for checks in &self.runs {
            out.push(if verdict(checks) { "PASS" } else { "FAIL" }.to_owned());
            for c in checks {
                let mark = if c.passed { '✓' } else { '✗' };
                out.push(format!("{mark} {}: {}", c.name, c.detail));
            }
        }
        out
    }

    /// [`CheckSummary::lines`] as text, each line ending in a newline.
    pub fn text(&self) -> String {
        self.lines().iter().map(|l| format!("{l}\n")).collect()
    }

    /// `--json` output: one line plus a newline.
    pub fn json(&self) -> String {
        let v = single_or_runs(self.runs.iter().map(|c| checks_to_value(c)).collect());
        one_line(&v) + "\n"
    }
}

/// `check`: per cassette, `require_triggered()` over every rule (sorted name order),
/// `no_duplicate_effects()` and `at_most_calls(max_calls)`.
pub fn check(cassettes: &[Cassette], max_calls: i64) -> Result<CheckSummary, ConfigError> {
    let mut runs = Vec::with_capacity(cassettes.len());
    for c in cassettes {
        let contract = Contract::new(&c.report)
            .require_triggered(&[])
            .no_duplicate_effects()
            .at_most_calls(max_calls, None)?;
        runs.push(contract.into_checks());
    }
    Ok(CheckSummary { runs })
}
