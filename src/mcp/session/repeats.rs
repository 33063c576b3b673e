//! Calls the record shows repeating another: a retry of a write whose answer was lost
//! (a possible duplicate, a duplicate when the server's own annotations declare the tool
//! non-idempotent), and a commit after a call whose outcome nobody saw — each worked out from
//! the session's records, for `check` to judge.

use super::{Annotations, Delivered, McpSession};

/// A possible duplicate commit: call `unknown`, whose outcome nobody saw, may have committed
/// the effect `name` `key` that the later call `call` committed (or may have: `also_unknown`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownRepeat {
    /// The call whose outcome is unknown.
    pub unknown: u64,
    /// Why it is.
    pub why: String,
    /// The other call: a later one, else an earlier one that committed the effect first.
    pub call: u64,
    /// Whether the later call's outcome is unknown too (else it committed the effect).
    pub also_unknown: bool,
    /// The effect's name.
    pub name: String,
    /// The effect's key.
    pub key: String,
}

impl UnknownRepeat {
    /// The line `check` gives: `possible duplicate commit: #1's outcome is unknown (...) and
    /// #2 committed shipment A1 again`.
    pub fn line(&self) -> String {
        format!(
            "possible duplicate commit: #{}'s outcome is unknown ({}) and #{} {} {} {} {}",
            self.unknown,
            crate::printable::line(&self.why),
            self.call,
            if self.also_unknown {
                "may have committed"
            } else {
                "committed"
            },
            crate::printable::quoted(&self.name),
            crate::printable::quoted(&self.key),
            if self.call < self.unknown {
                "before it"
            } else {
                "again"
            },
        )
    }
}

impl McpSession {
    /// Each commit only the annotations suggest that repeats an earlier one: (the call, the
    /// call it repeats, the name and key), in call order.
    pub fn possible_duplicates(&self) -> Vec<(u64, u64, String, String)> {
        let mut first: std::collections::HashMap<(&str, &str), u64> =
            std::collections::HashMap::new();
        let mut out = Vec::new();
        for r in &self.calls {
            for (n, k) in &r.possible {
                match first.get(&(n.as_str(), k.as_str())) {
                    Some(&f) => out.push((r.call, f, n.clone(), k.clone())),
                    None => {
                        first.insert((n, k), r.call);
                    }
                }
            }
        }
        out
    }

    /// What the server's `tools/list` answers of the session say of its tools.
    pub fn tool_index(&self) -> crate::mcp::evidence::ToolIndex {
        let mut tools = crate::mcp::evidence::ToolIndex::default();
        for x in self.exchanges.iter().filter(|x| x.method == "tools/list") {
            if let Some(result) = x.response.as_object().and_then(|o| o.get("result")) {
                tools.learn(result);
            }
        }
        tools
    }

    /// Each retry the server's own annotations make a duplicate (unless the scenario said
    /// `"annotations": "warn"` or `"commit"`): a call that repeats, with the same arguments,
    /// the call before it whose answer the client never got (a lost acknowledgement), to a
    /// tool the server declares non-idempotent. (the call, the call it repeats, the name and
    /// key), in call order.
    pub fn declared_duplicates(&self) -> Vec<(u64, u64, String, String)> {
        if self.annotations != Annotations::Declared {
            return Vec::new();
        }
        let tools = self.tool_index();
        // (name, key) → the last call that made it, and whether its answer was lost.
        let mut last: std::collections::HashMap<(&str, &str), (u64, bool)> =
            std::collections::HashMap::new();
        let mut out = Vec::new();
        for r in &self.calls {
            let lost = r.dropped.is_some()
                || matches!(
                    r.delivered,
                    Delivered::Nothing
                        | Delivered::Error(_)
                        | Delivered::HttpStatus(_)
                        | Delivered::Cut
                );
            for (n, k) in &r.possible {
                if let Some(&(prev, true)) = last.get(&(n.as_str(), k.as_str()))
                    && tools.declares_non_idempotent(n)
                {
                    out.push((r.call, prev, n.clone(), k.clone()));
                }
                last.insert((n, k), (r.call, lost));
            }
        }
        out
    }

    /// Each effect a call whose outcome is unknown may have committed that a later call
    /// committed again (`effects`, the cassette's), or may have too (its outcome unknown as
    /// well) — else that an earlier call committed before it: a possible duplicate commit,
    /// one per effect (the first later call, else the first earlier one), in call order.
    pub fn unknown_repeats(&self, effects: &[crate::report::Effect]) -> Vec<UnknownRepeat> {
        let mut out = Vec::new();
        for u in &self.calls {
            let Some(unknown) = &u.unknown else { continue };
            for (name, key) in &unknown.effects {
                let committed = effects
                    .iter()
                    .filter(|e| e.call_id > u.call)
                    .find(|e| e.name.to_lossy() == *name && e.key.to_lossy() == *key)
                    .map(|e| (e.call_id, false));
                let unsure = self
                    .calls
                    .iter()
                    .filter(|v| v.call > u.call)
                    .find(|v| {
                        v.unknown
                            .as_ref()
                            .is_some_and(|w| w.effects.iter().any(|(n, k)| n == name && k == key))
                    })
                    .map(|v| (v.call, true));
                let before = || {
                    effects
                        .iter()
                        .filter(|e| e.call_id < u.call)
                        .find(|e| e.name.to_lossy() == *name && e.key.to_lossy() == *key)
                        .map(|e| (e.call_id, false))
                };
                let again = match (committed, unsure) {
                    (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
                    (a, b) => a.or(b),
                };
                if let Some((call, also_unknown)) = again.or_else(before) {
                    out.push(UnknownRepeat {
                        unknown: u.call,
                        why: unknown.why.clone(),
                        call,
                        also_unknown,
                        name: name.clone(),
                        key: key.clone(),
                    });
                }
            }
        }
        out
    }

    /// The possible duplicates that are only warnings: those [`Self::possible_duplicates`]
    /// finds that [`Self::declared_duplicates`] does not make duplicates.
    pub fn warned_duplicates(&self) -> Vec<(u64, u64, String, String)> {
        let declared = self.declared_duplicates();
        self.possible_duplicates()
            .into_iter()
            .filter(|d| {
                !declared
                    .iter()
                    .any(|x| (x.0, &x.2, &x.3) == (d.0, &d.2, &d.3))
            })
            .collect()
    }
}
