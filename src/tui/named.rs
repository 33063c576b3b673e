//! The calls behind the verdicts, as plain data the app keeps: the reasons of the selected
//! verdict (or of every failed one), the calls they name, and the order the verdict pane lists
//! checks in. [`super::blame`] works them out and moves between them.

use crate::contract::Check;
use crate::document::explain::Reason;

/// The reasons of the selected verdict (or of every failed one) and the calls they name.
#[derive(Clone, Debug, Default)]
pub struct Named {
    /// What these were worked out for: run, selected verdict, the run's digest and length.
    pub(super) key: Option<(usize, Option<usize>, String, usize)>,
    /// Each reason, with the index of its check in the run's checks.
    pub reasons: Vec<(usize, Reason)>,
    /// Indices of the calls the reasons name, in run order.
    pub calls: Vec<usize>,
}

impl Named {
    /// Whether a reason names the call at `index`.
    pub fn names(&self, index: usize) -> bool {
        self.calls.binary_search(&index).is_ok()
    }
}

/// The run's checks in the order the verdict pane lists them: failures first (they are why
/// the verdict is what it is), then the rest; each with its index in `checks`.
pub fn display_order(checks: &[Check]) -> Vec<usize> {
    let failed = (0..checks.len()).filter(|&i| !checks[i].passed);
    failed
        .chain((0..checks.len()).filter(|&i| checks[i].passed))
        .collect()
}
