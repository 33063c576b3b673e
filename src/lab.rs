//! The shipping lab (spec §13): a world, three recovery policies and six incidents, run on a
//! fresh virtual clock and judged by a contract. Results match the reference byte for byte.
//! Also home to the executor's world, [`orbit`].

pub mod campaign;
pub mod compare;
pub mod edit;
pub mod offline;
pub mod orbit;
pub mod policy;
pub mod scenario;
pub mod scenario_file;
pub mod shipping;

use std::sync::Arc;

use crate::clock::{Clock, VirtualClock};
use crate::contract::{Check, Contract, checks_to_value, verdict};
use crate::error::{ConfigError, Error, Result};
use crate::json::float::{py_fixed, round6};
use crate::json::{Object, Value};
use crate::redact::Redactor;
use crate::report::{Report, Status};
use crate::rule::Rule;
use crate::storm::Storm;

pub use policy::Policy;
pub use scenario::{Scenario, ScenarioCheck};
use shipping::Shipping;

/// The engine version the reference's comparison files carry.
pub const ENGINE_VERSION: &str = "0.2.0";
/// Smallest and largest lab call budget.
pub const LAB_MAX_CALLS: std::ops::RangeInclusive<i64> = 1..=20;

/// How one lab run is configured.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    /// Decision seed.
    pub seed: i64,
    /// Overrides every rule's probability (the demo always does; default 1.0).
    pub probability: Option<f64>,
    /// Call budget (1–20).
    pub max_calls: i64,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            seed: 42,
            probability: Some(1.0),
            max_calls: 8,
        }
    }
}

/// One finished lab run.
#[derive(Clone, Debug)]
pub struct LabRun {
    /// Scenario identifier.
    pub scenario: String,
    /// The policy that ran.
    pub policy: Policy,
    /// The configuration.
    pub config: RunConfig,
    /// `{"completed": ...}`.
    pub outcome: Value,
    /// Receipts of every shipment actually created.
    pub shipments: Vec<Value>,
    /// The trace.
    pub report: Report,
    /// Contract checks, in order.
    pub checks: Vec<Check>,
    /// Virtual time when the task ended (unrounded).
    pub finished_at: f64,
    /// The report's digest.
    pub digest: String,
}

/// Builds the rules of a scenario with an optional probability override.
pub fn scenario_rules(
    scenario: &Scenario,
    probability: Option<f64>,
) -> Result<Vec<Rule>, ConfigError> {
    scenario
        .rules
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            let mut rule = rule.clone();
            if let (Some(p), Value::Object(o)) = (probability, &mut rule) {
                o.insert("probability", Value::Float(p));
            }
            Rule::from_value(&rule).map_err(|e| e.within(&format!("rules[{i}]")))
        })
        .collect()
}

/// Checks the lab's own limits (the budget) before running.
pub fn check_config(config: &RunConfig) -> Result<(), ConfigError> {
    if !LAB_MAX_CALLS.contains(&config.max_calls) {
        return Err(ConfigError::new(
            "Demo call budget must be between 1 and 20",
        ));
    }
    Ok(())
}

/// Runs one policy against a scenario.
pub fn run(scenario: &Scenario, policy: Policy, config: &RunConfig) -> Result<LabRun, ConfigError> {
    check_config(config)?;
    let rules = scenario_rules(scenario, config.probability)?;
    let clock = Arc::new(VirtualClock::new());
    let storm = Storm::builder()
        .rules(rules)
        .seed(config.seed)
        .clock(clock.clone())
        .max_calls(config.max_calls as usize)
        .build()?;
    let service = Shipping::new();
    let outcome = policy.run(&shipping::Live {
        storm: &storm,
        service: &service,
    });
    let finished_at = clock.now();
    let report = storm.report();
    let shipments = service.shipments();
    let checks = judge(
        scenario,
        &report,
        &outcome,
        shipments.len(),
        config.max_calls,
        finished_at,
    )
    .map_err(|e| match e {
        Error::Config(c) => c,
        other => ConfigError::new("Invalid fault rule").because(other.to_string()),
    })?;
    let digest = report.digest();
    Ok(LabRun {
        scenario: scenario.name.clone(),
        policy,
        config: config.clone(),
        outcome,
        shipments,
        report,
        checks,
        finished_at,
        digest,
    })
}

/// Runs every policy, in the reference's order.
pub fn compare(scenario: &Scenario, config: &RunConfig) -> Result<Vec<LabRun>, ConfigError> {
    run_policies(scenario, &Policy::ALL, config)
}

/// Runs the given policies, in order.
pub fn run_policies(
    scenario: &Scenario,
    policies: &[Policy],
    config: &RunConfig,
) -> Result<Vec<LabRun>, ConfigError> {
    policies.iter().map(|p| run(scenario, *p, config)).collect()
}

/// The contract for a lab run: core checks, then the scenario's own.
pub fn judge(
    scenario: &Scenario,
    report: &Report,
    outcome: &Value,
    shipments: usize,
    max_calls: i64,
    finished_at: f64,
) -> Result<Vec<Check>> {
    let mut contract = Contract::new(report)
        .require_triggered(&[])
        .no_duplicate_effects();
    contract = contract.at_most_calls(max_calls, None)?;
    let completed = outcome
        .as_object()
        .and_then(|o| o.get("completed"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    for check in &scenario.checks {
        contract = match check {
            ScenarioCheck::RetryAfterRespected => {
                let n = retry_after_violations(report);
                contract.check(
                    "Retry-after respected",
                    n == 0,
                    format!("{n} retry(s) occurred before the advertised delay"),
                )
            }
            ScenarioCheck::HonestOutcome => contract.check(
                "Honest outcome",
                completed || shipments == 0,
                "A stopped task never claims to have shipped",
            ),
            ScenarioCheck::TaskCompleted => contract.check(
                "Task completed",
                completed,
                if completed {
                    "Shipment confirmed"
                } else {
                    "No confirmed shipment"
                },
            ),
            ScenarioCheck::LatencyBudget(budget) => contract.check(
                "Latency budget",
                finished_at <= *budget,
                format!(
                    "{}s / {}s virtual time",
                    py_fixed(finished_at, 2),
                    py_fixed(*budget, 2)
                ),
            ),
        };
    }
    Ok(contract.into_checks())
}

/// A retry that came before a rate limit's advertised wait had passed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EarlyRetry {
    /// Index of the rate-limited call.
    pub limited: usize,
    /// Index of the next call of the same tool (the retry).
    pub retry: usize,
    /// Seconds from the limited call's end to the retry's start.
    pub gap: f64,
    /// The advertised wait, in seconds.
    pub wait: f64,
}

/// Retries that came before a rate limit's advertised wait had passed.
pub fn retry_after_violations(report: &Report) -> usize {
    early_retries(report).len()
}

/// Each retry that came before a rate limit's advertised wait had passed, in call order.
pub fn early_retries(report: &Report) -> Vec<EarlyRetry> {
    let calls = &report.calls;
    calls
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            c.status != Status::Running
                && c.error
                    .as_ref()
                    .is_some_and(|e| e.known && e.type_name == "RateLimited")
        })
        .filter_map(|(i, c)| {
            let wait = c.error.as_ref().and_then(|e| e.retry_after).unwrap_or(0.0);
            let j = i + 1 + calls[i + 1..].iter().position(|n| n.tool == c.tool)?;
            let end = c.started + c.elapsed;
            (calls[j].started + 0.000002 < end + wait).then(|| EarlyRetry {
                limited: i,
                retry: j,
                gap: calls[j].started - end,
                wait,
            })
        })
        .collect()
}

impl LabRun {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        verdict(&self.checks)
    }

    /// Whether the policy recovered: every check but `Fault exercised` passed (whether the
    /// fault fired on this seed is the scenario's coverage, not the policy's doing). A run of
    /// a sweep and of a campaign is judged by this one definition.
    pub fn recovered(&self) -> bool {
        let judged: Vec<Check> = self
            .checks
            .iter()
            .filter(|c| c.judges_the_agent())
            .cloned()
            .collect();
        verdict(&judged)
    }

    /// Whether the task reported a confirmed shipment.
    pub fn completed(&self) -> bool {
        self.outcome
            .as_object()
            .and_then(|o| o.get("completed"))
            .and_then(Value::as_bool)
            == Some(true)
    }

    /// Σ triggered faults.
    pub fn faults(&self) -> u64 {
        self.report.faults_triggered()
    }

    /// Final virtual time rounded to microseconds.
    pub fn elapsed(&self) -> f64 {
        round6(self.finished_at)
    }

    /// The `config` object.
    pub fn config_value(&self) -> Value {
        config_value(&self.scenario, &self.config)
    }

    /// The run object the reference writes (`--output`, `--json`).
    pub fn to_value(&self) -> Value {
        let mut o = Object::new();
        o.push("scenario", self.scenario.as_str());
        o.push("policy", self.policy.as_str());
        o.push("seed", self.config.seed);
        o.push("config", self.config_value());
        // The report's payloads were redacted when captured; the outcome and receipts the
        // policy saw were not, and go to files and terminals too.
        let redactor = Redactor::default();
        o.push("outcome", redactor.redact(&self.outcome));
        o.push(
            "shipments",
            Value::Array(self.shipments.iter().map(|s| redactor.redact(s)).collect()),
        );
        o.push("report", self.report.to_value());
        o.push("contract", checks_to_value(&self.checks));
        let mut stats = Object::new();
        stats.push("calls", self.report.calls.len());
        stats.push("effects", self.shipments.len());
        stats.push("faults", self.faults());
        stats.push("elapsed", Value::Float(self.elapsed()));
        o.push("stats", Value::Object(stats));
        o.push("digest", self.digest.as_str());
        Value::Object(o)
    }

    /// The text block the command line prints for this run (after the header line), as the
    /// reference prints it.
    pub fn text_lines(&self) -> Vec<String> {
        self.text_lines_named(false)
    }

    /// [`LabRun::text_lines`]; with `named`, the policy's title also carries the name the
    /// explorer, `--policy` and files use (`No retries (optimistic)`), for people at a terminal.
    pub fn text_lines_named(&self, named: bool) -> Vec<String> {
        let title = if named {
            format!("{} ({})", self.policy.title(), self.policy.as_str())
        } else {
            self.policy.title().to_owned()
        };
        let width = if named { 32 } else { 24 };
        let mut lines = vec![format!(
            "{}  {title:<width$} {} calls \u{b7} {} shipments \u{b7} {}s virtual",
            if self.passed() { "PASS" } else { "FAIL" },
            self.report.calls.len(),
            self.shipments.len(),
            py_fixed(self.elapsed(), 2)
        )];
        for c in &self.checks {
            lines.push(format!(
                "  {} {}: {}",
                if c.passed { '\u{2713}' } else { '\u{2717}' },
                c.name,
                c.detail
            ));
        }
        lines
    }
}

/// The `config` object: `{scenario, seed, probability, max_calls}`.
pub fn config_value(scenario: &str, config: &RunConfig) -> Value {
    let mut o = Object::new();
    o.push("scenario", scenario);
    o.push("seed", config.seed);
    o.push("probability", config.probability.map(Value::Float));
    o.push("max_calls", config.max_calls);
    Value::Object(o)
}

/// The comparison object (`--policy all`).
pub fn comparison_value(scenario: &str, config: &RunConfig, runs: &[LabRun]) -> Value {
    let mut o = Object::new();
    o.push("schema_version", 1);
    o.push("engine_version", ENGINE_VERSION);
    o.push("scenario", scenario);
    o.push("config", config_value(scenario, config));
    o.push(
        "runs",
        Value::Array(runs.iter().map(LabRun::to_value).collect()),
    );
    Value::Object(o)
}

/// The verdicts document (`run --verdict`, the explorer's `V`): scenario, configuration and
/// per-run checks.
pub fn verdicts_value(scenario: &str, config: &RunConfig, runs: &[LabRun]) -> Value {
    let mut o = Object::new();
    o.push("schema_version", 1);
    o.push("scenario", scenario);
    o.push("config", config_value(scenario, config));
    o.push("passed", runs.iter().all(LabRun::passed));
    let items = runs
        .iter()
        .map(|r| {
            let mut v = Object::new();
            v.push("policy", r.policy.as_str());
            v.push("digest", r.digest.as_str());
            v.push("contract", checks_to_value(&r.checks));
            Value::Object(v)
        })
        .collect();
    o.push("runs", Value::Array(items));
    Value::Object(o)
}

/// The header line: `ToolStorm · {title} · seed {seed}`.
pub fn header_line(scenario: &Scenario, seed: i64) -> String {
    format!(
        "ToolStorm \u{b7} {} \u{b7} seed {seed}",
        scenario.story.title
    )
}
