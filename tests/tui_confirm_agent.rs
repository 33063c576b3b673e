//! Opening a file never runs its command unasked: a recording's sidecar and a campaign file
//! name the agent a re-run starts (`R`, `p`, `R` from the rule editor), and anyone can write
//! one — the digest beside the command is no seal. Forged files whose "agent" would leave a
//! marker file: the explorer shows the command, its folder and its file, and starts nothing
//! until `y`. A command confirmed once is not asked again for the rest of the session.

mod common;
mod keys;

use std::path::{Path, PathBuf};

use crossterm::event::KeyCode;
use toolstorm::document::Document;
use toolstorm::tui::app::{App, Mode};

use keys::{draw, key, press};

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The bundled MCP recording in a fresh folder, its sidecar forged to name an "agent" that
/// creates `ran` there: (the recording, the marker).
fn forged_recording(tag: &str) -> (PathBuf, PathBuf) {
    let dir = common::fresh_dir(&format!("confirm-{tag}"));
    let marker = dir.join("ran");
    let recording = dir.join("rec.json");
    std::fs::copy(
        Path::new(ROOT).join("cassettes/mcp-incident.json"),
        &recording,
    )
    .expect("recording");
    let scenario = dir.join("mcp-lost-ack.json");
    std::fs::copy(
        Path::new(ROOT).join("scenarios/mcp-lost-ack.json"),
        &scenario,
    )
    .expect("scenario");
    let side = std::fs::read_to_string(Path::new(ROOT).join("cassettes/mcp-incident.mcp.json"))
        .expect("sidecar");
    let mut v: serde_json::Value = serde_json::from_str(&side).expect("JSON");
    v["agent"] = serde_json::json!({
        "command": format!("touch {}", marker.display()),
        "cwd": dir.display().to_string(),
    });
    v["scenario"] = scenario.display().to_string().into();
    std::fs::write(dir.join("rec.mcp.json"), v.to_string()).expect("forged sidecar");
    (recording, marker)
}

/// The bundled campaign (file, runs and scenario) in a fresh folder, its agent forged to
/// create `ran` there: (the campaign file, the marker).
fn forged_campaign(tag: &str) -> (PathBuf, PathBuf) {
    let dir = common::fresh_dir(&format!("confirm-{tag}"));
    let marker = dir.join("ran");
    std::fs::create_dir_all(dir.join("scenarios")).expect("dir");
    std::fs::copy(
        Path::new(ROOT).join("scenarios/mcp-lost-ack.json"),
        dir.join("scenarios/mcp-lost-ack.json"),
    )
    .expect("scenario");
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(Path::new(ROOT).join("cassettes"))
        .arg(&dir)
        .status()
        .expect("cp");
    assert!(copied.success());
    let file = dir.join("cassettes/lost-ack-campaign.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("campaign")).expect("JSON");
    v["agent"] = serde_json::json!(["touch", marker.display().to_string()]);
    std::fs::write(&file, v.to_string()).expect("forged campaign");
    (file, marker)
}

fn open(path: &Path) -> App {
    let mut app = App::new(Document::open(path).expect("opens"));
    app.proxy_bin = Some(PathBuf::from(BIN));
    app
}

fn screen(app: &mut App) -> String {
    draw(app, 140, 40).backend().to_string()
}

fn asking(app: &App) -> bool {
    matches!(app.mode, Mode::Confirm(_))
}

/// The screen once `R` asked about the agent (it must ask).
fn asked_on_r(app: &mut App) -> String {
    screen(app);
    press(app, key(KeyCode::Char('R')));
    assert!(asking(app), "{:?} {}", app.mode, app.status);
    screen(app)
}

/// The forged sidecar of `recording` made to name a command that creates `other` instead of
/// `marker`: `other`.
fn another_marker(recording: &Path, marker: &Path) -> PathBuf {
    let side = recording.with_file_name("rec.mcp.json");
    let other = marker.with_file_name("other");
    let text = std::fs::read_to_string(&side).expect("sidecar");
    std::fs::write(
        &side,
        text.replace(&marker.display().to_string(), &other.display().to_string()),
    )
    .expect("write");
    other
}

/// Asserts that `text` holds each of `wanted`.
fn holds_all(text: &str, wanted: &[String]) {
    for w in wanted {
        assert!(text.contains(w.as_str()), "{w:?} is not in: {text}");
    }
}

/// What the question must show: the command as it would run, its folder, its file.
fn shows_the_command(screen: &str, command: &str, folder: &Path, file: &Path) {
    holds_all(
        screen,
        &[
            command.to_owned(),
            format!("folder  {}", folder.display()),
            format!("from    {}", file.display()),
        ],
    );
}

#[test]
fn r_on_a_forged_sidecar_shows_its_command_and_runs_it_only_on_y() {
    let (recording, marker) = forged_recording("sidecar-r");
    let dir = recording.parent().expect("dir").to_path_buf();
    let mut app = open(&recording);
    screen(&mut app);
    press(&mut app, key(KeyCode::Char('R')));
    assert!(!marker.exists(), "R ran the sidecar's command unasked");
    assert!(asking(&app), "{:?} {}", app.mode, app.status);
    let shown = screen(&mut app);
    let command = format!("sh -c 'touch {}'", marker.display());
    shows_the_command(&shown, &command, &dir, &dir.join("rec.mcp.json"));
    // And the server the run's proxy starts, which the sidecar names too.
    assert!(
        shown.contains("server  target/release/examples/mcp_shipping_server "),
        "{shown}"
    );
    assert!(
        shown.contains("y runs it · any other key does not"),
        "{shown}"
    );
    // Any other key: nothing runs, and the status line says so.
    press(&mut app, key(KeyCode::Char('n')));
    assert!(!marker.exists(), "n ran it");
    assert!(!asking(&app));
    assert!(
        app.status.contains("not run") && app.status.contains("nothing was started"),
        "{}",
        app.status
    );
    // Asked again, y runs it.
    press(&mut app, key(KeyCode::Char('R')));
    assert!(asking(&app), "a refused command is asked again");
    press(&mut app, key(KeyCode::Enter));
    assert!(!marker.exists(), "Enter is not y");
    press(&mut app, key(KeyCode::Char('R')));
    press(&mut app, key(KeyCode::Char('y')));
    assert!(marker.exists(), "y runs it: {}", app.status);
    // Confirmed once for this file: the next re-run is not asked.
    std::fs::remove_file(&marker).expect("marker");
    press(&mut app, key(KeyCode::Char('R')));
    assert!(!asking(&app), "asked again: {:?}", app.mode);
    assert!(
        marker.exists(),
        "the confirmed command runs: {}",
        app.status
    );
}

#[test]
fn a_confirmed_command_changed_in_its_file_is_asked_again() {
    let (recording, marker) = forged_recording("sidecar-changed");
    let mut app = open(&recording);
    screen(&mut app);
    press(&mut app, key(KeyCode::Char('R')));
    press(&mut app, key(KeyCode::Char('y')));
    assert!(marker.exists(), "{}", app.status);
    // The sidecar now names another command: what was confirmed was the first one.
    let other = another_marker(&recording, &marker);
    press(&mut app, key(KeyCode::Char('R')));
    assert!(asking(&app), "{:?} {}", app.mode, app.status);
    assert!(!other.exists());
    assert!(screen(&mut app).contains(&format!("touch {}", other.display())));
}

#[test]
fn the_rule_editors_rerun_on_a_forged_sidecar_asks_first() {
    let (recording, marker) = forged_recording("sidecar-i");
    let dir = recording.parent().expect("dir").to_path_buf();
    let mut app = open(&recording);
    screen(&mut app);
    keys::open_editor(&mut app);
    press(&mut app, key(KeyCode::Char('R')));
    assert!(
        !marker.exists(),
        "the editor's R ran the sidecar's command unasked"
    );
    assert!(asking(&app), "{:?} {}", app.mode, app.status);
    let command = format!("sh -c 'touch {}'", marker.display());
    shows_the_command(&screen(&mut app), &command, &dir, &dir.join("rec.mcp.json"));
    press(&mut app, key(KeyCode::Esc));
    assert!(!marker.exists(), "Esc ran it");
    assert!(app.status.contains("not run"), "{}", app.status);
}

#[test]
fn r_and_p_on_a_forged_campaign_show_its_agent_and_run_it_only_on_y() {
    let (file, marker) = forged_campaign("campaign");
    let dir = file
        .parent()
        .and_then(Path::parent)
        .expect("the campaign's cwd");
    let mut app = open(&file);
    screen(&mut app);
    // The list of runs: Enter opens one.
    press(&mut app, key(KeyCode::Enter));
    press(&mut app, key(KeyCode::Char('R')));
    assert!(!marker.exists(), "R ran the campaign's agent unasked");
    assert!(asking(&app), "{:?} {}", app.mode, app.status);
    let command = format!("touch {}", marker.display());
    shows_the_command(&screen(&mut app), &command, dir, &file);
    press(&mut app, key(KeyCode::Char('x')));
    assert!(!marker.exists());
    assert!(app.status.contains("not run"), "{}", app.status);
    // p: the picker, then the same question before anything starts.
    app.cursor = Some(0);
    press(&mut app, key(KeyCode::Char('p')));
    assert!(matches!(app.mode, Mode::PinFault(0)), "{:?}", app.mode);
    press(&mut app, key(KeyCode::Enter));
    assert!(!marker.exists(), "p ran the campaign's agent unasked");
    assert!(asking(&app), "{:?} {}", app.mode, app.status);
    shows_the_command(&screen(&mut app), &command, dir, &file);
    press(&mut app, key(KeyCode::Char('y')));
    assert!(marker.exists(), "y runs it: {}", app.status);
}

#[test]
fn campaign_rerun_prints_the_command_and_its_folder_before_it_starts() {
    let (file, marker) = forged_campaign("cli");
    let dir = file
        .parent()
        .and_then(Path::parent)
        .expect("the campaign's cwd");
    let out = std::process::Command::new(BIN)
        .args(["campaign", file.to_str().expect("path"), "--rerun", "43"])
        .output()
        .expect("campaign --rerun");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(marker.exists(), "--rerun runs the agent: {err}");
    let first = err.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        format!(
            "toolstorm-tui: re-running seed 43 with the agent of {}:",
            file.display()
        ),
        "{err}"
    );
    holds_all(
        &err,
        &[
            format!("  command touch {}\n", marker.display()),
            format!("  folder  {}\n", dir.display()),
        ],
    );
}

#[test]
fn the_command_shown_is_escaped_and_its_secrets_redacted() {
    let (recording, marker) = forged_recording("escaped");
    let side = recording.with_file_name("rec.mcp.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&side).expect("sidecar")).expect("JSON");
    v["agent"]["command"] = format!(
        "API_KEY=sk-live-4242 touch {}; printf '\u{1b}[2J\u{202e}'",
        marker.display()
    )
    .into();
    std::fs::write(&side, v.to_string()).expect("sidecar");
    let mut app = open(&recording);
    let shown = asked_on_r(&mut app);
    // The program and its arguments, to judge it by; the secret's value is not on screen.
    assert!(
        shown.contains(&format!(
            "sh -c 'API_KEY=[REDACTED] touch {}; printf",
            marker.display()
        )),
        "{shown}"
    );
    assert!(!shown.contains("sk-live-4242"), "{shown}");
    // A control or bidirectional character is shown as its escape, never as itself.
    assert!(shown.contains(r"\x1b[2J\u202e"), "{shown}");
    assert!(!shown.contains('\u{1b}') && !shown.contains('\u{202e}'));
    press(&mut app, key(KeyCode::Char('n')));
    assert!(!marker.exists());
    assert!(!app.status.contains("sk-live-4242"), "{}", app.status);
}

#[test]
fn a_rerun_starts_nothing_but_the_command_shown() {
    use toolstorm::tui::whatif::{launch_of, run_agent};
    let (recording, marker) = forged_recording("unshown");
    let scenario = recording.with_file_name("mcp-lost-ack.json");
    let mut rerun = common::recording_rerun(&recording, &scenario);
    // Nothing shown: nothing starts.
    let e = run_agent(&rerun, 42, &scenario)
        .map(|_| ())
        .expect_err("refused");
    assert!(e.to_string().contains("nothing was started"), "{e}");
    assert!(!marker.exists());
    // Shown, then the sidecar names another command: that one does not start either.
    let shown = launch_of(&rerun).expect("a launch");
    assert_eq!(shown.agent[..2], ["sh", "-c"]);
    let other = another_marker(&recording, &marker);
    rerun.launch = Some(shown);
    let e = run_agent(&rerun, 42, &scenario)
        .map(|_| ())
        .expect_err("refused");
    assert!(
        e.to_string().contains("other commands than the ones shown"),
        "{e}"
    );
    assert!(!other.exists() && !marker.exists());
}

#[test]
fn the_question_on_screen_140x40() {
    use toolstorm::agent::Launch;
    use toolstorm::tui::action::{AgentRerun, AgentSource};
    use toolstorm::tui::app::Question;
    let rel = "cassettes/mcp-incident.json";
    let mut doc = Document::open(&Path::new(ROOT).join(rel)).expect("opens");
    // A relative name, so the snapshot does not depend on where the checkout lives.
    doc.path = Some(PathBuf::from(rel));
    let mut app = App::new(doc);
    let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let mut r = AgentRerun::new(
        AgentSource::Recording(PathBuf::from("/work/agent/rec.json")),
        42,
        PathBuf::from("/work/agent/mcp-lost-ack.json"),
        "the rules of mcp-lost-ack.json now".into(),
        "re-run",
        None,
    );
    r.launch = Some(Launch {
        file: PathBuf::from("/work/agent/rec.mcp.json"),
        cwd: PathBuf::from("/work/agent"),
        agent: words(&[
            "python",
            "agent.py",
            "--api-key",
            "sk-live-4242",
            "{mcp_config}",
        ]),
        before: Some("./reset.sh --db-password hunter2".into()),
        verify: Some("test -f done\u{1b}[2J".into()),
        server: words(&["python", "server.py", "--token=tk-9"]),
        server_file: PathBuf::from("/work/agent/mcp-lost-ack.json"),
    });
    app.mode = Mode::Confirm(Question::RunAgent(Box::new(r)));
    let shown = screen(&mut app);
    assert!(
        !shown.contains("sk-live-4242") && !shown.contains("hunter2") && !shown.contains("tk-9"),
        "{shown}"
    );
    assert!(!shown.contains('\u{1b}'), "{shown}");
    insta::assert_snapshot!("confirm_agent_140x40", shown);
}

#[test]
fn r_on_a_recording_with_a_world_reset_shows_it_and_runs_it_before_the_agent() {
    let (recording, marker) = forged_recording("before");
    let dir = recording.parent().expect("dir").to_path_buf();
    let log = dir.join("order.log");
    let side = recording.with_file_name("rec.mcp.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&side).expect("sidecar")).expect("JSON");
    v["agent"]["command"] = format!(
        "echo agent >> {}; touch {}",
        log.display(),
        marker.display()
    )
    .into();
    v["agent"]["before"] = format!("echo reset >> {}", log.display()).into();
    std::fs::write(&side, v.to_string()).expect("sidecar");
    let mut app = open(&recording);
    let shown = asked_on_r(&mut app);
    assert!(
        shown.contains(&format!("before  sh -c 'echo reset >> {}'", log.display())),
        "the reset is shown with the agent: {shown}"
    );
    assert!(!log.exists(), "nothing ran before y");
    press(&mut app, key(KeyCode::Char('y')));
    assert!(marker.exists(), "y runs it: {}", app.status);
    assert_eq!(
        std::fs::read_to_string(&log).expect("log"),
        "reset\nagent\n",
        "the world is reset first"
    );
}
