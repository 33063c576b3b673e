//! The campaign file: what was planned (the scenario, the agent's command, the seeds, the
//! oracle) and what each finished run gave. Versioned and strict (an unknown field is an
//! error naming its path); written atomically after every run, so a campaign that is killed
//! keeps every run it finished and can resume. Paths (`scenario`, `cwd`, each `recording`)
//! are relative to the file's folder when they can be, so the folder can move as a whole.
//!
//! ```json
//! {
//!   "schema_version": 1, "kind": "campaign",
//!   "scenario": "../scenarios/mcp-lost-ack.json", "scenario_name": "mcp-lost-ack",
//!   "scenario_sha256": "…", "cwd": ".",
//!   "agent": ["python", "agent.py", "--mcp-config", "{mcp_config}"],
//!   "probability": 0.5, "timeout": 120.0, "before": null, "verify": "test -s orders.db",
//!   "seeds": [43, 44, 45],
//!   "runs": [{"run": 1, "seed": 43, "outcome": "finished", "exit": 0, "seconds": 1.2,
//!             "recording": "mcp-lost-ack.campaign.runs/run-001/recording.json",
//!             "calls": 2, "faults": 1, "commits": 2, "duplicates": 1,
//!             "checks": [{"name": "No duplicate side effects", "passed": false, "detail": "..."}],
//!             "oracle": true, "passed": false, "note": null}]
//! }
//! ```

use super::shard::Shard;
use crate::error::ConfigError;
use crate::json::{Object, Value, canonical, parse_within, pretty, sha256_hex};
use crate::obj;
use crate::rule::require_keys;

/// The `kind` a campaign file has.
pub const KIND: &str = "campaign";
/// The format's version.
pub const SCHEMA_VERSION: i64 = 1;
/// Most runs a campaign holds.
pub const MAX_RUNS: usize = 10_000;
/// Largest campaign file read: its size grows with its runs (10,000 runs with their checks'
/// details pass the 8,000,000 bytes the reference's documents are held to), so the file has
/// a limit of its own.
pub const MAX_FILE_BYTES: usize = 64_000_000;
/// The longest a run may take, in seconds (a day, as `campaign --timeout` allows).
pub const MAX_TIMEOUT: f64 = 86_400.0;

/// Whether the start of a file says it is a campaign file (`"kind": "campaign"` among its
/// first keys, as this program writes them): a file past the documents' limit is read again
/// with [`MAX_FILE_BYTES`] when it is.
pub fn looks_like_campaign(head: &[u8]) -> bool {
    let head = &head[..head.len().min(512)];
    let text = String::from_utf8_lossy(head);
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    squeezed.contains("\"kind\":\"campaign\"")
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The agent exited by itself (whatever its exit status).
    Finished,
    /// It ran past the campaign's timeout and was stopped.
    TimedOut,
    /// The `--before` command failed, so the agent was not started.
    SetupFailed,
    /// The agent could not be started.
    StartFailed,
}

impl Outcome {
    /// The name files use.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Finished => "finished",
            Outcome::TimedOut => "timeout",
            Outcome::SetupFailed => "setup_failed",
            Outcome::StartFailed => "start_failed",
        }
    }

    fn parse(s: &str) -> Option<Outcome> {
        [
            Outcome::Finished,
            Outcome::TimedOut,
            Outcome::SetupFailed,
            Outcome::StartFailed,
        ]
        .into_iter()
        .find(|o| o.as_str() == s)
    }
}

/// One check of a run's recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckResult {
    /// The check's name (`No duplicate side effects`, ...).
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// Its detail line.
    pub detail: String,
}

/// One finished run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRecord {
    /// The run's number (1-based, in plan order).
    pub run: u64,
    /// Its decision seed.
    pub seed: i64,
    /// How it ended.
    pub outcome: Outcome,
    /// The agent's exit status, when it exited.
    pub exit: Option<i64>,
    /// Wall-clock seconds the run took.
    pub seconds: f64,
    /// The recording, relative to the campaign file's folder.
    pub recording: String,
    /// Calls recorded.
    pub calls: u64,
    /// Faults injected.
    pub faults: u64,
    /// Commits recorded.
    pub commits: u64,
    /// Duplicate commits.
    pub duplicates: u64,
    /// The recording's checks (those that judge the agent: `Fault exercised` is coverage of
    /// the scenario, not the agent's recovery, and is left out).
    pub checks: Vec<CheckResult>,
    /// The oracle's word (`--verify`): `None` when there is none, or it did not run.
    pub oracle: Option<bool>,
    /// Whether the run passed: it finished, every check passed, and the oracle agreed.
    pub passed: bool,
    /// What went wrong, in words, when something did.
    pub note: Option<String>,
}

impl RunRecord {
    /// A run that has not been judged yet: no calls, no checks, not passed.
    pub fn new(run: u64, seed: i64, outcome: Outcome, recording: String) -> RunRecord {
        RunRecord {
            run,
            seed,
            outcome,
            exit: None,
            seconds: 0.0,
            recording,
            calls: 0,
            faults: 0,
            commits: 0,
            duplicates: 0,
            checks: Vec::new(),
            oracle: None,
            passed: false,
            note: None,
        }
    }

    /// Whether the oracle and our checks disagree (one says pass, the other fail).
    pub fn oracle_disagrees(&self) -> bool {
        self.oracle
            .is_some_and(|o| o != self.checks.iter().all(|c| c.passed))
    }

    /// The oracle's word for a table: `pass`, `fail`, or `-` without one.
    pub fn oracle_word(&self) -> &'static str {
        match self.oracle {
            Some(true) => "pass",
            Some(false) => "fail",
            None => "-",
        }
    }

    /// The names of the checks that failed.
    pub fn failed_checks(&self) -> Vec<&str> {
        self.checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.name.as_str())
            .collect()
    }

    fn to_value(&self) -> Value {
        let checks = self
            .checks
            .iter()
            .map(|c| {
                obj! {"name" => c.name.as_str(), "passed" => c.passed, "detail" => c.detail.as_str()}
            })
            .collect();
        obj! {
            "run" => self.run,
            "seed" => self.seed,
            "outcome" => self.outcome.as_str(),
            "exit" => self.exit.map_or(Value::Null, Value::from),
            "seconds" => Value::Float(self.seconds),
            "recording" => self.recording.as_str(),
            "calls" => self.calls,
            "faults" => self.faults,
            "commits" => self.commits,
            "duplicates" => self.duplicates,
            "checks" => Value::Array(checks),
            "oracle" => self.oracle.map_or(Value::Null, Value::from),
            "passed" => self.passed,
            "note" => self.note.as_deref().map_or(Value::Null, Value::from),
        }
    }

    fn from_value(v: &Value, at: &str) -> Result<RunRecord, ConfigError> {
        const KEYS: [&str; 14] = [
            "run",
            "seed",
            "outcome",
            "exit",
            "seconds",
            "recording",
            "calls",
            "faults",
            "commits",
            "duplicates",
            "checks",
            "oracle",
            "passed",
            "note",
        ];
        let o = require_keys(v, &KEYS, &[]).map_err(|e| within(e, at))?;
        let count = |k: &str| {
            o.get(k)
                .and_then(Value::as_i64)
                .filter(|n| *n >= 0)
                .map(|n| n as u64)
                .ok_or_else(|| bad(&format!("{at}.{k}"), "expected a count"))
        };
        let flag = |k: &str| {
            o.get(k)
                .and_then(Value::as_bool)
                .ok_or_else(|| bad(&format!("{at}.{k}"), "expected true or false"))
        };
        let checks = match o.get("checks") {
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let here = format!("{at}.checks[{i}]");
                    let c = require_keys(c, &["name", "passed", "detail"], &[])
                        .map_err(|e| within(e, &here))?;
                    Ok(CheckResult {
                        name: text(c, "name", &here)?,
                        passed: c
                            .get("passed")
                            .and_then(Value::as_bool)
                            .ok_or_else(|| bad(&format!("{here}.passed"), "expected a bool"))?,
                        detail: text(c, "detail", &here)?,
                    })
                })
                .collect::<Result<Vec<_>, ConfigError>>()?,
            _ => return Err(bad(&format!("{at}.checks"), "expected a list")),
        };
        Ok(RunRecord {
            run: count("run")?,
            seed: o
                .get("seed")
                .and_then(Value::as_i64)
                .ok_or_else(|| bad(&format!("{at}.seed"), "expected an integer"))?,
            outcome: o
                .get("outcome")
                .and_then(Value::as_str)
                .and_then(Outcome::parse)
                .ok_or_else(|| {
                    bad(
                        &format!("{at}.outcome"),
                        "expected finished, timeout, setup_failed or start_failed",
                    )
                })?,
            exit: match o.get("exit") {
                Some(Value::Null) => None,
                Some(v) => Some(
                    v.as_i64()
                        .ok_or_else(|| bad(&format!("{at}.exit"), "expected an integer or null"))?,
                ),
                None => None,
            },
            seconds: o
                .get("seconds")
                .and_then(Value::as_number_f64)
                .filter(|s| s.is_finite() && *s >= 0.0)
                .ok_or_else(|| bad(&format!("{at}.seconds"), "expected seconds"))?,
            recording: text(o, "recording", at)?,
            calls: count("calls")?,
            faults: count("faults")?,
            commits: count("commits")?,
            duplicates: count("duplicates")?,
            checks,
            oracle: match o.get("oracle") {
                Some(Value::Bool(b)) => Some(*b),
                Some(Value::Null) => None,
                _ => return Err(bad(&format!("{at}.oracle"), "expected true, false or null")),
            },
            passed: flag("passed")?,
            note: match o.get("note") {
                Some(Value::Null) => None,
                Some(v) => Some(
                    v.as_str()
                        .ok_or_else(|| bad(&format!("{at}.note"), "expected text or null"))?
                        .to_owned(),
                ),
                None => None,
            },
        })
    }
}

/// A campaign: its plan and the runs finished so far.
#[derive(Clone, Debug, PartialEq)]
pub struct CampaignFile {
    /// The scenario file (relative to the campaign file's folder when it can be; `lab:NAME`
    /// for a sweep of the bundled lab).
    pub scenario: String,
    /// The scenario's name.
    pub scenario_name: String,
    /// SHA-256 of the scenario file's bytes when the campaign began: a resume runs the same
    /// fault model or refuses.
    pub scenario_sha256: String,
    /// Where the agent and the commands ran (relative to the campaign file's folder when it
    /// can be): `--rerun` and `--shrink` run there too.
    pub cwd: String,
    /// The agent's command, placeholders unexpanded.
    pub agent: Vec<String>,
    /// Every rule's probability, when overridden.
    pub probability: Option<f64>,
    /// Seconds a run may take.
    pub timeout: f64,
    /// The command that resets the world before each run.
    pub before: Option<String>,
    /// The oracle run after each run.
    pub verify: Option<String>,
    /// Each run's seed, in run order.
    pub seeds: Vec<i64>,
    /// The finished runs, by run number.
    pub runs: Vec<RunRecord>,
    /// The agent reached its proxy over Streamable HTTP (`--agent-transport http`: each run
    /// had a listening proxy and an `mcpServers` entry with its URL); absent for stdio.
    pub agent_http: bool,
    /// The part of the plan this file runs (`--shard I/N`); `None` for the whole plan (a
    /// campaign run on one machine, or shards merged).
    pub shard: Option<Shard>,
}

fn bad(path: &str, why: &str) -> ConfigError {
    ConfigError::new("Invalid campaign file")
        .at(path)
        .because(why)
}

fn within(e: ConfigError, at: &str) -> ConfigError {
    let why = e.detail.clone().unwrap_or_else(|| e.message.to_string());
    bad(at, &why)
}

fn text(o: &Object, key: &str, at: &str) -> Result<String, ConfigError> {
    o.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            bad(
                &if at.is_empty() {
                    key.to_owned()
                } else {
                    format!("{at}.{key}")
                },
                "expected text",
            )
        })
}

fn optional_text(o: &Object, key: &str) -> Result<Option<String>, ConfigError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_str()
            .map(|s| Some(s.to_owned()))
            .ok_or_else(|| bad(key, "expected text or null")),
    }
}

/// How `scenario` names a scenario of the bundled lab (`lab:NAME`): a sweep's campaign.
const LAB: &str = "lab:";

impl CampaignFile {
    /// The `scenario` of a sweep of the bundled lab's scenario `name`.
    pub fn lab_scenario(name: &str) -> String {
        format!("{LAB}{name}")
    }

    /// The bundled lab scenario this campaign sweeps, when it is a sweep's (not an agent's).
    pub fn lab_name(&self) -> Option<&str> {
        self.scenario.strip_prefix(LAB)
    }

    /// Whether a parsed document is a campaign file (its `kind`).
    pub fn is_campaign(v: &Value) -> bool {
        v.as_object()
            .and_then(|o| o.get("kind"))
            .and_then(Value::as_str)
            == Some(KIND)
    }

    /// The runs that passed, and the runs in all.
    pub fn passed(&self) -> (usize, usize) {
        (
            self.runs.iter().filter(|r| r.passed).count(),
            self.runs.len(),
        )
    }

    /// The record of run `run`, if it finished (runs are kept in run order).
    pub fn run(&self, run: u64) -> Option<&RunRecord> {
        self.runs
            .binary_search_by_key(&run, |r| r.run)
            .ok()
            .map(|i| &self.runs[i])
    }

    /// Adds (or replaces) a finished run, keeping run order.
    pub fn record(&mut self, r: RunRecord) {
        match self.runs.binary_search_by_key(&r.run, |x| x.run) {
            Ok(i) => self.runs[i] = r,
            Err(at) => self.runs.insert(at, r),
        }
    }

    /// Whether `other` plans the same campaign (so this one's runs can be kept): the same
    /// scenario (and its bytes), agent, probability, timeout, oracle and setup; `other`'s
    /// seeds extend or equal ours (fewer would drop finished runs).
    pub fn same_plan(&self, other: &CampaignFile) -> bool {
        self.plan_difference(other).is_none()
    }

    /// What `other` plans differently from this campaign, in words (`probability: was 0.5,
    /// now 0.7`): the first setting that differs, in [`CampaignFile::same_plan`]'s order.
    pub fn plan_difference(&self, other: &CampaignFile) -> Option<String> {
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
        let p = |v: Option<f64>| v.map_or("the scenario's".into(), |p| p.to_string());
        let transport = |http: bool| if http { "http" } else { "stdio" };
        let shard = |s: &Option<super::shard::Shard>| {
            s.as_ref()
                .map_or("none".into(), |s| format!("{}/{}", s.index, s.total))
        };
        let differs = [
            (self.scenario != other.scenario).then(|| {
                format!(
                    "scenario: was {:?}, now {:?}",
                    self.scenario, other.scenario
                )
            }),
            (self.scenario_sha256 != other.scenario_sha256).then(|| {
                format!(
                    "the scenario's bytes: sha256 was {}…, now {}…",
                    self.scenario_sha256
                        .get(..12)
                        .unwrap_or(&self.scenario_sha256),
                    other
                        .scenario_sha256
                        .get(..12)
                        .unwrap_or(&other.scenario_sha256)
                )
            }),
            (self.agent != other.agent).then(|| {
                format!(
                    "agent: was {:?}, now {:?}",
                    self.agent.join(" "),
                    other.agent.join(" ")
                )
            }),
            (self.probability != other.probability).then(|| {
                format!(
                    "probability: was {}, now {}",
                    p(self.probability),
                    p(other.probability)
                )
            }),
            (self.timeout != other.timeout)
                .then(|| format!("timeout: was {} s, now {} s", self.timeout, other.timeout)),
            (self.before != other.before).then(|| {
                format!(
                    "--before: was {:?}, now {:?}",
                    opt(&self.before),
                    opt(&other.before)
                )
            }),
            (self.verify != other.verify).then(|| {
                format!(
                    "--verify: was {:?}, now {:?}",
                    opt(&self.verify),
                    opt(&other.verify)
                )
            }),
            (self.agent_http != other.agent_http).then(|| {
                format!(
                    "the agent's transport: was {}, now {}",
                    transport(self.agent_http),
                    transport(other.agent_http)
                )
            }),
            (self.shard != other.shard).then(|| {
                format!(
                    "shard: was {}, now {}",
                    shard(&self.shard),
                    shard(&other.shard)
                )
            }),
            (!other.seeds.starts_with(&self.seeds)).then(|| {
                format!(
                    "seeds: was {} from {}, now {} from {} (a resume may only add seeds)",
                    self.seeds.len(),
                    self.seeds.first().map_or("none".into(), i64::to_string),
                    other.seeds.len(),
                    other.seeds.first().map_or("none".into(), i64::to_string)
                )
            }),
        ];
        differs.into_iter().flatten().next()
    }

    /// SHA-256 of the agent's command as the file keeps it (secrets redacted) and how it
    /// reached the proxy: the agent's identity when shards are merged.
    pub fn agent_sha256(&self) -> String {
        let agent = Value::Array(self.agent.iter().map(|a| a.as_str().into()).collect());
        let transport = if self.agent_http { "http" } else { "stdio" };
        sha256_hex(canonical(&obj! {"agent" => agent, "agent_transport" => transport}).as_bytes())
    }

    /// The runs this file plans (run number and seed): every seed of the plan, or a shard's.
    pub fn planned(&self) -> impl Iterator<Item = (u64, i64)> + '_ {
        self.seeds
            .iter()
            .enumerate()
            .map(|(i, s)| (i as u64 + 1, *s))
            .filter(|(run, _)| self.shard.is_none_or(|sh| sh.owns(*run)))
    }

    /// The seeds this file plans that have no finished run, in plan order.
    pub fn missing(&self) -> Vec<i64> {
        self.planned()
            .filter(|(run, _)| self.run(*run).is_none())
            .map(|(_, s)| s)
            .collect()
    }

    /// The document.
    pub fn to_value(&self) -> Value {
        let mut v = obj! {
            "schema_version" => SCHEMA_VERSION,
            "kind" => KIND,
            "scenario" => self.scenario.as_str(),
            "scenario_name" => self.scenario_name.as_str(),
            "scenario_sha256" => self.scenario_sha256.as_str(),
            "cwd" => self.cwd.as_str(),
            "agent" => Value::Array(self.agent.iter().map(|a| a.as_str().into()).collect()),
            "probability" => self.probability.map_or(Value::Null, Value::Float),
            "timeout" => Value::Float(self.timeout),
            "before" => self.before.as_deref().map_or(Value::Null, Value::from),
            "verify" => self.verify.as_deref().map_or(Value::Null, Value::from),
            "seeds" => Value::Array(self.seeds.iter().map(|s| Value::from(*s)).collect()),
            "runs" => Value::Array(self.runs.iter().map(RunRecord::to_value).collect()),
        };
        if let Value::Object(o) = &mut v {
            if self.agent_http {
                o.push("agent_transport", "http");
            }
            if let Some(sh) = self.shard {
                // A shard names what merging checks: its part, and the digests of the
                // scenario (above) and of the agent.
                o.push("shard", obj! {"index" => sh.index, "total" => sh.total});
                o.push("agent_sha256", self.agent_sha256());
            }
        }
        v
    }

    /// The file text: indented JSON and a final newline.
    pub fn to_text(&self) -> String {
        pretty(&self.to_value()) + "\n"
    }

    /// Validates a parsed document.
    pub fn from_value(v: &Value) -> Result<CampaignFile, ConfigError> {
        let o = require_keys(
            v,
            &[
                "schema_version",
                "kind",
                "scenario",
                "scenario_name",
                "scenario_sha256",
                "cwd",
                "agent",
                "probability",
                "timeout",
                "before",
                "verify",
                "seeds",
                "runs",
            ],
            &["agent_transport", "shard", "agent_sha256"],
        )
        .map_err(|e| within(e, "$"))?;
        if o.get("schema_version").and_then(Value::as_i64) != Some(SCHEMA_VERSION) {
            return Err(bad("schema_version", "expected 1"));
        }
        if o.get("kind").and_then(Value::as_str) != Some(KIND) {
            return Err(bad("kind", "expected \"campaign\""));
        }
        let agent = match o.get("agent") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    a.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| bad(&format!("agent[{i}]"), "expected text"))
                })
                .collect::<Result<Vec<_>, _>>()?,
            _ => return Err(bad("agent", "expected the agent's command as a list")),
        };
        let seeds = match o.get("seeds") {
            Some(Value::Array(items)) if items.len() <= MAX_RUNS => items
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    s.as_i64()
                        .ok_or_else(|| bad(&format!("seeds[{i}]"), "expected an integer"))
                })
                .collect::<Result<Vec<_>, _>>()?,
            _ => return Err(bad("seeds", "expected a list of at most 10000 seeds")),
        };
        let runs = match o.get("runs") {
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, r)| RunRecord::from_value(r, &format!("runs[{i}]")))
                .collect::<Result<Vec<_>, _>>()?,
            _ => return Err(bad("runs", "expected a list")),
        };
        for (i, pair) in runs.windows(2).enumerate() {
            if pair[0].run >= pair[1].run {
                return Err(bad(
                    &format!("runs[{}].run", i + 1),
                    "runs must be in order, each run number once",
                ));
            }
        }
        let shard = match o.get("shard") {
            None | Some(Value::Null) => None,
            Some(v) => {
                let part = |k: &str| {
                    v.as_object()
                        .and_then(|s| s.get(k))
                        .and_then(Value::as_i64)
                        .and_then(|n| u32::try_from(n).ok())
                };
                match (part("index"), part("total")) {
                    (Some(i), Some(n)) if v.as_object().is_some_and(|s| s.len() == 2) => Some(
                        Shard::new(i, n)
                            .ok_or_else(|| bad("shard", "expected 1 <= index <= total <= 1000"))?,
                    ),
                    _ => return Err(bad("shard", "expected {\"index\": I, \"total\": N}")),
                }
            }
        };
        for (i, r) in runs.iter().enumerate() {
            if shard.is_some_and(|s| !s.owns(r.run)) {
                return Err(bad(
                    &format!("runs[{i}]"),
                    "its run number is not this shard's",
                ));
            }
            let planned = usize::try_from(r.run)
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|n| seeds.get(n));
            if planned != Some(&r.seed) {
                return Err(bad(
                    &format!("runs[{i}]"),
                    "its run number and seed are not in the plan's seeds",
                ));
            }
        }
        Ok(CampaignFile {
            scenario: text(o, "scenario", "")?,
            scenario_name: text(o, "scenario_name", "")?,
            scenario_sha256: text(o, "scenario_sha256", "")?,
            cwd: text(o, "cwd", "")?,
            agent,
            probability: match o.get("probability") {
                Some(Value::Null) => None,
                Some(v) => Some(
                    v.as_number_f64()
                        .filter(|p| (0.0..=1.0).contains(p))
                        .ok_or_else(|| bad("probability", "expected a number in [0, 1] or null"))?,
                ),
                None => None,
            },
            timeout: o
                .get("timeout")
                .and_then(Value::as_number_f64)
                .filter(|t| t.is_finite() && *t > 0.0 && *t <= MAX_TIMEOUT)
                .ok_or_else(|| bad("timeout", "expected seconds in (0, 86400]"))?,
            before: optional_text(o, "before")?,
            verify: optional_text(o, "verify")?,
            seeds,
            runs,
            agent_http: match optional_text(o, "agent_transport")?.as_deref() {
                None | Some("stdio") => false,
                Some("http") => true,
                Some(_) => return Err(bad("agent_transport", "expected \"stdio\" or \"http\"")),
            },
            shard,
        })
        .and_then(|f| {
            // The digest is checked, so a hand-edited agent cannot pass for the shard's.
            match o.get("agent_sha256") {
                None | Some(Value::Null) => Ok(f),
                Some(d) if d.as_str() == Some(f.agent_sha256().as_str()) => Ok(f),
                Some(_) => Err(bad(
                    "agent_sha256",
                    "it is not the digest of this file's agent: the file was edited",
                )),
            }
        })
    }

    /// Parses and validates file text.
    pub fn from_text(text: &str) -> Result<CampaignFile, ConfigError> {
        let v = parse_within(text, MAX_FILE_BYTES).map_err(|e| {
            ConfigError::new("Invalid or excessively nested JSON").because(e.to_string())
        })?;
        CampaignFile::from_value(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CampaignFile {
        CampaignFile {
            scenario: "/s.json".into(),
            scenario_name: "s".into(),
            scenario_sha256: "00".into(),
            cwd: ".".into(),
            agent: vec!["agent".into(), "{mcp_config}".into()],
            probability: Some(0.5),
            timeout: 60.0,
            before: None,
            verify: Some("true".into()),
            seeds: vec![3, 4],
            runs: vec![RunRecord {
                run: 2,
                seed: 4,
                outcome: Outcome::Finished,
                exit: Some(0),
                seconds: 1.5,
                recording: "s.runs/run-002/recording.json".into(),
                calls: 2,
                faults: 1,
                commits: 2,
                duplicates: 1,
                checks: vec![CheckResult {
                    name: "No duplicate side effects".into(),
                    passed: false,
                    detail: "1 duplicate".into(),
                }],
                oracle: Some(true),
                passed: false,
                note: None,
            }],
            agent_http: false,
            shard: None,
        }
    }

    #[test]
    fn round_trips_and_refuses_what_it_does_not_know() {
        let c = sample();
        assert_eq!(CampaignFile::from_text(&c.to_text()), Ok(c.clone()));
        let http = CampaignFile {
            agent_http: true,
            ..c.clone()
        };
        assert!(http.to_text().contains("\"agent_transport\": \"http\""));
        assert_eq!(CampaignFile::from_text(&http.to_text()), Ok(http));
        assert!(
            !c.to_text().contains("agent_transport"),
            "stdio files are as before"
        );
        assert!(c.runs[0].oracle_disagrees());
        let mut v = c.to_value();
        if let Some(o) = v.as_object_mut() {
            o.push("extra", 1);
        }
        assert!(CampaignFile::from_value(&v).is_err());
        let wrong_seed = c.to_text().replace("\"seed\": 4", "\"seed\": 9");
        let e = CampaignFile::from_text(&wrong_seed).expect_err("seed not planned");
        assert!(e.to_string().contains("runs[0]"), "{e}");
        // A timeout past a day is refused by name (it would overflow the run's deadline).
        let mut v = c.to_value();
        if let Some(o) = v.as_object_mut() {
            o.insert("timeout", Value::Float(1e300));
        }
        let e = CampaignFile::from_value(&v).expect_err("a timeout of 1e300 s");
        assert!(e.to_string().contains("timeout"), "{e}");
        // A run recorded twice would count twice.
        let mut twice = c.clone();
        twice.runs.push(c.runs[0].clone());
        assert!(CampaignFile::from_text(&twice.to_text()).is_err());
        // A shard names its part and the agent's digest, which must be its agent's.
        let shard = CampaignFile {
            shard: Some(Shard { index: 2, total: 2 }),
            ..c.clone()
        };
        let text = shard.to_text();
        assert!(text.contains("\"agent_sha256\": \"") && text.contains("\"total\": 2"));
        assert_eq!(CampaignFile::from_text(&text), Ok(shard.clone()));
        assert!(!shard.same_plan(&c) && !c.same_plan(&shard));
        let edited = text.replace("\"{mcp_config}\"", "\"--other\"");
        let e = CampaignFile::from_text(&edited).expect_err("digest");
        assert!(e.to_string().contains("agent_sha256"), "{e}");
        let other_part = text.replace("\"index\": 2", "\"index\": 1");
        let e = CampaignFile::from_text(&other_part).expect_err("run 2 is shard 2's");
        assert!(e.to_string().contains("not this shard's"), "{e}");
        assert_eq!(shard.missing(), Vec::<i64>::new());
        assert_eq!(c.missing(), vec![3]);
        // Fewer seeds would drop finished runs: not the same plan.
        let mut fewer = c.clone();
        fewer.seeds.pop();
        assert!(!c.same_plan(&fewer) && fewer.same_plan(&c));
    }
}
