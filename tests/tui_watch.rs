//! The file-watch path end to end: a real file, the notify watcher, the debounced event, the
//! reload command and the app's state — including an invalid intermediate write, an atomic
//! replace (rename over the file) and a delete-then-recreate.

mod common;

use std::sync::mpsc::channel;
use std::time::Duration;

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolstorm::document::Document;
use toolstorm::tui::app::{App, StatusKind};
use toolstorm::tui::runtime::{Ending, Event, Hooks, dispatch, run, spawn_watcher, to_actions};

fn wait_and_apply(app: &mut App, rx: &std::sync::mpsc::Receiver<Event>) {
    let event = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("a change event within 5 s");
    for action in to_actions(event, app) {
        dispatch(app, action);
    }
    // Drain any further debounced bursts.
    while let Ok(event) = rx.recv_timeout(Duration::from_millis(400)) {
        for action in to_actions(event, app) {
            dispatch(app, action);
        }
    }
}

#[test]
fn changes_on_disk_reach_the_app() {
    let dir = std::env::temp_dir().join(format!("toolstorm-watch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("incident.json");
    std::fs::write(&path, common::fixture("demo/lost_ack.retry.cassette.json")).expect("write");
    let mut app = App::new(Document::open(&path).expect("open"));
    app.cursor = Some(2);
    let (tx, rx) = channel();
    let _watcher = spawn_watcher(&path, tx).expect("watcher");
    std::thread::sleep(Duration::from_millis(200));

    // A half-written file: the last good state stays, the error shows.
    std::fs::write(&path, "{\"calls\": [").expect("write");
    wait_and_apply(&mut app, &rx);
    assert_eq!(app.status_kind, StatusKind::Error, "{}", app.status);
    assert_eq!(app.timeline().report().effects.len(), 2);

    // An atomic replace (temp file + rename), as editors and our own writer do.
    toolstorm::atomic::write(
        &path,
        common::fixture("demo/lost_ack.resilient.cassette.json").as_bytes(),
    )
    .expect("replace");
    wait_and_apply(&mut app, &rx);
    assert_eq!(app.status_kind, StatusKind::Info, "{}", app.status);
    assert_eq!(app.timeline().report().effects.len(), 1);
    assert_eq!(
        app.cursor,
        Some(2),
        "the cursor stays on the same invocation id"
    );

    // Deleted, then recreated.
    std::fs::remove_file(&path).expect("remove");
    wait_and_apply(&mut app, &rx);
    assert_eq!(app.status_kind, StatusKind::Error);
    std::fs::write(&path, common::fixture("demo/timeout.retry.cassette.json")).expect("recreate");
    wait_and_apply(&mut app, &rx);
    assert_eq!(app.status_kind, StatusKind::Info, "{}", app.status);
    assert_eq!(app.timeline().report().calls.len(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_thousand_rapid_rewrites_end_on_the_final_content() {
    let dir = std::env::temp_dir().join(format!("toolstorm-watch-burst-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("incident.json");
    let versions = [
        common::fixture("demo/lost_ack.retry.cassette.json"),
        common::fixture("demo/timeout.retry.cassette.json"),
        "{\"calls\": [".to_owned(),
        String::new(),
        common::fixture("demo/rate_limit.resilient.cassette.json"),
    ];
    std::fs::write(&path, &versions[0]).expect("write");
    let mut app = App::new(Document::open(&path).expect("open"));
    let (tx, rx) = channel();
    let _watcher = spawn_watcher(&path, tx).expect("watcher");
    std::thread::sleep(Duration::from_millis(200));
    for i in 0..1000 {
        // Plain writes (truncate + write: readers can see half-written states) and atomic ones.
        let text = &versions[i % versions.len()];
        if i % 3 == 0 {
            toolstorm::atomic::write(&path, text.as_bytes()).expect("atomic write");
        } else {
            std::fs::write(&path, text).expect("write");
        }
        // Events are handled as they come, like the running app does.
        while let Ok(event) = rx.try_recv() {
            for action in to_actions(event, &app) {
                dispatch(&mut app, action);
            }
        }
    }
    // The final state: a valid file.
    let last = common::fixture("demo/lost_ack.resilient.cassette.json");
    std::fs::write(&path, &last).expect("final write");
    wait_and_apply(&mut app, &rx);
    assert_eq!(app.status_kind, StatusKind::Info, "{}", app.status);
    assert_eq!(app.timeline().report().effects.len(), 1);
    assert_eq!(
        app.tab().digest,
        toolstorm::cassette::Cassette::loads(&last)
            .expect("valid")
            .digest()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn editing_a_scenario_on_disk_reruns_it() {
    use toolstorm::lab::scenario_file::ScenarioFile;
    let dir = std::env::temp_dir().join(format!("toolstorm-watch-scenario-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("lost_ack.json");
    let original = ScenarioFile::bundled("lost_ack")
        .expect("bundled")
        .to_text();
    std::fs::write(&path, &original).expect("write");
    let mut app = App::new(Document::open(&path).expect("open"));
    let before = app.tab().digest.clone();
    let (tx, rx) = channel();
    let _watcher = spawn_watcher(&path, tx).expect("watcher");
    std::thread::sleep(Duration::from_millis(200));
    // Another program (an editor in the next pane) moves the fault to the second shipment call.
    let edited = original.replacen(
        "\"calls\": [\n        1\n      ]",
        "\"calls\": [\n        2\n      ]",
        1,
    );
    assert_ne!(edited, original);
    std::fs::write(&path, &edited).expect("edit");
    wait_and_apply(&mut app, &rx);
    assert_eq!(app.status_kind, StatusKind::Info, "{}", app.status);
    let file = ScenarioFile::from_text(&edited).expect("valid edit");
    let want = toolstorm::lab::run(
        &file.scenario,
        app.tab().policy.expect("policy"),
        &file.config,
    )
    .expect("run");
    assert_eq!(
        app.tab().digest,
        want.digest,
        "the app shows the rerun of the edited file"
    );
    assert_ne!(app.tab().digest, before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The terminal loop's needs, for a test: nothing to watch, nothing to suspend.
struct NoHooks;

impl Hooks for NoHooks {
    fn retarget(&mut self, _: &std::path::Path) {}
    fn suspend(&mut self) {}
    fn copy(&mut self, _: &str) {}
}

fn key(c: char) -> Event {
    Event::Terminal(TermEvent::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )))
}

#[test]
fn a_reload_never_blocks_the_loop() {
    let dir = std::env::temp_dir().join(format!("toolstorm-bgload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("incident.json");
    std::fs::write(&path, common::fixture("demo/lost_ack.retry.cassette.json")).expect("write");
    let mut app = App::new(Document::open(&path).expect("open"));
    std::fs::write(
        &path,
        common::fixture("demo/lost_ack.resilient.cassette.json"),
    )
    .expect("write");
    let mut terminal = Terminal::new(TestBackend::new(100, 30)).expect("terminal");

    // A change, then `q` at once: the loop answers `q` before the load (which runs on a
    // worker and answers through the channel, behind the `q`) is applied.
    let (tx, rx) = channel();
    tx.send(Event::FileChanged).expect("send");
    tx.send(key('q')).expect("send");
    let ending = run(&mut terminal, &mut app, &rx, &tx, &mut NoHooks).expect("runs");
    assert_eq!(ending, Ending::Quit);
    assert_eq!(
        app.timeline().report().effects.len(),
        2,
        "old content still shown"
    );
    assert!(!app.status.contains("reloaded"), "{}", app.status);

    // Left running, the load arrives and is shown; an older answer is dropped.
    let mut app = App::new(Document::open(&path).expect("open"));
    std::fs::write(&path, common::fixture("demo/lost_ack.retry.cassette.json")).expect("write");
    let (tx, rx) = channel();
    tx.send(Event::Loaded(
        0,
        Ok(Box::new(Document::bundled().expect("bundled"))),
    ))
    .expect("send");
    tx.send(Event::FileChanged).expect("send");
    let quitter = tx.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        let _ = quitter.send(key('q'));
    });
    run(&mut terminal, &mut app, &rx, &tx, &mut NoHooks).expect("runs");
    assert!(app.status.contains("reloaded"), "{}", app.status);
    assert_eq!(
        app.timeline().report().effects.len(),
        2,
        "the file's content"
    );
    assert_eq!(
        app.doc.path.as_deref(),
        Some(path.as_path()),
        "not the stale answer"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_invalid_banner_goes_when_the_file_is_restored() {
    let dir = std::env::temp_dir().join(format!("toolstorm-banner-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("lost_ack.json");
    let good = toolstorm::lab::scenario_file::ScenarioFile::bundled("lost_ack")
        .expect("bundled")
        .to_text();
    std::fs::write(&path, &good).expect("write");
    let mut app = App::new(Document::open(&path).expect("open"));
    std::fs::write(&path, "{\"schema_version\": ").expect("write");
    dispatch(&mut app, toolstorm::tui::action::Action::FileChanged);
    assert_eq!(app.status_kind, StatusKind::Error, "{}", app.status);
    std::fs::write(&path, &good).expect("write");
    dispatch(&mut app, toolstorm::tui::action::Action::FileChanged);
    assert_eq!(app.status_kind, StatusKind::Info, "{}", app.status);
    assert!(!app.status.contains("invalid"), "{}", app.status);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn on_the_last_call_the_explorer_follows_a_growing_recording() {
    let dir = std::env::temp_dir().join(format!("toolstorm-tail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("session.json");
    // The reference's rate-limit retry (4 calls; the bundled MCP recording has only 2).
    let full = Document::open(&common::fixture_path("demo/rate_limit.retry.cassette.json"))
        .expect("fixture");
    let report = full.runs[0].timeline.report().clone();
    // The first three calls, as the recorder wrote them mid-session.
    let mut early = report.clone();
    early.calls.truncate(3);
    early.effects.retain(|e| e.call_id <= 3);
    let write = |r: &toolstorm::report::Report| {
        toolstorm::cassette::Cassette::from_report(r)
            .expect("valid")
            .save(&path)
            .expect("save");
    };
    write(&early);
    let mut app = App::new(Document::open(&path).expect("open"));
    app.update(toolstorm::tui::action::Action::Last);
    assert_eq!(app.cursor, Some(2));
    write(&report);
    dispatch(&mut app, toolstorm::tui::action::Action::FileChanged);
    assert_eq!(
        app.cursor,
        Some(3),
        "the cursor moved to the call that arrived"
    );
    assert!(app.status.contains("1 new call"), "{}", app.status);
    // Not on the last call: the cursor stays where the user put it.
    write(&early);
    dispatch(&mut app, toolstorm::tui::action::Action::FileChanged);
    app.update(toolstorm::tui::action::Action::First);
    write(&report);
    dispatch(&mut app, toolstorm::tui::action::Action::FileChanged);
    assert_eq!(app.cursor, Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}
