//! `validate_report` (spec §8.3): every check the reference makes before it trusts a trace, in
//! its evaluation order and with its messages, plus the semantic replay that recomputes rule
//! coverage from the calls. Success yields the typed [`Report`] view of the document.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use crate::error::ConfigError;
use crate::json::{Int, Object, Text, Value, canonical};
use crate::printable::quoted;
use crate::report::{Call, Coverage, Effect, ErrorRecord, Report, Status};
use crate::rule::{FaultKind, Rule, ToolMatches, duration, int_cmp, require_keys};

/// Most calls, and most effects, a trace may hold.
pub const MAX_TRACE_ITEMS: usize = 10_000;
/// Most rules a trace may hold.
pub const MAX_RULES: usize = 100;
/// Slack the reference allows when comparing end times (seconds).
const END_SLACK: f64 = 0.000002;

/// The top-level keys of a report.
pub const REPORT_KEYS: [&str; 9] = [
    "schema_version",
    "seed",
    "clock",
    "calls",
    "effects",
    "rules",
    "coverage",
    "budget_rejections",
    "capture",
];
/// The keys of a call object.
pub const CALL_KEYS: [&str; 16] = [
    "id",
    "tool",
    "ordinal",
    "parent_id",
    "key",
    "started",
    "elapsed",
    "status",
    "fault",
    "kind",
    "executed",
    "injected",
    "arguments",
    "output",
    "error",
    "capture_error",
];
/// The keys of an effect object.
pub const EFFECT_KEYS: [&str; 6] = ["name", "key", "call_id", "at", "identity", "redacted"];
/// The keys of a coverage entry.
pub const COVERAGE_KEYS: [&str; 3] = ["eligible", "selected", "triggered"];
/// Error types the reference treats as portable (`known: true`).
pub const PORTABLE_ERRORS: [&str; 4] = [
    "RateLimited",
    "ToolTimeout",
    "ResponseLost",
    "ToolUnavailable",
];

fn fail(message: &'static str) -> ConfigError {
    ConfigError::new(message)
}

fn brief(v: &Value) -> String {
    let text = canonical(v);
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(57).collect();
        format!("{cut}...")
    } else {
        text
    }
}

/// `Value::Int` exactly equal to `n`.
fn int_is(v: &Value, n: u64) -> bool {
    matches!(v, Value::Int(Int::Small(x)) if *x >= 0 && *x as u64 == n)
}

fn nonempty_str(v: &Value) -> bool {
    matches!(v, Value::Str(t) if !t.is_empty())
}

fn small_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Int(Int::Small(x)) if *x >= 0 => Some(*x as u64),
        _ => None,
    }
}

fn field<'a>(o: &'a Object, key: &str) -> &'a Value {
    o.get(key).unwrap_or(&Value::Null)
}

/// Call keys in canonical (sorted) order: where each sits in a loaded, key-sorted call.
pub(super) const CALL_SORTED: [&str; 16] = [
    "arguments",
    "capture_error",
    "elapsed",
    "error",
    "executed",
    "fault",
    "id",
    "injected",
    "key",
    "kind",
    "ordinal",
    "output",
    "parent_id",
    "started",
    "status",
    "tool",
];
/// Effect keys in canonical order.
pub(super) const EFFECT_SORTED: [&str; 6] =
    ["at", "call_id", "identity", "key", "name", "redacted"];

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Position of `name` in a sorted key table (evaluated at compile time).
pub(super) const fn slot(table: &[&str], name: &str) -> usize {
    let mut i = 0;
    while i < table.len() {
        if same(table[i], name) {
            return i;
        }
        i += 1;
    }
    usize::MAX
}

/// [`field`] with a guess at the member's position: one comparison when the object is a
/// key-sorted record (every loaded trace), a plain look-up otherwise.
#[inline]
fn field_at<'a>(o: &'a Object, guess: usize, key: &str) -> &'a Value {
    match o.member_at(guess) {
        Some((k, v)) if k.as_wtf8() == key.as_bytes() => v,
        _ => field(o, key),
    }
}

/// The object, when its keys are exactly `sorted` in that order (a key-sorted record with
/// every field and nothing else): `require_keys` would pass, in one comparison per key.
fn exact_record<'a>(raw: &'a Value, sorted: &[&str]) -> Option<&'a Object> {
    let o = raw.as_object()?;
    (o.len() == sorted.len()
        && sorted.iter().enumerate().all(|(i, k)| {
            o.member_at(i)
                .is_some_and(|(m, _)| m.as_wtf8() == k.as_bytes())
        }))
    .then_some(o)
}

/// A record's fields: a parsed, key-checked object, or the slots a typed reader filled in
/// canonical key order. The checks below read records only through this, so both ways of
/// loading a trace run the same checks.
pub(super) trait Fields {
    /// The field `key`, whose place in the canonical key order is `slot`.
    fn at(&self, slot: usize, key: &str) -> &Value;
}

impl Fields for Object {
    fn at(&self, slot: usize, key: &str) -> &Value {
        field_at(self, slot, key)
    }
}

impl<const N: usize> Fields for [Value; N] {
    fn at(&self, slot: usize, _key: &str) -> &Value {
        &self[slot]
    }
}

impl<T: Fields + ?Sized> Fields for &T {
    fn at(&self, slot: usize, key: &str) -> &Value {
        (**self).at(slot, key)
    }
}

/// A call field, looked up by its canonical position first.
macro_rules! call_field {
    ($o:expr, $name:literal) => {
        Fields::at($o, const { slot(&CALL_SORTED, $name) }, $name)
    };
}

/// An effect field, looked up by its canonical position first.
macro_rules! effect_field {
    ($o:expr, $name:literal) => {
        Fields::at($o, const { slot(&EFFECT_SORTED, $name) }, $name)
    };
}

/// A trace that passed every check: its typed view, and whether that view rebuilds the
/// document byte for byte. The call payloads are in the view when the source gave them up
/// ([`Source::payloads`]); otherwise the caller attaches them, copying or moving them.
pub(super) struct Checked {
    /// The typed view; a borrowed source's calls have null `arguments` and `output`.
    pub report: Report,
    /// Whether [`Report::to_value`], key-sorted, equals the document: every duration is written
    /// as a float, ok and running calls record no error, the clock is UTF-8 and the rejected
    /// count fits. When false, the document itself has to be kept for its bytes and digest.
    pub rebuildable: bool,
}

/// Checks a report document exactly as the reference does (first failing check wins) and
/// returns its typed view. Errors carry the reference's message, a JSON path and a detail.
pub fn validate_report(data: &Value) -> Result<Report, ConfigError> {
    let checked = check_document(data)?;
    let mut report = checked.report;
    if let Some(Value::Array(raw)) = data.as_object().and_then(|o| o.get("calls")) {
        for (call, raw) in report.calls.iter_mut().zip(raw) {
            if let Some(o) = raw.as_object() {
                call.arguments = call_field!(o, "arguments").clone();
                call.output = call_field!(o, "output").clone();
            }
        }
    }
    Ok(report)
}

/// [`validate_report`] without the payloads, saying whether the typed view rebuilds `data`.
pub(super) fn check_document(data: &Value) -> Result<Checked, ConfigError> {
    let top = require_keys(data, &REPORT_KEYS, &[])?;
    let count = |key| {
        field(top, key)
            .as_array()
            .map_or(0, |a| a.len().min(MAX_TRACE_ITEMS))
    };
    let mut check = TraceCheck::with_capacity(count("calls"), count("effects"));
    match list(top, "calls", "Invalid trace call list", "calls") {
        Err(e) => check.calls_list_error(e),
        Ok(items) => {
            for raw in items {
                let record = exact_record(raw, &CALL_SORTED)
                    .map_or_else(|| require_keys(raw, &CALL_KEYS, &[]), Ok);
                if !check.call(record).is_checked() {
                    break;
                }
            }
            match list(top, "effects", "Invalid effect list", "effects") {
                Err(e) => check.effects_list_error(e),
                Ok(items) => {
                    for raw in items {
                        let record = exact_record(raw, &EFFECT_SORTED)
                            .map_or_else(|| require_keys(raw, &EFFECT_KEYS, &[]), Ok);
                        check.effect(record);
                    }
                }
            }
        }
    }
    check.finish(|key| field(top, key))
}

/// The top-level list `key`, or its own error (not an array, too long).
fn list<'a>(
    top: &'a Object,
    key: &str,
    message: &'static str,
    noun: &str,
) -> Result<&'a [Value], ConfigError> {
    match field(top, key) {
        Value::Array(items) if items.len() <= MAX_TRACE_ITEMS => Ok(items),
        other => Err(fail(message).at(key).because(match other {
            Value::Array(a) => format!("{} {noun}; at most {MAX_TRACE_ITEMS} allowed", a.len()),
            _ => format!("expected an array, found {}", other.type_name()),
        })),
    }
}

/// What became of a call record fed to [`TraceCheck::call`].
pub(super) enum Fed<'a> {
    /// It passed its checks: its typed view, to which its payloads may be moved.
    Checked(&'a mut Call),
    /// It failed, or a call before it did: no later call is checked.
    Failed,
}

impl Fed<'_> {
    fn is_checked(&self) -> bool {
        matches!(self, Fed::Checked(_))
    }
}

/// A faulted call's recorded error, and a replacement's output: what the coverage replay
/// compares with the rule, kept because the record itself may be gone by then.
struct Faulted {
    error: Value,
    output: Value,
}

/// Every check of a trace, fed its records in document order as they are read — calls, then
/// effects — and holding only their typed views, so a reader may let each record go once fed.
/// The first failure of each stage is kept, and [`TraceCheck::finish`] reports the first in
/// the reference's order (metadata, calls, effects, rules, coverage, the replay), whatever
/// order the top-level fields came in. That includes `capture`, which a key-sorted file gives
/// after its calls: whether a call's arguments are an object is noted, and judged at the end.
#[derive(Default)]
pub(super) struct TraceCheck {
    calls: Vec<Call>,
    ordinals: HashMap<Text, u64>,
    /// A list's own error (not an array, too long), or the first failing call.
    call_error: Option<ConfigError>,
    /// The first checked call whose arguments are not an object: its place and what they are.
    bare_arguments: Option<(usize, &'static str)>,
    /// Every call naming a fault, in order.
    faulted: Vec<Faulted>,
    /// Whether a call's typed view writes other bytes than its record.
    call_not_rebuilt: bool,
    effects: Vec<Effect>,
    labels: Vec<(Text, Text)>,
    visible: HashMap<(Text, Text), u64>,
    effect_error: Option<ConfigError>,
    /// Whether an effect's time was written other than as a float.
    effect_time_not_float: bool,
}

impl TraceCheck {
    /// Checks with room for `calls` calls and `effects` effects.
    pub(super) fn with_capacity(calls: usize, effects: usize) -> TraceCheck {
        TraceCheck {
            calls: Vec::with_capacity(calls),
            effects: Vec::with_capacity(effects),
            ..TraceCheck::default()
        }
    }

    /// The list of calls is not one (not an array, too long): no call is checked.
    pub(super) fn calls_list_error(&mut self, e: ConfigError) {
        self.call_error.get_or_insert(e);
    }

    /// The list of effects is not one: no effect is checked.
    pub(super) fn effects_list_error(&mut self, e: ConfigError) {
        self.effect_error.get_or_insert(e);
    }

    /// Checks the next call record (or the error that it is not one) against the calls
    /// before it.
    pub(super) fn call<F: Fields>(&mut self, record: Result<F, ConfigError>) -> Fed<'_> {
        if self.call_error.is_some() {
            return Fed::Failed;
        }
        let pos = self.calls.len();
        let checked = record.and_then(|o| {
            let call = check_call(&o, pos as u64 + 1, &self.calls, &mut self.ordinals)?;
            Ok((o, call))
        });
        let (o, call) = match checked {
            Ok(c) => c,
            Err(e) => {
                self.call_error = Some(e.within(&format!("calls[{pos}]")));
                return Fed::Failed;
            }
        };
        let arguments = call_field!(&o, "arguments");
        if self.bare_arguments.is_none() && arguments.as_object().is_none() {
            self.bare_arguments = Some((pos, arguments.type_name()));
        }
        self.call_not_rebuilt |= !rebuilds_call(&o, call.status);
        if call.fault.is_some() {
            let replaces = call.kind == Some(FaultKind::Replace);
            self.faulted.push(Faulted {
                error: call_field!(&o, "error").clone(),
                output: if replaces {
                    call_field!(&o, "output").clone()
                } else {
                    Value::Null
                },
            });
        }
        self.calls.push(call);
        match self.calls.last_mut() {
            Some(call) => Fed::Checked(call),
            None => Fed::Failed,
        }
    }

    /// Checks the next effect record (or the error that it is not one) against every call:
    /// fed after the last call.
    pub(super) fn effect<F: Fields>(&mut self, record: Result<F, ConfigError>) {
        if self.call_error.is_some() || self.effect_error.is_some() {
            return;
        }
        let j = self.effects.len();
        let checked = record.and_then(|o| {
            self.effect_time_not_float |= !matches!(effect_field!(&o, "at"), Value::Float(_));
            check_effect(&o, &self.calls, &mut self.labels, &mut self.visible)
        });
        match checked {
            Ok(effect) => self.effects.push(effect),
            Err(e) => self.effect_error = Some(e.within(&format!("effects[{j}]"))),
        }
    }

    /// The verdict on the trace whose top-level fields `top` gives, once every record has
    /// been fed: the first failing check in the reference's order, or the typed view.
    pub(super) fn finish<'v>(
        self,
        top: impl Fn(&str) -> &'v Value,
    ) -> Result<Checked, ConfigError> {
        let schema = top("schema_version");
        if !int_is(schema, 1) {
            return Err(fail("Unsupported trace schema version; expected 1")
                .at("schema_version")
                .because(format!("found {}", brief(schema))));
        }
        let capture = match top("capture") {
            Value::Bool(b) => *b,
            other => {
                return Err(fail("Invalid trace metadata")
                    .at("capture")
                    .because(format!("expected a boolean, found {}", other.type_name())));
            }
        };
        let Value::Int(seed) = top("seed") else {
            return Err(fail("Invalid trace metadata").at("seed").because(format!(
                "expected an integer, found {}",
                top("seed").type_name()
            )));
        };
        let Some(clock) = top("clock").as_text() else {
            return Err(fail("Invalid trace metadata").at("clock").because(format!(
                "expected a string, found {}",
                top("clock").type_name()
            )));
        };
        let Value::Int(rejections) = top("budget_rejections") else {
            return Err(fail("Invalid trace metadata")
                .at("budget_rejections")
                .because(format!(
                    "expected an integer, found {}",
                    top("budget_rejections").type_name()
                )));
        };
        if rejections.is_negative() {
            return Err(fail("Invalid rejected call count")
                .at("budget_rejections")
                .because(format!("found {}", rejections.to_decimal())));
        }
        let budget_rejections = rejections.as_i64().map_or(u64::MAX, |n| n as u64);
        // With capture on, bare arguments fail their call: its last check, so a call failing
        // another check first (or an earlier call) still wins.
        let bare = self.bare_arguments.filter(|_| capture);
        if let Some((pos, found)) = bare {
            return Err(fail("Recorded arguments must be an object")
                .at("arguments")
                .because(format!("capture is on, found {found}"))
                .within(&format!("calls[{pos}]")));
        }
        if let Some(e) = self.call_error.or(self.effect_error) {
            return Err(e);
        }
        let (rules, rule_values) = check_rules(top("rules"))?;
        let coverage = check_coverage(top("coverage"), &rules)?;
        let expected = replay_coverage(&rules, &self.calls, &self.faulted, capture)?;
        for (i, rule) in rules.iter().enumerate() {
            let recorded = coverage
                .iter()
                .find(|(n, _)| *n == rule.name)
                .map(|(_, c)| *c);
            if recorded != Some(expected[i]) {
                let e = expected[i];
                return Err(fail("Coverage counts disagree with recorded calls")
                    .at(format!("coverage.{}", quoted(&rule.name.to_lossy())))
                    .because(format!(
                        "recorded {}, the calls give eligible {}, selected {}, triggered {}",
                        recorded.map_or_else(
                            || "nothing".to_owned(),
                            |c| format!(
                                "eligible {}, selected {}, triggered {}",
                                c.eligible, c.selected, c.triggered
                            )
                        ),
                        e.eligible,
                        e.selected,
                        e.triggered
                    )));
            }
        }
        let rebuildable = clock.as_str().is_some()
            && rejections.as_i64().is_some()
            && !self.call_not_rebuilt
            && !self.effect_time_not_float;
        Ok(Checked {
            report: Report {
                seed: seed.clone(),
                clock: clock.to_lossy(),
                calls: self.calls,
                effects: self.effects,
                rules: rule_values,
                coverage,
                budget_rejections,
                capture,
            },
            rebuildable,
        })
    }
}

/// Whether a checked call's typed form writes the same fields: durations as floats, and an
/// error only where the reference checks it (its `retry_after` a float too).
fn rebuilds_call<F: Fields>(o: &F, status: Status) -> bool {
    let float = |v: &Value| matches!(v, Value::Float(_));
    float(call_field!(o, "started"))
        && float(call_field!(o, "elapsed"))
        && match call_field!(o, "error") {
            Value::Null => true,
            Value::Object(e) if matches!(status, Status::Error | Status::Cancelled) => {
                e.get("retry_after").is_none_or(float)
            }
            _ => false,
        }
}

/// Checks call `index` (1-based) against the calls before it; its typed view, without the
/// payloads.
fn check_call<F: Fields>(
    o: &F,
    index: u64,
    earlier: &[Call],
    ordinals: &mut HashMap<Text, u64>,
) -> Result<Call, ConfigError> {
    let id = call_field!(o, "id");
    if !int_is(id, index) {
        return Err(fail("Trace calls must have contiguous invocation IDs")
            .at("id")
            .because(format!("expected {index}, found {}", brief(id))));
    }
    let tool = match call_field!(o, "tool") {
        Value::Str(t) if !t.is_empty() => t.clone(),
        other => {
            return Err(fail("Invalid recorded tool name")
                .at("tool")
                .because(format!(
                    "expected a nonempty string, found {}",
                    brief(other)
                )));
        }
    };
    let key = match call_field!(o, "key") {
        Value::Str(t) if !t.is_empty() => t.clone(),
        other => {
            return Err(fail("Invalid recorded invocation key")
                .at("key")
                .because(format!(
                    "expected a nonempty string, found {}",
                    brief(other)
                )));
        }
    };
    let ordinal = ordinals.get(&tool).copied().unwrap_or(0) + 1;
    if !int_is(call_field!(o, "ordinal"), ordinal) {
        return Err(fail("Invalid per-tool invocation ordinal")
            .at("ordinal")
            .because(format!(
                "call {index} is call {ordinal} of \"{}\", found {}",
                tool.to_lossy(),
                brief(call_field!(o, "ordinal"))
            )));
    }
    ordinals.insert(tool.clone(), ordinal);
    let parent_value = call_field!(o, "parent_id");
    let parent = match parent_value {
        Value::Null => None,
        Value::Int(Int::Small(p)) if *p >= 1 && (*p as u64) < index => {
            let parent = &earlier[*p as usize - 1];
            if !parent.executed {
                return Err(fail("Nested call requires an executing parent")
                    .at("parent_id")
                    .because(format!("call {p} did not execute")));
            }
            Some((*p as u64, parent))
        }
        other => {
            return Err(fail("Parent must be an earlier call")
                .at("parent_id")
                .because(format!(
                    "expected null or an id in 1..{}, found {}",
                    index,
                    brief(other)
                )));
        }
    };
    let started = duration(call_field!(o, "started")).map_err(|e| e.at("started"))?;
    let elapsed = duration(call_field!(o, "elapsed")).map_err(|e| e.at("elapsed"))?;
    if let Some((pid, p)) = parent {
        if started < p.started {
            return Err(fail("Nested call precedes its parent")
                .at("started")
                .because(format!(
                    "starts at {started}, parent call {pid} starts at {}",
                    p.started
                )));
        }
        if p.status != Status::Running && started + elapsed > p.started + p.elapsed + END_SLACK {
            return Err(fail("Nested call must finish before its parent")
                .at("elapsed")
                .because(format!(
                    "ends at {}, parent call {pid} ends at {}",
                    started + elapsed,
                    p.started + p.elapsed
                )));
        }
    }
    let status_value = call_field!(o, "status");
    let Some(status) = status_value.as_str().and_then(Status::parse) else {
        return Err(fail("Invalid recorded call status")
            .at("status")
            .because(format!(
                "expected ok, error, cancelled or running, found {}",
                brief(status_value)
            )));
    };
    let mut flags = [false; 3];
    let flag_fields = [
        ("executed", call_field!(o, "executed")),
        ("injected", call_field!(o, "injected")),
        ("capture_error", call_field!(o, "capture_error")),
    ];
    for (slot, (name, value)) in flags.iter_mut().zip(flag_fields) {
        match value {
            Value::Bool(b) => *slot = *b,
            other => {
                return Err(fail("Invalid recorded call flags")
                    .at(name)
                    .because(format!("expected a boolean, found {}", brief(other))));
            }
        }
    }
    let [executed, injected, capture_error] = flags;
    let fault = match call_field!(o, "fault") {
        Value::Null => None,
        Value::Str(t) => Some(t.clone()),
        other => {
            return Err(fail("Invalid recorded fault").at("fault").because(format!(
                "expected null or a rule name, found {}",
                brief(other)
            )));
        }
    };
    let kind = match call_field!(o, "kind") {
        Value::Null => None,
        other => match other.as_str().and_then(FaultKind::parse) {
            Some(k) => Some(k),
            None => {
                return Err(fail("Invalid recorded fault kind")
                    .at("kind")
                    .because(format!(
                        "expected null or a fault kind, found {}",
                        brief(other)
                    )));
            }
        },
    };
    let error_value = call_field!(o, "error");
    if status == Status::Ok && !error_value.is_null() {
        return Err(fail("Successful call cannot contain an error")
            .at("error")
            .because("status is ok but an error is recorded"));
    }
    if status == Status::Ok && kind != Some(FaultKind::Replace) && !executed {
        return Err(fail("Successful non-replacement call requires execution")
            .at("executed")
            .because("status is ok without a replace fault, but executed is false"));
    }
    let mut error = None;
    if matches!(status, Status::Error | Status::Cancelled) {
        error = Some(check_error(error_value).map_err(|e| e.within("error"))?);
    } else if let Some(eo) = error_value.as_object() {
        // Not checked by the reference for ok/running calls; kept as a best-effort view.
        error = eo
            .get("type")
            .and_then(Value::as_text)
            .map(|t| ErrorRecord {
                type_name: t.clone(),
                known: eo.get("known").and_then(Value::as_bool).unwrap_or(false),
                retry_after: eo.get("retry_after").and_then(Value::as_number_f64),
            });
    }
    // Whether the arguments are an object matters only with capture on, and is judged with
    // it ([`TraceCheck::finish`]): the last check of a call.
    Ok(Call {
        id: index,
        tool,
        ordinal,
        key,
        started,
        parent_id: parent.map(|(p, _)| p),
        elapsed,
        status,
        fault,
        kind,
        executed,
        injected,
        arguments: Value::Null,
        output: Value::Null,
        error,
        capture_error,
    })
}

fn check_error(v: &Value) -> Result<ErrorRecord, ConfigError> {
    let o = require_keys(v, &["type", "known"], &["retry_after"])?;
    let type_name = match field(o, "type") {
        Value::Str(t) if (1..=200).contains(&t.len_chars()) => t.clone(),
        other => {
            return Err(fail("Invalid recorded exception type")
                .at("type")
                .because(format!(
                    "expected a string of 1–200 characters, found {}",
                    other.type_name()
                )));
        }
    };
    let Value::Bool(known) = field(o, "known") else {
        return Err(fail("Invalid known-error discriminator")
            .at("known")
            .because(format!(
                "expected a boolean, found {}",
                brief(field(o, "known"))
            )));
    };
    let known = *known;
    if known && !PORTABLE_ERRORS.iter().any(|p| type_name == *p) {
        return Err(fail("Unknown portable error type")
            .at("type")
            .because(format!(
                "\"{}\" is not one of RateLimited, ToolTimeout, ResponseLost, ToolUnavailable",
                quoted(&type_name.to_lossy())
            )));
    }
    let is_rate_limit = known && type_name == "RateLimited";
    let has_retry = o.contains_key("retry_after");
    if is_rate_limit != has_retry {
        return Err(fail("Rate limit errors must carry retry metadata")
            .at("retry_after")
            .because(if has_retry {
                "only a known RateLimited error may carry retry_after"
            } else {
                "a known RateLimited error needs retry_after"
            }));
    }
    let retry_after = match o.get("retry_after") {
        Some(r) => Some(duration(r).map_err(|e| e.at("retry_after"))?),
        None => None,
    };
    Ok(ErrorRecord {
        type_name,
        known,
        retry_after,
    })
}

fn check_effect<E: Fields>(
    o: &E,
    calls: &[Call],
    labels: &mut Vec<(Text, Text)>,
    visible: &mut HashMap<(Text, Text), u64>,
) -> Result<Effect, ConfigError> {
    for (name, value) in [
        ("name", effect_field!(o, "name")),
        ("key", effect_field!(o, "key")),
    ] {
        if !nonempty_str(value) {
            return Err(fail("Invalid effect metadata").at(name).because(format!(
                "expected a nonempty string, found {}",
                brief(value)
            )));
        }
    }
    let (name, key) = match (effect_field!(o, "name"), effect_field!(o, "key")) {
        (Value::Str(n), Value::Str(k)) => (n.clone(), k.clone()),
        _ => return Err(fail("Invalid effect metadata")),
    };
    let call_id = match small_u64(effect_field!(o, "call_id")) {
        Some(c) if c >= 1 && c as usize <= calls.len() => c,
        _ => {
            return Err(fail("Effect references an absent call")
                .at("call_id")
                .because(format!(
                    "expected an id in 1..={}, found {}",
                    calls.len(),
                    brief(effect_field!(o, "call_id"))
                )));
        }
    };
    let at = duration(effect_field!(o, "at")).map_err(|e| e.at("at"))?;
    let identity_value = effect_field!(o, "identity");
    let identity_ok =
        matches!(identity_value, Value::Int(i) if int_cmp(i, &Int::Small(1)) != Ordering::Less);
    let redacted = match effect_field!(o, "redacted") {
        Value::Bool(b) if identity_ok => *b,
        other => {
            let (path, found) = if identity_ok {
                ("redacted", other)
            } else {
                ("identity", identity_value)
            };
            return Err(fail("Invalid effect identity")
                .at(path)
                .because(format!("found {}", brief(found))));
        }
    };
    let call = &calls[call_id as usize - 1];
    if !call.executed {
        return Err(fail("An unexecuted tool cannot commit a side effect")
            .at("call_id")
            .because(format!("call {call_id} did not execute")));
    }
    if at < call.started
        || (call.status != Status::Running && at > call.started + call.elapsed + END_SLACK)
    {
        return Err(fail("Effect time must fall within its call")
            .at("at")
            .because(format!(
                "at {at}, call {call_id} runs from {} to {}",
                call.started,
                call.started + call.elapsed
            )));
    }
    let pair = (name.clone(), key.clone());
    let next = labels.len() as u64 + 1;
    let identity = match small_u64(identity_value) {
        Some(n) if n <= labels.len() as u64 => {
            if labels[n as usize - 1] != pair {
                return Err(fail("Effect identity changed its label")
                    .at("identity")
                    .because(format!(
                        "identity {n} was first committed as ({}, {})",
                        labels[n as usize - 1].0.to_lossy(),
                        labels[n as usize - 1].1.to_lossy()
                    )));
            }
            n
        }
        Some(n) if n == next => {
            labels.push(pair.clone());
            n
        }
        _ => {
            return Err(
                fail("Effect identities must be contiguous in first-seen order")
                    .at("identity")
                    .because(format!(
                        "expected at most {next}, found {}",
                        brief(identity_value)
                    )),
            );
        }
    };
    if !redacted {
        match visible.get(&pair) {
            Some(previous) if *previous != identity => {
                return Err(
                    fail("Duplicate effect labels cannot have different identities")
                        .at("identity")
                        .because(format!(
                            "this label already has identity {previous}, found {identity}"
                        )),
                );
            }
            _ => {
                visible.insert(pair, identity);
            }
        }
    }
    Ok(Effect {
        name,
        key,
        call_id,
        at,
        identity,
        redacted,
    })
}

fn check_rules(value: &Value) -> Result<(Vec<Rule>, Vec<Value>), ConfigError> {
    let items = match value {
        Value::Array(items) if items.len() <= MAX_RULES => items,
        other => {
            return Err(fail("Invalid rule list").at("rules").because(match other {
                Value::Array(a) => format!("{} rules; at most {MAX_RULES} allowed", a.len()),
                _ => format!("expected an array, found {}", other.type_name()),
            }));
        }
    };
    let mut rules = Vec::with_capacity(items.len());
    for (i, raw) in items.iter().enumerate() {
        rules.push(Rule::from_value(raw).map_err(|e| e.within(&format!("rules[{i}]")))?);
    }
    Ok((rules, items.clone()))
}

fn check_coverage(value: &Value, rules: &[Rule]) -> Result<Vec<(Text, Coverage)>, ConfigError> {
    let names: HashSet<&Text> = rules.iter().map(|r| &r.name).collect();
    let mismatch = fail("Rule coverage must match unique rule names").at("coverage");
    if names.len() != rules.len() {
        let mut once = HashSet::new();
        let dup = rules
            .iter()
            .find(|r| !once.insert(&r.name))
            .map(|r| r.name.to_lossy());
        return Err(mismatch.because(format!(
            "rule name \"{}\" is used twice",
            dup.unwrap_or_default()
        )));
    }
    let Value::Object(cov) = value else {
        return Err(mismatch.because(format!("expected an object, found {}", value.type_name())));
    };
    let keys: HashSet<&Text> = cov.keys().collect();
    if keys != names {
        let extra = cov.keys().find(|k| !names.contains(k));
        let missing = rules.iter().map(|r| &r.name).find(|n| !keys.contains(n));
        return Err(mismatch.because(match (missing, extra) {
            (Some(m), _) => format!("no coverage for rule \"{}\"", quoted(&m.to_lossy())),
            (None, Some(x)) => format!("coverage for unknown rule \"{}\"", quoted(&x.to_lossy())),
            (None, None) => "key sets differ".to_owned(),
        }));
    }
    let mut out = Vec::with_capacity(cov.len());
    for (name, entry) in cov.iter() {
        let here = format!("coverage.{}", quoted(&name.to_lossy()));
        let o = require_keys(entry, &COVERAGE_KEYS, &[]).map_err(|e| e.within(&here))?;
        let bad = || fail("Invalid rule coverage counts").at(here.clone());
        let mut counts = Vec::with_capacity(3);
        for k in COVERAGE_KEYS {
            match field(o, k) {
                Value::Int(n) if !n.is_negative() => counts.push(n.clone()),
                other => {
                    return Err(bad().because(format!(
                        "{k} must be a nonnegative integer, found {}",
                        brief(other)
                    )));
                }
            }
        }
        let (eligible, selected, triggered) = (&counts[0], &counts[1], &counts[2]);
        if int_cmp(triggered, selected) == Ordering::Greater
            || int_cmp(selected, eligible) == Ordering::Greater
        {
            return Err(bad().because(format!(
                "need triggered ≤ selected ≤ eligible, found {} / {} / {}",
                triggered.to_decimal(),
                selected.to_decimal(),
                eligible.to_decimal()
            )));
        }
        let as_u64 = |n: &Int| n.as_i64().map_or(u64::MAX, |v| v as u64);
        out.push((
            name.clone(),
            Coverage {
                eligible: as_u64(eligible),
                selected: as_u64(selected),
                triggered: as_u64(triggered),
            },
        ));
    }
    Ok(out)
}

fn precall_error(kind: FaultKind, rule: &Rule) -> Option<Value> {
    let type_name = match kind {
        FaultKind::Timeout => "ToolTimeout",
        FaultKind::RateLimit => "RateLimited",
        FaultKind::Unavailable => "ToolUnavailable",
        _ => return None,
    };
    let mut o = Object::new();
    o.push("type", type_name);
    o.push("known", true);
    if kind == FaultKind::RateLimit {
        o.push("retry_after", Value::Float(rule.delay));
    }
    Some(Value::Object(o))
}

/// The coverage the calls give each rule, checking every faulted call against its rule.
fn replay_coverage(
    rules: &[Rule],
    calls: &[Call],
    faulted: &[Faulted],
    capture: bool,
) -> Result<Vec<Coverage>, ConfigError> {
    let index: HashMap<&Text, usize> = rules
        .iter()
        .enumerate()
        .map(|(i, r)| (&r.name, i))
        .collect();
    let mut expected = vec![Coverage::default(); rules.len()];
    let mut matches = ToolMatches::default();
    let mut faulted = faulted.iter();
    for (pos, call) in calls.iter().enumerate() {
        let row = matches.row(rules, &call.tool);
        for (i, cov) in expected.iter_mut().enumerate() {
            if matches.eligible(rules, row, i, call.ordinal) {
                cov.eligible += 1;
            }
        }
        let (injected, executed) = (call.injected, call.executed);
        let Some(fault) = &call.fault else {
            if call.kind.is_some() || injected {
                let here = format!("calls[{pos}]");
                return Err(fail("A fault kind needs a rule reference")
                    .at(format!("{here}.fault"))
                    .because("kind or injected is set but fault is null"));
            }
            continue;
        };
        // Every call naming a fault left its record's error (and a replacement's output)
        // there, in order.
        let (error, output) = faulted
            .next()
            .map_or((&Value::Null, &Value::Null), |f| (&f.error, &f.output));
        let here = format!("calls[{pos}]");
        let Some(&ri) = index.get(fault) else {
            return Err(fail("Call references an unknown fault rule")
                .at(format!("{here}.fault"))
                .because(format!("no rule named \"{}\"", quoted(&fault.to_lossy()))));
        };
        let rule = &rules[ri];
        if rule.probability == 0.0 {
            return Err(fail("A probability-zero rule cannot be selected")
                .at(format!("{here}.fault"))
                .because(format!(
                    "rule \"{}\" has probability 0",
                    quoted(&rule.name.to_lossy())
                )));
        }
        let covers = matches.eligible(rules, row, ri, call.ordinal);
        if call.kind != Some(rule.kind) || !covers {
            return Err(fail("Call fault does not match its rule")
                .at(format!("{here}.kind"))
                .because(format!(
                    "rule \"{}\" is {} and {} this call",
                    quoted(&rule.name.to_lossy()),
                    rule.kind,
                    if covers { "covers" } else { "does not cover" }
                )));
        }
        let cov = &mut expected[ri];
        cov.selected += 1;
        cov.triggered += u64::from(injected);
        if let Some(limit) = &rule.limit
            && int_cmp(&Int::Small(cov.selected as i64), limit) == Ordering::Greater
        {
            return Err(fail("Fault exceeds its trigger limit")
                .at(format!("{here}.fault"))
                .because(format!(
                    "rule \"{}\" selected {} times, limit {}",
                    quoted(&rule.name.to_lossy()),
                    cov.selected,
                    limit.to_decimal()
                )));
        }
        let kind = rule.kind;
        if (kind.is_pre_call_error() || kind == FaultKind::Replace) && executed {
            return Err(fail("Pre-call faults cannot execute the underlying tool")
                .at(format!("{here}.executed"))
                .because(format!(
                    "a {kind} fault replaces the call, but executed is true"
                )));
        }
        if let Some(want) = precall_error(kind, rule)
            && call.status != Status::Running
            && (call.status != Status::Error || !error.py_eq(&want))
        {
            return Err(fail("Pre-call failure must carry its declared error")
                .at(format!("{here}.error"))
                .because(format!(
                    "expected status error with {}, found status {} with {}",
                    canonical(&want),
                    call.status.as_str(),
                    brief(error)
                )));
        }
        if kind == FaultKind::Replace && !matches!(call.status, Status::Running | Status::Ok) {
            return Err(fail("Replacement must return its payload successfully")
                .at(format!("{here}.status"))
                .because(format!("found status {}", call.status.as_str())));
        }
        if kind == FaultKind::Replace
            && call.status == Status::Ok
            && capture
            && !call.capture_error
            && canonical(output) != canonical(&rule.replacement)
        {
            return Err(fail("Captured replacement disagrees with its rule payload")
                .at(format!("{here}.output"))
                .because(format!(
                    "expected {}, found {}",
                    brief(&rule.replacement),
                    brief(output)
                )));
        }
        if kind == FaultKind::ResponseLost {
            if !executed {
                return Err(fail("A lost acknowledgement requires execution")
                    .at(format!("{here}.executed"))
                    .because("a response_lost fault needs the tool to have run"));
            }
            let lost = {
                let mut w = Object::new();
                w.push("type", "ResponseLost");
                w.push("known", true);
                Value::Object(w)
            };
            if injected && (call.status != Status::Error || !error.py_eq(&lost)) {
                return Err(
                    fail("A triggered lost acknowledgement must record ResponseLost")
                        .at(format!("{here}.error"))
                        .because(format!(
                            "found status {} with {}",
                            call.status.as_str(),
                            brief(error)
                        )),
                );
            }
        } else if !injected && call.status != Status::Running {
            return Err(fail("A selected pre-call rule must record an injection")
                .at(format!("{here}.injected"))
                .because(format!(
                    "rule \"{}\" was selected but injected is false",
                    quoted(&rule.name.to_lossy())
                )));
        }
    }
    Ok(expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    const TINY: &str = r##"{"budget_rejections":0,"calls":[{"arguments":{"a":1,"b":2},"capture_error":false,"elapsed":0.0,"error":{"known":true,"type":"ToolTimeout"},"executed":false,"fault":"r","id":1,"injected":true,"key":"#1","kind":"timeout","ordinal":1,"output":null,"parent_id":null,"started":0.0,"status":"error","tool":"t"},{"arguments":{"a":1,"b":3},"capture_error":false,"elapsed":0.0,"error":null,"executed":true,"fault":null,"id":2,"injected":false,"key":"#2","kind":null,"ordinal":2,"output":{"sum":4},"parent_id":null,"started":0.0,"status":"ok","tool":"t"}],"capture":true,"clock":"VirtualClock","coverage":{"r":{"eligible":1,"selected":1,"triggered":1}},"effects":[],"rules":[{"calls":[1],"delay":0.0,"kind":"timeout","limit":null,"name":"r","probability":1.0,"replacement":null,"tool":"t"}],"schema_version":1,"seed":1}"##;

    fn verdict(from: &str, to: &str) -> Result<Report, ConfigError> {
        assert!(TINY.contains(from), "{from}");
        validate_report(&parse(&TINY.replacen(from, to, 1)).expect("json"))
    }

    fn message(from: &str, to: &str) -> &'static str {
        verdict(from, to).err().map_or("(valid)", |e| e.message)
    }

    #[test]
    fn tiny_report_is_valid() {
        let r = verdict("", "").expect("valid");
        assert_eq!(r.calls.len(), 2);
        assert_eq!(r.coverage_of("r").map(|c| c.triggered), Some(1));
    }

    #[test]
    fn semantic_checks() {
        assert_eq!(
            message(r#""probability":1.0"#, r#""probability":0.0"#),
            "A probability-zero rule cannot be selected"
        );
        assert_eq!(
            message(r#""eligible":1"#, r#""eligible":2"#),
            "Coverage counts disagree with recorded calls"
        );
        assert_eq!(
            message(
                r#""kind":"timeout","ordinal""#,
                r#""kind":"latency","ordinal""#
            ),
            "Call fault does not match its rule"
        );
        assert_eq!(
            message(r#""fault":"r""#, r#""fault":"q""#),
            "Call references an unknown fault rule"
        );
        assert_eq!(
            message(
                r#""known":true,"type":"ToolTimeout""#,
                r#""known":true,"type":"ToolUnavailable""#
            ),
            "Pre-call failure must carry its declared error"
        );
        assert_eq!(
            message(r#""injected":true"#, r#""injected":false"#),
            "A selected pre-call rule must record an injection"
        );
    }

    #[test]
    fn coverage_entries_use_require_keys() {
        // The reference calls require_keys on each entry (spec §8.3 check 27 words it as a
        // coverage-count failure; the code raises the document-field messages).
        assert_eq!(
            message(r#""triggered":1}"#, r#""triggered":1,"x":0}"#),
            "Unknown document fields"
        );
        assert_eq!(
            message(r#","triggered":1}"#, "}"),
            "Missing required document fields"
        );
        assert_eq!(
            message(r#""triggered":1}"#, r#""triggered":true}"#),
            "Invalid rule coverage counts"
        );
    }

    #[test]
    fn paths_point_at_the_field() {
        let e = verdict(r#""ordinal":2"#, r#""ordinal":3"#).expect_err("invalid");
        assert_eq!(e.message, "Invalid per-tool invocation ordinal");
        assert_eq!(e.path.as_deref(), Some("calls[1].ordinal"));
        let e = verdict(
            r#""known":true,"type":"ToolTimeout""#,
            r#""known":1,"type":"ToolTimeout""#,
        )
        .expect_err("invalid");
        assert_eq!(e.path.as_deref(), Some("calls[0].error.known"));
        let e = verdict(r#""probability":1.0"#, r#""probability":1.5"#).expect_err("invalid");
        assert_eq!(
            (e.message, e.path.as_deref()),
            ("Invalid fault rule", Some("rules[0].probability"))
        );
    }
}
