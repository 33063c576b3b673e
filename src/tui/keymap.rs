//! Keys → actions: a pure table, testable without a terminal; the help overlay is generated
//! from the same table.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Action;
use super::app::Mode;

/// One row of the key table: keys, what they do, and the action.
pub struct Binding {
    /// Keys as shown in help.
    pub keys: &'static str,
    /// What it does.
    pub help: &'static str,
    /// Key codes that trigger it.
    pub codes: &'static [KeyCode],
    /// The action.
    pub action: fn() -> Action,
}

/// Browsing keys, in help order.
pub const BROWSE: &[Binding] = &[
    Binding {
        keys: "j / ↓ / n",
        help: "next step",
        codes: &[KeyCode::Char('j'), KeyCode::Down, KeyCode::Char('n')],
        action: || Action::Next,
    },
    Binding {
        keys: "k / ↑ / p",
        help: "previous step",
        codes: &[KeyCode::Char('k'), KeyCode::Up, KeyCode::Char('p')],
        action: || Action::Prev,
    },
    Binding {
        keys: "g / Home",
        help: "first step",
        codes: &[KeyCode::Char('g'), KeyCode::Home],
        action: || Action::First,
    },
    Binding {
        keys: "G / End",
        help: "last step",
        codes: &[KeyCode::Char('G'), KeyCode::End],
        action: || Action::Last,
    },
    Binding {
        keys: "PgDn / PgUp",
        help: "ten steps",
        codes: &[KeyCode::PageDown],
        action: || Action::PageDown,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::PageUp],
        action: || Action::PageUp,
    },
    Binding {
        keys: "f / F",
        help: "next / previous fault",
        codes: &[KeyCode::Char('f')],
        action: || Action::NextFault,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('F')],
        action: || Action::PrevFault,
    },
    Binding {
        keys: "e / E",
        help: "next / previous effect",
        codes: &[KeyCode::Char('e')],
        action: || Action::NextEffect,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('E')],
        action: || Action::PrevEffect,
    },
    Binding {
        keys: "x / X",
        help: "next / previous failure",
        codes: &[KeyCode::Char('x')],
        action: || Action::NextFailure,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('X')],
        action: || Action::PrevFailure,
    },
    Binding {
        keys: "l / → / h / ←",
        help: "next / previous run",
        codes: &[KeyCode::Char('l'), KeyCode::Right],
        action: || Action::NextRun,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('h'), KeyCode::Left],
        action: || Action::PrevRun,
    },
    Binding {
        keys: "Tab / S-Tab",
        help: "move focus between panes",
        codes: &[KeyCode::Tab],
        action: || Action::FocusNext,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::BackTab],
        action: || Action::FocusPrev,
    },
    Binding {
        keys: "J / K",
        help: "scroll the focused pane",
        codes: &[KeyCode::Char('J')],
        action: || Action::ScrollDown,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('K')],
        action: || Action::ScrollUp,
    },
    Binding {
        keys: "/",
        help: "filter the timeline by tool or status",
        codes: &[KeyCode::Char('/')],
        action: || Action::StartFilter,
    },
    Binding {
        keys: "r",
        help: "reload the file",
        codes: &[KeyCode::Char('r')],
        action: || Action::Reload,
    },
    Binding {
        keys: "?",
        help: "this help",
        codes: &[KeyCode::Char('?')],
        action: || Action::ToggleHelp,
    },
    Binding {
        keys: "q / Esc",
        help: "quit (Esc closes help or filter first)",
        codes: &[KeyCode::Char('q')],
        action: || Action::Quit,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Esc],
        action: || Action::Back,
    },
];

/// The action for a key in a mode, if any.
pub fn map(key: KeyEvent, mode: &Mode) -> Option<Action> {
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    match mode {
        Mode::Filter(_) => match key.code {
            KeyCode::Enter => Some(Action::FilterApply),
            KeyCode::Esc => Some(Action::FilterCancel),
            KeyCode::Backspace => Some(Action::FilterBackspace),
            KeyCode::Char(c) => Some(Action::FilterChar(c)),
            _ => None,
        },
        Mode::Help => match key.code {
            KeyCode::Char('?') | KeyCode::Esc | KeyCode::Char('q') => Some(Action::ToggleHelp),
            _ => None,
        },
        Mode::Browse => BROWSE
            .iter()
            .find(|b| b.codes.contains(&key.code))
            .map(|b| (b.action)()),
    }
}

/// Help rows: keys and description (rows continuing the previous entry are folded into it).
pub fn help_rows() -> Vec<(&'static str, &'static str)> {
    BROWSE
        .iter()
        .filter(|b| !b.keys.is_empty())
        .map(|b| (b.keys, b.help))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn browse_keys() {
        assert!(matches!(
            map(key(KeyCode::Char('j')), &Mode::Browse),
            Some(Action::Next)
        ));
        assert!(matches!(
            map(key(KeyCode::Char('G')), &Mode::Browse),
            Some(Action::Last)
        ));
        assert!(matches!(
            map(key(KeyCode::Char('f')), &Mode::Browse),
            Some(Action::NextFault)
        ));
        assert!(matches!(
            map(key(KeyCode::Esc), &Mode::Browse),
            Some(Action::Back)
        ));
        assert!(map(key(KeyCode::Char('z')), &Mode::Browse).is_none());
    }

    #[test]
    fn filter_mode_takes_text() {
        let m = Mode::Filter(String::new());
        assert!(matches!(
            map(key(KeyCode::Char('j')), &m),
            Some(Action::FilterChar('j'))
        ));
        assert!(matches!(
            map(key(KeyCode::Enter), &m),
            Some(Action::FilterApply)
        ));
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert!(matches!(map(ctrl_c, &m), Some(Action::Quit)));
    }

    #[test]
    fn every_help_row_has_a_key() {
        assert!(help_rows().len() >= 15);
        assert!(help_rows().iter().any(|(k, _)| k.contains('?')));
    }
}
