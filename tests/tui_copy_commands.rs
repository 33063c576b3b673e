//! Every command `Y` copies for an MCP run is run here, as a user would paste it: on a
//! campaign's run, on the explorer's re-run of it, on a what-if re-run, on a recording made
//! with `mcp --agent-cmd` and on its re-run. Each works on the files as they are (the run's
//! own recording, never the campaign file) and says what it did; the proxy line records a new
//! recording beside the run's, and the run's recording keeps its bytes.

mod common;
mod keys;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crossterm::event::KeyCode;
use toolstorm::document::Document;
use toolstorm::tui::app::{App, Mode, Screen};

use keys::{draw, key, press};

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

use common::agents::agent;

/// `PATH` with this build's `toolstorm-tui` first, as an installed one would be.
fn path_env() -> String {
    let bin = Path::new(BIN)
        .parent()
        .expect("bin dir")
        .display()
        .to_string();
    format!("{bin}:{}", std::env::var("PATH").unwrap_or_default())
}

fn open(path: &Path) -> App {
    let mut app = App::new(Document::open(path).expect("the file opens"));
    app.proxy_bin = Some(PathBuf::from(BIN));
    app
}

/// `R` (or `p`'s choice), and `y` when asked: the re-run, over, shown.
fn confirm_and_finish(app: &mut App) {
    if matches!(app.mode, Mode::Confirm(_)) {
        press(app, key(KeyCode::Char('y')));
    }
    assert!(!app.agent_running(), "the re-run is over: {}", app.status);
    assert_eq!(app.screen, Screen::Compare, "{}", app.status);
    press(app, key(KeyCode::Esc));
}

/// The campaign's first run, through the list of runs.
fn open_first_run(app: &mut App) {
    press(app, key(KeyCode::Char('L')));
    for _ in 0..app.doc.runs.len() {
        press(app, key(KeyCode::Char('k')));
    }
    press(app, key(KeyCode::Enter));
    assert_eq!(app.run, 0, "{}", app.status);
}

/// `Y`: the lines shown (and copied).
fn copied(app: &mut App) -> Vec<String> {
    press(app, key(KeyCode::Char('Y')));
    let Mode::Show(_, text) = &app.mode else {
        panic!("Y shows the commands: {:?} {}", app.mode, app.status);
    };
    let lines = text.lines().map(str::to_owned).collect();
    press(app, key(KeyCode::Esc));
    lines
}

/// The agent, its `mcpServers` entry the line given (run by `sh -c` as a launcher would).
fn agent_with(line: &str, dir: &Path) -> Output {
    let config = dir.join("y-mcp.json");
    let entry = serde_json::json!({"mcpServers": {"y": {"command": "sh", "args": ["-c", line]}}});
    std::fs::write(&config, entry.to_string()).expect("config");
    Command::new(agent())
        .arg("--mcp-config")
        .arg(&config)
        .env("PATH", path_env())
        .current_dir(dir)
        .output()
        .expect("the agent")
}

fn shell(line: &str, dir: &Path) -> Output {
    Command::new("sh")
        .args(["-c", line])
        .env("PATH", path_env())
        .current_dir(dir)
        .output()
        .expect("sh")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The value after `flag` in a shell line of plain words.
fn after<'a>(line: &'a str, flag: &str) -> &'a str {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| *w == flag)
        .unwrap_or_else(|| panic!("{flag} in {line}"));
    words[at + 1]
}

/// The files of a recording, read.
fn bytes_of(recording: &Path) -> Vec<Vec<u8>> {
    [
        recording.to_path_buf(),
        toolstorm::mcp::session::sidecar_path(recording),
    ]
    .iter()
    .map(|p| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
    .collect()
}

/// Runs every command of `lines` (from a folder of its own, so no relative name helps) and
/// checks each did what it says; `recording` is the run's, `check_code` what `check` exits
/// on it, `campaign_code` what its `campaign --rerun` exits. The run's recording keeps its
/// bytes. The commands run, by kind.
fn run_all(
    lines: &[String],
    recording: &Path,
    check_code: i32,
    campaign_code: i32,
) -> Vec<&'static str> {
    let before = bytes_of(recording);
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let elsewhere = common::fresh_dir(&format!("copy-run-{n}"));
    let mut ran = Vec::new();
    for line in lines.iter().filter(|l| !l.starts_with('#')) {
        assert!(
            line.starts_with("toolstorm-tui "),
            "a command of this program: {line}"
        );
        if line.starts_with("toolstorm-tui campaign ") {
            let o = shell(line, &elsewhere);
            let out = text(&o);
            assert_eq!(o.status.code(), Some(campaign_code), "{line}: {out}");
            assert!(
                out.contains("the same faults on the same calls"),
                "{line}: {out}"
            );
            assert!(out.contains("rerun recording: "), "{line}: {out}");
            ran.push("campaign --rerun");
        } else if line.starts_with("toolstorm-tui check ") {
            let o = shell(line, &elsewhere);
            let out = text(&o);
            assert_eq!(o.status.code(), Some(check_code), "{line}: {out}");
            assert!(out.contains("No duplicate side effects"), "{line}: {out}");
            ran.push("check");
        } else if line.contains(" --replay ") {
            assert_eq!(after(line, "--replay"), recording.display().to_string());
            let o = agent_with(line, &elsewhere);
            assert!(o.status.success(), "{line}: {}", text(&o));
            ran.push("mcp --replay");
        } else if line.starts_with("toolstorm-tui mcp ") {
            let fresh = PathBuf::from(after(line, "--record"));
            assert_ne!(fresh, recording, "never the run's own recording: {line}");
            assert!(!fresh.exists(), "a name not taken: {line}");
            let o = agent_with(line, &elsewhere);
            assert!(o.status.success(), "{line}: {}", text(&o));
            // A recording of the agent's session, judged as the run's was: the same faults
            // (its seed and probability), the same verdict.
            let (code, out, _) = common::cli(&["check", fresh.to_str().expect("path")]);
            assert_eq!(code, check_code, "{line}: {out}");
            let again = toolstorm::document::open_trace(&fresh).expect("the new recording");
            let first = toolstorm::document::open_trace(recording).expect("the run's");
            let faults = |t: &toolstorm::document::Trace| -> Vec<bool> {
                t.cassettes[0]
                    .report
                    .calls
                    .iter()
                    .map(|c| c.injected)
                    .collect()
            };
            assert_eq!(faults(&again), faults(&first), "{line}");
            ran.push("mcp --record");
        } else {
            panic!("a command the test does not know how to run: {line}");
        }
        assert_eq!(
            bytes_of(recording),
            before,
            "{line} left the run's recording as it was"
        );
    }
    ran
}

#[test]
fn y_on_a_campaigns_run_and_its_reruns_offers_commands_that_work() {
    let file = common::agents::half_campaign("copy-campaign");
    let mut app = open(&file);
    draw(&mut app, 120, 36);
    // Seed 43's run: the lost acknowledgement fired, the naive agent committed twice.
    press(&mut app, key(KeyCode::Enter));
    assert_eq!(app.tab().label, "campaign run 1");
    let runs = file.with_file_name("mcp-lost-ack.campaign.runs");
    let own = runs.join("run-001/recording.json");
    let lines = copied(&mut app);
    let all = lines.join("\n");
    assert!(
        !all.contains(&format!("--record {}", file.display())),
        "{all}"
    );
    assert!(
        !all.contains(&format!("--replay {}", file.display())),
        "{all}"
    );
    assert!(all.contains("--seed 43 --probability 0.5"), "{all}");
    assert_eq!(
        run_all(&lines, &own, 1, 1),
        ["campaign --rerun", "mcp --record", "mcp --replay", "check"],
        "{all}"
    );
    // Its re-run (R, the scenario as it is now under the run's plan): the CLI's
    // `--rerun --scenario` runs the same.
    press(&mut app, key(KeyCode::Char('R')));
    confirm_and_finish(&mut app);
    let rerun = file.with_file_name("mcp-lost-ack.campaign.re-run-43.runs/run-001/recording.json");
    let lines = copied(&mut app);
    let all = lines.join("\n");
    assert!(all.contains("--rerun 43 --scenario "), "{all}");
    assert_eq!(
        run_all(&lines, &rerun, 1, 1),
        ["campaign --rerun", "mcp --record", "mcp --replay", "check"],
        "{all}"
    );
    // A what-if re-run (an outage pinned to call 1, its rules as written): the campaign's
    // --probability would change them, so no `campaign --rerun` is offered, and why is said.
    open_first_run(&mut app);
    app.cursor = Some(0);
    press(&mut app, key(KeyCode::Char('p')));
    for _ in 0..3 {
        press(&mut app, key(KeyCode::Char('j')));
    }
    press(&mut app, key(KeyCode::Enter));
    confirm_and_finish(&mut app);
    let whatif =
        file.with_file_name("mcp-lost-ack.campaign.what-if-43.runs/run-001/recording.json");
    let lines = copied(&mut app);
    let all = lines.join("\n");
    assert!(
        all.contains("# `campaign --rerun 43 --scenario") && all.contains("R runs them again"),
        "{all}"
    );
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with('#') || !l.contains("--probability")),
        "run as written: {all}"
    );
    assert_eq!(
        run_all(&lines, &whatif, 0, 0),
        ["mcp --record", "mcp --replay", "check"],
        "{all}"
    );
    // Edited rules (the editor opens on the run's plan, p 0.5 in them) run as written: the
    // CLI's --scenario under the campaign's 0.5 runs the same, so it is offered, and runs.
    open_first_run(&mut app);
    keys::open_editor(&mut app);
    press(&mut app, key(KeyCode::Esc));
    press(&mut app, key(KeyCode::Char('R')));
    confirm_and_finish(&mut app);
    let edited = file.with_file_name("mcp-lost-ack.campaign.re-run-43.runs/run-002/recording.json");
    let lines = copied(&mut app);
    let all = lines.join("\n");
    assert!(
        all.contains("--rerun 43 --scenario ") && all.contains("edited-43.json"),
        "{all}"
    );
    assert_eq!(
        run_all(&lines, &edited, 1, 1),
        ["campaign --rerun", "mcp --record", "mcp --replay", "check"],
        "{all}"
    );
}

#[test]
fn y_on_an_agent_recording_and_its_rerun_offers_commands_that_work() {
    let (recording, _) = common::agents::agent_recording("copy-recording", "");
    let mut app = open(&recording);
    draw(&mut app, 120, 36);
    let lines = copied(&mut app);
    let all = lines.join("\n");
    assert!(all.contains("--agent-cmd"), "with the agent: {all}");
    assert!(all.contains("--seed 42"), "{all}");
    assert_eq!(
        run_all(&lines, &recording, 1, 0),
        ["mcp --record", "mcp --replay", "check"],
        "{all}"
    );
    // A second Y names another new recording: the first one's is taken now.
    let again = copied(&mut app).join("\n");
    assert!(again.contains("rec.again-2.json"), "{again}");
    // Its re-run: its own recording, the recording's agent.
    press(&mut app, key(KeyCode::Char('R')));
    confirm_and_finish(&mut app);
    let rerun = recording.with_file_name("rec.re-run-42.runs/run-001/recording.json");
    let lines = copied(&mut app);
    let all = lines.join("\n");
    assert!(all.contains("--agent-cmd"), "with the agent: {all}");
    assert!(
        all.contains(&format!("--replay {}", rerun.display())),
        "{all}"
    );
    assert_eq!(
        run_all(&lines, &rerun, 1, 0),
        ["mcp --record", "mcp --replay", "check"],
        "{all}"
    );
}

#[test]
fn y_keeps_a_recordings_world_reset_and_its_line_resets_the_world() {
    let (recording, _) = common::agents::agent_recording("copy-before", "");
    let world = recording.with_file_name("world.log");
    let reset = format!("echo reset >> {}", world.display());
    let side = toolstorm::mcp::session::sidecar_path(&recording);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&side).expect("sidecar")).expect("JSON");
    v["agent"]["before"] = reset.clone().into();
    std::fs::write(&side, v.to_string()).expect("sidecar");
    let mut app = open(&recording);
    draw(&mut app, 120, 36);
    let lines = copied(&mut app);
    let all = lines.join("\n");
    assert!(all.contains(&format!("--before '{reset}'")), "{all}");
    assert_eq!(
        run_all(&lines, &recording, 1, 0),
        ["mcp --record", "mcp --replay", "check"],
        "{all}"
    );
    // The new recording's proxy reset the world first; the replay started nothing.
    assert_eq!(std::fs::read_to_string(&world).expect("reset"), "reset\n");
}

#[test]
fn y_on_the_bundled_incident_on_screen_120x36() {
    let mut app = open(Path::new("cassettes/mcp-incident.json"));
    draw(&mut app, 120, 36);
    press(&mut app, key(KeyCode::Char('Y')));
    let screen = draw(&mut app, 120, 36).backend().to_string();
    // A new recording beside the incident, never the incident itself.
    assert!(
        screen.contains("--record") && screen.contains("cassettes/mcp-incident.again.json"),
        "{screen}"
    );
    insta::assert_snapshot!("copy_commands_mcp_incident_120x36", screen);
}
