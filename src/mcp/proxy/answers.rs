//! What the record keeps of a server's answer to a call: its result or error as it came when
//! nothing in it is redacted, else a redacted copy, or a note that it was too large — worked
//! out on the server's reader thread when it can be (the relay then only takes it) — and,
//! for an answer that cannot be read, what its bytes say it is.

use std::borrow::Cow;

use super::link::Answer;
use crate::json::Value;
use crate::mcp::session::{Delivered, keep_borrowed};
use crate::mcp::transport::Kept;
use crate::mcp::wire::{self, Message};
use crate::obj;

/// The member of an answer that holds what the client gets: its result, else its error.
pub(super) fn answer_key(o: &crate::json::Object) -> Option<&'static str> {
    ["result", "error"].into_iter().find(|k| o.contains_key(k))
}

/// What the sidecar keeps of `body`, the answer's `key` member (redacted, within the limits).
pub(super) fn kept_body(key: &'static str, body: Value) -> (Kept, Value) {
    let wrapped = obj! {key => body};
    let kept = match keep_borrowed(&wrapped) {
        Some(Cow::Borrowed(_)) => Kept::AsItIs,
        Some(Cow::Owned(k)) if key == "result" => Kept::Copy(Delivered::Result(k)),
        Some(Cow::Owned(k)) => Kept::Copy(Delivered::Error(k)),
        None => Kept::Copy(Delivered::Unrecorded),
    };
    let body = match wrapped {
        Value::Object(mut o) => o.remove(key).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    (kept, body)
}

/// What the record keeps of a server's answer, worked out on its reader's thread
/// ([`crate::mcp::transport::Look`]): the relay then has only to take it. The message is left as it was
/// but for its members' order. `None` for a message that is no answer.
pub(super) fn keep_answer(message: &mut Message) -> Option<Kept> {
    let Message::Response {
        message: Value::Object(o),
        ..
    } = message
    else {
        return None;
    };
    let key = answer_key(o)?;
    let body = o.remove(key)?;
    let (kept, body) = kept_body(key, body);
    o.push(key, body);
    Some(kept)
}

/// A parsed answer's meaning and what the sidecar keeps of it (`kept`, when its reader has
/// worked that out already: [`keep_answer`]). A result kept as it came is the record's
/// alone ([`Answer::InRecord`]): no copy of it is made.
pub(super) fn read_answer(
    result: Option<Value>,
    error: Option<Value>,
    kept: Option<Kept>,
) -> (Answer, Delivered) {
    let is_error = result
        .as_ref()
        .and_then(Value::as_object)
        .and_then(|r| r.get("isError"))
        .and_then(Value::as_bool)
        == Some(true);
    let empty = result.is_none() && error.is_none();
    let (key, body) = match (result, error) {
        (Some(r), _) => ("result", r),
        (None, Some(e)) => ("error", e),
        (None, None) => ("result", Value::Null),
    };
    let (kept, body) = match kept {
        Some(k) => (k, body),
        None => kept_body(key, body),
    };
    // An answer that is no success says so in a line; a success is its result.
    let failure = match key {
        "error" => Some(Answer::RpcError(crate::json::one_line(&body))),
        _ if empty => Some(Answer::RpcError("an empty response".into())),
        _ if is_error => Some(Answer::ToolError(crate::json::one_line(&body))),
        _ => None,
    };
    match (kept, failure) {
        (Kept::Copy(d), Some(answer)) => (answer, d),
        (Kept::Copy(d), None) => (Answer::Result(body), d),
        (Kept::AsItIs, answer) => {
            let answer = answer.unwrap_or(Answer::InRecord);
            match key {
                "result" => (answer, Delivered::Result(obj! {"result" => body})),
                _ => (answer, Delivered::Error(obj! {"error" => body})),
            }
        }
    }
}

/// Reads an unreadable answer's kind from its bytes without parsing it.
pub(super) fn sniffed_answer(bytes: &[u8]) -> Answer {
    if wire::member(bytes, "error").is_some() {
        return Answer::RpcError("a JSON-RPC error the proxy could not read".into());
    }
    if let Some(r) = wire::member(bytes, "result") {
        let result = &bytes[r];
        if wire::member(result, "isError").is_some_and(|e| &result[e] == b"true") {
            return Answer::ToolError("an isError result the proxy could not read".into());
        }
    }
    Answer::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::session::keep;

    fn response(line: &str) -> Message {
        wire::classify(line.as_bytes())
    }

    #[test]
    fn an_answer_kept_on_the_reader_is_kept_as_the_relay_would_keep_it() {
        for (line, as_it_is) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}],"token":"s3cret"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"no"}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"result":{"isError":true,"content":[]},"error":{"code":1,"message":"both"}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"ok"}]}}"#,
                true,
            ),
        ] {
            let mut read = response(line);
            let kept = keep_answer(&mut read).expect("an answer");
            assert_eq!(kept == Kept::AsItIs, as_it_is, "{line}: {kept:?}");
            let Message::Response { message, .. } = read else {
                panic!("{line}: not a response any more");
            };
            let Message::Response { message: plain, .. } = response(line) else {
                panic!("{line}: not a response");
            };
            // The message keeps its members (their order aside).
            let (o, p) = (
                message.as_object().expect("object"),
                plain.as_object().expect("object"),
            );
            assert_eq!(o.len(), p.len(), "{line}");
            for (k, v) in p.iter() {
                assert_eq!(o.get(&k.to_lossy()), Some(v), "{line}: {k}");
            }
            // What the record gets is the same as when the relay works it out, and is what
            // the sidecar keeps of the answer.
            let (result, error) = (o.get("result").cloned(), o.get("error").cloned());
            let (on_reader, with_kept) = read_answer(result.clone(), error.clone(), Some(kept));
            let (by_relay, delivered) = read_answer(result, error, None);
            assert_eq!(with_kept, delivered, "{line}");
            let key = if p.contains_key("result") {
                "result"
            } else {
                "error"
            };
            let member = obj! {key => p.get(key).cloned().expect("the member")};
            let expected = keep(&member).expect("kept");
            match &delivered {
                Delivered::Result(v) | Delivered::Error(v) => assert_eq!(v, &expected, "{line}"),
                other => panic!("{line}: {other:?}"),
            }
            // A success kept as it came is the record's alone; a redacted one is copied.
            let success = !p.contains_key("error") && !line.contains("isError");
            for answer in [&on_reader, &by_relay] {
                match answer {
                    Answer::InRecord => assert!(success && as_it_is, "{line}"),
                    Answer::Result(r) => {
                        assert!(success && !as_it_is, "{line}");
                        assert_eq!(Some(r), p.get("result"), "{line}: unredacted");
                    }
                    Answer::RpcError(_) | Answer::ToolError(_) => assert!(!success, "{line}"),
                    Answer::Unknown => panic!("{line}: read"),
                }
            }
        }
        let redacted = keep_answer(&mut response(
            r#"{"jsonrpc":"2.0","id":1,"result":{"token":"s3cret"}}"#,
        ));
        assert_eq!(
            redacted,
            Some(Kept::Copy(Delivered::Result(
                crate::obj! {"result" => crate::obj! {"token" => "[REDACTED]"}}
            ))),
            "the record is redacted"
        );
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}1{}}}"#,
            "[".repeat(30),
            "]".repeat(30)
        );
        assert_eq!(
            keep_answer(&mut response(&deep)),
            Some(Kept::Copy(Delivered::Unrecorded)),
            "too deep to keep"
        );
        assert_eq!(
            keep_answer(&mut response(r#"{"jsonrpc":"2.0","method":"x"}"#)),
            None
        );
    }
}
