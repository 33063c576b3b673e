//! The model's HTTP side: one JSON `POST` at a time to an OpenAI-compatible server, over
//! http:// or https:// (rustls, with the bundled Mozilla roots and the platform's store), a
//! bearer key when there is one, a timeout on each attempt, and retries of what a retry can
//! fix — HTTP 429, any 5xx, a connection that failed or broke, an attempt that timed out —
//! after a pause that honours the server's `Retry-After` (seconds or an HTTP date; capped),
//! else backs off (0.5 s, then 1 s, ...). The client's own small tokio runtime runs the request; the caller
//! blocks. It knows nothing of either API's shape ([`super::wire`] does).
//!
//! The key is sent in the `Authorization` header and nowhere else: it is in no error, no
//! notice and no `Debug` output, and text a server sends back is shown with it masked.
//!
//! The server is reached on the route [`crate::http_route`] gives it, as the MCP proxy's
//! upstream is: through the HTTP proxy the environment names (`HTTPS_PROXY`, `HTTP_PROXY`,
//! `ALL_PROXY`, `NO_PROXY`, read as curl reads them: a `CONNECT` tunnel for https://, the
//! absolute URL for http://, a loopback server directly), or straight to it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::http_route::{Route, choose};

/// Largest answer read from a model server.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// Longest pause a `Retry-After` may ask for; a longer one is waited this long.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

type Https = HyperClient<hyper_rustls::HttpsConnector<Route>, Full<Bytes>>;

/// How the client waits and retries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// Deadline of each attempt: connecting, sending and reading the whole answer.
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff pause when the server gives no `Retry-After`; doubled each retry.
    pub backoff: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            timeout: Duration::from_secs(60),
            max_retries: 2,
            backoff: Duration::from_millis(500),
        }
    }
}

/// A retry about to be waited for.
#[derive(Clone, Debug, PartialEq)]
pub struct Retry {
    /// The attempt that failed (1-based).
    pub attempt: u32,
    /// Why: `HTTP 429`, `connection refused`, ...
    pub why: String,
    /// How long the client waits before the next attempt.
    pub wait: Duration,
    /// Whether the wait is the server's `Retry-After`.
    pub server_asked: bool,
}

/// What a successful exchange gave.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// The HTTP status (2xx).
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
    /// Attempts made, the successful one included.
    pub attempts: u32,
}

/// Why the model could not be asked. Every message names the URL; none holds the key.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ClientError {
    /// The URL cannot be used.
    #[error("{url} is not a URL a model can be reached at: {reason}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// Why.
        reason: String,
    },
    /// The key cannot be sent in a header.
    #[error(
        "the API key cannot be sent in an HTTP header (it holds a line break or other control character)"
    )]
    BadKey,
    /// The client could not be built.
    #[error("cannot start the HTTP client: {0}")]
    Setup(String),
    /// The environment names an HTTP proxy for the server that cannot be used.
    #[error("cannot reach {url} through the environment's HTTP proxy: {reason}")]
    Proxy {
        /// The URL.
        url: String,
        /// Why (the variable named, never its credentials).
        reason: String,
    },
    /// No connection could be made (or it broke) on every attempt.
    #[error("cannot reach {url}: {reason} (after {attempts} attempt{})", plural(*attempts))]
    Connect {
        /// The URL.
        url: String,
        /// The last reason.
        reason: String,
        /// Attempts made.
        attempts: u32,
    },
    /// No answer within the timeout on every attempt.
    #[error("{url} did not answer within {seconds}s (after {attempts} attempt{})", plural(*attempts))]
    Timeout {
        /// The URL.
        url: String,
        /// The timeout.
        seconds: f64,
        /// Attempts made.
        attempts: u32,
    },
    /// The server answered with an error status (after retries, for the retryable ones).
    #[error("{url} answered HTTP {status}{} (after {attempts} attempt{})", detail_text(detail), plural(*attempts))]
    Status {
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of what it said (key masked, one line).
        detail: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The answer was larger than [`MAX_ANSWER_BYTES`].
    #[error("{url} sent an answer larger than {MAX_ANSWER_BYTES} bytes")]
    TooLarge {
        /// The URL.
        url: String,
    },
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn detail_text(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

/// A bearer key, kept out of every `Debug` and message.
#[derive(Clone, PartialEq, Eq)]
pub struct Key(String);

impl Key {
    /// A key (empty: none is sent).
    pub fn new(key: String) -> Key {
        Key(key)
    }

    /// The key itself, for a redactor that keeps it out of files (never print it).
    pub fn secret(&self) -> &str {
        &self.0
    }

    /// Replaces every occurrence of the key in `text` with `[REDACTED]`.
    pub fn mask(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_owned()
        } else {
            text.replace(&self.0, "[REDACTED]")
        }
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key([REDACTED])")
    }
}

/// The HTTP client a model is asked through.
pub struct Client {
    runtime: tokio::runtime::Runtime,
    tls: rustls::ClientConfig,
    /// The HTTP client for the server last asked (its scheme and authority), on the route
    /// the environment gives it (directly, or through its HTTP proxy), and the
    /// `Proxy-Authorization` each request to a forwarding proxy carries.
    http: std::sync::Mutex<Option<Routed>>,
    key: Option<Key>,
    settings: Settings,
}

/// A server's HTTP client on its route.
#[derive(Clone)]
struct Routed {
    server: String,
    http: Https,
    proxy_authorization: Option<HeaderValue>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("settings", &self.settings)
            .field("key", &self.key.as_ref().map(|_| "[REDACTED]"))
            .finish_non_exhaustive()
    }
}

/// One attempt's outcome.
enum Attempt {
    Answered(u16, Option<Duration>, Vec<u8>),
    ConnectFailed(String),
    TimedOut,
    TooLarge,
}

impl Client {
    /// A client sending `key` (if any) with these settings.
    pub fn new(key: Option<Key>, settings: Settings) -> Result<Client, ClientError> {
        if let Some(k) = &key
            && HeaderValue::from_str(&format!("Bearer {}", k.0)).is_err()
        {
            return Err(ClientError::BadKey);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| ClientError::Setup(e.to_string()))?;
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for c in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(c);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ClientError::Setup(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Client {
            runtime,
            tls,
            http: std::sync::Mutex::new(None),
            key,
            settings,
        })
    }

    /// The HTTP client for `uri`'s server, on the route the environment's proxy settings
    /// give it (read as curl reads them; a loopback server is reached directly).
    fn routed(&self, uri: &Uri, url: &str) -> Result<Routed, ClientError> {
        let server = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("http"),
            uri.authority().map_or("", |a| a.as_str())
        );
        let mut held = self.http.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = held.as_ref().filter(|r| r.server == server) {
            return Ok(r.clone());
        }
        let mut connector = HttpConnector::new();
        connector.enforce_http(false);
        connector.set_nodelay(true);
        let settings = crate::http_route::Settings::from_env();
        let (route, via) =
            choose(uri, &settings, connector).map_err(|reason| ClientError::Proxy {
                url: url.to_owned(),
                reason,
            })?;
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(self.tls.clone())
            .https_or_http()
            .enable_http1()
            .wrap_connector(route);
        let http = HyperClient::builder(TokioExecutor::new())
            // A POST that may have reached the model is retried by us, knowingly.
            .retry_canceled_requests(false)
            .pool_idle_timeout(Duration::from_secs(30))
            .build(https);
        let routed = Routed {
            server,
            http,
            proxy_authorization: via.and_then(|v| v.authorization),
        };
        *held = Some(routed.clone());
        Ok(routed)
    }

    /// The settings.
    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// Masks the key in text a server sent.
    pub fn mask(&self, text: &str) -> String {
        match &self.key {
            Some(k) => k.mask(text),
            None => text.to_owned(),
        }
    }

    /// POSTs `body` (JSON) to `url`, retrying as the settings say; `notice` hears of each
    /// retry before it is waited for. A 2xx answer is returned whatever its body; any other
    /// status after the last attempt is [`ClientError::Status`].
    pub fn post_json(
        &self,
        url: &str,
        body: Vec<u8>,
        notice: &mut dyn FnMut(&Retry),
    ) -> Result<Answer, ClientError> {
        let uri = parse_url(url)?;
        let routed = self.routed(&uri, url)?;
        let body = Bytes::from(body);
        let tries = self.settings.max_retries.saturating_add(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = self
                .runtime
                .block_on(self.once(&routed, &uri, body.clone()));
            let last = attempt >= tries;
            let (why, server_wait, failure) = match outcome {
                Attempt::Answered(status, _, bytes) if (200..300).contains(&status) => {
                    return Ok(Answer {
                        status,
                        body: bytes,
                        attempts: attempt,
                    });
                }
                Attempt::Answered(status, retry_after, bytes) => {
                    let failure = ClientError::Status {
                        url: url.to_owned(),
                        status,
                        detail: self.excerpt(&bytes),
                        attempts: attempt,
                    };
                    if !(status == 429 || status >= 500) {
                        return Err(failure);
                    }
                    (format!("HTTP {status}"), retry_after, failure)
                }
                Attempt::ConnectFailed(reason) => (
                    reason.clone(),
                    None,
                    ClientError::Connect {
                        url: url.to_owned(),
                        reason,
                        attempts: attempt,
                    },
                ),
                Attempt::TimedOut => (
                    format!("no answer within {}s", self.settings.timeout.as_secs_f64()),
                    None,
                    ClientError::Timeout {
                        url: url.to_owned(),
                        seconds: self.settings.timeout.as_secs_f64(),
                        attempts: attempt,
                    },
                ),
                Attempt::TooLarge => {
                    return Err(ClientError::TooLarge {
                        url: url.to_owned(),
                    });
                }
            };
            if last {
                return Err(failure);
            }
            let backoff = self
                .settings
                .backoff
                .saturating_mul(1 << (attempt - 1).min(16));
            let wait = server_wait.map_or(backoff, |w| w.min(MAX_RETRY_AFTER));
            notice(&Retry {
                attempt,
                why,
                wait,
                server_asked: server_wait.is_some(),
            });
            std::thread::sleep(wait);
        }
    }

    /// The start of an error answer, one line, key masked.
    fn excerpt(&self, bytes: &[u8]) -> String {
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(2000)]);
        let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        crate::executor::envelope::cut(&self.mask(&one))
    }

    async fn once(&self, routed: &Routed, uri: &Uri, body: Bytes) -> Attempt {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(uri.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json");
        if let Some(auth) = &routed.proxy_authorization {
            request = request.header(hyper::header::PROXY_AUTHORIZATION, auth.clone());
        }
        if let Some(key) = self.key.as_ref().filter(|k| !k.0.is_empty())
            && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", key.0))
        {
            value.set_sensitive(true);
            request = request.header(AUTHORIZATION, value);
        }
        let request = match request.body(Full::new(body)) {
            Ok(r) => r,
            Err(e) => return Attempt::ConnectFailed(format!("the request cannot be built: {e}")),
        };
        let exchange = async {
            let response = match routed.http.request(request).await {
                Ok(r) => r,
                Err(e) => return Attempt::ConnectFailed(self.mask(&chain(&e))),
            };
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(retry_after);
            let mut body = response.into_body();
            let mut bytes = Vec::new();
            while let Some(frame) = body.frame().await {
                match frame {
                    Ok(f) => {
                        if let Some(data) = f.data_ref() {
                            if bytes.len() + data.len() > MAX_ANSWER_BYTES {
                                return Attempt::TooLarge;
                            }
                            bytes.extend_from_slice(data);
                        }
                    }
                    Err(e) => {
                        return Attempt::ConnectFailed(format!(
                            "the answer broke off: {}",
                            self.mask(&chain(&e))
                        ));
                    }
                }
            }
            Attempt::Answered(status, retry_after, bytes)
        };
        match tokio::time::timeout(self.settings.timeout, exchange).await {
            Ok(outcome) => outcome,
            Err(_) => Attempt::TimedOut,
        }
    }
}

/// A `Retry-After`: seconds (an integer or a decimal), or an HTTP date (the wait until then,
/// by this machine's clock; a date past is no wait). `None` for anything else, and the client
/// backs off instead.
pub fn retry_after(value: &str) -> Option<Duration> {
    retry_after_at(value, std::time::SystemTime::now())
}

/// [`retry_after`] as of `now`.
pub fn retry_after_at(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    const DAY: Duration = Duration::from_secs(86_400);
    let value = value.trim();
    if let Ok(s) = value.parse::<f64>() {
        return (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s.min(86_400.0)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO).min(DAY))
}

/// An absolute http:// or https:// URL.
pub fn parse_url(url: &str) -> Result<Uri, ClientError> {
    let bad = |reason: &str| ClientError::BadUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let uri: Uri = url.parse().map_err(|e| bad(&format!("{e}")))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err(bad("expected http:// or https://")),
    }
    if uri.authority().is_none_or(|a| a.host().is_empty()) {
        return Err(bad("no host"));
    }
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(bad(
            "a user or password in the URL is not sent; give the key with OPENAI_API_KEY or --api-key-env",
        ));
    }
    Ok(uri)
}

/// An error and its sources, one line: `client error (Connect): tcp connect error:
/// Connection refused (os error 111)`.
fn chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut at = e.source();
    while let Some(s) = at {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        at = s.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        assert_eq!(retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(retry_after("-1"), None);
        assert_eq!(retry_after("soon"), None);
        // 2015-10-21 07:28:00 UTC, and a clock 3 s before it, at it and after it.
        let at = std::time::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(
            retry_after_at(date, at - Duration::from_secs(3)),
            Some(Duration::from_secs(3))
        );
        assert_eq!(retry_after_at(date, at), Some(Duration::ZERO));
        assert_eq!(
            retry_after_at(date, at + Duration::from_secs(60)),
            Some(Duration::ZERO),
            "a date past is no wait"
        );
        // The obsolete forms a server may still send (RFC 9110 5.6.7).
        for old in [
            "Wednesday, 21-Oct-15 07:28:00 GMT",
            "Wed Oct 21 07:28:00 2015",
        ] {
            assert_eq!(
                retry_after_at(old, at - Duration::from_secs(3)),
                Some(Duration::from_secs(3)),
                "{old}"
            );
        }
        // A date a year away waits no longer than a day (the client caps it lower still).
        assert_eq!(
            retry_after_at(date, at - Duration::from_secs(365 * 86_400)),
            Some(Duration::from_secs(86_400))
        );
    }

    #[test]
    fn urls_are_checked() {
        assert!(parse_url("http://127.0.0.1:8080/v1/responses").is_ok());
        for bad in ["ftp://x/v1", "/v1/responses", "http://user:pw@host/v1"] {
            let e = parse_url(bad).expect_err(bad);
            assert!(e.to_string().starts_with(bad), "{e}");
        }
    }

    #[test]
    fn the_key_is_masked_and_never_debugged() {
        let key = Key::new("sk-test-SECRET123".into());
        assert_eq!(format!("{key:?}"), "Key([REDACTED])");
        assert_eq!(
            key.mask("bad key sk-test-SECRET123!"),
            "bad key [REDACTED]!"
        );
        let client = Client::new(Some(key), Settings::default()).expect("client");
        assert!(!format!("{client:?}").contains("SECRET123"));
        assert_eq!(
            Client::new(Some(Key::new("a\nb".into())), Settings::default()).err(),
            Some(ClientError::BadKey)
        );
    }

    #[test]
    fn a_refused_connection_is_retried_then_named() {
        // A port nobody listens on: bind, learn the port, close.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("port");
        let settings = Settings {
            backoff: Duration::from_millis(10),
            ..Settings::default()
        };
        let client = Client::new(None, settings).expect("client");
        let url = format!("http://127.0.0.1:{port}/v1/responses");
        let mut retries = Vec::new();
        let e = client
            .post_json(&url, b"{}".to_vec(), &mut |r| retries.push(r.clone()))
            .expect_err("refused");
        assert!(
            matches!(e, ClientError::Connect { attempts: 3, .. }),
            "{e:?}"
        );
        assert!(
            e.to_string().starts_with(&format!("cannot reach {url}")),
            "{e}"
        );
        assert_eq!(retries.len(), 2);
        assert_eq!(retries[1].wait, Duration::from_millis(20));
    }
}
