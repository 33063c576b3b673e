//! Two recordings of one agent side by side (a campaign's run and its re-run with other
//! rules): each call aligned by tool and per-tool ordinal, with its arguments, the fault it
//! met, what the client received and what it committed, and every check of both judged from
//! each recording's own files. Both faces show it: `campaign --rerun SEED --scenario FILE`
//! prints it, the explorer draws it.

use std::path::Path;

use super::{Error, Trace, judge, open_trace};
use crate::contract::Check;
use crate::lab::compare::{Align, RunDiff, compare_aligned};
use crate::mcp::session::McpSession;
use crate::report::{Call, Report};

/// Two recordings and how they differ.
#[derive(Debug)]
pub struct RecordingDiff {
    /// The first recording.
    pub before: Trace,
    /// The second.
    pub after: Trace,
    /// The first one's checks, judged from its files.
    pub before_checks: Vec<Check>,
    /// The second one's checks.
    pub after_checks: Vec<Check>,
    /// The aligned calls, the counts that moved, the checks that flipped.
    pub diff: RunDiff,
    /// Which run of each file is compared (before, after): the first unless a file holds
    /// two runs compared with each other.
    pub runs: (usize, usize),
}

/// One side of an aligned row, as people read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSide {
    /// The call's number in its recording.
    pub id: u64,
    /// Its arguments, compact.
    pub arguments: String,
    /// The rule whose fault it met, or `-`.
    pub fault: String,
    /// What the client received.
    pub got: String,
    /// Effects it committed.
    pub commits: usize,
}

impl CallSide {
    /// Call `index` of a run's report, with what its client received when the proxy recorded
    /// the session (otherwise the call's status).
    pub fn of(report: &Report, session: Option<&McpSession>, index: usize) -> Option<CallSide> {
        let call: &Call = report.calls.get(index)?;
        let record = session.and_then(|m| m.call(call.id));
        Some(CallSide {
            id: call.id,
            arguments: crate::json::compact(&call.arguments),
            fault: call
                .fault
                .as_ref()
                .filter(|_| call.injected)
                .map_or_else(|| "-".to_owned(), |f| f.to_lossy()),
            got: record.map_or_else(
                || call.status.as_str().to_owned(),
                |r| r.delivered.describe(),
            ),
            commits: report
                .effects
                .iter()
                .filter(|e| e.call_id == call.id)
                .count(),
        })
    }
}

impl RecordingDiff {
    /// Opens and judges both recordings (their first runs), pairing calls by tool and
    /// ordinal: a run and its re-run.
    pub fn open(before: &Path, after: &Path) -> Result<RecordingDiff, Error> {
        let (b, a) = (open_trace(before)?, open_trace(after)?);
        RecordingDiff::of((b, before, 0), (a, after, 0), Align::ToolOrdinal)
    }

    /// Run `run` of each opened file (named by its path, for errors), judged from its own
    /// files, compared with calls paired as `align` says.
    pub fn of(
        before: (Trace, &Path, usize),
        after: (Trace, &Path, usize),
        align: Align,
    ) -> Result<RecordingDiff, Error> {
        let judged = |trace: &Trace, path: &Path, run: usize| -> Result<Vec<Check>, Error> {
            Ok(judge(trace, None)
                .map_err(|e| Error::invalid(Some(path), e))?
                .runs
                .into_iter()
                .nth(run)
                .unwrap_or_default())
        };
        let (b, b_path, b_run) = before;
        let (a, a_path, a_run) = after;
        let bc = judged(&b, b_path, b_run)?;
        let ac = judged(&a, a_path, a_run)?;
        let diff = match (b.cassettes.get(b_run), a.cassettes.get(a_run)) {
            (Some(x), Some(y)) => compare_aligned(&x.report, &bc, &y.report, &ac, align),
            (None, _) => return Err(no_run(b_path, b_run)),
            (_, None) => return Err(no_run(a_path, a_run)),
        };
        Ok(RecordingDiff {
            before: b,
            after: a,
            before_checks: bc,
            after_checks: ac,
            diff,
            runs: (b_run, a_run),
        })
    }

    /// Every check of either side, the first side's first, once each.
    pub fn check_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.before_checks.iter().map(|c| c.name.as_str()).collect();
        for c in &self.after_checks {
            if !names.contains(&c.name.as_str()) {
                names.push(c.name.as_str());
            }
        }
        names
    }

    /// The call at `index` of one side, as people read it.
    pub fn side(&self, after: bool, index: usize) -> Option<CallSide> {
        let (trace, run) = if after {
            (&self.after, self.runs.1)
        } else {
            (&self.before, self.runs.0)
        };
        CallSide::of(&trace.cassettes.get(run)?.report, trace.mcp.as_ref(), index)
    }

    /// The tool of an aligned row.
    pub fn tool(&self, row: &crate::lab::compare::CallChange) -> String {
        let pick = |after: bool, i: Option<usize>| {
            let (t, run) = if after {
                (&self.after, self.runs.1)
            } else {
                (&self.before, self.runs.0)
            };
            i.and_then(|i| t.cassettes.get(run)?.report.calls.get(i))
                .map(|c| c.tool.to_lossy())
        };
        pick(true, row.after())
            .or_else(|| pick(false, row.before()))
            .unwrap_or_default()
    }
}

/// The error for a file without the run asked for.
fn no_run(path: &Path, run: usize) -> Error {
    let why = crate::error::ConfigError::new("A recording holds no run");
    let why = if run == 0 {
        why
    } else {
        why.because(format!("it has no run {}", run + 1))
    };
    Error::invalid(Some(path), why)
}
