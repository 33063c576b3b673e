//! One run of a campaign again: `--rerun SEED` plans the seed as the campaign ran it (the
//! agent's command restored from what the campaign kept), prints the command and folder before
//! it starts, and compares the faults and calls it met with the first time; `--shrink SEED`
//! looks for the smallest failing fault schedule.

use std::path::Path;
use std::path::PathBuf;

use super::CampaignArgs;
use super::table::show;

use super::super::Io;
use crate::agent::{self as run, Plan};
use crate::campaign::{CampaignFile, RunRecord};
use crate::document::Error;
use crate::json::pretty;

/// The plan that runs `seed` of a campaign again, its files named `<campaign>.<what>-SEED`:
/// the finished run of that seed too. Errors are printed; the exit code comes back.
pub(super) fn replan<'f>(
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
    let rules = edited.map_or(run::Rules::Planned, |p| run::Rules::Other(p));
    match run::replan(&out, file, seed, rules, what, again) {
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
pub(super) fn commands_of(
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
pub(super) fn restored<T: PartialEq + std::fmt::Debug>(
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
pub(super) fn rerun(a: &CampaignArgs, file: &CampaignFile, seed: i64, io: &mut Io<'_>) -> i32 {
    let (plan, first, out) = match replan(a, file, seed, "rerun", io) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let again = run::run_again(&plan, seed);
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
        Ok(d) => crate::cli::compare::print_comparison(
            &d,
            &format!("run {} (seed {seed}) → rerun", first.run),
            ("first", "rerun"),
            io,
        ),
        Err(e) => {
            let _ = writeln!(io.err, "toolstorm-tui: cannot compare the two runs: {e}");
        }
    }
    // The oracle's verdict is a run's verdict too (`--verify`): first → rerun, beside the
    // recording's checks.
    if file.verify.is_some() || first.oracle.is_some() || again.oracle.is_some() {
        let mark = |o: Option<bool>| match o {
            Some(true) => "✓",
            Some(false) => "✗",
            None => "-",
        };
        let _ = writeln!(
            io.out,
            "{}",
            crate::printable::line(&format!(
                "    {} → {}  oracle (--verify): {} → {}",
                mark(first.oracle),
                mark(again.oracle),
                first.oracle_word(),
                again.oracle_word()
            ))
        );
    }
    let _ = writeln!(io.out, "rerun recording: {}", again_path.display());
    // The exit status is the re-run's verdict: 2 when it could not start (nothing was tested).
    if matches!(
        again.outcome,
        crate::campaign::Outcome::StartFailed | crate::campaign::Outcome::SetupFailed
    ) {
        let _ = writeln!(
            io.err,
            "toolstorm-tui: the re-run of seed {seed} could not start ({}): nothing was tested",
            again.note.as_deref().unwrap_or(again.outcome.as_str())
        );
        crate::exit::USAGE
    } else if again.passed {
        0
    } else {
        let _ = writeln!(io.err, "toolstorm-tui: the re-run of seed {seed} failed");
        crate::exit::CONTRACT_FAILED
    }
}

/// How many faults a shrunk scenario at `path` pins (each rule's calls), when there is one.
pub(super) fn pinned_faults(path: &Path) -> Option<usize> {
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
pub(super) fn shrink(a: &CampaignArgs, file: &CampaignFile, seed: i64, io: &mut Io<'_>) -> i32 {
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
