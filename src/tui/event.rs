//! What happens outside the app and reaches the terminal loop as one stream: terminal input,
//! file changes, signals, finished background loads and the clock's ticks.

use crossterm::event::Event as TermEvent;

use crate::document::{Document, Error};

/// Something that happened outside the app.
#[derive(Debug)]
pub enum Event {
    /// A terminal event (key, mouse, resize).
    Terminal(TermEvent),
    /// The open file changed on disk (already debounced).
    FileChanged,
    /// A signal that ends the program arrived (SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1):
    /// restore the terminal and exit with 128 + its number.
    Terminate(i32),
    /// SIGTSTP arrived (or Ctrl-Z was pressed): give the terminal back and stop until SIGCONT.
    Suspend,
    /// A background reload finished (the number says which request it answers).
    Loaded(u64, Result<Box<Document>, Error>),
    /// A second passed.
    Tick,
    /// An agent's re-run finished (the new run, or why not; what it pinned).
    AgentRan(Result<Box<Document>, crate::agent::RerunError>, String),
}
