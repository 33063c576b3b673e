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

mod ask;
mod calls;
mod compare;
mod details;
mod editor;
mod header;
mod help;
mod lanes;
mod overlay;
mod panels;
mod policies;
mod runs;
mod strip;
mod summary;
pub(crate) mod text;
mod wire;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::Widget;

use super::app::{App, Drawn, Focus, Mode, Screen};
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
    /// The rule editor, while it is open.
    pub editor: Option<Rect>,
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

impl Areas {
    /// The area of a pane, if it is drawn.
    pub fn of(&self, pane: Focus) -> Option<Rect> {
        match pane {
            Focus::Timeline => Some(self.timeline),
            Focus::Details => self.details,
            Focus::Lanes => self.strip,
            Focus::Coverage => self.coverage,
            Focus::Effects => self.effects,
            Focus::Verdicts => self.verdicts,
        }
    }
}

/// Lanes the strip shows at most.
const MAX_LANES: usize = 6;

/// Splits the screen for `app` (the strip's height depends on the number of tools). Zoomed,
/// the focused pane takes everything between the header and the status line.
pub fn layout(app: &App, area: Rect) -> Areas {
    let [header, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    if app.zoom {
        let mut a = Areas {
            header,
            timeline: body,
            status,
            ..Areas::default()
        };
        match app.focus {
            Focus::Timeline => {}
            Focus::Details => a.details = Some(body),
            Focus::Lanes => a.strip = Some(body),
            Focus::Coverage => a.coverage = Some(body),
            Focus::Effects => a.effects = Some(body),
            Focus::Verdicts => a.verdicts = Some(body),
        }
        return a;
    }
    let lanes = if app.tab().batches.is_empty() {
        strip::lanes(app).len().clamp(1, MAX_LANES) as u16
    } else {
        lanes::rows(app).clamp(1, lanes::MAX_ROWS) as u16
    };
    // The rule editor takes the right column of the whole body, so what it edits (the
    // timeline, the comparison, the policies) stays whole on the left.
    let editing = app.editing();
    let show_bottom = body.height >= 18 && !editing;
    let show_strip = body.height >= 12 && !editing;
    // The bottom panels grow with the screen (a quarter of it, 5 to 14 rows).
    let bottom_h = if show_bottom {
        (body.height / 4).clamp(5, 14)
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
    // Editing: the editor takes the top of the details column (all of it below 8 spare
    // rows, or the whole main area when there is no details column).
    let (timeline, details, editor) = match (editing, details) {
        (false, d) => (timeline, d, None),
        (true, None) => (timeline, None, Some(timeline)),
        (true, Some(d)) => {
            let want = editor::height(app, d.width);
            if app.screen == Screen::Explore && d.height >= want + 8 {
                let [e, rest] =
                    Layout::vertical([Constraint::Length(want), Constraint::Min(0)]).areas(d);
                (timeline, Some(rest), Some(e))
            } else {
                (timeline, None, Some(d))
            }
        }
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
        editor,
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
    if app.zoom {
        return contains(a.timeline, col, row).then_some(app.focus);
    }
    Focus::ORDER
        .into_iter()
        .find(|f| a.of(*f).is_some_and(|r| contains(r, col, row)))
}

/// The call index shown on a timeline row, if a click lands on one.
pub fn timeline_row_at(app: &App, col: u16, row: u16) -> Option<usize> {
    if app.zoom && app.focus != Focus::Timeline {
        return None;
    }
    let a = layout(app, app.size);
    if a.editor == Some(a.timeline) {
        return None;
    }
    calls::row_at(app, a.timeline, col, row)
}

/// What the screen of size `area` draws, as the app needs to know it: the visible panes (Tab
/// visits only these), how far each pane can scroll, and where the selected call's commits
/// are in the ledger.
pub fn drawn(app: &App, area: Rect) -> Drawn {
    let a = layout(app, area);
    let theme = Theme::new(true);
    let inner = |r: Rect| {
        (
            r.width.saturating_sub(2) as usize,
            r.height.saturating_sub(2) as usize,
        )
    };
    let room =
        |lines: usize, height: usize| lines.saturating_sub(height).min(u16::MAX as usize) as u16;
    // Zoomed, Tab visits every pane (each drawn on the whole screen): below the smallest
    // layout, that is how every pane stays reachable.
    let panes: Vec<Focus> = Focus::ORDER
        .into_iter()
        .filter(|f| app.zoom || a.of(*f).is_some())
        .filter(|f| *f != Focus::Details || app.screen == Screen::Explore)
        .collect();
    let mut max = [0u16; 4];
    let mut match_line = None;
    if let Some(r) = a.details {
        let (w, h) = inner(r);
        max[0] = room(details::wrapped(app, w, &theme).len(), h);
        if app.follow_match {
            match_line =
                details::match_line(app, w, &theme).map(|l| l.min(u16::MAX as usize) as u16);
        }
    }
    if let Some(r) = a.coverage {
        let (w, h) = inner(r);
        max[1] = room(panels::coverage_lines(app, w, &theme).len(), h);
    }
    let (effect_lines, effects_line) = panels::effects_shape(app);
    if let Some(r) = a.effects {
        max[2] = room(effect_lines, inner(r).1);
    }
    let mut verdict_line = None;
    if let Some(r) = a.verdicts {
        let (w, h) = inner(r);
        let (lines, selected) = panels::verdict_shape(app, w, &theme);
        max[3] = room(lines.len(), h);
        verdict_line = selected.map(|l| l.min(u16::MAX as usize) as u16);
    }
    Drawn {
        panes,
        max_scroll: max,
        help_max: room(
            help::line_count(area),
            area.height.saturating_sub(2) as usize,
        ),
        effects_line: effects_line.map(|l| l.min(u16::MAX as usize) as u16),
        verdict_line,
        match_line,
    }
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
        if self.zoom {
            match self.focus {
                Focus::Timeline => calls::render(self, a.timeline, buf, theme),
                Focus::Details => details::render(self, a.timeline, buf, theme),
                Focus::Lanes if self.tab().batches.is_empty() => {
                    strip::render(self, a.timeline, buf, theme)
                }
                Focus::Lanes => lanes::render(self, a.timeline, buf, theme),
                Focus::Coverage => panels::render_coverage(self, a.timeline, buf, theme),
                Focus::Effects => panels::render_effects(self, a.timeline, buf, theme),
                Focus::Verdicts => panels::render_verdicts(self, a.timeline, buf, theme),
            }
        } else {
            // Beside the editor, the screen keeps the left column; without a column for the
            // editor, the editor has the main area.
            let main = match (a.editor, a.details) {
                (Some(e), _) if e == a.timeline => None,
                (Some(_), _) => Some(a.timeline),
                (None, Some(d)) => Some(a.timeline.union(d)),
                (None, None) => Some(a.timeline),
            };
            match (self.screen, main) {
                (_, None) => {}
                (Screen::Explore, Some(_)) => {
                    calls::render(self, a.timeline, buf, theme);
                    if let Some(r) = a.details {
                        details::render(self, r, buf, theme);
                    }
                }
                (Screen::Compare, Some(r)) => compare::render(self, r, buf, theme),
                (Screen::Policies, Some(r)) => policies::render(self, r, buf, theme),
            }
            if let Some(r) = a.editor {
                editor::render(self, r, buf, theme);
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
        }
        if self.story {
            overlay::story(self, area, buf, theme);
        }
        let main = match a.details {
            Some(d) if !self.zoom => a.timeline.union(d),
            _ => a.timeline,
        };
        match &self.mode {
            Mode::Summary(c) => summary::render(self, c, main, buf, theme),
            Mode::Runs(row) => runs::render(self, *row, main, buf, theme),
            Mode::Wire => wire::render(self, main, buf, theme),
            Mode::Typing(super::app::Purpose::WireSearch, _) | Mode::Show(..)
                if self.wire_cursor.open =>
            {
                wire::render(self, main, buf, theme);
            }
            _ => {}
        }
        header::render_status(self, a.status, buf, theme);
        match &self.mode {
            Mode::Help => help::render(self.help_scroll, area, buf, theme),
            Mode::Show(title, text) => overlay::show(title, text, area, buf, theme),
            Mode::Confirm(super::app::Question::RunAgent(r)) => {
                let (title, text) = self.agent_question(r);
                overlay::show_with(&title, &text, super::confirm::KEYS, area, buf, theme);
            }
            Mode::PinFault(at) => {
                let (title, text) = self.pin_text(*at);
                let footer = "j/k choose · Enter re-runs the agent on the same seed · Esc cancels";
                overlay::show_with(&title, &text, footer, area, buf, theme);
            }
            _ => {}
        }
    }
}

/// A pane title that fits a box `area` wide (between its corners): cut with `…`, keeping the
/// closing space, so a cut title says it was cut.
pub(crate) fn fit(title: String, area: Rect) -> String {
    let room = area.width.saturating_sub(2) as usize;
    if title.chars().count() <= room {
        return title;
    }
    let mut out: String = title
        .trim_end()
        .chars()
        .take(room.saturating_sub(2))
        .collect();
    out.push_str("… ");
    out
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
