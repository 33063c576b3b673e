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
//!   "tools": "all",                    // or "read_only", or "mcp" (an MCP server's: --live --mcp)
//!   "limits": {"max_concurrency": 4, "max_attempts": 2, "default_timeout": 5.0},
//!   "timeouts": {"create_shipment": 2.0},  // per-tool deadlines for an MCP server's tools
//!   "rules": [{"name": "store-locked", "tool": "get_issue", "kind": "unavailable", "calls": [1]}],
//!   "batches": [[{"type": "function_call", "name": "get_issue",
//!                 "arguments": "{\"issue_id\": 41}", "call_id": "call_A"}]]
//! }
//! ```

use crate::error::ConfigError;
use crate::json::{Object, Value, parse, pretty};
use crate::obj;
use crate::printable::quoted;
use crate::rule::{Rule, require_keys};
use crate::scenario_fields::{
    self, Story, as_invalid, head, invalid as bad, rule_list, seed_field, text_field as text,
};

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
const OPTIONAL: [&str; 8] = [
    "code",
    "category",
    "description",
    "lesson",
    "approver",
    "tools",
    "limits",
    "timeouts",
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
    /// Title, incident code, category, what happens and the lesson.
    pub story: Story,
    /// Decision and jitter seed.
    pub seed: i64,
    /// The approver.
    pub approver: ApproverChoice,
    /// Whether only read-only tools are offered.
    pub read_only: bool,
    /// Whether the batches are for an MCP server's tools (`"tools": "mcp"`): they run only
    /// with `run --live --mcp -- SERVER`, never against the Orbit world.
    pub from_mcp: bool,
    /// Executor limits.
    pub limits: Limits,
    /// Per-tool deadlines in seconds for tools from an MCP server (`run --live --mcp`); the
    /// Orbit world's tools keep their own.
    pub timeouts: Vec<(String, f64)>,
    /// Rule objects, validated.
    pub rules: Vec<Value>,
    /// Recorded batches, in order.
    pub batches: Vec<Vec<FunctionCall>>,
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

fn timeouts(v: Option<&Value>) -> Result<Vec<(String, f64)>, ConfigError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let Some(o) = v.as_object() else {
        return Err(bad(
            "timeouts",
            "expected an object of tool names to seconds",
        ));
    };
    o.iter()
        .map(|(k, t)| {
            let name = k.to_lossy();
            let secs = Some(t)
                .filter(|t| !matches!(t, Value::Bool(_)))
                .and_then(|t| t.as_number_f64())
                .filter(|t| t.is_finite() && *t > 0.0 && *t <= 86_400.0)
                .ok_or_else(|| {
                    bad(
                        &format!("timeouts.{name}"),
                        "expected seconds in (0, 86400]",
                    )
                })?;
            if name.is_empty() {
                return Err(bad("timeouts", "a tool name is empty"));
            }
            Ok((name, secs))
        })
        .collect()
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
        let o = head(v, &REQUIRED, &OPTIONAL, WORLD)?;
        let seed = seed_field(o)?;
        let (read_only, from_mcp) = match o.get("tools").map(|t| t.as_str()) {
            None | Some(Some("all")) => (false, false),
            Some(Some("read_only")) => (true, false),
            Some(Some("mcp")) => (false, true),
            _ => {
                return Err(bad(
                    "tools",
                    "expected \"all\", \"read_only\" or \"mcp\" (an MCP server's tools)",
                ));
            }
        };
        let rule_values = rule_list(o)?;
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
                    FunctionCall::from_value(item)
                        .map_err(|e| as_invalid(e).within(&format!("batches[{b}][{i}]")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let mut ids = std::collections::HashSet::new();
            if let Some(i) = calls.iter().position(|c| !ids.insert(c.call_id.as_str())) {
                return Err(bad(
                    &format!("batches[{b}][{i}].call_id"),
                    &format!(
                        "call id \"{}\" is used twice in this batch; each call needs its own",
                        quoted(&calls[i].call_id)
                    ),
                ));
            }
            batches.push(calls);
        }
        Ok(ExecutorScenario {
            name: text(o, "name", true)?,
            story: Story::from_object(o)?,
            seed,
            approver: approver(o.get("approver"))?,
            read_only,
            from_mcp,
            limits: limits(o.get("limits"))?,
            timeouts: timeouts(o.get("timeouts"))?,
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
        scenario_fields::rules(&self.rules)
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
        let mut o = Object::new();
        o.push("schema_version", scenario_fields::SCHEMA_VERSION);
        o.push("world", WORLD);
        o.push("name", self.name.as_str());
        self.story.push_into(&mut o);
        o.push("seed", self.seed);
        o.push("approver", self.approver.to_value());
        o.push(
            "tools",
            match (self.read_only, self.from_mcp) {
                (true, _) => "read_only",
                (false, true) => "mcp",
                (false, false) => "all",
            },
        );
        o.push("limits", self.limits.to_value());
        if !self.timeouts.is_empty() {
            let mut t = Object::new();
            for (name, secs) in &self.timeouts {
                t.push(name.as_str(), Value::Float(*secs));
            }
            o.push("timeouts", t);
        }
        o.push("rules", Value::Array(rules));
        o.push("batches", Value::Array(batches));
        Value::Object(o)
    }

    /// The file text: indented JSON and a final newline.
    pub fn to_text(&self) -> String {
        pretty(&self.to_value()) + "\n"
    }
}
