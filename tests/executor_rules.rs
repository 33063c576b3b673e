//! The executor's rules one by one: every taxonomy kind, approvals (crashing, failing, one at
//! a time), the concurrency limit, retries only for transient errors of idempotent tools, and
//! a tool that panics.

use toolstorm::Error;
use toolstorm::executor::approval::{AllowList, ApprovalError, ApprovalRequest, Approver, DenyAll};
use toolstorm::executor::{
    BatchResult, Executor, FunctionCall, Limits, Param, ParamType, Registry, ToolError, ToolSpec,
    Toolbox,
};
use toolstorm::json::{Object, Value, compact, parse};
use toolstorm::lab::orbit::Orbit;
use toolstorm::obj;
use toolstorm::rule::{FaultKind, Rule, RuleSpec};

fn call(name: &str, args: &str, id: &str) -> FunctionCall {
    FunctionCall::new(name, args, id)
}

fn rule(name: &str, tool: &str, kind: FaultKind, calls: &[i64]) -> Rule {
    RuleSpec::new(name, tool, kind)
        .calls(calls.iter().copied())
        .build()
        .expect("rule")
}

fn batch(
    rules: Vec<Rule>,
    approver: &mut dyn Approver,
    calls: &[FunctionCall],
) -> (BatchResult, Orbit) {
    let mut orbit = Orbit::new().expect("orbit");
    let mut exec = Executor::new(rules, 11, Limits::default()).expect("executor");
    let b = exec.run_batch(&mut orbit, approver, calls);
    (b, orbit)
}

fn message(b: &BatchResult, i: usize) -> String {
    let text = b.outputs[i]
        .as_object()
        .and_then(|o| o.get("output"))
        .and_then(Value::as_str)
        .expect("output");
    let v = parse(text).expect("json");
    compact(&v)
}

fn attempts(b: &BatchResult) -> Vec<u32> {
    b.lanes.iter().map(|l| l.attempts.len() as u32).collect()
}

#[test]
fn each_taxonomy_kind() {
    let mut allow = AllowList {
        tools: vec!["post_comment".into()],
    };
    let calls = [
        call("get_issue", r#"{"issue_id": 87}"#, "ok"),
        call(
            "get_doc_section",
            r#"{"doc_id": "error-codes", "heading": null}"#,
            "timeout",
        ),
        call(
            "post_comment",
            r#"{"issue_id": 87, "body": "Thanks!"}"#,
            "transient",
        ),
        call(
            "add_label",
            r#"{"issue_id": 87, "label": "docs"}"#,
            "denied",
        ),
        call("get_issue", r#"{"issue_id": "87"}"#, "bad_args"),
        call("get_issue", r#"{"issue_id": 9999}"#, "permanent"),
        call("delete_issue", r#"{"issue_id": 87}"#, "unknown_tool"),
    ];
    let rules = vec![
        RuleSpec::new("slow-doc", "get_doc_section", FaultKind::Latency)
            .delay(4.0)
            .build()
            .expect("rule"),
        rule(
            "comment-outage",
            "post_comment",
            FaultKind::Unavailable,
            &[],
        ),
    ];
    let (b, orbit) = batch(rules, &mut allow, &calls);
    let want: Vec<&str> = calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(b.kinds(), want);
    // No attempt for refused calls; no retry for the non-idempotent comment.
    assert_eq!(attempts(&b), [1, 1, 1, 0, 0, 1, 0]);
    assert!(message(&b, 4).contains(r#"argument \"issue_id\" must be integer"#));
    assert!(
        message(&b, 6)
            .contains("available tools: get_issue, get_doc_section, add_label, post_comment")
    );
    assert!(orbit.tracker().actions().is_empty());
    // retryable is true exactly for timeout and transient.
    for (i, kind) in want.iter().enumerate().skip(1) {
        let retryable = matches!(*kind, "timeout" | "transient");
        assert!(
            message(&b, i).contains(&format!(r#""retryable":{retryable}"#)),
            "{kind}"
        );
    }
}

/// A world whose one tool fails the way it is told to.
struct Broken {
    registry: Registry,
}

impl Broken {
    fn new() -> Broken {
        Broken {
            registry: Registry::new([ToolSpec::new("flaky", "Fails as asked.").param(Param::new(
                "how",
                ParamType::String,
                "other, panic, schema or value",
            ))]),
        }
    }
}

impl Toolbox for Broken {
    fn registry(&self) -> &Registry {
        &self.registry
    }
    fn duration(&self, _: &str, _: &Object) -> f64 {
        0.25
    }
    fn run(
        &mut self,
        _: &str,
        args: &Object,
        _: &mut dyn FnMut(&str, &str) -> Result<(), Error>,
    ) -> Result<Value, ToolError> {
        match args.get("how").and_then(Value::as_str) {
            Some("panic") => panic!("the tool fell over"),
            Some("schema") => Err(ToolError::InvalidArguments {
                message: "how: expected one of the listed words".into(),
            }),
            Some("value") => Err(ToolError::InvalidValue {
                message: "how: refused".into(),
                hint: None,
            }),
            _ => Err(ToolError::Other {
                message: "disk on fire".into(),
            }),
        }
    }
}

#[test]
fn unknown_and_crashing_tools_never_sink_the_batch() {
    let mut world = Broken::new();
    let mut exec = Executor::new(Vec::new(), 1, Limits::default()).expect("executor");
    let calls = [
        call("flaky", r#"{"how": "other"}"#, "a"),
        call("flaky", r#"{"how": "panic"}"#, "b"),
        call("flaky", r#"{"how": "schema"}"#, "c"),
        call("flaky", r#"{"how": "value"}"#, "d"),
    ];
    let b = exec.run_batch(&mut world, &mut DenyAll, &calls);
    // A schema error found by the tool is bad_args, not permanent.
    assert_eq!(b.kinds(), ["unknown", "unknown", "bad_args", "permanent"]);
    assert_eq!(b.answered_in_ms(), 250);
    let report = exec.report();
    assert_eq!(report.calls.len(), 4);
    assert!(report.calls.iter().all(|c| c.executed));
    // run_one answers a single call the same way.
    let one = exec.run_one(&mut world, &mut DenyAll, &call("nope", "{}", "z"));
    assert!(compact(&one).contains(r#"\"kind\":\"unknown_tool\""#));
}

struct Crashing;
impl Approver for Crashing {
    fn decide(&mut self, _: &ApprovalRequest<'_>) -> Result<bool, ApprovalError> {
        panic!("approver blew up")
    }
}

struct Failing;
impl Approver for Failing {
    fn decide(&mut self, _: &ApprovalRequest<'_>) -> Result<bool, ApprovalError> {
        Err(ApprovalError::Failed("lost its config".into()))
    }
}

/// Says yes, and checks it is never asked twice at once and is asked in request order.
#[derive(Default)]
struct Recording {
    open: u32,
    most_open: u32,
    asked: Vec<String>,
}
impl Approver for Recording {
    fn decide(&mut self, request: &ApprovalRequest<'_>) -> Result<bool, ApprovalError> {
        self.open += 1;
        self.most_open = self.most_open.max(self.open);
        self.asked.push(request.call_id.to_owned());
        self.open -= 1;
        Ok(true)
    }
}

#[test]
fn crashing_or_failing_approvers_count_as_no() {
    let calls = [
        call("add_label", r#"{"issue_id": 41, "label": "triaged"}"#, "l"),
        call("post_comment", r#"{"issue_id": 41, "body": "On it."}"#, "c"),
    ];
    let (b, orbit) = batch(Vec::new(), &mut Crashing, &calls);
    assert_eq!(b.kinds(), ["denied", "denied"]);
    assert!(message(&b, 0).contains("the approver crashed"));
    assert!(orbit.tracker().actions().is_empty());
    let (b, orbit) = batch(Vec::new(), &mut Failing, &calls);
    assert_eq!(b.kinds(), ["denied", "denied"]);
    assert!(message(&b, 1).contains("lost its config"));
    assert!(orbit.tracker().actions().is_empty());
    assert_eq!(attempts(&b), [0, 0]);

    let mut rec = Recording::default();
    let mut more = calls.to_vec();
    more.push(call("get_issue", r#"{"issue_id": 41}"#, "r"));
    more.push(call(
        "add_label",
        r#"{"issue_id": 87, "label": "triaged"}"#,
        "l2",
    ));
    let (b, orbit) = batch(Vec::new(), &mut rec, &more);
    assert_eq!(b.kinds(), ["ok", "ok", "ok", "ok"]);
    assert_eq!(rec.most_open, 1);
    assert_eq!(rec.asked, ["l", "c", "l2"]);
    assert_eq!(orbit.tracker().actions().len(), 3);
}

#[test]
fn concurrency_limit_runs_eight_calls_in_two_waves() {
    let calls: Vec<FunctionCall> = (1..=8)
        .map(|i| {
            call(
                "get_issue",
                &format!(r#"{{"issue_id": {i}}}"#),
                &format!("c{i}"),
            )
        })
        .collect();
    let (b, _) = batch(Vec::new(), &mut DenyAll, &calls);
    assert_eq!(b.answered_in_ms(), 2000);
    let starts: Vec<u64> = b.lanes.iter().map(|l| l.attempts[0].started_ms).collect();
    assert_eq!(starts, [0, 0, 0, 0, 1000, 1000, 1000, 1000]);
    let waits: Vec<u64> = b
        .lanes
        .iter()
        .map(|l| l.attempts[0].slot_wait_ms())
        .collect();
    assert_eq!(waits, [0, 0, 0, 0, 1000, 1000, 1000, 1000]);
    let ms: Vec<u64> = b.log.iter().map(|r| r.ms).collect();
    assert_eq!(ms, [1000, 1000, 1000, 1000, 2000, 2000, 2000, 2000]);
    let order: Vec<&str> = b.log.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(order, ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"]);
    // The deadline starts with the slot, so waiting does not eat into it.
    assert_eq!(b.lanes[7].deadline_ms, Some(6000));

    // One slot: the same calls one by one take 8 s.
    let mut orbit = Orbit::new().expect("orbit");
    let limits = Limits {
        max_concurrency: 1,
        ..Limits::default()
    };
    let mut exec = Executor::new(Vec::new(), 11, limits).expect("executor");
    let serial = exec.run_batch(&mut orbit, &mut DenyAll, &calls);
    assert_eq!(serial.answered_in_ms(), 8000);
}

#[test]
fn retries_only_transient_errors_of_idempotent_tools() {
    let mut allow = AllowList {
        tools: vec!["add_label".into(), "post_comment".into()],
    };
    let calls = [
        call("get_issue", r#"{"issue_id": 41}"#, "read"),
        call(
            "add_label",
            r#"{"issue_id": 41, "label": "triaged"}"#,
            "label",
        ),
        call(
            "post_comment",
            r#"{"issue_id": 41, "body": "Looking."}"#,
            "comment",
        ),
        call("get_issue", r#"{"issue_id": 9999}"#, "missing"),
    ];
    let rules = vec![
        rule("read-limited", "get_issue", FaultKind::RateLimit, &[1]),
        // The label commits but its acknowledgement is lost: a dropped connection.
        rule("label-lost", "add_label", FaultKind::ResponseLost, &[1]),
        rule("comment-down", "post_comment", FaultKind::Unavailable, &[1]),
    ];
    let (b, orbit) = batch(rules, &mut allow, &calls);
    assert_eq!(b.kinds(), ["ok", "ok", "transient", "permanent"]);
    assert_eq!(attempts(&b), [2, 2, 1, 1]);
    // The retried label found it already set: one commit, no duplicate.
    assert!(message(&b, 1).contains(r#""changed":false"#));
    assert_eq!(orbit.tracker().actions().len(), 1);
    for lane in &b.lanes {
        if let [first, second] = lane.attempts.as_slice() {
            let pause = second.queued_ms - first.ended_ms;
            assert!((200..=400).contains(&pause), "{pause}");
        }
    }

    // With one attempt allowed, nothing is retried.
    let mut orbit = Orbit::new().expect("orbit");
    let limits = Limits {
        max_attempts: 1,
        ..Limits::default()
    };
    let mut exec = Executor::new(
        vec![rule(
            "read-limited",
            "get_issue",
            FaultKind::RateLimit,
            &[1],
        )],
        11,
        limits,
    )
    .expect("executor");
    let b = exec.run_batch(&mut orbit, &mut DenyAll, &calls[..1]);
    assert_eq!(b.kinds(), ["transient"]);

    // An advertised wait longer than the jitter is respected.
    let slow = RuleSpec::new("wait-1s", "get_issue", FaultKind::RateLimit)
        .calls([1])
        .delay(1.0)
        .build()
        .expect("rule");
    let (b, _) = batch(vec![slow], &mut DenyAll, &calls[..1]);
    let a = &b.lanes[0].attempts;
    assert_eq!((a.len(), a[1].queued_ms), (2, 1000));
    assert_eq!(b.answered_in_ms(), 2000);
}

#[test]
fn replaced_results_and_bad_limits() {
    let replace = RuleSpec::new("canned", "get_issue", FaultKind::Replace)
        .replacement(obj! {"issue" => Value::Null})
        .build()
        .expect("rule");
    let (b, _) = batch(
        vec![replace],
        &mut DenyAll,
        &[call("get_issue", r#"{"issue_id": 1}"#, "x")],
    );
    assert_eq!(message(&b, 0), r#"{"ok":true,"data":{"issue":null}}"#);
    assert_eq!(b.answered_in_ms(), 0);
    for limits in [
        Limits {
            max_concurrency: 0,
            ..Limits::default()
        },
        Limits {
            max_attempts: 0,
            ..Limits::default()
        },
        Limits {
            default_timeout: f64::NAN,
            ..Limits::default()
        },
    ] {
        assert!(Executor::new(Vec::new(), 1, limits).is_err());
    }
}
