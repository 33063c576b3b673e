//! What the UI has open: a cassette or report, a run file, a comparison (several runs), or a
//! scenario file (run on open). Each run becomes a [`RunTab`] with its timeline and verdicts;
//! a shipping scenario keeps its [`ScenarioFile`] so the runner can edit and rerun it.

use std::path::{Path, PathBuf};

use crate::cassette::{self, Cassette, LoadError};
use crate::contract::Check;
use crate::executor::approval::{NoTerminal, Prompt};
use crate::executor::batch::BatchResult;
use crate::executor::scenario::ExecutorScenario;
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
    /// For executor runs: each batch's lanes, envelopes and log (empty otherwise).
    pub batches: Vec<BatchResult>,
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
    /// The shipping scenario the runs come from, when known (scenario files, and after an
    /// edit); the runner edits and reruns it.
    pub scenario: Option<ScenarioFile>,
    /// The executor scenario, for Orbit files (re-run with a person's approvals in the TUI).
    pub orbit: Option<ExecutorScenario>,
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
/// The file is read and parsed once.
pub fn open(path: &Path) -> Result<Document, String> {
    let line = |e: LoadError| crate::cli::trace::load_error_line(&e);
    let bytes = crate::fsread::read_document(path).map_err(|e| crate::cli::os_error(path, &e))?;
    if bytes.len() > crate::json::MAX_DOCUMENT_BYTES {
        return Err(line(LoadError::TooLarge {
            path: path.to_path_buf(),
        }));
    }
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        line(LoadError::Utf8 {
            path: path.to_path_buf(),
            problem: cassette::Utf8Problem::new(&bytes, &e),
        })
    })?;
    let value = parse(text).map_err(|e| line(LoadError::config(path, cassette::json_error(&e))))?;
    let world = value
        .as_object()
        .and_then(|o| o.get("world"))
        .map(|w| w.as_str().unwrap_or("").to_owned());
    match world.as_deref() {
        Some("orbit") => {
            let scenario = ExecutorScenario::from_value(&value)
                .map_err(|e| crate::cli::lab_run::scenario_error_line(path, &e))?;
            open_orbit(path, scenario, &mut NoTerminal)
        }
        Some(_) => {
            let file = ScenarioFile::from_value(&value)
                .map_err(|e| crate::cli::lab_run::scenario_error_line(path, &e))?;
            from_scenario(Some(path.to_path_buf()), &file)
        }
        None => {
            let names = labels(&value);
            let cassettes = cassette::document_cassettes(path, value).map_err(line)?;
            from_cassettes(Some(path.to_path_buf()), names, cassettes)
        }
    }
}

/// Runs an executor scenario (asking `prompt` when its approver is interactive) and opens the
/// run: its report as the timeline, its batches as lanes.
pub fn open_orbit(
    path: &Path,
    scenario: ExecutorScenario,
    prompt: &mut dyn Prompt,
) -> Result<Document, String> {
    let run = crate::lab::orbit::run::run_with_prompt(&scenario, scenario.seed, None, prompt)
        .map_err(|e| crate::cli::lab_run::scenario_error_line(path, &e))?;
    let checks = cassette::check(
        &[Cassette::from_report(&run.report).map_err(|e| format!("ConfigurationError: {e}"))?],
        100,
    )
    .map(|s| s.runs.into_iter().next().unwrap_or_default())
    .map_err(|e| format!("ConfigurationError: {}", e.message))?;
    Ok(Document {
        path: Some(path.to_path_buf()),
        kind: DocKind::Scenario,
        runs: vec![RunTab {
            label: "executor".into(),
            policy: None,
            digest: run.digest.clone(),
            timeline: Timeline::new(run.report),
            checks,
            max_calls: 100,
            batches: run.batches,
        }],
        scenario: None,
        orbit: Some(scenario),
    })
}

/// Opens the bundled incident.
pub fn bundled() -> Result<Document, String> {
    let c = Cassette::loads(BUNDLED_INCIDENT).map_err(|e| format!("ConfigurationError: {e}"))?;
    from_cassettes(None, (DocKind::Cassette, vec![None]), vec![c])
}

/// The document's kind and the policy name of each run, when recorded.
fn labels(value: &Value) -> (DocKind, Vec<Option<String>>) {
    let policy = |v: &Value| {
        v.as_object()
            .and_then(|o| o.get("policy"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    match value.as_object() {
        Some(o) if o.contains_key("runs") => {
            let runs = o
                .get("runs")
                .and_then(Value::as_array)
                .map(|r| r.iter().map(policy).collect())
                .unwrap_or_default();
            (DocKind::Comparison, runs)
        }
        Some(o) if o.contains_key("report") => (DocKind::RunFile, vec![policy(value)]),
        _ => (DocKind::Cassette, Vec::new()),
    }
}

fn from_cassettes(
    path: Option<PathBuf>,
    (kind, names): (DocKind, Vec<Option<String>>),
    cassettes: Vec<Cassette>,
) -> Result<Document, String> {
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
                batches: Vec::new(),
            }
        })
        .collect();
    Ok(Document {
        path,
        kind,
        runs,
        scenario: None,
        orbit: None,
    })
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
                batches: Vec::new(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Document {
        path,
        kind: DocKind::Scenario,
        runs,
        scenario: Some(file.clone()),
        orbit: None,
    })
}
