//! `ask QUESTION`: a real model's tool loop ([`crate::ask`]) over the bundled Orbit world or
//! an MCP server's tools (directly, or through our proxy with a scenario's faults), through an
//! OpenAI-compatible server ([`crate::model`]). Prints each round as it ends
//! (`round N: K calls in X.XXs`), then `rounds=N tokens in/out cost≈$…`, the answer and the
//! executor's log; or with `--json` the whole result. Exit 0 when the model answered, 1 when
//! it stopped at the round limit, 2 for a configuration or connection error (the message
//! names the URL and the HTTP status).
//!
//! The key is read from `OPENAI_API_KEY`, or from the variable `--api-key-env` names; it is
//! never a flag's value and never printed or written.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::Io;
use super::run::TerminalPrompt;
use crate::ask::record::{self, Header, Recorder};
use crate::ask::{self, AskRun, Config};
use crate::executor::Limits;
use crate::executor::approval::{AllowList, Approver, DenyAll, Interactive, NoTerminal, Scripted};
use crate::executor::live::{LiveExecutor, LiveTools};
use crate::exit;
use crate::json::pretty;
use crate::lab::orbit::store::RealOrbit;
use crate::mcp::tools::McpTools;
use crate::model::{self, Api, Client, Key, Model, Replayer, Respond, Settings};

/// The environment variable a model's name may come from.
pub const MODEL_ENV: &str = "TOOLSTORM_MODEL";
/// Where the key comes from unless `--api-key-env` names another variable.
pub const KEY_ENV: &str = "OPENAI_API_KEY";

/// Which wire format.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ApiChoice {
    /// POST {base}/responses (OpenAI's Responses API)
    Responses,
    /// POST {base}/chat/completions (Chat Completions)
    Chat,
}

/// Who approves side effects.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ApproveChoice {
    /// Deny every side effect
    Deny,
    /// Ask on the terminal (denied when there is none)
    Ask,
    /// Approve every side effect
    Yes,
}

/// Who answers the approvals of a run, resolved: `ask` without a terminal is nobody to ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answering {
    Deny,
    Yes,
    Ask,
    NoTerminal,
}

impl Answering {
    /// `--approve`'s choice on this terminal (or without one).
    fn resolve(choice: Option<ApproveChoice>, terminal: bool) -> Answering {
        match choice {
            Some(ApproveChoice::Deny) => Answering::Deny,
            Some(ApproveChoice::Yes) => Answering::Yes,
            Some(ApproveChoice::Ask) | None if terminal => Answering::Ask,
            Some(ApproveChoice::Ask) | None => Answering::NoTerminal,
        }
    }

    /// The name a record keeps.
    fn as_str(self) -> &'static str {
        match self {
            Answering::Deny => "deny",
            Answering::Yes => "yes",
            Answering::Ask => "ask",
            Answering::NoTerminal => "no terminal",
        }
    }

    /// A record's name back (`None` for one we do not know).
    fn parse(name: &str) -> Option<Answering> {
        [
            Answering::Deny,
            Answering::Yes,
            Answering::Ask,
            Answering::NoTerminal,
        ]
        .into_iter()
        .find(|a| a.as_str() == name)
    }
}

/// Where the tools come from.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum WorldChoice {
    /// The bundled Orbit world (get_issue, get_doc_section, add_label, post_comment)
    Orbit,
}

/// Flags of `ask`.
#[derive(Args, Debug)]
pub struct AskArgs {
    /// The question for the model (with --replay: the recorded one unless given)
    #[arg(required_unless_present = "replay")]
    question: Option<String>,
    /// The OpenAI-compatible server's base URL (llama.cpp: http://localhost:8080/v1)
    #[arg(long, value_name = "URL", default_value = model::OPENAI_BASE_URL)]
    base_url: String,
    /// The model's name (default: the TOOLSTORM_MODEL environment variable)
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// The wire format
    #[arg(long, value_enum, default_value = "responses")]
    api: ApiChoice,
    /// The environment variable holding the API key (default OPENAI_API_KEY; none needed
    /// by most local servers)
    #[arg(long, value_name = "NAME")]
    api_key_env: Option<String>,
    /// The system instructions (default: an assistant for Orbit maintainers that treats issue
    /// bodies as data and follows a failed tool's hint)
    #[arg(long, value_name = "TEXT")]
    instructions: Option<String>,
    /// Most model answers before stopping without a final answer
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    max_rounds: u32,
    /// Ask the model for one call per answer (parallel_tool_calls: false)
    #[arg(long)]
    no_parallel: bool,
    /// Seconds each request to the model may take (retries apart)
    #[arg(long, default_value_t = 60.0, value_parser = timeout)]
    timeout: f64,
    /// USD per million input tokens, for the cost line
    #[arg(long, default_value_t = 0.0, value_parser = price)]
    price_in: f64,
    /// USD per million output tokens, for the cost line
    #[arg(long, default_value_t = 0.0, value_parser = price)]
    price_out: f64,
    /// Who approves side effects (default: ask on a terminal, deny without one); with
    /// --replay, yes lets the side effects the record approved run again on an MCP server
    #[arg(long, value_enum)]
    approve: Option<ApproveChoice>,
    /// Print the whole result as JSON
    #[arg(long)]
    json: bool,
    /// Where the tools come from
    #[arg(long, value_enum, default_value = "orbit")]
    world: WorldChoice,
    /// Instead of Orbit, the tools of an MCP server: its URL here (Streamable HTTP), or its
    /// command (or URL) after `--` (its `tools/list`; side effects are the tools not annotated
    /// read-only)
    #[arg(long, value_name = "URL", num_args = 0..=1)]
    mcp: Option<Option<String>>,
    /// An MCP scenario's faults: the tools come through our proxy (`mcp SC.json`) in front of
    /// the scenario's `server`, or of the command after `--`
    #[arg(long, value_name = "SC.json")]
    scenario: Option<PathBuf>,
    /// The proxy's seed with --scenario (default: the scenario's)
    #[arg(long, requires = "scenario", allow_hyphen_values = true)]
    seed: Option<i64>,
    /// The MCP server an `mcpServers` file names (its one entry: a command with args and env,
    /// or a URL), as agents read it — what a campaign hands its agent as {mcp_config}
    #[arg(long, value_name = "FILE", conflicts_with_all = ["mcp", "scenario"])]
    mcp_config: Option<PathBuf>,
    /// The MCP server's command and arguments (or its URL), after `--`
    #[arg(last = true, value_name = "SERVER")]
    server: Vec<std::ffi::OsString>,
    /// Keep the Orbit world's files (database, docs, tracker) in DIR
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Record the run in FILE as it goes: each round's request and answer, its batch, the
    /// answer (never the key)
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Serve a record's model answers offline, each only to the request recorded (the tools
    /// run again); exit 1 at the first difference
    #[arg(long, value_name = "FILE", conflicts_with_all = ["base_url", "model", "api", "api_key_env", "timeout", "instructions", "max_rounds", "no_parallel"])]
    replay: Option<PathBuf>,
}

fn timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t > 0.0 && t <= 3600.0 => Ok(t),
        _ => Err(format!("expected seconds in (0, 3600], got {s:?}")),
    }
}

fn price(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if p.is_finite() && p >= 0.0 => Ok(p),
        _ => Err(format!(
            "expected USD per million tokens (0 or more), got {s:?}"
        )),
    }
}

/// The key: from `--api-key-env`'s variable (which must be set), else `OPENAI_API_KEY` when
/// set; `None` when neither gives one.
fn key(a: &AskArgs) -> Result<Option<Key>, String> {
    match &a.api_key_env {
        Some(name) => match std::env::var(name) {
            Ok(k) if !k.is_empty() => Ok(Some(Key::new(k))),
            _ => Err(format!(
                "the environment variable {name} (named by --api-key-env) is not set"
            )),
        },
        None => Ok(std::env::var(KEY_ENV)
            .ok()
            .filter(|k| !k.is_empty())
            .map(Key::new)),
    }
}

/// A model behind a server, or a record's answers.
enum Source {
    Live(Box<Model>),
    Replay(Box<Replayer>),
}

impl Respond for Source {
    fn respond(&mut self, request: &model::Request) -> Result<model::Reply, model::ModelError> {
        match self {
            Source::Live(m) => m.respond(request),
            Source::Replay(r) => r.respond(request),
        }
    }

    fn last_exchange(&self) -> Option<&model::Exchange> {
        match self {
            Source::Live(m) => m.last_exchange(),
            Source::Replay(r) => r.last_exchange(),
        }
    }
}

/// The model to ask and the settings of the loop: a server's, or a record's.
struct Setup {
    model: Source,
    config: Config,
    header: Header,
    /// The key, to keep out of the record.
    secrets: Vec<String>,
    /// The approvals a record gave, for its replay.
    answers: Option<Vec<bool>>,
}

/// A model behind a server, from the flags.
fn live(a: &AskArgs, question: &str) -> Result<Setup, String> {
    let model_name = a
        .model
        .clone()
        .or_else(|| std::env::var(MODEL_ENV).ok().filter(|m| !m.is_empty()))
        .ok_or_else(|| format!("no model named: give --model NAME or set {MODEL_ENV}"))?;
    let key = key(a)?;
    let secrets = key.iter().map(|k| k.secret().to_owned()).collect();
    let settings = Settings {
        timeout: Duration::from_secs_f64(a.timeout),
        ..Settings::default()
    };
    let client = Client::new(key, settings).map_err(|e| e.to_string())?;
    let api = match a.api {
        ApiChoice::Responses => Api::Responses,
        ApiChoice::Chat => Api::Chat,
    };
    let model = Model::new(api, &a.base_url, client)
        .map_err(|e| e.to_string())?
        .on_retry(|r| {
            let _ = writeln!(
                std::io::stderr(),
                "{}: model attempt {} failed ({}); retrying in {:.1}s{}",
                exit::PROGRAM,
                r.attempt,
                crate::printable::line(&r.why),
                r.wait.as_secs_f64(),
                if r.server_asked {
                    " (its Retry-After)"
                } else {
                    ""
                }
            );
        });
    let config = Config {
        model: model_name,
        instructions: a.instructions.clone().unwrap_or_else(|| {
            if a.mcp.is_some() || a.scenario.is_some() || a.mcp_config.is_some() {
                ask::DEFAULT_MCP_INSTRUCTIONS
            } else {
                ask::DEFAULT_INSTRUCTIONS
            }
            .to_owned()
        }),
        question: question.to_owned(),
        max_rounds: a.max_rounds as usize,
        parallel: !a.no_parallel,
    };
    let header = Header {
        api,
        base_url: a.base_url.clone(),
        model: config.model.clone(),
        question: config.question.clone(),
        instructions: config.instructions.clone(),
        max_rounds: config.max_rounds,
        parallel: config.parallel,
        world: "orbit".into(),
        tools_from: None,
        prices: None,
        approver: None,
    };
    Ok(Setup {
        model: Source::Live(Box::new(model)),
        config,
        header,
        secrets,
        answers: None,
    })
}

/// A record's model, served offline; the question is the record's unless given.
fn replayed(path: &std::path::Path, question: Option<&str>) -> Result<Setup, String> {
    let r = record::read(path).map_err(|e| e.to_string())?;
    let mut header = r.header;
    if let Some(q) = question {
        header.question = q.to_owned();
    }
    let config = Config {
        model: header.model.clone(),
        instructions: header.instructions.clone(),
        question: header.question.clone(),
        max_rounds: header.max_rounds,
        parallel: header.parallel,
    };
    let model = Replayer::new(header.api, r.rounds);
    Ok(Setup {
        model: Source::Replay(Box::new(model)),
        config,
        header,
        secrets: Vec::new(),
        answers: Some(r.approvals),
    })
}

/// Where the tools come from.
enum World {
    Orbit {
        world: Arc<RealOrbit>,
        /// The private folder of its files, removed when dropped.
        _scratch: Option<tempfile::TempDir>,
    },
    Mcp(Arc<McpTools>),
}

impl World {
    /// The MCP server `mcp` runs (or is), else the Orbit world with its files in `work_dir`.
    fn open(
        mcp: Option<&[std::ffi::OsString]>,
        work_dir: Option<PathBuf>,
    ) -> Result<World, String> {
        match mcp {
            Some(cmd) => McpTools::connect(cmd, None, None, &[])
                .map(|t| World::Mcp(Arc::new(t)))
                .map_err(|e| format!("cannot use the MCP server: {e}")),
            None => ask::orbit_world(work_dir)
                .map(|(world, _scratch)| World::Orbit { world, _scratch })
                .map_err(|e| e.to_string()),
        }
    }

    /// How many actions the Orbit tracker holds (none for an MCP server's tools).
    fn tracker_actions(&self) -> usize {
        match self {
            World::Orbit { world, .. } => world.with(|o| o.tracker().actions().len()),
            World::Mcp(_) => 0,
        }
    }

    fn tools(&self) -> Arc<dyn LiveTools> {
        match self {
            World::Orbit { world, .. } => Arc::clone(world) as Arc<dyn LiveTools>,
            World::Mcp(m) => Arc::clone(m) as Arc<dyn LiveTools>,
        }
    }
}

/// The MCP server's command: the one after `--`, behind our proxy with `--scenario`
/// (recording to `proxy_record`).
fn mcp_command(
    a: &AskArgs,
    proxy_record: Option<&std::path::Path>,
) -> Result<Option<Vec<std::ffi::OsString>>, String> {
    if let Some(file) = &a.mcp_config {
        if !a.server.is_empty() {
            return Err("a server command after `--` goes with --mcp, not --mcp-config".into());
        }
        return config_server(file).map(Some);
    }
    let server = server_named(a)?;
    let Some(sc) = &a.scenario else {
        return match (a.mcp.is_some(), server.is_empty()) {
            (true, false) => Ok(Some(server)),
            (true, true) => Err("--mcp needs the server's command after `--`".into()),
            (false, false) => Err(
                "a server command after `--` needs --mcp (or --scenario SC.json for its faults)"
                    .into(),
            ),
            (false, true) => Ok(None),
        };
    };
    let exe = std::env::current_exe().map_err(|e| format!("cannot find our own program: {e}"))?;
    let mut cmd: Vec<std::ffi::OsString> = vec![exe.into(), "mcp".into(), sc.clone().into()];
    if let Some(seed) = a.seed {
        cmd.extend(["--seed".into(), seed.to_string().into()]);
    }
    if let Some(rec) = proxy_record {
        cmd.extend(["--record".into(), rec.into()]);
    }
    if !server.is_empty() {
        cmd.push("--".into());
        cmd.extend(server);
    }
    Ok(Some(cmd))
}

/// The server named on the command line: `--mcp URL`, or what follows `--` (not both).
fn server_named(a: &AskArgs) -> Result<Vec<std::ffi::OsString>, String> {
    match &a.mcp {
        Some(Some(url)) => {
            if !crate::mcp::address::is_url(&[url.into()]) {
                return Err(format!(
                    "--mcp takes a server's URL (http:// or https://), not {}: a server's \
                     command goes after `--` (--mcp -- CMD ARGS...)",
                    crate::mcp::address::shown_url(url)
                ));
            }
            if !a.server.is_empty() {
                return Err("give the server once: --mcp URL, or --mcp -- SERVER...".into());
            }
            Ok(vec![url.into()])
        }
        _ => Ok(a.server.clone()),
    }
}

/// The one server of an `mcpServers` file, as a command: `{"command", "args", "env"}` (the
/// environment set through `env`), or `{"url"}` (Streamable HTTP).
fn config_server(file: &std::path::Path) -> Result<Vec<std::ffi::OsString>, String> {
    use crate::json::Value;
    let shown = file.display();
    let bytes = crate::fsread::read_document(file)
        .map_err(|e| format!("cannot read the MCP config {shown}: {e}"))?;
    let v = crate::json::parse(&String::from_utf8_lossy(&bytes))
        .map_err(|e| format!("the MCP config {shown} is not JSON: {e}"))?;
    let servers = v
        .as_object()
        .and_then(|o| o.get("mcpServers"))
        .and_then(Value::as_object)
        .ok_or_else(|| format!("the MCP config {shown} has no \"mcpServers\" object"))?;
    let entry = match servers.len() {
        1 => servers.iter().next().map(|(_, e)| e),
        n => {
            let names: Vec<String> = servers.keys().map(|k| k.to_lossy()).collect();
            return Err(format!(
                "the MCP config {shown} names {n} servers ({}); ask uses exactly one",
                names.join(", ")
            ));
        }
    }
    .and_then(Value::as_object)
    .ok_or_else(|| format!("the MCP config {shown}: its server is not an object"))?;
    if let Some(url) = entry.get("url").and_then(Value::as_str) {
        return Ok(vec![url.into()]);
    }
    let command = entry
        .get("command")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            format!("the MCP config {shown}: its server has no \"command\" or \"url\"")
        })?;
    let mut cmd: Vec<std::ffi::OsString> = Vec::new();
    if let Some(env) = entry
        .get("env")
        .and_then(Value::as_object)
        .filter(|e| !e.is_empty())
    {
        cmd.push("env".into());
        for (k, val) in env.iter() {
            let val = val.as_str().ok_or_else(|| {
                format!(
                    "the MCP config {shown}: env {} is not a string",
                    k.to_lossy()
                )
            })?;
            cmd.push(format!("{}={val}", k.to_lossy()).into());
        }
    }
    cmd.push(command.into());
    for (i, arg) in entry
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let arg = arg
            .as_str()
            .ok_or_else(|| format!("the MCP config {shown}: args[{i}] is not a string"))?;
        cmd.push(arg.into());
    }
    Ok(cmd)
}

/// Runs `ask`.
pub fn run(a: &AskArgs, io: &mut Io<'_>) -> i32 {
    let WorldChoice::Orbit = a.world;
    // With a scenario the proxy records, beside the record (`RUN.mcp.json`) or in a private
    // folder, and the scenario's checks judge that recording after the run.
    let proxy_scratch = match (&a.scenario, &a.record) {
        (Some(_), None) => match tempfile::tempdir() {
            Ok(d) => Some(d),
            Err(e) => return io.fail(format!("no temporary folder for the proxy: {e}")),
        },
        _ => None,
    };
    let proxy_record = match (&a.scenario, &a.record, &proxy_scratch) {
        (Some(_), Some(rec), _) => Some(rec.with_extension("mcp.json")),
        (Some(_), None, Some(d)) => Some(d.path().join("run.mcp.json")),
        _ => None,
    };
    let mcp = match mcp_command(a, proxy_record.as_deref()) {
        Ok(m) => m,
        Err(why) => return io.fail(why),
    };
    let setup = match (&a.replay, &a.question) {
        (Some(path), q) => replayed(path, q.as_deref()),
        (None, Some(q)) => live(a, q),
        (None, None) => Err("no question: give QUESTION or --replay FILE".into()),
    };
    let Setup {
        mut model,
        config,
        mut header,
        secrets,
        answers,
    } = match setup {
        Ok(s) => s,
        Err(why) => return io.fail(why),
    };
    let world_name = if mcp.is_some() { "mcp" } else { "orbit" };
    if a.replay.is_some() && header.world != world_name {
        return io.fail(format!(
            "the record's tools came from {}: replay it with {}",
            header.world,
            if header.world == "mcp" {
                "--mcp -- SERVER... (or --scenario SC.json)"
            } else {
                "the Orbit world (no --mcp or --scenario)"
            }
        ));
    }
    // A replay answers approvals as the record's run did: the same approver (so a denial is
    // fed back in the same words), or the person's recorded yes and no.
    let answering = match (
        &answers,
        header.approver.as_deref().and_then(Answering::parse),
    ) {
        (Some(_), Some(kind)) => kind,
        (Some(_), None) => Answering::Ask,
        (None, _) => Answering::resolve(a.approve, std::io::stdin().is_terminal()),
    };
    let answers = answers.filter(|_| answering == Answering::Ask);
    if let Some(path) = &a.replay
        && let Err(why) = replay_consent(a, path, mcp.as_deref(), answering, answers.as_deref())
    {
        return io.fail(why);
    }
    header.approver = Some(answering.as_str().to_owned());
    header.world = world_name.to_owned();
    header.tools_from = mcp.as_deref().map(command_line);
    // The prices of this run (a replay's too), for the cost the explorer shows.
    header.prices = (a.price_in > 0.0 || a.price_out > 0.0).then_some((a.price_in, a.price_out));
    let mut exec = match LiveExecutor::new(Vec::new(), 0, Limits::default()) {
        Ok(e) => e,
        Err(e) => return io.fail(e),
    };
    let mut recorder = match &a.record {
        Some(path) => match Recorder::create(path, header, &secrets, exec.report().to_value()) {
            Ok(r) => Some(r),
            Err(e) => return io.fail(e),
        },
        None => None,
    };
    let world = match World::open(mcp.as_deref(), a.work_dir.clone()) {
        Ok(w) => w,
        Err(why) => return io.fail(why),
    };
    let tools = world.tools();
    let mut approvers = Approvers::new(tools.registry().names(), answers);
    let approver = approvers.pick(answering);
    let json = a.json;
    let mut record_error = None;
    let outcome = ask::run(
        &config,
        &mut model,
        &mut exec,
        &tools,
        approver,
        &mut |round, exec| {
            if let Some(line) = ask::round_line(round).filter(|_| !json) {
                io.println(&line);
                let _ = io.out.flush();
            }
            if let Some(r) = recorder.as_mut()
                && record_error.is_none()
                && let Err(e) = r.round(round, exec.report().to_value())
            {
                record_error = Some(e);
            }
        },
    );
    // Late work (a body past its deadline) is waited for briefly so the tracker is whole.
    exec.settle(Duration::from_secs(2));
    if let World::Mcp(m) = &world {
        m.client().stop();
    }
    let (run, failure) = match outcome {
        Ok(run) => (run, None),
        Err(e) => {
            let text = e.to_string();
            (*e.so_far, Some(text))
        }
    };
    if let Some(r) = recorder.as_mut()
        && record_error.is_none()
        && let Err(e) = r.finish(&run, failure.as_deref(), exec.report().to_value())
    {
        record_error = Some(e);
    }
    let replay = match (&a.replay, &model) {
        (Some(path), Source::Replay(r)) => Some((path, r.finish())),
        _ => None,
    };
    if let Some(why) = failure {
        if !json && !run.rounds.is_empty() {
            print_log(&run, io);
        }
        return match replay {
            Some((path, Err(d))) => diverged(path, &d, io),
            _ => io.fail(why),
        };
    }
    if let Some(e) = record_error {
        return io.fail(e);
    }
    let checks = match &proxy_record {
        Some(path) => match scenario_checks(path) {
            Ok(c) => Some(c),
            Err(why) => return io.fail(why),
        },
        None => None,
    };
    let checks_passed = checks.as_ref().is_none_or(|c| crate::contract::verdict(c));
    if json {
        print_json(&run, checks.as_deref(), a, io);
    } else {
        print_text(&run, a, world.tracker_actions(), io);
        if let Some(c) = &checks {
            let kept = proxy_record.as_deref().filter(|_| a.record.is_some());
            print_checks(c, kept, io);
        }
    }
    match replay {
        Some((path, Err(d))) => return diverged(path, &d, io),
        Some((path, Ok(n))) if !json => io.println(&format!(
            "replay: {n} round{} matched {}",
            if n == 1 { "" } else { "s" },
            path.display()
        )),
        _ => {}
    }
    if run.stopped() || !checks_passed {
        exit::CONTRACT_FAILED
    } else {
        exit::OK
    }
}

/// The whole result as JSON (`--json`): the run's, and the scenario's checks when there are.
fn print_json(
    run: &AskRun,
    checks: Option<&[crate::contract::Check]>,
    a: &AskArgs,
    io: &mut Io<'_>,
) {
    let mut v = run.to_value(a.price_in, a.price_out);
    if let (Some(c), Some(o)) = (checks, v.as_object_mut()) {
        let list = c
            .iter()
            .map(|c| {
                crate::obj! {
                    "name" => c.name.as_str(),
                    "passed" => c.passed,
                    "detail" => c.detail.as_str(),
                }
            })
            .collect();
        o.push("checks", crate::json::Value::Array(list));
        o.push("checks_passed", crate::contract::verdict(c));
    }
    io.emit(&(pretty(&v) + "\n"));
}

/// The scenario's verdict and checks, as `check` prints them, and where the proxy's
/// recording was kept.
fn print_checks(
    checks: &[crate::contract::Check],
    kept: Option<&std::path::Path>,
    io: &mut Io<'_>,
) {
    io.println("");
    io.println_verdict(&format!(
        "scenario checks: {}",
        if crate::contract::verdict(checks) {
            "PASS"
        } else {
            "FAIL"
        }
    ));
    for check in checks {
        let mark = if check.passed { '\u{2713}' } else { '\u{2717}' };
        io.println_verdict(&format!("{mark} {}: {}", check.name, check.detail));
    }
    if let Some(p) = kept {
        io.println(&format!("proxy recording: {}", p.display()));
    }
}

/// A command line as a record keeps it: secrets redacted.
fn command_line(cmd: &[std::ffi::OsString]) -> String {
    let words: Vec<String> = cmd
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    crate::redact::Redactor::default()
        .redact_argv(&words)
        .join(" ")
}

/// Whether a replay would approve a side effect: the record's approver approved every one,
/// or a person's recorded answers include a yes.
fn replay_approves(answering: Answering, answers: Option<&[bool]>) -> bool {
    match answering {
        Answering::Yes => true,
        Answering::Ask => answers.is_some_and(|a| a.contains(&true)),
        Answering::Deny | Answering::NoTerminal => false,
    }
}

/// A record is a file anyone may have written: its approvals run side effects again on a
/// live MCP server only with the consent of the person replaying it — `--approve yes`, or a
/// `y` on the terminal, asked before anything starts. (The Orbit world's side effects land in
/// a fresh work folder, or the one the person named.) With `--replay`, `--approve` says only
/// that: the approvals themselves follow the record.
fn replay_consent(
    a: &AskArgs,
    record: &std::path::Path,
    mcp: Option<&[std::ffi::OsString]>,
    answering: Answering,
    answers: Option<&[bool]>,
) -> Result<(), String> {
    match a.approve {
        None | Some(ApproveChoice::Yes) => {}
        Some(other) => {
            return Err(format!(
                "--approve {}: with --replay, approvals follow the record; --approve yes \
                 only lets the side effects it approved run again",
                format!("{other:?}").to_lowercase()
            ));
        }
    }
    let Some(server) = mcp else {
        return Ok(());
    };
    if !replay_approves(answering, answers) || a.approve == Some(ApproveChoice::Yes) {
        return Ok(());
    }
    let who = match answering {
        Answering::Yes => "approves every side effect (--approve yes)".to_owned(),
        _ => format!(
            "approves {} side effect(s) (a person's recorded yes)",
            answers.map_or(0, |a| a.iter().filter(|y| **y).count())
        ),
    };
    let said = format!(
        "the record {} {who}: replaying it runs them again on the MCP server `{}`",
        record.display(),
        command_line(server)
    );
    if std::io::stdin().is_terminal() {
        use crate::executor::approval::Prompt;
        let mut prompt = TerminalPrompt {
            context: Some(said.clone()),
            ended: false,
        };
        let yes = prompt
            .ask("Replay them there? [y/N]")
            .is_some_and(|answer| answer.trim().eq_ignore_ascii_case("y"));
        if yes {
            return Ok(());
        }
    }
    Err(format!(
        "{said}; not replayed: give --approve yes to let them run (or replay against the \
         proxy's recording: --mcp -- toolstorm-tui mcp --replay RUN.mcp.json)"
    ))
}

/// The approvers `--approve` chooses from, and the record's answers for a replay.
struct Approvers {
    deny: DenyAll,
    yes: AllowList,
    asking: Interactive<TerminalPrompt>,
    headless: Interactive<NoTerminal>,
    recorded: Option<Interactive<Scripted>>,
}

impl Approvers {
    /// `yes` approves these tools; `answers` are a record's, in order.
    fn new(tools: Vec<String>, answers: Option<Vec<bool>>) -> Approvers {
        Approvers {
            deny: DenyAll,
            yes: AllowList { tools },
            asking: Interactive::new(TerminalPrompt {
                context: Some(
                    "The model asks for a tool call with a side effect (it changes the world \
                     its tools act on); it runs only if you answer y."
                        .into(),
                ),
                ended: false,
            }),
            headless: Interactive::new(NoTerminal),
            recorded: answers.map(|list| {
                Interactive::new(Scripted::new(
                    list.iter().map(|y| if *y { "y" } else { "n" }.to_owned()),
                ))
            }),
        }
    }

    /// A replay of a person's answers answers as recorded; otherwise whoever answers this run.
    fn pick(&mut self, answering: Answering) -> &mut dyn Approver {
        if let Some(r) = self.recorded.as_mut() {
            return r;
        }
        match answering {
            Answering::Deny => &mut self.deny,
            Answering::Yes => &mut self.yes,
            Answering::Ask => &mut self.asking,
            Answering::NoTerminal => &mut self.headless,
        }
    }
}

/// The scenario's checks on the proxy's recording of the run.
fn scenario_checks(path: &std::path::Path) -> Result<Vec<crate::contract::Check>, String> {
    let trace = crate::document::open_trace(path).map_err(|e| e.to_string())?;
    let summary = crate::document::judge(&trace, None).map_err(|e| e.to_string())?;
    Ok(summary.runs.into_iter().flatten().collect())
}

/// Says where a replay left its record; exit 1.
fn diverged(path: &std::path::Path, d: &model::Divergence, io: &mut Io<'_>) -> i32 {
    let _ = writeln!(
        io.err,
        "{}: the replay of {} diverged: {}",
        exit::PROGRAM,
        crate::printable::line(&path.display().to_string()),
        crate::printable::line(&d.to_string())
    );
    exit::CONTRACT_FAILED
}

fn print_text(run: &AskRun, a: &AskArgs, actions: usize, io: &mut Io<'_>) {
    io.println(&run.summary_line(a.price_in, a.price_out));
    io.println("");
    match &run.answer {
        Some(answer) if answer.trim().is_empty() => io.println("(the model answered with no text)"),
        Some(answer) => io.print(answer),
        None => io.println(ask::STOPPED),
    }
    print_log(run, io);
    if actions > 0 {
        match &a.work_dir {
            Some(dir) => io.println(&format!(
                "tracker: {actions} action{} in {}",
                if actions == 1 { "" } else { "s" },
                dir.join(crate::lab::orbit::TRACKER_FILE).display()
            )),
            None => io.println(&format!(
                "tracker: {actions} action{} kept in memory (write them to a file with \
                 --work-dir DIR)",
                if actions == 1 { "" } else { "s" }
            )),
        }
    }
}

/// The executor's log: each round's calls in completion order, then the approvals asked.
fn print_log(run: &AskRun, io: &mut Io<'_>) {
    let rows: Vec<(usize, &crate::executor::LogRow)> = run
        .rounds
        .iter()
        .filter_map(|r| r.batch.as_ref().map(|b| (r.number, b)))
        .flat_map(|(n, b)| b.log.iter().map(move |row| (n, row)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let width = |field: fn(&crate::executor::LogRow) -> &str, least: usize| {
        rows.iter()
            .map(|(_, r)| field(r).chars().count())
            .fold(least, usize::max)
    };
    let (id_w, tool_w) = (width(|r| &r.call_id, 7), width(|r| &r.name, 4));
    io.println("");
    io.println(&format!(
        "round  {:<id_w$}  {:<tool_w$}  {:<12}  {:>6}  attempts",
        "call_id", "tool", "kind", "ms"
    ));
    for (n, r) in rows {
        io.println_marked(
            &format!(
                "{n:>5}  {:<id_w$}  {:<tool_w$}  {:<12}  {:>6}  {}",
                r.call_id, r.name, r.kind, r.ms, r.attempts
            ),
            Some(r.kind == "ok"),
        );
    }
    for lane in run
        .rounds
        .iter()
        .filter_map(|r| r.batch.as_ref())
        .flat_map(|b| &b.lanes)
    {
        if let Some((question, approved)) = &lane.approval {
            io.println(&format!(
                "approval: {question} {}",
                if *approved { "approved" } else { "denied" }
            ));
        }
    }
}
