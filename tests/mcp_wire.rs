//! The wire log of a real session (issue 54 item 8): an rmcp client through `toolstorm-tui
//! mcp --record` to the shipping server, with a lost acknowledgement. The log beside the
//! recording holds every message in order — the handshake, the client's notification, the
//! listing, each `tools/call` with the server's real answer and what the client got instead —
//! with secrets redacted; the document opened on the recording carries it; a killed proxy's
//! log still opens.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::object;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use toolstorm::document::Document;
use toolstorm::mcp::wirelog::read::{Entry, Fate, read};
use toolstorm::mcp::wirelog::{Dir, wire_path};

use common::example_server;
use common::mcp::{BIN, INITIALIZE, INITIALIZED, LOST_ACK, TOOLS_LIST, call, scratch, text, write};

const SECRET: &str = "sk-wire-test-0123456789abcdef";

fn the<'a>(entries: &'a [Entry], dir: Dir, what: &str) -> Vec<&'a Entry> {
    entries
        .iter()
        .filter(|e| e.dir == dir && e.method.as_deref() == Some(what))
        .collect()
}

#[tokio::test]
async fn a_lost_ack_session_is_on_the_wire_log_in_order_with_secrets_redacted() {
    let faults = write("wire-lost-ack.json", LOST_ACK);
    let incident = scratch("wire-incident.json");
    let server = example_server();
    let cmd = tokio::process::Command::new(BIN).configure(|c| {
        c.args(["mcp", text(&faults), "--record", text(&incident), "--"])
            .arg(&server);
    });
    let client =
        ().serve(TokioChildProcess::new(cmd).expect("spawn"))
            .await
            .expect("initialize through the proxy");
    client.list_all_tools().await.expect("tools/list");
    let ship = || {
        CallToolRequestParams::new("create_shipment")
            .with_arguments(object!({"order_id": "o-1", "api_key": SECRET}))
    };
    let first = client.call_tool(ship()).await.expect("an answer");
    assert_eq!(first.is_error, Some(true), "the ack was lost");
    let second = client.call_tool(ship()).await.expect("an answer");
    assert_ne!(second.is_error, Some(true));
    client.cancel().await.expect("close");

    let path = wire_path(&incident);
    let bytes = std::fs::read_to_string(&path).expect("the wire log is beside the recording");
    assert!(!bytes.contains(SECRET), "a secret reached the wire log");
    assert!(bytes.contains("[REDACTED]"));
    let wire = read(&path).expect("reads");
    assert_eq!(wire.skipped, 0);
    let e = &wire.entries;
    // In order, each as the client sent it and as the server got it.
    let methods: Vec<&str> = e
        .iter()
        .filter(|e| e.dir == Dir::FromClient)
        .filter_map(|e| e.method.as_deref())
        .collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "tools/call"
        ]
    );
    for m in ["initialize", "notifications/initialized", "tools/list"] {
        assert_eq!(the(e, Dir::ToServer, m).len(), 1, "{m} relayed");
        assert_eq!(the(e, Dir::ToServer, m)[0].fate, Fate::Relayed);
    }
    assert_eq!(the(e, Dir::ToServer, "tools/call").len(), 2);
    assert!(e.windows(2).all(|w| w[0].ms <= w[1].ms), "in time order");
    // The lost call: the server's real answer (it shipped) held, and the isError result the
    // client got instead made by the proxy.
    let lost_id = the(e, Dir::FromClient, "tools/call")[0].id.clone();
    let answers = |dir: Dir| -> Vec<&Entry> {
        e.iter()
            .filter(|x| x.dir == dir && x.method.is_none() && x.id == lost_id)
            .collect()
    };
    let real = answers(Dir::FromServer);
    assert_eq!(real.len(), 1);
    assert_eq!(real[0].fate, Fate::Held);
    let real_text = toolstorm::json::compact(real[0].message.as_ref().expect("kept"));
    assert!(real_text.contains("SHP-0001"), "{real_text}");
    let got = answers(Dir::ToClient);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].fate, Fate::Made);
    let got_text = toolstorm::json::compact(got[0].message.as_ref().expect("kept"));
    assert!(got_text.contains("\"isError\":true"), "{got_text}");
    assert!(got[0].ms >= real[0].ms);
    // The retry's answer went through unchanged.
    let retry_id = the(e, Dir::FromClient, "tools/call")[1].id.clone();
    let relayed = e
        .iter()
        .filter(|x| x.id == retry_id && x.method.is_none())
        .all(|x| x.fate == Fate::Relayed);
    assert!(relayed);

    // `inspect --json` counts its messages.
    let out = std::process::Command::new(BIN)
        .args(["inspect", "--json", text(&incident)])
        .output()
        .expect("inspect");
    let v = toolstorm::json::parse(String::from_utf8_lossy(&out.stdout).trim()).expect("json");
    let counted = v
        .as_object()
        .and_then(|o| o.get("mcp"))
        .and_then(|m| m.as_object())
        .and_then(|m| m.get("wire_messages"))
        .and_then(toolstorm::json::Value::as_i64);
    assert_eq!(counted, Some(e.len() as i64));
    // The explorer's document carries it.
    let doc = Document::open(&incident).expect("opens");
    assert_eq!(
        doc.runs[0].wire.as_ref().map(|w| w.entries.len()),
        Some(e.len())
    );
}

#[test]
fn a_killed_proxy_leaves_a_wire_log_that_opens() {
    let incident = scratch("wire-killed.json");
    let server = example_server();
    let mut child = std::process::Command::new(BIN)
        .args(["mcp", "--record", text(&incident), "--"])
        .arg(&server)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    for l in [
        INITIALIZE,
        INITIALIZED,
        TOOLS_LIST,
        &call("3", "create_shipment", r#"{"order_id":"o-9"}"#),
    ] {
        writeln!(stdin, "{l}").expect("write");
    }
    // Until the call's answer is out: everything before it is on the log.
    let mut line = String::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !line.contains("\"id\":3") {
        line.clear();
        assert!(std::time::Instant::now() < deadline, "no answer");
        if out.read_line(&mut line).expect("read") == 0 {
            panic!("the proxy ended early");
        }
    }
    // The log's own thread writes a moment after the relay hands the batch over.
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("kill");
    let _ = child.wait();
    // A torn line, as a write cut by the kill would leave.
    let path = wire_path(&incident);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("the log is there");
    f.write_all(b"{\"ms\":12.5,\"dir\":\"proxy>cli")
        .expect("tear");
    drop(f);
    let doc = Document::open(&incident).expect("the killed recording opens");
    let wire = doc.runs[0].wire.clone().expect("with its wire log");
    assert_eq!(wire.skipped, 1, "the torn line is skipped");
    let e = &wire.entries;
    assert!(
        e.iter()
            .any(|x| x.dir == Dir::ToClient && x.id.as_deref() == Some("3")),
        "the answer the client got is on the log: {e:?}"
    );
    assert_eq!(the(e, Dir::ToServer, "initialize").len(), 1);
}
