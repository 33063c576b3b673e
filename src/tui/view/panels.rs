//! The three bottom panels, all **as of the cursor's step**: per-rule coverage (rules that
//! never fired called out), the effect ledger (duplicates grouped by identity), and the
//! contract verdicts (plus the whole run's verdict at the last step).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::super::app::{App, Focus};
use super::super::named::display_order;
use super::super::theme::{BLAMED, DUPLICATE, FAIL, NOT_YET, PASS, Theme};
use super::calls::clip;
use super::text::wrap;
use super::{fit, pane, secs};
use crate::contract::Check;
use crate::printable::shown;

fn step_label(app: &App) -> String {
    match app.cursor {
        Some(c) => format!("at #{}", c + 1),
        None => "at start".into(),
    }
}

/// Coverage lines for a pane `w` columns wide.
pub fn coverage_lines(app: &App, w: usize, theme: &Theme) -> Vec<Line<'static>> {
    let t = app.timeline();
    let cov = t.coverage_at(app.cursor);
    let mut lines = vec![Line::styled(
        format!(
            "{:<w1$} elig sel trig",
            "rule",
            w1 = w.saturating_sub(15).max(4)
        ),
        theme.dim,
    )];
    if t.rules().is_empty() {
        lines.push(Line::styled("(no rules)", theme.dim));
    }
    let at_end = app.cursor.is_some_and(|c| c + 1 == t.len());
    for (rule, c) in t.rules().iter().zip(&cov) {
        let never = c.triggered == 0;
        let name = clip(&shown(&rule.name), w.saturating_sub(16).max(4));
        let mut spans = vec![Span::raw(format!(
            "{name:<w1$} {:>4} {:>3} {:>4}",
            c.eligible,
            c.selected,
            c.triggered,
            w1 = w.saturating_sub(15).max(4)
        ))];
        if never {
            spans.push(Span::styled(
                if at_end { " ○ never fired" } else { " ○" },
                theme.failed,
            ));
        }
        lines.push(Line::from(spans));
    }
    lines
}

/// Draws coverage.
pub fn render_coverage(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let lines = coverage_lines(app, area.width.saturating_sub(2) as usize, theme);
    let block = pane(
        fit(format!(" Coverage {} ", step_label(app)), area),
        app.focus == Focus::Coverage,
        theme,
    );
    Paragraph::new(lines)
        .block(block)
        .scroll((app.scroll[1], 0))
        .render(area, buf);
}

/// The effect ledger's shape as of the cursor: its number of lines, and the line where the
/// selected call's first commit's group starts (the pane follows the cursor to it).
pub fn effects_shape(app: &App) -> (usize, Option<usize>) {
    let t = app.timeline();
    let effects = t.effects_at(app.cursor);
    if effects.is_empty() {
        return (1, None);
    }
    let selected = app.selected().map(|c| c.id);
    let mut order: Vec<u64> = Vec::new();
    let mut members: std::collections::HashMap<u64, Vec<u64>> = std::collections::HashMap::new();
    for &e in &effects {
        let fx = &t.report().effects[e];
        members
            .entry(fx.identity)
            .or_insert_with(|| {
                order.push(fx.identity);
                Vec::new()
            })
            .push(fx.call_id);
    }
    let mut line = 0;
    let mut target = None;
    for id in &order {
        let calls = &members[id];
        if target.is_none() && selected.is_some_and(|s| calls.contains(&s)) {
            target = Some(line);
        }
        line += 1 + calls.len();
    }
    (line, target)
}

/// Draws the effect ledger.
pub fn render_effects(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let t = app.timeline();
    let effects = t.effects_at(app.cursor);
    let dups = effects
        .iter()
        .filter(|&&e| t.duplicate_of(e).is_some())
        .count();
    let mut lines = Vec::new();
    if effects.is_empty() {
        lines.push(Line::styled("(no commits yet)", theme.dim));
    }
    // Grouped by identity, in first-commit order (one pass; large ledgers stay fast).
    let mut order: Vec<u64> = Vec::new();
    let mut groups: std::collections::HashMap<u64, Vec<usize>> = std::collections::HashMap::new();
    for &e in &effects {
        let id = t.report().effects[e].identity;
        groups.entry(id).or_insert_with(|| {
            order.push(id);
            Vec::new()
        });
        if let Some(g) = groups.get_mut(&id) {
            g.push(e);
        }
    }
    // Only the lines that can be seen are built.
    let budget = area.height as usize + app.scroll[2] as usize;
    for id in order {
        if lines.len() > budget {
            break;
        }
        let group = groups.remove(&id).unwrap_or_default();
        let Some(&first_index) = group.first() else {
            continue;
        };
        let first = &t.report().effects[first_index];
        let head = format!("{} {} ", shown(&first.name), shown(&first.key));
        if group.len() > 1 {
            lines.push(Line::from(vec![Span::styled(
                format!("{DUPLICATE} {head}×{}", group.len()),
                theme.duplicate,
            )]));
        } else {
            lines.push(Line::raw(format!("  {head}")));
        }
        for e in group {
            let fx = &t.report().effects[e];
            lines.push(Line::styled(
                format!("    call #{} @{}", fx.call_id, secs(fx.at)),
                theme.dim,
            ));
        }
    }
    let n = effects.len();
    let commits = format!("{n} commit{}", if n == 1 { "" } else { "s" });
    let title = if dups > 0 {
        format!(
            " Effects {} · {commits}, {dups} duplicate ",
            step_label(app)
        )
    } else {
        format!(" Effects {} · {commits} ", step_label(app))
    };
    let block = pane(fit(title, area), app.focus == Focus::Effects, theme);
    Paragraph::new(lines)
        .block(block)
        .scroll((app.scroll[2], 0))
        .render(area, buf);
}

/// Verdict lines for a pane `w` columns wide (wrapped, never cut), as of the cursor; with a
/// verdict selected, the whole run's verdicts with the selected one's reasons under it.
pub fn verdict_lines(app: &App, w: usize, theme: &Theme) -> Vec<Line<'static>> {
    verdict_shape(app, w, theme).0
}

/// [`verdict_lines`], and the line of the selected verdict.
pub fn verdict_shape(app: &App, w: usize, theme: &Theme) -> (Vec<Line<'static>>, Option<usize>) {
    let tab = app.tab();
    let t = &tab.timeline;
    let whole = app.verdict.is_some() || app.cursor.is_none_or(|c| c + 1 >= t.len());
    // As of a step, only the checks the run's contract judges it by (a campaign's leaves
    // `Fault exercised` out). A check that fails so far but not for the whole run (a fault
    // whose call is still to come), and one only the whole run can judge (how the session
    // ended, a scenario's checks), are marked "not yet" rather than passed or failed.
    let (checks, not_yet) = if whole {
        (tab.checks.clone(), Vec::new())
    } else {
        let mut checks: Vec<Check> = t
            .verdicts_at(app.cursor, tab.max_calls)
            .into_iter()
            .filter(|c| tab.checks.iter().any(|w| w.name == c.name))
            .collect();
        let mut not_yet: Vec<usize> = (0..checks.len())
            .filter(|&i| {
                !checks[i].passed
                    && tab
                        .checks
                        .iter()
                        .any(|w| w.name == checks[i].name && w.passed)
            })
            .collect();
        for w in &tab.checks {
            if !checks.iter().any(|c| c.name == w.name) {
                not_yet.push(checks.len());
                checks.push(Check {
                    name: w.name.clone(),
                    passed: true,
                    detail: "judged on the whole run (the last step)".into(),
                });
            }
        }
        (checks, not_yet)
    };
    let mut lines: Vec<Line<'static>> = vec![Line::styled(
        format!("contract: {}", tab.contract),
        theme.dim,
    )];
    let here = app.selected().map(|c| c.id);
    let mut selected_line = None;
    for i in display_order(&checks) {
        let c = &checks[i];
        let chosen = app.verdict == Some(i);
        if chosen {
            selected_line = Some(wrap(lines.clone(), w).len());
        }
        let pick = |s: ratatui::style::Style| if chosen { s.patch(theme.selected) } else { s };
        let pending = not_yet.contains(&i);
        let (mark, style) = match (pending, c.passed) {
            (true, _) => (NOT_YET, theme.dim),
            (false, true) => (PASS, theme.ok),
            (false, false) => (FAIL, theme.failed),
        };
        let text = if pending && !c.passed {
            format!(" {}: not yet ({})", c.name, c.detail)
        } else if pending {
            format!(" {}: not yet, {}", c.name, c.detail)
        } else {
            format!(" {}: {}", c.name, c.detail)
        };
        lines.push(Line::from(vec![
            Span::styled(mark, pick(style)),
            Span::styled(text, pick(if pending { theme.dim } else { theme.text })),
        ]));
        if chosen {
            let reasons: Vec<&crate::document::explain::Reason> = app
                .named
                .reasons
                .iter()
                .filter(|(k, _)| *k == i)
                .map(|(_, r)| r)
                .collect();
            if reasons.is_empty() {
                lines.push(Line::styled("  (names no call)", theme.dim));
            }
            for r in reasons {
                // The reason that names the selected call stands out.
                let at_cursor = here.is_some_and(|id| r.calls.contains(&id));
                lines.push(Line::styled(
                    format!("  {} {}", if at_cursor { BLAMED } else { "↳" }, r.text),
                    if at_cursor { theme.title } else { theme.text },
                ));
            }
        }
    }
    if !whole {
        lines.push(Line::styled(
            "(as of this step; the whole run's verdict is at the last step; > selects one)",
            theme.dim,
        ));
    }
    (wrap(lines, w), selected_line)
}

/// Draws the verdicts.
pub fn render_verdicts(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let t = &app.tab().timeline;
    let at_end = app.cursor.is_none_or(|c| c + 1 >= t.len());
    let lines = verdict_lines(app, area.width.saturating_sub(2) as usize, theme);
    let title = if let Some(v) = app.verdict {
        let order = display_order(&app.tab().checks);
        let pos = order.iter().position(|&i| i == v).map_or(0, |p| p + 1);
        format!(" Verdicts · {pos} of {} · x/X its calls ", order.len())
    } else if at_end {
        " Verdicts · whole run ".to_owned()
    } else {
        format!(" Verdicts {} ", step_label(app))
    };
    let block = pane(fit(title, area), app.focus == Focus::Verdicts, theme);
    Paragraph::new(lines)
        .block(block)
        .scroll((app.scroll[3], 0))
        .render(area, buf);
}
