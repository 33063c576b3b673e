//! Tool-name globs with Python `fnmatch.fnmatchcase` semantics (Python 3.11): case-sensitive,
//! whole-string; `*`, `?`, `[seq]`, `[!seq]`; a leading `^` in a class is literal; backslash
//! is literal; a reversed range matches nothing; an unclosed `[` is literal.
//!
//! Classes are compiled the way `fnmatch.translate` builds them (the chunk logic that drops
//! reversed ranges) and then read the way Python's regex parser reads a set, so odd classes
//! such as `[a-c-e]` behave exactly like the reference.

use crate::json::Text;

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Literal(u32),
    Any,
    Star,
    Class {
        negate: bool,
        items: Vec<(u32, u32)>,
    },
    Never,
}

/// A compiled tool-name pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct Glob {
    tokens: Vec<Token>,
}

const DASH: u32 = '-' as u32;
const BANG: u32 = '!' as u32;
const CLOSE: u32 = ']' as u32;
const OPEN: u32 = '[' as u32;
const CARET: u32 = '^' as u32;
const BACKSLASH: u32 = '\\' as u32;

impl Glob {
    /// Compiles a pattern.
    pub fn new(pattern: &Text) -> Glob {
        let pat: Vec<u32> = pattern.code_points().collect();
        let n = pat.len();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < n {
            let c = pat[i];
            i += 1;
            match char::from_u32(c) {
                Some('*') => {
                    if tokens.last() != Some(&Token::Star) {
                        tokens.push(Token::Star);
                    }
                }
                Some('?') => tokens.push(Token::Any),
                Some('[') => {
                    let mut j = i;
                    if j < n && pat[j] == BANG {
                        j += 1;
                    }
                    if j < n && pat[j] == CLOSE {
                        j += 1;
                    }
                    while j < n && pat[j] != CLOSE {
                        j += 1;
                    }
                    if j >= n {
                        tokens.push(Token::Literal(OPEN));
                    } else {
                        tokens.push(class_token(&pat, i, j));
                        i = j + 1;
                    }
                }
                _ => tokens.push(Token::Literal(c)),
            }
        }
        Glob { tokens }
    }

    /// Whether `name` matches the whole pattern.
    pub fn matches(&self, name: &Text) -> bool {
        let s: Vec<u32> = name.code_points().collect();
        let t = &self.tokens;
        let (mut ti, mut si) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        loop {
            if ti < t.len() {
                match &t[ti] {
                    Token::Star => {
                        star = Some((ti, si));
                        ti += 1;
                        continue;
                    }
                    tok if si < s.len() && single_matches(tok, s[si]) => {
                        ti += 1;
                        si += 1;
                        continue;
                    }
                    _ => {}
                }
            } else if si == s.len() {
                return true;
            }
            match star {
                Some((st, ss)) if ss < s.len() => {
                    star = Some((st, ss + 1));
                    ti = st + 1;
                    si = ss + 1;
                }
                _ => return false,
            }
        }
    }
}

fn single_matches(tok: &Token, c: u32) -> bool {
    match tok {
        Token::Literal(l) => *l == c,
        Token::Any => true,
        Token::Class { negate, items } => {
            items.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negate
        }
        Token::Never | Token::Star => false,
    }
}

/// One element of the regex set text that `fnmatch.translate` produces.
#[derive(Clone, Copy, PartialEq)]
enum SetChar {
    Plain(u32),
    Escaped(u32),
}

fn class_token(pat: &[u32], start: usize, j: usize) -> Token {
    let mut i = start;
    let stuff_raw = &pat[i..j];
    let mut stuff: Vec<SetChar> = Vec::new();
    if !stuff_raw.contains(&DASH) {
        for &c in stuff_raw {
            stuff.push(if c == BACKSLASH {
                SetChar::Escaped(c)
            } else {
                SetChar::Plain(c)
            });
        }
    } else {
        let mut chunks: Vec<Vec<u32>> = Vec::new();
        let mut k = if pat[i] == BANG { i + 2 } else { i + 1 };
        loop {
            let found = (k..j).find(|&x| pat[x] == DASH);
            let Some(pos) = found else { break };
            chunks.push(pat[i..pos].to_vec());
            i = pos + 1;
            k = pos + 3;
        }
        let chunk = pat[i..j].to_vec();
        if !chunk.is_empty() {
            chunks.push(chunk);
        } else if let Some(last) = chunks.last_mut() {
            last.push(DASH);
        }
        // Drop reversed ranges (fnmatch does this because they are invalid in a regex).
        let mut k = chunks.len();
        while k > 1 {
            k -= 1;
            let (Some(&a), Some(&b)) = (chunks[k - 1].last(), chunks[k].first()) else {
                // Python raises IndexError here; such a pattern can never be evaluated.
                return Token::Never;
            };
            if a > b {
                let tail = chunks[k][1..].to_vec();
                chunks[k - 1].pop();
                chunks[k - 1].extend(tail);
                chunks.remove(k);
            }
        }
        for (ci, chunk) in chunks.iter().enumerate() {
            if ci > 0 {
                stuff.push(SetChar::Plain(DASH));
            }
            for &c in chunk {
                stuff.push(if c == BACKSLASH || c == DASH {
                    SetChar::Escaped(c)
                } else {
                    SetChar::Plain(c)
                });
            }
        }
    }
    // Set operations are escaped: they become literal members.
    let stuff: Vec<SetChar> = stuff
        .into_iter()
        .map(|sc| match sc {
            SetChar::Plain(c) if matches!(char::from_u32(c), Some('&' | '~' | '|')) => {
                SetChar::Escaped(c)
            }
            other => other,
        })
        .collect();
    if stuff.is_empty() {
        return Token::Never;
    }
    if stuff == [SetChar::Plain(BANG)] {
        return Token::Any;
    }
    let (negate, body): (bool, Vec<SetChar>) = match stuff[0] {
        SetChar::Plain(BANG) => (true, stuff[1..].to_vec()),
        SetChar::Plain(c) if c == CARET || c == OPEN => {
            let mut b = vec![SetChar::Escaped(c)];
            b.extend_from_slice(&stuff[1..]);
            (false, b)
        }
        _ => (false, stuff),
    };
    read_regex_set(negate, &body)
}

/// Reads set text the way Python's `sre_parse` does: `x-y` is a range, anything else literal.
fn read_regex_set(negate: bool, body: &[SetChar]) -> Token {
    let value = |sc: SetChar| match sc {
        SetChar::Plain(c) | SetChar::Escaped(c) => c,
    };
    let mut items = Vec::new();
    let mut p = 0;
    while p < body.len() {
        let lo = value(body[p]);
        p += 1;
        if p + 1 < body.len() && body[p] == SetChar::Plain(DASH) {
            let hi = value(body[p + 1]);
            p += 2;
            if hi < lo {
                return Token::Never; // a regex error in Python; cannot match anything here
            }
            items.push((lo, hi));
        } else if p + 1 == body.len() && body[p] == SetChar::Plain(DASH) {
            // Trailing '-' before ']' is literal.
            items.push((lo, lo));
            items.push((DASH, DASH));
            p += 1;
        } else {
            items.push((lo, lo));
        }
    }
    Token::Class { negate, items }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, n: &str) -> bool {
        Glob::new(&Text::from(p)).matches(&Text::from(n))
    }

    #[test]
    fn basics() {
        assert!(m("*", ""));
        assert!(m("read_*", "read_x"));
        assert!(!m("read_*", "READ_x"));
        assert!(m("a?c", "abc"));
        assert!(m("[]]", "]"));
        assert!(m("[^a]", "^"));
        assert!(!m("[z-a]", "m"));
        assert!(m("a[", "a["));
        assert!(m("[a-c-e]", "-"));
        assert!(!m("[a-c-e]", "d"));
        assert!(m("[!a-c]", "d"));
        assert!(m("a\\b", "a\\b"));
        assert!(m("*a*b*", "xxaxxbxx"));
    }
}
