//! The list of runs over the main area: one row per run with its verdict, calls, effects and
//! failed checks — for a campaign its seed, faults, commits, duplicates and the oracle, and
//! under the table pass^1 … pass^k and the runs that left no recording. The selected row is
//! reversed; failing rows carry the failure colour. The table scrolls; pass^k and the footer
//! stay in view below it, however many runs there are.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::super::app::App;
use super::super::theme::Theme;
use super::calls::clip;
use super::{fit, pane};
use crate::campaign::passk;
use crate::contract::verdict;

/// The table's lines for a pane `w` columns wide, the line of the selected row, and the
/// lines that stay below the table (pass^k, runs without a recording, the keys).
pub fn lines(
    app: &App,
    row: usize,
    w: usize,
    theme: &Theme,
) -> (Vec<Line<'static>>, usize, Vec<Line<'static>>) {
    let mut out = Vec::new();
    let campaign = app.doc.campaign.as_ref();
    let heading = if campaign.is_some() {
        format!(
            "{:>4} {:>8} {:<8} {:>6} {:>7} {:>4} {:<6} {:<6} {}",
            "run", "seed", "outcome", "faults", "commits", "dups", "oracle", "result", "failed"
        )
    } else {
        format!(
            "{:<24} {:>6} {:>7} {:<6} {}",
            "run", "calls", "effects", "result", "failed"
        )
    };
    // Rows start with the two columns of the ▶ mark.
    out.push(Line::styled(clip(&format!("  {heading}"), w), theme.title));
    let mut selected_line = 1;
    for (i, run) in app.doc.runs.iter().enumerate() {
        let passed = verdict(&run.checks);
        let failed: Vec<&str> = run
            .checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.name.as_str())
            .collect();
        let text = match campaign.and_then(|c| c.records.get(i)) {
            Some(r) => format!(
                "{:>4} {:>8} {:<8} {:>6} {:>7} {:>4} {:<6} {:<6} {}",
                r.run,
                r.seed,
                r.outcome.as_str(),
                r.faults,
                r.commits,
                r.duplicates,
                r.oracle_word(),
                if passed { "PASS" } else { "FAIL" },
                failed.join(", ")
            ),
            // A re-run made here (a what-if, edited rules) in the campaign's columns, named
            // at the end.
            None if campaign.is_some() => {
                let report = run.timeline.report();
                let mut tail = failed.join(", ");
                if !tail.is_empty() {
                    tail.push_str(" · ");
                }
                tail.push_str(&run.label);
                format!(
                    "{:>4} {:>8} {:<8} {:>6} {:>7} {:>4} {:<6} {:<6} {}",
                    "+",
                    report.seed.to_decimal(),
                    "re-run",
                    report.calls.iter().filter(|c| c.injected).count(),
                    report.effects.len(),
                    report.duplicate_effects(),
                    "-",
                    if passed { "PASS" } else { "FAIL" },
                    tail
                )
            }
            None => {
                let report = run.timeline.report();
                format!(
                    "{:<24} {:>6} {:>7} {:<6} {}",
                    clip(&run.label, 24),
                    report.calls.len(),
                    report.effects.len(),
                    if passed { "PASS" } else { "FAIL" },
                    failed.join(", ")
                )
            }
        };
        let marker = if i == app.run { "▶ " } else { "  " };
        let style = if i == row {
            selected_line = out.len();
            theme.selected
        } else if passed {
            theme.text
        } else {
            theme.failed
        };
        out.push(Line::styled(clip(&format!("{marker}{text}"), w), style));
    }
    let table = out;
    let mut out = Vec::new();
    if let Some(c) = campaign {
        let (passed, n) = c.file.passed();
        let table = passk::table(n, passed, 5)
            .iter()
            .map(|(k, p)| format!("pass^{k} {p:.3}"))
            .collect::<Vec<_>>()
            .join(" · ");
        out.push(Line::styled(
            format!(
                "{passed}/{n} passed ({} planned{}) · {table}",
                c.file.planned().count(),
                c.file
                    .shard
                    .map_or_else(String::new, |s| format!(", shard {s}"))
            ),
            theme.text,
        ));
        // Planned seeds with no run (a shard missing from a merge): never passes.
        let not_run = c.file.missing();
        if !not_run.is_empty() {
            out.push(Line::styled(
                format!(
                    "MISSING {} planned seed{} not run: {}",
                    not_run.len(),
                    if not_run.len() == 1 { "" } else { "s" },
                    crate::campaign::merge::seed_list(&not_run)
                ),
                theme.failed,
            ));
        }
        for (seed, why) in &c.missing {
            out.push(Line::styled(
                format!("seed {seed}: no recording to open ({why})"),
                theme.failed,
            ));
        }
    }
    out.push(Line::styled(
        "▶ the run shown · j/k row · g/G first/last · PgUp/PgDn a page · Enter open the run · \
         c compare it with the run shown · Esc close",
        theme.dim,
    ));
    (
        super::text::wrap(table, w),
        selected_line,
        super::text::wrap(out, w),
    )
}

/// Draws the list into `area`.
pub fn render(app: &App, row: usize, area: Rect, buf: &mut Buffer, theme: &Theme) {
    Clear.render(area, buf);
    let inner_w = area.width.saturating_sub(2) as usize;
    let (table, selected, footer) = lines(app, row, inner_w, theme);
    let n = app.doc.runs.len();
    let title = match &app.doc.campaign {
        Some(c) => format!(
            " Runs · campaign {} · {} · {}/{n} ",
            crate::printable::line(&c.file.scenario_name),
            crate::printable::count(n, "run", "runs"),
            row + 1
        ),
        None => format!(
            " Runs · {} · {}/{n} ",
            crate::printable::count(n, "run", "runs"),
            row + 1
        ),
    };
    let block = pane(fit(title, area), true, theme);
    let inner = block.inner(area);
    block.render(area, buf);
    // The footer keeps its lines (at most half the pane); the table scrolls above it.
    let foot = (footer.len() as u16 + 1).min(inner.height / 2);
    let [top, bottom] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(foot)]).areas(inner);
    // The heading stays; the selected row is kept in view below it.
    let heading = table.first().cloned();
    let rows: Vec<Line<'static>> = table.into_iter().skip(1).collect();
    let [head, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(top);
    let at = selected.saturating_sub(1);
    let scroll = at.saturating_sub((body.height as usize).saturating_sub(1)) as u16;
    if let Some(h) = heading {
        Paragraph::new(h).render(head, buf);
    }
    Paragraph::new(rows).scroll((scroll, 0)).render(body, buf);
    let mut below = vec![Line::raw("")];
    below.extend(footer);
    Paragraph::new(below).render(bottom, buf);
}
