//! The runner: editing rules and settings with validation and undo/redo, rerunning at the same
//! step, the compare and policies views, questions before anything is overwritten or lost,
//! and files written by the TUI that `inspect` loads and that match `run` for the same
//! configuration.

mod common;
mod keys;

use std::path::{Path, PathBuf};

use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolstorm::document::{self, Document, Scenario};
use toolstorm::lab::scenario_file::{PolicyChoice, ScenarioFile};
use toolstorm::lab::{Policy, edit::Field};
use toolstorm::tui::action::{Action, WriteKind};
use toolstorm::tui::app::{App, Mode, Purpose, Question, Screen, StatusKind};
use toolstorm::tui::runtime::dispatch;
use toolstorm::tui::theme::Theme;

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolstorm-runner-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// A copy of a bundled scenario in a temp folder, opened.
fn open_copy(dir: &Path, scenario: &str) -> (App, PathBuf) {
    let path = dir.join(format!("{scenario}.json"));
    std::fs::copy(repo(&format!("scenarios/{scenario}.json")), &path).expect("copy");
    let app = App::new(Document::open(&path).expect("open"));
    (app, path)
}

/// Opens a repository file under a relative name (stable snapshots).
fn open_rel(rel: &str) -> App {
    let mut doc = Document::open(&repo(rel)).expect("open");
    doc.path = Some(PathBuf::from(rel));
    App::new(doc)
}

fn screen(app: &mut App, w: u16, h: u16) -> String {
    app.update(Action::Resize(w, h));
    let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    let theme = Theme::new(true);
    terminal
        .draw(|f| app.render_with(f.area(), f.buffer_mut(), &theme))
        .expect("draw");
    terminal.backend().to_string()
}

/// Selects `field` of the selected rule and types `text` into it.
fn set_field(app: &mut App, field: Field, text: &str) {
    let target = Field::ALL.iter().position(|f| *f == field).expect("field") as isize;
    dispatch(app, Action::EditField(target - app.edit.field as isize));
    dispatch(app, Action::EditStart);
    keys::enter_text(app, text);
}

#[test]
fn editing_a_rule_reruns_at_the_same_step_and_compares() {
    let dir = temp_dir("edit");
    let (mut app, _) = open_copy(&dir, "lost_ack");
    assert_eq!(
        app.tab().label,
        "retry",
        "opens on the run that tells the story"
    );
    dispatch(&mut app, Action::Next);
    let step = app.selected().map(|c| c.id);
    assert_eq!(step, Some(2));
    assert_eq!(app.timeline().report().duplicate_effects(), 1);
    dispatch(&mut app, Action::ToggleEditor);
    assert_eq!(app.mode, Mode::Edit);

    // Invalid input is shown with the reason and never applied.
    set_field(&mut app, Field::Probability, "2");
    assert!(
        matches!(app.mode, Mode::Typing(Purpose::Field, _)),
        "the text stays to fix"
    );
    let err = app.edit_error.clone().unwrap_or_default();
    assert!(
        err.contains("Invalid fault rule") && err.contains("rules[0].probability"),
        "{err}"
    );
    assert_eq!(app.status_kind, StatusKind::Error);
    assert!(app.previous.is_none(), "no rerun for an invalid edit");
    dispatch(&mut app, Action::Cancel);
    assert_eq!(app.mode, Mode::Edit);

    // A valid edit reruns; the new run opens at the same step, on the same policy.
    set_field(&mut app, Field::Calls, "3");
    assert_eq!(app.mode, Mode::Edit);
    assert!(app.edit_error.is_none());
    assert_eq!(app.tab().label, "retry");
    assert_eq!(app.selected().map(|c| c.id), step);
    assert_eq!(app.timeline().report().duplicate_effects(), 0);
    let diff = app.diff().expect("diff");
    assert_eq!(diff.duplicates, (1, 0));
    assert!(
        diff.flipped
            .iter()
            .any(|f| f.name == "No duplicate side effects")
    );
    assert!(app.status.contains("duplicates 1→0"), "{}", app.status);
    assert!(app.editor.as_ref().is_some_and(|e| e.dirty()));

    // Undo and redo rerun too.
    dispatch(&mut app, Action::Undo);
    assert_eq!(app.timeline().report().duplicate_effects(), 1);
    dispatch(&mut app, Action::Redo);
    assert_eq!(app.timeline().report().duplicate_effects(), 0);
    dispatch(&mut app, Action::ToggleCompare);
    assert_eq!(app.screen, Screen::Compare);
    // j/k select a call in the comparison; on a short screen its row is scrolled into view.
    dispatch(&mut app, Action::Last);
    assert_eq!(app.screen, Screen::Compare);
    let last = app
        .selected()
        .map(|c| format!("{:>3} {}#{}", c.id, c.tool.to_lossy(), c.ordinal));
    let last = last.expect("a last call");
    let short = screen(&mut app, 100, 10);
    assert!(short.contains(&last), "{last} in {short}");
    assert!(short.contains("line(s) above"), "{short}");
    dispatch(&mut app, Action::First);
    let top = screen(&mut app, 100, 10);
    assert!(!top.contains("line(s) above"), "{top}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rule_list_operations_and_settings_keys() {
    let mut app = open_rel("scenarios/rate_limit.json");
    dispatch(&mut app, Action::ToggleEditor);
    dispatch(&mut app, Action::DuplicateRule);
    assert_eq!(app.edit.rule, 1);
    dispatch(&mut app, Action::AddRule);
    assert_eq!(app.edit.rule, 2);
    dispatch(&mut app, Action::MoveRule(-1));
    assert_eq!(app.edit.rule, 1);
    let names = |app: &App| {
        let e = app.editor.as_ref().expect("editor");
        (0..e.rules().len())
            .map(|i| e.field_text(i, Field::Name))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(&app),
        ["inventory-busy", "rule", "inventory-busy-copy"]
    );
    dispatch(&mut app, Action::DeleteRule);
    assert_eq!(names(&app), ["inventory-busy", "inventory-busy-copy"]);
    dispatch(&mut app, Action::ShiftSeed(1));
    dispatch(&mut app, Action::ShiftBudget(-1));
    dispatch(&mut app, Action::CycleProbability);
    dispatch(&mut app, Action::CyclePolicy);
    let cfg = app
        .editor
        .as_ref()
        .expect("editor")
        .lab()
        .expect("a lab scenario")
        .config
        .clone();
    assert_eq!(
        (cfg.seed, cfg.max_calls, cfg.probability),
        (43, 7, Some(0.5))
    );
    assert_eq!(
        app.editor
            .as_ref()
            .map(|e| e.lab().expect("a lab scenario").policy),
        Some(PolicyChoice::One(Policy::Optimistic))
    );
    assert_eq!(app.doc.runs.len(), 1);
    // Back to `all`: the three policies show side by side.
    for _ in 0..3 {
        dispatch(&mut app, Action::CyclePolicy);
    }
    assert_eq!(app.doc.runs.len(), 3);
    assert_eq!(app.screen, Screen::Policies);
    // The budget refuses values outside 1–20 and keeps the last valid one.
    for _ in 0..20 {
        dispatch(&mut app, Action::ShiftBudget(1));
    }
    assert_eq!(
        app.editor
            .as_ref()
            .map(|e| e.lab().expect("a lab scenario").config.max_calls),
        Some(20)
    );
    assert!(
        app.status
            .contains("Demo call budget must be between 1 and 20")
    );
    dispatch(&mut app, Action::CheckDeterminism);
    assert!(app.status.starts_with("deterministic"), "{}", app.status);
}

#[test]
fn editor_compare_and_policies_screens() {
    let mut app = open_rel("scenarios/lost_ack.json");
    dispatch(&mut app, Action::Last);
    dispatch(&mut app, Action::ToggleEditor);
    dispatch(&mut app, Action::EditField(3));
    assert_snapshot!("editor_120x40", screen(&mut app, 120, 40));
    set_field(&mut app, Field::Calls, "x");
    assert_snapshot!("editor_invalid_120x40", screen(&mut app, 120, 40));
    dispatch(&mut app, Action::Cancel);
    set_field(&mut app, Field::Calls, "3");
    dispatch(&mut app, Action::Back);
    dispatch(&mut app, Action::ToggleCompare);
    assert_snapshot!("compare_120x40", screen(&mut app, 120, 40));
    // On a narrow screen what changed wraps onto more lines, every word whole.
    let narrow = screen(&mut app, 70, 40);
    let at = narrow.find("changed: ").expect("what changed is shown");
    let first = narrow[at..].lines().next().unwrap_or_default();
    assert!(!first.contains("output"), "it wraps: {first}");
    let after: String = narrow[at..]
        .lines()
        .take(4)
        .map(|l| l.trim_matches(|c: char| c == '│' || c == ' ' || c == '"'))
        .collect::<Vec<_>>()
        .join(" ");
    for word in ["status,", "fault,", "injected,", "error,", "output"] {
        assert!(after.contains(word), "{word} in {after:?}\n{narrow}");
    }
    dispatch(&mut app, Action::ToggleCompare);
    dispatch(&mut app, Action::TogglePolicies);
    assert_snapshot!("policies_120x40", screen(&mut app, 120, 40));
    // Small terminals do not panic in any runner screen.
    for (w, h) in [(20, 5), (60, 15), (1, 1)] {
        screen(&mut app, w, h);
        dispatch(&mut app, Action::ToggleCompare);
        screen(&mut app, w, h);
        dispatch(&mut app, Action::ToggleEditor);
        screen(&mut app, w, h);
        dispatch(&mut app, Action::ToggleEditor);
    }
}

#[test]
fn a_shipping_cassette_becomes_an_unsaved_scenario_and_orbit_says_no() {
    let mut app = open_rel("cassettes/incident.json");
    assert!(app.editor.is_none());
    // Opening the rule editor is not an edit (before: the cassette showed "unsaved" at once).
    keys::type_keys(&mut app, "i");
    let e = app.editor.as_ref().expect("editor from the cassette");
    assert!(!e.dirty(), "nothing edited yet");
    assert_eq!(
        e.lab().expect("a lab scenario").policy,
        PolicyChoice::One(Policy::Retry),
        "the policy that reproduces the cassette"
    );
    dispatch(&mut app, Action::Rerun);
    let diff = app.diff().expect("diff");
    assert!(
        diff.identical,
        "same rules, seed and budget: same run: {diff:?}"
    );
    dispatch(&mut app, Action::Quit);
    assert!(app.quit, "nothing to lose: q quits at once");
    app.quit = false;
    // After an edit, quitting asks first.
    dispatch(&mut app, Action::ShiftSeed(1));
    assert!(app.editor.as_ref().is_some_and(|e| e.dirty()));
    dispatch(&mut app, Action::Quit);
    assert_eq!(app.mode, Mode::Confirm(Question::Quit));
    assert!(!app.quit);
    dispatch(&mut app, Action::Answer('n'));
    assert!(!app.quit);
    // Saving an unsaved scenario asks where.
    dispatch(&mut app, Action::Save);
    assert!(matches!(
        app.mode,
        Mode::Typing(Purpose::Write(WriteKind::Scenario), _)
    ));

    let mut orbit = open_rel("scenarios/orbit-injection.json");
    dispatch(&mut orbit, Action::ToggleEditor);
    assert_eq!(orbit.mode, Mode::Browse);
    assert!(orbit.status.contains("Orbit"), "{}", orbit.status);
}

fn write_to(app: &mut App, action: Action, path: &Path) {
    dispatch(app, action);
    assert!(
        matches!(app.mode, Mode::Typing(Purpose::Write(_), _)),
        "{:?}",
        app.mode
    );
    keys::enter_text(app, &path.display().to_string());
}

#[test]
fn writing_to_a_folder_fails_before_asking_to_overwrite() {
    // Before: `W` to a directory asked "exists. Overwrite it?" and only then failed.
    let dir = temp_dir("folder");
    let (mut app, _) = open_copy(&dir, "lost_ack");
    write_to(&mut app, Action::WriteCassette, &dir);
    assert!(!matches!(app.mode, Mode::Confirm(_)), "{:?}", app.mode);
    assert_eq!(app.status_kind, StatusKind::Error);
    assert!(app.status.contains("folder"), "{}", app.status);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn written_files_load_and_match_run() {
    let dir = temp_dir("write");
    let (mut app, path) = open_copy(&dir, "timeout");
    dispatch(&mut app, Action::CyclePolicy); // all -> optimistic
    dispatch(&mut app, Action::CyclePolicy); // retry
    dispatch(&mut app, Action::ShiftSeed(3));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    dispatch(&mut app, Action::Save);
    assert!(app.status.starts_with("wrote scenario"), "{}", app.status);
    #[cfg(unix)]
    {
        // Before: saving left a 0644 scenario 0600.
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "saving keeps the file's mode");
    }
    assert!(!app.editor.as_ref().is_some_and(|e| e.dirty()));
    let saved = shipping(&path);
    assert_eq!(saved.config.seed, 45);
    assert_eq!(saved.policy, PolicyChoice::One(Policy::Retry));

    let cassette = dir.join("tui.cassette.json");
    let verdicts = dir.join("tui.verdicts.json");
    write_to(&mut app, Action::WriteCassette, &cassette);
    // A cassette has no budget: the message says how to judge it as this run was judged.
    assert!(
        app.status
            .contains(&format!("--max-calls {}", app.tab().max_calls)),
        "{}",
        app.status
    );
    write_to(&mut app, Action::WriteVerdicts, &verdicts);
    assert_eq!(app.status_kind, StatusKind::Info, "{}", app.status);

    // The same configuration through `run`.
    let run_cassette = dir.join("run.cassette.json");
    let run_verdicts = dir.join("run.verdicts.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .arg("run")
        .arg(&path)
        .arg("--cassette")
        .arg(&run_cassette)
        .arg("--verdict")
        .arg(&run_verdicts)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |p: &Path| std::fs::read_to_string(p).expect("read");
    assert_eq!(read(&cassette), read(&run_cassette));
    assert_eq!(read(&verdicts), read(&run_verdicts));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .arg("inspect")
        .arg(&cassette)
        .output()
        .expect("inspect");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Another existing file is never silently overwritten.
    write_to(&mut app, Action::WriteCassette, &run_verdicts);
    assert_eq!(
        app.mode,
        Mode::Confirm(Question::Overwrite(
            WriteKind::Cassette,
            run_verdicts.clone()
        ))
    );
    dispatch(&mut app, Action::Answer('n'));
    assert_eq!(read(&verdicts), read(&run_verdicts), "untouched");
    write_to(&mut app, Action::WriteCassette, &run_verdicts);
    dispatch(&mut app, Action::Answer('y'));
    assert_eq!(read(&run_verdicts), read(&cassette));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_change_on_disk_reruns_and_a_conflict_keeps_both() {
    let dir = temp_dir("disk");
    let (mut app, path) = open_copy(&dir, "lost_ack");
    assert_eq!(app.timeline().report().duplicate_effects(), 1);

    // Another program edits the rule: reload and rerun, previous run kept for compare.
    let mut file = shipping(&path);
    file.scenario.rules[0] = toolstorm::json::parse(
        r#"{"name":"lost-receipt","tool":"create_shipment","kind":"response_lost","calls":[4]}"#,
    )
    .expect("json");
    toolstorm::atomic::write(&path, file.to_text().as_bytes()).expect("write");
    dispatch(&mut app, Action::FileChanged);
    assert_eq!(app.timeline().report().duplicate_effects(), 0);
    assert!(
        app.status.contains("reloaded from disk and rerun"),
        "{}",
        app.status
    );
    assert_eq!(app.diff().map(|d| d.duplicates), Some((1, 0)));
    assert!(!app.editor.as_ref().is_some_and(|e| e.dirty()));

    // Unsaved edits in the TUI and another change on disk: ask; keep mine.
    dispatch(&mut app, Action::ShiftSeed(1));
    file.config.max_calls = 5;
    toolstorm::atomic::write(&path, file.to_text().as_bytes()).expect("write");
    dispatch(&mut app, Action::FileChanged);
    assert_eq!(app.mode, Mode::Confirm(Question::Conflict));
    dispatch(&mut app, Action::Answer('m'));
    let e = app.editor.as_ref().expect("editor");
    assert_eq!(
        (
            e.lab().expect("a lab scenario").config.seed,
            e.lab().expect("a lab scenario").config.max_calls
        ),
        (43, 8)
    );
    assert!(e.dirty());
    dispatch(&mut app, Action::Undo);
    assert_eq!(
        app.editor
            .as_ref()
            .map(|e| e.lab().expect("a lab scenario").config.max_calls),
        Some(5),
        "the disk version is one undo step back"
    );
    dispatch(&mut app, Action::Redo);

    // Again, keeping the disk version this time: my edits are one undo step back.
    file.config.max_calls = 6;
    toolstorm::atomic::write(&path, file.to_text().as_bytes()).expect("write");
    dispatch(&mut app, Action::FileChanged);
    assert_eq!(app.mode, Mode::Confirm(Question::Conflict));
    dispatch(&mut app, Action::Answer('d'));
    let e = app.editor.as_ref().expect("editor");
    assert_eq!(
        (
            e.lab().expect("a lab scenario").config.seed,
            e.lab().expect("a lab scenario").config.max_calls
        ),
        (42, 6)
    );
    dispatch(&mut app, Action::Undo);
    assert_eq!(
        app.editor
            .as_ref()
            .map(|e| e.lab().expect("a lab scenario").config.seed),
        Some(43)
    );

    // r with unsaved edits asks the same, in its own words: nothing changed on disk.
    let screen_before = screen(&mut app, 120, 40);
    assert!(!screen_before.contains("changed on disk"));
    dispatch(&mut app, Action::Reload);
    assert_eq!(app.mode, Mode::Confirm(Question::Conflict));
    let shown = screen(&mut app, 120, 40);
    assert!(
        shown.contains("Reload, and you have unsaved edits") && !shown.contains("changed on disk"),
        "{shown}"
    );
    dispatch(&mut app, Action::Answer('m'));

    // Our own save is not a conflict.
    dispatch(&mut app, Action::Save);
    dispatch(&mut app, Action::FileChanged);
    assert_eq!(app.mode, Mode::Browse);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn save_as_makes_the_new_file_the_open_one() {
    let dir = temp_dir("save-as");
    let (mut app, path) = open_copy(&dir, "lost_ack");
    dispatch(&mut app, Action::ShiftSeed(1));
    let copy = dir.join("renamed.json");
    write_to(&mut app, Action::SaveAs, &copy);
    assert!(copy.exists(), "{}", app.status);
    assert_eq!(
        app.doc.path.as_deref(),
        Some(copy.as_path()),
        "reloads and the watcher follow the new file"
    );
    // A change to the new file reloads it; the old file is left alone.
    let text = std::fs::read_to_string(&copy).expect("saved");
    std::fs::write(&copy, text.replace("\"seed\": 43", "\"seed\": 44")).expect("edit");
    dispatch(&mut app, Action::FileChanged);
    assert!(
        app.doc
            .scenario
            .as_ref()
            .is_some_and(|s| s.config.seed == 44),
        "{}",
        app.status
    );
    assert!(
        std::fs::read_to_string(&path)
            .expect("original")
            .contains("\"seed\": 42")
    );
}

/// The shipping scenario file at `path`, read through the document layer.
fn shipping(path: &Path) -> ScenarioFile {
    match document::open_scenario(path) {
        Ok(Scenario::Shipping(f)) => f,
        other => panic!("{}: not a shipping scenario: {other:?}", path.display()),
    }
}

#[test]
fn save_as_says_at_once_what_is_wrong_with_the_path_and_never_makes_folders() {
    let dir = temp_dir("save-as-path");
    let (mut app, _) = open_copy(&dir, "lost_ack");
    // A folder: the error shows beside the prompt, which stays open to fix the path.
    write_to(&mut app, Action::SaveAs, &dir);
    assert!(
        matches!(app.mode, Mode::Typing(Purpose::Write(_), _)),
        "{:?}",
        app.mode
    );
    let s = screen(&mut app, 120, 36);
    assert!(
        s.contains("is a folder"),
        "the error is on screen with the prompt: {s}"
    );
    // A missing folder: named at once, and not created.
    dispatch(&mut app, Action::Cancel);
    let missing = dir.join("no-such-dir").join("x.json");
    write_to(&mut app, Action::SaveAs, &missing);
    assert!(
        matches!(app.mode, Mode::Typing(Purpose::Write(_), _)),
        "{:?}",
        app.mode
    );
    assert!(app.status.contains("does not exist"), "{}", app.status);
    assert!(!dir.join("no-such-dir").exists(), "no folder was made");
    // The footer names the key that reruns (Enter does not).
    dispatch(&mut app, Action::Cancel);
    app.status.clear();
    let s = screen(&mut app, 120, 36);
    assert!(s.contains("R rerun") && !s.contains("Enter rerun"), "{s}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rule_probability_under_the_scenario_s_override_says_it_has_no_effect() {
    let dir = temp_dir("override");
    let (mut app, _) = open_copy(&dir, "lost_ack"); // "probability": 1.0 overrides every rule's
    dispatch(&mut app, Action::ToggleEditor);
    set_field(&mut app, Field::Probability, "0.5");
    assert!(
        app.status
            .contains("no effect while the scenario's probability 1.0 overrides"),
        "the rerun's message keeps the note: {}",
        app.status
    );
    let _ = std::fs::remove_dir_all(&dir);
}
