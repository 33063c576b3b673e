//! Checking arguments against a JSON Schema a tool source gave (an MCP server's
//! `inputSchema`), before the call goes out: a mistake the model made comes back as
//! `bad_args` naming the argument, and the server is not bothered with it.
//!
//! The keywords that catch a model's mistakes are checked: `type` (one or a list),
//! `properties`, `required`, `additionalProperties` (false, or a schema), `items`, `enum`,
//! `const`, `minLength`/`maxLength`, `minimum`/`maximum`, `minItems`/`maxItems`, and the
//! combinators `anyOf`/`oneOf` (some alternative fits) and `allOf` (all fit). Other keywords
//! (`$ref`, `pattern`, `format`, `patternProperties`, ...) are left to the server, which is the
//! authority: its own refusal is classified `bad_args` too. A schema that is not an object
//! checks nothing.
//!
//! Where servers are lenient, so are we — a false `bad_args` would keep a good call from
//! ever running: a string that parses as the wanted type (`"3"` for an integer, `"[1]"` for an
//! array: pydantic's lax mode takes them) passes, `nullable: true` allows `null`, and keys
//! `patternProperties` might match are not called unexpected.

use crate::json::{Object, Value};

/// Most nesting followed; deeper parts of a value are left to the server.
const MAX_DEPTH: usize = 32;

/// Checks `args` (a call's arguments object) against `schema`; the error names the argument
/// and what is wrong, as [`super::ToolSpec::check_arguments`] words it.
pub fn check_arguments(schema: &Value, args: &Object) -> Result<(), String> {
    check(schema, &Value::Object(args.clone()), "", 0)
}

fn label(path: &str) -> String {
    if path.is_empty() {
        "the arguments".to_owned()
    } else {
        format!("argument {path:?}")
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Whether `v` is of JSON Schema type `ty` (an integer-valued float is an integer).
fn is_type(v: &Value, ty: &str) -> bool {
    match ty {
        "null" => v.is_null(),
        "boolean" => matches!(v, Value::Bool(_)),
        "integer" => match v {
            Value::Int(_) => true,
            Value::Float(f) => f.fract() == 0.0,
            _ => false,
        },
        "number" => matches!(v, Value::Int(_) | Value::Float(_)),
        "string" => matches!(v, Value::Str(_)),
        "array" => matches!(v, Value::Array(_)),
        "object" => matches!(v, Value::Object(_)),
        // A type we do not know: the server decides.
        _ => true,
    }
}

fn number(s: &Object, key: &str) -> Option<f64> {
    s.get(key)
        .filter(|v| !matches!(v, Value::Bool(_)))
        .and_then(Value::as_number_f64)
}

fn check(schema: &Value, v: &Value, path: &str, depth: usize) -> Result<(), String> {
    let Some(s) = schema.as_object() else {
        return Ok(());
    };
    if depth > MAX_DEPTH {
        return Ok(());
    }
    if let Some(ty) = s.get("type") {
        let types: Vec<&str> = match ty {
            Value::Str(_) => ty.as_str().into_iter().collect(),
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let nullable = s.get("nullable").and_then(Value::as_bool) == Some(true) && v.is_null();
        let lax = v
            .as_str()
            .and_then(|t| crate::json::parse(t).ok())
            .is_some_and(|parsed| types.iter().any(|t| *t != "string" && is_type(&parsed, t)));
        if !types.is_empty() && !types.iter().any(|t| is_type(v, t)) && !nullable && !lax {
            return Err(format!(
                "{} must be {}, not {}",
                label(path),
                types.join(" or "),
                v.type_name()
            ));
        }
    }
    if let Some(Value::Array(options)) = s.get("enum")
        && !options.iter().any(|o| o.py_eq(v))
    {
        let shown: Vec<String> = options.iter().take(10).map(crate::json::compact).collect();
        return Err(format!(
            "{} must be one of {}",
            label(path),
            shown.join(", ")
        ));
    }
    if let Some(c) = s.get("const")
        && !c.py_eq(v)
    {
        return Err(format!(
            "{} must be {}",
            label(path),
            crate::json::compact(c)
        ));
    }
    for (key, alternatives) in [("anyOf", true), ("oneOf", true), ("allOf", false)] {
        let Some(Value::Array(parts)) = s.get(key) else {
            continue;
        };
        let results: Vec<Result<(), String>> =
            parts.iter().map(|p| check(p, v, path, depth + 1)).collect();
        if alternatives {
            if !results.is_empty() && results.iter().all(Result::is_err) {
                let first = results
                    .into_iter()
                    .find_map(Result::err)
                    .unwrap_or_default();
                return Err(format!("{} fits none of its forms ({first})", label(path)));
            }
        } else if let Some(e) = results.into_iter().find_map(Result::err) {
            return Err(e);
        }
    }
    match v {
        Value::Object(o) => check_object(s, o, path, depth),
        Value::Array(items) => {
            let n = items.len() as f64;
            if number(s, "minItems").is_some_and(|m| n < m) {
                return Err(format!("{} has too few items", label(path)));
            }
            if number(s, "maxItems").is_some_and(|m| n > m) {
                return Err(format!("{} has too many items", label(path)));
            }
            if let Some(item) = s.get("items").filter(|i| i.as_object().is_some()) {
                for (i, x) in items.iter().enumerate() {
                    check(item, x, &format!("{path}[{i}]"), depth + 1)?;
                }
            }
            Ok(())
        }
        Value::Str(t) => {
            let n = t.to_lossy().chars().count() as f64;
            if number(s, "minLength").is_some_and(|m| n < m) {
                return Err(format!("{} is too short", label(path)));
            }
            if number(s, "maxLength").is_some_and(|m| n > m) {
                return Err(format!("{} is too long", label(path)));
            }
            Ok(())
        }
        Value::Int(_) | Value::Float(_) => {
            let x = v.as_number_f64().unwrap_or(0.0);
            if let Some(m) = number(s, "minimum").filter(|m| x < *m) {
                return Err(format!(
                    "{} must be at least {}",
                    label(path),
                    crate::error::format_g(m)
                ));
            }
            if let Some(m) = number(s, "maximum").filter(|m| x > *m) {
                return Err(format!(
                    "{} must be at most {}",
                    label(path),
                    crate::error::format_g(m)
                ));
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) => Ok(()),
    }
}

fn check_object(s: &Object, o: &Object, path: &str, depth: usize) -> Result<(), String> {
    let props = s.get("properties").and_then(Value::as_object);
    if let Some(Value::Array(required)) = s.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !o.contains_key(name) {
                let ty = props
                    .and_then(|p| p.get(name))
                    .and_then(Value::as_object)
                    .and_then(|p| p.get("type"))
                    .map(crate::json::compact);
                return Err(match ty {
                    Some(t) => format!("missing argument {:?} ({t})", join(path, name)),
                    None => format!("missing argument {:?}", join(path, name)),
                });
            }
        }
    }
    // Keys a pattern may match are the server's to judge.
    let extra = s
        .get("additionalProperties")
        .filter(|_| !s.contains_key("patternProperties") && !s.contains_key("propertyNames"));
    for (key, value) in o.iter() {
        let name = key.to_lossy();
        match props.and_then(|p| p.get(&name)) {
            Some(p) => check(p, value, &join(path, &name), depth + 1)?,
            None => match extra {
                Some(Value::Bool(false)) => {
                    let known: Vec<String> = props
                        .map(|p| p.keys().map(|k| k.to_lossy()).collect())
                        .unwrap_or_default();
                    return Err(format!(
                        "unexpected argument {:?}; {} takes {}",
                        join(path, &name),
                        if path.is_empty() {
                            "the tool".to_owned()
                        } else {
                            format!("{path:?}")
                        },
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ));
                }
                Some(extra @ Value::Object(_)) => {
                    check(extra, value, &join(path, &name), depth + 1)?
                }
                _ => {}
            },
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn schema() -> Value {
        parse(
            r#"{"type": "object",
                "properties": {
                    "path": {"type": "string", "minLength": 1},
                    "mode": {"enum": ["r", "w"]},
                    "count": {"type": "integer", "minimum": 1, "maximum": 10},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                    "opt": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    "inner": {"type": "object", "properties": {"x": {"type": "number"}},
                              "required": ["x"], "additionalProperties": false}
                },
                "required": ["path"],
                "additionalProperties": false}"#,
        )
        .expect("schema")
    }

    fn args(text: &str) -> Object {
        match parse(text).expect("args") {
            Value::Object(o) => o,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn arguments_that_fit_pass() {
        let s = schema();
        for ok in [
            r#"{"path": "a"}"#,
            r#"{"path": "a", "mode": "w", "count": 3, "tags": ["x"], "opt": null}"#,
            r#"{"path": "a", "count": 3.0, "opt": "s", "inner": {"x": 1.5}}"#,
            // Lax, as servers are: a number written as a string, a list as JSON text.
            r#"{"path": "a", "count": "3", "tags": "[\"x\"]"}"#,
        ] {
            assert_eq!(check_arguments(&s, &args(ok)), Ok(()), "{ok}");
        }
    }

    #[test]
    fn each_mistake_is_named() {
        let s = schema();
        let cases = [
            (r#"{}"#, "missing argument \"path\" (\"string\")"),
            (
                r#"{"path": 1}"#,
                "argument \"path\" must be string, not integer",
            ),
            (r#"{"path": ""}"#, "argument \"path\" is too short"),
            (
                r#"{"path": "a", "mode": "x"}"#,
                "must be one of \"r\", \"w\"",
            ),
            (r#"{"path": "a", "count": 0}"#, "must be at least 1"),
            (
                r#"{"path": "a", "count": 1.5}"#,
                "must be integer, not float",
            ),
            (
                r#"{"path": "a", "count": "x"}"#,
                "must be integer, not string",
            ),
            (
                r#"{"path": "a", "tags": [1]}"#,
                "argument \"tags[0]\" must be string",
            ),
            (
                r#"{"path": "a", "tags": ["a", "b", "c"]}"#,
                "too many items",
            ),
            (r#"{"path": "a", "opt": 3}"#, "fits none of its forms"),
            (
                r#"{"path": "a", "inner": {}}"#,
                "missing argument \"inner.x\"",
            ),
            (
                r#"{"path": "a", "inner": {"x": 1, "y": 2}}"#,
                "unexpected argument \"inner.y\"",
            ),
            (
                r#"{"path": "a", "zzz": 1}"#,
                "unexpected argument \"zzz\"; the tool takes path",
            ),
        ];
        for (text, want) in cases {
            let e = check_arguments(&s, &args(text)).expect_err(text);
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn keywords_we_do_not_check_are_left_to_the_server() {
        let s =
            parse(r##"{"type": "object", "properties": {"p": {"$ref": "#/x", "pattern": "^z"}}}"##)
                .expect("schema");
        assert_eq!(check_arguments(&s, &args(r#"{"p": "a", "q": 1}"#)), Ok(()));
        assert_eq!(
            check_arguments(&Value::Bool(true), &args(r#"{"q": 1}"#)),
            Ok(())
        );
    }
}
