//! Which pane has the keyboard, and what the last drawn screen allows: the panes that are
//! visible at this size (Tab visits only those) and how far each can scroll (scrolling stops
//! at the last line). The view computes [`Drawn`]; the app keeps it as plain data.

/// Which pane has focus (`J`/`K` scroll it, `z` zooms it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    /// The invocation list.
    Timeline,
    /// The selected call's details.
    Details,
    /// The time lanes (or, for an executor run, the batch lanes).
    Lanes,
    /// Per-rule coverage.
    Coverage,
    /// The effect ledger.
    Effects,
    /// Contract verdicts.
    Verdicts,
}

impl Focus {
    /// Every pane, in Tab order.
    pub const ORDER: [Focus; 6] = [
        Focus::Timeline,
        Focus::Details,
        Focus::Lanes,
        Focus::Coverage,
        Focus::Effects,
        Focus::Verdicts,
    ];

    /// The slot of the pane's scroll offset (`None` for the timeline and the lanes, where
    /// scrolling moves the cursor).
    pub fn scroll_slot(self) -> Option<usize> {
        match self {
            Focus::Timeline | Focus::Lanes => None,
            Focus::Details => Some(0),
            Focus::Coverage => Some(1),
            Focus::Effects => Some(2),
            Focus::Verdicts => Some(3),
        }
    }

    /// The pane's name, for titles and messages.
    pub fn label(self) -> &'static str {
        match self {
            Focus::Timeline => "timeline",
            Focus::Details => "details",
            Focus::Lanes => "lanes",
            Focus::Coverage => "coverage",
            Focus::Effects => "effects",
            Focus::Verdicts => "verdicts",
        }
    }
}

/// What the last layout drew, as far as the app's state depends on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drawn {
    /// The panes on screen, in Tab order.
    pub panes: Vec<Focus>,
    /// The furthest each scrollable pane can scroll (details, coverage, effects, verdicts).
    pub max_scroll: [u16; 4],
    /// The furthest the help can scroll.
    pub help_max: u16,
    /// The effect ledger's line of the selected call's first commit, if it has one.
    pub effects_line: Option<u16>,
    /// The verdict pane's line of the selected verdict, if one is selected.
    pub verdict_line: Option<u16>,
    /// The details pane's first line holding the search term, if any.
    pub match_line: Option<u16>,
}

impl Default for Drawn {
    fn default() -> Self {
        Drawn {
            panes: Focus::ORDER.to_vec(),
            max_scroll: [u16::MAX; 4],
            help_max: u16::MAX,
            effects_line: None,
            verdict_line: None,
            match_line: None,
        }
    }
}

impl Drawn {
    /// The visible pane `by` steps from `from` in Tab order (the timeline when none is).
    pub fn shift(&self, from: Focus, by: isize) -> Focus {
        let n = self.panes.len() as isize;
        if n == 0 {
            return Focus::Timeline;
        }
        let i = self.panes.iter().position(|f| *f == from).unwrap_or(0) as isize;
        self.panes[(i + by).rem_euclid(n) as usize]
    }
}
