//! MCP scenario files (`"world": "mcp"`): the faults to inject between an agent and its MCP
//! server, how each injected failure reaches the client, and how to tell a commit from a read.
//! The same versioned, hand-editable format as the other worlds — rules, seed and budget are
//! read by the same code with the same messages — plus:
//!
//! ```json
//! {
//!   "schema_version": 1, "world": "mcp", "name": "mcp-lost-ack", "title": "...",
//!   "seed": 42, "max_calls": 10000,
//!   "rules": [{"name": "lost-receipt", "tool": "create_*", "kind": "response_lost", "calls": [1]}],
//!   "delivery": {"lost-receipt": "is_error"},
//!   "effects": [
//!     {"tool": "create_*", "effect": "shipment", "key": "order_id", "commit_id": "shipment_id"},
//!     {"tool": "check_*", "effect": "none"}
//!   ],
//!   "checks": ["retry_after_respected"],
//!   "server": {"command": "python3", "args": ["server.py"]}
//! }
//! ```
//! - `delivery`, per rule name: `is_error` (default: a tool result with `isError: true`, which
//!   the model sees), `jsonrpc_error` (a protocol error, which clients may hide from the model)
//!   or `no_answer` (nothing: the client's own timeout and `notifications/cancelled` take over);
//!   for an HTTP client also `stream_cut` (the answer's stream ends without it, never given on
//!   resumption) and `http_status` (429 with `Retry-After`, 503, 504 or 502, as a gateway).
//! - `effects`, first matching tool glob wins: the effect a successful call commits, the
//!   argument path of its key, and optionally the result path of the commit's own id (the same
//!   id again is an idempotent replay, not a new commit); `"effect": "none"` for tools that never
//!   commit. Paths are dot-separated keys (`order.id`; a number indexes a list).
//! - `server`, optional: the command `mcp FILE --record F` starts (from the file's folder), or
//!   `{"url": "https://host/mcp"}`: a remote server over Streamable HTTP.
//! - `annotations`, optional: what a repeated call means when only the server's tool
//!   annotations speak for it. `declared` (the default): a warning, except a retry after a
//!   lost acknowledgement of a tool the server declares non-idempotent, which is a duplicate;
//!   `warn`: always a warning; `commit`: always a duplicate.

use std::collections::HashSet;

use crate::error::ConfigError;
use crate::json::{Object, Text, Value, parse, pretty};
use crate::obj;
use crate::printable::quoted;
use crate::rule::{Glob, Rule, require_keys};
use crate::scenario_fields::{
    self, SCHEMA_VERSION, Story, head, invalid, rule_list, seed_field, text_field,
};

/// The world MCP scenario files name.
pub const WORLD: &str = "mcp";
/// The most calls a session records (and injects into); past it the proxy only relays.
pub const MAX_RECORDED_CALLS: i64 = 10_000;

const REQUIRED: [&str; 6] = ["schema_version", "world", "name", "title", "seed", "rules"];
const OPTIONAL: [&str; 11] = [
    "code",
    "category",
    "description",
    "lesson",
    "max_calls",
    "delivery",
    "effects",
    "checks",
    "server",
    "probability",
    "annotations",
];

/// How an injected failure reaches the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// A `tools/call` result with `isError: true` (the model sees it).
    IsError,
    /// A JSON-RPC error response.
    JsonRpcError,
    /// No answer at all: the client's timeout and cancellation take over.
    NoAnswer,
    /// Over HTTP: the answer's stream (or connection) ends without the answer, and resuming
    /// it never gives it (a 2026-07-28 client re-issues the request with a new id). On stdio:
    /// no answer.
    StreamCut,
    /// Over HTTP: an HTTP status in place of the answer, as a gateway in front of a server
    /// sends it (429 with `Retry-After` for a rate limit, 503 for an outage, 504 for a timeout,
    /// 502 for a lost answer). On stdio: a JSON-RPC error.
    HttpStatus,
}

impl Annotations {
    /// The name files use (`declared` is the default and is not written).
    pub fn as_str(self) -> &'static str {
        match self {
            Annotations::Declared => "declared",
            Annotations::Warn => "warn",
            Annotations::Commit => "commit",
        }
    }

    /// The setting called `name`.
    pub fn parse(name: &str) -> Option<Annotations> {
        [
            Annotations::Declared,
            Annotations::Warn,
            Annotations::Commit,
        ]
        .into_iter()
        .find(|a| a.as_str() == name)
    }
}

impl Delivery {
    /// Every delivery, in the order messages list them.
    pub const ALL: [Delivery; 5] = [
        Delivery::IsError,
        Delivery::JsonRpcError,
        Delivery::NoAnswer,
        Delivery::StreamCut,
        Delivery::HttpStatus,
    ];

    /// The name files use.
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::IsError => "is_error",
            Delivery::JsonRpcError => "jsonrpc_error",
            Delivery::NoAnswer => "no_answer",
            Delivery::StreamCut => "stream_cut",
            Delivery::HttpStatus => "http_status",
        }
    }

    /// The delivery called `name`.
    pub fn parse(name: &str) -> Option<Delivery> {
        Delivery::ALL.into_iter().find(|d| d.as_str() == name)
    }
}

/// What a matching tool's successful call commits.
#[derive(Clone, Debug, PartialEq)]
pub enum Commit {
    /// Nothing: a read.
    Nothing,
    /// An effect named `effect`, keyed by the argument at `key`.
    Effect {
        /// The effect's name (`shipment`).
        effect: String,
        /// The argument path of its key (`order_id`).
        key: Vec<String>,
        /// The result path of the commit's own id (`shipment_id`), if the server gives one.
        commit_id: Option<Vec<String>>,
        /// The result path that says a commit happened, if the server says so: when it is
        /// absent, null, false, zero or empty, the call committed nothing (a deduplicating
        /// server answering a repeat with `"addedObservations": []`).
        committed: Option<Vec<String>>,
    },
}

/// What a repeat on annotations-only evidence means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Annotations {
    /// The default (no `"annotations"`): a repeat is a warning, except a retry after a lost
    /// acknowledgement of a tool the server declares non-idempotent (its annotations say
    /// neither `readOnlyHint` nor `idempotentHint`): that fails `No duplicate side effects`.
    #[default]
    Declared,
    /// Only warnings (`"annotations": "warn"`), for every repeat: hints are untrusted and
    /// often absent, so a repeated call is not taken for a second commit.
    Warn,
    /// A commit like any other (`"annotations": "commit"`): repeats are duplicate effects.
    Commit,
}

/// One `effects` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct EffectSpec {
    /// The tool glob, as written.
    pub tool: String,
    /// The compiled glob.
    glob: Glob,
    /// What a successful call commits.
    pub commit: Commit,
}

impl EffectSpec {
    /// Whether this entry covers `tool`.
    pub fn matches(&self, tool: &str) -> bool {
        self.glob.matches_str(tool)
    }
}

/// The server a scenario names: a command to start, or (`{"url": ...}`) a remote server
/// reached over Streamable HTTP, whose URL is then `command` (and `args` is empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerCommand {
    /// The program, or the server's URL.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// `command` is a URL.
    pub is_url: bool,
}

/// The scenario checks MCP recordings take (the core checks always apply).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpCheck {
    /// No call retried before a rate limit's advertised wait.
    RetryAfterRespected,
}

impl McpCheck {
    /// The name files use.
    pub fn as_str(self) -> &'static str {
        match self {
            McpCheck::RetryAfterRespected => "retry_after_respected",
        }
    }
}

/// A validated MCP scenario file.
#[derive(Clone, Debug, PartialEq)]
pub struct McpScenario {
    /// Identifier.
    pub name: String,
    /// Title, incident code, category, what happens and the lesson.
    pub story: Story,
    /// Decision seed.
    pub seed: i64,
    /// Calls recorded (and faulted) at most.
    pub max_calls: i64,
    /// Rule objects, validated.
    pub rules: Vec<Value>,
    /// Every rule's probability, when the file overrides them.
    pub probability: Option<f64>,
    /// How each rule's failure reaches the client (by rule name; absent: `is_error`).
    pub delivery: Vec<(String, Delivery)>,
    /// Commit evidence from the user, first match wins.
    pub effects: Vec<EffectSpec>,
    /// Scenario checks, in order.
    pub checks: Vec<McpCheck>,
    /// The server to start, when the file names one.
    pub server: Option<ServerCommand>,
    /// What a repeat on annotations-only evidence means (`"annotations"`: `declared`, the
    /// default, `warn` or `commit`).
    pub annotations: Annotations,
}

fn path_field(
    v: Option<&Value>,
    at: &str,
    required: bool,
) -> Result<Option<Vec<String>>, ConfigError> {
    let why = "expected a dot-separated path such as \"order_id\" or \"order.id\"";
    match v {
        None if !required => Ok(None),
        Some(Value::Str(t)) => {
            let s = t.to_lossy();
            let parts: Vec<String> = s.split('.').map(str::to_owned).collect();
            if s.is_empty() || s.chars().count() > 200 || parts.iter().any(String::is_empty) {
                return Err(invalid(at, why));
            }
            Ok(Some(parts))
        }
        _ => Err(invalid(at, why)),
    }
}

fn effect_specs(v: Option<&Value>) -> Result<Vec<EffectSpec>, ConfigError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = v else {
        return Err(invalid(
            "effects",
            "expected a list of {tool, effect, key, commit_id}",
        ));
    };
    if items.len() > 100 {
        return Err(invalid("effects", "at most 100 entries"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let at = |k: &str| {
                format!(
                    "effects[{i}]{}",
                    if k.is_empty() {
                        String::new()
                    } else {
                        format!(".{k}")
                    }
                )
            };
            let o = require_keys(
                item,
                &["tool", "effect"],
                &["key", "commit_id", "committed"],
            )
            .map_err(|e| scenario_fields::as_invalid(e).within(&at("")))?;
            let tool = text_field(o, "tool", true).map_err(|e| e.within(&at("")))?;
            let glob = Glob::new(&Text::from(tool.as_str()));
            let effect = text_field(o, "effect", true).map_err(|e| e.within(&at("")))?;
            if effect.chars().count() > 200 {
                return Err(invalid(&at("effect"), "at most 200 characters"));
            }
            let commit = if effect == "none" {
                if o.contains_key("key")
                    || o.contains_key("commit_id")
                    || o.contains_key("committed")
                {
                    return Err(invalid(
                        &at("effect"),
                        "a tool that commits nothing takes no key, commit_id or committed",
                    ));
                }
                Commit::Nothing
            } else {
                Commit::Effect {
                    effect,
                    key: path_field(o.get("key"), &at("key"), true)?.unwrap_or_default(),
                    commit_id: path_field(o.get("commit_id"), &at("commit_id"), false)?,
                    committed: path_field(o.get("committed"), &at("committed"), false)?,
                }
            };
            Ok(EffectSpec { tool, glob, commit })
        })
        .collect()
}

fn delivery_map(
    v: Option<&Value>,
    rule_names: &[String],
) -> Result<Vec<(String, Delivery)>, ConfigError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let Value::Object(o) = v else {
        return Err(invalid(
            "delivery",
            "expected an object: rule name → is_error, jsonrpc_error or no_answer",
        ));
    };
    let names: Vec<&str> = Delivery::ALL.iter().map(|d| d.as_str()).collect();
    o.iter()
        .map(|(k, v)| {
            let name = k.to_lossy();
            let at = format!("delivery.{}", quoted(&name));
            if !rule_names.contains(&name) {
                return Err(invalid(&at, "no rule has this name"));
            }
            let d = v
                .as_str()
                .and_then(Delivery::parse)
                .ok_or_else(|| invalid(&at, &format!("expected one of: {}", names.join(", "))))?;
            Ok((name, d))
        })
        .collect()
}

fn server_command(v: Option<&Value>) -> Result<Option<ServerCommand>, ConfigError> {
    let Some(v) = v else {
        return Ok(None);
    };
    if let Some(o) = v.as_object()
        && o.contains_key("url")
    {
        let o = require_keys(v, &["url"], &[])
            .map_err(|e| scenario_fields::as_invalid(e).within("server"))?;
        let url = text_field(o, "url", true).map_err(|e| e.within("server"))?;
        let lower = url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(invalid("server.url", "expected an http:// or https:// URL"));
        }
        // Read as the proxy will read it, so a URL it cannot use is said with the file.
        if let Err(e) = crate::mcp::address::parse_url(&url) {
            return Err(invalid("server.url", &e.to_string()));
        }
        return Ok(Some(ServerCommand {
            command: url,
            args: Vec::new(),
            is_url: true,
        }));
    }
    let o = require_keys(v, &["command"], &["args"])
        .map_err(|e| scenario_fields::as_invalid(e).within("server"))?;
    let command = text_field(o, "command", true).map_err(|e| e.within("server"))?;
    let args = match o.get("args") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, a)| {
                a.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| invalid(&format!("server.args[{i}]"), "expected a string"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(invalid("server.args", "expected a list of strings")),
    };
    Ok(Some(ServerCommand {
        command,
        args,
        is_url: false,
    }))
}

impl McpScenario {
    /// Validates a parsed document.
    pub fn from_value(v: &Value) -> Result<McpScenario, ConfigError> {
        let o: &Object = head(v, &REQUIRED, &OPTIONAL, WORLD)?;
        let seed = seed_field(o)?;
        let max_calls = match o.get("max_calls") {
            None => MAX_RECORDED_CALLS,
            Some(Value::Int(i)) => i
                .as_i64()
                .filter(|n| (1..=MAX_RECORDED_CALLS).contains(n))
                .ok_or_else(|| invalid("max_calls", "expected an integer between 1 and 10000"))?,
            Some(_) => {
                return Err(invalid(
                    "max_calls",
                    "expected an integer between 1 and 10000",
                ));
            }
        };
        let probability = match o.get("probability") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_number_f64() {
                Some(p) if (0.0..=1.0).contains(&p) && !matches!(v, Value::Bool(_)) => Some(p),
                _ => {
                    return Err(invalid(
                        "probability",
                        "expected a number between 0 and 1, or null",
                    ));
                }
            },
        };
        let rules = rule_list(o)?;
        let rule_names: Vec<String> = scenario_fields::rules(&rules)?
            .iter()
            .map(|r| r.name.to_lossy())
            .collect();
        let mut checks = Vec::new();
        if let Some(list) = o.get("checks") {
            let Value::Array(items) = list else {
                return Err(invalid("checks", "expected a list of check names"));
            };
            let mut seen = HashSet::new();
            for (i, item) in items.iter().enumerate() {
                let check = match item.as_str() {
                    Some("retry_after_respected") => McpCheck::RetryAfterRespected,
                    _ => {
                        return Err(invalid(
                            &format!("checks[{i}]"),
                            "expected retry_after_respected (the core checks always apply)",
                        ));
                    }
                };
                if !seen.insert(check.as_str()) {
                    return Err(invalid(&format!("checks[{i}]"), "listed twice"));
                }
                checks.push(check);
            }
        }
        let scenario = McpScenario {
            name: text_field(o, "name", true)?,
            story: Story::from_object(o)?,
            seed,
            max_calls,
            delivery: delivery_map(o.get("delivery"), &rule_names)?,
            effects: effect_specs(o.get("effects"))?,
            checks,
            server: server_command(o.get("server"))?,
            annotations: match o.get("annotations") {
                None => Annotations::Declared,
                Some(v) => match v.as_str().and_then(Annotations::parse) {
                    Some(a) => a,
                    None => {
                        return Err(invalid(
                            "annotations",
                            "expected \"declared\", \"warn\" or \"commit\"",
                        ));
                    }
                },
            },
            probability,
            rules,
        };
        // The probability override must also give valid rules.
        scenario.rules()?;
        Ok(scenario)
    }

    /// Parses and validates scenario text.
    pub fn from_text(text: &str) -> Result<McpScenario, ConfigError> {
        let v = parse(text).map_err(|e| {
            ConfigError::new("Invalid or excessively nested JSON").because(e.to_string())
        })?;
        McpScenario::from_value(&v)
    }

    /// The validated rules, with the probability override applied.
    pub fn rules(&self) -> Result<Vec<Rule>, ConfigError> {
        let values: Vec<Value> = self
            .rules
            .iter()
            .map(|r| match (self.probability, r) {
                (Some(p), Value::Object(o)) => {
                    let mut o = o.clone();
                    o.insert("probability", Value::Float(p));
                    Value::Object(o)
                }
                _ => r.clone(),
            })
            .collect();
        scenario_fields::rules(&values)
    }

    /// How rule `name`'s failures reach the client.
    pub fn delivery_of(&self, name: &str) -> Delivery {
        self.delivery
            .iter()
            .find(|(n, _)| n == name)
            .map_or(Delivery::IsError, |(_, d)| *d)
    }

    /// The first `effects` entry covering `tool`.
    pub fn commit_of(&self, tool: &str) -> Option<&Commit> {
        self.effects
            .iter()
            .find(|e| e.matches(tool))
            .map(|e| &e.commit)
    }

    /// The document, every field spelled out.
    pub fn to_value(&self) -> Value {
        let path = |p: &[String]| Value::from(p.join("."));
        let effects = self
            .effects
            .iter()
            .map(|e| match &e.commit {
                Commit::Nothing => obj! {"tool" => e.tool.as_str(), "effect" => "none"},
                Commit::Effect {
                    effect,
                    key,
                    commit_id,
                    committed,
                } => {
                    let mut o = Object::new();
                    o.push("tool", e.tool.as_str());
                    o.push("effect", effect.as_str());
                    o.push("key", path(key));
                    if let Some(c) = commit_id {
                        o.push("commit_id", path(c));
                    }
                    if let Some(c) = committed {
                        o.push("committed", path(c));
                    }
                    Value::Object(o)
                }
            })
            .collect();
        let mut delivery = Object::new();
        for (name, d) in &self.delivery {
            delivery.push(name.as_str(), d.as_str());
        }
        let mut o = Object::new();
        o.push("schema_version", SCHEMA_VERSION);
        o.push("world", WORLD);
        o.push("name", self.name.as_str());
        self.story.push_into(&mut o);
        o.push("seed", self.seed);
        o.push("max_calls", self.max_calls);
        o.push("probability", self.probability.map(Value::Float));
        o.push("rules", Value::Array(self.rules.clone()));
        o.push("delivery", Value::Object(delivery));
        o.push("effects", Value::Array(effects));
        o.push(
            "checks",
            Value::Array(
                self.checks
                    .iter()
                    .map(|c| Value::from(c.as_str()))
                    .collect(),
            ),
        );
        if let Some(s) = self.server.as_ref().filter(|s| s.is_url) {
            o.push("server", obj! {"url" => s.command.as_str()});
        } else if let Some(s) = &self.server {
            o.push(
                "server",
                obj! {
                    "command" => s.command.as_str(),
                    "args" => Value::Array(s.args.iter().map(|a| Value::from(a.as_str())).collect()),
                },
            );
        }
        if self.annotations != Annotations::Declared {
            o.push("annotations", self.annotations.as_str());
        }
        Value::Object(o)
    }

    /// The file text: indented JSON and a final newline.
    pub fn to_text(&self) -> String {
        pretty(&self.to_value()) + "\n"
    }
}

/// The value at a dot-separated path inside `v` (object keys; a number indexes a list).
pub fn at_path<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, seg| match v {
        Value::Object(o) => o.get(seg.as_str()),
        Value::Array(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOST_ACK: &str = r#"{
      "schema_version": 1, "world": "mcp", "name": "m", "title": "T", "seed": 42,
      "rules": [{"name": "lost", "tool": "create_*", "kind": "response_lost", "calls": [1]}],
      "delivery": {"lost": "no_answer"},
      "effects": [{"tool": "create_*", "effect": "shipment", "key": "order_id", "commit_id": "shipment_id"},
                  {"tool": "check_*", "effect": "none"}]
    }"#;

    #[test]
    fn reads_delivery_and_effects() {
        let s = McpScenario::from_text(LOST_ACK).expect("valid");
        assert_eq!(s.delivery_of("lost"), Delivery::NoAnswer);
        assert_eq!(s.delivery_of("other"), Delivery::IsError);
        assert_eq!(s.max_calls, MAX_RECORDED_CALLS);
        assert!(matches!(
            s.commit_of("check_inventory"),
            Some(Commit::Nothing)
        ));
        assert!(matches!(
            s.commit_of("create_shipment"),
            Some(Commit::Effect { .. })
        ));
        assert!(s.commit_of("delete_order").is_none());
        // Written back, it reads the same.
        let again = McpScenario::from_text(&s.to_text()).expect("round trip");
        assert_eq!(again, s);
    }

    #[test]
    fn bad_fields_name_the_path() {
        let cases = [
            (
                LOST_ACK.replace("\"no_answer\"", "\"shrug\""),
                "delivery.lost",
            ),
            (
                LOST_ACK.replace("{\"lost\": \"no_answer\"}", "{\"nope\": \"no_answer\"}"),
                "delivery.nope",
            ),
            (
                LOST_ACK.replace("\"key\": \"order_id\"", "\"key\": \"order..id\""),
                "effects[0].key",
            ),
            (
                LOST_ACK.replace(
                    "\"effect\": \"none\"}",
                    "\"effect\": \"none\", \"key\": \"x\"}",
                ),
                "effects[1].effect",
            ),
            (
                LOST_ACK.replace("\"seed\": 42", "\"seed\": 42, \"max_calls\": 0"),
                "max_calls",
            ),
            (
                LOST_ACK.replace("\"response_lost\"", "\"explode\""),
                "rules[0].kind",
            ),
            // A URL the proxy could not use is refused with the file, not at start.
            (
                LOST_ACK.replace(
                    "\"seed\": 42",
                    "\"seed\": 42, \"server\": {\"url\": \"http://\"}",
                ),
                "server.url",
            ),
            (
                LOST_ACK.replace(
                    "\"seed\": 42",
                    "\"seed\": 42, \"server\": {\"url\": \"https://ops:pw#1@host/mcp\"}",
                ),
                "server.url",
            ),
            (
                LOST_ACK.replace(
                    "\"seed\": 42",
                    "\"seed\": 42, \"server\": {\"url\": \"https://ops:p/w@host/mcp\"}",
                ),
                "server.url",
            ),
        ];
        for (text, path) in cases {
            let e = McpScenario::from_text(&text).expect_err(path);
            assert_eq!(e.path.as_deref(), Some(path), "{e}");
            assert!(!e.to_string().contains("pw"), "{e}");
        }
        let good = LOST_ACK.replace(
            "\"seed\": 42",
            "\"seed\": 42, \"server\": {\"url\": \"https://mcp.example.com/mcp\"}",
        );
        assert!(McpScenario::from_text(&good).is_ok());
    }

    #[test]
    fn paths_walk_objects_and_lists() {
        let v = crate::json::parse(r#"{"a": {"b": [10, {"c": "x"}]}}"#).expect("json");
        let p = |s: &str| s.split('.').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            at_path(&v, &p("a.b.1.c")).and_then(Value::as_str),
            Some("x")
        );
        assert!(at_path(&v, &p("a.z")).is_none());
    }
}
