//! Campaigns: many lab runs over a grid of configurations, spread over worker threads, with
//! results handed over in grid order (so output is identical run to run, whatever the thread
//! count) as they come, in memory bounded by the number of workers.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, mpsc};

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

/// A parsed grid. Points are computed from their index, so a grid of millions of runs takes
/// no memory beyond its axes.
pub struct Grid {
    /// Scenarios.
    pub scenarios: Vec<Scenario>,
    policies: Vec<Policy>,
    seeds: Vec<i64>,
    probabilities: Vec<f64>,
    budgets: Vec<i64>,
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
        Grid {
            scenarios,
            policies: policies.to_vec(),
            seeds: seeds.to_vec(),
            probabilities: probabilities.to_vec(),
            budgets: budgets.to_vec(),
        }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.scenarios.len()
            * self.policies.len()
            * self.seeds.len()
            * self.probabilities.len()
            * self.budgets.len()
    }

    /// Whether the grid has no point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th point in grid order (`i < len()`).
    pub fn point(&self, i: usize) -> Point {
        let mut rest = i;
        let mut digit = |n: usize| {
            let d = rest % n.max(1);
            rest /= n.max(1);
            d
        };
        let budget = digit(self.budgets.len());
        let probability = digit(self.probabilities.len());
        let seed = digit(self.seeds.len());
        let policy = digit(self.policies.len());
        let scenario = digit(self.scenarios.len());
        Point {
            scenario,
            policy: self.policies[policy],
            config: RunConfig {
                seed: self.seeds[seed],
                probability: Some(self.probabilities[probability]),
                max_calls: self.budgets[budget],
            },
        }
    }

    /// Every point, in grid order.
    pub fn points(&self) -> impl Iterator<Item = Point> + '_ {
        (0..self.len()).map(|i| self.point(i))
    }
}

/// What a campaign keeps of one run.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Report digest.
    pub digest: String,
    /// The contract's verdict, as the reference computes it: every check, `Fault exercised`
    /// among them ([`LabRun::passed`]).
    pub passed: bool,
    /// Whether the policy recovered: every check but `Fault exercised`
    /// ([`LabRun::recovered`]); what the sweep's tables and campaigns count.
    pub recovered: bool,
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
            recovered: r.recovered(),
            calls: r.report.calls.len(),
            effects: r.shipments.len(),
            faults: r.faults(),
            elapsed: r.elapsed(),
        }
    }
}

/// Points a worker takes at a time.
const CHUNK: usize = 64;

/// Chunks a worker may run ahead of the oldest one not yet handed to the sink, per worker:
/// what bounds memory whatever the grid's size.
const AHEAD_PER_WORKER: usize = 4;

/// What a worker keeps of a run: it gets the point's index, the point, and the run or why it
/// could not run.
pub type Keep<'a, T> = dyn Fn(usize, &Point, Result<&LabRun, String>) -> T + Sync + 'a;

/// The number of worker threads to use by default: one per core.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |p| p.get())
}

/// Runs every point on `threads` workers. Each worker turns its runs into what the caller
/// keeps with `map` (index, point, the run or why it failed); `sink` receives them in grid
/// order on the calling thread while later points still run. Memory stays bounded by the
/// number of workers, not by the grid. `progress` hears (done, total) after each chunk.
pub fn stream<T: Send>(
    grid: &Grid,
    threads: usize,
    map: &Keep<'_, T>,
    sink: &mut dyn FnMut(T),
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) {
    let n = grid.len();
    let chunks = n.div_ceil(CHUNK);
    let workers = threads.clamp(1, chunks.max(1));
    let window = workers * AHEAD_PER_WORKER;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    // How many chunks the sink has had; workers wait rather than run too far ahead of it.
    let emitted = (Mutex::new(0usize), Condvar::new());
    let (tx, rx) = mpsc::channel::<(usize, Vec<T>)>();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, done, emitted) = (&next, &done, &emitted);
            scope.spawn(move || {
                loop {
                    let c = next.fetch_add(1, Ordering::Relaxed);
                    if c >= chunks {
                        return;
                    }
                    {
                        let (count, wake) = emitted;
                        let mut count = count.lock().unwrap_or_else(|p| p.into_inner());
                        while c >= *count + window {
                            count = wake.wait(count).unwrap_or_else(|p| p.into_inner());
                        }
                    }
                    let range = c * CHUNK..((c + 1) * CHUNK).min(n);
                    let len = range.len();
                    let out: Vec<T> = range
                        .map(|i| {
                            let p = grid.point(i);
                            let run = super::run(&grid.scenarios[p.scenario], p.policy, &p.config)
                                .map_err(|e| e.to_string());
                            map(i, &p, run.as_ref().map_err(Clone::clone))
                        })
                        .collect();
                    let d = done.fetch_add(len, Ordering::Relaxed) + len;
                    if let Some(f) = progress {
                        f(d, n);
                    }
                    if tx.send((c, out)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let mut waiting: BTreeMap<usize, Vec<T>> = BTreeMap::new();
        let mut expected = 0;
        for (c, out) in rx {
            waiting.insert(c, out);
            let before = expected;
            while let Some(out) = waiting.remove(&expected) {
                for item in out {
                    sink(item);
                }
                expected += 1;
            }
            if expected != before {
                let (count, wake) = &emitted;
                *count.lock().unwrap_or_else(|p| p.into_inner()) = expected;
                wake.notify_all();
            }
        }
    });
}

/// Runs every point on all cores; results come back in grid order (all of them at once: for
/// grids that fit in memory; [`stream`] for any size).
pub fn execute(
    grid: &Grid,
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Result<Vec<Outcome>, String> {
    let mut out = Vec::with_capacity(grid.len());
    stream(
        grid,
        default_threads(),
        &|_, _, run| run.map(Outcome::from),
        &mut |r| out.push(r),
        progress,
    );
    out.into_iter().collect()
}
