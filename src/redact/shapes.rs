//! Secrets known by their shape, wherever they stand in a piece of text (an argument of a
//! command line): the user part of a URL (`https://bob:pw@host` → `https://[REDACTED]@host`)
//! and tokens whose prefix names their issuer (`sk-…`, `ghp_…`, `xoxb-…`).

use super::MARKER;

/// `text` with every URL's user part and every token of a known shape replaced.
pub fn redacted(text: &str) -> String {
    tokens(&user_parts(text))
}

/// Every `scheme://user:password@host` in `text` with its user part (up to the last `@`
/// before the host's end) replaced: `https://[REDACTED]@host`.
fn user_parts(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| matches!(c, '/' | '?' | '#' | '"' | '\'') || c.is_whitespace())
            .unwrap_or(tail.len());
        match tail[..end].rfind('@') {
            Some(user_end) if user_end > 0 => {
                out.push_str(MARKER);
                rest = &tail[user_end..];
            }
            _ => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// Known shapes of tokens: a prefix, the characters of the rest, and how long the rest is at
/// least. OpenAI's and Anthropic's `sk-`, GitHub's `ghp_` (and `gho_`, `ghu_`, `ghs_`, `ghr_`,
/// `github_pat_`), Slack's `xoxb-`, `xoxp-`, `xoxa-`, `xoxs-`.
const TOKEN_SHAPES: [(&str, &[u8], usize); 11] = [
    ("sk-", b"-_", 16),
    ("ghp_", b"_", 16),
    ("gho_", b"_", 16),
    ("ghu_", b"_", 16),
    ("ghs_", b"_", 16),
    ("ghr_", b"_", 16),
    ("github_pat_", b"_", 16),
    ("xoxb-", b"-", 10),
    ("xoxp-", b"-", 10),
    ("xoxa-", b"-", 10),
    ("xoxs-", b"-", 10),
];

/// `text` with every token of a known shape ([`TOKEN_SHAPES`]) replaced: one that starts
/// where a word does (not after a letter, digit or `_`), and whose rest is long enough and
/// holds a letter and a digit (`sk-learn-...` is a name, not a key).
fn tokens(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        let starts = at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        let found = starts.then(|| token_at(&bytes[at..])).flatten();
        match found {
            Some(len) => {
                out.push_str(&text[copied..at]);
                out.push_str(MARKER);
                at += len;
                copied = at;
            }
            None => at += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The length of the token of a known shape at the start of `bytes`, if one is there.
fn token_at(bytes: &[u8]) -> Option<usize> {
    for (prefix, extra, least) in TOKEN_SHAPES {
        let Some(body) = bytes.strip_prefix(prefix.as_bytes()) else {
            continue;
        };
        let len = body
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || extra.contains(b))
            .count();
        let body = &body[..len];
        if len >= least
            && body.iter().any(u8::is_ascii_digit)
            && body.iter().any(u8::is_ascii_alphabetic)
        {
            return Some(prefix.len() + len);
        }
    }
    None
}
