//! `sweep`: a campaign over a grid of scenarios × policies × seeds × probabilities × budgets,
//! run on every core. `--jsonl` prints one line per run in grid order; otherwise a summary
//! table with the failing seeds, and a progress bar (indicatif) on a terminal.

use std::io::IsTerminal;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Io, parse_python_float, parse_python_int};
use crate::exit;
use crate::json::{Object, Value, compact};
use crate::lab::campaign::{Grid, Outcome, Point, default_threads, stream};
use crate::lab::scenario::{self, Scenario};
use crate::lab::{self, Policy};

/// Flags of `sweep`.
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Scenarios: comma-separated names of the bundled ones, scenario files of the shipping
    /// lab (a word with a `/` or ending in `.json`), or `all`
    #[arg(long, default_value = "all")]
    scenarios: String,
    /// Policies: comma-separated names or `all`
    #[arg(long, default_value = "all")]
    policies: String,
    /// Seeds: comma-separated integers
    #[arg(long, allow_hyphen_values = true, conflicts_with = "seed_range")]
    seeds: Option<String>,
    /// Seeds: an inclusive range `A..B`
    #[arg(long, allow_hyphen_values = true)]
    seed_range: Option<String>,
    /// Probabilities: comma-separated numbers in [0, 1]
    #[arg(long, default_value = "1.0")]
    probabilities: String,
    /// Call budgets: comma-separated integers in 1..=20
    #[arg(long, default_value = "8")]
    max_calls: String,
    /// One JSON line per run, in grid order (printed as runs finish)
    #[arg(long)]
    jsonl: bool,
    /// Worker threads (default: one per core); the output is the same for any number
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: Option<u16>,
    /// Exit 1 if any run fails its contract
    #[arg(long)]
    fail_on_contract: bool,
    /// Keep the sweep as a campaign file (one scenario, one policy, one probability and one
    /// budget: the scripted policy is the agent), each run's cassette beside it; it opens in
    /// the explorer and prints with `campaign FILE` as an agent's campaign does
    #[arg(long, value_name = "FILE", conflicts_with = "jsonl")]
    campaign: Option<std::path::PathBuf>,
}

/// A bundled scenario by name, or a shipping scenario file (its rules, budget and checks;
/// the grid gives the seeds, probabilities and budgets).
fn scenario_of(word: &str) -> Result<Scenario, String> {
    if !word.contains('/') && !word.ends_with(".json") {
        return scenario::bundled(word).ok_or(format!(
            "--scenarios: unknown scenario '{word}' (a scenario file needs a path: ./{word}.json)"
        ));
    }
    let path = std::path::Path::new(word);
    match crate::document::open_scenario(path) {
        Ok(crate::document::Scenario::Shipping(f)) => Ok(f.scenario),
        Ok(other) => Err(format!(
            "--scenarios: {word} is a scenario of world \"{}\"; a sweep runs the shipping lab's \
             policies (an agent's scenario runs with `campaign`)",
            other.world().as_str()
        )),
        Err(e) => Err(format!("--scenarios: {e}")),
    }
}

fn split(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty())
}

fn parse_seeds(a: &SweepArgs) -> Result<Vec<i64>, String> {
    if let Some(range) = &a.seed_range {
        let (lo, hi) = range
            .split_once("..")
            .ok_or_else(|| format!("--seed-range: expected A..B, got '{range}'"))?;
        let lo = parse_python_int(lo)?.ok_or("--seed-range: start out of range")?;
        let hi = parse_python_int(hi)?.ok_or("--seed-range: end out of range")?;
        if hi < lo || hi - lo >= 1_000_000 {
            return Err(format!(
                "--seed-range: '{range}' must be ascending and hold at most 1,000,000 seeds"
            ));
        }
        return Ok((lo..=hi).collect());
    }
    match &a.seeds {
        None => Ok(vec![42]),
        Some(list) => split(list)
            .map(|s| {
                parse_python_int(s).and_then(|v| v.ok_or(format!("--seeds: '{s}' out of range")))
            })
            .collect(),
    }
}

/// Builds the grid from the flags.
pub fn grid(a: &SweepArgs) -> Result<Grid, String> {
    let scenarios: Vec<Scenario> = if a.scenarios == "all" {
        scenario::all()
    } else {
        split(&a.scenarios)
            .map(scenario_of)
            .collect::<Result<_, _>>()?
    };
    let policies: Vec<Policy> = if a.policies == "all" {
        Policy::ALL.to_vec()
    } else {
        split(&a.policies)
            .map(|s| Policy::parse(s).ok_or(format!("--policies: unknown policy '{s}'")))
            .collect::<Result<_, _>>()?
    };
    let seeds = parse_seeds(a)?;
    let probabilities: Vec<f64> = split(&a.probabilities)
        .map(|s| {
            parse_python_float(s).and_then(|p| {
                if (0.0..=1.0).contains(&p) {
                    Ok(p)
                } else {
                    Err(format!("--probabilities: '{s}' is not in [0, 1]"))
                }
            })
        })
        .collect::<Result<_, _>>()?;
    let budgets: Vec<i64> = split(&a.max_calls)
        .map(|s| match parse_python_int(s) {
            Ok(Some(n)) if lab::LAB_MAX_CALLS.contains(&n) => Ok(n),
            _ => Err(format!(
                "--max-calls: '{s}' is not a budget between 1 and 20"
            )),
        })
        .collect::<Result<_, _>>()?;
    for (name, empty) in [
        ("--scenarios", scenarios.is_empty()),
        ("--policies", policies.is_empty()),
        ("--seeds", seeds.is_empty()),
        ("--probabilities", probabilities.is_empty()),
        ("--max-calls", budgets.is_empty()),
    ] {
        if empty {
            return Err(format!("{name}: empty list"));
        }
    }
    let runs = scenarios.len() * policies.len() * seeds.len() * probabilities.len() * budgets.len();
    if runs > 10_000_000 {
        return Err(format!("the grid holds {runs} runs; at most 10,000,000"));
    }
    Ok(Grid::cartesian(
        scenarios,
        &policies,
        &seeds,
        &probabilities,
        &budgets,
    ))
}

/// What makes a run pass, said under both tables (`sweep` and `sweep --campaign`).
pub const RUN_VERDICT: &str = "a run passes when every check but Fault exercised holds (whether the fault fired on a seed is the scenario's coverage: see faults)";

/// One `--jsonl` line.
pub fn jsonl_line(grid: &Grid, point: &Point, o: &Outcome) -> String {
    let mut v = Object::new();
    v.push("scenario", grid.scenarios[point.scenario].name.as_str());
    v.push("policy", point.policy.as_str());
    v.push("seed", point.config.seed);
    v.push("probability", point.config.probability.map(Value::Float));
    v.push("max_calls", point.config.max_calls);
    v.push("digest", o.digest.as_str());
    v.push("passed", o.passed);
    v.push("recovered", o.recovered);
    v.push("calls", o.calls);
    v.push("effects", o.effects);
    v.push("faults", o.faults);
    v.push("elapsed", Value::Float(o.elapsed));
    compact(&Value::Object(v))
}

/// Runs `sweep`. Runs are streamed: lines (or the table's counts) are produced by the
/// workers and handed over in grid order as they finish, so memory does not grow with the grid.
pub fn run(a: &SweepArgs, io: &mut Io<'_>) -> i32 {
    let grid = match grid(a) {
        Ok(g) => g,
        Err(e) => return io.fail(format!("ValueError: {e}")),
    };
    // Progress goes to stderr and only to a terminal (indicatif hides it otherwise);
    // with --jsonl the lines themselves show progress.
    let bar = if a.jsonl || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        ProgressBar::with_draw_target(Some(grid.len() as u64), ProgressDrawTarget::stderr())
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs · {eta} left")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let tick = |done: usize, _total: usize| bar.set_position(done as u64);
    let threads = a.threads.map_or_else(default_threads, usize::from);
    if let Some(out) = &a.campaign {
        let code = as_campaign(a, &grid, out, threads, &tick, io);
        bar.finish_and_clear();
        return code;
    }
    let mut failure: Option<String> = None;
    let mut any_failed = false;
    if a.jsonl {
        let line = |_: usize, p: &Point, run: Result<&lab::LabRun, String>| {
            run.map(|r| (jsonl_line(&grid, p, &Outcome::from(r)), r.recovered()))
        };
        stream(
            &grid,
            threads,
            &line,
            &mut |result| match result {
                Ok((text, passed)) if failure.is_none() => {
                    any_failed |= !passed;
                    io.emit_line(&text);
                }
                Ok(_) => {}
                Err(e) => {
                    failure.get_or_insert(e);
                }
            },
            Some(&tick),
        );
    } else {
        let mut table = Table::default();
        let verdict = |_: usize, p: &Point, run: Result<&lab::LabRun, String>| {
            run.map(|r| Counted {
                key: (
                    p.scenario,
                    p.policy,
                    p.config.probability.unwrap_or(1.0).to_bits(),
                ),
                seed: p.config.seed,
                passed: r.recovered(),
                failed: r
                    .checks
                    .iter()
                    .filter(|c| !c.passed && c.judges_the_agent())
                    .map(|c| c.name.clone())
                    .collect(),
            })
        };
        stream(
            &grid,
            threads,
            &verdict,
            &mut |result| match result {
                Ok(row) => {
                    any_failed |= !row.passed;
                    table.add(row);
                }
                Err(e) => {
                    failure.get_or_insert(e);
                }
            },
            Some(&tick),
        );
        if failure.is_none() {
            table.print(&grid, io);
        }
    }
    bar.finish_and_clear();
    if let Some(e) = failure {
        return io.fail(format!("ConfigurationError: {e}"));
    }
    if a.fail_on_contract && any_failed {
        exit::CONTRACT_FAILED
    } else {
        exit::OK
    }
}

/// Failing seeds the table lists per row before "(+N more)".
const LISTED_SEEDS: usize = 12;

/// A row's key: the scenario, the policy, and the probability (its bits).
type RowKey = (usize, Policy, u64);

/// One run's result as the table counts it.
struct Counted {
    key: RowKey,
    seed: i64,
    passed: bool,
    /// The checks it failed (not `Fault exercised`).
    failed: Vec<String>,
}

/// One row of the table: a scenario, a policy and a probability, counted as runs arrive.
#[derive(Default)]
struct Row {
    pass: usize,
    fail: usize,
    /// Distinct failing seeds, in the order of their first failure.
    seen: std::collections::HashSet<i64>,
    listed: Vec<i64>,
}

impl Row {
    fn add(&mut self, seed: i64, passed: bool) {
        if passed {
            self.pass += 1;
        } else {
            self.fail += 1;
            if self.seen.insert(seed) && self.listed.len() < LISTED_SEEDS {
                self.listed.push(seed);
            }
        }
    }

    fn seeds(&self) -> String {
        let more = if self.seen.len() > LISTED_SEEDS {
            format!(" (+{} more)", self.seen.len() - LISTED_SEEDS)
        } else {
            String::new()
        };
        let listed: Vec<String> = self.listed.iter().map(i64::to_string).collect();
        if listed.is_empty() {
            "-".to_owned()
        } else {
            listed.join(",") + &more
        }
    }
}

/// The summary table, built from runs as they arrive in grid order: a row per scenario,
/// policy and probability, then the failures by check.
#[derive(Default)]
struct Table {
    runs: usize,
    order: Vec<RowKey>,
    rows: std::collections::HashMap<RowKey, Row>,
    probabilities: std::collections::BTreeSet<u64>,
    /// Per failed check, in first-seen order: its failing runs (and their seeds).
    checks: Vec<(String, Row)>,
}

impl Table {
    fn add(&mut self, o: Counted) {
        self.runs += 1;
        self.probabilities.insert(o.key.2);
        let row = self.rows.entry(o.key).or_insert_with(|| {
            self.order.push(o.key);
            Row::default()
        });
        row.add(o.seed, o.passed);
        for name in o.failed {
            match self.checks.iter_mut().find(|(n, _)| *n == name) {
                Some((_, r)) => r.add(o.seed, false),
                None => {
                    let mut r = Row::default();
                    r.add(o.seed, false);
                    self.checks.push((name, r));
                }
            }
        }
    }

    fn print(&self, grid: &Grid, io: &mut Io<'_>) {
        io.println(&format!("{} runs", self.runs));
        io.println(RUN_VERDICT);
        // A column for the probability when the grid has more than one.
        let by_p = self.probabilities.len() > 1;
        let p_head = if by_p {
            format!(" {:>5}", "p")
        } else {
            String::new()
        };
        io.println(&format!(
            "{:<14} {:<11}{p_head} {:>6} {:>6}  failing seeds",
            "scenario", "policy", "pass", "fail"
        ));
        for key in &self.order {
            let Some(row) = self.rows.get(key) else {
                continue;
            };
            let p = if by_p {
                format!(" {:>5}", crate::json::float::py_repr(f64::from_bits(key.2)))
            } else {
                String::new()
            };
            io.println(&format!(
                "{:<14} {:<11}{p} {:>6} {:>6}  {}",
                grid.scenarios[key.0].name,
                key.1.as_str(),
                row.pass,
                row.fail,
                row.seeds()
            ));
        }
        if !self.checks.is_empty() {
            io.println("failures by check:");
            for (name, row) in &self.checks {
                io.println(&format!(
                    "  {name}: {} run{} (seeds {})",
                    row.fail,
                    if row.fail == 1 { "" } else { "s" },
                    row.seeds()
                ));
            }
        }
    }
}

/// `sweep --campaign FILE`: the grid's runs (one scenario and policy, many seeds) as a
/// campaign file with each run's cassette in `FILE`'s runs folder, then the campaign's table.
fn as_campaign(
    a: &SweepArgs,
    grid: &Grid,
    out: &std::path::Path,
    threads: usize,
    tick: &(dyn Fn(usize, usize) + Sync),
    io: &mut Io<'_>,
) -> i32 {
    use crate::agent as run;
    use crate::campaign::CampaignFile;
    let one = |list: &str| list != "all" && split(list).count() == 1;
    if !(one(&a.scenarios) && one(&a.policies) && one(&a.probabilities) && one(&a.max_calls)) {
        return io.fail(
            "ValueError: --campaign takes one scenario, one policy, one probability and one \
             budget (a campaign is one agent on one scenario): vary the seeds only",
        );
    }
    let Some(scenario) = grid.scenarios.first() else {
        return io.fail("ValueError: --campaign needs a scenario");
    };
    let out = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    if grid.len() > crate::campaign::file::MAX_RUNS {
        return io.fail(format!(
            "ValueError: a campaign file holds at most {} runs; this sweep has {}",
            crate::campaign::file::MAX_RUNS,
            grid.len()
        ));
    }
    // An agent's campaign is not overwritten by a sweep.
    if let Ok(text) = crate::fsread::read_text(&out)
        && let Ok(earlier) = CampaignFile::from_text(&text)
        && earlier.lab_name().is_none()
    {
        return io.fail(format!(
            "ValueError: {} holds an agent's campaign: choose another --campaign file",
            out.display()
        ));
    }
    let seeds: Vec<i64> = (0..grid.len()).map(|i| grid.point(i).config.seed).collect();
    let probability = grid.point(0).config.probability;
    let mut file = CampaignFile {
        scenario: CampaignFile::lab_scenario(&scenario.name),
        scenario_name: scenario.name.clone(),
        scenario_sha256: String::new(),
        cwd: ".".into(),
        agent: vec![
            crate::exit::PROGRAM.into(),
            "sweep".into(),
            "--policies".into(),
            a.policies.trim().into(),
        ],
        probability,
        timeout: 86_400.0,
        before: None,
        verify: None,
        seeds,
        runs: Vec::new(),
        agent_http: false,
        shard: None,
    };
    let dir = run::runs_dir(&out);
    let base = out.parent().map_or_else(
        || std::path::PathBuf::from("."),
        std::path::Path::to_path_buf,
    );
    let record = |i: usize, _: &Point, r: Result<&lab::LabRun, String>| {
        r.map(|lab| {
            let at = dir.join(format!("run-{:03}", i + 1)).join("recording.json");
            let rel = at
                .strip_prefix(&base)
                .map_or_else(|_| at.clone(), std::path::Path::to_path_buf)
                .display()
                .to_string();
            let text = crate::json::canonical(&lab.report.to_value()) + "\n";
            (at, text, run::lab_record(i as u64 + 1, rel, lab))
        })
    };
    let mut failure: Option<String> = None;
    // The file is rewritten at most once a second while runs come in, and at the end: a
    // killed sweep keeps what it finished, and a long one is not rewritten for every run.
    let mut written_at: Option<std::time::Instant> = None;
    stream(
        grid,
        threads,
        &record,
        &mut |result| match result {
            Ok((at, text, r)) if failure.is_none() => {
                let due =
                    written_at.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(1));
                let written = crate::atomic::write(&at, text.as_bytes())
                    .map_err(|e| format!("OSError: {}: {e}", at.display()))
                    .and_then(|()| {
                        file.record(r);
                        if !due {
                            return Ok(());
                        }
                        written_at = Some(std::time::Instant::now());
                        crate::atomic::write(&out, file.to_text().as_bytes())
                            .map_err(|e| format!("OSError: {}: {e}", out.display()))
                    });
                if let Err(e) = written {
                    failure = Some(e);
                }
            }
            Ok(_) => {}
            Err(e) => {
                failure.get_or_insert(format!("ConfigurationError: {e}"));
            }
        },
        Some(tick),
    );
    if let Some(e) = failure {
        return io.fail(e);
    }
    if let Err(e) = crate::atomic::write(&out, file.to_text().as_bytes()) {
        return io.fail(format!("OSError: {}: {e}", out.display()));
    }
    for line in super::campaign::text_lines(&out, &file) {
        io.emit_line(&crate::printable::line(&line));
    }
    io.emit_line(RUN_VERDICT);
    if a.fail_on_contract && file.runs.iter().any(|r| !r.passed) {
        exit::CONTRACT_FAILED
    } else {
        exit::OK
    }
}
