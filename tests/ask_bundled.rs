//! The records of a real small model bundled in `cassettes/` (Qwen2.5-Coder 1.5B on llama.cpp's
//! server, made by tests/model/real-model.sh): on a fresh clone, with no model, no server and no
//! key, `ask --replay` reproduces each (every round matched, the same calls and ending; the MCP
//! run's tools live through the proxy or from the proxy's recording), and they open in
//! `inspect`, `check` and the explorer.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolstorm::document::Document;
use toolstorm::json::{Value, parse};
use toolstorm::tui::action::Action;
use toolstorm::tui::app::App;
use toolstorm::tui::theme::Theme;

const ORBIT: &str = "cassettes/ask-orbit-qwen.json";
const LOST_ACK: &str = "cassettes/ask-mcp-lost-ack-qwen.json";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The binary, in the repository's folder, with no key and no proxy in its environment and no
/// terminal on its input.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(args)
        .current_dir(root())
        .env_remove("OPENAI_API_KEY")
        .env_remove("TOOLSTORM_MODEL")
        .stdin(Stdio::null())
        .output()
        .expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn read(path: &str) -> Value {
    parse(&std::fs::read_to_string(root().join(path)).expect("bundled")).expect("json")
}

fn field<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.as_object()
        .and_then(|o| o.get(key))
        .unwrap_or_else(|| panic!("no {key}"))
}

/// Each call the record's batches ran, as (tool, kind), in order.
fn recorded_calls(record: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for batch in field(record, "batches").as_array().expect("batches") {
        for lane in field(batch, "lanes").as_array().expect("lanes") {
            out.push((
                field(lane, "name").as_str().expect("name").to_owned(),
                field(lane, "kind").as_str().expect("kind").to_owned(),
            ));
        }
    }
    out
}

/// The calls of an `ask --json` result, as (tool, kind).
fn result_calls(result: &Value) -> Vec<(String, String)> {
    field(result, "calls")
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| {
            (
                field(c, "tool").as_str().expect("tool").to_owned(),
                field(c, "kind").as_str().expect("kind").to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_bundled_orbit_run_replays_offline_as_the_model_ran_it() {
    let record = read(ORBIT);
    let calls = recorded_calls(&record);
    // What the model did: read, then tried to label and comment, denied with no terminal.
    assert_eq!(calls.len(), 5, "{calls:?}");
    assert_eq!(calls[0], ("get_issue".into(), "ok".into()));
    assert!(
        calls[2..].iter().all(|(_, kind)| kind == "denied"),
        "{calls:?}"
    );

    let (code, stdout, stderr) = run(&["ask", "--replay", ORBIT, "--json"]);
    assert_eq!(code, Some(1), "stopped at max_rounds: {stdout}\n{stderr}");
    let result = parse(&stdout).expect("json");
    assert_eq!(result_calls(&result), calls);
    assert_eq!(field(&result, "rounds").as_i64(), Some(5));
    assert_eq!(field(&result, "stopped").as_bool(), Some(true));
    assert!(field(&result, "answer").is_null());
    assert_eq!(
        field(&result, "tokens"),
        &parse(r#"{"input": 5082, "output": 234}"#).expect("json")
    );

    let (code, stdout, stderr) = run(&["ask", "--replay", ORBIT]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("replay: 5 rounds matched {ORBIT}")),
        "{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("(stopped at max_rounds without a final answer)"),
        "{stdout}"
    );
}

#[test]
fn the_bundled_lost_ack_run_replays_through_the_proxy_and_ships_five_times() {
    let record = read(LOST_ACK);
    let calls = recorded_calls(&record);
    assert_eq!(calls[0], ("create_shipment".into(), "permanent".into()));
    assert!(
        calls[1..]
            .iter()
            .all(|c| c == &("create_shipment".into(), "ok".into())),
        "{calls:?}"
    );
    let server = common::example_server();
    let server = server.to_str().expect("utf-8");
    let (code, stdout, stderr) = run(&[
        "ask",
        "--replay",
        LOST_ACK,
        "--approve",
        "yes",
        "--scenario",
        "scenarios/mcp-lost-ack.json",
        "--",
        "env",
        "SHIPPING_EFFECTS_META=1",
        server,
    ]);
    // The scenario's checks judge this run's own proxy recording: the model shipped again
    // after the lost acknowledgement and after every success.
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    for said in [
        "scenario checks: FAIL",
        "✓ Fault exercised: lost-receipt: Triggered 1 time(s)",
        &format!(
            "✗ No duplicate side effects: {} duplicate effect(s) across {} commits",
            calls.len() - 1,
            calls.len()
        ),
        &format!("replay: {} rounds matched {LOST_ACK}", calls.len()),
    ] {
        assert!(stdout.contains(said), "{said}: {stdout}\n{stderr}");
    }
}

#[test]
fn the_bundled_lost_ack_run_replays_with_no_server_from_the_proxys_recording() {
    // The tools answer from the proxy's recording (`mcp --replay`, strict): no server, no model.
    let bin = env!("CARGO_BIN_EXE_toolstorm-tui");
    let (code, stdout, stderr) = run(&[
        "ask",
        "--replay",
        LOST_ACK,
        "--approve",
        "yes",
        "--mcp",
        "--",
        bin,
        "mcp",
        "--replay",
        "cassettes/ask-mcp-lost-ack-qwen.mcp.json",
    ]);
    assert_eq!(code, Some(1), "stopped at max_rounds: {stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("replay: 5 rounds matched {LOST_ACK}")),
        "{stdout}\n{stderr}"
    );
    assert_eq!(
        stdout.matches("create_shipment  ok").count(),
        4,
        "the recorded answers: {stdout}"
    );
    assert!(stdout.contains("create_shipment  permanent"), "{stdout}");
}

#[test]
fn a_records_approvals_run_on_a_live_server_only_with_the_persons_consent() {
    // The lost-ack record says its approver approved every side effect. Replayed against a
    // server named here without --approve yes, nothing starts: the server would have left a
    // mark the moment it ran.
    let dir = common::scratch_dir("ask-consent");
    let mark = dir.join("server-started");
    let _ = std::fs::remove_file(&mark);
    let server = common::example_server();
    let start = format!(
        "touch '{}'; SHIPPING_EFFECTS_META=1 exec '{}'",
        mark.display(),
        server.display()
    );
    let replay = |extra: &[&str]| {
        let mut args = vec!["ask", "--replay", LOST_ACK];
        args.extend_from_slice(extra);
        args.extend([
            "--scenario",
            "scenarios/mcp-lost-ack.json",
            "--",
            "sh",
            "-c",
            &start,
        ]);
        run(&args)
    };
    let (code, stdout, stderr) = replay(&[]);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    for said in [
        LOST_ACK,
        "approves every side effect",
        "runs them again on the MCP server `",
        "-- sh -c touch",
        "not replayed: give --approve yes",
    ] {
        assert!(stderr.contains(said), "{said}: {stderr}");
    }
    assert!(!mark.exists(), "the server was started");
    // --approve says only yes with a replay (the approvals follow the record).
    let (code, _, stderr) = replay(&["--approve", "deny"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("with --replay, approvals follow the record"),
        "{stderr}"
    );
    assert!(!mark.exists(), "the server was started");
    // With consent it runs, and replays as the model ran it.
    let (code, stdout, stderr) = replay(&["--approve", "yes"]);
    assert_eq!(code, Some(1), "stopped at max_rounds: {stdout}\n{stderr}");
    assert!(mark.exists(), "the server ran");
    assert!(
        stdout.contains(&format!("replay: 5 rounds matched {LOST_ACK}")),
        "{stdout}\n{stderr}"
    );
    // A record whose approver approved nothing needs no consent (the Orbit run was made with
    // no terminal: every side effect denied).
    let (code, stdout, stderr) = run(&["ask", "--replay", ORBIT]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
}

#[test]
fn the_bundled_runs_open_in_inspect_check_and_the_explorer() {
    let (code, stdout, stderr) = run(&["inspect", ORBIT]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "ask record: 5 rounds (calls per round: 1, 1, 1, 1, 1) · tokens in/out 5082/234 · \
             stopped at max_rounds without a final answer"
        ),
        "{stdout}"
    );
    // check judges the record and, beside it, the proxy's recording by the scenario's checks.
    let (code, stdout, stderr) = run(&["check", LOST_ACK]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "scenario checks on the proxy's recording cassettes/ask-mcp-lost-ack-qwen.mcp.json: FAIL"
        ),
        "{stdout}"
    );
    for path in [ORBIT, LOST_ACK] {
        let doc = Document::open(&root().join(path)).expect("the explorer opens it");
        let mut app = App::new(doc);
        app.update(Action::Resize(140, 30));
        let mut t = Terminal::new(TestBackend::new(140, 30)).expect("terminal");
        t.draw(|f| app.render_with(f.area(), f.buffer_mut(), &Theme::new(true)))
            .expect("draw");
        let text = t.backend().to_string();
        let header = text.lines().next().expect("header");
        assert!(header.contains("ask · 5 rounds"), "{path}: {header}");
        assert!(header.contains("stopped at max_rounds"), "{path}: {header}");
    }
    // Over MCP, the proxy's recording beside the record opens as its second run: the calls as
    // the server saw them, the lost acknowledgement's fault on the first, five commits.
    let orbit = Document::open(&root().join(ORBIT)).expect("opens");
    assert_eq!(orbit.runs.len(), 1, "no proxy beside an Orbit run");
    let doc = Document::open(&root().join(LOST_ACK)).expect("opens");
    let labels: Vec<&str> = doc.runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "the model's calls (ask)",
            "the proxy's recording (ask-mcp-lost-ack-qwen.mcp.json)"
        ]
    );
    let proxy = doc.runs[1].timeline.report();
    assert_eq!(proxy.calls.len(), 5);
    assert!(proxy.calls[0].injected, "the lost acknowledgement");
    assert_eq!(proxy.effects.len(), 5, "every call committed");
    assert!(doc.runs[1].mcp.is_some() && doc.runs[1].ask.is_none());
}
