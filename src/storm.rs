//! A run (spec §5–§6): wrapped tool calls with per-tool ordinals and invocation keys, rule
//! selection and coverage, fault phases, the call budget, nesting, effects and payload capture.
//!
//! ```
//! use std::sync::Arc;
//! use toolstorm::{Storm, rule::{FaultKind, RuleSpec}, clock::VirtualClock, obj};
//!
//! let rule = RuleSpec::new("lost", "ship", FaultKind::ResponseLost).calls([1]).build()?;
//! let storm = Storm::builder().rule(rule).seed(42).build()?;
//! let first = storm.call("ship", obj! {"order" => "o-1"}, || {
//!     storm.effect("shipment", "o-1")?;
//!     Ok(obj! {"id" => 1})
//! });
//! assert!(matches!(first, Err(toolstorm::Error::ResponseLost(_))));
//! assert_eq!(storm.report().effects.len(), 1); // it committed anyway
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::clock::{Clock, VirtualClock};
use crate::decision::Drawer;
use crate::error::{ConfigError, Error, Result};
use crate::hashing::{Map, Set};
use crate::json::float::round6;
use crate::json::{Int, Text, Value};
use crate::redact::Redactor;
use crate::report::{Call, Coverage, Effect, ErrorRecord, Report, Status};
use crate::rule::{FaultKind, Rule, ToolMatches};

mod scope;
pub use scope::{Scope, Sleeper};

/// Largest seed magnitude a run accepts (JavaScript-safe integers).
pub const MAX_SAFE_SEED: i64 = 9_007_199_254_740_991;
/// Largest call budget.
pub const MAX_CALLS_LIMIT: usize = 10_000;
/// Most effects one run records.
pub const MAX_EFFECTS: usize = 10_000;
/// Most rules one run takes.
pub const MAX_RULES: usize = 100;

/// Configures a [`Storm`].
pub struct StormBuilder {
    rules: Vec<Rule>,
    seed: i64,
    clock: Option<Arc<dyn Clock>>,
    sleeper: Option<Arc<dyn Sleeper>>,
    max_calls: usize,
    capture: bool,
    redactor: Redactor,
}

impl Default for StormBuilder {
    fn default() -> Self {
        StormBuilder {
            rules: Vec::new(),
            seed: 0,
            clock: None,
            sleeper: None,
            max_calls: 1000,
            capture: true,
            redactor: Redactor::default(),
        }
    }
}

impl StormBuilder {
    /// Adds a rule (order matters: the first eligible rule that hits wins).
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }
    /// Adds rules.
    pub fn rules(mut self, rules: impl IntoIterator<Item = Rule>) -> Self {
        self.rules.extend(rules);
        self
    }
    /// The seed every decision is keyed by.
    pub fn seed(mut self, seed: i64) -> Self {
        self.seed = seed;
        self
    }
    /// The clock (default: a fresh [`VirtualClock`]).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }
    /// How async calls wait on a clock that is not virtual (injected latency,
    /// [`Scope::sleep`]): your runtime's sleep, e.g. `|d| tokio::time::sleep(d)`. The engine
    /// depends on no runtime; on a [`VirtualClock`] nothing waits and none is needed.
    pub fn sleeper(mut self, sleeper: impl Sleeper + 'static) -> Self {
        self.sleeper = Some(Arc::new(sleeper));
        self
    }
    /// Most calls before `BudgetExceeded` (1–10,000; default 1,000).
    pub fn max_calls(mut self, max_calls: usize) -> Self {
        self.max_calls = max_calls;
        self
    }
    /// Whether arguments and outputs are recorded (default true).
    pub fn capture(mut self, capture: bool) -> Self {
        self.capture = capture;
        self
    }
    /// The redactor applied to everything recorded.
    pub fn redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// Validates the configuration (the reference's checks, in its order).
    pub fn build(self) -> Result<Storm, ConfigError> {
        if !(-MAX_SAFE_SEED..=MAX_SAFE_SEED).contains(&self.seed) {
            return Err(ConfigError::new(
                "Seed must be an integer in the JavaScript-safe range",
            ));
        }
        if !(1..=MAX_CALLS_LIMIT).contains(&self.max_calls) {
            return Err(ConfigError::new(
                "max_calls must be an integer between 1 and 10000",
            ));
        }
        let names: HashSet<&Text> = self.rules.iter().map(|r| &r.name).collect();
        if self.rules.len() > MAX_RULES || names.len() != self.rules.len() {
            return Err(ConfigError::new("Use at most 100 uniquely named rules"));
        }
        for (i, rule) in self.rules.iter().enumerate() {
            self.redactor
                .capture(&rule.replacement)
                .map_err(|e| e.at(format!("rules[{i}].replacement")))?;
        }
        let clock = self.clock.unwrap_or_else(|| Arc::new(VirtualClock::new()));
        let t0 = clock.now();
        let coverage = vec![Coverage::default(); self.rules.len()];
        Ok(Storm {
            rules: self.rules,
            seed: self.seed,
            clock,
            sleeper: self.sleeper,
            max_calls: self.max_calls,
            capture: self.capture,
            redactor: self.redactor,
            t0: AtomicU64::new(t0.to_bits()),
            state: Mutex::new(State {
                coverage,
                ..State::default()
            }),
        })
    }
}

#[derive(Default)]
struct State {
    calls: Vec<Call>,
    effects: Vec<Effect>,
    coverage: Vec<Coverage>,
    budget_rejections: u64,
    ordinals: Map<Text, u64>,
    used_keys: Set<(Text, Text)>,
    identities: Map<(Text, Text), u64>,
    /// Indices of calls currently executing, innermost last.
    active: Vec<usize>,
    /// Invocation keys set by [`Storm::invocation`], innermost last.
    keys: Vec<Text>,
    /// Which rules match each tool name called so far.
    tool_matches: ToolMatches,
}

/// Whether a caller writing a call's line ([`Storm::write_call_unless`]) has the call's output
/// on record elsewhere, so the line can leave it out.
#[derive(Clone, Copy, Debug)]
pub enum OutputOnRecord<'a> {
    /// No: the line has the output.
    No,
    /// When the output is [`Value::identical`] to this.
    IfIdentical(&'a Value),
    /// Yes: the engine was given no output of its own (the caller holds it).
    Yes,
}

/// One run of the engine: wrap tool calls with [`Storm::call`], record commits with
/// [`Storm::effect`], take the trace with [`Storm::report`].
pub struct Storm {
    rules: Vec<Rule>,
    seed: i64,
    clock: Arc<dyn Clock>,
    sleeper: Option<Arc<dyn Sleeper>>,
    max_calls: usize,
    capture: bool,
    redactor: Redactor,
    /// When the run began on its clock (an `f64`'s bits; moved by [`Storm::resume`]).
    t0: AtomicU64,
    state: Mutex<State>,
}

/// A call begun with [`Storm::begin_call`] and not yet finished: the handle a scheduler holds
/// while the call's body runs on its own timeline.
#[derive(Debug)]
pub struct CallHandle {
    index: usize,
    rule: Option<usize>,
}

impl CallHandle {
    /// The call's id in the report (1-based).
    pub fn id(&self) -> u64 {
        self.index as u64 + 1
    }

    /// The position of the rule selected for the call, if any (see [`Storm::rules`]).
    pub fn rule_index(&self) -> Option<usize> {
        self.rule
    }
}

/// Where a new call's parent comes from.
#[derive(Clone, Copy, Debug)]
enum Parent {
    /// The synchronous context: the innermost call executing on this run's call stack (the
    /// new call joins that stack).
    Context,
    /// None: a call on a caller-driven timeline ([`Storm::begin_call`]).
    Detached,
    /// The call a [`Scope`] belongs to (an async call's body), if any.
    Of(Option<usize>),
}

/// What the selected fault does before a call's body runs ([`Storm::prelude`]).
#[derive(Debug)]
pub enum Prelude {
    /// Run the body; `latency` is the injected delay to wait first (a `latency` fault).
    Run {
        /// Seconds of injected latency, when a latency fault was selected.
        latency: Option<f64>,
    },
    /// Do not run the body: the call ends with this outcome (an injected error or replacement).
    Skip(Result<Value>),
}

impl Storm {
    /// Starts configuring a run.
    pub fn builder() -> StormBuilder {
        StormBuilder::default()
    }

    /// The run's clock (tools sleep on it).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Sleeps on the run's clock.
    pub fn sleep(&self, seconds: f64) -> Result<()> {
        Ok(self.clock.sleep(seconds)?)
    }

    /// The rules, in configuration order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The seed.
    pub fn seed(&self) -> i64 {
        self.seed
    }

    /// The redactor.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn since_start(&self) -> f64 {
        round6(self.clock.now() - self.start())
    }

    /// Runs `f` with `key` as the invocation key of every wrapped call made inside it
    /// (nested calls included). Keys stabilise decisions across scheduling.
    pub fn invocation<T>(&self, key: &str, f: impl FnOnce() -> T) -> Result<T> {
        if !(1..=200).contains(&key.chars().count()) {
            return Err(Error::config("Invocation key must be 1–200 characters"));
        }
        self.lock().keys.push(Text::from(key));
        let out = f();
        self.lock().keys.pop();
        Ok(out)
    }

    /// Calls a tool through the engine. `arguments` are what the call was given (recorded
    /// after redaction); `f` is the live tool. Faults may stop it before it runs, replace it,
    /// delay it, or lose its acknowledgement after it succeeded.
    ///
    /// This is the synchronous form of [`Storm::begin_call`], [`Storm::prelude`],
    /// [`Storm::body_started`], [`Storm::body_finished`] and [`Storm::finish_call`], nested in
    /// any enclosing wrapped call and sleeping injected latency on the run's clock.
    pub fn call<F>(&self, tool: &str, arguments: Value, f: F) -> Result<Value>
    where
        F: FnOnce() -> Result<Value>,
    {
        let handle = self.begin(tool, arguments, None, Parent::Context)?;
        let outcome = match self.prelude(&handle) {
            Prelude::Skip(outcome) => outcome,
            Prelude::Run { latency } => self.run_body(&handle, latency, f),
        };
        self.finish_call(&handle, outcome)
    }

    fn run_body<F>(&self, handle: &CallHandle, latency: Option<f64>, f: F) -> Result<Value>
    where
        F: FnOnce() -> Result<Value>,
    {
        if let Some(delay) = latency {
            self.clock.sleep(delay)?;
        }
        self.body_started(handle);
        let value = f();
        self.body_finished(handle, value)
    }

    /// Begins a call whose body runs on a caller-driven timeline (a scheduler that interleaves
    /// many calls). Unlike [`Storm::call`] it has no parent and is not the target of
    /// [`Storm::effect`]: record its commits with [`Storm::effect_for`]. `key` is its invocation
    /// key (default `#ordinal`). Then take [`Storm::prelude`], run the body (after
    /// [`Storm::body_started`], ending with [`Storm::body_finished`]) unless it says skip, and
    /// end with [`Storm::finish_call`]. Time is read from the run's clock at each step.
    pub fn begin_call(
        &self,
        tool: &str,
        arguments: Value,
        key: Option<&str>,
    ) -> Result<CallHandle> {
        if let Some(key) = key
            && !(1..=200).contains(&key.chars().count())
        {
            return Err(Error::config("Invocation key must be 1–200 characters"));
        }
        self.begin(tool, arguments, key, Parent::Detached)
    }

    fn begin(
        &self,
        tool: &str,
        arguments: Value,
        key: Option<&str>,
        parent: Parent,
    ) -> Result<CallHandle> {
        if !(1..=200).contains(&tool.chars().count()) {
            return Err(Error::config("Tool name must be 1–200 characters"));
        }
        let tool = Text::from(tool);
        let mut st = self.lock();
        if st.calls.len() >= self.max_calls {
            st.budget_rejections += 1;
            return Err(Error::BudgetExceeded(format!(
                "Tool call budget of {} exhausted",
                self.max_calls
            )));
        }
        let ordinal = st.ordinals.get(&tool).copied().unwrap_or(0) + 1;
        let raw_key = match key {
            Some(k) => Text::from(k),
            None => st.keys.last().cloned().unwrap_or_else(|| {
                let mut k = String::from("#");
                crate::json::write_int(ordinal, &mut k);
                Text::from(k)
            }),
        };
        let pair = (tool.clone(), raw_key.clone());
        if st.used_keys.contains(&pair) {
            return Err(Error::config("Duplicate invocation key for this tool"));
        }
        let captured_args = if self.capture {
            // The arguments are the engine's now: kept as they are when nothing is redacted.
            self.redactor.capture_owned(arguments)?
        } else {
            Value::Null
        };
        st.used_keys.insert(pair);
        match st.ordinals.get_mut(&tool) {
            Some(o) => *o = ordinal,
            None => {
                st.ordinals.insert(tool.clone(), ordinal);
            }
        }

        let mut chosen: Option<usize> = None;
        let row = st.tool_matches.row(&self.rules, &tool);
        let drawer = Drawer::new(self.seed, &tool, &raw_key);
        for (i, rule) in self.rules.iter().enumerate() {
            if !st.tool_matches.eligible(&self.rules, row, i, ordinal) {
                continue;
            }
            st.coverage[i].eligible += 1;
            if chosen.is_none()
                && !rule.limit_reached(st.coverage[i].selected)
                && drawer.draw(&rule.name).hits(rule.probability)
            {
                chosen = Some(i);
                st.coverage[i].selected += 1;
            }
        }
        // The parent is the enclosing call, if it is still running (a detached task can
        // outlive the call that started it).
        let enclosing = match parent {
            Parent::Context => st.active.last().copied(),
            Parent::Detached => None,
            Parent::Of(i) => i,
        };
        let parent_id = enclosing
            .filter(|&i| st.calls[i].status == Status::Running)
            .map(|i| st.calls[i].id);
        let index = st.calls.len();
        let rule = chosen.map(|i| &self.rules[i]);
        st.calls.push(Call {
            id: index as u64 + 1,
            tool: tool.clone(),
            ordinal,
            key: self.redactor.replace_secrets(&raw_key),
            started: self.since_start(),
            parent_id,
            elapsed: 0.0,
            status: Status::Running,
            fault: rule.map(|r| r.name.clone()),
            kind: rule.map(|r| r.kind),
            executed: false,
            injected: false,
            arguments: captured_args,
            output: Value::Null,
            error: None,
            capture_error: false,
        });
        if matches!(parent, Parent::Context) {
            st.active.push(index);
        }
        Ok(CallHandle {
            index,
            rule: chosen,
        })
    }

    fn mark_injected(&self, handle: &CallHandle, rule: usize) {
        let mut st = self.lock();
        if !st.calls[handle.index].injected {
            st.calls[handle.index].injected = true;
            st.coverage[rule].triggered += 1;
        }
    }

    /// What the call's selected fault does before its body runs. Faults that act now (errors,
    /// replacements, latency) are marked injected here.
    pub fn prelude(&self, handle: &CallHandle) -> Prelude {
        let Some((i, rule)) = handle.rule.map(|i| (i, &self.rules[i])) else {
            return Prelude::Run { latency: None };
        };
        if rule.kind != FaultKind::ResponseLost {
            self.mark_injected(handle, i);
        }
        match rule.kind {
            FaultKind::Timeout => Prelude::Skip(Err(Error::Timeout(
                "Injected timeout before execution".into(),
            ))),
            FaultKind::RateLimit => Prelude::Skip(Err(Error::RateLimited {
                retry_after: rule.delay,
            })),
            FaultKind::Unavailable => Prelude::Skip(Err(Error::Unavailable(
                "Injected service outage before execution".into(),
            ))),
            FaultKind::Latency => Prelude::Run {
                latency: Some(rule.delay),
            },
            FaultKind::Replace => Prelude::Skip(Ok(rule.replacement.clone())),
            FaultKind::ResponseLost => Prelude::Run { latency: None },
        }
    }

    /// Marks the call's live body as running (after any injected latency).
    pub fn body_started(&self, handle: &CallHandle) {
        self.lock().calls[handle.index].executed = true;
    }

    /// Takes back [`Storm::body_started`]: the body was to run but never got its input (a
    /// request held for a server that stopped reading).
    pub fn body_not_started(&self, handle: &CallHandle) {
        self.lock().calls[handle.index].executed = false;
    }

    /// Passes the body's result through the after-success phase: a `response_lost` fault turns
    /// a success into `ResponseLost` (the work stays committed).
    pub fn body_finished(&self, handle: &CallHandle, value: Result<Value>) -> Result<Value> {
        let value = value?;
        if let Some(i) = handle.rule
            && self.rules[i].kind == FaultKind::ResponseLost
        {
            self.mark_injected(handle, i);
            return Err(Error::ResponseLost(
                "Tool completed; acknowledgement was lost".into(),
            ));
        }
        Ok(value)
    }

    /// Ends a call with its outcome (recorded with the clock's current time) and returns it.
    pub fn finish_call(&self, handle: &CallHandle, outcome: Result<Value>) -> Result<Value> {
        let captured = match (&outcome, self.capture) {
            (Ok(v), true) => Some(self.redactor.capture(v)),
            _ => None,
        };
        self.record_finish(handle, &outcome, captured);
        outcome
    }

    /// [`Storm::finish_call`] for a caller that does not need the outcome back: a result with
    /// nothing to redact becomes the call's output as it is, not a copy.
    pub fn end_call(&self, handle: &CallHandle, outcome: Result<Value>) {
        let (outcome, captured) = match outcome {
            Ok(v) if self.capture => {
                let captured = self.redactor.capture_owned(v);
                // The result itself is no longer needed: only whether there was one.
                (Ok(Value::Null), Some(captured))
            }
            other => (other, None),
        };
        self.record_finish(handle, &outcome, captured);
    }

    /// [`Storm::end_call`] of a call that succeeded, without keeping its output (its
    /// recording has no room for it): the report says the output was not captured.
    pub fn end_call_unkept(&self, handle: &CallHandle) {
        let no_room = Err(ConfigError::new("The recording has no room for the output"));
        self.record_finish(handle, &Ok(Value::Null), Some(no_room));
    }

    fn record_finish(
        &self,
        handle: &CallHandle,
        outcome: &Result<Value>,
        captured: Option<std::result::Result<Value, ConfigError>>,
    ) {
        let now = self.clock.now() - self.start();
        let mut st = self.lock();
        let call = &mut st.calls[handle.index];
        match outcome {
            Ok(_) => {
                call.status = Status::Ok;
                match captured {
                    Some(Ok(v)) => call.output = v,
                    Some(Err(_)) => call.capture_error = true,
                    None => {}
                }
            }
            Err(e) => {
                call.status = if e.is_cancellation() {
                    Status::Cancelled
                } else {
                    Status::Error
                };
                call.error = Some(error_record(e));
            }
        }
        call.elapsed = round6(now - call.started);
        if let Some(pos) = st.active.iter().rposition(|&i| i == handle.index) {
            st.active.remove(pos);
        }
    }

    /// Records a side-effect commit from inside an executing wrapped call.
    pub fn effect(&self, name: &str, key: &str) -> Result<()> {
        let at = self.since_start();
        let mut st = self.lock();
        let Some(&current) = st.active.last() else {
            return Err(Error::config(
                "effect() must be called inside an executing wrapped tool",
            ));
        };
        self.record_effect(&mut st, current, name, key, at)
    }

    /// Records a side-effect commit by the call `handle` (begun with [`Storm::begin_call`]),
    /// at the clock's current time. The call must still be running.
    pub fn effect_for(&self, handle: &CallHandle, name: &str, key: &str) -> Result<()> {
        let at = self.since_start();
        let mut st = self.lock();
        self.record_effect(&mut st, handle.index, name, key, at)
    }

    fn record_effect(
        &self,
        st: &mut State,
        current: usize,
        name: &str,
        key: &str,
        at: f64,
    ) -> Result<()> {
        let ok_len = |s: &str| (1..=200).contains(&s.chars().count());
        if !ok_len(name) || !ok_len(key) {
            return Err(Error::config(
                "Effect name and key must be 1–200 characters",
            ));
        }
        if st.calls[current].status != Status::Running {
            return Err(Error::config(
                "Cannot record an effect after its wrapped call completed",
            ));
        }
        if st.effects.len() >= MAX_EFFECTS {
            return Err(Error::BudgetExceeded("Effect trace limit reached".into()));
        }
        let raw = (Text::from(name), Text::from(key));
        let next = st.identities.len() as u64 + 1;
        let identity = *st.identities.entry(raw.clone()).or_insert(next);
        let red_name = self.redactor.replace_secrets(&raw.0);
        let red_key = self.redactor.replace_secrets(&raw.1);
        let redacted = red_name != raw.0 || red_key != raw.1;
        let call_id = st.calls[current].id;
        st.effects.push(Effect {
            name: red_name,
            key: red_key,
            call_id,
            at,
            identity,
            redacted,
        });
        Ok(())
    }

    fn start(&self) -> f64 {
        f64::from_bits(self.t0.load(Ordering::Relaxed))
    }

    /// Continues a run recorded earlier with the same rules and seed (a recording a new
    /// session appends to): its calls, effects, counters, per-tool ordinals and keys carry on,
    /// and its time goes on from where the last call ended. Only a run with no calls yet can
    /// resume.
    pub fn resume(&self, report: &Report) -> std::result::Result<(), ConfigError> {
        let mut st = self.lock();
        if !st.calls.is_empty() {
            return Err(ConfigError::new(
                "Only a run without calls can resume another",
            ));
        }
        if report.seed != Int::Small(self.seed) {
            return Err(ConfigError::new("The recording was made with another seed"));
        }
        let ours: Vec<String> = self
            .rules
            .iter()
            .map(|r| {
                let replacement = self.redactor.capture(&r.replacement).unwrap_or(Value::Null);
                crate::json::canonical(&r.to_value_with(replacement))
            })
            .collect();
        let theirs: Vec<String> = report.rules.iter().map(crate::json::canonical).collect();
        if ours != theirs {
            return Err(ConfigError::new("The recording was made with other rules"));
        }
        let mut coverage = vec![Coverage::default(); self.rules.len()];
        for (i, rule) in self.rules.iter().enumerate() {
            if let Some(c) = report.coverage_of(&rule.name.to_lossy()) {
                coverage[i] = c;
            }
        }
        let mut end: f64 = 0.0;
        for c in &report.calls {
            let ordinal = st.ordinals.entry(c.tool.clone()).or_insert(0);
            *ordinal = (*ordinal).max(c.ordinal);
            st.used_keys.insert((c.tool.clone(), c.key.clone()));
            end = end.max(c.started + c.elapsed.max(0.0));
        }
        for e in &report.effects {
            st.identities
                .entry((e.name.clone(), e.key.clone()))
                .or_insert(e.identity);
        }
        st.calls = report.calls.clone();
        st.effects = report.effects.clone();
        st.coverage = coverage;
        st.budget_rejections = report.budget_rejections;
        let t0 = self.clock.now() - end;
        self.t0.store(t0.to_bits(), Ordering::Relaxed);
        Ok(())
    }

    /// Calls begun so far.
    pub fn call_count(&self) -> usize {
        self.lock().calls.len()
    }

    /// Appends call `id`'s canonical text with its arguments (as the report has it now) to
    /// `out`, without copying the call; `executing`: its body is about to start (a request on
    /// its way to a server), so it is written as executed. Gives the bytes the arguments took,
    /// `None` when there is no such call.
    pub fn write_begun_call(&self, id: u64, executing: bool, out: &mut String) -> Option<usize> {
        let st = self.lock();
        let c = id.checked_sub(1).and_then(|i| st.calls.get(i as usize))?;
        Some(c.write_members_executed(true, true, c.executed || executing, out))
    }

    /// Appends call `id`'s canonical text (as the report has it now) to `out`, without copying
    /// the call, without its `arguments` unless `arguments` (see [`Call::write_members`]), and
    /// without its `output` when the caller has it on record already ([`OutputOnRecord`]):
    /// gives the bytes the arguments took and whether the output was left out, `None` when
    /// there is no such call.
    pub fn write_call_unless(
        &self,
        id: u64,
        arguments: bool,
        output: OutputOnRecord<'_>,
        out: &mut String,
    ) -> Option<(usize, bool)> {
        let st = self.lock();
        let c = id.checked_sub(1).and_then(|i| st.calls.get(i as usize))?;
        let left_out = match output {
            OutputOnRecord::No => false,
            OutputOnRecord::IfIdentical(o) => c.output.identical(o),
            OutputOnRecord::Yes => true,
        };
        Some((c.write_members(arguments, !left_out, out), left_out))
    }

    /// Appends the per-rule counters as one JSON object (rule names in rule order, each with
    /// [`Coverage`]'s canonical text) to `out`, and gives the calls refused by the budget,
    /// so far.
    pub fn write_counters(&self, out: &mut String) -> u64 {
        let st = self.lock();
        out.push('{');
        for (i, (rule, c)) in self.rules.iter().zip(st.coverage.iter()).enumerate() {
            if i > 0 {
                out.push(',');
            }
            crate::json::write_text(&rule.name, out);
            out.push(':');
            c.write_canonical(out);
        }
        out.push('}');
        st.budget_rejections
    }

    /// Lets go of a finished call's captured arguments and output (a recorder that has
    /// written them elsewhere keeps memory flat over a long session). The call's report
    /// entry then holds `null` for both.
    pub fn release_payloads(&self, id: u64) {
        let mut st = self.lock();
        if let Some(c) = id.checked_sub(1).and_then(|i| st.calls.get_mut(i as usize))
            && c.status != Status::Running
        {
            c.arguments = Value::Null;
            c.output = Value::Null;
        }
    }

    /// The effects recorded from position `from` on.
    pub fn effects_from(&self, from: usize) -> Vec<Effect> {
        let st = self.lock();
        st.effects
            .get(from..)
            .map(<[Effect]>::to_vec)
            .unwrap_or_default()
    }

    /// A detached snapshot of the trace so far.
    pub fn report(&self) -> Report {
        let st = self.lock();
        let rules = self
            .rules
            .iter()
            .map(|r| {
                let replacement = self.redactor.capture(&r.replacement).unwrap_or(Value::Null);
                r.to_value_with(replacement)
            })
            .collect();
        Report {
            seed: Int::Small(self.seed),
            clock: self.clock.name().to_owned(),
            calls: st.calls.clone(),
            effects: st.effects.clone(),
            rules,
            coverage: self
                .rules
                .iter()
                .map(|r| r.name.clone())
                .zip(st.coverage.iter().copied())
                .collect(),
            budget_rejections: st.budget_rejections,
            capture: self.capture,
        }
    }
}

fn error_record(e: &Error) -> ErrorRecord {
    let mut type_name: String = e.type_name().chars().take(200).collect();
    if type_name.is_empty() {
        type_name = "Exception".into();
    }
    ErrorRecord {
        type_name: Text::from(type_name),
        known: e.is_known(),
        retry_after: match e {
            // The reference refuses a non-finite or negative wait when the error is made.
            Error::RateLimited { retry_after } => {
                Some(if retry_after.is_finite() && *retry_after >= 0.0 {
                    *retry_after
                } else {
                    0.0
                })
            }
            _ => None,
        },
    }
}

/// A run that fails the current test when dropped if any configured rule never fired — the
/// Rust counterpart of the reference's `storm_factory` pytest fixture. Build it with
/// [`StormBuilder::build_checked`]; use it as a [`Storm`].
///
/// ```should_panic
/// use toolstorm::{obj, rule::{FaultKind, RuleSpec}, Storm};
/// let rule = RuleSpec::new("never", "other_tool", FaultKind::Timeout).build()?;
/// let storm = Storm::builder().rule(rule).build_checked()?;
/// storm.call("tool", obj! {}, || Ok(obj! {}))?;
/// // dropping `storm` here panics: "Fault exercised: never: Triggered 0 time(s)"
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RequireTriggered {
    storm: Storm,
}

impl StormBuilder {
    /// Builds a run that asserts, when dropped, that every rule was triggered at least once.
    pub fn build_checked(self) -> Result<RequireTriggered, ConfigError> {
        Ok(RequireTriggered {
            storm: self.build()?,
        })
    }
}

impl std::ops::Deref for RequireTriggered {
    type Target = Storm;
    fn deref(&self) -> &Storm {
        &self.storm
    }
}

impl Drop for RequireTriggered {
    fn drop(&mut self) {
        if std::thread::panicking() || self.storm.rules.is_empty() {
            return;
        }
        let report = self.storm.report();
        if let Err(failure) = crate::contract::Contract::new(&report)
            .require_triggered(&[])
            .assert_valid()
        {
            panic!("{failure}");
        }
    }
}
