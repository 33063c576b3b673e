//! Which pane has the keyboard: the panes in their Tab order.

/// Which pane has focus (scroll keys and the wheel act on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    /// The invocation list.
    Timeline,
    /// The selected call's details.
    Details,
    /// Per-rule coverage.
    Coverage,
    /// The effect ledger.
    Effects,
    /// Contract verdicts.
    Verdicts,
}

impl Focus {
    const ORDER: [Focus; 5] = [
        Focus::Timeline,
        Focus::Details,
        Focus::Coverage,
        Focus::Effects,
        Focus::Verdicts,
    ];

    pub(super) fn shift(self, by: isize) -> Focus {
        let i = Focus::ORDER.iter().position(|f| *f == self).unwrap_or(0) as isize;
        Focus::ORDER[(i + by).rem_euclid(Focus::ORDER.len() as isize) as usize]
    }
}
