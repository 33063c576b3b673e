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
    // Before: the deadline glyph of the legend was overwritten in every lane, the selected
    // call's lane was not marked and the timeline cut call ids (`b1.1.call…`).
    let lane_rows: Vec<&str> = text.lines().filter(|l| l.contains("ms ×")).collect();
    assert_eq!(lane_rows.len(), 4, "{text}");
    assert!(lane_rows.iter().all(|l| l.contains('┆')), "{text}");
    assert!(lane_rows[0].contains("▶call_A"), "{text}");
    let timeline_rows: Vec<&str> = text.lines().filter(|l| l.contains(" get_")).collect();
    for id in ["call_A", "call_B", "call_C", "call_D"] {
        assert!(timeline_rows.iter().any(|l| l.contains(id)), "{id}: {text}");
    }
    app.update(Action::Next);
    let text = screen(&mut app, 120, 40);
    assert!(
        text.contains("▶call_B"),
        "the marker follows the cursor: {text}"
    );
    app.update(Action::First);
    assert_snapshot!("orbit_parallel_lanes_120x40", screen(&mut app, 120, 40));
}

#[test]
fn calls_that_never_ran_are_in_details() {
    // Before: a denied call had no row anywhere, so the injected `post_comment` arguments
    // could not be read.
    let mut doc = Document::open(&scenario_path("orbit-injection.json")).expect("opens");
    doc.path = Some(PathBuf::from("scenarios/orbit-injection.json"));
    let mut app = App::new(doc);
    let denied = app
        .tab()
        .batches
        .iter()
        .flat_map(|b| b.lanes.iter())
        .filter(|l| l.kind == "denied")
        .count();
    assert!(denied > 0, "the scenario denies a side effect");
    // Zoomed, Details shows the call that ran and, after it, the calls that never did.
    app.update(Action::FocusNext);
    app.update(Action::ToggleZoom);
    let seen = screen(&mut app, 120, 100);
    assert!(seen.contains("Not run in batch"), "{seen}");
    assert!(seen.contains("post_comment"), "{seen}");
    assert!(seen.contains("arguments as asked"), "{seen}");
    assert!(seen.contains("denied"), "{seen}");
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

/// Answers approval questions as a person would: each answer is a key sent once its question
/// is on screen; after the last one, the keys in `then` follow.
struct Person {
    tx: std::sync::mpsc::Sender<Event>,
    answers: Vec<char>,
    then: Vec<char>,
    shown: Vec<usize>,
}

impl toolstorm::tui::runtime::Hooks for Person {
    fn retarget(&mut self, _: &Path) {}
    fn suspend(&mut self) {}
    fn copy(&mut self, _: &str) {}
    fn asking(&mut self, n: usize) {
        self.shown.push(n);
        let answer = self.answers.get(n - 1).copied().unwrap_or('n');
        let _ = self.tx.send(key(answer));
        if n == self.answers.len() {
            for c in self.then.drain(..) {
                let _ = self.tx.send(key(c));
            }
        }
    }
}

#[test]
fn a_rerun_asks_again_and_keeps_earlier_answers() {
    // Before: after a change on disk (or `r`) an interactive scenario reran with no terminal
    // and every side effect was silently denied.
    let dir = std::env::temp_dir().join(format!("toolstorm-approve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("orbit-injection.json");
    let text = std::fs::read_to_string(scenario_path("orbit-injection.json")).expect("read");
    let text = text.replace(
        "\"approver\": \"deny_all\"",
        "\"approver\": \"interactive\"",
    );
    assert!(
        text.contains("\"interactive\""),
        "the scenario names its approver"
    );
    std::fs::write(&path, text).expect("write");

    let doc = Document::open(&path).expect("opens");
    let mut app = App::new(doc);
    let effects = |app: &App| app.tab().timeline.report().effects.len();
    assert_eq!(effects(&app), 0, "opened with nobody to ask: denied");

    let (tx, rx) = channel();
    let mut terminal = Terminal::new(TestBackend::new(100, 30)).expect("terminal");
    // `r`: both questions are asked (y, n); then `r` again: both answers are kept, nothing is
    // asked; then `q`.
    tx.send(key('r')).expect("send");
    // Should no question come, nothing would send `q`: end the loop rather than hang.
    let watchdog = tx.clone();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(30));
        let _ = watchdog.send(Event::Terminate(15));
    });
    let mut person = Person {
        tx: tx.clone(),
        answers: vec!['y', 'n'],
        then: vec!['r', 'q'],
        shown: Vec::new(),
    };
    let ending =
        toolstorm::tui::runtime::run(&mut terminal, &mut app, &rx, &tx, &mut person).expect("runs");
    assert_eq!(ending, toolstorm::tui::runtime::Ending::Quit);
    assert_eq!(
        person.shown,
        [1, 2],
        "asked once each, not again on the second run"
    );
    assert_eq!(effects(&app), 1, "the approved label committed");
    assert_eq!(app.approvals.len(), 2);
    assert!(app.status.contains("2 approval(s) kept"), "{}", app.status);
    // Y gives a command that reproduces the answers (before: it left them out).
    app.update(Action::CopyCommand);
    let toolstorm::tui::app::Mode::Show(_, shown) = &app.mode else {
        panic!("{:?}", app.mode)
    };
    assert!(shown.contains("--answers y,n"), "{shown}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["run", path.to_str().expect("path"), "--answers", "y,n"])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("tracker: 1 action · effects: 1"), "{text}");
    assert!(
        text.contains("y (approved)") && text.contains("n (denied)"),
        "{text}"
    );
    // With nobody to ask, the run says so for each question.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["run", path.to_str().expect("path")])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("(no answer, denied)").count(), 2, "{text}");
    assert!(text.contains("tracker: 0 actions"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_approval_modal_is_drawn_over_the_run() {
    // Before: the modal was drawn over a blank screen.
    let path = scenario_path("orbit-injection.json");
    let mut app = App::new(Document::open(&path).expect("opens"));
    app.update(Action::Resize(100, 30));
    let (tx, rx) = channel();
    let mut terminal = Terminal::new(TestBackend::new(100, 30)).expect("terminal");
    {
        let answer = tx.clone();
        let mut prompt = TerminalPrompt::new(&mut terminal, &rx, Theme::new(true))
            .behind(&app)
            .on_shown(move |_| {
                let _ = answer.send(key('n'));
            });
        let _ = run_orbit(&path, &mut prompt);
    }
    let screen = terminal.backend().to_string();
    assert!(screen.contains("Approval 2"), "{screen}");
    assert!(
        screen.contains("Timeline") && screen.contains("toolstorm"),
        "the run is behind the modal: {screen}"
    );
    // The status line under the modal says what is asked, not a stale message.
    let last = screen.lines().last().unwrap_or("");
    assert!(last.contains("approval question 2"), "{screen}");
}

#[test]
fn the_lanes_time_axis_zooms_and_pans() {
    let mut doc = Document::open(&scenario_path("orbit-parallel.json")).expect("opens");
    doc.path = Some(PathBuf::from("scenarios/orbit-parallel.json"));
    let mut app = App::new(doc);
    let whole = screen(&mut app, 120, 40);
    assert!(
        whole.contains("time from 1st call") && whole.contains("╵0s"),
        "{whole}"
    );
    // Zoomed ×2 about the middle: the axis starts later, the first call's bars are cut.
    app.update(Action::LanesZoom(1));
    let zoomed = screen(&mut app, 120, 40);
    let title = zoomed
        .lines()
        .find(|l| l.contains("Batch lanes"))
        .expect("the lanes")
        .to_owned();
    assert!(title.contains("×2"), "{title}");
    assert!(!zoomed.contains("╵0s"), "{zoomed}");
    // J on the focused lanes pans later in time.
    app.update(Action::FocusPane(2));
    for _ in 0..4 {
        app.update(Action::ScrollDown);
    }
    let panned = screen(&mut app, 120, 40);
    let later = panned
        .lines()
        .find(|l| l.contains("Batch lanes"))
        .expect("the lanes")
        .to_owned();
    assert_ne!(later, title, "the window moved");
    assert!(later.contains("×2 2.5s–"), "{later}");
    // Out again: the whole run.
    app.update(Action::LanesZoom(-1));
    let back = screen(&mut app, 120, 40);
    let title = back
        .lines()
        .find(|l| l.contains("Batch lanes"))
        .expect("the lanes");
    assert!(back.contains("╵0s") && !title.contains("×2"), "{back}");
}
