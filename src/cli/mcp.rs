//! `mcp`: the MCP boundary on the command line — the proxy in front of a server (inject,
//! record), `--replay` (serve a recording, offline and strictly) and `--print-config` (the
//! `mcpServers` entry to paste into an agent's configuration). Standard output carries the
//! protocol only; every note goes to standard error.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::Args;

use super::Io;
use crate::document::{self, Error, Scenario};
use crate::exit;
use crate::json::{Object, Value, pretty};
use crate::mcp::proxy::{Options, Proxy};
use crate::mcp::replay::{Recording, ReplayError};
use crate::mcp::scenario::McpScenario;

/// Flags of `mcp`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
      toolstorm-tui mcp faults.json --record incident.json -- python server.py\n  \
      toolstorm-tui mcp --record incident.json -- python server.py      (record only)\n  \
      toolstorm-tui mcp --print-config shipping faults.json --record incident.json -- python server.py\n  \
      toolstorm-tui mcp --replay incident.json                          (serve the recording)\n\n\
      Then: toolstorm-tui incident.json (watch the calls arrive), toolstorm-tui check incident.json.")]
pub struct McpArgs {
    /// A scenario file of world "mcp": the faults to inject (none: record only)
    scenario: Option<PathBuf>,
    /// Keep the session as a cassette in FILE (session facts go to FILE's .mcp.json sidecar)
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Serve a recording as an MCP server, offline and strictly; exit 1 on any mismatch
    #[arg(long, value_name = "FILE", conflicts_with_all = ["record", "scenario", "print_config"])]
    replay: Option<PathBuf>,
    /// Print the mcpServers entry NAME that runs this command, for an agent's configuration
    #[arg(long, value_name = "NAME")]
    print_config: Option<String>,
    /// The server's command and arguments, after `--`
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Runs `mcp`.
pub fn run(a: &McpArgs, io: &mut Io<'_>) -> i32 {
    if let Some(path) = &a.replay {
        return replay(path, io);
    }
    let scenario = match &a.scenario {
        Some(p) => match load_scenario(p) {
            Ok(s) => Some(s),
            Err(e) => return io.fail(e),
        },
        None => None,
    };
    if let Some(name) = &a.print_config {
        return print_config(name, a, io);
    }
    let (server, server_dir) = match (&a.command, &scenario) {
        (cmd, _) if !cmd.is_empty() => (cmd.clone(), None),
        (_, Some(s)) if s.server.is_some() => {
            let cmd = s.server.as_ref().map_or_else(Vec::new, |c| {
                std::iter::once(OsString::from(&c.command))
                    .chain(c.args.iter().map(OsString::from))
                    .collect()
            });
            // A scenario's own server starts in the scenario's folder.
            let dir = a
                .scenario
                .as_deref()
                .and_then(Path::parent)
                .filter(|d| !d.as_os_str().is_empty())
                .map(Path::to_path_buf);
            (cmd, dir)
        }
        _ => {
            return io.fail(
                "ValueError: no server to start: give its command after `--` \
                 (e.g. `toolstorm-tui mcp --record incident.json -- python server.py`), \
                 or name it in the scenario's \"server\"",
            );
        }
    };
    let options = Options {
        scenario,
        scenario_path: a.scenario.as_deref().map(absolute),
        record: a.record.clone(),
        server,
        server_dir,
    };
    let proxy = match Proxy::new(options) {
        Ok(p) => p,
        Err(e) => return io.fail(format!("ConfigurationError: {e}")),
    };
    spawn_signals(proxy.interrupter());
    match proxy.run(std::io::stdin(), io.out, io.err, std::io::stderr()) {
        Ok(ending) => {
            if let Some(f) = &a.record {
                let _ = writeln!(
                    io.err,
                    "toolstorm-tui mcp: recorded {} call(s), {} fault(s) injected, {} duplicate effect(s) in {}",
                    ending.calls,
                    ending.faults,
                    ending.duplicates,
                    crate::printable::quoted(&f.display().to_string())
                );
            }
            ending.code
        }
        Err(e) => io.fail(format!("OSError: {e}")),
    }
}

/// Reads a scenario file that must be of world `mcp`.
fn load_scenario(path: &Path) -> Result<McpScenario, Error> {
    match document::open_scenario(path)? {
        Scenario::Mcp(s) => Ok(s),
        other => Err(Error::invalid(
            Some(path),
            crate::scenario_fields::invalid(
                "world",
                &format!(
                    "mcp takes a scenario of world \"mcp\"; this one is \"{}\" (run it with `toolstorm-tui run`)",
                    other.world().as_str()
                ),
            ),
        )),
    }
}

/// `path` made absolute (an agent starts the proxy from its own folder).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Prints `{"mcpServers": {NAME: {"command", "args"}}}` for this very invocation.
fn print_config(name: &str, a: &McpArgs, io: &mut Io<'_>) -> i32 {
    if a.command.is_empty() && a.scenario.is_none() {
        return io.fail(
            "ValueError: --print-config needs the server's command after `--` (or a scenario naming one)",
        );
    }
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| crate::exit::PROGRAM.to_owned());
    let mut args: Vec<Value> = vec!["mcp".into()];
    if let Some(s) = &a.scenario {
        args.push(absolute(s).display().to_string().into());
    }
    if let Some(r) = &a.record {
        args.push("--record".into());
        args.push(absolute(r).display().to_string().into());
    }
    if !a.command.is_empty() {
        args.push("--".into());
        args.extend(
            a.command
                .iter()
                .map(|c| Value::from(c.to_string_lossy().as_ref())),
        );
    }
    let mut server = Object::new();
    server.push("command", exe);
    server.push("args", Value::Array(args));
    let mut servers = Object::new();
    servers.push(name, Value::Object(server));
    let mut root = Object::new();
    root.push("mcpServers", Value::Object(servers));
    io.print(&(pretty(&Value::Object(root)) + "\n"));
    exit::OK
}

/// Serves a recording on standard input and output.
fn replay(path: &Path, io: &mut Io<'_>) -> i32 {
    let recording = match Recording::load(path) {
        Ok(r) => r,
        Err(ReplayError::Cassette(e)) => return io.fail(Error::from(e)),
        Err(ReplayError::Sidecar(side, e)) => {
            return io.fail(match e {
                crate::mcp::session::SessionError::Io(e) => Error::io(&side, e),
                crate::mcp::session::SessionError::Invalid(c) => Error::invalid(Some(&side), c),
            });
        }
        Err(ReplayError::Mismatch(c)) => return io.fail(Error::invalid(Some(path), c)),
    };
    match recording.serve(std::io::stdin(), io.out, io.err) {
        Ok(outcome) => {
            let _ = writeln!(
                io.err,
                "toolstorm-tui mcp --replay: {} of {} recorded call(s) matched{}",
                outcome.matched,
                recording.len(),
                if outcome.passed() {
                    String::new()
                } else {
                    format!(
                        "; {} mismatch(es), {} unused",
                        outcome.mismatched,
                        outcome.unused.len()
                    )
                }
            );
            if outcome.passed() {
                exit::OK
            } else {
                exit::CONTRACT_FAILED
            }
        }
        Err(e) => io.fail(format!("OSError: the client went away: {e}")),
    }
}

/// SIGTERM, SIGINT and SIGHUP end the session cleanly: the server is stopped, open calls are
/// recorded as cancelled, and the recording is written before exiting.
fn spawn_signals(stop: crate::mcp::proxy::Interrupter) {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) {
            std::thread::spawn(move || {
                if let Some(n) = signals.forever().next() {
                    stop.interrupt(n);
                }
            });
        }
    }
    #[cfg(not(unix))]
    let _ = stop;
}
