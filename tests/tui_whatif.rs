//! "What if, at this call", driven by keys as a user drives it: a campaign of the naive
//! example agent (the official Rust SDK) through the proxy in front of the example server,
//! opened in the explorer; on the failing run's first call `p` offers the faults that fit it,
//! one is picked, and the agent runs again on the same seed with that fault pinned to that
//! call. The new run's own recording is judged, and the comparison shows both.

mod common;
mod keys;

use std::path::{Path, PathBuf};

use crossterm::event::KeyCode;
use toolstorm::document::Document;
use toolstorm::json::{Value, parse};
use toolstorm::tui::app::{App, Mode, Screen};

use keys::{draw, key, press};

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

/// A campaign of seeds 43..44 at probability 0.5 in a fresh folder: its file.
fn campaign(tag: &str) -> PathBuf {
    common::agents::half_campaign(&format!("whatif-{tag}"))
}

fn open(path: &Path) -> App {
    let mut app = App::new(Document::open(path).expect("the campaign opens"));
    // The agent's entry starts the proxy: this program in the explorer, the built binary here.
    app.proxy_bin = Some(PathBuf::from(BIN));
    app
}

#[test]
fn p_pins_a_fault_to_the_selected_call_and_reruns_the_agent() {
    let file = campaign("pin");
    let mut app = open(&file);
    draw(&mut app, 120, 36);
    // Seed 43: the lost acknowledgement fires on the first call, the naive agent retries, and
    // the shipment commits twice.
    press(&mut app, key(KeyCode::Enter));
    assert_eq!(app.tab().label, "campaign run 1");
    assert_eq!(app.cursor, Some(0));
    press(&mut app, key(KeyCode::Char('p')));
    assert!(matches!(app.mode, Mode::PinFault(0)), "{:?}", app.mode);
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(
        screen.contains("what if, at call #1 create_shipment #1?"),
        "{screen}"
    );
    assert!(
        screen.contains("an outage: the server is unavailable"),
        "{screen}"
    );
    // What if the server had been down for that call instead?
    for _ in 0..3 {
        press(&mut app, key(KeyCode::Char('j')));
    }
    press(&mut app, key(KeyCode::Enter));
    // The agent's command is shown first; y starts it.
    press(&mut app, key(KeyCode::Char('y')));
    assert!(!app.agent_running(), "the re-run is over: {}", app.status);
    assert_eq!(app.screen, Screen::Compare, "{}", app.status);
    assert!(app.status.contains("FAIL → PASS"), "{}", app.status);
    assert!(!app.status.contains("no fault fired"), "{}", app.status);
    // The new run is judged from its own recording: the fault is on that call, before it ran,
    // and the agent's retry committed once.
    let new = app.tab().clone();
    assert_eq!(new.label, "what-if: unavailable on create_shipment #1");
    let calls = &new.timeline.report().calls;
    assert_eq!(
        calls[0].fault.as_ref().map(|f| f.to_lossy()).as_deref(),
        Some("what-if")
    );
    assert!(calls[0].injected && !calls[0].executed, "{:?}", calls[0]);
    assert_eq!(new.timeline.report().effects.len(), 1);
    let recording =
        file.with_file_name("mcp-lost-ack.campaign.what-if-43.runs/run-001/recording.json");
    let on_disk = toolstorm::document::open_trace(&recording).expect("the re-run's recording");
    assert_eq!(
        on_disk.cassettes[0].report.calls[0]
            .fault
            .as_ref()
            .map(|f| f.to_lossy())
            .as_deref(),
        Some("what-if")
    );
    // The pinned scenario is a file beside the campaign: one rule on that call.
    let pinned =
        std::fs::read_to_string(file.with_file_name("mcp-lost-ack.campaign.what-if-43.json"))
            .expect("pinned");
    let v = parse(&pinned).expect("json");
    let rules = v
        .as_object()
        .and_then(|o| o.get("rules"))
        .and_then(Value::as_array)
        .expect("rules");
    assert_eq!(rules.len(), 1);
    assert!(toolstorm::json::compact(&rules[0]).contains(r#""calls":[1]"#));
    // The comparison shows both runs.
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(
        screen.contains("Compare · FAIL → PASS · campaign run 1 (seed 43)"),
        "{screen}"
    );
    assert!(screen.contains("✗→✓ No duplicate side effects"), "{screen}");
    // Call by call: the arguments, what each run committed and what its client received.
    let row = |n: &str| -> String {
        let at = screen.find(n).unwrap_or_else(|| panic!("{n} in {screen}"));
        screen[at..].lines().nth(1).unwrap_or_default().to_owned()
    };
    let first = row("~   1 create_shipment#1 error ◆ lost-receipt");
    assert_eq!(
        first
            .matches("1 commit · got a result with isError: true")
            .count(),
        1,
        "the lost acknowledgement committed: {first}"
    );
    assert!(
        first.contains("0 commits · got a result with isError: true"),
        "the outage did not: {first}"
    );
    assert!(
        row("~   2 create_shipment#2 ok")
            .contains(r#"1 commit · got the result · {"order_id":"o-1"}"#),
        "{screen}"
    );
    // Esc returns to the new run.
    press(&mut app, key(KeyCode::Esc));
    assert_eq!(app.screen, Screen::Explore);
    // In the campaign's list of runs the re-run is a row of its own, in the same columns.
    press(&mut app, key(KeyCode::Char('L')));
    let screen = draw(&mut app, 120, 36).backend().to_string();
    let row = screen
        .lines()
        .find(|l| l.contains("re-run"))
        .unwrap_or_else(|| panic!("no re-run row: {screen}"));
    let cols: Vec<&str> = row
        .trim_matches(|c| c == '"' || c == '│')
        .split_whitespace()
        .collect();
    assert_eq!(
        &cols[..8],
        ["▶", "+", "43", "re-run", "1", "1", "0", "-"],
        "{row}"
    );
    assert!(
        row.contains("PASS   what-if: unavailable on create_shipment #1"),
        "{row}"
    );
    // The list closed, `i` on the re-run opens its rules as on a single recording's re-run
    // (it said "this run is not one of the campaign's").
    press(&mut app, key(KeyCode::Esc));
    let rerun = app.run;
    assert_eq!(
        app.tab().label,
        "what-if: unavailable on create_shipment #1"
    );
    press(&mut app, key(KeyCode::Char('i')));
    assert!(app.editor.is_some(), "{}", app.status);
    assert!(
        !app.status.contains("not one of the campaign's"),
        "{}",
        app.status
    );
    assert_eq!(app.run, rerun);
    // Esc closes the editor, and then goes back to the run the re-run came from.
    press(&mut app, key(KeyCode::Esc));
    press(&mut app, key(KeyCode::Esc));
    assert_eq!(app.tab().label, "campaign run 1", "{}", app.status);
    assert!(app.status.contains("back to run 1"), "{}", app.status);
    // Once back, Esc says what it always said.
    press(&mut app, key(KeyCode::Esc));
    assert!(app.status.contains("q quits"), "{}", app.status);
}

#[test]
fn p_says_what_it_needs_on_a_single_recording() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("cassettes/mcp-incident.json");
    let mut app = open(&path);
    draw(&mut app, 120, 36);
    press(&mut app, key(KeyCode::Char('p')));
    assert!(matches!(app.mode, Mode::Browse));
    assert!(
        app.status.contains("does not say how to start its agent")
            && app.status.contains("--agent-cmd"),
        "{}",
        app.status
    );
    // R says the same, and never re-runs the lab on an MCP recording.
    let runs = app.doc.runs.len();
    press(&mut app, key(KeyCode::Char('R')));
    assert_eq!(app.doc.runs.len(), runs, "nothing ran");
    assert!(app.previous.is_none(), "no lab comparison");
    assert!(
        app.status.contains("the lab is not re-run"),
        "{}",
        app.status
    );
    // Nor does the rule editor open on it: there is no agent to re-run with the rules.
    press(&mut app, key(KeyCode::Char('i')));
    assert!(matches!(app.mode, Mode::Browse), "{:?}", app.mode);
    assert!(app.editor.is_none());
    assert!(
        app.status.contains("cannot edit this run's rules") && app.status.contains("--agent-cmd"),
        "{}",
        app.status
    );
}

/// A recording of the naive agent made through `mcp --agent-cmd`, as a user makes one: the
/// agent's own mcpServers file starts the proxy, which records and keeps the agent's command.
fn agent_recording(tag: &str) -> (PathBuf, PathBuf) {
    agent_recording_with(tag, "")
}

fn agent_recording_with(tag: &str, extra: &str) -> (PathBuf, PathBuf) {
    common::agents::agent_recording(&format!("agentcmd-{tag}"), extra)
}

#[test]
fn r_reruns_the_agent_of_a_recording_with_its_scenario_as_edited() {
    let (recording, scenario) = agent_recording("r");
    let sidecar =
        std::fs::read_to_string(recording.with_file_name("rec.mcp.json")).expect("sidecar");
    assert!(sidecar.contains("\"agent\":{\"command\""), "{sidecar}");
    let mut app = open(&recording);
    draw(&mut app, 120, 36);
    // The first run: the acknowledgement of call 1 lost, the naive agent retried, two commits.
    assert_eq!(app.tab().timeline.report().effects.len(), 2);
    // The user moves the lost acknowledgement to the second call, in the scenario file.
    let text = std::fs::read_to_string(&scenario).expect("scenario");
    let edited = text.replacen(
        "\"calls\": [\n        1\n      ]",
        "\"calls\": [\n        2\n      ]",
        1,
    );
    assert_ne!(edited, text, "the rule's calls were found");
    std::fs::write(&scenario, edited).expect("write");
    press(&mut app, key(KeyCode::Char('R')));
    // The agent's command is shown first; y starts it.
    press(&mut app, key(KeyCode::Char('y')));
    assert!(!app.agent_running(), "the re-run is over: {}", app.status);
    assert_eq!(app.screen, Screen::Compare, "{}", app.status);
    assert!(app.status.contains("FAIL → PASS"), "{}", app.status);
    // The moved rule never fired: the agent, unharmed, made no second call.
    assert!(
        app.status
            .contains("no fault fired in the new run (the agent made no call its rules name)"),
        "{}",
        app.status
    );
    let new = app.tab().clone();
    assert_eq!(new.label, "re-run: the rules of mcp-lost-ack.json now");
    // Judged from its own recording: no fault on the first call, one commit, no retry.
    let report = new.timeline.report();
    assert_eq!(report.calls.len(), 1);
    assert!(report.calls[0].fault.is_none());
    assert_eq!(report.effects.len(), 1);
    let own = recording.with_file_name("rec.re-run-42.runs/run-001/recording.json");
    assert!(
        toolstorm::document::open_trace(&own).is_ok(),
        "{}",
        own.display()
    );
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(screen.contains("✗→✓ No duplicate side effects"), "{screen}");
    // One verdict for the title and the status line: the rule on call 2 never fired (the agent
    // made one call), which is the scenario's coverage, not the agent's failure.
    assert!(screen.contains("Compare · FAIL → PASS"), "{screen}");
    assert!(!screen.contains("Fault exercised:"), "{screen}");
    // The comparison's own keys are on its status line once the message has gone.
    app.status.clear();
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(screen.contains("c or Esc back to the run"), "{screen}");
    // And p pins a fault on such a recording too: the timeout on its (now only) call.
    press(&mut app, key(KeyCode::Esc));
    app.cursor = Some(0);
    press(&mut app, key(KeyCode::Char('p')));
    assert!(
        matches!(app.mode, Mode::PinFault(0)),
        "{:?} {}",
        app.mode,
        app.status
    );
}

#[test]
fn a_rerun_whose_agent_made_no_call_is_compared_without_a_call_selected() {
    let (recording, _) = agent_recording("nocall");
    // The agent, started again over HTTP (its run gets a listening proxy, whose recording
    // exists from the start), this time exits before it calls anything.
    let side = recording.with_file_name("rec.mcp.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&side).expect("sidecar")).expect("JSON");
    v["agent"]["command"] = "true".into();
    v["transport"] = serde_json::json!({"client": "streamable-http", "server": "stdio"});
    // And its server named as a command given after `--` (not the scenario's own).
    let server = common::example_server().display().to_string();
    v["server_command"] = serde_json::json!([server]);
    std::fs::write(&side, v.to_string()).expect("sidecar");
    let mut app = open(&recording);
    draw(&mut app, 120, 36);
    press(&mut app, key(KeyCode::Char('R')));
    // The agent's command is shown first; y starts it.
    press(&mut app, key(KeyCode::Char('y')));
    assert!(!app.agent_running(), "the re-run is over: {}", app.status);
    assert_eq!(app.screen, Screen::Compare, "{}", app.status);
    assert_eq!(app.tab().timeline.report().calls.len(), 0, "{}", app.status);
    assert_eq!(app.cursor, None, "no call to select");
    assert!(
        app.status
            .contains("no fault fired in the new run (the agent made no call"),
        "{}",
        app.status
    );
    // Its proxy listened (the options before the server's command, never after it).
    let log = recording.with_file_name("rec.re-run-42.runs/run-001/proxy.log");
    let log = std::fs::read_to_string(&log).expect("the run's proxy log");
    assert!(log.starts_with("listening on http://127.0.0.1:"), "{log}");
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(screen.contains("Compare"), "{screen}");
    // Out of the comparison, on the new run: nothing to select, and stepping is harmless.
    press(&mut app, key(KeyCode::Esc));
    press(&mut app, key(KeyCode::Char('j')));
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(screen.contains("(no calls recorded)"), "{screen}");
    assert!(screen.contains("No call selected."), "{screen}");
}

#[test]
fn an_agent_command_keeps_no_secret_and_r_asks_for_it_again() {
    let (recording, _) = agent_recording_with("secret", " --api-key sk-live-4242");
    let sidecar =
        std::fs::read_to_string(recording.with_file_name("rec.mcp.json")).expect("sidecar");
    assert!(!sidecar.contains("sk-live-4242"), "{sidecar}");
    let (code, out, _) = common::cli(&["inspect", recording.to_str().expect("path")]);
    assert_eq!(code, 0);
    assert!(
        out.contains("agent (R in the explorer starts it again):") && !out.contains("sk-live-4242"),
        "{out}"
    );
    let mut app = open(&recording);
    draw(&mut app, 120, 36);
    let runs = app.doc.runs.len();
    press(&mut app, key(KeyCode::Char('R')));
    assert_eq!(app.doc.runs.len(), runs, "nothing ran");
    assert!(
        app.status.contains("secret redacted") && app.status.contains("environment"),
        "{}",
        app.status
    );
}

#[test]
fn the_rule_editor_edits_an_agent_recordings_scenario_and_r_reruns_the_agent_with_it() {
    let (recording, scenario) = agent_recording("editor");
    let before = std::fs::read_to_string(&scenario).expect("scenario");
    let mut app = open(&recording);
    draw(&mut app, 120, 36);
    // i opens the same editor as the lab's, on the recording's scenario.
    keys::open_editor(&mut app);
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(screen.contains("Rules · mcp-lost-ack"), "{screen}");
    assert!(
        screen.contains("budget 10000 · agent") && !screen.contains("policy"),
        "no policy for an agent: {screen}"
    );
    // The lost acknowledgement moves to the second call: Down to `calls`, Enter, type 2.
    for _ in 0..3 {
        press(&mut app, key(KeyCode::Down));
    }
    press(&mut app, key(KeyCode::Enter));
    keys::enter_text(&mut app, "2");
    assert!(app.status.contains("R re-runs the agent"), "{}", app.status);
    assert_eq!(app.doc.runs.len(), 1, "an edit does not start the agent");
    // Undo and redo do not start it either (nor the lab).
    press(&mut app, key(KeyCode::Char('u')));
    assert!(
        app.status.contains("undo; R re-runs the agent"),
        "{}",
        app.status
    );
    press(&mut app, keys::ctrl('r'));
    assert!(
        app.status.contains("redo; R re-runs the agent"),
        "{}",
        app.status
    );
    assert_eq!(app.doc.runs.len(), 1);
    // The policy key has nothing to cycle for an agent.
    press(&mut app, key(KeyCode::Esc));
    press(&mut app, key(KeyCode::Char('R')));
    // The agent's command is shown first; y starts it.
    press(&mut app, key(KeyCode::Char('y')));
    assert!(!app.agent_running(), "{}", app.status);
    assert_eq!(app.screen, Screen::Compare, "{}", app.status);
    assert!(app.status.contains("FAIL → PASS"), "{}", app.status);
    let report = app.tab().timeline.report().clone();
    assert_eq!(report.calls.len(), 1, "no retry");
    assert!(report.calls[0].fault.is_none(), "call 1 is not faulted now");
    // The edited rules were run from a file of their own; the scenario is unchanged until w.
    let edited = recording.with_file_name("rec.edited-42.json");
    let text = std::fs::read_to_string(&edited).expect("the edited rules");
    assert!(toolstorm::json::compact(&parse(&text).expect("json")).contains(r#""calls":[2]"#));
    assert_eq!(
        std::fs::read_to_string(&scenario).expect("scenario"),
        before
    );
    press(&mut app, key(KeyCode::Char('w')));
    let saved = std::fs::read_to_string(&scenario).expect("scenario");
    assert!(
        toolstorm::json::compact(&parse(&saved).expect("json")).contains(r#""calls":[2]"#),
        "w saves the edited scenario: {saved} ({})",
        app.status
    );
    assert!(
        saved.contains("\"server\""),
        "the scenario keeps its server"
    );
}

#[test]
fn a_rerun_under_way_stops_when_asked_and_says_so() {
    let (recording, scenario) = agent_recording("stop");
    // An agent that takes its time (and prints a line first, as agents do).
    let side = recording.with_file_name("rec.mcp.json");
    let text = std::fs::read_to_string(&side).expect("sidecar");
    let v = parse(&text).expect("json");
    let command = v
        .as_object()
        .and_then(|o| o.get("agent"))
        .and_then(Value::as_object)
        .and_then(|a| a.get("command"))
        .and_then(Value::as_str)
        .expect("the agent's command")
        .to_owned();
    let slow = text.replacen(
        &toolstorm::json::compact(&Value::from(command.as_str())),
        &toolstorm::json::compact(&Value::from("echo thinking; sleep 30")),
        1,
    );
    std::fs::write(&side, slow).expect("write");
    let mut rerun = common::recording_rerun(&recording, &scenario);
    let stop = rerun.stop.clone();
    // What the explorer shows and the user confirms before it starts.
    rerun.launch = toolstorm::tui::whatif::launch_of(&rerun).ok();
    let started = std::time::Instant::now();
    let worker = std::thread::spawn(move || {
        toolstorm::tui::whatif::run_agent(&rerun, 42, &scenario).map(|_| ())
    });
    let log = recording.with_file_name("rec.re-run-42.runs/run-001/agent.log");
    while std::fs::read_to_string(&log).map_or(true, |l| !l.contains("thinking")) {
        assert!(started.elapsed().as_secs() < 20, "the agent never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    stop.stop();
    let result = worker.join().expect("the worker");
    let e = result.expect_err("a stopped run is not compared");
    assert!(
        matches!(&e, toolstorm::agent::RerunError::Stopped(t) if t.starts_with("stopped")),
        "{e}"
    );
    assert!(
        started.elapsed().as_secs() < 20,
        "stopped long before the agent's 30 s: {:?}",
        started.elapsed()
    );
}

#[test]
fn while_the_agent_runs_the_status_line_shows_its_last_line_and_esc_stops_it() {
    let (recording, _) = agent_recording("progress");
    let mut app = open(&recording);
    let log = recording.with_file_name("agent-progress.log");
    std::fs::write(&log, "starting\ncalling create_shipment for o-1\n\n").expect("log");
    let stop = toolstorm::agent::StopFlag::default();
    app.agent_run = Some(toolstorm::tui::app::AgentRunning {
        stop: stop.clone(),
        log,
        started: std::time::Instant::now(),
    });
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(
        screen.contains("agent running 0s · calling create_shipment for o-1 · Esc stops it"),
        "{screen}"
    );
    press(&mut app, key(KeyCode::Esc));
    assert!(stop.stopped(), "Esc asks the run to stop");
}
