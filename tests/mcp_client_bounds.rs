//! The executor's MCP client against servers that push its bounds: `tools/list` pages that
//! come slowly (one limit for all of them, not one per page), more tools than it takes, and a
//! server that stops reading while it floods the client with requests (the answers wait in a
//! bounded queue; past it, the client refuses to send rather than queue without end).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use toolstorm::mcp::client::{ClientError, MAX_TOOLS, McpClient};

/// A Python MCP server of a few lines: it answers `initialize`, then runs `then` (Python,
/// with `send(obj)` and `lines` (its input) at hand).
fn server(tag: &str, then: &str) -> Vec<OsString> {
    let dir = std::env::temp_dir().join(format!("toolstorm-client-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path: PathBuf = dir.join("server.py");
    let body = format!(
        r#"import json, sys, time
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
lines = iter(sys.stdin.readline, "")
first = json.loads(next(lines))
send({{"jsonrpc": "2.0", "id": first["id"], "result": {{"protocolVersion": "2025-06-18", "capabilities": {{"tools": {{}}}}, "serverInfo": {{"name": "bounds", "version": "1"}}}}}})
{then}
"#
    );
    std::fs::write(&path, body).expect("write");
    vec!["python3".into(), path.into()]
}

#[test]
fn slow_pages_share_one_limit() {
    // Every page takes 0.3 s and names another: 100 pages would take 30 s.
    let cmd = server(
        "slow",
        r#"for line in lines:
    m = json.loads(line)
    if m.get("method") == "tools/list":
        time.sleep(0.3)
        n = int(m.get("params", {}).get("cursor") or 0)
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [{"name": f"t{n}", "inputSchema": {"type": "object"}}], "nextCursor": str(n + 1)}})"#,
    );
    let client = McpClient::start(&cmd, None, None, Duration::from_secs(10)).expect("starts");
    match client.list_tools(Duration::from_secs(1)) {
        Err(ClientError::NoAnswer { method, .. }) => {
            assert!(method.contains("all its pages"), "{method}")
        }
        other => panic!("expected the limit for all pages to run out: {other:?}"),
    }
}

#[test]
fn more_tools_than_the_client_takes_are_refused() {
    // Twice the bound, in pages of a thousand.
    let cmd = server(
        "many",
        &format!(
            r#"for line in lines:
    m = json.loads(line)
    if m.get("method") == "tools/list":
        n = int(m.get("params", {{}}).get("cursor") or 0)
        tools = [{{"name": f"t{{i}}", "inputSchema": {{"type": "object"}}}} for i in range(n, n + 1000)]
        more = {{"nextCursor": str(n + 1000)}} if n + 1000 < {} else {{}}
        send({{"jsonrpc": "2.0", "id": m["id"], "result": {{"tools": tools, **more}}}})"#,
            2 * MAX_TOOLS
        ),
    );
    let client = McpClient::start(&cmd, None, None, Duration::from_secs(10)).expect("starts");
    match client.list_tools(Duration::from_secs(30)) {
        Err(ClientError::Refused { message, .. }) => {
            assert!(
                message.contains(&format!("more than {MAX_TOOLS} tools")),
                "{message}"
            )
        }
        other => panic!("expected a refusal: {:?}", other.map(|t| t.len())),
    }
}

#[test]
fn a_server_that_floods_without_reading_fills_a_bounded_queue() {
    // After the handshake it reads nothing more and sends requests the client must answer.
    let cmd = server(
        "flood",
        r#"for i in range(200000):
    send({"jsonrpc": "2.0", "id": i, "method": "sampling/createMessage", "params": {"pad": "x" * 64}})
time.sleep(30)"#,
    );
    let client = McpClient::start(&cmd, None, None, Duration::from_secs(10)).expect("starts");
    // Give the flood time to fill what the server does not read.
    let mut refused = None;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        if let Err(ClientError::Refused { message, .. }) =
            client.ask("tools/list", toolstorm::obj! {}, Duration::from_millis(50))
        {
            refused = Some(message);
            break;
        }
    }
    let message = refused.expect("the client stops queueing for a server that reads nothing");
    assert!(message.contains("has not read"), "{message}");
}
