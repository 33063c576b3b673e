//! Running one seed of an agent again, with its own rules or other ones: the plan for a
//! campaign's seed (`campaign --rerun`, the explorer's `p` and `R` on a campaign's run), and
//! for an MCP recording whose sidecar names its agent (`mcp --agent-cmd`) — and each re-run in
//! a numbered folder of its own (`<stem>.<what>-SEED.runs/run-NNN/`), as a campaign's runs.

use std::path::Path;
use std::time::Duration;

use super::run::{PLACEHOLDERS, Plan, StopFlag, expand_for_shell, run_one};

/// The file a re-run of `seed` named `what` is planned under, beside `beside` (a campaign
/// file or a recording): `<stem>.<what>-SEED.json`, its run in `<stem>.<what>-SEED.runs/`.
pub fn rerun_out(beside: &Path, what: &str, seed: i64) -> std::path::PathBuf {
    let stem = beside
        .file_stem()
        .map_or_else(|| "campaign".into(), |s| s.to_string_lossy().into_owned());
    beside.with_file_name(format!("{stem}.{what}-{seed}.json"))
}

/// The number the next re-run planned under `out` takes: one past the highest run folder in
/// `<out>.runs/` (`run-001`, `run-002`, … as a campaign's runs), so no re-run ever replaces
/// another's recording and logs.
pub fn next_run(out: &Path) -> u64 {
    let highest = std::fs::read_dir(runs_dir(out))
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let name = e.ok()?.file_name();
            name.to_str()?.strip_prefix("run-")?.parse::<u64>().ok()
        })
        .max()
        .unwrap_or(0);
    highest.saturating_add(1)
}

/// Runs `seed` of `plan` again in a folder of its own: the next free `run-NNN` under the
/// plan's runs folder, made before the run starts (never one that exists), so two re-runs of
/// one seed keep both their files. The run's number is its record's.
pub fn run_again(plan: &Plan, seed: i64) -> RunRecord {
    let mut run = next_run(&plan.out);
    if std::fs::create_dir_all(runs_dir(&plan.out)).is_ok() {
        // Another re-run may take a number between the look and the make: the next one then.
        for _ in 0..1000 {
            match std::fs::create_dir(plan.run_dir(run)) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    run = run.saturating_add(1);
                }
                _ => break,
            }
        }
    }
    // A folder that cannot be made is the run's own failure to start, said in its record.
    run_one(plan, run, seed)
}

use crate::campaign::{CampaignFile, Outcome, RunRecord};
use crate::document::Error;
use crate::document::campaign::{named_path, runs_dir};

/// Why an agent's re-run gave no run to compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RerunError {
    /// The user stopped it; the text says where what it did before is.
    Stopped(String),
    /// It could not be planned or run, or its recording could not be read.
    Failed(String),
}

impl std::fmt::Display for RerunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RerunError::Stopped(t) | RerunError::Failed(t) => f.write_str(t),
        }
    }
}

impl From<String> for RerunError {
    fn from(why: String) -> RerunError {
        RerunError::Failed(why)
    }
}

/// The commands that run a campaign's seed again (the file keeps them with secrets redacted:
/// where it did, the caller gives them again).
#[derive(Clone, Debug)]
pub struct Again {
    /// The agent's command, placeholders unexpanded.
    pub agent: Vec<String>,
    /// `--before`.
    pub before: Option<String>,
    /// `--verify`.
    pub verify: Option<String>,
}

impl Again {
    /// The file's own commands, when none of them keeps a redacted secret.
    pub fn from_file(file: &CampaignFile) -> Result<Again, String> {
        let secret = file.agent.iter().any(|w| w.contains(crate::redact::MARKER))
            || [&file.before, &file.verify].iter().any(|c| {
                c.as_deref()
                    .is_some_and(|c| c.contains(crate::redact::MARKER))
            });
        if secret {
            return Err(
                "the campaign file keeps the agent's command with a secret redacted: re-run this \
                 seed from the command line, giving the commands again (campaign FILE --rerun SEED \
                 -- AGENT ...)"
                    .into(),
            );
        }
        Ok(Again {
            agent: file.agent.clone(),
            before: file.before.clone(),
            verify: file.verify.clone(),
        })
    }
}

/// Which rules a re-run of a campaign's seed runs with; the rest of the run's plan (its seed,
/// timeout, folder, agent, setup and oracle) is the campaign's
/// ([`crate::document::plan::RunPlan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules<'a> {
    /// The run's own: the campaign's scenario, which must not have changed since, under the
    /// campaign's probability override.
    Planned,
    /// The rules of this file under the campaign's probability override, as the run had them
    /// (`--rerun --scenario EDITED`; the explorer's `R` on the campaign's scenario as it is now).
    Other(&'a Path),
    /// A scenario that says all of it, its probability override (or none) included: the
    /// explorer's edited rules (written from the run's plan, its probability in them) and a
    /// pinned fault (which must fire).
    Whole(&'a Path),
}

/// The plan that runs `seed` of the campaign at `out` again, its files named
/// `<campaign>.<what>-SEED`, with `rules`; and the finished run of that seed.
pub fn replan<'f>(
    out: &Path,
    file: &'f CampaignFile,
    seed: i64,
    rules: Rules<'_>,
    what: &str,
    again: Again,
) -> Result<(Plan, &'f RunRecord), String> {
    let Some(first) = file.runs.iter().find(|r| r.seed == seed) else {
        return Err(format!(
            "ValueError: the campaign has no finished run of seed {seed} (its seeds: {})",
            file.runs
                .iter()
                .map(|r| r.seed.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    if let Some(name) = file.lab_name() {
        return Err(format!(
            "ValueError: this campaign is a sweep of the bundled lab: run seed {seed} again with \
             `toolstorm-tui sweep --scenarios {name} --seeds {seed} ...`, or open a run's cassette"
        ));
    }
    // The one source of what the run ran with (the CLI's and the explorer's alike).
    let planned = crate::document::plan::of_campaign_run(out, file, seed)
        .ok_or_else(|| format!("ValueError: the campaign has no finished run of seed {seed}"))?;
    let (scenario_path, probability) = match rules {
        Rules::Planned => (planned.scenario.clone(), planned.probability),
        Rules::Other(p) => (
            std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()),
            planned.probability,
        ),
        Rules::Whole(p) => (
            std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()),
            None,
        ),
    };
    let scenario_sha256 = crate::fsread::read_document(&scenario_path)
        .map(|bytes| crate::json::sha256_hex(&bytes))
        .map_err(|e| Error::io(&scenario_path, e).to_string())?;
    // Other rules are the point of their re-run: only the campaign's own must not have
    // changed under it.
    if rules == Rules::Planned && scenario_sha256 != planned.scenario_sha256 {
        return Err(format!(
            "ValueError: {} changed since the campaign ran: its runs cannot be reproduced \
             with other rules (restore it, or start a new campaign)",
            scenario_path.display()
        ));
    }
    let scenario = match crate::document::open_scenario(&scenario_path) {
        Ok(crate::document::Scenario::Mcp(s)) => s,
        Ok(_) => {
            return Err("ValueError: the campaign's scenario is no longer of world \"mcp\"".into());
        }
        Err(e) => return Err(e.to_string()),
    };
    let bin =
        std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
    let plan = Plan {
        scenario_path,
        scenario,
        agent: again.agent,
        seeds: vec![seed],
        jobs: 1,
        timeout: Duration::from_secs_f64(file.timeout),
        before: again.before,
        verify: again.verify,
        probability,
        out: rerun_out(out, what, seed),
        bin,
        // Where the campaign ran, so `python agent.py` and relative commands find their files.
        cwd: named_path(out, &file.cwd),
        scenario_sha256,
        agent_http: file.agent_http,
        shard: None,
        server: Vec::new(),
        stop: StopFlag::default(),
    };
    Ok((plan, first))
}

/// The plan that starts the agent of the MCP recording at `recording` again on `seed`, with
/// the rules of `scenario` — the agent its sidecar names (`mcp --agent-cmd`, run by `sh -c`
/// in the folder it ran in), its files named `<recording>.<what>-SEED`. The error says what
/// is missing and how to give it.
pub fn replan_recording(
    recording: &Path,
    seed: i64,
    scenario: &Path,
    what: &str,
) -> Result<Plan, String> {
    let side = crate::mcp::session::sidecar_path(recording);
    let mcp = crate::mcp::session::McpSession::load(&side)
        .map_err(|e| format!("{}: {e}", side.display()))?;
    let Some(agent) = mcp.agent.as_ref() else {
        return Err(format!(
            "{} does not say how to start its agent: record with `toolstorm-tui mcp SCENARIO \
             --record FILE --agent-cmd 'python agent.py --mcp-config {{mcp_config}}' ...`, or run \
             the agent as a campaign (`toolstorm-tui campaign SCENARIO -- AGENT ...`)",
            recording.display()
        ));
    };
    if agent.command.contains(crate::redact::MARKER)
        || agent
            .before
            .as_deref()
            .is_some_and(|b| b.contains(crate::redact::MARKER))
    {
        return Err(format!(
            "{} keeps its agent's command (or its --before) with a secret redacted, so it \
             cannot be started again: give the agent its secret through the environment (which is passed on, and \
             never written), not its command line",
            recording.display()
        ));
    }
    // The command runs in a shell; each placeholder becomes the variable holding its value,
    // quoted for where it stands.
    let values: Vec<(&str, String)> = PLACEHOLDERS.iter().map(|p| (*p, String::new())).collect();
    let command = expand_for_shell(&agent.command, &values);
    let record = RunRecord::new(1, seed, Outcome::Finished, recording.display().to_string());
    let file = CampaignFile {
        scenario: scenario.display().to_string(),
        scenario_name: String::new(),
        scenario_sha256: String::new(),
        cwd: agent.cwd.clone(),
        agent: vec!["sh".into(), "-c".into(), command],
        // The probability the session ran its rules at (the proxy's --probability).
        probability: mcp.probability,
        timeout: crate::campaign::DEFAULT_TIMEOUT,
        // The recording's world reset runs first, as a campaign's --before does.
        before: agent.before.clone(),
        verify: None,
        seeds: vec![seed],
        runs: vec![record],
        agent_http: mcp
            .transport
            .as_ref()
            .is_some_and(|t| t.client == "streamable-http"),
        shard: None,
    };
    let again = Again::from_file(&file)?;
    // The recording's own scenario runs as the session ran it (its probability); an edited
    // or pinned one says all of it.
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    let rules = match &mcp.scenario {
        Some(own) if same(Path::new(own), scenario) => Rules::Other(scenario),
        _ => Rules::Whole(scenario),
    };
    let (mut plan, _) = replan(recording, &file, seed, rules, what, again)?;
    // The server the session ran against (a command or URL after `--` wins over the
    // scenario's, as it did then); the scenario's when the recording cannot name it whole.
    let recorded = &mcp.server_command;
    let usable =
        !recorded.is_empty() && !recorded.iter().any(|w| w.contains(crate::redact::MARKER));
    // The scenario's own server, as the proxy started it then (its program found from the
    // scenario's folder): started the same way again, from that folder.
    let the_scenarios = match (&plan.scenario.server, recorded.split_first()) {
        (Some(c), Some((program, args))) if c.is_url => args.is_empty() && *program == c.command,
        (Some(c), Some((program, args))) => {
            *args == c.args[..] && Path::new(program).ends_with(&c.command)
        }
        _ => false,
    };
    if usable && !the_scenarios {
        plan.server = mcp.server_command.clone();
    } else if plan.scenario.server.is_none() {
        return Err(format!(
            "neither {} nor the recording names the server with what it needs (a secret \
             was redacted): put it in the scenario's \"server\"",
            scenario.display()
        ));
    }
    Ok(plan)
}
