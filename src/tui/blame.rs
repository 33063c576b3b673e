//! From a verdict to the calls behind it: which verdict is selected (`>` / `<`), the reasons
//! it gives and the calls they name, and moving between those calls (`x` / `X`). With no
//! verdict selected, `x` moves between the calls behind every failed verdict. The reasons come
//! from [`crate::document::explain`]; they are worked out again only when the run, its
//! contents or the selection change.

use std::collections::HashMap;

use super::app::App;
use super::named::{Named, display_order, fingerprint};
use crate::document::explain::{self, Reason};

impl App {
    /// Works out the named calls again if what they depend on changed (called after every
    /// update).
    pub(super) fn sync_named(&mut self) {
        // The selected verdict is the check of that name in the run shown now (a rerun, a
        // reload or another run may have other checks).
        let found = self
            .verdict_name
            .as_ref()
            .and_then(|name| self.tab().checks.iter().position(|c| c.name == *name));
        self.verdict = found;
        if found.is_none() {
            self.verdict_name = None;
        }
        let key = (
            self.run,
            self.verdict,
            self.tab().digest.clone(),
            self.timeline().len(),
            fingerprint(&self.tab().checks),
        );
        if self.named.key.as_ref() == Some(&key) {
            return;
        }
        let run = self.tab();
        let report = run.timeline.report();
        let session = self.session();
        let wanted: Vec<usize> = match self.verdict {
            Some(v) => vec![v],
            None => (0..run.checks.len())
                .filter(|&i| !run.checks[i].passed)
                .collect(),
        };
        let explainer = explain::Explainer::for_timeline(&run.timeline, session);
        let reasons: Vec<(usize, Reason)> = wanted
            .into_iter()
            .flat_map(|i| {
                explainer
                    .reasons(&run.checks[i])
                    .into_iter()
                    .map(move |r| (i, r))
            })
            .collect();
        let index: HashMap<u64, usize> = report
            .calls
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id, i))
            .collect();
        let mut calls: Vec<usize> = reasons
            .iter()
            .flat_map(|(_, r)| r.calls.iter().filter_map(|id| index.get(id).copied()))
            .collect();
        calls.sort_unstable();
        calls.dedup();
        self.named = Named {
            key: Some(key),
            reasons,
            calls,
        };
    }

    /// `>` / `<`: selects the next (or previous) verdict in the pane's order, shows its
    /// reasons, and moves to the first call it names.
    pub(super) fn select_verdict(&mut self, by: isize) {
        let order = display_order(&self.tab().checks);
        if order.is_empty() {
            self.info("this run has no verdicts".into());
            return;
        }
        let pos = self
            .verdict
            .and_then(|v| order.iter().position(|&i| i == v));
        let n = order.len() as isize;
        let next = match pos {
            Some(p) => (p as isize + by).rem_euclid(n),
            None if by > 0 => 0,
            None => n - 1,
        } as usize;
        self.verdict = Some(order[next]);
        self.verdict_name = Some(self.tab().checks[order[next]].name.clone());
        self.follow_verdict = true;
        self.sync_named();
        let check = &self.tab().checks[order[next]];
        let mark = if check.passed { '✓' } else { '✗' };
        let head = format!(
            "verdict {} of {}: {mark} {}",
            next + 1,
            order.len(),
            check.name
        );
        match self.named.calls.first().copied() {
            Some(first) => {
                let n = self.named.calls.len();
                self.move_to(Some(first), "call");
                if !self.visible().contains(&first) {
                    self.filter = None;
                }
                self.info(format!(
                    "{head} · names {} · x / X its calls · Esc all failures",
                    if n == 1 {
                        "1 call".to_owned()
                    } else {
                        format!("{n} calls")
                    }
                ));
            }
            None => self.info(format!("{head} · names no call · Esc all failures")),
        }
    }

    /// `x` / `X`: the next (or previous) call behind the selected verdict, or behind any
    /// failed verdict when none is selected. A call hidden by the filter is skipped.
    pub(super) fn step_named(&mut self, forward: bool) {
        if self.named.calls.is_empty() {
            let text = match self.verdict {
                Some(_) => "the selected verdict names no call; > / < select another".to_owned(),
                None if crate::contract::verdict(&self.tab().checks) => {
                    "every verdict passes; > selects one to see the calls it names".to_owned()
                }
                None if self.tab().checks.is_empty() => "this run has no verdicts".to_owned(),
                None => "the failed verdicts name no call".to_owned(),
            };
            self.info(text);
            return;
        }
        let visible = self.visible();
        let shown: Vec<usize> = self
            .named
            .calls
            .iter()
            .copied()
            .filter(|i| visible.binary_search(i).is_ok())
            .collect();
        if shown.is_empty() {
            self.info(
                "the calls behind this verdict are hidden by the filter (\\ changes it)".into(),
            );
            return;
        }
        let here = self.cursor;
        let target = if forward {
            shown
                .iter()
                .copied()
                .find(|&i| here.is_none_or(|h| i > h))
                .unwrap_or(shown[0])
        } else {
            shown
                .iter()
                .rev()
                .copied()
                .find(|&i| here.is_some_and(|h| i < h))
                .unwrap_or(shown[shown.len() - 1])
        };
        let wrapped = match here {
            Some(h) => (forward && target <= h) || (!forward && target >= h),
            None => false,
        };
        self.move_to(Some(target), "call");
        let n = shown.iter().position(|&i| i == target).unwrap_or(0) + 1;
        let id = self.timeline().report().calls[target].id;
        let reason = self
            .named
            .reasons
            .iter()
            .find(|(_, r)| r.calls.contains(&id))
            .and_then(|(c, r)| {
                let check = self.tab().checks.get(*c)?;
                Some(format!(
                    "{} {}: {}",
                    if check.passed { '✓' } else { '✗' },
                    check.name,
                    r.text
                ))
            })
            .unwrap_or_default();
        self.info(format!(
            "call {n} of {}{} · {reason}",
            shown.len(),
            if wrapped { " (wrapped)" } else { "" }
        ));
    }
}
