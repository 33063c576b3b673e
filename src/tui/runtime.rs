//! The thin terminal loop: crossterm input, a debounced file watcher, signals and background
//! loads feed one event channel; events become actions at the edge (mouse cells are resolved
//! against the drawn layout here); commands come back from `update` and are carried out here.
//! Reading a file never blocks the loop: reloads run on a worker thread and arrive as events,
//! and only the newest one is shown. Generic over the backend, so tests can drive it with
//! `TestBackend`.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Duration;

use crossterm::event::{self, Event as TermEvent, KeyEventKind, MouseEventKind};
use ratatui::Terminal;
use ratatui::backend::Backend;

use super::action::{Action, Command, WriteKind};
use super::app::App;
pub use super::event::Event;
use super::keymap;
use super::runner;
use super::view;
use crate::document::{Document, Error};

/// How the loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The user quit.
    Quit,
    /// A signal ended it (its number).
    Signal(i32),
}

/// What the loop needs from the program around it.
pub trait Hooks {
    /// The open document's file changed (save as): watch the new one.
    fn retarget(&mut self, path: &Path);
    /// Give the terminal back, stop the process until it is continued, then take the terminal
    /// again (the loop redraws everything afterwards).
    fn suspend(&mut self);
    /// Put `text` on the terminal's clipboard.
    fn copy(&mut self, text: &str);
    /// The `n`-th approval question of a run is on screen (tests answer it from here).
    fn asking(&mut self, _n: usize) {}
}

/// Whether opening the app's file again may ask a person (an executor scenario, whose
/// approver may be interactive): such a reload runs here, in the foreground, with the modal.
fn may_ask(app: &App) -> bool {
    app.doc.orbit.is_some()
}

/// Opens the app's file again with an approver that asks on `terminal` (the modal drawn over
/// the app), answering calls asked before as they were answered.
pub fn reload_asking<B: Backend>(
    terminal: &mut Terminal<B>,
    events: &Receiver<Event>,
    app: &App,
    hooks: &mut dyn Hooks,
) -> Action {
    let theme = super::theme::Theme::from_env();
    let prompt = super::approval::TerminalPrompt::new(terminal, events, theme)
        .behind(app)
        .on_shown(|n| hooks.asking(n));
    let mut memory = super::approval::Remembering::new(prompt, app.approvals.clone());
    let result = match app.doc.path.as_deref() {
        Some(p) => Document::open_with(p, &mut memory).map(Box::new),
        None => Document::bundled().map(Box::new),
    };
    Action::ReloadedAsking {
        result,
        answers: memory.answers,
        asked: memory.asked,
        reused: memory.reused,
    }
}

/// Turns an outside event into actions.
pub fn to_actions(event: Event, app: &App) -> Vec<Action> {
    match event {
        Event::FileChanged => vec![Action::FileChanged],
        Event::Terminate(_) => vec![Action::Quit],
        Event::Suspend => vec![Action::Suspend],
        Event::Loaded(_, result) => vec![Action::Reloaded(result)],
        Event::Tick => vec![Action::Tick],
        Event::AgentRan(result, label) => vec![Action::AgentRan(result, label)],
        Event::Terminal(TermEvent::Key(k)) if k.kind != KeyEventKind::Release => {
            keymap::map(k, &app.mode).into_iter().collect()
        }
        Event::Terminal(TermEvent::Mouse(m)) => {
            let pane = view::pane_at(app, m.column, m.row);
            match m.kind {
                MouseEventKind::Down(_) => vec![Action::Click {
                    pane,
                    call: view::timeline_row_at(app, m.column, m.row),
                }],
                MouseEventKind::ScrollDown => vec![Action::Wheel { down: true, pane }],
                MouseEventKind::ScrollUp => vec![Action::Wheel { down: false, pane }],
                _ => Vec::new(),
            }
        }
        Event::Terminal(TermEvent::Resize(w, h)) => vec![Action::Resize(w, h)],
        Event::Terminal(_) => Vec::new(),
    }
}

/// Reads the open document again (the bundled incident when there is no file).
pub fn load(path: Option<&Path>) -> Result<Box<Document>, Error> {
    match path {
        Some(p) => Document::open(p),
        None => Document::bundled(),
    }
    .map(Box::new)
}

/// Carries out one command right here, returning the action that answers it (none for a
/// suspend, which only the terminal loop can do). Runs take microseconds; every write goes
/// through [`crate::atomic::write`].
pub fn perform(command: Command, app: &App) -> Option<Action> {
    Some(match command {
        Command::Reload => Action::Reloaded(load(app.doc.path.as_deref())),
        Command::Suspend | Command::Copy(_) => return None,
        Command::RerunAgent(rerun) => super::whatif::rerun(*rerun),
        Command::Rerun => Action::Reran(runner::rerun(app)),
        Command::CheckDeterminism => Action::DeterminismChecked(runner::determinism(app)),
        Command::Write { kind, path, force } => {
            // The open file, and the scenario's own save target, are ours to replace.
            let ours = app.doc.path.as_ref() == Some(&path)
                || (kind == WriteKind::Scenario && app.save_path.as_ref() == Some(&path));
            if !force && !ours && path.exists() {
                return Some(Action::ConfirmOverwrite(kind, path));
            }
            if kind == WriteKind::Cassette
                && let Some(why) = crate::mcp::journal::refuses_new_cassette(&path)
            {
                return Some(Action::Written(kind, path, Err(why)));
            }
            let result = runner::content(app, kind).and_then(|text| {
                crate::atomic::write(&path, text.as_bytes())
                    .map_err(|e| Error::io(&path, e).to_string())
            });
            Action::Written(kind, path, result)
        }
    })
}

/// Applies an action and every command it causes, carrying each out at once (tests and
/// scripts; the terminal loop reloads in the background instead), then lets the app see
/// what the screen will show.
pub fn dispatch(app: &mut App, action: Action) {
    dispatch_with(app, action, &mut |command, app| perform(command, app));
    app.apply_drawn(view::drawn(app, app.size));
}

/// Applies an action; `run` carries out each command and may answer it at once.
fn dispatch_with(
    app: &mut App,
    action: Action,
    run: &mut dyn FnMut(Command, &App) -> Option<Action>,
) {
    let mut queue = vec![action];
    while let Some(a) = queue.pop() {
        for command in app.update(a) {
            if let Some(next) = run(command, app) {
                queue.push(next);
            }
        }
    }
}

/// Draws and handles events until the app quits, a signal ends it or the event source
/// closes. `tx` feeds the same channel as `events` (background reloads answer through it).
pub fn run<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    events: &Receiver<Event>,
    tx: &Sender<Event>,
    hooks: &mut dyn Hooks,
) -> Result<Ending, B::Error> {
    let size = terminal.size()?;
    app.update(Action::Resize(size.width, size.height));
    app.apply_drawn(view::drawn(app, app.size));
    let mut watched = app.doc.path.clone();
    // The number of the newest reload asked for (0: none yet); other answers are dropped.
    let mut latest = 0u64;
    loop {
        terminal.draw(|frame| frame.render_widget(&*app, frame.area()))?;
        let Ok(event) = events.recv() else {
            return Ok(Ending::Quit);
        };
        let signal = match &event {
            Event::Terminate(n) => Some(*n),
            Event::Loaded(n, _) if *n == 0 || *n != latest => continue,
            _ => None,
        };
        let mut suspend = false;
        let mut copy = None;
        for action in to_actions(event, app) {
            dispatch_with(app, action, &mut |command, app| match command {
                Command::Reload if may_ask(app) => {
                    Some(reload_asking(terminal, events, app, hooks))
                }
                Command::Reload => {
                    latest += 1;
                    let (n, path, tx) = (latest, app.doc.path.clone(), tx.clone());
                    std::thread::spawn(move || {
                        let _ = tx.send(Event::Loaded(n, load(path.as_deref())));
                    });
                    None
                }
                Command::Suspend => {
                    suspend = true;
                    None
                }
                Command::Copy(text) => {
                    copy = Some(text);
                    None
                }
                // The agent takes its time: it runs beside the screen, which keeps answering.
                Command::RerunAgent(rerun) => {
                    let tx = tx.clone();
                    std::thread::spawn(move || {
                        if let Action::AgentRan(result, label) = super::whatif::rerun(*rerun) {
                            let _ = tx.send(Event::AgentRan(result, label));
                        }
                    });
                    None
                }
                other => perform(other, app),
            });
        }
        app.apply_drawn(view::drawn(app, app.size));
        if let Some(text) = copy {
            hooks.copy(&text);
        }
        if suspend {
            hooks.suspend();
            terminal.clear()?;
        }
        if let Some(n) = signal {
            return Ok(Ending::Signal(n));
        }
        if app.doc.path != watched {
            watched = app.doc.path.clone();
            if let Some(p) = &watched {
                hooks.retarget(p);
            }
        }
        // Test hook (debug builds only): the terminal-restore script checks a panic mid-session.
        #[cfg(debug_assertions)]
        if std::env::var_os("TOOLSTORM_TUI_TEST_PANIC").is_some() {
            panic!("test panic requested by TOOLSTORM_TUI_TEST_PANIC");
        }
        if app.quit {
            return Ok(Ending::Quit);
        }
    }
}

/// Turns the signals that end a program (SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1) into
/// [`Event::Terminate`] and SIGTSTP into [`Event::Suspend`], so the loop restores the terminal
/// before exiting or stopping.
pub fn spawn_signals(tx: Sender<Event>) {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP, SIGUSR1};
        let wanted = [SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGTSTP];
        if let Ok(mut signals) = signal_hook::iterator::Signals::new(wanted) {
            std::thread::spawn(move || {
                for n in signals.forever() {
                    let event = if n == SIGTSTP {
                        Event::Suspend
                    } else {
                        Event::Terminate(n)
                    };
                    if tx.send(event).is_err() {
                        return;
                    }
                }
            });
        }
    }
    #[cfg(not(unix))]
    let _ = tx;
}

/// Sends [`Event::Tick`] every second (status messages expire on it).
pub fn spawn_ticks(tx: Sender<Event>) {
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_secs(1));
            if tx.send(Event::Tick).is_err() {
                return;
            }
        }
    });
}

/// The OSC 52 sequence that puts `text` on the terminal's clipboard.
pub fn osc52(text: &str) -> String {
    use base64::Engine;
    format!(
        "\u{1b}]52;c;{}\u{7}",
        base64::engine::general_purpose::STANDARD.encode(text)
    )
}

/// Reads terminal input on a thread and sends it to the channel.
pub fn spawn_input(tx: Sender<Event>) {
    use std::io::IsTerminal;
    // SIGHUP, as a vanished terminal would send.
    const HANGUP: i32 = 1;
    std::thread::spawn(move || {
        loop {
            // Poll with a timeout rather than block in `read`: when the terminal goes away
            // without a SIGHUP reaching us, crossterm's reader spins on the dead descriptor;
            // checking now and then lets the explorer end instead of burning a core.
            let event = match event::poll(Duration::from_millis(500)) {
                Ok(true) => event::read(),
                Ok(false) if std::io::stdout().is_terminal() => continue,
                Ok(false) | Err(_) => {
                    let _ = tx.send(Event::Terminate(HANGUP));
                    return;
                }
            };
            match event {
                Ok(e) => {
                    if tx.send(Event::Terminal(e)).is_err() {
                        return;
                    }
                }
                Err(_) => {
                    let _ = tx.send(Event::Terminate(HANGUP));
                    return;
                }
            }
        }
    });
}

/// Watches `path` — and, for an MCP recording, its write-ahead journal, which is ahead of the
/// cassette while a session runs and after a proxy was killed — and sends one
/// [`Event::FileChanged`] after each burst of changes (150 ms of quiet, or a second into a
/// burst that goes on: a busy session still shows its calls). Watches the folder, so a file
/// replaced by rename (atomic saves) or deleted and recreated is still seen. Returns the
/// watcher, which must be kept alive.
pub fn spawn_watcher(path: &Path, tx: Sender<Event>) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let file: PathBuf = path.file_name()?.into();
    let journal: Option<PathBuf> = crate::mcp::session::journal_path(path)
        .file_name()
        .map(PathBuf::from);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (raw_tx, raw_rx) = channel::<()>();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        // Reads (ours included: a reload opens the file) are access events; only changes count.
        if let Ok(ev) = res
            && !matches!(ev.kind, notify::EventKind::Access(_))
            && ev.paths.iter().any(|p| {
                p.file_name() == Some(file.as_os_str())
                    || (journal.is_some()
                        && p.file_name() == journal.as_deref().map(|j| j.as_os_str()))
            })
        {
            let _ = raw_tx.send(());
        }
    })
    .ok()?;
    watcher
        .watch(&dir, notify::RecursiveMode::NonRecursive)
        .ok()?;
    std::thread::spawn(move || {
        while raw_rx.recv().is_ok() {
            // Debounce: wait for 150 ms without further changes (at most a second).
            let burst = std::time::Instant::now();
            loop {
                match raw_rx.recv_timeout(Duration::from_millis(150)) {
                    Ok(()) if burst.elapsed() < Duration::from_secs(1) => continue,
                    Ok(()) => break,
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            if tx.send(Event::FileChanged).is_err() {
                return;
            }
        }
    });
    Some(watcher)
}
