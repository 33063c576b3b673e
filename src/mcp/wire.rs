//! JSON-RPC on the stdio transport, as far as the proxy and the replay server need it: one
//! message per line; a line is read only to know what it is (a request, a notification, a
//! response, or something else) and is otherwise passed on as the bytes it arrived as. The
//! answers the proxy makes itself (injected failures) are built here.

use crate::json::tolerant::{skip_ws, string_end, value_end};
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
/// The key, in the `data` of an error the proxy answers in the server's place, that says the
/// request reached the server and its answer was lost on the way (`"unknown"`): the outcome
/// is unknown, the server may have committed.
pub const OUTCOME_DATA_KEY: &str = "dev.toolstorm/outcome";
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
    /// A request JSON-RPC calls invalid (-32600): an `id` that is null, an object, an array, a
    /// boolean or a fraction, or no `"jsonrpc": "2.0"`. No answer could be routed back to it
    /// by its id, and servers drop it unanswered, so the proxy answers it at once instead of
    /// relaying it for a client to wait on. The text says what is wrong.
    Invalid(String),
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
    let Value::Object(mut o) = value else {
        return Message::Other(format!(
            "a JSON {} instead of a message object",
            value.type_name()
        ));
    };
    let method = o.get("method").and_then(Value::as_str).map(str::to_owned);
    let id = o.get("id").map(Id::of);
    if method.is_some()
        && let Some(why) = request_flaw(&o)
    {
        return Message::Invalid(why);
    }
    match (method, id) {
        (Some(method), Some(id)) => Message::Request {
            id,
            method,
            params: o.remove("params").unwrap_or(Value::Null),
        },
        (Some(method), None) => Message::Notification {
            method,
            params: o.remove("params").unwrap_or(Value::Null),
        },
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

/// What makes a request (an object with a `method`) invalid, if anything: its `id`, when it
/// has one, must be a string or a whole number, and its `jsonrpc` must be `"2.0"`.
fn request_flaw(o: &crate::json::Object) -> Option<String> {
    if let Some(id) = o.get("id") {
        let flaw = match id {
            Value::Str(_) | Value::Int(_) => None,
            Value::Float(f) if f.fract() == 0.0 => None,
            Value::Float(_) => Some("a fraction".to_owned()),
            Value::Null => Some("null".to_owned()),
            other => Some(format!(
                "{} {}",
                article(other.type_name()),
                other.type_name()
            )),
        };
        if let Some(flaw) = flaw {
            return Some(format!(
                "the request's id is {flaw} (an id is a string or a whole number)"
            ));
        }
    }
    match o.get("jsonrpc").and_then(Value::as_str) {
        Some("2.0") => None,
        Some(v) => Some(format!(
            "the request says \"jsonrpc\": {:?}, not \"2.0\"",
            crate::printable::line(v)
        )),
        None => Some("the request has no \"jsonrpc\": \"2.0\"".to_owned()),
    }
}

fn article(noun: &str) -> &'static str {
    match noun.as_bytes().first() {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => "an",
        _ => "a",
    }
}

/// A response line answering `id` with `result`.
pub fn result_line(id: &Id, result: Value) -> Vec<u8> {
    result_line_as(&id.0, result)
}

/// A response line answering the request whose id is the JSON text `raw_id` (given back
/// exactly as the client wrote it: `1e3` stays `1e3`).
pub fn result_line_as(raw_id: &str, result: Value) -> Vec<u8> {
    answer_as(raw_id, "result", result)
}

/// A response line answering `id` with a JSON-RPC error.
pub fn error_line(id: &Id, code: i64, message: &str, data: Option<Value>) -> Vec<u8> {
    error_line_as(&id.0, code, message, data)
}

/// [`error_line`] for the request whose id is the JSON text `raw_id`.
pub fn error_line_as(raw_id: &str, code: i64, message: &str, data: Option<Value>) -> Vec<u8> {
    let mut e = Object::new();
    e.push("code", code);
    e.push("message", message);
    if let Some(d) = data {
        e.push("data", d);
    }
    answer_as(raw_id, "error", Value::Object(e))
}

fn answer_as(raw_id: &str, key: &str, body: Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(raw_id.as_bytes());
    out.extend_from_slice(b",\"");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
    out.extend_from_slice(compact(&body).as_bytes());
    out.extend_from_slice(b"}\n");
    out
}

/// Every top-level member of the JSON object in `bytes`, in one pass: (key text as written,
/// value range). Stops at the first thing that is not a member (or the end of `bytes`).
pub fn members(bytes: &[u8]) -> Vec<(&[u8], std::ops::Range<usize>)> {
    Members::new(bytes).collect()
}

/// The byte range of the value of the top-level member `key` of the JSON object in `bytes`,
/// found without parsing the rest (the scan stops there): for messages we cannot read whole
/// (too long, too deep, not UTF-8) and for the exact text of an id. A key written with escapes
/// is not recognised; a value cut off by the end of `bytes` ends there.
pub fn member(bytes: &[u8], key: &str) -> Option<std::ops::Range<usize>> {
    Members::new(bytes)
        .find(|(k, _)| *k == key.as_bytes())
        .map(|(_, r)| r)
}

/// The top-level members of a JSON object's text, one at a time.
struct Members<'a> {
    bytes: &'a [u8],
    /// Where the next member starts; none once the object (or what is readable of it) ended.
    at: Option<usize>,
}

impl<'a> Members<'a> {
    fn new(bytes: &'a [u8]) -> Members<'a> {
        let i = skip_ws(bytes, 0);
        let at = (bytes.get(i) == Some(&b'{')).then_some(i + 1);
        Members { bytes, at }
    }
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a [u8], std::ops::Range<usize>);

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = self.bytes;
        let mut i = skip_ws(bytes, self.at.take()?);
        if bytes.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(bytes, i)?;
        let name = &bytes[i + 1..key_end - 1];
        i = skip_ws(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(bytes, i + 1);
        let end = value_end(bytes, i);
        let after = skip_ws(bytes, end);
        if bytes.get(after) == Some(&b',') {
            self.at = Some(after + 1);
        }
        Some((name, i..end))
    }
}

/// The byte ranges of the elements of the JSON array in `bytes` (a batch), found without
/// parsing them; none when `bytes` is no array. Stops at the first thing that is not an
/// element (or the end of `bytes`).
pub fn elements(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'[') {
        return out;
    }
    i = skip_ws(bytes, i + 1);
    while i < bytes.len() && bytes[i] != b']' {
        let end = value_end(bytes, i);
        if end <= i {
            break;
        }
        out.push(i..end);
        i = skip_ws(bytes, end);
        match bytes.get(i) {
            Some(b',') => i = skip_ws(bytes, i + 1),
            _ => break,
        }
    }
    out
}

/// A message we cannot read whole (too long, too deep), known by its top-level members found
/// by a scan: a request or notification by a `method` that is a plain string (and its `id`),
/// an answer by its `id` beside a `result` or an `error`. What else it holds is not read
/// (`params` and the answer are null here): the relay judges and records it summarised.
pub fn unread_message(line: &[u8]) -> Option<Message> {
    let (mut id, mut method, mut answer, mut params) = (None, None, false, None);
    for (key, range) in Members::new(line) {
        match key {
            b"id" => id = Some(range),
            b"method" => method = Some(range),
            b"params" => params = Some(range),
            b"result" | b"error" => answer = true,
            _ => {}
        }
    }
    let value = |r: std::ops::Range<usize>| {
        std::str::from_utf8(&line[r])
            .ok()
            .and_then(|t| parse(t).ok())
    };
    let id = match id {
        Some(r) => Some(Id::of(&value(r)?)),
        None => None,
    };
    let Some(method) = method else {
        return Some(Message::Response {
            id: id.filter(|_| answer)?,
            message: Value::Null,
        });
    };
    let Value::Str(method) = value(method)? else {
        return None;
    };
    // Of the params, only their `_meta` (a progress token, a protocol version) is read.
    let params = params
        .and_then(|r| {
            let m = member(&line[r.clone()], "_meta")?;
            let meta = value(r.start + m.start..r.start + m.end)?;
            matches!(meta, Value::Object(_)).then(|| obj! {"_meta" => meta})
        })
        .unwrap_or(Value::Null);
    let method = method.to_lossy();
    Some(match id {
        Some(id) => Message::Request { id, method, params },
        None => Message::Notification { method, params },
    })
}

/// Whether `bytes` are one well-formed JSON text as other JSON readers take it (RFC 8259),
/// whatever [`classify`]'s stricter reader makes of it (nested deeper than it reads, a key
/// written twice): such a message goes on, known by its members, where a broken one is refused.
/// Strings are not checked for UTF-8 (such a message goes on too, as on stdio).
pub fn is_json(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

/// The id of an answer we cannot read whole ([`unread_message`]).
pub fn unread_answer_id(line: &[u8]) -> Option<Id> {
    match unread_message(line)? {
        Message::Response { id, .. } => Some(id),
        _ => None,
    }
}

/// The byte range of an `"id"` member written last in a JSON object, found from the object's
/// end (`..., "id": 5}`): for a message too long to read whose id comes after its body, as the
/// TypeScript SDK writes them. `bytes` is the object's tail; a string id with escaped quotes is
/// not recognised.
pub fn tail_id(bytes: &[u8]) -> Option<std::ops::Range<usize>> {
    let mut end = bytes.len();
    while end > 0 && matches!(bytes[end - 1], b' ' | b'\t' | b'\r' | b'\n') {
        end -= 1;
    }
    if end == 0 || bytes[end - 1] != b'}' {
        return None;
    }
    end -= 1;
    while end > 0 && matches!(bytes[end - 1], b' ' | b'\t' | b'\r' | b'\n') {
        end -= 1;
    }
    let start = if end > 0 && bytes[end - 1] == b'"' {
        let open = bytes[..end - 1].iter().rposition(|b| *b == b'"')?;
        if open > 0 && bytes[open - 1] == b'\\' {
            return None;
        }
        open
    } else {
        bytes[..end]
            .iter()
            .rposition(|b| matches!(b, b':' | b' ' | b'\t' | b'\r' | b'\n'))?
            + 1
    };
    let mut colon = start;
    while colon > 0 && matches!(bytes[colon - 1], b' ' | b'\t' | b'\r' | b'\n') {
        colon -= 1;
    }
    if colon == 0 || bytes[colon - 1] != b':' {
        return None;
    }
    let mut key_end = colon - 1;
    while key_end > 0 && matches!(bytes[key_end - 1], b' ' | b'\t' | b'\r' | b'\n') {
        key_end -= 1;
    }
    (key_end >= 4 && &bytes[key_end - 4..key_end] == b"\"id\"" && start < end).then_some(start..end)
}

/// The string value of the top-level member `key`, when it is a plain string.
pub fn member_str(bytes: &[u8], key: &str) -> Option<String> {
    let r = member(bytes, key)?;
    let text = std::str::from_utf8(&bytes[r]).ok()?;
    match parse(text).ok()? {
        Value::Str(t) => Some(t.to_lossy()),
        _ => None,
    }
}

/// The tool a `tools/call` line we cannot read whole names, and its arguments' bytes (none
/// when it gives none), found by a scan: the recorder summarises those bytes and replay
/// compares them, so both read them here.
pub fn call_parts(line: &[u8]) -> Option<(String, &[u8])> {
    let params = &line[member(line, "params")?];
    let tool = member_str(params, "name")?;
    let arguments = member(params, "arguments").map_or(&params[..0], |r| &params[r]);
    Some((tool, arguments))
}

/// Whether `head` (a file's first bytes) is a JSON object whose top-level `kind` is `kind`.
pub fn is_of_kind(head: &[u8], kind: &str) -> bool {
    member_str(head, "kind").as_deref() == Some(kind)
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

/// The protocol versions the proxy knows how to frame (and the 2026 drafts).
pub const KNOWN_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// Whether the proxy knows a protocol version (a request naming another one is refused).
pub fn is_known_version(version: &str) -> bool {
    KNOWN_VERSIONS.contains(&version) || version.starts_with("DRAFT-2026")
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
        // Requests JSON-RPC calls invalid, each saying why.
        for (line, why) in [
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                "id is null",
            ),
            (
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                "an object",
            ),
            (r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#, "an array"),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                "a fraction",
            ),
            (r#"{"id":1,"method":"ping"}"#, "no \"jsonrpc\""),
            (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, "not \"2.0\""),
        ] {
            match classify(line.as_bytes()) {
                Message::Invalid(w) => assert!(w.contains(why), "{line}: {w}"),
                other => panic!("{line}: {other:?}"),
            }
        }
        // Whole numbers in any spelling, and strings, are ids.
        for line in [
            r#"{"jsonrpc":"2.0","id":1e3,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":-7,"method":"ping"}"#,
        ] {
            assert!(
                matches!(classify(line.as_bytes()), Message::Request { .. }),
                "{line}"
            );
        }
        // Too deep to read whole: an answer is still known by its id, a request is not one.
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let answer = format!("{{\"jsonrpc\":\"2.0\",\"id\":\"a-7\",\"result\":{deep}}}");
        assert!(matches!(classify(answer.as_bytes()), Message::Other(_)));
        assert_eq!(
            unread_answer_id(answer.as_bytes()).map(|i| i.0),
            Some("\"a-7\"".to_owned())
        );
        let request = format!("{{\"id\":7,\"method\":\"x\",\"result\":{deep}}}");
        assert_eq!(unread_answer_id(request.as_bytes()), None);
        assert_eq!(
            unread_answer_id(format!("{{\"id\":7,\"params\":{deep}}}").as_bytes()),
            None
        );
        // A request too long to read is known by its id and method; without a method it is
        // nothing we can pass on.
        let long = format!("{{\"id\":3,\"method\":\"tools/call\",\"params\":{deep}}}");
        assert!(matches!(
            unread_message(long.as_bytes()),
            Some(Message::Request { id, method, .. }) if id.0 == "3" && method == "tools/call"
        ));
        let note = format!("{{\"method\":\"notifications/x\",\"params\":{deep}}}");
        assert!(matches!(
            unread_message(note.as_bytes()),
            Some(Message::Notification { method, .. }) if method == "notifications/x"
        ));
        assert!(unread_message(format!("{{\"id\":3,\"params\":{deep}}}").as_bytes()).is_none());
        // Its progress token is read, wherever it is among the params: what the server says
        // of its progress reaches the request's own stream.
        let with_token = format!(
            "{{\"id\":4,\"method\":\"tools/call\",\"params\":{{\"arguments\":{deep},\"_meta\":{{\"progressToken\":\"p-9\"}}}}}}"
        );
        let Some(Message::Request { params, .. }) = unread_message(with_token.as_bytes()) else {
            panic!("a request");
        };
        assert_eq!(canonical(&params), r#"{"_meta":{"progressToken":"p-9"}}"#);
        assert!(unread_message(b"{\"id\":3,\"method\":7}").is_none());
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
    fn members_are_found_without_reading_the_rest() {
        let line = br#"{"jsonrpc":"2.0", "id" : 1e3,"result":{"content":[{"text":"a\"}b"}],"isError":true}}"#;
        let id = member(line, "id").expect("id");
        assert_eq!(&line[id], b"1e3");
        let result = member(line, "result").expect("result");
        let inner = &line[result];
        assert_eq!(
            member(inner, "isError").map(|r| &inner[r]),
            Some(&b"true"[..])
        );
        let nested = br#"{"a":{"id":2},"id":"x"}"#;
        assert_eq!(
            member(nested, "id").map(|r| &nested[r]),
            Some(&b"\"x\""[..])
        );
        assert_eq!(member(b"[1]", "id"), None);
        // Invalid UTF-8 and a cut-off tail do not stop the search for what comes first.
        let mut odd = br#"{"id":7,"result":"#.to_vec();
        odd.extend_from_slice(&[0xff, 0xfe, 0]);
        assert_eq!(member(&odd, "id").map(|r| &odd[r]), Some(&b"7"[..]));
        assert_eq!(
            member_str(br#"{"method":"tools/call"}"#, "method").as_deref(),
            Some("tools/call")
        );
        assert_eq!(
            result_line_as("1e3", obj! {}),
            b"{\"jsonrpc\":\"2.0\",\"id\":1e3,\"result\":{}}\n".to_vec()
        );
    }

    #[test]
    fn an_id_written_last_is_found_from_the_end() {
        let line = br#"{"result":{"content":[]},"jsonrpc":"2.0","id":17}"#;
        assert_eq!(tail_id(line).map(|r| &line[r]), Some(&b"17"[..]));
        let line = br#"{"method":"m","params":{},"jsonrpc":"2.0","id" : "a-1" }"#;
        assert_eq!(tail_id(line).map(|r| &line[r]), Some(&b"\"a-1\""[..]));
        assert_eq!(tail_id(br#"{"id":1,"result":{}}"#), None);
        assert_eq!(tail_id(b"[1]"), None);
    }

    #[test]
    fn versions() {
        assert!(is_known_version("2025-06-18") && is_known_version("DRAFT-2026-v1"));
        assert!(!is_known_version("banana") && !is_known_version("2025-11-26"));
        assert!(is_stateless("2026-07-28"));
        assert!(is_stateless("DRAFT-2026-v1"));
        assert!(!is_stateless("2025-11-25"));
        assert!(!is_stateless("2025-06-18"));
    }
}
