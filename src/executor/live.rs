//! The executor on real tools and the wall clock: the same contract as the simulation in
//! [`super::batch`] — checks, approvals one at a time, at most `max_concurrency` bodies at once,
//! deadlines, retries of transient failures of idempotent tools after a seeded pause, one
//! output per call in request order, a log in completion order — with each body on a thread of
//! its own and times measured in real milliseconds.
//!
//! **Deadlines that return.** A call is answered at its deadline; its body is not cancelled
//! (Rust cannot kill a thread) and runs on. What it commits reaches the effect ledger when it
//! commits, and when it ends the executor records it as late work ([`LiveExecutor::late`]);
//! the batch itself returns when its last call is answered, not when its slowest body ends.
//! The lesson's bug — Python's `ThreadPoolExecutor` with-block, which waits for the stuck
//! thread on the way out — has Rust twins this executor avoids:
//! - running the bodies inside `std::thread::scope` (or joining every worker in a loop at the
//!   end of the batch): the scope cannot end before its threads do, so the batch answers when
//!   its slowest body ends, however early its deadline;
//! - running them with a tokio runtime's `spawn_blocking` and dropping the runtime: its
//!   shutdown waits for blocking work that has started.
//!
//! A body that never ends keeps its slot, as in the simulation; a call still waiting for its
//! first slot after its own timeout is answered `timeout`, so stuck work cannot keep a batch
//! from answering.
//!
//! Here the coordinating thread never joins a body: bodies report over a channel, and the
//! coordinator waits on it only until the next deadline or retry. At the end of a process,
//! [`LiveExecutor::settle`] waits at most a grace period for late work, then says which bodies
//! were still running.
//!
//! The engine holds no runtime: blocking tools run on threads of their own; an async tool's
//! future runs on the user's runtime through a [`Spawn`] they provide, while a thread of ours
//! waits for it (and records its commits as they come).
//!
//! On tokio, one blocking tool and one async tool in one batch:
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use toolstorm::executor::live::{LiveExecutor, Spawn, Tools};
//! use toolstorm::executor::{FunctionCall, Limits, Param, ParamType, ToolSpec, approval::DenyAll};
//! use toolstorm::json::Value;
//!
//! /// Tasks go to the tokio runtime the program already has.
//! struct OnTokio(tokio::runtime::Handle);
//! impl Spawn for OnTokio {
//!     fn spawn(&self, task: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) {
//!         self.0.spawn(task);
//!     }
//! }
//!
//! let runtime = tokio::runtime::Runtime::new()?;
//! let tools = Tools::new()
//!     // Blocking: runs on a thread of its own (the lesson's `asyncio.to_thread`).
//!     .tool(
//!         ToolSpec::new("read_file", "Reads a file").param(Param::new("path", ParamType::String, "Where")),
//!         |args, _| {
//!             std::thread::sleep(Duration::from_millis(20));
//!             Ok(Value::from(format!("contents of {}", args.get("path").and_then(Value::as_str).unwrap_or(""))))
//!         },
//!     )
//!     // Async: a future on the runtime; its deadline (50 ms) answers before it ends.
//!     .async_tool(
//!         ToolSpec::new("fetch", "Fetches a page").timeout(0.05),
//!         Arc::new(OnTokio(runtime.handle().clone())),
//!         |_, commit| Box::pin(async move {
//!             tokio::time::sleep(Duration::from_millis(300)).await;
//!             commit.commit("fetched", "page-1");
//!             Ok(Value::from("page"))
//!         }),
//!     )
//!     .shared();
//! let mut exec = LiveExecutor::new(Vec::new(), 7, Limits::default())?;
//! let batch = exec.run_batch(&tools, &mut DenyAll, &[
//!     FunctionCall::new("read_file", r#"{"path": "notes.md"}"#, "call_1"),
//!     FunctionCall::new("fetch", "{}", "call_2"),
//! ]);
//! assert_eq!(batch.kinds(), ["ok", "timeout"]);
//! // The fetch goes on after its deadline answered; its commit lands later, as late work.
//! let settled = exec.settle(Duration::from_secs(5));
//! assert_eq!(settled.late.len(), 1);
//! assert_eq!(exec.report().effects.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

use super::approval::Approver;
use super::batch::{
    AttemptLane, BatchResult, Lane, admit, assemble, attempt_key, body_outcome, deadline_failure,
    ms, outcome_text, record_answer, retry_pause,
};
use super::envelope::Envelope;
use super::registry::{Registry, ToolSpec};
use super::taxonomy::{Failure, ToolError};
use super::{FunctionCall, Limits};
use crate::clock::{Clock, RealClock};
use crate::error::{ConfigError, Error};
use crate::json::{Object, Value};
use crate::report::Report;
use crate::rule::Rule;
use crate::storm::{Prelude, Storm};

/// Records a side effect in the run's ledger: `commit(name, key)`.
pub type Commit<'a> = dyn FnMut(&str, &str) -> Result<(), Error> + 'a;

/// Tools that run on threads: a registry, and a blocking body per tool.
pub trait LiveTools: Send + Sync {
    /// The tools offered.
    fn registry(&self) -> &Registry;
    /// Runs `tool`'s body with checked arguments, on the calling thread. `commit` records a
    /// side effect the moment it happens.
    fn run(&self, tool: &str, args: &Object, commit: &mut Commit<'_>) -> Result<Value, ToolError>;
    /// Runs the body knowing how long its call has until its deadline answers it (`left`):
    /// a source that can be told to stop (an MCP server: `notifications/cancelled`) tells it
    /// then. The body still runs on after `left`, as any other; by default this is
    /// [`LiveTools::run`].
    fn run_within(
        &self,
        tool: &str,
        args: &Object,
        commit: &mut Commit<'_>,
        left: Duration,
    ) -> Result<Value, ToolError> {
        let _ = left;
        self.run(tool, args, commit)
    }
}

type Body = dyn Fn(&Object, &mut Commit<'_>) -> Result<Value, ToolError> + Send + Sync;

/// A future a tool's async body returns.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'static>>;

/// Runs a task on the user's runtime (`tokio::spawn`, an executor of their choosing): the
/// engine itself depends on no runtime.
pub trait Spawn: Send + Sync {
    /// Starts `task`; it runs to its end without anyone waiting on its handle.
    fn spawn(&self, task: Pin<Box<dyn Future<Output = ()> + Send + 'static>>);
}

/// What an async body tells the thread that waits for it.
enum Told {
    Commit(String, String),
    Done(Result<Value, ToolError>),
}

/// Records side effects from an async body: each `commit` reaches the ledger when it is made
/// (the thread waiting for the body records it), not when the body ends.
#[derive(Clone, Debug)]
pub struct Committer(Sender<Told>);

impl std::fmt::Debug for Told {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Told::Commit(n, k) => write!(f, "Commit({n}, {k})"),
            Told::Done(_) => f.write_str("Done"),
        }
    }
}

impl Committer {
    /// Records a commit of effect `name` with identity `key`.
    pub fn commit(&self, name: &str, key: &str) {
        let _ = self.0.send(Told::Commit(name.to_owned(), key.to_owned()));
    }
}

/// An async body: the checked arguments and a committer in, a future out.
type AsyncBody = dyn Fn(Object, Committer) -> ToolFuture + Send + Sync;

/// Runs an async body on `spawner`'s runtime, waiting on this (the call's) thread for its
/// commits and its end. The thread only waits: the work is the runtime's.
fn run_async(
    spawner: &Arc<dyn Spawn>,
    body: &AsyncBody,
    args: &Object,
    commit: &mut Commit<'_>,
) -> Result<Value, ToolError> {
    let (tx, rx) = channel();
    let future = body(args.clone(), Committer(tx.clone()));
    spawner.spawn(Box::pin(async move {
        let outcome = future.await;
        let _ = tx.send(Told::Done(outcome));
    }));
    // Every commit is recorded, even after one failed; the first failure is the answer.
    let mut failed = None;
    loop {
        match rx.recv() {
            Ok(Told::Commit(name, key)) => {
                if let Err(e) = commit(&name, &key) {
                    failed.get_or_insert(ToolError::Other {
                        message: e.to_string(),
                    });
                }
            }
            Ok(Told::Done(outcome)) => return failed.map_or(outcome, Err),
            Err(_) => {
                return Err(ToolError::Other {
                    message: "the runtime dropped the tool's task before it ended".into(),
                });
            }
        }
    }
}

/// A tool's body: blocking, or async on the user's runtime.
#[derive(Clone)]
enum Runs {
    Blocking(Arc<Body>),
    Async(Arc<dyn Spawn>, Arc<AsyncBody>),
}

/// Blocking closures as tools.
///
/// ```
/// use toolstorm::executor::live::{LiveExecutor, Tools};
/// use toolstorm::executor::{FunctionCall, Limits, Param, ParamType, ToolSpec, approval::DenyAll};
/// use toolstorm::json::Value;
///
/// let tools = Tools::new().tool(
///     ToolSpec::new("echo", "Says it back").param(Param::new("text", ParamType::String, "What")),
///     |args, _commit| Ok(args.get("text").cloned().unwrap_or(Value::Null)),
/// );
/// let mut exec = LiveExecutor::new(Vec::new(), 7, Limits::default())?;
/// let batch = exec.run_batch(&tools.shared(), &mut DenyAll, &[
///     FunctionCall::new("echo", r#"{"text": "hi"}"#, "call_1"),
/// ]);
/// assert_eq!(batch.kinds(), ["ok"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct Tools {
    registry: Registry,
    bodies: HashMap<String, Runs>,
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tools")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl Tools {
    /// No tools.
    pub fn new() -> Tools {
        Tools::default()
    }

    /// Adds a tool: its spec and its blocking body (run on a thread of its own).
    pub fn tool(
        self,
        spec: ToolSpec,
        body: impl Fn(&Object, &mut Commit<'_>) -> Result<Value, ToolError> + Send + Sync + 'static,
    ) -> Tools {
        self.with(spec, Runs::Blocking(Arc::new(body)))
    }

    /// Adds a tool whose body is async: its future runs on `spawner`'s runtime (the deadline
    /// still answers on time; the task runs on after it, as a thread's body does).
    pub fn async_tool(
        self,
        spec: ToolSpec,
        spawner: Arc<dyn Spawn>,
        body: impl Fn(Object, Committer) -> ToolFuture + Send + Sync + 'static,
    ) -> Tools {
        self.with(spec, Runs::Async(spawner, Arc::new(body)))
    }

    fn with(mut self, spec: ToolSpec, runs: Runs) -> Tools {
        self.bodies.insert(spec.name.clone(), runs);
        let mut specs: Vec<ToolSpec> = self
            .registry
            .tools()
            .iter()
            .filter(|t| t.name != spec.name)
            .cloned()
            .collect();
        specs.push(spec);
        self.registry = Registry::new(specs);
        self
    }

    /// The tools, shared with the threads that run them.
    pub fn shared(self) -> Arc<dyn LiveTools> {
        Arc::new(self)
    }
}

impl LiveTools for Tools {
    fn registry(&self) -> &Registry {
        &self.registry
    }

    fn run(&self, tool: &str, args: &Object, commit: &mut Commit<'_>) -> Result<Value, ToolError> {
        match self.bodies.get(tool) {
            Some(Runs::Blocking(body)) => body(args, commit),
            Some(Runs::Async(spawner, body)) => run_async(spawner, body.as_ref(), args, commit),
            None => Err(ToolError::Other {
                message: format!("{tool} has no body"),
            }),
        }
    }
}

/// A body that ended after its call had been answered (its deadline passed first).
#[derive(Clone, Debug, PartialEq)]
pub struct LateWork {
    /// The batch it belongs to.
    pub batch: usize,
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// Its attempt number.
    pub attempt: u32,
    /// `ok` or the error kind it ended with.
    pub outcome: String,
    /// When it ended (ms since the executor began).
    pub ended_ms: u64,
}

/// What [`LiveExecutor::settle`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settled {
    /// Late work that ended while it waited.
    pub late: Vec<LateWork>,
    /// Bodies still running when the grace period was over: (batch, call id, tool).
    pub still_running: Vec<(usize, String, String)>,
}

/// A body's report to the coordinator.
struct Done {
    batch: usize,
    index: usize,
    attempt: usize,
    ended_ms: u64,
    outcome: Result<Value, Failure>,
}

/// Runs batches of function calls on real tools. Times are real milliseconds since the
/// executor began; decisions and retry pauses come from the seed, so the faults a batch gets
/// are the same each run, and only the timing is the machine's.
pub struct LiveExecutor {
    storm: Arc<Storm>,
    clock: Arc<RealClock>,
    limits: Limits,
    rng: ChaCha8Rng,
    batches: usize,
    tx: Sender<Done>,
    rx: Receiver<Done>,
    /// Bodies of earlier batches still running: (batch, index, attempt) → (call id, tool).
    running: HashMap<(usize, usize, usize), (String, String)>,
    late: Vec<LateWork>,
    /// Bodies running now, of every batch: late work of an earlier batch holds its slot too.
    busy: usize,
}

impl std::fmt::Debug for LiveExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveExecutor")
            .field("limits", &self.limits)
            .field("batches", &self.batches)
            .field("running", &self.running.len())
            .finish_non_exhaustive()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Start(usize),
    Deadline(usize),
    Retry(usize),
    /// A call still waiting for its first slot after its own timeout: every slot is held
    /// (late work that may never end), and the call is answered `timeout` rather than never.
    SlotWait(usize),
}

/// A call of a live batch: the running attempt is kept by its number.
type CallState = super::batch::CallState<usize>;

impl LiveExecutor {
    /// A live executor whose faults come from `rules`, decisions and retry pauses from `seed`.
    pub fn new(rules: Vec<Rule>, seed: i64, limits: Limits) -> Result<LiveExecutor, ConfigError> {
        limits.check()?;
        let clock = Arc::new(RealClock::default());
        let storm = super::engine(rules, seed, clock.clone())?;
        let (tx, rx) = channel();
        Ok(LiveExecutor {
            storm: Arc::new(storm),
            clock,
            limits,
            rng: ChaCha8Rng::seed_from_u64(seed as u64),
            batches: 0,
            tx,
            rx,
            running: HashMap::new(),
            late: Vec::new(),
            busy: 0,
        })
    }

    /// The trace so far (late commits included as they land).
    pub fn report(&self) -> Report {
        self.storm.report()
    }

    /// Real milliseconds since the executor began.
    pub fn now_ms(&self) -> u64 {
        ms(self.clock.now())
    }

    /// Late work recorded so far, in the order it ended.
    pub fn late(&self) -> &[LateWork] {
        &self.late
    }

    /// Waits at most `grace` for bodies still running from earlier batches (timed-out calls
    /// whose work goes on), records those that end, and says which are still running. It never
    /// joins a thread: a body that never ends costs at most `grace`.
    pub fn settle(&mut self, grace: Duration) -> Settled {
        let first = self.late.len();
        let until = self.now_ms() + grace.as_millis().min(u128::from(u64::MAX / 2)) as u64;
        while !self.running.is_empty() {
            let left = until.saturating_sub(self.now_ms());
            if left == 0 {
                break;
            }
            match self.rx.recv_timeout(Duration::from_millis(left)) {
                Ok(done) => self.earlier(done),
                Err(_) => break,
            }
        }
        let mut still: Vec<(usize, String, String)> = self
            .running
            .iter()
            .map(|((b, _, _), (id, name))| (*b, id.clone(), name.clone()))
            .collect();
        still.sort();
        Settled {
            late: self.late[first..].to_vec(),
            still_running: still,
        }
    }

    /// A report from a body of an earlier batch: late work.
    fn earlier(&mut self, done: Done) {
        let Some((call_id, name)) = self.running.remove(&(done.batch, done.index, done.attempt))
        else {
            return;
        };
        self.busy = self.busy.saturating_sub(1);
        self.late.push(LateWork {
            batch: done.batch,
            call_id,
            name,
            attempt: done.attempt as u32,
            outcome: outcome_text(&done.outcome),
            ended_ms: done.ended_ms,
        });
    }

    /// Runs one batch on real threads. Never fails: every call gets exactly one output, in
    /// request order; the batch returns when the last call is answered.
    pub fn run_batch(
        &mut self,
        tools: &Arc<dyn LiveTools>,
        approver: &mut dyn Approver,
        calls: &[FunctionCall],
    ) -> BatchResult {
        self.batches += 1;
        let start = self.now_ms();
        let states = calls
            .iter()
            .enumerate()
            .map(|(index, c)| CallState::new(index, c, start))
            .collect();
        let mut run = Batch {
            exec: self,
            tools,
            approver,
            requests: calls,
            calls: states,
            events: BinaryHeap::new(),
            seq: 0,
            queue: VecDeque::new(),
            log: Vec::new(),
            start,
        };
        for i in 0..calls.len() {
            run.schedule(start, Event::Start(i));
        }
        run.run()
    }
}

/// One batch in flight.
struct Batch<'e, 'a> {
    exec: &'e mut LiveExecutor,
    tools: &'a Arc<dyn LiveTools>,
    approver: &'a mut dyn Approver,
    requests: &'a [FunctionCall],
    calls: Vec<CallState>,
    events: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
    queue: VecDeque<usize>,
    log: Vec<(u64, usize)>,
    start: u64,
}

impl Batch<'_, '_> {
    fn now(&self) -> u64 {
        self.exec.now_ms()
    }

    fn schedule(&mut self, at: u64, event: Event) {
        self.seq += 1;
        self.events.push(Reverse((at, self.seq, event)));
    }

    fn all_answered(&self) -> bool {
        self.calls.iter().all(|c| c.answer.is_some())
    }

    fn run(mut self) -> BatchResult {
        let batch = self.exec.batches;
        while !self.all_answered() {
            // Bodies that ended come first: a body that ended just before its deadline is on
            // time.
            while let Ok(done) = self.exec.rx.try_recv() {
                self.done(batch, done);
            }
            let now = self.now();
            if let Some(Reverse((at, _, _))) = self.events.peek()
                && *at <= now
            {
                if let Some(Reverse((_, _, event))) = self.events.pop() {
                    match event {
                        Event::Start(i) => self.on_start(i),
                        Event::Deadline(i) => self.on_deadline(i),
                        Event::Retry(i) => self.on_retry(i),
                        Event::SlotWait(i) => self.on_slot_wait(i),
                    }
                }
                continue;
            }
            if self.all_answered() {
                break;
            }
            let next = self.events.peek().map(|Reverse((at, _, _))| *at);
            let got = match next {
                Some(at) => self
                    .exec
                    .rx
                    .recv_timeout(Duration::from_millis(at.saturating_sub(now))),
                None if self.exec.busy > 0 => self
                    .exec
                    .rx
                    .recv()
                    .map_err(|_| RecvTimeoutError::Disconnected),
                // Nothing is due and nothing runs: what is left can never be answered.
                None => break,
            };
            if let Ok(done) = got {
                self.done(batch, done);
            }
        }
        self.finish(batch)
    }

    fn answer(&mut self, i: usize, envelope: Envelope) {
        let now = self.now();
        let c = &mut self.calls[i];
        record_answer(&mut c.lane, &mut c.answer, &mut self.log, now, envelope);
    }

    fn fail(&mut self, i: usize, failure: Failure) {
        self.answer(i, Envelope::failure(&failure));
    }

    fn on_start(&mut self, i: usize) {
        let registry = self.tools.registry();
        let (approval, admitted) = admit(registry, &mut *self.approver, &self.requests[i]);
        self.calls[i].lane.approval = approval;
        match admitted {
            Ok((spec, args)) => {
                let timeout = ms(spec.timeout.unwrap_or(self.exec.limits.default_timeout));
                self.calls[i].spec = Some(spec);
                self.calls[i].args = args;
                let now = self.now();
                self.schedule(now + timeout, Event::SlotWait(i));
                self.enqueue(i);
            }
            Err(failure) => self.fail(i, failure),
        }
    }

    fn enqueue(&mut self, i: usize) {
        let now = self.now();
        let c = &mut self.calls[i];
        let number = c.lane.attempts.len() as u32 + 1;
        c.lane.attempts.push(AttemptLane::queued(number, now));
        c.waiting = true;
        self.queue.push_back(i);
        self.grant();
    }

    fn grant(&mut self) {
        while self.exec.busy < self.exec.limits.max_concurrency {
            let Some(i) = self.queue.pop_front() else {
                return;
            };
            self.calls[i].waiting = false;
            self.start_attempt(i);
        }
    }

    fn start_attempt(&mut self, i: usize) {
        let now = self.now();
        let Some(spec) = self.calls[i].spec.clone() else {
            return;
        };
        let args = self.calls[i].args.clone();
        if self.calls[i].lane.deadline_ms.is_none() {
            let timeout = ms(spec.timeout.unwrap_or(self.exec.limits.default_timeout));
            self.calls[i].lane.deadline_ms = Some(now + timeout);
            self.schedule(now + timeout, Event::Deadline(i));
        }
        let number = self.calls[i].lane.attempts.len();
        let key = attempt_key(self.exec.batches, i, &self.calls[i].lane.call_id, number);
        if let Some(a) = self.calls[i].lane.attempts.last_mut() {
            a.started_ms = now;
            a.ended_ms = now;
        }
        let storm = Arc::clone(&self.exec.storm);
        let handle = match storm.begin_call(&spec.name, Value::Object(args.clone()), Some(&key)) {
            Ok(h) => h,
            Err(e) => return self.attempt_ended(i, Err(Failure::Engine(e))),
        };
        let fault = handle
            .rule_index()
            .and_then(|r| storm.rules().get(r))
            .map(|r| r.name.to_lossy());
        if let Some(a) = self.calls[i].lane.attempts.last_mut() {
            a.report_call = Some(handle.id());
            a.fault = fault;
        }
        let latency = match storm.prelude(&handle) {
            Prelude::Skip(outcome) => {
                let outcome = storm.finish_call(&handle, outcome);
                return self.attempt_ended(i, outcome.map_err(Failure::Engine));
            }
            Prelude::Run { latency } => latency,
        };
        storm.body_started(&handle);
        // The thread takes the handle; if no thread starts, the call is finished here.
        let slot = Arc::new(std::sync::Mutex::new(Some(handle)));
        let theirs = Arc::clone(&slot);
        let tools = Arc::clone(self.tools);
        let tx = self.exec.tx.clone();
        let clock = Arc::clone(&self.exec.clock);
        let (batch, name) = (self.exec.batches, spec.name.clone());
        let deadline_ms = self.calls[i].lane.deadline_ms.unwrap_or(now);
        let body = move || {
            let Some(handle) = theirs.lock().unwrap_or_else(|p| p.into_inner()).take() else {
                return;
            };
            // An injected latency is real time here.
            if let Some(l) = latency {
                let _ = clock.sleep(l);
            }
            let left = Duration::from_millis(deadline_ms.saturating_sub(ms(clock.now())));
            let ran = catch_unwind(AssertUnwindSafe(|| {
                let mut commit = |effect: &str, key: &str| storm.effect_for(&handle, effect, key);
                tools.run_within(&name, &args, &mut commit, left)
            }));
            let outcome = body_outcome(&storm, &handle, &name, ran);
            let _ = tx.send(Done {
                batch,
                index: i,
                attempt: number,
                ended_ms: ms(clock.now()),
                outcome,
            });
        };
        match std::thread::Builder::new()
            .name(format!(
                "toolstorm-{}",
                spec.name
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                    .take(20)
                    .collect::<String>()
            ))
            .spawn(body)
        {
            Ok(_) => {
                self.exec.busy += 1;
                self.calls[i].running = Some(number);
            }
            Err(e) => {
                let message = format!("no thread for {}: {e}", spec.name);
                if let Some(handle) = slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    let _ = self
                        .exec
                        .storm
                        .finish_call(&handle, Err(Error::raised("ThreadError", &message)));
                }
                self.attempt_ended(i, Err(Failure::Internal { message }));
            }
        }
    }

    /// A body reported: of this batch, or late work of an earlier one.
    fn done(&mut self, batch: usize, done: Done) {
        if done.batch != batch {
            // Late work of an earlier batch ended: its slot is free for this one.
            self.exec.earlier(done);
            return self.grant();
        }
        let i = done.index;
        if self.calls.get(i).and_then(|c| c.running) != Some(done.attempt) {
            return;
        }
        self.calls[i].running = None;
        self.exec.busy = self.exec.busy.saturating_sub(1);
        // A body that ended after its deadline is late, even when its report is read only now
        // (the coordinator was busy, say, waiting for a person to approve another call).
        if self.calls[i].answer.is_none()
            && self.calls[i]
                .lane
                .deadline_ms
                .is_some_and(|d| done.ended_ms > d)
        {
            self.on_deadline(i);
        }
        if self.calls[i].answer.is_some() {
            // Its deadline passed first: late work, on record as such.
            let outcome = outcome_text(&done.outcome);
            if let Some(a) = self.calls[i].lane.attempts.get_mut(done.attempt - 1) {
                a.ended_ms = done.ended_ms;
                a.late = true;
                a.outcome = outcome.clone();
            }
            let lane = &self.calls[i].lane;
            self.exec.late.push(LateWork {
                batch,
                call_id: lane.call_id.clone(),
                name: lane.name.clone(),
                attempt: done.attempt as u32,
                outcome,
                ended_ms: done.ended_ms,
            });
        } else {
            self.attempt_ended(i, done.outcome);
        }
        self.grant();
    }

    fn attempt_ended(&mut self, i: usize, outcome: Result<Value, Failure>) {
        let now = self.now();
        if let Some(a) = self.calls[i].lane.attempts.last_mut() {
            a.ended_ms = now;
            a.outcome = outcome_text(&outcome);
        }
        let failure = match outcome {
            Ok(value) => return self.answer(i, Envelope::Ok(value)),
            Err(f) => f,
        };
        let idempotent = self.calls[i].spec.as_ref().is_some_and(|s| s.idempotent);
        let attempts = self.calls[i].lane.attempts.len() as u32;
        match retry_pause(
            &failure,
            idempotent,
            attempts,
            &self.exec.limits,
            &mut self.exec.rng,
        ) {
            Some(pause) => self.schedule(now + pause, Event::Retry(i)),
            None => self.fail(i, failure),
        }
    }

    /// A call has waited for its first slot as long as its timeout: answered `timeout` when
    /// every slot is held by work whose call was answered already (late work, which may
    /// never end); otherwise it waits on, for calls still being served end in time.
    fn on_slot_wait(&mut self, i: usize) {
        if self.calls[i].answer.is_some() || self.calls[i].lane.deadline_ms.is_some() {
            return;
        }
        let serving = self
            .calls
            .iter()
            .any(|c| c.running.is_some() && c.answer.is_none());
        if serving {
            let timeout = self.calls[i]
                .spec
                .as_ref()
                .and_then(|s| s.timeout)
                .unwrap_or(self.exec.limits.default_timeout);
            let at = self.now() + ms(timeout);
            self.schedule(at, Event::SlotWait(i));
        } else {
            self.on_deadline(i);
        }
    }

    fn on_retry(&mut self, i: usize) {
        if self.calls[i].answer.is_none() {
            self.enqueue(i);
        }
    }

    fn on_deadline(&mut self, i: usize) {
        if self.calls[i].answer.is_some() {
            return;
        }
        if self.calls[i].waiting {
            self.queue.retain(|&j| j != i);
            self.calls[i].waiting = false;
            self.calls[i].lane.attempts.pop();
        }
        let failure = deadline_failure(self.calls[i].spec.as_ref(), &self.exec.limits);
        self.fail(i, failure);
    }

    fn finish(mut self, batch: usize) -> BatchResult {
        for i in 0..self.calls.len() {
            if self.calls[i].answer.is_none() {
                self.fail(
                    i,
                    Failure::Internal {
                        message: "the call was never answered".into(),
                    },
                );
            }
        }
        // Bodies still running go on; the executor hears of them later.
        let now = self.now();
        for c in &mut self.calls {
            if let Some(attempt) = c.running {
                if let Some(a) = c.lane.attempts.get_mut(attempt - 1) {
                    a.ended_ms = now;
                    a.late = true;
                    a.outcome = "running".into();
                }
                self.exec.running.insert(
                    (batch, c.lane.index, attempt),
                    (c.lane.call_id.clone(), c.lane.name.clone()),
                );
            }
        }
        let (lanes, answers): (Vec<Lane>, Vec<Option<Envelope>>) =
            self.calls.into_iter().map(|c| (c.lane, c.answer)).unzip();
        assemble(batch, self.start, lanes, answers, self.log)
    }
}
