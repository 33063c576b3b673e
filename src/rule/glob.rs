//! Tool-name globs with Python `fnmatch.fnmatchcase` semantics (Python 3.11): case-sensitive,
//! whole-string; `*`, `?`, `[seq]`, `[!seq]`; a leading `^` in a class is literal; backslash
//! is literal; a reversed range matches nothing; an unclosed `[` is literal.
//!
//! Classes are compiled the way `fnmatch.translate` builds them (the chunk logic that drops
//! reversed ranges) and then read the way Python's regex parser reads a set, so odd classes
//! such as `[a-c-e]` behave exactly like the reference.
//!
//! Matching costs time linear in the name, whatever the pattern: the pattern is split at its
//! stars into segments; the first must match the name's start, the last its end, and each one
//! between is found at its leftmost place after the previous one (which is always right for
//! globs) with a bit-parallel scan (Shift-And), whose state is one bit per segment token. Short
//! names and patterns take the simple backtracking loop instead; both give the same answer.

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
    /// The token ranges between stars (the first and last may be empty).
    segments: Vec<std::ops::Range<usize>>,
}

/// Below this many token × code-point steps the backtracking loop is the faster way.
const SMALL_WORK: usize = 4096;

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
        let mut segments = Vec::new();
        let mut start = 0;
        for (i, t) in tokens.iter().enumerate() {
            if *t == Token::Star {
                segments.push(start..i);
                start = i + 1;
            }
        }
        segments.push(start..tokens.len());
        Glob { tokens, segments }
    }

    /// Whether `name` matches the whole pattern.
    pub fn matches(&self, name: &Text) -> bool {
        match name.as_str() {
            Some(s) => self.matches_str(s),
            None => {
                let s: Vec<u32> = name.code_points().collect();
                self.matches_code_points(&s)
            }
        }
    }

    /// Whether `name` matches the whole pattern; a short name is read on the stack.
    pub fn matches_str(&self, name: &str) -> bool {
        const SHORT: usize = 64;
        if name.len() > SHORT {
            let s: Vec<u32> = name.chars().map(u32::from).collect();
            return self.matches_code_points(&s);
        }
        let mut buf = [0u32; SHORT];
        let mut n = 0;
        for (slot, c) in buf.iter_mut().zip(name.chars()) {
            *slot = u32::from(c);
            n += 1;
        }
        self.matches_code_points(&buf[..n])
    }

    /// Whether a name, given as code points, matches the whole pattern.
    pub fn matches_code_points(&self, s: &[u32]) -> bool {
        if self.tokens.len().saturating_mul(s.len()) <= SMALL_WORK {
            self.matches_backtracking(s)
        } else {
            self.matches_by_segments(s)
        }
    }

    /// Prefix, leftmost middles, suffix: linear in the name.
    fn matches_by_segments(&self, s: &[u32]) -> bool {
        let t = &self.tokens;
        let seg = |r: &std::ops::Range<usize>| &t[r.clone()];
        let fits = |toks: &[Token], at: &[u32]| {
            toks.len() == at.len() && toks.iter().zip(at).all(|(k, c)| single_matches(k, *c))
        };
        let [first, middle @ .., last] = self.segments.as_slice() else {
            // No star: the whole name against the whole pattern.
            return fits(t, s);
        };
        let (head, tail) = (seg(first), seg(last));
        let needed: usize = self.segments.iter().map(ExactSizeIterator::len).sum();
        if s.len() < needed {
            return false;
        }
        if !fits(head, &s[..head.len()]) || !fits(tail, &s[s.len() - tail.len()..]) {
            return false;
        }
        let mut pos = head.len();
        let end = s.len() - tail.len();
        for m in middle {
            match leftmost(seg(m), &s[pos..end]) {
                Some(after) => pos += after,
                None => return false,
            }
        }
        true
    }

    /// The classic loop: remember the last star, retry one code point further on failure.
    fn matches_backtracking(&self, s: &[u32]) -> bool {
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

/// Where the leftmost occurrence of `seg` (no stars) in `s` ends, by Shift-And: bit `j` of the
/// state says "the first `j + 1` tokens match the text ending here". Each code point's mask is
/// computed once per distinct code point.
fn leftmost(seg: &[Token], s: &[u32]) -> Option<usize> {
    let m = seg.len();
    if m == 0 {
        return Some(0);
    }
    if m > s.len() {
        return None;
    }
    let words = m.div_ceil(64);
    let top = (m - 1) / 64;
    let top_bit = 1u64 << ((m - 1) % 64);
    let mut masks: std::collections::HashMap<u32, Vec<u64>> = std::collections::HashMap::new();
    let mut state = vec![0u64; words];
    for (i, &c) in s.iter().enumerate() {
        let mask = masks.entry(c).or_insert_with(|| {
            let mut bits = vec![0u64; words];
            for (j, tok) in seg.iter().enumerate() {
                if single_matches(tok, c) {
                    bits[j / 64] |= 1 << (j % 64);
                }
            }
            bits
        });
        // state = ((state << 1) | 1) & mask
        let mut carry = 1u64;
        for (w, bits) in state.iter_mut().zip(mask.iter()) {
            let next_carry = *w >> 63;
            *w = ((*w << 1) | carry) & bits;
            carry = next_carry;
        }
        if state[top] & top_bit != 0 {
            return Some(i + 1);
        }
    }
    None
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

    fn both(p: &str, n: &str) -> (bool, bool) {
        let g = Glob::new(&Text::from(p));
        let s: Vec<u32> = n.chars().map(u32::from).collect();
        (g.matches_backtracking(&s), g.matches_by_segments(&s))
    }

    #[test]
    fn segments_agree_with_backtracking() {
        let long = "ab".repeat(80);
        let cases = [
            ("*", ""),
            ("*a", "ba"),
            ("a*", "ab"),
            ("a*a", "a"),
            ("a*a", "aa"),
            ("*aa*aa*", "aaa"),
            ("*aa*aa*", "aaaa"),
            ("?*?", "x"),
            ("[!a]*[a-c]", "zzzb"),
            ("*ab*ba*", "abba"),
            ("*ab*ba*", "aba"),
            ("*[]]*", "x]y"),
            ("*[z-a]*", "m"),
            (&format!("*{long}*"), &format!("xx{long}yy")),
            (&format!("*{long}c*"), &format!("xx{long}yy")),
            (&format!("{long}*{long}"), &long),
            (&format!("*{long}*?"), &format!("{long}{long}")),
        ];
        for (p, n) in cases {
            let (a, b) = both(p, n);
            assert_eq!(a, b, "{p:?} vs {n:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_pattern_same_answer_both_ways(
            p in proptest::collection::vec(
                proptest::sample::select(vec!["a", "b", "*", "?", "[ab]", "[!a]", "[b-a]", "["]),
                0..12,
            ),
            n in "[ab\\[]{0,14}",
        ) {
            let (a, b) = both(&p.concat(), &n);
            proptest::prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn long_names_cost_linear_time() {
        // The reviewer's case: a 7.9 M code-point name against `*aaa…b`. The backtracking
        // loop needs ~1.6 G steps for one pattern; the segment scan one suffix check.
        let name: Vec<u32> = std::iter::repeat_n(u32::from('a'), 7_900_000).collect();
        let g = Glob::new(&Text::from(format!("*{}b", "a".repeat(199)).as_str()));
        assert!(!g.matches_code_points(&name));
        let g = Glob::new(&Text::from(format!("*{}b*", "a".repeat(199)).as_str()));
        assert!(!g.matches_code_points(&name));
        let g = Glob::new(&Text::from(format!("*{}*", "a".repeat(199)).as_str()));
        assert!(g.matches_code_points(&name));
    }
}
