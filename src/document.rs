//! One way in: what is this file and what does it hold. A file is read once with the bounded
//! reader, recognised — a cassette or bare report, a run file, a comparison, or a scenario file
//! of some world — validated, and returned as typed data; or the reason it cannot be used, as
//! one [`Error`] whose `Display` is the line both faces print.
//!
//! Three ways to ask, one reading path:
//! - [`open_trace`]: the reference's semantics for `inspect`, `check` and `replay` (traces only).
//! - [`open_scenario`]: a scenario file of any world, for `run`.
//! - [`Document::open`]: anything; a scenario is run on open. This is what the explorer shows.
//!
//! A cassette with a `.mcp.json` sidecar next to it is an MCP recording: the sidecar's session
//! facts come with it, and its own call budget and checks judge it.
//!
//! ```
//! use toolstorm::document::Document;
//!
//! let doc = Document::open("cassettes/incident.json".as_ref())?;
//! for run in &doc.runs {
//!     let passed = run.checks.iter().all(|c| c.passed);
//!     println!("{}: {} calls, {}", run.label, run.timeline.report().calls.len(),
//!              if passed { "PASS" } else { "FAIL" });
//! }
//! // The incident is a lost acknowledgement that committed twice: `check` fails it.
//! assert!(!doc.runs[0].checks.iter().all(|c| c.passed));
//! # Ok::<(), toolstorm::document::Error>(())
//! ```

pub mod ask;
pub mod campaign;
pub mod compare;
mod error;
pub mod explain;
mod judge;
pub mod plan;
mod scenario;

use std::path::{Path, PathBuf};

pub use error::{Error, OsError, Problem};
pub use judge::{declared_duplicate_text, how_it_ended, judge};
pub use scenario::{LabRuns, Scenario, ScenarioRun, Settings, World};

use crate::cassette::{self, Cassette, Utf8Problem, json_error};
use crate::contract::Check;
use crate::error::ConfigError;
use crate::executor::approval::{NoTerminal, Prompt};
use crate::executor::batch::BatchResult;
use crate::executor::scenario::ExecutorScenario;
use crate::json::{MAX_DOCUMENT_BYTES, Value, parse};
use crate::lab::Policy;
use crate::lab::scenario_file::ScenarioFile;
use crate::mcp::scenario::McpScenario;
use crate::mcp::session::{McpSession, SessionError, sidecar_path};
use crate::scenario_fields::invalid;
use crate::timeline::Timeline;

/// The lost-acknowledgement incident shipped with the binary, opened when no file is given.
pub const BUNDLED_INCIDENT: &str = include_str!("../cassettes/incident.json");
/// The name shown for the bundled incident.
pub const BUNDLED_NAME: &str = "cassettes/incident.json (bundled)";
/// The call budget `check` judges traces against unless told otherwise.
pub const DEFAULT_MAX_CALLS: i64 = 100;

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
    /// A session recorded by the MCP proxy: a cassette with its `.mcp.json` sidecar.
    McpRecording,
    /// A campaign file: one agent's runs, each its recording.
    Campaign,
}

impl DocKind {
    /// Short label for the header.
    pub fn label(self) -> &'static str {
        match self {
            DocKind::Cassette => "cassette",
            DocKind::RunFile => "run",
            DocKind::Comparison => "comparison",
            DocKind::Scenario => "scenario",
            DocKind::McpRecording => "mcp recording",
            DocKind::Campaign => "campaign",
        }
    }
}

/// The traces a cassette, run file or comparison holds, validated as the reference does.
#[derive(Clone, Debug)]
pub struct Trace {
    /// Cassette, run file or comparison.
    pub kind: DocKind,
    /// Each run's recorded policy name, when the file has one.
    pub labels: Vec<Option<String>>,
    /// Each run's cassette, in file order (at least one).
    pub cassettes: Vec<Cassette>,
    /// The session facts of an MCP recording (its sidecar), when there is one.
    pub mcp: Option<McpSession>,
    /// Each run's verdict as the file recorded it, when it did.
    pub recorded: Vec<Option<Recorded>>,
    /// For an MCP recording whose proxy did not finish: what was recovered from its journal
    /// (one line for people), when the journal was ahead of the files.
    pub recovered: Option<String>,
    /// For an MCP recording: its proxy is still running (it holds the recording's lock), so
    /// the session goes on and its verdicts are so far.
    pub live: bool,
    /// For an MCP recording whose journal holds more calls than its files can: the files
    /// hold fewer calls than the session answered (`recovered` says how many; `Recording
    /// complete` fails).
    pub short: bool,
    /// For an executor's run output: its batches (lanes and log), drawn as a live run's are.
    pub batches: Vec<BatchResult>,
    /// For an `ask` record: its rounds, the model's words and calls, tokens and end.
    pub ask: Option<Box<ask::AskView>>,
}

/// What a file holds, before anything runs.
#[derive(Clone, Debug)]
pub enum Contents {
    /// Recorded traces.
    Trace(Trace),
    /// A scenario to run.
    Scenario(Scenario),
    /// A campaign file.
    Campaign(Box<crate::campaign::CampaignFile>),
}

/// A campaign as the explorer shows it: the file, and the record of each of the document's
/// runs (same order; runs without a recording are not among them).
#[derive(Clone, Debug)]
pub struct CampaignView {
    /// The campaign file.
    pub file: crate::campaign::CampaignFile,
    /// Each shown run's record, in the document's run order.
    pub records: Vec<crate::campaign::RunRecord>,
    /// Runs finished without a recording that opens, with why.
    pub missing: Vec<(i64, String)>,
    /// Runs (by index in the document) whose recording is not read yet, and where it is.
    pub unloaded: std::collections::BTreeMap<usize, PathBuf>,
}

/// One run the user can step through.
#[derive(Clone, Debug)]
pub struct Run {
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
    /// For executor runs with an interactive approver: each question asked, in order, and its
    /// answer (`None`: nobody could be asked, so denied).
    pub approvals: Vec<(String, Option<bool>)>,
    /// Which contract `checks` come from, for people: `check · budget 100`, `lab contract of
    /// lost_ack · budget 8`, `lab contract recorded in the file · budget 8 (check: 100)`.
    pub contract: String,
    /// For a run the MCP proxy recorded (a recording, a campaign's run, an agent's re-run):
    /// its session facts — per call, what the client received, and each effect's evidence.
    pub mcp: Option<std::sync::Arc<McpSession>>,
    /// For an `ask` record: its rounds, the model's words and calls, tokens and end.
    pub ask: Option<std::sync::Arc<ask::AskView>>,
    /// What it ran with and where its recording is, when that is known beyond the file
    /// shown (a campaign's run, an agent's re-run): [`plan::RunPlan`].
    pub plan: Option<std::sync::Arc<plan::RunPlan>>,
    /// For an MCP recording with a wire log beside it: every message of its session, in
    /// order ([`crate::mcp::wirelog`]).
    pub wire: Option<std::sync::Arc<crate::mcp::wirelog::read::Wire>>,
}

/// A run's verdict as its file recorded it (run files and comparisons carry the lab's
/// contract).
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The recorded checks.
    pub checks: Vec<Check>,
    /// The run's own call budget (its `config.max_calls`), when recorded.
    pub max_calls: Option<i64>,
}

/// An open document: its runs, and the scenario they come from when there is one.
#[derive(Clone, Debug)]
pub struct Document {
    /// Where it came from (`None` for the bundled incident).
    pub path: Option<PathBuf>,
    /// What it is.
    pub kind: DocKind,
    /// Its runs (at least one).
    pub runs: Vec<Run>,
    /// The shipping scenario the runs come from, when known (scenario files, and after an
    /// edit); the runner edits and reruns it.
    pub scenario: Option<ScenarioFile>,
    /// The executor scenario, for Orbit files (re-run with a person's approvals in the TUI).
    pub orbit: Option<ExecutorScenario>,
    /// The campaign, for campaign files.
    pub campaign: Option<CampaignView>,
    /// An MCP recording whose session is still running: its verdicts are so far.
    pub live: bool,
}

/// Reads `path` once (bounded) and parses it as JSON, with the reference's limits.
pub fn read_json(path: &Path) -> Result<Value, Error> {
    let bytes = crate::fsread::read_document(path).map_err(|e| Error::io(path, e))?;
    parse_json(path, &bytes)
}

/// Parses bytes read from `path` (or a stream named so) as JSON, with the reference's limits.
pub fn parse_json(path: &Path, bytes: &[u8]) -> Result<Value, Error> {
    if bytes.len() > MAX_DOCUMENT_BYTES {
        return Err(Error::new(path, Problem::TooLarge));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Error::new(path, Problem::NotUtf8(Utf8Problem::new(bytes, &e))))?;
    parse(text).map_err(|e| Error::invalid(Some(path), json_error(&e)))
}

/// Validates a parsed scenario document of the world it names. A document without a `world`
/// is read as a shipping scenario (so the message says what is missing).
fn scenario_from_value(path: &Path, value: &Value) -> Result<Scenario, Error> {
    let world = match value.as_object().and_then(|o| o.get("world")) {
        None => World::Shipping,
        Some(w) => match w.as_str().and_then(World::parse) {
            Some(world) => world,
            None => {
                let names: Vec<&str> = World::ALL.iter().map(|w| w.as_str()).collect();
                let why = match w.as_str() {
                    Some(name) => format!(
                        "unknown world {name:?}; expected one of: {}",
                        names.join(", ")
                    ),
                    None => "expected a non-empty string".to_owned(),
                };
                return Err(Error::invalid(Some(path), invalid("world", &why)));
            }
        },
    };
    let parsed = match world {
        World::Shipping => ScenarioFile::from_value(value).map(Scenario::Shipping),
        World::Orbit => ExecutorScenario::from_value(value).map(Scenario::Orbit),
        World::Mcp => McpScenario::from_value(value).map(Scenario::Mcp),
    };
    parsed.map_err(|e| Error::invalid(Some(path), e))
}

impl Run {
    /// The run's name for people: a policy's name with its title (`retry (Unchecked
    /// retries)`), else its label.
    pub fn name(&self) -> String {
        match self.policy {
            Some(p) => format!("{} ({})", p.as_str(), p.title()),
            None => self.label.clone(),
        }
    }
}

/// What a run file says about one of its runs: the policy name and the recorded verdict.
type Described = (Option<String>, Option<Recorded>);

/// The document's kind, and per run the policy name and the recorded verdict, when present.
fn trace_labels(value: &Value) -> (DocKind, Vec<Described>) {
    let describe = |v: &Value| {
        let o = v.as_object();
        let policy = o
            .and_then(|o| o.get("policy"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let recorded = o
            .and_then(|o| o.get("contract"))
            .and_then(crate::contract::checks_from_value)
            .map(|checks| Recorded {
                checks,
                max_calls: o
                    .and_then(|o| o.get("config"))
                    .and_then(Value::as_object)
                    .and_then(|c| c.get("max_calls"))
                    .and_then(Value::as_i64),
            });
        (policy, recorded)
    };
    match value.as_object() {
        Some(o) if o.contains_key("runs") => {
            let runs = o
                .get("runs")
                .and_then(Value::as_array)
                .map(|r| r.iter().map(describe).collect())
                .unwrap_or_default();
            (DocKind::Comparison, runs)
        }
        Some(o) if o.contains_key("report") => (DocKind::RunFile, vec![describe(value)]),
        _ => (DocKind::Cassette, Vec::new()),
    }
}

/// For a valid file of another kind given where a recording belongs: what it is and what to
/// do with it.
fn other_kind(path: &Path, value: &Value) -> Option<String> {
    let o = value.as_object()?;
    let name = crate::printable::quoted(&path.display().to_string()).into_owned();
    let program = crate::exit::PROGRAM;
    if o.contains_key("world") {
        return Some(format!(
            "a scenario file, not a recording: `{program} run {name}` runs it and \
             `{program} {name}` explores it"
        ));
    }
    if o.get("kind").and_then(Value::as_str) == Some("toolstorm-mcp-session") {
        return Some(
            "the session sidecar of an MCP recording: open the cassette next to it (the same \
             name without `.mcp`)"
                .to_owned(),
        );
    }
    let runs = o.get("runs").and_then(Value::as_array)?;
    let verdicts = !runs.is_empty()
        && runs.iter().all(|r| {
            r.as_object()
                .is_some_and(|r| r.contains_key("contract") && !r.contains_key("report"))
        });
    verdicts.then(|| {
        "a verdict file (`run --verdict`): it holds verdicts, not calls; the calls are in the \
         run's cassette (`run --cassette`) or result (`run --output`)"
            .to_owned()
    })
}

/// The traces of a parsed trace document.
fn trace_from_value(path: &Path, value: Value) -> Result<Trace, Error> {
    let (kind, described) = trace_labels(&value);
    let hint = other_kind(path, &value);
    let batches = if kind == DocKind::RunFile {
        crate::executor::batch_file::batches(&value).map_err(|e| Error::invalid(Some(path), e))?
    } else {
        Vec::new()
    };
    let ask = if kind == DocKind::RunFile {
        ask::AskView::from_value(&value).map(Box::new)
    } else {
        None
    };
    let cassettes = cassette::document_cassettes(path, value)
        .map_err(Error::from)
        .map_err(|e| match hint {
            Some(why) => e.explained(why),
            None => e,
        })?;
    let (labels, recorded) = described.into_iter().unzip();
    Ok(Trace {
        kind,
        labels,
        cassettes,
        mcp: None,
        recorded,
        recovered: None,
        short: false,
        live: false,
        batches,
        ask,
    })
}

/// The sidecar of an MCP recording at `path`, if there is one (a bare cassette only); it must
/// have been written with this cassette.
fn sidecar_of(path: &Path, trace: &mut Trace) -> Result<(), Error> {
    let side = sidecar_path(path);
    if trace.kind != DocKind::Cassette || !side.exists() {
        return Ok(());
    }
    let session = McpSession::load(&side).map_err(|e| match e {
        SessionError::Io(e) => Error::io(&side, e),
        SessionError::Invalid(c) => Error::invalid(Some(&side), c),
    })?;
    if let Some(c) = trace.cassettes.first() {
        session
            .check_bound(c)
            .map_err(|e| Error::invalid(Some(&side), e))?;
    }
    trace.kind = DocKind::McpRecording;
    trace.mcp = Some(session);
    Ok(())
}

/// An MCP recording whose journal is still there (the proxy is running, or was killed): the
/// recording as the journal describes it, which holds every answer a client received.
fn journaled(path: &Path) -> Result<Option<Trace>, Error> {
    match crate::mcp::journal::recover(path) {
        Ok(None) => Ok(None),
        Ok(Some(r)) => Ok(Some(Trace {
            kind: DocKind::McpRecording,
            labels: Vec::new(),
            cassettes: vec![r.cassette],
            mcp: Some(r.session),
            recorded: Vec::new(),
            recovered: r.note,
            short: r.short,
            live: crate::mcp::recorder::is_live(path),
            batches: Vec::new(),
            ask: None,
        })),
        Err(e) => {
            let journal = crate::mcp::session::journal_path(path);
            Err(match e {
                crate::mcp::journal::JournalError::Io(e) => Error::io(&journal, e),
                crate::mcp::journal::JournalError::Invalid(c) => Error::invalid(Some(&journal), c),
            })
        }
    }
}

/// The one run of the recording at `at`, or why it cannot be shown.
fn read_run(at: &Path) -> Result<Run, String> {
    let doc = open_trace(at).and_then(|t| Document::from_trace(Some(at.to_path_buf()), t));
    match doc {
        Ok(d) => d
            .runs
            .into_iter()
            .next()
            .ok_or_else(|| "its recording holds no run".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// A campaign run not read yet: its verdict is the campaign file's, its calls come later.
fn unread_run(seed: i64) -> Run {
    let report = crate::report::Report {
        seed: crate::json::Int::Small(seed),
        clock: String::new(),
        calls: Vec::new(),
        effects: Vec::new(),
        rules: Vec::new(),
        coverage: Vec::new(),
        budget_rejections: 0,
        capture: false,
    };
    Run {
        label: String::new(),
        policy: None,
        timeline: Timeline::new(report),
        checks: Vec::new(),
        max_calls: 0,
        digest: String::new(),
        batches: Vec::new(),
        approvals: Vec::new(),
        contract: String::new(),
        mcp: None,
        ask: None,
        plan: None,
        wire: None,
    }
}

/// Run `r` of a campaign, as the campaign judged it, with `run`'s recording.
fn campaign_run(
    out: &Path,
    file: &crate::campaign::CampaignFile,
    r: &crate::campaign::RunRecord,
    mut run: Run,
) -> Run {
    run.label = format!("campaign run {}", r.run);
    run.plan = plan::of_campaign_run(out, file, r.seed).map(std::sync::Arc::new);
    run.contract = format!(
        "check as the campaign judges it (Fault exercised left out; the oracle beside) · run \
         {} of {}",
        r.run,
        file.seeds.len()
    );
    // The verdict is the campaign's: its checks, and the oracle's word.
    run.checks = r
        .checks
        .iter()
        .map(|c| crate::contract::Check {
            name: c.name.clone(),
            passed: c.passed,
            detail: c.detail.clone(),
        })
        .collect();
    add_run_outcome(&mut run, r, file.verify.as_deref());
    run
}

/// Adds to `run`'s checks what its run record says beyond its recording: the oracle's word
/// (`--verify`, named `verify`) and how the run ended (a timeout, an agent that died).
pub fn add_run_outcome(run: &mut Run, r: &crate::campaign::RunRecord, verify: Option<&str>) {
    if let Some(ok) = r.oracle {
        run.checks.push(crate::contract::Check {
            name: "Oracle (--verify)".into(),
            passed: ok,
            detail: format!(
                "{} exited {}",
                verify.unwrap_or("the oracle"),
                if ok { "0" } else { "non-zero" }
            ),
        });
    }
    if r.outcome != crate::campaign::Outcome::Finished || r.note.is_some() {
        run.checks.push(crate::contract::Check {
            name: "Run finished".into(),
            passed: false,
            detail: r
                .note
                .clone()
                .unwrap_or_else(|| format!("the run ended: {}", r.outcome.as_str())),
        });
    }
}

/// A bare trace read from `path` a part at a time ([`Cassette::stream_file`]); `None` leaves
/// the file to the whole-file readers.
fn streamed_trace(path: &Path) -> Option<Result<Trace, Error>> {
    let verdict = Cassette::stream_file(path)?;
    Some(
        verdict
            .map(bare_cassette)
            .map_err(|e| Error::from(cassette::LoadError::config(path, e))),
    )
}

/// The trace of one bare cassette.
fn bare_cassette(cassette: Cassette) -> Trace {
    Trace {
        kind: DocKind::Cassette,
        labels: Vec::new(),
        cassettes: vec![cassette],
        mcp: None,
        recorded: Vec::new(),
        recovered: None,
        short: false,
        live: false,
        batches: Vec::new(),
        ask: None,
    }
}

/// Reads `path` and says what it holds: traces (validated) or a scenario (validated, not run).
/// A top-level `world` key makes a scenario file.
pub fn read(path: &Path) -> Result<Contents, Error> {
    if let Some(t) = journaled(path)? {
        return Ok(Contents::Trace(t));
    }
    let contents = match streamed_trace(path) {
        Some(trace) => Contents::Trace(trace?),
        None => {
            let bytes = crate::fsread::read_document(path).map_err(|e| Error::io(path, e))?;
            // A campaign file grows with its runs past the documents' limit: it has its own.
            if bytes.len() > MAX_DOCUMENT_BYTES
                && crate::campaign::file::looks_like_campaign(&bytes)
            {
                return campaign::read_file(path).map(|c| Contents::Campaign(Box::new(c)));
            }
            read_bytes(path, &bytes)?
        }
    };
    match contents {
        Contents::Trace(mut t) => {
            sidecar_of(path, &mut t)?;
            Ok(Contents::Trace(t))
        }
        other => Ok(other),
    }
}

/// [`read`] for bytes already in memory (`name` is what messages call them).
pub fn read_bytes(name: &Path, bytes: &[u8]) -> Result<Contents, Error> {
    let value = parse_json(name, bytes)?;
    if crate::campaign::CampaignFile::is_campaign(&value) {
        return crate::campaign::CampaignFile::from_value(&value)
            .map(|c| Contents::Campaign(Box::new(c)))
            .map_err(|e| Error::invalid(Some(name), e));
    }
    // A scenario has a world and no report; an executor's `run --output` file has both (the
    // world it ran, and the report of what happened): it is a recording.
    let scenario = value
        .as_object()
        .is_some_and(|o| o.contains_key("world") && !o.contains_key("report"));
    if scenario {
        scenario_from_value(name, &value).map(Contents::Scenario)
    } else {
        trace_from_value(name, value).map(Contents::Trace)
    }
}

/// Reads `path` as the reference reads traces (`inspect`, `check`, `replay`): a bare report, a
/// run file or a comparison, with its limits, verdicts and messages.
pub fn open_trace(path: &Path) -> Result<Trace, Error> {
    if let Some(t) = journaled(path)? {
        return Ok(t);
    }
    let mut trace = match streamed_trace(path) {
        Some(trace) => trace?,
        None => {
            let bytes = crate::fsread::read_document(path).map_err(|e| Error::io(path, e))?;
            let value = parse_json(path, &bytes)?;
            if crate::campaign::CampaignFile::is_campaign(&value) {
                return Err(Error::invalid(
                    Some(path),
                    ConfigError::new("A campaign file is not a trace")
                        .at("kind")
                        .because(
                            "its runs' recordings are in the folder beside it: `toolstorm-tui \
                         campaign FILE` prints its table, and each recording can be checked or \
                         inspected itself",
                        ),
                ));
            }
            trace_from_value(path, value)?
        }
    };
    sidecar_of(path, &mut trace)?;
    Ok(trace)
}

/// Reads `path` as a scenario file of any world (`run`).
pub fn open_scenario(path: &Path) -> Result<Scenario, Error> {
    scenario_from_value(path, &read_json(path)?)
}

impl Document {
    /// Opens any file; a scenario is run with its own settings, and an interactive approver
    /// has no one to ask (it denies).
    pub fn open(path: &Path) -> Result<Document, Error> {
        Document::open_with(path, &mut NoTerminal)
    }

    /// [`Document::open`], with `prompt` answering an interactive approver.
    pub fn open_with(path: &Path, prompt: &mut dyn Prompt) -> Result<Document, Error> {
        match read(path)? {
            Contents::Trace(t) => {
                let mut doc = Document::from_trace(Some(path.to_path_buf()), t)?;
                doc.add_proxy_recording(path);
                Ok(doc)
            }
            Contents::Campaign(c) => Document::from_campaign(path, *c),
            Contents::Scenario(s) => {
                let run = s.run(Some(path), &Settings::default(), prompt)?;
                Document::from_run(Some(path.to_path_buf()), &s, run)
            }
        }
    }

    /// An `ask` record over an MCP scenario has the proxy's recording beside it
    /// (`RUN.mcp.json`): the calls as the server saw them — the faults the model met, what each
    /// committed — open as the record's second run, labelled as such. A recording that is not
    /// there, or does not open, leaves the record as it is (`check RUN.json` names its trouble).
    fn add_proxy_recording(&mut self, path: &Path) {
        if self.runs.len() != 1 || self.runs[0].ask.is_none() {
            return;
        }
        let beside = path.with_extension("mcp.json");
        if !beside.is_file() {
            return;
        }
        let Ok(proxy) = open_trace(&beside).and_then(|t| Document::from_trace(None, t)) else {
            return;
        };
        let name = beside
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        if let Some(mut run) = proxy.runs.into_iter().next() {
            run.label = format!("the proxy's recording ({name})");
            self.runs[0].label = "the model's calls (ask)".into();
            self.runs.push(run);
        }
    }

    /// The bundled lost-acknowledgement incident.
    pub fn bundled() -> Result<Document, Error> {
        let name = Path::new(BUNDLED_NAME);
        let c = Cassette::loads(BUNDLED_INCIDENT).map_err(|e| Error::invalid(Some(name), e))?;
        let trace = Trace {
            labels: vec![None],
            ..bare_cassette(c)
        };
        Document::from_trace(None, trace)
    }

    /// The runs of recorded traces, judged as `check` judges them.
    pub fn from_trace(path: Option<PathBuf>, trace: Trace) -> Result<Document, Error> {
        let summary = judge(&trace, None).map_err(|e| Error::invalid(path.as_deref(), e))?;
        let max_calls = trace
            .mcp
            .as_ref()
            .map_or(DEFAULT_MAX_CALLS, |m| m.max_calls);
        let check_contract = match &trace.mcp {
            Some(m) if !m.checks.is_empty() => {
                format!("check and the scenario's checks · the recording's budget {max_calls}")
            }
            Some(_) => format!("check · the recording's budget {max_calls}"),
            None => format!("check · budget {max_calls}"),
        };
        let session = trace.mcp.map(std::sync::Arc::new);
        // A recording's wire log, when it has one (read bounded; a bad line is skipped).
        let wire = match (&path, trace.kind) {
            (Some(p), DocKind::McpRecording) => {
                crate::mcp::wirelog::read::read(&crate::mcp::wirelog::wire_path(p))
                    .map(std::sync::Arc::new)
            }
            _ => None,
        };
        let live = trace.live;
        // A run output's batches belong to its one run.
        let mut batches = Some(trace.batches);
        let mut ask = trace.ask.map(std::sync::Arc::from);
        let runs = trace
            .cassettes
            .into_iter()
            .zip(summary.runs)
            .enumerate()
            .map(|(i, (c, checks))| {
                let name = trace.labels.get(i).cloned().flatten();
                // A run file's own verdict (the lab's contract) is what its story was judged
                // by; `check`'s core contract is the fallback.
                let recorded = trace.recorded.get(i).cloned().flatten();
                let (checks, max_calls, contract) = match recorded {
                    Some(r) => {
                        let budget = r.max_calls.unwrap_or(max_calls);
                        let contract = format!(
                            "lab contract recorded in the file · budget {budget} \
                             (check: {max_calls})"
                        );
                        (r.checks, budget, contract)
                    }
                    None => (checks, max_calls, check_contract.clone()),
                };
                Run {
                    label: name.clone().unwrap_or_else(|| format!("run {}", i + 1)),
                    policy: name.as_deref().and_then(Policy::parse),
                    digest: c.digest(),
                    timeline: Timeline::new(c.report),
                    checks,
                    max_calls,
                    batches: batches.take().unwrap_or_default(),
                    approvals: Vec::new(),
                    contract,
                    mcp: session.clone(),
                    ask: ask.take(),
                    plan: None,
                    wire: wire.clone(),
                }
            })
            .collect();
        Ok(Document {
            path,
            kind: trace.kind,
            runs,
            scenario: None,
            orbit: None,
            campaign: None,
            live,
        })
    }

    /// Whether the session of a live recording still runs (its proxy holds the recording):
    /// false once it ended, however it ended.
    pub fn still_live(&self) -> bool {
        self.live
            && self
                .path
                .as_deref()
                .is_some_and(crate::mcp::recorder::is_live)
    }

    /// A campaign's runs, each its recording judged as `check` judges it, labelled with its
    /// seed and verdict. Runs whose recording is missing are listed as such. Only the first
    /// run's recording is read now: the others are read when they are shown
    /// ([`Document::load_run`]), so a campaign of thousands of runs opens at once.
    pub fn from_campaign(
        path: &Path,
        file: crate::campaign::CampaignFile,
    ) -> Result<Document, Error> {
        let mut runs = Vec::new();
        let mut records = Vec::new();
        let mut missing = Vec::new();
        let mut unloaded = std::collections::BTreeMap::new();
        for r in &file.runs {
            let at = campaign::recording_path(path, r);
            if !runs.is_empty() {
                match std::fs::metadata(&at) {
                    Ok(m) if m.is_file() => {
                        unloaded.insert(runs.len(), at);
                        runs.push(campaign_run(path, &file, r, unread_run(r.seed)));
                        records.push(r.clone());
                    }
                    Ok(_) => missing.push((r.seed, "its recording is not a file".to_owned())),
                    Err(e) => missing.push((
                        r.seed,
                        r.note
                            .clone()
                            .unwrap_or_else(|| Error::io(&at, e).to_string()),
                    )),
                }
                continue;
            }
            match read_run(&at) {
                Ok(run) => {
                    runs.push(campaign_run(path, &file, r, run));
                    records.push(r.clone());
                }
                Err(e) => missing.push((r.seed, r.note.clone().unwrap_or(e))),
            }
        }
        if runs.is_empty() {
            return Err(Error::invalid(
                Some(path),
                ConfigError::new("Invalid campaign file")
                    .at("runs")
                    .because(if file.runs.is_empty() {
                        "no run has finished yet".to_owned()
                    } else {
                        format!(
                            "no finished run has a recording that opens (first: seed {}: {})",
                            missing.first().map_or(0, |m| m.0),
                            missing.first().map_or("", |m| m.1.as_str())
                        )
                    }),
            ));
        }
        Ok(Document {
            path: Some(path.to_path_buf()),
            kind: DocKind::Campaign,
            runs,
            scenario: None,
            orbit: None,
            live: false,
            campaign: Some(CampaignView {
                file,
                records,
                missing,
                unloaded,
            }),
        })
    }

    /// Reads run `i`'s recording if it was not read yet (a campaign's runs are read when they
    /// are shown). An error names the recording; the run stays unread.
    pub fn load_run(&mut self, i: usize) -> Result<(), String> {
        let Some(c) = self.campaign.as_mut() else {
            return Ok(());
        };
        let Some(at) = c.unloaded.get(&i).cloned() else {
            return Ok(());
        };
        let (Some(record), Some(run)) = (c.records.get(i), self.runs.get_mut(i)) else {
            return Ok(());
        };
        let read = read_run(&at)?;
        let out = self.path.clone().unwrap_or_default();
        *run = campaign_run(&out, &c.file, record, read);
        c.unloaded.remove(&i);
        Ok(())
    }

    /// The runs of a scenario that has run.
    pub fn from_run(
        path: Option<PathBuf>,
        scenario: &Scenario,
        run: ScenarioRun,
    ) -> Result<Document, Error> {
        let (runs, scenario_file, orbit) = match run {
            ScenarioRun::Lab(lab) => {
                let runs = lab
                    .runs
                    .into_iter()
                    .map(|r| Run {
                        contract: format!(
                            "lab contract of {} · budget {}",
                            r.scenario, r.config.max_calls
                        ),
                        label: r.policy.as_str().to_owned(),
                        policy: Some(r.policy),
                        digest: r.digest,
                        checks: r.checks,
                        max_calls: r.config.max_calls,
                        timeline: Timeline::new(r.report),
                        batches: Vec::new(),
                        approvals: Vec::new(),
                        mcp: None,
                        ask: None,
                        plan: None,
                        wire: None,
                    })
                    .collect();
                (runs, Some(lab.file), None)
            }
            ScenarioRun::Orbit(o) => {
                let o = *o;
                // An executor run is judged as `check` judges its cassette.
                let checks = Cassette::from_report(&o.report)
                    .and_then(|c| cassette::check(&[c], DEFAULT_MAX_CALLS))
                    .map_err(|e| Error::run(path.as_deref(), e))?
                    .runs
                    .into_iter()
                    .next()
                    .unwrap_or_default();
                let run = Run {
                    label: "executor".into(),
                    policy: None,
                    digest: o.digest,
                    timeline: Timeline::new(o.report),
                    checks,
                    max_calls: DEFAULT_MAX_CALLS,
                    batches: o.batches,
                    approvals: o.asked.into_iter().zip(o.answers).collect(),
                    contract: format!("check · budget {DEFAULT_MAX_CALLS}"),
                    mcp: None,
                    ask: None,
                    plan: None,
                    wire: None,
                };
                let orbit = match scenario {
                    Scenario::Orbit(s) => Some(s.clone()),
                    _ => None,
                };
                (vec![run], None, orbit)
            }
        };
        Ok(Document {
            path,
            kind: DocKind::Scenario,
            runs,
            scenario: scenario_file,
            orbit,
            campaign: None,
            live: false,
        })
    }

    /// Runs a shipping scenario (the editor's, or a file's) and opens its runs.
    pub fn run_shipping(path: Option<PathBuf>, file: &ScenarioFile) -> Result<Document, Error> {
        let scenario = Scenario::Shipping(file.clone());
        let run = scenario.run(path.as_deref(), &Settings::default(), &mut NoTerminal)?;
        Document::from_run(path, &scenario, run)
    }

    /// The name shown in the header.
    pub fn name(&self) -> String {
        self.path
            .as_ref()
            .map_or_else(|| BUNDLED_NAME.to_owned(), |p| p.display().to_string())
    }
}
