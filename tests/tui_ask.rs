//! The explorer on `ask` records (`ask --record RUN.json`): the header says the rounds,
//! tokens, cost and how the run ended, at 80 columns too; the timeline says each call's
//! round; Details shows the round's words, the `function_call` as sent and the output fed
//! back, escaped; the summary says the same and the final answer. The record is a real
//! model's (Qwen2.5-Coder 1.5B over Chat Completions, 5 rounds, stopped at max_rounds), and
//! variants of it made here.

use std::path::{Path, PathBuf};

use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolstorm::document::Document;
use toolstorm::json::{Value, compact, parse};
use toolstorm::tui::action::Action;
use toolstorm::tui::app::App;
use toolstorm::tui::theme::Theme;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ask/orbit-chat.json")
}

fn record() -> Value {
    parse(&std::fs::read_to_string(fixture()).expect("fixture")).expect("json")
}

fn set(v: &mut Value, key: &str, value: Value) {
    if let Value::Object(o) = v {
        o.insert(key, value);
    }
}

fn at<'a>(v: &'a mut Value, path: &[&str]) -> &'a mut Value {
    let mut v = v;
    for key in path {
        v = match v {
            Value::Object(o) => o.get_mut(key).expect("key"),
            Value::Array(a) => &mut a[key.parse::<usize>().expect("index")],
            _ => panic!("no {key}"),
        };
    }
    v
}

/// Opens `record` written to a file named `orbit-chat.json` (so every screen names the same
/// file).
fn open(dir: &Path, record: &Value) -> App {
    let path = dir.join("orbit-chat.json");
    std::fs::write(&path, compact(record)).expect("write");
    let mut doc = Document::open(&path).expect("a record opens");
    doc.path = Some(PathBuf::from("records/orbit-chat.json"));
    App::new(doc)
}

fn screen(app: &mut App, w: u16, h: u16) -> String {
    app.update(Action::Resize(w, h));
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| app.render_with(f.area(), f.buffer_mut(), &Theme::new(true)))
        .expect("draw");
    t.backend().to_string()
}

fn header(app: &mut App, w: u16) -> String {
    let text = screen(app, w, 24);
    let line = text.lines().next().expect("a header").trim_matches('"');
    line.trim_end().to_owned()
}

/// The real record answered: complete, not stopped, an answer, and prices given.
fn answered() -> Value {
    let mut r = record();
    set(&mut r, "stopped", Value::Bool(false));
    set(
        &mut r,
        "answer",
        Value::from("#41 is the lease problem (ORB-1101); #87 asks the same."),
    );
    set(
        &mut r,
        "prices",
        parse(r#"{"input": 2.5, "output": 10.0}"#).expect("json"),
    );
    r
}

#[test]
fn a_stopped_records_header_at_80_and_140_columns() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut app = open(dir.path(), &record());
    // No prices were given: no cost. The end in full where there is room, in a word at 80,
    // where the file name makes way.
    assert_eq!(
        header(&mut app, 140),
        " toolstorm PASS (check) · ask · 5 rounds · tokens in/out 5081/234 · stopped at \
         max_rounds · 21.017s · run dbc57f38 · records/orbit-chat.json"
    );
    assert_eq!(
        header(&mut app, 80),
        " toolstorm PASS (check) · ask · 5 rounds · tokens in/out 5081/234 · stopped"
    );
    // Each call row leads with its round.
    let text = screen(&mut app, 80, 24);
    assert!(text.contains("│rnd      id tool"), "{text}");
    assert!(text.contains("│  2       2 get_doc_secti"), "{text}");
    assert_snapshot!("ask_stopped_80x24", text);
}

#[test]
fn an_answered_records_header_summary_and_cost() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut app = open(dir.path(), &answered());
    // (5081 × 2.5 + 234 × 10) / 1e6 = 0.0150425.
    assert_eq!(
        header(&mut app, 140),
        " toolstorm PASS (check) · ask · 5 rounds · tokens in/out 5081/234 · cost≈$0.0150 · \
         answered · 21.017s · run dbc57f38 · orbit-chat.json"
    );
    assert_eq!(
        header(&mut app, 80),
        " toolstorm PASS · ask · 5 rounds · in/out 5081/234 tokens · ≈$0.0150 · answered"
    );
    app.update(Action::ToggleSummary);
    let text = screen(&mut app, 140, 40);
    for said in [
        "ask · 5 rounds · tokens in/out 5081/234 · cost≈$0.0150 · answered",
        "model qwen2.5-coder-1.5b over chat · at most 5 rounds",
        "question: Compare issues #41 and #87",
        "The model's final answer:",
        "  #41 is the lease problem (ORB-1101); #87 asks the same.",
    ] {
        assert!(text.contains(said), "{said}: {text}");
    }
    assert_snapshot!("ask_answered_summary_140x40", text);
}

#[test]
fn an_unfinished_record_is_running_once_it_grows() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cut = record();
    set(&mut cut, "complete", Value::Bool(false));
    if let Value::Array(rounds) = at(&mut cut, &["rounds"]) {
        rounds.truncate(4);
    }
    let mut app = open(dir.path(), &cut);
    assert!(
        header(&mut app, 140).contains("· ask · 4 rounds · tokens in/out 3672/203 · unfinished"),
        "{}",
        header(&mut app, 140)
    );
    let mut grown = record();
    set(&mut grown, "complete", Value::Bool(false));
    let path = dir.path().join("orbit-chat.json");
    std::fs::write(&path, compact(&grown)).expect("write");
    app.update(Action::Reloaded(Ok(Box::new(
        Document::open(&path).expect("opens"),
    ))));
    assert!(
        header(&mut app, 140).contains("· ask · 5 rounds · tokens in/out 5081/234 · running"),
        "{}",
        header(&mut app, 140)
    );
}

#[test]
fn hostile_text_from_the_model_is_shown_escaped() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut r = record();
    // The model's words in round 1: a terminal title, a colour and a bell, a right-to-left
    // override, over two lines.
    *at(
        &mut r,
        &[
            "rounds", "0", "response", "choices", "0", "message", "content",
        ],
    ) = Value::from("\u{1b}]0;owned\u{7}\u{1b}[31mred\u{202e}\nline two");
    let mut app = open(dir.path(), &r);
    app.update(Action::FocusNext);
    app.update(Action::ToggleZoom);
    let text = screen(&mut app, 120, 40);
    assert!(
        text.contains("Round 1 of at most 5 · 1 call · tokens in/out 656/23"),
        "{text}"
    );
    assert!(text.contains("  the model said:"), "{text}");
    assert!(
        text.contains(r"    \x1b]0;owned\x07\x1b[31mred\u202e"),
        "escaped: {text}"
    );
    assert!(text.contains("    line two"), "{text}");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{202e}'),
        "nothing reaches the terminal raw"
    );
}

#[test]
fn a_calls_details_have_its_rounds_words_the_call_as_sent_and_its_output() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut r = record();
    *at(
        &mut r,
        &[
            "rounds", "1", "response", "choices", "0", "message", "content",
        ],
    ) = Value::from("Now the error-codes doc.");
    let mut app = open(dir.path(), &r);
    app.update(Action::Next);
    app.update(Action::FocusNext);
    app.update(Action::ToggleZoom);
    let text = screen(&mut app, 120, 40);
    for said in [
        "│Round 2 of at most 5 · 1 call · tokens in/out 850/38",
        "│    Now the error-codes doc.",
        "│function_call get_doc_section · call_id NMOJFeVVgB49erzaT8WWYjAqFSmW4TD5",
        r#"│  arguments {"doc_id": "error-codes", "heading": "ORB-1101 LeaseExpired"}"#,
        "│Output fed back to the model for NMOJFeVVgB49erzaT8WWYjAqFSmW4TD5",
        r#"│      "doc_id": "error-codes","#,
    ] {
        assert!(text.contains(said), "{said}: {text}");
    }
    // The output was said once: the envelope is not repeated under it.
    assert!(!text.contains("Envelope for"), "{text}");
}

#[test]
fn arguments_that_are_not_json_are_shown_as_sent() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut r = record();
    // Round 3's call (denied, so it never ran: it is listed at the end of Details).
    let args = &["rounds", "2", "response", "choices", "0", "message"];
    *at(
        &mut r,
        &[args, &["tool_calls", "0", "function", "arguments"][..]].concat(),
    ) = Value::from("{issue_id: 41, label: 'area:worker'\n");
    let mut app = open(dir.path(), &r);
    app.update(Action::FocusNext);
    app.update(Action::ToggleZoom);
    let text = screen(&mut app, 120, 400);
    for said in [
        "│Not run in batch 3 (round 3): ex8Iq6g4Gp8kUOt4gUvBfD8WCfgeydn8 add_label (denied)",
        "│  function_call add_label · call_id ex8Iq6g4Gp8kUOt4gUvBfD8WCfgeydn8",
        r"│    arguments {issue_id: 41, label: 'area:worker'\n",
        "│    (not JSON: the executor answers bad_args without running the tool)",
    ] {
        assert!(text.contains(said), "{said}: {text}");
    }
}
