//! Arguments the recorder cannot keep whole: the summary objects that stand in for them
//! (`{"toolstorm_summary": why, "bytes": n, "sha256": digest}`), made by the proxy when it
//! records a call, and checked by replay when the call comes again — so a summarised call is
//! matched as strictly as what was kept of it allows: its small members exactly, its large ones
//! by size and digest.

use crate::json::{Value, canonical, sha256_hex};
use crate::obj;
use crate::redact::Redactor;

/// Members up to this many bytes of JSON text are kept as they are beside summarised ones.
const SMALL_MEMBER: usize = 1024;

/// The reason a request over 8 MB gives: it is judged on its first piece, so the sizes and
/// digests are of that piece, not of the whole arguments.
pub const FIRST_PIECE: &str =
    "not recorded: a message over 8 MB (size and digest of its first 8 MB)";

/// A stand-in for the JSON text `bytes`, which cannot be recorded as it is.
pub fn summary(why: &str, bytes: &[u8]) -> Value {
    obj! {
        "toolstorm_summary" => why,
        "bytes" => bytes.len(),
        "sha256" => sha256_hex(bytes),
    }
}

/// Arguments that cannot be recorded whole (their JSON text `bytes`): each small top-level
/// member is kept as it is — so a scenario's key (`order_id`) still names the commit — and
/// each large or unreadable one is summarised; arguments that are no object are summarised
/// whole.
pub fn summarise_arguments(why: &str, bytes: &[u8]) -> Value {
    let members = crate::mcp::wire::members(bytes);
    if members.is_empty() {
        return summary(why, bytes);
    }
    let mut o = crate::json::Object::new();
    for (key, range) in members {
        let Ok(key) = std::str::from_utf8(key) else {
            continue;
        };
        // A value the text ends in is cut (a first piece): `12` of `12345` is no number kept.
        let cut = range.end >= bytes.len();
        let raw = &bytes[range];
        let small = (raw.len() <= SMALL_MEMBER && !cut)
            .then(|| std::str::from_utf8(raw).ok())
            .flatten()
            .and_then(|t| crate::json::parse(t).ok());
        match small {
            Some(v) => o.push(key, v),
            None => o.push(key, summary(why, raw)),
        }
    }
    Value::Object(o)
}

/// Whether `v` is a summary object the recorder made.
fn is_summary(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.get("toolstorm_summary")
            .is_some_and(|s| s.as_str().is_some())
            && o.contains_key("bytes")
            && o.contains_key("sha256")
    })
}

/// The summaries in recorded arguments: the arguments themselves, or their members.
fn summaries(arguments: &Value) -> Vec<&Value> {
    if is_summary(arguments) {
        return vec![arguments];
    }
    match arguments.as_object() {
        Some(o) => o.iter().map(|(_, v)| v).filter(|v| is_summary(v)).collect(),
        None => Vec::new(),
    }
}

/// Whether recorded arguments were summarised (whole, or one of their members).
pub fn is_summarised(arguments: &Value) -> bool {
    !summaries(arguments).is_empty()
}

/// The arguments with every summary's reason taken out: the reason says why the engine could
/// not capture them, which is not part of what was asked.
fn without_reasons(arguments: &Value) -> Value {
    let strip = |v: &Value| match v.as_object() {
        Some(o) if is_summary(v) => Value::Object(
            o.iter()
                .map(|(k, x)| {
                    let x = if k.as_str() == Some("toolstorm_summary") {
                        Value::Null
                    } else {
                        x.clone()
                    };
                    (k.clone(), x)
                })
                .collect(),
        ),
        _ => v.clone(),
    };
    if is_summary(arguments) {
        return strip(arguments);
    }
    match arguments.as_object() {
        Some(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), strip(v))).collect()),
        None => arguments.clone(),
    }
}

/// Whether a call's arguments, as JSON text, are those recorded summarised. `text` is the
/// canonical text of arguments read whole, or their bytes as sent when the request could not
/// be read (the recorder summarised whichever it had). Small members are compared after
/// redaction, as they were kept; summarised ones by size and digest. A request recorded from
/// its first 8 MB ([`FIRST_PIECE`]) cannot be summarised again the same way: its members kept
/// whole are compared, and its summarised ones must be there.
pub fn matches(recorded: &Value, text: &[u8], redactor: &Redactor) -> bool {
    let first_piece = summaries(recorded).iter().any(|s| {
        s.as_object()
            .and_then(|o| o.get("toolstorm_summary"))
            .and_then(Value::as_str)
            == Some(FIRST_PIECE)
    });
    if first_piece {
        let Some(kept) = recorded.as_object().filter(|_| !is_summary(recorded)) else {
            return true; // nothing of it was kept but its first piece's digest
        };
        let given = summarise_arguments("", text);
        let Some(given) = given.as_object() else {
            return false;
        };
        return kept
            .iter()
            .all(|(k, v)| match k.as_str().and_then(|k| given.get(k)) {
                Some(_) if is_summary(v) => true,
                Some(g) => redactor
                    .scrub(g)
                    .is_ok_and(|g| canonical(&g) == canonical(v)),
                None => false,
            });
    }
    let want = canonical(&without_reasons(recorded));
    [summarise_arguments("", text), summary("", text)]
        .iter()
        .filter_map(|candidate| redactor.scrub(candidate).ok())
        .any(|c| canonical(&without_reasons(&c)) == want)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_summary_the_recorder_made_counts() {
        let s = summary("x", b"\"abc\"");
        assert!(is_summarised(&s));
        assert!(is_summarised(
            &obj! {"order_id" => "o-1", "note" => s.clone()}
        ));
        assert!(!is_summarised(&obj! {"q" => "toolstorm_summary"}));
        assert!(!is_summarised(&obj! {"toolstorm_summary" => "x"}));
        assert!(!is_summarised(&obj! {"deep" => obj! {"x" => s}}));
    }

    #[test]
    fn summarised_arguments_match_only_the_same_arguments() {
        let r = Redactor::builtin();
        let big = "n".repeat(5000);
        let asked = format!(r#"{{"order_id":"o-1","note":"{big}"}}"#);
        let recorded = summarise_arguments("not recorded: too large", asked.as_bytes());
        assert!(canonical(&recorded).contains("\"order_id\":\"o-1\""));
        assert!(matches(&recorded, asked.as_bytes(), r), "the same call");
        let other_key = asked.replace("o-1", "o-2");
        assert!(
            !matches(&recorded, other_key.as_bytes(), r),
            "a member kept whole differs"
        );
        // The same key, the same size, other text.
        let other_note = asked.replacen("nnnn", "mmmm", 1);
        assert!(
            !matches(&recorded, other_note.as_bytes(), r),
            "a summarised member differs"
        );
        let fewer = format!(r#"{{"note":"{big}"}}"#);
        assert!(
            !matches(&recorded, fewer.as_bytes(), r),
            "a member is missing"
        );
        // Summarised whole (no object): by size and digest.
        let whole = summary("not recorded: too deep", asked.as_bytes());
        assert!(matches(&whole, asked.as_bytes(), r));
        assert!(!matches(&whole, other_note.as_bytes(), r));
    }

    #[test]
    fn a_secret_kept_beside_a_summary_is_compared_redacted() {
        let r = Redactor::builtin();
        let big = "d".repeat(3000);
        let asked = format!(r#"{{"api_key":"sk-live-123","doc":"{big}"}}"#);
        let recorded = r
            .scrub(&summarise_arguments("why", asked.as_bytes()))
            .expect("redacts");
        assert!(
            !canonical(&recorded).contains("sk-live-123"),
            "{}",
            canonical(&recorded)
        );
        assert!(matches(&recorded, asked.as_bytes(), r));
    }

    #[test]
    fn a_request_judged_on_its_first_piece_is_matched_by_what_was_kept_whole() {
        let r = Redactor::builtin();
        let piece = br#"{"order_id":"o-1","sku":"sssss"#;
        let recorded = summarise_arguments(FIRST_PIECE, piece);
        let whole = br#"{"order_id":"o-1","sku":"ssssssssss"}"#;
        assert!(matches(&recorded, whole, r));
        let other = br#"{"order_id":"o-2","sku":"ssssssssss"}"#;
        assert!(!matches(&recorded, other, r));
        let without = br#"{"order_id":"o-1"}"#;
        assert!(!matches(&recorded, without, r));
        // A number cut by the piece's end is no number kept: `12` of `12345`.
        let cut = summarise_arguments(FIRST_PIECE, br#"{"order_id":"o-1","qty":12"#);
        assert!(is_summarised(&cut), "{}", canonical(&cut));
        assert!(matches(&cut, br#"{"order_id":"o-1","qty":12345}"#, r));
        // A first piece with no member whole is one summary: matched by its place.
        let whole = summary(FIRST_PIECE, b"{\"blob\":\"bbbb");
        assert!(matches(&whole, br#"{"blob":"bbbbbbbb"}"#, r));
    }
}
