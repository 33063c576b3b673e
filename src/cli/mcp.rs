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
use crate::mcp::http::headers;
use crate::mcp::http::listen::ListenOptions;
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
    /// With --replay: keep the replay's verdict as JSON in FILE (rewritten after every call)
    #[arg(long, value_name = "FILE", requires = "replay")]
    replay_report: Option<PathBuf>,
    /// With --replay: keep the replay's verdict as JUnit XML in FILE too (rewritten after every
    /// call): whether every call matched, every recorded call was used, every answer given back
    #[arg(long, value_name = "FILE", requires = "replay")]
    junit: Option<PathBuf>,
    /// Internal: the watchdog that stops the server's process group PGID when the proxy that
    /// started it goes away (its standard input closes)
    #[arg(long, value_name = "PGID", hide = true, exclusive = true)]
    watch_group: Option<u32>,
    /// Print the mcpServers entry NAME that runs this command, for an agent's configuration
    #[arg(long, value_name = "NAME")]
    print_config: Option<String>,
    /// What the printed entry runs: this binary by its absolute path, or the Python package
    /// through `uvx` or `pipx run` (then nothing but uv or pipx needs to be installed)
    #[arg(long, value_enum, value_name = "HOW", default_value_t = Launcher::Path, requires = "print_config")]
    launcher: Launcher,
    /// Continue the recording in --record FILE (made with the same scenario) as one run:
    /// ordinals, budget and effect ledger carry on, for clients that start a server per call
    #[arg(long, requires = "record")]
    append: bool,
    /// Override the scenario's decision seed (a campaign gives each run its own)
    #[arg(long, value_parser = super::py_int, allow_hyphen_values = true, requires = "scenario")]
    seed: Option<super::PyInt>,
    /// Override every rule's probability (0 to 1)
    #[arg(long, value_parser = super::parse_python_float, allow_hyphen_values = true, requires = "scenario")]
    probability: Option<f64>,
    /// Take the agent over Streamable HTTP on ADDR (HOST:PORT; port 0 picks a free one) instead
    /// of standard input and output; the URL is printed on standard error
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// With --listen: take clients from other machines (the default is loopback only)
    #[arg(long, requires = "listen")]
    allow_remote: bool,
    /// With --listen: a host name (or address) requests may name in their Host header beside
    /// loopback and the listen address, e.g. the machine's name for remote clients; repeat
    /// for more (any other name is refused, which keeps DNS-rebinding pages out)
    #[arg(long = "allow-host", value_name = "NAME", requires = "listen")]
    allow_hosts: Vec<String>,
    /// With --record: the agent's command line (run by `sh -c` in this folder), kept in the
    /// recording with its secrets redacted, so the explorer can start it again on other
    /// rules (`R`, `p`). Placeholders: {mcp_config} {seed} {record} {run_dir} {mcp_url}
    #[arg(long, value_name = "CMD", requires = "record")]
    agent_cmd: Option<String>,
    /// A command that resets the world the agent acts on (its database, its files), run by
    /// `sh -c` in this folder before the server starts, as a campaign's --before runs before
    /// each run; with --agent-cmd it is kept in the recording, and a re-run (`R`) runs it
    /// first too. Placeholders: {seed} {record}. Its output goes to standard error
    #[arg(long, value_name = "CMD", conflicts_with = "replay")]
    before: Option<String>,
    /// A header sent with every request to a server reached by URL, as 'Name: value' (a value
    /// written `$NAME` is read from the environment variable NAME); repeat for more
    #[arg(long = "header", value_name = "'NAME: VALUE'")]
    headers: Vec<String>,
    /// The server after `--`: its command and arguments, or its URL (`http://` or `https://`:
    /// a server reached over Streamable HTTP). A client that drops the `--`, as the MCP
    /// Inspector does, works too: the first argument not ending in .json starts the command
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    command: Vec<OsString>,
}

impl McpArgs {
    /// `--listen` and `--allow-remote`.
    fn listen_options(&self) -> Option<ListenOptions> {
        self.listen.as_ref().map(|addr| ListenOptions {
            allow_hosts: self.allow_hosts.clone(),
            ..ListenOptions::new(addr, self.allow_remote)
        })
    }

    /// The scenario and the server command, whichever way they were given: with `--`, or
    /// without it (the first positional is the scenario only when it names a `.json` file).
    fn positionals(&self) -> (Option<PathBuf>, Vec<OsString>) {
        match &self.scenario {
            Some(p)
                if !p
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("json")) =>
            {
                let command = std::iter::once(p.as_os_str().to_owned())
                    .chain(self.command.iter().cloned())
                    .collect();
                (None, command)
            }
            other => (other.clone(), self.command.clone()),
        }
    }
}

/// `--launcher`: what the printed `mcpServers` entry runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Launcher {
    /// This binary, by its absolute path
    Path,
    /// `uvx toolstorm-tui mcp ...`
    Uvx,
    /// `pipx run toolstorm-tui mcp ...`
    Pipx,
}

/// Runs `mcp`.
pub fn run(a: &McpArgs, io: &mut Io<'_>) -> i32 {
    if let Some(pgid) = a.watch_group {
        return crate::mcp::proxy::child::watch_group(pgid, std::io::stdin());
    }
    if let Some(path) = &a.replay {
        return replay(
            path,
            a.replay_report.as_deref(),
            a.junit.as_deref(),
            a.listen_options().as_ref(),
            io,
        );
    }
    let (scenario_path, command) = a.positionals();
    let scenario = match &scenario_path {
        Some(p) => match load_scenario(p) {
            Ok(mut s) => {
                if let Some(seed) = &a.seed {
                    match seed
                        .0
                        .filter(|n| n.unsigned_abs() <= crate::storm::MAX_SAFE_SEED as u64)
                    {
                        Some(n) => s.seed = n,
                        None => {
                            return io.fail(
                                "ValueError: --seed must be an integer of at most 2**53 - 1 in size",
                            );
                        }
                    }
                }
                if let Some(pr) = a.probability {
                    if !(0.0..=1.0).contains(&pr) {
                        return io.fail(format!(
                            "ValueError: --probability must be a number between 0 and 1, got {}",
                            crate::json::float::py_repr(pr)
                        ));
                    }
                    s.probability = Some(pr);
                }
                Some(s)
            }
            Err(e) => return io.fail(e),
        },
        None => None,
    };
    // Checked before a client is given them (a `$VAR` is read when the proxy starts).
    if let Err(e) = static_headers(&a.headers, |_| Some(String::new())) {
        return io.fail(format!("ValueError: {e}"));
    }
    if let Some(name) = &a.print_config {
        return print_config(name, a, scenario_path.as_deref(), &command, io);
    }
    let (server, server_dir) = match (&command, &scenario) {
        (cmd, _) if !cmd.is_empty() => (cmd.clone(), None),
        (_, Some(s)) if s.server.is_some() => {
            // A scenario's own server starts in the scenario's folder, and a program named by
            // a relative path (`../target/release/examples/...`) is found from there.
            let dir = scenario_path
                .as_deref()
                .and_then(Path::parent)
                .filter(|d| !d.as_os_str().is_empty())
                .map(Path::to_path_buf);
            let cmd = match s.server.as_ref() {
                Some(c) if c.is_url => vec![OsString::from(&c.command)],
                Some(c) => {
                    let program = Path::new(&c.command);
                    let program = match &dir {
                        Some(d) if c.command.contains('/') && program.is_relative() => {
                            d.join(program)
                        }
                        _ => program.to_path_buf(),
                    };
                    if c.command.contains('/') && !program.is_file() {
                        return io.fail(format!(
                            "ValueError: the scenario's server {} is not a file (a path in \
                             \"server\" is taken from the scenario's folder){}",
                            crate::printable::quoted(&program.display().to_string()),
                            if c.command.contains("target/release/examples/") {
                                ": build it first with `cargo build --release --examples`"
                            } else {
                                ""
                            }
                        ));
                    }
                    std::iter::once(program.into_os_string())
                        .chain(c.args.iter().map(OsString::from))
                        .collect()
                }
                None => Vec::new(),
            };
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
    let headers = match static_headers(&a.headers, |k| std::env::var(k).ok()) {
        Ok(h) => h,
        Err(e) => return io.fail(format!("ValueError: {e}")),
    };
    if !headers.is_empty() && !crate::mcp::address::is_url(&server) {
        return io.fail(
            "ValueError: --header is for a server reached by URL (give its http:// or https:// URL after `--`)",
        );
    }
    let options = Options {
        scenario,
        scenario_path: scenario_path.as_deref().map(absolute),
        record: a.record.clone(),
        server,
        server_dir,
        append: a.append,
        watchdog: std::env::current_exe().ok(),
        headers,
        listen: a.listen_options(),
        agent: a
            .agent_cmd
            .as_ref()
            .map(|cmd| crate::mcp::session::AgentCommand {
                command: crate::redact::Redactor::builtin().redact_command_line(cmd),
                cwd: std::env::current_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_else(|_| ".".into()),
                before: a
                    .before
                    .as_ref()
                    .map(|b| crate::redact::Redactor::builtin().redact_command_line(b)),
            }),
    };
    // The world is reset before anything starts (the recording's first call sees it fresh).
    if let Some(cmd) = &a.before {
        let record = a.record.as_ref().map(|r| r.display().to_string());
        let seed = a.seed.as_ref().and_then(|s| s.0);
        if let Err(why) = crate::agent::before::reset_world(cmd, seed, record.as_deref()) {
            return io.fail(why);
        }
    }
    let proxy = match Proxy::new(options) {
        Ok(p) => p,
        Err(e @ crate::mcp::proxy::ProxyError::Record { .. }) => {
            return io.fail(format!("OSError: {e}"));
        }
        Err(e) => return io.fail(format!("ConfigurationError: {e}")),
    };
    spawn_signals(proxy.interrupter());
    // The relay writes from the thread that runs it (any reader's): our own handles of the
    // process's streams, the messages flushed one batch at a time.
    let client_out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout());
    match proxy.run(
        std::io::stdin(),
        client_out,
        std::io::stderr(),
        std::io::stderr(),
    ) {
        Ok(ending) => {
            if let Some(t) = &ending.trouble {
                let _ = writeln!(io.err, "toolstorm-tui mcp: {}", crate::printable::line(t));
            }
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
        Err(crate::mcp::proxy::ProxyError::Interrupted(n)) => 128 + n,
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
/// The `--header` values, each checked ([`crate::mcp::http::headers::parse_static`]), a name
/// given twice refused (it would go twice).
fn static_headers(
    given: &[String],
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, String> {
    let mut headers: Vec<(String, String)> = Vec::new();
    for h in given {
        let (name, value) = crate::mcp::http::headers::parse_static(h, &env)?;
        if headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
            return Err(format!("--header {name} is given twice"));
        }
        headers.push((name, value));
    }
    Ok(headers)
}

fn print_config(
    name: &str,
    a: &McpArgs,
    scenario: Option<&Path>,
    command_line: &[OsString],
    io: &mut Io<'_>,
) -> i32 {
    if command_line.is_empty() && scenario.is_none() {
        return io.fail(
            "ValueError: --print-config needs the server's command after `--` (or a scenario naming one)",
        );
    }
    if let Some(addr) = &a.listen {
        return print_url_config(name, addr, io);
    }
    // The Python package (pyproject.toml) has the program's name and carries its binary.
    let (command, mut args): (String, Vec<Value>) = match a.launcher {
        Launcher::Path => (
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| exit::PROGRAM.to_owned()),
            vec![],
        ),
        Launcher::Uvx => ("uvx".to_owned(), vec![exit::PROGRAM.into()]),
        Launcher::Pipx => ("pipx".to_owned(), vec!["run".into(), exit::PROGRAM.into()]),
    };
    args.push("mcp".into());
    let lead = args.len();
    if let Some(r) = &a.record {
        args.push("--record".into());
        args.push(absolute(r).display().to_string().into());
    }
    for h in &a.headers {
        // A value in clear would be written into the client's config: only a harmless one may
        // be, anything else is given as `$NAME`, read where the client starts the proxy.
        let (name, value) = h.split_once(':').unwrap_or((h.as_str(), ""));
        let name = name.trim();
        if !headers::added_value_shown(name) && headers::variable(value).is_none() {
            return io.fail(format!(
                "ValueError: --header {name}: --print-config writes no header value into a \
                 client's config: give it as '{name}: $VARIABLE', read from the environment \
                 the client starts the proxy in"
            ));
        }
        args.push("--header".into());
        args.push(h.as_str().into());
    }
    if a.append {
        args.push("--append".into());
    }
    // The agent's command goes with the recording (so it can be re-run); one that holds what
    // looks like a secret is refused, as a --header value is: the config is a file.
    if let Some(cmd) = &a.agent_cmd {
        if crate::redact::Redactor::builtin().redact_command_line(cmd) != *cmd {
            return io.fail(
                "ValueError: --agent-cmd: --print-config writes no secret into a config, and \
                 the command holds what looks like one: have the command read it from an \
                 environment variable ($NAME) instead",
            );
        }
        args.push("--agent-cmd".into());
        args.push(cmd.as_str().into());
    }
    if let Some(cmd) = &a.before {
        if crate::redact::Redactor::builtin().redact_command_line(cmd) != *cmd {
            return io.fail(
                "ValueError: --before: --print-config writes no secret into a config, and the \
                 command holds what looks like one: have the command read it from an \
                 environment variable ($NAME) instead",
            );
        }
        args.push("--before".into());
        args.push(cmd.as_str().into());
    }
    if let Some(seed) = a.seed.as_ref().and_then(|s| s.0) {
        args.push("--seed".into());
        args.push(seed.to_string().into());
    }
    if let Some(p) = a.probability {
        args.push("--probability".into());
        args.push(crate::json::float::py_repr(p).into());
    }
    let scenario = scenario.map(|s| absolute(s).display().to_string());
    if let Some(s) = &scenario {
        args.push(s.as_str().into());
    }
    // The client starts us from a folder of its own: a program or argument that names a
    // file here is given by its absolute path (a bare program name is found on PATH).
    let server_words: Vec<String> = command_line
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let p = Path::new(c);
            let names_file = !c.to_string_lossy().starts_with('-')
                && (i > 0 || c.to_string_lossy().contains('/'))
                && p.exists();
            if names_file {
                absolute(p).display().to_string()
            } else {
                c.to_string_lossy().into_owned()
            }
        })
        .collect();
    // The server's command follows our options and the scenario, without `--`: the MCP
    // Inspector splices `args` into its own command line, where a `--` ends its options
    // ("Method is required"). The separator is kept only when the words would read
    // otherwise without it (a server whose first argument looks like one of our options).
    let words = |with_separator: bool| {
        let mut w: Vec<String> = args[lead..]
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        if with_separator && !server_words.is_empty() {
            w.push("--".into());
        }
        w.extend(server_words.iter().cloned());
        w
    };
    let separator = !reads_as(&words(false), scenario.as_deref(), &server_words);
    let words = words(separator);
    args.truncate(lead);
    args.extend(words.into_iter().map(Value::from));
    let mut server = Object::new();
    server.push("command", command);
    server.push("args", Value::Array(args));
    let mut servers = Object::new();
    servers.push(name, Value::Object(server));
    let mut root = Object::new();
    root.push("mcpServers", Value::Object(servers));
    io.emit(&(pretty(&Value::Object(root)) + "\n"));
    exit::OK
}

/// Prints the entry of a client that reaches a listening proxy by URL: `{"type": "http",
/// "url": ...}` (the `type` is what Claude Code and VS Code ask for; Cursor, pydantic-ai and
/// the OpenAI Agents SDK read the `url` and pass over it). The proxy is started on its own
/// with the same command less `--print-config`.
fn print_url_config(name: &str, addr: &str, io: &mut Io<'_>) -> i32 {
    let port_zero = addr.rsplit_once(':').is_some_and(|(_, p)| p == "0");
    if port_zero {
        return io.fail(
            "ValueError: --print-config with --listen needs a fixed port (the client is given the URL before the proxy starts): e.g. --listen 127.0.0.1:8931",
        );
    }
    let host = match addr.rsplit_once(':') {
        Some(("0.0.0.0" | "[::]", port)) => format!("127.0.0.1:{port}"),
        _ => addr.to_owned(),
    };
    let mut server = Object::new();
    server.push("type", "http");
    server.push(
        "url",
        format!("http://{host}{}", crate::mcp::http::listen::PATH),
    );
    let mut servers = Object::new();
    servers.push(name, Value::Object(server));
    let mut root = Object::new();
    root.push("mcpServers", Value::Object(servers));
    io.emit(&(pretty(&Value::Object(root)) + "\n"));
    let _ = writeln!(
        io.err,
        "toolstorm-tui mcp: start the proxy with the same command without --print-config; the client connects to it"
    );
    exit::OK
}

/// Whether `mcp WORDS` reads as the scenario and server command given.
fn reads_as(words: &[String], scenario: Option<&str>, server: &[String]) -> bool {
    #[derive(clap::Parser)]
    struct Only {
        #[command(flatten)]
        mcp: McpArgs,
    }
    use clap::Parser as _;
    let argv = std::iter::once("mcp".to_owned()).chain(words.iter().cloned());
    Only::try_parse_from(argv).is_ok_and(|o| {
        let (s, c) = o.mcp.positionals();
        s.map(|p| p.display().to_string()).as_deref() == scenario
            && c.iter().map(|w| w.to_string_lossy()).eq(server
                .iter()
                .map(|w| std::borrow::Cow::Borrowed(w.as_str())))
    })
}

/// A replay's verdict as a JUnit suite: three cases, as the exit status judges it.
fn replay_suite(path: &Path, o: &crate::mcp::replay::ReplayOutcome) -> crate::junit::Suite {
    let ids = |v: &[u64]| {
        v.iter()
            .map(|i| format!("#{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let case = |name: &str, failed: Option<String>| crate::junit::Case {
        name: name.to_owned(),
        classname: format!("toolstorm.replay.{}", path.display()),
        failure: failed.map(|message| crate::junit::Failure {
            kind: name.to_owned(),
            text: message.clone(),
            message,
        }),
        ..crate::junit::Case::default()
    };
    crate::junit::Suite {
        name: format!("replay of {}", path.display()),
        properties: vec![("recording".into(), path.display().to_string())],
        cases: vec![
            case(
                "every call matched its recording",
                (o.mismatched > 0).then(|| {
                    format!(
                        "{} call(s) did not match their recording ({} matched)",
                        o.mismatched, o.matched
                    )
                }),
            ),
            case(
                "every recorded call was asked for",
                (!o.unused.is_empty())
                    .then(|| format!("recorded calls never asked for: {}", ids(&o.unused))),
            ),
            case(
                "every recorded answer was given back",
                (!o.unreproduced.is_empty())
                    .then(|| format!("answers too large to keep: {}", ids(&o.unreproduced))),
            ),
        ],
    }
}

/// Serves a recording on standard input and output.
fn replay(
    path: &Path,
    report: Option<&Path>,
    junit: Option<&Path>,
    listen: Option<&ListenOptions>,
    io: &mut Io<'_>,
) -> i32 {
    let mut recording = match Recording::load(path) {
        Ok((r, note)) => {
            if let Some(n) = note {
                let _ = writeln!(
                    io.err,
                    "toolstorm-tui mcp --replay: {}",
                    crate::printable::line(&n)
                );
            }
            r
        }
        Err(ReplayError::Cassette(e)) => return io.fail(Error::from(e)),
        Err(ReplayError::Sidecar(side, e)) => {
            return io.fail(match e {
                crate::mcp::session::SessionError::Io(e) => Error::io(&side, e),
                crate::mcp::session::SessionError::Invalid(c) => Error::invalid(Some(&side), c),
            });
        }
        Err(ReplayError::Mismatch(c)) => return io.fail(Error::invalid(Some(path), c)),
        Err(ReplayError::Journal(journal, e)) => {
            return io.fail(match e {
                crate::mcp::journal::JournalError::Io(e) => Error::io(&journal, e),
                crate::mcp::journal::JournalError::Invalid(c) => Error::invalid(Some(&journal), c),
            });
        }
    };
    // The verdict is on disk after every call: clients kill their replay server at exit and
    // never show its exit status. It says which checks the recording itself fails.
    let total = recording.len();
    let recording_failed: Vec<String> = match crate::document::open_trace(path)
        .map_err(|e| e.to_string())
        .and_then(|t| crate::document::judge(&t, None).map_err(|e| e.to_string()))
    {
        Ok(s) => s
            .runs
            .into_iter()
            .flatten()
            .filter(|c| !c.passed)
            .map(|c| c.name)
            .collect(),
        Err(why) => vec![format!("the recording could not be judged: {why}")],
    };
    let write_report = |outcome: &crate::mcp::replay::ReplayOutcome, done: bool| {
        if let Some(file) = junit {
            let xml = crate::junit::to_xml(&[replay_suite(path, outcome)]);
            crate::atomic::write(file, xml.as_bytes()).map_err(|e| (file, e))?;
        }
        match report {
            Some(file) => {
                let text = pretty(&outcome.to_value(path, total, done, &recording_failed)) + "\n";
                crate::atomic::write(file, text.as_bytes()).map_err(|e| (file, e))
            }
            None => Ok(()),
        }
    };
    // A report that cannot be written stops us before the client is served.
    if let Some(file) = report
        && (file.is_dir()
            || file
                .parent()
                .is_some_and(|d| !d.as_os_str().is_empty() && !d.is_dir()))
    {
        return io.fail(format!(
            "OSError: cannot write the replay report {}: {}",
            crate::printable::quoted(&file.display().to_string()),
            if file.is_dir() {
                "it is a folder"
            } else {
                "its folder does not exist"
            }
        ));
    }
    // Neither replaces a file of another kind (the recording itself, named by mistake).
    let kinds = [
        report.map(|f| {
            let ours = |h: &[u8]| crate::mcp::wire::is_of_kind(h, crate::mcp::replay::REPORT_KIND);
            (f, crate::atomic::refuse_foreign(f, ours, "a replay report"))
        }),
        junit.map(|f| {
            let ours = crate::junit::is_junit;
            (f, crate::atomic::refuse_foreign(f, ours, "a JUnit report"))
        }),
    ];
    for (file, refused) in kinds.into_iter().flatten() {
        if let Err(e) = refused {
            return io.fail(Error::io(file, e));
        }
    }
    if let Err((file, e)) = write_report(&recording.outcome_before_any_call(), false) {
        return io.fail(Error::io(file, e));
    }
    // Over HTTP the recording is served to the clients of a listener (until a signal ends
    // it; the report is on disk after every call).
    let stopped_by = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
    let signal = std::sync::Arc::clone(&stopped_by);
    let stopped_by = std::sync::Arc::clone(&stopped_by);
    let runtime;
    let mut router;
    let (client_in, client_out): (Box<dyn std::io::Read>, &mut dyn std::io::Write) = match listen {
        Some(l) => {
            runtime = match crate::mcp::http::runtime() {
                Ok(rt) => rt,
                Err(e) => return io.fail(format!("OSError: cannot start the HTTP server: {e}")),
            };
            let bound = match crate::mcp::http::listen::bind(l) {
                Ok(b) => b,
                Err(e) => return io.fail(format!("OSError: {e}")),
            };
            let (inlet, input) = crate::mcp::http::pipe::lines_in();
            // A signal ends the serving as the clients' end would: the report says finished.
            let stopper = inlet.clone();
            spawn_signals_with(Box::new(move |n| {
                stopped_by.store(n, std::sync::atomic::Ordering::SeqCst);
                stopper.end_lines();
            }));
            let listening = match crate::mcp::http::listen::listen(
                bound,
                runtime.handle(),
                inlet,
                None,
                Box::new(std::io::stderr()),
            ) {
                Ok(l) => l,
                Err(e) => return io.fail(format!("OSError: {e}")),
            };
            let _ = writeln!(
                io.err,
                "listening on http://{}{}",
                listening.local,
                crate::mcp::http::listen::PATH
            );
            router = listening.router;
            recording.over_http();
            (Box::new(input), &mut router)
        }
        None => (Box::new(std::io::stdin()), io.out),
    };
    match recording.serve(client_in, client_out, io.err, &mut |o| {
        let _ = write_report(o, false);
    }) {
        Ok(outcome) => {
            let _ = write_report(&outcome, true);
            let _ = writeln!(
                io.err,
                "toolstorm-tui mcp --replay: {} of {} recorded call(s) matched{}",
                outcome.matched,
                recording.len(),
                if outcome.passed() {
                    String::new()
                } else {
                    format!(
                        "; {} mismatch(es), {} unused, {} not reproducible",
                        outcome.mismatched,
                        outcome.unused.len(),
                        outcome.unreproduced.len()
                    )
                }
            );
            match signal.load(std::sync::atomic::Ordering::SeqCst) {
                0 if outcome.passed() => exit::OK,
                0 => exit::CONTRACT_FAILED,
                n => 128 + n,
            }
        }
        Err(e) => io.fail(format!("OSError: the client went away: {e}")),
    }
}

/// SIGTERM, SIGINT and SIGHUP end the session cleanly: the server is stopped, open calls are
/// recorded as cancelled, and the recording is written before exiting.
fn spawn_signals(stop: crate::mcp::proxy::Interrupter) {
    spawn_signals_with(Box::new(move |n| stop.interrupt(n)));
}

/// Runs `stop` with the first of SIGTERM, SIGINT and SIGHUP that comes (on a thread of its
/// own), in place of the default that ends the process with nothing written.
fn spawn_signals_with(stop: Box<dyn FnOnce(i32) + Send>) {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) {
            std::thread::spawn(move || {
                if let Some(n) = signals.forever().next() {
                    stop(n);
                }
            });
        }
    }
    #[cfg(not(unix))]
    let _ = stop;
}
