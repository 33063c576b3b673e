//! The explorer's screens: whole-screen snapshots at fixed sizes (driven by actions), colour
//! where colour carries meaning, and key → action → state behaviour.

mod common;
mod keys;

use std::path::PathBuf;

use crossterm::event::{
    Event as TermEvent, KeyCode, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::Color;
use toolstorm::document::{DocKind, Document};
use toolstorm::tui::action::Action;
use toolstorm::tui::app::{App, Focus, Mode};
use toolstorm::tui::runtime::{Event, dispatch, to_actions};
use toolstorm::tui::theme::Theme;

fn open(rel: &str) -> App {
    let path = common::fixture_path(rel);
    let mut doc = Document::open(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    // Show a relative name so snapshots do not depend on where the checkout lives.
    doc.path = Some(PathBuf::from(rel));
    App::new(doc)
}

fn screen(app: &mut App, w: u16, h: u16, no_color: bool) -> Terminal<TestBackend> {
    app.update(Action::Resize(w, h));
    let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    let theme = Theme::new(no_color);
    terminal
        .draw(|f| app.render_with(f.area(), f.buffer_mut(), &theme))
        .expect("draw");
    terminal
}

/// The screen as text.
fn text(terminal: &Terminal<TestBackend>) -> String {
    terminal.backend().to_string()
}

fn find(buf: &Buffer, symbol: &str) -> Vec<(u16, u16)> {
    let area = buf.area;
    let mut out = Vec::new();
    for y in area.y..area.y + area.height {
        for x in area.x..area.x + area.width {
            if buf[(x, y)].symbol() == symbol {
                out.push((x, y));
            }
        }
    }
    out
}

#[test]
fn lost_ack_step_by_step_80x24() {
    let mut app = open("demo/lost_ack.retry.cassette.json");
    assert_snapshot!(
        "lost_ack_step1_80x24",
        text(&screen(&mut app, 80, 24, true))
    );
    app.update(Action::Next);
    assert_snapshot!(
        "lost_ack_step2_80x24",
        text(&screen(&mut app, 80, 24, true))
    );
    app.update(Action::Next);
    assert_snapshot!(
        "lost_ack_step3_80x24",
        text(&screen(&mut app, 80, 24, true))
    );
}

#[test]
fn lost_ack_120x40() {
    let mut app = open("demo/lost_ack.retry.cassette.json");
    app.update(Action::Last);
    assert_snapshot!(
        "lost_ack_last_120x40",
        text(&screen(&mut app, 120, 40, true))
    );
}

#[test]
fn comparison_switches_runs() {
    let mut app = open("demo/rate_limit.all.comparison.json");
    assert_eq!(app.doc.kind, DocKind::Comparison);
    assert_eq!(app.doc.runs.len(), 3);
    assert_eq!(
        app.tab().label,
        "retry",
        "opens on the run that tells the story (it retries before the advertised wait)"
    );
    assert!(
        app.status.contains("it fails on Retry-after respected"),
        "{}",
        app.status
    );
    app.update(Action::NextRun);
    assert_eq!(app.tab().label, "resilient");
    app.update(Action::Last);
    assert_snapshot!(
        "comparison_resilient_120x40",
        text(&screen(&mut app, 120, 40, true))
    );
}

#[test]
fn nested_and_empty_traces() {
    let mut app = open("api/nested_sync.cassette.json");
    app.update(Action::PageDown);
    assert_snapshot!("nested_120x40", text(&screen(&mut app, 120, 40, true)));
    let mut empty = open("api/empty.cassette.json");
    assert_eq!(empty.cursor, None);
    empty.update(Action::Next);
    assert_snapshot!("empty_80x24", text(&screen(&mut empty, 80, 24, true)));
}

#[test]
fn help_overlay() {
    let mut app = open("demo/lost_ack.retry.cassette.json");
    app.update(Action::ToggleHelp);
    assert_eq!(app.mode, Mode::Help);
    assert_snapshot!("help_80x24", text(&screen(&mut app, 80, 24, true)));
    app.update(Action::Back);
    assert_eq!(app.mode, Mode::Browse);
    assert!(!app.quit);
}

#[test]
fn tiny_terminals_do_not_overlap_or_panic() {
    let mut app = open("demo/lost_ack.retry.cassette.json");
    for (w, h) in [(20, 5), (40, 10), (60, 15), (1, 1), (80, 12)] {
        let t = screen(&mut app, w, h, false);
        assert_eq!(t.backend().buffer().area.width, w);
    }
    let t = screen(&mut app, 40, 10, true);
    assert!(text(&t).contains("Timeline"));
}

#[test]
fn colour_marks_failures_and_duplicates() {
    let mut app = open("demo/lost_ack.retry.cassette.json");
    app.update(Action::Last);
    let t = screen(&mut app, 120, 40, false);
    let buf = t.backend().buffer();
    // The failed call's ✗ in the timeline is red; the duplicate marker ≡ is magenta.
    let failed = find(buf, "✗");
    assert!(
        failed.iter().any(|&p| buf[p].fg == Color::Red),
        "{failed:?}"
    );
    let dups = find(buf, "≡");
    assert!(!dups.is_empty() && dups.iter().all(|&p| buf[p].fg == Color::Magenta));
    // Without colour the symbols stay and no colour is used.
    let plain = screen(&mut app, 120, 40, true);
    let buf = plain.backend().buffer();
    assert!(!find(buf, "≡").is_empty() && !find(buf, "✗").is_empty());
    assert!(find(buf, "≡").iter().all(|&p| buf[p].fg == Color::Reset));
}

#[test]
fn stepping_jumps_and_filtering() {
    let mut app = open("demo/rate_limit.retry.cassette.json");
    assert_eq!(app.cursor, Some(0));
    app.update(Action::NextFault);
    assert_eq!(app.cursor, Some(1));
    app.update(Action::NextEffect);
    assert_eq!(
        app.selected().map(|c| c.tool.to_lossy()),
        Some("create_shipment".into())
    );
    app.update(Action::First);
    assert_eq!(app.cursor, Some(0));
    app.update(Action::PrevFault);
    assert_eq!(app.cursor, Some(0));
    assert!(app.status.contains("no earlier fault"));
    // `\` filters as you type; Enter keeps the filter.
    keys::type_keys(&mut app, "\\ship\n");
    assert_eq!(app.visible().len(), 1);
    assert_eq!(
        app.selected().map(|c| c.tool.to_lossy()),
        Some("create_shipment".into())
    );
    // Esc in the prompt clears it.
    keys::type_keys(&mut app, "\\\x1b");
    assert_eq!(app.visible().len(), 4);
    assert_eq!(app.filter, None);
}

#[test]
fn step_keys_step_whatever_pane_has_focus() {
    // Before: with Details focused, `j` scrolled Details instead of stepping (help said "next
    // step"). One meaning per key: `j` steps, `J` scrolls.
    let mut app = open("demo/lost_ack.retry.cassette.json");
    screen(&mut app, 100, 24, true);
    keys::type_keys(&mut app, "\t");
    assert_eq!(app.focus, Focus::Details);
    keys::type_keys(&mut app, "j");
    assert_eq!(app.cursor, Some(1), "j steps");
    assert_eq!(app.scroll[0], 0);
    keys::press(&mut app, keys::key(KeyCode::Down));
    assert_eq!(app.cursor, Some(2), "↓ steps");
    keys::type_keys(&mut app, "J");
    assert_eq!(app.scroll[0], 1, "J scrolls the focused pane");
}

#[test]
fn scrolling_stops_at_the_last_line() {
    // Before: `J` or the wheel scrolled Details into blank space without end.
    let mut app = open("demo/lost_ack.retry.cassette.json");
    keys::type_keys(&mut app, "G");
    let before = text(&screen(&mut app, 100, 24, true));
    keys::type_keys(&mut app, "\t");
    for _ in 0..200 {
        keys::type_keys(&mut app, "J");
    }
    let max = app.drawn.max_scroll[0];
    assert!(max > 0, "the pane has more lines than fit");
    assert_eq!(app.scroll[0], max, "clamped to the last line");
    let after = text(&screen(&mut app, 100, 24, true));
    assert_ne!(before, after);
    // The last line of the details is on screen, and the pane is not scrolled past it: the
    // row above the bottom border is not blank.
    let rows: Vec<&str> = after.lines().collect();
    let details_bottom = rows
        .iter()
        .position(|r| r.contains("┘┌") || r.ends_with("┘\""))
        .expect("bottom border");
    let last = rows[details_bottom - 1];
    let right = last.rsplit('│').nth(1).unwrap_or("");
    assert!(!right.trim().is_empty(), "{after}");
}

#[test]
fn mouse_click_selects_a_row() {
    let mut app = open("demo/lost_ack.retry.cassette.json");
    screen(&mut app, 100, 30, true);
    // Timeline body starts at row 2 (header, border), after the column header row: row 3 is call 1.
    let mouse = |kind, app: &mut App| {
        let event = Event::Terminal(TermEvent::Mouse(MouseEvent {
            kind,
            column: 10,
            row: 5,
            modifiers: KeyModifiers::NONE,
        }));
        for action in to_actions(event, app) {
            dispatch(app, action);
        }
    };
    mouse(MouseEventKind::Down(MouseButton::Left), &mut app);
    assert_eq!(app.cursor, Some(2));
    mouse(MouseEventKind::ScrollUp, &mut app);
    assert_eq!(app.cursor, Some(1));
}

#[test]
fn reload_keeps_the_cursor_and_survives_bad_files() {
    let dir = std::env::temp_dir().join(format!("toolstorm-tui-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path: PathBuf = dir.join("trace.json");
    std::fs::write(&path, common::fixture("demo/lost_ack.retry.cassette.json")).expect("write");
    let mut app = App::new(Document::open(&path).expect("open"));
    app.update(Action::Last);
    std::fs::write(&path, "{\"truncated\": ").expect("write");
    dispatch(&mut app, Action::FileChanged);
    assert_eq!(app.cursor, Some(2), "the last good state stays");
    assert!(
        app.status.contains("Invalid or excessively nested JSON"),
        "{}",
        app.status
    );
    std::fs::write(
        &path,
        common::fixture("demo/lost_ack.resilient.cassette.json"),
    )
    .expect("write");
    dispatch(&mut app, Action::FileChanged);
    assert_eq!(app.cursor, Some(2));
    assert_eq!(
        app.timeline().report().effects.len(),
        1,
        "the new content is shown"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_mcp_recording_shows_what_the_client_got_and_the_evidence() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("cassettes/mcp-incident.json");
    let mut doc = Document::open(&path).expect("opens");
    assert_eq!(doc.kind, DocKind::McpRecording);
    doc.path = Some(PathBuf::from("cassettes/mcp-incident.json"));
    let mut app = App::new(doc);
    // Call 1, selected on opening: the lost acknowledgement.
    let t = screen(&mut app, 120, 44, true);
    let s = text(&t);
    assert!(s.contains("mcp recording"), "{s}");
    assert!(s.contains("got a result with isError: true"), "{s}");
    assert!(
        s.contains("  text   ResponseLost: Tool completed;"),
        "the text the model saw: {s}"
    );
    // Beside it, what the server answered (issue 54): the shipment it committed.
    assert!(s.contains("server   answered, never delivered:"), "{s}");
    assert!(s.contains("SHP-0001"), "{s}");
    assert!(
        s.contains("evidence scenario: the scenario's effects"),
        "{s}"
    );
    assert!(s.contains("Real time"), "{s}");
    assert_snapshot!("mcp_recording_lost_ack_120x44", s);
}

#[test]
fn a_live_session_has_no_verdict_yet_and_a_call_in_flight_no_answer_yet() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("cassettes/mcp-incident.json");
    let mut doc = Document::open(&path).expect("opens");
    doc.path = Some(PathBuf::from("cassettes/mcp-incident.json"));
    // As the explorer reads a recording its proxy is still making: call 1 (the lost
    // acknowledgement's) has not been answered yet, and no call came after it.
    doc.live = true;
    let mut report = doc.runs[0].timeline.report().clone();
    report.calls.truncate(1);
    report.effects.retain(|e| e.call_id == 1);
    let call = &mut report.calls[0];
    (call.status, call.injected, call.elapsed) = (toolstorm::report::Status::Running, false, 0.0);
    doc.runs[0].timeline = toolstorm::timeline::Timeline::new(report);
    let mut app = App::new(doc);
    let t = screen(&mut app, 120, 44, false);
    let s = text(&t);
    let header = s.lines().next().unwrap_or_default();
    assert!(
        header.contains("toolstorm LIVE (check"),
        "no verdict while the session runs: {header}"
    );
    let live = find(t.backend().buffer(), "L")
        .into_iter()
        .find(|(_, y)| *y == 0)
        .expect("LIVE in the header");
    assert_eq!(
        t.backend().buffer()[live].fg,
        Theme::new(false).fault.fg.unwrap_or(Color::Reset),
        "LIVE is drawn as a fault's colour, neither pass nor fail"
    );
    assert!(s.contains("(no answer yet)"), "{s}");
    assert!(s.contains("in flight: the tool has it"), "{s}");
    assert!(s.contains("selected, not injected yet (the"), "{s}");
    assert!(!s.contains("the tool raised first"), "{s}");
    // Nobody holds this recording: the next second's tick sees the session over and reloads
    // it (a proxy killed after its last write changes no file).
    let commands = app.update(Action::Tick);
    assert!(
        commands
            .iter()
            .any(|c| matches!(c, toolstorm::tui::action::Command::Reload)),
        "{commands:?}"
    );
}

#[test]
fn a_zoom_made_for_a_small_terminal_ends_with_it_and_its_message_goes() {
    let mut app = open("demo/lost_ack.retry.cassette.json");
    // 50 x 12 shows one pane: Tab zooms the next one and says why.
    screen(&mut app, 50, 12, true);
    let drawn = toolstorm::tui::view::drawn(&app, app.size);
    app.apply_drawn(drawn);
    app.update(Action::FocusNext);
    assert!(app.zoom, "{}", app.status);
    assert!(
        app.status.contains("zoomed (the terminal shows one pane"),
        "{}",
        app.status
    );
    // The terminal grows: the zoom was the size's, so it ends and its message with it.
    let shown = screen(&mut app, 120, 40, true).backend().to_string();
    assert!(!app.zoom);
    assert!(!shown.contains("zoomed"), "{shown}");
    // A zoom the user asked for (z) stays across a resize.
    app.update(Action::ToggleZoom);
    screen(&mut app, 100, 30, true);
    assert!(app.zoom);
}
