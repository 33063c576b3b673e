//! Drawing the app: `impl Widget for &App`, one `render_*` per region.
//!
//! ```text
//! ┌ header: file · kind · run · seed · clock · verdict · digest ───────────────────────┐
//! │ Timeline (invocations)                    │ Details (selected call)                 │
//! │  ✗◆  2   0.080s create_shipment …         │ decision trace, error, effects, payloads │
//! ├ Time strip: one lane per tool, fault spans, cursor (executor runs: one lane per call) ┤
//! │ Coverage          │ Effects ledger          │ Verdicts (as of this step)              │
//! └ status line ───────────────────────────────────────────────────────────────────────┘
//! ```
//! Small terminals drop the bottom panels, then the strip, then the details pane, so regions
//! never overlap.

mod calls;
mod compare;
mod details;
mod editor;
mod header;
mod help;
mod lanes;
mod panels;
mod policies;
mod strip;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::Widget;

use super::app::{App, Focus, Mode, Screen};
use super::theme::Theme;

/// Where each region is drawn for a terminal size; `None` when it does not fit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Areas {
    /// Header line.
    pub header: Rect,
    /// Invocation list.
    pub timeline: Rect,
    /// Selected call.
    pub details: Option<Rect>,
    /// Time strip.
    pub strip: Option<Rect>,
    /// Coverage panel.
    pub coverage: Option<Rect>,
    /// Effects panel.
    pub effects: Option<Rect>,
    /// Verdicts panel.
    pub verdicts: Option<Rect>,
    /// Status line.
    pub status: Rect,
}

/// Lanes the strip shows at most.
const MAX_LANES: usize = 6;

/// Splits the screen for `app` (the strip's height depends on the number of tools).
pub fn layout(app: &App, area: Rect) -> Areas {
    let [header, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    let lanes = if app.tab().batches.is_empty() {
        strip::lanes(app).len().clamp(1, MAX_LANES) as u16
    } else {
        lanes::rows(app).clamp(1, lanes::MAX_ROWS) as u16
    };
    let show_bottom = body.height >= 18;
    let show_strip = body.height >= 12;
    let bottom_h = if show_bottom {
        8.min(body.height / 3).max(5)
    } else {
        0
    };
    let strip_h = if show_strip { lanes + 2 } else { 0 };
    let [main, strip_area, bottom] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(strip_h),
        Constraint::Length(bottom_h),
    ])
    .areas(body);
    let (timeline, details) = if main.width >= 70 {
        let [l, r] = Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)])
            .areas(main);
        (l, Some(r))
    } else {
        (main, None)
    };
    let (coverage, effects, verdicts) = if show_bottom {
        let [c, e, v] = Layout::horizontal([Constraint::Ratio(1, 3); 3]).areas(bottom);
        (Some(c), Some(e), Some(v))
    } else {
        (None, None, None)
    };
    Areas {
        header,
        timeline,
        details,
        strip: show_strip.then_some(strip_area),
        coverage,
        effects,
        verdicts,
        status,
    }
}

fn contains(r: Rect, col: u16, row: u16) -> bool {
    col >= r.x && col < r.x + r.width && row >= r.y && row < r.y + r.height
}

/// The pane under a cell.
pub fn pane_at(app: &App, col: u16, row: u16) -> Option<Focus> {
    let a = layout(app, app.size);
    [
        (Some(a.timeline), Focus::Timeline),
        (a.details, Focus::Details),
        (a.coverage, Focus::Coverage),
        (a.effects, Focus::Effects),
        (a.verdicts, Focus::Verdicts),
    ]
    .into_iter()
    .find_map(|(r, f)| r.filter(|r| contains(*r, col, row)).map(|_| f))
}

/// The call index shown on a timeline row, if a click lands on one.
pub fn timeline_row_at(app: &App, col: u16, row: u16) -> Option<usize> {
    let area = layout(app, app.size).timeline;
    calls::row_at(app, area, col, row)
}

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let theme = Theme::from_env();
        self.render_with(area, buf, &theme);
    }
}

impl App {
    /// Renders with an explicit theme (tests pin one instead of reading `NO_COLOR`).
    pub fn render_with(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let a = layout(self, area);
        header::render(self, a.header, buf, theme);
        let main = a.details.map_or(a.timeline, |d| a.timeline.union(d));
        match self.screen {
            Screen::Explore => {
                calls::render(self, a.timeline, buf, theme);
                if let Some(r) = a.details {
                    details::render(self, r, buf, theme);
                }
            }
            Screen::Compare => compare::render(self, main, buf, theme),
            Screen::Policies => policies::render(self, main, buf, theme),
        }

        if let Some(r) = a.strip {
            if self.tab().batches.is_empty() {
                strip::render(self, r, buf, theme);
            } else {
                lanes::render(self, r, buf, theme);
            }
        }
        if let (Some(c), Some(e), Some(v)) = (a.coverage, a.effects, a.verdicts) {
            panels::render_coverage(self, c, buf, theme);
            panels::render_effects(self, e, buf, theme);
            panels::render_verdicts(self, v, buf, theme);
        }
        if matches!(self.mode, Mode::Edit | Mode::EditField(_)) {
            // The editor takes the details column (or the whole width when narrow) down to
            // the status line, over the strip and panels.
            let base = a.details.unwrap_or(main);
            let r = Rect::new(
                base.x,
                base.y,
                base.width,
                a.status.y.saturating_sub(base.y),
            );
            editor::render(self, r.intersection(area), buf, theme);
        }
        header::render_status(self, a.status, buf, theme);
        if self.mode == Mode::Help {
            help::render(area, buf, theme);
        }
    }
}

/// A bordered block whose border shows focus.
pub(crate) fn pane<'a>(title: String, focused: bool, theme: &Theme) -> ratatui::widgets::Block<'a> {
    ratatui::widgets::Block::bordered()
        .title(title)
        .border_style(if focused { theme.focus } else { theme.border })
        .title_style(if focused { theme.title } else { theme.text })
}

/// Seconds as the UI shows them (`0.120s`).
pub(crate) fn secs(x: f64) -> String {
    format!("{x:.3}s")
}
