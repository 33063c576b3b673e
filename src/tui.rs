//! The terminal UI: open an incident and step through it on the virtual clock.
//!
//! Elm-style: [`app::App`] is plain state changed by [`app::App::update`] from one
//! [`action::Action`] enum; [`keymap`] maps keys to actions (and feeds the help overlay);
//! [`view`] draws `&App`; [`runtime`] is the thin loop that owns the terminal, input thread
//! and file watcher. [`runner`] edits the scenario, reruns, compares and writes files.

pub mod action;
pub mod app;
pub mod approval;
pub mod blame;
pub mod confirm;
pub mod copy;
pub mod event;
pub mod filter;
pub mod find;
pub mod focus;
pub mod follow;
pub mod keymap;
pub mod named;
pub mod prompt;
pub mod reproduce;
pub mod runner;
pub mod runs;
pub mod runtime;
pub mod summary;
pub mod theme;
pub mod view;
pub mod whatif;
pub mod wire;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::mpsc::channel;

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};

use crate::document::Document;
use crate::executor::scenario::ApproverChoice;
use crate::exit::{self, PROGRAM};
use crate::printable;

/// Opens `path` (or the bundled incident) in the explorer. Errors in the file are printed
/// before the terminal is touched; returns the exit code.
pub fn explore(path: Option<PathBuf>, err: &mut dyn std::io::Write) -> i32 {
    let doc = match &path {
        Some(p) => Document::open(p),
        None => Document::bundled(),
    };
    let doc = match doc {
        Ok(d) => d,
        Err(e) => {
            let said = crate::fsread::in_our_words(&e.to_string()).into_owned();
            let _ = writeln!(err, "{PROGRAM}: {}", printable::line(&said));
            return exit::USAGE;
        }
    };
    if !std::io::stdout().is_terminal() {
        let _ = writeln!(
            err,
            "{PROGRAM}: the explorer needs a terminal; for headless use try `inspect`, `check` or `run`"
        );
        return exit::USAGE;
    }
    let mut app = app::App::new(doc);
    let (tx, rx) = channel();
    let mut watcher = path
        .as_deref()
        .and_then(|p| runtime::spawn_watcher(p, tx.clone()));
    runtime::spawn_signals(tx.clone());
    runtime::spawn_input(tx.clone());
    runtime::spawn_ticks(tx.clone());
    let mut terminal = ratatui::init();
    let _ = crossterm::execute!(std::io::stdout(), EnableMouseCapture);
    // ratatui's hook restores raw mode and the screen on a panic; mouse capture is ours to undo.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = crossterm::execute!(std::io::stdout(), DisableMouseCapture);
        previous(info);
    }));
    let mut hooks = Terminal {
        tx: tx.clone(),
        watcher: &mut watcher,
    };
    // An interactive approver asks its questions here, one modal at a time over the explorer,
    // before browsing (opening the file did not ask: there was no terminal yet).
    let interactive = app
        .doc
        .orbit
        .as_ref()
        .is_some_and(|s| s.approver == ApproverChoice::Interactive);
    if interactive {
        let size = terminal.size().unwrap_or_default();
        app.update(action::Action::Resize(size.width, size.height));
        let answered = runtime::reload_asking(&mut terminal, &rx, &app, &mut hooks);
        app.update(answered);
    }
    let result = runtime::run(&mut terminal, &mut app, &rx, &tx, &mut hooks);
    let _ = crossterm::execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::restore();
    match result {
        Ok(runtime::Ending::Quit) => exit::OK,
        Ok(runtime::Ending::Signal(n)) => 128 + n,
        Err(e) => {
            let _ = writeln!(err, "{PROGRAM}: terminal error: {e}");
            exit::USAGE
        }
    }
}

/// What the loop needs from the real terminal: the file watcher follows "save as", and a
/// suspend gives the terminal back to the shell until the process is continued.
struct Terminal<'a> {
    tx: std::sync::mpsc::Sender<runtime::Event>,
    watcher: &'a mut Option<notify::RecommendedWatcher>,
}

impl runtime::Hooks for Terminal<'_> {
    fn copy(&mut self, text: &str) {
        use std::io::Write;
        let mut out = std::io::stdout();
        let _ = out.write_all(runtime::osc52(text).as_bytes());
        let _ = out.flush();
    }

    fn retarget(&mut self, path: &std::path::Path) {
        *self.watcher = runtime::spawn_watcher(path, self.tx.clone());
    }

    fn suspend(&mut self) {
        let _ = crossterm::execute!(
            std::io::stdout(),
            DisableMouseCapture,
            crossterm::cursor::Show
        );
        ratatui::restore();
        #[cfg(unix)]
        {
            // Stop as the shell expects; execution continues here on SIGCONT (`fg`).
            let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGTSTP);
        }
        let _ = crossterm::terminal::enable_raw_mode();
        let _ = crossterm::execute!(
            std::io::stdout(),
            crossterm::terminal::EnterAlternateScreen,
            crossterm::cursor::Hide,
            EnableMouseCapture
        );
    }
}
