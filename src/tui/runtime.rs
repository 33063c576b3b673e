//! The thin terminal loop: crossterm input, a debounced file watcher and resizes feed one
//! event channel; events become actions at the edge; commands come back from `update` and are
//! carried out here. Generic over the backend, so tests can drive it with `TestBackend`.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Duration;

use crossterm::event::{self, Event as TermEvent, KeyEventKind, MouseEventKind};
use ratatui::Terminal;
use ratatui::backend::Backend;

use super::action::{Action, Command, WriteKind};
use super::app::App;
use super::keymap;
use super::runner;
use super::view;
use crate::document::{Document, Error};

/// Something that happened outside the app.
#[derive(Debug)]
pub enum Event {
    /// A terminal event (key, mouse, resize).
    Terminal(TermEvent),
    /// The open file changed on disk (already debounced).
    FileChanged,
    /// A termination signal arrived (SIGTERM, SIGHUP, SIGINT).
    Terminate,
}

/// Turns an outside event into actions.
pub fn to_actions(event: Event, app: &App) -> Vec<Action> {
    match event {
        Event::FileChanged => vec![Action::FileChanged],
        Event::Terminate => vec![Action::Quit],
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

/// Carries out one command, returning the action that answers it. Runs take microseconds,
/// so reruns happen right here; every write goes through [`crate::atomic::write`].
pub fn perform(command: Command, app: &App) -> Action {
    match command {
        Command::Reload => match &app.doc.path {
            Some(p) => Action::Reloaded(Document::open(p).map(Box::new)),
            None => Action::Reloaded(Document::bundled().map(Box::new)),
        },
        Command::Rerun => Action::Reran(runner::rerun(app)),
        Command::CheckDeterminism => Action::DeterminismChecked(runner::determinism(app)),
        Command::Write { kind, path, force } => {
            // The open file, and the scenario's own save target, are ours to replace.
            let ours = app.doc.path.as_ref() == Some(&path)
                || (kind == WriteKind::Scenario && app.save_path.as_ref() == Some(&path));
            if !force && !ours && path.exists() {
                return Action::ConfirmOverwrite(kind, path);
            }
            let result = runner::content(app, kind).and_then(|text| {
                crate::atomic::write(&path, text.as_bytes())
                    .map_err(|e| Error::io(&path, e).to_string())
            });
            Action::Written(kind, path, result)
        }
    }
}

/// Applies an action and every command it causes.
pub fn dispatch(app: &mut App, action: Action) {
    let mut queue = vec![action];
    while let Some(a) = queue.pop() {
        for command in app.update(a) {
            queue.push(perform(command, app));
        }
    }
}

/// Draws and handles events until the app quits or the event source closes. `retarget` is
/// called with the new path whenever the open document's file changes (save as).
pub fn run<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    events: &Receiver<Event>,
    mut retarget: impl FnMut(&Path),
) -> Result<(), B::Error> {
    let size = terminal.size()?;
    app.update(Action::Resize(size.width, size.height));
    let mut watched = app.doc.path.clone();
    loop {
        terminal.draw(|frame| frame.render_widget(&*app, frame.area()))?;
        let Ok(event) = events.recv() else {
            return Ok(());
        };
        for action in to_actions(event, app) {
            dispatch(app, action);
        }
        if app.doc.path != watched {
            watched = app.doc.path.clone();
            if let Some(p) = &watched {
                retarget(p);
            }
        }
        // Test hook (debug builds only): the terminal-restore script checks a panic mid-session.
        #[cfg(debug_assertions)]
        if std::env::var_os("TOOLSTORM_TUI_TEST_PANIC").is_some() {
            panic!("test panic requested by TOOLSTORM_TUI_TEST_PANIC");
        }
        if app.quit {
            return Ok(());
        }
    }
}

/// Turns SIGTERM, SIGHUP and SIGINT into [`Event::Terminate`], so the loop ends normally and
/// the terminal is restored.
pub fn spawn_signals(tx: Sender<Event>) {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT]) {
            std::thread::spawn(move || {
                for _ in signals.forever() {
                    if tx.send(Event::Terminate).is_err() {
                        return;
                    }
                }
            });
        }
    }
    #[cfg(not(unix))]
    let _ = tx;
}

/// Reads terminal input on a thread and sends it to the channel.
pub fn spawn_input(tx: Sender<Event>) {
    std::thread::spawn(move || {
        loop {
            match event::read() {
                Ok(e) => {
                    if tx.send(Event::Terminal(e)).is_err() {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    });
}

/// Watches `path` and sends one [`Event::FileChanged`] after each burst of changes (150 ms of
/// quiet). Watches the folder, so a file replaced by rename (atomic saves) or deleted and
/// recreated is still seen. Returns the watcher, which must be kept alive.
pub fn spawn_watcher(path: &Path, tx: Sender<Event>) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let file: PathBuf = path.file_name()?.into();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (raw_tx, raw_rx) = channel::<()>();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        // Reads (ours included: a reload opens the file) are access events; only changes count.
        if let Ok(ev) = res
            && !matches!(ev.kind, notify::EventKind::Access(_))
            && ev
                .paths
                .iter()
                .any(|p| p.file_name() == Some(file.as_os_str()))
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
            // Debounce: wait for 150 ms without further changes.
            loop {
                match raw_rx.recv_timeout(Duration::from_millis(150)) {
                    Ok(()) => continue,
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
