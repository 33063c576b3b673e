//! Campaigns: many lab runs over a grid of configurations, spread over every core, with
//! results returned in grid order (so output is identical run to run).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::scenario::Scenario;
use super::{LabRun, Policy, RunConfig};

/// One point of the grid.
#[derive(Clone, Debug)]
pub struct Point {
    /// Index into the scenario list.
    pub scenario: usize,
    /// Policy.
    pub policy: Policy,
    /// Configuration.
    pub config: RunConfig,
}

/// A parsed grid.
pub struct Grid {
    /// Scenarios.
    pub scenarios: Vec<Scenario>,
    /// Points in grid order (scenario, policy, seed, probability, budget; slowest first).
    pub points: Vec<Point>,
}

impl Grid {
    /// Every combination, in grid order: scenario, policy, seed, probability, budget, each
    /// varying slowest to fastest in that order.
    pub fn cartesian(
        scenarios: Vec<Scenario>,
        policies: &[Policy],
        seeds: &[i64],
        probabilities: &[f64],
        budgets: &[i64],
    ) -> Grid {
        let mut points = Vec::with_capacity(
            scenarios.len() * policies.len() * seeds.len() * probabilities.len() * budgets.len(),
        );
        for s in 0..scenarios.len() {
            for &policy in policies {
                for &seed in seeds {
                    for &p in probabilities {
                        for &max_calls in budgets {
                            let config = RunConfig {
                                seed,
                                probability: Some(p),
                                max_calls,
                            };
                            points.push(Point {
                                scenario: s,
                                policy,
                                config,
                            });
                        }
                    }
                }
            }
        }
        Grid { scenarios, points }
    }
}

/// What a campaign keeps of one run.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Report digest.
    pub digest: String,
    /// Contract verdict.
    pub passed: bool,
    /// Recorded calls.
    pub calls: usize,
    /// Shipments created.
    pub effects: usize,
    /// Faults triggered.
    pub faults: u64,
    /// Virtual seconds (rounded).
    pub elapsed: f64,
}

impl From<&LabRun> for Outcome {
    fn from(r: &LabRun) -> Self {
        Outcome {
            digest: r.digest.clone(),
            passed: r.passed(),
            calls: r.report.calls.len(),
            effects: r.shipments.len(),
            faults: r.faults(),
            elapsed: r.elapsed(),
        }
    }
}

/// Runs every point on all cores; results come back in grid order.
pub fn execute(
    grid: &Grid,
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Result<Vec<Outcome>, String> {
    let n = grid.points.len();
    let workers = std::thread::available_parallelism()
        .map_or(1, |p| p.get())
        .min(n.max(1));
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let chunk = 64;
    let mut slots: Vec<Option<Result<Outcome, String>>> = vec![None; n];
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let start = next.fetch_add(chunk, Ordering::Relaxed);
                        if start >= n {
                            break;
                        }
                        for i in start..(start + chunk).min(n) {
                            let p = &grid.points[i];
                            let r = super::run(&grid.scenarios[p.scenario], p.policy, &p.config)
                                .map(|r| Outcome::from(&r))
                                .map_err(|e| e.to_string());
                            mine.push((i, r));
                        }
                        let d = done.fetch_add((start + chunk).min(n) - start, Ordering::Relaxed);
                        if let Some(f) = progress {
                            f(d + chunk.min(n - start), n);
                        }
                    }
                    mine
                })
            })
            .collect();
        for h in handles {
            if let Ok(results) = h.join() {
                for (i, r) in results {
                    slots[i] = Some(r);
                }
            }
        }
    });
    slots
        .into_iter()
        .map(|s| s.unwrap_or_else(|| Err("a worker stopped".into())))
        .collect()
}
