//! Redaction of text that is almost JSON: an answer kept as its bytes because it could not be
//! read (nested too deep, a `NaN`, a number out of range). A tolerant scan finds every
//! `"key": value` whose key names a secret and puts the marker in place of the value, whatever
//! the value is (a string, a bare word, a whole object); then literal secrets are replaced
//! everywhere. The scan never fails: text it cannot follow is copied as it is, and a value it
//! cannot find the end of is redacted to the end of the text.

use super::{MARKER, Redactor};
use crate::json::Text;
use crate::json::tolerant::{skip_ws, string_end, value_end};

impl Redactor {
    /// The text with the value of every secret key and every literal secret replaced by
    /// `"[REDACTED]"`. Text that is valid JSON comes out as valid JSON.
    pub fn redact_raw(&self, text: &str) -> String {
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut at = 0;
        while at < bytes.len() {
            if bytes[at] != b'"' {
                at += 1;
                continue;
            }
            let Some(end) = string_end(bytes, at) else {
                break;
            };
            let after = skip_ws(bytes, end);
            if bytes.get(after) != Some(&b':') {
                at = end;
                continue;
            }
            let value_at = skip_ws(bytes, after + 1);
            if !self.is_secret_key(&Text::from(decode(&text[at + 1..end - 1]))) {
                at = value_at;
                continue;
            }
            let value_end = value_end(bytes, value_at);
            out.push_str(&text[copied..value_at]);
            out.push('"');
            out.push_str(MARKER);
            out.push('"');
            copied = value_end;
            at = value_end;
        }
        out.push_str(&text[copied..]);
        if self.secrets().is_empty() {
            out
        } else {
            self.replace_in_str(&out)
        }
    }
}

/// A string literal's body with its escapes read (loosely: a bad escape is kept as written,
/// a lone surrogate becomes U+FFFD), so that `"pass\u0077ord"` is known for `password`.
fn decode(body: &str) -> String {
    if !body.contains('\\') {
        return body.to_owned();
    }
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let unit = u32::from_str_radix(&hex, 16).ok();
                let high = unit.filter(|u| (0xD800..0xDC00).contains(u));
                let code = match high {
                    Some(h) => {
                        let rest = chars.as_str();
                        let low = rest
                            .strip_prefix("\\u")
                            .and_then(|r| r.get(..4))
                            .and_then(|h| u32::from_str_radix(h, 16).ok())
                            .filter(|l| (0xDC00..0xE000).contains(l));
                        match low {
                            Some(l) => {
                                chars.nth(5);
                                Some(0x10000 + ((h - 0xD800) << 10) + (l - 0xDC00))
                            }
                            None => None,
                        }
                    }
                    None => unit,
                };
                out.push(code.and_then(char::from_u32).unwrap_or('\u{FFFD}'));
            }
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(s: &str) -> String {
        Redactor::builtin().redact_raw(s)
    }

    #[test]
    fn secret_values_of_any_shape_are_replaced_and_the_rest_kept() {
        let raw = r#"{"jsonrpc":"2.0","id":3,"result":{"n":NaN,"password":"hunter2","api_key" : 12345,"Session-Token":{"a":["x","}"],"b":"]"},"note":"password: not a key","list":[{"secret":null}]}}"#;
        let out = redact(raw);
        assert_eq!(
            out,
            r#"{"jsonrpc":"2.0","id":3,"result":{"n":NaN,"password":"[REDACTED]","api_key" : "[REDACTED]","Session-Token":"[REDACTED]","note":"password: not a key","list":[{"secret":"[REDACTED]"}]}}"#
        );
    }

    #[test]
    fn escaped_keys_and_deep_nesting_do_not_hide_a_secret() {
        let mut raw = String::new();
        for _ in 0..40 {
            raw.push_str(r#"{"a":"#);
        }
        raw.push_str(r#"{"pass\u0077ord":"hunter2","tok\"en":"kept"}"#);
        for _ in 0..40 {
            raw.push('}');
        }
        let out = redact(&raw);
        assert!(!out.contains("hunter2"), "{out}");
        assert!(out.contains(r#""tok\"en":"kept""#), "{out}");
        assert_eq!(out.matches('{').count(), 41);
    }

    #[test]
    fn text_that_breaks_off_is_redacted_to_its_end_and_never_panics() {
        assert_eq!(
            redact(r#"{"token":"abc"#),
            format!(r#"{{"token":"{MARKER}""#)
        );
        assert_eq!(
            redact(r#"{"token":{"x":[1,2"#),
            format!(r#"{{"token":"{MARKER}""#)
        );
        assert_eq!(redact(r#"{"token":"#), format!(r#"{{"token":"{MARKER}""#));
        for s in [
            r#"""#,
            r#"\"#,
            r#""\"#,
            r#"":"#,
            "\"\\u12",
            "\"\\ud800\\u",
            "é\"é\":é",
        ] {
            let _ = redact(s);
        }
    }

    #[test]
    fn literal_secrets_are_replaced_everywhere() {
        let r = Redactor::new(["x_custom"], ["s3cr3t"]).expect("redactor");
        assert_eq!(
            r.redact_raw(r#"{"x-custom":1,"y":"has s3cr3t in it"}"#),
            r#"{"x-custom":"[REDACTED]","y":"has [REDACTED] in it"}"#
        );
    }
}
