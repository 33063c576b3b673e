//! Tool specs and the registry: each tool's name, description, typed argument schema, whether
//! it has a side effect, whether it is idempotent, and its own timeout. Arguments are checked
//! against the schema before a call runs; the registry prints each tool as the function-tool
//! JSON schema a model API expects.

use crate::json::{Object, Value};
use crate::obj;

/// The type of an argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// A JSON string.
    String,
    /// A JSON integer.
    Integer,
    /// A JSON number (integer or float).
    Number,
    /// `true` or `false`.
    Boolean,
}

impl ParamType {
    /// The JSON-schema type name.
    pub fn as_str(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
        }
    }

    fn accepts(self, v: &Value) -> bool {
        match self {
            ParamType::String => matches!(v, Value::Str(_)),
            ParamType::Integer => matches!(v, Value::Int(_)),
            ParamType::Number => matches!(v, Value::Int(_) | Value::Float(_)),
            ParamType::Boolean => matches!(v, Value::Bool(_)),
        }
    }
}

/// One argument of a tool. Every argument must be present; a nullable one may be `null`.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Argument name.
    pub name: String,
    /// Its type.
    pub kind: ParamType,
    /// What it means, for the model.
    pub description: String,
    /// Whether `null` is allowed.
    pub nullable: bool,
}

impl Param {
    /// A required, non-nullable argument.
    pub fn new(name: &str, kind: ParamType, description: &str) -> Param {
        Param {
            name: name.into(),
            kind,
            description: description.into(),
            nullable: false,
        }
    }

    /// Allows `null`.
    pub fn nullable(mut self) -> Param {
        self.nullable = true;
        self
    }

    fn schema(&self) -> Value {
        let ty = if self.nullable {
            Value::Array(vec![self.kind.as_str().into(), "null".into()])
        } else {
            self.kind.as_str().into()
        };
        obj! {"type" => ty, "description" => self.description.as_str()}
    }
}

/// A tool as the executor knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// Its arguments, in order.
    pub params: Vec<Param>,
    /// Whether it changes the world (needs approval).
    pub side_effect: bool,
    /// Whether running it twice is safe (allows retries).
    pub idempotent: bool,
    /// Its own deadline in seconds, overriding the executor's default.
    pub timeout: Option<f64>,
    /// The argument schema a tool source gave (an MCP server's `inputSchema`), used instead
    /// of `params` when set: arguments are checked against it ([`super::schema`]).
    pub input_schema: Option<Value>,
}

impl ToolSpec {
    /// A read-only, idempotent tool without arguments or its own timeout.
    pub fn new(name: &str, description: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            params: Vec::new(),
            side_effect: false,
            idempotent: true,
            timeout: None,
            input_schema: None,
        }
    }

    /// Adds an argument.
    pub fn param(mut self, param: Param) -> ToolSpec {
        self.params.push(param);
        self
    }

    /// Marks it as changing the world.
    pub fn side_effect(mut self, side_effect: bool) -> ToolSpec {
        self.side_effect = side_effect;
        self
    }

    /// Whether it is safe to run twice.
    pub fn idempotent(mut self, idempotent: bool) -> ToolSpec {
        self.idempotent = idempotent;
        self
    }

    /// Its own deadline, in seconds.
    pub fn timeout(mut self, seconds: f64) -> ToolSpec {
        self.timeout = Some(seconds);
        self
    }

    /// Its arguments as a JSON Schema the tool source gave (replaces `params`).
    pub fn input_schema(mut self, schema: Value) -> ToolSpec {
        self.input_schema = Some(schema);
        self
    }

    /// The JSON schema of its arguments: the source's own when it gave one, else strict
    /// (every property required, no others).
    pub fn parameters_schema(&self) -> Value {
        if let Some(schema) = &self.input_schema {
            return schema.clone();
        }
        let mut props = Object::new();
        for p in &self.params {
            props.push(p.name.as_str(), p.schema());
        }
        obj! {
            "type" => "object",
            "properties" => props,
            "required" => Value::Array(self.params.iter().map(|p| p.name.as_str().into()).collect()),
            "additionalProperties" => false,
        }
    }

    /// The function-tool object a model API takes.
    pub fn function_tool(&self) -> Value {
        obj! {
            "type" => "function",
            "name" => self.name.as_str(),
            "description" => self.description.as_str(),
            "parameters" => self.parameters_schema(),
            // A source's own schema need not meet strict mode's rules (every property
            // required, no others).
            "strict" => self.input_schema.is_none(),
        }
    }

    /// Parses an arguments text and checks it against the schema. The error says which
    /// argument is wrong and how.
    pub fn check_arguments(&self, text: &str) -> Result<Object, String> {
        let value =
            crate::json::parse(text).map_err(|e| format!("arguments are not valid JSON: {e}"))?;
        let Value::Object(args) = value else {
            return Err(format!(
                "arguments must be a JSON object, not {}",
                value.type_name()
            ));
        };
        if let Some(schema) = &self.input_schema {
            return super::schema::check_arguments(schema, &args).map(|()| args);
        }
        if let Some(p) = self.params.iter().find(|p| !args.contains_key(&p.name)) {
            return Err(format!(
                "missing argument {:?} ({}{})",
                p.name,
                p.kind.as_str(),
                if p.nullable { " or null" } else { "" }
            ));
        }
        if let Some(extra) = args.keys().find(|k| {
            k.as_str()
                .is_none_or(|k| !self.params.iter().any(|p| p.name == k))
        }) {
            return Err(format!(
                "unexpected argument {:?}; {} takes {}",
                extra.to_lossy(),
                self.name,
                self.params
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        for p in &self.params {
            let v = args.get(&p.name).unwrap_or(&Value::Null);
            let ok = p.kind.accepts(v) || (p.nullable && v.is_null());
            if !ok {
                return Err(format!(
                    "argument {:?} must be {}{}, not {}",
                    p.name,
                    p.kind.as_str(),
                    if p.nullable { " or null" } else { "" },
                    v.type_name()
                ));
            }
        }
        Ok(args)
    }
}

/// The tools an executor may run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Registry {
    tools: Vec<ToolSpec>,
    /// Each name's place in `tools`: a server with thousands of tools is read, and its tools
    /// looked up, in time linear in their number.
    by_name: std::collections::BTreeMap<String, usize>,
}

impl Registry {
    /// A registry of these tools (later duplicates of a name are ignored).
    pub fn new(tools: impl IntoIterator<Item = ToolSpec>) -> Registry {
        let mut out: Vec<ToolSpec> = Vec::new();
        let mut by_name = std::collections::BTreeMap::new();
        for t in tools {
            if let std::collections::btree_map::Entry::Vacant(e) = by_name.entry(t.name.clone()) {
                e.insert(out.len());
                out.push(t);
            }
        }
        Registry {
            tools: out,
            by_name,
        }
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.by_name.get(name).map(|i| &self.tools[*i])
    }

    /// Every tool, in order.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// Tool names, in order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name.clone()).collect()
    }

    /// The same registry without side-effecting tools.
    pub fn read_only(&self) -> Registry {
        Registry::new(self.tools.iter().filter(|t| !t.side_effect).cloned())
    }

    /// Every tool's function-tool object, as a list.
    pub fn function_tools(&self) -> Value {
        Value::Array(self.tools.iter().map(ToolSpec::function_tool).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc_tool() -> ToolSpec {
        ToolSpec::new("get_doc_section", "Reads a doc section.")
            .param(Param::new("doc_id", ParamType::String, "Doc id."))
            .param(Param::new("heading", ParamType::String, "Heading.").nullable())
    }

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let t = doc_tool();
        assert!(
            t.check_arguments(r#"{"doc_id":"a","heading":null}"#)
                .is_ok()
        );
        let bad = [
            ("{", "not valid JSON"),
            ("[1]", "must be a JSON object"),
            (r#"{"doc_id":"a"}"#, "missing argument \"heading\""),
            (
                r#"{"doc_id":1,"heading":null}"#,
                "\"doc_id\" must be string",
            ),
            (
                r#"{"doc_id":"a","heading":null,"x":1}"#,
                "unexpected argument \"x\"",
            ),
        ];
        for (text, want) in bad {
            let e = t.check_arguments(text).expect_err(text);
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn function_tool_schema_is_strict() {
        let v = doc_tool().function_tool();
        assert_eq!(
            crate::json::compact(&v),
            r#"{"type":"function","name":"get_doc_section","description":"Reads a doc section.","parameters":{"type":"object","properties":{"doc_id":{"type":"string","description":"Doc id."},"heading":{"type":["string","null"],"description":"Heading."}},"required":["doc_id","heading"],"additionalProperties":false},"strict":true}"#
        );
    }
}
