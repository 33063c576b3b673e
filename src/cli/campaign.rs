//! `campaign`: run an agent many times through the MCP proxy, one seed per run, and say how
//! often it recovers — per run the seed, faults, commits, duplicates, checks and the oracle;
//! then pass^1 … pass^k, the failing seeds and the failures by check. `campaign FILE` (a
//! campaign file) prints the same for a finished campaign; `--rerun SEED` runs one seed
//! again and says whether it met the same faults on the same calls. The work is
//! [`crate::agent`]'s; this module turns flags into a plan, runs and merges; [`table`] prints
//! a finished campaign and [`rerun`] runs one of its seeds again.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

mod rerun;
mod table;

pub use table::text_lines;

use super::Io;
use crate::agent::{self as run, Plan};
use crate::campaign::CampaignFile;
use crate::campaign::shard::Shard;
use crate::document::{self, Error, Scenario};

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
    /// Exit 0 when the share of planned runs that passed is at least P (a fraction, 0 to 1:
    /// 0.9 for 90%), else 1 saying the rate; a seed not run counts as not passed. Without it,
    /// any failed run exits 1
    #[arg(long, value_name = "P", value_parser = fraction)]
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

/// A pass rate: a fraction from 0 to 1 (a percentage is refused with the fraction it meant).
fn fraction(s: &str) -> Result<f64, String> {
    let p = super::parse_python_float(s)?;
    match p {
        p if (0.0..=1.0).contains(&p) => Ok(p),
        p if p > 1.0 && p <= 100.0 => Err(format!(
            "expected a fraction from 0 to 1, got {s}: for {s}% write {}",
            p / 100.0
        )),
        _ => Err(format!("expected a fraction from 0 to 1, got {s}")),
    }
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
    table::report(&m.report, &m.out, &done.file, io)
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
            (Some(seed), _) => rerun::rerun(a, &file, seed, io),
            (None, Some(seed)) => rerun::shrink(a, &file, seed, io),
            (None, None) => table::report(&a.report, path, &file, io),
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
        match earlier.map(|e| {
            let differs = e.plan_difference(&file);
            (e, differs)
        }) {
            Ok((earlier, None)) => {
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
            Ok((_, Some(what))) => {
                return io.fail(format!(
                    "ValueError: {} holds another campaign ({what}): choose another --out, or \
                     remove it",
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
    table::report(&a.report, &plan.out, &file, io)
}
