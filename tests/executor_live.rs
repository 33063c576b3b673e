//! The live executor on real threads and the wall clock: deadlines that answer on time while
//! the body runs on (and commits later, on record as late), retries of a transient failure
//! after the seeded pause, at most `max_concurrency` bodies at once, approvals one at a time,
//! and a panicking tool or a failing approver as envelopes. Timing assertions are about order
//! and bounds, never tight figures.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use toolstorm::executor::approval::{ApprovalError, ApprovalRequest, Approver, DenyAll};
use toolstorm::executor::live::{LiveExecutor, Tools};
use toolstorm::executor::{FunctionCall, Limits, Param, ParamType, ToolError, ToolSpec};
use toolstorm::json::Value;
use toolstorm::rule::{FaultKind, RuleSpec};

fn issue_spec() -> ToolSpec {
    ToolSpec::new("get_issue", "Reads an issue").param(Param::new(
        "issue_id",
        ParamType::Integer,
        "The issue",
    ))
}

fn sleep_ms(n: u64) {
    std::thread::sleep(Duration::from_millis(n));
}

/// The lesson's four calls on real threads, scaled down: a store locked on the first read
/// (retried), a quick read, a doc read slower than its deadline that commits when it ends,
/// and an unknown id.
#[test]
fn the_four_call_batch_answers_at_the_deadline_and_the_slow_body_commits_late() {
    let locked_once = Arc::new(AtomicBool::new(true));
    let slow_done = Arc::new(AtomicBool::new(false));
    let tools = {
        let locked_once = Arc::clone(&locked_once);
        let slow_done = Arc::clone(&slow_done);
        Tools::new()
            .tool(issue_spec(), move |args, _| {
                let id = args.get("issue_id").and_then(Value::as_i64).unwrap_or(0);
                sleep_ms(20);
                if id == 41 && locked_once.swap(false, Ordering::SeqCst) {
                    return Err(ToolError::Busy {
                        message: "database is locked".into(),
                    });
                }
                if id == 9999 {
                    return Err(ToolError::NotFound {
                        message: "no issue 9999".into(),
                        hint: None,
                    });
                }
                Ok(toolstorm::obj! {"id" => id})
            })
            .tool(
                ToolSpec::new("get_doc_section", "Reads a doc")
                    .param(Param::new("doc_id", ParamType::String, "The doc"))
                    .timeout(1.0),
                move |_, commit| {
                    sleep_ms(2000);
                    commit("doc_read", "error-codes").map_err(|e| ToolError::Other {
                        message: e.to_string(),
                    })?;
                    slow_done.store(true, Ordering::SeqCst);
                    Ok(Value::from("ORB-1101 LeaseExpired"))
                },
            )
            .shared()
    };
    let mut exec = LiveExecutor::new(Vec::new(), 7, Limits::default()).expect("executor");
    let calls = [
        FunctionCall::new("get_issue", r#"{"issue_id": 41}"#, "call_A"),
        FunctionCall::new("get_issue", r#"{"issue_id": 87}"#, "call_B"),
        FunctionCall::new("get_doc_section", r#"{"doc_id": "error-codes"}"#, "call_C"),
        FunctionCall::new("get_issue", r#"{"issue_id": 9999}"#, "call_D"),
    ];
    let began = Instant::now();
    let batch = exec.run_batch(&tools, &mut DenyAll, &calls);
    let took = began.elapsed();
    // Answered before the slow body ended: the batch did not wait for it.
    assert!(
        !slow_done.load(Ordering::SeqCst),
        "the batch waited for the slow body"
    );
    assert!(took < Duration::from_millis(2000), "{took:?}");
    // At the deadline, give or take the millisecond the executor counts in.
    assert!(
        took >= Duration::from_millis(990),
        "answered before the deadline: {took:?}"
    );
    // Outputs in request order; the log in completion order (B and D, then A after its
    // retry, then C at its deadline).
    assert_eq!(batch.kinds(), ["ok", "ok", "timeout", "permanent"]);
    assert_eq!(batch.output_ids(), ["call_A", "call_B", "call_C", "call_D"]);
    let order: Vec<&str> = batch.log.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(&order[2..], ["call_A", "call_C"], "{order:?}");
    assert_eq!(batch.lanes[0].attempts.len(), 2, "retried once");
    // The retry waited the seeded 200–400 ms pause (a bound, not a figure).
    let a = &batch.lanes[0].attempts;
    assert!(a[1].queued_ms >= a[0].ended_ms + 200, "{a:?}");
    // The doc read was still running when the batch answered.
    let c = &batch.lanes[2].attempts[0];
    assert!(c.late && c.outcome == "running", "{c:?}");
    assert_eq!(exec.report().effects.len(), 0, "no commit yet");
    // Settling waits for the late work, records it, and its commit is in the ledger.
    let settled = exec.settle(Duration::from_secs(5));
    assert!(slow_done.load(Ordering::SeqCst));
    assert_eq!(settled.still_running, Vec::new());
    assert_eq!(settled.late.len(), 1);
    assert_eq!(settled.late[0].call_id, "call_C");
    assert_eq!(settled.late[0].outcome, "ok");
    let report = exec.report();
    assert_eq!(report.effects.len(), 1, "the late commit landed");
    assert_eq!(report.effects[0].name, "doc_read");
    assert_eq!(report.clock, "RealClock");
}

/// The Rust twin of the lesson's bug: bodies run inside `std::thread::scope` cannot be left
/// behind, so such a batch answers when its slowest body ends. Ours answers at the deadline,
/// and `settle` gives up after its grace, naming what still runs.
#[test]
fn a_scoped_batch_waits_for_its_slowest_body_and_ours_does_not() {
    let body = || sleep_ms(600);
    let began = Instant::now();
    std::thread::scope(|s| {
        s.spawn(body);
    });
    let scoped = began.elapsed();
    assert!(
        scoped >= Duration::from_millis(600),
        "the scope joined the body"
    );

    let tools = Tools::new()
        .tool(
            ToolSpec::new("slow", "Takes its time").timeout(0.1),
            move |_, _| {
                sleep_ms(600);
                Ok(Value::Null)
            },
        )
        .shared();
    let mut exec = LiveExecutor::new(Vec::new(), 1, Limits::default()).expect("executor");
    let began = Instant::now();
    let batch = exec.run_batch(
        &tools,
        &mut DenyAll,
        &[FunctionCall::new("slow", "{}", "c1")],
    );
    let ours = began.elapsed();
    assert_eq!(batch.kinds(), ["timeout"]);
    assert!(ours < scoped, "ours {ours:?} vs scoped {scoped:?}");
    // A short grace: the body is still running, and the record says so.
    let settled = exec.settle(Duration::from_millis(50));
    assert_eq!(
        settled.still_running,
        vec![(1, "c1".to_owned(), "slow".to_owned())]
    );
    assert!(settled.late.is_empty());
}

#[test]
fn no_more_than_max_concurrency_bodies_run_at_once() {
    let now = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let tools = {
        let (now, most) = (Arc::clone(&now), Arc::clone(&most));
        Tools::new()
            .tool(ToolSpec::new("work", "Works"), move |_, _| {
                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(n, Ordering::SeqCst);
                sleep_ms(60);
                now.fetch_sub(1, Ordering::SeqCst);
                Ok(Value::Null)
            })
            .shared()
    };
    let limits = Limits {
        max_concurrency: 2,
        ..Limits::default()
    };
    let mut exec = LiveExecutor::new(Vec::new(), 1, limits).expect("executor");
    let calls: Vec<FunctionCall> = (0..6)
        .map(|i| FunctionCall::new("work", "{}", &format!("c{i}")))
        .collect();
    let batch = exec.run_batch(&tools, &mut DenyAll, &calls);
    assert_eq!(batch.kinds(), ["ok"; 6]);
    assert!(
        most.load(Ordering::SeqCst) <= 2,
        "never more than two at once"
    );
    // The later calls waited for a slot.
    assert!(batch.lanes[5].attempts[0].slot_wait_ms() > 0);
}

/// Approves everything, and checks that no two questions are ever open at once.
struct Counting {
    open: Arc<AtomicUsize>,
    most: usize,
    asked: usize,
}

impl Approver for Counting {
    fn decide(&mut self, _: &ApprovalRequest<'_>) -> Result<bool, ApprovalError> {
        let n = self.open.fetch_add(1, Ordering::SeqCst) + 1;
        self.most = self.most.max(n);
        self.asked += 1;
        sleep_ms(20);
        self.open.fetch_sub(1, Ordering::SeqCst);
        Ok(true)
    }
}

fn label_tools(commits: Arc<AtomicUsize>) -> Arc<dyn toolstorm::executor::live::LiveTools> {
    Tools::new()
        .tool(
            ToolSpec::new("add_label", "Labels an issue")
                .param(Param::new("label", ParamType::String, "The label"))
                .side_effect(true),
            move |args, commit| {
                sleep_ms(50);
                let label = args.get("label").and_then(Value::as_str).unwrap_or("");
                commit("label", label).map_err(|e| ToolError::Other {
                    message: e.to_string(),
                })?;
                commits.fetch_add(1, Ordering::SeqCst);
                Ok(Value::Null)
            },
        )
        .shared()
}

#[test]
fn approvals_are_asked_one_at_a_time_while_bodies_run() {
    let commits = Arc::new(AtomicUsize::new(0));
    let tools = label_tools(Arc::clone(&commits));
    let mut approver = Counting {
        open: Arc::new(AtomicUsize::new(0)),
        most: 0,
        asked: 0,
    };
    let mut exec = LiveExecutor::new(Vec::new(), 1, Limits::default()).expect("executor");
    let calls: Vec<FunctionCall> = (0..4)
        .map(|i| {
            FunctionCall::new(
                "add_label",
                &format!(r#"{{"label": "l{i}"}}"#),
                &format!("c{i}"),
            )
        })
        .collect();
    let batch = exec.run_batch(&tools, &mut approver, &calls);
    assert_eq!(batch.kinds(), ["ok"; 4]);
    assert_eq!(approver.asked, 4);
    assert_eq!(approver.most, 1, "never two questions at once");
    assert_eq!(commits.load(Ordering::SeqCst), 4);
}

struct Failing;

impl Approver for Failing {
    fn decide(&mut self, _: &ApprovalRequest<'_>) -> Result<bool, ApprovalError> {
        Err(ApprovalError::NoTerminal)
    }
}

struct Crashing;

impl Approver for Crashing {
    fn decide(&mut self, _: &ApprovalRequest<'_>) -> Result<bool, ApprovalError> {
        panic!("the approver fell over")
    }
}

#[test]
fn a_panicking_tool_and_a_failing_approver_become_envelopes() {
    let commits = Arc::new(AtomicUsize::new(0));
    let tools = label_tools(Arc::clone(&commits));
    let mut exec = LiveExecutor::new(Vec::new(), 1, Limits::default()).expect("executor");
    let call = FunctionCall::new("add_label", r#"{"label": "x"}"#, "c1");
    for approver in [
        &mut DenyAll as &mut dyn Approver,
        &mut Failing,
        &mut Crashing,
    ] {
        let batch = exec.run_batch(&tools, approver, std::slice::from_ref(&call));
        assert_eq!(batch.kinds(), ["denied"]);
        assert_eq!(batch.lanes[0].attempts.len(), 0);
    }
    assert_eq!(commits.load(Ordering::SeqCst), 0, "nothing was approved");

    let tools = Tools::new()
        .tool(ToolSpec::new("boom", "Panics"), |_, _| {
            panic!("the tool fell over")
        })
        .shared();
    let batch = exec.run_batch(
        &tools,
        &mut DenyAll,
        &[FunctionCall::new("boom", "{}", "c2")],
    );
    assert_eq!(batch.kinds(), ["unknown"]);
    let text = batch.outputs[0]
        .as_object()
        .and_then(|o| o.get("output"))
        .and_then(Value::as_str);
    assert!(text.is_some_and(|t| t.contains("crashed")), "{text:?}");
    // Unknown tools and bad arguments never reach a thread.
    let batch = exec.run_batch(
        &tools,
        &mut DenyAll,
        &[
            FunctionCall::new("nope", "{}", "c3"),
            FunctionCall::new("boom", "{not json", "c4"),
        ],
    );
    assert_eq!(batch.kinds(), ["unknown_tool", "bad_args"]);
}

#[test]
fn faults_come_from_the_same_rules_on_the_real_clock() {
    // `unavailable` on the first get_issue is the lesson's `locked_once`: transient, retried.
    let rule = RuleSpec::new("locked-once", "get_issue", FaultKind::Unavailable)
        .calls([1])
        .build()
        .expect("rule");
    let slow = RuleSpec::new("slow", "get_doc", FaultKind::Latency)
        .delay(0.2)
        .build()
        .expect("rule");
    let tools = Tools::new()
        .tool(issue_spec(), |_, _| Ok(Value::from("issue")))
        .tool(ToolSpec::new("get_doc", "Reads a doc"), |_, _| {
            Ok(Value::from("doc"))
        })
        .shared();
    let mut exec = LiveExecutor::new(vec![rule, slow], 7, Limits::default()).expect("executor");
    let began = Instant::now();
    let batch = exec.run_batch(
        &tools,
        &mut DenyAll,
        &[
            FunctionCall::new("get_issue", r#"{"issue_id": 41}"#, "call_A"),
            FunctionCall::new("get_doc", "{}", "call_B"),
        ],
    );
    assert_eq!(batch.kinds(), ["ok", "ok"]);
    assert_eq!(
        batch.lanes[0].attempts.len(),
        2,
        "the injected outage was retried"
    );
    assert_eq!(
        batch.lanes[0].attempts[0].fault.as_deref(),
        Some("locked-once")
    );
    // The injected latency is real time.
    assert!(began.elapsed() >= Duration::from_millis(200));
    let report = exec.report();
    assert_eq!(report.faults_triggered(), 2);
}

/// Tasks go to a tokio runtime.
struct OnTokio(tokio::runtime::Handle);

impl toolstorm::executor::live::Spawn for OnTokio {
    fn spawn(&self, task: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) {
        self.0.spawn(task);
    }
}

/// The other Rust twin of the lesson's bug: a tokio runtime's shutdown waits for the blocking
/// work it started. An async tool of ours on that runtime is answered at its deadline; the
/// runtime goes on serving its task, and the commit lands as late work.
#[test]
fn a_tokio_runtime_waits_for_blocking_work_and_our_async_tool_answers_on_time() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let began = Instant::now();
    runtime.spawn_blocking(|| sleep_ms(400));
    drop(runtime);
    assert!(
        began.elapsed() >= Duration::from_millis(400),
        "dropping the runtime waited for the blocking task"
    );

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let ended = Arc::new(AtomicBool::new(false));
    let tools = {
        let ended = Arc::clone(&ended);
        Tools::new()
            .async_tool(
                ToolSpec::new("fetch", "Fetches").timeout(0.1),
                Arc::new(OnTokio(runtime.handle().clone())),
                move |_, commit| {
                    let ended = Arc::clone(&ended);
                    Box::pin(async move {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        commit.commit("fetched", "page-1");
                        ended.store(true, Ordering::SeqCst);
                        Ok(Value::from("page"))
                    })
                },
            )
            .shared()
    };
    let mut exec = LiveExecutor::new(Vec::new(), 1, Limits::default()).expect("executor");
    let began = Instant::now();
    let batch = exec.run_batch(
        &tools,
        &mut DenyAll,
        &[FunctionCall::new("fetch", "{}", "c1")],
    );
    assert_eq!(batch.kinds(), ["timeout"]);
    assert!(
        !ended.load(Ordering::SeqCst),
        "answered before the task ended"
    );
    assert!(began.elapsed() < Duration::from_millis(500));
    let settled = exec.settle(Duration::from_secs(5));
    assert_eq!(settled.late.len(), 1);
    assert_eq!(settled.late[0].outcome, "ok");
    assert_eq!(exec.report().effects.len(), 1, "the async commit landed");
    // A runtime that is gone drops the task: the call says so instead of waiting for ever.
    let handle = runtime.handle().clone();
    drop(runtime);
    let tools = Tools::new()
        .async_tool(
            ToolSpec::new("fetch", "Fetches"),
            Arc::new(OnTokio(handle)),
            |_, _| Box::pin(async { Ok(Value::from("page")) }),
        )
        .shared();
    let batch = exec.run_batch(
        &tools,
        &mut DenyAll,
        &[FunctionCall::new("fetch", "{}", "c2")],
    );
    assert_ne!(batch.kinds(), ["ok"]);
    let text = batch.outputs[0]
        .as_object()
        .and_then(|o| o.get("output"))
        .and_then(Value::as_str)
        .unwrap_or("");
    assert!(text.contains("dropped the tool's task"), "{text}");
}

/// Every slot held by work that never ends: a call waiting for a slot is answered `timeout`
/// after its own timeout instead of never (the batch never fails as a whole).
#[test]
fn a_call_waiting_for_a_slot_held_by_stuck_work_is_answered() {
    let tools = Tools::new()
        .tool(ToolSpec::new("stuck", "Never ends").timeout(0.1), |_, _| {
            sleep_ms(3000);
            Ok(Value::Null)
        })
        .tool(ToolSpec::new("quick", "Ends").timeout(0.2), |_, _| {
            Ok(Value::Null)
        })
        .shared();
    let limits = Limits {
        max_concurrency: 1,
        ..Limits::default()
    };
    let mut exec = LiveExecutor::new(Vec::new(), 1, limits).expect("executor");
    let began = Instant::now();
    let batch = exec.run_batch(
        &tools,
        &mut DenyAll,
        &[
            FunctionCall::new("stuck", "{}", "c1"),
            FunctionCall::new("quick", "{}", "c2"),
        ],
    );
    assert_eq!(batch.kinds(), ["timeout", "timeout"]);
    assert!(
        began.elapsed() < Duration::from_millis(3000),
        "it did not wait for the stuck body"
    );
    assert!(
        batch.lanes[1].attempts.is_empty(),
        "the quick call never got a slot"
    );
}

/// A call queued behind calls still being served waits for its slot past its own timeout (as
/// in the simulation), and late work of an earlier batch holds its slot in the next one.
#[test]
fn slots_are_shared_fairly_across_calls_and_batches() {
    let tools = Tools::new()
        .tool(ToolSpec::new("work", "Works").timeout(1.0), |_, _| {
            sleep_ms(400);
            Ok(Value::Null)
        })
        .tool(ToolSpec::new("slow", "Slow").timeout(0.1), |_, _| {
            sleep_ms(700);
            Ok(Value::Null)
        })
        .shared();
    let limits = Limits {
        max_concurrency: 1,
        ..Limits::default()
    };
    let mut exec = LiveExecutor::new(Vec::new(), 1, limits).expect("executor");
    // Three 400 ms calls, one slot, 1 s timeouts: the third starts at ~800 ms, after its own
    // timeout of waiting, and still answers ok (its deadline starts with its slot).
    let calls: Vec<FunctionCall> = (0..3)
        .map(|i| FunctionCall::new("work", "{}", &format!("c{i}")))
        .collect();
    let batch = exec.run_batch(&tools, &mut DenyAll, &calls);
    assert_eq!(batch.kinds(), ["ok", "ok", "ok"]);
    // A slow call times out; its body runs on and holds the only slot, so the next batch's
    // call waits for it (not for ever: the body ends at ~700 ms).
    let first = exec.run_batch(
        &tools,
        &mut DenyAll,
        &[FunctionCall::new("slow", "{}", "s1")],
    );
    assert_eq!(first.kinds(), ["timeout"]);
    let next = exec.run_batch(
        &tools,
        &mut DenyAll,
        &[FunctionCall::new("work", "{}", "w1")],
    );
    assert_eq!(next.kinds(), ["ok"]);
    assert!(
        next.lanes[0].attempts[0].slot_wait_ms() > 0,
        "it waited for the late body's slot: {:?}",
        next.lanes[0]
    );
    assert_eq!(
        exec.late().len(),
        1,
        "the slow body was recorded as late work"
    );
}
