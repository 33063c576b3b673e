//! Executor batches as parallel lanes on the virtual clock: one row per function call, showing
//! the wait for a slot (`░`), each attempt (`━`, ending `▪` ok or `✗` failed), retry pauses
//! (`·`), the deadline (`┆`), the moment the model got its answer (`▌`) and work that went on
//! after a timeout (`╌`, its late commit included) — with the envelope kind, virtual ms,
//! attempts and the approval decision. The selected call's lane is marked `▶`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::Widget;

use super::super::app::{App, Focus};
use super::super::theme::Theme;
use super::calls::clip;
use super::{fit, pane};

/// Most lanes shown.
pub const MAX_ROWS: usize = 10;

/// Rows needed: one per call of every batch, and the time axis under them.
pub fn rows(app: &App) -> usize {
    let lanes: usize = app.tab().batches.iter().map(|b| b.lanes.len()).sum();
    if lanes == 0 { 0 } else { lanes + 1 }
}

/// A step between the axis's ticks, in ms: the smallest of 1, 2, 5 × 10^k that keeps at
/// most `ticks` of them over `span_ms`.
fn tick_step(span_ms: u64, ticks: u64) -> u64 {
    let ticks = ticks.max(1);
    let mut base = 1u64;
    loop {
        for m in [1, 2, 5] {
            let step = base.saturating_mul(m);
            if span_ms / step <= ticks {
                return step;
            }
        }
        base = base.saturating_mul(10);
    }
}

/// A tick's label: seconds from the first call (`0s`, `0.5s`, `12s`).
fn tick_label(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else if ms.is_multiple_of(100) {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        let s = format!("{:.3}", ms as f64 / 1000.0);
        format!("{}s", s.trim_end_matches('0'))
    }
}

/// Draws the lanes.
pub fn render(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let batches = &app.tab().batches;
    let start = batches.first().map_or(0, |b| b.started_ms);
    // The axis reaches every deadline too, so each one is drawn.
    let deadlines = batches
        .iter()
        .flat_map(|b| b.lanes.iter())
        .filter_map(|l| l.deadline_ms);
    let end = batches
        .iter()
        .map(|b| b.settled_ms.max(b.answered_ms))
        .chain(deadlines)
        .max()
        .unwrap_or(1)
        .max(start + 1);
    // The lane of the selected call (its attempt served it).
    let selected = app.selected().map(|c| c.id);
    let answered: Vec<String> = batches
        .iter()
        .map(|b| {
            format!(
                "{} answered in {:.1}s",
                crate::printable::count(b.lanes.len(), "call", "calls"),
                (b.answered_ms - b.started_ms) as f64 / 1000.0
            )
        })
        .collect();
    // The window on the time axis: the whole run, or a part of it zoomed (`+`, `-`, J/K).
    let zoom = u64::from(app.lanes_zoom.max(1));
    let width = (end - start).div_ceil(zoom).max(1);
    let at = (u64::from(app.lanes_pan) * width / 4).min((end - start).saturating_sub(width));
    let (start, origin, end) = (start + at, start, start + at + width);
    let window = if zoom > 1 {
        format!(
            " · ×{zoom} {}–{} (+/- zoom, J/K pan)",
            tick_label(start - origin),
            tick_label(end - origin)
        )
    } else {
        String::new()
    };
    let title = format!(
        " Batch lanes · {}{window} · ┆ deadline ▌ answered ╌ late work ",
        answered.join(" · ")
    );
    let block = pane(fit(title, area), app.focus == Focus::Lanes, theme);
    let body = block.inner(area);
    block.render(area, buf);
    if body.width < 30 || body.height == 0 {
        return;
    }
    // Room for the longest `▶call_id tool` label, within a third of the width.
    let label_w = batches
        .iter()
        .flat_map(|b| b.lanes.iter())
        .map(|l| l.call_id.chars().count() + l.name.chars().count() + 2)
        .max()
        .unwrap_or(12)
        .clamp(12, (body.width / 3).max(12) as usize) as u16;
    let info_w: u16 = 30;
    let track_x = body.x + label_w + 1;
    let track_w = body.width.saturating_sub(label_w + info_w + 2).max(4);
    let span = (end - start) as f64;
    let col = |ms: u64| {
        track_x
            + ((((ms.saturating_sub(start)) as f64 / span) * f64::from(track_w - 1)).round() as u16)
                .min(track_w - 1)
    };
    // What lies outside a zoomed window is not drawn (never piled at its edges).
    let inside = |ms: u64| (start..=end).contains(&ms);
    let seg =
        |a: u64, b: u64| (b >= start && a <= end).then(|| (col(a.max(start)), col(b.min(end))));
    let bottom = body.y + body.height;
    let lanes: usize = batches.iter().map(|b| b.lanes.len()).sum();
    // The time axis under the lanes (when there is room): its origin is the first call.
    if let Some(y) = body.y.checked_add(lanes as u16).filter(|y| *y < bottom) {
        let step = tick_step(end - start, u64::from(track_w / 8));
        let mut free_from = track_x;
        // Ticks at round times from the first call, the first one inside the window.
        let mut t = (start - origin).div_ceil(step) * step;
        while origin + t <= end {
            let x = col(origin + t);
            let label = tick_label(t);
            if x >= free_from && x + label.chars().count() as u16 <= track_x + track_w {
                buf.set_string(x, y, "╵", theme.dim);
                buf.set_string(x + 1, y, &label, theme.dim);
                free_from = x + label.chars().count() as u16 + 2;
            }
            t += step;
        }
        buf.set_string(
            body.x,
            y,
            clip("time from 1st call", label_w as usize),
            theme.dim,
        );
    }
    for (y, lane) in (body.y..bottom).zip(batches.iter().flat_map(|b| b.lanes.iter())) {
        let failed = lane.kind != "ok";
        let kind_style = if failed { theme.failed } else { theme.ok };
        let is_selected = lane
            .attempts
            .iter()
            .any(|a| a.report_call.is_some() && a.report_call == selected);
        let label = format!(
            "{}{} {}",
            if is_selected { "▶" } else { " " },
            lane.call_id,
            lane.name
        );
        buf.set_string(
            body.x,
            y,
            format!(
                "{:<w$}",
                clip(&label, label_w as usize),
                w = label_w as usize
            ),
            if is_selected {
                theme.selected
            } else {
                theme.text
            },
        );
        buf.set_string(track_x, y, " ".repeat(track_w as usize), Style::new());
        let mut last_end: Option<u64> = None;
        for a in &lane.attempts {
            if let Some((x0, x1)) = last_end.and_then(|prev| seg(prev, a.started_ms)) {
                for x in (x0 + 1)..x1 {
                    buf.set_string(x, y, "·", theme.dim);
                }
            }
            if let Some((x0, x1)) = seg(a.queued_ms, a.started_ms) {
                for x in x0..x1 {
                    buf.set_string(x, y, "░", theme.dim);
                }
            }
            let ok = a.outcome == "ok";
            let Some((x0, x1)) = seg(a.started_ms, a.ended_ms) else {
                last_end = Some(a.ended_ms);
                continue;
            };
            for x in x0..=x1 {
                let late = a.late && x > col(lane.answered_ms);
                let (sym, style) = if late {
                    ("╌", theme.dim)
                } else if a.fault.is_some() {
                    ("━", theme.fault)
                } else {
                    ("━", if ok { theme.ok } else { theme.failed })
                };
                buf.set_string(x, y, sym, style);
            }
            if inside(a.ended_ms) {
                buf.set_string(
                    col(a.ended_ms),
                    y,
                    if ok { "▪" } else { "✗" },
                    if ok { theme.ok } else { theme.failed },
                );
            }
            last_end = Some(a.ended_ms);
        }
        if inside(lane.answered_ms) {
            buf.set_string(col(lane.answered_ms), y, "▌", kind_style);
        }
        // Drawn last: a call answered at its deadline (a timeout) shows the deadline.
        if let Some(d) = lane.deadline_ms.filter(|d| inside(*d)) {
            buf.set_string(col(d), y, "┆", theme.title);
        }
        let approval = match &lane.approval {
            Some((_, true)) => " · approved",
            Some((_, false)) if lane.kind != "denied" => " · denied",
            _ => "",
        };
        let info = format!(
            "{} {}ms ×{}{approval}",
            lane.kind,
            lane.answered_ms.saturating_sub(lane.submitted_ms),
            lane.attempts.len()
        );
        buf.set_string(
            track_x + track_w + 1,
            y,
            clip(&info, info_w as usize),
            kind_style,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_few() {
        assert_eq!(tick_step(2000, 8), 500);
        assert_eq!(tick_step(4000, 4), 1000);
        assert_eq!(tick_step(30, 10), 5);
        assert_eq!(tick_step(0, 0), 1);
        assert_eq!(tick_label(0), "0s");
        assert_eq!(tick_label(1500), "1.5s");
        assert_eq!(tick_label(20), "0.02s");
        assert_eq!(tick_label(12000), "12s");
    }
}
