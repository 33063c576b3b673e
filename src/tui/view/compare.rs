//! The compare view: the previous and the new run side by side, aligned by tool and per-tool
//! ordinal (`+` added, `-` removed, `~` changed), then fault, effect and coverage deltas and
//! every verdict that flipped.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::super::app::App;
use super::super::theme::{FAIL, PASS, Theme};
use super::calls::{clip, fault_text};
use super::{fit, pane};
use crate::document::compare::CallSide;
use crate::lab::compare::{CallChange, pass_word};
use crate::printable::shown;
use crate::report::{Call, Coverage, Report};

fn call_text(c: &Call) -> String {
    let fault = fault_text(c);
    format!(
        "{:>3} {}#{} {}{}",
        c.id,
        shown(&c.tool),
        c.ordinal,
        c.status.as_str(),
        if fault.is_empty() {
            String::new()
        } else {
            format!(" ◆ {fault}")
        }
    )
}

fn cov(c: Option<Coverage>) -> String {
    c.map_or_else(
        || "—".to_owned(),
        |c| format!("{}/{}/{}", c.eligible, c.selected, c.triggered),
    )
}

fn verdict_mark(p: Option<bool>) -> &'static str {
    match p {
        Some(true) => PASS,
        Some(false) => FAIL,
        None => "—",
    }
}

/// Draws the comparison into `area`.
pub fn render(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    Clear.render(area, buf);
    let (Some(before), Some(diff)) = (app.previous_tab(), app.diff()) else {
        Paragraph::new("nothing to compare yet: edit or rerun (R) first")
            .block(pane(" Compare ".into(), true, theme))
            .render(area, buf);
        return;
    };
    let after = app.tab();
    // Two runs of a campaign are named by run and seed; a re-run of one run is previous/new.
    let (name, from, to) = if before.name() == after.name() {
        (
            format!("{} · ", after.name()),
            "previous".to_owned(),
            "new".to_owned(),
        )
    } else {
        let named = |r: &crate::document::Run| {
            format!(
                "{} (seed {})",
                r.name(),
                r.timeline.report().seed.to_decimal()
            )
        };
        (String::new(), named(before), named(after))
    };
    // The verdicts first: the names can be long enough to be cut.
    let title = format!(
        " Compare · {} → {} · {name}{from} {} → {to} {} ",
        pass_word(diff.passed.0),
        pass_word(diff.passed.1),
        &before.digest[..8.min(before.digest.len())],
        &after.digest[..8.min(after.digest.len())],
    );
    let block = pane(fit(title, area), true, theme);
    let inner = block.inner(area);
    block.render(area, buf);
    let mut summary: Vec<Line> = vec![Line::styled(
        format!(
            "calls +{} -{} ~{} · faults {}→{} · effects {}→{} · duplicates {}→{} · refused {}→{}",
            diff.counts().0,
            diff.counts().1,
            diff.counts().2,
            diff.faults.0,
            diff.faults.1,
            diff.effects.0,
            diff.effects.1,
            diff.duplicates.0,
            diff.duplicates.1,
            diff.refused.0,
            diff.refused.1
        ),
        theme.title,
    )];
    for c in &diff.coverage {
        summary.push(Line::styled(
            format!(
                "coverage {}: {} → {} (eligible/selected/triggered)",
                shown(&c.rule),
                cov(c.before),
                cov(c.after)
            ),
            theme.fault,
        ));
    }
    for f in &diff.flipped {
        let style = if f.after == Some(true) {
            theme.ok
        } else {
            theme.failed
        };
        summary.push(Line::styled(
            format!(
                "{}→{} {}: {}",
                verdict_mark(f.before),
                verdict_mark(f.after),
                f.name,
                f.detail
            ),
            style,
        ));
    }
    if diff.flipped.is_empty() {
        summary.push(Line::styled("no verdict flipped", theme.dim));
    }
    let lower = (summary.len() as u16).min(inner.height / 2);
    let [top, bottom] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(lower)]).areas(inner);
    let [left, right] = Layout::horizontal([Constraint::Ratio(1, 2); 2]).areas(top);
    let w = left.width.saturating_sub(3) as usize;
    let b = before.timeline.report();
    let a = after.timeline.report();
    let style_of = |r: &CallChange| match r {
        CallChange::Same(..) => theme.text,
        CallChange::Changed(..) => theme.fault,
        CallChange::Added(_) => theme.ok,
        CallChange::Removed(_) => theme.failed,
    };
    // Under each call, what it was called with, what its client received and what it
    // committed; the row of the selected call (j/k) is marked and kept in view.
    let detail = |run: &crate::document::Run, report: &Report, i: Option<usize>| {
        let s = i.and_then(|i| CallSide::of(report, run.mcp.as_deref(), i))?;
        let commits = match s.commits {
            1 => "1 commit".to_owned(),
            n => format!("{n} commits"),
        };
        Some(if run.mcp.is_some() {
            format!("{commits} · got {} · {}", s.got, s.arguments)
        } else {
            format!("{commits} · {}", s.arguments)
        })
    };
    let mut lhs = vec![Line::styled(clip(&from, w + 2), theme.dim)];
    let mut rhs = vec![Line::styled(clip(&to, w + 2), theme.dim)];
    let mut selected = None;
    for r in &diff.rows {
        let m = r.marker();
        let mut st: Style = style_of(r);
        if r.after().is_some() && r.after() == app.cursor {
            selected = Some(lhs.len());
            st = st.patch(theme.selected);
        }
        let side = |idx: Option<usize>, calls: &[Call]| {
            idx.and_then(|i| calls.get(i))
                .map(call_text)
                .unwrap_or_default()
        };
        lhs.push(Line::styled(
            format!("{m} {}", clip(&side(r.before(), &b.calls), w)),
            st,
        ));
        rhs.push(Line::styled(
            format!("{m} {}", clip(&side(r.after(), &a.calls), w)),
            st,
        ));
        let (l, rt) = (detail(before, b, r.before()), detail(after, a, r.after()));
        if l.is_some() || rt.is_some() {
            let line = |t: Option<String>| match t {
                Some(t) => {
                    Line::styled(format!("    {}", clip(&t, w.saturating_sub(2))), theme.dim)
                }
                None => Line::raw(""),
            };
            lhs.push(line(l));
            rhs.push(line(rt));
        }
        // What changed goes on lines of its own under the new call, whole (never cut at the
        // column's edge); the previous side keeps the rows aligned.
        if let CallChange::Changed(_, _, what) = r {
            let changed = format!("    changed: {}", what.join(", "));
            for line in super::text::wrap(vec![Line::styled(changed, theme.dim)], w) {
                lhs.push(Line::raw(""));
                rhs.push(line);
            }
        }
    }
    // The selected row stays in view: scrolled so it sits a third of the way down.
    let rows = usize::from(left.height);
    let offset = selected.filter(|&at| at >= rows).map_or(0, |at| {
        at.saturating_sub(rows / 3)
            .min(lhs.len().saturating_sub(rows))
    });
    let scroll = |lines: Vec<Line<'static>>| -> Vec<Line<'static>> {
        let mut out: Vec<Line<'static>> = lines.into_iter().skip(offset).collect();
        if let Some(first) = out.first_mut().filter(|_| offset > 0) {
            *first = Line::styled(format!("  ↑ {} line(s) above", offset + 1), theme.dim);
        }
        out
    };
    let (lhs, rhs) = (scroll(lhs), scroll(rhs));
    Paragraph::new(super::text::escaped(lhs)).render(left, buf);
    Paragraph::new(super::text::escaped(rhs)).render(right, buf);
    Paragraph::new(super::text::escaped(summary)).render(bottom, buf);
}
