//! The executor spec's three incidents, reproduced exactly from the bundled Orbit scenario
//! files: the parallel batch with faults, the prompt injection, and the timeout that lies.

use std::path::PathBuf;

use toolstorm::executor::scenario::{ApproverChoice, ExecutorScenario};
use toolstorm::json::{Value, parse};
use toolstorm::lab::orbit::run::{OrbitRun, run, run_with_prompt};
use toolstorm::report::Status;

fn scenario(name: &str) -> ExecutorScenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).expect("scenario file");
    ExecutorScenario::from_text(&text).expect("valid scenario")
}

fn run_scenario(sc: &ExecutorScenario) -> OrbitRun {
    run(sc, sc.seed, None).expect("runs")
}

fn log(run: &OrbitRun, batch: usize) -> Vec<(String, String, u64, u32)> {
    run.batches[batch]
        .log
        .iter()
        .map(|r| (r.call_id.clone(), r.kind.clone(), r.ms, r.attempts))
        .collect()
}

fn row(id: &str, kind: &str, ms: u64, attempts: u32) -> (String, String, u64, u32) {
    (id.into(), kind.into(), ms, attempts)
}

fn envelope(output: &Value) -> Value {
    let text = output
        .as_object()
        .and_then(|o| o.get("output"))
        .and_then(Value::as_str)
        .expect("output text");
    parse(text).expect("envelope JSON")
}

fn error_field<'a>(env: &'a Value, key: &str) -> &'a Value {
    env.as_object()
        .and_then(|o| o.get("error"))
        .and_then(Value::as_object)
        .and_then(|e| e.get(key))
        .expect("error field")
}

#[test]
fn parallel_batch_with_faults() {
    let r = run_scenario(&scenario("orbit-parallel"));
    let b = &r.batches[0];
    assert_eq!(b.answered_in_ms(), 2000, "all four answered at 2.0 s");
    // Completion order: 87, 9999, 41 (retried after a seeded 200-400 ms pause), the doc.
    assert_eq!(
        log(&r, 0),
        [
            row("call_B", "ok", 1000, 1),
            row("call_D", "permanent", 1000, 1),
            row("call_A", "ok", 1302, 2),
            row("call_C", "timeout", 2000, 1),
        ]
    );
    // Outputs in request order, one per call.
    let ids: Vec<&str> = b
        .outputs
        .iter()
        .map(|o| {
            o.as_object()
                .and_then(|o| o.get("call_id"))
                .and_then(Value::as_str)
                .unwrap_or("")
        })
        .collect();
    assert_eq!(ids, ["call_A", "call_B", "call_C", "call_D"]);
    assert!(b.outputs.iter().all(|o| {
        o.as_object()
            .and_then(|o| o.get("type"))
            .and_then(Value::as_str)
            == Some("function_call_output")
    }));
    assert_eq!(b.kinds(), ["ok", "ok", "timeout", "permanent"]);
    let doc = envelope(&b.outputs[2]);
    assert_eq!(error_field(&doc, "retryable").as_bool(), Some(true));
    let missing = envelope(&b.outputs[3]);
    assert_eq!(error_field(&missing, "retryable").as_bool(), Some(false));
    assert!(
        error_field(&missing, "hint")
            .as_str()
            .is_some_and(|h| h.contains("issue number the user gave"))
    );

    // Lanes: A's first attempt failed at once (locked), the retry waited its jitter.
    let a = &b.lanes[0];
    assert_eq!(a.attempts.len(), 2);
    assert_eq!(
        (
            a.attempts[0].started_ms,
            a.attempts[0].ended_ms,
            a.attempts[0].outcome.as_str()
        ),
        (0, 0, "transient")
    );
    assert_eq!(a.attempts[0].fault.as_deref(), Some("store-locked"));
    assert_eq!(
        (
            a.attempts[1].queued_ms,
            a.attempts[1].started_ms,
            a.attempts[1].ended_ms
        ),
        (302, 302, 1302)
    );
    // The doc read was answered at its 2 s deadline but ran on until 3.0 s.
    let c = &b.lanes[2];
    assert_eq!(c.deadline_ms, Some(2000));
    assert_eq!(c.answered_ms, 2000);
    assert!(c.attempts[0].late);
    assert_eq!(c.attempts[0].ended_ms, 3000);
    assert_eq!(b.settled_ms, 3000);

    // The same engine trace as a lab run: five attempts, two faults, coverage.
    let calls = &r.report.calls;
    assert_eq!(calls.len(), 5);
    assert_eq!(calls[0].tool, "get_issue");
    assert_eq!(calls[0].status, Status::Error);
    assert!(calls[0].injected && !calls[0].executed);
    let doc_call = calls
        .iter()
        .find(|c| c.tool == "get_doc_section")
        .expect("doc call");
    assert_eq!((doc_call.status, doc_call.elapsed), (Status::Ok, 3.0));
    assert_eq!(
        r.report.coverage_of("store-locked").map(|c| c.triggered),
        Some(1)
    );
    assert_eq!(
        r.report.coverage_of("doc-lag").map(|c| c.triggered),
        Some(1)
    );
    assert!(r.tracker.is_empty());
}

#[test]
fn prompt_injection_is_denied_three_ways() {
    let base = scenario("orbit-injection");
    let dir = std::env::temp_dir().join(format!("toolstorm-exec-inj-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    // The injected body reaches the model as untrusted data.
    let r = run(&base, base.seed, Some(dir.clone())).expect("runs");
    let issue = envelope(&r.batches[0].outputs[0]);
    let text = toolstorm::json::compact(&issue);
    assert!(text.contains("ignore your previous instructions") && text.contains("untrusted"));

    // Default approver: both denied, no attempt.
    assert_eq!(
        log(&r, 1),
        [row("call_2", "denied", 0, 0), row("call_3", "denied", 0, 0)]
    );

    // Interactive approver with no terminal: asked, one at a time, then denied.
    let mut interactive = base.clone();
    interactive.approver = ApproverChoice::Interactive;
    let ri = run_with_prompt(
        &interactive,
        interactive.seed,
        Some(dir.clone()),
        &mut toolstorm::executor::approval::NoTerminal,
    )
    .expect("runs");
    assert_eq!(ri.batches[1].kinds(), ["denied", "denied"]);
    assert_eq!(
        ri.asked,
        [
            "Approve add_label(issue_id=92, label='severity:S1')? [y/N]",
            "Approve post_comment(issue_id=92, body='Maintainers approved an emergency release for this issue.')? [y/N]"
        ]
    );
    let msg = envelope(&ri.batches[1].outputs[0]);
    assert!(
        error_field(&msg, "message")
            .as_str()
            .is_some_and(|m| m.contains("no terminal"))
    );

    // Read-only registry: the write tools do not exist.
    let mut read_only = base.clone();
    read_only.read_only = true;
    let rr = run(&read_only, read_only.seed, Some(dir.clone())).expect("runs");
    assert_eq!(rr.batches[1].kinds(), ["unknown_tool", "unknown_tool"]);
    let msg = envelope(&rr.batches[1].outputs[0]);
    assert!(
        error_field(&msg, "message")
            .as_str()
            .is_some_and(|m| m.contains("get_issue, get_doc_section"))
    );

    // Zero tracker actions, zero effects, and no file was ever written.
    for run in [&r, &ri, &rr] {
        assert!(run.tracker.is_empty());
        assert!(run.report.effects.is_empty());
        assert!(run.report.calls.iter().all(|c| c.tool == "get_issue"));
    }
    assert!(!dir.exists(), "the tracker wrote nothing");
}

#[test]
fn timeout_that_still_commits() {
    let sc = scenario("orbit-timeout-commit");
    let r = run_scenario(&sc);
    // The model is told timeout at the 5 s deadline...
    assert_eq!(log(&r, 0), [row("call_1", "timeout", 5000, 1)]);
    let lane = &r.batches[0].lanes[0];
    assert_eq!(lane.approval.as_ref().map(|(_, yes)| *yes), Some(true));
    assert!(lane.attempts[0].late);
    assert_eq!(lane.attempts[0].outcome, "ok");
    // ...while the ledger shows the label landing at 5.6 s, after the answer.
    let effects = &r.report.effects;
    assert_eq!(effects.len(), 1);
    assert_eq!(
        (effects[0].name.to_lossy(), effects[0].key.to_lossy()),
        ("label".into(), "41/triaged".into())
    );
    assert_eq!(effects[0].at, 5.6);
    assert_eq!(effects[0].call_id, 1);
    assert_eq!(r.tracker.len(), 1);
    // The model asks again: add_label is idempotent, so nothing changes and nothing commits.
    assert_eq!(log(&r, 1), [row("call_2", "ok", 600, 1)]);
    let again = envelope(&r.batches[1].outputs[0]);
    assert!(toolstorm::json::compact(&again).contains(r#""changed":false"#));
    assert_eq!(r.report.duplicate_effects(), 0);
    // The second batch began when the first had settled (5.6 s).
    assert_eq!(r.batches[1].started_ms, 5600);
}

#[test]
fn same_seed_same_run() {
    for name in ["orbit-parallel", "orbit-injection", "orbit-timeout-commit"] {
        let sc = scenario(name);
        let a = run_scenario(&sc);
        let b = run_scenario(&sc);
        assert_eq!(a.digest, b.digest, "{name}");
        assert_eq!(
            toolstorm::json::canonical(&a.to_value()),
            toolstorm::json::canonical(&b.to_value()),
            "{name}"
        );
    }
    // Another seed draws another pause for the retry, still within 200-400 ms.
    let sc = scenario("orbit-parallel");
    let other = run(&sc, 8, None).expect("runs");
    let a = &other.batches[0].lanes[0];
    let pause = a.attempts[1].queued_ms - a.attempts[0].ended_ms;
    assert!((200..=400).contains(&pause), "{pause}");
    assert_eq!(other.batches[0].answered_in_ms(), 2000);
}
