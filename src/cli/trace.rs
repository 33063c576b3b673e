//! `inspect` and `check`: validate incident files (a cassette, a run file, a comparison) with
//! the reference's semantics, output and exit codes; errors add the file, JSON path and reason.

use std::path::PathBuf;

use clap::Args;

use super::{Io, PyInt, py_int};
use crate::cassette::{self, Cassette};
use crate::{document, exit};

/// Flags of `inspect`.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// A cassette, report, run file or comparison
    path: PathBuf,
    /// Print a JSON summary
    #[arg(long)]
    json: bool,
}

/// Flags of `check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// A cassette, report, run file or comparison
    path: PathBuf,
    /// Call budget to check against (calls plus refused calls) [default: an MCP recording's
    /// own budget, else 100]
    #[arg(long, value_parser = py_int, allow_hyphen_values = true)]
    max_calls: Option<PyInt>,
    /// Print the contract as JSON
    #[arg(long)]
    json: bool,
}

/// Loads every cassette of a trace document, or prints why not.
pub fn load(path: &std::path::Path, io: &mut Io<'_>) -> Result<Vec<Cassette>, i32> {
    document::open_trace(path)
        .map(|t| t.cassettes)
        .map_err(|e| io.fail(e))
}

/// Runs `inspect`.
pub fn inspect(a: &InspectArgs, io: &mut Io<'_>) -> i32 {
    let trace = match document::open_trace(&a.path) {
        Ok(t) => t,
        Err(e) => return io.fail(e),
    };
    if a.json {
        io.print(&cassette::inspect_json(&trace.cassettes));
    } else if io.people && trace.cassettes.len() > 1 {
        for (i, c) in trace.cassettes.iter().enumerate() {
            let line = cassette::inspect_text(std::slice::from_ref(c));
            io.println(&format!("{}: {}", run_label(&trace, i), line.trim_end()));
        }
    } else {
        io.print(&cassette::inspect_text(&trace.cassettes));
        if let Some(m) = &trace.mcp {
            let name = crate::mcp::session::McpSession::peer_name;
            io.println(&format!(
                "MCP session: protocol {}, client {}, server {}, {} recorded call(s) with what the client received",
                m.protocol_version.as_deref().unwrap_or("unknown"),
                name(&m.client_info),
                name(&m.server_info),
                m.calls.len()
            ));
        }
    }
    // A command ends here: the operating system takes the memory back faster than freeing
    // a 10,000-call trace piece by piece would.
    std::mem::forget(trace);
    exit::OK
}

/// Runs `check`.
pub fn check(a: &CheckArgs, io: &mut Io<'_>) -> i32 {
    let trace = match document::open_trace(&a.path) {
        Ok(t) => t,
        Err(e) => return io.fail(e),
    };
    let max_calls = a.max_calls.map(|m| m.0.unwrap_or(i64::MAX));
    match document::judge(&trace, max_calls) {
        Ok(summary) => {
            if a.json {
                io.print(&summary.json());
            } else if io.people && trace.cassettes.len() > 1 {
                for (i, run) in summary.runs.iter().enumerate() {
                    io.println(&run_label(&trace, i));
                    let one = cassette::CheckSummary {
                        runs: vec![run.clone()],
                    };
                    for line in one.lines() {
                        io.println(&format!("  {line}"));
                    }
                }
            } else {
                for line in summary.lines() {
                    io.println(&line);
                }
                if let (Some(session), [c]) = (&trace.mcp, trace.cassettes.as_slice()) {
                    for line in duplicate_lines(&c.report, session) {
                        io.println(&line);
                    }
                }
            }
            if io.people && !a.json {
                for line in recorded_notes(&trace, &summary, max_calls) {
                    let _ = writeln!(io.err, "{}", crate::printable::line(&line));
                }
            }
            let code = summary.exit_code();
            std::mem::forget(trace);
            code
        }
        Err(e) => io.fail(format!("ConfigurationError: {}", e.message)),
    }
}

/// Where a run file recorded the lab's own verdict and it differs from `check`'s (another
/// contract, another budget), a note saying so, for people at a terminal.
fn recorded_notes(
    trace: &document::Trace,
    summary: &cassette::CheckSummary,
    max_calls: Option<i64>,
) -> Vec<String> {
    let budget = max_calls.unwrap_or(document::DEFAULT_MAX_CALLS);
    let mut notes = Vec::new();
    for (i, checks) in summary.runs.iter().enumerate() {
        let Some(Some(r)) = trace.recorded.get(i) else {
            continue;
        };
        let lab = crate::contract::verdict(&r.checks);
        let ours = crate::contract::verdict(checks);
        if lab != ours {
            let word = |v: bool| if v { "PASS" } else { "FAIL" };
            let their_budget = r
                .max_calls
                .map_or_else(String::new, |b| format!(", budget {b}"));
            notes.push(format!(
                "note: {} is {} by the lab contract recorded in the file{their_budget}; check \
                 judges only faults, duplicates and the call budget ({budget}; --max-calls N \
                 to change it): {}",
                run_label(trace, i),
                word(lab),
                word(ours)
            ));
        }
    }
    notes
}

/// `run 2: retry (Unchecked retries)`: a run of a comparison, named as the explorer and the
/// demo name it.
fn run_label(trace: &document::Trace, i: usize) -> String {
    let name = trace.labels.get(i).cloned().flatten();
    match name.as_deref().and_then(crate::lab::Policy::parse) {
        Some(p) => format!("run {}: {} ({})", i + 1, p.as_str(), p.title()),
        None => match name {
            Some(n) => format!("run {}: {n}", i + 1),
            None => format!("run {}", i + 1),
        },
    }
}

/// For an MCP recording: each duplicate commit, the call that made it and the evidence, next
/// to the first commit of the same effect.
fn duplicate_lines(
    report: &crate::report::Report,
    session: &crate::mcp::session::McpSession,
) -> Vec<String> {
    let evidence = |i: usize| {
        session
            .evidence_of(report, i)
            .map_or("unknown", |ev| ev.as_str())
    };
    let mut first: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    let mut lines = Vec::new();
    for (i, e) in report.effects.iter().enumerate() {
        match first.get(&e.identity) {
            None => {
                first.insert(e.identity, i);
            }
            Some(&f) => {
                let earlier = &report.effects[f];
                lines.push(format!(
                    "duplicate commit: {} {} by call #{} ({} evidence), first committed by call #{} ({} evidence)",
                    e.name,
                    e.key,
                    e.call_id,
                    evidence(i),
                    earlier.call_id,
                    evidence(f)
                ));
            }
        }
    }
    lines
}
