//! Scenario files (`scenarios/*.json`): a versioned, hand-editable JSON document holding a lab
//! scenario — its story, every rule field, and how to run and judge it. Unknown fields are
//! errors; every problem names the JSON path and the reason.
//!
//! ```json
//! {
//!   "schema_version": 1,
//!   "world": "shipping",
//!   "name": "lost_ack",
//!   "title": "Lost acknowledgement",
//!   "code": "INC-001", "category": "SIDE EFFECTS",
//!   "description": "...", "lesson": "...",
//!   "seed": 42, "probability": 1.0, "max_calls": 8, "policy": "all",
//!   "rules": [{"name": "lost-receipt", "tool": "create_shipment", "kind": "response_lost",
//!              "calls": [1], "probability": 1.0, "limit": null, "delay": 0.0, "replacement": null}],
//!   "checks": ["task_completed", "latency_budget"], "latency_budget": 1.5
//! }
//! ```
//! `probability` overrides every rule's own (as the reference's demo does); `null` keeps each
//! rule's. The core checks (every rule exercised, no duplicate effects, call budget) always
//! apply; `checks` lists the scenario-specific ones, in order.

use crate::error::ConfigError;
use crate::json::{Object, Value, parse, pretty};
use crate::rule::Rule;
use crate::scenario_fields::{
    SCHEMA_VERSION, Story, head, invalid, rule_list, seed_field, text_field,
};

use super::scenario::{DEFAULT_LATENCY_BUDGET, Scenario, ScenarioCheck};
use super::{LAB_MAX_CALLS, Policy, RunConfig, scenario_rules};

/// The world shipping scenario files name.
pub const WORLD: &str = "shipping";

const REQUIRED: [&str; 8] = [
    "schema_version",
    "world",
    "name",
    "title",
    "rules",
    "seed",
    "max_calls",
    "policy",
];
const OPTIONAL: [&str; 7] = [
    "code",
    "category",
    "description",
    "lesson",
    "probability",
    "checks",
    "latency_budget",
];

/// Which policies a scenario runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyChoice {
    /// One policy.
    One(Policy),
    /// All three, side by side.
    All,
}

impl PolicyChoice {
    /// Parses `optimistic`, `retry`, `resilient` or `all`.
    pub fn parse(s: &str) -> Option<PolicyChoice> {
        if s == "all" {
            Some(PolicyChoice::All)
        } else {
            Policy::parse(s).map(PolicyChoice::One)
        }
    }
    /// The name in files and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyChoice::One(p) => p.as_str(),
            PolicyChoice::All => "all",
        }
    }
    /// The policies to run.
    pub fn policies(self) -> Vec<Policy> {
        match self {
            PolicyChoice::One(p) => vec![p],
            PolicyChoice::All => Policy::ALL.to_vec(),
        }
    }
}

/// A scenario file's content.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioFile {
    /// The scenario.
    pub scenario: Scenario,
    /// Seed, probability override and budget.
    pub config: RunConfig,
    /// Which policies run.
    pub policy: PolicyChoice,
}

impl ScenarioFile {
    /// The file for a bundled scenario, with the demo's defaults.
    pub fn bundled(name: &str) -> Option<ScenarioFile> {
        let scenario = super::scenario::bundled(name)?;
        Some(ScenarioFile {
            scenario,
            config: RunConfig::default(),
            policy: PolicyChoice::All,
        })
    }

    /// Validates a parsed scenario document.
    pub fn from_value(v: &Value) -> Result<ScenarioFile, ConfigError> {
        let o = head(v, &REQUIRED, &OPTIONAL, WORLD)?;
        let bad = invalid;
        let seed = seed_field(o)?;
        let max_calls = match o.get("max_calls") {
            Some(Value::Int(i)) => i.as_i64().filter(|n| LAB_MAX_CALLS.contains(n)),
            _ => None,
        }
        .ok_or_else(|| {
            bad(
                "max_calls",
                "expected an integer call budget between 1 and 20",
            )
        })?;
        let probability = match o.get("probability") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_number_f64() {
                Some(p) if (0.0..=1.0).contains(&p) && !matches!(v, Value::Bool(_)) => Some(p),
                _ => {
                    return Err(bad(
                        "probability",
                        "expected a number between 0 and 1, or null",
                    ));
                }
            },
        };
        let policy = o
            .get("policy")
            .and_then(Value::as_str)
            .and_then(PolicyChoice::parse)
            .ok_or_else(|| bad("policy", "expected optimistic, retry, resilient or all"))?;
        let rule_values = rule_list(o)?;
        let latency_budget = match o.get("latency_budget") {
            None => DEFAULT_LATENCY_BUDGET,
            Some(v) => match v.as_number_f64() {
                Some(b) if b.is_finite() && b >= 0.0 && !matches!(v, Value::Bool(_)) => b,
                _ => {
                    return Err(bad(
                        "latency_budget",
                        "expected a nonnegative number of seconds",
                    ));
                }
            },
        };
        let mut checks = Vec::new();
        if let Some(list) = o.get("checks") {
            let Value::Array(items) = list else {
                return Err(bad("checks", "expected a list of check names"));
            };
            for (i, item) in items.iter().enumerate() {
                let check = match item.as_str() {
                    Some("retry_after_respected") => ScenarioCheck::RetryAfterRespected,
                    Some("honest_outcome") => ScenarioCheck::HonestOutcome,
                    Some("task_completed") => ScenarioCheck::TaskCompleted,
                    Some("latency_budget") => ScenarioCheck::LatencyBudget(latency_budget),
                    _ => {
                        return Err(bad(
                            &format!("checks[{i}]"),
                            "expected retry_after_respected, honest_outcome, task_completed or latency_budget",
                        ));
                    }
                };
                if checks.contains(&check) {
                    return Err(bad(&format!("checks[{i}]"), "listed twice"));
                }
                checks.push(check);
            }
        }
        let scenario = Scenario {
            name: text_field(o, "name", true)?,
            story: Story::from_object(o)?,
            rules: rule_values,
            checks,
        };
        let config = RunConfig {
            seed,
            probability,
            max_calls,
        };
        // The probability override must also give valid rules.
        scenario_rules(&scenario, probability)?;
        Ok(ScenarioFile {
            scenario,
            config,
            policy,
        })
    }

    /// Parses and validates scenario text.
    pub fn from_text(text: &str) -> Result<ScenarioFile, ConfigError> {
        let v = parse(text).map_err(|e| {
            ConfigError::new("Invalid or excessively nested JSON").because(e.to_string())
        })?;
        ScenarioFile::from_value(&v)
    }

    /// The document, with every rule field spelled out.
    pub fn to_value(&self) -> Value {
        let s = &self.scenario;
        let mut o = Object::new();
        o.push("schema_version", SCHEMA_VERSION);
        o.push("world", WORLD);
        o.push("name", s.name.as_str());
        s.story.push_into(&mut o);
        o.push("seed", self.config.seed);
        o.push("probability", self.config.probability.map(Value::Float));
        o.push("max_calls", self.config.max_calls);
        o.push("policy", self.policy.as_str());
        let rules = s
            .rules
            .iter()
            .map(|r| {
                Rule::from_value(r)
                    .map(|r| r.to_value())
                    .unwrap_or_else(|_| r.clone())
            })
            .collect();
        o.push("rules", Value::Array(rules));
        o.push(
            "checks",
            Value::Array(s.checks.iter().map(|c| Value::from(c.as_str())).collect()),
        );
        let budget = s.checks.iter().find_map(|c| match c {
            ScenarioCheck::LatencyBudget(b) => Some(*b),
            _ => None,
        });
        o.push(
            "latency_budget",
            Value::Float(budget.unwrap_or(DEFAULT_LATENCY_BUDGET)),
        );
        Value::Object(o)
    }

    /// The file text: indented JSON and a final newline.
    pub fn to_text(&self) -> String {
        pretty(&self.to_value()) + "\n"
    }
}
