//! A re-run is the run's own plan, in a folder of its own: a campaign of the naive example
//! agent at `--probability 0.5`, opened in the explorer; `R` on seed 44's run (which passed at
//! 0.5) runs it again at 0.5 — as `campaign --rerun 44` does — and the rule editor (`i`)
//! shows 0.5; two re-runs of one seed (the explorer's, the CLI's) each keep their recording
//! and `agent.log`, numbered `run-001`, `run-002` as a campaign's runs are.

mod common;
mod keys;

use std::path::{Path, PathBuf};
use std::process::Command;

use crossterm::event::KeyCode;
use toolstorm::document::Document;
use toolstorm::tui::app::{App, Mode, Screen};

use keys::{draw, key, press};

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

/// A campaign of seeds 43..44 at probability 0.5 in a fresh folder: its file.
fn campaign(tag: &str) -> PathBuf {
    common::agents::half_campaign(&format!("plan-{tag}"))
}

fn open(path: &Path) -> App {
    let mut app = App::new(Document::open(path).expect("the campaign opens"));
    app.proxy_bin = Some(PathBuf::from(BIN));
    app
}

/// From anywhere, the campaign's run `row` (0-based) through the list of runs.
fn open_run(app: &mut App, row: usize) {
    if !matches!(app.mode, Mode::Runs(_)) {
        press(app, key(KeyCode::Char('L')));
    }
    for _ in 0..app.doc.runs.len() {
        press(app, key(KeyCode::Char('k')));
    }
    for _ in 0..row {
        press(app, key(KeyCode::Char('j')));
    }
    press(app, key(KeyCode::Enter));
    assert_eq!(app.run, row, "{}", app.status);
}

/// `R`, and `y` when the agent's command is asked about: the re-run, over.
fn rerun(app: &mut App) {
    press(app, key(KeyCode::Char('R')));
    if matches!(app.mode, Mode::Confirm(_)) {
        press(app, key(KeyCode::Char('y')));
    }
    assert!(!app.agent_running(), "the re-run is over: {}", app.status);
    assert_eq!(app.screen, Screen::Compare, "{}", app.status);
}

/// The proxy's arguments in a run's `mcp.json`.
fn proxy_args(run_dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(run_dir.join("mcp.json")).expect("the run's mcp.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let entry = v["mcpServers"]
        .as_object()
        .and_then(|s| s.values().next())
        .expect("an entry")
        .clone();
    entry["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().unwrap_or_default().to_owned())
        .collect()
}

fn probability_of(run_dir: &Path) -> Option<String> {
    let args = proxy_args(run_dir);
    let at = args.iter().position(|a| a == "--probability")?;
    args.get(at + 1).cloned()
}

#[test]
fn r_reruns_a_campaigns_run_at_its_probability_and_each_rerun_keeps_its_files() {
    let file = campaign("r");
    let runs = file.with_file_name("mcp-lost-ack.campaign.runs");
    assert_eq!(
        probability_of(&runs.join("run-002")).as_deref(),
        Some("0.5")
    );
    let mut app = open(&file);
    draw(&mut app, 120, 36);
    // Seed 44 passed at 0.5: the rule did not fire on it.
    let record = app.doc.campaign.as_ref().expect("a campaign").records[1].clone();
    assert_eq!((record.seed, record.passed, record.faults), (44, true, 0));
    open_run(&mut app, 1);
    assert_eq!(app.tab().label, "campaign run 2");
    // R with no edit: the run's own plan, seed 44 at 0.5 — the same run again.
    rerun(&mut app);
    assert!(app.status.contains("PASS → PASS"), "{}", app.status);
    let reruns = file.with_file_name("mcp-lost-ack.campaign.re-run-44.runs");
    assert_eq!(
        probability_of(&reruns.join("run-001")).as_deref(),
        Some("0.5"),
        "{:?}",
        proxy_args(&reruns.join("run-001"))
    );
    let first = app.tab().clone();
    assert_eq!(first.label, "re-run: the rules of mcp-lost-ack.json now");
    assert_eq!(
        first
            .timeline
            .report()
            .calls
            .iter()
            .filter(|c| c.injected)
            .count(),
        0,
        "no fault, as the first time"
    );
    // i: the rule editor on the run's plan: seed 44 and the campaign's probability.
    open_run(&mut app, 1);
    keys::open_editor(&mut app);
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(screen.contains("p 0.5 · budget"), "{screen}");
    assert!(!screen.contains("p per rule"), "{screen}");
    assert_eq!(app.editor.as_ref().map(|e| e.seed()), Some(44));
    press(&mut app, key(KeyCode::Esc));
    // R from the editor: its rules (p 0.5 in them) as written, again on seed 44, in a folder
    // of its own — the first re-run's files stay.
    rerun(&mut app);
    assert!(app.status.contains("PASS → PASS"), "{}", app.status);
    let edited =
        std::fs::read_to_string(file.with_file_name("mcp-lost-ack.campaign.edited-44.json"))
            .expect("the edited rules");
    assert!(edited.contains("\"probability\": 0.5"), "{edited}");
    let second = app.tab().clone();
    assert!(
        second.label.starts_with("re-run 2: the edited rules"),
        "{}",
        second.label
    );
    for n in ["run-001", "run-002"] {
        for f in ["recording.json", "agent.log", "mcp.json"] {
            assert!(reruns.join(n).join(f).is_file(), "{n}/{f}");
        }
    }
    // Each re-run's run points at its own recording.
    let recording_of = |r: &toolstorm::document::Run| {
        r.plan
            .as_ref()
            .map(|p| p.recording.clone())
            .expect("a plan")
    };
    assert_eq!(recording_of(&first), reruns.join("run-001/recording.json"));
    assert_eq!(recording_of(&second), reruns.join("run-002/recording.json"));
    assert_ne!(
        std::fs::read(reruns.join("run-001/recording.json")).expect("first"),
        Vec::<u8>::new()
    );
    // The list of runs shows both, after the campaign's two.
    press(&mut app, key(KeyCode::Esc));
    press(&mut app, key(KeyCode::Char('L')));
    let screen = draw(&mut app, 120, 36).backend().to_string();
    assert!(
        screen.contains("re-run: the rules of mcp-lost-ack.json now"),
        "{screen}"
    );
    assert!(screen.contains("re-run 2: the edited rules"), "{screen}");
    assert_eq!(app.doc.runs.len(), 4);
}

#[test]
fn campaign_rerun_numbers_its_runs_and_keeps_each() {
    let file = campaign("cli");
    let dir = file.parent().expect("dir").to_path_buf();
    for n in 1..=2 {
        let out = Command::new(BIN)
            .args(["campaign", "mcp-lost-ack.campaign.json", "--rerun", "44"])
            .current_dir(&dir)
            .output()
            .expect("rerun");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}");
        // At the campaign's probability, as the campaign ran it: the same (no) faults.
        assert!(
            stdout.contains("seed 44: first run PASS (no faults); rerun PASS (no faults)"),
            "{stdout}"
        );
        let run = dir.join(format!("mcp-lost-ack.campaign.rerun-44.runs/run-{n:03}"));
        assert!(
            stdout.contains(&format!(
                "rerun recording: {}",
                run.join("recording.json").display()
            )),
            "{stdout}"
        );
        assert_eq!(probability_of(&run).as_deref(), Some("0.5"));
    }
    for n in ["run-001", "run-002"] {
        for f in ["recording.json", "agent.log"] {
            let p = dir
                .join("mcp-lost-ack.campaign.rerun-44.runs")
                .join(n)
                .join(f);
            assert!(p.is_file(), "{}", p.display());
        }
    }
}
