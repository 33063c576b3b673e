//! The explorer on executor runs: the batch drawn as parallel lanes on the virtual clock, and
//! the interactive approver as a modal that only an explicit `y` passes.

use std::path::{Path, PathBuf};
use std::sync::mpsc::channel;

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolstorm::document::{Document, Scenario, Settings};
use toolstorm::executor::approval::Prompt;
use toolstorm::executor::scenario::{ApproverChoice, ExecutorScenario};
use toolstorm::tui::action::Action;
use toolstorm::tui::app::App;
use toolstorm::tui::approval::TerminalPrompt;
use toolstorm::tui::runtime::Event;
use toolstorm::tui::theme::Theme;

fn scenario_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name)
}

fn screen(app: &mut App, w: u16, h: u16) -> String {
    app.update(Action::Resize(w, h));
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| app.render_with(f.area(), f.buffer_mut(), &Theme::new(true)))
        .expect("draw");
    t.backend().to_string()
}

#[test]
fn parallel_batch_as_lanes() {
    let mut doc = Document::open(&scenario_path("orbit-parallel.json")).expect("opens");
    doc.path = Some(PathBuf::from("scenarios/orbit-parallel.json"));
    let mut app = App::new(doc);
    let lanes = &app.tab().batches[0].lanes;
    assert_eq!(lanes.len(), 4);
    let text = screen(&mut app, 120, 40);
    assert!(text.contains("4 calls answered in 2.0s"), "{text}");
    assert!(text.contains("timeout 2000ms ×1"), "{text}");
    assert!(text.contains("ok 1302ms ×2"), "{text}");
    assert!(
        text.contains('╌'),
        "the doc read goes on after its timeout answer"
    );
    assert_snapshot!("orbit_parallel_lanes_120x40", screen(&mut app, 120, 40));
}

fn interactive(path: &Path) -> ExecutorScenario {
    let text = std::fs::read_to_string(path).expect("read");
    let mut s = ExecutorScenario::from_text(&text).expect("valid");
    s.approver = ApproverChoice::Interactive;
    s
}

fn key(c: char) -> Event {
    Event::Terminal(TermEvent::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )))
}

/// Runs the scenario at `path` with an interactive approver answered by `prompt`.
fn run_orbit(path: &Path, prompt: &mut dyn Prompt) -> Document {
    let scenario = Scenario::Orbit(interactive(path));
    let run = scenario
        .run(Some(path), &Settings::default(), prompt)
        .expect("runs");
    Document::from_run(Some(path.to_path_buf()), &scenario, run).expect("opens")
}

#[test]
fn the_approval_modal_needs_an_explicit_yes() {
    let path = scenario_path("orbit-injection.json");
    // y for add_label, Enter (the default: no) for post_comment, each typed while its
    // question is on screen.
    let (tx, rx) = channel();
    let mut terminal = Terminal::new(TestBackend::new(100, 30)).expect("terminal");
    let doc = {
        let answer = tx.clone();
        let mut prompt =
            TerminalPrompt::new(&mut terminal, &rx, Theme::new(true)).on_shown(move |n| {
                let code = if n == 1 {
                    KeyCode::Char('y')
                } else {
                    KeyCode::Enter
                };
                let _ = answer.send(Event::Terminal(TermEvent::Key(KeyEvent::new(
                    code,
                    KeyModifiers::NONE,
                ))));
            });
        run_orbit(&path, &mut prompt)
    };
    // The last modal drawn is the second question.
    let modal = terminal.backend().to_string();
    assert!(
        modal.contains("Approval 2") && modal.contains("post_comment(issue_id=92"),
        "{modal}"
    );
    assert!(modal.contains("[y/N]"));
    let lanes: Vec<_> = doc.runs[0]
        .batches
        .iter()
        .flat_map(|b| b.lanes.iter())
        .collect();
    let by_name = |n: &str| lanes.iter().find(|l| l.name == n).expect("lane");
    assert_eq!(
        by_name("add_label").approval.as_ref().map(|a| a.1),
        Some(true)
    );
    assert_eq!(by_name("add_label").kind, "ok");
    assert_eq!(
        by_name("post_comment").approval.as_ref().map(|a| a.1),
        Some(false)
    );
    assert_eq!(by_name("post_comment").kind, "denied");
    assert_eq!(
        doc.runs[0].timeline.report().effects.len(),
        1,
        "only the approved label committed"
    );

    // Typeahead: two y's typed before any question was drawn approve nothing.
    let (tx, rx) = channel();
    tx.send(key('y')).expect("send");
    tx.send(key('y')).expect("send");
    let mut shown = Vec::new();
    let doc = {
        let answer = tx.clone();
        let mut prompt = TerminalPrompt::new(&mut terminal, &rx, Theme::new(true)).on_shown(|n| {
            shown.push(n);
            let _ = answer.send(key('n'));
        });
        run_orbit(&path, &mut prompt)
    };
    assert_eq!(
        shown,
        [1, 2],
        "each question was shown before it was answered"
    );
    assert_eq!(doc.runs[0].timeline.report().effects.len(), 0);
    drop(tx);

    // A closed input (or a termination signal) answers no.
    let (tx, rx) = channel::<Event>();
    drop(tx);
    let mut prompt = TerminalPrompt::new(&mut terminal, &rx, Theme::new(true));
    let doc = run_orbit(&path, &mut prompt);
    assert_eq!(doc.runs[0].timeline.report().effects.len(), 0);
}
