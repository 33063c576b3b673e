//! The rule editor pane: run settings, the ordered rule list (first eligible rule that hits
//! wins), the selected rule's fields, and why the last edit was refused.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget, Wrap};

use super::super::app::{App, Mode};
use super::super::theme::Theme;
use super::calls::clip;
use super::pane;
use crate::lab::edit::Field;

/// The settings line: seed, probability override, budget, policy.
pub fn settings(app: &App) -> String {
    app.editor.as_ref().map_or_else(String::new, |e| {
        format!("seed {} · {}", e.file().config.seed, settings_tail(app))
    })
}

/// The settings without the seed (the header already shows the run's seed).
pub fn settings_tail(app: &App) -> String {
    let Some(e) = &app.editor else {
        return String::new();
    };
    let c = &e.file().config;
    let p = c
        .probability
        .map_or_else(|| "per rule".to_owned(), |p| format!("{p:?}"));
    format!(
        "p {p} · budget {} · policy {}",
        c.max_calls,
        e.file().policy.as_str()
    )
}

/// Draws the editor into `area`.
pub fn render(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let Some(e) = &app.editor else {
        return;
    };
    let (undo, redo) = e.history();
    let title = format!(
        " Rules · {}{} · undo {undo} redo {redo} ",
        e.file().scenario.name,
        if e.dirty() { " · unsaved" } else { "" }
    );
    let width = area.width.saturating_sub(2) as usize;
    let mut lines = vec![Line::styled(clip(&settings(app), width), theme.dim)];
    let rules = e.rules();
    if rules.is_empty() {
        lines.push(Line::styled(" no rules — press a to add one", theme.dim));
    }
    for i in 0..rules.len() {
        let text = format!(
            "{}{:>2} {} · {} · {} · [{}]",
            if i == app.edit.rule { "▶" } else { " " },
            i + 1,
            e.field_text(i, Field::Name),
            e.field_text(i, Field::Tool),
            e.field_text(i, Field::Kind),
            e.field_text(i, Field::Calls),
        );
        let style = if i == app.edit.rule {
            theme.selected
        } else {
            theme.text
        };
        lines.push(Line::styled(clip(&text, width), style));
    }
    if !rules.is_empty() {
        lines.push(Line::styled(
            format!("── rule {} ──", app.edit.rule + 1),
            theme.dim,
        ));
        for (j, field) in Field::ALL.iter().enumerate() {
            let selected = j == app.edit.field;
            let value = match (&app.mode, selected) {
                (Mode::EditField(text), true) => format!("{text}▏"),
                _ => e.field_text(app.edit.rule, *field),
            };
            let marker = if selected { "▶" } else { " " };
            lines.push(Line::from(vec![
                Span::styled(
                    format!("{marker}{:<12}", field.key()),
                    if selected { theme.title } else { theme.dim },
                ),
                Span::styled(
                    clip(&value, width.saturating_sub(13)),
                    if selected && matches!(app.mode, Mode::EditField(_)) {
                        theme.selected
                    } else {
                        theme.text
                    },
                ),
            ]));
        }
    }
    if let Some(err) = &app.edit_error {
        lines.push(Line::styled(format!("✗ {err}"), theme.failed));
    }
    Clear.render(area, buf);
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(pane(title, true, theme))
        .render(area, buf);
}
