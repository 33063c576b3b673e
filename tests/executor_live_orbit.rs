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

/// Whether the live log has the simulated log's order, up to ties: runs of live answers less
/// than 50 ms apart hold the same calls as the simulated log at those places.
fn same_order(
    sim: &toolstorm::executor::BatchResult,
    real: &toolstorm::executor::BatchResult,
) -> bool {
    if sim.log.len() != real.log.len() {
        return false;
    }
    let mut k = 0;
    while k < real.log.len() {
        let mut end = k + 1;
        while end < real.log.len() && real.log[end].ms < real.log[k].ms + 50 {
            end += 1;
        }
        let mut want: Vec<&str> = sim.log[k..end].iter().map(|l| l.call_id.as_str()).collect();
        let mut got: Vec<&str> = real.log[k..end]
            .iter()
            .map(|l| l.call_id.as_str())
            .collect();
        want.sort_unstable();
        got.sort_unstable();
        if want != got {
            return false;
        }
        k = end;
    }
    true
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
            // Completion order: calls the wall clock ended within a few milliseconds of each
            // other (B and D) may come in either order; the simulation breaks such ties by
            // request order.
            assert!(
                same_order(a, b),
                "{name}: completion order {:?} vs {:?}",
                a.log,
                b.log
            );
            let attempts = |r: &toolstorm::executor::BatchResult| -> Vec<usize> {
                r.lanes.iter().map(|l| l.attempts.len()).collect()
            };
            assert_eq!(attempts(a), attempts(b), "{name}: attempts");
            // Real time is at least the declared time, and not much more.
            let (v, w) = (a.answered_in_ms(), b.answered_in_ms());
            assert!(
                w + 5 >= v && w <= v + 1500,
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

/// The lesson's read-only SQLite store, made genuinely busy: a writer holds an exclusive lock
/// for a while. The read fails with "database is locked", which is transient; the executor
/// retries after its seeded pause and the read succeeds.
#[test]
fn a_busy_database_is_retried_once_and_the_read_succeeds() {
    use toolstorm::executor::approval::DenyAll;
    use toolstorm::executor::live::{LiveExecutor, LiveTools};
    use toolstorm::executor::{FunctionCall, Limits};
    use toolstorm::lab::orbit::Orbit;
    use toolstorm::lab::orbit::store::{DATABASE, RealOrbit};

    let dir = tempfile::tempdir().expect("dir");
    let world = RealOrbit::new(Orbit::new().expect("orbit"), dir.path()).expect("store");
    let tools: std::sync::Arc<dyn LiveTools> = std::sync::Arc::new(world);
    let writer = rusqlite::Connection::open(dir.path().join(DATABASE)).expect("writer");
    writer.execute_batch("BEGIN EXCLUSIVE;").expect("lock");
    // get_issue takes its declared 1 s, then reads (busy); the retry reads after at least
    // 1.2 s more, when the lock is gone.
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        writer.execute_batch("COMMIT;").expect("unlock");
    });
    let mut exec = LiveExecutor::new(Vec::new(), 7, Limits::default()).expect("executor");
    let batch = exec.run_batch(
        &tools,
        &mut DenyAll,
        &[FunctionCall::new(
            "get_issue",
            r#"{"issue_id": 41}"#,
            "call_A",
        )],
    );
    release.join().expect("writer");
    assert_eq!(batch.kinds(), ["ok"]);
    let attempts = &batch.lanes[0].attempts;
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(attempts[0].outcome, "transient");
    let text = toolstorm::json::compact(&batch.outputs[0]);
    assert!(text.contains("Workers lose their lease"), "{text}");
    // An id the store lacks is the bundled world's permanent answer.
    let batch = exec.run_batch(
        &tools,
        &mut DenyAll,
        &[FunctionCall::new(
            "get_issue",
            r#"{"issue_id": 9999}"#,
            "call_D",
        )],
    );
    assert_eq!(batch.kinds(), ["permanent"]);
}

#[test]
fn other_sql_failures_are_permanent() {
    use toolstorm::lab::orbit::store::IssueStore;
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("empty.sqlite3");
    rusqlite::Connection::open(&path)
        .and_then(|c| c.execute_batch("CREATE TABLE other (x INTEGER);"))
        .expect("db");
    let store = IssueStore::open(&path).expect("opens");
    let err = store.issue(1).expect_err("no issues table");
    assert!(
        matches!(err, toolstorm::executor::ToolError::InvalidValue { .. }),
        "{err:?}"
    );
    // Read-only: the store cannot write even by mistake.
    let ro =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("ro");
    assert!(ro.execute_batch("INSERT INTO other VALUES (1);").is_err());
}

/// Live docs are files in the work folder, read through the allow-list: an edit on disk is
/// what the next read returns, a path trick reads nothing, a deleted doc is permanent.
#[test]
fn live_docs_are_read_from_files_through_the_allow_list() {
    use toolstorm::executor::approval::DenyAll;
    use toolstorm::executor::live::{LiveExecutor, LiveTools};
    use toolstorm::executor::{FunctionCall, Limits};
    use toolstorm::lab::orbit::Orbit;
    use toolstorm::lab::orbit::store::RealOrbit;

    let dir = tempfile::tempdir().expect("dir");
    let world = RealOrbit::new(Orbit::new().expect("orbit"), dir.path()).expect("store");
    let docs = world.docs_dir().to_path_buf();
    assert!(
        docs.join("error-codes.md").is_file(),
        "the docs are written"
    );
    std::fs::write(
        docs.join("triage.md"),
        "# Triage\n\nEdited on disk.\n\n## Labels\n\nUse sev:1 only.\n",
    )
    .expect("edit");
    std::fs::remove_file(docs.join("configuration.md")).expect("delete");
    let tools: std::sync::Arc<dyn LiveTools> = std::sync::Arc::new(world);
    let mut exec = LiveExecutor::new(Vec::new(), 7, Limits::default()).expect("executor");
    let batch = exec.run_batch(
        &tools,
        &mut DenyAll,
        &[
            FunctionCall::new(
                "get_doc_section",
                r#"{"doc_id": "triage", "heading": "Labels"}"#,
                "call_A",
            ),
            FunctionCall::new(
                "get_doc_section",
                r#"{"doc_id": "../orbit-issues.sqlite3", "heading": null}"#,
                "call_B",
            ),
            FunctionCall::new(
                "get_doc_section",
                r#"{"doc_id": "configuration", "heading": null}"#,
                "call_C",
            ),
        ],
    );
    assert_eq!(batch.kinds(), ["ok", "permanent", "permanent"]);
    let text = |i: usize| toolstorm::json::compact(&batch.outputs[i]);
    assert!(text(0).contains("Use sev:1 only."), "{}", text(0));
    assert!(text(1).contains("closest ids"), "{}", text(1));
    assert!(text(2).contains("is missing"), "{}", text(2));
}
