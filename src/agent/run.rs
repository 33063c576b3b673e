//! Running a campaign: the agent, many times, each run on its own seed in its own folder,
//! judged by what its recording says committed and, when given, by an oracle of the real
//! world. The file ([`crate::campaign::CampaignFile`]) is rewritten atomically after every
//! run, so a campaign that is killed keeps what it finished and resumes from there.
//!
//! Each run's folder (`<campaign>.runs/run-NNN/`) gets an `mcpServers` file (`mcp.json`)
//! whose one entry starts our proxy — this binary's `mcp` with the scenario, the run's seed,
//! and `--record recording.json --append` (so clients that start a server per call add to
//! one recording) — in front of the scenario's own `server`. The agent's command has
//! `{mcp_config}`, `{seed}`, `{run}`, `{record}` and `{run_dir}` replaced, and the same values
//! in `TOOLSTORM_MCP_CONFIG`, `TOOLSTORM_SEED`, `TOOLSTORM_RUN`, `TOOLSTORM_RECORD` and
//! `TOOLSTORM_RUN_DIR` for agents that pass their environment on. It runs in the folder the
//! campaign was started from (so `python agent.py` finds its file; `{run_dir}` is the run's
//! own), in a process group of its own: past `--timeout` the whole group is stopped. Its
//! output goes to `agent.log` in the run's folder.
//!
//! A run passes when the agent finished in time, every check of its recording passed, and
//! the oracle (`--verify`, a shell command run after the agent) exited 0. The
//! `Fault exercised` checks are left out: whether a rule fired is the scenario's coverage on
//! that seed, not the agent's recovery (the run's `faults` count says it).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::campaign::{CampaignFile, CheckResult, Outcome, RunRecord};
use crate::document::Error;
use crate::document::campaign::{base_of, relative_to, runs_dir};
use crate::json::{Value, pretty};
use crate::mcp::scenario::McpScenario;
use crate::obj;
use crate::redact::Redactor;

/// How long the proxy an agent left behind has to write its recording and exit.
const FINISH_GRACE: Duration = Duration::from_secs(10);

/// Everything a campaign needs to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The scenario file, absolute.
    pub scenario_path: PathBuf,
    /// The scenario (it must name its `server`).
    pub scenario: McpScenario,
    /// The agent's command, placeholders unexpanded.
    pub agent: Vec<String>,
    /// Each run's seed, in run order.
    pub seeds: Vec<i64>,
    /// Runs at once.
    pub jobs: usize,
    /// How long a run (and each of its setup and oracle commands) may take.
    pub timeout: Duration,
    /// Resets the world before each run (`sh -c`).
    pub before: Option<String>,
    /// The oracle after each run (`sh -c`): exit 0 is a pass.
    pub verify: Option<String>,
    /// Every rule's probability, when overridden.
    pub probability: Option<f64>,
    /// The campaign file.
    pub out: PathBuf,
    /// This program (the proxy the agent starts).
    pub bin: PathBuf,
    /// Where the agent, `--before` and `--verify` run (the folder the campaign started in).
    pub cwd: PathBuf,
    /// SHA-256 of the scenario file's bytes.
    pub scenario_sha256: String,
    /// The agent reaches its proxy over Streamable HTTP: each run starts a listening proxy
    /// and gives the agent an `mcpServers` entry with its URL.
    pub agent_http: bool,
    /// The part of the seeds this machine runs (`--shard I/N`), or all of them.
    pub shard: Option<crate::campaign::shard::Shard>,
    /// The server's command for the proxy, when the scenario names none (a recording made
    /// with the server after `--`); empty: the scenario's own.
    pub server: Vec<String>,
    /// Set from elsewhere (the explorer's stop key): the agent's process group is stopped as
    /// past its timeout, and the run says it was stopped.
    pub stop: StopFlag,
}

/// A flag another thread sets to stop a run; two flags are equal when they are one flag.
#[derive(Clone, Debug, Default)]
pub struct StopFlag(pub Arc<std::sync::atomic::AtomicBool>);

impl StopFlag {
    /// Asks the run to stop.
    pub fn stop(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether it was asked to.
    pub fn stopped(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl PartialEq for StopFlag {
    fn eq(&self, other: &StopFlag) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for StopFlag {}

impl Plan {
    /// The campaign file this plan starts (no runs yet). The scenario is named relative to
    /// the file's folder, so a campaign's folder can move as a whole; the commands are kept
    /// with their secrets redacted.
    pub fn file(&self) -> CampaignFile {
        CampaignFile {
            scenario: relative_to(&self.scenario_path, &base_of(&self.out))
                .display()
                .to_string(),
            scenario_name: self.scenario.name.clone(),
            scenario_sha256: self.scenario_sha256.clone(),
            cwd: relative_to(&self.cwd, &base_of(&self.out))
                .display()
                .to_string(),
            // Kept without secrets: `--api-key X`, `--token=...`, `PASSWORD=...` are redacted
            // (the plan that runs keeps them; a file never does).
            agent: Redactor::builtin().redact_argv(&self.agent),
            probability: self.probability,
            timeout: self.timeout.as_secs_f64(),
            before: self
                .before
                .as_deref()
                .map(|c| Redactor::builtin().redact_command_line(c)),
            verify: self
                .verify
                .as_deref()
                .map(|c| Redactor::builtin().redact_command_line(c)),
            seeds: self.seeds.clone(),
            runs: Vec::new(),
            agent_http: self.agent_http,
            shard: self.shard,
        }
    }

    /// The folder run `run` works in.
    pub fn run_dir(&self, run: u64) -> PathBuf {
        runs_dir(&self.out).join(format!("run-{run:03}"))
    }
}

/// Runs `todo` (run numbers of `plan`), `plan.jobs` at a time; after each, records it in
/// `file`, writes the file, and tells `done`. A run's own failures are its record's; only a
/// campaign file that cannot be written stops the campaign.
pub fn run_all(
    plan: &Plan,
    file: &mut CampaignFile,
    todo: &[u64],
    done: &mut dyn FnMut(&CampaignFile, &RunRecord),
) -> Result<(), Error> {
    let queue = Arc::new(Mutex::new(todo.to_vec()));
    let (tx, rx) = channel();
    let workers = plan.jobs.clamp(1, 64).min(todo.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            let queue = Arc::clone(&queue);
            let tx = tx.clone();
            s.spawn(move || {
                loop {
                    let next = {
                        let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                        if q.is_empty() {
                            None
                        } else {
                            Some(q.remove(0))
                        }
                    };
                    let Some(run) = next else { break };
                    let seed = usize::try_from(run)
                        .ok()
                        .and_then(|n| n.checked_sub(1))
                        .and_then(|n| plan.seeds.get(n))
                        .copied()
                        .unwrap_or(0);
                    if tx.send(run_one(plan, run, seed)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut failed = None;
        for record in rx {
            file.record(record.clone());
            if failed.is_none()
                && let Err(e) = crate::atomic::write(&plan.out, file.to_text().as_bytes())
            {
                // Stop handing out runs; those under way finish.
                queue.lock().unwrap_or_else(|p| p.into_inner()).clear();
                failed = Some(Error::io(&plan.out, e));
            }
            done(file, &record);
        }
        failed.map_or(Ok(()), Err)
    })
    .inspect(|()| {
        // Every run is over: what was adopted without a run's mark goes too.
        super::adopted::end_all_adopted();
    })
}

/// The placeholders an agent's command may hold, in the order a run gives their values.
pub(super) const PLACEHOLDERS: [&str; 6] =
    ["mcp_config", "seed", "run", "record", "run_dir", "mcp_url"];

/// `arg` with the run's placeholders replaced by their values, in one pass (a value is never
/// expanded again): an agent's argument, which no shell reads.
fn expand(arg: &str, values: &[(&str, String)]) -> String {
    substitute(arg, values, |_, value, _| value.to_owned())
}

/// A shell command with each placeholder replaced by a reference to the variable that holds
/// its value (`{record}` → `$TOOLSTORM_RECORD`, set for the command), written for where it
/// stands: `"$V"` outside quotes, `$V` inside double quotes, `'"$V"'` inside single quotes.
/// The shell expands a variable once and never runs what it holds, so a folder named
/// `$(...)` or with quotes in it stays the name it is, inside the user's quotes or not.
pub(super) fn expand_for_shell(command: &str, values: &[(&str, String)]) -> String {
    substitute(command, values, |name, _, quoting| {
        let var = format!("$TOOLSTORM_{}", name.to_ascii_uppercase());
        match quoting {
            Quoting::None => format!("\"{var}\""),
            Quoting::Double => var,
            Quoting::Single => format!("'\"{var}\"'"),
        }
    })
}

/// Where a placeholder stands in a shell command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quoting {
    None,
    Single,
    Double,
}

/// `text` with each `{name}` of `values` replaced by what `with` makes of it (given its name,
/// its value, and the shell quoting it stands in); other braces are kept.
fn substitute(
    text: &str,
    values: &[(&str, String)],
    with: impl Fn(&str, &str, Quoting) -> String,
) -> String {
    let mut out = String::with_capacity(text.len());
    // The shell's quoting at each point: a stack, as `$(...)` inside double quotes starts
    // unquoted again.
    let mut stack = vec![Quoting::None];
    let mut rest = text;
    'scan: while let Some(c) = rest.chars().next() {
        let quoting = stack.last().copied().unwrap_or(Quoting::None);
        if c == '{' {
            for (name, value) in values {
                if let Some(after) = rest
                    .strip_prefix('{')
                    .and_then(|t| t.strip_prefix(name))
                    .and_then(|t| t.strip_prefix('}'))
                {
                    out.push_str(&with(name, value, quoting));
                    rest = after;
                    continue 'scan;
                }
            }
        }
        let mut step = c.len_utf8();
        match (quoting, c) {
            (Quoting::Single, '\'') => {
                stack.pop();
            }
            (Quoting::Single, _) => {}
            (_, '\\') => {
                step += rest[step..].chars().next().map_or(0, char::len_utf8);
            }
            (Quoting::None, '\'') => stack.push(Quoting::Single),
            (Quoting::None, '"') => stack.push(Quoting::Double),
            (Quoting::Double, '"') => {
                stack.pop();
            }
            (_, '$') if rest[1..].starts_with('(') => {
                stack.push(Quoting::None);
                step += 1;
            }
            (Quoting::None, ')') if stack.len() > 1 => {
                stack.pop();
            }
            _ => {}
        }
        out.push_str(&rest[..step]);
        rest = &rest[step..];
    }
    out
}

/// Runs one seed: folder, configuration, setup, agent, oracle, judgement. What the run left
/// running outside its process group (a `setsid` daemon) is ended when it is over.
pub fn run_one(plan: &Plan, run: u64, seed: i64) -> RunRecord {
    let mark = super::adopted::mark_for(run, seed);
    let record = run_steps(plan, run, seed, &mark);
    super::adopted::end_adopted(&mark);
    record
}

fn run_steps(plan: &Plan, run: u64, seed: i64, mark: &str) -> RunRecord {
    let started = Instant::now();
    let dir = plan.run_dir(run);
    let record_path = dir.join("recording.json");
    let relative = record_path
        .strip_prefix(base_of(&plan.out))
        .map_or_else(|_| record_path.clone(), Path::to_path_buf)
        .display()
        .to_string();
    let mut r = RunRecord::new(run, seed, Outcome::StartFailed, relative);
    let finish = |mut r: RunRecord| {
        r.seconds = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        r
    };
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        r.note = Some(format!(
            "cannot make the run's folder {}: {e}",
            dir.display()
        ));
        return finish(r);
    }
    let mark = (super::adopted::MARK_VAR.to_owned(), mark.to_owned());
    // Over HTTP the run's proxy listens before the agent starts, and the entry has its URL.
    let mut listening = None;
    if plan.agent_http {
        match listening_proxy(plan, seed, &record_path, &dir, &mark) {
            Ok(p) => listening = Some(p),
            Err(e) => {
                r.note = Some(format!(
                    "cannot start the run's listening proxy: {e} (see proxy.log)"
                ));
                return finish(r);
            }
        }
    }
    let url = listening.as_ref().map(|l| l.url.clone());
    let config = dir.join("mcp.json");
    let entry = mcp_config(plan, seed, &record_path, url.as_deref());
    if let Err(e) = crate::atomic::write(&config, entry.as_bytes()) {
        r.note = Some(format!("cannot write {}: {e}", config.display()));
        return finish(r);
    }
    // Each placeholder beside its value (never paired by position).
    let values: Vec<(&str, String)> = vec![
        ("mcp_config", config.display().to_string()),
        ("seed", seed.to_string()),
        ("run", run.to_string()),
        ("record", record_path.display().to_string()),
        ("run_dir", dir.display().to_string()),
        ("mcp_url", url.unwrap_or_default()),
    ];
    debug_assert!(values.iter().map(|(k, _)| *k).eq(PLACEHOLDERS));
    let mut env: Vec<(String, String)> = values
        .iter()
        .map(|(k, v)| (format!("TOOLSTORM_{}", k.to_ascii_uppercase()), v.clone()))
        .collect();
    // Whatever the run starts carries its mark: what escapes its process group is found by it.
    env.push(mark);
    if let Some(before) = &plan.before {
        match shell(
            &expand_for_shell(before, &values),
            plan,
            &dir,
            &env,
            "before.log",
        ) {
            Ok(Some(0)) => {}
            Ok(status) => {
                r.outcome = Outcome::SetupFailed;
                r.note = Some(format!(
                    "--before exited {} (see before.log)",
                    status.map_or_else(|| "past the timeout".into(), |s| s.to_string())
                ));
                return finish(r);
            }
            Err(e) => {
                r.outcome = Outcome::SetupFailed;
                r.note = Some(format!("--before could not run: {e}"));
                return finish(r);
            }
        }
    }
    let argv: Vec<String> = plan.agent.iter().map(|a| expand(a, &values)).collect();
    match spawn_and_wait(&argv, plan, &dir, &env, "agent.log") {
        Ok(Some(code)) => {
            r.outcome = Outcome::Finished;
            r.exit = Some(code);
        }
        Ok(None) if plan.stop.stopped() => {
            r.outcome = Outcome::TimedOut;
            r.note = Some("stopped by the user".into());
        }
        Ok(None) => {
            r.outcome = Outcome::TimedOut;
            let why = format!(
                "stopped after {}s (--timeout)",
                crate::error::format_g(plan.timeout.as_secs_f64())
            );
            // The agent's own log says why it ended where its output ends.
            if let Ok(mut log) = std::fs::OpenOptions::new()
                .append(true)
                .open(dir.join("agent.log"))
            {
                use std::io::Write as _;
                let _ = writeln!(
                    log,
                    "\ntoolstorm-tui campaign: the agent was {why}: it had not exited; its \
                     process group was stopped"
                );
            }
            r.note = Some(why);
        }
        Err(e) => {
            r.note = Some(format!("cannot start the agent {:?}: {e}", argv[0]));
            return finish(r);
        }
    }
    // The agent is done: its listening proxy finishes the recording and leaves.
    if let Some(l) = listening.take() {
        l.stop();
    }
    if let Some(verify) = &plan.verify {
        r.oracle = match shell(
            &expand_for_shell(verify, &values),
            plan,
            &dir,
            &env,
            "verify.log",
        ) {
            Ok(Some(code)) => Some(code == 0),
            Ok(None) | Err(_) => Some(false),
        };
    }
    conclude(&record_path, &mut r);
    finish(r)
}

/// The files a run writes in its folder besides its recording (whose sidecar and journal
/// are named after it): all that `campaign merge --copy-runs` copies of a run's folder.
pub(super) const RUN_FILES: [&str; 5] = [
    "mcp.json",
    "agent.log",
    "before.log",
    "verify.log",
    "proxy.log",
];

/// A run's verdict, the one way it is worked out (when the run ends, and again when a shard
/// is merged): its counts and checks from the recording at `recording`, then whether it
/// passed — the agent finished in time, exited 0, every check passed, and the oracle (which
/// `r` says) did not fail.
pub(super) fn conclude(recording: &Path, r: &mut RunRecord) {
    judge_recording(recording, r);
    if r.outcome == Outcome::TimedOut
        && r.calls == 0
        && let Some(note) = r.note.as_mut()
    {
        // The commonest cause: the agent never reached its server (a server still building,
        // a wrong command in the scenario's "server", a client waiting on something else).
        note.push_str(
            "; the proxy recorded no call: did the agent start its MCP server? (see agent.log)",
        );
    }
    if let Some(code) = r.exit.filter(|c| *c != 0) {
        // An agent that died did not do its task, whatever the recording shows.
        r.note
            .get_or_insert_with(|| format!("the agent exited {code} (see agent.log)"));
    }
    r.passed = r.outcome == Outcome::Finished
        && r.note.is_none()
        && r.checks.iter().all(|c| c.passed)
        && r.oracle != Some(false);
}

/// The checks that judge an agent, as a run records them.
fn agent_checks(checks: &[crate::contract::Check]) -> Vec<CheckResult> {
    checks
        .iter()
        .filter(|c| c.judges_the_agent())
        .map(|c| CheckResult {
            name: c.name.clone(),
            passed: c.passed,
            detail: c.detail.clone(),
        })
        .collect()
}

/// A lab run (a scripted policy as the agent, `sweep --campaign`) as a campaign's run record:
/// its checks as a campaign judges them, its counts, its cassette at `recording`.
pub fn lab_record(run: u64, recording: String, lab: &crate::lab::LabRun) -> RunRecord {
    let report = &lab.report;
    let checks = agent_checks(&lab.checks);
    RunRecord {
        run,
        seed: lab.config.seed,
        outcome: Outcome::Finished,
        exit: None,
        seconds: 0.0,
        recording,
        calls: report.calls.len() as u64,
        faults: report.faults_triggered(),
        commits: report.effects.len() as u64,
        duplicates: report.duplicate_effects() as u64,
        passed: checks.iter().all(|c| c.passed),
        checks,
        oracle: None,
        note: None,
    }
}

/// What the recording says: counts, and the checks that judge the agent.
fn judge_recording(path: &Path, r: &mut RunRecord) {
    if !path.exists() && !crate::mcp::session::journal_path(path).exists() {
        r.note
            .get_or_insert_with(|| "no recording: the agent never started the MCP server".into());
        return;
    }
    let trace = match crate::document::open_trace(path) {
        Ok(t) => t,
        Err(e) => {
            r.note = Some(e.to_string());
            return;
        }
    };
    if let Some(c) = trace.cassettes.first() {
        let report = &c.report;
        r.calls = report.calls.len() as u64;
        r.faults = report.faults_triggered();
        r.commits = report.effects.len() as u64;
        r.duplicates = report.duplicate_effects() as u64;
    }
    match crate::document::judge(&trace, None) {
        Ok(summary) => {
            r.checks = summary
                .runs
                .first()
                .map_or_else(Vec::new, |checks| agent_checks(checks));
        }
        Err(e) => r.note = Some(e.to_string()),
    }
}

/// A run's listening proxy (`--agent-transport http`).
struct Listening {
    child: std::process::Child,
    url: String,
}

impl Listening {
    /// Ends it as a signal would (it finishes the recording), then for good past the grace.
    fn stop(mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let until = Instant::now() + FINISH_GRACE;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the run's proxy listening on a free loopback port; its URL is on the line that says
/// where it listens, its first but for a wait for another session's lock (all its notes go
/// to `proxy.log`).
fn listening_proxy(
    plan: &Plan,
    seed: i64,
    record: &Path,
    dir: &Path,
    mark: &(String, String),
) -> std::io::Result<Listening> {
    use std::io::{BufRead, BufReader, Write};
    let args = proxy_args(plan, seed, record, true);
    let mut cmd = Command::new(&plan.bin);
    cmd.args(&args)
        .current_dir(&plan.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env(&mark.0, &mark.1);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn()?;
    let mut log = crate::fsread::open_own(&dir.join("proxy.log"), false, true)?;
    let Some(err) = child.stderr.take() else {
        return Err(std::io::Error::other("no standard error"));
    };
    let mut lines = BufReader::new(err);
    // The line that says where it listens comes first, unless the proxy waited for another
    // session's lock (it says so first): lines before it are kept in the log.
    let mut said = Vec::new();
    let url = loop {
        let mut line = String::new();
        let n = lines.read_line(&mut line)?;
        let _ = log.write_all(line.as_bytes());
        if let Some(url) = line.trim_end().strip_prefix("listening on ") {
            break Some(url.to_owned());
        }
        if n == 0 || said.len() == 16 {
            break None;
        }
        said.push(line.trim_end().to_owned());
    };
    match url {
        Some(url) => {
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut lines, &mut log);
            });
            Ok(Listening { child, url })
        }
        None => {
            let _ = child.kill();
            let _ = child.wait();
            Err(std::io::Error::other(format!(
                "it said {:?}",
                said.join(" / ")
            )))
        }
    }
}

/// The proxy's arguments for a run: the scenario, the seed, the recording (continued, on
/// stdio, as the agent starts it for each session; or, with `listen`, on a free port of its
/// own), then the server.
fn proxy_args(plan: &Plan, seed: i64, record: &Path, listen: bool) -> Vec<String> {
    let mut args = vec![
        "mcp".to_owned(),
        plan.scenario_path.display().to_string(),
        "--seed".to_owned(),
        seed.to_string(),
    ];
    if let Some(p) = plan.probability {
        args.push("--probability".into());
        args.push(crate::json::float::py_repr(p));
    }
    args.push("--record".into());
    args.push(record.display().to_string());
    if listen {
        args.extend(["--listen".to_owned(), "127.0.0.1:0".to_owned()]);
    } else {
        args.push("--append".into());
    }
    // The server comes last: whatever follows `--` is its command (or its URL).
    if !plan.server.is_empty() {
        args.push("--".into());
        args.extend(plan.server.iter().cloned());
    }
    args
}

/// The run's `mcpServers` file: our proxy, with the scenario, the seed and the recording (or,
/// over HTTP, the URL of the run's listening proxy).
fn mcp_config(plan: &Plan, seed: i64, record: &Path, url: Option<&str>) -> String {
    let mut servers = crate::json::Object::new();
    if let Some(url) = url {
        servers.push(
            plan.scenario.name.as_str(),
            obj! {"type" => "http", "url" => url},
        );
        return pretty(&obj! {"mcpServers" => servers}) + "\n";
    }
    let args: Vec<Value> = proxy_args(plan, seed, record, false)
        .into_iter()
        .map(Value::from)
        .collect();
    servers.push(
        plan.scenario.name.as_str(),
        obj! {"command" => plan.bin.display().to_string(), "args" => Value::Array(args)},
    );
    pretty(&obj! {"mcpServers" => servers}) + "\n"
}

/// Runs `sh -c command` in `cwd`, its output in `logs/log`: its exit status, `None` past
/// `limit`.
fn shell(
    command: &str,
    plan: &Plan,
    logs: &Path,
    env: &[(String, String)],
    log: &str,
) -> std::io::Result<Option<i64>> {
    let argv = ["sh".to_owned(), "-c".to_owned(), command.to_owned()];
    spawn_and_wait(&argv, plan, logs, env, log)
}

/// Starts `argv` in `cwd` in a process group of its own, output to `logs/log`, and waits up
/// to `limit`: its exit status (a signal's number as 128 + n), or `None` when it ran past
/// `limit` and its group was stopped. Whatever it left running in its group (a proxy still
/// writing its recording) gets a moment to finish, then the group is stopped. With `bin`
/// (this program), a watchdog (`mcp --watch-group`) stops the group if the campaign itself
/// dies — Ctrl-C or a kill — so no agent outlives it.
fn spawn_and_wait(
    argv: &[String],
    plan: &Plan,
    logs: &Path,
    env: &[(String, String)],
    log: &str,
) -> std::io::Result<Option<i64>> {
    let (cwd, limit, bin, stop) = (&plan.cwd, plan.timeout, &plan.bin, &plan.stop);
    let Some((program, args)) = argv.split_first() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "an empty command",
        ));
    };
    let out = crate::fsread::open_own(&logs.join(log), false, true)?;
    let err = out.try_clone()?;
    super::adopted::become_subreaper();
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    for (k, v) in env {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn()?;
    let pgid = child.id();
    let mut watchdog = (!bin.as_os_str().is_empty())
        .then(|| crate::mcp::proxy::child::spawn_watchdog(bin, pgid))
        .flatten();
    let mut release = move || {
        if let Some(mut w) = watchdog.take() {
            drop(w.stdin.take());
            let _ = w.wait();
        }
    };
    let until = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if Instant::now() >= until || stop.stopped() {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let Some(status) = status else {
        crate::mcp::proxy::child::stop_group(pgid);
        let _ = child.wait();
        release();
        return Ok(None);
    };
    wait_for_group(pgid, FINISH_GRACE);
    crate::mcp::proxy::child::stop_group(pgid);
    release();
    #[cfg(unix)]
    let code = {
        use std::os::unix::process::ExitStatusExt;
        status
            .code()
            .or_else(|| status.signal().map(|s| 128 + s))
            .unwrap_or(-1)
    };
    #[cfg(not(unix))]
    let code = status.code().unwrap_or(-1);
    Ok(Some(i64::from(code)))
}

/// Waits up to `limit` for every process of group `pgid` to exit.
fn wait_for_group(pgid: u32, limit: Duration) {
    #[cfg(unix)]
    {
        use nix::sys::signal::killpg;
        use nix::unistd::Pid;
        let Ok(raw) = i32::try_from(pgid) else {
            return;
        };
        let until = Instant::now() + limit;
        while Instant::now() < until && killpg(Pid::from_raw(raw), None).is_ok() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    #[cfg(not(unix))]
    let _ = (pgid, limit);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_expanded_once_and_referenced_for_the_shell() {
        let values = [
            ("seed", "7".to_owned()),
            ("run_dir", "/tmp/a b/it's {seed}".to_owned()),
        ];
        assert_eq!(
            expand("--dir={run_dir} {seed} {other}", &values),
            "--dir=/tmp/a b/it's {seed} 7 {other}"
        );
        assert_eq!(
            expand_for_shell("test -d {run_dir} {other}", &values),
            "test -d \"$TOOLSTORM_RUN_DIR\" {other}"
        );
        assert_eq!(
            expand_for_shell(
                r#"test -f "{run_dir}/x" && echo '{seed}' \"{seed}"#,
                &values
            ),
            r#"test -f "$TOOLSTORM_RUN_DIR/x" && echo ''"$TOOLSTORM_SEED"'' \""$TOOLSTORM_SEED""#
        );
        assert_eq!(
            expand_for_shell(r#"echo "$(cat {run_dir})" "{seed}""#, &values),
            r#"echo "$(cat "$TOOLSTORM_RUN_DIR")" "$TOOLSTORM_SEED""#
        );
    }
}
