//! The timeline filter's language: words separated by spaces, all of which a call must match.
//! A bare word matches the tool, status or rule name anywhere (`ship`); a field term matches
//! one field whole, or by a glob with `*`, `?` and `[...]` (`tool:create_*`, `status:error`,
//! `rule:lost-receipt` (the rule that faulted it), `key:#2`, `eligible:lost-receipt` (a rule
//! that applied to it)); `is:` picks calls by what happened to them (`is:error`,
//! `is:fault`, `is:dup`, `is:effect`, `is:named`). Matching ignores case.

use crate::json::Text;
use crate::report::Call;
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
}

impl Pattern {
    fn new(text: &str) -> Pattern {
        let lower = text.to_lowercase();
        if lower.contains(['*', '?', '[']) {
            Pattern::Glob(Glob::new(&Text::from(lower.as_str())))
        } else {
            Pattern::Exact(lower)
        }
    }

    fn matches(&self, value: &str) -> bool {
        let lower = value.to_lowercase();
        match self {
            Pattern::Exact(p) => *p == lower,
            Pattern::Glob(g) => g.matches(&Text::from(lower.as_str())),
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
}

impl Filter {
    /// Parses the filter text; a term with an unknown field or flag is refused with a message
    /// saying what is known. A field with nothing after it yet (`tool:`) matches everything.
    pub fn parse(text: &str) -> Result<Filter, String> {
        let mut terms = Vec::new();
        for word in text.split_whitespace() {
            let Some((field, value)) = word.split_once(':') else {
                terms.push(Term::Anywhere(word.to_lowercase()));
                continue;
            };
            if value.is_empty() {
                continue;
            }
            let term = match field.to_lowercase().as_str() {
                "tool" => Term::Tool(Pattern::new(value)),
                "status" => Term::Status(Pattern::new(value)),
                "rule" | "fault" => Term::Rule(Pattern::new(value)),
                "key" => Term::Key(Pattern::new(value)),
                "eligible" => Term::Eligible(Pattern::new(value)),
                "is" => Term::Is(match value.to_lowercase().as_str() {
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
                // A key such as `#2` or a word with a colon that is not a field: the word.
                _ if field.is_empty() => Term::Anywhere(word.to_lowercase()),
                other => return Err(format!("no field {other}: in a filter; use {FIELDS}")),
            };
            terms.push(term);
        }
        Ok(Filter { terms })
    }

    /// Whether the filter has no terms (matches every call).
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether the call at `index` of `t` passes (`named`: whether a verdict names it).
    pub fn matches(&self, t: &Timeline, index: usize, named: bool) -> bool {
        let Some(call) = t.report().calls.get(index) else {
            return false;
        };
        self.terms.iter().all(|term| match term {
            Term::Anywhere(w) => anywhere(call, w),
            Term::Tool(p) => p.matches(&call.tool.to_lossy()),
            Term::Status(p) => p.matches(call.status.as_str()),
            Term::Rule(p) => call
                .fault
                .as_ref()
                .is_some_and(|f| p.matches(&f.to_lossy())),
            Term::Key(p) => p.matches(&call.key.to_lossy()),
            Term::Eligible(p) => t
                .rules()
                .iter()
                .enumerate()
                .any(|(r, rule)| p.matches(&rule.name.to_lossy()) && t.eligible(index, r)),
            Term::Is(Flag::Error) => call.failed(),
            Term::Is(Flag::Fault) => call.fault.is_some(),
            Term::Is(Flag::Duplicate) => t.commits_duplicate(index),
            Term::Is(Flag::Effect) => !t.effects_of(index).is_empty(),
            Term::Is(Flag::Named) => named,
        })
    }
}

/// A bare word: the tool, status or rule name contains it (lower-case).
fn anywhere(call: &Call, w: &str) -> bool {
    call.tool.to_lossy().to_lowercase().contains(w)
        || call.status.as_str().contains(w)
        || call
            .fault
            .as_ref()
            .is_some_and(|n| n.to_lossy().to_lowercase().contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_and_flags_are_refused_in_words() {
        let e = Filter::parse("colour:red").expect_err("refused");
        assert!(e.contains("no field colour:"), "{e}");
        let e = Filter::parse("is:slow").expect_err("refused");
        assert!(e.contains("is:slow"), "{e}");
        assert!(Filter::parse("tool:").expect("incomplete").terms.is_empty());
        assert!(Filter::parse("tool:create_* status:error ship").is_ok());
    }

    #[test]
    fn patterns_match_whole_values_or_globs_ignoring_case() {
        assert!(Pattern::new("create_*").matches("Create_Shipment"));
        assert!(!Pattern::new("create").matches("create_shipment"));
        assert!(Pattern::new("ERROR").matches("error"));
    }
}
