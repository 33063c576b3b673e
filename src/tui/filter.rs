//! The timeline filter's language: words separated by spaces, all of which a call must match.
//! A bare word matches the tool, status or rule name anywhere (`ship`); a field term matches
//! one field whole, or by a glob with `*`, `?` and `[...]` (`tool:create_*`, `status:error`,
//! `rule:lost-receipt` (the rule that faulted it), `key:#2`, `eligible:lost-receipt` (a rule
//! that applied to it)); `is:` picks calls by what happened to them (`is:error`,
//! `is:fault`, `is:dup`, `is:effect`, `is:named`). Matching ignores case.

use crate::json::Text;
use crate::rule::Glob;
use crate::timeline::Timeline;

/// The fields a term may name, as the error message lists them.
const FIELDS: &str = "tool:, status:, rule:, key:, eligible:, is:error|fault|dup|effect|named";

/// What a field term compares against.
#[derive(Clone, Debug)]
enum Pattern {
    /// The whole value, lower-case.
    Exact(String),
    /// A glob over the lower-case value.
    Glob(Glob),
    /// A quoted value: exactly this text, case and all (`tool:"run step:2"`).
    Literal(String),
}

impl Pattern {
    fn new(text: &str, quoted: bool) -> Pattern {
        if quoted {
            return Pattern::Literal(text.to_owned());
        }
        let lower = text.to_lowercase();
        if lower.contains(['*', '?', '[']) {
            Pattern::Glob(Glob::new(&Text::from(lower.as_str())))
        } else {
            Pattern::Exact(lower)
        }
    }

    fn matches(&self, value: &str) -> bool {
        match self {
            Pattern::Literal(p) => p == value,
            Pattern::Exact(p) => *p == value.to_lowercase(),
            Pattern::Glob(g) => g.matches(&Text::from(value.to_lowercase().as_str())),
        }
    }
}

/// What `is:` asks about a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    /// The call failed (error or cancelled).
    Error,
    /// A rule was selected for it.
    Fault,
    /// It committed a duplicate effect.
    Duplicate,
    /// It committed an effect.
    Effect,
    /// A failed (or the selected) verdict names it.
    Named,
}

#[derive(Clone, Debug)]
enum Term {
    Anywhere(String),
    Tool(Pattern),
    Status(Pattern),
    Rule(Pattern),
    Key(Pattern),
    Eligible(Pattern),
    Is(Flag),
}

/// A parsed filter.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    terms: Vec<Term>,
    /// Words that looked like fields but are not (`fs:write`): matched as text.
    unknown: Vec<String>,
}

/// One word of the filter: its field (before a colon outside quotes), its value (quotes
/// removed, `\"` and `\\` unescaped) and whether the value was quoted.
struct Word {
    field: Option<String>,
    value: String,
    quoted: bool,
    raw: String,
}

/// Splits on spaces outside double quotes.
fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return out;
        }
        let mut raw = String::new();
        let mut field = None;
        let mut value = String::new();
        let mut quoted = false;
        let mut in_quotes = false;
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() && !in_quotes {
                break;
            }
            chars.next();
            raw.push(c);
            match c {
                '"' => {
                    in_quotes = !in_quotes;
                    quoted = true;
                }
                '\\' if in_quotes => {
                    if let Some(n) = chars.next() {
                        raw.push(n);
                        value.push(n);
                    }
                }
                ':' if field.is_none() && !in_quotes && !quoted => {
                    field = Some(std::mem::take(&mut value));
                }
                c => value.push(c),
            }
        }
        out.push(Word {
            field,
            value,
            quoted,
            raw,
        });
    }
}

impl Filter {
    /// Parses the filter text. An `is:` the filter does not know is refused with a message
    /// saying what it knows; a field it does not know is read as a word of text (tool names
    /// such as `fs:write` have colons), and [`Filter::note`] says so. A field with nothing
    /// after it yet (`tool:`) matches everything.
    pub fn parse(text: &str) -> Result<Filter, String> {
        let mut filter = Filter::default();
        for w in words(text) {
            let Some(field) = w.field.as_deref() else {
                filter.terms.push(if w.quoted {
                    Term::Anywhere(w.value.to_lowercase())
                } else {
                    Term::Anywhere(w.raw.to_lowercase())
                });
                continue;
            };
            if w.value.is_empty() && !w.quoted {
                continue;
            }
            let pattern = || Pattern::new(&w.value, w.quoted);
            let term = match field.to_lowercase().as_str() {
                "tool" => Term::Tool(pattern()),
                "status" => Term::Status(pattern()),
                "rule" | "fault" => Term::Rule(pattern()),
                "key" => Term::Key(pattern()),
                "eligible" => Term::Eligible(pattern()),
                "is" => Term::Is(match w.value.to_lowercase().as_str() {
                    "error" | "failed" => Flag::Error,
                    "fault" | "faulted" => Flag::Fault,
                    "dup" | "duplicate" => Flag::Duplicate,
                    "effect" | "commit" => Flag::Effect,
                    "named" | "blamed" => Flag::Named,
                    other => {
                        return Err(format!(
                            "no such call property is:{other}; use is:error, is:fault, is:dup, \
                             is:effect or is:named"
                        ));
                    }
                }),
                _ => {
                    if !field.is_empty() {
                        filter.unknown.push(field.to_owned());
                    }
                    Term::Anywhere(w.raw.to_lowercase())
                }
            };
            filter.terms.push(term);
        }
        Ok(filter)
    }

    /// A note for words that looked like fields and were read as text, if any.
    pub fn note(&self) -> Option<String> {
        let first = self.unknown.first()?;
        Some(format!(
            "{first}: is not a field, so it is matched as text; fields: {FIELDS} (quote a \
             value to match it exactly: tool:\"a b\")"
        ))
    }

    /// Whether the filter has no terms (matches every call).
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The indices of the calls of `t` that pass (`named`: whether a verdict names a call).
    /// Names are matched once per distinct tool, rule and fault, not once per call.
    pub fn select(&self, t: &Timeline, named: &dyn Fn(usize) -> bool) -> Vec<usize> {
        use std::collections::HashMap;
        let calls = &t.report().calls;
        let mut by_tool: Vec<HashMap<&Text, bool>> = vec![HashMap::new(); self.terms.len()];
        let mut by_fault: Vec<HashMap<&Text, bool>> = vec![HashMap::new(); self.terms.len()];
        let eligible: Vec<Vec<usize>> = self
            .terms
            .iter()
            .map(|term| match term {
                Term::Eligible(p) => (0..t.rules().len())
                    .filter(|&r| p.matches(&t.rules()[r].name.to_lossy()))
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        (0..calls.len())
            .filter(|&i| {
                let call = &calls[i];
                self.terms.iter().enumerate().all(|(k, term)| match term {
                    Term::Anywhere(w) => {
                        *by_tool[k]
                            .entry(&call.tool)
                            .or_insert_with(|| call.tool.to_lossy().to_lowercase().contains(w))
                            || call.status.as_str().contains(w.as_str())
                            || call.fault.as_ref().is_some_and(|f| {
                                *by_fault[k]
                                    .entry(f)
                                    .or_insert_with(|| f.to_lossy().to_lowercase().contains(w))
                            })
                    }
                    Term::Tool(p) => *by_tool[k]
                        .entry(&call.tool)
                        .or_insert_with(|| p.matches(&call.tool.to_lossy())),
                    Term::Status(p) => p.matches(call.status.as_str()),
                    Term::Rule(p) => call.fault.as_ref().is_some_and(|f| {
                        *by_fault[k]
                            .entry(f)
                            .or_insert_with(|| p.matches(&f.to_lossy()))
                    }),
                    Term::Key(p) => p.matches(&call.key.to_lossy()),
                    Term::Eligible(_) => eligible[k].iter().any(|&r| t.eligible(i, r)),
                    Term::Is(Flag::Error) => call.failed(),
                    Term::Is(Flag::Fault) => call.fault.is_some(),
                    Term::Is(Flag::Duplicate) => t.commits_duplicate(i),
                    Term::Is(Flag::Effect) => !t.effects_of(i).is_empty(),
                    Term::Is(Flag::Named) => named(i),
                })
            })
            .collect()
    }
}

/// A filter term that selects exactly the calls of tool `name` (quoted: spaces, colons and
/// glob characters in the name are the name's own).
pub fn exact(field: &str, name: &str) -> String {
    let escaped = name.replace('\\', "\\\\").replace('"', "\\\"");
    format!("{field}:\"{escaped}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_flags_are_refused_and_unknown_fields_read_as_text() {
        let f = Filter::parse("fs:write").expect("a word");
        assert!(matches!(&f.terms[..], [Term::Anywhere(w)] if w == "fs:write"));
        assert!(
            f.note()
                .is_some_and(|n| n.starts_with("fs: is not a field"))
        );
        let e = Filter::parse("is:slow").expect_err("refused");
        assert!(e.contains("is:slow"), "{e}");
        assert!(Filter::parse("tool:").expect("incomplete").terms.is_empty());
        assert!(Filter::parse("tool:create_* status:error ship").is_ok());
    }

    #[test]
    fn patterns_match_whole_values_or_globs_ignoring_case() {
        assert!(Pattern::new("create_*", false).matches("Create_Shipment"));
        assert!(!Pattern::new("create", false).matches("create_shipment"));
        assert!(Pattern::new("ERROR", false).matches("error"));
        // Quoted: the text itself, glob characters and case included.
        assert!(Pattern::new("get_[id]", true).matches("get_[id]"));
        assert!(!Pattern::new("Search", true).matches("search"));
    }

    #[test]
    fn quoted_values_keep_spaces_colons_and_quotes() {
        let text = exact("tool", "run \"step\":2");
        let f = Filter::parse(&text).expect("parses");
        assert!(
            matches!(&f.terms[..], [Term::Tool(Pattern::Literal(v))] if v == "run \"step\":2"),
            "{text} -> {f:?}"
        );
        assert!(f.note().is_none());
    }
}
