//! The robust tool executor: runs one model response's batch of function calls in parallel,
//! time-boxed, classified and permissioned, so no single bad call sinks the others and every
//! call gets an answer the model can act on. It runs tools; it never calls a model.
//!
//! - [`registry`]: tool specs, argument schemas, function-tool JSON for a model API.
//! - [`taxonomy`], [`envelope`]: the seven error kinds, their hints, the answer a model reads.
//! - [`approval`]: deny-by-default approvers for side-effecting tools.
//! - [`batch`]: the discrete-event scheduler on virtual time, and the plain-data result (one
//!   output per call in request order, a log in completion order, per-call lanes).
//! - [`live`]: the same contract on real tools: bodies on threads, real milliseconds,
//!   deadlines that answer on time while the body runs on, late work on record.
//! - [`scenario`]: scenario files for the `orbit` world.
//! - [`schema`]: arguments checked against a tool source's own JSON Schema.
//!
//! Faults come from the same rule engine as the rest of the crate: every attempt is a call of
//! the executor's [`Storm`], so a batch has the usual coverage, effects, report and cassette.
//!
//! ```
//! use toolstorm::executor::{Executor, FunctionCall, Limits, approval::DenyAll};
//! use toolstorm::lab::orbit::Orbit;
//!
//! let mut orbit = Orbit::new()?;
//! let mut exec = Executor::new(Vec::new(), 7, Limits::default())?;
//! let calls = [
//!     FunctionCall::new("get_issue", r#"{"issue_id": 87}"#, "call_1"),
//!     FunctionCall::new("add_label", r#"{"issue_id": 87, "label": "triaged"}"#, "call_2"),
//! ];
//! let batch = exec.run_batch(&mut orbit, &mut DenyAll, &calls);
//! assert_eq!(batch.kinds(), ["ok", "denied"]);
//! assert_eq!(batch.answered_in_ms(), 1000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod approval;
pub mod batch;
pub mod batch_file;
pub mod envelope;
pub mod live;
pub mod registry;
pub mod scenario;
pub mod schema;
pub mod taxonomy;

use std::sync::{Arc, Mutex};

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

use crate::clock::Clock;
use crate::error::{ConfigError, Error};
use crate::json::{Object, Value};
use crate::obj;
use crate::report::Report;
use crate::rule::Rule;
use crate::storm::Storm;

pub use approval::Approver;
pub use batch::{AttemptLane, BatchResult, Lane, LogRow};
pub use envelope::Envelope;
pub use registry::{Param, ParamType, Registry, ToolSpec};
pub use taxonomy::{ErrorKind, Failure, ToolError};

/// A recorded `{"type": "function_call", "name", "arguments", "call_id"}` item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionCall {
    /// Tool name the model asked for.
    pub name: String,
    /// The arguments as JSON text (possibly malformed).
    pub arguments: String,
    /// The id the output must answer.
    pub call_id: String,
}

impl FunctionCall {
    /// A call.
    pub fn new(name: &str, arguments: &str, call_id: &str) -> FunctionCall {
        FunctionCall {
            name: name.into(),
            arguments: arguments.into(),
            call_id: call_id.into(),
        }
    }

    /// Reads an item; unknown fields and a `type` other than `function_call` are errors
    /// (`id` and `status`, which the Responses API also sends, are accepted and ignored).
    pub fn from_value(v: &Value) -> Result<FunctionCall, ConfigError> {
        let o = crate::rule::require_keys(
            v,
            &["type", "name", "arguments", "call_id"],
            &["id", "status"],
        )?;
        if o.get("type").and_then(Value::as_str) != Some("function_call") {
            return Err(ConfigError::new("Invalid scenario file")
                .at("type")
                .because("expected \"function_call\""));
        }
        let text = |key: &str| match o.get(key).and_then(Value::as_str) {
            Some(s) if key == "arguments" || !s.is_empty() => Ok(s.to_owned()),
            _ => Err(ConfigError::new("Invalid scenario file")
                .at(key)
                .because("expected a non-empty string")),
        };
        Ok(FunctionCall {
            name: text("name")?,
            arguments: text("arguments")?,
            call_id: text("call_id")?,
        })
    }

    /// The item.
    pub fn to_value(&self) -> Value {
        obj! {
            "type" => "function_call",
            "name" => self.name.as_str(),
            "arguments" => self.arguments.as_str(),
            "call_id" => self.call_id.as_str(),
        }
    }
}

/// How much the executor allows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Most tool bodies running at once (1–64; default 4).
    pub max_concurrency: usize,
    /// Most attempts per call, retries included (1–10; default 2).
    pub max_attempts: u32,
    /// Deadline in seconds for tools without their own (default 5).
    pub default_timeout: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_concurrency: 4,
            max_attempts: 2,
            default_timeout: 5.0,
        }
    }
}

impl Limits {
    /// Checks the ranges; the error names the field.
    pub fn check(&self) -> Result<(), ConfigError> {
        let bad = |path: &str, why: &str| {
            Err(ConfigError::new("Invalid executor limits")
                .at(path)
                .because(why))
        };
        if !(1..=64).contains(&self.max_concurrency) {
            return bad("max_concurrency", "expected an integer between 1 and 64");
        }
        if !(1..=10).contains(&self.max_attempts) {
            return bad("max_attempts", "expected an integer between 1 and 10");
        }
        if !(self.default_timeout.is_finite()
            && self.default_timeout > 0.0
            && self.default_timeout <= 86_400.0)
        {
            return bad("default_timeout", "expected seconds in (0, 86400]");
        }
        Ok(())
    }

    /// The `{"max_concurrency", "max_attempts", "default_timeout"}` object.
    pub fn to_value(&self) -> Value {
        obj! {
            "max_concurrency" => self.max_concurrency,
            "max_attempts" => self.max_attempts,
            "default_timeout" => Value::Float(self.default_timeout),
        }
    }
}

/// A world the executor can run tools in. A body's duration is virtual: the executor asks how
/// long it takes, lets other calls run meanwhile, and runs it when that time has passed.
pub trait Toolbox {
    /// The tools this world offers.
    fn registry(&self) -> &Registry;
    /// Virtual seconds the body of `tool` takes with these (checked) arguments.
    fn duration(&self, tool: &str, args: &Object) -> f64;
    /// Runs the body at the moment it completes. `commit(name, key)` records a side effect in
    /// the run's effect ledger.
    fn run(
        &mut self,
        tool: &str,
        args: &Object,
        commit: &mut dyn FnMut(&str, &str) -> Result<(), Error>,
    ) -> Result<Value, ToolError>;
}

/// The engine's clock during a batch: the scheduler sets it to the current event's time
/// before each interaction with the [`Storm`]. Named `VirtualClock` in reports, since that is
/// what it is to the trace.
#[derive(Debug, Default)]
pub struct SchedulerClock {
    now: Mutex<f64>,
}

impl SchedulerClock {
    /// Sets the time, in virtual milliseconds.
    pub fn set_ms(&self, ms: u64) {
        *self.now.lock().unwrap_or_else(|p| p.into_inner()) = ms as f64 / 1000.0;
    }
}

impl Clock for SchedulerClock {
    fn now(&self) -> f64 {
        *self.now.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn sleep(&self, seconds: f64) -> Result<(), ConfigError> {
        let s = crate::clock::check_duration(seconds)?;
        *self.now.lock().unwrap_or_else(|p| p.into_inner()) += s;
        Ok(())
    }
    fn name(&self) -> &'static str {
        "VirtualClock"
    }
}

/// The engine run behind an executor: its rules and seed on `clock`, calls unbounded (the
/// executor's own limits apply).
fn engine(rules: Vec<Rule>, seed: i64, clock: Arc<dyn Clock>) -> Result<Storm, ConfigError> {
    Storm::builder()
        .rules(rules)
        .seed(seed)
        .clock(clock)
        .max_calls(crate::storm::MAX_CALLS_LIMIT)
        .build()
}

/// Runs batches of function calls against a [`Toolbox`]. Time continues across batches: each
/// batch starts when the previous one has settled (every body, late ones included, ended).
pub struct Executor {
    storm: Storm,
    clock: Arc<SchedulerClock>,
    limits: Limits,
    rng: ChaCha8Rng,
    now_ms: u64,
    batches: usize,
}

impl Executor {
    /// An executor whose faults come from `rules`, decisions and retry jitter from `seed`.
    pub fn new(rules: Vec<Rule>, seed: i64, limits: Limits) -> Result<Executor, ConfigError> {
        limits.check()?;
        let clock = Arc::new(SchedulerClock::default());
        let storm = engine(rules, seed, clock.clone())?;
        Ok(Executor {
            storm,
            clock,
            limits,
            rng: ChaCha8Rng::seed_from_u64(seed as u64),
            now_ms: 0,
            batches: 0,
        })
    }

    /// The limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The engine run behind the executor.
    pub fn storm(&self) -> &Storm {
        &self.storm
    }

    /// The trace so far.
    pub fn report(&self) -> Report {
        self.storm.report()
    }

    /// Virtual milliseconds since the executor began.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// Runs one batch. Never fails: every call gets exactly one output, in request order.
    pub fn run_batch(
        &mut self,
        toolbox: &mut dyn Toolbox,
        approver: &mut dyn Approver,
        calls: &[FunctionCall],
    ) -> BatchResult {
        self.batches += 1;
        let result = batch::Scheduler::new(
            &self.storm,
            &self.clock,
            &self.limits,
            &mut self.rng,
            toolbox,
            approver,
            calls,
            self.now_ms,
            self.batches,
        )
        .run();
        self.now_ms = result.settled_ms;
        self.clock.set_ms(self.now_ms);
        result
    }

    /// Runs a single call: its `function_call_output` item. Never fails.
    pub fn run_one(
        &mut self,
        toolbox: &mut dyn Toolbox,
        approver: &mut dyn Approver,
        call: &FunctionCall,
    ) -> Value {
        let result = self.run_batch(toolbox, approver, std::slice::from_ref(call));
        result.outputs.into_iter().next().unwrap_or_else(|| {
            Envelope::failure(&Failure::Internal {
                message: "the executor produced no output".into(),
            })
            .output_item(&call.call_id)
        })
    }
}
