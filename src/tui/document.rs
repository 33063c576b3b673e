//! What the UI has open: a cassette or report, a run file, a comparison (several runs), or a
//! scenario file (run on open). Each run becomes a [`RunTab`] with its timeline and verdicts.

use std::path::{Path, PathBuf};

use crate::cassette::{self, Cassette, LoadError};
use crate::contract::Check;
use crate::json::{Value, parse};
use crate::lab::scenario_file::ScenarioFile;
use crate::lab::{self, Policy};
use crate::timeline::Timeline;

/// The lost-acknowledgement incident shipped with the binary, opened when no file is given.
pub const BUNDLED_INCIDENT: &str = include_str!("../../cassettes/incident.json");
/// The name shown for the bundled incident.
pub const BUNDLED_NAME: &str = "cassettes/incident.json (bundled)";

/// What kind of file is open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocKind {
    /// A bare report or cassette.
    Cassette,
    /// A run file (`report` inside).
    RunFile,
    /// A comparison (`runs`).
    Comparison,
    /// A scenario file, run on open.
    Scenario,
}

impl DocKind {
    /// Short label for the header.
    pub fn label(self) -> &'static str {
        match self {
            DocKind::Cassette => "cassette",
            DocKind::RunFile => "run",
            DocKind::Comparison => "comparison",
            DocKind::Scenario => "scenario",
        }
    }
}

/// One run the user can step through.
#[derive(Clone, Debug)]
pub struct RunTab {
    /// Label (policy name or `run N`).
    pub label: String,
    /// The policy, when known.
    pub policy: Option<Policy>,
    /// The recorded run.
    pub timeline: Timeline,
    /// The verdict for the whole run (the lab's full contract, or `check`'s).
    pub checks: Vec<Check>,
    /// Call budget the verdicts use.
    pub max_calls: i64,
    /// Report digest.
    pub digest: String,
}

/// An open document.
#[derive(Clone, Debug)]
pub struct Document {
    /// Where it came from (`None` for the bundled incident).
    pub path: Option<PathBuf>,
    /// What it is.
    pub kind: DocKind,
    /// Its runs (at least one).
    pub runs: Vec<RunTab>,
}

impl Document {
    /// The name shown in the header.
    pub fn name(&self) -> String {
        self.path
            .as_ref()
            .map_or_else(|| BUNDLED_NAME.to_owned(), |p| p.display().to_string())
    }
}

/// Opens a file the way `inspect` reads it (same errors), or a scenario file (runs it).
pub fn open(path: &Path) -> Result<Document, String> {
    let bytes = std::fs::read(path).map_err(|e| crate::cli::os_error(path, &e))?;
    if bytes.len() > crate::json::MAX_DOCUMENT_BYTES {
        return Err(crate::cli::trace::load_error_line(&LoadError::TooLarge {
            path: path.to_path_buf(),
        }));
    }
    let is_scenario = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|t| parse(t).ok())
        .and_then(|v| v.as_object().map(|o| o.contains_key("world")))
        .unwrap_or(false);
    if is_scenario {
        let file = crate::cli::lab_run::load_scenario(path)?;
        return from_scenario(Some(path.to_path_buf()), &file);
    }
    let cassettes =
        cassette::load_document(path).map_err(|e| crate::cli::trace::load_error_line(&e))?;
    from_cassettes(Some(path.to_path_buf()), &bytes, cassettes)
}

/// Opens the bundled incident.
pub fn bundled() -> Result<Document, String> {
    let c = Cassette::loads(BUNDLED_INCIDENT).map_err(|e| format!("ConfigurationError: {e}"))?;
    from_cassettes(None, BUNDLED_INCIDENT.as_bytes(), vec![c])
}

fn labels(bytes: &[u8], n: usize) -> (DocKind, Vec<Option<String>>) {
    let value = std::str::from_utf8(bytes).ok().and_then(|t| parse(t).ok());
    let policy = |v: &Value| {
        v.as_object()
            .and_then(|o| o.get("policy"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    match value.as_ref().and_then(Value::as_object) {
        Some(o) if o.contains_key("runs") => {
            let runs = o
                .get("runs")
                .and_then(Value::as_array)
                .map(|r| r.iter().map(policy).collect())
                .unwrap_or_default();
            (DocKind::Comparison, runs)
        }
        Some(o) if o.contains_key("report") => (
            DocKind::RunFile,
            vec![policy(value.as_ref().unwrap_or(&Value::Null))],
        ),
        _ => (DocKind::Cassette, vec![None; n]),
    }
}

fn from_cassettes(
    path: Option<PathBuf>,
    bytes: &[u8],
    cassettes: Vec<Cassette>,
) -> Result<Document, String> {
    let (kind, names) = labels(bytes, cassettes.len());
    let max_calls = 100;
    let summary = cassette::check(&cassettes, max_calls)
        .map_err(|e| format!("ConfigurationError: {}", e.message))?;
    let runs = cassettes
        .into_iter()
        .zip(summary.runs)
        .enumerate()
        .map(|(i, (c, checks))| {
            let name = names.get(i).cloned().flatten();
            RunTab {
                label: name.clone().unwrap_or_else(|| format!("run {}", i + 1)),
                policy: name.as_deref().and_then(Policy::parse),
                digest: c.digest(),
                timeline: Timeline::new(c.report),
                checks,
                max_calls,
            }
        })
        .collect();
    Ok(Document { path, kind, runs })
}

/// Runs a scenario file's policies and opens the runs.
pub fn from_scenario(path: Option<PathBuf>, file: &ScenarioFile) -> Result<Document, String> {
    let runs = file
        .policy
        .policies()
        .into_iter()
        .map(|p| {
            let run = lab::run(&file.scenario, p, &file.config)
                .map_err(|e| format!("ConfigurationError: {e}"))?;
            Ok(RunTab {
                label: p.as_str().to_owned(),
                policy: Some(p),
                digest: run.digest.clone(),
                checks: run.checks.clone(),
                max_calls: file.config.max_calls,
                timeline: Timeline::new(run.report),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Document {
        path,
        kind: DocKind::Scenario,
        runs,
    })
}
