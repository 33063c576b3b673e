//! Time travel through a recorded run: the state of coverage, the effect ledger and the core
//! contract **as of** any step, and the decision trace of each call (which rules were eligible,
//! which one won and why). Pure data over a [`Report`]; the terminal UI draws it, tests check
//! it.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::contract::{Check, Contract};
use crate::decision::{Draw, Drawer};
use crate::json::{Int, Text};
use crate::redact::MARKER;
use crate::report::{Call, Coverage, Report};
use crate::rule::{Rule, ToolMatches};

/// Coverage snapshots are kept every this many calls, so any step is cheap to rebuild.
const CHECKPOINT_EVERY: usize = 256;

/// Why a rule did or did not fault one call.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleOutcome {
    /// The tool or ordinal does not match the rule.
    NotEligible,
    /// The rule won: its draw fell under the probability.
    Selected {
        /// The recomputed draw, when the key and seed allow it.
        draw: Option<Draw>,
    },
    /// The draw fell at or above the probability.
    Missed {
        /// The recomputed draw.
        draw: Option<Draw>,
    },
    /// The rule had already been selected `limit` times.
    LimitReached {
        /// The limit.
        limit: u64,
    },
    /// An earlier rule was selected first.
    Shadowed,
}

/// One rule's part in one call's decision.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleDecision {
    /// Index into the report's rules.
    pub rule: usize,
    /// What happened.
    pub outcome: RuleOutcome,
}

/// A recorded run, ready to be stepped through.
#[derive(Clone, Debug)]
pub struct Timeline {
    report: Report,
    rules: Vec<Rule>,
    /// Coverage after calls `[0, k * CHECKPOINT_EVERY)`.
    checkpoints: Vec<Vec<Coverage>>,
    /// For each effect, the index of the first effect with the same identity.
    first_commit: Vec<usize>,
    /// Effect indices per call index.
    effects_by_call: Vec<Vec<usize>>,
    /// Nesting depth per call.
    depth: Vec<usize>,
    /// Which rules match each distinct tool name.
    tool_matches: ToolMatches,
    /// Per call index, its tool's row in `tool_matches`.
    row_of_call: Vec<usize>,
    /// The distinct tool names called, in order of first call.
    tools: Vec<Text>,
    /// The last call's decisions, by call index.
    last_decisions: RefCell<Option<(usize, Vec<RuleDecision>)>>,
}

impl Timeline {
    /// Prepares a report (rules that do not parse are skipped; loaded reports are validated).
    pub fn new(report: Report) -> Timeline {
        let rules: Vec<Rule> = report
            .rules
            .iter()
            .filter_map(|r| Rule::from_value(r).ok())
            .collect();
        let mut first: HashMap<u64, usize> = HashMap::new();
        let first_commit = report
            .effects
            .iter()
            .enumerate()
            .map(|(i, e)| *first.entry(e.identity).or_insert(i))
            .collect();
        let mut effects_by_call = vec![Vec::new(); report.calls.len()];
        for (i, e) in report.effects.iter().enumerate() {
            if let Some(slot) = (e.call_id as usize)
                .checked_sub(1)
                .and_then(|c| effects_by_call.get_mut(c))
            {
                slot.push(i);
            }
        }
        let mut depth = Vec::with_capacity(report.calls.len());
        for c in &report.calls {
            let d = c
                .parent_id
                .and_then(|p| {
                    (p as usize)
                        .checked_sub(1)
                        .and_then(|i| depth.get(i))
                        .copied()
                })
                .map_or(0, |d: usize| d + 1);
            depth.push(d);
        }
        let mut tool_matches = ToolMatches::default();
        let mut tools = Vec::new();
        let row_of_call = report
            .calls
            .iter()
            .map(|c| {
                let row = tool_matches.row(&rules, &c.tool);
                if row == tools.len() {
                    tools.push(c.tool.clone());
                }
                row
            })
            .collect();
        let mut t = Timeline {
            report,
            rules,
            tool_matches,
            row_of_call,
            tools,
            last_decisions: RefCell::new(None),
            checkpoints: Vec::new(),
            first_commit,
            effects_by_call,
            depth,
        };
        t.build_checkpoints();
        t
    }

    fn build_checkpoints(&mut self) {
        let mut cov = vec![Coverage::default(); self.rules.len()];
        self.checkpoints.push(cov.clone());
        for i in 0..self.report.calls.len() {
            self.apply(&mut cov, i);
            if (i + 1) % CHECKPOINT_EVERY == 0 {
                self.checkpoints.push(cov.clone());
            }
        }
    }

    /// Whether rule `rule` applies to the call at `index`.
    pub fn eligible(&self, index: usize, rule: usize) -> bool {
        let (Some(call), Some(&row)) = (self.report.calls.get(index), self.row_of_call.get(index))
        else {
            return false;
        };
        self.tool_matches
            .eligible(&self.rules, row, rule, call.ordinal)
    }

    fn apply(&self, cov: &mut [Coverage], index: usize) {
        let call = &self.report.calls[index];
        for (i, rule) in self.rules.iter().enumerate() {
            if self.eligible(index, i) {
                cov[i].eligible += 1;
                if call.fault.as_ref() == Some(&rule.name) {
                    cov[i].selected += 1;
                    cov[i].triggered += u64::from(call.injected);
                }
            }
        }
    }

    /// Indices of the calls whose tool the rule named `name` matches (any ordinal), from the
    /// matches worked out once for the whole run; `None` when no such rule parses.
    pub fn calls_matching(&self, name: &str) -> Option<Vec<usize>> {
        let rule = self.rules.iter().position(|r| r.name == name)?;
        Some(
            (0..self.report.calls.len())
                .filter(|&i| self.tool_matches.matched(self.row_of_call[i], rule))
                .collect(),
        )
    }

    /// The report.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// The parsed rules, in report order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Number of steps (calls).
    pub fn len(&self) -> usize {
        self.report.calls.len()
    }

    /// Whether there are no calls.
    pub fn is_empty(&self) -> bool {
        self.report.calls.is_empty()
    }

    /// The distinct tool names called, in order of first call.
    pub fn tools(&self) -> &[Text] {
        &self.tools
    }

    /// Nesting depth of call `index` (roots are 0).
    pub fn depth(&self, index: usize) -> usize {
        self.depth.get(index).copied().unwrap_or(0)
    }

    /// Coverage after the calls `0..=step` (all rules, report order).
    pub fn coverage_at(&self, step: Option<usize>) -> Vec<Coverage> {
        let upto = step.map_or(0, |s| (s + 1).min(self.len()));
        let k = upto / CHECKPOINT_EVERY;
        let mut cov = self
            .checkpoints
            .get(k)
            .cloned()
            .unwrap_or_else(|| vec![Coverage::default(); self.rules.len()]);
        for i in k * CHECKPOINT_EVERY..upto {
            self.apply(&mut cov, i);
        }
        cov
    }

    /// Effects committed by calls `0..=step`, in record order (indices into the report).
    pub fn effects_at(&self, step: Option<usize>) -> Vec<usize> {
        let Some(s) = step else { return Vec::new() };
        let last_id = s as u64 + 1;
        (0..self.report.effects.len())
            .filter(|&i| self.report.effects[i].call_id <= last_id)
            .collect()
    }

    /// Effects committed by call `index`.
    pub fn effects_of(&self, index: usize) -> &[usize] {
        self.effects_by_call.get(index).map_or(&[], Vec::as_slice)
    }

    /// The earlier effect this one repeats, if it is a duplicate.
    pub fn duplicate_of(&self, effect: usize) -> Option<usize> {
        self.first_commit
            .get(effect)
            .copied()
            .filter(|&f| f != effect)
    }

    /// Whether call `index` committed an effect that repeats an earlier one.
    pub fn commits_duplicate(&self, index: usize) -> bool {
        self.effects_of(index)
            .iter()
            .any(|&e| self.duplicate_of(e).is_some())
    }

    /// The virtual time at which the calls `0..=step` had all finished (or started, if running).
    pub fn clock_at(&self, step: Option<usize>) -> f64 {
        let (Some(s), false) = (step, self.is_empty()) else {
            return 0.0;
        };
        self.report.calls[..=s.min(self.len() - 1)]
            .iter()
            .map(|c| c.started + c.elapsed.max(0.0))
            .fold(0.0, f64::max)
    }

    /// The core contract (every rule exercised, no duplicate effects, call budget) as of
    /// `step`, judged on the calls and effects recorded so far (same names and details as
    /// [`Contract`]'s checks).
    pub fn verdicts_at(&self, step: Option<usize>, max_calls: i64) -> Vec<Check> {
        let upto = step.map_or(0, |s| (s + 1).min(self.len()));
        let coverage = self.coverage_at(step);
        let partial = Report {
            seed: self.report.seed.clone(),
            clock: self.report.clock.clone(),
            calls: Vec::new(),
            effects: self
                .effects_at(step)
                .into_iter()
                .map(|i| self.report.effects[i].clone())
                .collect(),
            rules: Vec::new(),
            coverage: self
                .rules
                .iter()
                .map(|r| r.name.clone())
                .zip(coverage)
                .collect(),
            // Refused calls are only known for the whole run.
            budget_rejections: if upto == self.len() {
                self.report.budget_rejections
            } else {
                0
            },
            capture: self.report.capture,
        };
        let mut checks = Contract::new(&partial)
            .require_triggered(&[])
            .no_duplicate_effects()
            .into_checks();
        let actual = upto as u64 + partial.budget_rejections;
        let limit = max_calls.max(0);
        checks.push(Check {
            name: "Call budget".into(),
            passed: actual <= limit as u64,
            detail: format!("{actual} / {limit} calls"),
        });
        checks
    }

    /// Why each rule did or did not fault call `index`. The last answer is remembered: the
    /// explorer asks for the selected call on every frame, and a draw hashes the tool name.
    pub fn decisions(&self, index: usize) -> Vec<RuleDecision> {
        if let Some((i, d)) = self.last_decisions.borrow().as_ref()
            && *i == index
        {
            return d.clone();
        }
        let d = self.compute_decisions(index);
        *self.last_decisions.borrow_mut() = Some((index, d.clone()));
        d
    }

    fn compute_decisions(&self, index: usize) -> Vec<RuleDecision> {
        let Some(call) = self.report.calls.get(index) else {
            return Vec::new();
        };
        let before = self.coverage_at(index.checked_sub(1));
        let seed = match &self.report.seed {
            Int::Small(s) => Some(*s),
            Int::Big(_) => None,
        };
        // The recorded key is redacted; a key that lost a secret cannot be re-drawn.
        let key_ok = call.key.as_str().is_some_and(|k| !k.contains(MARKER));
        let drawer = match (seed, key_ok) {
            (Some(s), true) => Some(Drawer::new(s, &call.tool, &call.key)),
            _ => None,
        };
        let draw = |rule: &Rule| drawer.as_ref().map(|d| d.draw(&rule.name));
        let mut winner_seen = false;
        self.rules
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                let outcome = if !self.eligible(index, i) {
                    RuleOutcome::NotEligible
                } else if winner_seen {
                    RuleOutcome::Shadowed
                } else if call.fault.as_ref() == Some(&rule.name) {
                    winner_seen = true;
                    RuleOutcome::Selected { draw: draw(rule) }
                } else if rule.limit_reached(before[i].selected) {
                    RuleOutcome::LimitReached {
                        limit: rule.limit.as_ref().and_then(Int::as_i64).unwrap_or(0) as u64,
                    }
                } else {
                    RuleOutcome::Missed { draw: draw(rule) }
                };
                RuleDecision { rule: i, outcome }
            })
            .collect()
    }

    /// Index of the next call after `from` (or the first, with `None`) that satisfies `pred`.
    pub fn next_where(
        &self,
        from: Option<usize>,
        pred: impl Fn(usize, &Call) -> bool,
    ) -> Option<usize> {
        let start = from.map_or(0, |f| f + 1);
        (start..self.len()).find(|&i| pred(i, &self.report.calls[i]))
    }

    /// Index of the previous call before `from` that satisfies `pred`.
    pub fn prev_where(&self, from: usize, pred: impl Fn(usize, &Call) -> bool) -> Option<usize> {
        (0..from.min(self.len()))
            .rev()
            .find(|&i| pred(i, &self.report.calls[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::{self, Policy, RunConfig, scenario};

    fn lost_ack_retry() -> Timeline {
        let sc = scenario::bundled("lost_ack").expect("scenario");
        Timeline::new(
            lab::run(&sc, Policy::Retry, &RunConfig::default())
                .expect("run")
                .report,
        )
    }

    #[test]
    fn the_second_shipment_appears_at_step_three() {
        let t = lost_ack_retry();
        assert_eq!(t.effects_at(Some(1)), vec![0]);
        assert_eq!(t.effects_at(Some(2)), vec![0, 1]);
        assert_eq!(t.duplicate_of(1), Some(0));
        assert!(t.commits_duplicate(2) && !t.commits_duplicate(1));
        let at = |s| {
            t.verdicts_at(Some(s), 8)
                .iter()
                .find(|c| c.name == "No duplicate side effects")
                .map(|c| c.passed)
        };
        assert_eq!(at(1), Some(true));
        assert_eq!(at(2), Some(false));
        assert_eq!(t.clock_at(Some(2)), 0.32);
    }

    #[test]
    fn coverage_grows_step_by_step() {
        let t = lost_ack_retry();
        assert_eq!(t.coverage_at(None)[0], Coverage::default());
        assert_eq!(t.coverage_at(Some(0))[0], Coverage::default());
        assert_eq!(
            t.coverage_at(Some(1))[0],
            Coverage {
                eligible: 1,
                selected: 1,
                triggered: 1
            }
        );
        assert_eq!(
            t.coverage_at(Some(2)),
            t.report()
                .coverage
                .iter()
                .map(|(_, c)| *c)
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn decisions_explain_the_selected_rule() {
        let t = lost_ack_retry();
        let d = t.decisions(1);
        assert!(
            matches!(&d[0].outcome, RuleOutcome::Selected { draw: Some(draw) } if draw.hits(1.0))
        );
        assert_eq!(t.decisions(0)[0].outcome, RuleOutcome::NotEligible);
        assert_eq!(t.decisions(2)[0].outcome, RuleOutcome::NotEligible); // calls [1] only
    }
}
