//! Fault rules (spec §4): the six kinds, validation with the reference's messages, eligibility
//! by tool glob and per-tool ordinal, and the `to_dict` form reports carry.

mod glob;

use std::cmp::Ordering;
use std::fmt;

pub use glob::Glob;

use crate::error::ConfigError;
use crate::json::{Int, Object, Text, Value};
use crate::printable::quoted;
use crate::redact::check_json;

/// The six fault kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// Raise `ToolTimeout` before execution.
    Timeout,
    /// Raise `RateLimited(retry_after = delay)` before execution.
    RateLimit,
    /// Raise `ToolUnavailable` before execution.
    Unavailable,
    /// Execute, then raise `ResponseLost` after a successful return.
    ResponseLost,
    /// Return the replacement instead of executing.
    Replace,
    /// Sleep `delay` on the clock, then execute.
    Latency,
}

impl FaultKind {
    /// Every kind, in the reference's order.
    pub const ALL: [FaultKind; 6] = [
        FaultKind::Timeout,
        FaultKind::RateLimit,
        FaultKind::Unavailable,
        FaultKind::ResponseLost,
        FaultKind::Replace,
        FaultKind::Latency,
    ];

    /// The name used in files (`rate_limit`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Timeout => "timeout",
            FaultKind::RateLimit => "rate_limit",
            FaultKind::Unavailable => "unavailable",
            FaultKind::ResponseLost => "response_lost",
            FaultKind::Replace => "replace",
            FaultKind::Latency => "latency",
        }
    }

    /// Parses a kind name.
    pub fn parse(s: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// When the fault acts, in words for people.
    pub fn phase(self) -> &'static str {
        match self {
            FaultKind::Timeout | FaultKind::RateLimit | FaultKind::Unavailable => {
                "before execution"
            }
            FaultKind::Replace => "replaced",
            FaultKind::Latency => "latency",
            FaultKind::ResponseLost => "after success",
        }
    }

    /// Whether the fault raises before the tool runs.
    pub fn is_pre_call_error(self) -> bool {
        matches!(
            self,
            FaultKind::Timeout | FaultKind::RateLimit | FaultKind::Unavailable
        )
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A validated fault rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// Unique name (1–100 code points).
    pub name: Text,
    /// Tool-name glob (1–200 code points).
    pub tool: Text,
    /// What the fault does.
    pub kind: FaultKind,
    /// 1-based per-tool ordinals the rule applies to, sorted; empty = every call.
    pub calls: Vec<Int>,
    /// Chance of selection in [0, 1].
    pub probability: f64,
    /// Most selections, or unlimited.
    pub limit: Option<Int>,
    /// Seconds (latency sleep; rate-limit `retry_after`).
    pub delay: f64,
    /// What a `replace` fault returns.
    pub replacement: Value,
    glob: Glob,
}

/// A rule before validation: what a user writes.
#[derive(Clone, Debug)]
pub struct RuleSpec {
    /// Rule name.
    pub name: String,
    /// Tool glob.
    pub tool: String,
    /// Kind name (`timeout`, ...).
    pub kind: String,
    /// Ordinals.
    pub calls: Vec<i64>,
    /// Probability.
    pub probability: f64,
    /// Limit.
    pub limit: Option<i64>,
    /// Delay in seconds.
    pub delay: f64,
    /// Replacement payload.
    pub replacement: Value,
}

impl RuleSpec {
    /// A rule that always fires on every call of `tool`.
    pub fn new(name: &str, tool: &str, kind: FaultKind) -> RuleSpec {
        RuleSpec {
            name: name.into(),
            tool: tool.into(),
            kind: kind.as_str().into(),
            calls: Vec::new(),
            probability: 1.0,
            limit: None,
            delay: 0.0,
            replacement: Value::Null,
        }
    }
    /// Restricts to per-tool ordinals.
    pub fn calls(mut self, calls: impl IntoIterator<Item = i64>) -> Self {
        self.calls = calls.into_iter().collect();
        self
    }
    /// Sets the probability.
    pub fn probability(mut self, p: f64) -> Self {
        self.probability = p;
        self
    }
    /// Caps selections.
    pub fn limit(mut self, limit: i64) -> Self {
        self.limit = Some(limit);
        self
    }
    /// Sets the delay.
    pub fn delay(mut self, delay: f64) -> Self {
        self.delay = delay;
        self
    }
    /// Sets the replacement.
    pub fn replacement(mut self, v: impl Into<Value>) -> Self {
        self.replacement = v.into();
        self
    }
    /// Validates into a [`Rule`].
    pub fn build(self) -> Result<Rule, ConfigError> {
        let mut o = Object::new();
        o.push("name", self.name);
        o.push("tool", self.tool);
        o.push("kind", self.kind);
        o.push(
            "calls",
            Value::Array(self.calls.into_iter().map(Value::from).collect()),
        );
        o.push("probability", Value::Float(self.probability));
        o.push("limit", self.limit.map(Value::from));
        o.push("delay", Value::Float(self.delay));
        o.push("replacement", self.replacement);
        Rule::construct(&o)
    }
}

/// The keys a rule object may carry.
pub const RULE_KEYS: [&str; 8] = [
    "name",
    "tool",
    "kind",
    "calls",
    "probability",
    "limit",
    "delay",
    "replacement",
];

/// `require_keys`: missing required keys first, then unknown keys.
pub fn require_keys<'a>(
    value: &'a Value,
    required: &[&str],
    optional: &[&str],
) -> Result<&'a Object, ConfigError> {
    let Some(obj) = value.as_object() else {
        return Err(ConfigError::new("Missing required document fields")
            .because(format!("expected an object, found {}", value.type_name())));
    };
    if let Some(missing) = required.iter().find(|k| !obj.contains_key(k)) {
        return Err(ConfigError::new("Missing required document fields")
            .because(format!("missing \"{missing}\"")));
    }
    if let Some(extra) = obj.keys().find(|k| {
        k.as_str()
            .is_none_or(|k| !required.contains(&k) && !optional.contains(&k))
    }) {
        return Err(ConfigError::new("Unknown document fields")
            .because(format!("unexpected \"{}\"", quoted(&extra.to_lossy()))));
    }
    Ok(obj)
}

/// The reference's `duration()`: a number (not bool), finite as a float, ≥ 0.
pub fn duration(v: &Value) -> Result<f64, ConfigError> {
    match v.as_number_f64() {
        Some(f) if f.is_finite() && f >= 0.0 => Ok(f),
        _ => Err(
            ConfigError::new("Duration must be a finite nonnegative number").because(format!(
                "got {}",
                crate::json::canonical(v)
                    .chars()
                    .take(40)
                    .collect::<String>()
            )),
        ),
    }
}

/// Which rules' tool globs match each tool name seen so far. A run calls few distinct tools
/// many times, so each (rule, tool name) pair is matched once, and the name's code points are
/// decoded once for all rules. Look a call's tool up once ([`ToolMatches::row`]), then ask
/// per rule ([`ToolMatches::eligible`]).
#[derive(Clone, Debug, Default)]
pub struct ToolMatches {
    index: crate::hashing::Map<Text, usize>,
    rows: Vec<Box<[bool]>>,
}

impl ToolMatches {
    /// The row of `tool`: for each of `rules`, whether its glob matches.
    pub fn row(&mut self, rules: &[Rule], tool: &Text) -> usize {
        if let Some(&r) = self.index.get(tool) {
            return r;
        }
        let points: Vec<u32> = tool.code_points().collect();
        self.rows.push(
            rules
                .iter()
                .map(|r| r.matches_tool_points(&points))
                .collect(),
        );
        self.index.insert(tool.clone(), self.rows.len() - 1);
        self.rows.len() - 1
    }

    /// Whether `rules[i]`'s glob matches the tool whose row is `row` (any ordinal).
    pub fn matched(&self, row: usize, i: usize) -> bool {
        self.rows
            .get(row)
            .and_then(|r| r.get(i))
            .copied()
            .unwrap_or(false)
    }

    /// Whether `rules[i]` applies to the `ordinal`-th call of the tool whose row is `row`.
    pub fn eligible(&self, rules: &[Rule], row: usize, i: usize, ordinal: u64) -> bool {
        let matched = self
            .rows
            .get(row)
            .and_then(|r| r.get(i))
            .copied()
            .unwrap_or(false);
        matched && rules.get(i).is_some_and(|r| r.covers_ordinal(ordinal))
    }
}

/// Compares two nonnegative-or-any integers by value.
pub fn int_cmp(a: &Int, b: &Int) -> Ordering {
    match (a, b) {
        (Int::Small(x), Int::Small(y)) => x.cmp(y),
        _ => {
            let (an, bn) = (a.is_negative(), b.is_negative());
            if an != bn {
                return if an {
                    Ordering::Less
                } else {
                    Ordering::Greater
                };
            }
            let (ad, bd) = (a.to_decimal(), b.to_decimal());
            let (ad, bd) = (ad.trim_start_matches('-'), bd.trim_start_matches('-'));
            let mag = ad.len().cmp(&bd.len()).then_with(|| ad.cmp(bd));
            if an { mag.reverse() } else { mag }
        }
    }
}

fn text_len_ok(v: &Value, max: usize) -> Option<Text> {
    let t = v.as_text()?;
    let n = t.len_chars();
    (1..=max).contains(&n).then(|| t.clone())
}

impl Rule {
    /// The reference's constructor checks, in order, on a rule object.
    fn construct(o: &Object) -> Result<Rule, ConfigError> {
        let get = |k: &str| o.get(k).cloned().unwrap_or(Value::Null);
        let name = text_len_ok(&get("name"), 100)
            .ok_or_else(|| ConfigError::new("Rule name must be 1–100 characters").at("name"))?;
        let tool = text_len_ok(&get("tool"), 200).ok_or_else(|| {
            ConfigError::new("Rule tool pattern must be 1–200 characters").at("tool")
        })?;
        let kind = get("kind")
            .as_str()
            .and_then(FaultKind::parse)
            .ok_or_else(|| {
                ConfigError::new("Unknown fault kind").at("kind").because(
                    "expected timeout, rate_limit, unavailable, response_lost, replace or latency",
                )
            })?;
        let calls_value = o.get("calls").cloned().unwrap_or(Value::Array(Vec::new()));
        let Value::Array(items) = calls_value else {
            return Err(
                ConfigError::new("Rule calls must be positive integer ordinals").at("calls"),
            );
        };
        let mut calls = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::Int(n) if int_cmp(n, &Int::Small(1)) != Ordering::Less => {
                    calls.push(n.clone())
                }
                _ => {
                    return Err(
                        ConfigError::new("Rule calls must be positive integer ordinals")
                            .at(format!("calls[{i}]")),
                    );
                }
            }
        }
        calls.sort_by(int_cmp);
        if calls
            .windows(2)
            .any(|w| int_cmp(&w[0], &w[1]) == Ordering::Equal)
        {
            return Err(ConfigError::new("Rule calls cannot contain duplicates").at("calls"));
        }
        let probability = duration(&o.get("probability").cloned().unwrap_or(Value::Float(1.0)))
            .map_err(|e| e.at("probability"))?;
        let delay = duration(&o.get("delay").cloned().unwrap_or(Value::Float(0.0)))
            .map_err(|e| e.at("delay"))?;
        if probability > 1.0 {
            return Err(
                ConfigError::new("Rule probability must be between 0 and 1").at("probability")
            );
        }
        let limit = match o.get("limit").unwrap_or(&Value::Null) {
            Value::Null => None,
            Value::Int(n) if int_cmp(n, &Int::Small(1)) != Ordering::Less => Some(n.clone()),
            _ => {
                return Err(
                    ConfigError::new("Rule limit must be a positive integer or null").at("limit"),
                );
            }
        };
        let replacement = get("replacement");
        check_json(&replacement, 0).map_err(|e| e.at("replacement"))?;
        let glob = Glob::new(&tool);
        Ok(Rule {
            name,
            tool,
            kind,
            calls,
            probability,
            limit,
            delay,
            replacement,
            glob,
        })
    }

    /// `Rule.from_dict`: key checks surface as-is; any other problem is `Invalid fault rule`
    /// (the specific reason is kept in the path and detail).
    pub fn from_value(v: &Value) -> Result<Rule, ConfigError> {
        let o = require_keys(v, &RULE_KEYS[..3], &RULE_KEYS[3..])?;
        Rule::construct(o).map_err(|inner| {
            // The constructor's message is the reference's; for people, say what a
            // probability must be (a duration check catches a negative one).
            let detail = match (inner.path.as_deref(), inner.detail) {
                (Some("probability"), got) => format!(
                    "expected a number between 0 and 1{}",
                    got.map_or(String::new(), |g| format!(", {g}"))
                ),
                (_, Some(d)) => format!("{}: {d}", inner.message),
                (_, None) => inner.message.to_string(),
            };
            ConfigError {
                message: "Invalid fault rule",
                path: inner.path,
                detail: Some(detail),
            }
        })
    }

    /// The `to_dict` form, in the reference's key order (replacement as stored).
    pub fn to_value(&self) -> Value {
        self.to_value_with(self.replacement.clone())
    }

    /// The `to_dict` form with a given (e.g. redacted) replacement.
    pub fn to_value_with(&self, replacement: Value) -> Value {
        let mut o = Object::new();
        o.push("name", self.name.clone());
        o.push("tool", self.tool.clone());
        o.push("kind", self.kind.as_str());
        o.push(
            "calls",
            Value::Array(self.calls.iter().cloned().map(Value::Int).collect()),
        );
        o.push("probability", Value::Float(self.probability));
        o.push("limit", self.limit.clone().map(Value::Int));
        o.push("delay", Value::Float(self.delay));
        o.push("replacement", replacement);
        Value::Object(o)
    }

    /// Whether the rule applies to this call of `tool` (its `ordinal`-th call). Loops over
    /// many calls should use [`ToolMatches`], which matches each tool name once.
    pub fn eligible(&self, tool: &Text, ordinal: u64) -> bool {
        self.covers_ordinal(ordinal) && self.glob.matches(tool)
    }

    /// Whether the rule's `calls` (empty: every call) include this ordinal. `calls` is kept
    /// sorted, so this is a binary search.
    pub fn covers_ordinal(&self, ordinal: u64) -> bool {
        self.calls.is_empty()
            || i64::try_from(ordinal).is_ok_and(|o| {
                self.calls
                    .binary_search_by(|c| int_cmp(c, &Int::Small(o)))
                    .is_ok()
            })
    }

    /// Whether the rule's tool glob matches a tool name given as code points.
    pub fn matches_tool_points(&self, tool: &[u32]) -> bool {
        self.glob.matches_code_points(tool)
    }

    /// Whether `selected` selections have used up the limit.
    pub fn limit_reached(&self, selected: u64) -> bool {
        match &self.limit {
            None => false,
            Some(Int::Small(l)) => selected as i128 >= i128::from(*l),
            Some(Int::Big(_)) => false,
        }
    }

    /// The glob the tool pattern compiles to.
    pub fn glob(&self) -> &Glob {
        &self.glob
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_order_and_messages() {
        let e = RuleSpec::new("", "t", FaultKind::Timeout).build().err();
        assert_eq!(
            e.map(|e| e.message),
            Some("Rule name must be 1–100 characters")
        );
        let e = RuleSpec::new("r", "t", FaultKind::Timeout)
            .calls([2, 2])
            .build()
            .err();
        assert_eq!(
            e.map(|e| e.message),
            Some("Rule calls cannot contain duplicates")
        );
        let e = RuleSpec::new("r", "t", FaultKind::Timeout)
            .probability(1.5)
            .build()
            .err();
        assert_eq!(
            e.map(|e| e.message),
            Some("Rule probability must be between 0 and 1")
        );
        let e = RuleSpec::new("r", "t", FaultKind::Timeout)
            .probability(f64::NAN)
            .build()
            .err();
        assert_eq!(
            e.map(|e| e.message),
            Some("Duration must be a finite nonnegative number")
        );
        let r = RuleSpec::new("r", "t", FaultKind::Timeout)
            .calls([3, 1])
            .build()
            .expect("ok");
        assert_eq!(
            crate::json::canonical(&r.to_value()),
            r#"{"calls":[1,3],"delay":0.0,"kind":"timeout","limit":null,"name":"r","probability":1.0,"replacement":null,"tool":"t"}"#
        );
    }

    #[test]
    fn from_value_wraps_constructor_errors() {
        let v = crate::json::parse(r#"{"name":"r","tool":"t","kind":"timeout","limit":0}"#)
            .expect("json");
        let e = Rule::from_value(&v).err();
        assert_eq!(e.as_ref().map(|e| e.message), Some("Invalid fault rule"));
        assert_eq!(e.and_then(|e| e.path), Some("limit".to_owned()));
        let v = crate::json::parse(r#"{"name":"r","tool":"t"}"#).expect("json");
        assert_eq!(
            Rule::from_value(&v).err().map(|e| e.message),
            Some("Missing required document fields")
        );
    }
}
