//! Everything that can happen to the app: one [`Action`] enum in, [`Command`]s out (side
//! effects the runtime carries out and answers with new actions).

use super::document::Document;

/// A change the user or the runtime asks for.
#[derive(Clone, Debug)]
pub enum Action {
    /// Leave the app.
    Quit,
    /// Next / previous step (call).
    Next,
    /// Previous step.
    Prev,
    /// First step.
    First,
    /// Last step.
    Last,
    /// Ten steps forward.
    PageDown,
    /// Ten steps back.
    PageUp,
    /// Next call with a fault.
    NextFault,
    /// Previous call with a fault.
    PrevFault,
    /// Next call that committed an effect.
    NextEffect,
    /// Previous call that committed an effect.
    PrevEffect,
    /// Next failed call.
    NextFailure,
    /// Previous failed call.
    PrevFailure,
    /// Next run of a comparison.
    NextRun,
    /// Previous run.
    PrevRun,
    /// Move focus to the next pane.
    FocusNext,
    /// Move focus to the previous pane.
    FocusPrev,
    /// Scroll the focused pane down.
    ScrollDown,
    /// Scroll the focused pane up.
    ScrollUp,
    /// Start typing a timeline filter.
    StartFilter,
    /// A character typed into the filter.
    FilterChar(char),
    /// Delete the last filter character.
    FilterBackspace,
    /// Keep the filter and go back to browsing.
    FilterApply,
    /// Drop the filter.
    FilterCancel,
    /// Show or hide the key help.
    ToggleHelp,
    /// Close an overlay or the filter; quit from plain browsing.
    Back,
    /// A mouse click at a cell.
    Click {
        /// Column.
        col: u16,
        /// Row.
        row: u16,
    },
    /// Mouse wheel over a cell.
    Wheel {
        /// Down (true) or up.
        down: bool,
        /// Column.
        col: u16,
        /// Row.
        row: u16,
    },
    /// The terminal was resized.
    Resize(u16, u16),
    /// Reload the open file now.
    Reload,
    /// The open file changed on disk.
    FileChanged,
    /// A reload finished.
    Reloaded(Result<Box<Document>, String>),
}

/// A side effect for the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Read the open file again and answer with [`Action::Reloaded`].
    Reload,
}
