//! "What if, at this call", driven by keys as a user drives it: a campaign of the naive
//! example agent (the official Rust SDK) through the proxy in front of the example server,
//! opened in the explorer; on the failing run's first call `p` offers the faults that fit it,
//! one is picked, and the agent runs again on the same seed with that fault pinned to that
//! call. The new run's own recording is judged, and the comparison shows both.

mod common;
mod keys;

use std::path::{Path, PathBuf};
use std::process::Command;

use crossterm::event::KeyCode;
use toolstorm::document::Document;
use toolstorm::json::{Value, parse};
use toolstorm::tui::app::{App, Mode, Screen};

use keys::{draw, key, press};

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

/// A campaign of seeds 43..44 at probability 0.5 in a fresh folder: its file.
fn campaign(tag: &str) -> PathBuf {
    let (dir, _) = common::lost_ack_workspace(&format!("whatif-{tag}"));
    let server = common::example_server();
    let agent = server.with_file_name("mcp_agent");
    let out = Command::new(BIN)
        .args([
            "campaign",
            "mcp-lost-ack.json",
            "--seeds",
            "43..44",
            "--probability",
            "0.5",
            "--",
        ])
        .arg(&agent)
        .args(["--mcp-config", "{mcp_config}"])
        .current_dir(&dir)
        .output()
        .expect("campaign");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("mcp-lost-ack.campaign.json")
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
    assert!(!app.agent_running, "the re-run is over: {}", app.status);
    assert_eq!(app.screen, Screen::Compare, "{}", app.status);
    assert!(app.status.contains("FAIL → PASS"), "{}", app.status);
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
        screen.contains("Compare · campaign run 1 (seed 43)"),
        "{screen}"
    );
    assert!(screen.contains("✗→✓ No duplicate side effects"), "{screen}");
    // Esc returns to the new run.
    press(&mut app, key(KeyCode::Esc));
    assert_eq!(app.screen, Screen::Explore);
}

#[test]
fn p_says_what_it_needs_on_a_single_recording() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("cassettes/mcp-incident.json");
    let mut app = open(&path);
    draw(&mut app, 120, 36);
    press(&mut app, key(KeyCode::Char('p')));
    assert!(matches!(app.mode, Mode::Browse));
    assert!(
        app.status.contains("open a campaign's run"),
        "{}",
        app.status
    );
}
