//! Strict JSON parsing with the reference's rules (Python `json` plus ToolStorm's copier):
//! integers of any size (≤ 4,300 digits), finite floats only, no `NaN`/`Infinity`, no duplicate
//! keys, lone surrogate escapes kept, values at depth ≤ 32, documents ≤ 8,000,000 bytes.
//!
//! Every failure is a [`ParseError`] with a byte offset and a precise reason; the reference
//! reports them all as "Invalid or excessively nested JSON", which [`ParseError`]'s `Display`
//! starts with.

use std::collections::HashSet;
use std::fmt;

use super::text::push_code_point;
use super::{Int, Object, Text, Value};

/// Deepest allowed value depth (the root is depth 0).
pub const MAX_DEPTH: usize = 32;
/// Largest accepted document, in UTF-8 bytes.
pub const MAX_DOCUMENT_BYTES: usize = 8_000_000;
/// Longest integer literal CPython converts (digits).
pub const MAX_INT_DIGITS: usize = 4300;

/// Why a document was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// More than [`MAX_DOCUMENT_BYTES`].
    TooLarge,
    /// The text starts with a byte-order mark.
    ByteOrderMark,
    /// Input ended early.
    UnexpectedEnd,
    /// A character that cannot start or continue a value here.
    UnexpectedCharacter(char),
    /// Something after the document.
    TrailingData,
    /// A number that is not JSON (`01`, `1.`, `-`).
    InvalidNumber,
    /// `NaN`, `Infinity`, or a literal that overflows to infinity.
    NonFiniteNumber,
    /// An integer literal longer than CPython accepts.
    IntegerTooLong,
    /// A raw control character inside a string.
    ControlCharacterInString,
    /// A backslash escape that is not JSON.
    InvalidEscape,
    /// An object repeats a key.
    DuplicateKey(String),
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// A parse failure at a byte offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// What went wrong.
    pub kind: ParseErrorKind,
    /// Byte offset in the input where it was noticed.
    pub offset: usize,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Invalid or excessively nested JSON: ")?;
        match &self.kind {
            ParseErrorKind::TooLarge => {
                return write!(f, "document exceeds {} bytes", self.offset);
            }
            ParseErrorKind::ByteOrderMark => f.write_str("unexpected UTF-8 byte-order mark"),
            ParseErrorKind::UnexpectedEnd => f.write_str("unexpected end of input"),
            ParseErrorKind::UnexpectedCharacter(c) => write!(f, "unexpected character {c:?}"),
            ParseErrorKind::TrailingData => f.write_str("extra data after the document"),
            ParseErrorKind::InvalidNumber => f.write_str("malformed number"),
            ParseErrorKind::NonFiniteNumber => f.write_str("non-finite numbers are not allowed"),
            ParseErrorKind::IntegerTooLong => {
                write!(f, "integer literal longer than {MAX_INT_DIGITS} digits")
            }
            ParseErrorKind::ControlCharacterInString => {
                f.write_str("unescaped control character in string")
            }
            ParseErrorKind::InvalidEscape => f.write_str("invalid escape in string"),
            ParseErrorKind::DuplicateKey(k) => write!(f, "duplicate object key {k:?}"),
            ParseErrorKind::TooDeep => write!(f, "nesting deeper than {MAX_DEPTH} levels"),
        }?;
        write!(f, " at byte {}", self.offset)
    }
}

impl std::error::Error for ParseError {}

/// Parses a complete JSON document with the reference's limits.
pub fn parse(text: &str) -> Result<Value, ParseError> {
    parse_at_depth(text, 0)
}

/// Parses a document whose root sits at `depth` (payloads inside an envelope have less room).
pub fn parse_at_depth(text: &str, depth: usize) -> Result<Value, ParseError> {
    parse_limited(text, depth, MAX_DOCUMENT_BYTES)
}

/// [`parse`] with another size limit: for files of our own whose size grows with what they
/// hold (a campaign of 10,000 runs), not the reference's documents.
pub fn parse_within(text: &str, max_bytes: usize) -> Result<Value, ParseError> {
    parse_limited(text, 0, max_bytes)
}

fn parse_limited(text: &str, depth: usize, max_bytes: usize) -> Result<Value, ParseError> {
    if text.len() > max_bytes {
        return Err(ParseError {
            kind: ParseErrorKind::TooLarge,
            offset: max_bytes,
        });
    }
    if text.starts_with('\u{feff}') {
        return Err(ParseError {
            kind: ParseErrorKind::ByteOrderMark,
            offset: 0,
        });
    }
    let mut p = Parser {
        bytes: text.as_bytes(),
        text,
        pos: 0,
        members: Vec::new(),
        items: Vec::new(),
    };
    p.skip_ws();
    let v = p.value(depth)?;
    p.skip_ws();
    if p.pos != p.bytes.len() {
        return Err(p.err(ParseErrorKind::TrailingData));
    }
    Ok(v)
}

/// A step-by-step reader of one document, for a typed reader that knows the shape it expects
/// (`cassette::skeleton`): it takes the fixed parts token by token and hands every other
/// value to the parser [`parse`] uses, with the same rules and limits. Anything it does not
/// expect is its caller's cue to read the document the general way instead, so the reader
/// answers with `Option` and never explains.
pub struct Reader<'a> {
    p: Parser<'a>,
}

impl<'a> Reader<'a> {
    /// A reader of a part of a document, read a window at a time: its caller has looked at
    /// the document's start and keeps to its size limit.
    pub fn part(text: &'a str) -> Reader<'a> {
        Reader {
            p: Parser {
                bytes: text.as_bytes(),
                text,
                pos: 0,
                members: Vec::new(),
                items: Vec::new(),
            },
        }
    }

    /// Where the reader is, as a byte offset into the text.
    pub fn offset(&self) -> usize {
        self.p.pos
    }

    /// Whether `b` comes next (after any whitespace), leaving it there.
    pub fn next_is(&mut self, b: u8) -> bool {
        self.p.skip_ws();
        self.p.peek() == Some(b)
    }

    /// Takes `b` (after any whitespace) if it comes next.
    pub fn eat(&mut self, b: u8) -> bool {
        self.p.skip_ws();
        let next = self.p.peek() == Some(b);
        if next {
            self.p.pos += 1;
        }
        next
    }

    /// An object key written without escapes, and the colon after it.
    pub fn key(&mut self) -> Option<&'a [u8]> {
        self.p.skip_ws();
        if self.p.peek() != Some(b'"') {
            return None;
        }
        let bytes = self.p.bytes;
        let start = self.p.pos + 1;
        let len = bytes[start..]
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if bytes[start + len] != b'"' {
            return None;
        }
        self.p.pos = start + len + 1;
        self.eat(b':').then_some(&bytes[start..start + len])
    }

    /// The value that comes next, sitting at `depth` (the root is 0).
    pub fn value(&mut self, depth: usize) -> Option<Value> {
        self.p.skip_ws();
        self.p.value(depth).ok()
    }

    /// Whether only whitespace is left.
    pub fn at_end(&mut self) -> bool {
        self.p.skip_ws();
        self.p.pos == self.p.bytes.len()
    }
}

struct Parser<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
    /// Members of the objects being parsed, innermost last: each object takes its members
    /// out in one exactly-sized allocation when it closes (no growth, no slack).
    members: Vec<(Text, Value)>,
    /// Items of the arrays being parsed, likewise.
    items: Vec<Value>,
}

impl Parser<'_> {
    fn err(&self, kind: ParseErrorKind) -> ParseError {
        ParseError {
            kind,
            offset: self.pos,
        }
    }

    fn unexpected(&self) -> ParseError {
        match self.text.get(self.pos..).and_then(|s| s.chars().next()) {
            Some(c) => self.err(ParseErrorKind::UnexpectedCharacter(c)),
            None => self.err(ParseErrorKind::UnexpectedEnd),
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.err(ParseErrorKind::TooDeep));
        }
        match self.peek() {
            None => Err(self.err(ParseErrorKind::UnexpectedEnd)),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => self.literal(),
        }
    }

    fn literal(&mut self) -> Result<Value, ParseError> {
        let rest = &self.bytes[self.pos..];
        for (word, value) in [
            (&b"null"[..], Some(Value::Null)),
            (b"true", Some(Value::Bool(true))),
            (b"false", Some(Value::Bool(false))),
            (b"NaN", None),
            (b"Infinity", None),
        ] {
            if rest.starts_with(word) {
                return match value {
                    Some(v) => {
                        self.pos += word.len();
                        Ok(v)
                    }
                    None => Err(self.err(ParseErrorKind::NonFiniteNumber)),
                };
            }
        }
        Err(self.unexpected())
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
            if self.bytes[self.pos..].starts_with(b"Infinity") {
                return Err(self.err(ParseErrorKind::NonFiniteNumber));
            }
        }
        let int_start = self.pos;
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err(ParseErrorKind::InvalidNumber)),
        }
        let int_digits = self.pos - int_start;
        let mut is_float = false;
        // Python's number pattern only takes a fraction or exponent when digits follow;
        // otherwise the number ends and the leftover is trailing data.
        if self.peek() == Some(b'.') && matches!(self.bytes.get(self.pos + 1), Some(b'0'..=b'9')) {
            self.pos += 1;
            self.digits();
            is_float = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            let save = self.pos;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                self.pos = save;
            } else {
                is_float = true;
            }
        }
        let literal = &self.text[start..self.pos];
        if is_float {
            let f: f64 = literal.parse().map_err(|_| ParseError {
                kind: ParseErrorKind::InvalidNumber,
                offset: start,
            })?;
            if !f.is_finite() {
                return Err(ParseError {
                    kind: ParseErrorKind::NonFiniteNumber,
                    offset: start,
                });
            }
            Ok(Value::Float(f))
        } else {
            if int_digits > MAX_INT_DIGITS {
                return Err(ParseError {
                    kind: ParseErrorKind::IntegerTooLong,
                    offset: start,
                });
            }
            Int::parse_decimal(literal)
                .map(Value::Int)
                .ok_or(ParseError {
                    kind: ParseErrorKind::InvalidNumber,
                    offset: start,
                })
        }
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(b @ b'0'..=b'9') => u32::from(b - b'0'),
                Some(b @ b'a'..=b'f') => u32::from(b - b'a' + 10),
                Some(b @ b'A'..=b'F') => u32::from(b - b'A' + 10),
                _ => return Err(self.err(ParseErrorKind::InvalidEscape)),
            };
            v = v * 16 + d;
            self.pos += 1;
        }
        Ok(v)
    }

    fn string(&mut self) -> Result<Text, ParseError> {
        self.pos += 1; // opening quote
        let mut out: Vec<u8> = Vec::new();
        let mut surrogate = false;
        loop {
            let run_start = self.pos;
            let plain;
            (self.pos, plain) = super::scan::plain_run_end(self.bytes, self.pos);
            if self.peek() == Some(b'"') && out.is_empty() && !surrogate {
                // No escapes: the text is a slice of the (UTF-8) input; no buffer needed.
                // Both ends are at ASCII bytes of the (UTF-8) input: whole characters.
                let t = match self.text.get(run_start..self.pos) {
                    Some(run) if plain => Text::from_plain_slice(run),
                    Some(run) => Text::from_str_slice(run),
                    None => Text::from_wtf8(self.bytes[run_start..self.pos].to_vec()),
                };
                self.pos += 1;
                return Ok(t);
            }
            out.extend_from_slice(&self.bytes[run_start..self.pos]);
            match self.peek() {
                None => return Err(self.err(ParseErrorKind::UnexpectedEnd)),
                Some(b'"') => {
                    self.pos += 1;
                    // Input text is UTF-8; only a lone surrogate escape can break that.
                    return Ok(Text::from_wtf8(out));
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let Some(e) = self.peek() else {
                        return Err(self.err(ParseErrorKind::UnexpectedEnd));
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0c),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xd800..0xdc00).contains(&cp)
                                && self.bytes[self.pos..].starts_with(b"\\u")
                            {
                                let save = self.pos;
                                self.pos += 2;
                                let low = self.hex4()?;
                                if (0xdc00..0xe000).contains(&low) {
                                    cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                                } else {
                                    self.pos = save;
                                }
                            }
                            surrogate |= (0xd800..0xe000).contains(&cp);
                            push_code_point(&mut out, cp);
                        }
                        _ => {
                            self.pos -= 1;
                            return Err(self.err(ParseErrorKind::InvalidEscape));
                        }
                    }
                }
                Some(_) => return Err(self.err(ParseErrorKind::ControlCharacterInString)),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(Vec::new()));
        }
        let base = self.items.len();
        let result = self.array_items(depth);
        let items = take_from(&mut self.items, base);
        result.map(|()| Value::Array(items))
    }

    fn array_items(&mut self, depth: usize) -> Result<(), ParseError> {
        loop {
            self.skip_ws();
            let item = self.value(depth + 1)?;
            self.items.push(item);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(Object::from_members(Vec::new())));
        }
        let base = self.members.len();
        let result = self.object_members(depth, base);
        let members = take_from(&mut self.members, base);
        result.map(|()| Value::Object(Object::from_members(members)))
    }

    fn object_members(&mut self, depth: usize, base: usize) -> Result<(), ParseError> {
        // Small objects check duplicates by scanning; large ones switch to a hash set.
        let mut seen: Option<HashSet<Text>> = None;
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.unexpected());
            }
            let key_at = self.pos;
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.unexpected());
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(depth + 1)?;
            let mine = &self.members[base..];
            let duplicate = match &mut seen {
                Some(set) => !set.insert(key.clone()),
                None if mine.len() < 16 => mine.iter().any(|(k, _)| *k == key),
                None => {
                    let mut set: HashSet<Text> = mine.iter().map(|(k, _)| k.clone()).collect();
                    let dup = !set.insert(key.clone());
                    seen = Some(set);
                    dup
                }
            };
            if duplicate {
                return Err(ParseError {
                    kind: ParseErrorKind::DuplicateKey(key.to_lossy()),
                    offset: key_at,
                });
            }
            self.members.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.unexpected()),
            }
        }
    }
}

/// Entries past which a container that is the whole stack takes the stack's buffer.
const HANDED_OVER: usize = 1024;

/// The entries of `stack` from `base` on, in an exactly sized vector. When they are the whole
/// stack and many, the stack's own buffer is shrunk and handed over rather than copied: a
/// huge list then never needs two copies of itself at once. A few are copied, which costs
/// less than shrinking the buffer, and the buffer stays for the next container.
fn take_from<T>(stack: &mut Vec<T>, base: usize) -> Vec<T> {
    if base == 0 && stack.len() > HANDED_OVER {
        let mut all = std::mem::take(stack);
        all.shrink_to_fit();
        all
    } else {
        stack.drain(base..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parsed_list_is_exactly_sized_whether_copied_or_handed_over() {
        fn check(v: &Value) {
            if let Value::Array(items) = v {
                assert_eq!(items.capacity(), items.len(), "{} items", items.len());
                items.iter().for_each(check);
            }
        }
        for n in [1, 3, 5, HANDED_OVER, HANDED_OVER + 1, 3000] {
            let list = format!("[{}]", vec!["1"; n].join(","));
            let nested = format!("[[{list},{list}],{list}]");
            let inner = format!("{{\"a\":{list},\"b\":[{list}]}}");
            for text in [&list, &nested, &inner] {
                let v = parse(text).expect("valid");
                check(&v);
                if let Value::Object(o) = &v {
                    o.iter().for_each(|(_, v)| check(v));
                }
                assert_eq!(&crate::json::compact(&v), text, "read whole");
            }
        }
    }

    fn kind(text: &str) -> ParseErrorKind {
        match parse(text) {
            Err(e) => e.kind,
            Ok(v) => panic!("{text:?} parsed as {v:?}"),
        }
    }

    #[test]
    fn rejects_what_python_rejects() {
        assert_eq!(kind("01"), ParseErrorKind::TrailingData);
        assert_eq!(kind("1."), ParseErrorKind::TrailingData);
        assert_eq!(kind("[1,]"), ParseErrorKind::UnexpectedCharacter(']'));
        assert_eq!(kind("NaN"), ParseErrorKind::NonFiniteNumber);
        assert_eq!(kind("-Infinity"), ParseErrorKind::NonFiniteNumber);
        assert_eq!(kind("1e999"), ParseErrorKind::NonFiniteNumber);
        assert_eq!(
            kind("{\"a\":1,\"a\":2}"),
            ParseErrorKind::DuplicateKey("a".into())
        );
        assert_eq!(kind("\u{feff}{}"), ParseErrorKind::ByteOrderMark);
        assert_eq!(kind(""), ParseErrorKind::UnexpectedEnd);
        assert_eq!(kind("'a'"), ParseErrorKind::UnexpectedCharacter('\''));
        assert_eq!(kind("\"a\u{1}\""), ParseErrorKind::ControlCharacterInString);
        assert_eq!(kind(&"9".repeat(4301)), ParseErrorKind::IntegerTooLong);
        assert!(parse(&"9".repeat(4300)).is_ok());
    }

    #[test]
    fn depth_counts_values_not_brackets() {
        let ok = format!("{}{}", "[".repeat(33), "]".repeat(33));
        assert!(parse(&ok).is_ok(), "empty array at depth 32 is fine");
        let deep = format!("{}1{}", "[".repeat(33), "]".repeat(33));
        assert_eq!(kind(&deep), ParseErrorKind::TooDeep);
        let huge = "[".repeat(1_000_000);
        assert_eq!(kind(&huge), ParseErrorKind::TooDeep);
    }

    #[test]
    fn keeps_int_float_and_surrogates() {
        assert_eq!(parse("0").ok(), Some(Value::Int(Int::Small(0))));
        assert!(matches!(parse("-0.0"), Ok(Value::Float(f)) if f.is_sign_negative()));
        assert!(matches!(parse("1E2"), Ok(Value::Float(f)) if f == 100.0));
        let Ok(Value::Str(t)) = parse("\"\\ud83d\\ude00\\udc00x\"") else {
            panic!()
        };
        assert_eq!(
            t.code_points().collect::<Vec<_>>(),
            vec![0x1f600, 0xdc00, 0x78]
        );
    }
}
