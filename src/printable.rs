//! How text taken from files reaches a person: one function, [`printable`], escapes every
//! character that could act on a terminal instead of being shown — C0 and C1 controls (ESC
//! starts the sequences that retitle a terminal or move its cursor), DEL, line and paragraph
//! separators, and the bidirectional overrides and isolates that reorder what is displayed —
//! and cuts text longer than a limit, saying how much was left out. Both faces use it: every
//! line the command line prints, every error line, and every name the explorer draws.

use std::borrow::Cow;
use std::fmt::Write;

use crate::json::Text;

/// The most characters of one name, key or value quoted in a message or drawn on screen.
pub const MAX_QUOTED: usize = 200;
/// The most characters of one printed line (an error, a table row) before it is cut.
pub const MAX_LINE: usize = 4000;

/// Whether `c` must not reach a terminal as itself.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'              // Arabic letter mark
            | '\u{200e}' | '\u{200f}' // left-to-right / right-to-left marks
            | '\u{2028}' | '\u{2029}' // line / paragraph separators
            | '\u{202a}'..='\u{202e}' // embeddings and overrides
            | '\u{2066}'..='\u{2069}' // isolates
        )
}

/// `s` with unsafe characters escaped (`\n`, `\t`, `\r`, `\x1b`, `\u202e`) and, past
/// `max_chars` characters, cut with a note of how many were left out. Borrowed when nothing
/// had to change.
pub fn printable(s: &str, max_chars: usize) -> Cow<'_, str> {
    let long = s.len() > max_chars && s.chars().nth(max_chars).is_some();
    if !long && !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len().min(max_chars.saturating_mul(2)) + 16);
    let mut chars = s.chars();
    for c in chars.by_ref().take(max_chars) {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if is_unsafe(c) && (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_unsafe(c) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    if long {
        let rest = chars.count();
        let _ = write!(out, "… ({rest} more characters)");
    }
    Cow::Owned(out)
}

/// A name, key or value from a file, for a message or the screen: escaped, cut at
/// [`MAX_QUOTED`] characters.
pub fn quoted(s: &str) -> Cow<'_, str> {
    printable(s, MAX_QUOTED)
}

/// A whole line for a terminal: escaped, cut at [`MAX_LINE`] characters.
pub fn line(s: &str) -> Cow<'_, str> {
    printable(s, MAX_LINE)
}

/// A JSON string from a file, for the screen or a message: its first [`MAX_QUOTED`]
/// characters (lone surrogates as U+FFFD), escaped, with a note of how many were left out.
/// Only the shown part is decoded, so a name of millions of characters costs little.
pub fn shown(t: &Text) -> String {
    let mut points = t.code_points();
    let head: String = points
        .by_ref()
        .take(MAX_QUOTED)
        .map(|c| char::from_u32(c).unwrap_or('\u{fffd}'))
        .collect();
    let rest = points.count();
    let mut out = printable(&head, MAX_QUOTED).into_owned();
    if rest > 0 {
        let _ = write!(out, "… ({rest} more characters)");
    }
    out
}

/// `1 call`, `2 calls`: a count with its noun, singular for one.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_acts_on_a_terminal() {
        assert_eq!(printable("plain", 10), "plain");
        assert!(matches!(printable("plain", 10), Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}]0;owned\u{7}b", 100),
            "a\\x1b]0;owned\\x07b"
        );
        assert_eq!(printable("x\ny\tz\r", 100), "x\\ny\\tz\\r");
        assert_eq!(printable("evil\u{202e}txt.exe", 100), "evil\\u202etxt.exe");
        assert_eq!(printable("\u{9b}31m", 100), "\\x9b31m");
        assert_eq!(printable("é ✓ 日本", 100), "é ✓ 日本");
    }

    #[test]
    fn cuts_long_text_and_says_how_much() {
        assert_eq!(printable("abcdef", 3), "abc… (3 more characters)");
        assert_eq!(printable("abc", 3), "abc");
        let big = "a".repeat(7_000_000);
        let shown = quoted(&big);
        assert!(shown.len() < 300, "{}", shown.len());
        assert!(shown.ends_with("(6999800 more characters)"));
    }
}
