//! The MCP proxy end to end, with a real MCP client and a real MCP server from the official
//! Rust SDK (`rmcp`): the client (this test) starts `toolstorm-tui mcp ...`, which starts the
//! shipping server (`examples/mcp_shipping_server.rs`). Each test asserts what the recording
//! holds — cassette and sidecar — not only exit codes. Raw JSON-RPC lines are used where the
//! SDK would get in the way (malformed lines, a 2026-07-28 request, byte-for-byte relaying).

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceError, ServiceExt, object};
use toolstorm::cassette::Cassette;
use toolstorm::json::{Value, canonical, parse};
use toolstorm::mcp::evidence::Evidence;
use toolstorm::mcp::session::{Delivered, McpSession};
use toolstorm::report::Status;

use common::example_server;
use common::mcp::{
    BIN, INITIALIZE, INITIALIZED, LOST_ACK, TOOLS_LIST, call, check, checked, noted, recording,
    scratch, spawn_piped, text, write,
};

/// Starts the proxy with `args` (then `-- server`) as an MCP server for an rmcp client.
async fn connect(args: &[&str], env: &[(&str, &str)]) -> RunningService<RoleClient, ()> {
    let server = example_server();
    let cmd = tokio::process::Command::new(BIN).configure(|c| {
        c.args(args).arg("--").arg(&server);
        for (k, v) in env {
            c.env(k, v);
        }
    });
    ().serve(TokioChildProcess::new(cmd).expect("spawn"))
        .await
        .expect("initialize through the proxy")
}

/// A client of the proxy injecting `faults` and recording to `cassette`.
async fn proxy_recording(
    faults: &Path,
    cassette: &Path,
    env: &[(&str, &str)],
) -> RunningService<RoleClient, ()> {
    connect(&["mcp", text(faults), "--record", text(cassette)], env).await
}

/// A client of the proxy recording to `cassette`, with no faults.
async fn recording_client(cassette: &Path, env: &[(&str, &str)]) -> RunningService<RoleClient, ()> {
    connect(&["mcp", "--record", text(cassette)], env).await
}

fn ship(order: &str, key: Option<&str>) -> CallToolRequestParams {
    let args = match key {
        Some(k) => object!({"order_id": order, "idempotency_key": k}),
        None => object!({"order_id": order}),
    };
    CallToolRequestParams::new("create_shipment").with_arguments(args)
}

/// An agent that retries a failed write once (with the same idempotency key, if it has one).
async fn agent(client: &RunningService<RoleClient, ()>, key: Option<&str>) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..2 {
        match client.call_tool(ship("o-1", key)).await {
            Ok(r) if r.is_error != Some(true) => {
                let id = r
                    .structured_content
                    .as_ref()
                    .and_then(|s| s.get("shipment_id"))
                    .and_then(|v| v.as_str())
                    .unwrap_or("?")
                    .to_owned();
                seen.push(id);
                break;
            }
            Ok(_) => seen.push("error".into()),
            Err(e) => seen.push(format!("protocol error: {e}")),
        }
    }
    seen
}

#[tokio::test]
async fn a_naive_agent_commits_twice_after_a_lost_ack_and_the_replay_reproduces_it() {
    let faults = write("lost-ack.json", LOST_ACK);
    let incident = scratch("incident.json");
    let client = proxy_recording(&faults, &incident, &[]).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 2);
    let stock = client
        .call_tool(
            CallToolRequestParams::new("check_inventory").with_arguments(object!({"sku": "A1"})),
        )
        .await
        .expect("read");
    assert_ne!(stock.is_error, Some(true));
    let seen = agent(&client, None).await;
    assert_eq!(
        seen,
        ["error", "SHP-0002"],
        "the ack was lost, the retry shipped again"
    );
    client.cancel().await.expect("close");

    let (c, s) = recording(&incident);
    assert_eq!(c.report.calls.len(), 3);
    assert_eq!(c.report.effects.len(), 2, "two commits, both of order o-1");
    assert_eq!(c.report.duplicate_effects(), 1);
    let lost = &c.report.calls[1];
    assert_eq!(
        lost.error.as_ref().map(|e| e.type_name.to_lossy()),
        Some("ResponseLost".into())
    );
    assert!(lost.executed && lost.injected);
    assert_eq!(s.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(
        s.server_info
            .as_object()
            .and_then(|o| o.get("name"))
            .and_then(Value::as_str),
        Some("rmcp")
    );
    let first = s.call(2).expect("record of call 2");
    match &first.delivered {
        Delivered::Result(b) => {
            let text = toolstorm::json::canonical(b);
            assert!(
                text.contains("\"isError\":true") && text.contains("ResponseLost"),
                "{text}"
            );
        }
        other => panic!("the client got {other:?}"),
    }
    assert_eq!(first.effects, [Evidence::Scenario]);
    assert!(
        s.call(1).is_some_and(|r| r.effects.is_empty()),
        "a read commits nothing"
    );
    assert!(s.exchanges.iter().any(|x| x.method == "tools/list"));

    let out = checked(&incident, 1);
    assert!(
        out.contains("✗ No duplicate side effects: 1 duplicate effect(s) across 2 commits"),
        "{out}"
    );
    assert!(
        out.contains("duplicate commit: shipment o-1 by call #3 (scenario evidence), first committed by call #2 (scenario evidence)"),
        "{out}"
    );

    // The recording as a server, the real one absent: the same agent gets the same answers.
    let cmd = tokio::process::Command::new(BIN).configure(|c| {
        c.args(["mcp", "--replay", text(&incident)])
            .stderr(Stdio::piped());
    });
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn replay");
    let replay = ().serve(transport).await.expect("initialize from the recording");
    assert_eq!(replay.list_all_tools().await.expect("tools").len(), 2);
    replay
        .call_tool(
            CallToolRequestParams::new("check_inventory").with_arguments(object!({"sku": "A1"})),
        )
        .await
        .expect("read");
    assert_eq!(agent(&replay, None).await, ["error", "SHP-0002"]);
    replay.cancel().await.expect("close");
    let mut log = String::new();
    if let Some(mut e) = stderr {
        use tokio::io::AsyncReadExt;
        let _ = e.read_to_string(&mut log).await;
    }
    assert!(log.contains("3 of 3 recorded call(s) matched"), "{log}");
}

/// The agent retries a lost acknowledgement with its idempotency key, through the proxy and
/// the example server (started with `env`): the recording and its session facts.
async fn idempotent_retry(name: &str, env: &[(&str, &str)]) -> (Cassette, McpSession) {
    let faults = write("lost-ack-idem.json", LOST_ACK);
    let incident = scratch(name);
    let client = proxy_recording(&faults, &incident, env).await;
    assert_eq!(
        agent(&client, Some("order-o-1")).await,
        ["error", "SHP-0001"]
    );
    client.cancel().await.expect("close");
    checked(&incident, 0);
    recording(&incident)
}

#[tokio::test]
async fn an_agent_that_reuses_its_idempotency_key_commits_once() {
    let (c, s) = idempotent_retry("idempotent.json", &[]).await;
    assert_eq!(c.report.calls.len(), 2);
    assert_eq!(
        c.report.effects.len(),
        1,
        "the retry got the same shipment back"
    );
    assert_eq!(s.call(2).and_then(|r| r.replay_of), Some(1));

    // The server's own word (`_meta`) is the stronger evidence, and agrees.
    let (c, s) = idempotent_retry("idempotent-meta.json", &[("SHIPPING_EFFECTS_META", "1")]).await;
    assert_eq!(c.report.effects.len(), 1);
    assert_eq!(
        s.call(1).map(|r| r.effects.clone()),
        Some(vec![Evidence::Server])
    );
}

#[tokio::test]
async fn two_calls_in_flight_are_each_recorded() {
    let incident = scratch("parallel.json");
    let client = recording_client(&incident, &[("SHIPPING_DELAY_MS", "300")]).await;
    let (a, b) = tokio::join!(
        client.call_tool(ship("o-1", None)),
        client.call_tool(ship("o-2", None))
    );
    let (a, b) = (a.expect("a"), b.expect("b"));
    assert_ne!(a.is_error, Some(true));
    assert_ne!(b.is_error, Some(true));
    client.cancel().await.expect("close");
    let (c, s) = recording(&incident);
    assert_eq!(c.report.calls.len(), 2);
    // Each call's output is the result its client received, and its record's answer holds
    // that same result.
    let shipment = |v: Option<&Value>| {
        v.and_then(Value::as_object)
            .and_then(|o| o.get("structuredContent"))
            .and_then(Value::as_object)
            .and_then(|s| s.get("shipment_id"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let mut received: Vec<String> = [&a, &b]
        .iter()
        .filter_map(|r| r.structured_content.as_ref()?.get("shipment_id")?.as_str())
        .map(str::to_owned)
        .collect();
    let mut recorded: Vec<String> = Vec::new();
    for call in &c.report.calls {
        let record = s.call(call.id).expect("a record per call");
        let Delivered::Result(answer) = &record.delivered else {
            panic!("call #{} delivered {:?}", call.id, record.delivered);
        };
        let answer = answer.as_object().and_then(|o| o.get("result"));
        assert_eq!(
            answer.map(canonical),
            Some(canonical(&call.output)),
            "call #{}",
            call.id
        );
        recorded.extend(shipment(Some(&call.output)));
    }
    received.sort();
    recorded.sort();
    assert_eq!(received.len(), 2, "{a:?} {b:?}");
    assert_eq!(recorded, received);
    let (x, y) = (&c.report.calls[0], &c.report.calls[1]);
    assert!(x.status == Status::Ok && y.status == Status::Ok);
    assert!(
        y.started < x.started + x.elapsed,
        "the calls overlapped: {x:?} {y:?}"
    );
    // No scenario: only the annotations say create_shipment writes — possible commits, not
    // effects, and two different orders are no possible duplicate.
    assert!(c.report.effects.is_empty());
    assert!(
        s.calls
            .iter()
            .all(|r| r.possible.len() == 1 && r.effects.is_empty())
    );
    assert!(s.possible_duplicates().is_empty());
}

#[tokio::test]
async fn a_call_the_client_cancels_is_recorded_with_what_the_server_still_committed() {
    let incident = scratch("cancelled.json");
    let client = recording_client(&incident, &[("SHIPPING_DELAY_MS", "800")]).await;
    let request =
        rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(ship("o-9", None)));
    let handle = client
        .send_request_with_option(
            request,
            PeerRequestOptions::with_timeout(Duration::from_millis(150)),
        )
        .await
        .expect("sent");
    assert!(matches!(
        handle.await_response().await,
        Err(ServiceError::Timeout { .. })
    ));
    // Let the server finish its work while the session is still open.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    client.cancel().await.expect("close");
    let (c, s) = recording(&incident);
    assert_eq!(c.report.calls.len(), 1);
    let call = &c.report.calls[0];
    assert_eq!(call.status, Status::Cancelled, "{call:?}");
    let record = s.call(1).expect("record");
    assert!(noted(record, "cancelled"), "{record:?}");
    // The rmcp server may stop the cancelled call or finish it; either way nothing is lost:
    // a commit it reports is recorded even though the client gave up.
    assert!(c.report.effects.len() <= 1);
}

#[tokio::test]
async fn a_server_that_dies_mid_call_leaves_a_complete_recording() {
    let incident = scratch("crash.json");
    let mut child = spawn_piped(
        Command::new(BIN)
            .args(["mcp", "--record", text(&incident), "--"])
            .arg(example_server())
            .env("SHIPPING_CRASH_ON", "1"),
    );
    let mut stdin = child.stdin.take().expect("stdin");
    let lines = [
        INITIALIZE,
        INITIALIZED,
        &call("2", "create_shipment", r#"{"order_id":"o-1"}"#),
    ];
    for l in lines {
        writeln!(stdin, "{l}").expect("write");
    }
    let out = child.wait_with_output().expect("proxy ends on its own");
    drop(stdin);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the server died under the session"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let answer = stdout
        .lines()
        .find(|l| l.contains("\"id\":2"))
        .expect("call 2 answered");
    assert!(
        answer.contains("\"error\"") && answer.contains("exited"),
        "{answer}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the server exited") && stderr.contains("1 call(s) in flight"),
        "{stderr}"
    );
    assert!(
        stderr.contains("crashing on create_shipment #1"),
        "the server's stderr passes through"
    );
    let (c, s) = recording(&incident);
    assert_eq!(c.report.calls.len(), 1);
    assert_eq!(
        c.report.calls[0]
            .error
            .as_ref()
            .map(|e| e.type_name.to_lossy()),
        Some("ServerExited".into())
    );
    assert!(matches!(
        s.call(1).map(|r| &r.delivered),
        Some(Delivered::Error(_))
    ));
}

/// Runs the proxy (or the server alone) on raw lines; returns stdout and stderr.
fn raw(args: &[&str], with_proxy: bool, lines: &[&str]) -> (Vec<u8>, String) {
    let server = example_server();
    let mut cmd = if with_proxy {
        let mut c = Command::new(BIN);
        c.args(args).arg("--").arg(&server);
        c
    } else {
        Command::new(&server)
    };
    let mut child = spawn_piped(&mut cmd);
    let mut stdin = child.stdin.take().expect("stdin");
    for l in lines {
        writeln!(stdin, "{l}").expect("write");
    }
    // Give the server time to answer everything before the input closes.
    std::thread::sleep(Duration::from_millis(500));
    drop(stdin);
    let out = child.wait_with_output().expect("ends");
    (
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const HANDSHAKE: [&str; 4] = [
    INITIALIZE,
    INITIALIZED,
    TOOLS_LIST,
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_shipment","arguments":{"order_id":"o-1"}}}"#,
];

#[test]
fn with_no_rules_the_client_gets_the_server_s_bytes() {
    let (direct, _) = raw(&[], false, &HANDSHAKE);
    let incident = scratch("transparent.json");
    let (proxied, log) = raw(&["mcp", "--record", text(&incident)], true, &HANDSHAKE);
    assert!(!direct.is_empty());
    // The server answers concurrent requests in its own order; each answer must arrive byte
    // for byte.
    let lines = |b: &[u8]| {
        let mut l: Vec<String> = String::from_utf8_lossy(b)
            .lines()
            .map(str::to_owned)
            .collect();
        l.sort();
        l
    };
    assert_eq!(lines(&proxied), lines(&direct), "{log}");
    assert_eq!(proxied.len(), direct.len());
    let (c, _) = recording(&incident);
    assert_eq!(c.report.calls.len(), 1);
}

#[test]
fn bad_traffic_is_relayed_and_noted_never_fatal() {
    let incident = scratch("malformed.json");
    let mut lines = vec![HANDSHAKE[0], HANDSHAKE[1]];
    lines.extend([
        "this is not json",
        r#"[{"jsonrpc":"2.0","id":9,"method":"ping"}]"#,
        r#"{"jsonrpc":"2.0","id":77,"result":{}}"#,
        HANDSHAKE[3],
    ]);
    let (out, log) = raw(&["mcp", "--record", text(&incident)], true, &lines);
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.lines()
            .any(|l| l.contains("\"id\":3") && l.contains("SHP-0001")),
        "{out}\n{log}"
    );
    assert!(
        log.contains("the client sent a line that is not JSON"),
        "{log}"
    );
    assert!(log.contains("the client sent a JSON array"), "{log}");
    assert!(log.contains("never asked with (77)"), "{log}");
    let (c, _) = recording(&incident);
    assert_eq!(c.report.calls.len(), 1, "the session went on");
}

#[test]
fn a_2026_07_28_request_without_initialize_is_handled() {
    let faults = write(
        "unavailable.json",
        r#"{"schema_version": 1, "world": "mcp", "name": "down", "title": "Down", "seed": 1,
            "rules": [{"name": "down", "tool": "create_*", "kind": "unavailable"}]}"#,
    );
    let incident = scratch("stateless.json");
    let line = r#"{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"create_shipment","arguments":{"order_id":"o-1"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let (out, log) = raw(
        &["mcp", text(&faults), "--record", text(&incident)],
        true,
        &[line],
    );
    let out = String::from_utf8_lossy(&out);
    let answer: Value = parse(out.lines().next().expect("an answer")).expect("json");
    let text = toolstorm::json::canonical(&answer);
    assert!(text.contains("\"id\":\"a-1\""), "{text}");
    assert!(
        text.contains("\"isError\":true") && text.contains("\"resultType\":\"complete\""),
        "{text}\n{log}"
    );
    let (c, s) = recording(&incident);
    assert_eq!(s.protocol_version.as_deref(), Some("2026-07-28"));
    assert!(
        !c.report.calls[0].executed,
        "an outage before execution: the server never saw it"
    );
}

#[test]
fn print_config_gives_an_entry_to_paste() {
    let (code, entry, said) = printed_config(&[]);
    assert_eq!(code, Some(0), "{said}");
    let args = args_of(&entry);
    assert_eq!(args[0], "mcp");
    assert!(
        Path::new(&args[2]).is_absolute() && args[2].ends_with("incident.json"),
        "{args:?}"
    );
    // No `--`: the MCP Inspector would end its own options there.
    assert_eq!(&args[3..], ["python3", "server.py"]);
    assert!(Path::new(common::get_str(&entry, "command")).is_absolute());
}

/// `mcp --print-config shipping --record incident.json EXTRA... -- python3 server.py`: its exit
/// code, the entry it printed (null when none) and all it said.
fn printed_config(extra: &[&str]) -> (Option<i32>, Value, String) {
    let out = Command::new(BIN)
        .args([
            "mcp",
            "--print-config",
            "shipping",
            "--record",
            "incident.json",
        ])
        .args(extra)
        .args(["--", "python3", "server.py"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let entry = parse(&stdout).ok().map_or(Value::Null, |v| {
        common::get(common::get(&v, "mcpServers"), "shipping").clone()
    });
    (
        out.status.code(),
        entry,
        String::from_utf8_lossy(&out.stderr).into_owned() + &stdout,
    )
}

/// An entry's `args`.
fn args_of(entry: &Value) -> Vec<String> {
    common::get_array(entry, "args")
        .iter()
        .map(|a| a.as_str().expect("str").to_owned())
        .collect()
}

#[test]
fn print_config_keeps_the_agents_command_and_refuses_one_holding_a_secret() {
    let (code, entry, said) =
        printed_config(&["--agent-cmd", "python agent.py --mcp-config {mcp_config}"]);
    assert_eq!(code, Some(0), "{said}");
    let args = args_of(&entry);
    let at = args
        .iter()
        .position(|a| a == "--agent-cmd")
        .unwrap_or_else(|| panic!("no --agent-cmd: {args:?}"));
    assert_eq!(args[at + 1], "python agent.py --mcp-config {mcp_config}");
    let secret = "sk-live-abcdefghijklmnop1234";
    let (code, _, said) =
        printed_config(&["--agent-cmd", &format!("python agent.py --token {secret}")]);
    assert_eq!(code, Some(2));
    assert!(said.contains("--agent-cmd"), "{said}");
    assert!(!said.contains(secret));
}

#[test]
fn an_invalid_scenario_stops_before_any_server_starts() {
    let bad = write(
        "bad.json",
        &LOST_ACK.replace("\"response_lost\"", "\"explode\""),
    );
    let marker = scratch("server-started");
    let out = Command::new(BIN)
        .args(["mcp", text(&bad), "--", "touch"])
        .arg(&marker)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Invalid fault rule")
            && err.contains("rules[0].kind")
            && err.contains("bad.json"),
        "{err}"
    );
    assert!(!marker.exists(), "the server never started");
}

#[test]
fn past_the_budget_the_proxy_only_relays_and_says_so_once() {
    let faults = write(
        "budget.json",
        r#"{"schema_version": 1, "world": "mcp", "name": "b", "title": "B", "seed": 1, "max_calls": 2, "rules": []}"#,
    );
    let incident = scratch("budget-rec.json");
    let mut lines = vec![HANDSHAKE[0], HANDSHAKE[1]];
    let calls: Vec<String> = (10..14)
        .map(|i| format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"create_shipment","arguments":{{"order_id":"o-{i}"}}}}}}"#))
        .collect();
    lines.extend(calls.iter().map(String::as_str));
    let (out, log) = raw(
        &["mcp", text(&faults), "--record", text(&incident)],
        true,
        &lines,
    );
    let out = String::from_utf8_lossy(&out);
    for i in 10..14 {
        assert!(
            out.contains(&format!("\"id\":{i},")),
            "call {i} answered: {out}"
        );
    }
    assert_eq!(log.matches("budget (2) is reached").count(), 1, "{log}");
    let (c, s) = recording(&incident);
    assert_eq!(c.report.calls.len(), 2, "only the first two are recorded");
    assert_eq!(
        c.report.budget_rejections, 1,
        "the refusal that stopped recording is counted"
    );
    assert_eq!(s.max_calls, 2);
    let (code, report, _) = check(&incident);
    assert_eq!(code, 1, "2 calls + 1 refused > 2: {report}");
}

#[test]
fn an_oversized_line_is_passed_on_whole_in_both_directions() {
    // `cat` as the "server" echoes every line back: a 9 MB line goes to it and comes back.
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{}"}}}}"#,
        "z".repeat(9_000_000)
    );
    let mut child = spawn_piped(Command::new(BIN).args(["mcp", "--", "cat"]));
    let mut stdin = child.stdin.take().expect("stdin");
    let sent = big.clone();
    let writer = std::thread::spawn(move || {
        writeln!(stdin, "{sent}").expect("write");
        writeln!(stdin, "{INITIALIZED}").expect("write");
    });
    let out = child.wait_with_output().expect("ends");
    writer.join().expect("writer");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "both lines came back, in order");
    assert!(lines[0] == big, "the long line came back byte for byte");
    assert!(lines[1].contains("notifications/initialized"));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("client message over 8 MB") && log.contains("server message over 8 MB"),
        "{log}"
    );
}

#[test]
fn before_resets_the_world_first_its_output_off_the_clients_channel_and_kept_for_reruns() {
    let world = scratch("before-world.log");
    let _ = std::fs::remove_file(&world);
    let incident = scratch("before.json");
    let before = format!(
        "echo NOISE-FROM-BEFORE; echo reset {{seed}} >> {}",
        world.display()
    );
    let (stdout, log) = raw(
        &[
            "mcp",
            "--seed",
            "7",
            "--record",
            text(&incident),
            "--agent-cmd",
            "python3 agent.py --mcp-config {mcp_config}",
            "--before",
            &before,
        ],
        true,
        &HANDSHAKE,
    );
    // Run once, before the server answered anything, with the seed for {seed}.
    assert_eq!(
        std::fs::read_to_string(&world).expect("the world was reset"),
        "reset 7\n"
    );
    // Standard output is the client's: its output went to standard error.
    let answers = String::from_utf8_lossy(&stdout);
    assert!(!answers.contains("NOISE-FROM-BEFORE"), "{answers}");
    assert!(log.contains("NOISE-FROM-BEFORE"), "{log}");
    assert!(
        answers.contains("shipment_id"),
        "the session went on: {answers}"
    );
    // Kept with the agent, so a re-run resets the world first too.
    let side = common::mcp::sidecar(&incident);
    let agent = side.agent.expect("the agent");
    assert_eq!(agent.before.as_deref(), Some(before.as_str()));
    let plan = toolstorm::agent::replan_recording(
        &incident,
        7,
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/mcp-lost-ack.json")
            .as_path(),
        "re-run",
    )
    .expect("a plan");
    assert_eq!(plan.before.as_deref(), Some(before.as_str()));
}

#[test]
fn a_failing_before_starts_nothing() {
    let marker = scratch("before-server-started");
    let _ = std::fs::remove_file(&marker);
    let incident = scratch("before-failed.json");
    let _ = std::fs::remove_file(&incident);
    let out = Command::new(BIN)
        .args([
            "mcp",
            "--record",
            text(&incident),
            "--before",
            "exit 3",
            "--",
            "touch",
        ])
        .arg(&marker)
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--before exit 3 failed (exit status: 3)")
            && err.contains("nothing was started"),
        "{err}"
    );
    assert!(!marker.exists(), "the server never started");
    assert!(!incident.exists(), "no recording");
}

#[test]
fn print_config_keeps_the_world_reset() {
    let (code, entry, said) = printed_config(&["--before", "rm -f orders.db"]);
    assert_eq!(code, Some(0), "{said}");
    let args = args_of(&entry);
    let at = args.iter().position(|a| a == "--before").expect("--before");
    assert_eq!(args[at + 1], "rm -f orders.db");
}

#[test]
fn a_recordings_probability_is_its_plans_and_its_reruns() {
    let incident = scratch("probability.json");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/mcp-lost-ack.json");
    let (_, log) = raw(
        &[
            "mcp",
            text(&scenario),
            "--seed",
            "44",
            "--probability",
            "0.5",
            "--record",
            text(&incident),
            "--agent-cmd",
            "python3 agent.py --mcp-config {mcp_config}",
        ],
        true,
        &HANDSHAKE,
    );
    let side = common::mcp::sidecar(&incident);
    assert_eq!(side.probability, Some(0.5), "{log}");
    // R with the recording's own rules runs them at 0.5, as the session did...
    let plan =
        toolstorm::agent::replan_recording(&incident, 44, &scenario, "re-run").expect("plan");
    assert_eq!(plan.probability, Some(0.5));
    // ...and edited rules say their own probability.
    let edited = scratch("probability-edited.json");
    std::fs::copy(&scenario, &edited).expect("copy");
    let plan = toolstorm::agent::replan_recording(&incident, 44, &edited, "re-run").expect("plan");
    assert_eq!(plan.probability, None);
    // A recording without --probability keeps none.
    let plain = scratch("probability-none.json");
    raw(
        &["mcp", text(&scenario), "--record", text(&plain)],
        true,
        &HANDSHAKE,
    );
    assert_eq!(common::mcp::sidecar(&plain).probability, None);
}
