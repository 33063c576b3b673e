//! JSON-RPC on the stdio transport, as far as the proxy and the replay server need it: one
//! message per line; a line is read only to know what it is (a request, a notification, a
//! response, or something else) and is otherwise passed on as the bytes it arrived as. The
//! answers the proxy makes itself (injected failures) are built here.

use crate::json::{Object, Value, canonical, compact, parse};
use crate::obj;

/// The most bytes of one message the proxy reads into its parts; a longer line is relayed
/// untouched (and noted) — it is still passed on, never dropped.
pub const MAX_PARSED_LINE: usize = 8_000_000;

/// The `_meta` key under which a server lists the effects a `tools/call` committed — the MCP
/// twin of `storm.effect(name, key)`: `{"dev.toolstorm/effects": [{"name": "shipment",
/// "key": "o-1"}]}` in the result's `_meta`.
pub const EFFECTS_META_KEY: &str = "dev.toolstorm/effects";
/// The `_meta` key of an answer the proxy made up: which rule and fault produced it.
pub const FAULT_META_KEY: &str = "dev.toolstorm/fault";
/// The 2026-07-28 per-request `_meta` key carrying the protocol version.
pub const VERSION_META_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// A request or response id, compared as its canonical JSON (`1` and `"1"` differ).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(pub String);

impl Id {
    /// The id of a parsed message.
    pub fn of(v: &Value) -> Id {
        Id(canonical(v))
    }

    /// The id as JSON.
    pub fn to_value(&self) -> Value {
        parse(&self.0).unwrap_or(Value::Null)
    }
}

/// What one line is.
#[derive(Clone, Debug)]
pub enum Message {
    /// A request: it has a `method` and an `id`.
    Request {
        /// The id.
        id: Id,
        /// The method.
        method: String,
        /// The params (null when absent).
        params: Value,
    },
    /// A notification: a `method` and no `id`.
    Notification {
        /// The method.
        method: String,
        /// The params (null when absent).
        params: Value,
    },
    /// A response: an `id` and a `result` or an `error`.
    Response {
        /// The id it answers.
        id: Id,
        /// The whole message.
        message: Value,
    },
    /// Not a JSON-RPC message we can read (not JSON, too deep, too long, a batch, ...): relayed
    /// untouched. The text says why, for the log.
    Other(String),
}

/// Reads a line (without its line ending).
pub fn classify(line: &[u8]) -> Message {
    if line.len() > MAX_PARSED_LINE {
        return Message::Other(format!("a message of {} bytes", line.len()));
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Message::Other("a line that is not UTF-8".into());
    };
    let value = match parse(text) {
        Ok(v) => v,
        Err(e) => return Message::Other(format!("a line that is not JSON we can read ({e})")),
    };
    let Value::Object(o) = value else {
        return Message::Other(format!(
            "a JSON {} instead of a message object",
            value.type_name()
        ));
    };
    let method = o.get("method").and_then(Value::as_str).map(str::to_owned);
    let id = o.get("id").map(Id::of);
    let params = o.get("params").cloned().unwrap_or(Value::Null);
    match (method, id) {
        (Some(method), Some(id)) => Message::Request { id, method, params },
        (Some(method), None) => Message::Notification { method, params },
        (None, Some(id)) if o.contains_key("result") || o.contains_key("error") => {
            Message::Response {
                id,
                message: Value::Object(o),
            }
        }
        _ => Message::Other(
            "an object that is neither a request, a notification nor a response".into(),
        ),
    }
}

/// A response line answering `id` with `result`.
pub fn result_line(id: &Id, result: Value) -> Vec<u8> {
    line(obj! {"jsonrpc" => "2.0", "id" => id.to_value(), "result" => result})
}

/// A response line answering `id` with a JSON-RPC error.
pub fn error_line(id: &Id, code: i64, message: &str, data: Option<Value>) -> Vec<u8> {
    let mut e = Object::new();
    e.push("code", code);
    e.push("message", message);
    if let Some(d) = data {
        e.push("data", d);
    }
    line(obj! {"jsonrpc" => "2.0", "id" => id.to_value(), "error" => Value::Object(e)})
}

/// A response line answering `id` with a recorded response body (its `result` or `error`).
pub fn response_line(id: &Id, body: &Value) -> Vec<u8> {
    let mut o = Object::new();
    o.push("jsonrpc", "2.0");
    o.push("id", id.to_value());
    if let Some(b) = body.as_object() {
        for (k, v) in b.iter() {
            if k.as_str().is_some_and(|k| k == "result" || k == "error") {
                o.push(k.clone(), v.clone());
            }
        }
    }
    line(Value::Object(o))
}

/// A notification line.
pub fn notification_line(method: &str, params: Value) -> Vec<u8> {
    line(obj! {"jsonrpc" => "2.0", "method" => method, "params" => params})
}

fn line(v: Value) -> Vec<u8> {
    let mut bytes = compact(&v).into_bytes();
    bytes.push(b'\n');
    bytes
}

/// A `tools/call` result holding only text, flagged as an error or not.
pub fn text_result(text: &str, is_error: bool) -> Value {
    let mut o = Object::new();
    o.push(
        "content",
        Value::Array(vec![obj! {"type" => "text", "text" => text}]),
    );
    if is_error {
        o.push("isError", true);
    }
    Value::Object(o)
}

/// The protocol version a request names in its `_meta` (2026-07-28 and later).
pub fn request_version(params: &Value) -> Option<String> {
    params
        .as_object()?
        .get("_meta")?
        .as_object()?
        .get(VERSION_META_KEY)?
        .as_str()
        .map(str::to_owned)
}

/// Whether a protocol version has no `initialize` and marks every result with `resultType`.
pub fn is_stateless(version: &str) -> bool {
    version.as_bytes().first().is_some_and(u8::is_ascii_digit) && version >= "2026-07-28"
        || version.starts_with("DRAFT-2026")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_lines() {
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}"#),
            Message::Request { method, .. } if method == "tools/call"
        ));
        assert!(matches!(
            classify(
                br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#
            ),
            Message::Notification { .. }
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Message::Response { id, .. } if id == Id("\"a\"".into())
        ));
        assert!(matches!(classify(b"not json"), Message::Other(_)));
        assert!(matches!(classify(b"[1,2]"), Message::Other(_)));
        assert!(matches!(classify(b"{\"id\":1}"), Message::Other(_)));
    }

    #[test]
    fn ids_keep_their_type() {
        assert_ne!(Id::of(&Value::from(1)), Id::of(&Value::from("1")));
        let line = result_line(&Id::of(&Value::from("q-1")), obj! {});
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"id\":\"q-1\",\"result\":{}}\n".to_vec()
        );
    }

    #[test]
    fn versions() {
        assert!(is_stateless("2026-07-28"));
        assert!(is_stateless("DRAFT-2026-v1"));
        assert!(!is_stateless("2025-11-25"));
        assert!(!is_stateless("2025-06-18"));
    }
}
