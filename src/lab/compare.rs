//! Comparing two runs of (nearly) the same scenario: which calls were added, removed or
//! changed (aligned by tool and per-tool ordinal), how faults, rule coverage and committed
//! effects moved (a duplicate appearing or disappearing), and which contract checks flipped.

use std::collections::HashMap;

use crate::contract::Check;
use crate::json::{Text, canonical};
use crate::report::{Call, Coverage, Report};

/// How one aligned row of the two timelines differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallChange {
    /// The same call in both runs (indices into the before and after calls).
    Same(usize, usize),
    /// The same (tool, ordinal) with different results; the fields that changed.
    Changed(usize, usize, Vec<&'static str>),
    /// Only in the new run.
    Added(usize),
    /// Only in the previous run.
    Removed(usize),
}

impl CallChange {
    /// A one-character marker: ` ` same, `~` changed, `+` added, `-` removed.
    pub fn marker(&self) -> char {
        match self {
            CallChange::Same(..) => ' ',
            CallChange::Changed(..) => '~',
            CallChange::Added(_) => '+',
            CallChange::Removed(_) => '-',
        }
    }

    /// The index in the new run, if the call exists there.
    pub fn after(&self) -> Option<usize> {
        match self {
            CallChange::Same(_, a) | CallChange::Changed(_, a, _) | CallChange::Added(a) => {
                Some(*a)
            }
            CallChange::Removed(_) => None,
        }
    }

    /// The index in the previous run, if the call existed there.
    pub fn before(&self) -> Option<usize> {
        match self {
            CallChange::Same(b, _) | CallChange::Changed(b, _, _) | CallChange::Removed(b) => {
                Some(*b)
            }
            CallChange::Added(_) => None,
        }
    }
}

/// A rule whose coverage changed (`None` where the rule did not exist).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoverageDelta {
    /// Rule name.
    pub rule: Text,
    /// Before.
    pub before: Option<Coverage>,
    /// After.
    pub after: Option<Coverage>,
}

/// A check whose verdict differs (`None` where the check did not exist).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flip {
    /// Check name.
    pub name: String,
    /// Passed before.
    pub before: Option<bool>,
    /// Passed after.
    pub after: Option<bool>,
    /// The new detail (or the old one when the check went away).
    pub detail: String,
}

/// The difference between a previous and a new run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunDiff {
    /// Aligned rows, in the new run's order (removed calls after their predecessor).
    pub rows: Vec<CallChange>,
    /// Faults injected (before, after).
    pub faults: (u64, u64),
    /// Effects committed (before, after).
    pub effects: (usize, usize),
    /// Duplicate effects (before, after).
    pub duplicates: (usize, usize),
    /// Budget refusals (before, after).
    pub refused: (u64, u64),
    /// Rules whose coverage changed.
    pub coverage: Vec<CoverageDelta>,
    /// Checks whose verdict flipped, appeared or went away.
    pub flipped: Vec<Flip>,
    /// Whole-run verdict (before, after).
    pub passed: (bool, bool),
    /// Whether the two reports are identical (same digest).
    pub identical: bool,
}

impl RunDiff {
    /// Counts of (added, removed, changed) calls.
    pub fn counts(&self) -> (usize, usize, usize) {
        let n = |m: char| self.rows.iter().filter(|r| r.marker() == m).count();
        (n('+'), n('-'), n('~'))
    }

    /// A one-line summary for the status line.
    pub fn summary(&self) -> String {
        if self.identical {
            // The same calls can still be judged otherwise (another policy's contract).
            if self.passed.0 != self.passed.1 || !self.flipped.is_empty() {
                return format!(
                    "the same calls, judged otherwise: {} verdict(s) flipped · {}→{}",
                    self.flipped.len(),
                    pass_word(self.passed.0),
                    pass_word(self.passed.1)
                );
            }
            return "no change: identical run".into();
        }
        let (a, r, c) = self.counts();
        let mut parts = vec![format!("calls +{a} -{r} ~{c}")];
        if self.faults.0 != self.faults.1 {
            parts.push(format!("faults {}→{}", self.faults.0, self.faults.1));
        }
        if self.duplicates.0 != self.duplicates.1 {
            parts.push(format!(
                "duplicates {}→{}",
                self.duplicates.0, self.duplicates.1
            ));
        }
        if !self.flipped.is_empty() {
            parts.push(format!("{} verdict(s) flipped", self.flipped.len()));
        }
        if self.passed.0 != self.passed.1 {
            parts.push(format!(
                "{}→{}",
                pass_word(self.passed.0),
                pass_word(self.passed.1)
            ));
        }
        parts.join(" · ")
    }
}

/// `PASS` or `FAIL`.
pub fn pass_word(passed: bool) -> &'static str {
    if passed { "PASS" } else { "FAIL" }
}

/// What changed between two calls with the same tool and ordinal.
pub fn call_changes(a: &Call, b: &Call) -> Vec<&'static str> {
    let mut out = Vec::new();
    let error = |c: &Call| c.error.as_ref().map(|e| e.type_name.clone());
    let checks: [(&'static str, bool); 8] = [
        ("status", a.status != b.status),
        ("fault", a.fault != b.fault || a.kind != b.kind),
        ("injected", a.injected != b.injected),
        ("executed", a.executed != b.executed),
        ("error", error(a) != error(b)),
        ("output", canonical(&a.output) != canonical(&b.output)),
        (
            "arguments",
            canonical(&a.arguments) != canonical(&b.arguments),
        ),
        (
            "timing",
            a.started.to_bits() != b.started.to_bits()
                || a.elapsed.to_bits() != b.elapsed.to_bits(),
        ),
    ];
    for (name, differs) in checks {
        if differs {
            out.push(name);
        }
    }
    out
}

/// How the calls of two runs are paired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// By tool and per-tool ordinal: the same agent run again (a re-run), where the n-th call
    /// of a tool is the same step even when its arguments changed.
    ToolOrdinal,
    /// By tool and arguments (the n-th call of a tool with these arguments): two runs that
    /// need not be one agent's, where a call with other arguments is another call.
    ToolArguments,
}

/// Each call's pairing key under `align`: the tool, the arguments (canonical, or nothing) and
/// which occurrence it is.
fn keys(report: &Report, align: Align) -> Vec<(Text, String, u64)> {
    let mut seen: HashMap<(Text, String), u64> = HashMap::new();
    report
        .calls
        .iter()
        .map(|c| match align {
            Align::ToolOrdinal => (c.tool.clone(), String::new(), c.ordinal),
            Align::ToolArguments => {
                let args = canonical(&c.arguments);
                let n = seen.entry((c.tool.clone(), args.clone())).or_insert(0);
                *n += 1;
                (c.tool.clone(), args, *n)
            }
        })
        .collect()
}

/// Compares a previous run (`before`, judged by `before_checks`) with a new one, pairing
/// calls by tool and ordinal.
pub fn compare(
    before: &Report,
    before_checks: &[Check],
    after: &Report,
    after_checks: &[Check],
) -> RunDiff {
    compare_aligned(
        before,
        before_checks,
        after,
        after_checks,
        Align::ToolOrdinal,
    )
}

/// [`compare`] with calls paired as `align` says.
pub fn compare_aligned(
    before: &Report,
    before_checks: &[Check],
    after: &Report,
    after_checks: &[Check],
    align: Align,
) -> RunDiff {
    let old: HashMap<(Text, String, u64), usize> = keys(before, align)
        .into_iter()
        .enumerate()
        .map(|(i, k)| (k, i))
        .collect();
    let mut matched = vec![false; before.calls.len()];
    let mut rows: Vec<CallChange> = keys(after, align)
        .into_iter()
        .zip(&after.calls)
        .enumerate()
        .map(|(j, (k, c))| match old.get(&k) {
            Some(&i) => {
                matched[i] = true;
                let what = call_changes(&before.calls[i], c);
                if what.is_empty() {
                    CallChange::Same(i, j)
                } else {
                    CallChange::Changed(i, j, what)
                }
            }
            None => CallChange::Added(j),
        })
        .collect();
    for i in (0..before.calls.len()).filter(|&i| !matched[i]) {
        // After the row holding the closest earlier call of the previous run.
        let at = rows
            .iter()
            .rposition(|r| r.before().is_some_and(|b| b < i))
            .map_or(0, |p| p + 1);
        rows.insert(at, CallChange::Removed(i));
    }
    let mut coverage = Vec::new();
    let mut names: Vec<&Text> = after.coverage.iter().map(|(n, _)| n).collect();
    for (n, _) in &before.coverage {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    for name in names {
        let lookup = |r: &Report| r.coverage.iter().find(|(n, _)| n == name).map(|(_, c)| *c);
        let (b, a) = (lookup(before), lookup(after));
        if b != a {
            coverage.push(CoverageDelta {
                rule: name.clone(),
                before: b,
                after: a,
            });
        }
    }
    let mut flipped = Vec::new();
    for c in after_checks {
        let b = before_checks.iter().find(|x| x.name == c.name);
        if b.map(|b| b.passed) != Some(c.passed) {
            flipped.push(Flip {
                name: c.name.clone(),
                before: b.map(|b| b.passed),
                after: Some(c.passed),
                detail: c.detail.clone(),
            });
        }
    }
    for b in before_checks {
        if !after_checks.iter().any(|c| c.name == b.name) {
            flipped.push(Flip {
                name: b.name.clone(),
                before: Some(b.passed),
                after: None,
                detail: b.detail.clone(),
            });
        }
    }
    RunDiff {
        rows,
        faults: (before.faults_triggered(), after.faults_triggered()),
        effects: (before.effects.len(), after.effects.len()),
        duplicates: (before.duplicate_effects(), after.duplicate_effects()),
        refused: (before.budget_rejections, after.budget_rejections),
        coverage,
        flipped,
        passed: (
            crate::contract::verdict(before_checks),
            crate::contract::verdict(after_checks),
        ),
        // Key order differs between a run and a loaded file; the digest does not.
        identical: before.digest() == after.digest(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::edit::{Editor, Field};
    use crate::lab::scenario_file::ScenarioFile;
    use crate::lab::{Policy, run};

    #[test]
    fn identical_runs_have_no_changes() {
        let f = ScenarioFile::bundled("lost_ack").expect("bundled");
        let a = run(&f.scenario, Policy::Retry, &f.config).expect("run");
        let d = compare(&a.report, &a.checks, &a.report, &a.checks);
        assert!(d.identical);
        assert_eq!(d.counts(), (0, 0, 0));
        assert!(d.flipped.is_empty() && d.coverage.is_empty());
        assert_eq!(d.summary(), "no change: identical run");
        // The same calls under another contract: the summary says the verdict flipped.
        let mut judged = d.clone();
        judged.passed = (true, false);
        assert!(
            judged
                .summary()
                .starts_with("the same calls, judged otherwise"),
            "{}",
            judged.summary()
        );
        assert!(
            judged.summary().ends_with("PASS→FAIL"),
            "{}",
            judged.summary()
        );
    }

    #[test]
    fn calls_with_other_arguments_pair_by_ordinal_but_not_by_arguments() {
        let f = ScenarioFile::bundled("lost_ack").expect("bundled");
        let before = run(&f.scenario, Policy::Retry, &f.config)
            .expect("run")
            .report;
        let mut after = before.clone();
        after.calls[0].arguments = crate::json::parse(r#"{"sku": "OTHER"}"#).expect("json");
        let by_ordinal = compare_aligned(&before, &[], &after, &[], Align::ToolOrdinal);
        assert_eq!(
            by_ordinal.rows[0],
            CallChange::Changed(0, 0, vec!["arguments"])
        );
        let by_arguments = compare_aligned(&before, &[], &after, &[], Align::ToolArguments);
        assert_eq!(by_arguments.counts(), (1, 1, 0), "{:?}", by_arguments.rows);
        // The same arguments called twice pair in order: the n-th with the n-th.
        let same = compare_aligned(&before, &[], &before, &[], Align::ToolArguments);
        assert!(
            same.rows
                .iter()
                .enumerate()
                .all(|(i, r)| *r == CallChange::Same(i, i)),
            "{:?}",
            same.rows
        );
    }

    #[test]
    fn removing_the_lost_ack_removes_the_duplicate() {
        let f = ScenarioFile::bundled("lost_ack").expect("bundled");
        let before = run(&f.scenario, Policy::Retry, &f.config).expect("run");
        let mut e = Editor::new(&f).expect("editor");
        e.set_field(0, Field::Calls, "5").expect("calls");
        let after = run(
            &e.lab().expect("a lab scenario").scenario,
            Policy::Retry,
            &e.lab().expect("a lab scenario").config,
        )
        .expect("run");
        let d = compare(&before.report, &before.checks, &after.report, &after.checks);
        assert_eq!(d.duplicates, (1, 0));
        assert_eq!(d.faults, (1, 0));
        assert_eq!(d.effects, (2, 1));
        let (added, removed, changed) = d.counts();
        assert_eq!((added, removed), (0, 1), "{:?}", d.rows);
        assert!(changed >= 1);
        assert!(matches!(d.rows.last(), Some(CallChange::Removed(2))));
        let names: Vec<&str> = d.flipped.iter().map(|f| f.name.as_str()).collect();
        assert!(names.contains(&"No duplicate side effects"), "{names:?}");
        assert_eq!(d.coverage.len(), 1);
        assert!(d.summary().contains("duplicates 1→0"), "{}", d.summary());
    }
}
