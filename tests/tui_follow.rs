//! Follow mode (`A`, issue 54 item 7): on a file still being written — a recording growing
//! on disk, an `ask` record whose run goes on — the cursor goes to the newest call each time
//! calls arrive, as `tail -f` does; any move stops following; the header says so (in the
//! passing colour). Without it the cursor stays where it was (at #1 when the file opened).

mod common;
mod keys;

use std::path::{Path, PathBuf};

use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use toolstorm::document::Document;
use toolstorm::json::{Value, compact, parse};
use toolstorm::report::Report;
use toolstorm::tui::action::Action;
use toolstorm::tui::app::App;
use toolstorm::tui::runtime::dispatch;
use toolstorm::tui::theme::Theme;

use keys::type_keys;

/// The reference's rate-limit retry (4 calls) as a report, to write a piece at a time.
fn full() -> Report {
    let path = common::fixture_path("demo/rate_limit.retry.cassette.json");
    Document::open(&path).expect("fixture").runs[0]
        .timeline
        .report()
        .clone()
}

/// The first `n` calls of `report` (and their effects), as a recorder wrote them so far.
fn first(report: &Report, n: usize) -> Report {
    let mut r = report.clone();
    r.calls.truncate(n);
    r.effects.retain(|e| e.call_id <= n as u64);
    r
}

fn write(path: &Path, r: &Report) {
    toolstorm::cassette::Cassette::from_report(r)
        .expect("valid")
        .save(path)
        .expect("save");
}

fn terminal(app: &mut App, w: u16, h: u16, no_color: bool) -> Terminal<TestBackend> {
    app.update(Action::Resize(w, h));
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| app.render_with(f.area(), f.buffer_mut(), &Theme::new(no_color)))
        .expect("draw");
    t
}

fn screen(app: &mut App, w: u16, h: u16) -> String {
    terminal(app, w, h, true).backend().to_string()
}

fn header(app: &mut App) -> String {
    screen(app, 120, 30)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// A scratch folder with `session.json` holding the first `n` calls, opened in the explorer
/// under a fixed name (so screens do not depend on the folder).
fn opened(name: &str, n: usize) -> (PathBuf, PathBuf, App) {
    let dir = common::scratch_dir(name);
    let path = dir.join("session.json");
    write(&path, &first(&full(), n));
    let mut doc = Document::open(&path).expect("opens");
    doc.path = Some(path.clone());
    (dir, path, App::new(doc))
}

#[test]
fn without_follow_the_cursor_stays_at_the_first_call() {
    // Before: the cursor stays at #1 as calls arrive (the complaint of issue 54).
    let (dir, path, mut app) = opened("follow-off", 2);
    assert_eq!(app.cursor, Some(0));
    write(&path, &first(&full(), 4));
    dispatch(&mut app, Action::FileChanged);
    assert_eq!(app.timeline().len(), 4);
    assert_eq!(app.cursor, Some(0), "nothing asked for following");
    assert!(!header(&mut app).contains("following"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_follows_each_new_call_and_any_move_stops_it() {
    let (dir, path, mut app) = opened("follow-on", 2);
    type_keys(&mut app, "A");
    assert!(app.follow);
    assert_eq!(app.cursor, Some(1), "A goes to the newest call at once");
    assert!(
        app.status.contains("following the newest call"),
        "{}",
        app.status
    );

    write(&path, &first(&full(), 3));
    dispatch(&mut app, Action::FileChanged);
    assert_eq!(app.cursor, Some(2), "the call that arrived is selected");
    assert!(
        app.status.contains("following: 1 new call"),
        "{}",
        app.status
    );
    write(&path, &first(&full(), 4));
    dispatch(&mut app, Action::FileChanged);
    assert_eq!(app.cursor, Some(3));
    assert!(app.follow, "still following");

    // The header says so, in the passing colour (green): the mode is on.
    app.status.clear();
    let t = terminal(&mut app, 120, 30, false);
    let buf = t.backend().buffer();
    let row: String = (0..120).map(|x| buf[(x, 0)].symbol().to_owned()).collect();
    let at = row.find("following").expect("following in the header");
    let x = row[..at].chars().count() as u16;
    assert_eq!(
        buf[(x, 0)].fg,
        Theme::new(false).ok.fg.unwrap_or(Color::Reset),
        "{row}"
    );
    assert_eq!(buf[(x, 0)].fg, Color::Green);

    // Any move stops following: the next calls that arrive leave the cursor where it is.
    type_keys(&mut app, "k");
    assert!(!app.follow);
    assert_eq!(app.cursor, Some(2));
    assert!(app.status.contains("stopped following"), "{}", app.status);
    assert!(!header(&mut app).contains("following"));
    type_keys(&mut app, "k");
    write(&path, &first(&full(), 3));
    dispatch(&mut app, Action::FileChanged);
    write(&path, &first(&full(), 4));
    dispatch(&mut app, Action::FileChanged);
    assert_eq!(app.cursor, Some(1), "not following: the cursor stays");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn every_kind_of_move_stops_following() {
    let moves = [
        Action::Next,
        Action::First,
        Action::Last,
        Action::PageUp,
        Action::PrevFault,
        Action::Click {
            pane: None,
            call: Some(0),
        },
        Action::ToggleFollow,
    ];
    for (i, m) in moves.into_iter().enumerate() {
        let (dir, _, mut app) = opened(&format!("follow-move-{i}"), 4);
        dispatch(&mut app, Action::ToggleFollow);
        assert!(app.follow);
        let shown = format!("{m:?}");
        dispatch(&mut app, m);
        assert!(!app.follow, "{shown} stops following");
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn the_header_and_the_keys_say_follow_mode() {
    let (dir, path, mut app) = opened("follow-screen", 3);
    type_keys(&mut app, "A");
    write(&path, &first(&full(), 4));
    dispatch(&mut app, Action::FileChanged);
    app.doc.path = Some(PathBuf::from("session.json"));
    app.status.clear();
    let s = screen(&mut app, 120, 30);
    let top = s.lines().next().unwrap_or_default();
    assert!(top.contains("· following"), "{top}");
    assert!(
        s.contains("following the newest call · any move or A stops"),
        "{s}"
    );
    assert_snapshot!("follow_growing_recording_120x30", s);
    // The help lists the key.
    type_keys(&mut app, "?");
    let help = screen(&mut app, 120, 40);
    assert!(
        help.contains("follow new calls (tail -f); any move stops"),
        "{help}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// The real `ask` record of tests/tui_ask.rs (5 rounds, a call in each of the first two),
/// unfinished, as it was after `rounds` rounds.
fn ask_record(rounds: usize) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ask/orbit-chat.json");
    let mut v = parse(&std::fs::read_to_string(path).expect("fixture")).expect("json");
    if let Value::Object(o) = &mut v {
        o.insert("complete", Value::Bool(false));
        for key in ["rounds", "batches"] {
            if let Some(Value::Array(r)) = o.get_mut(key) {
                r.truncate(rounds);
            }
        }
        if let Some(Value::Object(report)) = o.get_mut("report")
            && let Some(Value::Array(calls)) = report.get_mut("calls")
        {
            calls.truncate(rounds.min(2));
        }
    }
    v
}

#[test]
fn an_ask_record_being_written_is_followed_to_its_newest_call() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("orbit-chat.json");
    std::fs::write(&path, compact(&ask_record(1))).expect("write");
    let mut app = App::new(Document::open(&path).expect("opens"));
    let calls_before = app.timeline().len();
    assert_eq!(calls_before, 1, "the first round's call");
    dispatch(&mut app, Action::ToggleFollow);
    assert_eq!(app.cursor, Some(0));
    // Four more rounds come in: the newest call is selected, the run is said to go on.
    std::fs::write(&path, compact(&ask_record(5))).expect("write");
    app.update(Action::Reloaded(Ok(Box::new(
        Document::open(&path).expect("opens"),
    ))));
    let after = app.timeline().len();
    assert!(after > calls_before, "{after} calls after {calls_before}");
    assert_eq!(app.cursor, Some(after - 1));
    assert!(app.follow);
    let top = header(&mut app);
    assert!(
        top.contains("following") && top.contains("running"),
        "{top}"
    );
}
