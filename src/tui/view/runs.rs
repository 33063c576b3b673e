//! The list of runs over the main area: one row per run with its verdict, calls, effects and
//! failed checks — for a campaign its seed, faults, commits, duplicates and the oracle, and
//! under the table pass^1 … pass^k and the runs that left no recording. The selected row is
//! reversed; failing rows carry the failure colour.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::super::app::App;
use super::super::theme::Theme;
use super::calls::clip;
use super::{fit, pane};
use crate::campaign::passk;
use crate::contract::verdict;

/// The table's lines for a pane `w` columns wide, and the line of the selected row.
pub fn lines(app: &App, row: usize, w: usize, theme: &Theme) -> (Vec<Line<'static>>, usize) {
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
    out.push(Line::raw(""));
    if let Some(c) = campaign {
        let (passed, n) = c.file.passed();
        let table = passk::table(n, passed, 5)
            .iter()
            .map(|(k, p)| format!("pass^{k} {p:.3}"))
            .collect::<Vec<_>>()
            .join(" · ");
        out.push(Line::styled(
            format!(
                "{passed}/{n} passed ({} planned) · {table}",
                c.file.seeds.len()
            ),
            theme.text,
        ));
        for (seed, why) in &c.missing {
            out.push(Line::styled(
                format!("seed {seed}: no recording to open ({why})"),
                theme.failed,
            ));
        }
    }
    out.push(Line::styled(
        "▶ the run shown · j/k row · Enter open the run · c compare it with the run shown · \
         Esc close",
        theme.dim,
    ));
    (super::text::wrap(out, w), selected_line)
}

/// Draws the list into `area`.
pub fn render(app: &App, row: usize, area: Rect, buf: &mut Buffer, theme: &Theme) {
    Clear.render(area, buf);
    let inner_w = area.width.saturating_sub(2) as usize;
    let inner_h = area.height.saturating_sub(2) as usize;
    let (lines, selected) = lines(app, row, inner_w, theme);
    let scroll = selected.saturating_sub(inner_h.saturating_sub(3)) as u16;
    let title = match &app.doc.campaign {
        Some(c) => format!(
            " Runs · campaign {} · {} ",
            crate::printable::line(&c.file.scenario_name),
            crate::printable::count(app.doc.runs.len(), "run", "runs")
        ),
        None => format!(
            " Runs · {} ",
            crate::printable::count(app.doc.runs.len(), "run", "runs")
        ),
    };
    Paragraph::new(lines)
        .block(pane(fit(title, area), true, theme))
        .scroll((scroll, 0))
        .render(area, buf);
}
