//! The app's state and its update function: plain data (the open document, the selected run
//! and step, focus, mode, filter, status line, the runner's editor and previous runs) changed
//! only by [`App::update`], which returns the side effects to run as [`Command`]s. No
//! terminal, channel or file handle in here. The runner's part of `update` lives in
//! [`super::runner`].

use std::path::PathBuf;

use ratatui::layout::Rect;

use super::action::{Action, Command, WriteKind};
pub use super::focus::Focus;
use crate::document::{Document, Error, Run};
use crate::report::Call;
use crate::timeline::Timeline;

/// What the keyboard is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Moving around.
    Browse,
    /// Typing a timeline filter.
    Filter(String),
    /// The key help overlay.
    Help,
    /// The rule editor has the keys.
    Edit,
    /// Typing a new value for the selected rule field.
    EditField(String),
    /// Typing a path to write to.
    Prompt(WriteKind, String),
    /// A yes/no (or which-version) question.
    Confirm(Question),
}

/// A question the user must answer before anything is lost or overwritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Question {
    /// The target exists and is not the open file: overwrite it? (`y` / `n`)
    Overwrite(WriteKind, PathBuf),
    /// Quit with unsaved edits? (`y` / `n`)
    Quit,
    /// The file changed on disk while there are unsaved edits: keep the disk version (`d`) or
    /// yours (`m`)? The other stays one undo step away.
    Conflict,
}

/// What the main area shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Screen {
    /// The timeline and details.
    Explore,
    /// The previous and the new run side by side.
    Compare,
    /// Every run of the document (the three policies) side by side.
    Policies,
}

/// The rule editor's selection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EditCursor {
    /// Selected rule.
    pub rule: usize,
    /// Selected field (index into [`crate::lab::edit::Field::ALL`]).
    pub field: usize,
}

/// Whether the status line reports a problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusKind {
    /// Information.
    Info,
    /// A problem (e.g. the file on disk is invalid).
    Error,
}

/// The application state.
#[derive(Clone, Debug)]
pub struct App {
    /// The open document (the last valid one).
    pub doc: Document,
    /// Index of the shown run.
    pub run: usize,
    /// Selected call index in the run (`None` when the run has no calls).
    pub cursor: Option<usize>,
    /// Focused pane.
    pub focus: Focus,
    /// Keyboard mode.
    pub mode: Mode,
    /// Active timeline filter (tool name or status substring).
    pub filter: Option<String>,
    /// Scroll offsets of the details, coverage, effects and verdict panes.
    pub scroll: [u16; 4],
    /// Status line text.
    pub status: String,
    /// Status line kind.
    pub status_kind: StatusKind,
    /// Terminal size (for mapping clicks).
    pub size: Rect,
    /// Set when the app should exit.
    pub quit: bool,
    /// The scenario being edited (created on the first edit).
    pub editor: Option<crate::lab::edit::Editor>,
    /// Where `w` saves the scenario (`None`: ask).
    pub save_path: Option<PathBuf>,
    /// The runs before the last rerun, for the compare view.
    pub previous: Option<Vec<Run>>,
    /// What the main area shows.
    pub screen: Screen,
    /// The rule editor's selection.
    pub edit: EditCursor,
    /// Why the last edit was refused (shown inline in the editor).
    pub edit_error: Option<String>,
    /// A version read from disk waiting for the user to resolve a conflict.
    pub pending_disk: Option<Box<Document>>,
}

impl App {
    /// A new app showing `doc`, with the cursor on the first call.
    pub fn new(doc: Document) -> App {
        let mut app = App {
            doc,
            run: 0,
            cursor: None,
            focus: Focus::Timeline,
            mode: Mode::Browse,
            filter: None,
            scroll: [0; 4],
            status: String::new(),
            status_kind: StatusKind::Info,
            size: Rect::new(0, 0, 100, 30),
            quit: false,
            editor: None,
            save_path: None,
            previous: None,
            screen: Screen::Explore,
            edit: EditCursor::default(),
            edit_error: None,
            pending_disk: None,
        };
        if let Some(file) = &app.doc.scenario {
            app.editor = crate::lab::edit::Editor::new(file).ok();
            app.save_path = app.doc.path.clone();
        }
        app.cursor = app.visible().first().copied();
        app
    }

    /// The shown run.
    pub fn tab(&self) -> &Run {
        &self.doc.runs[self.run.min(self.doc.runs.len().saturating_sub(1))]
    }

    /// The shown run's timeline.
    pub fn timeline(&self) -> &Timeline {
        &self.tab().timeline
    }

    /// The selected call.
    pub fn selected(&self) -> Option<&Call> {
        self.cursor
            .and_then(|i| self.timeline().report().calls.get(i))
    }

    fn matches_filter(&self, call: &Call) -> bool {
        match &self.filter {
            None => true,
            Some(f) if f.is_empty() => true,
            Some(f) => {
                let f = f.to_lowercase();
                call.tool.to_lossy().to_lowercase().contains(&f)
                    || call.status.as_str().contains(&f)
                    || call
                        .fault
                        .as_ref()
                        .is_some_and(|n| n.to_lossy().to_lowercase().contains(&f))
            }
        }
    }

    /// Indices of the calls the timeline shows (after the filter).
    pub fn visible(&self) -> Vec<usize> {
        let calls = &self.timeline().report().calls;
        (0..calls.len())
            .filter(|&i| self.matches_filter(&calls[i]))
            .collect()
    }

    pub(super) fn move_to(&mut self, target: Option<usize>, what: &str) {
        match target {
            Some(t) => {
                self.cursor = Some(t);
                self.scroll[0] = 0;
                self.info(String::new());
            }
            None => self.info(format!("no {what}")),
        }
    }

    pub(super) fn info(&mut self, text: String) {
        self.status = text;
        self.status_kind = StatusKind::Info;
    }

    fn step(&mut self, by: isize) {
        let visible = self.visible();
        if visible.is_empty() {
            return;
        }
        let pos = self
            .cursor
            .and_then(|c| visible.iter().position(|&v| v >= c))
            .unwrap_or(0) as isize;
        let next = (pos + by).clamp(0, visible.len() as isize - 1) as usize;
        self.move_to(Some(visible[next]), "step");
    }

    fn jump(&mut self, forward: bool, what: &str, pred: impl Fn(&Timeline, usize, &Call) -> bool) {
        let t = self.timeline();
        let visible = self.visible();
        let ok = |i: usize, c: &Call| visible.binary_search(&i).is_ok() && pred(t, i, c);
        let target = match (forward, self.cursor) {
            (true, c) => t.next_where(c, ok),
            (false, Some(c)) => t.prev_where(c, ok),
            (false, None) => None,
        };
        self.move_to(target, what);
    }

    /// Applies an action; returns the side effects to carry out.
    pub fn update(&mut self, action: Action) -> Vec<Command> {
        match action {
            Action::Quit => return self.request_quit(),
            Action::Back => match self.mode {
                Mode::Browse => return self.request_quit(),
                Mode::EditField(_) => self.mode = Mode::Edit,
                _ => self.mode = Mode::Browse,
            },
            Action::Next => self.scroll_or_step(1),
            Action::Prev => self.scroll_or_step(-1),
            Action::First => self.step(isize::MIN / 2),
            Action::Last => self.step(isize::MAX / 2),
            Action::PageDown => self.step(10),
            Action::PageUp => self.step(-10),
            Action::NextFault => self.jump(true, "later fault", |_, _, c| c.fault.is_some()),
            Action::PrevFault => self.jump(false, "earlier fault", |_, _, c| c.fault.is_some()),
            Action::NextEffect => {
                self.jump(true, "later effect", |t, i, _| !t.effects_of(i).is_empty())
            }
            Action::PrevEffect => self.jump(false, "earlier effect", |t, i, _| {
                !t.effects_of(i).is_empty()
            }),
            Action::NextFailure => self.jump(true, "later failure", |_, _, c| c.failed()),
            Action::PrevFailure => self.jump(false, "earlier failure", |_, _, c| c.failed()),
            Action::NextRun => self.switch_run(1),
            Action::PrevRun => self.switch_run(-1),
            Action::FocusNext => self.focus = self.focus.shift(1),
            Action::FocusPrev => self.focus = self.focus.shift(-1),
            Action::ScrollDown => self.scroll_focused(1),
            Action::ScrollUp => self.scroll_focused(-1),
            Action::StartFilter => {
                self.mode = Mode::Filter(self.filter.clone().unwrap_or_default())
            }
            Action::FilterChar(c) => {
                if let Mode::Filter(text) = &mut self.mode {
                    text.push(c);
                    let text = text.clone();
                    self.apply_filter(Some(text));
                }
            }
            Action::FilterBackspace => {
                if let Mode::Filter(text) = &mut self.mode {
                    text.pop();
                    let text = text.clone();
                    self.apply_filter(Some(text));
                }
            }
            Action::FilterApply => {
                if let Mode::Filter(text) = std::mem::replace(&mut self.mode, Mode::Browse) {
                    self.apply_filter(if text.is_empty() { None } else { Some(text) });
                }
            }
            Action::FilterCancel => {
                self.mode = Mode::Browse;
                self.apply_filter(None);
            }
            Action::ToggleHelp => {
                self.mode = if self.mode == Mode::Help {
                    Mode::Browse
                } else {
                    Mode::Help
                };
            }
            Action::Click { pane, call } => {
                if let Some(pane) = pane {
                    self.focus = pane;
                }
                if call.is_some() {
                    self.move_to(call, "call");
                }
            }
            Action::Wheel { down, pane } => {
                if let Some(f) = pane {
                    self.focus = f;
                }
                self.scroll_or_step(if down { 1 } else { -1 });
            }
            Action::Resize(w, h) => self.size = Rect::new(0, 0, w, h),
            Action::Reload | Action::FileChanged => {
                if self.doc.path.is_some() {
                    return vec![Command::Reload];
                }
            }
            Action::Reloaded(result) => self.reloaded(result),
            Action::Suspend => return vec![Command::Suspend],
            other => return self.update_runner(other),
        }
        Vec::new()
    }

    fn scroll_or_step(&mut self, by: isize) {
        match self.focus {
            Focus::Timeline => self.step(by),
            _ => self.scroll_focused(by),
        }
    }

    fn scroll_focused(&mut self, by: isize) {
        let slot = match self.focus {
            Focus::Timeline => return self.step(by),
            Focus::Details => 0,
            Focus::Coverage => 1,
            Focus::Effects => 2,
            Focus::Verdicts => 3,
        };
        self.scroll[slot] = (self.scroll[slot] as isize + by).clamp(0, u16::MAX as isize) as u16;
    }

    fn switch_run(&mut self, by: isize) {
        let n = self.doc.runs.len() as isize;
        if n <= 1 {
            self.info("this file holds one run".into());
            return;
        }
        let keep = self.selected().map(|c| c.id);
        self.run = (self.run as isize + by).rem_euclid(n) as usize;
        self.restore_cursor(keep);
        self.info(format!(
            "run {} of {}: {}",
            self.run + 1,
            n,
            self.tab().label
        ));
    }

    fn apply_filter(&mut self, filter: Option<String>) {
        self.filter = filter;
        let visible = self.visible();
        if let Some(c) = self.cursor
            && !visible.contains(&c)
        {
            self.cursor = visible
                .iter()
                .copied()
                .find(|&v| v > c)
                .or(visible.last().copied());
        } else if self.cursor.is_none() {
            self.cursor = visible.first().copied();
        }
    }

    /// Puts the cursor back on the call with id `keep` (or the nearest one).
    pub(super) fn restore_cursor(&mut self, keep: Option<u64>) {
        let visible = self.visible();
        self.cursor = match keep {
            Some(id) => {
                let idx = (id as usize).saturating_sub(1);
                visible
                    .iter()
                    .copied()
                    .find(|&v| v >= idx)
                    .or(visible.last().copied())
            }
            None => visible.first().copied(),
        };
    }

    fn reloaded(&mut self, result: Result<Box<Document>, Error>) {
        match result {
            Ok(doc) if self.editor.is_some() => self.reloaded_while_editing(doc),
            Ok(doc) => {
                let keep = self.selected().map(|c| c.id);
                // On the last call, follow the tail: a recording that grows shows what arrived.
                let following =
                    self.cursor.is_some() && self.cursor == self.visible().last().copied();
                let before = self.timeline().len();
                self.doc = *doc;
                self.run = self.run.min(self.doc.runs.len().saturating_sub(1));
                self.restore_cursor(keep);
                let after = self.timeline().len();
                if following && after > before {
                    self.cursor = self.visible().last().copied();
                    self.info(format!(
                        "reloaded from disk: {} new call(s)",
                        after - before
                    ));
                } else {
                    self.info("reloaded from disk".into());
                }
            }
            // Gone (deleted, or mid-replace by an editor): wait for it to come back.
            Err(e) if e.is_missing() => {
                self.status = "the file was removed from disk; still showing the last version \
                               (it reloads when the file is back)"
                    .into();
                self.status_kind = StatusKind::Error;
            }
            Err(e) => {
                self.status =
                    format!("file on disk is invalid, still showing the last good version: {e}");
                self.status_kind = StatusKind::Error;
            }
        }
    }
}
