//! The batch scheduler: a single-threaded discrete-event simulation on virtual milliseconds.
//! Events are ordered by (time, sequence number), so equal times keep the order they were
//! scheduled in, and a batch is a pure function of its inputs, rules and seed.
//!
//! A call goes: checks (tool known, arguments fit) → approval (side effects only, one at a
//! time, in request order) → wait for one of `max_concurrency` slots → attempt. Its deadline
//! starts when its first attempt gets a slot. An attempt's body takes the virtual time its
//! tool declares (plus injected latency); when that time has passed the body runs and may
//! commit. A transient failure of an idempotent tool is retried after a seeded 200–400 ms
//! pause (longer if a rate limit advertised a longer wait), releasing the slot meanwhile. When the deadline passes first, the call is answered
//! `timeout` — but its body keeps its slot and runs on, and whatever it commits lands in the
//! effect ledger later, marked in its lane as late.
//!
//! The result is plain data: outputs in request order, a log in completion order (ties by
//! request order), and one [`Lane`] per call with the timing a view needs to draw it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::RngCore;

use crate::error::Error;
use crate::json::{Object, Value};
use crate::obj;
use crate::redact::Redactor;
use crate::storm::{CallHandle, Prelude, Storm};

use super::approval::{ApprovalRequest, Approver};
use super::envelope::Envelope;
use super::registry::ToolSpec;
use super::taxonomy::{Failure, ToolError};
use super::{FunctionCall, Limits, SchedulerClock, Toolbox};

/// Shortest and longest retry pause, in virtual milliseconds.
pub const JITTER_MS: (u64, u64) = (200, 400);

/// One attempt of a call, as a lane shows it (times in virtual ms since the executor began).
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptLane {
    /// 1-based attempt number.
    pub number: u32,
    /// When it asked for a slot.
    pub queued_ms: u64,
    /// When it got one.
    pub started_ms: u64,
    /// When its body ended (or the injected fault stopped it).
    pub ended_ms: u64,
    /// `ok` or the error kind the attempt ended with.
    pub outcome: String,
    /// The rule that was selected for it.
    pub fault: Option<String>,
    /// Its call id in the report.
    pub report_call: Option<u64>,
    /// Whether it ended after the call had been answered (a timed-out body running on).
    pub late: bool,
}

impl AttemptLane {
    /// Milliseconds spent waiting for a slot.
    pub fn slot_wait_ms(&self) -> u64 {
        self.started_ms - self.queued_ms
    }

    fn to_value(&self) -> Value {
        obj! {
            "number" => self.number,
            "queued_ms" => self.queued_ms,
            "started_ms" => self.started_ms,
            "ended_ms" => self.ended_ms,
            "slot_wait_ms" => self.slot_wait_ms(),
            "outcome" => self.outcome.as_str(),
            "fault" => self.fault.clone(),
            "report_call" => self.report_call,
            "late" => self.late,
        }
    }
}

/// One call's timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    /// Position in the request.
    pub index: usize,
    /// The call id.
    pub call_id: String,
    /// The tool name asked for.
    pub name: String,
    /// When the batch handed it over.
    pub submitted_ms: u64,
    /// The approval question and whether it was approved (side effects only).
    pub approval: Option<(String, bool)>,
    /// When its deadline falls (set when its first attempt got a slot).
    pub deadline_ms: Option<u64>,
    /// Its attempts, in order.
    pub attempts: Vec<AttemptLane>,
    /// When it was answered.
    pub answered_ms: u64,
    /// `ok` or the error kind of its answer.
    pub kind: String,
}

impl Lane {
    /// When its last body ended (after `answered_ms` for a timed-out call that ran on).
    pub fn settled_ms(&self) -> u64 {
        self.attempts
            .iter()
            .map(|a| a.ended_ms)
            .max()
            .unwrap_or(self.answered_ms)
            .max(self.answered_ms)
    }

    /// The lane object.
    pub fn to_value(&self) -> Value {
        obj! {
            "index" => self.index,
            "call_id" => self.call_id.as_str(),
            "name" => self.name.as_str(),
            "submitted_ms" => self.submitted_ms,
            "approval" => self.approval.as_ref().map(|(q, yes)| obj! {"question" => q.as_str(), "approved" => *yes}),
            "deadline_ms" => self.deadline_ms,
            "attempts" => Value::Array(self.attempts.iter().map(AttemptLane::to_value).collect()),
            "answered_ms" => self.answered_ms,
            "settled_ms" => self.settled_ms(),
            "kind" => self.kind.as_str(),
        }
    }
}

/// One row of the completion-order log.
#[derive(Clone, Debug, PartialEq)]
pub struct LogRow {
    /// The call id.
    pub call_id: String,
    /// The tool name.
    pub name: String,
    /// `ok` or the error kind.
    pub kind: String,
    /// Virtual ms from the batch's start to the answer.
    pub ms: u64,
    /// Attempts that got a slot.
    pub attempts: u32,
}

impl LogRow {
    /// The row object.
    pub fn to_value(&self) -> Value {
        obj! {
            "call_id" => self.call_id.as_str(),
            "name" => self.name.as_str(),
            "kind" => self.kind.as_str(),
            "ms" => self.ms,
            "attempts" => self.attempts,
        }
    }
}

/// What a batch returns.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchResult {
    /// 1-based batch number within the executor.
    pub batch: usize,
    /// When the batch began (virtual ms since the executor began).
    pub started_ms: u64,
    /// `function_call_output` items, in request order.
    pub outputs: Vec<Value>,
    /// The envelopes behind the outputs, in request order.
    pub envelopes: Vec<Envelope>,
    /// Answered calls in completion order.
    pub log: Vec<LogRow>,
    /// Per-call timelines, in request order.
    pub lanes: Vec<Lane>,
    /// When the last call was answered.
    pub answered_ms: u64,
    /// When the last body ended (late ones included).
    pub settled_ms: u64,
}

impl BatchResult {
    /// Virtual ms from the batch's start until every call was answered.
    pub fn answered_in_ms(&self) -> u64 {
        self.answered_ms - self.started_ms
    }

    /// Kinds in request order.
    pub fn kinds(&self) -> Vec<&str> {
        self.lanes.iter().map(|l| l.kind.as_str()).collect()
    }

    /// Call ids of the outputs, in request order.
    pub fn output_ids(&self) -> Vec<String> {
        self.lanes.iter().map(|l| l.call_id.clone()).collect()
    }

    /// The batch object (`--json`), its outputs redacted as records are.
    pub fn to_value(&self) -> Value {
        let redactor = Redactor::default();
        let outputs = self
            .envelopes
            .iter()
            .zip(&self.lanes)
            .map(|(e, lane)| e.recorded_item(&lane.call_id, &redactor))
            .collect();
        obj! {
            "batch" => self.batch,
            "started_ms" => self.started_ms,
            "answered_ms" => self.answered_ms,
            "settled_ms" => self.settled_ms,
            "outputs" => Value::Array(outputs),
            "log" => Value::Array(self.log.iter().map(LogRow::to_value).collect()),
            "lanes" => Value::Array(self.lanes.iter().map(Lane::to_value).collect()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Start(usize),
    BodyEnd(usize),
    Deadline(usize),
    Retry(usize),
}

struct Running {
    handle: CallHandle,
    ends_ms: u64,
}

pub(super) struct CallState<R> {
    pub(super) spec: Option<ToolSpec>,
    pub(super) args: Object,
    pub(super) lane: Lane,
    pub(super) answer: Option<Envelope>,
    /// The attempt whose body is running, if one is (what each scheduler keeps of it).
    pub(super) running: Option<R>,
    pub(super) waiting: bool,
}

impl<R> CallState<R> {
    /// Request `index` of a batch submitted at `start`: not admitted yet.
    pub(super) fn new(index: usize, call: &FunctionCall, start: u64) -> CallState<R> {
        CallState {
            spec: None,
            args: Object::new(),
            lane: Lane::submitted(index, call, start),
            answer: None,
            running: None,
            waiting: false,
        }
    }
}

/// One batch in flight.
pub(super) struct Scheduler<'a> {
    storm: &'a Storm,
    clock: &'a SchedulerClock,
    limits: &'a Limits,
    rng: &'a mut ChaCha8Rng,
    toolbox: &'a mut dyn Toolbox,
    approver: &'a mut dyn Approver,
    calls: Vec<CallState<Running>>,
    requests: &'a [FunctionCall],
    events: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
    now: u64,
    start: u64,
    batch: usize,
    queue: VecDeque<usize>,
    busy: usize,
    log: Vec<(u64, usize)>,
}

/// Seconds as whole milliseconds (0 for anything not a positive finite number).
pub(super) fn ms(seconds: f64) -> u64 {
    if seconds.is_finite() && seconds > 0.0 {
        (seconds * 1000.0).round().min(1e15) as u64
    } else {
        0
    }
}

fn engine_error(e: &ToolError) -> Error {
    let type_name = match e {
        ToolError::Busy { .. } => "StoreBusy",
        ToolError::InvalidArguments { .. } => "InvalidArguments",
        ToolError::NotFound { .. } => "NotFound",
        ToolError::InvalidValue { .. } => "InvalidValue",
        ToolError::NoAnswer { .. } => "NoAnswer",
        ToolError::Other { .. } => "ToolError",
    };
    Error::raised(type_name, e.to_string())
}

/// A call that may run (its spec and checked arguments), or why it is answered without.
pub(super) type Admitted = Result<(ToolSpec, Object), Failure>;

/// The steps before a call may run, live or simulated: the tool is known, the arguments fit,
/// and a side effect is approved (a failing or panicking approver counts as a no). Returns
/// the approval question and answer (side effects only), and the spec and checked arguments
/// or why the call is answered without running.
pub(super) fn admit(
    registry: &super::Registry,
    approver: &mut dyn Approver,
    request: &FunctionCall,
) -> (Option<(String, bool)>, Admitted) {
    let Some(spec) = registry.get(&request.name).cloned() else {
        let available = registry.names();
        let name = request.name.clone();
        return (None, Err(Failure::UnknownTool { name, available }));
    };
    let args = match spec.check_arguments(&request.arguments) {
        Ok(args) => args,
        Err(reason) => {
            let reason = format!("{}: {reason}", spec.name);
            return (None, Err(Failure::BadArguments { reason }));
        }
    };
    if !spec.side_effect {
        return (None, Ok((spec, args)));
    }
    let req = ApprovalRequest {
        call_id: &request.call_id,
        tool: &spec,
        arguments: &args,
    };
    let question = req.question();
    let described = req.describe();
    let verdict = catch_unwind(AssertUnwindSafe(|| approver.decide(&req)));
    let approved = matches!(verdict, Ok(Ok(true)));
    let approval = Some((question, approved));
    if approved {
        return (approval, Ok((spec, args)));
    }
    let reason = match verdict {
        Ok(Ok(_)) => format!("Not approved: the approver said no to {described}"),
        Ok(Err(e)) => format!("Not approved ({e}): {described}"),
        Err(_) => format!("Not approved (the approver crashed): {described}"),
    };
    (approval, Err(Failure::Denied { reason }))
}

impl Lane {
    /// A call's lane as the batch hands it over at `start`.
    pub(super) fn submitted(index: usize, call: &FunctionCall, start: u64) -> Lane {
        Lane {
            index,
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            submitted_ms: start,
            approval: None,
            deadline_ms: None,
            attempts: Vec::new(),
            answered_ms: start,
            kind: String::new(),
        }
    }
}

impl AttemptLane {
    /// Attempt `number`, asking for a slot at `now`.
    pub(super) fn queued(number: u32, now: u64) -> AttemptLane {
        AttemptLane {
            number,
            queued_ms: now,
            started_ms: now,
            ended_ms: now,
            outcome: String::new(),
            fault: None,
            report_call: None,
            late: false,
        }
    }
}

/// Answers the call of `lane` at `now`, once: the first answer stands (a body that ends after
/// its deadline answered does not answer again).
pub(super) fn record_answer(
    lane: &mut Lane,
    answer: &mut Option<Envelope>,
    log: &mut Vec<(u64, usize)>,
    now: u64,
    envelope: Envelope,
) {
    if answer.is_some() {
        return;
    }
    lane.answered_ms = now;
    lane.kind = envelope.kind_str().to_owned();
    *answer = Some(envelope);
    log.push((now, lane.index));
}

/// How an attempt ended, as its lane says it: `ok` or the error kind.
pub(super) fn outcome_text(outcome: &Result<Value, Failure>) -> String {
    match outcome {
        Ok(_) => "ok".into(),
        Err(f) => f.kind().as_str().into(),
    }
}

/// The failure of a call whose deadline passed (the tool's own timeout, else the default).
pub(super) fn deadline_failure(spec: Option<&ToolSpec>, limits: &Limits) -> Failure {
    let after_seconds = spec
        .and_then(|s| s.timeout)
        .unwrap_or(limits.default_timeout);
    Failure::DeadlineExceeded { after_seconds }
}

/// The report key of attempt `number` of the batch's `index`-th call: `b1.3.call_C#1`.
pub(super) fn attempt_key(batch: usize, index: usize, call_id: &str, number: usize) -> String {
    let id: String = call_id.chars().take(120).collect();
    format!("b{batch}.{}.{id}#{number}", index + 1)
}

/// Finishes an attempt's call in the engine from what its body did (`ran`: the body's result,
/// or a panic), and says how the attempt ended.
pub(super) fn body_outcome(
    storm: &Storm,
    handle: &CallHandle,
    name: &str,
    ran: std::thread::Result<Result<Value, ToolError>>,
) -> Result<Value, Failure> {
    match ran {
        Ok(Ok(value)) => match storm.body_finished(handle, Ok(value)) {
            Ok(value) => {
                let _ = storm.finish_call(handle, Ok(value.clone()));
                Ok(value)
            }
            Err(e) => {
                let _ = storm.finish_call(handle, Err(e.clone()));
                Err(Failure::Engine(e))
            }
        },
        Ok(Err(tool_error)) => {
            let _ = storm.finish_call(handle, Err(engine_error(&tool_error)));
            Err(Failure::Tool(tool_error))
        }
        Err(_) => {
            let _ = storm.finish_call(handle, Err(Error::raised("Panic", "tool panicked")));
            Err(Failure::Internal {
                message: format!("{name} crashed while running"),
            })
        }
    }
}

/// The pause before a retry, if the attempt that ended with `failure` is retried: transient,
/// an idempotent tool, attempts left. A seeded 200–400 ms, or a rate limit's longer wait.
pub(super) fn retry_pause(
    failure: &Failure,
    idempotent: bool,
    attempts: u32,
    limits: &Limits,
    rng: &mut ChaCha8Rng,
) -> Option<u64> {
    if failure.kind() != super::ErrorKind::Transient
        || !idempotent
        || attempts >= limits.max_attempts
    {
        return None;
    }
    let (lo, hi) = JITTER_MS;
    let mut pause = lo + rng.next_u64() % (hi - lo + 1);
    if let Failure::Engine(Error::RateLimited { retry_after }) = failure {
        pause = pause.max(ms(*retry_after));
    }
    Some(pause)
}

impl<'a> Scheduler<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        storm: &'a Storm,
        clock: &'a SchedulerClock,
        limits: &'a Limits,
        rng: &'a mut ChaCha8Rng,
        toolbox: &'a mut dyn Toolbox,
        approver: &'a mut dyn Approver,
        requests: &'a [FunctionCall],
        start: u64,
        batch: usize,
    ) -> Scheduler<'a> {
        let calls = requests
            .iter()
            .enumerate()
            .map(|(index, c)| CallState::new(index, c, start))
            .collect();
        Scheduler {
            storm,
            clock,
            limits,
            rng,
            toolbox,
            approver,
            calls,
            requests,
            events: BinaryHeap::new(),
            seq: 0,
            now: start,
            start,
            batch,
            queue: VecDeque::new(),
            busy: 0,
            log: Vec::new(),
        }
    }

    fn schedule(&mut self, at: u64, event: Event) {
        self.seq += 1;
        self.events.push(Reverse((at, self.seq, event)));
    }

    pub(super) fn run(mut self) -> BatchResult {
        for i in 0..self.calls.len() {
            self.schedule(self.start, Event::Start(i));
        }
        while let Some(Reverse((at, _, event))) = self.events.pop() {
            self.now = at;
            self.clock.set_ms(at);
            match event {
                Event::Start(i) => self.on_start(i),
                Event::BodyEnd(i) => self.on_body_end(i),
                Event::Deadline(i) => self.on_deadline(i),
                Event::Retry(i) => self.on_retry(i),
            }
        }
        self.finish()
    }

    fn answer(&mut self, i: usize, envelope: Envelope) {
        let c = &mut self.calls[i];
        record_answer(
            &mut c.lane,
            &mut c.answer,
            &mut self.log,
            self.now,
            envelope,
        );
    }

    fn fail(&mut self, i: usize, failure: Failure) {
        self.answer(i, Envelope::failure(&failure));
    }

    fn on_start(&mut self, i: usize) {
        let registry = self.toolbox.registry();
        match admit(registry, &mut *self.approver, &self.requests[i]) {
            (approval, Ok((spec, args))) => {
                self.calls[i].lane.approval = approval;
                self.calls[i].spec = Some(spec);
                self.calls[i].args = args;
                self.enqueue(i);
            }
            (approval, Err(failure)) => {
                self.calls[i].lane.approval = approval;
                self.fail(i, failure);
            }
        }
    }

    fn enqueue(&mut self, i: usize) {
        let c = &mut self.calls[i];
        let number = c.lane.attempts.len() as u32 + 1;
        c.lane.attempts.push(AttemptLane::queued(number, self.now));
        c.waiting = true;
        self.queue.push_back(i);
        self.grant();
    }

    fn grant(&mut self) {
        while self.busy < self.limits.max_concurrency {
            let Some(i) = self.queue.pop_front() else {
                return;
            };
            self.calls[i].waiting = false;
            self.start_attempt(i);
        }
    }

    fn start_attempt(&mut self, i: usize) {
        let now = self.now;
        let (spec, args) = match &self.calls[i].spec {
            Some(spec) => (spec.clone(), self.calls[i].args.clone()),
            None => return,
        };
        if self.calls[i].lane.deadline_ms.is_none() {
            let timeout = ms(spec.timeout.unwrap_or(self.limits.default_timeout));
            self.calls[i].lane.deadline_ms = Some(now + timeout);
            self.schedule(now + timeout, Event::Deadline(i));
        }
        let number = self.calls[i].lane.attempts.len();
        let key = attempt_key(self.batch, i, &self.calls[i].lane.call_id, number);
        {
            let attempt = self.last_attempt(i);
            attempt.started_ms = now;
            attempt.ended_ms = now;
        }
        let handle =
            match self
                .storm
                .begin_call(&spec.name, Value::Object(args.clone()), Some(&key))
            {
                Ok(h) => h,
                Err(e) => return self.attempt_ended(i, Err(Failure::Engine(e))),
            };
        let fault = handle
            .rule_index()
            .and_then(|r| self.storm.rules().get(r))
            .map(|r| r.name.to_lossy());
        {
            let attempt = self.last_attempt(i);
            attempt.report_call = Some(handle.id());
            attempt.fault = fault;
        }
        match self.storm.prelude(&handle) {
            Prelude::Skip(outcome) => {
                let outcome = self.storm.finish_call(&handle, outcome);
                self.attempt_ended(i, outcome.map_err(Failure::Engine));
            }
            Prelude::Run { latency } => {
                self.storm.body_started(&handle);
                let duration = latency.map_or(0, ms) + ms(self.toolbox.duration(&spec.name, &args));
                let ends_ms = now + duration;
                self.busy += 1;
                self.calls[i].running = Some(Running { handle, ends_ms });
                self.schedule(ends_ms, Event::BodyEnd(i));
            }
        }
    }

    fn last_attempt(&mut self, i: usize) -> &mut AttemptLane {
        let attempts = &mut self.calls[i].lane.attempts;
        if attempts.is_empty() {
            attempts.push(AttemptLane::queued(1, self.now));
        }
        let last = attempts.len() - 1;
        &mut attempts[last]
    }

    fn on_body_end(&mut self, i: usize) {
        let Some(Running { handle, .. }) = self.calls[i].running.take() else {
            return;
        };
        self.busy = self.busy.saturating_sub(1);
        let name = self.requests[i].name.clone();
        let args = self.calls[i].args.clone();
        let storm = self.storm;
        let toolbox = &mut *self.toolbox;
        let ran = catch_unwind(AssertUnwindSafe(|| {
            let mut commit = |effect: &str, key: &str| storm.effect_for(&handle, effect, key);
            toolbox.run(&name, &args, &mut commit)
        }));
        let outcome = body_outcome(storm, &handle, &name, ran);
        if self.calls[i].answer.is_some() {
            let now = self.now;
            let attempt = self.last_attempt(i);
            attempt.ended_ms = now;
            attempt.late = true;
            attempt.outcome = outcome_text(&outcome);
        } else {
            self.attempt_ended(i, outcome);
        }
        self.grant();
    }

    fn attempt_ended(&mut self, i: usize, outcome: Result<Value, Failure>) {
        let now = self.now;
        {
            let attempt = self.last_attempt(i);
            attempt.ended_ms = now;
            attempt.outcome = outcome_text(&outcome);
        }
        let failure = match outcome {
            Ok(value) => return self.answer(i, Envelope::Ok(value)),
            Err(f) => f,
        };
        let idempotent = self.calls[i].spec.as_ref().is_some_and(|s| s.idempotent);
        let attempts = self.calls[i].lane.attempts.len() as u32;
        match retry_pause(&failure, idempotent, attempts, self.limits, self.rng) {
            Some(pause) => self.schedule(now + pause, Event::Retry(i)),
            None => self.fail(i, failure),
        }
    }

    fn on_retry(&mut self, i: usize) {
        if self.calls[i].answer.is_none() {
            self.enqueue(i);
        }
    }

    fn on_deadline(&mut self, i: usize) {
        let c = &self.calls[i];
        if c.answer.is_some() || c.running.as_ref().is_some_and(|r| r.ends_ms <= self.now) {
            return;
        }
        if c.waiting {
            self.queue.retain(|&j| j != i);
            self.calls[i].waiting = false;
            self.calls[i].lane.attempts.pop();
        }
        let failure = deadline_failure(self.calls[i].spec.as_ref(), self.limits);
        self.fail(i, failure);
    }

    fn finish(mut self) -> BatchResult {
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
        let (lanes, answers): (Vec<Lane>, Vec<Option<Envelope>>) =
            self.calls.into_iter().map(|c| (c.lane, c.answer)).unzip();
        assemble(self.batch, self.start, lanes, answers, self.log)
    }
}

/// A batch's result from its lanes and answers (request order) and the log of answers
/// (`(ms, call index)`, sorted here: by time, ties by request order).
pub(super) fn assemble(
    batch: usize,
    start: u64,
    lanes: Vec<Lane>,
    answers: Vec<Option<Envelope>>,
    mut log: Vec<(u64, usize)>,
) -> BatchResult {
    log.sort_by_key(|&(at, i)| (at, i));
    let log = log
        .iter()
        .filter_map(|&(at, i)| {
            let lane = lanes.get(i)?;
            Some(LogRow {
                call_id: lane.call_id.clone(),
                name: lane.name.clone(),
                kind: lane.kind.clone(),
                ms: at.saturating_sub(start),
                attempts: lane.attempts.len() as u32,
            })
        })
        .collect();
    let mut outputs = Vec::new();
    let mut envelopes = Vec::new();
    for (lane, answer) in lanes.iter().zip(answers) {
        let envelope = answer.unwrap_or(Envelope::Ok(Value::Null));
        outputs.push(envelope.output_item(&lane.call_id));
        envelopes.push(envelope);
    }
    let answered_ms = lanes.iter().map(|l| l.answered_ms).max().unwrap_or(start);
    let settled_ms = lanes.iter().map(Lane::settled_ms).max().unwrap_or(start);
    BatchResult {
        batch,
        started_ms: start,
        outputs,
        envelopes,
        log,
        lanes,
        answered_ms,
        settled_ms,
    }
}
