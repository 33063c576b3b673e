//! The timeline: one row per invocation — id, virtual start, tool (indented under its parent),
//! per-tool ordinal, key, status, fault and phase, effect count. Failed calls carry `✗`,
//! injected faults `◆` and duplicate commits `⧉`, so the meaning survives `NO_COLOR`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::super::app::{App, Focus};
use super::super::theme::{DUPLICATE, FAILED, INJECTED, SELECTED_ONLY, Theme};
use super::pane;
use crate::printable::shown;
use crate::report::{Call, Status};
use crate::timeline::Timeline;

/// First visible row for the cursor: keep it in view, near the middle.
fn offset(pos: usize, height: usize, len: usize) -> usize {
    if len <= height {
        return 0;
    }
    pos.saturating_sub(height / 2).min(len - height)
}

fn inner(area: Rect) -> Rect {
    Rect::new(
        area.x + 1,
        area.y + 1,
        area.width.saturating_sub(2),
        area.height.saturating_sub(2),
    )
}

/// The call index on the clicked row.
pub fn row_at(app: &App, area: Rect, col: u16, row: u16) -> Option<usize> {
    let body = inner(area);
    if col < body.x || col >= body.x + body.width || row < body.y + 1 || row >= body.y + body.height
    {
        return None;
    }
    let visible = app.visible();
    let rows = body.height.saturating_sub(1) as usize;
    let pos = app
        .cursor
        .and_then(|c| visible.iter().position(|&v| v == c))
        .unwrap_or(0);
    visible
        .get(offset(pos, rows, visible.len()) + (row - body.y - 1) as usize)
        .copied()
}

fn status_text(c: &Call) -> &'static str {
    match c.status {
        Status::Ok => "ok",
        Status::Error => "error",
        Status::Cancelled => "cancelled",
        Status::Running => "running",
    }
}

/// Fault column text: `rule · phase`.
pub fn fault_text(c: &Call) -> String {
    match (&c.fault, c.kind) {
        (Some(f), Some(k)) => format!("{} · {}", shown(f), k.phase()),
        (Some(f), None) => shown(f),
        _ => String::new(),
    }
}

/// Column widths for one render, fitted to the run's longest values and the pane width.
struct Columns {
    tool: usize,
    key: usize,
    status: usize,
    fault: usize,
}

impl Columns {
    fn fit(t: &Timeline, width: usize) -> Columns {
        let calls = &t.report().calls;
        let longest = |f: &dyn Fn(usize) -> usize| (0..calls.len()).map(f).max().unwrap_or(0);
        let tool =
            longest(&|i| calls[i].tool.code_points().take(32).count() + 2 * t.depth(i).min(6))
                .clamp(4, 24);
        let key = longest(&|i| calls[i].key.code_points().take(32).count()).clamp(3, 10);
        let status = longest(&|i| status_text(&calls[i]).len()).max(6);
        // marks 2, id 5, start 8, ordinal 4, fx 3, and a space after tool, key, status, fault.
        let fixed = 2 + 5 + 8 + 4 + 3 + key + status + 4;
        let rest = width.saturating_sub(fixed);
        let tool = tool.min(rest.saturating_sub(6).max(4));
        Columns {
            tool,
            key,
            status,
            fault: rest.saturating_sub(tool).max(4),
        }
    }

    fn header(&self) -> String {
        let Columns {
            tool,
            key,
            status,
            fault,
        } = self;
        format!(
            "  {:>4} {:>7} {:<tool$} {:>3} {:<key$} {:<status$} {:<fault$} {:>3}",
            "id", "start", "tool", "#", "key", "status", "fault · phase", "fx"
        )
    }
}

fn row<'a>(t: &Timeline, i: usize, cols: &Columns, theme: &Theme, selected: bool) -> Line<'a> {
    let c = &t.report().calls[i];
    let fx = t.effects_of(i).len();
    let dup = t.commits_duplicate(i);
    let marks = format!(
        "{}{}",
        if c.failed() { FAILED } else { " " },
        match (&c.fault, c.injected) {
            (Some(_), true) => INJECTED,
            (Some(_), false) => SELECTED_ONLY,
            _ => " ",
        }
    );
    let indent = "  ".repeat(t.depth(i).min(6));
    let Columns {
        tool: tool_w,
        key: key_w,
        status: status_w,
        fault: fault_w,
    } = *cols;
    let tool = clip(&format!("{indent}{}", shown(&c.tool)), tool_w);
    let fx_text = match (fx, dup) {
        (0, _) => String::new(),
        (n, true) => format!("{n}{DUPLICATE}"),
        (n, false) => n.to_string(),
    };
    let base = if selected { theme.selected } else { theme.text };
    let status_style = if c.failed() { theme.failed } else { theme.text };
    let fault_style = if c.injected { theme.fault } else { theme.dim };
    let fx_style = if dup { theme.duplicate } else { theme.text };
    let pick = |s: ratatui::style::Style| if selected { s.patch(theme.selected) } else { s };
    Line::from(vec![
        Span::styled(
            marks,
            pick(if c.failed() {
                theme.failed
            } else {
                theme.fault
            }),
        ),
        Span::styled(format!("{:>4} ", c.id), base),
        Span::styled(format!("{:>7} ", format!("{:.3}", c.started)), base),
        Span::styled(format!("{tool:<tool_w$} "), base),
        Span::styled(format!("{:>3} ", c.ordinal), base),
        Span::styled(format!("{:<key_w$} ", clip(&shown(&c.key), key_w)), base),
        Span::styled(
            format!("{:<status_w$} ", status_text(c)),
            pick(status_style),
        ),
        Span::styled(
            format!("{:<fault_w$} ", clip(&fault_text(c), fault_w)),
            pick(fault_style),
        ),
        Span::styled(format!("{fx_text:>3}"), pick(fx_style)),
    ])
}

/// Cuts text to `width` characters, marking the cut with `…`.
pub fn clip(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Draws the timeline.
pub fn render(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let t = app.timeline();
    let visible = app.visible();
    let title = match &app.filter {
        Some(f) => format!(
            " Timeline · {} of {} calls (filter: {f}) ",
            visible.len(),
            t.len()
        ),
        None => format!(" Timeline · {} calls ", t.len()),
    };
    let block = pane(title, app.focus == Focus::Timeline, theme);
    let body = block.inner(area);
    block.render(area, buf);
    if body.height == 0 || body.width == 0 {
        return;
    }
    let cols = Columns::fit(t, body.width as usize);
    let mut lines = vec![Line::styled(
        clip(&cols.header(), body.width as usize),
        theme.dim,
    )];
    if visible.is_empty() {
        lines.push(Line::styled(
            if t.is_empty() {
                "  (no calls recorded)"
            } else {
                "  (no call matches the filter)"
            },
            theme.dim,
        ));
    }
    let rows = body.height.saturating_sub(1) as usize;
    let pos = app
        .cursor
        .and_then(|c| visible.iter().position(|&v| v == c))
        .unwrap_or(0);
    let start = offset(pos, rows, visible.len());
    for &i in visible.iter().skip(start).take(rows) {
        lines.push(row(t, i, &cols, theme, Some(i) == app.cursor));
    }
    Paragraph::new(lines).render(body, buf);
}
