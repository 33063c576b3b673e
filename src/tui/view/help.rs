//! The help overlay, generated from the keymap tables: browsing keys on the left, runner and
//! rule-editor keys on the right (one column when narrow).

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::super::keymap::{EDITOR, RUNNER, help_rows, rows};
use super::super::theme::{DUPLICATE, FAILED, INJECTED, SELECTED_ONLY, Theme};
use super::pane;

fn key_lines<'a>(rows: &[(&str, &str)], key_w: usize) -> Vec<Line<'a>> {
    rows.iter()
        .map(|(k, h)| Line::raw(format!(" {k:<key_w$} {h}")))
        .collect()
}

/// Draws the overlay centred in `area`.
pub fn render(area: Rect, buf: &mut Buffer, theme: &Theme) {
    let two = area.width >= 80;
    let browse = key_lines(&help_rows(), if two { 13 } else { 16 });
    let mut runner = key_lines(&rows(RUNNER), 8);
    runner.push(Line::styled(" rule editor (i)", theme.title));
    runner.extend(key_lines(&rows(EDITOR), 8));
    let mut legend = Vec::new();
    legend.push(Line::styled(
        format!(" {FAILED} failed  {INJECTED} fault injected  {SELECTED_ONLY} selected only  {DUPLICATE} duplicate effect"),
        theme.dim,
    ));
    legend.push(Line::styled(
        " mouse: click a row · wheel scrolls the pane under it",
        theme.dim,
    ));
    let body = if two {
        browse.len().max(runner.len())
    } else {
        browse.len() + runner.len()
    };
    let w = if two { 96 } else { 76 }.min(area.width);
    let h = ((body + legend.len()) as u16 + 2).min(area.height);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    Clear.render(r, buf);
    let block = pane(" Keys ".into(), true, theme);
    let inner = block.inner(r);
    block.render(r, buf);
    let [top, bottom] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(legend.len() as u16)])
            .areas(inner);
    if two {
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(top);
        Paragraph::new(browse).render(left, buf);
        Paragraph::new(runner).render(right, buf);
    } else {
        let mut all = browse;
        all.extend(runner);
        Paragraph::new(all).render(top, buf);
    }
    Paragraph::new(legend).render(bottom, buf);
}
