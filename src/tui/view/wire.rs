//! Draws the wire view over the main area: the messages of the session, one a line (time,
//! direction, size, what it is, what became of it — a message the proxy made is in the fault
//! colour, one never delivered in the failure colour), and the selected message below it,
//! pretty-printed; every line escaped, search matches marked.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::super::app::App;
use super::super::theme::Theme;
use super::super::wire::{arrow, asked, fate_word, label, text};
use super::calls::clip;
use super::{fit, pane};
use crate::mcp::wirelog::read::{Fate, Wire};

/// The list's lines for a pane `w` columns wide and `h` rows high, from `first`.
fn list(
    app: &App,
    wire: &Wire,
    first: usize,
    w: usize,
    h: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let asked = asked(wire);
    let term = app.wire_cursor.search.as_deref().unwrap_or("");
    wire.entries
        .iter()
        .enumerate()
        .skip(first)
        .take(h)
        .map(|(i, e)| {
            let mark = match e.fate {
                Fate::Relayed => "=",
                Fate::Made => "+",
                Fate::Held => "×",
                Fate::Unknown => " ",
            };
            let size = if e.exchange.is_some() {
                "HTTP".to_owned()
            } else {
                bytes(e.bytes)
            };
            let head = format!(
                "{:>5} {:>10.3}ms {} {:>8} {mark} ",
                i + 1,
                e.ms,
                arrow(e.dir),
                size,
            );
            let what = label(e, &asked);
            let fate = match e.fate {
                Fate::Made | Fate::Held => format!("  ({})", fate_word(e.fate)),
                _ => String::new(),
            };
            let room = w.saturating_sub(head.chars().count());
            let body = clip(&format!("{what}{fate}"), room);
            let style = if i == app.wire_cursor.row {
                theme.selected
            } else {
                match e.fate {
                    Fate::Held => theme.failed,
                    Fate::Made => theme.fault,
                    _ => theme.text,
                }
            };
            let line = Line::from(vec![Span::raw(head), Span::raw(body)]).style(style);
            super::text::highlight(line, term, theme.matched)
        })
        .collect()
}

/// A size as the list shows it.
fn bytes(n: u64) -> String {
    if n < 10_000 {
        format!("{n} B")
    } else {
        format!("{} KB", n / 1024)
    }
}

/// Draws the wire view into `area`.
pub fn render(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    Clear.render(area, buf);
    let Some(wire) = app.wire() else {
        return;
    };
    let [top, bottom] =
        Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
    let n = wire.entries.len();
    let row = app.wire_cursor.row.min(n.saturating_sub(1));
    let inner_h = top.height.saturating_sub(2) as usize;
    let inner_w = top.width.saturating_sub(2) as usize;
    // The selection stays in view, a third of the way down when it can.
    let first = row
        .saturating_sub(inner_h / 3)
        .min(n.saturating_sub(inner_h));
    let exchanges = wire.entries.iter().filter(|e| e.exchange.is_some()).count();
    let mut title = format!(
        " Wire · {}{} · {} relayed unchanged, {} made by the proxy, {} not delivered ",
        crate::printable::count(n - exchanges, "message", "messages"),
        if exchanges > 0 {
            format!(
                ", {}",
                crate::printable::count(exchanges, "HTTP exchange", "HTTP exchanges")
            )
        } else {
            String::new()
        },
        wire.entries
            .iter()
            .filter(|e| e.fate == Fate::Relayed)
            .count(),
        wire.entries.iter().filter(|e| e.fate == Fate::Made).count(),
        wire.entries.iter().filter(|e| e.fate == Fate::Held).count(),
    );
    if wire.skipped > 0 {
        title.push_str(&format!("· {} unreadable line(s) skipped ", wire.skipped));
    }
    if wire.gaps > 0 {
        title.push_str(&format!("· {} left out (the log fell behind) ", wire.gaps));
    }
    if wire.stopped.is_some() {
        title.push_str("· the log stopped at its bound ");
    }
    Paragraph::new(super::text::escaped(list(
        app, wire, first, inner_w, inner_h, theme,
    )))
    .block(pane(fit(title, top), true, theme))
    .render(top, buf);

    let Some(e) = wire.entries.get(row) else {
        return;
    };
    let term = app.wire_cursor.search.as_deref().unwrap_or("");
    let mut lines: Vec<Line<'static>> = text(e)
        .lines()
        .enumerate()
        .map(|(k, l)| {
            let style = if k == 0 { theme.dim } else { theme.text };
            super::text::highlight(Line::styled(l.to_owned(), style), term, theme.matched)
        })
        .collect();
    if let Some(why) = &wire.stopped {
        lines.push(Line::raw(""));
        lines.push(Line::styled(why.clone(), theme.dim));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "j/k message · / search · n/N next/previous match · y copy · J/K scroll · \
         = relayed, + made by the proxy, × not delivered · Esc close",
        theme.dim,
    ));
    let w = bottom.width.saturating_sub(2) as usize;
    let title = format!(" Message {} of {n} ", row + 1);
    Paragraph::new(super::text::wrap(lines, w))
        .block(pane(fit(title, bottom), false, theme))
        .scroll((app.wire_cursor.scroll, 0))
        .render(bottom, buf);
}
