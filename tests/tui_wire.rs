//! The wire view (`M`, issue 54 item 8): an MCP recording with a wire log beside it shows
//! every message of its session in order — time, direction, size, what it is, what became of
//! it — and the selected one pretty-printed and escaped; `/` searches, `n` goes on, `y`
//! copies, `Esc` from the copy comes back to the view and `Esc` again closes it. A recording
//! without a wire log says so.

mod common;
mod keys;

use std::path::{Path, PathBuf};

use insta::assert_snapshot;
use ratatui::style::Color;
use toolstorm::document::Document;
use toolstorm::tui::action::Command;
use toolstorm::tui::app::{App, Mode};

use keys::{draw, type_keys};
use toolstorm::tui::action::Action;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The bundled MCP incident copied into a scratch folder as `session.json`, with the wire
/// log fixture beside it when `wire` (a lost acknowledgement's session, a server
/// notification with control characters in it, and a torn last line).
fn recording(tag: &str, wire: bool) -> PathBuf {
    let dir = common::fresh_dir(tag);
    let copy = |from: &str, to: &str| {
        std::fs::copy(root().join(from), dir.join(to)).expect("copy");
    };
    copy("cassettes/mcp-incident.json", "session.json");
    copy("cassettes/mcp-incident.mcp.json", "session.mcp.json");
    if wire {
        copy(
            "tests/fixtures/mcp/wire/session.wire.jsonl",
            "session.wire.jsonl",
        );
    }
    dir.join("session.json")
}

fn open(path: &Path) -> App {
    App::new(Document::open(path).expect("opens"))
}

fn screen(app: &mut App, w: u16, h: u16) -> String {
    // Paths differ per run: the header names the file.
    draw(app, w, h)
        .backend()
        .to_string()
        .replace(&path_text(app), "session.json")
}

fn path_text(app: &App) -> String {
    app.doc
        .path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

#[test]
fn the_wire_view_lists_every_message_and_shows_the_selected_one_escaped() {
    let path = recording("tui-wire", true);
    let mut app = open(&path);
    let wire = app.wire().expect("the wire log is read").clone();
    assert_eq!(wire.entries.len(), 20, "every whole line");
    assert_eq!(wire.skipped, 1, "the torn last line is skipped, not fatal");

    type_keys(&mut app, "M");
    assert_eq!(app.mode, Mode::Wire);
    // To the server notification with an escape sequence and a bidi override in it.
    type_keys(&mut app, "/notifications/message\n");
    assert_eq!(app.mode, Mode::Wire);
    assert_eq!(
        app.wire_cursor.row, 12,
        "the first match: the server's notification"
    );
    let shown = screen(&mut app, 120, 36);
    // Pretty JSON shows a control character as its JSON escape; nothing reaches the terminal.
    assert!(shown.contains(r"\u001b[31mred\u202e text"), "{shown}");
    assert!(!shown.contains('\u{1b}') && !shown.contains('\u{202e}'));
    assert_snapshot!("wire_view_120x36", shown);

    // `n`: the same notification as the client got it.
    type_keys(&mut app, "n");
    assert_eq!(app.wire_cursor.row, 13);
    // What became of a message is searched too: the answer the lost ack held back.
    type_keys(&mut app, "/not delivered\n");
    assert_eq!(app.wire_cursor.row, 10, "{}", app.status);
}

#[test]
fn an_http_sessions_requests_show_with_their_status_and_headers() {
    // A wire log the proxy wrote for curl over Streamable HTTP: a session bound to its
    // credential, a lost acknowledgement, and a request under an unknown session (404).
    let path = recording("tui-wire-http", false);
    std::fs::copy(
        root().join("tests/fixtures/mcp/wire/http.wire.jsonl"),
        path.with_file_name("session.wire.jsonl"),
    )
    .expect("copy");
    let mut app = open(&path);
    type_keys(&mut app, "M");
    let shown = screen(&mut app, 120, 36);
    assert!(shown.contains("14 messages, 5 HTTP exchanges"), "{shown}");
    assert!(
        shown.contains("HTTP   POST /mcp → 200 text/event-stream"),
        "{shown}"
    );
    // Searched by its status, the refused request shows its headers, the credential
    // redacted as the recording keeps it.
    type_keys(&mut app, "/404 application\n");
    let shown = screen(&mut app, 120, 36);
    assert!(shown.contains("HTTP POST /mcp → 404"), "{shown}");
    assert!(shown.contains("request headers:"), "{shown}");
    assert!(shown.contains("mcp-session-id: nope"), "{shown}");
    type_keys(&mut app, "gg");
    type_keys(&mut app, "/authorization\n");
    let shown = screen(&mut app, 120, 36);
    assert!(shown.contains("authorization: [REDACTED]"), "{shown}");
    // Below the request's headers, scrolled to, the answer's: the session it issued.
    type_keys(&mut app, "JJJJJJ");
    let shown = screen(&mut app, 120, 36);
    assert!(shown.contains("response headers:"), "{shown}");
    assert!(shown.contains("mcp-session-id: 0fab5973"), "{shown}");
}

#[test]
fn what_the_proxy_made_and_what_never_arrived_have_their_own_colours() {
    let path = recording("tui-wire-colours", true);
    let mut app = open(&path);
    // The last message: the list shows the lost call's answers above it.
    type_keys(&mut app, "MG");
    let t = draw(&mut app, 120, 36);
    let buf = t.backend().buffer().clone();
    let row_of = |needle: &str| {
        (0..buf.area.height)
            .find(|&y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol().to_owned())
                    .collect::<String>()
                    .contains(needle)
            })
            .expect(needle)
    };
    // The server's real answer to the lost call never reached the client: failure red; the
    // answer the client got instead the proxy made: fault yellow; the rest plain.
    let held = row_of("(not delivered)");
    let made = row_of("(made by proxy)");
    let relayed = row_of("← tools/list #2");
    assert_eq!(buf[(30, held)].fg, Color::Red);
    assert_eq!(buf[(30, made)].fg, Color::Yellow);
    assert_eq!(buf[(30, relayed)].fg, Color::Reset);
}

#[test]
fn y_copies_the_selected_message_and_esc_comes_back_to_the_view() {
    let path = recording("tui-wire-copy", true);
    let mut app = open(&path);
    type_keys(&mut app, "Mj");
    // `y` there is the wire view's copy (the key's action, as the keymap gives it).
    let commands = app.update(Action::CopyCall);
    let copied = commands
        .iter()
        .find_map(|c| match c {
            Command::Copy(t) => Some(t.clone()),
            _ => None,
        })
        .expect("a copy");
    assert!(copied.contains("\"method\": \"initialize\""), "{copied}");
    assert!(matches!(app.mode, Mode::Show(..)));
    type_keys(&mut app, "\x1b");
    assert_eq!(app.mode, Mode::Wire, "back to the wire view");
    type_keys(&mut app, "\x1b");
    assert_eq!(app.mode, Mode::Browse);
}

#[test]
fn a_recording_without_a_wire_log_says_how_to_get_one() {
    let path = recording("tui-wire-none", false);
    let mut app = open(&path);
    assert!(app.wire().is_none());
    type_keys(&mut app, "M");
    assert_eq!(app.mode, Mode::Browse);
    assert!(app.status.contains("no wire log"), "{}", app.status);
}

#[test]
fn a_wire_log_that_is_a_fifo_or_a_folder_is_named_not_waited_on() {
    for (tag, make) in [("tui-wire-fifo", "fifo"), ("tui-wire-folder", "folder")] {
        let path = recording(tag, false);
        let log = path.with_file_name("session.wire.jsonl");
        match make {
            "fifo" => {
                let made = std::process::Command::new("mkfifo")
                    .arg(&log)
                    .status()
                    .expect("mkfifo");
                assert!(made.success());
            }
            _ => std::fs::create_dir(&log).expect("folder"),
        }
        // Opens at once (a FIFO is not read), and M says which file and why.
        let mut app = open(&path);
        type_keys(&mut app, "M");
        assert_eq!(app.mode, Mode::Browse);
        assert!(
            app.status.contains("the wire log cannot be read")
                && app.status.contains("session.wire.jsonl"),
            "{make}: {}",
            app.status
        );
    }
}
