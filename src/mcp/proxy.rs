//! The proxy: sits between an agent (our stdin and stdout) and its MCP server (a child
//! process), relays every message both ways as the bytes it arrived as, and changes only the
//! `tools/call` exchanges a rule decides to change. Decisions are the engine's: each
//! `tools/call` is a [`Storm`] call in arrival order (per-tool ordinals, keyed draws from the
//! seed, first eligible rule wins, limits, budget); what the server committed is recorded as
//! effects with their evidence; the recording is written ahead of every answer.
//!
//! A proxy is a chain of small stages, each in its own module and testable alone:
//! - the transports below it ([`super::stdio`]'s reader threads, [`super::http`]'s tasks) cut
//!   each stream into whole messages within a byte budget that gives back-pressure
//!   ([`super::transport`]); whole messages only go out, never one inside another.
//! - `link`: the relay's state — the engine run, the recording, the calls in hand — and the
//!   two ends it writes to: the bytes for each are held with the journal lines describing
//!   them and written journal first, once per batch of messages (a group commit).
//! - [`inbox`]: who runs the relay — with HTTP on both sides, a side's task, on the events
//!   waiting, when no one else is (no hand-off between threads per message); other senders
//!   wake the thread that calls [`Proxy::run`], which also keeps the timers and the
//!   session's end.
//! - `relay`: handles each event: relays lines, learns the session's facts, and ends the
//!   session when a side leaves or a signal comes.
//! - `calls`: the `tools/call` lifecycle — decide, delay, forward or answer, judge what
//!   committed — each outcome journaled before it is relayed; `pieces`: lines too long to
//!   read as a message, judged and passed on as they come; `answers`: what the record keeps
//!   of a server's answer.
//! - `batch`: JSON-RPC batches, relayed as they came, their calls judged like any other.
//! - [`super::recorder`] and [`super::journal`]: the write-ahead journal and its compaction.
//! - [`child`]: the server in its own process group, stopped as a group, watched by a
//!   watchdog so it never outlives us.

mod answers;
mod batch;
mod calls;
pub mod child;
pub mod inbox;
mod link;
mod pieces;
mod relay;
mod stop;

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use self::inbox::{Hub, Tx};
use self::link::{Ends, Relay};
use super::http::listen::{ListenError, ListenOptions, bind, listen};
use super::http::upstream::{self, Remote, RemoteError, Routing};
use super::recorder::Recorder;
use super::scenario::{MAX_RECORDED_CALLS, McpScenario};
use super::session::McpSession;
use super::stdio::read_messages;
use super::transport::{Event, Flow, Side};
use crate::clock::RealClock;
use crate::error::ConfigError;
use crate::storm::Storm;

/// How the proxy is set up. Its `Debug` shows no secret: a `--header`'s value as the
/// recording keeps it, the server's command redacted.
#[derive(Default)]
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
    /// Continue the recording at `record` (same scenario) as one run instead of replacing it:
    /// ordinals, budget and effect ledger carry on — for clients that start a server per call.
    pub append: bool,
    /// A binary that runs `mcp --watch-group PGID` (ours): the watchdog that stops the
    /// server's group if the proxy is killed. None: no watchdog.
    pub watchdog: Option<PathBuf>,
    /// Headers sent with every request to a server reached by URL (`--header`).
    pub headers: Vec<super::http::Header>,
    /// Take the client over Streamable HTTP on this address instead of our stdin and stdout.
    pub listen: Option<ListenOptions>,
    /// The agent's command (`--agent-cmd`, redacted), kept in the recording's sidecar.
    pub agent: Option<super::session::AgentCommand>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, String)> = self
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), super::http::headers::recorded_added(n, v)))
            .collect();
        let server: Vec<String> = self
            .server
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        f.debug_struct("Options")
            .field("scenario", &self.scenario)
            .field("scenario_path", &self.scenario_path)
            .field("record", &self.record)
            .field("server", &super::session::redact_argv(&server))
            .field("server_dir", &self.server_dir)
            .field("append", &self.append)
            .field("watchdog", &self.watchdog)
            .field("headers", &headers)
            .field("listen", &self.listen)
            .field("agent", &self.agent)
            .finish()
    }
}

/// The server end, its input and its output.
type ServerParts = (
    Box<dyn ServerEnd>,
    Option<Box<dyn Write + Send>>,
    Option<Box<dyn Read + Send>>,
);

/// The server end the relay talks to: a child process, or a remote server reached by URL.
pub(crate) trait ServerEnd {
    /// Waits up to `limit` for it to be gone; how it ended, when it did.
    fn wait_for(&mut self, limit: std::time::Duration) -> Option<String>;
    /// Stops it now (a child's whole process group; a remote server's exchanges).
    fn stop(&mut self);
}

impl ServerEnd for child::Server {
    fn wait_for(&mut self, limit: std::time::Duration) -> Option<String> {
        child::Server::wait_for(self, limit).map(|s| s.to_string())
    }
    fn stop(&mut self) {
        child::Server::stop(self);
    }
}

impl ServerEnd for Remote {
    fn wait_for(&mut self, limit: std::time::Duration) -> Option<String> {
        Remote::wait_for(self, limit)
    }
    fn stop(&mut self) {
        Remote::stop(self);
    }
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
    /// The server's URL cannot be used.
    #[error("{0}")]
    Remote(RemoteError),
    /// The proxy cannot listen where it was asked to.
    #[error("{0}")]
    Listen(ListenError),
    /// The HTTP runtime could not start.
    #[error("cannot start the HTTP client: {0}")]
    Runtime(std::io::Error),
    /// The relay was not where its thread left it (a bug): the session could not be finished.
    #[error(
        "the relay was lost before the session ended (a bug); the journal beside the recording keeps what was recorded"
    )]
    Relay,
    /// A signal came before the session started (while waiting for the recording's lock).
    #[error("interrupted by signal {0} before the session started")]
    Interrupted(i32),
    /// The recording to continue cannot be continued.
    #[error("cannot append to {path}: {why}")]
    Append {
        /// The cassette asked for.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The recording cannot be written where it was asked for.
    #[error("cannot record to {path}: {error}")]
    Record {
        /// The cassette asked for.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    /// The exit code for the proxy: 0 when the client ended the session, 1 when the server
    /// died under it, 128 + n after signal n.
    pub code: i32,
    /// Calls in the recording's files (all calls when there is no recording).
    pub calls: usize,
    /// Faults injected.
    pub faults: u64,
    /// Duplicate effects in the recording.
    pub duplicates: usize,
    /// Why the recording is incomplete or could not be written, if it is.
    pub trouble: Option<String>,
}

/// Sends a signal's number to a running proxy, which then ends the session cleanly.
#[derive(Debug, Clone)]
pub struct Interrupter {
    tx: Tx,
    watch: Arc<Watch>,
}

/// What a signal needs to know of a running proxy: its server's process group, and whether
/// the session is over.
#[derive(Debug, Default)]
struct Watch {
    /// The server's process group (0: none, or a server reached by URL).
    group: std::sync::atomic::AtomicU32,
    over: std::sync::atomic::AtomicBool,
}

/// How long a signalled proxy may take to notice before its server's group is stopped.
const STUCK: std::time::Duration = std::time::Duration::from_secs(10);

impl Interrupter {
    /// Ends the session as signal `n` would. A relay blocked writing to a server that reads
    /// nothing never sees it: if the session is not over within [`STUCK`], the server's group
    /// is stopped, which ends that write (the session then ends as the signal asked).
    pub fn interrupt(&self, n: i32) {
        let _ = self.tx.send(Event::Interrupt(n));
        let watch = Arc::clone(&self.watch);
        std::thread::spawn(move || {
            std::thread::sleep(STUCK);
            let group = watch.group.load(std::sync::atomic::Ordering::SeqCst);
            if group != 0 && !watch.over.load(std::sync::atomic::Ordering::SeqCst) {
                child::stop_group(group);
            }
        });
    }
}

/// The proxy, set up and not yet running.
pub struct Proxy {
    options: Options,
    storm: Storm,
    hub: Arc<Hub<Relay>>,
    tx: Tx,
    watch: Arc<Watch>,
}

/// A name for this session, unique enough to tell two recordings apart: the process, the
/// time and the place.
fn session_id(record: &Path) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!("{}:{nanos}:{}", std::process::id(), record.display());
    crate::json::sha256_hex(seed.as_bytes())[..16].to_owned()
}

/// Refuses a `--record` target that cannot be a file before anything starts.
fn check_target(path: &Path, append: bool) -> Result<(), std::io::Error> {
    use std::io::{Error, ErrorKind};
    if path.is_dir() {
        return Err(Error::new(ErrorKind::IsADirectory, "it is a folder"));
    }
    // The folder must exist, also the one a link leads to (a dangling link to a folder
    // that is gone would otherwise have it made).
    for at in [
        Some(path.to_path_buf()),
        crate::atomic::resolve_links(path).ok(),
    ]
    .into_iter()
    .flatten()
    {
        let parent = at.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(dir) = parent
            && !dir.is_dir()
        {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("its folder {} does not exist", dir.display()),
            ));
        }
    }
    // The cassette may be a link the user made to a regular file; the files we name beside
    // it must be regular files of their own (or absent).
    // (A missing cassette, or a dangling link, is made by the first write.)
    let through = std::fs::canonicalize(path).ok();
    let own = [
        super::session::sidecar_path(path),
        super::session::journal_path(path),
        super::session::journal_path(path).with_extension("lock"),
    ];
    for p in through.iter().chain(own.iter()) {
        crate::fsread::refuse_special(p)
            .map_err(|e| Error::new(e.kind(), format!("{}: {e}", p.display())))?;
    }
    // What is there already is replaced only when it is a recording (or empty): any other
    // file is the user's (a scenario named by mistake, or what a link leads to).
    // A sidecar or journal beside it says so without reading it (it may be unreadable to us,
    // and it is still ours to replace); else it must load as a cassette.
    let beside =
        super::session::sidecar_path(path).exists() || super::session::journal_path(path).exists();
    if !append && !beside {
        let cassette = |_: &[u8]| crate::cassette::Cassette::load(path).is_ok();
        crate::atomic::refuse_foreign(path, cassette, "a recording")?;
    }
    Ok(())
}

/// The recording a session continues (`--append`): through its journal if the session before
/// did not finish, else its files; none when there is none yet. It must have been made with the
/// same scenario.
fn continued(
    path: &Path,
    append: bool,
    scenario: Option<&Path>,
) -> Result<Option<(crate::cassette::Cassette, McpSession)>, ProxyError> {
    if !append {
        return Ok(None);
    }
    let fail = |why: String| ProxyError::Append {
        path: path.to_path_buf(),
        why,
    };
    let (c, s) = match super::journal::recover(path) {
        Ok(Some(r)) => (r.cassette, r.session),
        Ok(None) if !path.exists() => return Ok(None),
        Ok(None) => {
            let c = crate::cassette::Cassette::load(path).map_err(|e| fail(e.reference_line()))?;
            let side = super::session::sidecar_path(path);
            let s = McpSession::load(&side).map_err(|e| match e {
                super::session::SessionError::Io(e) => fail(format!("{}: {e}", side.display())),
                super::session::SessionError::Invalid(c) => fail(c.to_string()),
            })?;
            s.check_bound(&c).map_err(|e| fail(e.to_string()))?;
            (c, s)
        }
        Err(super::journal::JournalError::Io(e)) => return Err(fail(e.to_string())),
        Err(super::journal::JournalError::Invalid(c)) => return Err(fail(c.to_string())),
    };
    let ours = scenario.map(|p| p.display().to_string());
    if s.scenario != ours {
        return Err(fail(format!(
            "it was recorded with {}, not {}",
            s.scenario.as_deref().unwrap_or("no scenario"),
            ours.as_deref().unwrap_or("no scenario")
        )));
    }
    Ok(Some((c, s)))
}

impl Proxy {
    /// Checks the options and prepares the engine.
    pub fn new(options: Options) -> Result<Proxy, ProxyError> {
        if options.server.is_empty() {
            return Err(ProxyError::NoServer);
        }
        if super::address::is_other_url(&options.server) {
            let url = options.server[0].to_string_lossy();
            return Err(ProxyError::Remote(upstream::RemoteError::Url(
                super::address::UrlError {
                    url: super::address::shown_url(&url),
                    why: "the proxy reaches MCP servers over http or https".into(),
                },
            )));
        }
        if let Some(path) = &options.record {
            check_target(path, options.append).map_err(|error| ProxyError::Record {
                path: path.clone(),
                error,
            })?;
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
        let (hub, tx) = Hub::new();
        Ok(Proxy {
            options,
            storm,
            hub,
            tx,
            watch: Arc::default(),
        })
    }

    /// A handle that ends the session from another thread (a signal handler).
    pub fn interrupter(&self) -> Interrupter {
        Interrupter {
            tx: self.tx.clone(),
            watch: Arc::clone(&self.watch),
        }
    }

    /// Starts the recording and the server and relays until the client or the server ends
    /// the session. `log` gets our notes (one line each); `server_log` gets the server's
    /// stderr as it comes.
    pub fn run(
        self,
        client_in: impl Read + Send + 'static,
        client_out: impl Write + Send + 'static,
        log: impl Write + Send + 'static,
        server_log: impl Write + Send + 'static,
    ) -> Result<Ending, ProxyError> {
        let Proxy {
            options,
            storm,
            hub,
            tx,
            watch,
        } = self;
        let mut log: Box<dyn Write + Send> = Box::new(log);
        let command = options
            .server
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>();
        let facts = McpSession {
            server_command: super::session::redact_argv(&command),
            scenario: options
                .scenario_path
                .as_ref()
                .map(|p| p.display().to_string()),
            probability: options.scenario.as_ref().and_then(|s| s.probability),
            max_calls: options
                .scenario
                .as_ref()
                .map_or(MAX_RECORDED_CALLS, |s| s.max_calls),
            checks: options
                .scenario
                .as_ref()
                .map(|s| s.checks.clone())
                .unwrap_or_default(),
            agent: options.agent.clone().map(Box::new),
            annotations: options
                .scenario
                .as_ref()
                .map(|s| s.annotations)
                .unwrap_or_default(),
            ..McpSession::default()
        };
        // The recording's target is locked and what it continues is read before the server
        // starts, so a target that cannot be written stops us first; the recording itself
        // starts (and replaces an earlier one) only once the server and the listener are up,
        // so a session that cannot start leaves the earlier recording as it was; it exists
        // before any message is relayed.
        let mut facts = facts;
        if super::address::is_url(&options.server) || options.listen.is_some() {
            let http = "streamable-http".to_owned();
            let stdio = "stdio".to_owned();
            facts.transport = Some(Box::new(super::session::Transport {
                client: if options.listen.is_some() {
                    http.clone()
                } else {
                    stdio.clone()
                },
                server: if super::address::is_url(&options.server) {
                    http
                } else {
                    stdio
                },
                url: super::address::is_url(&options.server)
                    .then(|| super::address::recorded_url(&command[0])),
                listen: options.listen.as_ref().map(|l| l.addr.clone()),
                // The client's headers are learnt as its requests come; the proxy's own are
                // kept apart, their values hidden.
                request_headers: Vec::new(),
                added_headers: options
                    .headers
                    .iter()
                    .map(|(n, v)| {
                        let kept = super::http::headers::recorded_added(n, v);
                        (n.to_ascii_lowercase(), kept)
                    })
                    .collect(),
            }));
            // The URL is the server's whole command: kept as the transport keeps it.
            if let Some(t) = &facts.transport
                && let Some(u) = &t.url
            {
                facts.server_command = vec![u.clone()];
            }
        }
        let mut prior = None;
        // What the start has to say, said once the session is under way (after the line that
        // says where the proxy listens, which clients wait for).
        let mut starting: Vec<String> = Vec::new();
        let prepared = match &options.record {
            Some(path) => {
                let record_error = |error| ProxyError::Record {
                    path: path.clone(),
                    error,
                };
                let mut signal = None;
                let lock = super::recorder::lock(
                    path,
                    &mut || {
                        let _ = writeln!(
                            log,
                            "toolstorm-tui mcp: another session is recording to {}; waiting for it to end",
                            path.display()
                        );
                    },
                    &mut || {
                        if let Some(Event::Interrupt(n)) = hub.early() {
                            signal = Some(n);
                        }
                        signal.is_some()
                    },
                );
                let lock = match (lock, signal) {
                    (_, Some(n)) => return Err(ProxyError::Interrupted(n)),
                    (l, None) => l.map_err(record_error)?,
                };
                let earlier = continued(path, options.append, options.scenario_path.as_deref())?;
                if let Some((c, s)) = &earlier {
                    storm.resume(&c.report).map_err(|e| ProxyError::Append {
                        path: path.clone(),
                        why: e.to_string(),
                    })?;
                    facts.protocol_version = s.protocol_version.clone();
                    facts.client_info = s.client_info.clone();
                    facts.server_info = s.server_info.clone();
                    facts.exchanges = s.exchanges.clone();
                    starting.push(format!(
                        "continuing the recording {} ({} call(s) so far)",
                        path.display(),
                        c.report.calls.len()
                    ));
                }
                prior = earlier;
                Some((path, lock))
            }
            None => None,
        };
        // The listening socket is bound before the server starts: an address in use or
        // refused stops us with nothing started.
        let bound = match &options.listen {
            Some(l) => Some(bind(l).map_err(ProxyError::Listen)?),
            None => None,
        };
        let remote_server = super::address::is_url(&options.server);
        let runtime = if remote_server || options.listen.is_some() {
            Some(super::http::runtime().map_err(ProxyError::Runtime)?)
        } else {
            None
        };
        // A listening proxy and a remote server share what travels beside the messages.
        let routing = (remote_server && options.listen.is_some()).then(|| Routing {
            origins: Arc::default(),
            envelopes: Arc::default(),
        });
        let to_client = Flow::new();
        let to_server = Flow::new();
        // An HTTP side's tasks run the relay themselves only when nothing it writes to can
        // hold them: HTTP on both sides (a stdio peer that stops reading would block a
        // runtime worker in the write); else they hand their messages to the relay's thread.
        let task_tx = if remote_server && options.listen.is_some() {
            tx.combining()
        } else {
            tx.clone()
        };
        let mut passage = None;
        let mut server_err = None;
        // Where either HTTP side leaves its requests for the wire log.
        let exchanges = super::wirelog::Exchanges::default();
        // The server's notes: a remote server's go to the upstream side; a child's stderr is
        // copied once the session is under way.
        let mut server_log = Some(server_log);
        let (mut server, server_in, server_out): ServerParts = match (&runtime, remote_server) {
            (Some(rt), true) => {
                let url = options.server[0].to_string_lossy().into_owned();
                // The server's messages go straight to the relay, read ahead as its reader
                // thread would.
                let inlet = super::http::pipe::feed(
                    task_tx.clone(),
                    Side::Server,
                    Arc::clone(&to_client),
                    Some(answers::keep_answer),
                );
                let (mut remote, input) = Remote::connect(
                    &url,
                    options.headers.clone(),
                    routing.clone(),
                    rt.handle(),
                    inlet,
                    match server_log.take() {
                        Some(l) => Box::new(l),
                        None => Box::new(std::io::sink()),
                    },
                )
                .map_err(ProxyError::Remote)?;
                starting.extend(remote.start_notes());
                remote.log_exchanges(exchanges.clone());
                passage = Some(remote.passage());
                (Box::new(remote), Some(Box::new(input)), None)
            }
            _ => {
                let (server, streams) = child::Server::spawn(
                    &options.server,
                    options.server_dir.as_deref(),
                    options.watchdog.as_ref(),
                )
                .map_err(|error| ProxyError::Spawn {
                    command: command.join(" "),
                    error,
                })?;
                watch
                    .group
                    .store(server.id(), std::sync::atomic::Ordering::SeqCst);
                // Relayed once the proxy has said where it listens (its pipe holds it
                // meanwhile): a client that waits for that line reads it first.
                server_err = streams.stderr;
                (
                    Box::new(server),
                    streams.stdin.map(|w| Box::new(w) as Box<dyn Write + Send>),
                    streams.stdout.map(|r| Box::new(r) as Box<dyn Read + Send>),
                )
            }
        };
        let mut control = None;
        let mut listening_at = None;
        let (client_in, client_out): (Option<Box<dyn Read + Send>>, Box<dyn Write + Send>) =
            match (bound, &runtime) {
                (Some(b), Some(rt)) => {
                    let remote = passage.zip(routing);
                    let inlet = super::http::pipe::feed(
                        task_tx.clone(),
                        Side::Client,
                        Arc::clone(&to_server),
                        None,
                    );
                    let listening =
                        listen(b, rt.handle(), inlet, remote, Box::new(std::io::stderr()))
                            .map_err(|e| {
                                server.stop();
                                ProxyError::Listen(e)
                            })?;
                    let url = format!("http://{}{}", listening.local, super::http::listen::PATH);
                    if let Some(t) = facts.transport.as_mut() {
                        t.listen = Some(url.clone());
                    }
                    listening_at = Some(url);
                    listening.control.log_exchanges(exchanges.clone());
                    control = Some(listening.control);
                    (None, Box::new(listening.router))
                }
                _ => (Some(Box::new(client_in)), Box::new(client_out)),
            };
        let recorder = match prepared {
            Some((path, lock)) => {
                if !options.append && path.exists() {
                    starting.push(format!(
                        "replacing the recording {} (--append continues it instead)",
                        path.display()
                    ));
                }
                let started = Recorder::start(
                    path,
                    lock,
                    &session_id(path),
                    &storm,
                    &facts,
                    prior.as_ref().map(|(_, s)| s),
                );
                match started {
                    Ok(r) => Some(r),
                    Err(error) => {
                        server.stop();
                        return Err(ProxyError::Record {
                            path: path.clone(),
                            error,
                        });
                    }
                }
            }
            None => None,
        };
        // The wire log beside the recording (without it the recording is whole all the same).
        let mut key = [0u8; 32];
        let keyed = getrandom::fill(&mut key).map_err(|e| std::io::Error::other(e.to_string()));
        let wire = options
            .record
            .as_ref()
            .filter(|_| recorder.is_some())
            .and_then(|path| {
                let made = keyed
                    .as_ref()
                    .map_err(|e| std::io::Error::other(e.to_string()))
                    .and_then(|()| {
                        super::wirelog::WireLog::create(
                            path,
                            options.append,
                            Arc::clone(storm.clock()),
                            key,
                        )
                    });
                match made {
                    Ok(w) => Some(w),
                    Err(e) => {
                        starting.push(format!(
                            "the wire log {} could not be started ({e}); recording without it",
                            crate::printable::quoted(
                                &super::wirelog::wire_path(path).display().to_string()
                            )
                        ));
                        None
                    }
                }
            });
        // The HTTP requests of either side, with their answers' heads, go into it too, from
        // before the listening line: a client that calls at once has its first request logged.
        let mut wire = wire;
        if let Some(w) = wire.as_mut() {
            w.take_exchanges(exchanges.clone());
        }
        if let Some(url) = listening_at {
            // Said once everything is up: a client that waits for this line finds the
            // recording under way.
            let _ = writeln!(log, "listening on {url}");
        }
        for note in starting {
            let _ = writeln!(log, "toolstorm-tui mcp: {note}");
        }
        let _ = log.flush();
        if let (Some(mut err), Some(mut out)) = (server_err, server_log) {
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut err, &mut out);
            });
        }
        if let Some(out) = server_out {
            let (tx, flow) = (tx.clone(), Arc::clone(&to_client));
            std::thread::spawn(move || {
                read_messages(
                    out,
                    Side::Server,
                    &|e| tx.send(e),
                    &flow,
                    Some(answers::keep_answer),
                )
            });
        }
        if let Some(client_in) = client_in {
            let (tx, flow) = (tx.clone(), Arc::clone(&to_server));
            std::thread::spawn(move || {
                read_messages(client_in, Side::Client, &|e| tx.send(e), &flow, None)
            });
        }
        drop(tx);
        drop(task_tx);
        let mut relay = Relay::new(
            storm,
            options.scenario,
            recorder,
            facts,
            prior.as_ref().map(|(c, s)| (&c.report, s)),
            Ends {
                client_out,
                server_in,
                http: control,
                log,
                to_client,
                to_server,
            },
        );
        relay.wire = wire;
        let Some((mut relay, code)) = relay.serve(&hub, server.as_mut()) else {
            // The relay was not where its thread left it (a bug): nothing more can be
            // relayed or recorded; the journal keeps what was.
            server.stop();
            return Err(ProxyError::Relay);
        };
        watch.over.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(c) = &relay.ends.http {
            c.close();
        }
        relay.finish_pending("the session ended before an answer");
        // Those ends are on record before the server's group is stopped (which takes a while).
        relay.flush();
        // Whatever is left of the server's group (a launcher's children too) goes now.
        server.stop();
        let ending = relay.finish(code);
        hub.close();
        if let Some(rt) = runtime {
            rt.shutdown_timeout(std::time::Duration::from_millis(500));
        }
        Ok(ending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_written_out_show_no_secret() {
        let options = Options {
            server: vec!["https://ops:pw-HIDDEN@h/mcp".into()],
            headers: vec![
                ("X-Upstream-Auth".into(), "hdr-HIDDEN".into()),
                ("User-Agent".into(), "ship/1".into()),
            ],
            ..Options::default()
        };
        let shown = format!("{options:?}");
        assert!(!shown.contains("HIDDEN"), "{shown}");
        assert!(
            shown.contains(r#"("X-Upstream-Auth", "[REDACTED]"), ("User-Agent", "ship/1")"#),
            "{shown}"
        );
        assert!(shown.contains("https://[REDACTED]@h/mcp"), "{shown}");
    }
}
