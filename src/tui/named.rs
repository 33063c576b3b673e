//! The calls behind the verdicts, as plain data the app keeps: the reasons of the selected
//! verdict (or of every failed one), the calls they name, and the order the verdict pane lists
//! checks in. [`super::blame`] works them out and moves between them.

use crate::contract::Check;
use crate::document::explain::Reason;

/// Run, selected verdict, the run's digest and length, and its checks' fingerprint.
pub type NamedKey = (usize, Option<usize>, String, usize, u64);

/// The reasons of the selected verdict (or of every failed one) and the calls they name.
#[derive(Clone, Debug, Default)]
pub struct Named {
    /// What these were worked out for: run, selected verdict, the run's digest and length,
    /// and a fingerprint of its checks (a rerun can change the checks, not the report).
    pub(super) key: Option<NamedKey>,
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

/// A fingerprint of a run's checks: their names, verdicts and details.
pub fn fingerprint(checks: &[Check]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for c in checks {
        (&c.name, c.passed, &c.detail).hash(&mut h);
    }
    h.finish()
}

/// The run's checks in the order the verdict pane lists them: failures first (they are why
/// the verdict is what it is), then the rest; each with its index in `checks`.
pub fn display_order(checks: &[Check]) -> Vec<usize> {
    let failed = (0..checks.len()).filter(|&i| !checks[i].passed);
    failed
        .chain((0..checks.len()).filter(|&i| checks[i].passed))
        .collect()
}
