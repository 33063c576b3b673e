//! The shape of a whole run at a glance: one row per tool and one per rule, with calls,
//! errors, faults injected, fault rate, commits, duplicate commits and the p50 / p95 elapsed
//! time — sortable by any column. A rule's row counts the calls it was eligible for.

use std::cmp::Ordering;

use crate::printable::shown;
use crate::timeline::Timeline;

/// What a row is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// Every call of one tool.
    Tool,
    /// Every call a rule was eligible for.
    Rule,
}

/// One row of the summary.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Tool or rule.
    pub kind: RowKind,
    /// Its name, as shown to people.
    pub name: String,
    /// The name as recorded (for a filter that selects the row's calls).
    pub raw: String,
    /// Calls.
    pub calls: u64,
    /// Calls that failed (error or cancelled).
    pub errors: u64,
    /// Calls with an injected fault (for a rule: injected by it).
    pub faults: u64,
    /// Effects the calls committed.
    pub commits: u64,
    /// Of those, commits of an identity committed before.
    pub duplicates: u64,
    /// Median elapsed seconds (`None` without calls).
    pub p50: Option<f64>,
    /// 95th-percentile elapsed seconds.
    pub p95: Option<f64>,
}

impl Row {
    /// Faults per call, in [0, 1] (0 without calls).
    pub fn fault_rate(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.faults as f64 / self.calls as f64
        }
    }
}

/// The columns a summary sorts by, in table order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// Tool or rule name.
    Name,
    /// Calls.
    Calls,
    /// Failed calls.
    Errors,
    /// Injected faults.
    Faults,
    /// Faults per call.
    Rate,
    /// Commits.
    Commits,
    /// Duplicate commits.
    Duplicates,
    /// Median elapsed.
    P50,
    /// 95th-percentile elapsed.
    P95,
}

impl Column {
    /// Every column, in table order.
    pub const ALL: [Column; 9] = [
        Column::Name,
        Column::Calls,
        Column::Errors,
        Column::Faults,
        Column::Rate,
        Column::Commits,
        Column::Duplicates,
        Column::P50,
        Column::P95,
    ];

    /// The column's heading.
    pub fn title(self) -> &'static str {
        match self {
            Column::Name => "name",
            Column::Calls => "calls",
            Column::Errors => "errors",
            Column::Faults => "faults",
            Column::Rate => "rate",
            Column::Commits => "commits",
            Column::Duplicates => "dups",
            Column::P50 => "p50",
            Column::P95 => "p95",
        }
    }

    fn compare(self, a: &Row, b: &Row) -> Ordering {
        let time = |x: Option<f64>, y: Option<f64>| x.unwrap_or(-1.0).total_cmp(&y.unwrap_or(-1.0));
        match self {
            Column::Name => a.name.cmp(&b.name),
            Column::Calls => a.calls.cmp(&b.calls),
            Column::Errors => a.errors.cmp(&b.errors),
            Column::Faults => a.faults.cmp(&b.faults),
            Column::Rate => a.fault_rate().total_cmp(&b.fault_rate()),
            Column::Commits => a.commits.cmp(&b.commits),
            Column::Duplicates => a.duplicates.cmp(&b.duplicates),
            Column::P50 => time(a.p50, b.p50),
            Column::P95 => time(a.p95, b.p95),
        }
    }
}

/// The nearest-rank percentile `q` (0–100) of sorted values.
fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn row(
    t: &Timeline,
    kind: RowKind,
    name: String,
    raw: String,
    calls: &[usize],
    rule: Option<&crate::json::Text>,
) -> Row {
    let report = t.report();
    let mut elapsed: Vec<f64> = calls.iter().map(|&i| report.calls[i].elapsed).collect();
    elapsed.sort_by(f64::total_cmp);
    let count = |f: &dyn Fn(usize) -> bool| calls.iter().filter(|&&i| f(i)).count() as u64;
    Row {
        kind,
        name,
        raw,
        calls: calls.len() as u64,
        errors: count(&|i| report.calls[i].failed()),
        faults: count(&|i| {
            let c = &report.calls[i];
            c.injected && rule.is_none_or(|r| c.fault.as_ref() == Some(r))
        }),
        commits: calls.iter().map(|&i| t.effects_of(i).len() as u64).sum(),
        duplicates: calls
            .iter()
            .map(|&i| {
                t.effects_of(i)
                    .iter()
                    .filter(|&&e| t.duplicate_of(e).is_some())
                    .count() as u64
            })
            .sum(),
        p50: percentile(&elapsed, 50.0),
        p95: percentile(&elapsed, 95.0),
    }
}

/// The summary of a run: tools in order of first call, then rules in rule order.
pub fn rows(t: &Timeline) -> Vec<Row> {
    let report = t.report();
    let mut out = Vec::new();
    let mut by_tool: Vec<Vec<usize>> = vec![Vec::new(); t.tools().len()];
    let position: std::collections::HashMap<&crate::json::Text, usize> =
        t.tools().iter().enumerate().map(|(i, n)| (n, i)).collect();
    for (i, c) in report.calls.iter().enumerate() {
        if let Some(&p) = position.get(&c.tool) {
            by_tool[p].push(i);
        }
    }
    for (name, calls) in t.tools().iter().zip(&by_tool) {
        out.push(row(
            t,
            RowKind::Tool,
            shown(name),
            name.to_lossy(),
            calls,
            None,
        ));
    }
    for (r, rule) in t.rules().iter().enumerate() {
        let calls: Vec<usize> = (0..t.len()).filter(|&i| t.eligible(i, r)).collect();
        out.push(row(
            t,
            RowKind::Rule,
            shown(&rule.name),
            rule.name.to_lossy(),
            &calls,
            Some(&rule.name),
        ));
    }
    out
}

/// Sorts rows by `column` within each kind (tools stay above rules): numbers largest first,
/// names in order; `reverse` turns it round.
pub fn sort(rows: &mut [Row], column: Column, reverse: bool) {
    rows.sort_by(|a, b| {
        let kind = (a.kind == RowKind::Rule).cmp(&(b.kind == RowKind::Rule));
        let by = column.compare(a, b);
        let by = if column == Column::Name {
            by
        } else {
            by.reverse()
        };
        kind.then(if reverse { by.reverse() } else { by })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(10.0));
        assert_eq!(percentile(&v, 95.0), Some(19.0));
        assert_eq!(percentile(&[3.0], 95.0), Some(3.0));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
