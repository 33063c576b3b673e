//! Colours and symbols. One [`Theme`]; `NO_COLOR` turns every colour off and keeps the symbols
//! and text attributes, so meaning never depends on colour alone.

use ratatui::style::{Color, Modifier, Style};

/// Marks a call that failed (error or cancelled).
pub const FAILED: &str = "✗";
/// Marks a call whose fault was injected.
pub const INJECTED: &str = "◆";
/// Marks a call whose rule was selected but not injected (its tool raised first).
pub const SELECTED_ONLY: &str = "◇";
/// Marks a duplicate effect.
pub const DUPLICATE: &str = "≡";
/// Marks a call a verdict's reasons name (and, in the verdict pane, the reason that names
/// the selected call).
pub const BLAMED: &str = "»";
/// A passed check.
pub const PASS: &str = "✓";
/// A failed check.
pub const FAIL: &str = "✗";
/// A verdict not judged yet, as of a step.
pub const NOT_YET: &str = "…";

/// Styles used by the views.
#[derive(Clone, Copy, Debug)]
pub struct Theme {
    /// Plain text.
    pub text: Style,
    /// Secondary text.
    pub dim: Style,
    /// Titles and the header.
    pub title: Style,
    /// A passing verdict.
    pub ok: Style,
    /// A failed call or verdict.
    pub failed: Style,
    /// An injected fault.
    pub fault: Style,
    /// A duplicate effect.
    pub duplicate: Style,
    /// The selected row.
    pub selected: Style,
    /// The focused pane's border.
    pub focus: Style,
    /// Other borders.
    pub border: Style,
    /// A search match.
    pub matched: Style,
}

const COLOR: Theme = Theme {
    text: Style::new(),
    dim: Style::new().fg(Color::DarkGray),
    title: Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
    ok: Style::new().fg(Color::Green),
    failed: Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
    fault: Style::new().fg(Color::Yellow),
    duplicate: Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD),
    selected: Style::new().add_modifier(Modifier::REVERSED),
    focus: Style::new().fg(Color::Cyan),
    border: Style::new().fg(Color::DarkGray),
    matched: Style::new()
        .fg(Color::Black)
        .bg(Color::Yellow)
        .add_modifier(Modifier::UNDERLINED),
};

const PLAIN: Theme = Theme {
    text: Style::new(),
    dim: Style::new(),
    title: Style::new().add_modifier(Modifier::BOLD),
    ok: Style::new(),
    failed: Style::new().add_modifier(Modifier::BOLD),
    fault: Style::new(),
    duplicate: Style::new().add_modifier(Modifier::BOLD),
    selected: Style::new().add_modifier(Modifier::REVERSED),
    focus: Style::new().add_modifier(Modifier::BOLD),
    border: Style::new(),
    matched: Style::new().add_modifier(Modifier::UNDERLINED),
};

impl Theme {
    /// The colour theme, or the plain one when `no_color` is set.
    pub fn new(no_color: bool) -> Theme {
        if no_color { PLAIN } else { COLOR }
    }

    /// Honours the `NO_COLOR` convention (set and non-empty).
    pub fn from_env() -> Theme {
        Theme::new(std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()))
    }
}
