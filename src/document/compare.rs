//! Two recordings of one agent side by side (a campaign's run and its re-run with other
//! rules): each call aligned by tool and per-tool ordinal, with its arguments, the fault it
//! met, what the client received and what it committed, and every check of both judged from
//! each recording's own files. Both faces show it: `campaign --rerun SEED --scenario FILE`
//! prints it, the explorer draws it.

use std::path::Path;

use super::{Error, Trace, judge, open_trace};
use crate::contract::Check;
use crate::lab::compare::{RunDiff, compare};
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
    /// Opens and judges both recordings.
    pub fn open(before: &Path, after: &Path) -> Result<RecordingDiff, Error> {
        let judged = |path: &Path| -> Result<(Trace, Vec<Check>), Error> {
            let trace = open_trace(path)?;
            let checks = judge(&trace, None)
                .map_err(|e| Error::invalid(Some(path), e))?
                .runs
                .into_iter()
                .next()
                .unwrap_or_default();
            Ok((trace, checks))
        };
        let (b, bc) = judged(before)?;
        let (a, ac) = judged(after)?;
        let diff = match (b.cassettes.first(), a.cassettes.first()) {
            (Some(x), Some(y)) => compare(&x.report, &bc, &y.report, &ac),
            _ => {
                return Err(Error::invalid(
                    Some(after),
                    crate::error::ConfigError::new("A recording holds no run"),
                ));
            }
        };
        Ok(RecordingDiff {
            before: b,
            after: a,
            before_checks: bc,
            after_checks: ac,
            diff,
        })
    }

    /// The call at `index` of one side, as people read it.
    pub fn side(&self, after: bool, index: usize) -> Option<CallSide> {
        let trace = if after { &self.after } else { &self.before };
        CallSide::of(&trace.cassettes.first()?.report, trace.mcp.as_ref(), index)
    }

    /// The tool of an aligned row.
    pub fn tool(&self, row: &crate::lab::compare::CallChange) -> String {
        let pick = |after: bool, i: Option<usize>| {
            let t = if after { &self.after } else { &self.before };
            i.and_then(|i| t.cassettes.first()?.report.calls.get(i))
                .map(|c| c.tool.to_lossy())
        };
        pick(true, row.after())
            .or_else(|| pick(false, row.before()))
            .unwrap_or_default()
    }
}
