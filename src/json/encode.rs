//! Writing JSON the way the reference writes it: canonical form (sorted keys, compact,
//! ASCII escapes, Python float `repr`) for files and digests, and Python `json.dumps` layouts
//! (indent 2, or one line with `", "`/`": "`) for command output. All output is pure ASCII.

use sha2::{Digest, Sha256};

use super::float::{py_repr, write_py_repr};
use super::{Int, Text, Value};

/// The canonical text of a value: keys sorted by code point, `,`/`:` separators, ASCII only.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// Lowercase hex SHA-256 of the canonical text.
pub fn fingerprint(value: &Value) -> String {
    sha256_hex(canonical(value).as_bytes())
}

/// Lowercase hex of bytes (a digest's).
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(hex_digit(b >> 4));
        s.push(hex_digit(b & 0x0f));
    }
    s
}

/// Lowercase hex SHA-256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex_digit(n: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(n & 0x0f)])
}

/// Longest `repr` of a finite float (`-2.2250738585072014e-308`).
const MAX_FLOAT_REPR: usize = 24;

/// Whether the canonical text is at most `limit` bytes. A bound that reads no text answers
/// when it is within the limit (as it is for nearly every value); then one with floats at
/// their longest form; the exact (slower) measure is only taken near the limit.
pub fn canonical_fits(value: &Value, limit: usize) -> bool {
    text_free_bound(value) <= limit
        || canonical_len_with(value, &|_| MAX_FLOAT_REPR) <= limit
        || canonical_len(value) <= limit
}

/// An upper bound on [`canonical_len`] that formats no float (each counts as the longest
/// `repr`).
pub fn canonical_len_bound(value: &Value) -> usize {
    canonical_len_with(value, &|_| MAX_FLOAT_REPR)
}

/// Length in bytes of the canonical text, without building it.
pub fn canonical_len(value: &Value) -> usize {
    canonical_len_with(value, &|f| py_repr(f).len())
}

fn canonical_len_with(value: &Value, float_len: &dyn Fn(f64) -> usize) -> usize {
    match value {
        Value::Array(items) => {
            2 + items.len().saturating_sub(1)
                + items
                    .iter()
                    .map(|v| canonical_len_with(v, float_len))
                    .sum::<usize>()
        }
        Value::Object(obj) => {
            2 + obj.len().saturating_sub(1)
                + obj
                    .iter()
                    .map(|(k, v)| text_len(k) + 1 + canonical_len_with(v, float_len))
                    .sum::<usize>()
        }
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Int(Int::Small(v)) => int_len(*v),
        Value::Int(Int::Big(s)) => s.len(),
        Value::Float(f) => float_len(*f),
        Value::Str(t) => text_len(t),
    }
}

/// At least [`canonical_len`], found without reading any text: a text byte escapes to at
/// most six (a control character as `\u00XX`), a float to at most [`MAX_FLOAT_REPR`].
fn text_free_bound(value: &Value) -> usize {
    let text = |t: &Text| t.as_wtf8().len().saturating_mul(6).saturating_add(2);
    match value {
        Value::Array(items) => items
            .iter()
            .fold(2 + items.len().saturating_sub(1), |n, v| {
                n.saturating_add(text_free_bound(v))
            }),
        Value::Object(obj) => obj
            .iter()
            .fold(2 + obj.len().saturating_sub(1), |n, (k, v)| {
                n.saturating_add(text(k).saturating_add(1 + text_free_bound(v)))
            }),
        Value::Float(_) => MAX_FLOAT_REPR,
        Value::Str(t) => text(t),
        Value::Null | Value::Bool(_) | Value::Int(_) => canonical_len(value),
    }
}

/// Characters of an integer in decimal (sign included), without formatting it.
fn int_len(v: i64) -> usize {
    let digits = v
        .unsigned_abs()
        .checked_ilog10()
        .map_or(1, |d| d as usize + 1);
    digits + usize::from(v < 0)
}

#[cfg(test)]
mod len_tests {
    use super::*;
    use rand_chacha::rand_core::{RngCore, SeedableRng};

    /// A value with texts of every escaping kind: plain, quotes, control characters, `\x7f`,
    /// two-, three- and four-byte characters.
    fn value(rng: &mut rand_chacha::ChaCha8Rng, depth: u32) -> Value {
        let pick = rng.next_u32() % if depth > 3 { 5 } else { 7 };
        match pick {
            0 => Value::Null,
            1 => Value::from(rng.next_u64() as i64 >> (rng.next_u32() % 64)),
            2 => Value::Float(f64::from_bits(rng.next_u64() >> 2)),
            3 | 4 => {
                let pieces = ["a", "\"", "\u{1}", "\u{7f}", "é", "€", "𝄞", "\n", "zz"];
                let n = rng.next_u32() % 40;
                Value::from(
                    (0..n)
                        .map(|_| pieces[rng.next_u32() as usize % pieces.len()])
                        .collect::<String>(),
                )
            }
            5 => Value::Array(
                (0..rng.next_u32() % 4)
                    .map(|_| value(rng, depth + 1))
                    .collect(),
            ),
            _ => {
                let mut o = crate::json::Object::new();
                for i in 0..rng.next_u32() % 4 {
                    o.push(format!("k\u{1}{i}"), value(rng, depth + 1));
                }
                Value::Object(o)
            }
        }
    }

    #[test]
    fn the_text_free_bound_holds_and_fits_answers_exactly() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for _ in 0..20_000 {
            let v = value(&mut rng, 0);
            let len = crate::json::canonical(&v).len();
            assert!(text_free_bound(&v) >= len, "{v:?}");
            for limit in [0, len.saturating_sub(1), len, len + 1, text_free_bound(&v)] {
                assert_eq!(
                    canonical_fits(&v, limit),
                    len <= limit,
                    "{v:?} within {limit}"
                );
            }
        }
    }

    #[test]
    fn int_lengths_match_their_text() {
        for v in [
            0,
            1,
            9,
            10,
            99,
            100,
            -1,
            -10,
            i64::MAX,
            i64::MIN,
            1_000_000,
            -999,
        ] {
            assert_eq!(super::int_len(v), v.to_string().len(), "{v}");
        }
    }
}

fn text_len(text: &Text) -> usize {
    // One pass over the WTF-8 bytes: ASCII costs 1 (2 or 6 when escaped); a sequence's lead
    // byte pays for the whole escaped code point (`\uXXXX`, or a surrogate pair for 4 bytes).
    // Text with nothing to escape (most of it) is its length, known when it was made or
    // found in one quick pass ([`super::scan::is_plain_ascii`]).
    let bytes = text.as_wtf8();
    if text.is_plain() || super::scan::is_plain_ascii(bytes) {
        return 2 + bytes.len();
    }
    2 + bytes
        .iter()
        .map(|&b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0x20..=0x7e => 1,
            0x00..=0x1f | 0x7f => 6,
            0x80..=0xbf => 0,
            0xc0..=0xef => 6,
            _ => 12,
        })
        .sum::<usize>()
}

/// Appends the canonical text of `value`.
pub fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(obj) => {
            out.push('{');
            let mut member = |i: usize, k: &Text, v: &Value| {
                if i > 0 {
                    out.push(',');
                }
                write_text(k, out);
                out.push(':');
                write_canonical(v, out);
            };
            // Members already in key order (most small objects, and any sorted one) are
            // written as they are; a stable sort would keep them so.
            if obj.in_key_order() {
                for (i, (k, v)) in obj.iter().enumerate() {
                    member(i, k, v);
                }
            } else {
                for (i, (k, v)) in obj.sorted().into_iter().enumerate() {
                    member(i, k, v);
                }
            }
            out.push('}');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Int(Int::Small(v)) => write_int(*v, out),
        Value::Int(Int::Big(s)) => out.push_str(s),
        Value::Float(f) => write_py_repr(*f, out),
        Value::Str(t) => write_text(t, out),
        Value::Array(_) | Value::Object(_) => write_canonical(value, out),
    }
}

/// Appends an integer in decimal (without the formatter's machinery: a report writes a dozen
/// integers per call).
pub fn write_int(v: impl itoa::Integer, out: &mut String) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// Appends a JSON string literal with Python's `ensure_ascii` escaping.
pub fn write_text(text: &Text, out: &mut String) {
    out.push('"');
    // Most text is printable ASCII with nothing to escape: copied as it is (known so when it
    // was made, or seen so now).
    if text.push_plain(out) {
        out.push('"');
        return;
    }
    if let Some(plain) = text.as_str()
        && super::scan::is_plain_ascii(plain.as_bytes())
    {
        out.push_str(plain);
        out.push('"');
        return;
    }
    for cp in text.code_points() {
        match cp {
            0x22 => out.push_str("\\\""),
            0x5c => out.push_str("\\\\"),
            0x0a => out.push_str("\\n"),
            0x0d => out.push_str("\\r"),
            0x09 => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            0x20..=0x7e => out.push(char::from(cp as u8)),
            0x10000.. => {
                let v = cp - 0x10000;
                push_u_escape(0xd800 | (v >> 10), out);
                push_u_escape(0xdc00 | (v & 0x3ff), out);
            }
            _ => push_u_escape(cp, out),
        }
    }
    out.push('"');
}

fn push_u_escape(unit: u32, out: &mut String) {
    out.push_str("\\u");
    for shift in [12, 8, 4, 0] {
        out.push(hex_digit(((unit >> shift) & 0xf) as u8));
    }
}

/// Appends the string literal for `s`, escaped as canonical JSON does.
pub fn write_str(s: &str, out: &mut String) {
    if super::scan::is_plain_ascii(s.as_bytes()) {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        write_text(&Text::from(s), out);
    }
}

/// A string literal for `s`, escaped as canonical JSON does.
pub fn quote(s: &str) -> String {
    let mut out = String::new();
    write_text(&Text::from(s), &mut out);
    out
}

/// Python `json.dumps(value, indent=2, ensure_ascii=True)`: insertion order, `": "` after
/// keys, `,` at line ends, empty containers as `[]` / `{}`. No trailing newline.
pub fn pretty(value: &Value) -> String {
    let mut out = String::new();
    write_pretty(value, 0, &mut out);
    out
}

fn newline_indent(level: usize, out: &mut String) {
    out.push('\n');
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn write_pretty(value: &Value, level: usize, out: &mut String) {
    match value {
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline_indent(level + 1, out);
                write_pretty(item, level + 1, out);
            }
            newline_indent(level, out);
            out.push(']');
        }
        Value::Object(obj) if !obj.is_empty() => {
            out.push('{');
            for (i, (k, v)) in obj.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline_indent(level + 1, out);
                write_text(k, out);
                out.push_str(": ");
                write_pretty(v, level + 1, out);
            }
            newline_indent(level, out);
            out.push('}');
        }
        Value::Array(_) => out.push_str("[]"),
        Value::Object(_) => out.push_str("{}"),
        scalar => write_scalar(scalar, out),
    }
}

/// Python's default `json.dumps(value)`: one line, `", "` and `": "`, insertion order.
pub fn one_line(value: &Value) -> String {
    let mut out = String::new();
    write_inline(value, ", ", ": ", &mut out);
    out
}

/// One line with no spaces (`,` and `:`), insertion order: for JSON-lines output.
pub fn compact(value: &Value) -> String {
    let mut out = String::new();
    write_compact(value, &mut out);
    out
}

/// Appends the text of [`compact`] to `out`.
pub fn write_compact(value: &Value, out: &mut String) {
    write_inline(value, ",", ":", out);
}

fn write_inline(value: &Value, item_sep: &str, key_sep: &str, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                write_inline(item, item_sep, key_sep, out);
            }
            out.push(']');
        }
        Value::Object(obj) => {
            out.push('{');
            for (i, (k, v)) in obj.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                write_text(k, out);
                out.push_str(key_sep);
                write_inline(v, item_sep, key_sep, out);
            }
            out.push('}');
        }
        scalar => write_scalar(scalar, out),
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    #[test]
    fn canonical_sorts_and_escapes() {
        let v =
            parse(r#"{"b":1,"a":[1.0,-0.0,"\u00e9\ud83d\ude00/\u007f"],"":null}"#).expect("valid");
        assert_eq!(
            canonical(&v),
            r#"{"":null,"a":[1.0,-0.0,"\u00e9\ud83d\ude00/\u007f"],"b":1}"#
        );
    }

    #[test]
    fn canonical_size_is_measured_exactly() {
        let v = parse(r#"{"a":[1.5e300,-0.0,"\u00e9\ud83d\ude00\n",12345678901234567890],"b":{}}"#)
            .expect("valid");
        let text = canonical(&v);
        assert_eq!(canonical_len(&v), text.len());
        assert!(canonical_fits(&v, text.len()));
        assert!(!canonical_fits(&v, text.len() - 1));
    }

    #[test]
    fn pretty_matches_python_indent() {
        let v = parse(r#"{"a":[],"b":{},"c":[1,{"d":true}]}"#).expect("valid");
        assert_eq!(
            pretty(&v),
            "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": true\n    }\n  ]\n}"
        );
        assert_eq!(one_line(&v), r#"{"a": [], "b": {}, "c": [1, {"d": true}]}"#);
    }
}
