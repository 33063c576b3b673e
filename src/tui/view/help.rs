//! The help screen, generated from the keymap tables: browsing keys, then runner and
//! rule-editor keys (side by side when wide), then the legend. It takes the whole screen and
//! scrolls (`j`/`k`, `PgDn`/`PgUp`), so it is readable at any size.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::super::keymap::{EDITOR, RUNNER, help_rows, rows};
use super::super::theme::{BLAMED, DUPLICATE, FAILED, INJECTED, SELECTED_ONLY, Theme};
use super::pane;

/// Width from which the two key tables stand side by side (below it one column, nothing cut).
const TWO_COLUMNS: u16 = 110;

fn key_lines(rows: &[(&str, &str)], key_w: usize) -> Vec<String> {
    rows.iter()
        .map(|(k, h)| format!(" {k:<key_w$} {h}"))
        .collect()
}

/// The help text for a screen of `area`, one entry per line, with the style of each.
fn lines(area: Rect, theme: &Theme) -> Vec<Line<'static>> {
    let browse = key_lines(&help_rows(), 13);
    let mut other = vec![" run a scenario (runner keys)".to_owned()];
    other.extend(key_lines(&rows(RUNNER), 8));
    other.push(" rule editor (i)".to_owned());
    other.extend(key_lines(&rows(EDITOR), 8));
    let headings = [other[0].clone(), " rule editor (i)".to_owned()];
    let mut out: Vec<Line<'static>> = Vec::new();
    if area.width >= TWO_COLUMNS {
        let half = (area.width.saturating_sub(2) / 2) as usize;
        for i in 0..browse.len().max(other.len()) {
            let left = browse.get(i).map_or("", String::as_str);
            let right = other.get(i).map_or("", String::as_str);
            let left = super::calls::clip(left, half);
            // Each column keeps to its half: a long entry is cut, never wrapped into the other.
            let right = super::calls::clip(
                right,
                (area.width.saturating_sub(2) as usize).saturating_sub(half),
            );
            out.push(Line::raw(format!("{left:<half$}{right}")));
        }
    } else {
        out.extend(browse.into_iter().map(Line::raw));
        for l in other {
            if headings.contains(&l) {
                out.push(Line::styled(l, theme.title));
            } else {
                out.push(Line::raw(l));
            }
        }
    }
    out.push(Line::raw(""));
    out.push(Line::styled(
        format!(
            " {FAILED} failed  {INJECTED} fault injected  {SELECTED_ONLY} selected only  \
             {DUPLICATE} duplicate effect  {BLAMED} named by the selected verdict"
        ),
        theme.dim,
    ));
    out.push(Line::styled(
        " mouse: click a row · wheel scrolls the pane under it",
        theme.dim,
    ));
    out.push(Line::styled(
        " j/k or PgDn/PgUp scroll this help · Esc or ? closes it",
        theme.dim,
    ));
    super::text::wrap(out, area.width.saturating_sub(2) as usize)
}

/// How many lines the help has on a screen of `area`.
pub fn line_count(area: Rect) -> usize {
    lines(area, &Theme::new(true)).len()
}

/// Draws the help over the whole of `area`, scrolled down by `scroll` lines.
pub fn render(scroll: u16, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let text = lines(area, theme);
    let total = text.len();
    Clear.render(area, buf);
    let inner_h = area.height.saturating_sub(2) as usize;
    let title = if total > inner_h {
        let first = scroll as usize + 1;
        let last = (scroll as usize + inner_h).min(total);
        format!(" Keys · lines {first}–{last} of {total} ")
    } else {
        " Keys ".to_owned()
    };
    Paragraph::new(text)
        .scroll((scroll, 0))
        .block(pane(title, true, theme))
        .render(area, buf);
}
