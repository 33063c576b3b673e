//! `Text`: a JSON string as the reference keeps it — any sequence of Unicode code points,
//! including lone surrogates that arrived through `\udXXX` escapes.
//!
//! Stored as WTF-8 (UTF-8 extended to encode surrogate code points), so byte order equals
//! code-point order, which is the key order canonical JSON uses.

use std::fmt;

/// Strings up to this many bytes live inline, without a heap allocation (keys, tool names,
/// statuses: most strings in a trace).
const INLINE: usize = 21;

/// What an inline text's bytes are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Short {
    /// WTF-8 holding a lone surrogate.
    Wtf8,
    /// Valid UTF-8.
    Utf8,
    /// Printable ASCII without a quote or a backslash (seen so when it was made): the encoder
    /// copies it without a look, or a check of its UTF-8.
    Plain,
}

#[derive(Clone)]
enum Repr {
    Inline {
        len: u8,
        kind: Short,
        buf: [u8; INLINE],
    },
    /// Valid UTF-8, checked once when it was made: [`Text::as_str`] costs nothing.
    Str(Box<str>),
    /// Printable ASCII without a quote or a backslash, as the parser found it: a JSON string
    /// literal holds it as it is, and the encoder copies it without looking.
    Plain(Box<str>),
    /// WTF-8 holding a lone surrogate.
    Wtf8(Box<[u8]>),
}

/// A JSON string value. Almost always valid UTF-8; lone surrogates are kept when present.
#[derive(Clone)]
pub struct Text {
    repr: Repr,
}

impl Text {
    fn inline(bytes: &[u8], utf8: bool) -> Option<Self> {
        if bytes.len() > INLINE {
            return None;
        }
        let kind = match utf8 {
            false => Short::Wtf8,
            true if super::scan::is_plain_ascii(bytes) => Short::Plain,
            true => Short::Utf8,
        };
        Text::inline_as(bytes, kind)
    }

    /// [`Text::inline`] for bytes whose kind the caller already knows.
    fn inline_as(bytes: &[u8], kind: Short) -> Option<Self> {
        if bytes.len() > INLINE {
            return None;
        }
        let mut buf = [0u8; INLINE];
        buf[..bytes.len()].copy_from_slice(bytes);
        Some(Text {
            repr: Repr::Inline {
                len: bytes.len() as u8,
                kind,
                buf,
            },
        })
    }

    /// Builds from a string slice.
    pub(crate) fn from_str_slice(s: &str) -> Self {
        Text::inline(s.as_bytes(), true).unwrap_or_else(|| Text {
            repr: Repr::Str(s.into()),
        })
    }

    /// Builds from a string slice the caller knows to be printable ASCII without a quote or
    /// a backslash ([`Text::is_plain`] then says so).
    pub(crate) fn from_plain_slice(s: &str) -> Self {
        Text::inline_as(s.as_bytes(), Short::Plain).unwrap_or_else(|| Text {
            repr: Repr::Plain(s.into()),
        })
    }

    /// Whether the text is known to need no escaping in JSON (a long string the parser found
    /// plain, or a short one seen so when it was made); false says only that it is not known.
    #[inline]
    pub(crate) fn is_plain(&self) -> bool {
        matches!(
            self.repr,
            Repr::Plain(_)
                | Repr::Inline {
                    kind: Short::Plain,
                    ..
                }
        )
    }

    /// Appends the text as it is to `out` when it is known to need no escaping in JSON
    /// ([`Text::is_plain`]); false (and nothing written) when it is not known.
    #[inline]
    pub(crate) fn push_plain(&self, out: &mut String) -> bool {
        match &self.repr {
            Repr::Plain(s) => out.push_str(s),
            Repr::Inline {
                len,
                kind: Short::Plain,
                buf,
            } => out.extend(buf[..usize::from(*len)].iter().map(|&b| char::from(b))),
            _ => return false,
        }
        true
    }

    /// Builds from a WTF-8 byte buffer produced by the parser.
    pub(crate) fn from_wtf8(bytes: Vec<u8>) -> Self {
        match String::from_utf8(bytes) {
            Ok(s) => Text::from(s),
            Err(e) => {
                let bytes = e.into_bytes();
                Text::inline(&bytes, false).unwrap_or_else(|| Text {
                    repr: Repr::Wtf8(bytes.into_boxed_slice()),
                })
            }
        }
    }

    /// The string as `&str`, or `None` when it holds a lone surrogate.
    pub fn as_str(&self) -> Option<&str> {
        match &self.repr {
            Repr::Str(s) | Repr::Plain(s) => Some(s),
            Repr::Inline { len, kind, buf } if *kind != Short::Wtf8 => {
                std::str::from_utf8(&buf[..usize::from(*len)]).ok()
            }
            _ => None,
        }
    }

    /// The WTF-8 bytes (UTF-8 when [`Text::as_str`] is `Some`).
    #[inline]
    pub fn as_wtf8(&self) -> &[u8] {
        match &self.repr {
            Repr::Inline { len, buf, .. } => &buf[..usize::from(*len)],
            Repr::Str(s) | Repr::Plain(s) => s.as_bytes(),
            Repr::Wtf8(bytes) => bytes,
        }
    }

    /// The text with lone surrogates shown as U+FFFD; for messages and display only.
    pub fn to_lossy(&self) -> String {
        match self.as_str() {
            Some(s) => s.to_owned(),
            None => self
                .code_points()
                .map(|c| char::from_u32(c).unwrap_or('\u{fffd}'))
                .collect(),
        }
    }

    /// Number of code points (Python `len`).
    pub fn len_chars(&self) -> usize {
        self.code_points().count()
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.as_wtf8().is_empty()
    }

    /// Iterates over the code points, surrogates included.
    pub fn code_points(&self) -> CodePoints<'_> {
        CodePoints {
            bytes: self.as_wtf8(),
            pos: 0,
        }
    }

    /// Applies `f` to the UTF-8 runs of the text, leaving lone surrogates where they are.
    /// Used by redaction (replacement and lowercasing never touch surrogates).
    pub fn map_utf8_runs(&self, mut f: impl FnMut(&str) -> String) -> Text {
        if let Some(s) = self.as_str() {
            return Text::from(f(s));
        }
        let bytes = self.as_wtf8();
        let mut out = Vec::with_capacity(bytes.len());
        let mut run_start = 0;
        let mut i = 0;
        while i < bytes.len() {
            let width = utf8_width(bytes[i]);
            if is_surrogate_at(bytes, i) {
                flush_run(&bytes[run_start..i], &mut out, &mut f);
                out.extend_from_slice(&bytes[i..i + 3]);
                i += 3;
                run_start = i;
            } else {
                i += width;
            }
        }
        flush_run(&bytes[run_start..], &mut out, &mut f);
        Text::from_wtf8(out)
    }
}

fn flush_run(run: &[u8], out: &mut Vec<u8>, f: &mut impl FnMut(&str) -> String) {
    if run.is_empty() {
        return;
    }
    // A run between surrogates is valid UTF-8 by construction.
    let s = String::from_utf8_lossy(run);
    out.extend_from_slice(f(&s).as_bytes());
}

fn utf8_width(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

fn is_surrogate_at(bytes: &[u8], i: usize) -> bool {
    bytes[i] == 0xed && bytes.get(i + 1).is_some_and(|b| *b >= 0xa0)
}

/// Iterator over the code points of a [`Text`].
pub struct CodePoints<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Iterator for CodePoints<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        let b = self.bytes;
        let i = self.pos;
        let first = *b.get(i)?;
        let width = utf8_width(first);
        let cont = |k: usize| u32::from(b.get(i + k).copied().unwrap_or(0x80) & 0x3f);
        let cp = match width {
            1 => u32::from(first),
            2 => (u32::from(first & 0x1f) << 6) | cont(1),
            3 => (u32::from(first & 0x0f) << 12) | (cont(1) << 6) | cont(2),
            _ => (u32::from(first & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
        };
        self.pos += width;
        Some(cp)
    }
}

/// Appends the WTF-8 encoding of a code point (surrogates allowed).
pub(crate) fn push_code_point(out: &mut Vec<u8>, cp: u32) {
    match cp {
        0..=0x7f => out.push(cp as u8),
        0x80..=0x7ff => {
            out.push(0xc0 | (cp >> 6) as u8);
            out.push(0x80 | (cp & 0x3f) as u8);
        }
        0x800..=0xffff => {
            out.push(0xe0 | (cp >> 12) as u8);
            out.push(0x80 | ((cp >> 6) & 0x3f) as u8);
            out.push(0x80 | (cp & 0x3f) as u8);
        }
        _ => {
            out.push(0xf0 | (cp >> 18) as u8);
            out.push(0x80 | ((cp >> 12) & 0x3f) as u8);
            out.push(0x80 | ((cp >> 6) & 0x3f) as u8);
            out.push(0x80 | (cp & 0x3f) as u8);
        }
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text::from_str_slice(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Text::inline(s.as_bytes(), true).unwrap_or_else(|| Text {
            repr: Repr::Str(s.into_boxed_str()),
        })
    }
}

// Equality, order and hashing are those of the code points, i.e. of the WTF-8 bytes.
impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_wtf8() == other.as_wtf8()
    }
}

impl Eq for Text {}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Text) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Text) -> std::cmp::Ordering {
        self.as_wtf8().cmp(other.as_wtf8())
    }
}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_wtf8().hash(state);
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_wtf8() == other.as_bytes()
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_wtf8() == other.as_bytes()
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_lossy())
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_lossy())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_strings_behave_alike() {
        let short = Text::from("key");
        let long = Text::from("a string well over twenty-one bytes".to_owned());
        assert_eq!(short.as_str(), Some("key"));
        assert_eq!(long.as_str(), Some("a string well over twenty-one bytes"));
        assert!(
            short > long,
            "code-point order holds across representations"
        );
        assert_eq!(
            Text::from("x".repeat(21)),
            Text::from("x".repeat(21).as_str())
        );
        assert_eq!(std::mem::size_of::<Text>(), 24);
        for n in [5, 30] {
            let plain = Text::from_plain_slice(&"p".repeat(n));
            assert!(plain.is_plain());
            let mut out = String::new();
            assert!(plain.push_plain(&mut out));
            assert_eq!(Some(out.as_str()), plain.as_str());
            assert_eq!(
                plain,
                Text::from("p".repeat(n)),
                "the same text, however made"
            );
        }
        assert!(
            !Text::from("p".repeat(30)).is_plain(),
            "a long text not made by the parser is not known plain"
        );
        assert!(Text::from("key").is_plain(), "a short one is seen so");
        for short in ["a\"b", "back\\slash", "tab\there", "caf\u{e9}", ""] {
            let t = Text::from(short);
            assert_eq!(t.is_plain(), short.is_empty(), "{short:?}");
            let mut out = String::new();
            assert_eq!(t.push_plain(&mut out), short.is_empty(), "{short:?}");
            assert!(out.is_empty(), "nothing written for {short:?}");
        }
        let mut lone = Vec::new();
        push_code_point(&mut lone, 0xd800);
        assert!(!Text::from_wtf8(lone).is_plain(), "a lone surrogate");
    }

    #[test]
    fn surrogates_sort_between_bmp_ranges() {
        let mut lone = Vec::new();
        push_code_point(&mut lone, 0xd800);
        let lone = Text::from_wtf8(lone);
        assert!(lone.as_str().is_none());
        assert_eq!(Text::from("\u{d7ff}").cmp(&lone), std::cmp::Ordering::Less);
        assert_eq!(lone.cmp(&Text::from("\u{e000}")), std::cmp::Ordering::Less);
        assert_eq!(lone.code_points().collect::<Vec<_>>(), vec![0xd800]);
    }

    #[test]
    fn map_runs_keeps_surrogates() {
        let mut b = b"AB".to_vec();
        push_code_point(&mut b, 0xdc01);
        b.extend_from_slice(b"CD");
        let t = Text::from_wtf8(b);
        let lower = t.map_utf8_runs(|s| s.to_lowercase());
        assert_eq!(
            lower.code_points().collect::<Vec<_>>(),
            vec![0x61, 0x62, 0xdc01, 0x63, 0x64]
        );
    }
}
