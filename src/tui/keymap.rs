//! Keys → actions: pure tables, testable without a terminal; the help overlay is generated
//! from the same tables. [`BROWSE`] moves around, [`RUNNER`] edits settings, reruns and writes
//! (while browsing and in the editor), [`EDITOR`] works inside the rule editor.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Action;
use super::app::{Mode, Question};

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

/// Browsing keys, in help order. Each key has one meaning wherever the focus is.
pub const BROWSE: &[Binding] = &[
    Binding {
        keys: "j / ↓",
        help: "next step",
        codes: &[KeyCode::Char('j'), KeyCode::Down],
        action: || Action::Next,
    },
    Binding {
        keys: "k / ↑",
        help: "previous step",
        codes: &[KeyCode::Char('k'), KeyCode::Up],
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
        keys: "A",
        help: "follow new calls (tail -f); any move stops",
        codes: &[KeyCode::Char('A')],
        action: || Action::ToggleFollow,
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
        keys: "d / D",
        help: "next / previous duplicate commit",
        codes: &[KeyCode::Char('d')],
        action: || Action::NextDuplicate,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('D')],
        action: || Action::PrevDuplicate,
    },
    Binding {
        keys: "L",
        help: "the runs as a list (Enter opens, c compares)",
        codes: &[KeyCode::Char('L')],
        action: || Action::ToggleRuns,
    },
    Binding {
        keys: "T",
        help: "summary per tool and rule (Enter filters)",
        codes: &[KeyCode::Char('T')],
        action: || Action::ToggleSummary,
    },
    Binding {
        keys: "M",
        help: "the wire: every MCP message in order",
        codes: &[KeyCode::Char('M')],
        action: || Action::ToggleWire,
    },
    Binding {
        keys: "> / <",
        help: "select a verdict: its reasons and calls",
        codes: &[KeyCode::Char('>')],
        action: || Action::SelectVerdict(1),
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('<')],
        action: || Action::SelectVerdict(-1),
    },
    Binding {
        keys: "x / X",
        help: "next / previous call behind the verdict(s)",
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
        keys: "/",
        help: "search ids, keys, tools, rules, payloads",
        codes: &[KeyCode::Char('/')],
        action: || Action::StartSearch,
    },
    Binding {
        keys: "n / N",
        help: "next / previous match",
        codes: &[KeyCode::Char('n')],
        action: || Action::SearchNext,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('N')],
        action: || Action::SearchPrev,
    },
    Binding {
        keys: "\\",
        help: "filter by tool, status or rule",
        codes: &[KeyCode::Char('\\')],
        action: || Action::StartFilter,
    },
    Binding {
        keys: ":",
        help: "jump to a call id",
        codes: &[KeyCode::Char(':')],
        action: || Action::StartJump,
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
        help: "focus the next / previous pane",
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
        keys: "1 … 6",
        help: "focus a pane by number (the order of Tab)",
        codes: &[KeyCode::Char('1')],
        action: || Action::FocusPane(0),
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('2')],
        action: || Action::FocusPane(1),
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('3')],
        action: || Action::FocusPane(2),
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('4')],
        action: || Action::FocusPane(3),
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('5')],
        action: || Action::FocusPane(4),
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('6')],
        action: || Action::FocusPane(5),
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
        keys: "z",
        help: "zoom the focused pane",
        codes: &[KeyCode::Char('z')],
        action: || Action::ToggleZoom,
    },
    Binding {
        keys: "+ / -",
        help: "lanes' time zoom (J/K pan when focused)",
        codes: &[KeyCode::Char('+')],
        action: || Action::LanesZoom(1),
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('-')],
        action: || Action::LanesZoom(-1),
    },
    Binding {
        keys: "t",
        help: "the scenario's story",
        codes: &[KeyCode::Char('t')],
        action: || Action::ToggleStory,
    },
    Binding {
        keys: "y / Y",
        help: "copy the call as JSON / the command",
        codes: &[KeyCode::Char('y')],
        action: || Action::CopyCall,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('Y')],
        action: || Action::CopyCommand,
    },
    Binding {
        keys: "m",
        help: "the recent messages, newest first",
        codes: &[KeyCode::Char('m')],
        action: || Action::ShowMessage,
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
        keys: "Esc",
        help: "close what is open (never quits)",
        codes: &[KeyCode::Esc],
        action: || Action::Back,
    },
    Binding {
        keys: "q",
        help: "quit",
        codes: &[KeyCode::Char('q')],
        action: || Action::Quit,
    },
];

/// Runner keys (while browsing and in the rule editor), in help order.
pub const RUNNER: &[Binding] = &[
    Binding {
        keys: "i",
        help: "rule editor (open / close)",
        codes: &[KeyCode::Char('i')],
        action: || Action::ToggleEditor,
    },
    Binding {
        keys: "s / S",
        help: "seed +1 / -1",
        codes: &[KeyCode::Char('s')],
        action: || Action::ShiftSeed(1),
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('S')],
        action: || Action::ShiftSeed(-1),
    },
    Binding {
        keys: "P",
        help: "probability override",
        codes: &[KeyCode::Char('P')],
        action: || Action::CycleProbability,
    },
    Binding {
        keys: "b / B",
        help: "call budget +1 / -1",
        codes: &[KeyCode::Char('b')],
        action: || Action::ShiftBudget(1),
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('B')],
        action: || Action::ShiftBudget(-1),
    },
    Binding {
        keys: "o",
        help: "policy: opt/retry/resil/all",
        codes: &[KeyCode::Char('o')],
        action: || Action::CyclePolicy,
    },
    Binding {
        keys: "u / C-r",
        help: "undo / redo an edit",
        codes: &[KeyCode::Char('u')],
        action: || Action::Undo,
    },
    Binding {
        keys: "R",
        help: "rerun now (an agent: shown first, y starts it)",
        codes: &[KeyCode::Char('R')],
        action: || Action::Rerun,
    },
    Binding {
        keys: "c",
        help: "compare previous / new run",
        codes: &[KeyCode::Char('c')],
        action: || Action::ToggleCompare,
    },
    Binding {
        keys: "p",
        help: "what if: pin a fault, re-run the agent",
        codes: &[KeyCode::Char('p')],
        action: || Action::PinFault,
    },
    Binding {
        keys: "v",
        help: "policies side by side",
        codes: &[KeyCode::Char('v')],
        action: || Action::TogglePolicies,
    },
    Binding {
        keys: "=",
        help: "determinism check",
        codes: &[KeyCode::Char('=')],
        action: || Action::CheckDeterminism,
    },
    Binding {
        keys: "w / W",
        help: "save scenario / save as",
        codes: &[KeyCode::Char('w')],
        action: || Action::Save,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('W')],
        action: || Action::SaveAs,
    },
    Binding {
        keys: "C / V",
        help: "write cassette / verdicts",
        codes: &[KeyCode::Char('C')],
        action: || Action::WriteCassette,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('V')],
        action: || Action::WriteVerdicts,
    },
];

/// Keys inside the rule editor, in help order (runner keys work there too).
pub const EDITOR: &[Binding] = &[
    Binding {
        keys: "↑↓ / j k",
        help: "pick a field (past the last, the next rule's)",
        codes: &[KeyCode::Up, KeyCode::Char('k')],
        action: || Action::EditField(-1),
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Down, KeyCode::Char('j')],
        action: || Action::EditField(1),
    },
    Binding {
        keys: "←→ / h l",
        help: "previous / next rule",
        codes: &[KeyCode::Left, KeyCode::Char('h')],
        action: || Action::EditRule(-1),
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Right, KeyCode::Char('l'), KeyCode::Tab],
        action: || Action::EditRule(1),
    },
    Binding {
        keys: "Enter",
        help: "edit the field",
        codes: &[KeyCode::Enter],
        action: || Action::EditStart,
    },
    Binding {
        keys: "a / d",
        help: "add / duplicate rule",
        codes: &[KeyCode::Char('a')],
        action: || Action::AddRule,
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char('d')],
        action: || Action::DuplicateRule,
    },
    Binding {
        keys: "D / Del",
        help: "delete rule",
        codes: &[KeyCode::Char('D'), KeyCode::Delete],
        action: || Action::DeleteRule,
    },
    Binding {
        keys: "[ / ]",
        help: "move rule up / down",
        codes: &[KeyCode::Char('[')],
        action: || Action::MoveRule(-1),
    },
    Binding {
        keys: "",
        help: "",
        codes: &[KeyCode::Char(']')],
        action: || Action::MoveRule(1),
    },
    Binding {
        keys: "i / Esc",
        help: "close the editor",
        codes: &[KeyCode::Esc],
        action: || Action::Back,
    },
];

fn find(table: &[Binding], code: KeyCode) -> Option<Action> {
    table
        .iter()
        .find(|b| b.codes.contains(&code))
        .map(|b| (b.action)())
}

/// Moving in a list (the runs, the wire view's messages): a row, the first and last, ten.
fn list_key(code: KeyCode) -> Option<Action> {
    match code {
        KeyCode::Char('j') | KeyCode::Down => Some(Action::Pick(1)),
        KeyCode::Char('k') | KeyCode::Up => Some(Action::Pick(-1)),
        KeyCode::Char('g') | KeyCode::Home => Some(Action::Pick(isize::MIN)),
        KeyCode::Char('G') | KeyCode::End => Some(Action::Pick(isize::MAX)),
        KeyCode::PageDown => Some(Action::Pick(10)),
        KeyCode::PageUp => Some(Action::Pick(-10)),
        _ => None,
    }
}

/// The action for a key in a mode, if any.
pub fn map(key: KeyEvent, mode: &Mode) -> Option<Action> {
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        match key.code {
            KeyCode::Char('c') => return Some(Action::Quit),
            KeyCode::Char('z') => return Some(Action::Suspend),
            KeyCode::Char('r') if matches!(mode, Mode::Browse | Mode::Edit) => {
                return Some(Action::Redo);
            }
            _ if !matches!(mode, Mode::Typing(..)) => return None,
            _ => {}
        }
    }
    // One rule everywhere but a text field: `q` quits, `Esc` closes what is open.
    if key.code == KeyCode::Char('q') && !matches!(mode, Mode::Typing(..) | Mode::Confirm(_)) {
        return Some(Action::Quit);
    }
    match mode {
        Mode::Typing(..) => match key.code {
            KeyCode::Enter => Some(Action::Submit),
            KeyCode::Esc => Some(Action::Cancel),
            _ => super::prompt::request(key).map(Action::Input),
        },
        Mode::PinFault(_) => match key.code {
            KeyCode::Up | KeyCode::Char('k') => Some(Action::Pick(-1)),
            KeyCode::Down | KeyCode::Char('j') => Some(Action::Pick(1)),
            KeyCode::Enter => Some(Action::Submit),
            KeyCode::Esc => Some(Action::Cancel),
            _ => None,
        },
        Mode::PickKind(_) => match key.code {
            KeyCode::Up | KeyCode::Char('k') => Some(Action::Pick(-1)),
            KeyCode::Down | KeyCode::Char('j') => Some(Action::Pick(1)),
            KeyCode::Enter => Some(Action::Submit),
            KeyCode::Esc => Some(Action::Cancel),
            _ => None,
        },
        Mode::Confirm(q) => match key.code {
            KeyCode::Char(c) => Some(Action::Answer(c)),
            KeyCode::Esc => Some(Action::Answer('n')),
            // Starting an agent: any key but `y` is a no, Enter too.
            _ if matches!(q, Question::RunAgent(_)) => Some(Action::Answer('n')),
            _ => None,
        },
        // Any other key closes a pop-up (and is not taken as a command).
        Mode::Show(..) => Some(Action::Back),
        Mode::Summary(_) => match key.code {
            KeyCode::Char('j') | KeyCode::Down => Some(Action::Pick(1)),
            KeyCode::Char('k') | KeyCode::Up => Some(Action::Pick(-1)),
            KeyCode::Char('l') | KeyCode::Right | KeyCode::Tab => Some(Action::SortBy(1)),
            KeyCode::Char('h') | KeyCode::Left | KeyCode::BackTab => Some(Action::SortBy(-1)),
            KeyCode::Char('r') => Some(Action::ReverseSort),
            KeyCode::Enter => Some(Action::Submit),
            KeyCode::Esc | KeyCode::Char('T') => Some(Action::ToggleSummary),
            _ => None,
        },
        Mode::Wire => list_key(key.code).or(match key.code {
            KeyCode::Char('J') => Some(Action::ScrollDown),
            KeyCode::Char('K') => Some(Action::ScrollUp),
            KeyCode::Char('/') => Some(Action::StartSearch),
            KeyCode::Char('n') => Some(Action::SearchNext),
            KeyCode::Char('N') => Some(Action::SearchPrev),
            KeyCode::Char('y') => Some(Action::CopyCall),
            KeyCode::Char('?') => Some(Action::ToggleHelp),
            KeyCode::Esc | KeyCode::Char('M') => Some(Action::ToggleWire),
            _ => None,
        }),
        Mode::Runs(_) => list_key(key.code).or(match key.code {
            KeyCode::Enter => Some(Action::Submit),
            KeyCode::Char('c') => Some(Action::CompareRun),
            KeyCode::Esc | KeyCode::Char('L') => Some(Action::ToggleRuns),
            _ => None,
        }),
        Mode::Edit => find(EDITOR, key.code).or_else(|| find(RUNNER, key.code)),
        Mode::Help => match key.code {
            KeyCode::Char('?') | KeyCode::Esc => Some(Action::ToggleHelp),
            KeyCode::Char('j') | KeyCode::Down => Some(Action::ScrollDown),
            KeyCode::Char('k') | KeyCode::Up => Some(Action::ScrollUp),
            KeyCode::PageDown | KeyCode::Char(' ') => Some(Action::PageDown),
            KeyCode::PageUp => Some(Action::PageUp),
            _ => None,
        },
        Mode::Browse => find(BROWSE, key.code).or_else(|| find(RUNNER, key.code)),
    }
}

/// Help rows of a table: keys and description (rows continuing the previous entry are folded
/// into it).
pub fn rows(table: &[Binding]) -> Vec<(&'static str, &'static str)> {
    table
        .iter()
        .filter(|b| !b.keys.is_empty())
        .map(|b| (b.keys, b.help))
        .collect()
}

/// Help rows of the browsing keys.
pub fn help_rows() -> Vec<(&'static str, &'static str)> {
    rows(BROWSE)
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
        assert!(matches!(
            map(key(KeyCode::Char('z')), &Mode::Browse),
            Some(Action::ToggleZoom)
        ));
        // F stays the previous fault (f / F): following is A.
        assert!(matches!(
            map(key(KeyCode::Char('A')), &Mode::Browse),
            Some(Action::ToggleFollow)
        ));
        assert!(matches!(
            map(key(KeyCode::Char('F')), &Mode::Browse),
            Some(Action::PrevFault)
        ));
    }

    #[test]
    fn text_modes_take_editing_keys() {
        use super::super::app::Purpose;
        use super::super::prompt::TextField;
        let m = Mode::Typing(Purpose::Filter, TextField::default());
        assert!(matches!(
            map(key(KeyCode::Char('j')), &m),
            Some(Action::Input(tui_input::InputRequest::InsertChar('j')))
        ));
        assert!(matches!(map(key(KeyCode::Enter), &m), Some(Action::Submit)));
        assert!(matches!(
            map(key(KeyCode::Home), &m),
            Some(Action::Input(tui_input::InputRequest::GoToStart))
        ));
        let ctrl = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
        assert!(matches!(
            map(ctrl('u'), &m),
            Some(Action::Input(tui_input::InputRequest::DeleteLine))
        ));
        assert!(matches!(
            map(ctrl('w'), &m),
            Some(Action::Input(tui_input::InputRequest::DeletePrevWord))
        ));
        assert!(matches!(map(ctrl('c'), &m), Some(Action::Quit)));
    }

    #[test]
    fn step_keys_mean_the_same_whatever_the_focus() {
        // The mapping does not depend on focus at all: the same table serves every pane.
        for code in [KeyCode::Char('j'), KeyCode::Down] {
            assert!(matches!(map(key(code), &Mode::Browse), Some(Action::Next)));
        }
        assert!(matches!(
            map(key(KeyCode::Char('J')), &Mode::Browse),
            Some(Action::ScrollDown)
        ));
    }

    #[test]
    fn runner_and_editor_keys() {
        assert!(matches!(
            map(key(KeyCode::Char('i')), &Mode::Browse),
            Some(Action::ToggleEditor)
        ));
        assert!(matches!(
            map(key(KeyCode::Char('j')), &Mode::Edit),
            Some(Action::EditField(1))
        ));
        assert!(matches!(
            map(key(KeyCode::Char('l')), &Mode::Edit),
            Some(Action::EditRule(1))
        ));
        assert!(matches!(
            map(key(KeyCode::Char('s')), &Mode::Edit),
            Some(Action::ShiftSeed(1))
        ));
        let ctrl_r = KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL);
        assert!(matches!(map(ctrl_r, &Mode::Browse), Some(Action::Redo)));
        assert!(matches!(
            map(
                key(KeyCode::Char('y')),
                &Mode::Confirm(super::super::app::Question::Quit)
            ),
            Some(Action::Answer('y'))
        ));
    }

    #[test]
    fn q_quits_and_esc_closes_in_every_view_but_a_text_field() {
        use super::super::app::{Purpose, SummaryCursor};
        use super::super::prompt::TextField;
        let views = [
            Mode::Browse,
            Mode::Help,
            Mode::Edit,
            Mode::PickKind(0),
            Mode::Show("copied".into(), "text".into()),
            Mode::Summary(SummaryCursor::default()),
            Mode::Runs(0),
            Mode::PinFault(0),
            Mode::Wire,
        ];
        for m in &views {
            assert!(
                matches!(map(key(KeyCode::Char('q')), m), Some(Action::Quit)),
                "q in {m:?}"
            );
            assert!(
                !matches!(map(key(KeyCode::Esc), m), Some(Action::Quit) | None),
                "Esc in {m:?} closes something"
            );
        }
        // In a text field q is a letter; a question takes it as its answer.
        let typing = Mode::Typing(Purpose::Search, TextField::default());
        assert!(matches!(
            map(key(KeyCode::Char('q')), &typing),
            Some(Action::Input(tui_input::InputRequest::InsertChar('q')))
        ));
        assert!(matches!(
            map(key(KeyCode::Char('q')), &Mode::Confirm(Question::Quit)),
            Some(Action::Answer('q'))
        ));
    }

    #[test]
    fn the_wire_view_has_its_keys() {
        assert!(matches!(
            map(key(KeyCode::Char('M')), &Mode::Browse),
            Some(Action::ToggleWire)
        ));
        for (code, what) in [
            (KeyCode::Char('j'), "next"),
            (KeyCode::Char('/'), "search"),
            (KeyCode::Char('n'), "next match"),
            (KeyCode::Char('y'), "copy"),
            (KeyCode::Char('M'), "close"),
        ] {
            let got = map(key(code), &Mode::Wire);
            let ok = match what {
                "next" => matches!(got, Some(Action::Pick(1))),
                "search" => matches!(got, Some(Action::StartSearch)),
                "next match" => matches!(got, Some(Action::SearchNext)),
                "copy" => matches!(got, Some(Action::CopyCall)),
                _ => matches!(got, Some(Action::ToggleWire)),
            };
            assert!(ok, "{code:?} in the wire view: {got:?}");
        }
    }

    #[test]
    fn no_key_is_bound_twice() {
        let mut seen = std::collections::HashSet::new();
        for b in BROWSE.iter().chain(RUNNER) {
            for c in b.codes {
                assert!(seen.insert(*c), "{c:?} is bound twice");
            }
        }
        let mut seen = std::collections::HashSet::new();
        for b in EDITOR {
            for c in b.codes {
                assert!(seen.insert(*c), "{c:?} is bound twice in the editor");
            }
        }
    }

    #[test]
    fn every_help_row_has_a_key() {
        assert!(help_rows().len() >= 15);
        assert!(help_rows().iter().any(|(k, _)| k.contains('?')));
    }
}
