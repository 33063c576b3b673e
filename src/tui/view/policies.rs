//! The policies view: every run of the document side by side (the three policies for the
//! current rules when the policy is `all`), each with its verdict, calls and checks.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::super::app::App;
use super::super::theme::{FAIL, FAILED, INJECTED, PASS, Theme};
use super::calls::clip;
use super::{fit, pane};
use crate::contract::verdict;
use crate::printable::shown;

/// Draws the runs side by side into `area`.
pub fn render(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    Clear.render(area, buf);
    let runs = &app.doc.runs;
    let cols = Layout::horizontal(vec![
        Constraint::Ratio(1, runs.len().max(1) as u32);
        runs.len()
    ])
    .split(area);
    for (i, (tab, col)) in runs.iter().zip(cols.iter()).enumerate() {
        let passed = verdict(&tab.checks);
        let report = tab.timeline.report();
        let title = format!(
            " {} · {} · {} calls · {} effects ",
            if passed { "PASS" } else { "FAIL" },
            tab.name(),
            report.calls.len(),
            report.effects.len()
        );
        let w = col.width.saturating_sub(2) as usize;
        let mut lines = Vec::new();
        for c in &report.calls {
            let mark = format!(
                "{}{}",
                if c.failed() { FAILED } else { " " },
                if c.injected { INJECTED } else { " " }
            );
            let text = format!("{mark}{:>3} {} {}", c.id, shown(&c.tool), c.status.as_str());
            let style = if c.failed() { theme.failed } else { theme.text };
            lines.push(Line::styled(clip(&text, w), style));
        }
        lines.push(Line::raw(""));
        for c in &tab.checks {
            let text = format!("{} {}", if c.passed { PASS } else { FAIL }, c.name);
            lines.push(Line::styled(
                clip(&text, w),
                if c.passed { theme.ok } else { theme.failed },
            ));
        }
        Paragraph::new(super::text::escaped(lines))
            .block(pane(fit(title, *col), i == app.run, theme))
            .render(*col, buf);
    }
}
