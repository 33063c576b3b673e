//! The help overlay, generated from the keymap table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::super::keymap::help_rows;
use super::super::theme::{DUPLICATE, FAILED, INJECTED, SELECTED_ONLY, Theme};
use super::pane;

/// Draws the overlay centred in `area`.
pub fn render(area: Rect, buf: &mut Buffer, theme: &Theme) {
    let rows = help_rows();
    let mut lines: Vec<Line> = rows
        .iter()
        .map(|(k, h)| Line::raw(format!(" {k:<16} {h}")))
        .collect();
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        format!(" {FAILED} failed  {INJECTED} fault injected  {SELECTED_ONLY} selected only  {DUPLICATE} duplicate effect"),
        theme.dim,
    ));
    lines.push(Line::styled(
        " mouse: click a row · wheel scrolls the pane under it",
        theme.dim,
    ));
    let w = 76.min(area.width);
    let h = (lines.len() as u16 + 2).min(area.height);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    Clear.render(r, buf);
    Paragraph::new(lines)
        .block(pane(" Keys ".into(), true, theme))
        .render(r, buf);
}
