//! `Text`: a JSON string as the reference keeps it — any sequence of Unicode code points,
//! including lone surrogates that arrived through `\udXXX` escapes.
//!
//! Stored as WTF-8 (UTF-8 extended to encode surrogate code points), so byte order equals
//! code-point order, which is the key order canonical JSON uses.

use std::fmt;

/// A JSON string value. Almost always valid UTF-8; lone surrogates are kept when present.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Text {
    bytes: Box<[u8]>,
    utf8: bool,
}

impl Text {
    /// Builds from bytes the caller knows are valid UTF-8 (no surrogates).
    pub(crate) fn from_utf8_unchecked_flag(bytes: Vec<u8>) -> Self {
        Text {
            bytes: bytes.into_boxed_slice(),
            utf8: true,
        }
    }

    /// Builds from a WTF-8 byte buffer produced by the parser.
    pub(crate) fn from_wtf8(bytes: Vec<u8>) -> Self {
        let utf8 = std::str::from_utf8(&bytes).is_ok();
        Text {
            bytes: bytes.into_boxed_slice(),
            utf8,
        }
    }

    /// The string as `&str`, or `None` when it holds a lone surrogate.
    pub fn as_str(&self) -> Option<&str> {
        if self.utf8 {
            std::str::from_utf8(&self.bytes).ok()
        } else {
            None
        }
    }

    /// The WTF-8 bytes (UTF-8 when [`Text::as_str`] is `Some`).
    pub fn as_wtf8(&self) -> &[u8] {
        &self.bytes
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
        self.bytes.is_empty()
    }

    /// Iterates over the code points, surrogates included.
    pub fn code_points(&self) -> CodePoints<'_> {
        CodePoints {
            bytes: &self.bytes,
            pos: 0,
        }
    }

    /// Applies `f` to the UTF-8 runs of the text, leaving lone surrogates where they are.
    /// Used by redaction (replacement and lowercasing never touch surrogates).
    pub fn map_utf8_runs(&self, mut f: impl FnMut(&str) -> String) -> Text {
        if let Some(s) = self.as_str() {
            return Text::from(f(s));
        }
        let mut out = Vec::with_capacity(self.bytes.len());
        let mut run_start = 0;
        let mut i = 0;
        while i < self.bytes.len() {
            let width = utf8_width(self.bytes[i]);
            if is_surrogate_at(&self.bytes, i) {
                flush_run(&self.bytes[run_start..i], &mut out, &mut f);
                out.extend_from_slice(&self.bytes[i..i + 3]);
                i += 3;
                run_start = i;
            } else {
                i += width;
            }
        }
        flush_run(&self.bytes[run_start..], &mut out, &mut f);
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
        Text {
            bytes: s.as_bytes().into(),
            utf8: true,
        }
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Text {
            bytes: s.into_bytes().into_boxed_slice(),
            utf8: true,
        }
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        &*self.bytes == other.as_bytes()
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        &*self.bytes == other.as_bytes()
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
