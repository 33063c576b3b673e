//! Reaching a remote server: the HTTP client (Mozilla's roots and the platform's, or those
//! `SSL_CERT_FILE` names), the route through the environment's proxy, the user and password a
//! URL carries taken out as `Authorization: Basic`, and a failure to connect explained in
//! words (a TLS error, a proxy that refused the tunnel).

use hyper::Uri;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use std::sync::Arc;
use std::time::Duration;

use super::{HttpClient, RemoteError};

/// A URL's user and password taken out of it, as an `Authorization: Basic` value (what curl
/// and the SDKs' HTTP clients make of them); the URL without them, which is what requests
/// name (a user part is never sent in a request line, RFC 9110 §4.2.4).
pub(super) fn take_credentials(uri: Uri) -> (Uri, Option<String>) {
    let Some((user_part, host)) = uri
        .authority()
        .and_then(|a| a.as_str().rsplit_once('@'))
        .map(|(u, h)| (u.to_owned(), h.to_owned()))
    else {
        return (uri, None);
    };
    let mut parts = uri.clone().into_parts();
    parts.authority = host.parse().ok();
    let Ok(bare) = Uri::from_parts(parts) else {
        return (uri, None);
    };
    let decode = |t: &str| percent_encoding::percent_decode_str(t).collect::<Vec<u8>>();
    let (user, password) = user_part.split_once(':').unwrap_or((&user_part, ""));
    let mut pair = decode(user);
    pair.push(b':');
    pair.extend(decode(password));
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(pair);
    (bare, Some(format!("Basic {basic}")))
}

/// The client, verifying certificates against Mozilla's roots (bundled) and, for an https://
/// server, the platform's (its certificate store), or instead of those the file
/// `SSL_CERT_FILE` names (and `SSL_CERT_DIR`) when it is set, as OpenSSL and curl read them.
/// When that file cannot be read (or a certificate in it cannot be used) a note says so and
/// the bundled roots verify, with `SSL_CERT_DIR`'s certificates when it is set (a FIFO or
/// device as the file is refused, never waited on); it never stops an http:// server from
/// being reached. The way to the server is [`super::route`]'s, from the environment. The
/// notes are for the start of the session.
pub(super) fn client(
    url: &Uri,
) -> Result<(HttpClient, Option<super::super::route::Via>, Vec<String>), RemoteError> {
    let https = url.scheme_str() == Some("https");
    let mut notes = Vec::new();
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    // Whether the platform's store can be read: its loader opens SSL_CERT_FILE as it is,
    // and would wait forever on a FIFO there.
    let mut store_readable = true;
    if let Some(path) = std::env::var_os("SSL_CERT_FILE").filter(|_| https) {
        let shown = std::path::Path::new(&path).display().to_string();
        match crate::fsread::read_document(std::path::Path::new(&path)) {
            Ok(pem) => {
                let (mut found, mut skipped) = (0, 0);
                for c in CertificateDer::pem_slice_iter(&pem) {
                    found += 1;
                    if !c.is_ok_and(|c| roots.add(c).is_ok()) {
                        skipped += 1;
                    }
                }
                if pem.len() > crate::json::MAX_DOCUMENT_BYTES {
                    notes.push(format!(
                        "SSL_CERT_FILE {shown} exceeds 8,000,000 bytes: only the certificates \
                         in its first 8,000,000 are used"
                    ));
                } else if found == 0 {
                    notes.push(format!(
                        "SSL_CERT_FILE {shown} holds no PEM certificate (-----BEGIN \
                         CERTIFICATE-----), so it adds none (it stands in for this machine's \
                         store, as for curl)"
                    ));
                } else if skipped > 0 {
                    notes.push(format!(
                        "SSL_CERT_FILE {shown}: {skipped} certificate(s) could not be used"
                    ));
                }
            }
            Err(e) => {
                store_readable = e.kind() != std::io::ErrorKind::InvalidInput;
                notes.push(format!(
                    "SSL_CERT_FILE {shown} cannot be read ({e}), so it is not used (it stands \
                     in for this machine's store, as for curl)"
                ));
            }
        }
    }
    if https && !store_readable {
        // The store's loader would open the file and wait: SSL_CERT_DIR, which stands in for
        // the store beside it, is read on its own.
        let dirs = std::env::var_os("SSL_CERT_DIR").unwrap_or_default();
        for dir in std::env::split_paths(&dirs).filter(|d| !d.as_os_str().is_empty()) {
            for c in rustls_native_certs::load_certs_from_paths(None, Some(&dir)).certs {
                let _ = roots.add(c);
            }
        }
    }
    if https && store_readable {
        // The platform's store, where there is one (a minimal container has none: the
        // bundled roots then verify alone, said nowhere as nothing is missing); or instead
        // of it, as OpenSSL and curl take them, SSL_CERT_FILE and SSL_CERT_DIR.
        for c in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(c);
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| RemoteError::Tls(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let proxies = super::super::route::Settings::from_env();
    let (route, via) =
        super::super::route::choose(url, &proxies, http).map_err(RemoteError::Proxy)?;
    if let Some(v) = &via {
        notes.push(format!(
            "the server is reached through the HTTP proxy {} the environment names \
             (NO_PROXY lists hosts reached directly)",
            v.shown
        ));
    }
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .wrap_connector(route);
    let client = Client::builder(TokioExecutor::new())
        .retry_canceled_requests(false)
        .pool_idle_timeout(Duration::from_secs(30))
        .build(connector);
    Ok((client, via, notes))
}

/// The error and its causes, in one line.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut hint = None;
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        hint = hint
            .or_else(|| tls_within(s).and_then(tls_hint))
            .or_else(|| tunnel_hint(&s.to_string()));
        source = s.source();
    }
    if let Some(h) = hint {
        out.push_str(" (");
        out.push_str(h);
        out.push(')');
    }
    out
}

/// The TLS error an error is, or carries inside the I/O errors that wrap it (which show its
/// words but do not give it as their source).
pub(super) fn tls_within<'e>(
    e: &'e (dyn std::error::Error + 'static),
) -> Option<&'e rustls::Error> {
    let mut at = e;
    loop {
        if let Some(tls) = at.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        at = at.downcast_ref::<std::io::Error>()?.get_ref()?;
    }
}

/// What to do about an HTTP proxy's 407 on the way to `shown` (the server's URL and the
/// proxy's, as notes show them).
pub(super) fn proxy_refusal(shown: &str) -> String {
    format!("HTTP 407 Proxy Authentication Required on the way to {shown}: {PROXY_CREDENTIALS}")
}

/// What a 407 from a proxy asks of the user.
pub(super) const PROXY_CREDENTIALS: &str = "the HTTP proxy asks for credentials, or refused those given: \
     they go in its URL, http://user:password@host:port, in the variable that names it";

/// What a proxy's refused tunnel means (hyper-util's tunnel error is not a public type: it
/// is known by its words).
pub(super) fn tunnel_hint(said: &str) -> Option<&'static str> {
    match said {
        "tunnel error: proxy authorization required" => Some(PROXY_CREDENTIALS),
        "tunnel error: unsuccessful" => Some(
            "the HTTP proxy refused to open a tunnel to the server: its rules may allow only \
             some hosts or ports; NO_PROXY lists hosts to reach directly",
        ),
        _ => None,
    }
}

/// What a refused server certificate means and what to do, in words: rustls names only the
/// case.
pub(super) fn tls_hint(e: &rustls::Error) -> Option<&'static str> {
    use rustls::CertificateError as C;
    let rustls::Error::InvalidCertificate(c) = e else {
        return None;
    };
    Some(match c {
        C::UnknownIssuer => {
            "the server's certificate is not signed by an authority trusted here (Mozilla's \
             roots, bundled, and this machine's store or the SSL_CERT_FILE that stands in for \
             it): a private authority is trusted once it is in the store, or in a PEM file \
             SSL_CERT_FILE names"
        }
        C::NotValidForName | C::NotValidForNameContext { .. } => {
            "the server's certificate is not made out to the host the URL names"
        }
        C::Expired | C::ExpiredContext { .. } => "the server's certificate has expired",
        C::NotValidYet | C::NotValidYetContext { .. } => {
            "the server's certificate is not valid yet (is this machine's clock right?)"
        }
        C::Other(o) if format!("{o:?}").contains("CaUsedAsEndEntity") => {
            "the server presents an authority's certificate as its own, as a self-signed \
             one made with `openssl req -x509` is (CA:TRUE); rustls accepts only a \
             certificate an authority signed: make one with an authority (mkcert does) and \
             give the authority with SSL_CERT_FILE"
        }
        _ => return None,
    })
}
