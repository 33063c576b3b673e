//! Merging shard files into one campaign. What is checked is identity, never counts: every
//! part must plan the same campaign (the scenario's digest, the agent's digest, the seeds,
//! the probability, timeout, setup and oracle), and each seed may be run at most once — the
//! same run found in two parts is kept once when both say the same, and refused, named, when
//! they disagree. Seeds no part ran are the merged file's missing seeds: its runs are only
//! the runs that happened, so a missing seed is never counted as a pass.
//!
//! The parts come in already read, their recordings' paths already relative to where the
//! merged file will be (finding files and copying run folders is the caller's).

use std::fmt;

use super::file::{CampaignFile, RunRecord};

/// A part to merge: where it came from (for messages) and its contents.
pub type Part = (String, CampaignFile);

/// Why parts cannot be merged.
#[derive(Clone, Debug, PartialEq)]
pub enum MergeError {
    /// Nothing to merge.
    Empty,
    /// A part plans another campaign than the first: which part, which first, what differs.
    OtherPlan {
        /// The part that differs.
        part: String,
        /// The first part, which it was compared with.
        first: String,
        /// What differs, in words.
        what: String,
    },
    /// One run found twice with different results.
    Conflict {
        /// The run's seed.
        seed: i64,
        /// Its run number.
        run: u64,
        /// The part it was first found in.
        first: String,
        /// The part that says otherwise.
        second: String,
        /// What the first says.
        says: String,
        /// What the second says.
        otherwise: String,
    },
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::Empty => write!(f, "no campaign files to merge"),
            MergeError::OtherPlan { part, first, what } => {
                write!(f, "{part} is not a part of the campaign of {first}: {what}")
            }
            MergeError::Conflict {
                seed,
                run,
                first,
                second,
                says,
                otherwise,
            } => write!(
                f,
                "seed {seed} (run {run}) was run twice with different outcomes: {first} says \
                 {says}, {second} says {otherwise}"
            ),
        }
    }
}

impl std::error::Error for MergeError {}

/// Seeds as text for people: the first twenty, and how many more.
pub fn seed_list(seeds: &[i64]) -> String {
    let mut s = seeds
        .iter()
        .take(20)
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if seeds.len() > 20 {
        s.push_str(&format!(" and {} more", seeds.len() - 20));
    }
    s
}

/// The merged campaign and what merging found.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    /// An ordinary campaign file of the whole plan (no shard), holding every run found (the
    /// seeds no part ran are its [`CampaignFile::missing`]).
    pub file: CampaignFile,
    /// Runs found in more than one part, saying the same (kept once).
    pub repeated: usize,
}

/// What differs between two plans, or `None` when they are one campaign's.
fn plan_difference(a: &CampaignFile, b: &CampaignFile) -> Option<String> {
    if a.scenario_sha256 != b.scenario_sha256 {
        return Some(format!(
            "another scenario (\"{}\", sha256 {}…; the first is \"{}\", {}…)",
            b.scenario_name,
            short(&b.scenario_sha256),
            a.scenario_name,
            short(&a.scenario_sha256)
        ));
    }
    if a.agent_sha256() != b.agent_sha256() {
        return Some(format!(
            "another agent ({:?}; the first is {:?})",
            b.agent.join(" "),
            a.agent.join(" ")
        ));
    }
    if a.seeds != b.seeds {
        return Some(format!(
            "another plan of seeds ({} seeds from {}; the first has {} from {})",
            b.seeds.len(),
            b.seeds.first().map_or("none".into(), i64::to_string),
            a.seeds.len(),
            a.seeds.first().map_or("none".into(), i64::to_string)
        ));
    }
    let settings = [
        ("probability", a.probability != b.probability),
        ("timeout", a.timeout != b.timeout),
        ("--before", a.before != b.before),
        ("--verify", a.verify != b.verify),
    ];
    settings
        .iter()
        .find(|(_, differs)| *differs)
        .map(|(name, _)| format!("another {name}"))
}

fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

/// What two records of one run say differently about the agent (the first's words, the
/// second's), or `None` when they agree.
fn outcome_difference(a: &RunRecord, b: &RunRecord) -> Option<(String, String)> {
    let says: [fn(&RunRecord) -> String; 4] = [
        |r| (if r.passed { "passed" } else { "failed" }).to_owned(),
        |r| format!("the run {}", r.outcome.as_str()),
        |r| {
            format!(
                "{} calls, {} faults, {} commits, {} duplicates",
                r.calls, r.faults, r.commits, r.duplicates
            )
        },
        |r| {
            let mut v: Vec<String> = r
                .checks
                .iter()
                .map(|c| format!("{} {}", if c.passed { "✓" } else { "✗" }, c.name))
                .collect();
            v.push(format!("oracle {}", r.oracle_word()));
            v.join(", ")
        },
    ];
    says.iter()
        .map(|say| (say(a), say(b)))
        .find(|(x, y)| x != y)
}

/// Merges `parts` into one campaign of their plan. The merged file takes the first part's
/// plan (the caller sets where its scenario and folder are, seen from the merged file).
pub fn merge(parts: &[Part]) -> Result<Merged, MergeError> {
    let Some((first_name, first)) = parts.first() else {
        return Err(MergeError::Empty);
    };
    for (name, part) in &parts[1..] {
        if let Some(what) = plan_difference(first, part) {
            return Err(MergeError::OtherPlan {
                part: name.clone(),
                first: first_name.clone(),
                what,
            });
        }
    }
    let mut file = CampaignFile {
        runs: Vec::new(),
        shard: None,
        ..first.clone()
    };
    // Each kept run and the part it came from, by run number (one sort at the end: parts
    // interleave their runs, so inserting into the file's list one by one would move it
    // about for every run).
    let mut kept: std::collections::BTreeMap<u64, (&RunRecord, &str)> =
        std::collections::BTreeMap::new();
    let mut repeated = 0;
    for (name, part) in parts {
        for r in &part.runs {
            match kept.get(&r.run) {
                Some((first, from)) => {
                    if let Some((says, otherwise)) = outcome_difference(first, r) {
                        return Err(MergeError::Conflict {
                            seed: r.seed,
                            run: r.run,
                            first: (*from).to_owned(),
                            second: name.clone(),
                            says,
                            otherwise,
                        });
                    }
                    repeated += 1;
                }
                None => {
                    kept.insert(r.run, (r, name));
                }
            }
        }
    }
    file.runs = kept.into_values().map(|(r, _)| r.clone()).collect();
    Ok(Merged { file, repeated })
}

#[cfg(test)]
mod tests {
    use super::super::file::{CheckResult, Outcome};
    use super::super::shard::Shard;
    use super::*;

    fn record(run: u64, seed: i64, passed: bool) -> RunRecord {
        RunRecord {
            run,
            seed,
            outcome: Outcome::Finished,
            exit: Some(0),
            seconds: 0.5,
            recording: format!("runs/run-{run:03}/recording.json"),
            calls: 2,
            faults: u64::from(!passed),
            commits: 1 + u64::from(!passed),
            duplicates: u64::from(!passed),
            checks: vec![CheckResult {
                name: "No duplicate side effects".into(),
                passed,
                detail: String::new(),
            }],
            oracle: None,
            passed,
            note: None,
        }
    }

    /// Shard `index` of `total` of a plan of seeds 10..=19, each run done (seed 13 fails).
    fn shard(index: u32, total: u32) -> Part {
        let shard = Shard { index, total };
        let seeds: Vec<i64> = (10..20).collect();
        let runs = (1..=10u64)
            .filter(|r| shard.owns(*r))
            .map(|r| record(r, seeds[r as usize - 1], seeds[r as usize - 1] != 13))
            .collect();
        let file = CampaignFile {
            scenario: "s.json".into(),
            scenario_name: "s".into(),
            scenario_sha256: "ab".repeat(32),
            cwd: ".".into(),
            agent: vec!["agent".into(), "{mcp_config}".into()],
            probability: Some(0.5),
            timeout: 60.0,
            before: None,
            verify: None,
            seeds,
            runs,
            agent_http: false,
            shard: Some(shard),
        };
        (format!("shard-{index}.json"), file)
    }

    #[test]
    fn shards_merge_into_the_whole_plan() {
        let parts: Vec<Part> = (1..=3).map(|i| shard(i, 3)).collect();
        let m = merge(&parts).expect("merges");
        assert_eq!(m.file.runs.len(), 10);
        assert!(m.file.missing().is_empty());
        assert_eq!(m.file.shard, None);
        assert_eq!(m.file.passed(), (9, 10));
        let runs: Vec<u64> = m.file.runs.iter().map(|r| r.run).collect();
        assert_eq!(runs, (1..=10).collect::<Vec<_>>());
        // The order parts come in does not matter.
        let mut reversed = parts.clone();
        reversed.reverse();
        assert_eq!(merge(&reversed).expect("merges").file, m.file);
    }

    #[test]
    fn a_missing_shard_is_missing_seeds_never_passes() {
        let parts = vec![shard(1, 3), shard(3, 3)];
        let m = merge(&parts).expect("merges");
        assert_eq!(m.file.missing(), vec![11, 14, 17]);
        assert_eq!(m.file.runs.len(), 7);
    }

    #[test]
    fn refuses_parts_of_another_campaign_naming_what_differs() {
        let mut other = shard(2, 2);
        other.1.scenario_sha256 = "cd".repeat(32);
        let e = merge(&[shard(1, 2), other]).expect_err("another scenario");
        assert!(
            e.to_string().contains("shard-2.json is not a part")
                && e.to_string().contains("another scenario"),
            "{e}"
        );

        let mut other = shard(2, 2);
        other.1.agent = vec!["agent".into(), "--idempotent".into()];
        let e = merge(&[shard(1, 2), other]).expect_err("another agent");
        assert!(e.to_string().contains("another agent"), "{e}");

        let mut other = shard(2, 2);
        other.1.probability = Some(1.0);
        let e = merge(&[shard(1, 2), other]).expect_err("another probability");
        assert!(e.to_string().contains("another probability"), "{e}");
    }

    #[test]
    fn a_seed_run_twice_is_kept_once_when_it_agrees_and_refused_when_not() {
        let m = merge(&[shard(1, 2), shard(2, 2), shard(1, 2)]).expect("the same twice");
        assert_eq!(m.repeated, 5);
        assert_eq!(m.file.runs.len(), 10);

        // Seed 13 is run 4, shard 2 of 2: another part says it passed.
        let mut again = shard(2, 2);
        again.0 = "rerun.json".into();
        for r in &mut again.1.runs {
            *r = record(r.run, r.seed, true);
        }
        let e = merge(&[shard(1, 2), shard(2, 2), again]).expect_err("disagrees");
        assert_eq!(
            e.to_string(),
            "seed 13 (run 4) was run twice with different outcomes: shard-2.json says failed, \
             rerun.json says passed"
        );
        assert!(matches!(merge(&[]), Err(MergeError::Empty)));
    }
}
