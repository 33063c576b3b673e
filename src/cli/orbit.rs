//! The executor's commands: `run FILE` for scenario files of world `orbit` (dispatched from
//! `run`), and `tools` to list the Orbit tools or print their function-tool schemas.
//! Headless: an interactive approver has no terminal here and denies.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{EXIT_OK, Io, PyInt, os_error};
use crate::atomic;
use crate::executor::scenario::{ExecutorScenario, names_world};
use crate::json::{canonical, pretty};
use crate::lab::orbit::{self, run::OrbitRun};

/// What `run` passes on for an executor scenario.
#[derive(Debug, Default)]
pub struct RunOptions {
    /// Override the file's seed.
    pub seed: Option<PyInt>,
    /// Print the complete JSON result.
    pub json: bool,
    /// Save the complete result as JSON.
    pub output: Option<PathBuf>,
    /// Save the trace as a cassette.
    pub cassette: Option<PathBuf>,
    /// Where the tracker writes (default: a fresh folder under the system's temp folder).
    pub work_dir: Option<PathBuf>,
}

/// Whether `path` holds a scenario of the executor's world (unreadable files are not).
pub fn is_orbit_file(path: &Path) -> bool {
    crate::fsread::read_document(path)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| crate::json::parse(&t).ok())
        .is_some_and(|v| names_world(&v))
}

fn load(path: &Path) -> Result<ExecutorScenario, String> {
    let text = super::lab_run::read_scenario_text(path)?;
    ExecutorScenario::from_text(&text).map_err(|e| super::lab_run::scenario_error_line(path, &e))
}

/// A fresh folder name under the temp folder for this run's tracker.
fn fresh_work_dir() -> PathBuf {
    let base = std::env::temp_dir();
    let pid = std::process::id();
    (1u32..)
        .map(|n| base.join(format!("toolstorm-orbit-{pid}-{n}")))
        .find(|p| !p.exists())
        .unwrap_or_else(|| base.join(format!("toolstorm-orbit-{pid}")))
}

/// Runs an executor scenario file.
pub fn run_file(path: &Path, opts: &RunOptions, io: &mut Io<'_>) -> i32 {
    let scenario = match load(path) {
        Ok(s) => s,
        Err(msg) => return io.fail(&msg),
    };
    let seed = match opts.seed {
        None => scenario.seed,
        Some(PyInt(Some(s))) if s.abs() <= crate::storm::MAX_SAFE_SEED => s,
        Some(_) => {
            return io
                .fail("ConfigurationError: Seed must be an integer in the JavaScript-safe range");
        }
    };
    let work_dir = opts.work_dir.clone().unwrap_or_else(fresh_work_dir);
    let result: OrbitRun = match orbit::run::run(&scenario, seed, Some(work_dir)) {
        Ok(r) => r,
        Err(e) => return io.fail(&format!("ConfigurationError: {e}")),
    };
    if let Some(p) = &opts.cassette {
        let text = canonical(&result.report.to_value()) + "\n";
        if let Err(e) = atomic::write(p, text.as_bytes()) {
            return io.fail(&os_error(p, &e));
        }
    }
    let json = pretty(&result.to_value()) + "\n";
    if let Some(p) = &opts.output
        && let Err(e) = atomic::write(p, json.as_bytes())
    {
        return io.fail(&os_error(p, &e));
    }
    if opts.json {
        io.print(&json);
    } else {
        for line in result.text_lines() {
            io.println(&line);
        }
        if let (false, Some(p)) = (result.tracker.is_empty(), &result.tracker_path) {
            io.println(&format!("tracker file: {}", p.display()));
        }
    }
    EXIT_OK
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
        io.print(&(pretty(&registry.function_tools()) + "\n"));
        return EXIT_OK;
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
    EXIT_OK
}
