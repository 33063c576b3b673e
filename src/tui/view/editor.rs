//! The rule editor pane: run settings, the ordered rule list (first eligible rule that hits
//! wins), the selected rule's fields, and why the last edit was refused.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::super::app::{App, Mode, Purpose};
use super::super::theme::Theme;
use super::calls::clip;
use super::{pane, text};
use crate::lab::edit::Field;
use crate::rule::FaultKind;

/// The settings line: seed, probability override, budget, policy.
pub fn settings(app: &App) -> String {
    app.editor.as_ref().map_or_else(String::new, |e| {
        format!("seed {} · {}", e.seed(), settings_tail(app))
    })
}

/// The settings without the seed (the header already shows the run's seed).
pub fn settings_tail(app: &App) -> String {
    let Some(e) = &app.editor else {
        return String::new();
    };
    let p = e
        .probability()
        .map_or_else(|| "per rule".to_owned(), |p| format!("{p:?}"));
    format!(
        "p {p} · budget {} · {}",
        e.budget(),
        e.policy()
            .map_or_else(|| "agent".to_owned(), |p| format!("policy {}", p.as_str()))
    )
}

/// What a fault kind does, in a few words (the kind picker shows it).
fn kind_help(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::Timeout => "the call times out",
        FaultKind::RateLimit => "refused: retry after a wait",
        FaultKind::Unavailable => "the service is down",
        FaultKind::Replace => "a wrong answer instead",
        FaultKind::Latency => "the answer comes late",
        FaultKind::ResponseLost => "it commits, the answer is lost",
    }
}

/// The editor's lines for an inner width of `width` columns, wrapped.
fn lines(app: &App, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let Some(e) = &app.editor else {
        return Vec::new();
    };
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
            let marker = if selected { "▶" } else { " " };
            let mut spans = vec![Span::styled(
                format!("{marker}{:<12}", field.key()),
                if selected { theme.title } else { theme.dim },
            )];
            match (&app.mode, selected) {
                (Mode::Typing(Purpose::Field, input), true) => {
                    spans.extend(text::field_spans(
                        input,
                        width.saturating_sub(13),
                        theme.selected,
                    ));
                }
                _ => spans.push(Span::styled(
                    clip(
                        &e.field_text(app.edit.rule, *field),
                        width.saturating_sub(13),
                    ),
                    theme.text,
                )),
            }
            lines.push(Line::from(spans));
            if selected
                && *field == Field::Kind
                && let Mode::PickKind(at) = app.mode
            {
                for (k, kind) in FaultKind::ALL.iter().enumerate() {
                    let chosen = k == at;
                    lines.push(Line::styled(
                        format!(
                            "   {} {:<14} {}",
                            if chosen { "▸" } else { " " },
                            kind.as_str(),
                            kind_help(*kind)
                        ),
                        if chosen { theme.selected } else { theme.text },
                    ));
                }
            }
        }
    }
    if let Some(err) = &app.edit_error {
        lines.push(Line::styled(format!("✗ {err}"), theme.failed));
    }
    text::wrap(lines, width)
}

/// Rows the editor needs (borders included) in an area `width` columns wide.
pub fn height(app: &App, width: u16) -> u16 {
    let n = lines(app, width.saturating_sub(2) as usize, &Theme::new(true)).len();
    (n + 2).min(u16::MAX as usize) as u16
}

/// Draws the editor into `area`.
pub fn render(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let Some(e) = &app.editor else {
        return;
    };
    let (undo, redo) = e.history();
    let title = format!(
        " Rules · {}{} · undo {undo} redo {redo} ",
        e.name(),
        if e.dirty() { " · unsaved" } else { "" }
    );
    let lines = lines(app, area.width.saturating_sub(2) as usize, theme);
    Clear.render(area, buf);
    Paragraph::new(lines)
        .block(pane(title, true, theme))
        .render(area, buf);
}
