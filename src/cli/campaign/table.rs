//! A finished campaign as people and CI read it: the run table (one row per run — seed,
//! faults, commits, duplicates, checks, the oracle — and the calls behind each failure), the
//! failing seeds and the failures by check, its `--json` summary and its JUnit suite.

use super::ReportArgs;
use std::path::Path;

use super::super::Io;
use crate::agent as run;
use crate::campaign::{CampaignFile, RunRecord, passk};
use crate::document::{self, Error};
use crate::json::{Value, pretty};
use crate::obj;

/// The seeds of failed runs.
pub(super) fn failing(file: &CampaignFile) -> Vec<i64> {
    file.runs
        .iter()
        .filter(|r| !r.passed)
        .map(|r| r.seed)
        .collect()
}

/// Failed runs grouped by what failed them: each failed check, the oracle, or how the run
/// ended; in first-seen order.
pub(super) fn by_reason(file: &CampaignFile) -> Vec<(String, Vec<i64>)> {
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

pub(super) fn summary_value(path: &Path, file: &CampaignFile) -> Value {
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
pub(super) fn report(a: &ReportArgs, path: &Path, file: &CampaignFile, io: &mut Io<'_>) -> i32 {
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
pub(super) fn junit_suite(path: &Path, file: &CampaignFile) -> crate::junit::Suite {
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
pub(super) fn calls_behind(recording: &Path, r: &RunRecord) -> String {
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

pub(super) fn cell(r: &RunRecord) -> String {
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
pub(super) fn show(faults: &[run::Fault]) -> String {
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
