//! The three bottom panels, all **as of the cursor's step**: per-rule coverage (rules that
//! never fired called out), the effect ledger (duplicates grouped by identity), and the
//! contract verdicts (plus the whole run's verdict at the last step).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::super::app::{App, Focus};
use super::super::theme::{DUPLICATE, FAIL, PASS, Theme};
use super::calls::clip;
use super::{pane, secs};
use crate::printable::shown;

fn step_label(app: &App) -> String {
    match app.cursor {
        Some(c) => format!("at #{}", c + 1),
        None => "at start".into(),
    }
}

/// Draws coverage.
pub fn render_coverage(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let t = app.timeline();
    let cov = t.coverage_at(app.cursor);
    let w = area.width.saturating_sub(2) as usize;
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
    let block = pane(
        format!(" Coverage {} ", step_label(app)),
        app.focus == Focus::Coverage,
        theme,
    );
    Paragraph::new(lines)
        .block(block)
        .scroll((app.scroll[1], 0))
        .render(area, buf);
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
    let title = if dups > 0 {
        format!(
            " Effects {} · {} commits, {dups} duplicate ",
            step_label(app),
            effects.len()
        )
    } else {
        format!(" Effects {} · {} commits ", step_label(app), effects.len())
    };
    let block = pane(title, app.focus == Focus::Effects, theme);
    Paragraph::new(lines)
        .block(block)
        .scroll((app.scroll[2], 0))
        .render(area, buf);
}

/// Draws the verdicts.
pub fn render_verdicts(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let tab = app.tab();
    let t = &tab.timeline;
    let at_end = app.cursor.is_none_or(|c| c + 1 >= t.len());
    let checks = if at_end {
        tab.checks.clone()
    } else {
        t.verdicts_at(app.cursor, tab.max_calls)
    };
    let w = area.width.saturating_sub(4) as usize;
    let lines: Vec<Line> = checks
        .iter()
        .map(|c| {
            Line::from(vec![
                Span::styled(
                    if c.passed { PASS } else { FAIL },
                    if c.passed { theme.ok } else { theme.failed },
                ),
                Span::raw(format!(
                    " {}",
                    clip(&format!("{}: {}", c.name, c.detail), w)
                )),
            ])
        })
        .collect();
    let title = if at_end {
        " Verdicts · whole run ".to_owned()
    } else {
        format!(" Verdicts {} ", step_label(app))
    };
    let block = pane(title, app.focus == Focus::Verdicts, theme);
    Paragraph::new(lines)
        .block(block)
        .scroll((app.scroll[3], 0))
        .render(area, buf);
}
