//! An editable scenario: the rule list and run settings of a lab [`ScenarioFile`] or of an
//! MCP scenario (the rules a real agent meets through the proxy), changed one validated edit
//! at a time, with undo and redo of whole snapshots.
//!
//! Every edit builds a candidate file and validates it exactly as loading the saved file would
//! ([`ScenarioFile::from_value`], [`McpScenario::from_value`]), so an edit is applied only
//! when the result could be saved and run; otherwise the reference's message and the JSON
//! path come back as a [`ConfigError`] and the previous valid scenario stays. Field text is parsed as typed:
//! names, globs and kinds as strings, ordinals as a list of integers (`1, 2` or `[1, 2]`),
//! numbers as numbers, the limit as an integer or `none`, the replacement as JSON.

use crate::error::ConfigError;
use crate::json::{Object, Value, canonical, parse, pretty};
use crate::mcp::scenario::McpScenario;
use crate::report::Report;
use crate::rule::RULE_KEYS;
use crate::scenario_fields::Story;

use super::scenario::{DEFAULT_LATENCY_BUDGET, Scenario, ScenarioCheck};
use super::scenario_file::{PolicyChoice, ScenarioFile};
use super::{LAB_MAX_CALLS, Policy, RunConfig, shipping};

/// One editable field of a rule, in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// `name`.
    Name,
    /// `tool` (a glob).
    Tool,
    /// `kind`.
    Kind,
    /// `calls` (per-tool ordinals).
    Calls,
    /// `probability`.
    Probability,
    /// `limit`.
    Limit,
    /// `delay`.
    Delay,
    /// `replacement` (JSON).
    Replacement,
}

impl Field {
    /// Every field, in file order.
    pub const ALL: [Field; 8] = [
        Field::Name,
        Field::Tool,
        Field::Kind,
        Field::Calls,
        Field::Probability,
        Field::Limit,
        Field::Delay,
        Field::Replacement,
    ];

    /// The key in a rule object.
    pub fn key(self) -> &'static str {
        RULE_KEYS[Field::ALL.iter().position(|f| *f == self).unwrap_or(0)]
    }
}

/// Probability overrides the `P` key cycles through (`None` keeps each rule's own).
pub const PROBABILITY_STEPS: [Option<f64>; 5] = [None, Some(1.0), Some(0.5), Some(0.25), Some(0.0)];

/// What an editor edits.
#[derive(Clone, Debug, PartialEq)]
pub enum Edited {
    /// A lab scenario: rules, seed, probability, budget and the policies that run.
    Lab(Box<ScenarioFile>),
    /// An MCP scenario: rules, seed, probability and budget (the agent is the policy).
    Mcp(Box<McpScenario>),
}

impl Edited {
    fn rules(&self) -> &[Value] {
        match self {
            Edited::Lab(f) => &f.scenario.rules,
            Edited::Mcp(m) => &m.rules,
        }
    }

    fn rules_mut(&mut self) -> &mut Vec<Value> {
        match self {
            Edited::Lab(f) => &mut f.scenario.rules,
            Edited::Mcp(m) => &mut m.rules,
        }
    }

    /// The form it would be read back from disk in (rule objects spelled out).
    fn normalized(&self) -> Result<Edited, ConfigError> {
        Ok(match self {
            Edited::Lab(f) => Edited::Lab(Box::new(normalized(f)?)),
            Edited::Mcp(m) => Edited::Mcp(Box::new(McpScenario::from_value(&m.to_value())?)),
        })
    }

    /// The file text: indented JSON and a final newline.
    pub fn to_text(&self) -> String {
        match self {
            Edited::Lab(f) => f.to_text(),
            Edited::Mcp(m) => pretty(&m.to_value()) + "\n",
        }
    }
}

/// A scenario being edited: the current valid file, the last saved (or loaded) one, and the
/// undo/redo history.
#[derive(Clone, Debug, PartialEq)]
pub struct Editor {
    file: Edited,
    saved: Option<Edited>,
    undo: Vec<Edited>,
    redo: Vec<Edited>,
}

/// Most snapshots kept for undo.
const HISTORY: usize = 200;

/// The file in the form it would be read back from disk (rule objects spelled out), so two
/// files with the same meaning compare equal.
pub fn normalized(file: &ScenarioFile) -> Result<ScenarioFile, ConfigError> {
    ScenarioFile::from_value(&file.to_value())
}

impl Editor {
    /// Starts editing `file` (which counts as saved).
    pub fn new(file: &ScenarioFile) -> Result<Editor, ConfigError> {
        Editor::of(Edited::Lab(Box::new(file.clone())))
    }

    /// Starts editing an MCP scenario (which counts as saved).
    pub fn mcp(scenario: &McpScenario) -> Result<Editor, ConfigError> {
        Editor::of(Edited::Mcp(Box::new(scenario.clone())))
    }

    fn of(file: Edited) -> Result<Editor, ConfigError> {
        let file = file.normalized()?;
        Ok(Editor {
            saved: Some(file.clone()),
            file,
            undo: Vec::new(),
            redo: Vec::new(),
        })
    }

    /// Starts editing a scenario that has never been saved (e.g. built from a cassette).
    pub fn unsaved(file: &ScenarioFile) -> Result<Editor, ConfigError> {
        let mut e = Editor::new(file)?;
        e.saved = None;
        Ok(e)
    }

    /// What is being edited, as it is now.
    pub fn edited(&self) -> &Edited {
        &self.file
    }

    /// The lab scenario being edited (`None` for an MCP scenario).
    pub fn lab(&self) -> Option<&ScenarioFile> {
        match &self.file {
            Edited::Lab(f) => Some(f),
            Edited::Mcp(_) => None,
        }
    }

    /// The MCP scenario being edited (`None` for a lab scenario).
    pub fn mcp_scenario(&self) -> Option<&McpScenario> {
        match &self.file {
            Edited::Mcp(m) => Some(m),
            Edited::Lab(_) => None,
        }
    }

    /// The scenario's name.
    pub fn name(&self) -> &str {
        match &self.file {
            Edited::Lab(f) => &f.scenario.name,
            Edited::Mcp(m) => &m.name,
        }
    }

    /// Its story (title, lesson...).
    pub fn story(&self) -> &Story {
        match &self.file {
            Edited::Lab(f) => &f.scenario.story,
            Edited::Mcp(m) => &m.story,
        }
    }

    /// The decision seed.
    pub fn seed(&self) -> i64 {
        match &self.file {
            Edited::Lab(f) => f.config.seed,
            Edited::Mcp(m) => m.seed,
        }
    }

    /// The probability override (`None`: each rule's own).
    pub fn probability(&self) -> Option<f64> {
        match &self.file {
            Edited::Lab(f) => f.config.probability,
            Edited::Mcp(m) => m.probability,
        }
    }

    /// The call budget.
    pub fn budget(&self) -> i64 {
        match &self.file {
            Edited::Lab(f) => f.config.max_calls,
            Edited::Mcp(m) => m.max_calls,
        }
    }

    /// Which policies run (`None` for an MCP scenario: the agent is the policy).
    pub fn policy(&self) -> Option<PolicyChoice> {
        self.lab().map(|f| f.policy)
    }

    /// The rule objects, in order (first eligible rule that hits wins).
    pub fn rules(&self) -> &[Value] {
        self.file.rules()
    }

    /// Whether there are edits not yet saved.
    pub fn dirty(&self) -> bool {
        self.saved.as_ref() != Some(&self.file)
    }

    /// Marks the current file as saved.
    pub fn mark_saved(&mut self) {
        self.saved = Some(self.file.clone());
    }

    /// Whether `disk` has the same meaning as the current file.
    pub fn same_as(&self, disk: &ScenarioFile) -> bool {
        normalized(disk).is_ok_and(|d| self.file == Edited::Lab(Box::new(d)))
    }

    /// Replaces the file with one read from disk: it becomes the saved version, and the
    /// current one goes on the undo stack (so nothing is lost).
    pub fn take_disk(&mut self, disk: &ScenarioFile) -> Result<(), ConfigError> {
        let disk = Edited::Lab(Box::new(normalized(disk)?));
        if disk != self.file {
            self.push_undo();
            self.file = disk.clone();
        }
        self.saved = Some(disk);
        Ok(())
    }

    /// Keeps the current edits although `disk` changed: the disk version becomes the saved
    /// baseline (so the edits still count as unsaved) and is put on the undo stack.
    pub fn keep_local(&mut self, disk: &ScenarioFile) -> Result<(), ConfigError> {
        let disk = Edited::Lab(Box::new(normalized(disk)?));
        self.undo.push(disk.clone());
        self.saved = Some(disk);
        Ok(())
    }

    /// How many undo / redo steps are available.
    pub fn history(&self) -> (usize, usize) {
        (self.undo.len(), self.redo.len())
    }

    fn push_undo(&mut self) {
        self.undo.push(self.file.clone());
        if self.undo.len() > HISTORY {
            self.undo.remove(0);
        }
        self.redo.clear();
    }

    /// Validates `candidate` like a loaded file and, if valid, makes it current.
    fn apply(&mut self, candidate: Edited) -> Result<(), ConfigError> {
        let valid = candidate.normalized()?;
        if valid != self.file {
            self.push_undo();
            self.file = valid;
        }
        Ok(())
    }

    /// Goes back one edit; false when there is nothing to undo.
    pub fn undo(&mut self) -> bool {
        match self.undo.pop() {
            Some(prev) => {
                self.redo.push(std::mem::replace(&mut self.file, prev));
                true
            }
            None => false,
        }
    }

    /// Re-applies an undone edit; false when there is nothing to redo.
    pub fn redo(&mut self) -> bool {
        match self.redo.pop() {
            Some(next) => {
                self.undo.push(std::mem::replace(&mut self.file, next));
                true
            }
            None => false,
        }
    }

    /// The text of a rule's field, as the editor shows it and parses it back.
    pub fn field_text(&self, rule: usize, field: Field) -> String {
        let Some(value) = self
            .rules()
            .get(rule)
            .and_then(Value::as_object)
            .and_then(|o| o.get(field.key()))
        else {
            return String::new();
        };
        match (field, value) {
            (_, Value::Str(t)) => t.to_lossy(),
            (Field::Calls, Value::Array(items)) => {
                items.iter().map(canonical).collect::<Vec<_>>().join(", ")
            }
            (Field::Limit, Value::Null) => "none".into(),
            (_, v) => canonical(v),
        }
    }

    /// Sets one field of one rule from text; on error nothing changes.
    pub fn set_field(&mut self, rule: usize, field: Field, text: &str) -> Result<(), ConfigError> {
        let at = format!("rules[{rule}].{}", field.key());
        let value = parse_field(field, text).map_err(|e| e.at(at.clone()))?;
        let mut candidate = self.file.clone();
        let Some(Value::Object(o)) = candidate.rules_mut().get_mut(rule) else {
            return Err(ConfigError::new("Invalid scenario file")
                .at(format!("rules[{rule}]"))
                .because("no such rule"));
        };
        o.insert(field.key(), value);
        self.apply(candidate)
    }

    /// Appends a new rule (after `after`, or at the end) and returns its index.
    pub fn add_rule(&mut self, after: Option<usize>) -> Result<usize, ConfigError> {
        let name = self.unique_name("rule");
        let mut o = Object::new();
        o.push("name", name.as_str());
        // A lab rule starts on the inventory tool; an MCP rule on every tool (the user names
        // the server's).
        let tool = match &self.file {
            Edited::Lab(_) => shipping::INVENTORY,
            Edited::Mcp(_) => "*",
        };
        o.push("tool", tool);
        o.push("kind", "timeout");
        o.push("calls", Value::Array(vec![Value::from(1)]));
        self.insert_rule(after, Value::Object(o))
    }

    /// Inserts a copy of rule `index` (with a fresh name) after it; returns the copy's index.
    pub fn duplicate_rule(&mut self, index: usize) -> Result<usize, ConfigError> {
        let Some(Value::Object(o)) = self.rules().get(index) else {
            return Err(no_rule(index));
        };
        let mut copy = o.clone();
        let base = o
            .get("name")
            .and_then(Value::as_text)
            .map(|t| t.to_lossy())
            .unwrap_or_else(|| "rule".into());
        copy.insert("name", self.unique_name(&format!("{base}-copy")).as_str());
        self.insert_rule(Some(index), Value::Object(copy))
    }

    fn insert_rule(&mut self, after: Option<usize>, rule: Value) -> Result<usize, ConfigError> {
        let mut candidate = self.file.clone();
        let rules = candidate.rules_mut();
        let at = after.map_or(rules.len(), |i| (i + 1).min(rules.len()));
        rules.insert(at, rule);
        self.apply(candidate)?;
        Ok(at)
    }

    /// Removes rule `index`.
    pub fn delete_rule(&mut self, index: usize) -> Result<(), ConfigError> {
        if index >= self.rules().len() {
            return Err(no_rule(index));
        }
        let mut candidate = self.file.clone();
        candidate.rules_mut().remove(index);
        self.apply(candidate)
    }

    /// Moves rule `index` up (`by < 0`) or down; returns its new index.
    pub fn move_rule(&mut self, index: usize, by: isize) -> Result<usize, ConfigError> {
        let n = self.rules().len();
        if index >= n {
            return Err(no_rule(index));
        }
        let to = (index as isize + by).clamp(0, n as isize - 1) as usize;
        let mut candidate = self.file.clone();
        let rules = candidate.rules_mut();
        let rule = rules.remove(index);
        rules.insert(to, rule);
        self.apply(candidate)?;
        Ok(to)
    }

    /// Sets the seed.
    pub fn set_seed(&mut self, seed: i64) -> Result<(), ConfigError> {
        let mut candidate = self.file.clone();
        match &mut candidate {
            Edited::Lab(f) => f.config.seed = seed,
            Edited::Mcp(m) => m.seed = seed,
        }
        self.apply(candidate)
    }

    /// Changes the seed by `by`.
    pub fn shift_seed(&mut self, by: i64) -> Result<(), ConfigError> {
        self.set_seed(self.seed().saturating_add(by))
    }

    /// Sets the probability override.
    pub fn set_probability(&mut self, p: Option<f64>) -> Result<(), ConfigError> {
        let mut candidate = self.file.clone();
        match &mut candidate {
            Edited::Lab(f) => f.config.probability = p,
            Edited::Mcp(m) => m.probability = p,
        }
        self.apply(candidate)
    }

    /// Moves to the next probability override in [`PROBABILITY_STEPS`].
    pub fn cycle_probability(&mut self) -> Result<(), ConfigError> {
        let now = self.probability();
        let i = PROBABILITY_STEPS
            .iter()
            .position(|p| *p == now)
            .map_or(0, |i| (i + 1) % PROBABILITY_STEPS.len());
        self.set_probability(PROBABILITY_STEPS[i])
    }

    /// Changes the call budget by `by` (the lab allows 1–20; an MCP scenario at least 1).
    pub fn shift_budget(&mut self, by: i64) -> Result<(), ConfigError> {
        let to = self.budget().saturating_add(by);
        let mut candidate = self.file.clone();
        match &mut candidate {
            Edited::Lab(f) => {
                if !LAB_MAX_CALLS.contains(&to) {
                    return Err(
                        ConfigError::new("Demo call budget must be between 1 and 20")
                            .at("max_calls")
                            .because(format!("{to} is out of range")),
                    );
                }
                f.config.max_calls = to;
            }
            Edited::Mcp(m) => m.max_calls = to,
        }
        self.apply(candidate)
    }

    /// Sets which policies run (a lab scenario's; an MCP scenario's agent is its policy).
    pub fn set_policy(&mut self, policy: PolicyChoice) -> Result<(), ConfigError> {
        let mut candidate = self.file.clone();
        match &mut candidate {
            Edited::Lab(f) => f.policy = policy,
            Edited::Mcp(_) => {
                return Err(ConfigError::new("Invalid scenario file")
                    .at("policy")
                    .because("an MCP scenario has no policy: the agent you re-run is the policy"));
            }
        }
        self.apply(candidate)
    }

    /// Cycles optimistic → retry → resilient → all.
    pub fn cycle_policy(&mut self) -> Result<(), ConfigError> {
        let next = match self.policy() {
            Some(PolicyChoice::One(Policy::Optimistic)) => PolicyChoice::One(Policy::Retry),
            Some(PolicyChoice::One(Policy::Retry)) => PolicyChoice::One(Policy::Resilient),
            Some(PolicyChoice::One(Policy::Resilient)) => PolicyChoice::All,
            Some(PolicyChoice::All) | None => PolicyChoice::One(Policy::Optimistic),
        };
        self.set_policy(next)
    }

    fn unique_name(&self, base: &str) -> String {
        let taken = |n: &str| {
            self.rules().iter().any(|r| {
                r.as_object()
                    .and_then(|o| o.get("name"))
                    .and_then(Value::as_str)
                    == Some(n)
            })
        };
        if !taken(base) {
            return base.to_owned();
        }
        (2..)
            .map(|i| format!("{base}-{i}"))
            .find(|n| !taken(n))
            .unwrap_or_else(|| base.to_owned())
    }
}

fn no_rule(index: usize) -> ConfigError {
    ConfigError::new("Invalid scenario file")
        .at(format!("rules[{index}]"))
        .because("no such rule")
}

/// Parses a field's text as its type.
pub fn parse_field(field: Field, text: &str) -> Result<Value, ConfigError> {
    let t = text.trim();
    let json = |t: &str, message: &'static str| {
        parse(t).map_err(|e| ConfigError::new(message).because(e.to_string()))
    };
    match field {
        Field::Name | Field::Tool | Field::Kind => Ok(Value::from(text)),
        Field::Calls if t.starts_with('[') => {
            json(t, "Rule calls must be positive integer ordinals")
                .map_err(|e| e.because("expected whole numbers such as 1, 2"))
        }
        Field::Calls => {
            parse_ordinals(t).map(|ns| Value::Array(ns.into_iter().map(Value::from).collect()))
        }
        Field::Probability | Field::Delay => {
            json(t, "Duration must be a finite nonnegative number")
        }
        Field::Limit => match t {
            "" | "none" | "null" => Ok(Value::Null),
            _ => json(t, "Rule limit must be a positive integer or null"),
        },
        Field::Replacement => {
            if t.is_empty() {
                Ok(Value::Null)
            } else {
                json(t, "Invalid or excessively nested JSON")
            }
        }
    }
}

/// The highest ordinal a rule can ever meet: a run makes at most 10,000 calls.
const MAX_ORDINAL: u64 = 10_000;

/// A calls field as people type it: ordinals and ranges separated by commas or spaces
/// (`1, 3`, `1-3`, `2..4`); empty is every call.
fn parse_ordinals(t: &str) -> Result<Vec<u64>, ConfigError> {
    let bad =
        |why: String| ConfigError::new("Rule calls must be positive integer ordinals").because(why);
    let number = |s: &str| -> Result<u64, ConfigError> {
        let n: u64 = s.trim().parse().map_err(|_| {
            bad(format!(
                "{s:?} is not a whole number: type ordinals such as 1, 3 or a range such as 1-3"
            ))
        })?;
        if n == 0 {
            return Err(bad("ordinals start at 1".into()));
        }
        if n > MAX_ORDINAL {
            return Err(bad(format!(
                "{n} can never be reached: a run makes at most {MAX_ORDINAL} calls"
            )));
        }
        Ok(n)
    };
    let mut out = Vec::new();
    for part in t.split([',', ' ']).map(str::trim).filter(|p| !p.is_empty()) {
        let range = part.split_once("..").or_else(|| part.split_once('-'));
        match range {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(bad(format!("{part}: a range goes up ({b}-{a}?)")));
                }
                out.extend(a..=b);
            }
            None => out.push(number(part)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// An unsaved scenario from a shipping run's report: its rules, seed and call budget
/// (the number of calls it was allowed, when the budget refused some; otherwise the demo's
/// default or the calls it made, whichever is larger). Judged as the bundled scenarios are
/// (task completed, latency budget). Fails for reports from other worlds.
pub fn scenario_from_report(report: &Report, name: &str) -> Result<ScenarioFile, ConfigError> {
    let not_shipping = || {
        ConfigError::new("Invalid scenario file")
            .at("world")
            .because("only shipping runs (check_inventory, create_shipment) can be edited")
    };
    if report.calls.is_empty()
        || report
            .calls
            .iter()
            .any(|c| c.tool != shipping::INVENTORY && c.tool != shipping::SHIP)
    {
        return Err(not_shipping());
    }
    let seed = report
        .seed
        .as_i64()
        .ok_or_else(|| ConfigError::new("Invalid scenario file").at("seed"))?;
    let calls = report.calls.len() as i64;
    let max_calls = if report.budget_rejections > 0 {
        calls
    } else {
        calls.max(RunConfig::default().max_calls)
    }
    .clamp(*LAB_MAX_CALLS.start(), *LAB_MAX_CALLS.end());
    let file = ScenarioFile {
        scenario: Scenario {
            name: name.to_owned(),
            story: Story {
                title: format!("Edited {name}"),
                ..Story::default()
            },
            rules: report.rules.clone(),
            checks: vec![
                ScenarioCheck::TaskCompleted,
                ScenarioCheck::LatencyBudget(DEFAULT_LATENCY_BUDGET),
            ],
        },
        config: RunConfig {
            seed,
            probability: None,
            max_calls,
        },
        policy: PolicyChoice::All,
    };
    normalized(&file)
}

/// The policy choice that reproduces a recorded run: the single policy whose run of `file`
/// has `digest`, or all three when none does.
pub fn infer_policy(file: &ScenarioFile, digest: &str) -> PolicyChoice {
    Policy::ALL
        .into_iter()
        .find(|p| super::run(&file.scenario, *p, &file.config).is_ok_and(|r| r.digest == digest))
        .map_or(PolicyChoice::All, PolicyChoice::One)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn editor() -> Editor {
        let file = ScenarioFile::bundled("lost_ack").expect("bundled");
        Editor::new(&file).expect("valid")
    }

    #[test]
    fn calls_take_ranges_and_refuse_what_can_never_be_reached() {
        let list = |t: &str| parse_field(Field::Calls, t).map(|v| canonical(&v));
        assert_eq!(list("1, 3").as_deref(), Ok("[1,3]"));
        assert_eq!(list("1-3").as_deref(), Ok("[1,2,3]"));
        assert_eq!(list("2..4 7").as_deref(), Ok("[2,3,4,7]"));
        assert_eq!(list("").as_deref(), Ok("[]"), "empty: every call");
        assert_eq!(list("[1,2]").as_deref(), Ok("[1,2]"));
        let big = parse_field(Field::Calls, "99999999999999999999").expect_err("too big");
        assert!(
            big.to_string().contains("whole number") || big.to_string().contains("never"),
            "{big}"
        );
        let far = parse_field(Field::Calls, "10001").expect_err("unreachable");
        assert!(far.to_string().contains("can never be reached"), "{far}");
        assert!(parse_field(Field::Calls, "3-1").is_err());
        assert!(parse_field(Field::Calls, "0").is_err());
    }

    #[test]
    fn field_edits_are_validated_as_typed() {
        let mut e = editor();
        assert_eq!(e.field_text(0, Field::Calls), "1");
        assert_eq!(e.field_text(0, Field::Limit), "none");
        e.set_field(0, Field::Calls, "1, 2").expect("calls");
        assert_eq!(e.field_text(0, Field::Calls), "1, 2");
        assert!(e.dirty());
        let err = e.set_field(0, Field::Probability, "1.5").err();
        assert_eq!(err.as_ref().map(|e| e.message), Some("Invalid fault rule"));
        assert_eq!(
            err.and_then(|e| e.path),
            Some("rules[0].probability".into())
        );
        let err = e.set_field(0, Field::Calls, "x").err();
        assert_eq!(
            err.as_ref().map(|e| e.message),
            Some("Rule calls must be positive integer ordinals")
        );
        assert_eq!(err.and_then(|e| e.path), Some("rules[0].calls".into()));
        let err = e.set_field(0, Field::Kind, "explode").err();
        let detail = err.and_then(|e| e.detail).unwrap_or_default();
        assert!(detail.starts_with("Unknown fault kind"), "{detail}");
        let err = e.set_field(0, Field::Replacement, "{oops").err();
        assert_eq!(
            err.map(|e| e.message),
            Some("Invalid or excessively nested JSON")
        );
        // The failed edits left the last valid rules in place.
        assert_eq!(e.field_text(0, Field::Calls), "1, 2");
        assert_eq!(e.field_text(0, Field::Kind), "response_lost");
        e.set_field(0, Field::Replacement, r#"{"ok": true}"#)
            .expect("json");
        assert_eq!(e.field_text(0, Field::Replacement), r#"{"ok":true}"#);
        e.set_field(0, Field::Limit, "2").expect("limit");
        assert_eq!(e.field_text(0, Field::Limit), "2");
        let err = e.set_field(0, Field::Limit, "0").err();
        assert_eq!(err.and_then(|e| e.path), Some("rules[0].limit".into()));
    }

    #[test]
    fn add_duplicate_delete_reorder_and_names() {
        let mut e = editor();
        let i = e.duplicate_rule(0).expect("dup");
        assert_eq!(i, 1);
        assert_eq!(e.field_text(1, Field::Name), "lost-receipt-copy");
        let err = e.set_field(1, Field::Name, "lost-receipt").err();
        assert_eq!(
            err.and_then(|e| e.path),
            Some("rules[1].name".into()),
            "duplicate names are refused"
        );
        let j = e.add_rule(None).expect("add");
        assert_eq!((j, e.field_text(j, Field::Name)), (2, "rule".into()));
        assert_eq!(e.move_rule(2, -2).expect("move"), 0);
        assert_eq!(e.field_text(0, Field::Name), "rule");
        e.delete_rule(0).expect("delete");
        assert_eq!(e.rules().len(), 2);
        assert!(e.delete_rule(9).is_err());
    }

    #[test]
    fn undo_redo_and_dirty() {
        let mut e = editor();
        assert!(!e.dirty());
        e.shift_seed(1).expect("seed");
        e.cycle_policy().expect("policy");
        assert_eq!(e.lab().expect("a lab scenario").config.seed, 43);
        assert_eq!(
            e.lab().expect("a lab scenario").policy,
            PolicyChoice::One(Policy::Optimistic)
        );
        assert!(e.undo());
        assert_eq!(e.lab().expect("a lab scenario").policy, PolicyChoice::All);
        assert!(e.undo());
        assert!(!e.dirty());
        assert!(!e.undo());
        assert!(e.redo());
        assert_eq!(e.lab().expect("a lab scenario").config.seed, 43);
        // A new edit drops the redo branch.
        e.shift_budget(1).expect("budget");
        assert!(!e.redo());
        assert!(e.shift_budget(100).is_err());
        assert_eq!(e.lab().expect("a lab scenario").config.max_calls, 9);
        e.mark_saved();
        assert!(!e.dirty());
        e.cycle_probability().expect("p");
        assert_eq!(
            e.lab().expect("a lab scenario").config.probability,
            Some(0.5)
        );
    }

    #[test]
    fn disk_and_local_versions_are_both_kept() {
        let mut e = editor();
        e.shift_seed(5).expect("seed");
        let mut disk = ScenarioFile::bundled("lost_ack").expect("bundled");
        disk.config.max_calls = 3;
        e.keep_local(&disk).expect("keep");
        assert!(e.dirty());
        assert_eq!(e.lab().expect("a lab scenario").config.seed, 47);
        assert!(e.undo());
        assert_eq!(
            e.lab().expect("a lab scenario").config.max_calls,
            3,
            "disk version in undo"
        );
        let mut e = editor();
        e.shift_seed(5).expect("seed");
        e.take_disk(&disk).expect("take");
        assert!(!e.dirty());
        assert!(e.same_as(&disk));
        assert!(e.undo());
        assert_eq!(
            e.lab().expect("a lab scenario").config.seed,
            47,
            "local edits in undo"
        );
    }

    #[test]
    fn scenario_from_a_shipping_report() {
        let file = ScenarioFile::bundled("rate_limit").expect("bundled");
        let run = super::super::run(&file.scenario, Policy::Retry, &file.config).expect("run");
        let s = scenario_from_report(&run.report, "rate_limit").expect("shipping");
        assert_eq!(s.config.seed, 42);
        assert_eq!(s.scenario.rules.len(), 1);
        let rerun = super::super::run(&s.scenario, Policy::Retry, &s.config).expect("run");
        assert_eq!(rerun.digest, run.digest, "same rules, seed and budget");
        assert_eq!(
            infer_policy(&s, &run.digest),
            PolicyChoice::One(Policy::Retry)
        );
        let mut other = run.report.clone();
        other.calls[0].tool = "other".into();
        assert!(scenario_from_report(&other, "x").is_err());
    }
}
