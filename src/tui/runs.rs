//! The list of runs (`L`; where a campaign opens): every run of the document with its
//! verdict — for a campaign, its seed, faults, commits, duplicates and the oracle's word —
//! `Enter` opens the selected run as an incident to step through, `c` compares it with the
//! run shown.

use super::app::{App, Mode, Screen};

impl App {
    pub(super) fn toggle_runs(&mut self) {
        self.mode = match self.mode {
            Mode::Runs(_) => Mode::Browse,
            _ => {
                if self.doc.runs.len() == 1 {
                    self.info("this file holds one run".into());
                }
                Mode::Runs(self.run)
            }
        };
    }

    pub(super) fn runs_move(&mut self, by: isize) {
        let n = self.doc.runs.len() as isize;
        if let Mode::Runs(row) = &mut self.mode
            && n > 0
        {
            *row = (*row as isize).saturating_add(by).clamp(0, n - 1) as usize;
        }
    }

    /// Opens the selected run: the timeline, details and verdicts are its.
    pub(super) fn runs_open(&mut self) {
        let Mode::Runs(row) = self.mode else {
            return;
        };
        // A run that cannot be read keeps the list open, saying why.
        if let Err(e) = self.doc.load_run(row) {
            self.info(format!(
                "run {} of {} cannot be shown: {e}",
                row + 1,
                self.doc.runs.len()
            ));
            return;
        }
        self.mode = Mode::Browse;
        self.screen = Screen::Explore;
        if row != self.run {
            self.switch_run(row as isize - self.run as isize);
        }
    }

    /// The selected run beside the one shown, in the compare view.
    pub(super) fn runs_compare(&mut self) {
        let Mode::Runs(row) = self.mode else {
            return;
        };
        if row == self.run {
            self.info(
                "that is the run shown: open another (Enter), then pick this one and press c"
                    .into(),
            );
            return;
        }
        if let Err(e) = self.doc.load_run(row) {
            self.info(format!("run {} cannot be compared: {e}", row + 1));
            return;
        }
        let Some(other) = self.doc.runs.get(row).cloned() else {
            return;
        };
        self.info(format!(
            "comparing {} (previous, left) with {} (new, right); c again returns",
            other.label,
            self.tab().label
        ));
        self.previous = Some(vec![other]);
        self.mode = Mode::Browse;
        self.screen = Screen::Compare;
    }
}
