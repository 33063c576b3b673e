//! A line of text being typed (a filter, a search, a call id, a field value, a path): the
//! `tui-input` widget's state, with the editing keys people expect — ←/→, Home/End, Ctrl-A/E,
//! Ctrl-U/W/K, word moves — and equality by what is typed and where the cursor is, so the
//! app's modes stay comparable.

use crossterm::event::{Event, KeyEvent};
use tui_input::backend::crossterm::to_input_request;
use tui_input::{Input, InputRequest};

/// The text being typed and its cursor.
#[derive(Clone, Debug, Default)]
pub struct TextField(Input);

impl PartialEq for TextField {
    fn eq(&self, other: &Self) -> bool {
        self.0.value() == other.0.value() && self.0.cursor() == other.0.cursor()
    }
}

impl Eq for TextField {}

impl TextField {
    /// A field holding `text`, the cursor at its end.
    pub fn new(text: impl Into<String>) -> TextField {
        TextField(Input::new(text.into()))
    }

    /// What is typed.
    pub fn value(&self) -> &str {
        self.0.value()
    }

    /// The cursor, in characters from the start.
    pub fn cursor(&self) -> usize {
        self.0.visual_cursor()
    }

    /// Where to start showing the text so the cursor fits in `width` columns.
    pub fn scroll(&self, width: usize) -> usize {
        self.0.visual_scroll(width)
    }

    /// Applies one editing request.
    pub fn apply(&mut self, request: InputRequest) {
        self.0.handle(request);
    }
}

/// The editing request a key makes in a text field, if any.
pub fn request(key: KeyEvent) -> Option<InputRequest> {
    to_input_request(&Event::Key(key))
}
