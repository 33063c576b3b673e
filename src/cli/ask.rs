//! `ask QUESTION`: a real model's tool loop ([`crate::ask`]) over the bundled Orbit world,
//! through an OpenAI-compatible server ([`crate::model`]). Prints each round as it ends
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
use crate::model::{self, Api, Client, Key, Model, Replayer, Respond, Settings};
use crate::redact::Redactor;

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
    /// Who approves side effects (default: ask on a terminal, deny without one)
    #[arg(long, value_enum)]
    approve: Option<ApproveChoice>,
    /// Print the whole result as JSON
    #[arg(long)]
    json: bool,
    /// Where the tools come from
    #[arg(long, value_enum, default_value = "orbit")]
    world: WorldChoice,
    /// Keep the Orbit world's files (database, docs, tracker) in DIR
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Record the run in FILE as it goes: each round's request and answer, its batch, the
    /// answer (never the key)
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Serve a record's model answers offline, each only to the request recorded (the tools
    /// run again); exit 1 at the first difference
    #[arg(long, value_name = "FILE", conflicts_with_all = ["base_url", "model", "api", "api_key_env", "timeout", "instructions", "max_rounds", "no_parallel", "approve"])]
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
        instructions: a
            .instructions
            .clone()
            .unwrap_or_else(|| ask::DEFAULT_INSTRUCTIONS.to_owned()),
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
    let model = Replayer::new(header.api, r.exchanges, Redactor::default());
    Ok(Setup {
        model: Source::Replay(Box::new(model)),
        config,
        header,
        secrets: Vec::new(),
        answers: Some(r.approvals),
    })
}

/// Runs `ask`.
pub fn run(a: &AskArgs, io: &mut Io<'_>) -> i32 {
    let WorldChoice::Orbit = a.world;
    let setup = match (&a.replay, &a.question) {
        (Some(path), q) => replayed(path, q.as_deref()),
        (None, Some(q)) => live(a, q),
        (None, None) => Err("no question: give QUESTION or --replay FILE".into()),
    };
    let Setup {
        mut model,
        config,
        header,
        secrets,
        answers,
    } = match setup {
        Ok(s) => s,
        Err(why) => return io.fail(why),
    };
    let mut recorder = match &a.record {
        Some(path) => match Recorder::create(path, header, &secrets) {
            Ok(r) => Some(r),
            Err(e) => return io.fail(e),
        },
        None => None,
    };
    let (world, _scratch) = match ask::orbit_world(a.work_dir.clone()) {
        Ok(w) => w,
        Err(e) => return io.fail(e),
    };
    let tools: Arc<dyn LiveTools> = world.clone();
    let mut exec = match LiveExecutor::new(Vec::new(), 0, Limits::default()) {
        Ok(e) => e,
        Err(e) => return io.fail(e),
    };
    let terminal = std::io::stdin().is_terminal();
    let mut deny = DenyAll;
    let mut yes = AllowList {
        tools: tools.registry().names(),
    };
    let mut asking = Interactive::new(TerminalPrompt {
        context: Some(
            "The model asks for a tool call with a side effect (it changes the Orbit tracker); \
             it runs only if you answer y."
                .into(),
        ),
        ended: false,
    });
    let mut headless = Interactive::new(NoTerminal);
    let mut recorded = Interactive::new(Scripted::new(
        answers
            .iter()
            .flatten()
            .map(|y| if *y { "y" } else { "n" }.to_owned()),
    ));
    let approver: &mut dyn Approver = match a.approve {
        _ if answers.is_some() => &mut recorded,
        Some(ApproveChoice::Deny) => &mut deny,
        Some(ApproveChoice::Yes) => &mut yes,
        Some(ApproveChoice::Ask) | None if terminal => &mut asking,
        Some(ApproveChoice::Ask) | None => &mut headless,
    };
    let json = a.json;
    let mut record_error = None;
    let outcome = ask::run(
        &config,
        &mut model,
        &mut exec,
        &tools,
        approver,
        &mut |round| {
            if let Some(line) = ask::round_line(round).filter(|_| !json) {
                io.println(&line);
                let _ = io.out.flush();
            }
            if let Some(r) = recorder.as_mut()
                && record_error.is_none()
                && let Err(e) = r.round(round)
            {
                record_error = Some(e);
            }
        },
    );
    // Late work (a body past its deadline) is waited for briefly so the tracker is whole.
    exec.settle(Duration::from_secs(2));
    let (run, failure) = match outcome {
        Ok(run) => (run, None),
        Err(e) => {
            let text = e.to_string();
            (*e.so_far, Some(text))
        }
    };
    if let Some(r) = recorder.as_mut()
        && record_error.is_none()
        && let Err(e) = r.finish(&run, failure.as_deref())
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
    if json {
        io.emit(&(pretty(&run.to_value(a.price_in, a.price_out)) + "\n"));
    } else {
        print_text(&run, a, world.with(|o| o.tracker().actions().len()), io);
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
    if run.stopped() {
        exit::CONTRACT_FAILED
    } else {
        exit::OK
    }
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
