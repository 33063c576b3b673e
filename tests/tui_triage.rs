//! The explorer for daily triage, driven by keys as a user drives it: search, jump, zoom,
//! copy, the scenario's story, editable prompts, messages that expire, one meaning per key,
//! and every pane reachable at every size.

mod common;
mod keys;

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Modifier;
use toolstorm::document::Document;
use toolstorm::tui::action::{Action, Command};
use toolstorm::tui::app::{App, Focus, MESSAGE_SECONDS, Mode, Purpose, StatusKind};
use toolstorm::tui::runtime::dispatch;
use toolstorm::tui::theme::Theme;

use keys::{ctrl, draw, key, press, type_keys};

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Opens a file of the repository under its relative name.
fn open(rel: &str) -> App {
    let mut doc = Document::open(&repo(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    doc.path = Some(PathBuf::from(rel));
    App::new(doc)
}

/// Opens a reference fixture.
fn fixture(rel: &str) -> App {
    let mut doc = Document::open(&common::fixture_path(rel)).expect("opens");
    doc.path = Some(PathBuf::from(rel));
    App::new(doc)
}

fn text(app: &mut App, w: u16, h: u16) -> String {
    draw(app, w, h).backend().to_string()
}

#[test]
fn the_answer_the_server_gave_and_the_client_never_got_is_shown_and_found() {
    // Before (issue 54): the sidecar kept the server's answer to the lost acknowledgement,
    // but Details said "Output (none: the call failed)" and search did not find it.
    let mut app = open("cassettes/mcp-incident.json");
    // Details of call 1 (selected on opening), zoomed so every line shows.
    type_keys(&mut app, "2z");
    let t = draw(&mut app, 120, 60);
    let s = t.backend().to_string();
    assert!(
        s.contains("client   got a result with isError: true"),
        "what the client got: {s}"
    );
    assert!(s.contains("server   answered, never delivered:"), "{s}");
    assert!(
        s.contains(r#"  text   {"order_id":"o-1","shipment_id":"SHP-0001"}"#),
        "what the server answered: {s}"
    );
    assert!(
        s.contains("(none reached the client: the call failed; the server's own answer is"),
        "{s}"
    );
    assert!(!s.contains("(none: the call failed)"), "{s}");
    // "answered, never delivered" is drawn in the fault's colour: the answer a fault took.
    let buf = t.backend().buffer();
    let (x, y) = (0..buf.area.height)
        .find_map(|y| {
            let row: String = (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_owned())
                .collect();
            row.find("answered, never")
                .map(|at| (row[..at].chars().count() as u16, y))
        })
        .expect("the line is drawn");
    assert_eq!(
        buf[(x, y)].fg,
        Theme::new(false)
            .fault
            .fg
            .unwrap_or(ratatui::style::Color::Reset)
    );
    // Search finds it: SHP-0001 is only in the dropped answer (the retry got SHP-0002).
    type_keys(&mut app, "z");
    type_keys(&mut app, "G/shp-0001\n");
    assert_eq!(app.cursor, Some(0), "{}", app.status);
    assert!(app.status.contains("match 1 of 1"), "{}", app.status);
}

#[test]
fn search_finds_payload_text_and_n_moves_between_matches() {
    let mut app = open("cassettes/incident.json");
    draw(&mut app, 120, 40);
    type_keys(&mut app, "/order-1729\n");
    let first = app.cursor.expect("a match");
    let call = app.selected().expect("call");
    assert!(
        toolstorm::json::canonical(&call.arguments).contains("order-1729"),
        "the match is in the arguments"
    );
    assert!(app.status.contains("match 1 of"), "{}", app.status);
    type_keys(&mut app, "n");
    let second = app.cursor.expect("next");
    assert!(second > first, "n moves on");
    type_keys(&mut app, "N");
    assert_eq!(app.cursor, Some(first), "N moves back");
    // The match is highlighted in Details.
    let t = draw(&mut app, 120, 40);
    let buf = t.backend().buffer();
    let area = buf.area;
    let marked = (0..area.height).any(|y| {
        (0..area.width).any(|x| {
            let cell = &buf[(x, y)];
            cell.symbol() == "o" && cell.modifier.contains(Modifier::REVERSED)
        })
    });
    assert!(marked, "the matched text is reversed in Details");
    // The selected call counts as the first match.
    type_keys(&mut app, "g/cloud-01\n");
    assert_eq!(app.cursor, Some(0), "{}", app.status);
    type_keys(&mut app, "/order-1729\n");
    assert_eq!(app.cursor, Some(first));
    type_keys(&mut app, "/order-1729\n");
    assert_eq!(
        app.cursor,
        Some(first),
        "a match on the selected call stays"
    );
    // Enter on an empty search repeats the last one.
    type_keys(&mut app, "/\n");
    assert_eq!(app.cursor, Some(second));
    assert!(!app.status.contains("(wrapped)"), "{}", app.status);
    // Going on past the last match goes round to the first, and says so.
    let mut went_round = false;
    for _ in 0..50 {
        type_keys(&mut app, "n");
        if app.status.contains("match 1 of") {
            assert!(app.status.contains("(wrapped)"), "{}", app.status);
            went_round = true;
            break;
        }
        assert!(!app.status.contains("(wrapped)"), "{}", app.status);
    }
    assert!(went_round, "the search never came back to its first match");
    // And back from the first to the last.
    type_keys(&mut app, "N");
    assert!(
        app.status.contains("(wrapped)"),
        "back past the first: {}",
        app.status
    );
    type_keys(&mut app, "n");
    type_keys(&mut app, "g");
    type_keys(&mut app, "/order-1729\n");
    type_keys(&mut app, "n");
    assert_eq!(app.cursor, Some(second));
    type_keys(&mut app, "k");
    // A search that matches nothing says so and keeps the cursor.
    type_keys(&mut app, "/no-such-thing\n");
    assert_eq!(app.cursor, Some(first));
    assert_eq!(app.status_kind, StatusKind::Error);
}

#[test]
fn jump_goes_to_a_call_id_and_refuses_others() {
    let mut app = fixture("api/nested_sync.cassette.json");
    draw(&mut app, 120, 40);
    type_keys(&mut app, ":7\n");
    assert_eq!(app.selected().map(|c| c.id), Some(7));
    let screen = text(&mut app, 120, 40);
    assert!(screen.contains("#7/11"), "position indicator: {screen}");
    type_keys(&mut app, ":99\n");
    assert_eq!(app.selected().map(|c| c.id), Some(7));
    assert!(
        app.status.contains("ids run from 1 to 11"),
        "{}",
        app.status
    );
}

#[test]
fn prompts_edit_like_a_shell_line() {
    // Before: cursor keys, Home/End and Ctrl-U/W/A/E typed letters into the prompt.
    let mut app = open("cassettes/incident.json");
    type_keys(&mut app, "/ship");
    press(&mut app, key(KeyCode::Home));
    type_keys(&mut app, "x");
    press(&mut app, ctrl('e'));
    type_keys(&mut app, "y");
    let value = |app: &App| match &app.mode {
        Mode::Typing(Purpose::Search, f) => f.value().to_owned(),
        other => panic!("{other:?}"),
    };
    assert_eq!(value(&app), "xshipy");
    press(&mut app, ctrl('a'));
    press(&mut app, key(KeyCode::Right));
    press(&mut app, key(KeyCode::Delete));
    assert_eq!(value(&app), "xhipy");
    press(&mut app, ctrl('w'));
    assert_eq!(
        value(&app),
        "hipy",
        "Ctrl-W deletes the word before the cursor"
    );
    press(&mut app, key(KeyCode::End));
    press(&mut app, ctrl('w'));
    assert_eq!(value(&app), "");
    type_keys(&mut app, "two words");
    press(&mut app, ctrl('u'));
    assert_eq!(value(&app), "");
    // The prompt line shows the text and a cursor cell.
    type_keys(&mut app, "abc");
    let screen = text(&mut app, 80, 24);
    assert!(
        screen
            .lines()
            .last()
            .is_some_and(|l| l.contains("search: abc")),
        "{screen}"
    );
    press(&mut app, key(KeyCode::Esc));
    assert_eq!(app.mode, Mode::Browse);
}

#[test]
fn the_kind_field_offers_the_six_kinds() {
    let mut app = open("scenarios/lost_ack.json");
    type_keys(&mut app, "i");
    assert_eq!(app.mode, Mode::Edit);
    // Field 3 is the kind.
    type_keys(&mut app, "jj\n");
    assert!(matches!(app.mode, Mode::PickKind(_)), "{:?}", app.mode);
    let screen = text(&mut app, 120, 40);
    for kind in [
        "timeout",
        "rate_limit",
        "unavailable",
        "response_lost",
        "replace",
        "latency",
    ] {
        assert!(screen.contains(kind), "{kind}: {screen}");
    }
    // response_lost → one down is replace.
    type_keys(&mut app, "j\n");
    assert_eq!(app.mode, Mode::Edit);
    let e = app.editor.as_ref().expect("editor");
    assert_eq!(
        e.field_text(0, toolstorm::lab::edit::Field::Kind),
        "replace"
    );
}

#[test]
fn editing_a_probability_says_the_scenario_overrides_it() {
    // Before: the edit silently did nothing (every bundled scenario sets `probability`).
    let mut app = open("scenarios/lost_ack.json");
    type_keys(&mut app, "i");
    type_keys(&mut app, "jjjj\n");
    assert!(matches!(app.mode, Mode::Typing(Purpose::Field, _)));
    assert!(
        app.status.contains("overrides every rule"),
        "{}",
        app.status
    );
}

#[test]
fn messages_replace_each_other_and_expire() {
    // Before: an old message became a prefix of the next one, and none ever went away.
    let mut app = open("cassettes/incident.json");
    type_keys(&mut app, "gF");
    let first = app.status.clone();
    assert_eq!(first, "no earlier fault");
    type_keys(&mut app, "E");
    assert_eq!(app.status, "no earlier effect", "replaced whole");
    for _ in 0..MESSAGE_SECONDS {
        dispatch(&mut app, Action::Tick);
    }
    assert!(app.status.is_empty(), "{}", app.status);
    let screen = text(&mut app, 100, 30);
    assert!(
        screen.lines().last().is_some_and(|l| l.contains("? keys")),
        "the key hints come back: {screen}"
    );
    // Errors stay until replaced.
    type_keys(&mut app, ":0\n");
    assert_eq!(app.status_kind, StatusKind::Error);
    for _ in 0..MESSAGE_SECONDS * 3 {
        dispatch(&mut app, Action::Tick);
    }
    assert!(!app.status.is_empty());
    // A long message can be read whole, with the ones before it.
    type_keys(&mut app, "m");
    assert!(
        matches!(&app.mode, Mode::Show(title, text) if title.starts_with("Messages")
            && text.lines().next().is_some_and(|l| l.contains("no call"))),
        "{:?}",
        app.mode
    );
    type_keys(&mut app, "x");
    assert_eq!(app.mode, Mode::Browse);
}

#[test]
fn escape_closes_things_and_never_quits() {
    let mut app = open("cassettes/incident.json");
    type_keys(&mut app, "z");
    assert!(app.zoom);
    press(&mut app, key(KeyCode::Esc));
    assert!(!app.zoom);
    type_keys(&mut app, "t");
    assert!(app.story);
    press(&mut app, key(KeyCode::Esc));
    assert!(!app.story);
    press(&mut app, key(KeyCode::Esc));
    assert!(!app.quit, "Esc at the top level does not quit");
    assert!(app.status.contains("q quits"), "{}", app.status);
    type_keys(&mut app, "q");
    assert!(app.quit);
}

#[test]
fn zoom_shows_a_pane_whole_at_any_size() {
    let mut app = open("scenarios/lost_ack.json");
    // 60×15 has no room for the bottom panels: Tab visits only what is drawn.
    draw(&mut app, 60, 15);
    for _ in 0..6 {
        type_keys(&mut app, "\t");
        assert!(
            app.drawn.panes.contains(&app.focus),
            "focus on an undrawn pane: {:?}",
            app.focus
        );
    }
    assert!(!app.drawn.panes.contains(&Focus::Verdicts));
    // Zoomed, the verdicts pane is reachable: z on the timeline, then Tab cycles every pane.
    type_keys(&mut app, "z");
    let mut seen = Vec::new();
    for _ in 0..6 {
        type_keys(&mut app, "\t");
        seen.push(app.focus);
        let screen = text(&mut app, 60, 15);
        let title = screen.lines().nth(1).unwrap_or("").to_lowercase();
        assert!(
            title.contains(&app.focus.label().to_lowercase()),
            "{:?} is the zoomed pane: {screen}",
            app.focus
        );
    }
    assert!(seen.contains(&Focus::Verdicts), "{seen:?}");
    let screen = text(&mut app, 60, 15);
    assert!(screen.contains("zoom"), "{screen}");
}

#[test]
fn copy_gives_the_call_and_the_command_and_shows_them() {
    let mut app = open("scenarios/lost_ack.json");
    draw(&mut app, 120, 40);
    let commands = app.update(Action::CopyCall);
    let Some(Command::Copy(json)) = commands.first() else {
        panic!("{commands:?}");
    };
    let call = app.selected().expect("call");
    assert_eq!(
        toolstorm::json::parse(json).expect("json"),
        call.to_value(),
        "the selected call, as JSON"
    );
    assert!(matches!(app.mode, Mode::Show(..)), "shown as well");
    assert!(
        app.status.contains("copied call #"),
        "y says it copied: {}",
        app.status
    );
    let Mode::Show(title, _) = &app.mode else {
        panic!("shown");
    };
    assert!(title.ends_with("· copied"), "{title}");
    type_keys(&mut app, "x");
    type_keys(&mut app, "sY");
    let Mode::Show(_, command) = &app.mode else {
        panic!("{:?}", app.mode);
    };
    assert!(
        command.contains("toolstorm-tui run scenarios/lost_ack.json --policy retry --seed 43"),
        "{command}"
    );
    assert!(
        command.contains("save them first"),
        "unsaved seed: {command}"
    );
    // The command reproduces the run: same digest.
    let words: Vec<&str> = command.lines().next().unwrap_or("").split(' ').collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(&words[1..])
        .arg("--json")
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&app.tab().digest), "{stdout}");

    // A recording: the mcp command that records it again — to a new file beside it, never
    // over the incident — and the replay.
    let mut mcp = open("cassettes/mcp-incident.json");
    mcp.update(Action::CopyCommand);
    let Mode::Show(_, command) = &mcp.mode else {
        panic!("{:?}", mcp.mode);
    };
    assert!(
        command.contains("mcp scenarios/mcp-lost-ack.json --seed ")
            && command.contains("--record cassettes/mcp-incident.again.json --append --"),
        "{command}"
    );
    assert!(
        !command.contains("--record cassettes/mcp-incident.json"),
        "{command}"
    );
    assert!(
        command.contains("--replay cassettes/mcp-incident.json"),
        "{command}"
    );
    // It starts the server the README builds (a release build), not a debug one.
    assert!(
        command.contains("-- target/release/examples/mcp_shipping_server"),
        "{command}"
    );
    // A shipping cassette is not a scenario: Y gives the check that judges it (never a run
    // command that fails with "missing world").
    let mut cassette = open("cassettes/incident.json");
    cassette.update(Action::CopyCommand);
    let Mode::Show(_, command) = &cassette.mode else {
        panic!("{:?}", cassette.mode);
    };
    assert!(
        command.contains("check cassettes/incident.json") && !command.contains(" run "),
        "{command}"
    );
}

#[test]
fn the_story_is_one_key_away_and_files_open_on_it() {
    let mut app = open("scenarios/rate_limit.json");
    assert_eq!(app.tab().label, "retry", "the run that retries too early");
    type_keys(&mut app, "t");
    let screen = text(&mut app, 100, 30);
    assert!(screen.contains("Rate-limited inventory reads"), "{screen}");
    assert!(screen.contains("the lesson"), "{screen}");
    let mut app = open("cassettes/mcp-incident.json");
    type_keys(&mut app, "t");
    let screen = text(&mut app, 100, 30);
    assert!(
        screen.contains("An MCP session") && screen.contains("rmcp"),
        "{screen}"
    );
}

#[test]
fn every_verdict_names_its_contract() {
    // Before: the lost-ack comparison showed PASS where its scenario runs FAIL, without saying
    // which contract either came from.
    let mut app = open("cassettes/lost-ack-comparison.json");
    let screen = text(&mut app, 120, 40);
    assert!(screen.contains("FAIL (recorded lab contract)"), "{screen}");
    assert!(
        screen.contains("contract: lab contract recorded in"),
        "{screen}"
    );
    let mut app = open("cassettes/incident.json");
    let screen = text(&mut app, 120, 40);
    assert!(
        screen.contains("(check)") && screen.contains("contract: check · budget 100"),
        "{screen}"
    );
}

#[test]
fn help_scrolls_at_a_tiny_size() {
    let mut app = open("cassettes/incident.json");
    draw(&mut app, 40, 10);
    type_keys(&mut app, "?");
    assert_eq!(app.mode, Mode::Help);
    let top = text(&mut app, 40, 10);
    assert!(top.contains("next step"), "{top}");
    for _ in 0..200 {
        press(
            &mut app,
            KeyEvent::new(KeyCode::PageDown, KeyModifiers::NONE),
        );
    }
    let bottom = text(&mut app, 40, 10);
    assert!(
        bottom.contains("closes it"),
        "the last line is reachable: {bottom}"
    );
    assert!(app.help_scroll > 0 && app.help_scroll == app.drawn.help_max);
}

#[test]
fn a_recorded_decision_the_seed_disagrees_with_says_so() {
    // Before: a hand-made file whose faults disagree with its seed read "selected: draw ... ≥ p",
    // a contradiction. Lower the rule's probability so that the seed no longer selects it.
    let original = std::fs::read_to_string(repo("cassettes/incident.json")).expect("read");
    let edited = original.replacen("\"probability\":1.0", "\"probability\":0.0001", 1);
    assert_ne!(original, edited);
    let path = std::env::temp_dir().join(format!("toolstorm-handmade-{}.json", std::process::id()));
    std::fs::write(&path, edited).expect("write");
    let mut app = App::new(Document::open(&path).expect("still a valid cassette"));
    type_keys(&mut app, "f");
    assert!(app.selected().is_some_and(|c| c.fault.is_some()));
    let screen = text(&mut app, 160, 50);
    assert!(
        screen.contains("selected in the recording,")
            && screen.contains("decision differs from what the seed gives"),
        "{screen}"
    );
    assert!(!screen.contains("selected: draw"), "{screen}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn the_duplicate_mark_survives_a_narrow_timeline() {
    let mut app = open("cassettes/incident.json");
    for (w, h) in [(50, 20), (40, 12), (30, 10)] {
        let screen = text(&mut app, w, h);
        assert!(screen.contains('≡'), "{w}x{h}: {screen}");
        assert!(screen.contains('✗'), "{w}x{h}: {screen}");
    }
}

#[test]
fn the_comparison_stays_whole_beside_the_editor() {
    // Before: the rule editor covered half of the compare view.
    let mut app = open("scenarios/lost_ack.json");
    type_keys(&mut app, "ijjj\n");
    press(&mut app, ctrl('u'));
    type_keys(&mut app, "3\nc");
    assert!(app.editing(), "{:?}", app.mode);
    let screen = text(&mut app, 120, 40);
    assert!(screen.contains("Compare · FAIL → FAIL · retry"), "{screen}");
    assert!(screen.contains("Rules · lost_ack"), "{screen}");
    for row in [
        "previous",
        "calls +0 -1 ~1",
        "✗→✓ No duplicate side effects",
    ] {
        assert!(screen.contains(row), "{row}: {screen}");
    }
}

#[test]
fn five_digit_ids_keep_the_columns_and_marks_never_touch_an_id() {
    let mut app = open("tests/fixtures/reference/api/large_public_10000.cassette.json");
    type_keys(&mut app, "G");
    let screen = text(&mut app, 120, 36);
    let rows: Vec<&str> = screen.lines().collect();
    // Where an id's last digit sits, for the rows of ids 9999 and 10000.
    let end_of = |id: &str| {
        rows.iter().find_map(|r| {
            let cells: Vec<char> = r.chars().collect();
            let text: String = cells.iter().take(14).collect();
            text.find(&format!(" {id} "))
                .map(|i| text[..i].chars().count() + 1 + id.len())
        })
    };
    let (a, b) = (end_of("9999"), end_of("10000"));
    assert!(
        a.is_some() && a == b,
        "ids are right-aligned in one column: {a:?} {b:?}\n{screen}"
    );
    for r in &rows {
        let marked = r
            .chars()
            .collect::<Vec<_>>()
            .windows(2)
            .any(|w| matches!(w[0], '✗' | '◆' | '◇' | '»') && w[1].is_ascii_digit());
        assert!(!marked, "a mark touches an id: {r}");
    }
}

#[test]
fn a_selected_verdict_shows_its_reasons_and_x_walks_its_calls() {
    let mut app = open("cassettes/incident.json");
    draw(&mut app, 120, 36);
    // With no verdict selected, the calls behind the failed verdict are marked.
    let screen = text(&mut app, 120, 36);
    let row = |s: &str, id: &str| {
        s.lines()
            .find(|l| l.contains(&format!(" {id}   0.")))
            .unwrap_or_else(|| panic!("row {id}: {s}"))
            .to_owned()
    };
    assert!(row(&screen, "2").contains('»') && row(&screen, "3").contains('»'));
    assert!(!row(&screen, "1").contains('»'), "{screen}");
    // `>` selects the failed verdict first and goes to the first call it names.
    type_keys(&mut app, ">");
    assert_eq!(
        app.verdict,
        Some(1),
        "the duplicates check is the run's second"
    );
    assert_eq!(app.cursor, Some(1), "call #2");
    assert!(
        app.status
            .contains("verdict 1 of 3: ✗ No duplicate side effects"),
        "{}",
        app.status
    );
    let screen = text(&mut app, 120, 36);
    assert!(screen.contains("Verdicts · 1 of 3"), "{screen}");
    assert!(screen.contains("» call #3 committed shipment"), "{screen}");
    // x walks the calls it names, and wraps.
    type_keys(&mut app, "x");
    assert_eq!(app.cursor, Some(2));
    assert!(
        app.status.starts_with("call 2 of 2 · ✗ No duplicate"),
        "{}",
        app.status
    );
    type_keys(&mut app, "x");
    assert_eq!(app.cursor, Some(1));
    assert!(app.status.contains("(wrapped)"), "{}", app.status);
    type_keys(&mut app, "X");
    assert_eq!(app.cursor, Some(2));
    // The next verdict passes and names the faulted call.
    type_keys(&mut app, ">");
    assert_eq!(app.verdict, Some(0));
    assert_eq!(app.cursor, Some(1));
    assert!(app.status.contains("names 1 call"), "{}", app.status);
    // A passing budget names none; Esc goes back to every failed verdict.
    type_keys(&mut app, ">");
    assert!(app.status.contains("names no call"), "{}", app.status);
    dispatch(&mut app, Action::Back);
    assert_eq!(app.verdict, None);
    assert_eq!(app.named.calls, vec![1, 2]);
}

#[test]
fn a_named_call_is_marked_in_the_failure_colour() {
    let mut app = open("cassettes/incident.json");
    type_keys(&mut app, "gj");
    let t = draw(&mut app, 120, 36);
    let buf = t.backend().buffer();
    let screen = t.backend().to_string();
    let y = screen
        .lines()
        .position(|l| l.contains("  3   0.200"))
        .expect("row of call #3") as u16;
    let x = screen
        .lines()
        .nth(y as usize)
        .expect("row")
        .chars()
        .position(|c| c == '3')
        .expect("id") as u16;
    let colour = Theme::new(false).failed.fg;
    assert_eq!(
        buf[(x, y)].fg,
        colour.expect("a colour"),
        "the id of a named call"
    );
    let y1 = screen
        .lines()
        .position(|l| l.contains("  1   0.000"))
        .expect("row of call #1") as u16;
    assert_ne!(buf[(x, y1)].fg, colour.expect("a colour"), "an unnamed id");
}

#[test]
fn every_verdict_of_the_retry_storm_leads_to_its_calls() {
    let mut app = open("cassettes/rate-limit-retry-storm.json");
    type_keys(&mut app, ">");
    let check = &app.tab().checks[app.verdict.expect("selected")];
    assert_eq!(check.name, "Retry-after respected");
    let screen = text(&mut app, 120, 36);
    insta::assert_snapshot!("verdict_calls_retry_storm_120x36", screen);
    assert_eq!(app.cursor, Some(1), "call #2 advertised the wait");
    type_keys(&mut app, "x");
    assert_eq!(app.cursor, Some(2), "call #3 retried too soon");
}

#[test]
fn the_summary_gives_the_shape_of_a_real_sized_run_and_enter_filters_to_a_row() {
    let mut app = fixture("api/large_public_10000.cassette.json");
    type_keys(&mut app, "T");
    assert!(matches!(app.mode, Mode::Summary(_)), "{:?}", app.mode);
    let screen = text(&mut app, 120, 36);
    assert!(
        screen.contains("Summary · 10000 calls · 1119 duplicate commits · sorted by calls"),
        "{screen}"
    );
    // Sort by duplicate commits (four columns right of calls): the tools that duplicated lead.
    type_keys(&mut app, "lllll");
    let Mode::Summary(cursor) = app.mode else {
        panic!("summary closed")
    };
    let rows = app.summary_rows(&cursor);
    let tools: Vec<(&str, u64)> = rows
        .iter()
        .filter(|r| r.kind == toolstorm::summary::RowKind::Tool)
        .map(|r| (r.name.as_str(), r.duplicates))
        .collect();
    assert_eq!(tools[0], ("create_shipment", 561));
    assert_eq!(tools[1], ("notify", 558));
    let dups: u64 = tools.iter().map(|t| t.1).sum();
    assert_eq!(dups, app.timeline().report().duplicate_effects() as u64);
    let screen = text(&mut app, 120, 36);
    assert!(screen.contains("dups▼"), "{screen}");
    insta::assert_snapshot!("summary_large_by_duplicates_120x36", screen);
    // `r` reverses, Enter filters the timeline to the selected row and closes.
    type_keys(&mut app, "rr\n");
    assert_eq!(app.mode, Mode::Browse);
    assert_eq!(app.filter.as_deref(), Some("tool:\"create_shipment\""));
    assert_eq!(app.visible().len(), 3281);
    // A rule's row filters to the calls it was eligible for.
    type_keys(&mut app, "T");
    let Mode::Summary(cursor) = app.mode else {
        panic!("summary")
    };
    let rows = app.summary_rows(&cursor);
    let at = rows
        .iter()
        .position(|r| r.kind == toolstorm::summary::RowKind::Rule && r.name == "stale")
        .expect("rule row");
    for _ in 0..at {
        type_keys(&mut app, "j");
    }
    type_keys(&mut app, "\n");
    assert_eq!(app.filter.as_deref(), Some("eligible:\"stale\""));
    assert_eq!(app.visible().len(), 3);
}

#[test]
fn filters_take_field_terms_and_combine_them() {
    let mut app = fixture("api/large_public_10000.cassette.json");
    type_keys(&mut app, "\\status:error tool:create_*\n");
    let calls = &app.timeline().report().calls;
    let want = calls
        .iter()
        .filter(|c| c.failed() && c.tool == "create_shipment")
        .count();
    assert_eq!(app.visible().len(), want);
    assert_eq!(want, 707);
    assert_eq!(app.status_kind, StatusKind::Info);
    assert!(
        app.status
            .contains("filter applied: 707 of 10000 calls shown"),
        "{}",
        app.status
    );
    // A half-typed filter's error does not outlive the finished one.
    type_keys(&mut app, "\\");
    dispatch(&mut app, Action::Cancel);
    type_keys(&mut app, "\\status:");
    type_keys(&mut app, "error\n");
    assert_eq!(app.status_kind, StatusKind::Info, "{}", app.status);
    assert!(app.status.contains("778 of 10000"), "{}", app.status);
    // is:dup keeps the calls that committed a duplicate; d / D move between them unfiltered.
    type_keys(&mut app, "\\");
    dispatch(&mut app, Action::Cancel);
    type_keys(&mut app, "\\is:dup\n");
    let t = app.timeline();
    let dup_calls: Vec<usize> = (0..t.len()).filter(|&i| t.commits_duplicate(i)).collect();
    assert_eq!(app.visible(), dup_calls);
    // A word with a colon that is not a field (MCP tools are named `fs:write`) is text, and
    // the status line says so; an unknown `is:` is refused and hides nothing.
    type_keys(&mut app, "\\");
    dispatch(&mut app, Action::Cancel);
    type_keys(&mut app, "\\colour:red\n");
    assert!(
        app.status.contains("colour: is not a field"),
        "{}",
        app.status
    );
    assert_eq!(app.visible().len(), 0);
    type_keys(&mut app, "\\");
    dispatch(&mut app, Action::Cancel);
    type_keys(&mut app, "\\is:slow\n");
    assert_eq!(app.status_kind, StatusKind::Error);
    assert_eq!(app.visible().len(), 10_000);
}

#[test]
fn d_moves_to_the_next_duplicate_commit() {
    let mut app = open("cassettes/incident.json");
    assert_eq!(app.cursor, Some(0));
    type_keys(&mut app, "d");
    assert_eq!(app.cursor, Some(2), "call #3 committed the second shipment");
    type_keys(&mut app, "d");
    assert_eq!(app.cursor, Some(2));
    assert!(
        app.status.contains("no later duplicate commit"),
        "{}",
        app.status
    );
    type_keys(&mut app, "gD");
    assert_eq!(app.cursor, Some(0));
}

#[test]
fn m_shows_the_recent_messages_newest_first() {
    let mut app = open("cassettes/incident.json");
    type_keys(&mut app, ":9\n"); // an error
    type_keys(&mut app, ":2\n"); // information
    type_keys(&mut app, "m");
    let Mode::Show(title, text) = &app.mode else {
        panic!("{:?}", app.mode)
    };
    assert!(title.starts_with("Messages · the last"), "{title}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("call #2 of 3"), "{text}");
    assert!(lines[1].contains("no call \"9\""), "{text}");
}

#[test]
fn number_keys_focus_panes_and_zoom_one_the_screen_cannot_show() {
    let mut app = open("cassettes/incident.json");
    draw(&mut app, 120, 40);
    type_keys(&mut app, "6");
    assert_eq!(app.focus, Focus::Verdicts);
    type_keys(&mut app, "3");
    assert_eq!(app.focus, Focus::Lanes);
    assert!(!app.zoom);
    type_keys(&mut app, "2");
    assert_eq!(app.focus, Focus::Details);
    type_keys(&mut app, "1");
    assert_eq!(app.focus, Focus::Timeline);
    // At 40x10 the bottom panes are not drawn: 5 zooms the effect ledger.
    draw(&mut app, 40, 10);
    type_keys(&mut app, "5");
    assert_eq!(app.focus, Focus::Effects);
    assert!(app.zoom, "{}", app.status);
    let screen = text(&mut app, 40, 10);
    assert!(screen.contains("Effects"), "{screen}");
}

#[test]
fn search_scrolls_details_to_the_match_and_details_says_where_it_is() {
    let mut app = fixture("api/large_public_10000.cassette.json");
    // A short Details pane: the payloads do not fit.
    let screen = text(&mut app, 120, 24);
    assert!(screen.contains("Details · lines 1–"), "{screen}");
    let (first, _) = (app.scroll[0], ());
    assert_eq!(first, 0);
    type_keys(&mut app, "/AMS-01\n");
    let screen = text(&mut app, 120, 24);
    // The highlighted match is on screen in Details (the timeline shows no payloads).
    assert!(screen.contains("\"warehouse\": \"AMS-01\""), "{screen}");
    assert!(app.scroll[0] > 0, "Details scrolled to the match: {screen}");
}

#[test]
fn tab_reaches_the_lanes_and_shows_something_new_on_a_tiny_screen() {
    let mut app = open("scenarios/orbit-parallel.json");
    draw(&mut app, 120, 36);
    type_keys(&mut app, "\t\t");
    assert_eq!(app.focus, Focus::Lanes);
    let t = draw(&mut app, 120, 36);
    let screen = t.backend().to_string();
    let y = screen
        .lines()
        .position(|l| l.contains("Batch lanes"))
        .expect("the batch lanes") as u16;
    // The focused pane's border is in the focus colour.
    let buf = t.backend().buffer();
    assert_eq!(buf[(0, y)].fg, Theme::new(false).focus.fg.expect("colour"));
    type_keys(&mut app, "z");
    let screen = text(&mut app, 120, 36);
    assert!(
        screen
            .lines()
            .nth(1)
            .is_some_and(|l| l.contains("Batch lanes")),
        "{screen}"
    );
    type_keys(&mut app, "z");
    // At 40x10 only the timeline fits: Tab zooms the next pane instead of doing nothing.
    let mut app = open("cassettes/incident.json");
    draw(&mut app, 40, 10);
    assert_eq!(app.drawn.panes, vec![Focus::Timeline]);
    type_keys(&mut app, "\t");
    assert!(app.zoom);
    assert_eq!(app.focus, Focus::Details);
    let screen = text(&mut app, 40, 10);
    assert!(
        screen.lines().nth(1).is_some_and(|l| l.contains("Details")),
        "{screen}"
    );
}

#[test]
fn jump_takes_a_batch_call_id_in_an_executor_run() {
    let mut app = open("scenarios/orbit-parallel.json");
    type_keys(&mut app, ":call_C\n");
    assert_eq!(app.cursor, Some(2), "{}", app.status);
    assert!(
        app.status.starts_with("call_C: attempt 1 of 1"),
        "{}",
        app.status
    );
    // call_A ran twice (a retry): : again goes to the next attempt.
    type_keys(&mut app, ":call_A\n");
    assert_eq!(app.cursor, Some(4));
    type_keys(&mut app, ":call_A\n");
    assert_eq!(app.cursor, Some(0));
    type_keys(&mut app, ":call_Z\n");
    assert_eq!(app.status_kind, StatusKind::Error);
    assert!(app.status.contains("batch call id"), "{}", app.status);
}

#[test]
fn the_executor_timeline_keeps_its_start_times_and_whole_phases() {
    let mut app = open("scenarios/orbit-parallel.json");
    let screen = text(&mut app, 120, 36);
    let header = screen.lines().nth(2).expect("header");
    assert!(
        header.contains("start") && header.contains("call"),
        "{screen}"
    );
    assert!(screen.contains("before execution"), "{screen}");
}

#[test]
fn a_move_that_works_clears_a_stale_nothing_found() {
    let mut app = open("cassettes/incident.json");
    type_keys(&mut app, "G");
    type_keys(&mut app, "f");
    assert!(app.status.contains("no later fault"), "{}", app.status);
    type_keys(&mut app, "F");
    assert_eq!(app.cursor, Some(1));
    assert!(app.status.is_empty(), "stale: {}", app.status);
    // Other messages stay when the cursor moves.
    type_keys(&mut app, ":3\n");
    assert!(app.status.contains("call #3"), "{}", app.status);
    // A key that closes a modal does nothing else.
    type_keys(&mut app, "m");
    let at = app.cursor;
    type_keys(&mut app, "k");
    assert_eq!(app.mode, Mode::Browse);
    assert_eq!(app.cursor, at, "the closing key did not also step");
}

#[test]
fn a_filter_combines_with_search_and_clearing_it_keeps_the_cursor() {
    let mut app = fixture("api/large_public_10000.cassette.json");
    type_keys(&mut app, "\\tool:notify is:error\n");
    let visible = app.visible();
    assert_eq!(visible.len(), 40);
    // The search moves only among the calls the filter shows.
    type_keys(&mut app, "/error\n");
    for _ in 0..5 {
        let at = app.cursor.expect("cursor");
        assert!(visible.contains(&at), "the search left the filter");
        type_keys(&mut app, "n");
    }
    let at = app.cursor;
    // Clearing the filter keeps the selected call.
    type_keys(&mut app, "\\");
    dispatch(&mut app, Action::Cancel);
    assert_eq!(app.filter, None);
    assert_eq!(app.cursor, at);
    assert_eq!(app.visible().len(), 10_000);
}

#[test]
fn cut_titles_and_file_names_end_in_an_ellipsis() {
    let mut app = open("cassettes/incident.json");
    type_keys(&mut app, "G");
    let screen = text(&mut app, 120, 40);
    // Before: `1 duplicat┐`, cut with nothing to say so.
    assert!(screen.contains("2 commits, 1 duplic… ┐"), "{screen}");
    // A header too narrow for the path keeps the file's name, not a cut path.
    let screen = text(&mut app, 100, 30);
    let header = screen.lines().next().expect("header");
    assert!(header.contains("· incident.json"), "{header}");
    assert!(!header.contains("cassettes/incident.j "), "{header}");
}

#[test]
fn a_selected_verdict_follows_its_name_when_the_checks_change() {
    let mut app = open("cassettes/incident.json");
    type_keys(&mut app, ">");
    assert_eq!(app.verdict, Some(1));
    // A rerun or reload with other checks (same report): the selection follows the name, and
    // the reasons are worked out again (before: a stale index could point past the checks).
    app.doc.runs[0].checks.remove(0);
    dispatch(&mut app, Action::Tick);
    assert_eq!(app.verdict, Some(0), "still No duplicate side effects");
    assert_eq!(app.named.reasons[0].0, 0);
    app.doc.runs[0].checks.remove(0);
    dispatch(&mut app, Action::Tick);
    assert_eq!(app.verdict, None, "its check is gone");
    type_keys(&mut app, "xX");
    let _ = text(&mut app, 120, 36);
}

#[test]
fn the_explorer_writes_no_cassette_beside_another_recordings_journal() {
    let dir = std::env::temp_dir().join(format!("toolstorm-beside-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let target = dir.join("x.json");
    std::fs::write(dir.join("x.mcp.journal"), "{}\n").expect("journal");
    let mut app = open("scenarios/lost_ack.json");
    type_keys(&mut app, "C");
    press(&mut app, ctrl('u'));
    type_keys(&mut app, &format!("{}\n", target.display()));
    assert_eq!(app.status_kind, StatusKind::Error, "{}", app.status);
    assert!(app.status.contains("journal beside it"), "{}", app.status);
    assert!(!target.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_summary_title_counts_in_words() {
    let mut app = open("cassettes/incident.json");
    type_keys(&mut app, "T");
    let screen = text(&mut app, 120, 36);
    assert!(
        screen.contains("Summary · 3 calls · 1 duplicate commit · sorted by calls"),
        "{screen}"
    );
}

#[test]
fn q_quits_from_every_view_and_esc_closes() {
    // The summary, the help and a copy pop-up: q quits (it used to close them, and the keys
    // typed next landed as commands); Esc closes.
    for opener in ["T", "?", "y"] {
        let mut app = open("scenarios/lost_ack.json");
        draw(&mut app, 120, 40);
        type_keys(&mut app, opener);
        assert!(!matches!(app.mode, Mode::Browse), "{opener} opens a view");
        press(&mut app, key(KeyCode::Char('q')));
        assert!(app.quit, "q in the view {opener} quits");
        let mut app = open("scenarios/lost_ack.json");
        draw(&mut app, 120, 40);
        type_keys(&mut app, opener);
        press(&mut app, key(KeyCode::Esc));
        assert!(matches!(app.mode, Mode::Browse), "Esc closes {opener}");
    }
    // In a text prompt q is a letter.
    let mut app = open("scenarios/lost_ack.json");
    type_keys(&mut app, "/q");
    assert!(matches!(app.mode, Mode::Typing(Purpose::Search, _)));
}

#[test]
fn help_at_120_columns_cuts_no_entry_and_names_every_mark() {
    let mut app = open("cassettes/incident.json");
    draw(&mut app, 120, 70);
    type_keys(&mut app, "?");
    let screen = text(&mut app, 120, 70);
    for line in screen.lines() {
        let shown = line.replace("1 … 6", "");
        assert!(!shown.contains('…'), "a help entry is cut: {line}");
        // A wrapped entry would start its second line under the keys' column.
        let inner = line.trim_matches('"').trim_matches('│');
        assert!(
            inner.trim().is_empty() || !inner.starts_with("   "),
            "an entry wraps: {line}"
        );
    }
    assert!(
        screen.contains("» named by the selected verdict"),
        "{screen}"
    );
    assert!(
        screen.contains("what if: pin a fault, re-run the agent"),
        "{screen}"
    );
}

#[test]
fn a_filter_typed_logs_one_line_and_a_jump_keeps_it() {
    let mut app = fixture("api/large_public_10000.cassette.json");
    let logged = app.messages.len();
    type_keys(&mut app, "\\status:error\n");
    // Each key showed the count on the status line; the log keeps the filter given once.
    let added: Vec<&String> = app.messages[logged..].iter().collect();
    assert_eq!(added.len(), 1, "{added:?}");
    assert!(added[0].contains("778 of 10000"), "{added:?}");
    // `:5000` is hidden by it: the filter stays, the nearest call it shows is chosen.
    let calls = &app.timeline().report().calls;
    let hidden = !calls[4999].failed();
    assert!(hidden, "call 5000 passes: pick another");
    let nearest = (4999..calls.len())
        .find(|&i| calls[i].failed())
        .expect("a failed call after 5000");
    type_keys(&mut app, ":5000\n");
    assert_eq!(app.filter.as_deref(), Some("status:error"));
    assert_eq!(app.visible().len(), 778);
    assert_eq!(app.cursor, Some(nearest));
    assert!(
        app.status.contains(&format!(
            "call #5000 is hidden by the filter (status:error): #{} is the nearest shown",
            nearest + 1
        )),
        "{}",
        app.status
    );
    // A call the filter shows is gone to as before.
    type_keys(&mut app, &format!(":{}\n", nearest + 1));
    assert_eq!(app.cursor, Some(nearest));
    assert!(
        app.status.starts_with(&format!("call #{}", nearest + 1)),
        "{}",
        app.status
    );
}

#[test]
fn a_header_cut_short_ends_in_an_ellipsis() {
    let mut app = fixture("api/large_public_10000.cassette.json");
    let header = |app: &mut App, w: u16| -> String {
        // The test backend shows each row quoted.
        let first = text(app, w, 12).lines().next().unwrap_or("").to_owned();
        first.trim_matches('"').to_owned()
    };
    // Wide: whole, no ellipsis of its own.
    let wide = header(&mut app, 200);
    assert!(wide.contains("large_public_10000"), "{wide}");
    assert!(!wide.trim_end().ends_with('…'), "{wide}");
    // At 30 columns even the briefest header is cut: it says so.
    let narrow = header(&mut app, 30);
    assert_eq!(narrow.chars().count(), 30, "{narrow:?}");
    assert!(narrow.ends_with('…'), "{narrow:?}");
}
