//! Shards: one campaign's plan split over several machines (a CI matrix, a Kubernetes
//! Indexed Job), each running its part and writing a shard file that [`super::merge`] joins.
//!
//! The split is by the plan's run numbers, round robin: run `n` (the plan's `n`-th seed)
//! belongs to shard `((n - 1) mod N) + 1`. Every machine computes the same split from the
//! plan alone, shards differ in size by at most one run, and each gets a fair mix of the
//! plan (a plan of consecutive seeds is not cut into ranges).
//!
//! Where the shard comes from: `I/N` as given (1-based), `k8s/N` (the index from
//! `JOB_COMPLETION_INDEX`, which a Kubernetes Indexed Job sets, 0-based), or `ci` (the first
//! of the CI systems' pairs in [`CI_VARIABLES`] that is set).

use std::fmt;

/// Most shards a plan is split into.
pub const MAX_SHARDS: u32 = 1_000;

/// A CI system's pair of variables: its name, the index variable, the total variable, and
/// whether the index counts from 1.
pub type CiPair = (&'static str, &'static str, &'static str, bool);

/// The variables `--shard ci` reads, in this order (the first pair set wins).
pub const CI_VARIABLES: [CiPair; 5] = [
    ("GitLab CI", "CI_NODE_INDEX", "CI_NODE_TOTAL", true),
    ("CircleCI", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", false),
    (
        "Buildkite",
        "BUILDKITE_PARALLEL_JOB",
        "BUILDKITE_PARALLEL_JOB_COUNT",
        false,
    ),
    (
        "Semaphore",
        "SEMAPHORE_JOB_INDEX",
        "SEMAPHORE_JOB_COUNT",
        true,
    ),
    (
        "Bitbucket Pipelines",
        "BITBUCKET_PARALLEL_STEP",
        "BITBUCKET_PARALLEL_STEP_COUNT",
        false,
    ),
];

/// The variable a Kubernetes Indexed Job sets in each pod (0-based).
pub const K8S_INDEX: &str = "JOB_COMPLETION_INDEX";

/// One part of a split plan: shard `index` of `total`, counted from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 1.
    pub index: u32,
    /// How many shards the plan is split into.
    pub total: u32,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.total)
    }
}

impl Shard {
    /// Shard `index` of `total`, when `1 <= index <= total <= MAX_SHARDS`.
    pub fn new(index: u32, total: u32) -> Option<Shard> {
        (index >= 1 && index <= total && total <= MAX_SHARDS).then_some(Shard { index, total })
    }

    /// Whether run `run` of the plan (1-based) is this shard's.
    pub fn owns(&self, run: u64) -> bool {
        run >= 1 && (run - 1) % u64::from(self.total) == u64::from(self.index - 1)
    }

    /// Reads `--shard`: `I/N`, `k8s/N` or `ci`, looking variables up with `var`. The error
    /// says what was expected, or which variables were read and what they held.
    pub fn parse(text: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<Shard, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("ci") {
            return from_ci(var);
        }
        let Some((i, n)) = text.split_once('/') else {
            return Err(format!("expected I/N, k8s/N or ci, got {text:?}"));
        };
        let total = number(n).ok_or_else(|| {
            format!("expected the number of shards after '/' (1 to {MAX_SHARDS}), got {text:?}")
        })?;
        if i.trim().eq_ignore_ascii_case("k8s") {
            let raw = var(K8S_INDEX).ok_or_else(|| {
                format!(
                    "the shard's index is read from {K8S_INDEX}, which is not set (a \
                     Kubernetes Indexed Job sets it in each pod)"
                )
            })?;
            return indexed(&raw, total, false, K8S_INDEX);
        }
        let index =
            number(i).ok_or_else(|| format!("expected I/N with whole numbers, got {text:?}"))?;
        Shard::new(index, total)
            .ok_or_else(|| format!("expected 1 <= I <= N <= {MAX_SHARDS} in I/N, got {text:?}"))
    }
}

fn number(s: &str) -> Option<u32> {
    let s = s.trim();
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// The shard an index variable names (`from_one`: it counts from 1).
fn indexed(raw: &str, total: u32, from_one: bool, name: &str) -> Result<Shard, String> {
    let index = number(raw)
        .and_then(|i| if from_one { Some(i) } else { i.checked_add(1) })
        .ok_or_else(|| format!("{name} is {raw:?}, not a whole number"))?;
    Shard::new(index, total).ok_or_else(|| {
        format!(
            "{name} is {raw:?}: shard {index} of {total} does not exist (counting from {})",
            if from_one { 1 } else { 0 }
        )
    })
}

fn from_ci(var: &dyn Fn(&str) -> Option<String>) -> Result<Shard, String> {
    for (system, index, total, from_one) in CI_VARIABLES {
        let (Some(i), Some(n)) = (var(index), var(total)) else {
            continue;
        };
        let n =
            number(&n).ok_or_else(|| format!("{total} ({system}) is {n:?}, not a whole number"))?;
        return indexed(&i, n, from_one, index);
    }
    Err(format!(
        "none of the CI systems' variables are set ({}): give I/N",
        CI_VARIABLES
            .iter()
            .map(|(_, i, n, _)| format!("{i}/{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn every_run_belongs_to_exactly_one_shard() {
        for total in 1..=7 {
            for run in 1..=50u64 {
                let owners = (1..=total)
                    .filter(|i| Shard { index: *i, total }.owns(run))
                    .count();
                assert_eq!(owners, 1, "run {run} of {total} shards");
            }
        }
        let s = Shard::parse("2/4", &env(&[])).expect("2/4");
        let runs: Vec<u64> = (1..=10).filter(|r| s.owns(*r)).collect();
        assert_eq!(runs, vec![2, 6, 10]);
        assert!(!s.owns(0));
    }

    #[test]
    fn reads_the_index_where_each_system_puts_it() {
        let k8s = Shard::parse("k8s/4", &env(&[("JOB_COMPLETION_INDEX", "0")]));
        assert_eq!(k8s, Ok(Shard { index: 1, total: 4 }));
        let gitlab = Shard::parse(
            "ci",
            &env(&[("CI_NODE_INDEX", "3"), ("CI_NODE_TOTAL", "3")]),
        );
        assert_eq!(gitlab, Ok(Shard { index: 3, total: 3 }));
        let circle = Shard::parse(
            "ci",
            &env(&[("CIRCLE_NODE_INDEX", "3"), ("CIRCLE_NODE_TOTAL", "4")]),
        );
        assert_eq!(circle, Ok(Shard { index: 4, total: 4 }));
        // A pair half set is not that system's.
        let half = Shard::parse(
            "ci",
            &env(&[
                ("CI_NODE_INDEX", "1"),
                ("BUILDKITE_PARALLEL_JOB", "1"),
                ("BUILDKITE_PARALLEL_JOB_COUNT", "2"),
            ]),
        );
        assert_eq!(half, Ok(Shard { index: 2, total: 2 }));
    }

    #[test]
    fn refuses_what_names_no_shard() {
        let none = env(&[]);
        for bad in [
            "", "3", "0/4", "5/4", "1/0", "a/4", "-1/4", "1/1001", "k8s/x",
        ] {
            assert!(Shard::parse(bad, &none).is_err(), "{bad:?}");
        }
        let e = Shard::parse("k8s/4", &none).expect_err("unset");
        assert!(e.contains("JOB_COMPLETION_INDEX"), "{e}");
        let e = Shard::parse("k8s/4", &env(&[("JOB_COMPLETION_INDEX", "4")])).expect_err("past");
        assert!(e.contains("shard 5 of 4"), "{e}");
        let e = Shard::parse("ci", &none).expect_err("unset");
        assert!(
            e.contains("CI_NODE_INDEX/CI_NODE_TOTAL") && e.contains("CIRCLE_NODE_INDEX"),
            "{e}"
        );
        let e = Shard::parse(
            "ci",
            &env(&[("CI_NODE_INDEX", "0"), ("CI_NODE_TOTAL", "2")]),
        )
        .expect_err("GitLab counts from 1");
        assert!(e.contains("counting from 1"), "{e}");
    }
}
