//! `campaign`: run an agent many times through the MCP proxy, one seed per run, and say how
//! often it recovers — per run the seed, faults, commits, duplicates, checks and the oracle;
//! then pass^1 … pass^k, the failing seeds and the failures by check. `campaign FILE` (a
//! campaign file) prints the same for a finished campaign; `--rerun SEED` runs one seed
//! again and says whether it met the same faults on the same calls. The work is
//! [`crate::agent`]'s; this module turns flags into a plan and prints.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::Io;
use crate::agent::{self as run, Plan};
use crate::campaign::shard::Shard;
use crate::campaign::{CampaignFile, RunRecord, passk};
use crate::document::{self, Error, Scenario};
use crate::json::{Value, pretty};
use crate::obj;

/// Flags of `campaign`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  \
      toolstorm-tui campaign scenarios/mcp-lost-ack.json --runs 20 --jobs 4 \\\n      \
      --verify 'test \"$(sqlite3 orders.db \"select count(*) from orders\")\" = 1' \\\n      \
      -- python agent.py --mcp-config {mcp_config}\n  \
      toolstorm-tui campaign mcp-lost-ack.campaign.json              (the table again)\n  \
      toolstorm-tui campaign mcp-lost-ack.campaign.json --rerun 47   (one seed again)\n\n\
      toolstorm-tui campaign scenarios/mcp-lost-ack.json --seeds 1..200 --shard 2/4 -- AGENT ...\n  \
      toolstorm-tui campaign merge all.campaign.json shards/   (the shards joined)\n\n\
      Placeholders in the agent's command: {mcp_config} {seed} {run} {record} {run_dir}\n\
      (also in TOOLSTORM_MCP_CONFIG, TOOLSTORM_SEED, TOOLSTORM_RUN, TOOLSTORM_RECORD, TOOLSTORM_RUN_DIR).",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct CampaignArgs {
    /// Join shard files into one campaign
    #[command(subcommand)]
    command: Option<CampaignCommand>,
    /// A scenario of world "mcp" naming its server (a new campaign, or the rest of one), or a
    /// campaign file (its table; with --rerun, one seed again)
    #[arg(required = true)]
    file: Option<PathBuf>,
    /// How many runs: seeds are the scenario's seed plus 1, 2, ... (default 10, at most 10000)
    #[arg(long, conflicts_with = "seeds", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    runs: Option<u32>,
    /// The runs' seeds, a range A..B (inclusive)
    #[arg(long, value_name = "A..B", value_parser = seed_range)]
    seeds: Option<(i64, i64)>,
    /// Run only part of the seeds, for a CI matrix: `I/N` (shard I of N, from 1), `k8s/N`
    /// (I from JOB_COMPLETION_INDEX, a Kubernetes Indexed Job's), or `ci` (from the CI
    /// system's variables: CI_NODE_INDEX/CI_NODE_TOTAL, CIRCLE_NODE_INDEX/CIRCLE_NODE_TOTAL,
    /// BUILDKITE_PARALLEL_JOB/_COUNT, SEMAPHORE_JOB_INDEX/_COUNT,
    /// BITBUCKET_PARALLEL_STEP/_COUNT). Run n of the plan is shard ((n - 1) mod N) + 1's
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Runs at once, each in its own folder
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: u16,
    /// How the agent reaches the proxy: `stdio` (its mcpServers entry starts the proxy) or
    /// `http` (each run starts a listening proxy on a free port; the entry has its URL, also in
    /// {mcp_url} and TOOLSTORM_MCP_URL)
    #[arg(long, value_name = "HOW", default_value = "stdio", value_parser = ["stdio", "http"])]
    agent_transport: String,
    /// Seconds a run may take; past it the agent's process group is stopped
    #[arg(long, default_value_t = crate::campaign::DEFAULT_TIMEOUT, value_parser = seconds)]
    timeout: f64,
    /// An oracle of the real world after each run (`sh -c`, here; `{run_dir}` and
    /// TOOLSTORM_RUN_DIR name the run's folder): exit 0 is a pass, shown beside our checks
    #[arg(long, value_name = "CMD")]
    verify: Option<String>,
    /// Resets the world before each run (`sh -c`, here); failing, the run is not started
    #[arg(long, value_name = "CMD")]
    before: Option<String>,
    /// Override every rule's probability (0 to 1)
    #[arg(long, value_parser = super::parse_python_float, allow_hyphen_values = true)]
    probability: Option<f64>,
    /// The campaign file (default: SCENARIO's name + .campaign.json, here)
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    #[command(flatten)]
    report: ReportArgs,
    /// With a campaign file: run this seed again and compare its faults with the first run's
    #[arg(long, value_name = "SEED", allow_hyphen_values = true)]
    rerun: Option<i64>,
    /// With a campaign file: search for a smallest fault schedule on which this failing seed
    /// still fails (drop rules, then calls, re-running the agent), and write it as a scenario
    #[arg(
        long,
        value_name = "SEED",
        allow_hyphen_values = true,
        conflicts_with = "rerun"
    )]
    shrink: Option<i64>,
    /// With --rerun: run the seed with this scenario's rules instead (an edited copy of the
    /// campaign's scenario) and compare the two runs call by call
    #[arg(long, value_name = "FILE", requires = "rerun")]
    scenario: Option<PathBuf>,
    /// With --shrink: most runs of the agent the search may take
    #[arg(long, default_value_t = 16, requires = "shrink")]
    budget: usize,
    /// The agent's command, after `--`
    #[arg(last = true, value_name = "AGENT")]
    agent: Vec<OsString>,
}

/// How a finished campaign is reported: `campaign`'s and `campaign merge`'s flags.
#[derive(Args, Debug, Clone, Default)]
pub struct ReportArgs {
    /// Print the summary as JSON
    #[arg(long)]
    json: bool,
    /// Also write the runs as JUnit XML to FILE (one test case per run and seed, the failed
    /// checks and the calls behind them in its message; seeds not run are skipped cases), for
    /// CI systems
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Exit 1 when the share of planned runs that passed is below P (0 to 1); a seed not run
    /// counts as not passed
    #[arg(long, value_name = "P", value_parser = super::parse_python_float)]
    min_pass: Option<f64>,
}

/// `campaign`'s subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum CampaignCommand {
    /// Join shard files (or folders holding them, e.g. downloaded CI artifacts) into one
    /// campaign file: they must be parts of one plan (scenario, agent, seeds, settings), each
    /// seed run at most once; then the table, as `campaign FILE` prints it
    Merge(MergeArgs),
}

/// Flags of `campaign merge`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
      toolstorm-tui campaign merge all.campaign.json shards/ --junit junit.xml --min-pass 0.9\n  \
      toolstorm-tui campaign merge all.campaign.json a.campaign.json b.campaign.json --copy-runs")]
pub struct MergeArgs {
    /// The merged campaign file to write
    out: PathBuf,
    /// Shard files, or folders searched for *.campaign.json
    #[arg(required = true, value_name = "SHARD")]
    shards: Vec<PathBuf>,
    /// Merge even when seeds were run by no shard (they are reported as missing, never as
    /// passed)
    #[arg(long)]
    allow_missing: bool,
    /// Copy each run's folder beside the merged file (OUT's stem + .runs/), so it stands alone
    #[arg(long)]
    copy_runs: bool,
    #[command(flatten)]
    report: ReportArgs,
}

fn seed_range(s: &str) -> Result<(i64, i64), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("expected A..B, got {s:?}"))?;
    let n = |t: &str| {
        t.trim()
            .parse::<i64>()
            .map_err(|_| format!("expected integers in A..B, got {s:?}"))
    };
    let (a, b) = (n(a)?, n(b)?);
    let safe = crate::storm::MAX_SAFE_SEED;
    if a.abs() > safe || b.abs() > safe {
        return Err(format!(
            "seeds must be at most 2**53 - 1 in size, got {s:?}"
        ));
    }
    if b.checked_sub(a)
        .is_none_or(|d| d < 0 || d >= crate::campaign::file::MAX_RUNS as i64)
    {
        return Err(format!(
            "expected A <= B and at most {} seeds, got {s:?}",
            crate::campaign::file::MAX_RUNS
        ));
    }
    Ok((a, b))
}

fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t <= crate::campaign::file::MAX_TIMEOUT => Ok(t),
        _ => Err(format!("expected seconds in (0, 86400], got {s:?}")),
    }
}

/// `campaign`.
pub fn run(a: &CampaignArgs, io: &mut Io<'_>) -> i32 {
    let Some(CampaignCommand::Merge(m)) = &a.command else {
        return match &a.file {
            Some(file) => campaign(a, file, io),
            None => io.fail("ValueError: campaign needs a scenario or a campaign file"),
        };
    };
    merge(m, io)
}

/// `campaign merge`.
fn merge(m: &MergeArgs, io: &mut Io<'_>) -> i32 {
    let done = match run::merge::merge_into(&m.out, &m.shards, m.allow_missing, m.copy_runs) {
        Ok(done) => done,
        Err(e) => return io.fail(e),
    };
    let _ = writeln!(
        io.err,
        "campaign merge: {} file{} → {}: {} of {} runs{}{}{}",
        done.parts.len(),
        if done.parts.len() == 1 { "" } else { "s" },
        m.out.display(),
        done.file.runs.len(),
        done.file.seeds.len(),
        if done.repeated > 0 {
            format!(" ({} found twice, the same each time)", done.repeated)
        } else {
            String::new()
        },
        if done.copied > 0 {
            format!(", {} run folders copied", done.copied)
        } else {
            String::new()
        },
        if done.file.missing().is_empty() {
            String::new()
        } else {
            format!(
                "; MISSING {} seeds: {}",
                done.file.missing().len(),
                crate::campaign::merge::seed_list(&done.file.missing())
            )
        }
    );
    report(&m.report, &m.out, &done.file, io)
}

/// `campaign FILE`: a new campaign (or the rest of one), or a finished one's table.
fn campaign(a: &CampaignArgs, path: &Path, io: &mut Io<'_>) -> i32 {
    let text = match crate::fsread::read_document(path) {
        Ok(b) => b,
        Err(e) => return io.fail(Error::io(path, e)),
    };
    let campaign_file = crate::campaign::file::looks_like_campaign(&text)
        || crate::json::parse(&String::from_utf8_lossy(&text))
            .ok()
            .is_some_and(|v| CampaignFile::is_campaign(&v));
    if campaign_file {
        if a.shard.is_some() {
            return io.fail(
                "ValueError: --shard runs part of a new campaign: give the scenario (a shard's \
                 file resumes as `campaign SCENARIO --shard I/N --out FILE`)",
            );
        }
        let file = match run::read_file(path) {
            Ok(f) => f,
            Err(e) => return io.fail(e),
        };
        return match (a.rerun, a.shrink) {
            (Some(seed), _) => rerun(a, &file, seed, io),
            (None, Some(seed)) => shrink(a, &file, seed, io),
            (None, None) => report(&a.report, path, &file, io),
        };
    }
    if a.rerun.is_some() || a.shrink.is_some() {
        return io.fail("ValueError: --rerun and --shrink take a campaign file, not a scenario");
    }
    let shard = match a
        .shard
        .as_deref()
        .map(|t| Shard::parse(t, &|k| std::env::var(k).ok()))
    {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => {
            let given = a.shard.as_deref().unwrap_or_default();
            return io.fail(format!("ValueError: --shard {given}: {e}"));
        }
    };
    let scenario = match document::open_scenario(path) {
        Ok(Scenario::Mcp(s)) => s,
        Ok(other) => {
            return io.fail(Error::invalid(
                Some(path),
                crate::scenario_fields::invalid(
                    "world",
                    &format!(
                        "a campaign runs an agent against a scenario of world \"mcp\"; this one is \"{}\"",
                        other.world().as_str()
                    ),
                ),
            ));
        }
        Err(e) => return io.fail(e),
    };
    if scenario.server.is_none() {
        return io.fail(Error::invalid(
            Some(path),
            crate::scenario_fields::invalid(
                "server",
                "a campaign starts the scenario's own server for every run: name it in \
                 \"server\" ({\"command\": ..., \"args\": [...]})",
            ),
        ));
    }
    if a.agent.is_empty() {
        return io.fail(
            "ValueError: campaign needs the agent's command after `--` \
             (e.g. `-- python agent.py --mcp-config {mcp_config}`)",
        );
    }
    if let Some(p) = a.probability.filter(|p| !(0.0..=1.0).contains(p)) {
        return io.fail(format!(
            "ValueError: --probability must be a number between 0 and 1, got {}",
            crate::json::float::py_repr(p)
        ));
    }
    let seeds: Vec<i64> = match a.seeds {
        Some((lo, hi)) => (lo..=hi).collect(),
        None => (1..=i64::from(a.runs.unwrap_or(10).max(1)))
            .map(|i| scenario.seed.saturating_add(i))
            .collect(),
    };
    if seeds.iter().any(|s| s.abs() > crate::storm::MAX_SAFE_SEED) {
        return io.fail(
            "ValueError: the scenario's seed plus the run number passes 2**53 - 1: give \
             --seeds A..B",
        );
    }
    let out = a.out.clone().unwrap_or_else(|| {
        let stem = path
            .file_stem()
            .map_or_else(|| "campaign".into(), |s| s.to_string_lossy().into_owned());
        match shard {
            Some(sh) => PathBuf::from(format!(
                "{stem}.shard-{}-of-{}.campaign.json",
                sh.index, sh.total
            )),
            None => PathBuf::from(format!("{stem}.campaign.json")),
        }
    });
    let bin = match std::env::current_exe() {
        Ok(b) => b,
        Err(e) => return io.fail(format!("OSError: cannot find this program's path: {e}")),
    };
    let plan = Plan {
        scenario_path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
        scenario,
        agent: a
            .agent
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect(),
        seeds,
        jobs: usize::from(a.jobs),
        timeout: Duration::from_secs_f64(a.timeout),
        before: a.before.clone(),
        verify: a.verify.clone(),
        probability: a.probability,
        out: std::path::absolute(&out).unwrap_or(out),
        bin,
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        scenario_sha256: crate::json::sha256_hex(&text),
        agent_http: a.agent_transport == "http",
        shard,
        server: Vec::new(),
        stop: run::StopFlag::default(),
    };
    let mut file = plan.file();
    if plan.out.exists() {
        let earlier = run::read_file(&plan.out);
        match earlier {
            Ok(earlier) if earlier.same_plan(&file) => {
                for r in earlier.runs {
                    if file.seeds.get(r.run as usize - 1) == Some(&r.seed) {
                        file.record(r);
                    }
                }
                if !file.runs.is_empty() {
                    let _ = writeln!(
                        io.err,
                        "campaign: resuming {}: {} of {} runs already finished",
                        plan.out.display(),
                        file.runs.len(),
                        file.planned().count()
                    );
                }
            }
            Ok(_) => {
                return io.fail(format!(
                    "ValueError: {} holds another campaign (scenario, agent, oracle or seeds \
                     differ): choose another --out, or remove it",
                    plan.out.display()
                ));
            }
            Err(e) => return io.fail(e),
        }
    }
    let todo: Vec<u64> = file
        .planned()
        .map(|(n, _)| n)
        .filter(|n| file.run(*n).is_none())
        .collect();
    let planned = file.planned().count();
    if let Some(sh) = shard {
        let _ = writeln!(
            io.err,
            "campaign: shard {sh}: {planned} of the plan's {} seeds (runs {}{}) → {}",
            file.seeds.len(),
            file.planned()
                .take(3)
                .map(|(n, _)| n.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if planned > 3 { ", ..." } else { "" },
            plan.out.display(),
        );
    }
    let bar = if a.report.json || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        ProgressBar::with_draw_target(Some(planned as u64), ProgressDrawTarget::stderr())
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs · {msg} · {eta} left")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_position(file.runs.len() as u64);
    if let Err(e) = crate::atomic::write(&plan.out, file.to_text().as_bytes()) {
        return io.fail(Error::io(&plan.out, e));
    }
    let result = run::run_all(&plan, &mut file, &todo, &mut |f, _| {
        let (passed, n) = f.passed();
        bar.set_message(format!("{passed}/{n} passed"));
        bar.set_position(n as u64);
    });
    bar.finish_and_clear();
    if let Err(e) = result {
        return io.fail(e);
    }
    report(&a.report, &plan.out, &file, io)
}

/// The seeds of failed runs.
fn failing(file: &CampaignFile) -> Vec<i64> {
    file.runs
        .iter()
        .filter(|r| !r.passed)
        .map(|r| r.seed)
        .collect()
}

/// Failed runs grouped by what failed them: each failed check, the oracle, or how the run
/// ended; in first-seen order.
fn by_reason(file: &CampaignFile) -> Vec<(String, Vec<i64>)> {
    let mut groups: Vec<(String, Vec<i64>)> = Vec::new();
    let mut add = |name: String, seed: i64| match groups.iter_mut().find(|(n, _)| *n == name) {
        Some((_, seeds)) => seeds.push(seed),
        None => groups.push((name, vec![seed])),
    };
    for r in file.runs.iter().filter(|r| !r.passed) {
        for c in r.failed_checks() {
            add(c.to_owned(), r.seed);
        }
        if r.oracle == Some(false) {
            add("oracle (--verify)".into(), r.seed);
        }
        if r.outcome != crate::campaign::Outcome::Finished {
            add(format!("run {}", r.outcome.as_str()), r.seed);
        } else if let Some(note) = &r.note {
            add(note.clone(), r.seed);
        }
    }
    groups
}

fn summary_value(path: &Path, file: &CampaignFile) -> Value {
    let (passed, n) = file.passed();
    let table = passk::table(n, passed, 8);
    obj! {
        "campaign" => path.display().to_string(),
        "scenario" => file.scenario_name.as_str(),
        "planned" => file.planned().count(),
        "runs" => n,
        "passed" => passed,
        // Planned seeds with no run (a shard missing from a merge, a campaign cut short):
        // never counted as passed.
        "missing_seeds" => Value::Array(file.missing().into_iter().map(Value::from).collect()),
        "shard" => file.shard.map_or(Value::Null, |s| Value::from(s.to_string())),
        "pass_hat" => Value::Array(table.iter().map(|(k, p)| obj! {"k" => *k, "p" => Value::Float(*p)}).collect()),
        "failing_seeds" => Value::Array(failing(file).into_iter().map(Value::from).collect()),
        "by_check" => Value::Array(by_reason(file).into_iter().map(|(name, seeds)| obj! {
            "check" => name,
            "seeds" => Value::Array(seeds.into_iter().map(Value::from).collect()),
        }).collect()),
        "oracle_disagrees" => Value::Array(file.runs.iter().filter(|r| r.oracle_disagrees()).map(|r| Value::from(r.seed)).collect()),
        // Per run, for CI scripts that need more than the counts (no table parsing).
        "results" => Value::Array(file.runs.iter().map(|r| obj! {
            "run" => r.run,
            "seed" => r.seed,
            "outcome" => r.outcome.as_str(),
            "passed" => r.passed,
            "faults" => r.faults,
            "commits" => r.commits,
            "duplicates" => r.duplicates,
            "failed_checks" => Value::Array(r.checks.iter().filter(|c| !c.passed).map(|c| Value::from(c.name.as_str())).collect()),
            "oracle" => r.oracle.map_or(Value::Null, Value::Bool),
            "exit" => r.exit.map_or(Value::Null, Value::from),
            "seconds" => Value::Float(r.seconds),
            "note" => r.note.as_deref().map_or(Value::Null, Value::from),
            "recording" => run::recording_path(path, r).display().to_string(),
        }).collect()),
    }
}

/// The table, pass^k, failing seeds and failures by check; exit 1 below `--min-pass`.
fn report(a: &ReportArgs, path: &Path, file: &CampaignFile, io: &mut Io<'_>) -> i32 {
    let (passed, n) = file.passed();
    if a.json {
        let _ = writeln!(io.out, "{}", pretty(&summary_value(path, file)));
    } else {
        for line in text_lines(path, file) {
            io.println_verdict(&line);
        }
    }
    if let Some(out) = &a.junit {
        let xml = crate::junit::to_xml(&[junit_suite(path, file)]);
        let ours = crate::junit::is_junit;
        if let Err(e) = crate::atomic::refuse_foreign(out, ours, "a JUnit report")
            .and_then(|()| crate::atomic::write(out, xml.as_bytes()))
        {
            return io.fail(Error::io(out, e));
        }
    }
    // A planned seed that was not run counts as not passed (a shard lost on CI must not
    // raise the pass rate).
    let planned = n + file.missing().len();
    match a.min_pass {
        Some(min) if planned == 0 || (passed as f64 / planned as f64) < min => {
            crate::exit::CONTRACT_FAILED
        }
        _ => 0,
    }
}

/// The campaign as a JUnit suite: one case per run and seed, a failed run's message the
/// checks it failed (and a failed oracle, or how the run ended) and its text the calls behind
/// each failed check, read from the run's recording.
fn junit_suite(path: &Path, file: &CampaignFile) -> crate::junit::Suite {
    let mut cases: Vec<crate::junit::Case> = file
        .runs
        .iter()
        .map(|r| {
            let recording = run::recording_path(path, r);
            let mut why: Vec<String> = r
                .checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| format!("{}: {}", c.name, c.detail))
                .collect();
            if r.oracle == Some(false) {
                why.push("the oracle (--verify) failed".into());
            }
            if r.outcome != crate::campaign::Outcome::Finished {
                why.push(format!("the run {}", r.outcome.as_str()));
            }
            if let Some(n) = &r.note {
                why.push(n.clone());
            }
            let failure = (!r.passed).then(|| crate::junit::Failure {
                message: why.join("; "),
                kind: r
                    .checks
                    .iter()
                    .find(|c| !c.passed)
                    .map_or_else(|| r.outcome.as_str().to_owned(), |c| c.name.clone()),
                text: calls_behind(&recording, r),
            });
            crate::junit::Case {
                name: format!("run {} · seed {}", r.run, r.seed),
                classname: format!("toolstorm.campaign.{}", file.scenario_name),
                time: r.seconds,
                properties: vec![
                    ("seed".into(), r.seed.to_string()),
                    ("recording".into(), recording.display().to_string()),
                ],
                failure,
                skipped: None,
            }
        })
        .collect();
    // A planned seed not run is a skipped case: CI shows it, and never as a pass.
    cases.extend(
        file.planned()
            .filter(|(n, _)| file.run(*n).is_none())
            .map(|(n, seed)| crate::junit::Case {
                name: format!("run {n} · seed {seed}"),
                classname: format!("toolstorm.campaign.{}", file.scenario_name),
                time: 0.0,
                properties: vec![("seed".into(), seed.to_string())],
                failure: None,
                skipped: Some("not run: no shard's file has this seed (missing)".into()),
            }),
    );
    crate::junit::Suite {
        name: path.display().to_string(),
        properties: vec![
            ("scenario".into(), file.scenario.clone()),
            ("scenario_sha256".into(), file.scenario_sha256.clone()),
        ],
        cases,
    }
}

/// The calls behind each check a run failed, from its recording (what `check --why` says).
fn calls_behind(recording: &Path, r: &RunRecord) -> String {
    let Ok(trace) = document::open_trace(recording) else {
        return format!("(the recording {} cannot be read)", recording.display());
    };
    let (Ok(summary), Some(c)) = (document::judge(&trace, None), trace.cassettes.first()) else {
        return String::new();
    };
    let explainer = document::explain::Explainer::new(&c.report, trace.mcp.as_ref());
    let failed: Vec<&str> = r
        .checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.name.as_str())
        .collect();
    summary
        .runs
        .first()
        .into_iter()
        .flatten()
        .filter(|check| failed.contains(&check.name.as_str()))
        .flat_map(|check| {
            std::iter::once(format!("{}:", check.name)).chain(
                explainer
                    .reasons(check)
                    .into_iter()
                    .map(|reason| format!("  ↳ {}", reason.text)),
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn cell(r: &RunRecord) -> String {
    let checks: String = r
        .checks
        .iter()
        .map(|c| if c.passed { '✓' } else { '✗' })
        .collect();
    checks
}

/// The lines `campaign` prints for people.
pub fn text_lines(path: &Path, file: &CampaignFile) -> Vec<String> {
    let (passed, n) = file.passed();
    let mut lines = vec![format!(
        "campaign {} · {} · {} of {} runs{}",
        path.display(),
        file.scenario_name,
        n,
        file.planned().count(),
        file.shard.map_or_else(String::new, |s| format!(
            " · shard {s} of a plan of {} seeds",
            file.seeds.len()
        ))
    )];
    let check_names: Vec<&str> = file
        .runs
        .iter()
        .find(|r| !r.checks.is_empty())
        .map(|r| r.checks.iter().map(|c| c.name.as_str()).collect())
        .unwrap_or_default();
    lines.push(format!(
        "  {:>4}  {:>8}  {:<8}  {:>6}  {:>7}  {:>4}  {:<6}  {:<6}  result",
        "run", "seed", "outcome", "faults", "commits", "dups", "checks", "oracle"
    ));
    for r in &file.runs {
        lines.push(format!(
            "  {:>4}  {:>8}  {:<8}  {:>6}  {:>7}  {:>4}  {:<6}  {:<6}  {}{}",
            r.run,
            r.seed,
            r.outcome.as_str(),
            r.faults,
            r.commits,
            r.duplicates,
            cell(r),
            r.oracle_word(),
            if r.passed { "PASS" } else { "FAIL" },
            match (&r.note, r.oracle_disagrees()) {
                (Some(note), _) => format!(" ({note})"),
                (None, true) => " (the oracle disagrees with our checks)".into(),
                (None, false) => String::new(),
            }
        ));
    }
    if !check_names.is_empty() {
        lines.push(format!("  checks: {}", check_names.join(" · ")));
    }
    if n > 0 {
        let table = passk::table(n, passed, 8)
            .iter()
            .map(|(k, p)| format!("pass^{k} {p:.3}"))
            .collect::<Vec<_>>()
            .join(" · ");
        lines.push(format!("{passed}/{n} passed · {table}"));
    }
    let fails = failing(file);
    if !fails.is_empty() {
        lines.push(format!(
            "failing seeds: {}",
            fails
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
        for (name, seeds) in by_reason(file) {
            lines.push(format!(
                "  {name}: {} run{} (seeds {})",
                seeds.len(),
                if seeds.len() == 1 { "" } else { "s" },
                seeds
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    let missing = file.missing();
    if !missing.is_empty() {
        lines.push(format!(
            "MISSING {} planned seed{} not run (not counted as passed): {}",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" },
            crate::campaign::merge::seed_list(&missing)
        ));
    }
    let disagree: Vec<String> = file
        .runs
        .iter()
        .filter(|r| r.oracle_disagrees())
        .map(|r| r.seed.to_string())
        .collect();
    if !disagree.is_empty() {
        lines.push(format!(
            "the oracle disagrees with our checks on seeds {}",
            disagree.join(", ")
        ));
    }
    lines
}

/// A schedule in words: `lost-receipt on create_shipment #1, ...`.
fn show(faults: &[run::Fault]) -> String {
    if faults.is_empty() {
        "no faults".to_owned()
    } else {
        faults
            .iter()
            .map(|f| format!("{} on {} #{}", f.rule, f.tool, f.ordinal))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The plan that runs `seed` of a campaign again, its files named `<campaign>.<what>-SEED`:
/// the finished run of that seed too. Errors are printed; the exit code comes back.
fn replan<'f>(
    a: &CampaignArgs,
    file: &'f CampaignFile,
    seed: i64,
    what: &str,
    io: &mut Io<'_>,
) -> Result<(Plan, &'f RunRecord, PathBuf), i32> {
    let given = a.file.clone().unwrap_or_default();
    let out = std::path::absolute(&given).unwrap_or(given);
    let edited = a.scenario.as_ref().filter(|_| what == "rerun");
    let (agent, before, verify) = commands_of(a, file).map_err(|e| io.fail(e))?;
    let again = run::Again {
        agent,
        before,
        verify,
    };
    match run::replan(&out, file, seed, edited.map(PathBuf::as_path), what, again) {
        Ok((plan, first)) => {
            // Before anything starts, what will: the file's commands are anyone's word, and a
            // CI log shows what ran (secrets redacted, every line escaped).
            let doing = if what == "rerun" {
                "re-running"
            } else {
                "shrinking"
            };
            let header = format!(
                "{}: {doing} seed {seed} with the agent of {}:",
                crate::exit::PROGRAM,
                out.display()
            );
            let launch = run::Launch::of(&plan, &out);
            for line in
                std::iter::once(header).chain(launch.lines().iter().map(|l| format!("  {l}")))
            {
                let _ = writeln!(io.err, "{}", crate::printable::line(&line));
            }
            Ok((plan, first, out))
        }
        Err(e) => Err(io.fail(e)),
    }
}

/// The agent, `--before` and `--verify` commands to run a campaign's seed again: the file's,
/// or — where the file keeps a secret redacted — the ones given again on this command line,
/// when they are the same commands once redacted.
#[allow(clippy::type_complexity)]
fn commands_of(
    a: &CampaignArgs,
    file: &CampaignFile,
) -> Result<(Vec<String>, Option<String>, Option<String>), String> {
    let r = crate::redact::Redactor::builtin();
    let given: Vec<String> = a
        .agent
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let agent = restored(
        "agent's command (after `--`)",
        file.agent.clone(),
        (!given.is_empty()).then_some(given),
        |g| r.redact_argv(g),
        |k| k.iter().any(|w| w.contains(crate::redact::MARKER)),
    )?;
    let line = |what: &str, kept: &Option<String>, again: &Option<String>| match kept {
        None => Ok(None),
        Some(k) => restored(
            what,
            k.clone(),
            again.clone(),
            |g| r.redact_command_line(g),
            |k| k.contains(crate::redact::MARKER),
        )
        .map(Some),
    };
    let before = line("--before command", &file.before, &a.before)?;
    let verify = line("--verify command", &file.verify, &a.verify)?;
    Ok((agent, before, verify))
}

/// A command the campaign file keeps: as kept, unless it holds a redacted secret; then the
/// one given `again`, which must redact to what was kept — as redaction is now: a file
/// written before it hid more (a URL's password, a `sk-…` token) keeps those in clear, and
/// the same command given again is still the campaign's.
fn restored<T: PartialEq + std::fmt::Debug>(
    what: &str,
    kept: T,
    again: Option<T>,
    redact: impl Fn(&T) -> T,
    has_secret: impl Fn(&T) -> bool,
) -> Result<T, String> {
    if !has_secret(&kept) {
        return Ok(kept);
    }
    match again {
        Some(g) if redact(&g) == redact(&kept) => Ok(g),
        Some(_) => Err(format!(
            "ValueError: the {what} given is not the campaign's (kept as {kept:?})"
        )),
        None => Err(format!(
            "ValueError: the campaign keeps its {what} with a secret redacted ({kept:?}): give \
             it again on this command line (the same command, with the secret), or pass the \
             secret to it through the environment"
        )),
    }
}

/// `--rerun SEED`: the seed's run again, in a folder of its own, and its faults compared with
/// the campaign's run of that seed. Exit 1 when they differ.
fn rerun(a: &CampaignArgs, file: &CampaignFile, seed: i64, io: &mut Io<'_>) -> i32 {
    let (plan, first, out) = match replan(a, file, seed, "rerun", io) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let again = run::run_one(&plan, 1, seed);
    let before = run::faults_of(&run::recording_path(&out, first));
    let after = run::faults_of(&run::recording_path(&plan.out, &again));
    let (before, after) = match (before, after) {
        (Ok(b), Ok(a)) => (b, a),
        (Err(e), _) | (_, Err(e)) => return io.fail(e),
    };
    let same = before == after;
    let with = a
        .scenario
        .as_ref()
        .map(|p| format!(" with the rules of {}", p.display()))
        .unwrap_or_default();
    let _ = writeln!(
        io.out,
        "{}",
        crate::printable::line(&format!(
            "seed {seed}: first run {} ({}); rerun{with} {} ({}) · {}",
            if first.passed { "PASS" } else { "FAIL" },
            show(&before),
            if again.passed { "PASS" } else { "FAIL" },
            show(&after),
            if same {
                "the same faults on the same calls"
            } else {
                "the faults differ"
            }
        ))
    );
    let first_path = run::recording_path(&out, first);
    let again_path = run::recording_path(&plan.out, &again);
    match crate::document::compare::RecordingDiff::open(&first_path, &again_path) {
        Ok(d) => print_comparison(&d, first.run, seed, io),
        Err(e) => {
            let _ = writeln!(io.err, "toolstorm-tui: cannot compare the two runs: {e}");
        }
    }
    let _ = writeln!(io.out, "rerun recording: {}", again_path.display());
    // The exit status is the re-run's verdict.
    if again.passed {
        0
    } else {
        crate::exit::CONTRACT_FAILED
    }
}

/// The two runs call by call (tool, arguments, fault, what the client got, commits), then
/// every check side by side.
fn print_comparison(
    d: &crate::document::compare::RecordingDiff,
    run_no: u64,
    seed: i64,
    io: &mut Io<'_>,
) {
    let mut lines = vec![format!(
        "run {run_no} (seed {seed}) → rerun: {}",
        d.diff.summary()
    )];
    lines.push(format!(
        "  {:<2}{:<18}{:<28}{:<34}{}",
        "", "tool", "arguments", "fault: first → rerun", "client got: first → rerun · commits"
    ));
    for row in &d.diff.rows {
        let b = row.before().and_then(|i| d.side(false, i));
        let a = row.after().and_then(|i| d.side(true, i));
        let args = a
            .as_ref()
            .or(b.as_ref())
            .map(|s| s.arguments.clone())
            .unwrap_or_default();
        let args: String = if args.chars().count() > 26 {
            args.chars().take(25).chain(std::iter::once('…')).collect()
        } else {
            args
        };
        let f = |s: &Option<crate::document::compare::CallSide>,
                 pick: fn(&crate::document::compare::CallSide) -> String| {
            s.as_ref().map_or_else(|| "(none)".to_owned(), pick)
        };
        lines.push(format!(
            "  {:<2}{:<18}{:<28}{:<34}{} → {} · {} → {}",
            row.marker(),
            d.tool(row),
            args,
            format!(
                "{} → {}",
                f(&b, |s| s.fault.clone()),
                f(&a, |s| s.fault.clone())
            ),
            f(&b, |s| s.got.clone()),
            f(&a, |s| s.got.clone()),
            b.as_ref().map_or(0, |s| s.commits),
            a.as_ref().map_or(0, |s| s.commits),
        ));
    }
    lines.push("  verdicts: first → rerun".to_owned());
    let mut names: Vec<&str> = d.before_checks.iter().map(|c| c.name.as_str()).collect();
    for c in &d.after_checks {
        if !names.contains(&c.name.as_str()) {
            names.push(c.name.as_str());
        }
    }
    let mark = |checks: &[crate::contract::Check], name: &str| {
        checks
            .iter()
            .find(|c| c.name == name)
            .map_or("-", |c| if c.passed { "✓" } else { "✗" })
    };
    for name in names {
        let detail = d
            .after_checks
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.detail.clone())
            .unwrap_or_default();
        // A campaign judges a run without it: it is the scenario's coverage on that seed.
        let aside = if crate::contract::is_coverage(name) {
            " (coverage, not part of a run's verdict)"
        } else {
            ""
        };
        lines.push(format!(
            "    {} → {}  {name}: {detail}{aside}",
            mark(&d.before_checks, name),
            mark(&d.after_checks, name)
        ));
    }
    for l in lines {
        let _ = writeln!(io.out, "{}", crate::printable::line(&l));
    }
}

/// How many faults a shrunk scenario at `path` pins (each rule's calls), when there is one.
fn pinned_faults(path: &Path) -> Option<usize> {
    let text = crate::fsread::read_text(path).ok()?;
    let v = crate::json::parse(&text).ok()?;
    let rules = v.as_object()?.get("rules")?.as_array()?;
    Some(
        rules
            .iter()
            .filter_map(|r| r.as_object()?.get("calls")?.as_array().map(Vec::len))
            .sum(),
    )
}

/// `--shrink SEED`: a smallest fault schedule on which the seed still fails, found by
/// re-running the agent ([`run::shrink`]), written as a scenario file ready to open.
fn shrink(a: &CampaignArgs, file: &CampaignFile, seed: i64, io: &mut Io<'_>) -> i32 {
    if a.budget == 0 {
        return io.fail(
            "ValueError: --budget 0 allows no run, and the first run is the one that shows the \
             failure comes back with its faults pinned: give --budget 1 or more",
        );
    }
    let (plan, first, out) = match replan(a, file, seed, "shrink", io) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if first.passed {
        return io.fail(format!(
            "ValueError: seed {seed} passed in this campaign: there is no failure to shrink"
        ));
    }
    let faults = match run::faults_of(&run::recording_path(&out, first)) {
        Ok(f) => f,
        Err(e) => return io.fail(e),
    };
    if faults.is_empty() {
        return io.fail(format!(
            "ValueError: seed {seed} failed without any fault injected: no schedule to shrink"
        ));
    }
    let scenario = match crate::fsread::read_text(&plan.scenario_path)
        .map_err(|e| Error::io(&plan.scenario_path, e))
        .and_then(|t| {
            crate::json::parse(&t).map_err(|e| {
                Error::invalid(
                    Some(&plan.scenario_path),
                    crate::error::ConfigError::new("Invalid or excessively nested JSON")
                        .because(e.to_string()),
                )
            })
        }) {
        Ok(v) => v,
        Err(e) => return io.fail(e),
    };
    let work = run::runs_dir(&plan.out);
    let _ = std::fs::remove_dir_all(&work);
    if let Err(e) = std::fs::create_dir_all(&work) {
        return io.fail(Error::io(&work, e));
    }
    let found = match run::shrink(&plan, &scenario, seed, faults, a.budget, &work) {
        Ok(f) => f,
        Err(e) => return io.fail(e),
    };
    if found.schedule.is_empty() {
        let _ = writeln!(
            io.out,
            "{}",
            crate::printable::line(&format!(
                "seed {seed}: with its faults pinned ({}) the run passed: the failure is not \
                 the schedule's alone",
                show(&found.from)
            ))
        );
        return crate::exit::CONTRACT_FAILED;
    }
    let stem = out
        .file_stem()
        .map_or_else(|| "campaign".into(), |s| s.to_string_lossy().into_owned());
    let mut target = out.with_file_name(format!("{stem}.shrunk-{seed}.json"));
    // An earlier search's result is not thrown away: a smaller one stays, and this one goes
    // beside it; one no smaller is replaced, and that is said.
    let mut said = None;
    if let Some(earlier) = pinned_faults(&target) {
        if earlier < found.schedule.len() {
            let mut n = 2;
            while target.exists() {
                target = out.with_file_name(format!("{stem}.shrunk-{seed}-{n}.json"));
                n += 1;
            }
            said = Some(format!(
                "an earlier search found a smaller schedule ({earlier} fault(s)): it stays in \
                 {stem}.shrunk-{seed}.json"
            ));
        } else {
            said = Some(format!(
                "replaced an earlier result of {earlier} fault(s) in {}",
                target.display()
            ));
        }
    }
    if let Err(e) = crate::atomic::write(&target, (pretty(&found.scenario) + "\n").as_bytes()) {
        return io.fail(Error::io(&target, e));
    }
    if let Some(s) = said {
        let _ = writeln!(
            io.err,
            "toolstorm-tui campaign: {}",
            crate::printable::line(&s)
        );
    }
    let _ = writeln!(
        io.out,
        "{}",
        crate::printable::line(&format!(
            "seed {seed}: {} fault{} → {} ({}) in {} run{} of the agent{}",
            found.from.len(),
            if found.from.len() == 1 { "" } else { "s" },
            found.schedule.len(),
            show(&found.schedule),
            found.runs,
            if found.runs == 1 { "" } else { "s" },
            if found.out_of_budget {
                " (the budget ran out: it may shrink further with a larger --budget)"
            } else {
                ""
            }
        ))
    );
    let _ = writeln!(io.out, "wrote {}", target.display());
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_kept_before_redaction_hid_more_is_still_restored() {
        let r = crate::redact::Redactor::builtin();
        // Kept by an older redactor: the option's value hidden, the URL's password not.
        let kept = "agent --token [REDACTED] https://bob:pw@h/mcp".to_owned();
        let given = "agent --token t1 https://bob:pw@h/mcp".to_owned();
        let line = |again: &str| {
            restored(
                "agent",
                kept.clone(),
                Some(again.to_owned()),
                |g| r.redact_command_line(g),
                |k| k.contains(crate::redact::MARKER),
            )
        };
        assert_eq!(line(&given), Ok(given.clone()));
        let other = line("agent --token t1 https://h/other");
        assert!(other.is_err_and(|e| e.contains("is not the campaign's")));
    }
}
