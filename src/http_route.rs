//! How an HTTP client of ours reaches a URL server — the MCP proxy its upstream, `ask` its
//! model: directly, or through the HTTP proxy the environment names, read as curl reads it
//! (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`, in upper or lower case) — as the MCP
//! clients and the OpenAI SDKs themselves do, so a server reached through a company's proxy
//! is still reached with ours in between. An https://
//! server is reached through a `CONNECT` tunnel (TLS stays end to end), an http:// one by
//! asking the proxy for its absolute URL. A loopback server is always reached directly: no
//! proxy elsewhere could reach it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::Uri;
use hyper::http::HeaderValue;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Errors of a connection on its way to the server.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The way to the server, chosen once (the proxy serves one URL).
#[derive(Clone, Debug)]
pub enum Route {
    /// Straight to the server.
    Direct(HttpConnector),
    /// An https:// server through a proxy's `CONNECT` tunnel.
    Tunnel(Tunnel<HttpConnector>),
    /// An http:// server through a proxy that is asked for the absolute URL.
    Forward { proxy: Uri, http: HttpConnector },
}

/// The proxy a route goes through.
#[derive(Clone, Debug)]
pub struct Via {
    /// Its URL as notes show it (credentials hidden).
    pub shown: String,
    /// `Proxy-Authorization` for each request ([`Route::Forward`] only: a tunnel sends it
    /// once, with `CONNECT`).
    pub authorization: Option<HeaderValue>,
}

/// Whether a URL's host names this machine by its loopback name or address (`localhost`,
/// `*.localhost`, `127.0.0.0/8`, `::1`, `0.0.0.0`, `::ffff:127.0.0.1`). Its other names and
/// addresses are not known here: `NO_PROXY` lists them.
fn loopback(host: &str) -> bool {
    use std::net::IpAddr;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| {
            ip.is_loopback()
                || ip.is_unspecified()
                || matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()))
        })
}

/// A proxy's URL as notes show it: its host and the port used (80 when it names none, as
/// the MCP SDKs' clients take it), nothing else; none when its port is not a number (a
/// password with an unescaped `#`, `/` or `?` leaves a word there, and no part of it is said).
fn shown_proxy(proxy: &Uri) -> Option<String> {
    let authority = proxy.authority()?.as_str();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = match host_port.rsplit_once(']') {
        Some((_, after)) => after.strip_prefix(':'),
        None => host_port.rsplit_once(':').map(|(_, p)| p),
    };
    let port = match port {
        Some(p) => p.parse::<u16>().ok()?,
        None => 80,
    };
    Some(format!(
        "{}://{}:{port}",
        proxy.scheme_str().unwrap_or("http"),
        proxy.host()?
    ))
}

/// One proxy setting: the variable it came from and its value.
type Setting = Option<(&'static str, String)>;

/// The environment's proxy settings, read as curl and hyper-util read them: of each pair
/// of names the first that is set (upper case first), and none at all in a CGI script's
/// environment (where a request's `Proxy:` header would become `HTTP_PROXY`).
#[derive(Clone, Default)]
pub struct Settings {
    pub all: Setting,
    pub http: Setting,
    pub https: Setting,
    pub no: String,
}

/// By name only: a proxy's URL may hold its password.
impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = |s: &Setting| s.as_ref().map(|(n, _)| *n);
        f.debug_struct("Settings")
            .field("all", &name(&self.all))
            .field("http", &name(&self.http))
            .field("https", &name(&self.https))
            .field("no", &self.no)
            .finish()
    }
}

impl Settings {
    pub fn from_env() -> Settings {
        let first = |names: [&'static str; 2]| {
            names
                .into_iter()
                .find_map(|n| std::env::var(n).ok().map(|v| (n, v)))
        };
        if std::env::var_os("REQUEST_METHOD").is_some() {
            return Settings::default();
        }
        Settings {
            all: first(["ALL_PROXY", "all_proxy"]),
            http: first(["HTTP_PROXY", "http_proxy"]),
            https: first(["HTTPS_PROXY", "https_proxy"]),
            no: first(["NO_PROXY", "no_proxy"])
                .map(|(_, v)| v)
                .unwrap_or_default(),
        }
    }

    fn matcher(&self) -> Matcher {
        let value = |s: &Setting| s.as_ref().map(|(_, v)| v.clone()).unwrap_or_default();
        Matcher::builder()
            .all(value(&self.all))
            .http(value(&self.http))
            .https(value(&self.https))
            .no(self.no.clone())
            .build()
    }

    /// Whether `NO_PROXY` has the entry `*`: every host, by name or address, is reached
    /// directly (as curl takes it; hyper-util's matcher applies it to names only).
    fn none_proxied(&self) -> bool {
        self.no.split(',').any(|e| e.trim() == "*")
    }

    /// The setting a proxy for `url` comes from: its scheme's, or else `ALL_PROXY` (an
    /// empty value is no setting).
    fn governing(&self, url: &Uri) -> Option<&(&'static str, String)> {
        let own = match url.scheme_str() {
            Some("https") => &self.https,
            _ => &self.http,
        };
        fn nonempty(s: &Setting) -> Option<&(&'static str, String)> {
            s.as_ref().filter(|(_, v)| !v.trim().is_empty())
        }
        nonempty(own).or_else(|| nonempty(&self.all))
    }
}

/// The route to `url` that the environment's proxy `settings` give; an error names a
/// proxy the route cannot go through (only http:// proxies are spoken to) or a setting
/// that cannot be read as a proxy's URL (curl refuses it too; going direct instead would
/// leave the user asking why the proxy they set was not used).
pub fn choose(
    url: &Uri,
    settings: &Settings,
    http: HttpConnector,
) -> Result<(Route, Option<Via>), String> {
    if url.host().is_none_or(loopback) || settings.none_proxied() {
        return Ok((Route::Direct(http), None));
    }
    if let Some((name, value)) = settings.governing(url) {
        let readable = Matcher::builder()
            .all(value.clone())
            .build()
            .intercept(&Uri::from_static("https://probe.invalid/"))
            .is_some();
        let listed_in_no_proxy = Matcher::builder()
            .all("http://probe.invalid:1")
            .no(settings.no.clone())
            .build()
            .intercept(url)
            .is_none();
        if !readable && !listed_in_no_proxy {
            return Err(format!(
                "{name} cannot be read as a proxy's URL (http://host:port): correct or unset \
                 it, or list the server's host in NO_PROXY"
            ));
        }
    }
    let Some(intercept) = settings.matcher().intercept(url) else {
        return Ok((Route::Direct(http), None));
    };
    let proxy = intercept.uri().clone();
    let Some(shown) = shown_proxy(&proxy) else {
        return Err(
            "the HTTP proxy the environment names (HTTPS_PROXY, HTTP_PROXY or ALL_PROXY) \
             cannot be read: its port is not a number (a password with '#', '/' or '?' must \
             be written %-escaped)"
                .to_owned(),
        );
    };
    if proxy.scheme_str().is_some_and(|s| s != "http") {
        let name = settings
            .governing(url)
            .map_or("the environment", |(n, _)| n);
        return Err(format!(
            "the proxy {name} names for {} is {shown}: only http:// proxies are supported \
             (set NO_PROXY to reach the server directly)",
            shown_server(url)
        ));
    }
    let authorization = intercept.basic_auth().cloned();
    Ok(match url.scheme_str() {
        Some("https") => {
            let mut tunnel = Tunnel::new(proxy, http);
            if let Some(a) = authorization {
                tunnel = tunnel.with_auth(a);
            }
            (
                Route::Tunnel(tunnel),
                Some(Via {
                    shown,
                    authorization: None,
                }),
            )
        }
        _ => (
            Route::Forward { proxy, http },
            Some(Via {
                shown,
                authorization,
            }),
        ),
    })
}

/// A server's URL as an error shows it: its scheme, host and port (no credentials, path or
/// query, which may hold a key).
fn shown_server(url: &Uri) -> String {
    let host = url.host().unwrap_or_default();
    match url.port_u16() {
        Some(port) => format!("{}://{host}:{port}", url.scheme_str().unwrap_or("http")),
        None => format!("{}://{host}", url.scheme_str().unwrap_or("http")),
    }
}

/// The connection a route made: the server's (direct or tunnelled), or the proxy's, which
/// then gets absolute URLs.
#[derive(Debug)]
pub struct Routed {
    io: TokioIo<TcpStream>,
    proxied: bool,
}

impl tower_service::Service<Uri> for Route {
    type Response = Routed;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Routed, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        match self {
            Route::Direct(h) | Route::Forward { http: h, .. } => {
                h.poll_ready(cx).map_err(Into::into)
            }
            Route::Tunnel(t) => t.poll_ready(cx).map_err(Into::into),
        }
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        match self {
            Route::Direct(h) => routed(h.call(dst), false),
            Route::Tunnel(t) => routed(t.call(dst), false),
            Route::Forward { proxy, http } => routed(http.call(proxy.clone()), true),
        }
    }
}

/// A connection being made, as the route's own.
fn routed<E: Into<BoxError>>(
    connecting: impl Future<Output = Result<TokioIo<TcpStream>, E>> + Send + 'static,
    proxied: bool,
) -> Pin<Box<dyn Future<Output = Result<Routed, BoxError>> + Send>> {
    Box::pin(async move {
        let io = connecting.await.map_err(Into::into)?;
        Ok(Routed { io, proxied })
    })
}

impl Connection for Routed {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.proxied)
    }
}

impl hyper::rt::Read for Routed {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Routed {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies(https: &str, no: &str) -> Settings {
        Settings {
            http: Some(("HTTP_PROXY", https.to_owned())),
            https: Some(("HTTPS_PROXY", https.to_owned())),
            no: no.to_owned(),
            ..Settings::default()
        }
    }

    fn route(url: &str, m: &Settings) -> Result<(Route, Option<Via>), String> {
        choose(&url.parse().expect("a URL"), m, HttpConnector::new())
    }

    #[test]
    fn the_environments_proxy_is_used_except_for_this_machine_and_no_proxy() {
        let m = proxies("http://ops:pw@proxy.corp:3128", "internal.corp");
        let (r, via) = route("https://mcp.example.com/mcp", &m).expect("a route");
        assert!(matches!(r, Route::Tunnel(_)), "{r:?}");
        let via = via.expect("through the proxy");
        // The matcher keeps the credentials apart from the URL.
        assert_eq!(via.shown, "http://proxy.corp:3128");
        assert!(via.authorization.is_none(), "sent once, with CONNECT");
        let (r, via) = route("http://mcp.example.com/mcp", &m).expect("a route");
        assert!(matches!(r, Route::Forward { .. }), "{r:?}");
        assert!(via.and_then(|v| v.authorization).is_some());
        for direct in [
            "https://internal.corp/mcp",
            "http://localhost:8000/mcp",
            "http://127.0.0.1:8000/mcp",
            "http://[::1]:8000/mcp",
            "http://mcp.localhost:8000/mcp",
            "http://localhost.:8000/mcp",
            "http://0.0.0.0:8000/mcp",
            "http://[::ffff:127.0.0.1]:8000/mcp",
        ] {
            let (r, via) = route(direct, &m).expect("a route");
            assert!(matches!(r, Route::Direct(_)) && via.is_none(), "{direct}");
        }
        let none = Settings::default();
        let (r, _) = route("https://mcp.example.com/mcp", &none).expect("a route");
        assert!(matches!(r, Route::Direct(_)));
    }

    #[test]
    fn a_proxy_is_shown_by_host_and_port_and_one_that_cannot_be_read_by_nothing_of_it() {
        let m = proxies("http://proxy.corp", "");
        let (_, via) = route("https://mcp.example.com/mcp", &m).expect("a route");
        assert_eq!(via.expect("through it").shown, "http://proxy.corp:80");
        // A password with an unescaped '#': the URL ends early, a word where the port is.
        let m = proxies("http://ops:qz#zz@proxy.corp:3128", "");
        let e = route("https://mcp.example.com/mcp", &m).expect_err("refused");
        assert!(e.contains("its port is not a number"), "{e}");
        assert!(!e.contains("qz") && !e.contains("ops"), "{e}");
    }

    #[test]
    fn a_proxy_that_is_not_http_is_refused_by_name() {
        let m = proxies("socks5://ops:pw@proxy.corp:1080", "");
        let e = route("https://mcp.example.com/mcp", &m).expect_err("refused");
        assert!(
            e.contains("the proxy HTTPS_PROXY names")
                && e.contains("socks5://proxy.corp:1080")
                && e.contains("NO_PROXY"),
            "{e}"
        );
        assert!(!e.contains("pw"), "{e}");
    }

    #[test]
    fn a_setting_that_is_no_proxy_url_is_refused_by_its_name_unless_no_proxy_lists_the_host() {
        for bad in ["not a url", "http://", "ftp://proxy.corp:21", "http://:::"] {
            let m = proxies(bad, "internal.corp");
            let e = route("https://mcp.example.com/mcp", &m).expect_err(bad);
            assert!(
                e.starts_with("HTTPS_PROXY cannot be read as a proxy's URL")
                    && !e.contains("proxy.corp")
                    && !e.contains("not a url"),
                "{bad}: {e}"
            );
            let e = route("http://mcp.example.com/mcp", &m).expect_err(bad);
            assert!(e.starts_with("HTTP_PROXY cannot"), "{bad}: {e}");
            // Not used for a host NO_PROXY lists, nor for this machine.
            for direct in ["https://internal.corp/mcp", "http://127.0.0.1:9/mcp"] {
                let (r, via) = route(direct, &m).expect("a route");
                assert!(matches!(r, Route::Direct(_)) && via.is_none(), "{direct}");
            }
        }
        // NO_PROXY=* reaches every host directly, by name or address: no setting is read.
        for (value, url) in [
            ("not a url", "https://mcp.example.com/mcp"),
            ("http://proxy.corp:3128", "https://mcp.example.com/mcp"),
            ("http://proxy.corp:3128", "https://10.0.0.5/mcp"),
            ("http://proxy.corp:3128", "http://[2001:db8::5]:8000/mcp"),
        ] {
            let m = proxies(value, "internal.corp, *");
            let (r, via) = route(url, &m).expect("a route");
            assert!(matches!(r, Route::Direct(_)) && via.is_none(), "{url}");
        }
        // A proxy's password never shows in Debug.
        let shown = format!("{:?}", proxies("http://ops:pw-SECRET@proxy.corp:3128", ""));
        assert!(
            !shown.contains("SECRET") && shown.contains("HTTPS_PROXY"),
            "{shown}"
        );
        // ALL_PROXY stands in when the scheme's own is unset or empty, and is named.
        let m = Settings {
            https: Some(("https_proxy", String::new())),
            all: Some(("ALL_PROXY", "ftp://proxy.corp:21".to_owned())),
            ..Settings::default()
        };
        let e = route("https://mcp.example.com/mcp", &m).expect_err("refused");
        assert!(e.starts_with("ALL_PROXY cannot"), "{e}");
        let m = Settings {
            all: Some(("all_proxy", "proxy.corp:3128".to_owned())),
            ..Settings::default()
        };
        let (_, via) = route("https://mcp.example.com/mcp", &m).expect("a route");
        assert_eq!(via.expect("through it").shown, "http://proxy.corp:3128");
    }
}
