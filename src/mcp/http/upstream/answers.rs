//! What a remote server's HTTP answer becomes for the client: the answer found by its id, an
//! HTTP error or a body that is not the answer turned into a JSON-RPC error naming what came,
//! the headers passed on, and a batch's ids.

use hyper::Response;
use hyper::body::Incoming;
use hyper::header::CONTENT_TYPE;

use super::super::{Header, headers};
use crate::mcp::wire::{self, Id, Message};

/// The headers of a server's answer that its client is given.
pub(super) fn answer_headers(res: &Response<Incoming>) -> Vec<Header> {
    headers::passed(
        res.headers(),
        &["content-type", "date", "server", "cache-control"],
    )
}

/// A message as one line: an answer may be written over several lines (pretty JSON, or data
/// split over `data:` lines); outside strings a line break is white space, and inside one it
/// cannot stand unescaped.
pub(super) fn one_line(mut bytes: Vec<u8>) -> Vec<u8> {
    for b in &mut bytes {
        if *b == b'\n' || *b == b'\r' {
            *b = b' ';
        }
    }
    while bytes.last() == Some(&b' ') {
        bytes.pop();
    }
    bytes
}

/// Whether `line` is the answer to the request `id`.
pub(super) fn answers(line: &[u8], id: &Id) -> bool {
    if wire::member(line, "method").is_some() {
        return false;
    }
    let Some(r) = wire::member(line, "id") else {
        return false;
    };
    std::str::from_utf8(&line[r])
        .ok()
        .and_then(|t| crate::json::parse(t).ok())
        .is_some_and(|v| Id::of(&v) == *id)
}

/// What a JSON body that does not answer its request is, in a few words: the answer to
/// another id, another kind of message, or text that is not JSON (its start).
pub(super) fn what_came(body: &[u8]) -> String {
    match wire::classify(body) {
        Message::Response { id, .. } => {
            format!("the answer to request {}", crate::printable::line(&id.0))
        }
        Message::Request { method, .. } | Message::Notification { method, .. } => {
            format!("a {} message", crate::printable::line(&method))
        }
        Message::Invalid(why) | Message::Other(why) => {
            let text = String::from_utf8_lossy(&body[..body.len().min(120)]).into_owned();
            format!("{} ({:?})", why, crate::printable::line(&text))
        }
    }
}

/// The server's own JSON-RPC error in an HTTP error's body (its id often null: it could not
/// read the request), as the answer to `id`, its code and message kept and the HTTP status
/// added to its data.
pub(super) fn error_for(body: &[u8], id: &Id, status: u16) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(body).ok()?;
    let v = crate::json::parse(text).ok()?;
    let e = v.as_object()?.get("error")?.as_object()?;
    let code = e.get("code")?.as_i64()?;
    let message = e.get("message")?.as_str()?;
    let data = match e.get("data") {
        Some(crate::json::Value::Object(d)) => {
            let mut d = d.clone();
            d.push("http_status", i64::from(status));
            crate::json::Value::Object(d)
        }
        Some(other) => {
            crate::obj! {"http_status" => i64::from(status), "server_data" => other.clone()}
        }
        None => crate::obj! {"http_status" => i64::from(status)},
    };
    let mut line = wire::error_line(id, code, message, Some(data));
    while line.last() == Some(&b'\n') {
        line.pop();
    }
    Some(line)
}

/// A JSON-RPC error answering `id` in the server's place.
pub(super) fn error_answer(id: &Id, message: &str, status: Option<u16>) -> Vec<u8> {
    let data = status.map(|s| crate::obj! { "http_status" => i64::from(s) });
    error_line(id, message, data)
}

/// A JSON-RPC error answering `id` in the server's place when the server had the request and
/// its answer was lost on the way (a stream cut before the answer, a body cut short): its
/// data says the outcome is unknown ([`wire::OUTCOME_DATA_KEY`]).
pub(super) fn unknown_answer(id: &Id, message: &str) -> Vec<u8> {
    let data = crate::obj! { wire::OUTCOME_DATA_KEY => "unknown" };
    error_line(id, message, Some(data))
}

pub(super) fn error_line(id: &Id, message: &str, data: Option<crate::json::Value>) -> Vec<u8> {
    let mut line = wire::error_line(id, -32000, message, data);
    while line.last() == Some(&b'\n') {
        line.pop();
    }
    line
}

pub(super) fn content_type(res: &Response<Incoming>) -> String {
    res.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Whether a successful answer's body can be a message: JSON by its type, or by its first
/// byte (a server that labels its JSON otherwise).
pub(super) fn may_be_json(content_type: &str, body: &[u8]) -> bool {
    content_type.contains("json")
        || matches!(
            body.iter().find(|b| !b.is_ascii_whitespace()),
            Some(b'{' | b'[')
        )
}

/// Why an answer that is not a message cannot be passed on: its status, its type and the
/// start of its text.
pub(super) fn not_mcp(url: &str, status: u16, content_type: &str, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let text: String = text.chars().take(200).collect();
    let typed = if content_type.is_empty() {
        "no Content-Type".to_owned()
    } else {
        content_type.to_owned()
    };
    let events = ["event:", "data:", "id:", "retry:", ":"];
    if events.iter().any(|e| text.starts_with(e)) {
        return format!(
            "the MCP server at {url} answered HTTP {status} with events labelled {typed}, not text/event-stream: the server is at fault: {text}"
        );
    }
    format!(
        "the MCP server at {url} answered HTTP {status} with {typed}, not an MCP message (is that URL its MCP endpoint? it often ends in /mcp): {text}"
    )
}

/// The ids of the requests in a JSON-RPC batch (an array of messages; a stdio client of the
/// 2025-03-26 revision may send one): what its answer must answer. Each element is known by a
/// scan, so a batch too long or too deep to read whole is known too. None for anything else.
pub(super) fn batch_requests(line: &[u8]) -> Vec<Id> {
    wire::elements(line)
        .into_iter()
        .filter_map(|r| match wire::unread_message(&line[r])? {
            Message::Request { id, .. } => Some(id),
            _ => None,
        })
        .collect()
}

/// The ids a server's message answers: its own, or its elements' when it is a batch.
pub(super) fn answered_ids(line: &[u8]) -> Vec<Id> {
    let one = |m: &[u8]| match wire::unread_message(m) {
        Some(Message::Response { id, .. }) => Some(id),
        _ => None,
    };
    match one(line) {
        Some(id) => vec![id],
        None => wire::elements(line)
            .into_iter()
            .filter_map(|r| one(&line[r]))
            .collect(),
    }
}

/// A batch answering each of `ids` with the error `why`.
pub(super) fn batch_errors(ids: &[Id], why: &str, status: Option<u16>) -> Vec<u8> {
    let mut line = b"[".to_vec();
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        line.extend_from_slice(&error_answer(id, why, status));
    }
    line.push(b']');
    line
}
