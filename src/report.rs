//! Report schema v1 (spec §7): the typed form of a run's trace, and its `to_dict` layout
//! (key order matters for the command line's indented JSON; files use canonical order).

use crate::json::{Int, Object, Text, Value, sha256_hex};

mod canonical;

/// The only schema version.
pub const SCHEMA_VERSION: i64 = 1;

/// A call's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Returned normally.
    Ok,
    /// Raised an exception.
    Error,
    /// Cancelled (a `BaseException`).
    Cancelled,
    /// Still executing when the report was taken.
    Running,
}

impl Status {
    /// The name used in files.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Cancelled => "cancelled",
            Status::Running => "running",
        }
    }
    /// Parses a status name.
    pub fn parse(s: &str) -> Option<Status> {
        [
            Status::Ok,
            Status::Error,
            Status::Cancelled,
            Status::Running,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }
}

/// A recorded exception: its class name, whether it is portable, and a rate limit's wait.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorRecord {
    /// Class name, e.g. `ResponseLost`.
    pub type_name: Text,
    /// One of the four portable tool errors.
    pub known: bool,
    /// Present for a portable `RateLimited`.
    pub retry_after: Option<f64>,
}

impl ErrorRecord {
    /// The `{"type", "known"[, "retry_after"]}` object.
    pub fn to_value(&self) -> Value {
        let mut o = Object::new();
        o.push("type", self.type_name.clone());
        o.push("known", self.known);
        if let Some(r) = self.retry_after {
            o.push("retry_after", Value::Float(r));
        }
        Value::Object(o)
    }
}

/// One recorded invocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// 1-based position.
    pub id: u64,
    /// Tool name.
    pub tool: Text,
    /// 1-based count of calls to this tool.
    pub ordinal: u64,
    /// Invocation key (redacted).
    pub key: Text,
    /// Seconds since the run began (rounded to 6 places).
    pub started: f64,
    /// The enclosing call, if nested.
    pub parent_id: Option<u64>,
    /// Seconds the call took (rounded; may be `-0.0`).
    pub elapsed: f64,
    /// Outcome.
    pub status: Status,
    /// Name of the selected rule.
    pub fault: Option<Text>,
    /// Kind of the selected rule.
    pub kind: Option<crate::rule::FaultKind>,
    /// Whether the live function ran.
    pub executed: bool,
    /// Whether the fault was injected.
    pub injected: bool,
    /// Captured arguments (or null).
    pub arguments: Value,
    /// Captured output (or null).
    pub output: Value,
    /// The recorded exception.
    pub error: Option<ErrorRecord>,
    /// Output capture failed.
    pub capture_error: bool,
}

impl Call {
    /// The 16-key object in the reference's order.
    pub fn to_value(&self) -> Value {
        let mut o = Object::new();
        o.push("id", self.id);
        o.push("tool", self.tool.clone());
        o.push("ordinal", self.ordinal);
        o.push("key", self.key.clone());
        o.push("started", Value::Float(self.started));
        o.push("parent_id", self.parent_id.map(Value::from));
        o.push("elapsed", Value::Float(self.elapsed));
        o.push("status", self.status.as_str());
        o.push("fault", self.fault.clone().map(Value::Str));
        o.push("kind", self.kind.map(|k| Value::from(k.as_str())));
        o.push("executed", self.executed);
        o.push("injected", self.injected);
        o.push("arguments", self.arguments.clone());
        o.push("output", self.output.clone());
        o.push("error", self.error.as_ref().map(ErrorRecord::to_value));
        o.push("capture_error", self.capture_error);
        Value::Object(o)
    }

    /// Whether the call ended in an error or cancellation.
    pub fn failed(&self) -> bool {
        matches!(self.status, Status::Error | Status::Cancelled)
    }
}

/// One committed side effect.
#[derive(Clone, Debug, PartialEq)]
pub struct Effect {
    /// Effect name (redacted).
    pub name: Text,
    /// Effect key (redacted).
    pub key: Text,
    /// The call that committed it.
    pub call_id: u64,
    /// Seconds since the run began.
    pub at: f64,
    /// Per-run identity of the raw (name, key); repeats are duplicates.
    pub identity: u64,
    /// Whether redaction changed the name or key.
    pub redacted: bool,
}

impl Effect {
    /// The 6-key object.
    pub fn to_value(&self) -> Value {
        let mut o = Object::new();
        o.push("name", self.name.clone());
        o.push("key", self.key.clone());
        o.push("call_id", self.call_id);
        o.push("at", Value::Float(self.at));
        o.push("identity", self.identity);
        o.push("redacted", self.redacted);
        Value::Object(o)
    }
}

/// Per-rule counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Calls the rule was eligible for (shadowed included).
    pub eligible: u64,
    /// Calls the rule won selection for.
    pub selected: u64,
    /// Selected calls that were actually injected.
    pub triggered: u64,
}

impl Coverage {
    /// The 3-key object.
    pub fn to_value(&self) -> Value {
        let mut o = Object::new();
        o.push("eligible", self.eligible);
        o.push("selected", self.selected);
        o.push("triggered", self.triggered);
        Value::Object(o)
    }
}

/// A run's trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The run's seed (any integer in a loaded file).
    pub seed: Int,
    /// Clock class name.
    pub clock: String,
    /// Invocations in start order.
    pub calls: Vec<Call>,
    /// Commits in record order.
    pub effects: Vec<Effect>,
    /// Rule objects (`to_dict` form, replacement redacted).
    pub rules: Vec<Value>,
    /// Rule name → counters, in rule order (sorted order for loaded files).
    pub coverage: Vec<(Text, Coverage)>,
    /// Calls refused by the budget.
    pub budget_rejections: u64,
    /// Whether payloads were captured.
    pub capture: bool,
}

impl Report {
    /// The 9-key object in the reference's `to_dict` order.
    pub fn to_value(&self) -> Value {
        let mut o = Object::new();
        o.push("seed", Value::Int(self.seed.clone()));
        o.push("clock", self.clock.as_str());
        o.push(
            "calls",
            Value::Array(self.calls.iter().map(Call::to_value).collect()),
        );
        o.push(
            "effects",
            Value::Array(self.effects.iter().map(Effect::to_value).collect()),
        );
        o.push("rules", Value::Array(self.rules.clone()));
        let mut cov = Object::new();
        for (name, c) in &self.coverage {
            cov.push(name.clone(), c.to_value());
        }
        o.push("coverage", Value::Object(cov));
        o.push("budget_rejections", self.budget_rejections);
        o.push("capture", self.capture);
        o.push("schema_version", SCHEMA_VERSION);
        Value::Object(o)
    }

    /// SHA-256 of the canonical form: the run's identity.
    pub fn digest(&self) -> String {
        sha256_hex(self.canonical().as_bytes())
    }

    /// Coverage of one rule.
    pub fn coverage_of(&self, rule: &str) -> Option<Coverage> {
        self.coverage
            .iter()
            .find(|(n, _)| n == rule)
            .map(|(_, c)| *c)
    }

    /// Total injected faults (Σ triggered).
    pub fn faults_triggered(&self) -> u64 {
        self.coverage.iter().map(|(_, c)| c.triggered).sum()
    }

    /// Σ over identities of (occurrences − 1).
    pub fn duplicate_effects(&self) -> usize {
        let mut seen = std::collections::HashSet::new();
        self.effects
            .iter()
            .filter(|e| !seen.insert(e.identity))
            .count()
    }
}
