//! The command line: argument parsing, output formatting and exit codes for the headless
//! subcommands. Parsing is clap; each command lives in its own module, opens files through
//! [`crate::document`], writes to the given streams and returns its exit code
//! ([`crate::exit`]), so tests can drive it in-process. `toolstorm-tui [FILE]` is not run
//! here: [`dispatch`] hands it back to the binary, which starts the explorer.

mod ask;
mod campaign;
mod compare;
mod demo;
mod diff;
mod explain;
mod mcp;
mod orbit;
mod output;
mod replay;
mod run;
mod sweep;
mod trace;

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::exit::{self, PROGRAM};
use crate::printable;

#[derive(Parser, Debug)]
#[command(
    name = "toolstorm-tui",
    version,
    about = "Break tools. Verify recovery.",
    long_about = "Inject faults at the tool boundary, record what really committed, and judge \
                  agent runs by contracts. Compatible with ToolStorm 0.2.0 files.",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    /// A cassette, report, run file, comparison or scenario file to open.
    file: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the in-memory shipping lab
    Demo(demo::DemoArgs),
    /// Validate and summarize a trace
    Inspect(trace::InspectArgs),
    /// Validate trace contracts; exit 1 on a failed check
    Check(trace::CheckArgs),
    /// Two runs side by side: calls paired, what each got and committed, verdicts A → B; exit
    /// 1 when B is worse
    Diff(diff::DiffArgs),
    /// List bundled failure scenarios
    Scenarios,
    /// Replay a lab policy against a recorded shipping cassette, offline
    Replay(replay::ReplayArgs),
    /// Run a scenario file headlessly (shipping lab or Orbit executor)
    Run(run::RunArgs),
    /// List the Orbit tools, or print their function-tool schemas
    Tools(orbit::ToolsArgs),
    /// Run a campaign over a grid of scenarios, policies, seeds, probabilities and budgets
    Sweep(sweep::SweepArgs),
    /// Ask a real model (any OpenAI-compatible server) a question; its tool calls run through
    /// the executor
    Ask(ask::AskArgs),
    /// Put an MCP proxy in front of a server: inject faults, record, or replay a recording
    Mcp(mcp::McpArgs),
    /// Run an agent many times through the MCP proxy: how often does it recover?
    Campaign(campaign::CampaignArgs),
    /// Explain one fault decision
    Decide(explain::DecideArgs),
    /// Print the canonical form (or digest) of a JSON document
    Canonical(explain::CanonicalArgs),
}

/// Output streams for a command.
pub struct Io<'a> {
    /// Standard output.
    pub out: &'a mut dyn Write,
    /// Standard error.
    pub err: &'a mut dyn Write,
    /// Standard output is a terminal: text for people may add what the reference's
    /// byte-exact output has not (run labels, policy names). Piped output stays exact.
    pub people: bool,
    /// A command of the reference's (`check`, `inspect`, `replay`, `demo`, `scenarios`) runs:
    /// its errors keep the reference's exact lines (Python's, for an OS error). Every other
    /// command says them in this tool's words ([`crate::fsread::in_our_words`]).
    pub reference: bool,
}

/// Every line of text for people goes through [`crate::printable::line`]: names from files
/// cannot retitle the terminal, move its cursor or reorder text, and a line is never longer
/// than a screenful of text. Machine output (JSON, canonical text) goes out with
/// [`Io::emit`], byte for byte: it is ASCII and escaped already, and must never be cut.
impl Io<'_> {
    /// Prints a line to standard output (a closed pipe is not an error worth reporting).
    pub fn println(&mut self, line: &str) {
        let _ = writeln!(self.out, "{}", printable::line(line));
    }

    /// Writes machine output (JSON, JSON lines, canonical text) to standard output exactly as
    /// given: never cut or escaped for display, whatever its line length, piped or not.
    pub fn emit(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }

    /// [`Io::emit`] of one line and its newline.
    pub fn emit_line(&mut self, line: &str) {
        let _ = self.out.write_all(line.as_bytes());
        let _ = self.out.write_all(b"\n");
    }

    /// [`Io::println`] for a verdict line: on a terminal (and without `NO_COLOR`) a failing
    /// line (`FAIL`, `✗ ...`) is red and a passing one (`PASS`, `✓ ...`) green; piped, the
    /// bytes are the plain line, as the reference writes them.
    pub fn println_verdict(&mut self, line: &str) {
        let trimmed = line.trim();
        // A verdict leads the line (`FAIL`, `✓ check`) or ends a table's row (`... PASS`).
        let passed = if trimmed.starts_with("FAIL")
            || trimmed.starts_with('✗')
            || trimmed.ends_with(" FAIL")
        {
            Some(false)
        } else if trimmed.starts_with("PASS")
            || trimmed.starts_with('✓')
            || trimmed.ends_with(" PASS")
        {
            Some(true)
        } else {
            None
        };
        self.println_marked(line, passed);
    }

    /// [`Io::println`] of a line that says something went well (`Some(true)`: green on a
    /// terminal) or badly (`Some(false)`: red); piped, or under `NO_COLOR`, the plain line.
    pub fn println_marked(&mut self, line: &str, passed: Option<bool>) {
        let colour = self.people
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            && std::env::var_os("TERM").is_none_or(|t| t != "dumb");
        let code = passed.map(|p| if p { "32" } else { "31" });
        match code.filter(|_| colour) {
            Some(c) => {
                let _ = writeln!(self.out, "\x1b[{c}m{}\x1b[0m", printable::line(line));
            }
            None => self.println(line),
        }
    }

    /// Prints lines of text (each ending in a newline) to standard output.
    pub fn print(&mut self, text: &str) {
        for line in text.lines() {
            self.println(line);
        }
    }

    /// Prints `toolstorm-tui: {message}` to standard error and returns exit code 2.
    pub fn fail(&mut self, message: impl std::fmt::Display) -> i32 {
        let message = message.to_string();
        let message = if self.reference {
            message
        } else {
            crate::fsread::in_our_words(&message).into_owned()
        };
        let _ = writeln!(self.err, "{PROGRAM}: {}", printable::line(&message));
        exit::USAGE
    }
}

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A command ran (or the arguments were wrong, or help was printed): exit with this code.
    Exit(i32),
    /// No command: open this file (or the bundled incident) in the explorer.
    Explore(Option<PathBuf>),
}

impl Outcome {
    /// The exit code of a command that ran; `None` when the explorer was asked for.
    pub fn code(&self) -> Option<i32> {
        match self {
            Outcome::Exit(c) => Some(*c),
            Outcome::Explore(_) => None,
        }
    }
}

/// Parses `args` (including the program name) and runs the command, or says that the
/// explorer was asked for.
pub fn dispatch(args: impl IntoIterator<Item = OsString>, io: &mut Io<'_>) -> Outcome {
    let args: Vec<OsString> = args.into_iter().collect();
    if let Some(message) = args.get(1).and_then(|a| mistyped_command(a)) {
        return Outcome::Exit(io.fail(message));
    }
    let cli = match parse(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = e.exit_code();
            let text = e.render().to_string();
            if code == 0 {
                io.print(&text);
            } else {
                let _ = io.err.write_all(text.as_bytes());
            }
            return Outcome::Exit(code);
        }
    };
    io.reference = matches!(
        cli.command,
        Some(
            Command::Demo(_)
                | Command::Scenarios
                | Command::Replay(_)
                | Command::Inspect(_)
                | Command::Check(_)
        )
    );
    let code = match cli.command {
        Some(Command::Demo(a)) => demo::run(&a, io),
        Some(Command::Scenarios) => demo::scenarios(io),
        Some(Command::Replay(a)) => replay::run(&a, io),
        Some(Command::Inspect(a)) => trace::inspect(&a, io),
        Some(Command::Check(a)) => trace::check(&a, io),
        Some(Command::Diff(a)) => diff::run(&a, io),
        Some(Command::Run(a)) => run::run(&a, io),
        Some(Command::Tools(a)) => orbit::tools(&a, io),
        Some(Command::Sweep(a)) => sweep::run(&a, io),
        Some(Command::Mcp(a)) => mcp::run(&a, io),
        Some(Command::Ask(a)) => ask::run(&a, io),
        Some(Command::Campaign(a)) => campaign::run(&a, io),
        Some(Command::Decide(a)) => explain::decide(&a, io),
        Some(Command::Canonical(a)) => explain::canonical(&a, io),
        None => return Outcome::Explore(cli.file),
    };
    Outcome::Exit(code)
}

/// The command line parsed; help on a terminal is wrapped at its width, between words (a
/// terminal would cut the long lines mid-word), and piped it is not wrapped at all.
fn parse(args: Vec<OsString>) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    use std::io::IsTerminal;
    let mut cmd = Cli::command();
    if !std::io::stdout().is_terminal() {
        // 0: as written (a pipe or a file has no width to fit).
        cmd = cmd.term_width(0);
    }
    let mut matches = cmd.clone().try_get_matches_from(args)?;
    // As clap's own parse does: an error here is formatted with the command's usage.
    Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut cmd))
}

/// When the first argument is not a file but nearly a command's name (`inspec`, `chek`), the
/// message that suggests the command, instead of failing to open a file of that name.
fn mistyped_command(arg: &std::ffi::OsStr) -> Option<String> {
    use clap::CommandFactory;
    let word = arg.to_str()?;
    if word.len() < 3 || word.starts_with('-') || std::path::Path::new(word).exists() {
        return None;
    }
    let cmd = Cli::command();
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    if names.iter().any(|n| n == word) {
        return None;
    }
    let (best, distance) = names
        .iter()
        .map(|n| (n, edit_distance(word, n)))
        .min_by_key(|(_, d)| *d)?;
    (distance <= 2 || best.starts_with(word)).then(|| {
        format!(
            "no file or command named {}; did you mean the command `{best}`? \
             (`{PROGRAM} {best} --help` shows its arguments)",
            printable::quoted(word)
        )
    })
}

/// Edits (insert, delete, replace one character) that turn `a` into `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// An integer flag parsed like Python's `int()`: `None` for a valid integer outside `i64`
/// (which the engine then refuses with its own message, as the reference does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PyInt(pub Option<i64>);

/// Clap value parser for [`PyInt`].
pub fn py_int(s: &str) -> Result<PyInt, String> {
    parse_python_int(s).map(PyInt)
}

/// Parses an integer the way Python's `int()` does for a command-line value: optional sign,
/// digits, surrounding whitespace and `_` separators. `Ok(None)` means a valid integer outside
/// the `i64` range.
pub fn parse_python_int(s: &str) -> Result<Option<i64>, String> {
    let t = s.trim();
    let body = t.strip_prefix(['-', '+']).unwrap_or(t);
    let valid = !body.is_empty()
        && !body.starts_with('_')
        && !body.ends_with('_')
        && !body.contains("__")
        && body.chars().all(|c| c.is_ascii_digit() || c == '_');
    if !valid {
        return Err(format!("invalid int value: '{s}'"));
    }
    let digits: String = t.chars().filter(|c| *c != '_').collect();
    Ok(digits.parse::<i64>().ok())
}

/// Parses a float the way Python's `float()` does (`nan`, `inf`, `1e-3`, whitespace).
pub fn parse_python_float(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    let special = matches!(unsigned, "nan" | "inf" | "infinity");
    let numeric = t
        .chars()
        .all(|c| c.is_ascii_digit() || "+-.eE_".contains(c));
    if !(special || numeric) {
        return Err(format!("invalid float value: '{s}'"));
    }
    t.replace('_', "")
        .parse::<f64>()
        .map_err(|_| format!("invalid float value: '{s}'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_of_a_command_are_suggested() {
        let pairs = [
            ("inspec", "inspect"),
            ("chek", "check"),
            ("swep", "sweep"),
            ("replya", "replay"),
        ];
        for (typed, meant) in pairs {
            let message = mistyped_command(std::ffi::OsStr::new(typed)).unwrap_or_default();
            assert!(
                message.contains(&format!("`{meant}`")),
                "{typed}: {message}"
            );
        }
        for typed in ["incident.json", "xyz", "-h", "check", "Cargo.toml"] {
            assert_eq!(
                mistyped_command(std::ffi::OsStr::new(typed)),
                None,
                "{typed}"
            );
        }
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
