//! The runner: the part of [`App::update`] that edits the scenario (rules, seed, probability,
//! budget, policy; undo/redo), asks for reruns and writes, resolves questions (overwrite, quit
//! with unsaved edits, disk-vs-local conflicts), and the pure helpers `perform` uses to carry
//! those commands out (rerun, file contents, the determinism check).

use std::path::{Path, PathBuf};

use super::action::{Action, Command, WriteKind};
use super::app::{App, Mode, Purpose, Question, Screen, StatusKind};
use super::prompt::TextField;
use crate::cassette::Cassette;
use crate::document::{DocKind, Document, Error, Run};
use crate::error::ConfigError;
use crate::json::pretty;
use crate::lab::compare::{RunDiff, compare};
use crate::lab::edit::{self, Editor, Field};
use crate::lab::scenario_file::{PolicyChoice, ScenarioFile};
use crate::lab::{self, LabRun};
use crate::rule::FaultKind;

impl App {
    /// Quits, or asks first when there are unsaved edits.
    pub(super) fn request_quit(&mut self) -> Vec<Command> {
        if self.editor.as_ref().is_some_and(Editor::dirty)
            && self.mode != Mode::Confirm(Question::Quit)
        {
            self.mode = Mode::Confirm(Question::Quit);
        } else {
            self.quit = true;
        }
        Vec::new()
    }

    /// Makes sure there is an editor: a scenario file's, or an unsaved scenario built from a
    /// shipping cassette (its rules, seed and budget). False, with a status message, when the
    /// document cannot be edited.
    fn ensure_editor(&mut self) -> bool {
        if self.editor.is_some() {
            return true;
        }
        if self.doc.kind == DocKind::McpRecording || self.doc.campaign.is_some() {
            return self.ensure_agent_editor();
        }
        if self.doc.kind == DocKind::Scenario && self.doc.scenario.is_none() {
            self.error(
                "Orbit scenarios are not editable here: edit the file in your editor and the \
                 explorer reloads it on save"
                    .into(),
            );
            return false;
        }
        let name = self
            .doc
            .path
            .as_deref()
            .and_then(Path::file_stem)
            .map_or_else(
                || "incident".to_owned(),
                |s| s.to_string_lossy().into_owned(),
            );
        let name = name.split('.').next().unwrap_or("incident").to_owned();
        let tab = self.tab();
        let made = edit::scenario_from_report(tab.timeline.report(), &name).and_then(|mut f| {
            f.policy = if self.doc.runs.len() > 1 {
                PolicyChoice::All
            } else {
                match tab.policy {
                    Some(p) => PolicyChoice::One(p),
                    None => edit::infer_policy(&f, &tab.digest),
                }
            };
            // Derived, not yet edited: nothing to lose until the first edit (w still asks where).
            Editor::new(&f)
        });
        match made {
            Ok(e) => {
                self.editor = Some(e);
                self.save_path = None;
                true
            }
            Err(e) => {
                self.error(format!("cannot edit this run: {e}"));
                false
            }
        }
    }

    /// Applies one editor operation; a valid one reruns, an invalid one is shown and dropped.
    fn edit_with(
        &mut self,
        what: &str,
        op: impl FnOnce(&mut Editor, &mut super::app::EditCursor) -> Result<(), ConfigError>,
    ) -> Vec<Command> {
        if !self.ensure_editor() {
            return Vec::new();
        }
        let mut cursor = self.edit;
        let Some(editor) = self.editor.as_mut() else {
            return Vec::new();
        };
        let before = editor.edited().clone();
        match op(editor, &mut cursor) {
            Ok(()) => {
                let changed = editor.edited() != &before;
                let agent = editor.mcp_scenario().is_some();
                self.edit = cursor;
                self.clamp_edit_cursor();
                self.edit_error = None;
                if changed && agent {
                    // A real agent commits for real: it re-runs when asked, not on every key.
                    self.info(format!("{what}; R re-runs the agent with these rules"));
                    self.last_edit = Some(what.to_owned());
                    Vec::new()
                } else if changed {
                    self.info(format!("{what}; rerunning"));
                    self.last_edit = Some(what.to_owned());
                    vec![Command::Rerun]
                } else {
                    self.info(format!("{what}: no change"));
                    Vec::new()
                }
            }
            Err(e) => {
                let text = e.to_string();
                self.edit_error = Some(text.clone());
                self.error(format!("not applied: {text}"));
                Vec::new()
            }
        }
    }

    fn clamp_edit_cursor(&mut self) {
        let n = self.editor.as_ref().map_or(0, |e| e.rules().len());
        self.edit.rule = self.edit.rule.min(n.saturating_sub(1));
        self.edit.field = self.edit.field.min(Field::ALL.len() - 1);
    }

    /// The selected field.
    pub fn edit_field(&self) -> Field {
        Field::ALL[self.edit.field.min(Field::ALL.len() - 1)]
    }

    /// The runner's actions.
    pub(super) fn update_runner(&mut self, action: Action) -> Vec<Command> {
        match action {
            Action::ToggleEditor => {
                if self.mode == Mode::Edit {
                    self.mode = Mode::Browse;
                } else if self.ensure_editor() {
                    self.mode = Mode::Edit;
                    self.clamp_edit_cursor();
                    self.info(
                        "rule editor: ↑↓ field · ←→ rule · Enter edit · a add · d duplicate · D delete · [ ] move · u undo"
                            .into(),
                    );
                }
            }
            Action::EditRule(by) => {
                let n = self.editor.as_ref().map_or(0, |e| e.rules().len()) as isize;
                if n > 0 {
                    self.edit.rule = (self.edit.rule as isize + by).clamp(0, n - 1) as usize;
                }
            }
            // The fields are one vertical list per rule: past the last field is the next
            // rule's first, before the first the previous rule's last.
            Action::EditField(by) => {
                let n = Field::ALL.len() as isize;
                let rules = self.editor.as_ref().map_or(0, |e| e.rules().len()) as isize;
                let at = self.edit.rule as isize * n + self.edit.field as isize + by;
                let at = at.clamp(0, (rules * n - 1).max(0));
                self.edit.rule = (at / n) as usize;
                self.edit.field = (at % n) as usize;
            }
            Action::EditStart => {
                if let Some(e) = &self.editor {
                    if e.rules().is_empty() {
                        self.info("no rules: press a to add one".into());
                    } else if self.edit_field() == Field::Kind {
                        // The kind is one of six: pick it from the list.
                        let now = e.field_text(self.edit.rule, Field::Kind);
                        let at = FaultKind::ALL
                            .iter()
                            .position(|k| k.as_str() == now)
                            .unwrap_or(0);
                        self.mode = Mode::PickKind(at);
                    } else {
                        let text = e.field_text(self.edit.rule, self.edit_field());
                        self.mode = Mode::Typing(Purpose::Field, TextField::new(text));
                        if self.edit_field() == Field::Probability
                            && let Some(p) = e.probability()
                        {
                            self.info(format!(
                                "note: the scenario's probability ({}) overrides every rule's; \
                                 P cycles it (to `none` keeps each rule's own)",
                                crate::json::float::py_repr(p)
                            ));
                        }
                    }
                }
            }
            Action::Pick(by) => {
                if let Mode::PickKind(at) = &mut self.mode {
                    let n = FaultKind::ALL.len() as isize;
                    *at = (*at as isize + by).rem_euclid(n) as usize;
                }
            }
            Action::AddRule => {
                return self.edit_with("rule added", |e, c| {
                    let after = (!e.rules().is_empty()).then_some(c.rule);
                    c.rule = e.add_rule(after)?;
                    Ok(())
                });
            }
            Action::DuplicateRule => {
                return self.edit_with("rule duplicated", |e, c| {
                    c.rule = e.duplicate_rule(c.rule)?;
                    Ok(())
                });
            }
            Action::DeleteRule => {
                return self.edit_with("rule deleted", |e, c| e.delete_rule(c.rule));
            }
            Action::MoveRule(by) => {
                return self.edit_with("rule moved", |e, c| {
                    c.rule = e.move_rule(c.rule, by)?;
                    Ok(())
                });
            }
            Action::Undo | Action::Redo => {
                let undo = matches!(action, Action::Undo);
                let Some(e) = self.editor.as_mut() else {
                    self.info("nothing to undo".into());
                    return Vec::new();
                };
                let done = if undo { e.undo() } else { e.redo() };
                let word = if undo { "undo" } else { "redo" };
                if done {
                    self.clamp_edit_cursor();
                    self.edit_error = None;
                    self.last_edit = Some(word.to_owned());
                    // An agent's rules re-run with the agent, when asked (R), as edits do.
                    if self
                        .editor
                        .as_ref()
                        .is_some_and(|e| e.mcp_scenario().is_some())
                    {
                        self.info(format!("{word}; R re-runs the agent with these rules"));
                        return Vec::new();
                    }
                    self.info(format!("{word}; rerunning"));
                    return vec![Command::Rerun];
                }
                self.info(format!("nothing to {word}"));
            }
            Action::ShiftSeed(by) => {
                return self.edit_with("seed changed", |e, _| e.shift_seed(by));
            }
            Action::CycleProbability => {
                return self.edit_with("probability changed", |e, _| e.cycle_probability());
            }
            Action::ShiftBudget(by) => {
                return self.edit_with("call budget changed", |e, _| e.shift_budget(by));
            }
            Action::CyclePolicy => {
                return self.edit_with("policy changed", |e, _| e.cycle_policy());
            }
            // An MCP recording's (or a campaign run's) agent is real: it is started again,
            // never replaced by the lab.
            Action::Rerun
                if self.doc.kind == DocKind::McpRecording || self.doc.campaign.is_some() =>
            {
                return self.rerun_agent_now();
            }
            Action::Rerun if self.ensure_editor() => {
                return vec![Command::Rerun];
            }
            Action::ToggleCompare => {
                if self.screen == Screen::Compare {
                    self.screen = Screen::Explore;
                } else if self.previous.is_some() {
                    self.screen = Screen::Compare;
                } else {
                    self.info("nothing to compare yet: edit or rerun (R) first".into());
                }
            }
            Action::TogglePolicies => {
                self.screen = if self.screen == Screen::Policies {
                    Screen::Explore
                } else {
                    Screen::Policies
                };
                if self.screen == Screen::Policies && self.doc.runs.len() == 1 {
                    self.info("one policy runs; press o until `all` to see all three".into());
                }
            }
            Action::CheckDeterminism if self.ensure_editor() => {
                return vec![Command::CheckDeterminism];
            }
            Action::Save => {
                if !self.ensure_editor() {
                    return Vec::new();
                }
                match &self.save_path {
                    Some(p) => {
                        return vec![Command::Write {
                            kind: WriteKind::Scenario,
                            path: p.clone(),
                            force: false,
                        }];
                    }
                    None => self.prompt(WriteKind::Scenario),
                }
            }
            Action::SaveAs if self.ensure_editor() => {
                self.prompt(WriteKind::Scenario);
            }
            Action::WriteCassette => self.prompt(WriteKind::Cassette),
            Action::WriteVerdicts if self.ensure_editor() => {
                self.prompt(WriteKind::Verdicts);
            }
            Action::Submit => match std::mem::replace(&mut self.mode, Mode::Browse) {
                Mode::Typing(Purpose::Field, field) => {
                    self.mode = Mode::Edit;
                    let text = field.value().to_owned();
                    let which = self.edit_field();
                    let rule = self.edit.rule;
                    // A rule's probability means nothing while the scenario's overrides it:
                    // the message after the rerun says so.
                    let overridden = self
                        .editor
                        .as_ref()
                        .and_then(|e| e.probability())
                        .filter(|_| which == Field::Probability);
                    let what = match overridden {
                        None if which == Field::Calls && text.trim().is_empty() => {
                            "calls cleared (the rule now applies to every call)".to_owned()
                        }
                        Some(p) => format!(
                            "probability set (no effect while the scenario's probability {} \
                             overrides every rule's; P cycles it)",
                            crate::json::float::py_repr(p)
                        ),
                        None => format!("{} set", which.key()),
                    };
                    let cmds = self.edit_with(&what, |e, _| e.set_field(rule, which, &text));
                    if self.edit_error.is_some() {
                        // Keep the text so it can be fixed.
                        self.mode = Mode::Typing(Purpose::Field, field);
                    }
                    return cmds;
                }
                Mode::PickKind(at) => {
                    self.mode = Mode::Edit;
                    let kind = FaultKind::ALL[at.min(FaultKind::ALL.len() - 1)];
                    let rule = self.edit.rule;
                    return self.edit_with("kind set", |e, _| {
                        e.set_field(rule, Field::Kind, kind.as_str())
                    });
                }
                Mode::Typing(Purpose::Write(kind), field) if !field.value().trim().is_empty() => {
                    let path = PathBuf::from(field.value().trim());
                    if path.is_dir() {
                        self.error(format!(
                            "{} is a folder: type a file name to write the {} to",
                            path.display(),
                            kind.label()
                        ));
                        self.mode = Mode::Typing(Purpose::Write(kind), field);
                        return Vec::new();
                    }
                    // Folders are never made unasked: a missing one is named at once.
                    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
                        && !dir.is_dir()
                    {
                        self.error(format!(
                            "the folder {} does not exist: type a path in a folder that does",
                            dir.display()
                        ));
                        self.mode = Mode::Typing(Purpose::Write(kind), field);
                        return Vec::new();
                    }
                    return vec![Command::Write {
                        kind,
                        path,
                        force: false,
                    }];
                }
                other => self.mode = other,
            },
            Action::Cancel => {
                self.mode = match self.mode {
                    Mode::Typing(Purpose::Field, _) | Mode::PickKind(_) => Mode::Edit,
                    _ => Mode::Browse,
                };
                self.edit_error = None;
            }
            Action::Answer(c) => return self.answer(c),
            Action::Reran(result) => self.reran(result),
            Action::ConfirmOverwrite(kind, path) => {
                self.mode = Mode::Confirm(Question::Overwrite(kind, path));
            }
            Action::Written(kind, path, result) => match result {
                Ok(()) => {
                    if kind == WriteKind::Scenario {
                        if let Some(e) = self.editor.as_mut() {
                            e.mark_saved();
                        }
                        self.save_path = Some(path.clone());
                        // The saved file is now the open one: reloads and the watcher follow it.
                        self.doc.path = Some(path.clone());
                    }
                    let name = path.display().to_string();
                    let shown = crate::printable::quoted(&name);
                    let budget = self.tab().max_calls;
                    if kind == WriteKind::Cassette && budget != crate::document::DEFAULT_MAX_CALLS {
                        // A cassette has no budget field: say how to judge it as this run was.
                        self.info(format!(
                            "wrote cassette to {shown}; it holds no budget or scenario checks: \
                             `toolstorm-tui check {} --max-calls {budget}` judges it with this \
                             run's budget",
                            super::copy::shell_word(&name)
                        ));
                    } else {
                        self.info(format!("wrote {} to {shown}", kind.label()));
                    }
                }
                Err(e) => self.error(format!("could not write {}: {e}", kind.label())),
            },
            Action::DeterminismChecked(result) => match result {
                Ok(text) => self.info(text),
                Err(text) => self.error(text),
            },
            _ => {}
        }
        Vec::new()
    }

    fn prompt(&mut self, kind: WriteKind) {
        let path = self.default_path(kind);
        // A message from before is not this prompt's: an error shown there is the answer to
        // what was typed.
        self.status.clear();
        self.mode = Mode::Typing(
            Purpose::Write(kind),
            TextField::new(path.display().to_string()),
        );
    }

    /// Where a write goes unless the user types another path: next to the open file.
    pub fn default_path(&self, kind: WriteKind) -> PathBuf {
        let open = self
            .doc
            .path
            .clone()
            .unwrap_or_else(|| PathBuf::from("incident.json"));
        let dir = open.parent().map(Path::to_path_buf).unwrap_or_default();
        let stem = open
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = stem.split('.').next().unwrap_or("incident").to_owned();
        let name = match kind {
            WriteKind::Scenario => match &self.save_path {
                Some(p) => return p.clone(),
                None => format!("{stem}.scenario.json"),
            },
            WriteKind::Cassette => format!(
                "{stem}.{}.cassette.json",
                self.tab().label.replace(' ', "-")
            ),
            WriteKind::Verdicts => format!("{stem}.verdicts.json"),
        };
        dir.join(name)
    }

    fn answer(&mut self, c: char) -> Vec<Command> {
        let Mode::Confirm(q) = std::mem::replace(&mut self.mode, Mode::Browse) else {
            return Vec::new();
        };
        match (q, c) {
            (Question::Overwrite(kind, path), 'y') => {
                return vec![Command::Write {
                    kind,
                    path,
                    force: true,
                }];
            }
            (Question::Overwrite(..), _) => self.info("not written".into()),
            (Question::Quit, 'y') => self.quit = true,
            (Question::Quit, _) => self.info("still here; w saves the scenario".into()),
            (Question::Conflict, 'd') => {
                if let Some(doc) = self.pending_disk.take() {
                    let disk = doc.scenario.clone();
                    if let (Some(e), Some(disk)) = (self.editor.as_mut(), disk)
                        && let Err(err) = e.take_disk(&disk)
                    {
                        self.error(format!("disk version is invalid: {err}"));
                        return Vec::new();
                    }
                    self.replace_runs(*doc);
                    self.info(
                        "took the disk version; your edits are one undo step back (u)".into(),
                    );
                }
            }
            (Question::Conflict, 'm') => {
                if let Some(doc) = self.pending_disk.take()
                    && let (Some(e), Some(disk)) = (self.editor.as_mut(), doc.scenario.as_ref())
                {
                    let _ = e.keep_local(disk);
                }
                self.info(
                    "kept your edits (unsaved); the disk version is one undo step back".into(),
                );
            }
            (q @ Question::Conflict, _) => self.mode = Mode::Confirm(q),
            (Question::RunAgent(r), c) => return self.answer_agent(r, c),
        }
        Vec::new()
    }

    /// The file on disk changed while an editor is open.
    pub(super) fn reloaded_while_editing(&mut self, doc: Box<Document>) {
        let Some(editor) = self.editor.as_mut() else {
            return;
        };
        let Some(disk) = doc.scenario.clone() else {
            // The open file is a cassette; the edited scenario is separate from it.
            self.info("the open cassette changed on disk; your edited scenario is kept".into());
            return;
        };
        if editor.same_as(&disk) {
            // Our own save, or no change in meaning — but a file that was invalid on disk and
            // is now back to what we hold is worth saying, and the old banner must go.
            if self.status_kind == StatusKind::Error {
                self.info("the file on disk is valid again (same as the editor's)".into());
            }
            return;
        }
        if editor.dirty() {
            self.pending_disk = Some(doc);
            self.mode = Mode::Confirm(Question::Conflict);
            return;
        }
        if let Err(e) = editor.take_disk(&disk) {
            self.error(format!("file on disk is invalid: {e}"));
            return;
        }
        let summary = self.replace_runs(*doc);
        self.info(format!("reloaded from disk and rerun: {summary}"));
    }

    /// Shows new runs, keeping the old ones for the compare view and the cursor on the same
    /// step; returns the diff summary for the shown run.
    fn replace_runs(&mut self, mut doc: Document) -> String {
        let keep = self.selected().map(|c| c.id);
        let label = self.tab().label.clone();
        doc.path = self.doc.path.clone();
        if doc.path.is_none() || self.doc.kind != DocKind::Scenario {
            doc.kind = DocKind::Scenario;
        }
        let old = std::mem::replace(&mut self.doc, doc);
        self.rerun_from = None;
        self.run = self
            .doc
            .runs
            .iter()
            .position(|t| t.label == label)
            .unwrap_or(0);
        self.previous = Some(old.runs);
        self.restore_cursor(keep);
        if self.doc.runs.len() > 1 && self.previous.as_ref().is_some_and(|p| p.len() == 1) {
            self.screen = Screen::Policies;
        } else if self.screen == Screen::Policies && self.doc.runs.len() == 1 {
            self.screen = Screen::Explore;
        }
        self.diff().map_or_else(String::new, |d| d.summary())
    }

    fn reran(&mut self, result: Result<Box<Document>, Error>) {
        match result {
            Ok(doc) => {
                let summary = self.replace_runs(*doc);
                let dirty = if self.editor.as_ref().is_some_and(Editor::dirty) {
                    " · unsaved"
                } else {
                    ""
                };
                // What was changed (never whatever message happened to be on the line).
                let what = self.last_edit.take().unwrap_or_else(|| "rerun".to_owned());
                self.info(format!("{what}: {summary}{dirty}"));
            }
            Err(e) => self.error(format!("rerun failed: {e}")),
        }
    }

    /// The previous run matching the shown one (same label, else the first).
    pub fn previous_tab(&self) -> Option<&Run> {
        let prev = self.previous.as_ref()?;
        prev.iter()
            .find(|t| t.label == self.tab().label)
            .or(prev.first())
    }

    /// The previous run vs the shown one.
    pub fn diff(&self) -> Option<RunDiff> {
        let before = self.previous_tab()?;
        let after = self.tab();
        Some(compare(
            before.timeline.report(),
            &before.checks,
            after.timeline.report(),
            &after.checks,
        ))
    }
}

/// Runs the editor's scenario (every policy it names) as a new document.
pub fn rerun(app: &App) -> Result<Box<Document>, Error> {
    let Some(editor) = app.editor.as_ref() else {
        return Err(Error::run(
            None,
            ConfigError::new("Nothing to rerun").because("no scenario is being edited"),
        ));
    };
    let Some(file) = editor.lab() else {
        return Err(Error::run(
            None,
            ConfigError::new("Nothing to rerun")
                .because("an MCP scenario's rules are re-run with its agent (R)"),
        ));
    };
    Document::run_shipping(app.doc.path.clone(), file).map(Box::new)
}

fn lab_runs(file: &ScenarioFile) -> Result<Vec<LabRun>, String> {
    lab::run_policies(&file.scenario, &file.policy.policies(), &file.config)
        .map_err(|e| Error::run(None, e).to_string())
}

/// The bytes a write produces: the scenario text, the shown run's cassette, or the verdicts
/// (the same document `run --verdict` writes).
pub fn content(app: &App, kind: WriteKind) -> Result<String, String> {
    let file = || {
        app.editor
            .as_ref()
            .and_then(Editor::lab)
            .ok_or_else(|| "no lab scenario: the verdicts are the agent's run's".to_owned())
    };
    match kind {
        WriteKind::Scenario => app
            .editor
            .as_ref()
            .map(|e| e.edited().to_text())
            .ok_or_else(|| "no scenario to write".to_owned()),
        WriteKind::Cassette => Cassette::from_report(app.timeline().report())
            .map(|c| c.dumps())
            .map_err(|e| format!("ConfigurationError: {e}")),
        WriteKind::Verdicts => {
            let f = file()?;
            let runs = lab_runs(f)?;
            Ok(pretty(&lab::verdicts_value(&f.scenario.name, &f.config, &runs)) + "\n")
        }
    }
}

/// Runs the current configuration twice and compares the digests with each other and with
/// the shown runs.
pub fn determinism(app: &App) -> Result<String, String> {
    let file = app
        .editor
        .as_ref()
        .and_then(Editor::lab)
        .ok_or("nothing to run: the determinism check runs lab scenarios")?;
    let (a, b) = (lab_runs(file)?, lab_runs(file)?);
    let mut same = true;
    let mut parts = Vec::new();
    for (x, y) in a.iter().zip(&b) {
        let shown = app
            .doc
            .runs
            .iter()
            .find(|t| t.policy == Some(x.policy))
            .is_none_or(|t| t.digest == x.digest);
        same &= x.digest == y.digest && shown;
        parts.push(format!(
            "{} {}",
            x.policy,
            &x.digest[..12.min(x.digest.len())]
        ));
    }
    let text = parts.join(" · ");
    if same {
        Ok(format!(
            "deterministic: two runs, identical digests ({text})"
        ))
    } else {
        Err(format!("NOT deterministic: digests differ ({text})"))
    }
}
