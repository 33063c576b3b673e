//! Executor scenario files (world `orbit`): recorded batches of function calls, the fault
//! rules, the approver, which tools are offered, and the limits. Unknown fields are errors;
//! every problem names the JSON path and the reason.
//!
//! ```json
//! {
//!   "schema_version": 1, "world": "orbit", "name": "orbit-parallel", "title": "...",
//!   "code": "EXE-001", "category": "EXECUTOR", "description": "...", "lesson": "...",
//!   "seed": 7,
//!   "approver": "deny_all",            // or "interactive", or {"allow": ["add_label"]}
//!   "tools": "all",                    // or "read_only"
//!   "limits": {"max_concurrency": 4, "max_attempts": 2, "default_timeout": 5.0},
//!   "rules": [{"name": "store-locked", "tool": "get_issue", "kind": "unavailable", "calls": [1]}],
//!   "batches": [[{"type": "function_call", "name": "get_issue",
//!                 "arguments": "{\"issue_id\": 41}", "call_id": "call_A"}]]
//! }
//! ```

use crate::error::ConfigError;
use crate::json::{Object, Value, parse, pretty};
use crate::obj;
use crate::rule::{Rule, require_keys};

use super::{FunctionCall, Limits};

/// The world executor scenario files name.
pub const WORLD: &str = "orbit";
/// Most batches in a file.
pub const MAX_BATCHES: usize = 100;
/// Most calls in a batch.
pub const MAX_BATCH_CALLS: usize = 100;

const REQUIRED: [&str; 7] = [
    "schema_version",
    "world",
    "name",
    "title",
    "seed",
    "rules",
    "batches",
];
const OPTIONAL: [&str; 7] = [
    "code",
    "category",
    "description",
    "lesson",
    "approver",
    "tools",
    "limits",
];

/// Who approves side-effecting calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApproverChoice {
    /// No to everything (the default).
    DenyAll,
    /// Ask a person; with no terminal, no.
    Interactive,
    /// Yes to these tools only.
    Allow(Vec<String>),
}

impl ApproverChoice {
    /// The file form.
    pub fn to_value(&self) -> Value {
        match self {
            ApproverChoice::DenyAll => "deny_all".into(),
            ApproverChoice::Interactive => "interactive".into(),
            ApproverChoice::Allow(tools) => obj! {
                "allow" => Value::Array(tools.iter().map(|t| t.as_str().into()).collect()),
            },
        }
    }
}

/// An executor scenario file's content.
#[derive(Clone, Debug, PartialEq)]
pub struct ExecutorScenario {
    /// Identifier.
    pub name: String,
    /// Title printed by the command line.
    pub title: String,
    /// Incident code.
    pub code: String,
    /// Category.
    pub category: String,
    /// What happens.
    pub description: String,
    /// What to learn from it.
    pub lesson: String,
    /// Decision and jitter seed.
    pub seed: i64,
    /// The approver.
    pub approver: ApproverChoice,
    /// Whether only read-only tools are offered.
    pub read_only: bool,
    /// Executor limits.
    pub limits: Limits,
    /// Rule objects, validated.
    pub rules: Vec<Value>,
    /// Recorded batches, in order.
    pub batches: Vec<Vec<FunctionCall>>,
}

fn bad(path: &str, why: &str) -> ConfigError {
    ConfigError::new("Invalid scenario file")
        .at(path)
        .because(why)
}

fn text(o: &Object, key: &str, required: bool) -> Result<String, ConfigError> {
    match o.get(key) {
        None if !required => Ok(String::new()),
        Some(Value::Str(t)) if !required || !t.is_empty() => Ok(t.to_lossy()),
        _ => Err(bad(key, "expected a non-empty string")),
    }
}

/// Whether a parsed document names the executor's world (so `run FILE` can dispatch on it).
pub fn names_world(v: &Value) -> bool {
    v.as_object()
        .and_then(|o| o.get("world"))
        .and_then(Value::as_str)
        == Some(WORLD)
}

fn limits(v: Option<&Value>) -> Result<Limits, ConfigError> {
    let mut out = Limits::default();
    let Some(v) = v else {
        return Ok(out);
    };
    let o = require_keys(
        v,
        &[],
        &["max_concurrency", "max_attempts", "default_timeout"],
    )
    .map_err(|e| bad("limits", &e.detail.unwrap_or_else(|| e.message.into())))?;
    if let Some(n) = o.get("max_concurrency") {
        out.max_concurrency = n.as_i64().filter(|n| (1..=64).contains(n)).ok_or_else(|| {
            bad(
                "limits.max_concurrency",
                "expected an integer between 1 and 64",
            )
        })? as usize;
    }
    if let Some(n) = o.get("max_attempts") {
        out.max_attempts = n.as_i64().filter(|n| (1..=10).contains(n)).ok_or_else(|| {
            bad(
                "limits.max_attempts",
                "expected an integer between 1 and 10",
            )
        })? as u32;
    }
    if let Some(t) = o.get("default_timeout") {
        out.default_timeout = Some(t)
            .filter(|t| !matches!(t, Value::Bool(_)))
            .and_then(Value::as_number_f64)
            .filter(|t| t.is_finite() && *t > 0.0 && *t <= 86_400.0)
            .ok_or_else(|| bad("limits.default_timeout", "expected seconds in (0, 86400]"))?;
    }
    Ok(out)
}

fn approver(v: Option<&Value>) -> Result<ApproverChoice, ConfigError> {
    const WHY: &str = "expected \"deny_all\", \"interactive\" or {\"allow\": [tool names]}";
    match v {
        None => Ok(ApproverChoice::DenyAll),
        Some(Value::Str(s)) => match s.as_str() {
            Some("deny_all") => Ok(ApproverChoice::DenyAll),
            Some("interactive") => Ok(ApproverChoice::Interactive),
            _ => Err(bad("approver", WHY)),
        },
        Some(v @ Value::Object(_)) => {
            let o = require_keys(v, &["allow"], &[])
                .map_err(|e| bad("approver", &e.detail.unwrap_or_else(|| WHY.into())))?;
            let Some(Value::Array(items)) = o.get("allow") else {
                return Err(bad("approver.allow", "expected a list of tool names"));
            };
            items
                .iter()
                .enumerate()
                .map(|(i, t)| match t.as_str() {
                    Some(s) if !s.is_empty() => Ok(s.to_owned()),
                    _ => Err(bad(&format!("approver.allow[{i}]"), "expected a tool name")),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(ApproverChoice::Allow)
        }
        Some(_) => Err(bad("approver", WHY)),
    }
}

impl ExecutorScenario {
    /// Validates a parsed document.
    pub fn from_value(v: &Value) -> Result<ExecutorScenario, ConfigError> {
        let o = require_keys(v, &REQUIRED, &OPTIONAL).map_err(|e| ConfigError {
            message: "Invalid scenario file",
            path: e.path,
            detail: e.detail.or(Some(e.message.into())),
        })?;
        if !matches!(o.get("schema_version"), Some(Value::Int(i)) if i.as_i64() == Some(1)) {
            return Err(bad("schema_version", "expected 1"));
        }
        if text(o, "world", true)? != WORLD {
            return Err(bad("world", "expected \"orbit\""));
        }
        let seed = crate::lab::scenario_file::seed_field(o)?;
        let read_only = match o.get("tools").map(|t| t.as_str()) {
            None | Some(Some("all")) => false,
            Some(Some("read_only")) => true,
            _ => return Err(bad("tools", "expected \"all\" or \"read_only\"")),
        };
        let rule_values = crate::lab::scenario_file::rule_list(o)?;
        let Some(Value::Array(batch_values)) = o.get("batches") else {
            return Err(bad("batches", "expected a list of batches"));
        };
        if batch_values.is_empty() || batch_values.len() > MAX_BATCHES {
            return Err(bad("batches", "expected 1 to 100 batches"));
        }
        let mut batches = Vec::new();
        for (b, batch) in batch_values.iter().enumerate() {
            let Value::Array(items) = batch else {
                return Err(bad(
                    &format!("batches[{b}]"),
                    "expected a list of function calls",
                ));
            };
            if items.is_empty() || items.len() > MAX_BATCH_CALLS {
                return Err(bad(
                    &format!("batches[{b}]"),
                    "expected 1 to 100 function calls",
                ));
            }
            let calls = items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    FunctionCall::from_value(item).map_err(|e| {
                        ConfigError {
                            message: "Invalid scenario file",
                            path: e.path,
                            detail: e.detail.or(Some(e.message.into())),
                        }
                        .within(&format!("batches[{b}][{i}]"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            batches.push(calls);
        }
        Ok(ExecutorScenario {
            name: text(o, "name", true)?,
            title: text(o, "title", true)?,
            code: text(o, "code", false)?,
            category: text(o, "category", false)?,
            description: text(o, "description", false)?,
            lesson: text(o, "lesson", false)?,
            seed,
            approver: approver(o.get("approver"))?,
            read_only,
            limits: limits(o.get("limits"))?,
            rules: rule_values,
            batches,
        })
    }

    /// Parses and validates scenario text.
    pub fn from_text(text: &str) -> Result<ExecutorScenario, ConfigError> {
        let v = parse(text).map_err(|e| {
            ConfigError::new("Invalid or excessively nested JSON").because(e.to_string())
        })?;
        ExecutorScenario::from_value(&v)
    }

    /// The validated rules.
    pub fn rules(&self) -> Result<Vec<Rule>, ConfigError> {
        self.rules
            .iter()
            .enumerate()
            .map(|(i, r)| Rule::from_value(r).map_err(|e| e.within(&format!("rules[{i}]"))))
            .collect()
    }

    /// The document, every field spelled out.
    pub fn to_value(&self) -> Value {
        let rules = self
            .rules
            .iter()
            .map(|r| Rule::from_value(r).map_or_else(|_| r.clone(), |r| r.to_value()))
            .collect();
        let batches = self
            .batches
            .iter()
            .map(|b| Value::Array(b.iter().map(FunctionCall::to_value).collect()))
            .collect();
        obj! {
            "schema_version" => 1,
            "world" => WORLD,
            "name" => self.name.as_str(),
            "title" => self.title.as_str(),
            "code" => self.code.as_str(),
            "category" => self.category.as_str(),
            "description" => self.description.as_str(),
            "lesson" => self.lesson.as_str(),
            "seed" => self.seed,
            "approver" => self.approver.to_value(),
            "tools" => if self.read_only { "read_only" } else { "all" },
            "limits" => self.limits.to_value(),
            "rules" => Value::Array(rules),
            "batches" => Value::Array(batches),
        }
    }

    /// The file text: indented JSON and a final newline.
    pub fn to_text(&self) -> String {
        pretty(&self.to_value()) + "\n"
    }
}
