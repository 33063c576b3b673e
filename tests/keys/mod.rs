//! Driving the app as a user does: key presses go through the keymap of the current mode
//! (so tests exercise what a key does, not an action picked by hand).
#![allow(dead_code)]

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolstorm::tui::action::Action;
use toolstorm::tui::app::App;
use toolstorm::tui::runtime::{Event, dispatch, to_actions};
use toolstorm::tui::theme::Theme;

/// Draws the app on a `w` x `h` test terminal (colours on), as the runtime does after a resize.
pub fn draw(app: &mut App, w: u16, h: u16) -> Terminal<TestBackend> {
    dispatch(app, Action::Resize(w, h));
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| app.render_with(f.area(), f.buffer_mut(), &Theme::new(false)))
        .expect("draw");
    t
}

/// A plain key.
pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// Control and a letter.
pub fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

/// Presses one key.
pub fn press(app: &mut App, key: KeyEvent) {
    for action in to_actions(Event::Terminal(TermEvent::Key(key)), app) {
        dispatch(app, action);
    }
}

/// Presses each character of `text` as a key (typing into a prompt, or a run of commands).
pub fn type_keys(app: &mut App, text: &str) {
    for c in text.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            '\x1b' => KeyCode::Esc,
            '\t' => KeyCode::Tab,
            c => KeyCode::Char(c),
        };
        let mods = if c.is_ascii_uppercase() {
            KeyModifiers::SHIFT
        } else {
            KeyModifiers::NONE
        };
        press(app, KeyEvent::new(code, mods));
    }
}

/// Empties the prompt (Ctrl-U) and types `text`, then Enter.
pub fn enter_text(app: &mut App, text: &str) {
    press(app, KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
    press(app, ctrl('u'));
    type_keys(app, text);
    press(app, key(KeyCode::Enter));
}

/// `i`: the rule editor opens (the status line says why when it does not).
pub fn open_editor(app: &mut App) {
    press(app, key(KeyCode::Char('i')));
    assert!(
        matches!(app.mode, toolstorm::tui::app::Mode::Edit),
        "{:?} {}",
        app.mode,
        app.status
    );
}
