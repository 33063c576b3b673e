//! The proxy: sits between an agent (our stdin and stdout) and its MCP server (a child
//! process), relays every line both ways as the bytes it arrived as, and changes only the
//! `tools/call` exchanges a rule decides to change. Decisions are the engine's: each
//! `tools/call` is a [`Storm`] call in arrival order (per-tool ordinals, keyed draws from the
//! seed, first eligible rule wins, limits, budget); what the server committed is recorded as
//! effects with their evidence; the recording is kept on disk as the session runs.
//!
//! Threads: one reads the client, one reads the server, one copies the server's stderr to
//! ours; everything else — decisions, answers, timers, the recording — happens on the thread
//! that calls [`Proxy::run`], from one event channel. Memory is bounded by the messages in
//! flight (plus the recording itself, which stops growing at its cap).

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::{Duration, Instant};

use super::evidence::{Evidence, Ledger, ToolIndex};
use super::recorder::{Recorder, Written};
use super::scenario::{Delivery, MAX_RECORDED_CALLS, McpScenario};
use super::session::{CallRecord, Delivered, Exchange, McpSession, keep};
use super::wire::{self, FAULT_META_KEY, Id, Message, error_line, result_line};
use crate::clock::RealClock;
use crate::error::{ConfigError, Error};
use crate::json::{Object, Value};
use crate::obj;
use crate::rule::{FaultKind, Rule};
use crate::storm::{CallHandle, Prelude, Storm};

/// Bytes of a line read at once before an oversized line is passed on in pieces.
const PIECE: usize = 1 << 20;
/// How long the server gets to exit after its input is closed.
const SERVER_GRACE: Duration = Duration::from_secs(5);
/// Messages waiting between a reader thread and the relay (back-pressure beyond this).
const QUEUE: usize = 256;

/// How the proxy is set up.
#[derive(Debug, Default)]
pub struct Options {
    /// The faults to inject (none: record only).
    pub scenario: Option<McpScenario>,
    /// Where the scenario came from (kept in the recording, for the command that reproduces it).
    pub scenario_path: Option<PathBuf>,
    /// Where to keep the recording (none: relay and inject only).
    pub record: Option<PathBuf>,
    /// The server's program and arguments.
    pub server: Vec<OsString>,
    /// The folder the server starts in (none: ours).
    pub server_dir: Option<PathBuf>,
}

/// Why the proxy could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// No server command.
    #[error("no server to start: give its command after `--` (or a scenario with \"server\")")]
    NoServer,
    /// The scenario's rules are invalid.
    #[error("{0}")]
    Config(ConfigError),
    /// The server could not be started.
    #[error("cannot start the server `{command}`: {error}")]
    Spawn {
        /// The command as typed.
        command: String,
        /// Why.
        error: std::io::Error,
    },
    /// Writing to the client failed (it went away).
    #[error("the client stopped reading: {0}")]
    Client(std::io::Error),
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    /// The exit code for the proxy: 0 when the client ended the session, 1 when the server
    /// died under it, 128 + n after signal n.
    pub code: i32,
    /// Calls recorded.
    pub calls: usize,
    /// Faults injected.
    pub faults: u64,
    /// Duplicate effects in the recording.
    pub duplicates: usize,
}

/// Something for the relay to handle.
#[derive(Debug)]
enum Event {
    /// A whole line from the client (with its line ending, if it had one).
    Client(Vec<u8>),
    /// A piece of an oversized line from the client; `true` on its last piece.
    ClientPiece(Vec<u8>, bool),
    /// The client closed its output.
    ClientEof,
    /// A whole line from the server.
    Server(Vec<u8>),
    /// A piece of an oversized server line.
    ServerPiece(Vec<u8>, bool),
    /// The server closed its output (it exited, or is about to).
    ServerEof,
    /// A signal ends the session (its number).
    Interrupt(i32),
}

/// Sends a signal's number to a running proxy, which then ends the session cleanly.
#[derive(Debug, Clone)]
pub struct Interrupter(SyncSender<Event>);

impl Interrupter {
    /// Ends the session as signal `n` would.
    pub fn interrupt(&self, n: i32) {
        let _ = self.0.send(Event::Interrupt(n));
    }
}

/// Something scheduled for later.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    /// Forward a delayed (latency) call to the server.
    Forward(Id),
    /// Answer an injected timeout.
    Answer(Id),
    /// Rewrite the recording.
    Flush,
}

/// A `tools/call` the proxy is handling.
#[derive(Debug)]
struct Pending {
    handle: CallHandle,
    tool: String,
    arguments: Value,
    request_id: Value,
    rule: Option<Rule>,
    delivery: Delivery,
    /// The request line, while it waits for injected latency.
    line: Option<Vec<u8>>,
    /// The outcome of an injected fault, to give when its delay has passed.
    injected: Option<crate::error::Result<Value>>,
    forwarded: bool,
    cancelled: bool,
}

/// A recorded fact about a non-`tools/call` request in flight.
#[derive(Debug)]
struct Awaited {
    method: String,
    params: Value,
}

/// Reads lines from `from`, sending whole lines (up to [`wire::MAX_PARSED_LINE`] bytes) or,
/// for longer ones, pieces; then the end.
fn read_lines(
    from: impl Read,
    tx: &SyncSender<Event>,
    whole: fn(Vec<u8>) -> Event,
    piece: fn(Vec<u8>, bool) -> Event,
    end: Event,
) {
    let mut r = BufReader::with_capacity(64 * 1024, from);
    let mut line = Vec::new();
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if buf.is_empty() {
            if !line.is_empty() {
                let _ = tx.send(whole(std::mem::take(&mut line)));
            }
            break;
        }
        let (take, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        line.extend_from_slice(&buf[..take]);
        r.consume(take);
        if done {
            if tx.send(whole(std::mem::take(&mut line))).is_err() {
                return;
            }
        } else if line.len() > wire::MAX_PARSED_LINE {
            // Too long to read as a message: pass it on as it comes.
            let mut rest = std::mem::take(&mut line);
            loop {
                if tx.send(piece(std::mem::take(&mut rest), false)).is_err() {
                    return;
                }
                let buf = match r.fill_buf() {
                    Ok(b) => b,
                    Err(_) => &[][..],
                };
                if buf.is_empty() {
                    let _ = tx.send(piece(Vec::new(), true));
                    break;
                }
                let n = buf.len().min(PIECE);
                match buf[..n].iter().position(|b| *b == b'\n') {
                    Some(i) => {
                        let _ = tx.send(piece(buf[..=i].to_vec(), true));
                        r.consume(i + 1);
                        break;
                    }
                    None => {
                        rest.extend_from_slice(&buf[..n]);
                        r.consume(n);
                    }
                }
            }
        }
    }
    let _ = tx.send(end);
}

/// The line without its line ending.
fn trim(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The proxy, set up and not yet running.
pub struct Proxy {
    options: Options,
    storm: Storm,
    tx: SyncSender<Event>,
    rx: Receiver<Event>,
}

impl Proxy {
    /// Checks the options and prepares the engine.
    pub fn new(options: Options) -> Result<Proxy, ProxyError> {
        if options.server.is_empty() {
            return Err(ProxyError::NoServer);
        }
        let (rules, seed, max_calls) = match &options.scenario {
            Some(s) => (s.rules().map_err(ProxyError::Config)?, s.seed, s.max_calls),
            None => (Vec::new(), 0, MAX_RECORDED_CALLS),
        };
        // Without a recording, payloads are not kept: memory stays bounded by what is in
        // flight (the calls themselves stop at the budget).
        let storm = Storm::builder()
            .rules(rules)
            .seed(seed)
            .clock(Arc::new(RealClock::default()))
            .max_calls(max_calls as usize)
            .capture(options.record.is_some())
            .build()
            .map_err(ProxyError::Config)?;
        let (tx, rx) = sync_channel(QUEUE);
        Ok(Proxy {
            options,
            storm,
            tx,
            rx,
        })
    }

    /// A handle that ends the session from another thread (a signal handler).
    pub fn interrupter(&self) -> Interrupter {
        Interrupter(self.tx.clone())
    }

    /// Starts the server and relays until the client or the server ends the session. `log`
    /// gets our notes (one line each); `server_log` gets the server's stderr as it comes.
    pub fn run(
        self,
        client_in: impl Read + Send + 'static,
        client_out: &mut dyn Write,
        log: &mut dyn Write,
        mut server_log: impl Write + Send + 'static,
    ) -> Result<Ending, ProxyError> {
        let Proxy {
            options,
            storm,
            tx,
            rx,
        } = self;
        let command = options
            .server
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        let mut cmd = Command::new(&options.server[0]);
        cmd.args(&options.server[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = &options.server_dir {
            cmd.current_dir(dir);
        }
        let mut child = cmd.spawn().map_err(|error| ProxyError::Spawn {
            command: command.clone(),
            error,
        })?;
        let server_in = child.stdin.take();
        if let Some(out) = child.stdout.take() {
            let tx = tx.clone();
            std::thread::spawn(move || {
                read_lines(
                    out,
                    &tx,
                    Event::Server,
                    Event::ServerPiece,
                    Event::ServerEof,
                )
            });
        }
        if let Some(mut err) = child.stderr.take() {
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut err, &mut server_log);
            });
        }
        {
            let tx = tx.clone();
            std::thread::spawn(move || {
                read_lines(
                    client_in,
                    &tx,
                    Event::Client,
                    Event::ClientPiece,
                    Event::ClientEof,
                )
            });
        }
        drop(tx);
        let session = McpSession {
            server_command: options
                .server
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            scenario: options
                .scenario_path
                .as_ref()
                .map(|p| p.display().to_string()),
            max_calls: options
                .scenario
                .as_ref()
                .map_or(MAX_RECORDED_CALLS, |s| s.max_calls),
            checks: options
                .scenario
                .as_ref()
                .map(|s| s.checks.clone())
                .unwrap_or_default(),
            ..McpSession::default()
        };
        let mut relay = Relay {
            rules: storm.rules().to_vec(),
            storm,
            scenario: options.scenario,
            recorder: options.record.as_deref().map(Recorder::new),
            session,
            pending: HashMap::new(),
            awaited: HashMap::new(),
            client_requests: HashSet::new(),
            server_requests: HashSet::new(),
            tools: ToolIndex::default(),
            ledger: Ledger::default(),
            timers: BinaryHeap::new(),
            seq: 0,
            recording: true,
            said: HashSet::new(),
            client_out,
            server_in,
            log,
            client_mid_line: false,
            server_mid_line: false,
            held_for_client: Vec::new(),
        };
        let code = relay.serve(&rx, &mut child)?;
        relay.finish_pending("the session ended before an answer");
        relay.flush(true);
        let report = relay.storm.report();
        Ok(Ending {
            code,
            calls: report.calls.len(),
            faults: report.faults_triggered(),
            duplicates: report.duplicate_effects(),
        })
    }
}

/// The relay's state, on the thread that runs it.
struct Relay<'a> {
    storm: Storm,
    rules: Vec<Rule>,
    scenario: Option<McpScenario>,
    recorder: Option<Recorder>,
    session: McpSession,
    pending: HashMap<Id, Pending>,
    awaited: HashMap<Id, Awaited>,
    client_requests: HashSet<Id>,
    server_requests: HashSet<Id>,
    tools: ToolIndex,
    ledger: Ledger,
    timers: BinaryHeap<std::cmp::Reverse<(Instant, u64, Timer)>>,
    seq: u64,
    /// False past the recording's cap or size: then the proxy only relays.
    recording: bool,
    said: HashSet<String>,
    client_out: &'a mut dyn Write,
    server_in: Option<ChildStdin>,
    log: &'a mut dyn Write,
    /// A long line is being passed to the client (or server) in pieces: nothing else may go
    /// to that side until it ends.
    client_mid_line: bool,
    server_mid_line: bool,
    held_for_client: Vec<Vec<u8>>,
}

impl Relay<'_> {
    fn note(&mut self, text: &str) {
        let _ = writeln!(
            self.log,
            "toolstorm-tui mcp: {}",
            crate::printable::line(text)
        );
    }

    /// Notes `text` once per session (keyed by `key`).
    fn note_once(&mut self, key: &str, text: &str) {
        if self.said.insert(key.to_owned()) {
            self.note(text);
        }
    }

    fn schedule(&mut self, at: Instant, timer: Timer) {
        self.seq += 1;
        self.timers.push(std::cmp::Reverse((at, self.seq, timer)));
    }

    fn send_client(&mut self, bytes: &[u8]) -> Result<(), ProxyError> {
        if self.client_mid_line {
            self.held_for_client.push(bytes.to_vec());
            return Ok(());
        }
        self.client_out
            .write_all(bytes)
            .and_then(|()| self.client_out.flush())
            .map_err(ProxyError::Client)
    }

    fn send_server(&mut self, bytes: &[u8]) {
        let failed = match self.server_in.as_mut() {
            Some(w) => w.write_all(bytes).and_then(|()| w.flush()).is_err(),
            None => true,
        };
        if failed {
            self.note_once("server-gone", "the server no longer reads its input");
        }
    }

    /// The event loop; returns the exit code.
    fn serve(&mut self, rx: &Receiver<Event>, child: &mut Child) -> Result<i32, ProxyError> {
        let mut client_gone: Option<Instant> = None;
        loop {
            let next = self.timers.peek().map(|t| t.0.0);
            let deadline = match (next, client_gone) {
                (Some(a), Some(b)) => Some(a.min(b + SERVER_GRACE)),
                (a, None) => a,
                (None, Some(b)) => Some(b + SERVER_GRACE),
            };
            let event = match deadline {
                Some(d) => match rx.recv_timeout(d.saturating_duration_since(Instant::now())) {
                    Ok(e) => Some(e),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return Ok(0),
                },
                None => match rx.recv() {
                    Ok(e) => Some(e),
                    Err(_) => return Ok(0),
                },
            };
            match event {
                None => {
                    self.fire_timers()?;
                    if client_gone.is_some_and(|t| t.elapsed() >= SERVER_GRACE) {
                        let _ = child.kill();
                        let _ = child.wait();
                        self.finish_pending("the server had not answered when the session ended");
                        return Ok(0);
                    }
                }
                Some(Event::Client(line)) => self.client_line(line)?,
                Some(Event::ClientPiece(piece, last)) => {
                    self.note_once(
                        "long-client",
                        "a client message over 8 MB was relayed untouched (not read)",
                    );
                    self.server_mid_line = !last;
                    self.send_server(&piece);
                }
                Some(Event::Server(line)) => self.server_line(line)?,
                Some(Event::ServerPiece(piece, last)) => {
                    self.note_once(
                        "long-server",
                        "a server message over 8 MB was relayed untouched (not read)",
                    );
                    self.client_out
                        .write_all(&piece)
                        .and_then(|()| self.client_out.flush())
                        .map_err(ProxyError::Client)?;
                    self.client_mid_line = !last;
                    if last {
                        for held in std::mem::take(&mut self.held_for_client) {
                            self.send_client(&held)?;
                        }
                    }
                }
                Some(Event::ClientEof) => {
                    // The client is done sending: close the server's input and give it time to
                    // answer what it holds and exit. Its answers are still relayed.
                    self.server_in = None;
                    client_gone = Some(Instant::now());
                }
                Some(Event::ServerEof) => {
                    let status = child.wait().ok();
                    if client_gone.is_some() {
                        // Injected answers still waiting on a timer are given now.
                        let due: Vec<Id> = self
                            .pending
                            .iter()
                            .filter(|(_, p)| p.injected.is_some())
                            .map(|(id, _)| id.clone())
                            .collect();
                        for id in due {
                            self.answer_injected(&id)?;
                        }
                        self.finish_pending("the server exited without answering");
                        return Ok(0);
                    }
                    let in_flight = self.pending.values().filter(|p| !p.cancelled).count();
                    self.server_died(status)?;
                    self.note(&format!(
                        "the server exited ({}) with {in_flight} call(s) in flight; they were answered with an error{}",
                        status.map_or_else(|| "status unknown".into(), |s| s.to_string()),
                        self.recorder
                            .as_ref()
                            .map_or(String::new(), |r| format!(" and recorded in {}", r.path().display()))
                    ));
                    return Ok(1);
                }
                Some(Event::Interrupt(n)) => {
                    self.server_in = None;
                    let _ = child.kill();
                    let _ = child.wait();
                    self.finish_pending("the proxy was interrupted before an answer");
                    return Ok(128 + n);
                }
            }
            if self
                .recorder
                .as_ref()
                .is_some_and(|r| r.due(Instant::now()))
            {
                self.flush(false);
            }
        }
    }

    fn fire_timers(&mut self) -> Result<(), ProxyError> {
        let now = Instant::now();
        while let Some(std::cmp::Reverse((at, _, _))) = self.timers.peek() {
            if *at > now {
                break;
            }
            let Some(std::cmp::Reverse((_, _, timer))) = self.timers.pop() else {
                break;
            };
            match timer {
                Timer::Forward(id) => self.forward(&id),
                Timer::Answer(id) => self.answer_injected(&id)?,
                Timer::Flush => self.flush(false),
            }
        }
        Ok(())
    }

    // ----- client → server -----

    fn client_line(&mut self, line: Vec<u8>) -> Result<(), ProxyError> {
        match wire::classify(trim(&line)) {
            Message::Request { id, method, params } => {
                if let Some(v) = wire::request_version(&params)
                    && self.session.protocol_version.as_deref() != Some(v.as_str())
                {
                    self.session.protocol_version = Some(v);
                }
                if method == "tools/call" && self.recording {
                    return self.tools_call(id, params, line);
                }
                if method == "initialize" {
                    self.session.client_info = params
                        .as_object()
                        .and_then(|o| o.get("clientInfo"))
                        .cloned()
                        .unwrap_or(Value::Null);
                }
                if matches!(
                    method.as_str(),
                    "initialize" | "tools/list" | "server/discover"
                ) {
                    self.awaited.insert(
                        id.clone(),
                        Awaited {
                            method,
                            params: keep(&params).unwrap_or(Value::Null),
                        },
                    );
                }
                self.client_requests.insert(id);
                self.send_server(&line);
            }
            Message::Notification { method, params } => {
                if method == "notifications/cancelled"
                    && let Some(id) = params
                        .as_object()
                        .and_then(|o| o.get("requestId"))
                        .map(Id::of)
                    && self.cancelled(&id)
                {
                    return Ok(());
                }
                self.send_server(&line);
            }
            Message::Response { id, .. } => {
                if !self.server_requests.remove(&id) {
                    self.note(&format!(
                        "the client answered an id the server never asked with ({}); relayed",
                        id.0
                    ));
                }
                self.send_server(&line);
            }
            Message::Other(why) => {
                self.note(&format!("the client sent {why}; relayed as is"));
                self.send_server(&line);
            }
        }
        Ok(())
    }

    /// A `tools/call` from the client: decide, then forward, delay or answer.
    fn tools_call(&mut self, id: Id, params: Value, line: Vec<u8>) -> Result<(), ProxyError> {
        let o = params.as_object();
        let tool = o.and_then(|o| o.get("name")).and_then(Value::as_str);
        let arguments = o
            .and_then(|o| o.get("arguments"))
            .cloned()
            .unwrap_or_else(|| obj! {});
        // A retry that answers an `input_required` result continues the same logical call.
        let continues =
            o.is_some_and(|o| o.contains_key("requestState") || o.contains_key("inputResponses"));
        let Some(tool) = tool.map(str::to_owned) else {
            self.client_requests.insert(id);
            self.send_server(&line);
            return Ok(());
        };
        if continues && let Some(old) = self.continued_call(&tool) {
            let p = self.pending.remove(&old).map(|mut p| {
                p.request_id = id.to_value();
                p
            });
            if let Some(p) = p {
                self.pending.insert(id.clone(), p);
            }
            self.send_server(&line);
            return Ok(());
        }
        let handle = match self.storm.begin_call(&tool, arguments.clone(), None) {
            Ok(h) => h,
            Err(Error::BudgetExceeded(_)) => {
                self.recording = false;
                self.note_once(
                    "cap",
                    &format!(
                        "the session's call budget ({}) is reached: relaying from now on without injecting or recording",
                        self.session.max_calls
                    ),
                );
                self.client_requests.insert(id);
                self.send_server(&line);
                return Ok(());
            }
            Err(e) => {
                self.note(&format!(
                    "a call to {} was relayed but not recorded: {}",
                    crate::printable::quoted(&tool),
                    e.reference_line()
                ));
                self.client_requests.insert(id);
                self.send_server(&line);
                return Ok(());
            }
        };
        let rule = handle.rule_index().map(|i| self.rules[i].clone());
        let delivery = rule.as_ref().map_or(Delivery::IsError, |r| {
            self.scenario
                .as_ref()
                .map_or(Delivery::IsError, |s| s.delivery_of(&r.name.to_lossy()))
        });
        let prelude = self.storm.prelude(&handle);
        let mut p = Pending {
            handle,
            tool,
            arguments,
            request_id: id.to_value(),
            rule,
            delivery,
            line: None,
            injected: None,
            forwarded: false,
            cancelled: false,
        };
        match prelude {
            Prelude::Skip(outcome) => {
                let delay = match (&p.rule, &outcome) {
                    (Some(r), Err(Error::Timeout(_))) if r.kind == FaultKind::Timeout => r.delay,
                    _ => 0.0,
                };
                p.injected = Some(outcome);
                self.pending.insert(id.clone(), p);
                if delay > 0.0 {
                    let at = Instant::now() + Duration::from_secs_f64(delay.min(86_400.0));
                    self.schedule(at, Timer::Answer(id));
                } else {
                    self.answer_injected(&id)?;
                }
            }
            Prelude::Run { latency } => {
                p.line = Some(line);
                self.pending.insert(id.clone(), p);
                match latency.filter(|l| *l > 0.0) {
                    Some(l) => {
                        let at = Instant::now() + Duration::from_secs_f64(l.min(86_400.0));
                        self.schedule(at, Timer::Forward(id));
                    }
                    None => self.forward(&id),
                }
            }
        }
        Ok(())
    }

    /// The open call (waiting for input) to `tool`, if any.
    fn continued_call(&self, tool: &str) -> Option<Id> {
        self.pending
            .iter()
            .find(|(_, p)| {
                p.forwarded && p.line.is_none() && p.tool == tool && p.injected.is_none()
            })
            .map(|(id, _)| id.clone())
    }

    /// Sends a call's request to the server (after any injected latency).
    fn forward(&mut self, id: &Id) {
        let Some(p) = self.pending.get_mut(id) else {
            return;
        };
        let Some(line) = p.line.take() else {
            return;
        };
        p.forwarded = true;
        self.storm.body_started(&p.handle);
        self.send_server(&line);
    }

    /// The client cancelled `id`; true when the proxy handled it (the server never saw the
    /// call, so it must not see the cancellation either).
    fn cancelled(&mut self, id: &Id) -> bool {
        let Some(p) = self.pending.get_mut(id) else {
            return false;
        };
        p.cancelled = true;
        if p.forwarded {
            // The server has it: pass the cancellation on and record what it answers, if
            // anything (a call cancelled after the server committed is still a commit).
            return false;
        }
        let p = self.pending.remove(id);
        if let Some(p) = p {
            let cancelled = Err(Error::Cancelled {
                type_name: "CancelledError".into(),
            });
            let _ = self.storm.finish_call(&p.handle, cancelled);
            self.record_call(
                &p,
                Delivered::Nothing,
                Vec::new(),
                None,
                Some("cancelled by the client before it reached the server".into()),
            );
        }
        true
    }

    // ----- injected answers -----

    /// Gives an injected fault's outcome to the client (per the rule's delivery) and records
    /// the call.
    fn answer_injected(&mut self, id: &Id) -> Result<(), ProxyError> {
        let Some(mut p) = self.pending.remove(id) else {
            return Ok(());
        };
        let outcome = p.injected.take().unwrap_or(Ok(Value::Null));
        let delivered = match &outcome {
            Ok(replacement) => {
                let body = self.replacement_result(replacement);
                self.send_client(&result_line(id, body.clone()))?;
                Delivered::Result(obj! {"result" => body})
            }
            Err(e) => self.deliver_error(id, &p, e)?,
        };
        let _ = self.storm.finish_call(&p.handle, outcome);
        let note = matches!(delivered, Delivered::Nothing)
            .then(|| "no answer (injected): the client's timeout takes over".to_owned());
        self.record_call(&p, delivered, Vec::new(), None, note);
        Ok(())
    }

    /// A replacement value as a `tools/call` result: used as is when it already is one.
    fn replacement_result(&self, replacement: &Value) -> Value {
        let looks_like_result = replacement
            .as_object()
            .is_some_and(|o| o.contains_key("content"));
        let mut body = if looks_like_result {
            replacement.clone()
        } else {
            let text = match replacement.as_str() {
                Some(s) => s.to_owned(),
                None => crate::json::compact(replacement),
            };
            let mut r = wire::text_result(&text, false);
            if let (Value::Object(o), Value::Object(_)) = (&mut r, replacement) {
                o.push("structuredContent", replacement.clone());
            }
            r
        };
        self.mark(&mut body);
        body
    }

    /// Adds `resultType` (stateless protocol) to a result the proxy made.
    fn mark(&self, body: &mut Value) {
        let stateless = self
            .session
            .protocol_version
            .as_deref()
            .is_some_and(wire::is_stateless);
        if let Value::Object(o) = body
            && stateless
            && !o.contains_key("resultType")
        {
            o.push("resultType", "complete");
        }
    }

    /// Answers `id` with an injected error as the rule's delivery says; returns what the
    /// client received.
    fn deliver_error(&mut self, id: &Id, p: &Pending, e: &Error) -> Result<Delivered, ProxyError> {
        let rule = p.rule.as_ref();
        let mut fault = Object::new();
        if let Some(r) = rule {
            fault.push("rule", r.name.clone());
            fault.push("kind", r.kind.as_str());
        }
        if let Error::RateLimited { retry_after } = e {
            fault.push("retryAfter", Value::Float(*retry_after));
        }
        let text = e.reference_line();
        match p.delivery {
            Delivery::IsError => {
                let mut body = wire::text_result(&text, true);
                if let Value::Object(o) = &mut body {
                    o.push("_meta", obj! {FAULT_META_KEY => Value::Object(fault)});
                }
                self.mark(&mut body);
                self.send_client(&result_line(id, body.clone()))?;
                Ok(Delivered::Result(obj! {"result" => body}))
            }
            Delivery::JsonRpcError => {
                let code = match e {
                    Error::ResponseLost(_) => -32000, // the SDKs' "connection closed"
                    Error::Timeout(_) => -32001,      // the SDKs' "request timed out"
                    Error::RateLimited { .. } => -32010,
                    _ => -32011,
                };
                let data = Value::Object(fault);
                self.send_client(&error_line(id, code, &text, Some(data.clone())))?;
                Ok(Delivered::Error(obj! {
                    "error" => obj! {"code" => code, "message" => text.as_str(), "data" => data},
                }))
            }
            Delivery::NoAnswer => Ok(Delivered::Nothing),
        }
    }

    // ----- server → client -----

    fn server_line(&mut self, line: Vec<u8>) -> Result<(), ProxyError> {
        match wire::classify(trim(&line)) {
            Message::Response { id, message } => {
                if self.pending.contains_key(&id) {
                    return self.call_answered(&id, message, line);
                }
                if let Some(a) = self.awaited.remove(&id) {
                    self.learn(a, &message);
                }
                if !self.client_requests.remove(&id) {
                    self.note(&format!(
                        "the server answered an id the client never used ({}); relayed",
                        id.0
                    ));
                }
                self.send_client(&line)
            }
            Message::Request { id, .. } => {
                self.server_requests.insert(id);
                self.send_client(&line)
            }
            Message::Notification { .. } => self.send_client(&line),
            Message::Other(why) => {
                self.note(&format!("the server sent {why}; relayed as is"));
                self.send_client(&line)
            }
        }
    }

    /// Keeps what a handshake or listing answer says.
    fn learn(&mut self, a: Awaited, message: &Value) {
        let Some(o) = message.as_object() else {
            return;
        };
        if let Some(result) = o.get("result") {
            if a.method == "initialize"
                && let Some(r) = result.as_object()
            {
                if let Some(v) = r.get("protocolVersion").and_then(Value::as_str) {
                    self.session.protocol_version = Some(v.to_owned());
                }
                self.session.server_info = r.get("serverInfo").cloned().unwrap_or(Value::Null);
            }
            if a.method == "tools/list" {
                self.tools.learn(result);
            }
        }
        let body = if let Some(r) = o.get("result") {
            obj! {"result" => r.clone()}
        } else {
            obj! {"error" => o.get("error").cloned().unwrap_or(Value::Null)}
        };
        if let Some(response) = keep(&body) {
            self.session.exchanges.push(Exchange {
                method: a.method,
                params: a.params,
                response,
            });
        }
    }

    /// The server answered a `tools/call` the proxy holds.
    fn call_answered(&mut self, id: &Id, message: Value, line: Vec<u8>) -> Result<(), ProxyError> {
        let o = message.as_object();
        let result = o.and_then(|o| o.get("result")).cloned();
        let error = o.and_then(|o| o.get("error")).cloned();
        // An `input_required` result is not the call's end: the client will continue it.
        let needs_input = result
            .as_ref()
            .and_then(Value::as_object)
            .and_then(|r| r.get("resultType"))
            .and_then(Value::as_str)
            .is_some_and(|t| t != "complete");
        if needs_input {
            return self.send_client(&line);
        }
        let Some(p) = self.pending.remove(id) else {
            return self.send_client(&line);
        };
        let is_error = result
            .as_ref()
            .and_then(Value::as_object)
            .and_then(|r| r.get("isError"))
            .and_then(Value::as_bool)
            == Some(true);
        let body_outcome = match (&result, &error) {
            (Some(r), _) if !is_error => Ok(r.clone()),
            (Some(r), _) => Err(Error::raised("ToolError", crate::json::one_line(r))),
            (None, Some(e)) => Err(Error::raised("McpError", crate::json::one_line(e))),
            (None, None) => Err(Error::raised("McpError", "an empty response")),
        };
        // What committed: effects are recorded while the call still runs.
        let mut evidence = Vec::new();
        let mut replay_of = None;
        if let (Ok(r), true) = (&body_outcome, p.forwarded) {
            let commits = self.ledger.commits(
                self.scenario.as_ref(),
                &self.tools,
                p.handle.id(),
                &p.tool,
                &p.arguments,
                r,
            );
            replay_of = commits.replay_of;
            for e in commits.effects {
                match self.storm.effect_for(&p.handle, &e.name, &e.key) {
                    Ok(()) => evidence.push(e.evidence),
                    Err(err) => self.note(&format!(
                        "an effect of call #{} was not recorded: {}",
                        p.handle.id(),
                        err.reference_line()
                    )),
                }
            }
        }
        let outcome = self.storm.body_finished(&p.handle, body_outcome);
        let (delivered, note) = match &outcome {
            Err(e @ Error::ResponseLost(_)) if !p.cancelled => {
                let d = self.deliver_error(id, &p, e)?;
                let n = format!(
                    "the server answered; its answer was dropped (injected {})",
                    FaultKind::ResponseLost.as_str()
                );
                (d, Some(n))
            }
            _ => {
                self.send_client(&line)?;
                let body = match (&result, &error) {
                    (Some(r), _) => obj! {"result" => r.clone()},
                    (None, Some(e)) => obj! {"error" => e.clone()},
                    (None, None) => obj! {"result" => Value::Null},
                };
                let delivered = match keep(&body) {
                    Some(b) if result.is_some() => Delivered::Result(b),
                    Some(b) => Delivered::Error(b),
                    None => Delivered::Unrecorded,
                };
                let note = p
                    .cancelled
                    .then(|| "cancelled by the client; the server answered anyway".to_owned());
                (delivered, note)
            }
        };
        let final_outcome = if p.cancelled {
            Err(Error::Cancelled {
                type_name: "CancelledError".into(),
            })
        } else {
            outcome
        };
        let _ = self.storm.finish_call(&p.handle, final_outcome);
        self.record_call(&p, delivered, evidence, replay_of, note);
        Ok(())
    }

    /// The server died: every call it held is answered with an error and recorded.
    fn server_died(&mut self, status: Option<std::process::ExitStatus>) -> Result<(), ProxyError> {
        let ids: Vec<Id> = self.pending.keys().cloned().collect();
        let message = format!(
            "the MCP server exited ({}) before answering",
            status.map_or_else(|| "status unknown".into(), |s| s.to_string())
        );
        for id in ids {
            let Some(p) = self.pending.remove(&id) else {
                continue;
            };
            if p.injected.is_some() && !p.forwarded {
                // An injected answer still due: give it now, it does not need the server.
                self.pending.insert(id.clone(), p);
                self.answer_injected(&id)?;
                continue;
            }
            let _ = self.storm.finish_call(
                &p.handle,
                Err(Error::raised("ServerExited", message.clone())),
            );
            let delivered = if p.cancelled {
                Delivered::Nothing
            } else {
                self.send_client(&error_line(&id, -32000, &message, None))?;
                Delivered::Error(
                    obj! {"error" => obj! {"code" => -32000, "message" => message.as_str()}},
                )
            };
            self.record_call(&p, delivered, Vec::new(), None, Some(message.clone()));
        }
        Ok(())
    }

    /// Ends every call still open (the session is over), recording it as cancelled.
    fn finish_pending(&mut self, why: &str) {
        let mut ids: Vec<Id> = self.pending.keys().cloned().collect();
        ids.sort();
        for id in ids {
            if let Some(p) = self.pending.remove(&id) {
                let _ = self.storm.finish_call(
                    &p.handle,
                    Err(Error::Cancelled {
                        type_name: "CancelledError".into(),
                    }),
                );
                let note = if p.cancelled {
                    format!("cancelled by the client; {why}")
                } else {
                    why.to_owned()
                };
                self.record_call(&p, Delivered::Nothing, Vec::new(), None, Some(note));
            }
        }
    }

    // ----- the recording -----

    fn record_call(
        &mut self,
        p: &Pending,
        delivered: Delivered,
        effects: Vec<Evidence>,
        replay_of: Option<u64>,
        note: Option<String>,
    ) {
        if self.recorder.is_none() {
            return; // nothing is kept without a recording
        }
        let record = CallRecord {
            call: p.handle.id(),
            request_id: p.request_id.clone(),
            delivered,
            effects,
            replay_of,
            note,
        };
        // Calls end out of order when several are in flight; keep the list in call order.
        let at = self.session.calls.partition_point(|c| c.call < record.call);
        self.session.calls.insert(at, record);
        if let Some(r) = self.recorder.as_mut() {
            let due = r.changed(Instant::now());
            if due > Instant::now() {
                self.schedule(due, Timer::Flush);
            }
        }
    }

    /// Rewrites the recording (if one is kept and something changed, or `always`).
    fn flush(&mut self, always: bool) {
        let Some(r) = self.recorder.as_mut() else {
            return;
        };
        if !always && !r.dirty() {
            return;
        }
        let report = self.storm.report();
        match r.write(report, &self.session) {
            Ok(Written::Saved) => {}
            Ok(Written::Full(e)) => {
                self.recording = false;
                let msg = format!(
                    "the recording is full ({}): its file keeps the calls that fit; relaying from now on without recording",
                    e
                );
                self.note_once("full", &msg);
            }
            Err(e) => {
                let msg = format!(
                    "the recording could not be written: {}: {}",
                    crate::fsread::python_class(&e),
                    crate::fsread::python_message(r.path(), &e)
                );
                self.note(&msg);
            }
        }
    }
}
