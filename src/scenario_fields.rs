//! The fields every scenario file shares, whatever its world (shipping, orbit, mcp): the
//! object's keys, `schema_version`, `world`, the story's texts, `seed` and `rules` — read with
//! the same checks and the same messages (`Invalid scenario file` at a JSON path, with why).

use std::collections::HashSet;

use crate::error::ConfigError;
use crate::json::{Object, Value};
use crate::printable::quoted;
use crate::rule::{Rule, require_keys};
use crate::storm::{MAX_RULES, MAX_SAFE_SEED};

/// The scenario file format version.
pub const SCHEMA_VERSION: i64 = 1;

/// `Invalid scenario file` at `key`, because `why`.
pub fn invalid(key: &str, why: &str) -> ConfigError {
    ConfigError::new("Invalid scenario file")
        .at(key)
        .because(why)
}

/// The top-level object with exactly the allowed keys, `schema_version` 1 and `world` equal to
/// `world`; missing or unknown keys are `Invalid scenario file` naming the key.
pub fn head<'a>(
    v: &'a Value,
    required: &[&str],
    optional: &[&str],
    world: &str,
) -> Result<&'a Object, ConfigError> {
    let o = require_keys(v, required, optional).map_err(as_invalid)?;
    if !matches!(o.get("schema_version"), Some(Value::Int(i)) if i.as_i64() == Some(SCHEMA_VERSION))
    {
        return Err(invalid("schema_version", "expected 1"));
    }
    if text_field(o, "world", true)? != world {
        return Err(invalid("world", &format!("expected {world:?}")));
    }
    Ok(o)
}

/// A key-set error from [`require_keys`] restated as `Invalid scenario file`.
pub fn as_invalid(e: ConfigError) -> ConfigError {
    ConfigError {
        message: "Invalid scenario file",
        path: e.path,
        detail: e.detail.or(Some(e.message.into())),
    }
}

/// A text field: required ones must be non-empty strings; optional ones default to empty.
pub fn text_field(o: &Object, key: &str, required: bool) -> Result<String, ConfigError> {
    match o.get(key) {
        None if !required => Ok(String::new()),
        Some(Value::Str(t)) if !required || !t.is_empty() => Ok(t.to_lossy()),
        _ => Err(invalid(
            key,
            if required {
                "expected a non-empty string"
            } else {
                "expected a string"
            },
        )),
    }
}

/// `seed`: an integer in the engine's (JavaScript-safe) range.
pub fn seed_field(o: &Object) -> Result<i64, ConfigError> {
    match o.get("seed") {
        Some(Value::Int(i)) => i.as_i64().filter(|s| s.abs() <= MAX_SAFE_SEED),
        _ => None,
    }
    .ok_or_else(|| {
        invalid(
            "seed",
            "expected an integer between -9007199254740991 and 9007199254740991",
        )
    })
}

/// `rules`: at most 100 valid rule objects with unique names (errors name the rule's index
/// and field). Returns the rule objects as written.
pub fn rule_list(o: &Object) -> Result<Vec<Value>, ConfigError> {
    let Some(Value::Array(rule_values)) = o.get("rules") else {
        return Err(invalid("rules", "expected a list of rule objects"));
    };
    if rule_values.len() > MAX_RULES {
        return Err(invalid("rules", "at most 100 rules"));
    }
    let mut names = HashSet::new();
    for (i, r) in rule_values.iter().enumerate() {
        let rule = Rule::from_value(r).map_err(|e| e.within(&format!("rules[{i}]")))?;
        if !names.insert(rule.name.clone()) {
            return Err(invalid(
                &format!("rules[{i}].name"),
                &format!("duplicate rule name \"{}\"", quoted(&rule.name.to_lossy())),
            ));
        }
    }
    Ok(rule_values.clone())
}

/// Validates rule objects (as kept by a scenario) into rules; errors name `rules[i]`.
pub fn rules(values: &[Value]) -> Result<Vec<Rule>, ConfigError> {
    values
        .iter()
        .enumerate()
        .map(|(i, r)| Rule::from_value(r).map_err(|e| e.within(&format!("rules[{i}]"))))
        .collect()
}

/// What every scenario file tells people, in every world: a title, an incident code and
/// category, what happens and what to learn from it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Story {
    /// Title (`Lost acknowledgement`); required.
    pub title: String,
    /// Incident code (`INC-001`).
    pub code: String,
    /// Category (`SIDE EFFECTS`).
    pub category: String,
    /// What happens.
    pub description: String,
    /// What to learn from it.
    pub lesson: String,
}

impl Story {
    /// Reads the story's fields of a scenario document.
    pub fn from_object(o: &Object) -> Result<Story, ConfigError> {
        Ok(Story {
            title: text_field(o, "title", true)?,
            code: text_field(o, "code", false)?,
            category: text_field(o, "category", false)?,
            description: text_field(o, "description", false)?,
            lesson: text_field(o, "lesson", false)?,
        })
    }

    /// Appends the story's fields, in the files' order.
    pub fn push_into(&self, o: &mut Object) {
        o.push("title", self.title.as_str());
        o.push("code", self.code.as_str());
        o.push("category", self.category.as_str());
        o.push("description", self.description.as_str());
        o.push("lesson", self.lesson.as_str());
    }
}
