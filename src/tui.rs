//! The terminal UI: open an incident and step through it on the virtual clock.
//!
//! Elm-style: [`app::App`] is plain state changed by [`app::App::update`] from one
//! [`action::Action`] enum; [`keymap`] maps keys to actions (and feeds the help overlay);
//! [`view`] draws `&App`; [`runtime`] is the thin loop that owns the terminal, input thread
//! and file watcher. [`runner`] edits the scenario, reruns, compares and writes files.

pub mod action;
pub mod app;
pub mod approval;
pub mod document;
pub mod keymap;
pub mod runner;
pub mod runtime;
pub mod theme;
pub mod view;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::mpsc::channel;

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};

/// Opens `path` (or the bundled incident) in the explorer. Errors in the file are printed
/// before the terminal is touched; returns the exit code.
pub fn explore(path: Option<PathBuf>, err: &mut dyn std::io::Write) -> i32 {
    let doc = match &path {
        Some(p) => document::open(p),
        None => document::bundled(),
    };
    let doc = match doc {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(err, "{}: {e}", crate::cli::PROGRAM);
            return crate::cli::EXIT_USAGE;
        }
    };
    if !std::io::stdout().is_terminal() {
        let _ = writeln!(
            err,
            "{}: the explorer needs a terminal; for headless use try `inspect`, `check` or `run`",
            crate::cli::PROGRAM
        );
        return crate::cli::EXIT_USAGE;
    }
    let mut app = app::App::new(doc);
    let (tx, rx) = channel();
    let mut watcher = path
        .as_deref()
        .and_then(|p| runtime::spawn_watcher(p, tx.clone()));
    runtime::spawn_signals(tx.clone());
    runtime::spawn_input(tx.clone());
    let mut terminal = ratatui::init();
    let _ = crossterm::execute!(std::io::stdout(), EnableMouseCapture);
    // ratatui's hook restores raw mode and the screen on a panic; mouse capture is ours to undo.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = crossterm::execute!(std::io::stdout(), DisableMouseCapture);
        previous(info);
    }));
    // An interactive approver asks its questions here, one modal at a time, before browsing.
    let interactive = app
        .doc
        .orbit
        .as_ref()
        .filter(|s| s.approver == crate::executor::scenario::ApproverChoice::Interactive)
        .cloned();
    if let (Some(scenario), Some(p)) = (interactive, path.as_deref()) {
        let mut prompt =
            approval::TerminalPrompt::new(&mut terminal, &rx, theme::Theme::from_env());
        match document::open_orbit(p, scenario, &mut prompt) {
            Ok(doc) => app = app::App::new(doc),
            Err(e) => app.status = e,
        }
    }
    // After "save as", the new file is the one to watch.
    let result = runtime::run(&mut terminal, &mut app, &rx, |p| {
        watcher = runtime::spawn_watcher(p, tx.clone());
    });
    let _ = crossterm::execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::restore();
    match result {
        Ok(()) => crate::cli::EXIT_OK,
        Err(e) => {
            let _ = writeln!(err, "{}: terminal error: {e}", crate::cli::PROGRAM);
            crate::cli::EXIT_USAGE
        }
    }
}
