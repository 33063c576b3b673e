//! The app's state and its update function: plain data (the open document, the selected run
//! and step, focus, mode, filter and search, status line, the runner's editor and previous
//! runs) changed only by [`App::update`], which returns the side effects to run as
//! [`Command`]s. No terminal, channel or file handle in here. The runner's part of `update`
//! lives in [`super::runner`]; finding calls (filter, search, jump) in [`super::find`].
//!
//! Keys have one meaning each: `j`/`k` always step, `J`/`K` scroll the focused pane, `Esc`
//! closes things and never quits (`q` does).

use std::path::PathBuf;

use ratatui::layout::Rect;

use super::action::{Action, Command, WriteKind};
pub use super::focus::{Drawn, Focus};
use super::prompt::TextField;
use crate::document::ask::AskEnd;
use crate::document::{Document, Error, Run};
use crate::report::Call;
use crate::timeline::Timeline;

/// What the keyboard is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Moving around.
    Browse,
    /// The key help (scrollable).
    Help,
    /// The rule editor has the keys.
    Edit,
    /// Typing text for a purpose.
    Typing(Purpose, TextField),
    /// Picking a rule's fault kind from the list (the index of the highlighted kind).
    PickKind(usize),
    /// A yes/no (or which-version) question.
    Confirm(Question),
    /// Showing a text (a copied call, the command that reproduces the run) until a key.
    Show(String, String),
    /// The summary of the whole run (per tool and per rule), with its selection.
    Summary(SummaryCursor),
    /// Every run of the document as a list (a campaign's runs), with the selected row.
    Runs(usize),
    /// What if, at this call: the faults to pin to it (the index of the highlighted one).
    PinFault(usize),
    /// The wire view: every message of an MCP session ([`super::wire`]; its place is
    /// [`App::wire_cursor`]).
    Wire,
}

/// The summary table's selection and order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SummaryCursor {
    /// Selected row (in sorted order).
    pub row: usize,
    /// The column rows are sorted by (index into [`crate::summary::Column::ALL`]).
    pub column: usize,
    /// Sorted the other way round.
    pub reverse: bool,
}

/// The wire view's place and search.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WireCursor {
    /// The selected message.
    pub row: usize,
    /// The selected message's scroll.
    pub scroll: u16,
    /// The last search.
    pub search: Option<String>,
    /// The view is open under a pop-up (a copied message): `Esc` there comes back to it.
    pub open: bool,
}

/// What typed text is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// The timeline filter.
    Filter,
    /// A search.
    Search,
    /// A search of the wire view's messages.
    WireSearch,
    /// A call id to jump to.
    Jump,
    /// The selected rule field's new value.
    Field,
    /// A path to write to.
    Write(WriteKind),
}

impl Purpose {
    /// The prompt shown before the text.
    pub fn prompt(self) -> &'static str {
        match self {
            Purpose::Filter => "filter (word, tool:, status:, rule:, key:, is:dup…): ",
            Purpose::Search => "search: ",
            Purpose::WireSearch => "search messages: ",
            Purpose::Jump => "jump to call # (or a batch call id such as call_C): ",
            Purpose::Field => "edit: ",
            Purpose::Write(WriteKind::Scenario) => "write scenario to: ",
            Purpose::Write(WriteKind::Cassette) => "write cassette to: ",
            Purpose::Write(WriteKind::Verdicts) => "write verdicts to: ",
        }
    }
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
    /// Start the agent a file names, with the command line, folder and file shown? (`y`;
    /// any other key: no). See [`super::confirm`].
    RunAgent(Box<super::action::AgentRerun>),
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
    /// Information (goes away after a few seconds).
    Info,
    /// A problem (stays until something replaces it).
    Error,
}

/// The summary's rows and the run (run, digest, length) they were worked out for.
pub type SummaryCache = ((usize, String, usize), Vec<crate::summary::Row>);

/// What the visible calls depend on: run, digest, length, filter text, named calls.
pub type VisibleKey = (usize, String, usize, String, Option<super::named::NamedKey>);

/// Messages the log keeps (`m` shows them, newest last).
pub const MESSAGE_LOG: usize = 50;

/// Seconds an information message stays on the status line.
pub const MESSAGE_SECONDS: u16 = 6;

/// An agent's re-run under way in the background.
#[derive(Debug, Clone)]
pub struct AgentRunning {
    /// Set by Esc: the agent's process group is stopped.
    pub stop: crate::agent::StopFlag,
    /// The agent's output (`agent.log` in the re-run's folder).
    pub log: std::path::PathBuf,
    /// When it started (the explorer's clock, for the elapsed time shown).
    pub started: std::time::Instant,
}

impl AgentRunning {
    /// What the status line shows while it runs: the time so far and the agent's last line.
    pub fn progress(&self) -> String {
        let last = read_tail(&self.log)
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .unwrap_or_else(|| "(no output yet)".into());
        format!(
            "agent running {:.0}s · {last} · Esc stops it",
            self.started.elapsed().as_secs_f64()
        )
    }
}

impl App {
    /// Whether an agent's re-run (`p`, `R`) is under way in the background.
    pub fn agent_running(&self) -> bool {
        self.agent_run.is_some()
    }
}

/// The last few KB of a log (a growing file, read without holding it).
fn read_tail(path: &std::path::Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = crate::fsread::open_regular(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(4096)));
    let mut buf = Vec::new();
    let _ = f.take(4096).read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// What makes a status message stale (it is cleared when that happens).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaleWhen {
    /// A move that works ("no later fault" said of the last one).
    Moved,
    /// A new terminal size (the zoom a small terminal made).
    Resized,
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
    /// The wire view's place and search.
    pub wire_cursor: WireCursor,
    /// Active timeline filter (tool name, status or rule substring).
    pub filter: Option<String>,
    /// Active search (highlighted; `n`/`N` move between matches).
    pub search: Option<String>,
    /// Scroll offsets of the details, coverage, effects and verdict panes.
    pub scroll: [u16; 4],
    /// The help's scroll offset.
    pub help_scroll: u16,
    /// The focused pane fills the screen.
    pub zoom: bool,
    /// The scenario's story is shown.
    pub story: bool,
    /// Status line text.
    pub status: String,
    /// Status line kind.
    pub status_kind: StatusKind,
    /// Seconds the status message has been shown.
    pub status_age: u16,
    /// Terminal size (for mapping clicks).
    pub size: Rect,
    /// What the last layout drew.
    pub drawn: Drawn,
    /// Set when the effect ledger should bring the selected call's commits into view.
    pub follow_effects: bool,
    /// Set when the app should exit.
    pub quit: bool,
    /// The scenario being edited (created on the first edit).
    pub editor: Option<crate::lab::edit::Editor>,
    /// Where `w` saves the scenario (`None`: ask).
    pub save_path: Option<PathBuf>,
    /// The runs before the last rerun, for the compare view.
    pub previous: Option<Vec<Run>>,
    /// The re-run under way: its stop flag (Esc), its agent's log, when it started.
    pub agent_run: Option<AgentRunning>,
    /// The run an agent's re-run was started from (Esc goes back to it once the comparison is
    /// closed); none once another run is chosen.
    pub rerun_from: Option<usize>,
    /// The last reload was asked for with `r` (not a change seen on disk).
    pub reload_asked: bool,
    /// An unfinished `ask` record was seen to grow since it was opened: its run is going on.
    pub ask_growing: bool,
    /// Follow mode (`A`): the cursor goes to the newest call as calls arrive; any move ends
    /// it. See [`super::follow`].
    pub follow: bool,
    /// The zoom is Tab's on a terminal too small for two panes (a resize ends it).
    pub auto_zoom: bool,
    /// The batch lanes' time zoom (1: the whole run; 2, 4, ... 64) and where the window
    /// starts, in quarters of its width from the first call.
    pub lanes_zoom: u32,
    /// See [`App::lanes_zoom`].
    pub lanes_pan: u32,
    /// The program an agent's re-run starts as its proxy (none: this one).
    pub proxy_bin: Option<std::path::PathBuf>,
    /// What the main area shows.
    pub screen: Screen,
    /// The rule editor's selection.
    pub edit: EditCursor,
    /// Why the last edit was refused (shown inline in the editor).
    pub edit_error: Option<String>,
    /// A version read from disk waiting for the user to resolve a conflict.
    pub pending_disk: Option<Box<Document>>,
    /// Answers a person gave an interactive approver (question, approved), reused when the
    /// same scenario runs again.
    pub approvals: Vec<(String, bool)>,
    /// The edit a pending rerun comes from (named in the message when it finishes).
    pub last_edit: Option<String>,
    /// The selected verdict (an index into the run's checks), whose reasons and calls are
    /// shown; `None`: every failed verdict's calls are marked.
    pub verdict: Option<usize>,
    /// The selected verdict's check name (what the selection follows across reruns).
    pub verdict_name: Option<String>,
    /// The summary's rows, for the run (run, digest, length) they were worked out for.
    pub summary_cache: std::cell::RefCell<Option<SummaryCache>>,
    /// The calls the filter shows, for the filter, run and selection they were worked out for.
    pub visible_cache: std::cell::RefCell<Option<(VisibleKey, Vec<usize>)>>,
    /// Set when the verdict pane should bring the selected verdict into view.
    pub follow_verdict: bool,
    /// Set when Details should scroll to the search match of the selected call.
    pub follow_match: bool,
    /// The recent status messages, oldest first (`m` shows them).
    pub messages: Vec<String>,
    /// What makes the status line's message stale, when something does: it is cleared then.
    pub status_stale_when: Option<StaleWhen>,
    /// The reasons and calls behind the selected (or the failed) verdicts.
    pub named: super::named::Named,
    /// What the user said yes to starting in this session (an agent's command, its folder
    /// and its file): not asked about again.
    pub trusted: Vec<crate::agent::Launch>,
}

impl App {
    /// A new app showing `doc`: the run that tells the scenario's story, cursor on its first
    /// call.
    pub fn new(mut doc: Document) -> App {
        let (mut run, failing) = story_run(&doc.runs);
        // A campaign's run is read when it is first shown (the first one is read already).
        if doc.load_run(run).is_err() {
            run = 0;
        }
        let mut app = App {
            doc,
            run,
            cursor: None,
            focus: Focus::Timeline,
            mode: Mode::Browse,
            filter: None,
            search: None,
            scroll: [0; 4],
            help_scroll: 0,
            zoom: false,
            story: false,
            status: String::new(),
            status_kind: StatusKind::Info,
            status_age: 0,
            size: Rect::new(0, 0, 100, 30),
            drawn: Drawn::default(),
            follow_effects: false,
            quit: false,
            editor: None,
            save_path: None,
            previous: None,
            agent_run: None,
            rerun_from: None,
            reload_asked: false,
            ask_growing: false,
            follow: false,
            auto_zoom: false,
            lanes_zoom: 1,
            lanes_pan: 0,
            proxy_bin: None,
            screen: Screen::Explore,
            edit: EditCursor::default(),
            edit_error: None,
            pending_disk: None,
            approvals: Vec::new(),
            last_edit: None,
            verdict: None,
            verdict_name: None,
            visible_cache: std::cell::RefCell::new(None),
            summary_cache: std::cell::RefCell::new(None),
            follow_verdict: false,
            follow_match: false,
            messages: Vec::new(),
            status_stale_when: None,
            named: super::named::Named::default(),
            trusted: Vec::new(),
            wire_cursor: WireCursor::default(),
        };
        if let Some(file) = &app.doc.scenario {
            app.editor = crate::lab::edit::Editor::new(file).ok();
            app.save_path = app.doc.path.clone();
        }
        app.cursor = app.visible().first().copied();
        app.sync_named();
        // A campaign opens on its list of runs.
        if app.doc.campaign.is_some() {
            app.mode = Mode::Runs(app.run);
        }
        if app.doc.runs.len() > 1 {
            let why = failing.map_or_else(
                || "every run passes".to_owned(),
                |check| format!("it fails on {check}"),
            );
            app.info(format!(
                "showing run {} of {} ({}): {why}; h/l switch runs",
                app.run + 1,
                app.doc.runs.len(),
                app.tab().name()
            ));
        }
        app
    }

    /// Whether the rule editor is open (browsing it, typing a field or picking a kind).
    pub fn editing(&self) -> bool {
        matches!(
            self.mode,
            Mode::Edit | Mode::Typing(Purpose::Field, _) | Mode::PickKind(_)
        )
    }

    /// The shown run.
    pub fn tab(&self) -> &Run {
        &self.doc.runs[self.run.min(self.doc.runs.len().saturating_sub(1))]
    }

    /// The shown run's MCP session, when the proxy recorded it.
    pub fn session(&self) -> Option<&crate::mcp::session::McpSession> {
        self.tab().mcp.as_deref()
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

    pub(super) fn move_to(&mut self, target: Option<usize>, what: &str) {
        // Any move of the cursor ends following the newest call.
        self.stop_following();
        match target {
            Some(t) => {
                if self.cursor != Some(t) {
                    self.scroll[0] = 0;
                    self.follow_effects = true;
                    // A move that worked makes "no later fault" stale.
                    self.status_gone_stale(StaleWhen::Moved);
                }
                self.cursor = Some(t);
            }
            None => self.info_until(format!("no {what}"), StaleWhen::Moved),
        }
    }

    /// Keeps `text` in the message log (the last [`MESSAGE_LOG`]).
    fn log(&mut self, text: &str) {
        if text.is_empty() || self.messages.last().is_some_and(|m| m == text) {
            return;
        }
        if self.messages.len() == MESSAGE_LOG {
            self.messages.remove(0);
        }
        self.messages.push(text.to_owned());
    }

    /// Clears the status line when its message is one that `what` makes stale.
    fn status_gone_stale(&mut self, what: StaleWhen) {
        if self.status_stale_when == Some(what) {
            self.status.clear();
            self.status_stale_when = None;
        }
    }

    /// [`App::info`] for a message that `stale` makes untrue, which then clears it.
    pub(super) fn info_until(&mut self, text: String, stale: StaleWhen) {
        self.info(text);
        self.status_stale_when = Some(stale);
    }

    pub(super) fn info(&mut self, text: String) {
        self.status_stale_when = None;
        self.log(&text);
        self.status = text;
        self.status_kind = StatusKind::Info;
        self.status_age = 0;
    }

    /// Says `text` on the status line only, not in the message log (what changes with every
    /// key, as a filter being typed); an error when `error`.
    fn status_only(&mut self, text: String, error: bool) {
        self.status_stale_when = None;
        self.status = text;
        self.status_kind = if error {
            StatusKind::Error
        } else {
            StatusKind::Info
        };
        self.status_age = 0;
    }

    pub(super) fn error(&mut self, text: String) {
        self.status_stale_when = None;
        self.log(&text);
        self.status = text;
        self.status_kind = StatusKind::Error;
        self.status_age = 0;
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
        let commands = self.apply(action);
        // An agent's command starts only through the one gate (asked first when a file
        // names it).
        let commands = self.gate_agents(commands);
        self.sync_named();
        commands
    }

    fn apply(&mut self, action: Action) -> Vec<Command> {
        if let Some(commands) = self.pin_action(&action) {
            return commands;
        }
        if let Some(commands) = self.wire_action(&action) {
            return commands;
        }
        match action {
            Action::ScrollDown | Action::ScrollUp | Action::PageDown | Action::PageUp
                if self.mode == Mode::Help =>
            {
                let by: i32 = match action {
                    Action::ScrollDown => 1,
                    Action::ScrollUp => -1,
                    Action::PageDown => 10,
                    _ => -10,
                };
                let max = i32::from(self.drawn.help_max);
                self.help_scroll = (i32::from(self.help_scroll) + by).clamp(0, max) as u16;
            }
            Action::Quit => return self.request_quit(),
            Action::ToggleFollow => self.toggle_follow(),
            Action::PinFault => self.open_pin(),
            Action::AgentRan(result, label) => self.agent_ran(result, label),
            Action::Back => self.back(),
            Action::Next => self.step(1),
            Action::Prev => self.step(-1),
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
            Action::NextFailure => self.step_named(true),
            Action::PrevFailure => self.step_named(false),
            Action::SelectVerdict(by) => self.select_verdict(by),
            Action::NextRun => self.switch_run(1),
            Action::PrevRun => self.switch_run(-1),
            Action::FocusPane(n) => self.focus_pane(n),
            Action::FocusNext => self.tab_focus(1),
            Action::FocusPrev => self.tab_focus(-1),
            Action::ScrollDown => self.scroll_pane(self.focus, 1),
            Action::ScrollUp => self.scroll_pane(self.focus, -1),
            Action::StartFilter => {
                let text = self.filter.clone().unwrap_or_default();
                self.mode = Mode::Typing(Purpose::Filter, TextField::new(text));
            }
            // A new search starts empty; Enter on nothing repeats the last one (as in less/vim).
            Action::StartSearch => {
                self.mode = Mode::Typing(Purpose::Search, TextField::default());
            }
            Action::StartJump => self.mode = Mode::Typing(Purpose::Jump, TextField::default()),
            Action::SearchNext => self.search_step(true),
            Action::SearchPrev => self.search_step(false),
            Action::ToggleZoom if self.screen != Screen::Explore => {
                self.info("z zooms a pane of the explorer: Esc closes this view first".into());
            }
            Action::LanesZoom(by) => self.zoom_lanes(by),
            Action::ToggleZoom => {
                self.zoom = !self.zoom;
                self.auto_zoom = false;
                if self.zoom {
                    self.info("zoomed: Tab shows the next pane whole; z or Esc goes back".into());
                }
            }
            Action::ToggleStory => self.story = !self.story,
            Action::ShowMessage => {
                if self.messages.is_empty() {
                    self.info("no message yet".into());
                } else {
                    let title =
                        format!("Messages · the last {}, newest first", self.messages.len());
                    let newest: Vec<&str> =
                        self.messages.iter().rev().map(String::as_str).collect();
                    self.mode = Mode::Show(title, newest.join("\n"));
                }
            }
            Action::CopyCall => return self.copy_call(),
            Action::CopyCommand => return self.copy_command(),
            Action::Tick => {
                self.status_age = self.status_age.saturating_add(1);
                if self.status_kind == StatusKind::Info && self.status_age >= MESSAGE_SECONDS {
                    self.status.clear();
                }
                // A proxy killed after its last write changes no file: the end of a live
                // session is seen here, and read as a change on disk.
                if self.doc.live && !self.doc.still_live() {
                    return self.update(Action::FileChanged);
                }
            }
            Action::ToggleHelp => {
                self.mode = if self.mode == Mode::Help {
                    Mode::Browse
                } else {
                    self.help_scroll = 0;
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
                let by = if down { 1 } else { -1 };
                match pane {
                    Some(p) => self.scroll_pane(p, by),
                    None => self.step(by),
                }
            }
            Action::Resize(w, h) => {
                let resized = self.size != Rect::new(0, 0, w, h);
                self.size = Rect::new(0, 0, w, h);
                // A zoom Tab made because the terminal was too small to show two panes is
                // the size's, not the user's: a new size ends it, and its message.
                if self.auto_zoom && resized {
                    self.auto_zoom = false;
                    self.zoom = false;
                    self.status_gone_stale(StaleWhen::Resized);
                }
            }
            Action::Reload | Action::FileChanged => {
                // Asked for (r) or seen on disk: the question about unsaved edits says which.
                self.reload_asked = matches!(action, Action::Reload);
                if self.doc.path.is_some() {
                    return vec![Command::Reload];
                }
            }
            Action::Reloaded(result) => self.reloaded(result),
            Action::ReloadedAsking {
                result,
                answers,
                asked,
                reused,
            } => {
                let ok = result.is_ok();
                self.approvals = answers;
                self.reloaded(result);
                if ok && reused > 0 {
                    self.info(format!(
                        "ran again: {reused} approval(s) kept from your earlier answers for the \
                         identical call, {asked} asked"
                    ));
                } else if ok && asked > 0 {
                    self.info(format!("{asked} approval question(s) answered"));
                }
            }
            Action::Suspend => return vec![Command::Suspend],
            Action::Input(request) => {
                if let Mode::Typing(purpose, field) = &mut self.mode {
                    field.apply(request);
                    if *purpose == Purpose::Filter {
                        let text = field.value().to_owned();
                        self.apply_filter((!text.is_empty()).then_some(text), false);
                    }
                }
            }
            Action::Submit if matches!(self.mode, Mode::Typing(p, _) if matches!(p, Purpose::Filter | Purpose::Search | Purpose::Jump)) => {
                self.submit_find()
            }
            Action::Cancel if matches!(self.mode, Mode::Typing(Purpose::Filter, _)) => {
                self.mode = Mode::Browse;
                self.apply_filter(None, true);
            }
            Action::Cancel
                if matches!(self.mode, Mode::Typing(Purpose::Search | Purpose::Jump, _)) =>
            {
                self.mode = Mode::Browse;
            }
            Action::ToggleSummary => self.toggle_summary(),
            Action::Pick(by) if matches!(self.mode, Mode::Summary(_)) => self.summary_move(by),
            Action::Pick(by) if matches!(self.mode, Mode::Runs(_)) => self.runs_move(by),
            Action::ToggleRuns => self.toggle_runs(),
            Action::CompareRun => self.runs_compare(),
            Action::Submit if matches!(self.mode, Mode::Runs(_)) => self.runs_open(),
            Action::SortBy(by) => self.summary_sort(by),
            Action::ReverseSort => self.summary_reverse(),
            Action::Submit if matches!(self.mode, Mode::Summary(_)) => self.summary_filter(),
            Action::NextDuplicate => self.jump(true, "later duplicate commit", |t, i, _| {
                t.commits_duplicate(i)
            }),
            Action::PrevDuplicate => self.jump(false, "earlier duplicate commit", |t, i, _| {
                t.commits_duplicate(i)
            }),
            other => return self.update_runner(other),
        }
        Vec::new()
    }

    /// `Esc`: close what is open, innermost first. It never quits.
    fn back(&mut self) {
        match self.mode {
            // The comparison and the policies side by side close first (they cover the rest).
            Mode::Browse if self.screen != Screen::Explore => self.screen = Screen::Explore,
            Mode::Browse if self.zoom => self.zoom = false,
            Mode::Browse if self.story => self.story = false,
            Mode::Browse if self.search.is_some() => {
                self.search = None;
                self.info("search cleared".into());
            }
            Mode::Browse if self.agent_run.is_some() => {
                if let Some(r) = &self.agent_run {
                    r.stop.stop();
                }
                self.info("stopping the agent's re-run …".into());
            }
            Mode::Browse if self.verdict.is_some() => {
                self.verdict = None;
                self.verdict_name = None;
                self.info(
                    "no verdict selected: x / X move between the calls behind every failed verdict"
                        .into(),
                );
            }
            Mode::Browse if self.rerun_from.is_some() => {
                let from = self.rerun_from.take().unwrap_or(0);
                if from < self.doc.runs.len() {
                    let keep = self.selected().map(|c| c.id);
                    self.run = from;
                    self.restore_cursor(keep);
                    self.info(format!(
                        "back to run {} of {}: {} (the re-run stays in the list: L)",
                        from + 1,
                        self.doc.runs.len(),
                        self.tab().name()
                    ));
                }
            }
            Mode::Browse => self.info("q quits".into()),
            Mode::Typing(Purpose::Field, _) | Mode::PickKind(_) => self.mode = Mode::Edit,
            // A message copied from the wire view: back to it.
            Mode::Show(..) | Mode::Typing(Purpose::WireSearch, _) if self.wire_cursor.open => {
                self.mode = Mode::Wire;
            }
            Mode::Wire => {
                self.wire_cursor.open = false;
                self.mode = Mode::Browse;
            }
            _ => self.mode = Mode::Browse,
        }
    }

    /// `Tab` / `S-Tab`: the next visible pane. When the screen shows the timeline alone, the
    /// next pane is zoomed instead, so Tab always shows something new.
    fn tab_focus(&mut self, by: isize) {
        if !self.zoom && self.drawn.panes.len() <= 1 {
            let n = Focus::ORDER.len() as isize;
            let at = Focus::ORDER
                .iter()
                .position(|f| *f == self.focus)
                .unwrap_or(0) as isize;
            self.focus = Focus::ORDER[(at + by).rem_euclid(n) as usize];
            self.zoom = true;
            self.auto_zoom = true;
            self.info_until(
                format!(
                    "{}: zoomed (the terminal shows one pane at this size); Tab the next, z or \
                     Esc back",
                    self.focus.label()
                ),
                StaleWhen::Resized,
            );
            return;
        }
        self.focus = self.drawn.shift(self.focus, by);
    }

    /// `1`–`6`: focuses a pane; one this size does not show is zoomed to the whole screen.
    fn focus_pane(&mut self, n: usize) {
        let Some(&pane) = Focus::ORDER.get(n) else {
            return;
        };
        self.focus = pane;
        if !self.zoom && !self.drawn.panes.contains(&pane) {
            self.zoom = true;
            self.info(format!(
                "{}: zoomed (the terminal is too small to show it beside the others); z or Esc \
                 goes back",
                pane.label()
            ));
        }
    }

    /// Scrolls `pane` by `by` lines (the timeline steps instead), never past its last line.
    /// `+` / `-`: the batch lanes' time zoom, about the window's middle.
    fn zoom_lanes(&mut self, by: i8) {
        if self.tab().batches.is_empty() {
            self.info("+ and - zoom the batch lanes' time: this run has no batches".into());
            return;
        }
        if by > 0 && self.lanes_zoom < 64 {
            self.lanes_zoom *= 2;
            self.lanes_pan = self.lanes_pan * 2 + 2;
        } else if by < 0 && self.lanes_zoom > 1 {
            self.lanes_zoom /= 2;
            self.lanes_pan = self.lanes_pan.saturating_sub(2) / 2;
        }
        self.lanes_pan = self.lanes_pan.min(4 * (self.lanes_zoom - 1));
        self.info(if self.lanes_zoom == 1 {
            "batch lanes: the whole run".to_owned()
        } else {
            format!(
                "batch lanes: ×{} (Tab to the lanes, then J/K pan; - zooms out)",
                self.lanes_zoom
            )
        });
    }

    fn scroll_pane(&mut self, pane: Focus, by: isize) {
        if pane == Focus::Lanes && self.lanes_zoom > 1 {
            let max = 4 * (self.lanes_zoom - 1);
            self.lanes_pan = (self.lanes_pan as isize + by).clamp(0, max as isize) as u32;
            return;
        }
        match pane.scroll_slot() {
            None => self.step(by),
            Some(slot) => {
                let max = self.drawn.max_scroll[slot] as isize;
                let now = self.scroll[slot] as isize;
                self.scroll[slot] = (now + by).clamp(0, max.max(0)) as u16;
            }
        }
    }

    /// Takes in what the last layout drew: focus and scrolling stay within it, and the effect
    /// ledger brings the selected call's commits into view.
    pub fn apply_drawn(&mut self, drawn: Drawn) {
        for slot in 0..4 {
            self.scroll[slot] = self.scroll[slot].min(drawn.max_scroll[slot]);
        }
        self.help_scroll = self.help_scroll.min(drawn.help_max);
        if !drawn.panes.contains(&self.focus) {
            self.focus = Focus::Timeline;
        }
        if self.follow_effects {
            if let Some(line) = drawn.effects_line {
                self.scroll[2] = line.min(drawn.max_scroll[2]);
            }
            self.follow_effects = false;
        }
        if self.follow_match {
            // A match a line or two below the top reads in its context.
            let line = drawn.match_line.unwrap_or(0).saturating_sub(1);
            self.scroll[0] = line.min(drawn.max_scroll[0]);
            self.follow_match = false;
        }
        if self.follow_verdict {
            if let Some(line) = drawn.verdict_line {
                self.scroll[3] = line.min(drawn.max_scroll[3]);
            }
            self.follow_verdict = false;
        }
        self.drawn = drawn;
    }

    pub(super) fn switch_run(&mut self, by: isize) {
        let n = self.doc.runs.len() as isize;
        if n <= 1 {
            self.info("this file holds one run".into());
            return;
        }
        let keep = self.selected().map(|c| c.id);
        let to = (self.run as isize + by).rem_euclid(n) as usize;
        // A campaign's run is read when it is first shown.
        if let Err(e) = self.doc.load_run(to) {
            self.info(format!("run {} of {} cannot be shown: {e}", to + 1, n));
            return;
        }
        self.run = to;
        self.rerun_from = None;
        self.stop_following();
        self.restore_cursor(keep);
        self.info(format!(
            "run {} of {}: {}",
            self.run + 1,
            n,
            self.tab().name()
        ));
    }

    /// Applies `filter` (none: shows every call). `logged`: what it says goes to the message
    /// log too (the filter given with Enter); while it is typed, only the status line says
    /// it, so the log keeps one line per filter, not one per key.
    pub(super) fn apply_filter(&mut self, filter: Option<String>, logged: bool) {
        let note = match filter.as_deref().map(super::filter::Filter::parse) {
            Some(Err(why)) => {
                if logged {
                    self.error(why);
                } else {
                    self.status_only(why, true);
                }
                None
            }
            Some(Ok(f)) => Some(f.note()),
            None => None,
        };
        self.filter = filter;
        let visible = self.visible();
        // The filter applied replaces whatever the half-typed one said (an error included).
        if let Some(note) = note {
            let shown = format!(
                "filter applied: {} of {} calls shown",
                visible.len(),
                self.timeline().report().calls.len()
            );
            let said = match note {
                Some(n) => format!("{n} · {shown}"),
                None => shown,
            };
            if logged {
                self.info(said);
            } else {
                self.status_only(said, false);
            }
        }
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
                let rounds = |run: &Run| run.ask.as_ref().map(|a| a.rounds.len());
                let rounds_before = rounds(self.tab());
                self.doc = *doc;
                // The file read again holds its own runs: a re-run's is gone.
                self.rerun_from = None;
                self.run = self.run.min(self.doc.runs.len().saturating_sub(1));
                if self.doc.load_run(self.run).is_err() {
                    self.run = 0;
                }
                self.restore_cursor(keep);
                // An unfinished record with more rounds than before: its `ask` is running.
                let now = self.tab().ask.as_ref();
                self.ask_growing = now.is_some_and(|a| a.end == AskEnd::Unfinished)
                    && (self.ask_growing || rounds(self.tab()) > rounds_before);
                let after = self.timeline().len();
                if self.follow {
                    self.follow_tail();
                    if after > before {
                        self.info(format!(
                            "following: {}",
                            crate::printable::count(after - before, "new call", "new calls")
                        ));
                    }
                } else if following && after > before {
                    self.cursor = self.visible().last().copied();
                    self.info(format!(
                        "reloaded from disk: {}",
                        crate::printable::count(after - before, "new call", "new calls")
                    ));
                } else {
                    self.info("reloaded from disk".into());
                }
            }
            // Gone (deleted, or mid-replace by an editor): wait for it to come back.
            Err(e) if e.is_missing() => self.error(
                "the file was removed from disk; still showing the last version \
                 (it reloads when the file is back)"
                    .into(),
            ),
            Err(e) => self.error(format!(
                "file on disk is invalid, still showing the last good version: {e}"
            )),
        }
    }
}

/// The run that tells a document's story and the check it fails: the first run failing on a
/// duplicate effect, else on a retry before the advertised wait (the bugs this tool is about),
/// else on anything; the first run when none fails.
pub fn story_run(runs: &[Run]) -> (usize, Option<String>) {
    let failing = |r: &Run, name: &str| {
        r.checks
            .iter()
            .find(|c| !c.passed && c.name.starts_with(name))
            .map(|c| c.name.clone())
    };
    ["No duplicate side effects", "Retry-after respected", ""]
        .iter()
        .find_map(|name| {
            runs.iter()
                .enumerate()
                .find_map(|(i, r)| failing(r, name).map(|check| (i, Some(check))))
        })
        .unwrap_or((0, None))
}
