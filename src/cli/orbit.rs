//! The executor's output: what `run FILE` prints and writes for a scenario of world `orbit`
//! (headless: an interactive approver has no terminal here and denies), and `tools`, which
//! lists the Orbit tools or prints their function-tool schemas.

use clap::Args;

use super::Io;
use super::output::{OutputFlags, write_file};
use crate::exit;
use crate::json::{canonical, pretty};
use crate::lab::orbit::{self, run::OrbitRun};

/// Writes and prints an executor scenario's run: the cassette and JSON result files, then the
/// log as text or the result as JSON. `kept`: the tracker's folder stays after exit (it was
/// given with `--work-dir`).
pub fn print_run(result: &OrbitRun, out: &OutputFlags, kept: bool, io: &mut Io<'_>) -> i32 {
    if let Some(p) = &out.cassette {
        if let Some(why) = crate::mcp::journal::refuses_new_cassette(p) {
            return io.fail(format!("ValueError: {why}"));
        }
        if let Err(code) = write_file(p, &(canonical(&result.report.to_value()) + "\n"), io) {
            return code;
        }
    }
    let json = pretty(&result.to_value()) + "\n";
    if let Some(p) = &out.output
        && let Err(code) = write_file(p, &json, io)
    {
        return code;
    }
    if out.json {
        io.emit(&json);
    } else {
        for (line, passed) in result.marked_lines() {
            io.println_marked(&line, passed);
        }
        match (result.tracker.is_empty(), &result.tracker_path) {
            (false, Some(p)) if kept => io.println(&format!("tracker file: {}", p.display())),
            (false, _) => io.println(
                "tracker file: in a private temporary folder, removed at exit \
                 (keep it with --work-dir DIR)",
            ),
            (true, _) => {}
        }
    }
    exit::OK
}

/// Flags of `tools`.
#[derive(Args, Debug)]
pub struct ToolsArgs {
    /// Print each tool's function-tool JSON schema (for a model API)
    #[arg(long)]
    schema: bool,
    /// Only the tools without side effects
    #[arg(long)]
    read_only: bool,
}

/// Runs `tools`.
pub fn tools(a: &ToolsArgs, io: &mut Io<'_>) -> i32 {
    let mut registry = orbit::registry();
    if a.read_only {
        registry = registry.read_only();
    }
    if a.schema {
        io.emit(&(pretty(&registry.function_tools()) + "\n"));
        return exit::OK;
    }
    let w = registry
        .tools()
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(0);
    for t in registry.tools() {
        io.println(&format!(
            "{:<w$}  {:<11}  {:<14}  timeout {}",
            t.name,
            if t.side_effect {
                "side effect"
            } else {
                "read-only"
            },
            if t.idempotent {
                "idempotent"
            } else {
                "not idempotent"
            },
            t.timeout.map_or_else(
                || "default".to_owned(),
                |s| format!("{}s", crate::error::format_g(s))
            )
        ));
    }
    exit::OK
}
