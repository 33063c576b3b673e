//! Contracts (spec §10): named checks over a report, with the reference's names, details and
//! verdict rules.

use std::collections::HashMap;
use std::fmt;

use crate::error::ConfigError;
use crate::json::{Object, Value};
use crate::report::Report;

/// One check's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// What was checked, e.g. `No duplicate side effects`.
    pub name: String,
    /// Whether it held.
    pub passed: bool,
    /// The evidence, e.g. `1 duplicate effect(s) across 2 commits`.
    pub detail: String,
}

/// How the name of each check that a rule's fault fired begins (`Fault exercised: NAME`).
pub const FAULT_EXERCISED: &str = "Fault exercised";

/// Whether the check named `name` is a fault's coverage (`Fault exercised`): whether a rule
/// fired on a seed is the scenario's doing, so campaigns and sweeps judge an agent without it.
pub fn is_coverage(name: &str) -> bool {
    name.starts_with(FAULT_EXERCISED)
}

impl Check {
    /// Whether the check judges the agent's recovery: every check but [`is_coverage`] ones.
    pub fn judges_the_agent(&self) -> bool {
        !is_coverage(&self.name)
    }

    /// The `{"name","passed","detail"}` object.
    pub fn to_value(&self) -> Value {
        let mut o = Object::new();
        o.push("name", self.name.as_str());
        o.push("passed", self.passed);
        o.push("detail", self.detail.as_str());
        Value::Object(o)
    }
}

/// Why [`Contract::assert_valid`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContractFailure(pub String);

impl fmt::Display for ContractFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ContractFailure {}

/// Checks accumulated over one report.
#[derive(Clone, Debug)]
pub struct Contract<'r> {
    report: &'r Report,
    checks: Vec<Check>,
}

impl<'r> Contract<'r> {
    /// An empty contract over `report`.
    pub fn new(report: &'r Report) -> Self {
        Contract {
            report,
            checks: Vec::new(),
        }
    }

    /// `Fault exercised: {name}` per rule (no names: every rule in coverage order).
    pub fn require_triggered(mut self, names: &[&str]) -> Self {
        let all: Vec<String>;
        let names: Vec<&str> = if names.is_empty() {
            all = self
                .report
                .coverage
                .iter()
                .map(|(n, _)| n.to_lossy())
                .collect();
            all.iter().map(String::as_str).collect()
        } else {
            names.to_vec()
        };
        for name in names {
            let n = self.report.coverage_of(name).map_or(0, |c| c.triggered);
            self.checks.push(Check {
                name: format!("{FAULT_EXERCISED}: {name}"),
                passed: n > 0,
                detail: format!("Triggered {n} time(s)"),
            });
        }
        self
    }

    /// `Call budget`: recorded calls (of `tool`, or all plus refused ones) ≤ `count`.
    pub fn at_most_calls(mut self, count: i64, tool: Option<&str>) -> Result<Self, ConfigError> {
        if count < 0 {
            return Err(ConfigError::new("Call limit must be a nonnegative integer"));
        }
        let actual = match tool {
            Some(t) => self.report.calls.iter().filter(|c| c.tool == t).count() as u64,
            None => self.report.calls.len() as u64 + self.report.budget_rejections,
        };
        self.checks.push(Check {
            name: "Call budget".into(),
            passed: actual <= count as u64,
            detail: format!("{actual} / {count} calls"),
        });
        Ok(self)
    }

    /// `Effect budget: {name}`: commits of `name` (and `key`) ≤ `count`; always fails when any
    /// effect was redacted (identities cannot be filtered then).
    pub fn at_most_effects(
        mut self,
        name: &str,
        count: i64,
        key: Option<&str>,
    ) -> Result<Self, ConfigError> {
        if count < 0 {
            return Err(ConfigError::new(
                "Effect limit must be a nonnegative integer",
            ));
        }
        let check = if self.report.effects.iter().any(|e| e.redacted) {
            Check {
                name: format!("Effect budget: {name}"),
                passed: false,
                detail: "Cannot filter redacted effect identities; use nonsecret identifiers"
                    .into(),
            }
        } else {
            let actual = self
                .report
                .effects
                .iter()
                .filter(|e| e.name == name && key.is_none_or(|k| e.key == k))
                .count();
            Check {
                name: format!("Effect budget: {name}"),
                passed: actual as u64 <= count as u64,
                detail: format!("{actual} / {count} committed effects"),
            }
        };
        self.checks.push(check);
        Ok(self)
    }

    /// `No duplicate side effects`: no identity committed twice.
    pub fn no_duplicate_effects(mut self) -> Self {
        let mut counts: HashMap<u64, usize> = HashMap::new();
        for e in &self.report.effects {
            *counts.entry(e.identity).or_default() += 1;
        }
        let dups: usize = counts.values().map(|n| n - 1).sum();
        self.checks.push(Check {
            name: "No duplicate side effects".into(),
            passed: dups == 0,
            detail: format!(
                "{dups} duplicate effect(s) across {} commits",
                self.report.effects.len()
            ),
        });
        self
    }

    /// A custom check.
    pub fn check(
        mut self,
        name: impl Into<String>,
        passed: bool,
        detail: impl Into<String>,
    ) -> Self {
        self.checks.push(Check {
            name: name.into(),
            passed,
            detail: detail.into(),
        });
        self
    }

    /// The checks so far.
    pub fn checks(&self) -> &[Check] {
        &self.checks
    }

    /// Consumes the contract, returning its checks.
    pub fn into_checks(self) -> Vec<Check> {
        self.checks
    }

    /// At least one check, and all passed.
    pub fn passed(&self) -> bool {
        verdict(&self.checks)
    }

    /// Fails with the reference's message when empty or when any check failed.
    pub fn assert_valid(&self) -> Result<(), ContractFailure> {
        assert_checks(&self.checks)
    }

    /// `{"passed", "checks": [...]}`.
    pub fn to_value(&self) -> Value {
        checks_to_value(&self.checks)
    }
}

/// At least one check, and all passed.
pub fn verdict(checks: &[Check]) -> bool {
    !checks.is_empty() && checks.iter().all(|c| c.passed)
}

/// The reference's `assert_valid` over a list of checks.
pub fn assert_checks(checks: &[Check]) -> Result<(), ContractFailure> {
    if checks.is_empty() {
        return Err(ContractFailure(
            "An empty contract cannot establish correctness".into(),
        ));
    }
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| format!("{}: {}", c.name, c.detail))
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(ContractFailure(format!(
            "ToolStorm contract failed\n{}",
            failed.join("\n")
        )))
    }
}

/// `{"passed", "checks": [...]}` for a list of checks.
/// The checks of a recorded `{"passed", "checks": [{"name", "passed", "detail"}]}` contract, if
/// it has that shape.
pub fn checks_from_value(v: &Value) -> Option<Vec<Check>> {
    v.as_object()?
        .get("checks")?
        .as_array()?
        .iter()
        .map(|c| {
            let o = c.as_object()?;
            Some(Check {
                name: o.get("name")?.as_str()?.to_owned(),
                passed: o.get("passed")?.as_bool()?,
                detail: o.get("detail")?.as_str()?.to_owned(),
            })
        })
        .collect()
}

/// The contract object of `checks` (`--json`, run files, verdict files).
pub fn checks_to_value(checks: &[Check]) -> Value {
    let mut o = Object::new();
    o.push("passed", verdict(checks));
    o.push(
        "checks",
        Value::Array(checks.iter().map(Check::to_value).collect()),
    );
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_faults_coverage_does_not_judge_the_agent() {
        let check = |name: &str| Check {
            name: name.into(),
            passed: false,
            detail: String::new(),
        };
        assert!(!check("Fault exercised: lost-receipt").judges_the_agent());
        assert!(check("No duplicate side effects").judges_the_agent());
        assert!(check("Session finished").judges_the_agent());
        assert!(is_coverage(&format!("{FAULT_EXERCISED}: outage")));
    }
}
