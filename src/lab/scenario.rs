//! Lab scenarios (spec §13.3): the six bundled incidents — their rules and the contract checks
//! that judge a run — as plain data, so scenario files and the TUI can edit them.

use crate::json::{Value, parse};
use crate::scenario_fields::Story;

/// A scenario-specific contract check, appended after the three core checks.
#[derive(Clone, Debug, PartialEq)]
pub enum ScenarioCheck {
    /// `Retry-after respected`: no retry before a rate limit's advertised wait.
    RetryAfterRespected,
    /// `Honest outcome`: a stopped task never claims to have shipped.
    HonestOutcome,
    /// `Task completed`: a shipment was confirmed.
    TaskCompleted,
    /// `Latency budget`: the run ends within this many virtual seconds.
    LatencyBudget(f64),
}

impl ScenarioCheck {
    /// The name used in scenario files.
    pub fn as_str(&self) -> &'static str {
        match self {
            ScenarioCheck::RetryAfterRespected => "retry_after_respected",
            ScenarioCheck::HonestOutcome => "honest_outcome",
            ScenarioCheck::TaskCompleted => "task_completed",
            ScenarioCheck::LatencyBudget(_) => "latency_budget",
        }
    }
}

/// The latency budget every bundled scenario uses, in virtual seconds.
pub const DEFAULT_LATENCY_BUDGET: f64 = 1.5;

/// A lab scenario: what goes wrong and how a run is judged.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Identifier (`lost_ack`).
    pub name: String,
    /// Title, incident code, category, what happens and the lesson.
    pub story: Story,
    /// Rule objects (validated when a run starts).
    pub rules: Vec<Value>,
    /// Scenario-specific checks, in order.
    pub checks: Vec<ScenarioCheck>,
}

struct Entry {
    name: &'static str,
    title: &'static str,
    code: &'static str,
    category: &'static str,
    description: &'static str,
    lesson: &'static str,
    rule: &'static str,
    stop_check: ScenarioCheck,
}

const CATALOG: [Entry; 6] = [
    Entry {
        name: "lost_ack",
        title: "Lost acknowledgement",
        code: "INC-001",
        category: "SIDE EFFECTS",
        description: "The first create_shipment commits, then its acknowledgement is lost on the way back.",
        lesson: "A retry after a lost acknowledgement must reuse an idempotency key, or the order ships twice.",
        rule: r#"{"name":"lost-receipt","tool":"create_shipment","kind":"response_lost","calls":[1]}"#,
        stop_check: ScenarioCheck::TaskCompleted,
    },
    Entry {
        name: "rate_limit",
        title: "Rate-limited inventory reads",
        code: "INC-002",
        category: "RECOVERY",
        description: "The first two inventory reads are refused with a 0.6 s retry-after.",
        lesson: "Honour retry-after: retrying sooner only burns the budget.",
        rule: r#"{"name":"inventory-busy","tool":"check_inventory","kind":"rate_limit","calls":[1,2],"delay":0.6}"#,
        stop_check: ScenarioCheck::TaskCompleted,
    },
    Entry {
        name: "schema_drift",
        title: "Invalid inventory response",
        code: "INC-003",
        category: "VALIDATION",
        description: "The first inventory read returns a malformed payload instead of running.",
        lesson: "Validate tool outputs before acting on them.",
        rule: r#"{"name":"bad-inventory","tool":"check_inventory","kind":"replace","calls":[1],"replacement":{"available":"probably","warehouse":null}}"#,
        stop_check: ScenarioCheck::TaskCompleted,
    },
    Entry {
        name: "timeout",
        title: "Inventory read timeout",
        code: "INC-004",
        category: "RECOVERY",
        description: "The first inventory read times out before it runs.",
        lesson: "A read that failed before running is safe to retry.",
        rule: r#"{"name":"slow-inventory","tool":"check_inventory","kind":"timeout","calls":[1]}"#,
        stop_check: ScenarioCheck::TaskCompleted,
    },
    Entry {
        name: "latency",
        title: "Slow inventory response",
        code: "INC-005",
        category: "LATENCY",
        description: "The first inventory read is delayed by 1.4 s of virtual time.",
        lesson: "Retries cannot fix slowness; only a budget makes it visible.",
        rule: r#"{"name":"inventory-lag","tool":"check_inventory","kind":"latency","calls":[1],"delay":1.4}"#,
        stop_check: ScenarioCheck::TaskCompleted,
    },
    Entry {
        name: "blackout",
        title: "Sustained inventory outage",
        code: "INC-006",
        category: "TERMINATION",
        description: "Every inventory read fails: the service is down for the whole run.",
        lesson: "When recovery is impossible, stop and say so; never claim a shipment.",
        rule: r#"{"name":"inventory-down","tool":"check_inventory","kind":"unavailable"}"#,
        stop_check: ScenarioCheck::HonestOutcome,
    },
];

/// Names of the bundled scenarios, in catalog order.
pub fn names() -> impl Iterator<Item = &'static str> {
    CATALOG.iter().map(|e| e.name)
}

/// A bundled scenario by name.
pub fn bundled(name: &str) -> Option<Scenario> {
    let e = CATALOG.iter().find(|e| e.name == name)?;
    let rule = crate::rule::Rule::from_value(&parse(e.rule).ok()?)
        .ok()?
        .to_value();
    let mut checks = Vec::new();
    if e.name == "rate_limit" {
        checks.push(ScenarioCheck::RetryAfterRespected);
    }
    checks.push(e.stop_check.clone());
    checks.push(ScenarioCheck::LatencyBudget(DEFAULT_LATENCY_BUDGET));
    Some(Scenario {
        name: e.name.into(),
        story: Story {
            title: e.title.into(),
            code: e.code.into(),
            category: e.category.into(),
            description: e.description.into(),
            lesson: e.lesson.into(),
        },
        rules: vec![rule],
        checks,
    })
}

/// Every bundled scenario, in catalog order.
pub fn all() -> Vec<Scenario> {
    names().filter_map(bundled).collect()
}
