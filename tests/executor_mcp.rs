//! The live executor on an MCP server's tools (the example shipping server, built on the
//! official Rust SDK): the registry from `tools/list`, schema checks before a call goes out,
//! approvals decided by the annotations, parallel calls on one session, outcomes classified,
//! a deadline that sends `notifications/cancelled`, and a server that dies mid-call. Timing
//! assertions are bounds, never tight figures.

mod common;

use std::ffi::OsString;
use std::time::{Duration, Instant};

use toolstorm::executor::approval::{AllowList, DenyAll};
use toolstorm::executor::live::{LiveExecutor, LiveTools};
use toolstorm::executor::{FunctionCall, Limits};
use toolstorm::json::{Value, parse};
use toolstorm::mcp::tools::McpTools;
use toolstorm::rule::{FaultKind, RuleSpec};

/// The shipping server started through `env` (a launcher, as `npx` or `uvx` would be) with
/// these settings.
fn server(settings: &[&str]) -> Vec<OsString> {
    let mut command: Vec<OsString> = vec!["env".into()];
    command.extend(settings.iter().map(OsString::from));
    command.push(common::example_server().into_os_string());
    command
}

fn connect(settings: &[&str], timeouts: &[(String, f64)]) -> McpTools {
    McpTools::connect(&server(settings), None, None, timeouts).expect("the shipping server starts")
}

fn allow_shipments() -> AllowList {
    AllowList {
        tools: vec!["create_shipment".into()],
    }
}

fn envelope(batch: &toolstorm::executor::BatchResult, i: usize) -> Value {
    let out = batch.outputs[i]
        .as_object()
        .and_then(|o| o.get("output"))
        .and_then(Value::as_str)
        .expect("output text");
    parse(out).expect("envelope JSON")
}

/// One approved `create_shipment` of `order` as a batch.
fn ship(
    exec: &mut LiveExecutor,
    tools: &std::sync::Arc<dyn LiveTools>,
    order: &str,
    call_id: &str,
) -> toolstorm::executor::BatchResult {
    let args = format!(r#"{{"order_id": "{order}"}}"#);
    exec.run_batch(
        tools,
        &mut allow_shipments(),
        &[FunctionCall::new("create_shipment", &args, call_id)],
    )
}

#[test]
fn the_registry_comes_from_tools_list_and_its_annotations() {
    let tools = connect(&[], &[("create_shipment".into(), 1.5)]);
    let reg = tools.registry();
    assert_eq!(reg.names(), ["check_inventory", "create_shipment"]);
    let inventory = reg.get("check_inventory").expect("listed");
    assert!(!inventory.side_effect && inventory.idempotent);
    let shipment = reg.get("create_shipment").expect("listed");
    assert!(shipment.side_effect && !shipment.idempotent);
    assert_eq!(shipment.timeout, Some(1.5));
    // The server's own schema is what the model is offered.
    let schema = toolstorm::json::compact(&shipment.parameters_schema());
    assert!(schema.contains("\"order_id\""), "{schema}");
    assert!(!tools.server().name.is_empty());
}

#[test]
fn each_outcome_is_classified() {
    let tools = connect(&["SHIPPING_EFFECTS_META=1"], &[]).shared_for_test();
    let rules = vec![
        RuleSpec::new("ack-lost", "create_shipment", FaultKind::ResponseLost)
            .calls([2])
            .build()
            .expect("rule"),
    ];
    let mut exec = LiveExecutor::new(rules, 7, Limits::default()).expect("executor");
    let first = exec.run_batch(
        &tools,
        &mut allow_shipments(),
        &[
            FunctionCall::new("check_inventory", r#"{"sku": "SKU-1"}"#, "call_A"),
            FunctionCall::new(
                "create_shipment",
                r#"{"order_id": "o-1", "idempotency_key": "k-1"}"#,
                "call_B",
            ),
            FunctionCall::new("create_shipment", r#"{"order_id": 7}"#, "call_C"),
            FunctionCall::new("cancel_order", r#"{"order_id": "o-1"}"#, "call_D"),
        ],
    );
    assert_eq!(first.kinds(), ["ok", "ok", "bad_args", "unknown_tool"]);
    assert_eq!(first.output_ids(), ["call_A", "call_B", "call_C", "call_D"]);
    // The data is the server's structured result.
    let stock = envelope(&first, 0);
    assert_eq!(
        toolstorm::json::compact(stock.as_object().and_then(|o| o.get("data")).expect("data")),
        r#"{"available":42,"sku":"SKU-1"}"#
    );
    let bad = envelope(&first, 2);
    assert!(
        toolstorm::json::compact(&bad).contains("order_id"),
        "the schema problem names the argument: {}",
        toolstorm::json::compact(&bad)
    );
    // The second shipment commits, then its acknowledgement is lost: transient to the model,
    // a commit in the ledger.
    let second = ship(&mut exec, &tools, "o-2", "call_E");
    assert_eq!(second.kinds(), ["transient"]);
    let report = exec.report();
    let keys: Vec<String> = report.effects.iter().map(|e| e.key.to_lossy()).collect();
    assert_eq!(
        keys,
        ["o-1", "o-2"],
        "the server's own effect list is the evidence"
    );
    assert_eq!(report.faults_triggered(), 1);
}

#[test]
fn side_effects_need_approval() {
    let tools = connect(&[], &[]).shared_for_test();
    let mut exec = LiveExecutor::new(Vec::new(), 7, Limits::default()).expect("executor");
    let batch = exec.run_batch(
        &tools,
        &mut DenyAll,
        &[
            FunctionCall::new("create_shipment", r#"{"order_id": "o-1"}"#, "call_A"),
            FunctionCall::new("check_inventory", r#"{"sku": "S"}"#, "call_B"),
        ],
    );
    assert_eq!(batch.kinds(), ["denied", "ok"]);
    assert!(exec.report().effects.is_empty());
}

#[test]
fn calls_of_a_batch_go_out_in_parallel_on_one_session() {
    let tools = connect(&["SHIPPING_DELAY_MS=400"], &[]).shared_for_test();
    let mut exec = LiveExecutor::new(Vec::new(), 7, Limits::default()).expect("executor");
    let calls: Vec<FunctionCall> = (1..=4)
        .map(|n| {
            FunctionCall::new(
                "create_shipment",
                &format!(r#"{{"order_id": "o-{n}"}}"#),
                &format!("call_{n}"),
            )
        })
        .collect();
    let began = Instant::now();
    let batch = exec.run_batch(&tools, &mut allow_shipments(), &calls);
    let took = began.elapsed();
    assert_eq!(batch.kinds(), ["ok", "ok", "ok", "ok"]);
    // One after another they would take 1.6 s.
    assert!(
        took < Duration::from_millis(1600),
        "four 400 ms calls took {took:?}"
    );
    assert_eq!(exec.report().effects.len(), 4);
}

#[test]
fn a_deadline_cancels_the_request_at_the_server() {
    // The server takes 1.5 s; the deadline is 0.3 s. Cancelled, the SDK's server drops the
    // work: no answer comes, even well after 1.5 s, and nothing commits. (Without the
    // cancellation it would answer at 1.5 s and commit.)
    let tools = connect(
        &["SHIPPING_DELAY_MS=1500", "SHIPPING_EFFECTS_META=1"],
        &[("create_shipment".into(), 0.3)],
    )
    .late_wait(Duration::from_millis(2500))
    .shared_for_test();
    let mut exec = LiveExecutor::new(Vec::new(), 7, Limits::default()).expect("executor");
    let began = Instant::now();
    let batch = ship(&mut exec, &tools, "o-1", "call_A");
    let answered = began.elapsed();
    assert_eq!(batch.kinds(), ["timeout"]);
    assert!(
        answered < Duration::from_millis(1500),
        "answered at its deadline, before the server's work: {answered:?}"
    );
    let settled = exec.settle(Duration::from_secs(10));
    assert_eq!(settled.late.len(), 1, "{settled:?}");
    assert_eq!(
        settled.late[0].outcome, "timeout",
        "no answer after the cancel"
    );
    assert!(
        exec.report().effects.is_empty(),
        "the cancelled call committed"
    );
}

#[test]
fn a_server_that_dies_mid_call_is_a_dropped_connection() {
    let tools = connect(&["SHIPPING_CRASH_ON=1"], &[]).shared_for_test();
    let mut exec = LiveExecutor::new(Vec::new(), 7, Limits::default()).expect("executor");
    let batch = ship(&mut exec, &tools, "o-1", "call_A");
    assert_eq!(batch.kinds(), ["transient"]);
    let text = toolstorm::json::compact(&envelope(&batch, 0));
    assert!(text.contains("closed the connection"), "{text}");
    assert!(
        text.contains("crashing on create_shipment"),
        "its last words: {text}"
    );
}

#[test]
fn the_command_line_runs_a_batch_against_the_server() {
    let server = common::example_server();
    let server = server.to_str().expect("utf-8 path");
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/mcp-batch.json");
    let (code, out, err) = common::cli(&[
        "run",
        scenario,
        "--live",
        "--mcp",
        "--",
        "env",
        "SHIPPING_EFFECTS_META=1",
        server,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tools: MCP server"), "{out}");
    assert!(out.contains("(wall clock)"), "{out}");
    for line in common::MCP_BATCH_OUTCOMES {
        assert!(out.contains(line), "{line:?} in\n{out}");
    }
    assert!(out.contains("effects: 2"), "{out}");
}

#[test]
fn bad_command_lines_say_what_is_wrong() {
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/mcp-batch.json");
    let (code, _, err) = common::cli(&["run", scenario, "--live", "--mcp"]);
    assert_ne!(code, 0);
    assert!(err.contains("--mcp needs the server's command"), "{err}");
    let (code, _, err) = common::cli(&[
        "run",
        scenario,
        "--live",
        "--mcp",
        "--",
        "/nonexistent/server",
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("Cannot use the MCP server") && err.contains("/nonexistent/server"),
        "{err}"
    );
    let (code, _, err) = common::cli(&["run", scenario]);
    assert_eq!(
        code, 2,
        "a batch for an MCP server does not run against Orbit"
    );
    assert!(err.contains("--live --mcp -- SERVER"), "{err}");
    let (code, _, err) = common::cli(&["run", scenario, "--", "server"]);
    assert_ne!(code, 0);
    assert!(err.contains("--live --mcp"), "{err}");
}

/// `McpTools` behind the `Arc<dyn LiveTools>` the executor takes.
trait Shared {
    fn shared_for_test(self) -> std::sync::Arc<dyn LiveTools>;
}

impl Shared for McpTools {
    fn shared_for_test(self) -> std::sync::Arc<dyn LiveTools> {
        std::sync::Arc::new(self)
    }
}
