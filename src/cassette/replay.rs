//! Replay (spec §9): consume a cassette's recorded root calls in invocation order, answering
//! each with its recorded output or error, without running any tool. Divergence is sticky.
//! Also explains a divergence by finding the closest pending record and diffing arguments.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

use super::Cassette;
use crate::error::{ConfigError, Error};
use crate::json::{Value, canonical};
use crate::redact::Redactor;

/// One recorded call, as replay needs it.
#[derive(Clone, Debug)]
struct Record {
    id: u64,
    tool: crate::json::Text,
    arguments: Value,
    canonical_arguments: String,
    output: Value,
    /// What an error call raised (validation makes it `{type, known[, retry_after]}`).
    error: Option<crate::report::ErrorRecord>,
    parent_id: Option<u64>,
}

#[derive(Debug, Default)]
struct State {
    position: usize,
    consumed: BTreeSet<usize>,
    failed: bool,
}

/// A replay session.
#[derive(Debug)]
pub struct Replay {
    records: Vec<Record>,
    groups: HashMap<u64, Vec<usize>>,
    redactor: Redactor,
    state: Mutex<State>,
}

/// How an argument differs from the recorded one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffKind {
    /// Recorded but not given.
    Missing,
    /// Given but not recorded.
    Unexpected,
    /// Present in both with different canonical values.
    Changed,
}

/// One differing argument (values are canonical JSON after redaction).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgumentDiff {
    /// Path of the argument, e.g. `order_id` or `items[2].sku`.
    pub path: String,
    /// What differs.
    pub kind: DiffKind,
    /// The recorded value.
    pub recorded: Option<String>,
    /// The given value.
    pub given: Option<String>,
}

/// The pending root record nearest to a call that did not match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClosestRecord {
    /// 1-based position of the record in the cassette (the reference's "call N").
    pub position: usize,
    /// The record's tool.
    pub tool: String,
    /// Whether the tool name matched.
    pub same_tool: bool,
    /// Argument differences (empty when the arguments match).
    pub diffs: Vec<ArgumentDiff>,
}

fn mismatch(message: impl Into<String>) -> Error {
    Error::ReplayMismatch(message.into())
}

impl Replay {
    /// Prepares a replay; refuses traces that cannot be replayed faithfully.
    pub fn new(cassette: &Cassette, redactor: Option<Redactor>) -> Result<Replay, ConfigError> {
        let report = &cassette.report;
        if !report.capture || report.budget_rejections != 0 {
            return Err(
                ConfigError::new("Replay needs captured payloads and no refused calls").because(
                    if report.capture {
                        format!(
                            "{} calls were refused by the budget",
                            report.budget_rejections
                        )
                    } else {
                        "payloads were not captured".to_owned()
                    },
                ),
            );
        }
        if let Some(c) = report.calls.iter().find(|c| {
            !matches!(
                c.status,
                crate::report::Status::Ok | crate::report::Status::Error
            ) || c.capture_error
        }) {
            return Err(
                ConfigError::new("Replay requires complete, JSON-capturable calls")
                    .at(format!("calls[{}]", c.id - 1))
                    .because(if c.capture_error {
                        "its output could not be captured".to_owned()
                    } else {
                        format!("status is {}", c.status.as_str())
                    }),
            );
        }
        let mut records = Vec::with_capacity(report.calls.len());
        for typed in &report.calls {
            records.push(Record {
                id: typed.id,
                tool: typed.tool.clone(),
                canonical_arguments: canonical(&typed.arguments),
                arguments: typed.arguments.clone(),
                output: typed.output.clone(),
                error: typed
                    .error
                    .clone()
                    .filter(|_| typed.status == crate::report::Status::Error),
                parent_id: typed.parent_id,
            });
        }
        let mut roots: HashMap<u64, u64> = HashMap::new();
        let mut groups: HashMap<u64, Vec<usize>> = HashMap::new();
        for (index, r) in records.iter().enumerate() {
            let root = r
                .parent_id
                .and_then(|p| roots.get(&p).copied())
                .unwrap_or(r.id);
            roots.insert(r.id, root);
            groups.entry(root).or_default().push(index);
        }
        Ok(Replay {
            records,
            groups,
            redactor: redactor.unwrap_or_default(),
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Marks the session as diverged (e.g. when arguments could not be bound to a signature).
    pub fn fail(&self) {
        self.lock().failed = true;
    }

    /// Consumes the next recorded root call for `tool` with bound arguments `args`, returning
    /// its recorded output or raising its recorded error.
    pub fn call(&self, tool: &str, args: &Value) -> Result<Value, Error> {
        let expected = {
            let mut st = self.lock();
            if st.failed {
                return Err(mismatch("Replay previously diverged"));
            }
            if st.position >= self.records.len() {
                st.failed = true;
                return Err(mismatch("Replay received an extra call"));
            }
            let expected = &self.records[st.position];
            let normalized = match self.redactor.scrub(args) {
                Ok(v) => canonical(&v),
                Err(_) => {
                    st.failed = true;
                    return Err(mismatch("Replay arguments could not be normalized"));
                }
            };
            if expected.tool != tool || expected.canonical_arguments != normalized {
                st.failed = true;
                return Err(mismatch(format!(
                    "Tool or arguments differ at call {}",
                    st.position + 1
                )));
            }
            if let Some(group) = self.groups.get(&expected.id) {
                st.consumed.extend(group.iter().copied());
            }
            while st.consumed.contains(&st.position) {
                st.position += 1;
            }
            expected
        };
        outcome(expected)
    }

    /// Fails if the session diverged or left records unconsumed.
    pub fn assert_consumed(&self) -> Result<(), Error> {
        let st = self.lock();
        if st.failed {
            return Err(mismatch("Replay previously diverged"));
        }
        let remaining = self.records.len() - st.consumed.len();
        if remaining > 0 {
            return Err(mismatch(format!(
                "Replay ended with {remaining} unused call(s)"
            )));
        }
        Ok(())
    }

    /// Records not yet consumed.
    pub fn remaining(&self) -> usize {
        self.records.len() - self.lock().consumed.len()
    }

    /// The pending root record closest to `(tool, args)`: the same tool first, then the fewest
    /// differing arguments, then the earliest. `None` when nothing is pending or the
    /// arguments cannot be normalised.
    pub fn closest_record(&self, tool: &str, args: &Value) -> Option<ClosestRecord> {
        let given = self.redactor.scrub(args).ok()?;
        let st = self.lock();
        let mut best: Option<(bool, usize, usize, ClosestRecord)> = None;
        for (index, r) in self.records.iter().enumerate() {
            if st.consumed.contains(&index) || r.parent_id.is_some() {
                continue;
            }
            let mut diffs = Vec::new();
            diff_values("", &r.arguments, &given, &mut diffs);
            let same_tool = r.tool == tool;
            let candidate = ClosestRecord {
                position: index + 1,
                tool: r.tool.to_lossy(),
                same_tool,
                diffs,
            };
            let better = match &best {
                None => true,
                Some((bt, bn, _, _)) => {
                    (same_tool, std::cmp::Reverse(candidate.diffs.len()))
                        > (*bt, std::cmp::Reverse(*bn))
                }
            };
            if better {
                let n = candidate.diffs.len();
                best = Some((same_tool, n, index, candidate));
            }
        }
        best.map(|(_, _, _, c)| c)
    }
}

fn outcome(expected: &Record) -> Result<Value, Error> {
    let Some(error) = &expected.error else {
        return Ok(expected.output.clone());
    };
    let type_name = error.type_name.to_lossy();
    if !error.known {
        return Err(Error::RecordedTool {
            original_type: type_name,
        });
    }
    match type_name.as_str() {
        "RateLimited" => Err(Error::RateLimited {
            retry_after: error.retry_after.unwrap_or(0.0),
        }),
        "ToolTimeout" => Err(Error::Timeout("Replayed tool failure".into())),
        "ResponseLost" => Err(Error::ResponseLost("Replayed tool failure".into())),
        "ToolUnavailable" => Err(Error::Unavailable("Replayed tool failure".into())),
        _ => Err(Error::RecordedTool {
            original_type: type_name,
        }),
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

/// The differences between recorded and given arguments (canonical JSON, after redaction),
/// in path order.
pub fn diff_arguments(recorded: &Value, given: &Value) -> Vec<ArgumentDiff> {
    let mut out = Vec::new();
    diff_values("", recorded, given, &mut out);
    out
}

impl ClosestRecord {
    /// How `replay` explains it: the record, then one line per differing argument.
    pub fn explain_lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "closest recorded call: #{} {}{}",
            self.position,
            self.tool,
            if self.same_tool {
                ""
            } else {
                " (a different tool)"
            }
        )];
        for d in &self.diffs {
            let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".into());
            let what = match d.kind {
                DiffKind::Missing => "missing",
                DiffKind::Unexpected => "unexpected",
                DiffKind::Changed => "changed",
            };
            lines.push(format!(
                "  {}: {what}: recorded {}, given {}",
                d.path,
                show(&d.recorded),
                show(&d.given)
            ));
        }
        lines
    }
}

fn diff_values(path: &str, recorded: &Value, given: &Value, out: &mut Vec<ArgumentDiff>) {
    match (recorded, given) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a.sorted() {
                let p = join(path, &k.to_lossy());
                match b.iter().find(|(k2, _)| *k2 == k) {
                    Some((_, w)) => diff_values(&p, v, w, out),
                    None => out.push(ArgumentDiff {
                        path: p,
                        kind: DiffKind::Missing,
                        recorded: Some(canonical(v)),
                        given: None,
                    }),
                }
            }
            for (k, w) in b.sorted() {
                if a.iter().all(|(k2, _)| k2 != k) {
                    out.push(ArgumentDiff {
                        path: join(path, &k.to_lossy()),
                        kind: DiffKind::Unexpected,
                        recorded: None,
                        given: Some(canonical(w)),
                    });
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                diff_values(&format!("{path}[{i}]"), v, w, out);
            }
        }
        _ => {
            let (r, g) = (canonical(recorded), canonical(given));
            if r != g {
                out.push(ArgumentDiff {
                    path: if path.is_empty() {
                        "(arguments)".to_owned()
                    } else {
                        path.to_owned()
                    },
                    kind: DiffKind::Changed,
                    recorded: Some(r),
                    given: Some(g),
                });
            }
        }
    }
}
