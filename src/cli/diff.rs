//! `diff A B`: two runs side by side on the command line — recordings, cassettes, executor
//! runs or ask records, or the two runs of one comparison file (`diff FILE`). Calls are paired
//! by tool and arguments (`--by ordinal` pairs them as a re-run does); each pair says what
//! each client received and committed, then every check before → after. Exit 1 when the
//! second run is worse (a check that passed now fails, or the run's verdict went from PASS to
//! FAIL), so CI can hold a baseline.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::Io;
use crate::document::compare::{CallSide, RecordingDiff};
use crate::document::{Trace, open_trace};
use crate::json::Value;
use crate::lab::compare::{Align, CallChange};
use crate::{exit, obj};

/// How calls are paired.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum By {
    /// The n-th call of a tool with the same arguments
    Arguments,
    /// The n-th call of a tool, whatever its arguments (a re-run of one agent)
    Ordinal,
}

/// Flags of `diff`.
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The first run: a recording, cassette, run file or ask record (alone: a file holding two
    /// runs, compared with each other)
    a: PathBuf,
    /// The second run
    b: Option<PathBuf>,
    /// How calls are paired
    #[arg(long, value_enum, default_value = "arguments")]
    by: By,
    /// Print the comparison as JSON
    #[arg(long)]
    json: bool,
}

/// Runs `diff`.
pub fn run(a: &DiffArgs, io: &mut Io<'_>) -> i32 {
    let align = match a.by {
        By::Arguments => Align::ToolArguments,
        By::Ordinal => Align::ToolOrdinal,
    };
    let first = Target::of(&a.a);
    let second = a.b.as_deref().map(Target::of);
    let diff = match &second {
        Some(second) => opened(&first).and_then(|one| {
            let two = opened(second)?;
            let runs = (first.run(&one)?, second.run(&two)?);
            RecordingDiff::of(
                (one, &first.path, runs.0),
                (two, &second.path, runs.1),
                align,
            )
            .map_err(|e| e.to_string())
        }),
        None => opened(&first).and_then(|trace| {
            let runs = match (first.run, trace.cassettes.len()) {
                (None, 2) => (0, 1),
                (_, n) => {
                    return Err(format!(
                        "{}: holds {n} run(s); diff FILE compares the two runs of a file that holds two; \
                         otherwise name both: diff A B (a run of a file with several: FILE#N)",
                        first.path.display()
                    ));
                }
            };
            let again = opened(&first)?;
            RecordingDiff::of(
                (trace, &first.path, runs.0),
                (again, &first.path, runs.1),
                align,
            )
            .map_err(|e| e.to_string())
        }),
    };
    let d = match diff {
        Ok(d) => d,
        Err(why) => return io.fail(why),
    };
    let (left, right) = match &second {
        Some(second) => (first.name(d.runs.0), second.name(d.runs.1)),
        None => (
            format!("{}#1", first.path.display()),
            format!("{}#2", first.path.display()),
        ),
    };
    if a.json {
        io.emit(&(crate::json::pretty(&to_value(&d, &left, &right)) + "\n"));
    } else {
        super::compare::print_comparison(&d, &format!("A {left} → B {right}"), ("A", "B"), io);
    }
    if regressed(&d) {
        if !a.json {
            let _ = writeln!(io.err, "{}: B is worse than A", exit::PROGRAM);
        }
        exit::CONTRACT_FAILED
    } else {
        0
    }
}

/// One side as given: a file, and which of its runs when named (`FILE#N`, from 1).
struct Target {
    path: PathBuf,
    run: Option<usize>,
    /// The run was named: the file name says which.
    named: bool,
}

impl Target {
    /// `FILE#N` names run N of FILE when no file has the whole name.
    fn of(given: &Path) -> Target {
        let whole = Target {
            path: given.to_path_buf(),
            run: None,
            named: false,
        };
        if given.exists() {
            return whole;
        }
        let text = given.to_string_lossy();
        match text.rsplit_once('#') {
            Some((file, n)) => match n.parse::<usize>() {
                // `FILE#0` names no run (they count from 1): said as such by `run`.
                Ok(n) => Target {
                    path: PathBuf::from(file),
                    run: Some(n.wrapping_sub(1)),
                    named: true,
                },
                _ => whole,
            },
            None => whole,
        }
    }

    /// The run to compare: the named one, or the file's only run.
    fn run(&self, trace: &Trace) -> Result<usize, String> {
        let n = trace.cassettes.len();
        match self.run {
            Some(i) if i < n => Ok(i),
            Some(usize::MAX) => Err(format!(
                "{}#0: runs are numbered from 1 ({}#1 … {}#{n})",
                self.path.display(),
                self.path.display(),
                self.path.display()
            )),
            Some(i) => Err(format!(
                "{}: holds {n} run(s), not run {}",
                self.path.display(),
                i + 1
            )),
            None if n == 1 => Ok(0),
            None => Err(format!(
                "{}: holds {n} runs; name one: {}#1 … {}#{n}",
                self.path.display(),
                self.path.display(),
                self.path.display()
            )),
        }
    }

    /// How the side is called: its file, and its run when there is a choice.
    fn name(&self, run: usize) -> String {
        if self.named {
            format!("{}#{}", self.path.display(), run + 1)
        } else {
            self.path.display().to_string()
        }
    }
}

fn opened(target: &Target) -> Result<Trace, String> {
    open_trace(&target.path).map_err(|e| e.to_string())
}

/// Whether B is worse than A: a check that passed fails now, or the verdict went PASS → FAIL.
fn regressed(d: &RecordingDiff) -> bool {
    (d.diff.passed.0 && !d.diff.passed.1)
        || d.diff
            .flipped
            .iter()
            .any(|f| f.before == Some(true) && f.after == Some(false))
}

fn side(s: Option<CallSide>) -> Value {
    s.map_or(Value::Null, |s| {
        obj! {
            "id" => s.id,
            "arguments" => crate::json::parse(&s.arguments).unwrap_or_else(|_| Value::from(s.arguments.as_str())),
            "fault" => (s.fault != "-").then_some(s.fault.as_str()),
            "got" => s.got.as_str(),
            "commits" => s.commits,
        }
    })
}

fn pair<T: Into<Value> + Copy>(p: (T, T)) -> Value {
    Value::Array(vec![p.0.into(), p.1.into()])
}

/// The comparison as JSON: both sides' names, the summary, each paired call, the counts and
/// every check on both sides.
fn to_value(d: &RecordingDiff, left: &str, right: &str) -> Value {
    let calls: Vec<Value> = d
        .diff
        .rows
        .iter()
        .map(|row| {
            let (change, fields): (&str, &[&str]) = match row {
                CallChange::Same(..) => ("same", &[]),
                CallChange::Changed(_, _, what) => ("changed", what),
                CallChange::Added(_) => ("added", &[]),
                CallChange::Removed(_) => ("removed", &[]),
            };
            obj! {
                "change" => change,
                "tool" => d.tool(row),
                "fields" => Value::Array(fields.iter().map(|f| Value::from(*f)).collect()),
                "a" => side(row.before().and_then(|i| d.side(false, i))),
                "b" => side(row.after().and_then(|i| d.side(true, i))),
            }
        })
        .collect();
    let names = d.check_names();
    let verdict = |checks: &[crate::contract::Check], name: &str| {
        checks
            .iter()
            .find(|c| c.name == name)
            .map_or(Value::Null, |c| Value::Bool(c.passed))
    };
    let checks: Vec<Value> = names
        .iter()
        .map(|name| {
            let detail = |checks: &[crate::contract::Check]| {
                checks
                    .iter()
                    .find(|c| c.name == *name)
                    .map_or(Value::Null, |c| Value::from(c.detail.as_str()))
            };
            obj! {
                "name" => *name,
                "a" => verdict(&d.before_checks, name),
                "b" => verdict(&d.after_checks, name),
                "a_detail" => detail(&d.before_checks),
                "b_detail" => detail(&d.after_checks),
            }
        })
        .collect();
    let (added, removed, changed) = d.diff.counts();
    obj! {
        "a" => left,
        "b" => right,
        "identical" => d.diff.identical,
        "summary" => d.diff.summary(),
        "counts" => obj! {"added" => added, "removed" => removed, "changed" => changed},
        "calls" => Value::Array(calls),
        "faults" => pair(d.diff.faults),
        "effects" => pair(d.diff.effects),
        "duplicates" => pair(d.diff.duplicates),
        "checks" => Value::Array(checks),
        "passed" => pair(d.diff.passed),
        "regressed" => regressed(d),
    }
}
