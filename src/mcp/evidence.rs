//! What a successful `tools/call` committed, and on what evidence, most trusted first:
//! 1. the server says so — its result's `_meta` lists the effects under
//!    [`super::wire::EFFECTS_META_KEY`] (an empty list says it committed nothing);
//! 2. the user says so — the scenario's `effects` entry for the tool (its key from the
//!    arguments; a commit id from the result, so a retry that gets the same id back is an
//!    idempotent replay, not a new commit);
//! 3. the server's annotations — a call to a tool not marked `readOnlyHint: true` is a commit
//!    keyed by its arguments. The weakest: hints are untrusted and often absent.

use std::collections::HashMap;

use super::scenario::{Annotations, Commit, McpScenario, at_path};
use super::wire::EFFECTS_META_KEY;
use crate::json::{Value, canonical, parse, sha256_hex};

/// Which evidence an effect rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// The server listed it in the result's `_meta`.
    Server,
    /// The scenario's `effects` entry for the tool.
    Scenario,
    /// The tool is not annotated read-only.
    Annotations,
}

impl Evidence {
    /// Every kind, most trusted first.
    pub const ALL: [Evidence; 3] = [Evidence::Server, Evidence::Scenario, Evidence::Annotations];

    /// The name files use.
    pub fn as_str(self) -> &'static str {
        match self {
            Evidence::Server => "server",
            Evidence::Scenario => "scenario",
            Evidence::Annotations => "annotations",
        }
    }

    /// The kind called `name`.
    pub fn parse(name: &str) -> Option<Evidence> {
        Evidence::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// How a person reads it.
    pub fn explain(self) -> &'static str {
        match self {
            Evidence::Server => "the server listed it in the result's _meta",
            Evidence::Scenario => "the scenario's effects entry for this tool",
            Evidence::Annotations => "the tool is not annotated read-only (a hint; weakest)",
        }
    }
}

/// One commit a call made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// Effect name.
    pub name: String,
    /// Effect key.
    pub key: String,
    /// What it rests on.
    pub evidence: Evidence,
}

/// What a successful call committed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Commits {
    /// The effects, in order.
    pub effects: Vec<Observed>,
    /// Set when the result carried a commit id already seen: the call with that first commit
    /// (an idempotent replay; nothing new committed).
    pub replay_of: Option<u64>,
    /// What the annotations alone suggest was committed, when they are not trusted as
    /// commits (the scenario does not say `"annotations": "commit"`): a repeat is a possible
    /// duplicate, a warning, not a duplicate effect.
    pub possible: Vec<Observed>,
}

/// The longest effect name or key the engine records; longer ones are kept as a digest.
const MAX_FIELD: usize = 200;

/// `s`, or `sha256:<hex>` of it when it is longer than an effect field may be.
fn field(s: String) -> String {
    // ASCII (canonical JSON always is) has a character per byte.
    let chars = if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    };
    if (1..=MAX_FIELD).contains(&chars) {
        s
    } else {
        format!("sha256:{}", sha256_hex(s.as_bytes()))
    }
}

/// A value as an effect key: a string as itself, anything else as canonical JSON.
fn key_text(v: &Value) -> String {
    match v.as_str() {
        Some(s) => s.to_owned(),
        None => canonical(v),
    }
}

/// The structured part of a result: `structuredContent`, else the JSON of its first text
/// block (servers put the same JSON in both).
fn structured(result: &Value) -> Option<Value> {
    let o = result.as_object()?;
    if let Some(s) = o.get("structuredContent") {
        return Some(s.clone());
    }
    let text = o
        .get("content")?
        .as_array()?
        .iter()
        .find(|b| {
            b.as_object()
                .and_then(|b| b.get("type"))
                .and_then(Value::as_str)
                == Some("text")
        })?
        .as_object()?
        .get("text")?
        .as_str()?;
    parse(text).ok()
}

/// Tool annotations seen in `tools/list` results, by tool name.
#[derive(Clone, Debug, Default)]
pub struct ToolIndex {
    read_only: HashMap<String, bool>,
    idempotent: HashMap<String, bool>,
    /// Tools listed with an `annotations` object: the server said something of them.
    annotated: std::collections::HashSet<String>,
}

impl ToolIndex {
    /// Takes in the tools of a `tools/list` result.
    pub fn learn(&mut self, result: &Value) {
        let tools = result
            .as_object()
            .and_then(|o| o.get("tools"))
            .and_then(Value::as_array);
        for t in tools.into_iter().flatten() {
            let Some(o) = t.as_object() else { continue };
            let Some(name) = o.get("name").and_then(Value::as_str) else {
                continue;
            };
            let annotations = o.get("annotations").and_then(Value::as_object);
            let hint = |k: &str| {
                annotations
                    .and_then(|a| a.get(k))
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
            };
            self.read_only.insert(name.to_owned(), hint("readOnlyHint"));
            self.idempotent
                .insert(name.to_owned(), hint("idempotentHint"));
            if annotations.is_some() {
                self.annotated.insert(name.to_owned());
            } else {
                self.annotated.remove(name);
            }
        }
    }

    /// Whether the server annotated `tool` read-only.
    pub fn read_only(&self, tool: &str) -> bool {
        self.read_only.get(tool).copied().unwrap_or(false)
    }

    /// Whether `tool` is annotated `idempotentHint: true` (absent: false).
    pub fn idempotent(&self, tool: &str) -> bool {
        self.idempotent.get(tool).copied().unwrap_or(false)
    }

    /// Whether the server declares `tool` non-idempotent: it lists the tool with annotations
    /// that say neither `readOnlyHint: true` nor `idempotentHint: true` (by the protocol's
    /// defaults, a write that is not safe to repeat). A tool listed without annotations is
    /// not declared anything.
    pub fn declares_non_idempotent(&self, tool: &str) -> bool {
        self.annotated.contains(tool) && !self.read_only(tool) && !self.idempotent(tool)
    }
}

/// Finds the commits of calls, remembering commit ids across the session.
#[derive(Debug, Default)]
pub struct Ledger {
    /// (effect name, commit id) → the call that first committed it.
    first: HashMap<(String, String), u64>,
}

impl Ledger {
    /// The commits of call `call` to `tool` with `arguments`, which succeeded with `result`.
    pub fn commits(
        &mut self,
        scenario: Option<&McpScenario>,
        tools: &ToolIndex,
        call: u64,
        tool: &str,
        arguments: &Value,
        result: &Value,
    ) -> Commits {
        // 1. The server's own list.
        let listed = result
            .as_object()
            .and_then(|o| o.get("_meta"))
            .and_then(Value::as_object)
            .and_then(|m| m.get(EFFECTS_META_KEY))
            .and_then(Value::as_array);
        if let Some(items) = listed {
            let effects = items
                .iter()
                .filter_map(|e| {
                    let o = e.as_object()?;
                    Some(Observed {
                        name: field(key_text(o.get("name")?)),
                        key: field(key_text(o.get("key")?)),
                        evidence: Evidence::Server,
                    })
                })
                .collect();
            return Commits {
                effects,
                ..Commits::default()
            };
        }
        // 2. The scenario's word for the tool.
        match scenario.and_then(|s| s.commit_of(tool)) {
            Some(Commit::Nothing) => return Commits::default(),
            Some(Commit::Effect {
                effect,
                key,
                commit_id,
                committed,
            }) => {
                // The result's structured part, read only when the scenario asks of it.
                let said = (committed.is_some() || commit_id.is_some())
                    .then(|| structured(result))
                    .flatten();
                if let Some(path) = committed
                    && !says_committed(said.as_ref().and_then(|s| at_path(s, path)))
                {
                    return Commits::default();
                }
                if let Some(id_path) = commit_id
                    && let Some(id) = said
                        .as_ref()
                        .and_then(|s| at_path(s, id_path))
                        .map(key_text)
                {
                    let slot = (effect.clone(), id);
                    if let Some(&first) = self.first.get(&slot) {
                        return Commits {
                            replay_of: Some(first),
                            ..Commits::default()
                        };
                    }
                    self.first.insert(slot, call);
                }
                return Commits {
                    effects: vec![scenario_effect(effect, key, arguments)],
                    ..Commits::default()
                };
            }
            None => {}
        }
        // 3. The annotations (absent: not read-only, not idempotent).
        if tools.read_only(tool) {
            return Commits::default();
        }
        let key = redacted_arguments(arguments);
        if tools.idempotent(tool) {
            // The same arguments again is the same write again: an idempotent replay.
            let slot = (format!("\0{tool}"), key.clone());
            if let Some(&first) = self.first.get(&slot) {
                return Commits {
                    replay_of: Some(first),
                    ..Commits::default()
                };
            }
            self.first.insert(slot, call);
        }
        let observed = Observed {
            name: field(tool.to_owned()),
            key: field(key),
            evidence: Evidence::Annotations,
        };
        let trusted = scenario.is_some_and(|s| s.annotations == Annotations::Commit);
        if trusted {
            Commits {
                effects: vec![observed],
                ..Commits::default()
            }
        } else {
            Commits {
                possible: vec![observed],
                ..Commits::default()
            }
        }
    }
}

/// What a call to `tool` with `arguments` commits when it runs, as far as its arguments tell
/// without its result: the scenario's effect for the tool, else (not read-only) the tool
/// keyed by its arguments. Nothing when only the server could say (its `_meta` is in the
/// result), or when the scenario says the tool commits nothing. The keys a call whose outcome
/// nobody saw may have committed.
pub fn would_commit(
    scenario: Option<&McpScenario>,
    tools: &ToolIndex,
    tool: &str,
    arguments: &Value,
) -> Vec<Observed> {
    match scenario.and_then(|s| s.commit_of(tool)) {
        Some(Commit::Nothing) => Vec::new(),
        Some(Commit::Effect { effect, key, .. }) => {
            vec![scenario_effect(effect, key, arguments)]
        }
        None if tools.read_only(tool) => Vec::new(),
        None => vec![Observed {
            name: field(tool.to_owned()),
            key: field(redacted_arguments(arguments)),
            evidence: Evidence::Annotations,
        }],
    }
}

/// The scenario's `effect`, keyed by the arguments' member at `key` (a secret's digest; all
/// the arguments when it is absent).
fn scenario_effect(effect: &str, key: &[String], arguments: &Value) -> Observed {
    let key = match at_path(arguments, key) {
        Some(v) if key.iter().any(|k| secret_key(k)) => {
            format!("sha256:{}", sha256_hex(key_text(v).as_bytes()))
        }
        Some(v) => key_text(v),
        None => redacted_arguments(arguments),
    };
    Observed {
        name: field(effect.to_owned()),
        key: field(key),
        evidence: Evidence::Scenario,
    }
}

/// Whether a result value says something was committed: not absent, null, false, zero or
/// empty.
fn says_committed(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Str(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(n) => n.as_number_f64().is_none_or(|x| x != 0.0),
    }
}

/// Whether a key names a secret (as the redactor reads keys).
fn secret_key(k: &str) -> bool {
    crate::redact::Redactor::builtin().is_secret_key(&crate::json::Text::from(k))
}

/// The arguments as an effect key: canonical, with secret values redacted first.
fn redacted_arguments(arguments: &Value) -> String {
    // Arguments with nothing to redact (nearly all) are written as they are, not copied.
    match crate::redact::Redactor::builtin().scrub_borrowed(arguments) {
        Ok(scrubbed) => canonical(&scrubbed),
        Err(_) => canonical(&Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;

    fn scenario() -> McpScenario {
        McpScenario::from_text(
            r#"{"schema_version": 1, "world": "mcp", "name": "m", "title": "T", "seed": 1, "rules": [],
                "effects": [{"tool": "create_*", "effect": "shipment", "key": "order_id", "commit_id": "shipment_id"},
                            {"tool": "check_*", "effect": "none"}]}"#,
        )
        .expect("valid")
    }

    #[test]
    fn the_server_s_word_comes_first() {
        let result = crate::json::parse(
            r#"{"content": [], "_meta": {"dev.toolstorm/effects": [{"name": "shipment", "key": "o-9"}]}}"#,
        )
        .expect("json");
        let c = Ledger::default().commits(
            Some(&scenario()),
            &ToolIndex::default(),
            1,
            "create_shipment",
            &obj! {"order_id" => "o-1"},
            &result,
        );
        assert_eq!(c.effects.len(), 1);
        assert_eq!(
            (c.effects[0].key.as_str(), c.effects[0].evidence),
            ("o-9", Evidence::Server)
        );
    }

    #[test]
    fn the_same_commit_id_again_is_an_idempotent_replay() {
        let mut ledger = Ledger::default();
        let sc = scenario();
        let tools = ToolIndex::default();
        let args = obj! {"order_id" => "o-1"};
        let result = |id: &str| obj! {"content" => Value::Array(vec![]), "structuredContent" => obj! {"shipment_id" => id}};
        let first = ledger.commits(
            Some(&sc),
            &tools,
            1,
            "create_shipment",
            &args,
            &result("SHP-1"),
        );
        assert_eq!(first.effects[0].evidence, Evidence::Scenario);
        assert_eq!(first.effects[0].key, "o-1");
        let again = ledger.commits(
            Some(&sc),
            &tools,
            2,
            "create_shipment",
            &args,
            &result("SHP-1"),
        );
        assert_eq!((again.effects.len(), again.replay_of), (0, Some(1)));
        let new = ledger.commits(
            Some(&sc),
            &tools,
            3,
            "create_shipment",
            &args,
            &result("SHP-2"),
        );
        assert_eq!(
            new.effects.len(),
            1,
            "a new id is a new commit (a duplicate of o-1)"
        );
        let read = ledger.commits(Some(&sc), &tools, 4, "check_inventory", &args, &result("x"));
        assert!(read.effects.is_empty());
    }

    #[test]
    fn annotations_are_the_last_word() {
        let mut tools = ToolIndex::default();
        tools.learn(
            &crate::json::parse(
                r#"{"tools": [{"name": "look", "annotations": {"readOnlyHint": true}}, {"name": "write"}]}"#,
            )
            .expect("json"),
        );
        let mut ledger = Ledger::default();
        let args = obj! {"x" => 1};
        assert!(
            ledger
                .commits(None, &tools, 1, "look", &args, &obj! {})
                .effects
                .is_empty()
        );
        // Untrusted by default: a possible commit, not an effect.
        let w = ledger.commits(None, &tools, 2, "write", &args, &obj! {});
        assert!(w.effects.is_empty());
        assert_eq!(w.possible[0].evidence, Evidence::Annotations);
        assert_eq!(w.possible[0].key, "{\"x\":1}");
        let unknown = ledger.commits(None, &tools, 3, "never_listed", &args, &obj! {});
        assert_eq!(unknown.possible.len(), 1, "no annotations: not read-only");
        // Trusted when the scenario says so.
        let trusting = McpScenario::from_text(
            r#"{"schema_version": 1, "world": "mcp", "name": "m", "title": "T", "seed": 1,
                "rules": [], "annotations": "commit"}"#,
        )
        .expect("valid");
        let t = ledger.commits(Some(&trusting), &tools, 4, "write", &args, &obj! {});
        assert_eq!(t.effects.len(), 1);
        // Secrets never reach a key.
        let s = ledger.commits(
            None,
            &tools,
            5,
            "write",
            &obj! {"token" => "sk-1"},
            &obj! {},
        );
        assert!(!s.possible[0].key.contains("sk-1"), "{}", s.possible[0].key);
    }

    #[test]
    fn an_idempotent_tool_repeated_with_the_same_arguments_is_a_replay() {
        let mut tools = ToolIndex::default();
        tools.learn(
            &crate::json::parse(
                r#"{"tools": [{"name": "write_file", "annotations": {"idempotentHint": true}}]}"#,
            )
            .expect("json"),
        );
        let mut ledger = Ledger::default();
        let args = obj! {"path" => "a.txt", "content" => "x"};
        let first = ledger.commits(None, &tools, 1, "write_file", &args, &obj! {});
        assert_eq!(first.possible.len(), 1);
        let again = ledger.commits(None, &tools, 2, "write_file", &args, &obj! {});
        assert_eq!(again.replay_of, Some(1));
        assert!(again.possible.is_empty() && again.effects.is_empty());
        let other = ledger.commits(
            None,
            &tools,
            3,
            "write_file",
            &obj! {"path" => "b.txt"},
            &obj! {},
        );
        assert_eq!(other.replay_of, None);
    }

    #[test]
    fn a_result_can_say_nothing_was_committed() {
        let sc = McpScenario::from_text(
            r#"{"schema_version": 1, "world": "mcp", "name": "m", "title": "T", "seed": 1, "rules": [],
                "effects": [{"tool": "add_observations", "effect": "observation", "key": "entity",
                             "committed": "addedObservations"}]}"#,
        )
        .expect("valid");
        let mut ledger = Ledger::default();
        let tools = ToolIndex::default();
        let args = obj! {"entity" => "e-1"};
        let added = crate::json::parse(r#"{"structuredContent": {"addedObservations": ["o"]}}"#)
            .expect("json");
        let none = crate::json::parse(r#"{"structuredContent": {"addedObservations": []}}"#)
            .expect("json");
        assert_eq!(
            ledger
                .commits(Some(&sc), &tools, 1, "add_observations", &args, &added)
                .effects
                .len(),
            1
        );
        assert!(
            ledger
                .commits(Some(&sc), &tools, 2, "add_observations", &args, &none)
                .effects
                .is_empty()
        );
        assert!(
            ledger
                .commits(Some(&sc), &tools, 3, "add_observations", &args, &obj! {})
                .effects
                .is_empty()
        );
    }
}
