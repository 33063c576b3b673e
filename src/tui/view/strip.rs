//! The virtual-time strip: one lane per tool, each call drawn from its start to its end,
//! faults marked, and the cursor's moment shown as a vertical bar across the lanes.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use super::super::app::{App, Focus};
use super::super::theme::Theme;
use super::{fit, pane, secs};
use crate::json::Text;
use crate::printable::shown;

/// Tool names in order of first call.
pub fn lanes(app: &App) -> &[Text] {
    app.timeline().tools()
}

/// Draws the strip.
pub fn render(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let t = app.timeline();
    let total = t.clock_at(t.len().checked_sub(1)).max(1e-9);
    let clock = if t.report().clock == "RealClock" {
        "Real time"
    } else {
        "Virtual time"
    };
    let title = format!(" {clock} lanes · 0s … {} ", secs(total));
    let block = pane(fit(title, area), app.focus == Focus::Lanes, theme);
    let body = block.inner(area);
    block.render(area, buf);
    let lanes = lanes(app);
    if body.width < 12 || body.height == 0 {
        return;
    }
    let label_w = lanes
        .iter()
        .map(|l| l.code_points().take(64).count())
        .max()
        .unwrap_or(4)
        .clamp(4, 16) as u16;
    let track_x = body.x + label_w + 1;
    let track_w = body.width.saturating_sub(label_w + 1).max(1);
    let col =
        |x: f64| track_x + (((x / total) * f64::from(track_w - 1)).round() as u16).min(track_w - 1);
    for (lane, tool) in lanes.iter().enumerate().take(body.height as usize) {
        let y = body.y + lane as u16;
        let name: String = shown(tool).chars().take(label_w as usize).collect();
        buf.set_string(
            body.x,
            y,
            format!("{name:<w$}", w = label_w as usize),
            theme.dim,
        );
        buf.set_string(track_x, y, "·".repeat(track_w as usize), theme.border);
        let spans: Vec<(usize, u16, u16)> = t
            .report()
            .calls
            .iter()
            .enumerate()
            .filter(|(_, c)| &c.tool == tool)
            .map(|(i, c)| (i, col(c.started), col(c.started + c.elapsed.max(0.0))))
            .collect();
        let style_of = |i: usize| {
            let c = &t.report().calls[i];
            let s = if c.failed() {
                theme.failed
            } else if c.fault.is_some() {
                theme.fault
            } else {
                theme.ok
            };
            if Some(i) == app.cursor {
                s.patch(theme.selected)
            } else {
                s
            }
        };
        // Bodies first, then end marks, so back-to-back calls keep their marks.
        for &(i, a, b) in &spans {
            for x in a..=b {
                buf.set_string(x, y, "━", style_of(i));
            }
        }
        for &(i, _, b) in &spans {
            let c = &t.report().calls[i];
            let end_mark = if c.failed() {
                "✗"
            } else if c.fault.is_some() {
                "◆"
            } else {
                "▪"
            };
            buf.set_string(b, y, end_mark, style_of(i));
        }
    }
    if let Some(c) = app.selected() {
        let x = col(c.started);
        for lane in 0..lanes.len().min(body.height as usize) {
            let y = body.y + lane as u16;
            if buf[(x, y)].symbol() == "·" {
                buf.set_string(x, y, "│", theme.title);
            }
        }
    }
}
