//! `run FILE`: run a scenario file of any world headlessly. The library opens and runs it
//! ([`crate::document`]); this module turns flags into settings and prints the result: a
//! shipping scenario as `demo` prints (plus `--verdict`, `--save-scenario`), an Orbit scenario
//! as the executor's log.

use std::path::PathBuf;

use clap::Args;

use super::output::{OutputFlags, emit, write_file};
use super::{Io, PyInt, orbit, py_int};
use crate::document::{self, Error, Scenario, ScenarioRun, Settings};
use crate::executor::approval::NoTerminal;
use crate::lab::scenario_file::{PolicyChoice, ScenarioFile};

/// Flags of `run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The scenario file
    file: PathBuf,
    /// Override the file's policy (optimistic, retry, resilient, all)
    #[arg(long, value_parser = ["optimistic", "retry", "resilient", "all"])]
    policy: Option<String>,
    /// Override the file's seed
    #[arg(long, value_parser = py_int, allow_hyphen_values = true)]
    seed: Option<PyInt>,
    /// Override every rule's probability
    #[arg(long, value_parser = super::parse_python_float, allow_hyphen_values = true)]
    probability: Option<f64>,
    /// Override the file's call budget (1-20)
    #[arg(long, value_parser = py_int, allow_hyphen_values = true)]
    max_calls: Option<PyInt>,
    #[command(flatten)]
    out: OutputFlags,
    /// Save the contract verdicts as JSON
    #[arg(long)]
    verdict: Option<PathBuf>,
    /// Save the scenario as run (with --policy/--seed/--probability/--max-calls applied)
    #[arg(long)]
    save_scenario: Option<PathBuf>,
    /// Folder for the Orbit tracker's file, kept after the run (orbit scenarios; default: a
    /// private temporary folder, removed at exit)
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Answer an interactive approver's questions in order, without asking (orbit scenarios):
    /// y or n for each, comma-separated; questions past the last answer are denied. Without
    /// it the approver asks on a terminal, and denies with no terminal
    #[arg(long, value_delimiter = ',', value_parser = answer)]
    answers: Option<Vec<String>>,
    /// Run on real threads and the wall clock instead of the simulation (orbit scenarios):
    /// each tool takes the time it declares, deadlines are real; the times printed are
    /// measured
    #[arg(long)]
    live: bool,
    /// With --live: how long to wait at the end for tool bodies still running after their
    /// deadline answered (seconds; then the record says which were still running)
    #[arg(long, default_value_t = 5.0, value_parser = grace, requires = "live", allow_hyphen_values = true)]
    grace: f64,
    /// With --live: run the batches against an MCP server's tools instead of the Orbit world's
    /// (its tools from tools/list; the server's command, or its URL, follows `--`)
    #[arg(long, requires = "live")]
    mcp: bool,
    /// The MCP server after `--` (with --mcp): its command and arguments, or its URL
    /// (`http://` or `https://`, over Streamable HTTP)
    #[arg(last = true, value_name = "SERVER")]
    server: Vec<std::ffi::OsString>,
}

/// A `--grace` value: seconds in [0, 3600].
fn grace(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(g) if (0.0..=3600.0).contains(&g) => Ok(g),
        _ => Err(format!("expected seconds between 0 and 3600, got {s:?}")),
    }
}

/// One `--answers` value: `y`, `yes`, `n` or `no`.
fn answer(s: &str) -> Result<String, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok("y".into()),
        "n" | "no" => Ok("n".into()),
        _ => Err(format!("expected y or n for each question, got {s:?}")),
    }
}

/// Asks on the terminal: the question on standard error, the answer from standard input.
/// Before the first question, what is asking: the scenario and its seed, and that the run
/// waits for the answer (the results come after the run). Once the input has ended (Ctrl-D),
/// every later call is denied without asking.
pub(super) struct TerminalPrompt {
    pub(super) context: Option<String>,
    pub(super) ended: bool,
}

impl crate::executor::approval::Prompt for TerminalPrompt {
    fn ask(&mut self, question: &str) -> Option<String> {
        use std::io::Write;
        if self.ended {
            return None;
        }
        let mut err = std::io::stderr();
        if let Some(context) = self.context.take() {
            let _ = writeln!(err, "{}", crate::printable::line(&context));
        }
        let _ = write!(err, "{} ", crate::printable::line(question));
        let _ = err.flush();
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => {
                self.ended = true;
                let _ = writeln!(err);
                None
            }
            Ok(_) => Some(line),
        }
    }
}

impl RunArgs {
    /// The flags as settings; a value outside the integers the engine takes is kept out of
    /// range, so the library refuses it with its own message.
    fn settings(&self) -> Settings {
        Settings {
            policy: self.policy.as_deref().and_then(PolicyChoice::parse),
            seed: self.seed.map(|s| s.0.unwrap_or(i64::MAX)),
            probability: self.probability,
            max_calls: self.max_calls.map(|m| m.0.unwrap_or(i64::MAX)),
            work_dir: self.work_dir.clone(),
            live: self
                .live
                .then(|| std::time::Duration::from_secs_f64(self.grace)),
            mcp: self.mcp.then(|| crate::lab::orbit::run::McpSource {
                command: self.server.clone(),
                watchdog: std::env::current_exe().ok(),
            }),
        }
    }

    /// The first flag given that only shipping scenarios take.
    fn lab_only_flag(&self) -> Option<&'static str> {
        [
            ("--policy", self.policy.is_some()),
            ("--probability", self.probability.is_some()),
            ("--max-calls", self.max_calls.is_some()),
            ("--verdict", self.verdict.is_some()),
            ("--save-scenario", self.save_scenario.is_some()),
            ("--fail-on-contract", self.out.fail_on_contract),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }
}

/// Runs `run`.
pub fn run(a: &RunArgs, io: &mut Io<'_>) -> i32 {
    let scenario = match document::open_scenario(&a.file) {
        Ok(s) => s,
        Err(e) => return io.fail(&e),
    };
    let mut settings = a.settings();
    // Without --work-dir the tracker writes into a private folder (0700) removed at exit.
    let mut scratch = None;
    if let Scenario::Orbit(_) = &scenario {
        if let Some(flag) = a.lab_only_flag() {
            return io.fail(format!(
                "ValueError: {flag} applies to shipping scenarios, not to orbit scenario files"
            ));
        }
        settings.work_dir = match &a.work_dir {
            Some(dir) => Some(dir.clone()),
            None => match tempfile::Builder::new()
                .prefix("toolstorm-orbit-")
                .tempdir()
            {
                Ok(dir) => Some(scratch.insert(dir).path().to_path_buf()),
                Err(e) => {
                    return io.fail(format!("OSError: no temporary folder for the tracker: {e}"));
                }
            },
        };
    }
    if a.answers.is_some() && !matches!(scenario, Scenario::Orbit(_)) {
        return io
            .fail("ValueError: --answers applies to orbit scenario files, not to shipping ones");
    }
    if a.mcp && a.server.is_empty() {
        return io.fail(
            "ValueError: --mcp needs the server's command after `--`: \
             run FILE --live --mcp -- SERVER [ARGS...]",
        );
    }
    if !a.mcp && !a.server.is_empty() {
        return io.fail(
            "ValueError: a command after `--` is an MCP server for --live --mcp; add those flags \
             or drop the command",
        );
    }
    if a.live && !matches!(scenario, Scenario::Orbit(_)) {
        return io.fail(
            "ValueError: --live applies to orbit scenario files (the shipping lab runs on \
             virtual time)",
        );
    }
    // Who answers an interactive approver: the answers given, a person at the terminal, or
    // nobody (denied, and the output says so).
    use std::io::IsTerminal;
    let mut scripted =
        crate::executor::approval::Scripted::new(a.answers.iter().flatten().cloned());
    let mut terminal = TerminalPrompt {
        context: match &scenario {
            Scenario::Orbit(s) => Some(format!(
                "ToolStorm · {} · seed {}: a side-effecting call waits for your approval (y \
                 approves, anything else denies; the run's results follow)",
                s.story.title,
                a.seed.and_then(|p| p.0).unwrap_or(s.seed)
            )),
            _ => None,
        },
        ended: false,
    };
    let mut nobody = NoTerminal;
    let prompt: &mut dyn crate::executor::approval::Prompt = match &a.answers {
        Some(_) => &mut scripted,
        None if io.people && std::io::stdin().is_terminal() => &mut terminal,
        None => &mut nobody,
    };
    let result = match scenario.run(Some(&a.file), &settings, prompt) {
        Ok(r) => r,
        Err(e) => return io.fail(&e),
    };
    // Answers given and never asked for are said, not silently dropped.
    if let Some(given) = &a.answers {
        let unused = scripted.left();
        if scripted.asked() == 0 {
            let _ = writeln!(
                io.err,
                "toolstorm-tui: --answers {} not used: the scenario's approver never asked (it \
                 asks only when \"approver\" is \"interactive\" and a call has a side effect)",
                crate::printable::line(&given.join(","))
            );
        } else if unused > 0 {
            let _ = writeln!(
                io.err,
                "toolstorm-tui: --answers: {unused} of {} answer(s) not used: the approver asked \
                 {} question(s)",
                given.len(),
                scripted.asked()
            );
        }
    }
    match result {
        ScenarioRun::Orbit(r) => orbit::print_run(&r, &a.out, scratch.is_none(), io),
        ScenarioRun::Lab(lab) => {
            let code = emit(
                &lab.file.scenario,
                lab.file.policy,
                &lab.file.config,
                &lab.runs,
                &a.out,
                a.verdict.as_deref(),
                io,
            );
            match &a.save_scenario {
                Some(path) if code != crate::exit::USAGE => {
                    save_scenario(path, &lab.file, io).map_or_else(|c| c, |()| code)
                }
                _ => code,
            }
        }
    }
}

/// Writes the scenario as run, after checking the overrides still make a valid file.
fn save_scenario(path: &std::path::Path, file: &ScenarioFile, io: &mut Io<'_>) -> Result<(), i32> {
    let text = file.to_text();
    if let Err(e) = ScenarioFile::from_text(&text) {
        return Err(io.fail(Error::invalid(Some(path), e)));
    }
    write_file(path, &text, io)
}
