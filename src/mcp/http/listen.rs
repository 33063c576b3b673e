//! The proxy's client side as a Streamable HTTP server (`mcp --listen ADDR`): one endpoint,
//! `/mcp`, taking POST, GET and DELETE as the 2025-06-18 and 2025-11-25 revisions describe
//! them (and POST alone, as 2026-07-28 has it). Each client message becomes a line for the
//! relay ([`super::pipe`]); each line the relay writes for the client is routed back to the
//! HTTP stream it belongs to by the [`Router`]:
//! - the answer to a request goes to that request's POST, as a JSON body (when the server
//!   answered so) or as the last event of its stream;
//! - a server's request or notification goes to the stream it came on upstream (its tag), to
//!   the stream of the request its progress token names, or else to the session's GET stream;
//! - an answer the proxy made itself (an injected fault) has no tag and goes by its id.
//!
//! Every stream is written with event ids (`S-N`, `S` the stream's unguessable id), and what
//! it sent is kept (bounded) so a client whose connection broke resumes it with
//! `Last-Event-ID` — only within the session the stream was opened in and with the
//! credentials it was opened with; a session's DELETE forgets its streams. A stream the proxy
//! cut on purpose (the `stream_cut` delivery) is never resumed with the answer it lost.
//!
//! The session: with a remote server, its `Mcp-Session-Id` is relayed as it is, and its errors
//! (400, 404, 401 with `WWW-Authenticate`, 429 with `Retry-After`) reach the client as they
//! came. With a server on stdio the proxy issues the session itself (one per `initialize`),
//! with an id from its secret ([`super::secret`]), bound to the credentials of the
//! `initialize` that opened it: another credential under that id is an unknown session (404).
//!
//! Security: the proxy binds loopback unless remote clients were allowed, and refuses (403) a
//! request whose `Host` or `Origin` does not name this machine or a host allowed with
//! `--allow-host` (DNS rebinding), also with `--allow-remote`; a request with two `Host`
//! headers, or whose absolute-form target names another authority than its `Host`, is 400.
//!
//! Here: the requests (POST, GET, DELETE) and the streams they open. Beside it: `router`
//! (where the relay's lines go), [`control`] (what the relay asks of the streams beyond a
//! message) and `conns` (the connections and their cap).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Method, Request, Response};
use hyper_util::rt::TokioIo;
use tokio::sync::mpsc;

mod conns;
pub mod control;
mod router;

use super::pipe::Inlet;
use super::secret::{Credential, Secret};
use super::sse;
use super::upstream::{Passage, Routing};
use super::{Envelope, Header, Origin, Stream, Tags, headers};
use crate::hashing::Map;
use crate::mcp::wire::{self, Id, Message};
use crate::mcp::wirelog::{Dir, Exchange, Exchanges};
use conns::*;
pub use control::Control;
pub use router::Router;

/// The endpoint's path.
pub const PATH: &str = "/mcp";
/// Bytes of events a stream keeps for a client that resumes it.
const KEPT_FOR_RESUME: usize = 1024 * 1024;
/// Bytes of events all streams keep for resumption: past it, what finished streams keep is let
/// go, oldest first (a long session of large answers would otherwise keep gigabytes).
const KEPT_IN_ALL: usize = 64 * 1024 * 1024;
/// Bytes queued for one stream whose client does not read before the stream is given up
/// (its events stay resumable).
const QUEUED_MAX: usize = 16 * 1024 * 1024;
/// Bytes still queued for a stream that do not count against one event larger than
/// [`QUEUED_MAX`] (the priming event before an answer, a notification or two).
const QUEUED_SLACK: usize = 64 * 1024;
/// Server messages kept for a GET stream not yet opened.
const UNSENT_MAX: usize = 256;
/// Sessions the proxy issues and remembers (a server on stdio).
const SESSIONS_MAX: usize = 4096;

/// How long a connection may take to send a request's head, and stay silent between
/// requests, before it is closed (a client that opens connections and sends nothing holds
/// no socket for long).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections kept open at most, below the descriptors the process may open: past it, the
/// oldest connection with no request in hand is closed for each new one (see
/// [`Connections`]).
const CONNECTIONS_MAX: usize = 1024;
/// Descriptors kept for everything but client connections (the server's pipes, the
/// recording's files, the runtime's own, and a new client's socket).
const DESCRIPTORS_KEPT: usize = 32;

/// After a connection could not be accepted for want of descriptors or memory, the wait
/// before the next try: the others' connections are served meanwhile, not starved by a loop.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
/// After an idle connection was closed to make room, the wait before the next try: its task
/// gives its descriptor back as it ends.
const ROOM_PAUSE: Duration = Duration::from_millis(5);
/// That want is said at most this often.
const ACCEPT_NOTE_EVERY: Duration = Duration::from_secs(60);

/// Whether accepting failed for want of a resource (descriptors, memory), which a retry at
/// once cannot find; other errors (a connection reset before it was taken) are the client's.
fn out_of_resources(e: &std::io::Error) -> bool {
    use nix::errno::Errno;
    e.raw_os_error().is_some_and(|n| {
        matches!(
            Errno::from_raw(n),
            Errno::EMFILE | Errno::ENFILE | Errno::ENOBUFS | Errno::ENOMEM
        )
    })
}

/// How the proxy listens.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// The address to bind (`127.0.0.1:0` picks a free port).
    pub addr: String,
    /// Take clients from other machines (otherwise loopback only).
    pub allow_remote: bool,
    /// Host names (or addresses) a request's `Host` may name beside loopback and the listen
    /// address (`--allow-host`).
    pub allow_hosts: Vec<String>,
    /// [`HEAD_TIMEOUT`], unless a test needs it shorter.
    pub head_timeout: Duration,
}

impl ListenOptions {
    /// `--listen ADDR`, with `--allow-remote` or not.
    pub fn new(addr: &str, allow_remote: bool) -> ListenOptions {
        ListenOptions {
            addr: addr.to_owned(),
            allow_remote,
            allow_hosts: Vec::new(),
            head_timeout: HEAD_TIMEOUT,
        }
    }
}

/// Why the proxy cannot listen.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// Not an address.
    #[error(
        "--listen {0:?} is not an address: give HOST:PORT, e.g. 127.0.0.1:8931 (port 0 picks a free one)"
    )]
    Address(String),
    /// A non-loopback address without `--allow-remote`.
    #[error(
        "--listen {0}: that address takes clients from other machines; give --allow-remote to allow it, or listen on 127.0.0.1"
    )]
    Remote(String),
    /// The bind failed.
    #[error("cannot listen on {0}: {1}")]
    Bind(String, std::io::Error),
    /// The operating system gave no random bytes for the session ids.
    #[error("cannot listen: the system's secure random source failed: {0}")]
    Random(String),
}

/// An item for one HTTP answer: its head first, then its body's bytes.
#[derive(Debug)]
enum Out {
    Head {
        status: u16,
        headers: Vec<Header>,
        json: bool,
    },
    Data(Bytes),
}

/// One answer stream (a POST's, or a GET stream).
#[derive(Debug)]
struct StreamState {
    /// Where its items go; none once its client is gone (or it ended).
    tx: Option<mpsc::UnboundedSender<Out>>,
    /// Bytes queued and not yet taken by the connection.
    queued: Arc<AtomicUsize>,
    session: Option<String>,
    /// The head has been sent.
    started: bool,
    /// Events sent, for resumption: (number, bytes), newest last.
    kept: VecDeque<(u64, Bytes)>,
    kept_bytes: usize,
    next_event: u64,
    /// The stream's answer went out (or it was cut): nothing more goes on it.
    done: bool,
    /// The proxy cut it (a fault): resumption gives nothing.
    cut: bool,
    /// The client takes a JSON body for the answer.
    takes_json: bool,
    /// The request it answers, when it is a POST's.
    request: Option<Id>,
    /// Its events carry ids and it can be resumed (not under 2026-07-28, whose streams are
    /// not resumable: a client whose stream ends without the answer re-issues the request).
    resumable: bool,
    /// The client's own id (as written), when its request went on under one of ours.
    original: Option<Vec<u8>>,
    /// Its event ids' stream part (`N.MAC`): its number and the keyed digest of it.
    token: String,
    /// The credentials of the request that opened it: a resume must bring the same.
    credential: Credential,
}

impl StreamState {
    fn new(
        tx: mpsc::UnboundedSender<Out>,
        queued: &Arc<AtomicUsize>,
        session: Option<String>,
        request: Option<Id>,
        takes_json: bool,
    ) -> StreamState {
        StreamState {
            tx: Some(tx),
            queued: Arc::clone(queued),
            session,
            started: false,
            kept: VecDeque::new(),
            kept_bytes: 0,
            next_event: 1,
            done: false,
            cut: false,
            takes_json,
            request,
            resumable: true,
            original: None,
            token: String::new(),
            credential: Credential::default(),
        }
    }
}

impl StreamState {
    /// Answers with one whole body (not an event stream).
    fn whole(&mut self, status: u16, headers: Vec<Header>, body: Bytes) {
        self.started = true;
        if let Some(tx) = &self.tx {
            let _ = tx.send(Out::Head {
                status,
                headers,
                json: true,
            });
            let _ = tx.send(Out::Data(body));
        }
    }
}

/// What the listener and the router share.
#[derive(Debug, Default)]
struct Face {
    streams: Map<u64, StreamState>,
    next_stream: u64,
    /// Requests awaiting answers, by id: (stream, session), oldest first.
    waiting: Map<Id, VecDeque<u64>>,
    /// Progress tokens of requests in flight.
    progress: Map<Id, u64>,
    /// The GET stream of each session.
    gets: Map<Option<String>, u64>,
    /// Server messages for a GET stream not open yet.
    unsent: VecDeque<Vec<u8>>,
    /// Sessions we issued (a server on stdio), oldest first, each with the credentials of the
    /// `initialize` that opened it.
    sessions: VecDeque<(String, Credential)>,
    /// Initialize requests in flight (their answers carry a new session id).
    initializing: crate::hashing::Set<Id>,
    /// The protocol version each session negotiated (its initialize's answer), oldest first.
    negotiated: VecDeque<(String, String)>,
    issued: u64,
    /// Bytes of events kept for resumption, all streams together.
    kept_in_all: usize,
    /// Finished streams, in the order they finished: whose kept events go first.
    finished: VecDeque<u64>,
}

/// The listening side, shared by every connection's handler.
struct Listener {
    face: Arc<Mutex<Face>>,
    to_relay: Mutex<Option<Inlet>>,
    /// The remote server (a URL upstream); none for a server on stdio.
    passage: Option<Passage>,
    envelopes: Option<Arc<Tags<Envelope>>>,
    allow_remote: bool,
    /// Hosts a request's `Host` may name beside loopback.
    allow_hosts: Vec<String>,
    log: Mutex<Box<dyn Write + Send>>,
    /// The key the ids of sessions and streams come from.
    secret: Secret,
    /// The connections open now, oldest first.
    connections: Mutex<Connections>,
    /// How long a request's body may take to arrive, as its head may.
    body_timeout: Duration,
    /// The headers clients' requests carried, by name, as the recording keeps them.
    seen: Mutex<std::collections::BTreeMap<String, String>>,
    /// Each `tools/call`'s request headers as the recording keeps them, beside its bytes
    /// until the relay records the call.
    call_headers: Tags<Vec<Header>>,
    /// Header values as the recording keeps them, by name and value (the same headers come
    /// with every call: each is redacted once).
    recorded: Mutex<Map<(String, String), String>>,
    /// Requests refused as invalid since the relay last looked (why each was), for the
    /// session's `refused_requests`; at most [`crate::mcp::session::REFUSED_KEPT`].
    refused: Mutex<Vec<String>>,
    /// Each request and its answer's head, for the wire log (once one is attached).
    exchanges: std::sync::OnceLock<Exchanges>,
}

/// Header names kept for the recording, at most (for the session, and per request).
const SEEN_MAX: usize = 64;

/// Header values kept redacted for reuse before the cache starts again.
const RECORDED_MAX: usize = 4096;

/// What the proxy gets from [`listen`].
pub struct Listening {
    /// The address bound.
    pub local: SocketAddr,
    /// Where the relay writes messages for the clients.
    pub router: Router,
    /// Ends the session's client side.
    pub control: Control,
}

impl std::fmt::Debug for Listening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listening")
            .field("local", &self.local)
            .finish()
    }
}

/// A socket bound to the `--listen` address, not yet served: bound before anything else
/// starts, so an address that cannot be used stops the proxy first.
#[derive(Debug)]
pub struct Bound {
    listener: std::net::TcpListener,
    /// The address it is bound to (the port picked, for port 0).
    pub local: SocketAddr,
    addr: String,
    allow_remote: bool,
    allow_hosts: Vec<String>,
    head_timeout: Duration,
}

/// Binds `options.addr`: a loopback address, or any with `allow_remote`.
pub fn bind(options: &ListenOptions) -> Result<Bound, ListenError> {
    let addr: SocketAddr = match options.addr.parse() {
        Ok(a) => a,
        Err(_) => {
            let resolved = std::net::ToSocketAddrs::to_socket_addrs(options.addr.as_str())
                .ok()
                .and_then(|mut it| it.next());
            resolved.ok_or_else(|| ListenError::Address(options.addr.clone()))?
        }
    };
    if !addr.ip().is_loopback() && !options.allow_remote {
        return Err(ListenError::Remote(options.addr.clone()));
    }
    let bind_error = |e| ListenError::Bind(options.addr.clone(), e);
    let listener = std::net::TcpListener::bind(addr).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    let local = listener.local_addr().map_err(bind_error)?;
    Ok(Bound {
        listener,
        local,
        addr: options.addr.clone(),
        allow_remote: options.allow_remote,
        allow_hosts: allowed_hosts(options, &local),
        head_timeout: options.head_timeout,
    })
}

/// The names a request's `Host` may give beside loopback: the listen address as given (its
/// host), the address bound (unless it is a wildcard, which no request names), and the
/// `--allow-host` names.
fn allowed_hosts(options: &ListenOptions, local: &SocketAddr) -> Vec<String> {
    let given = options
        .addr
        .rsplit_once(':')
        .map_or(options.addr.as_str(), |(h, _)| h);
    let given = given.trim_start_matches('[').trim_end_matches(']');
    let mut out: Vec<String> = options.allow_hosts.clone();
    if !local.ip().is_unspecified() {
        out.push(local.ip().to_string());
    }
    if !given.is_empty() && given.parse::<std::net::IpAddr>().is_err() {
        out.push(given.to_owned());
    }
    out
}

/// Starts serving `bound` on `runtime`; the clients' messages go into `inlet`. `remote` is the
/// URL upstream's passage and routing; none for a server on stdio.
pub fn listen(
    bound: Bound,
    runtime: &tokio::runtime::Handle,
    inlet: Inlet,
    remote: Option<(Passage, Routing)>,
    log: Box<dyn Write + Send>,
) -> Result<Listening, ListenError> {
    let Bound {
        listener,
        local,
        addr,
        allow_remote,
        allow_hosts,
        head_timeout,
    } = bound;
    let secret = Secret::new().map_err(|e| ListenError::Random(e.to_string()))?;
    let listener = {
        let _entered = runtime.enter();
        tokio::net::TcpListener::from_std(listener).map_err(|e| ListenError::Bind(addr, e))?
    };
    let face = Arc::new(Mutex::new(Face::default()));
    let (passage, routing) = match remote {
        Some((p, r)) => (Some(p), Some(r)),
        None => (None, None),
    };
    let shared = Arc::new(Listener {
        face: Arc::clone(&face),
        to_relay: Mutex::new(Some(inlet)),
        passage,
        envelopes: routing.as_ref().map(|r| Arc::clone(&r.envelopes)),
        allow_remote,
        allow_hosts,
        log: Mutex::new(log),
        secret,
        connections: Mutex::new(Connections::new(connection_cap())),
        body_timeout: head_timeout,
        seen: Mutex::default(),
        refused: Mutex::default(),
        call_headers: Tags::default(),
        recorded: Mutex::default(),
        exchanges: std::sync::OnceLock::new(),
    });
    let accept = Arc::clone(&shared);
    runtime.spawn(async move {
        let mut noted: Option<std::time::Instant> = None;
        loop {
            let tcp = match listener.accept().await {
                Ok((tcp, _)) => tcp,
                Err(e) if out_of_resources(&e) => {
                    if noted.is_none_or(|t| t.elapsed() >= ACCEPT_NOTE_EVERY) {
                        accept.note(&format!(
                            "cannot take a new connection: {e}; new clients wait until it can"
                        ));
                        noted = Some(std::time::Instant::now());
                    }
                    // Room is made as past the cap: the oldest idle connection goes (its
                    // descriptor is given back as its task ends); with none, new clients wait.
                    let made_room = accept
                        .connections
                        .lock()
                        .is_ok_and(|mut c| c.close_oldest_idle(std::time::Instant::now()));
                    let pause = if made_room { ROOM_PAUSE } else { ACCEPT_PAUSE };
                    tokio::time::sleep(pause).await;
                    continue;
                }
                Err(_) => continue,
            };
            let _ = tcp.set_nodelay(true);
            let handler = Arc::clone(&accept);
            let Ok((number, conn, closed)) = accept
                .connections
                .lock()
                .map(|mut c| c.open(std::time::Instant::now()))
            else {
                continue;
            };
            if let Some(dropped) = conn.dropped {
                accept.note(&format!(
                    "{} connections are open, the most kept: closed the oldest with no request in hand",
                    dropped
                ));
            }
            let conn = conn.state;
            let registry = Arc::clone(&accept);
            tokio::spawn(async move {
                let mine = Arc::clone(&conn);
                let service = hyper::service::service_fn(move |req| {
                    let h = Arc::clone(&handler);
                    let conn = Arc::clone(&mine);
                    async move {
                        let log = h.exchanges.get().filter(|x| x.active());
                        let asked = log.is_some().then(|| {
                            (
                                req.method().to_string(),
                                crate::mcp::address::recorded_url(req.uri().path()),
                                h.recorded_headers(req.headers()),
                            )
                        });
                        let answer = h.handle(req, &conn).await;
                        if let (Some(log), Some((method, path, request))) = (log, asked) {
                            log.log(Exchange {
                                dir: Dir::FromClient,
                                method,
                                path,
                                status: answer.status().as_u16(),
                                request,
                                response: h.recorded_headers(answer.headers()),
                            });
                        }
                        Ok::<_, Infallible>(answer)
                    }
                });
                let serve = hyper::server::conn::http1::Builder::new()
                    .keep_alive(true)
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(head_timeout)
                    .serve_connection(TokioIo::new(tcp), service);
                // A connection closed to make room ends here: its socket goes with the future.
                tokio::select! {
                    _ = serve => {}
                    _ = closed => {}
                }
                if let Ok(mut c) = registry.connections.lock() {
                    c.close(number);
                }
            });
        }
    });
    Ok(Listening {
        local,
        router: Router {
            face: Arc::clone(&face),
            origins: routing.map(|r| r.origins),
            partial: Vec::new(),
            log_shared: Arc::clone(&shared),
        },
        control: Control { shared },
    })
}

/// A plain answer: a status, headers and a short body.
fn plain(status: u16, headers: &[Header], body: &str) -> Answer {
    let mut r = Response::builder().status(status);
    for (n, v) in headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(n.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            r = r.header(n, v);
        }
    }
    if !body.is_empty() {
        r = r.header(CONTENT_TYPE, "text/plain; charset=utf-8");
    }
    r.body(http_body_util::Either::Left(http_body_util::Full::new(
        Bytes::from(body.to_owned()),
    )))
    .unwrap_or_else(|_| Response::new(http_body_util::Either::Left(Default::default())))
}

/// The longest request body taken: the bytes in flight one direction of the proxy holds
/// (the relay's budget), so one request never takes more memory than the proxy promises. A
/// longer one is refused (413) as it comes, never buffered whole.
pub const BODY_MAX: usize = 16 * 1024 * 1024;

/// Bytes of a request body past the limit read and dropped before the refusal is sent.
const DRAINED: usize = 64 * 1024 * 1024;

/// JSON-RPC's code for a message that is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a request it can take.
const INVALID_REQUEST: i64 = -32600;

/// A JSON-RPC error answer with an HTTP status (for requests refused before the relay).
fn rpc_refusal(status: u16, id: Option<&Id>, message: &str) -> Answer {
    rpc_refusal_with(status, id, INVALID_REQUEST, message)
}

/// [`rpc_refusal`] with the JSON-RPC error code given.
fn rpc_refusal_with(status: u16, id: Option<&Id>, code: i64, message: &str) -> Answer {
    let raw = id.map_or("null", |i| i.0.as_str());
    let mut line = wire::error_line_as(raw, code, message, None);
    while line.last() == Some(&b'\n') {
        line.pop();
    }
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "application/json")
        .body(http_body_util::Either::Left(http_body_util::Full::new(
            Bytes::from(line),
        )))
        .unwrap_or_else(|_| Response::new(http_body_util::Either::Left(Default::default())))
}

fn header<'a>(req: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

impl Listener {
    /// Keeps why a request was refused for the session's record (the first few).
    fn refuse(&self, why: &str) {
        if let Ok(mut r) = self.refused.lock()
            && r.len() < crate::mcp::session::REFUSED_KEPT
        {
            r.push(why.to_owned());
        }
    }

    fn note(&self, text: &str) {
        if let Ok(mut log) = self.log.lock() {
            let _ = writeln!(log, "toolstorm-tui mcp: {}", crate::printable::line(text));
        }
    }

    /// Keeps the names (and redacted values) of a request's headers for the recording.
    fn see(&self, req: &Request<Incoming>) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        for (n, v) in req.headers() {
            if seen.len() >= SEEN_MAX {
                break;
            }
            if !seen.contains_key(n.as_str()) {
                let v = v.to_str().unwrap_or("");
                seen.insert(
                    n.as_str().to_owned(),
                    crate::redact::named::recorded(n.as_str(), v),
                );
            }
        }
    }

    /// A request's headers as the recording keeps them, in the order they came (not
    /// `Content-Length`, which only measures the body).
    fn recorded_headers(&self, headers: &hyper::HeaderMap) -> Vec<Header> {
        let Ok(mut cache) = self.recorded.lock() else {
            return Vec::new();
        };
        if cache.len() > RECORDED_MAX {
            cache.clear();
        }
        headers::kept(headers, SEEN_MAX, |n, v| {
            // Short values are remembered (the cache stays small); a long one is cut anew.
            if v.len() > crate::redact::named::KEPT_VALUE {
                return crate::redact::named::recorded(n, v);
            }
            cache
                .entry((n.to_owned(), v.to_owned()))
                .or_insert_with_key(|(n, v)| crate::redact::named::recorded(n, v))
                .clone()
        })
    }

    async fn handle(&self, req: Request<Incoming>, conn: &Arc<Conn>) -> Answer {
        conn.heard();
        self.see(&req);
        if let Some(why) = headers::malformed(req.headers(), req.uri()) {
            self.note(&format!("refused a request: {why}"));
            return plain(400, &[], &format!("Bad Request: {why}\n"));
        }
        if let Some(why) = headers::refused(
            header(&req, "host"),
            header(&req, "origin"),
            self.allow_remote,
            &self.allow_hosts,
        ) {
            self.note(&format!("refused a request: {why}"));
            return plain(403, &[], &format!("Forbidden: {why}\n"));
        }
        if req.uri().path() != PATH {
            return plain(
                404,
                &[],
                &format!("Not found: the MCP endpoint is {PATH}\n"),
            );
        }
        if let Some(why) = self.version_refused(&req) {
            self.note(&format!("refused a request: {why}"));
            return rpc_refusal(400, None, &format!("Bad Request: {why}"));
        }
        match *req.method() {
            Method::POST => self.post(req, conn).await,
            Method::GET => self.get(req, conn.enter()).await,
            Method::DELETE => {
                let _busy = conn.enter();
                self.delete(req).await
            }
            _ => plain(405, &[("Allow".into(), "GET, POST, DELETE".into())], ""),
        }
    }

    /// Why a request's `MCP-Protocol-Version` is refused (400), or none: a version the proxy
    /// does not know, or, in a session whose initialize it saw answered, another version than
    /// the one that session negotiated. (None at all is taken: the transport says to assume
    /// 2025-03-26, and the session's own version frames it.)
    fn version_refused(&self, req: &Request<Incoming>) -> Option<String> {
        let version = header(req, "mcp-protocol-version")?;
        if !wire::is_known_version(version) {
            return Some(format!(
                "Unsupported protocol version: {} (supported: {})",
                crate::printable::line(version),
                wire::KNOWN_VERSIONS.join(", ")
            ));
        }
        let session = header(req, "mcp-session-id")?;
        let face = self.face.lock().ok()?;
        let agreed = face.negotiated(session)?;
        (agreed != version).then(|| {
            format!(
                "MCP-Protocol-Version {} is not the version this session negotiated ({})",
                crate::printable::line(version),
                crate::printable::line(agreed)
            )
        })
    }

    /// Whether a request is framed as 2026-07-28 frames it (no resumable streams, a broken
    /// stream is its cancel): by its session's version, when the proxy saw it negotiated, so
    /// a header switched mid-session changes nothing; else by the version its header or its
    /// `_meta` names.
    fn stateless(
        &self,
        session: Option<&str>,
        header: Option<&str>,
        params: Option<&crate::json::Value>,
    ) -> bool {
        let agreed = session.and_then(|s| {
            let face = self.face.lock().ok()?;
            face.negotiated(s).map(wire::is_stateless)
        });
        agreed.unwrap_or_else(|| {
            header.is_some_and(wire::is_stateless)
                || params
                    .and_then(wire::request_version)
                    .is_some_and(|v| wire::is_stateless(&v))
        })
    }

    /// The headers of a client's request passed on upstream.
    fn envelope(req: &Request<Incoming>) -> Envelope {
        Envelope {
            headers: headers::passed(req.headers(), &["accept", "content-type", "last-event-id"]),
        }
    }

    /// Checks the session of a request when we issue sessions (a server on stdio): a
    /// request other than `initialize` must name one we issued (missing: 400, unknown: 404),
    /// with the credentials it was opened with (others: 404, as for an unknown session).
    fn session_refusal(
        &self,
        session: Option<&str>,
        initialize: bool,
        id: Option<&Id>,
        credential: Credential,
    ) -> Option<Answer> {
        if self.passage.is_some() || initialize {
            return None;
        }
        let face = self.face.lock().ok()?;
        if face.sessions.is_empty() {
            return None;
        }
        match session {
            None => Some(rpc_refusal(
                400,
                id,
                "Bad Request: Mcp-Session-Id header is required",
            )),
            Some(s)
                if !face
                    .sessions
                    .iter()
                    .any(|(k, c)| k == s && *c == credential) =>
            {
                Some(rpc_refusal(404, id, "Not Found: the session has ended"))
            }
            Some(_) => None,
        }
    }

    async fn post(&self, req: Request<Incoming>, conn: &Arc<Conn>) -> Answer {
        let accept = header(&req, "accept").unwrap_or("").to_ascii_lowercase();
        let takes_sse =
            accept.contains("text/event-stream") || accept.contains("*/*") || accept.is_empty();
        let takes_json =
            accept.contains("application/json") || accept.contains("*/*") || accept.is_empty();
        let envelope = Listener::envelope(&req);
        let session = header(&req, "mcp-session-id").map(str::to_owned);
        let version = header(&req, "mcp-protocol-version").map(str::to_owned);
        let credential = self.secret.credential(req.headers());
        let (parts, body) = req.into_parts();
        let read = tokio::time::timeout(self.body_timeout, read_limited(body, BODY_MAX));
        let Ok(read) = read.await else {
            let why = format!(
                "Request Timeout: the body did not arrive within {} s",
                self.body_timeout.as_secs_f64()
            );
            self.note(&format!("refused a request: {why}"));
            return rpc_refusal(408, None, &why);
        };
        // The request is in hand from here: its connection is no longer one to close for room.
        let busy = conn.enter();
        let body = match read {
            Ok(b) => b,
            Err(413) => {
                let why = format!(
                    "Payload Too Large: a message over {BODY_MAX} bytes, the most the proxy \
                     takes"
                );
                return rpc_refusal(413, None, &why);
            }
            Err(status) => return rpc_refusal(status, None, "the message could not be read"),
        };
        let mut line = body;
        for b in &mut line {
            if *b == b'\n' || *b == b'\r' {
                *b = b' ';
            }
        }
        // Too long or too deep to read whole, yet JSON: a request or notification still goes
        // on, known by its members, and the relay judges and records it summarised, as on
        // stdio (a body over 8 MB is not checked: it is judged on its first 8 MB).
        let json = |line: &[u8]| line.len() > wire::MAX_PARSED_LINE || wire::is_json(line);
        let message = match wire::classify(&line) {
            Message::Other(why) if json(&line) => {
                wire::unread_message(&line).unwrap_or(Message::Other(why))
            }
            m => m,
        };
        let (id, method, params) = match &message {
            Message::Request { id, method, params } => {
                (Some(id.clone()), Some(method.clone()), Some(params))
            }
            Message::Notification { method, .. } => (None, Some(method.clone()), None),
            Message::Response { .. } => (None, None, None),
            Message::Invalid(why) => {
                // Answered at once: no answer could find its way back by that id.
                self.note(&format!("refused an invalid request: {why}"));
                self.refuse(why);
                return rpc_refusal(400, None, &format!("Invalid Request: {why}"));
            }
            Message::Other(why) => {
                // Not JSON at all is a parse error; JSON that is no message (an array, an
                // object without a method) is an invalid request, as JSON-RPC tells them apart.
                return match json(&line) {
                    false => {
                        self.refuse(&format!("not JSON: {why}"));
                        rpc_refusal_with(400, None, PARSE_ERROR, &format!("Parse error: {why}"))
                    }
                    true => {
                        self.refuse(why);
                        rpc_refusal(400, None, &format!("Invalid Request: {why}"))
                    }
                };
            }
        };
        let initialize = method.as_deref() == Some("initialize");
        let stateless = self.stateless(session.as_deref(), version.as_deref(), params);
        if let Some(refusal) =
            self.session_refusal(session.as_deref(), initialize, id.as_ref(), credential)
        {
            return refusal;
        }
        let Some(mut id) = id else {
            // A notification or an answer: accepted, and passed on.
            if !self.send(line, envelope).await {
                return plain(503, &[], "the proxy's session is over\n");
            }
            return plain(202, &[], "");
        };
        if !takes_sse && !takes_json {
            return rpc_refusal(
                406,
                Some(&id),
                "Not Acceptable: the client must accept application/json or text/event-stream",
            );
        }
        let token = params
            .and_then(|p| p.as_object())
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.as_object())
            .and_then(|m| m.get("progressToken"))
            .map(Id::of);
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let stream_no;
        {
            let Ok(mut face) = self.face.lock() else {
                return plain(500, &[], "");
            };
            let n = face.next_stream;
            stream_no = n;
            face.next_stream += 1;
            // A client's ids are unique within its session only: a request whose id another
            // stream still waits on (another session's, most often) goes on under an id of the
            // proxy's own, so the relay never takes one session's answer for another's call;
            // its answer comes back under the client's id.
            let mut original = None;
            if face.waiting.contains_key(&id)
                && let Some(at) = wire::member(&line, "id")
            {
                let raw = format!("\"toolstorm-{n}\"");
                original = Some(line[at.clone()].to_vec());
                line.splice(at, raw.bytes());
                id = Id::of(&crate::json::Value::from(format!("toolstorm-{n}")));
            }
            let takes_json = takes_json && (!takes_sse || self.passage.is_some());
            let mut st = StreamState::new(tx, &queued, session, Some(id.clone()), takes_json);
            st.resumable = !stateless;
            st.original = original;
            st.credential = credential;
            if st.resumable {
                st.token = self.stream_token(n);
            }
            face.streams.insert(n, st);
            face.waiting.entry(id.clone()).or_default().push_back(n);
            if let Some(t) = token {
                face.progress.insert(t, n);
            }
            if initialize {
                face.initializing.insert(id.clone());
            }
        }
        if method.as_deref() == Some("tools/call") {
            self.call_headers
                .put(&line, self.recorded_headers(&parts.headers));
        }
        if !self.send(line, envelope).await {
            return plain(503, &[], "the proxy's session is over\n");
        }
        // Under 2026-07-28 a broken answer stream is the client's cancel: the relay hears it
        // as `notifications/cancelled` (recorded; passed on to the server, or, for a remote
        // server on that revision, its own request's stream is closed).
        let cancel = OnDrop(stateless.then(|| self.cancel_on_break(id.clone(), stream_no)));
        answer_from(rx, queued, cancel, busy).await
    }

    /// What runs when a 2026-07-28 request's answer stream is let go: unless its answer went
    /// out (or the proxy cut it), the client broke it, which is its cancel.
    fn cancel_on_break(&self, id: Id, n: u64) -> Box<dyn FnOnce() + Send + Sync> {
        let face = Arc::clone(&self.face);
        let to_relay = self.to_relay.lock().ok().and_then(|t| t.clone());
        Box::new(move || {
            let broken = face.lock().is_ok_and(|mut f| match f.streams.get_mut(&n) {
                Some(st) if !st.done && !st.cut => {
                    st.tx = None;
                    true
                }
                _ => false,
            });
            if broken && let Some(tx) = to_relay {
                let cancel = crate::obj! {
                    "jsonrpc" => "2.0",
                    "method" => "notifications/cancelled",
                    "params" => crate::obj! {
                        "requestId" => crate::json::parse(&id.0).unwrap_or_default(),
                        "reason" => "the client's answer stream broke (a cancel under 2026-07-28)",
                    },
                };
                let _ = tx.try_send(crate::json::compact(&cancel).into_bytes());
            }
        })
    }

    async fn send(&self, line: Vec<u8>, envelope: Envelope) -> bool {
        let Some(tx) = self.to_relay.lock().ok().and_then(|t| t.clone()) else {
            return false;
        };
        if let Some(e) = &self.envelopes {
            e.put(&line, envelope);
        }
        tx.send(line).await
    }

    async fn get(&self, req: Request<Incoming>, busy: OnDrop) -> Answer {
        let accept = header(&req, "accept").unwrap_or("").to_ascii_lowercase();
        if !accept.contains("text/event-stream") {
            return plain(
                406,
                &[],
                "Not Acceptable: a GET stream is text/event-stream\n",
            );
        }
        let session = header(&req, "mcp-session-id").map(str::to_owned);
        let credential = self.secret.credential(req.headers());
        if self.passage.is_none()
            && header(&req, "mcp-protocol-version").is_some_and(wire::is_stateless)
        {
            // 2026-07-28 has no GET stream.
            return plain(405, &[("Allow".into(), "POST".into())], "");
        }
        if let Some(refusal) = self.session_refusal(session.as_deref(), false, None, credential) {
            return refusal;
        }
        if let Some(last) = header(&req, "last-event-id") {
            return self.resume(last, session.as_deref(), credential, busy);
        }
        let mut headers_out = Vec::new();
        if let Some(p) = &self.passage {
            let (status, h) = p.open_get(Listener::envelope(&req)).await;
            if !(200..300).contains(&status) {
                return plain(status, &h, "");
            }
            headers_out = h;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let Ok(mut face) = self.face.lock() else {
            return plain(500, &[], "");
        };
        if face
            .gets
            .get(&session)
            .is_some_and(|s| face.streams.get(s).is_some_and(|st| st.tx.is_some()))
            && self.passage.is_none()
        {
            return plain(
                409,
                &[],
                "Conflict: this session's GET stream is open already\n",
            );
        }
        let n = face.next_stream;
        face.next_stream += 1;
        let mut st = StreamState::new(tx, &queued, session.clone(), None, false);
        st.credential = credential;
        st.token = self.stream_token(n);
        face.streams.insert(n, st);
        face.gets.insert(session, n);
        start_events(&mut face, n, 200, headers_out, None);
        let unsent: Vec<Vec<u8>> = face.unsent.drain(..).collect();
        for m in unsent {
            push_event(&mut face, n, &m);
        }
        drop(face);
        sse_answer(rx, queued, busy)
    }

    /// The stream part of stream `n`'s event ids: its number, then the keyed digest of it,
    /// which only this proxy can write (`7.3f9a…`).
    fn stream_token(&self, n: u64) -> String {
        format!("{n}.{}", self.secret.id("stream", n))
    }

    /// A GET with `Last-Event-ID`: the rest of that stream, kept and live — when the stream
    /// is one this proxy wrote that id for, and the request comes in the session the stream
    /// was opened in, with the same credentials; any other is no such stream (404).
    fn resume(
        &self,
        last: &str,
        session: Option<&str>,
        credential: Credential,
        busy: OnDrop,
    ) -> Answer {
        let parsed = last.rsplit_once('-').and_then(|(token, e)| {
            let n = token.split_once('.')?.0.parse::<u64>().ok()?;
            Some((n, token, e.parse::<u64>().ok()?))
        });
        let Some((n, token, after)) = parsed else {
            return plain(404, &[], "Not Found: no such stream to resume\n");
        };
        let Ok(mut face) = self.face.lock() else {
            return plain(500, &[], "");
        };
        let Some(st) = face.streams.get_mut(&n).filter(|st| {
            !st.cut
                && st.resumable
                && super::secret::same(&st.token, token)
                && st.session.as_deref() == session
                && st.credential == credential
        }) else {
            return plain(404, &[], "Not Found: no such stream to resume\n");
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let _ = tx.send(Out::Head {
            status: 200,
            headers: vec![],
            json: false,
        });
        for (k, bytes) in &st.kept {
            if *k > after {
                let _ = tx.send(Out::Data(bytes.clone()));
            }
        }
        if !st.done && !st.cut {
            st.tx = Some(tx);
            st.queued = Arc::clone(&queued);
        }
        drop(face);
        sse_answer(rx, queued, busy)
    }

    async fn delete(&self, req: Request<Incoming>) -> Answer {
        let session = header(&req, "mcp-session-id").map(str::to_owned);
        if let Some(p) = &self.passage {
            let (status, h) = p.delete(Listener::envelope(&req)).await;
            self.forget(session.as_ref());
            return plain(status, &h, "");
        }
        let Some(s) = session else {
            return plain(400, &[], "Bad Request: Mcp-Session-Id header is required\n");
        };
        // Only the credentials that opened a session end it.
        let credential = self.secret.credential(req.headers());
        let known = self
            .face
            .lock()
            .map(|f| f.sessions.iter().any(|(k, c)| *k == s && *c == credential))
            .unwrap_or(false);
        if !known {
            return plain(404, &[], "Not Found: the session has ended\n");
        }
        self.forget(Some(&s));
        plain(200, &[], "")
    }

    /// A session is over: its streams end and it is no longer known.
    fn forget(&self, session: Option<&String>) {
        let Ok(mut face) = self.face.lock() else {
            return;
        };
        if let Some(s) = session {
            face.sessions.retain(|(k, _)| k != s);
            // Its streams are no longer resumed by anyone: what they kept is let go.
            let mut freed = 0;
            for st in face.streams.values_mut() {
                if st.session.as_ref() == Some(s) {
                    freed += st.kept_bytes;
                    st.kept.clear();
                    st.kept_bytes = 0;
                    st.resumable = false;
                }
            }
            face.kept_in_all = face.kept_in_all.saturating_sub(freed);
        }
        let key = session.cloned();
        if let Some(n) = face.gets.remove(&key)
            && let Some(st) = face.streams.get_mut(&n)
        {
            st.tx = None;
            st.done = true;
        }
    }
}

/// Reads a request's body, up to `limit` bytes (413 past it, 400 when it breaks off). Past
/// the limit, up to [`DRAINED`] more bytes are read and dropped, so that a client still
/// sending its body reads the refusal rather than a reset connection; a body said
/// (`Content-Length`) to be longer still is refused unread.
async fn read_limited(mut body: Incoming, limit: usize) -> Result<Vec<u8>, u16> {
    let most = limit.saturating_add(DRAINED) as u64;
    if hyper::body::Body::size_hint(&body).lower() > most {
        return Err(413);
    }
    // Room for the body said, within the limit: no doubling past what it holds.
    let said = usize::try_from(hyper::body::Body::size_hint(&body).lower()).unwrap_or(0);
    let mut out = Vec::with_capacity(said.min(limit));
    let mut seen = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| 400u16)?;
        if let Some(d) = frame.data_ref() {
            seen += d.len() as u64;
            if seen > most {
                break;
            }
            if seen > limit as u64 {
                out = Vec::new();
                continue;
            }
            out.extend_from_slice(d);
        }
    }
    match seen > limit as u64 {
        true => Err(413),
        false => Ok(out),
    }
}

/// The answer to a POST: waits for its head (the first message routed to it), then a JSON
/// body or an event stream.
async fn answer_from(
    mut rx: mpsc::UnboundedReceiver<Out>,
    queued: Arc<AtomicUsize>,
    on_drop: OnDrop,
    busy: OnDrop,
) -> Answer {
    let Some(Out::Head {
        status,
        headers,
        json,
    }) = rx.recv().await
    else {
        // The stream ended before anything was routed to it: the proxy cut it, or is over.
        return plain(502, &[], "");
    };
    let mut r = Response::builder().status(status);
    for (n, v) in &headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(n.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            r = r.header(n, v);
        }
    }
    let body = if json {
        r = r.header(CONTENT_TYPE, "application/json");
        let mut all = Vec::new();
        while let Some(item) = rx.recv().await {
            if let Out::Data(b) = item {
                all.extend_from_slice(&b);
            }
        }
        http_body_util::Either::Left(http_body_util::Full::new(Bytes::from(all)))
    } else {
        r = r
            .header(CONTENT_TYPE, "text/event-stream")
            .header("Cache-Control", "no-cache");
        http_body_util::Either::Right(ChannelBody {
            rx,
            queued,
            _on_drop: on_drop,
            _busy: busy,
        })
    };
    r.body(body)
        .unwrap_or_else(|_| Response::new(http_body_util::Either::Left(Default::default())))
}

/// An event stream answer whose head was sent on the channel already.
fn sse_answer(
    mut rx: mpsc::UnboundedReceiver<Out>,
    queued: Arc<AtomicUsize>,
    busy: OnDrop,
) -> Answer {
    // The head is the first item; its status and headers are taken here.
    let (status, headers) = match rx.try_recv() {
        Ok(Out::Head {
            status, headers, ..
        }) => (status, headers),
        _ => (200, vec![]),
    };
    let mut r = Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "text/event-stream")
        .header("Cache-Control", "no-cache");
    for (n, v) in &headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(n.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            r = r.header(n, v);
        }
    }
    r.body(http_body_util::Either::Right(ChannelBody {
        rx,
        queued,
        _on_drop: OnDrop::default(),
        _busy: busy,
    }))
    .unwrap_or_else(|_| Response::new(http_body_util::Either::Left(Default::default())))
}

/// Sends a stream's head as an event stream, with a priming event (an id, no data) so the
/// client can resume before the first message.
fn start_events(face: &mut Face, n: u64, status: u16, headers: Vec<Header>, retry: Option<u64>) {
    let Some(st) = face.streams.get_mut(&n) else {
        return;
    };
    st.started = true;
    if let Some(tx) = &st.tx {
        let _ = tx.send(Out::Head {
            status,
            headers,
            json: false,
        });
    }
    if st.resumable {
        let id = format!("{}-0", st.token);
        let prime = Bytes::from(sse::priming(&id, retry));
        send_data(st, prime);
    }
}

/// Queues bytes on a stream (a client that stopped reading loses the stream, not the proxy).
/// One event always goes when the connection has taken all but [`QUEUED_SLACK`] before it,
/// however large: a client that reads gets an answer larger than the bound too (its stream's
/// priming event may still be queued when its answer comes).
fn send_data(st: &mut StreamState, bytes: Bytes) {
    let Some(tx) = &st.tx else {
        return;
    };
    let before = st.queued.fetch_add(bytes.len(), Ordering::Relaxed);
    if (before > QUEUED_SLACK && before + bytes.len() > QUEUED_MAX)
        || tx.send(Out::Data(bytes)).is_err()
    {
        st.tx = None;
    }
}

/// Sends a message as the next event of stream `n`, keeping it for resumption.
fn push_event(face: &mut Face, n: u64, message: &[u8]) {
    let Some(st) = face.streams.get_mut(&n) else {
        return;
    };
    let k = st.next_event;
    st.next_event += 1;
    let id = st.resumable.then(|| format!("{}-{k}", st.token));
    let bytes = Bytes::from(sse::event(id.as_deref(), message));
    let before = st.kept_bytes;
    st.kept_bytes += bytes.len();
    st.kept.push_back((k, bytes.clone()));
    while st.kept_bytes > KEPT_FOR_RESUME && st.kept.len() > 1 {
        if let Some((_, b)) = st.kept.pop_front() {
            st.kept_bytes -= b.len();
        }
    }
    let after = st.kept_bytes;
    send_data(st, bytes);
    face.kept_in_all = (face.kept_in_all + after).saturating_sub(before);
    keep_within_all(face);
}

/// Lets go of what finished streams keep for resumption, oldest first, until all streams
/// keep at most [`KEPT_IN_ALL`] bytes (streams still running keep theirs: each is bounded).
fn keep_within_all(face: &mut Face) {
    while face.kept_in_all > KEPT_IN_ALL {
        let Some(n) = face.finished.pop_front() else {
            return;
        };
        let Some(st) = face.streams.get_mut(&n) else {
            continue; // let go already
        };
        face.kept_in_all = face.kept_in_all.saturating_sub(st.kept_bytes);
        st.kept.clear();
        st.kept_bytes = 0;
        // Nothing left to resume it from: a client that asks is told so (404).
        st.resumable = false;
    }
}

/// Ends stream `n`: its answer went out (or it was cut).
fn end_stream(face: &mut Face, n: u64) {
    if let Some(st) = face.streams.get_mut(&n) {
        if !st.done {
            face.finished.push_back(n);
        }
        st.done = true;
        st.tx = None;
        if let Some(id) = st.request.clone() {
            if let Some(q) = face.waiting.get_mut(&id) {
                q.retain(|k| *k != n);
                if q.is_empty() {
                    face.waiting.remove(&id);
                }
            }
            face.progress.retain(|_, s| *s != n);
        }
    }
    // A finished stream stays for resumption only while it is among the newest.
    if face.streams.len() > 4096 {
        let mut done: Vec<u64> = face
            .streams
            .iter()
            .filter(|(_, s)| s.done)
            .map(|(k, _)| *k)
            .collect();
        done.sort_unstable();
        for k in done.iter().take(done.len() / 2) {
            if let Some(st) = face.streams.remove(k) {
                face.kept_in_all = face.kept_in_all.saturating_sub(st.kept_bytes);
            }
        }
        let streams = &face.streams;
        face.finished.retain(|n| streams.contains_key(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A finished stream that sent one event of `size` bytes.
    fn finished(face: &mut Face, n: u64, size: usize) -> mpsc::UnboundedReceiver<Out> {
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        face.streams
            .insert(n, StreamState::new(tx, &queued, None, None, false));
        push_event(face, n, &vec![b'x'; size]);
        end_stream(face, n);
        rx
    }

    /// A listener on loopback whose heads and bodies must arrive within `timeout`; its runtime
    /// and address (the relay's end of its messages is dropped).
    fn quick_listener(timeout: Duration) -> (tokio::runtime::Runtime, SocketAddr, Listening) {
        let rt = super::super::runtime().expect("a runtime");
        let mut options = ListenOptions::new("127.0.0.1:0", false);
        options.head_timeout = timeout;
        let bound = bind(&options).expect("binds");
        let local = bound.local;
        let (inlet, _input) = super::super::pipe::lines_in();
        let listening =
            listen(bound, rt.handle(), inlet, None, Box::new(std::io::sink())).expect("listens");
        (rt, local, listening)
    }

    #[test]
    fn a_connection_that_sends_no_whole_head_is_closed_after_the_head_timeout() {
        use std::io::Read;
        let (_rt, local, _listening) = quick_listener(Duration::from_millis(200));
        for first in [&b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"[..], b""] {
            let mut s = std::net::TcpStream::connect(local).expect("connects");
            s.write_all(first).expect("writes");
            s.set_read_timeout(Some(Duration::from_secs(10)))
                .expect("a read timeout");
            let started = std::time::Instant::now();
            let mut got = Vec::new();
            let end = s.read_to_end(&mut got);
            let took = started.elapsed();
            assert!(end.is_ok(), "the proxy closes it: {end:?}");
            assert!(took >= Duration::from_millis(150), "closed after {took:?}");
        }
    }

    #[test]
    fn a_body_that_does_not_arrive_in_time_is_408() {
        use std::io::Read;
        let (_rt, local, _listening) = quick_listener(Duration::from_millis(300));
        let mut s = std::net::TcpStream::connect(local).expect("connects");
        let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                    Accept: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"";
        s.write_all(head.as_bytes()).expect("writes");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("a read timeout");
        let started = std::time::Instant::now();
        let mut got = [0u8; 4096];
        let n = s.read(&mut got).expect("an answer");
        let text = String::from_utf8_lossy(&got[..n]).into_owned();
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        assert!(text.contains("did not arrive"), "{text}");
        assert!(started.elapsed() >= Duration::from_millis(250));
    }

    #[test]
    fn past_the_cap_the_oldest_idle_connection_is_closed_never_a_busy_one() {
        let t0 = std::time::Instant::now();
        let mut c = Connections::new(2);
        let (_, first, mut first_closed) = c.open(t0);
        let _busy = first.state.enter();
        let (_, second, mut second_closed) = c.open(t0);
        second.state.heard();
        let (_, third, _) = c.open(t0);
        // The first has a request in hand: the second, idle between requests, goes.
        assert_eq!(third.dropped, Some(2));
        assert!(second_closed.try_recv().is_ok());
        assert!(first_closed.try_recv().is_err());
        assert_eq!(c.open.len(), 2);
        // Nobody idle: nothing is closed (the new one is served anyway).
        let _also = third.state.enter();
        let (_, fourth, _) = c.open(t0);
        assert_eq!(fourth.dropped, None);
        assert_eq!(c.open.len(), 3);
    }

    #[test]
    fn a_connection_just_taken_is_not_closed_before_its_first_request_could_come() {
        let t0 = std::time::Instant::now();
        let mut c = Connections::new(1);
        // Taken, its request's head not read yet (a client that sent a GET and went on).
        let (_, _fresh, mut fresh_closed) = c.open(t0);
        let soon = t0 + FRESH_GRACE / 2;
        let (_, next, _) = c.open(soon);
        assert_eq!(next.dropped, None, "kept while its head may be on its way");
        assert!(fresh_closed.try_recv().is_err());
        assert!(!c.close_oldest_idle(soon), "none idle yet");
        // Past the grace it is as idle as one that sends nothing: the oldest goes first.
        let later = t0 + FRESH_GRACE;
        assert!(c.close_oldest_idle(later));
        assert!(fresh_closed.try_recv().is_ok());
        assert_eq!(c.open.len(), 1);
        // One whose head came is idle at once when it has nothing in hand.
        next.state.heard();
        assert!(c.close_oldest_idle(soon));
        assert!(c.open.is_empty());
    }

    #[test]
    fn what_streams_keep_for_resumption_is_bounded_in_all() {
        let mut face = Face::default();
        let size = 4 * 1024 * 1024;
        // Twice the bound in finished streams of one large answer each.
        let streams = 2 * KEPT_IN_ALL / size;
        let _rx: Vec<_> = (1..=streams as u64)
            .map(|n| finished(&mut face, n, size))
            .collect();
        let kept: usize = face.streams.values().map(|s| s.kept_bytes).sum();
        assert_eq!(kept, face.kept_in_all, "the total follows the streams");
        assert!(kept <= KEPT_IN_ALL, "{kept} bytes kept");
        // The newest stay resumable, the oldest were let go.
        let newest = &face.streams[&(streams as u64)];
        assert!(newest.resumable && newest.kept_bytes > size);
        let oldest = &face.streams[&1];
        assert!(!oldest.resumable && oldest.kept.is_empty());
    }
}
