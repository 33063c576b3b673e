//! The summary table over the main area: per tool, then per rule (counting the calls it was
//! eligible for) — calls, errors, faults, fault rate, commits, duplicates, p50 / p95 elapsed.
//! The sorted column's heading carries `▼` (or `▲` reversed); the selected row is reversed.
//! An `ask` record's rounds, tokens, cost, end and final answer come above the table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::super::app::{App, SummaryCursor};
use super::super::theme::Theme;
use super::calls::clip;
use super::{fit, pane, secs};
use crate::summary::{Column, Row, RowKind};

fn cells(r: &Row) -> [String; 8] {
    let time = |t: Option<f64>| t.map_or_else(|| "-".to_owned(), secs);
    [
        r.calls.to_string(),
        r.errors.to_string(),
        r.faults.to_string(),
        format!("{:.0}%", r.fault_rate() * 100.0),
        r.commits.to_string(),
        r.duplicates.to_string(),
        time(r.p50),
        time(r.p95),
    ]
}

/// Widths of the number columns (at least their headings plus a sort mark).
const WIDTHS: [usize; 8] = [7, 7, 7, 5, 8, 6, 8, 8];

/// The table's lines for a pane `w` columns wide, and the line of the selected row.
pub fn lines(app: &App, c: &SummaryCursor, w: usize, theme: &Theme) -> (Vec<Line<'static>>, usize) {
    let rows = app.summary_rows(c);
    let numbers: usize = WIDTHS.iter().map(|n| n + 1).sum();
    let name_w = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(12, 40)
        .min(w.saturating_sub(numbers + 1).max(8));
    let sorted = c.column.min(Column::ALL.len() - 1);
    let mark = if c.reverse { '▲' } else { '▼' };
    let heading = |kind: &str| {
        let name = if sorted == 0 {
            format!("{kind} {mark}")
        } else {
            kind.to_owned()
        };
        let mut h = format!("{:<name_w$}", clip(&name, name_w));
        for (i, col) in Column::ALL[1..].iter().enumerate() {
            let title = if sorted == i + 1 {
                format!("{}{mark}", col.title())
            } else {
                col.title().to_owned()
            };
            h.push_str(&format!(" {title:>w$}", w = WIDTHS[i]));
        }
        // Rows never wrap (the selection's line must be the line drawn): cut at the width.
        clip(&h, w)
    };
    // Wrapped here, so the selected row's line is counted after them.
    let mut out = super::text::wrap(super::ask::summary_lines(app, theme), w);
    if !out.is_empty() {
        out.push(Line::raw(""));
    }
    let mut selected_line = 0;
    let mut kind = None;
    for (i, r) in rows.iter().enumerate() {
        if kind != Some(r.kind) {
            if kind.is_some() {
                out.push(Line::raw(""));
            }
            kind = Some(r.kind);
            let title = match r.kind {
                RowKind::Tool => "tool",
                RowKind::Rule => "rule",
            };
            out.push(Line::styled(heading(title), theme.title));
        }
        let mut text = format!("{:<name_w$}", clip(&r.name, name_w));
        for (cell, width) in cells(r).iter().zip(WIDTHS) {
            text.push_str(&format!(" {cell:>width$}"));
        }
        let text = clip(&text, w);
        let style = if i == c.row {
            selected_line = out.len();
            theme.selected
        } else if r.duplicates > 0 || r.errors > 0 {
            theme.failed
        } else {
            theme.text
        };
        out.push(Line::styled(text, style));
    }
    if rows.is_empty() {
        out.push(Line::styled("(no calls recorded)", theme.dim));
    }
    out.push(Line::raw(""));
    out.push(Line::styled(
        "A rule's row counts the calls it was eligible for. j/k row · h/l or ←→ sort by another \
         column · r reverse · Enter filter the timeline to the row · Esc close",
        theme.dim,
    ));
    // Table lines fit the width; the note under them wraps.
    (super::text::wrap(out, w), selected_line)
}

/// Draws the summary into `area`.
pub fn render(app: &App, c: &SummaryCursor, area: Rect, buf: &mut Buffer, theme: &Theme) {
    Clear.render(area, buf);
    let inner_w = area.width.saturating_sub(2) as usize;
    let inner_h = area.height.saturating_sub(2) as usize;
    let (lines, selected) = lines(app, c, inner_w, theme);
    let scroll = selected.saturating_sub(inner_h.saturating_sub(2)) as u16;
    let t = app.timeline();
    let count = crate::printable::count;
    let title = format!(
        " Summary · {} · {} · sorted by {} ",
        count(t.len(), "call", "calls"),
        count(
            t.report().duplicate_effects(),
            "duplicate commit",
            "duplicate commits"
        ),
        Column::ALL[c.column.min(Column::ALL.len() - 1)].title()
    );
    Paragraph::new(lines)
        .block(pane(fit(title, area), true, theme))
        .scroll((scroll, 0))
        .render(area, buf);
}
