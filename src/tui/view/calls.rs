//! The timeline: one row per invocation — id, virtual start, tool (indented under its parent),
//! per-tool ordinal, key, status, fault and phase, effect count. Failed calls carry `✗`,
//! injected faults `◆`, duplicate commits `≡` and calls a verdict names `»` (three marks),
//! so the meaning survives `NO_COLOR`. An `ask` record's rows lead with their round
//! (`rnd`), said on the first row of each round.

use ratatui::buffer::Buffer;
use ratatui::layout::{Margin, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Paragraph, Scrollbar, ScrollbarOrientation, ScrollbarState, StatefulWidget, Widget,
};

use super::super::app::{App, Focus};
use super::super::find::lane_id;
use super::super::theme::{BLAMED, DUPLICATE, FAILED, INJECTED, SELECTED_ONLY, Theme};
use super::{fit, pane};
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

/// Key column text: the invocation key, or for an executor run the batch's call id
/// (`b1.1.call_A#1` → `call_A`), the name its lane carries.
fn key_text(c: &Call, lanes: bool) -> String {
    let key = shown(&c.key);
    if !lanes {
        return key;
    }
    match lane_id(&key) {
        Some(id) => id.to_owned(),
        None => key,
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

/// Column widths for one render, fitted to the run's longest values and the pane width. When
/// the pane is narrow the key, the ordinal and then the start time make room for the tool and
/// the fault; the marks, id, status and effect count always stay.
struct Columns {
    key_title: &'static str,
    /// The round column's width, for an ask record.
    round: Option<usize>,
    /// Digits of the largest id, and one more: a mark never touches an id.
    id: usize,
    /// Digits of the largest ordinal (at least 3).
    ord: usize,
    tool: usize,
    key: Option<usize>,
    ordinal: bool,
    start: bool,
    status: usize,
    fault: usize,
}

/// A phase name short enough for a narrow column.
fn short_phase(phase: &str) -> &str {
    match phase {
        "before execution" => "before",
        "after success" => "after ok",
        other => other,
    }
}

impl Columns {
    fn optional(&self) -> usize {
        self.key.map_or(0, |k| k + 1)
            + usize::from(self.ordinal) * (self.ord.max(1) + 1)
            + usize::from(self.start) * 8
    }

    fn fit(t: &Timeline, width: usize, lanes: bool, rounds: Option<usize>) -> Columns {
        let calls = &t.report().calls;
        let longest = |f: &dyn Fn(usize) -> usize| (0..calls.len()).map(f).max().unwrap_or(0);
        let want_tool =
            longest(&|i| calls[i].tool.code_points().take(32).count() + 2 * t.depth(i).min(6))
                .clamp(4, 24);
        let key = longest(&|i| key_text(&calls[i], lanes).chars().take(24).count()).clamp(4, 24);
        let status = longest(&|i| status_text(&calls[i]).len()).max(6);
        let want_fault = longest(&|i| fault_text(&calls[i]).chars().count()).clamp(8, 40);
        let digits = |n: u64| n.max(1).ilog10() as usize + 1;
        let id = (digits(calls.last().map_or(1, |c| c.id)) + 1).max(4);
        let ord = digits(calls.iter().map(|c| c.ordinal).max().unwrap_or(1)).max(3);
        // Always: marks 3, the id and a space, status and a space, fx 3, and a space after
        // tool and fault.
        let round = rounds.map(|n| digits(n as u64).max(3));
        let base = 3 + id + 1 + status + 1 + 3 + 2 + round.map_or(0, |r| r + 1);
        let mut c = Columns {
            key_title: if lanes { "call" } else { "key" },
            round,
            id,
            ord,
            tool: want_tool,
            key: Some(key),
            ordinal: true,
            start: true,
            status,
            fault: want_fault,
        };
        // Drop optional columns until the tool and the fault fit whole; the last one only
        // when even a useful width (16 each) does not fit. An executor run keeps its call ids
        // longest (they name the lanes); other runs keep the start time.
        #[derive(Clone, Copy)]
        enum Opt {
            Key,
            Ordinal,
            Start,
        }
        let order = if lanes {
            [Opt::Ordinal, Opt::Start, Opt::Key]
        } else {
            [Opt::Key, Opt::Ordinal, Opt::Start]
        };
        let whole = want_tool + want_fault;
        let useful = want_tool.min(16) + want_fault.min(16);
        // The phase alone says what a fault did (Details and the lanes name the rule): every
        // column stays when the tool and the phases fit.
        let phases = longest(&|i| calls[i].kind.map_or(0, |k| k.phase().chars().count()));
        // (For executor runs, whose start times and call ids say how the batch went.)
        let enough = if lanes {
            want_tool + phases.max(8)
        } else {
            usize::MAX / 2
        };
        for (n, opt) in order.into_iter().enumerate() {
            let fits = |c: &Columns, need: usize| base + c.optional() + need <= width;
            if fits(&c, whole) || fits(&c, enough) || (n == order.len() - 1 && fits(&c, useful)) {
                break;
            }
            match opt {
                Opt::Key => c.key = None,
                Opt::Ordinal => c.ordinal = false,
                Opt::Start => c.start = false,
            }
        }
        let rest = width.saturating_sub(base + c.optional());
        // Tool names first (a name cut short cannot be read); the fault column falls back to
        // the phase alone, and Details names the rule.
        c.tool = want_tool.min(rest.saturating_sub(8)).max(4);
        c.fault = rest.saturating_sub(c.tool).max(4);
        c
    }

    fn header(&self) -> String {
        let mut h = match self.round {
            Some(w) => format!("{:>w$}    {:>i$} ", "rnd", "id", i = self.id),
            None => format!("   {:>w$} ", "id", w = self.id),
        };
        if self.start {
            h.push_str(&format!("{:>7} ", "start"));
        }
        h.push_str(&format!("{:<w$} ", "tool", w = self.tool));
        if self.ordinal {
            h.push_str(&format!("{:>w$} ", "#", w = self.ord));
        }
        if let Some(k) = self.key {
            h.push_str(&format!("{:<k$} ", self.key_title));
        }
        h.push_str(&format!(
            "{:<s$} {:<f$} {:>3}",
            "status",
            if self.fault >= 13 {
                "fault · phase"
            } else {
                "fault"
            },
            "fx",
            s = self.status,
            f = self.fault
        ));
        h
    }
}

/// How a row stands out: selected, matching the search, named by a verdict's reasons; and
/// the round it starts, when it is the first row of one.
#[derive(Clone, Copy)]
struct RowMarks {
    selected: bool,
    matched: bool,
    blamed: bool,
    round: Option<usize>,
}

/// The executor batch in a call's key (`b3.1.call_A#1` → 3).
fn batch_of(key: &str) -> Option<usize> {
    key.strip_prefix('b')?.split_once('.')?.0.parse().ok()
}

/// The round of an ask record that call `i` belongs to.
fn round_of(app: &App, i: usize) -> Option<usize> {
    let call = app.timeline().report().calls.get(i)?;
    let ask = app.tab().ask.as_deref()?;
    Some(ask.round_of_batch(batch_of(&call.key.to_lossy())?)?.number)
}

fn row<'a>(t: &Timeline, i: usize, cols: &Columns, theme: &Theme, m: RowMarks) -> Line<'a> {
    let RowMarks {
        selected,
        matched,
        blamed,
        round,
    } = m;
    let c = &t.report().calls[i];
    let fx = t.effects_of(i).len();
    let dup = t.commits_duplicate(i);
    let marks = format!(
        "{}{}{}",
        if c.failed() { FAILED } else { " " },
        match (&c.fault, c.injected) {
            (Some(_), true) => INJECTED,
            (Some(_), false) => SELECTED_ONLY,
            _ => " ",
        },
        if blamed { BLAMED } else { " " }
    );
    let indent = "  ".repeat(t.depth(i).min(6));
    let tool = clip(&format!("{indent}{}", shown(&c.tool)), cols.tool);
    let fx_text = match (fx, dup) {
        (0, _) => String::new(),
        (n, true) => format!("{n}{DUPLICATE}"),
        (n, false) => n.to_string(),
    };
    let full_fault = fault_text(c);
    let fault = if full_fault.chars().count() <= cols.fault {
        full_fault
    } else {
        // The whole rule beside the short phase; else the rule cut to at least 6 characters
        // beside the whole phase; else the whole phase alone; else the rule cut beside the
        // short phase; else the short phase.
        match (&c.fault, c.kind) {
            (Some(f), Some(k)) => {
                let whole = k.phase();
                let short = short_phase(whole);
                let n = |s: &str| s.chars().count();
                let rule = shown(f);
                if cols.fault >= n(&rule) + 3 + n(short) {
                    format!("{rule} · {short}")
                } else if cols.fault >= n(whole) + 3 + 6 {
                    format!("{} · {whole}", clip(&shown(f), cols.fault - n(whole) - 3))
                } else if cols.fault >= n(whole) {
                    whole.to_owned()
                } else if cols.fault >= n(short) + 3 + 4 {
                    format!("{} · {short}", clip(&shown(f), cols.fault - n(short) - 3))
                } else {
                    short.to_owned()
                }
            }
            _ => full_fault,
        }
    };
    let base = if selected { theme.selected } else { theme.text };
    let status_style = if c.failed() { theme.failed } else { theme.text };
    let fault_style = if c.injected { theme.fault } else { theme.dim };
    let fx_style = if dup { theme.duplicate } else { theme.text };
    let pick = |s: ratatui::style::Style| if selected { s.patch(theme.selected) } else { s };
    let id_style = match (matched, blamed) {
        (true, _) => pick(theme.matched),
        (false, true) => pick(theme.failed),
        (false, false) => base,
    };
    let id = format!("{:>w$} ", c.id, w = cols.id);
    let mut spans = Vec::new();
    if let Some(w) = cols.round {
        let text = round.map_or_else(String::new, |n| n.to_string());
        spans.push(Span::styled(format!("{text:>w$} "), pick(theme.title)));
    }
    spans.extend([
        Span::styled(
            marks,
            pick(if c.failed() {
                theme.failed
            } else {
                theme.fault
            }),
        ),
        Span::styled(id, id_style),
    ]);
    if cols.start {
        spans.push(Span::styled(
            format!("{:>7} ", format!("{:.3}", c.started)),
            base,
        ));
    }
    spans.push(Span::styled(format!("{tool:<w$} ", w = cols.tool), base));
    if cols.ordinal {
        spans.push(Span::styled(
            format!("{:>w$} ", c.ordinal, w = cols.ord),
            base,
        ));
    }
    if let Some(k) = cols.key {
        spans.push(Span::styled(
            format!("{:<k$} ", clip(&key_text(c, cols.key_title == "call"), k)),
            base,
        ));
    }
    spans.extend([
        Span::styled(
            format!("{:<w$} ", status_text(c), w = cols.status),
            pick(status_style),
        ),
        Span::styled(
            format!("{:<w$} ", clip(&fault, cols.fault), w = cols.fault),
            pick(fault_style),
        ),
        Span::styled(format!("{fx_text:>3}"), pick(fx_style)),
    ]);
    Line::from(spans)
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

/// Draws the timeline: a position indicator in the title and a scrollbar when the run is
/// longer than the pane.
pub fn render(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let t = app.timeline();
    let visible = app.visible();
    let pos = app
        .cursor
        .and_then(|c| visible.iter().position(|&v| v == c))
        .unwrap_or(0);
    let at = app
        .cursor
        .map_or_else(|| "-".to_owned(), |c| format!("#{}", c + 1));
    let title = match &app.filter {
        Some(f) => format!(
            " Timeline · {at} · {} of {} calls (filter: {}) ",
            visible.len(),
            t.len(),
            shown(&crate::json::Text::from(f.as_str()))
        ),
        None if t.is_empty() => " Timeline · no calls ".to_owned(),
        None => format!(" Timeline · {at}/{} ", t.len()),
    };
    let block = pane(fit(title, area), app.focus == Focus::Timeline, theme);
    let body = block.inner(area);
    block.render(area, buf);
    if body.height == 0 || body.width == 0 {
        return;
    }
    let rounds = app.tab().ask.as_ref().map(|a| a.rounds.len());
    let cols = Columns::fit(
        t,
        body.width as usize,
        !app.tab().batches.is_empty(),
        rounds,
    );
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
    // Calls that never ran (denied, unknown tool, bad arguments) have no row: a line under
    // the rows names them when there is room.
    let notice = super::details::not_run_notice(app);
    let room = (body.height as usize).saturating_sub(1);
    let rows = if !notice.is_empty() && visible.len() < room {
        room - 1
    } else {
        room
    };
    let start = offset(pos, rows, visible.len());
    let term = app.search.as_deref().map(str::to_lowercase);
    // A round is said on its first row shown (and on the top row, whichever it is).
    let mut last_round = None;
    for &i in visible.iter().skip(start).take(rows) {
        let round = round_of(app, i);
        let starts = round.filter(|_| round != last_round);
        last_round = round;
        let matched = term.as_deref().is_some_and(|s| app.call_matches(i, s));
        let marks = RowMarks {
            selected: Some(i) == app.cursor,
            matched,
            blamed: app.named.names(i),
            round: starts,
        };
        lines.push(row(t, i, &cols, theme, marks));
    }
    if rows < room {
        lines.push(Line::styled(
            clip(&format!("  {notice}"), body.width as usize),
            theme.dim,
        ));
    }
    Paragraph::new(super::text::escaped(lines)).render(body, buf);
    if visible.len() > rows {
        let mut state = ScrollbarState::new(visible.len().saturating_sub(rows)).position(start);
        Scrollbar::new(ScrollbarOrientation::VerticalRight)
            .begin_symbol(None)
            .end_symbol(None)
            .render(area.inner(Margin::new(0, 1)), buf, &mut state);
    }
}
