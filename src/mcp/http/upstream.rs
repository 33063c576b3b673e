//! A remote MCP server over Streamable HTTP, in the place of the child process: the relay
//! writes it one message per line and reads its messages back as lines, as from a child's
//! pipes. Each message goes out as its own POST (a session's next message once the server has
//! taken the notification before it, as on a pipe); an answer comes back as a JSON body or as a
//! stream of server-sent events (with the server's own requests and notifications before the
//! answer), and every message of it is passed to the relay as it arrives.
//!
//! Two ways to hold the session:
//! - **Ours** (the client speaks stdio): the proxy is the HTTP client. It keeps the
//!   `Mcp-Session-Id` the server issues with the `initialize` answer and the agreed
//!   `MCP-Protocol-Version`, sends both on every later request, opens the GET stream for the
//!   server's own messages once the client said `initialized`, resumes a stream cut before its
//!   answer (`Last-Event-ID`, after the server's `retry:`), and ends the session with `DELETE`.
//! - **The client's** (the client speaks HTTP to our listener): every request goes out with the
//!   headers the client's own request had ([`super::Envelope`]): its session, its version, its
//!   credentials; the listener opens and closes GET streams and sessions as the client does.
//!
//! No request is ever sent twice by this module: the HTTP client does not retry (a second POST
//! of a `tools/call` would be a second commit). A server that cannot be reached, or answers an
//! HTTP error, gets the request answered with a JSON-RPC error in the server's place, which the
//! recording keeps as the server's answer; the status and its headers (`Retry-After`,
//! `WWW-Authenticate`) reach an HTTP client as they came.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, Uri};
use hyper_util::client::legacy::Client;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

mod answers;
mod connect;

use super::pipe::{Inlet, LinesOut, lines_out};
use super::sse::Parser;
use super::{Envelope, Header, Origin, Stream, Tags};
use crate::mcp::wire::{self, Id, Message};
use crate::mcp::wirelog::{Dir, Exchange, Exchanges};
use crate::redact::named;
use answers::*;
use connect::*;

/// The most bytes of one answer (a JSON body, or one event) taken from the server.
pub const MAX_MESSAGE: usize = 64 * 1024 * 1024;
/// How many times a stream cut before its answer is resumed.
const RESUMES: usize = 3;
/// How long to wait before resuming when the server named no `retry:`.
const RETRY_DEFAULT: Duration = Duration::from_millis(500);
/// The longest wait before resuming a stream, whatever the server asks.
const RETRY_MAX: Duration = Duration::from_secs(10);

/// The HTTPS-capable client.
/// Headers an exchange keeps per side, at most.
const EXCHANGE_HEADERS: usize = 64;

type HttpClient = Client<hyper_rustls::HttpsConnector<super::route::Route>, Full<Bytes>>;

/// Why the remote server cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The URL is not one.
    /// The URL cannot be used.
    #[error(transparent)]
    Url(#[from] crate::mcp::address::UrlError),
    /// The TLS set-up failed (the extra roots could not be read).
    #[error("cannot set up TLS: {0}")]
    Tls(String),
    /// The environment names a proxy for the server that the proxy cannot go through.
    #[error("{0}")]
    Proxy(String),
}

/// The session the proxy holds itself when its client speaks stdio.
#[derive(Debug, Default)]
struct Own {
    session: Option<String>,
    version: Option<String>,
    /// The GET stream was asked for (once per session).
    listening: bool,
}

/// What every request task shares.
struct Shared {
    client: HttpClient,
    url: Uri,
    /// The URL as notes and messages show it: a password and secret query values redacted,
    /// as the recording keeps it (the messages are recorded).
    shown: String,
    /// `--header`s, sent on every request.
    fixed: Vec<Header>,
    /// The HTTP proxy's credentials, on every request that goes through it (never recorded).
    proxy_authorization: Option<hyper::http::HeaderValue>,
    /// Messages for the relay; none once the connection is over.
    to_relay: Mutex<Option<Inlet>>,
    /// Where each message came from, for a listening proxy (none for a stdio client).
    origins: Option<Arc<Tags<Origin>>>,
    /// The headers each client message came with, for a listening proxy.
    envelopes: Option<Arc<Tags<Envelope>>>,
    own: Mutex<Own>,
    log: Mutex<Box<dyn Write + Send>>,
    /// The connection is over: nothing more is resumed or reopened.
    closing: AtomicBool,
    /// Streams held open by the proxy (own GET streams), aborted at the end.
    background: Mutex<JoinSet<()>>,
    /// Each request and its answer's head, for the wire log (once one is attached).
    exchanges: std::sync::OnceLock<Exchanges>,
}

/// The remote server, as the relay sees a child: its input, its output, and a handle to stop
/// it.
pub struct Remote {
    shared: Arc<Shared>,
    runtime: tokio::runtime::Handle,
    done: std::sync::mpsc::Receiver<()>,
    pump: tokio::task::AbortHandle,
    ended: bool,
    /// What the start has to say (without our prefix), for its caller to say when the
    /// session is under way.
    starting: Vec<String>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("url", &self.shared.shown)
            .finish()
    }
}

/// A listening proxy's way to the remote server beside the relay: the GET streams and the
/// session's end, which carry no client message.
#[derive(Clone)]
pub struct Passage {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Passage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Passage")
            .field("url", &self.shared.shown)
            .finish()
    }
}

/// The tags a listening proxy shares with the remote side.
#[derive(Debug, Clone)]
pub struct Routing {
    /// Where each server message came from.
    pub origins: Arc<Tags<Origin>>,
    /// What each client message came with.
    pub envelopes: Arc<Tags<Envelope>>,
}

impl Remote {
    /// Connects (lazily: nothing is sent before the first message) to the server at `url`.
    /// The relay writes to the [`LinesOut`]; the server's messages go into `inlet`. `routing`
    /// is given when the client side is a listening proxy; `log` gets the notes about the
    /// server.
    pub fn connect(
        url: &str,
        fixed: Vec<Header>,
        routing: Option<Routing>,
        runtime: &tokio::runtime::Handle,
        inlet: Inlet,
        log: Box<dyn Write + Send>,
    ) -> Result<(Remote, LinesOut), RemoteError> {
        let (uri, basic) = take_credentials(crate::mcp::address::parse_url(url)?);
        let mut fixed = fixed;
        if let Some(b) = basic
            && !fixed
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
        {
            fixed.push(("Authorization".to_owned(), b));
        }
        let (client, via, starting) = {
            // The connector's resolver needs the runtime.
            let _entered = runtime.enter();
            client(&uri)?
        };
        let mut shown = crate::mcp::address::shown_url(url);
        if let Some(v) = &via {
            shown = format!("{shown} (through the proxy {})", v.shown);
        }
        let (to_remote, requests) = lines_out();
        let shared = Arc::new(Shared {
            client,
            shown,
            proxy_authorization: via.and_then(|v| v.authorization),
            url: uri,
            fixed,
            to_relay: Mutex::new(Some(inlet)),
            origins: routing.as_ref().map(|r| Arc::clone(&r.origins)),
            envelopes: routing.map(|r| r.envelopes),
            own: Mutex::new(Own::default()),
            log: Mutex::new(log),
            closing: AtomicBool::new(false),
            background: Mutex::new(JoinSet::new()),
            exchanges: std::sync::OnceLock::new(),
        });
        let (done_tx, done) = std::sync::mpsc::channel();
        let pump = runtime
            .spawn(pump(Arc::clone(&shared), requests, done_tx))
            .abort_handle();
        Ok((
            Remote {
                shared,
                runtime: runtime.clone(),
                done,
                pump,
                ended: false,
                starting,
            },
            to_remote,
        ))
    }

    /// The notes of the start, once.
    pub fn start_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.starting)
    }

    /// The listener's way to the server beside the relay.
    /// Puts each request to the server and its answer's head in `x`, for a wire log to take
    /// (the first one given stays).
    pub fn log_exchanges(&self, x: Exchanges) {
        let _ = self.shared.exchanges.set(x);
    }

    pub fn passage(&self) -> Passage {
        Passage {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Waits up to `limit` for the connection to be over (its input closed, its answers in,
    /// its session ended); how it ended, or none.
    pub fn wait_for(&mut self, limit: Duration) -> Option<String> {
        if !self.ended {
            self.ended = self.done.recv_timeout(limit).is_ok();
        }
        self.ended.then(|| "its session ended".to_owned())
    }

    /// Stops every exchange now: requests in flight are abandoned, the relay's input ends.
    pub fn stop(&mut self) {
        self.shared.closing.store(true, Ordering::SeqCst);
        self.pump.abort();
        if let Ok(mut bg) = self.shared.background.lock() {
            bg.abort_all();
        }
        if let Ok(mut t) = self.shared.to_relay.lock() {
            *t = None;
        }
        let _guard = self.runtime.enter();
        self.ended = true;
    }
}

/// Messages the client holds while our session's handshake is unanswered, at most.
const HELD_MAX: usize = 1024;
/// The longest a session's message waits for the server to take its notification before it.
const NOTIFICATION_WAIT: Duration = Duration::from_secs(5);

/// The requests the pump has sent and not yet seen answered.
struct Outgoing {
    tasks: JoinSet<()>,
    /// Requests in flight on the 2026-07-28 revision, where closing a request's stream is its
    /// cancel: a `notifications/cancelled` for one of them closes it instead of being sent.
    closable: crate::hashing::Map<Id, tokio::task::AbortHandle>,
    /// Per session, its last notification on the way to the server: the session's next message
    /// goes out once that one is answered. Each message is its own POST, so without this a
    /// client's `notifications/initialized` and the call it sends next would race, and a
    /// server could see the call first; a client on its own waits for the 202 before going on.
    notifications: crate::hashing::Map<String, watch::Receiver<bool>>,
}

impl Outgoing {
    /// Sends one message as its own request (or, for a 2026-07-28 cancel, closes the stream of
    /// the request it cancels).
    fn send(
        &mut self,
        shared: &Arc<Shared>,
        line: Vec<u8>,
        message: Message,
        envelope: Option<Envelope>,
    ) {
        if let Some(id) = cancelled(&message)
            && let Some(task) = self.closable.remove(&id)
        {
            task.abort();
            shared.note(&format!(
                "the client cancelled request {} (2026-07-28): its stream to the server was closed",
                crate::printable::line(&id.0)
            ));
            return;
        }
        let stateless = match &message {
            Message::Request { id, params, .. } => {
                let header = envelope.as_ref().and_then(|e| {
                    e.headers
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case("mcp-protocol-version"))
                        .map(|(_, v)| v.clone())
                });
                header
                    .or_else(|| wire::request_version(params))
                    .is_some_and(|v| wire::is_stateless(&v))
                    .then(|| id.clone())
            }
            _ => None,
        };
        self.notifications
            .retain(|_, r| !*r.borrow() && r.has_changed().is_ok());
        // Our own session is the one stdio client's, with or without a session id; HTTP
        // clients without one (the stateless revision) are strangers, never one another's wait.
        let session = match &shared.envelopes {
            None => Some(shared.session_of(None).unwrap_or_default()),
            Some(_) => shared.session_of(envelope.as_ref()),
        };
        let before = session
            .as_ref()
            .and_then(|s| self.notifications.get(s).cloned());
        let sent = session
            .filter(|_| matches!(message, Message::Notification { .. }))
            .map(|session| {
                let (tx, rx) = watch::channel(false);
                self.notifications.insert(session, rx);
                tx
            });
        let shared = Arc::clone(shared);
        let task = self.tasks.spawn(async move {
            if let Some(mut before) = before {
                let _ =
                    tokio::time::timeout(NOTIFICATION_WAIT, before.wait_for(|done| *done)).await;
            }
            send(shared, line, message, envelope).await;
            if let Some(sent) = sent {
                let _ = sent.send(true);
            }
        });
        if let Some(id) = stateless {
            self.closable.insert(id, task);
        }
        while self.tasks.try_join_next().is_some() {}
        self.closable.retain(|_, t| !t.is_finished());
    }
}

/// Reads the relay's messages and sends each as its own request; when the relay closes its
/// end, waits for the answers in flight, ends a session of ours, and closes the relay's input.
async fn pump(
    shared: Arc<Shared>,
    mut requests: mpsc::Receiver<Vec<u8>>,
    done: std::sync::mpsc::Sender<()>,
) {
    let mut out = Outgoing {
        tasks: JoinSet::new(),
        closable: Default::default(),
        notifications: Default::default(),
    };
    // Our session's handshake while it is unanswered, and the client's requests and
    // notifications held until it is: a stdio client that sends its next messages without
    // waiting (on stdio the server reads them in order) would otherwise have them race it, and
    // a server that gets `initialized` first fails. The client's answers (to a `ping` the server
    // sends meanwhile) go on. (HTTP clients cannot race their handshake: their next requests
    // need the session its answer gives; one client's slow handshake holds up no other.)
    let mut handshake: Option<tokio::task::JoinHandle<()>> = None;
    let mut held: std::collections::VecDeque<(Vec<u8>, Message, Option<Envelope>)> =
        std::collections::VecDeque::new();
    loop {
        let line = match handshake.as_mut() {
            Some(h) => tokio::select! {
                _ = h => {
                    handshake = None;
                    for (line, message, envelope) in held.drain(..) {
                        out.send(&shared, line, message, envelope);
                    }
                    continue;
                }
                line = requests.recv() => line,
            },
            None => requests.recv().await,
        };
        let Some(line) = line else {
            break;
        };
        let envelope = shared.envelopes.as_ref().and_then(|t| t.take(&line));
        // A request too long (or too deep) to read whole is still known by its id and method,
        // found by a scan, as the relay knows it: its answer is waited for like any other.
        let message = match wire::classify(&line) {
            Message::Other(why) => wire::unread_message(&line).unwrap_or(Message::Other(why)),
            m => m,
        };
        if handshake.is_some()
            && !matches!(message, Message::Response { .. })
            && held.len() < HELD_MAX
        {
            held.push_back((line, message, envelope));
            continue;
        }
        if shared.envelopes.is_none()
            && matches!(&message, Message::Request { method, .. } if method == "initialize")
        {
            handshake = Some(tokio::spawn(send(
                Arc::clone(&shared),
                line,
                message,
                envelope,
            )));
            continue;
        }
        out.send(&shared, line, message, envelope);
    }
    if let Some(h) = handshake {
        let _ = h.await;
    }
    for (line, message, envelope) in held.drain(..) {
        out.send(&shared, line, message, envelope);
    }
    let mut tasks = out.tasks;
    while tasks.join_next().await.is_some() {}
    shared.closing.store(true, Ordering::SeqCst);
    if shared.envelopes.is_none() {
        end_own_session(&shared).await;
    }
    if let Ok(mut bg) = shared.background.lock() {
        bg.abort_all();
    }
    if let Ok(mut t) = shared.to_relay.lock() {
        *t = None;
    }
    let _ = done.send(());
}

impl Shared {
    fn note(&self, text: &str) {
        if let Ok(mut log) = self.log.lock() {
            let _ = writeln!(log, "toolstorm-tui mcp: {}", crate::printable::line(text));
        }
    }

    /// Passes a server message to the relay (with where it came from, for a listener).
    async fn deliver(&self, line: Vec<u8>, origin: Origin) -> bool {
        let Some(tx) = self.to_relay.lock().ok().and_then(|t| t.clone()) else {
            return false;
        };
        if self.envelopes.is_none() {
            self.learn_version(&line);
        }
        if let Some(o) = &self.origins {
            o.put(&line, origin);
        }
        tx.send(line).await
    }

    /// Keeps the protocol version the `initialize` answer agreed on (our session's answers
    /// are looked at only until then).
    fn learn_version(&self, answer: &[u8]) {
        let Ok(mut own) = self.own.lock() else {
            return;
        };
        if own.version.is_some() || wire::member(answer, "result").is_none() {
            return;
        }
        if let Message::Response { message, .. } = wire::classify(answer)
            && let Some(v) = message
                .as_object()
                .and_then(|o| o.get("result"))
                .and_then(|r| r.as_object())
                .and_then(|r| r.get("protocolVersion"))
                .and_then(crate::json::Value::as_str)
        {
            own.version = Some(v.to_owned());
        }
    }

    /// Sends `req` to the server; with a wire log attached, the request and its answer's
    /// head are logged (`proxy>server`: the headers as the recording keeps them).
    async fn send(
        &self,
        req: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, hyper_util::client::legacy::Error> {
        let log = self.exchanges.get().filter(|x| x.active());
        let asked = log.map(|_| {
            (
                req.method().to_string(),
                crate::mcp::address::recorded_url(req.uri().path()),
                super::headers::kept(req.headers(), EXCHANGE_HEADERS, named::recorded),
            )
        });
        let res = self.client.request(req).await;
        if let (Some(log), Some((method, path, request)), Ok(r)) = (log, asked, &res) {
            log.log(Exchange {
                dir: Dir::ToServer,
                method,
                path,
                status: r.status().as_u16(),
                request,
                response: super::headers::kept(r.headers(), EXCHANGE_HEADERS, named::recorded),
            });
        }
        res
    }

    /// A request for the server: the `--header`s, then the client's own headers (a listener)
    /// or our session's (a stdio client).
    fn request(
        &self,
        method: Method,
        envelope: Option<&Envelope>,
    ) -> hyper::http::request::Builder {
        let mut b = Request::builder().method(method).uri(self.url.clone());
        if let Some(a) = &self.proxy_authorization {
            b = b.header(hyper::header::PROXY_AUTHORIZATION, a.clone());
        }
        let mut named: Vec<(String, String)> = self.fixed.clone();
        match envelope {
            Some(e) => {
                for (n, v) in &e.headers {
                    named.retain(|(k, _)| !k.eq_ignore_ascii_case(n));
                    named.push((n.clone(), v.clone()));
                }
            }
            None if self.envelopes.is_none() => {
                if let Ok(own) = self.own.lock() {
                    if let Some(s) = &own.session {
                        named.push(("Mcp-Session-Id".into(), s.clone()));
                    }
                    if let Some(v) = &own.version {
                        named.push(("MCP-Protocol-Version".into(), v.clone()));
                    }
                }
            }
            None => {}
        }
        for (n, v) in named {
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(n.as_bytes()),
                HeaderValue::from_str(&v),
            ) {
                b = b.header(n, v);
            }
        }
        b
    }

    fn session_of(&self, envelope: Option<&Envelope>) -> Option<String> {
        match envelope {
            Some(e) => e
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("mcp-session-id"))
                .map(|(_, v)| v.clone()),
            None => self.own.lock().ok().and_then(|o| o.session.clone()),
        }
    }
}

/// Sends one of the relay's messages and passes on what comes back.
async fn send(shared: Arc<Shared>, line: Vec<u8>, message: Message, envelope: Option<Envelope>) {
    let (id, method) = match &message {
        Message::Request { id, method, .. } => (Some(id.clone()), Some(method.clone())),
        Message::Notification { method, .. } => (None, Some(method.clone())),
        _ => (None, None),
    };
    let batch = match &message {
        Message::Other(_) => batch_requests(&line),
        _ => Vec::new(),
    };
    if method.as_deref() == Some("initialize")
        && shared.envelopes.is_none()
        && let Ok(mut own) = shared.own.lock()
    {
        // A new session begins: nothing of the last one goes with it.
        *own = Own::default();
    }
    let mut b = shared
        .request(Method::POST, envelope.as_ref())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream");
    if envelope.is_none()
        && let Message::Request { params, method, .. } | Message::Notification { params, method } =
            &message
        && let Some(v) = wire::request_version(params).filter(|v| wire::is_stateless(v))
    {
        // 2026-07-28 routes by headers that must agree with the body.
        b = b
            .header("MCP-Protocol-Version", v)
            .header("Mcp-Method", method.as_str());
        // A request too long to read whole has only its `_meta` read: its name is scanned.
        let name = params
            .as_object()
            .and_then(|p| p.get("name").or_else(|| p.get("uri")))
            .and_then(crate::json::Value::as_str)
            .map(str::to_owned)
            .or_else(|| {
                let p = &line[wire::member(&line, "params")?];
                wire::member_str(p, "name").or_else(|| wire::member_str(p, "uri"))
            });
        if let Some(name) = name
            && let Ok(v) = HeaderValue::from_str(&name)
        {
            b = b.header("Mcp-Name", v);
        }
    }
    let session = shared.session_of(envelope.as_ref());
    let stream = id.clone().map_or(Stream::Get, Stream::Post);
    let origin = |status: u16, headers: Vec<Header>, json: bool| Origin {
        session: session.clone(),
        stream: stream.clone(),
        status,
        headers,
        json,
        retry: None,
    };
    let request = match b.body(Full::new(Bytes::from(line))) {
        Ok(r) => r,
        Err(e) => {
            let why = format!("the request could not be sent to the server: {e}");
            if let Some(id) = &id {
                shared
                    .deliver(error_answer(id, &why, None), origin(502, vec![], true))
                    .await;
            } else if !batch.is_empty() {
                shared
                    .deliver(batch_errors(&batch, &why, None), origin(502, vec![], true))
                    .await;
            }
            return;
        }
    };
    let res = match shared.send(request).await {
        Ok(r) => r,
        Err(e) => {
            let why = format!(
                "cannot reach the MCP server at {}: {}",
                shared.shown,
                chain(&e)
            );
            shared.note(&why);
            if let Some(id) = &id {
                shared
                    .deliver(error_answer(id, &why, None), origin(502, vec![], true))
                    .await;
            } else if !batch.is_empty() {
                shared
                    .deliver(batch_errors(&batch, &why, None), origin(502, vec![], true))
                    .await;
            }
            return;
        }
    };
    let status = res.status().as_u16();
    let headers = answer_headers(&res);
    if method.as_deref() == Some("initialize")
        && shared.envelopes.is_none()
        && let Some(s) = res
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        && let Ok(mut own) = shared.own.lock()
    {
        own.session = Some(s.to_owned());
    }
    if !batch.is_empty() {
        return answer_batch(&shared, res, &batch, origin).await;
    }
    let Some(id) = id else {
        // A notification or an answer of the client's: 202, nothing to pass on.
        if status == 407 {
            shared.note(&proxy_refusal(&shared.shown));
        } else if !res.status().is_success() {
            shared.note(&format!(
                "the server answered HTTP {} to a {}",
                res.status(),
                method.as_deref().unwrap_or("client's answer")
            ));
            if status == 404 {
                session_gone(&shared);
            }
        }
        let _ = res.into_body().collect().await;
        if method.as_deref() == Some("notifications/initialized") && shared.envelopes.is_none() {
            listen_own(&shared);
        }
        return;
    };
    if !res.status().is_success() {
        let ct = content_type(&res);
        let reason = res.status();
        let body = read_body(res.into_body(), 64 * 1024)
            .await
            .unwrap_or_default();
        let body = one_line(body);
        let line = if status == 407 {
            // Only a proxy asks for its own credentials.
            error_answer(&id, &proxy_refusal(&shared.shown), Some(status))
        } else if ct.contains("json") && answers(&body, &id) {
            body
        } else if let Some(line) = ct
            .contains("json")
            .then(|| error_for(&body, &id, status))
            .flatten()
        {
            line
        } else {
            let text = String::from_utf8_lossy(&body);
            let text: String = text.chars().take(200).collect();
            let mut why = format!("the MCP server answered HTTP {reason}");
            if !text.trim().is_empty() {
                why.push_str(": ");
                why.push_str(text.trim());
            }
            error_answer(&id, &why, Some(status))
        };
        if status == 404 {
            session_gone(&shared);
        }
        shared.deliver(line, origin(status, headers, true)).await;
        return;
    }
    let ct = content_type(&res);
    if ct.starts_with("text/event-stream") {
        let base = origin(status, headers, false);
        let got = events(&shared, res.into_body(), &base, Some(&id), None).await;
        if let Err(cut) = got {
            resume(&shared, &id, cut, base, envelope.as_ref()).await;
        }
        return;
    }
    // A byte-order mark is no part of a message (RFC 8259 lets readers ignore it).
    let read = read_body(res.into_body(), MAX_MESSAGE).await.map(|mut b| {
        if b.starts_with(b"\xEF\xBB\xBF") {
            b.drain(..3);
        }
        b
    });
    match read {
        Ok(body) if !body.iter().all(u8::is_ascii_whitespace) => {
            let why = if !may_be_json(&ct, &body) {
                // A web page where the MCP endpoint was expected (a URL without its /mcp, a
                // login page): said, not passed on for the client to choke on.
                not_mcp(&shared.shown, status, &ct, &body)
            } else {
                let body = one_line(body);
                if answers(&body, &id) {
                    shared.deliver(body, origin(status, headers, true)).await;
                    return;
                }
                // A JSON body is the request's one answer: garbage, or the answer to another
                // request, answers nothing, and the client would wait on it for ever. The
                // request gets an error saying what came back instead.
                format!(
                    "the MCP server at {} answered HTTP {status} with {}, not the answer to request {}",
                    shared.shown,
                    what_came(&body),
                    crate::printable::line(&id.0)
                )
            };
            shared.note(&why);
            shared
                .deliver(
                    error_answer(&id, &why, Some(status)),
                    origin(502, headers, true),
                )
                .await;
        }
        Ok(_) => {
            let why = format!("the MCP server answered HTTP {status} with no message");
            shared
                .deliver(
                    error_answer(&id, &why, Some(status)),
                    origin(502, headers, true),
                )
                .await;
        }
        Err(why) => {
            let why = format!("the MCP server's answer could not be read: {why}");
            shared
                .deliver(unknown_answer(&id, &why), origin(502, headers, true))
                .await;
        }
    }
}

/// Passes on the server's answer to a batch holding the requests `ids`: its JSON body (an
/// array, relayed as it came) or its events. Every request it does not answer — the server
/// refused batches (the HTTP transport has not had them since 2025-06-18), answered with
/// something else, or its stream ended or broke first — is answered with an error in its
/// place, as one batch: the client is never left waiting.
async fn answer_batch(
    shared: &Shared,
    res: Response<Incoming>,
    ids: &[Id],
    origin: impl Fn(u16, Vec<Header>, bool) -> Origin,
) {
    let status = res.status().as_u16();
    let headers = answer_headers(&res);
    let ct = content_type(&res);
    let reason = res.status();
    let mut seen = Vec::new();
    let why = if reason.is_success() && ct.starts_with("text/event-stream") {
        let base = origin(status, headers.clone(), false);
        match events(shared, res.into_body(), &base, None, Some(&mut seen)).await {
            Ok(()) => "the server's answer to the batch ended without it".to_owned(),
            Err(cut) => format!("the server's answer to the batch was cut: {}", cut.why),
        }
    } else {
        let body = read_body(res.into_body(), MAX_MESSAGE)
            .await
            .unwrap_or_default();
        if status == 404 {
            session_gone(shared);
        }
        if reason.is_success() && !wire::elements(&body).is_empty() {
            seen = answered_ids(&body);
            shared
                .deliver(one_line(body), origin(status, headers.clone(), true))
                .await;
            "the server's answer to the batch did not answer it".to_owned()
        } else if status == 407 {
            proxy_refusal(&shared.shown)
        } else {
            let text: String = String::from_utf8_lossy(&body).chars().take(200).collect();
            let mut why = format!("the MCP server answered HTTP {reason} to a batch");
            if !text.trim().is_empty() {
                why.push_str(": ");
                why.push_str(text.trim());
            }
            why
        }
    };
    let rest: Vec<Id> = ids
        .iter()
        .filter(|id| !seen.contains(id))
        .cloned()
        .collect();
    if rest.is_empty() {
        return;
    }
    shared.note(&why);
    shared
        .deliver(
            batch_errors(&rest, &why, Some(status)),
            origin(status, headers, true),
        )
        .await;
}

/// The request a `notifications/cancelled` cancels.
fn cancelled(message: &Message) -> Option<Id> {
    match message {
        Message::Notification { method, params } if method == "notifications/cancelled" => params
            .as_object()
            .and_then(|p| p.get("requestId"))
            .map(Id::of),
        _ => None,
    }
}

/// The server ended our session (404): the next requests go without it.
fn session_gone(shared: &Shared) {
    if shared.envelopes.is_none()
        && let Ok(mut own) = shared.own.lock()
        && own.session.take().is_some()
    {
        own.listening = false;
        own.version = None;
        drop(own);
        shared.note("the server ended the session (HTTP 404); the client must initialize again");
    }
}

/// Reads a whole body, up to `limit` bytes.
async fn read_body(mut body: Incoming, limit: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| chain(&e))?;
        if let Some(d) = frame.data_ref() {
            if out.len() + d.len() > limit {
                return Err(format!("it is longer than {limit} bytes"));
            }
            out.extend_from_slice(d);
        }
    }
    Ok(out)
}

/// Where a stream was cut: its last event id and the server's `retry:`.
#[derive(Debug, Default)]
struct Cut {
    last_id: Option<String>,
    retry: Option<u64>,
    why: String,
}

/// Passes on every event of a stream; `Ok` once the answer to `want` came (or the stream
/// ended normally when there is none), else where it was cut. `seen`, when given, gets the
/// ids the messages passed on answer.
async fn events(
    shared: &Shared,
    mut body: Incoming,
    origin: &Origin,
    want: Option<&Id>,
    mut seen: Option<&mut Vec<Id>>,
) -> Result<(), Cut> {
    let mut parser = Parser::new(MAX_MESSAGE);
    let mut cut = Cut::default();
    let mut origin = origin.clone();
    let mut out = Vec::new();
    loop {
        let frame = match body.frame().await {
            None => {
                cut.why = "the stream ended before the answer".into();
                return if want.is_none() { Ok(()) } else { Err(cut) };
            }
            Some(Err(e)) => {
                cut.why = format!("the stream broke: {}", chain(&e));
                return Err(cut);
            }
            Some(Ok(f)) => f,
        };
        let Some(data) = frame.data_ref() else {
            continue;
        };
        if let Err(e) = parser.feed(data, &mut out) {
            cut.why = format!("the stream could not be read: {e}");
            return Err(cut);
        }
        for ev in out.drain(..) {
            if ev.id.is_some() {
                cut.last_id = ev.id.clone();
            }
            if ev.retry.is_some() {
                cut.retry = ev.retry;
                origin.retry = ev.retry;
            }
            if ev.data.trim().is_empty() {
                continue;
            }
            let line = one_line(ev.data.into_bytes());
            let done = want.is_some_and(|id| answers(&line, id));
            if let Some(seen) = seen.as_deref_mut() {
                seen.extend(answered_ids(&line));
            }
            if !shared.deliver(line, origin.clone()).await {
                return Ok(());
            }
            if done {
                return Ok(());
            }
        }
    }
}

/// A stream cut before its answer (by the network or the server, not by us): resumed from its
/// last event with a GET, as the server allows; when it cannot be, the request is answered
/// with an error in the server's place.
async fn resume(
    shared: &Shared,
    id: &Id,
    mut cut: Cut,
    origin: Origin,
    envelope: Option<&Envelope>,
) {
    for _ in 0..RESUMES {
        let Some(last) = cut.last_id.clone() else {
            break;
        };
        if shared.closing.load(Ordering::SeqCst) {
            break;
        }
        let wait = cut
            .retry
            .map_or(RETRY_DEFAULT, Duration::from_millis)
            .min(RETRY_MAX);
        tokio::time::sleep(wait).await;
        let req = shared
            .request(Method::GET, envelope)
            .header(ACCEPT, "text/event-stream")
            .header("Last-Event-ID", last.as_str())
            .body(Full::new(Bytes::new()));
        let Ok(req) = req else { break };
        let res = match shared.send(req).await {
            Ok(r)
                if r.status().is_success() && content_type(&r).starts_with("text/event-stream") =>
            {
                r
            }
            Ok(r) => {
                cut.why = format!("resuming it was answered HTTP {}", r.status());
                break;
            }
            Err(e) => {
                cut.why = format!("resuming it failed: {}", chain(&e));
                continue;
            }
        };
        match events(shared, res.into_body(), &origin, Some(id), None).await {
            Ok(()) => return,
            Err(next) => {
                cut = Cut {
                    last_id: next.last_id.or(Some(last)),
                    retry: next.retry.or(cut.retry),
                    why: next.why,
                };
            }
        }
    }
    let why = format!("the MCP server's answer stream was cut: {}", cut.why);
    shared.note(&why);
    shared
        .deliver(
            unknown_answer(id, &why),
            Origin {
                json: true,
                ..origin
            },
        )
        .await;
}

/// Opens the GET stream of our session, for the server's own requests and notifications,
/// and keeps it open (resuming after a cut) while the session lasts.
fn listen_own(shared: &Arc<Shared>) {
    {
        let Ok(mut own) = shared.own.lock() else {
            return;
        };
        if own.listening || own.session.is_none() {
            return;
        }
        own.listening = true;
    }
    let s = Arc::clone(shared);
    if let Ok(mut bg) = shared.background.lock() {
        bg.spawn(async move {
            let mut last: Option<String> = None;
            let mut retry = None;
            let mut failures = 0;
            while !s.closing.load(Ordering::SeqCst) && failures < RESUMES {
                let mut b = s
                    .request(Method::GET, None)
                    .header(ACCEPT, "text/event-stream");
                if let Some(l) = &last {
                    b = b.header("Last-Event-ID", l.as_str());
                }
                let Ok(req) = b.body(Full::new(Bytes::new())) else {
                    return;
                };
                let res = match s.send(req).await {
                    Ok(r) => r,
                    Err(_) => {
                        failures += 1;
                        tokio::time::sleep(RETRY_DEFAULT).await;
                        continue;
                    }
                };
                if !res.status().is_success() {
                    // 405: the server offers no GET stream; 404: the session is over.
                    return;
                }
                let origin = Origin {
                    session: s.session_of(None),
                    stream: Stream::Get,
                    status: 200,
                    headers: vec![],
                    json: false,
                    retry: None,
                };
                match events(&s, res.into_body(), &origin, None, None).await {
                    Ok(()) => failures = 0,
                    Err(cut) => {
                        failures += 1;
                        last = cut.last_id.or(last);
                        retry = cut.retry.or(retry);
                    }
                }
                tokio::time::sleep(
                    retry
                        .map_or(RETRY_DEFAULT, Duration::from_millis)
                        .min(RETRY_MAX),
                )
                .await;
            }
        });
    }
}

/// Ends our session with `DELETE` (a server that does not allow it answers 405: fine).
async fn end_own_session(shared: &Shared) {
    if shared
        .own
        .lock()
        .ok()
        .and_then(|o| o.session.clone())
        .is_none()
    {
        return;
    }
    let Ok(req) = shared
        .request(Method::DELETE, None)
        .body(Full::new(Bytes::new()))
    else {
        return;
    };
    let ended = tokio::time::timeout(Duration::from_secs(2), shared.send(req)).await;
    if let Ok(Ok(res)) = ended {
        let _ = res.into_body().collect().await;
    }
}

impl Passage {
    /// Opens a GET stream with the client's headers: its messages go to the relay, tagged as
    /// the session's GET stream. The server's status and headers come back for the client
    /// (a stream that could not be opened: 502).
    pub async fn open_get(&self, envelope: Envelope) -> (u16, Vec<Header>) {
        let s = Arc::clone(&self.shared);
        let req = s
            .request(Method::GET, Some(&envelope))
            .header(ACCEPT, "text/event-stream")
            .body(Full::new(Bytes::new()));
        let Ok(req) = req else {
            return (400, vec![]);
        };
        let res = match s.send(req).await {
            Ok(r) => r,
            Err(e) => {
                s.note(&format!(
                    "the GET stream could not be opened: {}",
                    chain(&e)
                ));
                return (502, vec![]);
            }
        };
        let status = res.status().as_u16();
        let headers = answer_headers(&res);
        if !res.status().is_success() || !content_type(&res).starts_with("text/event-stream") {
            let _ = res.into_body().collect().await;
            return (if status < 300 { 502 } else { status }, headers);
        }
        let origin = Origin {
            session: s.session_of(Some(&envelope)),
            stream: Stream::Get,
            status,
            headers: headers.clone(),
            json: false,
            retry: None,
        };
        let inner = Arc::clone(&s);
        if let Ok(mut bg) = s.background.lock() {
            bg.spawn(async move {
                let _ = events(&inner, res.into_body(), &origin, None, None).await;
            });
        }
        (status, headers)
    }

    /// Ends a session with the client's `DELETE`; the server's status and headers.
    pub async fn delete(&self, envelope: Envelope) -> (u16, Vec<Header>) {
        let req = self
            .shared
            .request(Method::DELETE, Some(&envelope))
            .body(Full::new(Bytes::new()));
        let Ok(req) = req else {
            return (400, vec![]);
        };
        match self.shared.send(req).await {
            Ok(res) => {
                let status = res.status().as_u16();
                let headers = answer_headers(&res);
                let _ = res.into_body().collect().await;
                (status, headers)
            }
            Err(_) => (502, vec![]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::address::{is_other_url, is_url, parse_url};

    #[test]
    fn a_batchs_requests_and_answers_are_known_by_a_scan_however_long_or_deep() {
        let long = "x".repeat(wire::MAX_PARSED_LINE + 10);
        let deep = format!("{}1{}", "[".repeat(40), "]".repeat(40));
        let batch = format!(
            r#"[{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"a":"{long}"}}}}}}, {{"jsonrpc":"2.0","method":"notifications/x"}},{{"jsonrpc":"2.0","id":"two","method":"m","params":{deep}}},{{"jsonrpc":"2.0","id":9,"result":{{}}}}]"#
        );
        let ids = batch_requests(batch.as_bytes());
        assert_eq!(
            ids.len(),
            2,
            "the two requests, not the notification or the answer"
        );
        assert_eq!(ids[0].0, "1");
        assert_eq!(ids[1].0, "\"two\"");
        assert!(batch_requests(br#"{"jsonrpc":"2.0","id":1,"method":"m"}"#).is_empty());
        let answers = br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m"}},{"jsonrpc":"2.0","method":"n"}]"#;
        let got: Vec<String> = answered_ids(answers).into_iter().map(|i| i.0).collect();
        assert_eq!(got, ["1", "2"]);
        let one: Vec<String> = answered_ids(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#)
            .into_iter()
            .map(|i| i.0)
            .collect();
        assert_eq!(one, ["3"]);
    }

    /// An error with a source, as the HTTP client's are.
    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("client error (Connect)")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_refused_certificate_is_explained_in_words() {
        use std::io::{Error, ErrorKind};
        // As tokio-rustls gives it: the TLS error inside two I/O errors.
        let wrapped = |c: rustls::CertificateError| {
            Outer(Error::other(Error::new(
                ErrorKind::InvalidData,
                rustls::Error::InvalidCertificate(c),
            )))
        };
        let unknown = chain(&wrapped(rustls::CertificateError::UnknownIssuer));
        assert!(
            unknown.starts_with("client error (Connect): invalid peer certificate: UnknownIssuer")
                && unknown.contains("SSL_CERT_FILE"),
            "{unknown}"
        );
        let expired = chain(&wrapped(rustls::CertificateError::Expired));
        assert!(
            expired.ends_with("(the server's certificate has expired)"),
            "{expired}"
        );
        // A proxy that refused the tunnel (known by its words).
        let tunnel = chain(&Outer(Error::other("tunnel error: unsuccessful")));
        assert!(tunnel.contains("refused to open a tunnel"), "{tunnel}");
        // Nothing to add to what needs no explaining.
        let refused = chain(&Outer(Error::new(ErrorKind::ConnectionRefused, "refused")));
        assert_eq!(refused, "client error (Connect): refused");
    }

    #[test]
    fn what_is_no_message_is_said_by_what_it_looks_like() {
        // JSON passes by its type or by its first byte, whatever it is labelled.
        assert!(may_be_json("application/json", b"<not json>"));
        assert!(may_be_json("text/plain", b" {\"jsonrpc\":\"2.0\"}"));
        assert!(may_be_json("", b"[{}]"));
        assert!(!may_be_json("text/html", b"<html></html>"));
        let page = not_mcp("http://h/", 200, "text/html", b"<html>\n <p>Hi</p></html>");
        assert!(page.contains("text/html, not an MCP message"), "{page}");
        assert!(page.ends_with("<html> <p>Hi</p></html>"), "{page}");
        let events = not_mcp("http://h/mcp", 200, "", b"event: message\ndata: {}\n\n");
        assert!(
            events.contains("events labelled no Content-Type"),
            "{events}"
        );
        assert!(!events.contains("/mcp?"), "{events}");
    }

    #[test]
    fn a_url_of_another_scheme_is_told_apart_from_a_command() {
        let w = |s: &[&str]| s.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert!(is_other_url(&w(&["ftp://host/mcp"])));
        assert!(is_other_url(&w(&["ws://127.0.0.1:1/mcp"])));
        assert!(!is_other_url(&w(&["https://host/mcp"])));
        assert!(!is_other_url(&w(&["./server"])));
        assert!(!is_other_url(&w(&["./odd://name"])));
        assert!(!is_other_url(&w(&["ftp://host/mcp", "--flag"])));
    }

    #[test]
    fn a_url_is_one_http_word() {
        let w = |s: &[&str]| s.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert!(is_url(&w(&["https://host/mcp"])));
        assert!(is_url(&w(&["HTTP://127.0.0.1:8000/mcp"])));
        assert!(!is_url(&w(&["python", "server.py"])));
        assert!(!is_url(&w(&["https://host/mcp", "extra"])));
        assert!(parse_url("ftp://x").is_err());
        let e = parse_url("http://ops:qz#zz@host/mcp").expect_err("refused");
        assert!(e.to_string().contains("its port is not a number"), "{e}");
        assert!(
            !e.to_string().contains("qz") && !e.to_string().contains("ops"),
            "{e}"
        );
        assert!(parse_url("http://[::1]:8000/mcp").is_ok() && parse_url("http://h:80/").is_ok());
        let (bare, basic) =
            take_credentials(parse_url("https://ops:p%40ss@host:8443/mcp?x=1").expect("a URL"));
        assert_eq!(bare.to_string(), "https://host:8443/mcp?x=1");
        // base64 of "ops:p@ss"
        assert_eq!(basic.as_deref(), Some("Basic b3BzOnBAc3M="));
        let (same, none) = take_credentials(parse_url("http://h/mcp").expect("a URL"));
        assert_eq!((same.to_string(), none), ("http://h/mcp".to_owned(), None));
        assert!(parse_url("http://").is_err());
    }

    #[test]
    fn an_answer_is_found_by_its_id() {
        let id = Id::of(&crate::json::Value::from(3));
        assert!(answers(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#, &id));
        assert!(!answers(
            br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
            &id
        ));
        assert!(!answers(br#"{"jsonrpc":"2.0","id":"3","result":{}}"#, &id));
        assert_eq!(
            one_line(b"{\n \"a\": 1\r\n}\n".to_vec()),
            b"{  \"a\": 1  }".to_vec()
        );
    }
}
