//! The bundled Orbit scenarios on the wall clock agree with the simulation: the same kinds,
//! attempts, order of completion and effects, with times within the declared durations (a
//! bound, never a tight figure). And the injection batch writes nothing live either: with the
//! default approver, with an interactive one and no terminal, and with a read-only registry.

use std::path::PathBuf;
use std::time::Duration;

use toolstorm::executor::approval::NoTerminal;
use toolstorm::executor::scenario::{ApproverChoice, ExecutorScenario};
use toolstorm::lab::orbit::run::{OrbitRun, run, run_live};

fn scenario(name: &str) -> ExecutorScenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).expect("read");
    ExecutorScenario::from_text(&text).expect("valid")
}

fn live(s: &ExecutorScenario) -> OrbitRun {
    run_live(s, s.seed, None, &mut NoTerminal, Duration::from_secs(3)).expect("runs live")
}

#[test]
fn every_bundled_orbit_scenario_runs_live_as_it_runs_simulated() {
    for name in ["orbit-parallel", "orbit-injection", "orbit-timeout-commit"] {
        let s = scenario(name);
        let sim = run(&s, s.seed, None).expect("runs");
        let real = live(&s);
        assert_eq!(real.report.clock, "RealClock", "{name}");
        assert_eq!(sim.batches.len(), real.batches.len(), "{name}");
        for (a, b) in sim.batches.iter().zip(&real.batches) {
            assert_eq!(a.kinds(), b.kinds(), "{name}: kinds");
            let order = |r: &toolstorm::executor::BatchResult| -> Vec<String> {
                r.log.iter().map(|l| l.call_id.clone()).collect()
            };
            assert_eq!(order(a), order(b), "{name}: completion order");
            let attempts = |r: &toolstorm::executor::BatchResult| -> Vec<usize> {
                r.lanes.iter().map(|l| l.attempts.len()).collect()
            };
            assert_eq!(attempts(a), attempts(b), "{name}: attempts");
            // Real time is at least the declared time, and not much more.
            let (v, w) = (a.answered_in_ms(), b.answered_in_ms());
            assert!(
                w >= v && w <= v + 1500,
                "{name}: {v} ms simulated, {w} ms live"
            );
            // Late work ended late in both.
            let late = |r: &toolstorm::executor::BatchResult| -> Vec<(String, String)> {
                r.lanes
                    .iter()
                    .flat_map(|l| {
                        l.attempts
                            .iter()
                            .filter(|t| t.late)
                            .map(|t| (l.call_id.clone(), t.outcome.clone()))
                    })
                    .collect()
            };
            assert_eq!(late(a), late(b), "{name}: late work");
        }
        assert_eq!(
            sim.report.effects.len(),
            real.report.effects.len(),
            "{name}: effects"
        );
        assert_eq!(sim.tracker.len(), real.tracker.len(), "{name}: tracker");
    }
}

#[test]
fn the_injection_batch_writes_nothing_live() {
    let base = scenario("orbit-injection");
    let mut interactive = base.clone();
    interactive.approver = ApproverChoice::Interactive;
    let mut read_only = base.clone();
    read_only.read_only = true;
    for (label, s, kind) in [
        ("deny_all", &base, "denied"),
        ("interactive, no terminal", &interactive, "denied"),
        ("read-only registry", &read_only, "unknown_tool"),
    ] {
        let r = live(s);
        assert!(r.tracker.is_empty(), "{label}: {:?}", r.tracker);
        assert_eq!(r.batches[1].kinds(), [kind, kind], "{label}");
        assert!(r.report.effects.is_empty(), "{label}");
    }
}
