//! The summary of the whole run in the explorer (`T`): one row per tool and per rule
//! ([`crate::summary`]), sorted by a column the user picks; `Enter` filters the timeline to
//! the selected row's calls.

use super::app::{App, Mode, SummaryCursor};
use crate::summary::{self, Column, Row, RowKind};

impl App {
    /// The summary rows in the order `cursor` sorts them. The rows are worked out once per
    /// run (a frame and every key ask again); sorting a few rows is cheap.
    pub fn summary_rows(&self, cursor: &SummaryCursor) -> Vec<Row> {
        let key = (self.run, self.tab().digest.clone(), self.timeline().len());
        let cached = self
            .summary_cache
            .borrow()
            .as_ref()
            .filter(|(k, _)| *k == key)
            .map(|(_, rows)| rows.clone());
        let mut rows = match cached {
            Some(rows) => rows,
            None => {
                let rows = summary::rows(self.timeline());
                *self.summary_cache.borrow_mut() = Some((key, rows.clone()));
                rows
            }
        };
        let column = Column::ALL[cursor.column.min(Column::ALL.len() - 1)];
        summary::sort(&mut rows, column, cursor.reverse);
        rows
    }

    pub(super) fn toggle_summary(&mut self) {
        self.mode = match self.mode {
            Mode::Summary(_) => Mode::Browse,
            // Most calls first: where the run spent itself.
            _ => Mode::Summary(SummaryCursor {
                column: 1,
                ..SummaryCursor::default()
            }),
        };
    }

    pub(super) fn summary_move(&mut self, by: isize) {
        let n = self.summary_rows(&SummaryCursor::default()).len();
        if let Mode::Summary(c) = &mut self.mode
            && n > 0
        {
            c.row = (c.row as isize + by).clamp(0, n as isize - 1) as usize;
        }
    }

    pub(super) fn summary_sort(&mut self, by: isize) {
        if let Mode::Summary(c) = &mut self.mode {
            let n = Column::ALL.len() as isize;
            c.column = (c.column as isize + by).rem_euclid(n) as usize;
            c.reverse = false;
        }
    }

    pub(super) fn summary_reverse(&mut self) {
        if let Mode::Summary(c) = &mut self.mode {
            c.reverse = !c.reverse;
        }
    }

    /// `Enter`: the timeline shows only the selected row's calls (`tool:NAME` or
    /// `eligible:NAME`, a filter the user can edit with `\`).
    pub(super) fn summary_filter(&mut self) {
        let Mode::Summary(c) = self.mode else {
            return;
        };
        let rows = self.summary_rows(&c);
        self.mode = Mode::Browse;
        let Some(row) = rows.get(c.row) else {
            return;
        };
        let field = match row.kind {
            RowKind::Tool => "tool",
            RowKind::Rule => "eligible",
        };
        let filter = super::filter::exact(field, &row.raw);
        self.apply_filter(Some(filter.clone()), true);
        let shown = self.visible().len();
        self.info(format!(
            "filter {filter}: {} · \\ edits it · Esc in the prompt clears it",
            crate::printable::count(shown, "call", "calls")
        ));
    }
}
