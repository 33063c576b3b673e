//! A small MCP client on the stdio transport, for running a server's tools through the
//! executor: it starts the server ([`super::proxy::child`]: its own process group, stopped as
//! a group, watched so it never outlives us), does the `initialize` handshake, lists the
//! tools (every page), and sends requests from many threads at once on the one session —
//! each waits for its own answer, routed by id by a reader thread.
//!
//! A request not answered in time can be cancelled (`notifications/cancelled`). Requests the
//! server sends us are answered: `ping` with an empty result, anything else with "method not
//! found" (we offer no roots, sampling or elicitation). Notifications are ignored. When the
//! server closes its output (it exited, or stopped talking), every request still waiting is
//! told so.
//!
//! Nothing a caller does blocks on the server: messages go to a writer thread that owns the
//! server's input, so a server that stops reading cannot stall a caller, the reader (which
//! answers pings) or [`McpClient::stop`].

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{
    Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError, channel, sync_channel,
};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::proxy::child::Server;
use super::wire::{MAX_PARSED_LINE, Message, classify};
use crate::json::{Value, compact};
use crate::obj;

/// The protocol version we ask for (servers answer with the one they speak).
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// How much of the server's standard error is kept for messages.
const STDERR_TAIL: usize = 4096;
/// Most pages of `tools/list` followed.
const MAX_PAGES: usize = 100;
/// Most tools taken from a server's `tools/list`, all pages together.
pub const MAX_TOOLS: usize = 10_000;
/// Most messages waiting for the server to read them: a server that stops reading (and
/// floods us with requests we answer) fills it, then what we would send is refused, not
/// queued without bound.
const OUTBOX_MESSAGES: usize = 256;

/// Why the client could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server did not start.
    #[error("cannot start the server {command}: {source}")]
    Spawn {
        /// The command, for the message.
        command: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The server ended the session.
    #[error("the server closed the connection{}", tail(.stderr))]
    Closed {
        /// The end of what it wrote on standard error.
        stderr: String,
    },
    /// No answer in time.
    #[error("the server did not answer {method} within {seconds}s{}", tail(.stderr))]
    NoAnswer {
        /// What was asked.
        method: String,
        /// How long we waited.
        seconds: u64,
        /// The end of what it wrote on standard error.
        stderr: String,
    },
    /// The server answered with a JSON-RPC error, or with something we cannot use.
    #[error("the server refused {method}: {message}")]
    Refused {
        /// What was asked.
        method: String,
        /// What it said.
        message: String,
    },
}

fn tail(stderr: &str) -> String {
    let s = stderr.trim();
    if s.is_empty() {
        String::new()
    } else {
        format!("; it said: {}", crate::printable::line(s))
    }
}

/// An answer to one request.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// The `result`.
    Result(Value),
    /// A JSON-RPC `error`.
    Error {
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// The session ended before an answer came.
    Closed,
}

/// A request on its way: its id, and where its answer arrives.
#[derive(Debug)]
pub struct Pending {
    /// The id we gave it.
    pub id: u64,
    rx: Receiver<Reply>,
}

impl Pending {
    /// Waits up to `limit` for the answer; `None` when none came in time.
    pub fn wait(&self, limit: Duration) -> Option<Reply> {
        match self.rx.recv_timeout(limit) {
            Ok(r) => Some(r),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => Some(Reply::Closed),
        }
    }
}

/// Requests waiting for their answers; once the session closed, none are taken.
#[derive(Debug, Default)]
struct Waiting {
    by_id: HashMap<u64, Sender<Reply>>,
    closed: bool,
}

/// What the reader thread and the callers share.
#[derive(Debug, Default)]
struct Shared {
    /// Lines for the writer thread (`None` once the session is being stopped).
    outbox: Mutex<Option<SyncSender<Vec<u8>>>>,
    pending: Mutex<Waiting>,
    stderr: Mutex<VecDeque<u8>>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Queues a message for the writer thread: false when the session is being stopped, or
    /// when [`OUTBOX_MESSAGES`] wait already (the server is not reading its input).
    fn send(&self, message: &Value) -> Result<(), Unsent> {
        let mut bytes = compact(message).into_bytes();
        bytes.push(b'\n');
        match locked(&self.outbox).as_ref() {
            Some(tx) => tx.try_send(bytes).map_err(|e| match e {
                TrySendError::Full(_) => Unsent::NotReading,
                TrySendError::Disconnected(_) => Unsent::Closed,
            }),
            None => Err(Unsent::Closed),
        }
    }

    fn stderr_tail(&self) -> String {
        let bytes: Vec<u8> = locked(&self.stderr).iter().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The session is over: every waiting request hears so.
    fn close(&self) {
        let mut waiting = locked(&self.pending);
        waiting.closed = true;
        for (_, tx) in waiting.by_id.drain() {
            let _ = tx.send(Reply::Closed);
        }
    }

    /// An answer too large to read: the request it answers (found by the `"id"` near its
    /// start) gets an error instead of waiting for its deadline.
    fn oversized(&self, head: &[u8]) {
        let Some(range) = super::wire::member(head, "id") else {
            return;
        };
        let Some(n) = std::str::from_utf8(&head[range])
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
        else {
            return;
        };
        if let Some(tx) = locked(&self.pending).by_id.remove(&n) {
            let _ = tx.send(Reply::Error {
                code: -32603,
                message: format!("the answer is larger than {MAX_PARSED_LINE} bytes"),
            });
        }
    }

    fn on_line(&self, line: &[u8]) {
        match classify(line) {
            Message::Response { id, message } => {
                let Some(n) = id.0.parse::<u64>().ok() else {
                    return;
                };
                let Some(tx) = locked(&self.pending).by_id.remove(&n) else {
                    return;
                };
                let o = message.as_object();
                let reply = match o.and_then(|o| o.get("error")) {
                    Some(e) => Reply::Error {
                        code: e
                            .as_object()
                            .and_then(|e| e.get("code"))
                            .and_then(Value::as_i64)
                            .unwrap_or(0),
                        message: e
                            .as_object()
                            .and_then(|e| e.get("message"))
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                    },
                    None => Reply::Result(
                        o.and_then(|o| o.get("result"))
                            .cloned()
                            .unwrap_or(Value::Null),
                    ),
                };
                let _ = tx.send(reply);
            }
            Message::Request { id, method, .. } => {
                let answer = if method == "ping" {
                    obj! {"jsonrpc" => "2.0", "id" => id.to_value(), "result" => obj! {}}
                } else {
                    obj! {"jsonrpc" => "2.0", "id" => id.to_value(), "error" => obj! {
                        "code" => -32601,
                        "message" => format!("this client offers no {method}"),
                    }}
                };
                // Dropped when the server reads nothing: it is flooding us, not listening.
                let _ = self.send(&answer);
            }
            // Notifications (logs, progress, list changes) and lines we cannot read change
            // nothing for a caller.
            Message::Notification { .. } | Message::Other(_) | Message::Invalid(_) => {}
        }
    }
}

/// Why a message was not queued for the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unsent {
    /// The session is being stopped.
    Closed,
    /// The server has not read what waits for it.
    NotReading,
}

/// What the server said about itself in `initialize`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerInfo {
    /// Its name (`serverInfo.name`).
    pub name: String,
    /// Its version.
    pub version: String,
    /// The protocol version it chose.
    pub protocol: String,
}

/// A session with one MCP server.
#[derive(Debug)]
pub struct McpClient {
    shared: Arc<Shared>,
    server: Mutex<Peer>,
    next_id: AtomicU64,
    info: ServerInfo,
}

/// The server at the other end: a child process on stdio, or a remote server over
/// Streamable HTTP (with the runtime its exchanges run on).
#[derive(Debug)]
enum Peer {
    Child(Server),
    Remote {
        remote: Box<super::http::upstream::Remote>,
        /// Kept for as long as the session: its exchanges run on it.
        _runtime: tokio::runtime::Runtime,
    },
}

impl Peer {
    fn id(&self) -> u32 {
        match self {
            Peer::Child(s) => s.id(),
            Peer::Remote { .. } => 0,
        }
    }

    fn wait_for(&mut self, limit: Duration) {
        match self {
            Peer::Child(s) => {
                s.wait_for(limit);
            }
            Peer::Remote { remote, .. } => {
                remote.wait_for(limit);
            }
        }
    }

    fn stop(&mut self) -> Option<ExitStatus> {
        match self {
            Peer::Child(s) => s.stop(),
            Peer::Remote { remote, .. } => {
                remote.stop();
                None
            }
        }
    }
}

impl McpClient {
    /// Starts `command` in `dir` (with a watchdog from our binary when `watchdog` is given),
    /// and does the handshake, waiting at most `limit` for the server's answer.
    pub fn start(
        command: &[OsString],
        dir: Option<&Path>,
        watchdog: Option<&PathBuf>,
        limit: Duration,
    ) -> Result<McpClient, ClientError> {
        // A URL is shown with its secrets hidden (it is connected to as given).
        let shown = if super::address::is_url(command) {
            super::address::shown_url(&command[0].to_string_lossy())
        } else {
            command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let shared = Arc::new(Shared::default());
        let Connected {
            peer: server,
            input,
            output,
            log,
        } = connect(command, &shown, dir, watchdog, &shared)?;
        if let Some(stdin) = input {
            let (tx, rx) = sync_channel::<Vec<u8>>(OUTBOX_MESSAGES);
            *locked(&shared.outbox) = Some(tx);
            let _ = std::thread::Builder::new()
                .name("toolstorm-mcp-write".into())
                .spawn(move || write_lines(stdin, &rx));
        }
        if let Some(out) = output {
            let s = Arc::clone(&shared);
            let _ = std::thread::Builder::new()
                .name("toolstorm-mcp-read".into())
                .spawn(move || read_lines(out, &s));
        }
        if let Some(err) = log {
            let s = Arc::clone(&shared);
            let _ = std::thread::Builder::new()
                .name("toolstorm-mcp-log".into())
                .spawn(move || keep_tail(err, &s));
        }
        let mut client = McpClient {
            shared,
            server: Mutex::new(server),
            next_id: AtomicU64::new(1),
            info: ServerInfo::default(),
        };
        let result = client.ask(
            "initialize",
            obj! {
                "protocolVersion" => PROTOCOL_VERSION,
                "capabilities" => obj! {},
                "clientInfo" => obj! {"name" => "toolstorm-tui", "version" => env!("CARGO_PKG_VERSION")},
            },
            limit,
        );
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                client.stop();
                return Err(e);
            }
        };
        let field = |path: &[&str]| {
            let mut v = &result;
            for k in path {
                v = v.as_object().and_then(|o| o.get(k)).unwrap_or(&Value::Null);
            }
            v.as_str().unwrap_or("").to_owned()
        };
        client.info = ServerInfo {
            name: field(&["serverInfo", "name"]),
            version: field(&["serverInfo", "version"]),
            protocol: field(&["protocolVersion"]),
        };
        client.notify("notifications/initialized", obj! {});
        Ok(client)
    }

    /// What the server said about itself.
    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    /// The process id of the server (its group's id too).
    pub fn server_pid(&self) -> u32 {
        locked(&self.server).id()
    }

    /// Sends a request; its answer arrives on the returned [`Pending`].
    pub fn request(&self, method: &str, params: Value) -> Pending {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = channel();
        {
            let mut waiting = locked(&self.shared.pending);
            if waiting.closed {
                let _ = tx.send(Reply::Closed);
                return Pending { id, rx };
            }
            waiting.by_id.insert(id, tx);
        }
        let sent = self.shared.send(&obj! {
            "jsonrpc" => "2.0", "id" => id, "method" => method, "params" => params,
        });
        if let Err(why) = sent
            && let Some(tx) = locked(&self.shared.pending).by_id.remove(&id)
        {
            let _ = tx.send(match why {
                Unsent::Closed => Reply::Closed,
                Unsent::NotReading => Reply::Error {
                    code: -32000,
                    message: format!(
                        "not sent: the server has not read the {OUTBOX_MESSAGES} messages \
                         waiting for it"
                    ),
                },
            });
        }
        Pending { id, rx }
    }

    /// Tells the server we no longer need request `id` (`notifications/cancelled`). An answer
    /// it sends anyway still reaches the [`Pending`] until [`McpClient::forget`].
    pub fn cancel(&self, id: u64, reason: &str) {
        self.notify(
            "notifications/cancelled",
            obj! {"requestId" => id, "reason" => reason},
        );
    }

    /// Stops waiting for request `id`: an answer that comes later is dropped.
    pub fn forget(&self, id: u64) {
        locked(&self.shared.pending).by_id.remove(&id);
    }

    fn notify(&self, method: &str, params: Value) {
        let _ = self
            .shared
            .send(&obj! {"jsonrpc" => "2.0", "method" => method, "params" => params});
    }

    /// Sends a request and waits at most `limit` for its result.
    pub fn ask(&self, method: &str, params: Value, limit: Duration) -> Result<Value, ClientError> {
        let pending = self.request(method, params);
        match pending.wait(limit) {
            Some(Reply::Result(v)) => Ok(v),
            Some(Reply::Error { code, message }) => Err(ClientError::Refused {
                method: method.to_owned(),
                message: format!("{message} (JSON-RPC error {code})"),
            }),
            Some(Reply::Closed) => Err(ClientError::Closed {
                stderr: self.stderr_tail(),
            }),
            None => {
                // `initialize` is never cancelled (the protocol forbids it).
                if method != "initialize" {
                    self.cancel(pending.id, "no answer in time");
                }
                self.forget(pending.id);
                Err(ClientError::NoAnswer {
                    method: method.to_owned(),
                    seconds: limit.as_secs(),
                    stderr: self.stderr_tail(),
                })
            }
        }
    }

    /// Every tool the server lists (each page of `tools/list`), as the objects it sent:
    /// `limit` is for all the pages together, and at most [`MAX_TOOLS`] are taken.
    pub fn list_tools(&self, limit: Duration) -> Result<Vec<Value>, ClientError> {
        let until = std::time::Instant::now() + limit;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => obj! {"cursor" => c.as_str()},
                None => obj! {},
            };
            let left = until.saturating_duration_since(std::time::Instant::now());
            let page = self.ask("tools/list", params, left).map_err(|e| match e {
                ClientError::NoAnswer { method, stderr, .. } => ClientError::NoAnswer {
                    method: format!("{method} (all its pages)"),
                    seconds: limit.as_secs(),
                    stderr,
                },
                other => other,
            })?;
            let o = page.as_object();
            match o.and_then(|o| o.get("tools")).and_then(Value::as_array) {
                Some(items) if tools.len() + items.len() > MAX_TOOLS => {
                    return Err(ClientError::Refused {
                        method: "tools/list".into(),
                        message: format!("it lists more than {MAX_TOOLS} tools"),
                    });
                }
                Some(items) => tools.extend(items.iter().cloned()),
                None => {
                    return Err(ClientError::Refused {
                        method: "tools/list".into(),
                        message: "its result has no list of tools".into(),
                    });
                }
            }
            cursor = o
                .and_then(|o| o.get("nextCursor"))
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(str::to_owned);
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        Err(ClientError::Refused {
            method: "tools/list".into(),
            message: format!("it lists more than {MAX_PAGES} pages of tools"),
        })
    }

    /// The end of what the server wrote on standard error.
    pub fn stderr_tail(&self) -> String {
        self.shared.stderr_tail()
    }

    /// Ends the session: closes the server's input, gives it a moment to exit, then stops its
    /// group. Requests still waiting hear that the session closed.
    pub fn stop(&self) -> Option<ExitStatus> {
        // The writer sends what is queued, then closes the server's input.
        drop(locked(&self.shared.outbox).take());
        let mut server = locked(&self.server);
        server.wait_for(Duration::from_millis(500));
        // Whatever is left of the group goes too (a launcher's children, helpers), and the
        // watchdog is told to exit.
        let status = server.stop();
        self.shared.close();
        status
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The server's ends: the peer, its input, its output and its log.
struct Connected {
    peer: Peer,
    input: Option<Box<dyn Write + Send>>,
    output: Option<Box<dyn Read + Send>>,
    log: Option<Box<dyn Read + Send>>,
}

/// Starts the server `command` (shown as `shown`), or connects to it when it is a URL.
fn connect(
    command: &[OsString],
    shown: &str,
    dir: Option<&Path>,
    watchdog: Option<&PathBuf>,
    shared: &Arc<Shared>,
) -> Result<Connected, ClientError> {
    Ok(if super::address::is_url(command) {
        let spawn_error = |source| ClientError::Spawn {
            command: shown.to_owned(),
            source,
        };
        let runtime = super::http::runtime().map_err(spawn_error)?;
        let (inlet, output) = super::http::pipe::lines_in();
        let (mut remote, input) = super::http::upstream::Remote::connect(
            &command[0].to_string_lossy(),
            Vec::new(),
            None,
            runtime.handle(),
            inlet,
            Box::new(TailLog(Arc::clone(shared))),
        )
        .map_err(|e| spawn_error(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))?;
        for note in remote.start_notes() {
            let _ = writeln!(TailLog(Arc::clone(shared)), "toolstorm-tui mcp: {note}");
        }
        Connected {
            peer: Peer::Remote {
                remote: Box::new(remote),
                _runtime: runtime,
            },
            input: Some(Box::new(input)),
            output: Some(Box::new(output)),
            log: None,
        }
    } else {
        let (server, streams) =
            Server::spawn(command, dir, watchdog).map_err(|source| ClientError::Spawn {
                command: shown.to_owned(),
                source,
            })?;
        Connected {
            peer: Peer::Child(server),
            input: streams.stdin.map(|w| Box::new(w) as Box<dyn Write + Send>),
            output: streams.stdout.map(|r| Box::new(r) as Box<dyn Read + Send>),
            log: streams.stderr.map(|r| Box::new(r) as Box<dyn Read + Send>),
        }
    })
}

/// The writer thread: each queued message in turn, until the queue closes (then the server's
/// input closes) or the server stops reading for good (the pipe breaks).
fn write_lines(mut stdin: impl Write, rx: &Receiver<Vec<u8>>) {
    while let Ok(bytes) = rx.recv() {
        if stdin
            .write_all(&bytes)
            .and_then(|()| stdin.flush())
            .is_err()
        {
            break;
        }
    }
}

/// The reader thread: one message per line, each routed; at the end, the session closes.
fn read_lines(out: impl Read, shared: &Shared) {
    let mut reader = BufReader::new(out);
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = (MAX_PARSED_LINE + 2) as u64;
        match (&mut reader).take(limit).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if line.last() != Some(&b'\n') && line.len() as u64 >= limit {
                    // Longer than we read: the rest is skipped in bounded pieces, and the call
                    // it answers is told so (its id is near the start of most answers).
                    if !skip_line(&mut reader) {
                        break;
                    }
                    shared.oversized(&line);
                    continue;
                }
                shared.on_line(super::transport::trim(&line));
            }
        }
    }
    shared.close();
}

/// Skips to the end of the current line; false at the end of input.
fn skip_line(reader: &mut impl BufRead) -> bool {
    loop {
        let (done, used) = match reader.fill_buf() {
            Ok([]) | Err(_) => return false,
            Ok(buf) => match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (true, i + 1),
                None => (false, buf.len()),
            },
        };
        reader.consume(used);
        if done {
            return true;
        }
    }
}

/// Keeps the last [`STDERR_TAIL`] bytes of the server's standard error.
fn keep_tail(err: impl Read, shared: &Shared) {
    let mut reader = BufReader::new(err);
    let mut buf = [0u8; 4096];
    while let Ok(n) = reader.read(&mut buf) {
        if n == 0 {
            break;
        }
        shared.keep_log(&buf[..n]);
    }
}

/// The notes about a remote server, kept as a child's standard error is.
struct TailLog(Arc<Shared>);

impl Write for TailLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.keep_log(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    /// Keeps the tail of what the server logged.
    fn keep_log(&self, bytes: &[u8]) {
        let mut tail = locked(&self.stderr);
        tail.extend(bytes);
        while tail.len() > STDERR_TAIL {
            tail.pop_front();
        }
    }
}
