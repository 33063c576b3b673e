//! The header line (file, kind, run, seed, virtual clock, verdict, short digest) and the
//! status line (messages, filter prompt, key hints).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::super::app::{App, Mode, Question, StatusKind};
use super::super::theme::Theme;
use super::secs;
use crate::contract::verdict;
use crate::printable;

/// Draws the header.
pub fn render(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let tab = app.tab();
    let report = tab.timeline.report();
    let passed = verdict(&tab.checks);
    let runs = app.doc.runs.len();
    let run = if runs > 1 {
        format!(" · run {}/{runs} {}", app.run + 1, tab.label)
    } else {
        format!(" · {}", tab.label)
    };
    // Most important first: a narrow terminal cuts the file name, not the verdict.
    let clock = tab.timeline.clock_at(app.cursor);
    let mut spans = vec![
        Span::styled(" toolstorm ", theme.title),
        Span::styled(
            if passed { "PASS" } else { "FAIL" },
            if passed { theme.ok } else { theme.failed },
        ),
        Span::styled(
            format!(
                "{run} · seed {} · {} {}",
                report.seed.to_decimal(),
                report.clock,
                secs(clock)
            ),
            theme.dim,
        ),
        Span::styled(
            format!(
                " · {} {}",
                app.doc.kind.label(),
                &tab.digest[..tab.digest.len().min(8)]
            ),
            theme.dim,
        ),
    ];
    // The runner's settings (before the file name, which a narrow terminal cuts first).
    if let Some(e) = &app.editor {
        if e.dirty() {
            spans.insert(2, Span::styled(" ● unsaved", theme.fault));
        }
        spans.push(Span::styled(
            format!(" · {}", super::editor::settings_tail(app)),
            theme.dim,
        ));
    }
    spans.push(Span::styled(
        format!(" · {}", printable::quoted(&app.doc.name())),
        theme.text,
    ));
    if report.budget_rejections > 0 {
        spans.push(Span::styled(
            format!(" · {} refused", report.budget_rejections),
            theme.failed,
        ));
    }
    Line::from(spans).render(area, buf);
}

/// Draws the status line.
pub fn render_status(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let line = match &app.mode {
        Mode::Filter(text) => Line::from(vec![
            Span::styled("filter (tool, status or rule): ", theme.title),
            Span::raw(text.clone()),
            Span::styled("▏  Enter keep · Esc clear", theme.dim),
        ]),
        Mode::EditField(_) => Line::from(vec![
            Span::styled(format!("edit {}: ", app.edit_field().key()), theme.title),
            Span::styled(
                "type a value · Enter apply (validated) · Esc cancel",
                theme.dim,
            ),
        ]),
        Mode::Prompt(kind, text) => Line::from(vec![
            Span::styled(format!("write {} to: ", kind.label()), theme.title),
            Span::raw(text.clone()),
            Span::styled("▏  Enter write · Esc cancel", theme.dim),
        ]),
        Mode::Confirm(q) => {
            let text = match q {
                Question::Overwrite(_, path) => {
                    format!("{} exists. Overwrite it? y yes · n no", path.display())
                }
                Question::Quit => "Unsaved edits. Quit and lose them? y quit · n stay".into(),
                Question::Conflict => "The file changed on disk and you have unsaved edits: \
                     d keep disk · m keep mine (the other stays one undo step back)"
                    .into(),
            };
            Line::styled(text, theme.failed)
        }
        _ => {
            let style = if app.status_kind == StatusKind::Error {
                theme.failed
            } else {
                theme.dim
            };
            let mut spans = Vec::new();
            if let Some(f) = &app.filter {
                spans.push(Span::styled(format!("[filter: {f}] "), theme.fault));
            }
            let text = if app.status.is_empty() {
                "? keys · q quit · Tab focus · f next fault · e next effect".to_owned()
            } else {
                printable::line(&app.status).into_owned()
            };
            spans.push(Span::styled(text, style));
            Line::from(spans)
        }
    };
    line.render(area, buf);
}
