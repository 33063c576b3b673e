//! Why a verdict is what it is: for each check, the calls it rests on and the numbers that
//! decided it ("call #3 retried 1 ms after #2 advertised 2 s"). Reasons are worked out from the
//! report and the check alone, so a verdict recorded in a file (a reference run file, a
//! verdicts file) is explained the same way as one computed here. The faces print them
//! (`check`, `run`) and lead from them to the calls (the explorer).

use std::collections::HashMap;

use crate::contract::Check;
use crate::json::Int;
use crate::json::float::py_fixed;
use crate::mcp::session::McpSession;
use crate::printable::shown;
use crate::report::{Call, Report, Status};
use crate::rule::Rule;

/// One reason a check gives: a sentence, and the ids of the calls it names (in the order the
/// sentence names them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    /// For people, e.g. `call #3 committed shipment order-1729 again; call #2 committed it
    /// first`.
    pub text: String,
    /// The call ids the sentence names.
    pub calls: Vec<u64>,
}

impl Reason {
    fn new(text: String, calls: Vec<u64>) -> Reason {
        Reason { text, calls }
    }
}

/// The reasons behind `check` over `report` (`session`: an MCP recording's facts, which add
/// the evidence of each commit). A check this module does not know gives none. For several
/// checks of one report, an [`Explainer`] shares the work.
pub fn reasons(report: &Report, session: Option<&McpSession>, check: &Check) -> Vec<Reason> {
    Explainer::new(report, session).reasons(check)
}

/// Explains the checks of one report, matching each distinct tool name against a rule's
/// pattern once (a run of 10,000 calls has a few tools; a tool name may be megabytes long).
pub struct Explainer<'r> {
    report: &'r Report,
    session: Option<&'r McpSession>,
    /// Each distinct tool: its code points and the indices of its calls.
    tools: std::cell::OnceCell<Vec<(Vec<u32>, Vec<usize>)>>,
    /// The run's timeline, when the caller has one: its tool matches are already worked out.
    timeline: Option<&'r crate::timeline::Timeline>,
    /// `a, b, c`: the first tools the run called, as shown to people.
    called: std::cell::OnceCell<String>,
}

impl<'r> Explainer<'r> {
    /// An explainer over `report`.
    pub fn new(report: &'r Report, session: Option<&'r McpSession>) -> Explainer<'r> {
        Explainer {
            report,
            session,
            tools: std::cell::OnceCell::new(),
            timeline: None,
            called: std::cell::OnceCell::new(),
        }
    }

    /// An explainer over a timeline's report, using the tool matches it has.
    pub fn for_timeline(
        timeline: &'r crate::timeline::Timeline,
        session: Option<&'r McpSession>,
    ) -> Explainer<'r> {
        Explainer {
            timeline: Some(timeline),
            ..Explainer::new(timeline.report(), session)
        }
    }

    /// Indices of the calls whose tool `rule`'s pattern matches, in run order.
    fn matching(&self, rule: &Rule) -> Vec<usize> {
        let name = rule.name.to_lossy();
        if let Some(found) = self.timeline.and_then(|t| t.calls_matching(&name)) {
            return found;
        }
        let mut out: Vec<usize> = self
            .tools()
            .iter()
            .filter(|(points, _)| rule.matches_tool_points(points))
            .flat_map(|(_, calls)| calls.iter().copied())
            .collect();
        out.sort_unstable();
        out
    }

    fn tools(&self) -> &[(Vec<u32>, Vec<usize>)] {
        self.tools.get_or_init(|| {
            let mut row: HashMap<&crate::json::Text, usize> = HashMap::new();
            let mut out: Vec<(Vec<u32>, Vec<usize>)> = Vec::new();
            for (i, c) in self.report.calls.iter().enumerate() {
                let r = *row.entry(&c.tool).or_insert_with(|| {
                    out.push((c.tool.code_points().collect(), Vec::new()));
                    out.len() - 1
                });
                out[r].1.push(i);
            }
            out
        })
    }

    fn fault_exercised(&self, name: &str) -> Vec<Reason> {
        let report = self.report;
        // Only the rule named is parsed (a run may have hundreds).
        let Some(rule) = report
            .rules
            .iter()
            .filter(|r| {
                r.as_object()
                    .and_then(|o| o.get("name"))
                    .and_then(|n| n.as_text())
                    .is_some_and(|n| *n == name)
            })
            .find_map(|r| Rule::from_value(r).ok())
        else {
            return vec![Reason::new(
                format!(
                    "the run has no rule named {}",
                    crate::printable::quoted(name)
                ),
                Vec::new(),
            )];
        };
        let of_rule = |c: &&Call| c.fault.as_ref() == Some(&rule.name);
        let triggered: Vec<u64> = report
            .calls
            .iter()
            .filter(of_rule)
            .filter(|c| c.injected)
            .map(|c| c.id)
            .collect();
        // A latency fault's phase is its kind: said once.
        let phase = match rule.kind.phase() {
            p if p == rule.kind.as_str() => String::new(),
            p => format!(" ({p})"),
        };
        if !triggered.is_empty() {
            return vec![Reason::new(
                format!(
                    "{}{phase} on {} {}",
                    rule.kind.as_str(),
                    if triggered.len() == 1 {
                        "call"
                    } else {
                        "calls"
                    },
                    list(&triggered)
                ),
                triggered,
            )];
        }
        let pattern = shown(&rule.tool);
        let matching: Vec<&Call> = self
            .matching(&rule)
            .into_iter()
            .map(|i| &report.calls[i])
            .collect();
        let eligible: Vec<u64> = matching
            .iter()
            .filter(|c| rule.covers_ordinal(c.ordinal))
            .map(|c| c.id)
            .collect();
        let selected: Vec<u64> = report.calls.iter().filter(of_rule).map(|c| c.id).collect();
        let ordinals = || {
            let o: Vec<String> = rule.calls.iter().take(8).map(int_text).collect();
            match rule.calls.len() {
                n if n > 8 => format!("{} and {} more", o.join(", "), n - 8),
                _ => o.join(", "),
            }
        };
        let text = if matching.is_empty() {
            let called = self.called.get_or_init(|| {
                let (n, mut names): (usize, Vec<String>) = match self.timeline {
                    Some(t) => (
                        t.tools().len(),
                        t.tools().iter().take(8).map(shown).collect(),
                    ),
                    None => {
                        let tools = self.tools();
                        let first =
                            |(_, calls): &(Vec<u32>, Vec<usize>)| tool(&report.calls[calls[0]]);
                        (tools.len(), tools.iter().take(8).map(first).collect())
                    }
                };
                if n > 8 {
                    names.push(format!("{} more", n - 8));
                }
                names.join(", ")
            });
            if called.is_empty() {
                format!("never eligible: the run made no call (tool pattern {pattern})")
            } else {
                format!(
                    "never eligible: no call matched the tool pattern {pattern} (the run \
                     called {called})"
                )
            }
        } else if eligible.is_empty() {
            format!(
                "never eligible: {} matched the tool pattern {pattern}, none at ordinal(s) {}",
                crate::printable::count(matching.len(), "call", "calls"),
                ordinals()
            )
        } else if selected.is_empty() {
            let limit = match &rule.limit {
                Some(l) => format!(", limit {}", int_text(l)),
                None => String::new(),
            };
            format!(
                "eligible on {} ({}), selected on none (probability {}{limit})",
                crate::printable::count(eligible.len(), "call", "calls"),
                list(&eligible),
                crate::json::float::py_repr(rule.probability)
            )
        } else {
            // A call still in flight (a live recording, or one killed mid-call) has not
            // answered yet: a fault that comes after the answer is not injected yet either.
            let in_flight: Vec<u64> = report
                .calls
                .iter()
                .filter(|c| selected.contains(&c.id) && c.status == Status::Running)
                .map(|c| c.id)
                .collect();
            if in_flight.len() == selected.len() {
                format!(
                    "selected on {}, still in flight: no answer yet, so not injected yet",
                    list(&selected)
                )
            } else if in_flight.is_empty() {
                format!(
                    "selected on {} but never injected: the tool failed first",
                    list(&selected)
                )
            } else {
                format!(
                    "selected on {} but never injected: the tool failed first, or the call is \
                     still in flight ({})",
                    list(&selected),
                    list(&in_flight)
                )
            }
        };
        let named = if selected.is_empty() {
            eligible
        } else {
            selected
        };
        vec![Reason::new(text, named)]
    }

    /// The reasons behind `check`.
    pub fn reasons(&self, check: &Check) -> Vec<Reason> {
        let (report, session) = (self.report, self.session);
        let name = check.name.as_str();
        if let Some(rule) = name
            .strip_prefix(crate::contract::FAULT_EXERCISED)
            .and_then(|r| r.strip_prefix(": "))
        {
            return self.fault_exercised(rule);
        }
        if let Some(effect) = name.strip_prefix("Effect budget: ") {
            return effect_budget(report, effect, check);
        }
        match name {
            "No duplicate side effects" => duplicates(report, session),
            "Call budget" if !check.passed => call_budget(report, check),
            "Retry-after respected" => early_retries(report),
            "Honest outcome" if !check.passed => honest_outcome(report),
            "Task completed" => task_completed(report, check.passed),
            "Latency budget" if !check.passed => latency_budget(report, check),
            "Session finished" => in_flight(report),
            _ => Vec::new(),
        }
    }
}

/// The distinct call ids of `reasons`, in the order they are first named.
pub fn calls_named(reasons: &[Reason]) -> Vec<u64> {
    let mut seen = std::collections::HashSet::new();
    reasons
        .iter()
        .flat_map(|r| r.calls.iter().copied())
        .filter(|id| seen.insert(*id))
        .collect()
}

/// A duration for people: milliseconds under a second (`1 ms`, `0.5 ms`), else seconds
/// (`2 s`, `1.4 s`), at most three decimals.
pub fn duration(seconds: f64) -> String {
    let trim = |x: f64| {
        let s = format!("{:.3}", x);
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" {
            "0".to_owned()
        } else {
            s.to_owned()
        }
    };
    if seconds.abs() < 1.0 {
        format!("{} ms", trim(seconds * 1000.0))
    } else {
        format!("{} s", trim(seconds))
    }
}

/// `#2, #5 and #9`, or the first `MAX_LISTED` then `and 12 more`.
fn list(ids: &[u64]) -> String {
    const MAX_LISTED: usize = 8;
    let shown: Vec<String> = ids
        .iter()
        .take(MAX_LISTED)
        .map(|i| format!("#{i}"))
        .collect();
    match ids.len() {
        0 => String::new(),
        1 => shown[0].clone(),
        n if n <= MAX_LISTED => format!("{} and {}", shown[..n - 1].join(", "), shown[n - 1]),
        n => format!("{} and {} more", shown.join(", "), n - MAX_LISTED),
    }
}

fn int_text(i: &Int) -> String {
    match i {
        Int::Small(n) => n.to_string(),
        Int::Big(s) => s.to_string(),
    }
}

fn tool(c: &Call) -> String {
    shown(&c.tool)
}

fn duplicates(report: &Report, session: Option<&McpSession>) -> Vec<Reason> {
    let evidence = |i: usize| {
        session.map(|s| {
            s.evidence_of(report, i)
                .map_or("unknown", |ev| ev.as_str())
                .to_owned()
        })
    };
    let mut first: HashMap<u64, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, e) in report.effects.iter().enumerate() {
        let Some(&f) = first.get(&e.identity) else {
            first.insert(e.identity, i);
            continue;
        };
        let one = &report.effects[f];
        let (again, before) = match (evidence(i), evidence(f)) {
            (Some(a), Some(b)) => (format!(" ({a} evidence)"), format!(" ({b} evidence)")),
            _ => (String::new(), String::new()),
        };
        out.push(Reason::new(
            format!(
                "call #{} committed {} {} again{again}; call #{} committed it first{before}",
                e.call_id,
                shown(&e.name),
                shown(&e.key),
                one.call_id
            ),
            vec![one.call_id, e.call_id],
        ));
    }
    // Retries the server's own annotations make duplicates (an MCP recording).
    for (call, first, name, key) in session
        .map(McpSession::declared_duplicates)
        .unwrap_or_default()
    {
        out.push(Reason::new(
            super::declared_duplicate_text(call, first, &name, &key),
            vec![first, call],
        ));
    }
    out
}

/// The number after ` / ` in a detail such as `101 / 100 calls`.
fn limit_in(detail: &str) -> Option<f64> {
    let (_, rest) = detail.split_once(" / ")?;
    let n: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    n.parse().ok()
}

fn call_budget(report: &Report, check: &Check) -> Vec<Reason> {
    let Some(limit) = limit_in(&check.detail).map(|l| l as usize) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(c) = report.calls.get(limit) {
        out.push(Reason::new(
            format!(
                "call #{} ({}) crossed the budget: it was call {} of {}, the budget is {limit}",
                c.id,
                tool(c),
                limit + 1,
                report.calls.len()
            ),
            vec![c.id],
        ));
    }
    if report.budget_rejections > 0 {
        let last: Vec<u64> = report.calls.last().map(|c| c.id).into_iter().collect();
        out.push(Reason::new(
            format!(
                "{} refused by the run's own budget count against it{}",
                crate::printable::count(report.budget_rejections as usize, "call", "calls"),
                last.first()
                    .map_or_else(String::new, |id| format!(" (after call #{id})"))
            ),
            last,
        ));
    }
    out
}

fn effect_budget(report: &Report, name: &str, check: &Check) -> Vec<Reason> {
    if check.passed {
        return Vec::new();
    }
    let redacted: Vec<u64> = report
        .effects
        .iter()
        .filter(|e| e.redacted)
        .map(|e| e.call_id)
        .collect();
    if !redacted.is_empty() {
        return vec![Reason::new(
            format!(
                "{} committed an effect whose identity is redacted: {}",
                if redacted.len() == 1 { "call" } else { "calls" },
                list(&redacted)
            ),
            redacted,
        )];
    }
    let Some(limit) = limit_in(&check.detail).map(|l| l as usize) else {
        return Vec::new();
    };
    let over: Vec<u64> = report
        .effects
        .iter()
        .filter(|e| e.name == name)
        .skip(limit)
        .map(|e| e.call_id)
        .collect();
    match over.first() {
        Some(first) => vec![Reason::new(
            format!(
                "call #{first} made commit {} of {name}, over the budget of {limit}{}",
                limit + 1,
                if over.len() > 1 {
                    format!("; then {}", list(&over[1..]))
                } else {
                    String::new()
                }
            ),
            over,
        )],
        None => Vec::new(),
    }
}

fn early_retries(report: &Report) -> Vec<Reason> {
    crate::lab::early_retries(report)
        .into_iter()
        .map(|r| {
            let (limited, retry) = (&report.calls[r.limited], &report.calls[r.retry]);
            Reason::new(
                format!(
                    "call #{} retried {} {} after #{} advertised {}",
                    retry.id,
                    tool(retry),
                    duration(r.gap),
                    limited.id,
                    duration(r.wait)
                ),
                vec![limited.id, retry.id],
            )
        })
        .collect()
}

fn honest_outcome(report: &Report) -> Vec<Reason> {
    report
        .effects
        .iter()
        .filter(|e| e.name == "shipment")
        .map(|e| {
            Reason::new(
                format!(
                    "the task stopped without confirming a shipment, yet call #{} committed \
                     shipment {}",
                    e.call_id,
                    shown(&e.key)
                ),
                vec![e.call_id],
            )
        })
        .collect()
}

fn status_of(c: &Call) -> String {
    match (&c.status, &c.error) {
        (Status::Ok, _) => "ok".to_owned(),
        (_, Some(e)) => format!("{} {}", c.status.as_str(), shown(&e.type_name)),
        (s, None) => s.as_str().to_owned(),
    }
}

fn task_completed(report: &Report, passed: bool) -> Vec<Reason> {
    let shipments: Vec<&Call> = report
        .calls
        .iter()
        .filter(|c| c.tool == "create_shipment")
        .collect();
    if passed {
        return shipments
            .iter()
            .rev()
            .find(|c| c.status == Status::Ok)
            .map(|c| {
                Reason::new(
                    format!("call #{} (create_shipment) answered ok", c.id),
                    vec![c.id],
                )
            })
            .into_iter()
            .collect();
    }
    if shipments.is_empty() {
        return report
            .calls
            .last()
            .map(|c| {
                Reason::new(
                    format!(
                        "the run made no create_shipment call; it stopped after call #{} ({}, {})",
                        c.id,
                        tool(c),
                        status_of(c)
                    ),
                    vec![c.id],
                )
            })
            .into_iter()
            .collect();
    }
    let described: Vec<String> = shipments
        .iter()
        .map(|c| format!("#{} {}", c.id, status_of(c)))
        .collect();
    vec![Reason::new(
        format!(
            "no create_shipment call was confirmed: {}",
            described.join(", ")
        ),
        shipments.iter().map(|c| c.id).collect(),
    )]
}

fn latency_budget(report: &Report, check: &Check) -> Vec<Reason> {
    let Some(budget) = limit_in(&check.detail) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let end = |c: &Call| c.started + c.elapsed;
    // The call that ended first of those that ended past the budget.
    if let Some(c) = report
        .calls
        .iter()
        .filter(|c| end(c) > budget)
        .min_by(|a, b| end(a).total_cmp(&end(b)))
    {
        out.push(Reason::new(
            format!(
                "call #{} ({}) was the first to end past the budget of {}s, at {}s",
                c.id,
                tool(c),
                py_fixed(budget, 2),
                py_fixed(end(c), 2)
            ),
            vec![c.id],
        ));
    }
    if let Some(c) = report
        .calls
        .iter()
        .max_by(|a, b| a.elapsed.total_cmp(&b.elapsed))
    {
        let fault = match (&c.fault, c.kind) {
            (Some(f), Some(k)) if c.injected => format!(" ({} fault {})", k.as_str(), shown(f)),
            _ => String::new(),
        };
        out.push(Reason::new(
            format!(
                "the slowest call was #{} ({}): {}{fault}",
                c.id,
                tool(c),
                duration(c.elapsed)
            ),
            vec![c.id],
        ));
    }
    if out.len() == 1 {
        // No call ended past the budget: the time went to waits between calls.
        let gaps = report
            .calls
            .windows(2)
            .map(|w| (w[1].started - end(&w[0]), &w[1]));
        if let Some((gap, c)) = gaps.max_by(|a, b| a.0.total_cmp(&b.0))
            && gap > 0.0
        {
            out.insert(
                0,
                Reason::new(
                    format!(
                        "no call ended past the budget: the longest wait was {} before call #{}",
                        duration(gap),
                        c.id
                    ),
                    vec![c.id],
                ),
            );
        }
    }
    out
}

fn in_flight(report: &Report) -> Vec<Reason> {
    report
        .calls
        .iter()
        .filter(|c| c.status == Status::Running)
        .map(|c| {
            Reason::new(
                format!(
                    "call #{} ({}) was in flight with no answer on record",
                    c.id,
                    tool(c)
                ),
                vec![c.id],
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration(0.001), "1 ms");
        assert_eq!(duration(0.0005), "0.5 ms");
        assert_eq!(duration(2.0), "2 s");
        assert_eq!(duration(1.4), "1.4 s");
        assert_eq!(duration(0.6), "600 ms");
        assert_eq!(duration(-0.0), "0 ms");
    }

    #[test]
    fn lists_stop_after_eight() {
        assert_eq!(list(&[2]), "#2");
        assert_eq!(list(&[2, 3]), "#2 and #3");
        assert_eq!(list(&[1, 2, 3]), "#1, #2 and #3");
        let many: Vec<u64> = (1..=10).collect();
        assert_eq!(list(&many), "#1, #2, #3, #4, #5, #6, #7, #8 and 2 more");
    }

    #[test]
    fn limits_are_read_from_details() {
        assert_eq!(limit_in("101 / 100 calls"), Some(100.0));
        assert_eq!(limit_in("1.72s / 1.50s virtual time"), Some(1.5));
        assert_eq!(limit_in("no slash"), None);
    }
}
