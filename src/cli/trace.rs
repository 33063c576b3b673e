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
    } else {
        io.print(&cassette::inspect_text(&trace.cassettes));
        if let Some(m) = &trace.mcp {
            let name = |v: &crate::json::Value| {
                v.as_object()
                    .and_then(|o| o.get("name"))
                    .and_then(crate::json::Value::as_str)
                    .unwrap_or("?")
                    .to_owned()
            };
            io.println(&format!(
                "MCP session: protocol {}, client {}, server {}, {} recorded call(s) with what the client received",
                m.protocol_version.as_deref().unwrap_or("unknown"),
                name(&m.client_info),
                name(&m.server_info),
                m.calls.len()
            ));
        }
    }
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
            summary.exit_code()
        }
        Err(e) => io.fail(format!("ConfigurationError: {}", e.message)),
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
