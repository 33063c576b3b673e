//! Which HTTP headers the proxy passes on, which it keeps in the recording and how, and the
//! checks a listening proxy makes before it reads a request (DNS rebinding: `Host` and
//! `Origin` must name this machine unless remote clients were allowed).

use crate::redact::MARKER;
use crate::redact::named::recorded;

/// Headers that belong to one connection, never passed on (RFC 9110 §7.6.1), and those the
/// proxy writes itself.
const NOT_PASSED: [&str; 12] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "accept-encoding",
];

/// Headers the proxy writes for each request and the session it holds (besides every
/// `Mcp-*` header of the MCP transport: the session, the revision, and under 2026-07-28 the
/// method, name and parameters, which must agree with the body).
const SET_BY_PROXY: [&str; 4] = [
    "last-event-id",
    "content-type",
    "content-encoding",
    "accept",
];

/// Whether a header of a client's request (or a server's answer) is passed on to the other
/// side. `Connection` may name more headers that belong to the connection: those are in
/// `also`.
pub fn passed_on(name: &str, also: &[String]) -> bool {
    let name = name.to_ascii_lowercase();
    !NOT_PASSED.contains(&name.as_str()) && !also.iter().any(|a| a.eq_ignore_ascii_case(&name))
}

/// The headers of a message (a request or an answer) that are passed on to the other side,
/// as text, leaving out those in `skip` too (lower case).
pub fn passed(map: &hyper::HeaderMap, skip: &[&str]) -> Vec<super::Header> {
    let listed = connection_listed(
        &map.get_all(hyper::header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>(),
    );
    map.iter()
        .filter(|(n, _)| passed_on(n.as_str(), &listed) && !skip.contains(&n.as_str()))
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect()
}

/// A message's headers as the recording keeps them, in the order they came (not
/// `Content-Length`, which only measures the body), at most `most`: a header sent more than
/// once is kept once, its values joined as HTTP joins them, and `keep` gives the value kept
/// for a name and value (redacted, cut).
pub fn kept(
    headers: &hyper::HeaderMap,
    most: usize,
    mut keep: impl FnMut(&str, &str) -> String,
) -> Vec<super::Header> {
    headers
        .keys()
        .filter(|n| *n != hyper::header::CONTENT_LENGTH)
        .take(most)
        .map(|n| {
            let joined = headers
                .get_all(n)
                .iter()
                .map(|v| v.to_str().unwrap_or(""))
                .collect::<Vec<_>>()
                .join(", ");
            let kept = keep(n.as_str(), &joined);
            (n.as_str().to_owned(), kept)
        })
        .collect()
}

/// The header names a `Connection` header lists.
pub fn connection_listed(values: &[&str]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Headers whose value a `--header` may show: each says how the request is to be read, or
/// names it, and none carries who is asking. Anything else a user adds to every request is
/// most likely a credential under a name of its own (`X-Upstream-Auth`, `X-Tenant-Secret`),
/// so it is kept out of the recording, the logs and a printed config. `Accept` is not here:
/// the proxy sets it itself and refuses it as a `--header`.
const HARMLESS_ADDED: [&str; 3] = ["user-agent", "accept-language", "x-request-id"];

/// Whether the value of a header added with `--header` may be shown ([`HARMLESS_ADDED`]).
pub fn added_value_shown(name: &str) -> bool {
    HARMLESS_ADDED.contains(&name.to_ascii_lowercase().as_str())
}

/// A header the proxy adds (`--header`) as the recording keeps it: `[REDACTED]` unless its
/// name is a harmless one ([`added_value_shown`]), which is kept as [`recorded`] keeps it.
pub fn recorded_added(name: &str, value: &str) -> String {
    match added_value_shown(name) {
        true => recorded(name, value),
        false => MARKER.to_owned(),
    }
}

/// The environment variable a `--header`'s value names (`$NAME`), if it names one.
pub fn variable(value: &str) -> Option<&str> {
    value.trim().strip_prefix('$').filter(|v| !v.is_empty())
}

/// A `--header 'Name: value'` from the command line, its value read from the environment when
/// it is `$NAME`.
pub fn parse_static(
    text: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(String, String), String> {
    // Messages name the header, never its value (which may be a secret).
    let Some((name, value)) = text.split_once(':') else {
        return Err(format!(
            "--header: expected 'Name: value', got {} characters without a ':'",
            text.chars().count()
        ));
    };
    let name = name.trim();
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !valid {
        return Err(format!("--header {name:?}: not a header name"));
    }
    let lower = name.to_ascii_lowercase();
    if lower == "proxy-authorization" {
        return Err(format!(
            "--header {name}: an HTTP proxy's credentials go in the URL HTTPS_PROXY or \
             HTTP_PROXY names (http://user:password@host:port)"
        ));
    }
    // Hop-by-hop and framing headers, and those of the MCP transport: a value given here
    // would cut the body short (Content-Length), break the framing, or fight the session the
    // proxy holds. `Host` may be set, as curl lets it be.
    if (NOT_PASSED.contains(&lower.as_str()) && lower != "host")
        || SET_BY_PROXY.contains(&lower.as_str())
        || lower.starts_with("mcp-")
    {
        return Err(format!(
            "--header {name}: the proxy sets this header itself (it frames each request and \
             holds the session)"
        ));
    }
    let value = value.trim();
    let value = match variable(value) {
        Some(var) => env(var)
            .ok_or_else(|| format!("--header {name}: the environment variable {var} is not set"))?,
        None => value.to_owned(),
    };
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(format!("--header {name}: the value holds a line break"));
    }
    Ok((name.to_owned(), value))
}

/// The host of a `Host` header or of an origin's authority, without its port.
fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    // A bare IPv6 address (an `--allow-host` name, not a header) has no port to cut.
    if authority.bytes().filter(|b| *b == b':').count() > 1 {
        return authority;
    }
    authority.split(':').next().unwrap_or(authority)
}

/// Whether a host name is this machine's loopback.
fn loopback(host: &str) -> bool {
    let h = host.to_ascii_lowercase();
    h == "localhost"
        || h.ends_with(".localhost")
        || h == "::1"
        || h.parse::<std::net::Ipv4Addr>()
            .is_ok_and(|a| a.is_loopback())
}

/// Why a request to a listening proxy is refused (403), or none. The `Host` header must
/// name a loopback host or one of `allowed` (the listen address and the `--allow-host`
/// names), with `--allow-remote` too: a DNS-rebinding page's requests carry its own name as
/// `Host`, and a same-origin GET carries no `Origin`. An `Origin`, when sent, must be a
/// loopback origin or name the same host as `Host`.
pub fn refused(
    host: Option<&str>,
    origin: Option<&str>,
    remote: bool,
    allowed: &[String],
) -> Option<String> {
    let Some(host) = host else {
        return Some("the request has no Host header".into());
    };
    let named = host_of(host);
    let allowed_host = |h: &str| {
        loopback(h)
            || allowed
                .iter()
                .any(|a| host_of(a).eq_ignore_ascii_case(h) && !h.is_empty())
    };
    if !allowed_host(named) {
        return Some(match remote {
            false => format!(
                "Host {host:?} is not this machine (start the proxy with --allow-remote to take remote clients)"
            ),
            true => format!(
                "Host {host:?} is not a name this proxy answers to (start it with --allow-host {} to take requests for it)",
                crate::printable::line(named)
            ),
        });
    }
    let origin = origin?;
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    let ok = match authority {
        Some(a) => {
            let from = host_of(a);
            from.eq_ignore_ascii_case(named) || (loopback(from) && loopback(named))
        }
        None => false,
    };
    (!ok).then(|| format!("Origin {origin:?} may not call this server"))
}

/// Why a request's head is malformed for a listening proxy (400), or none: a `Host` given
/// twice, or an absolute-form target (`POST http://a/mcp`) whose authority is not the `Host`
/// (two names for one request, the second of which a check on `Host` alone would miss).
pub fn malformed(headers: &hyper::HeaderMap, target: &hyper::Uri) -> Option<String> {
    let mut hosts = headers.get_all(hyper::header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Some("the request has two Host headers".into());
    }
    let authority = target.authority()?;
    let host = host.and_then(|h| h.to_str().ok()).unwrap_or("");
    (!authority.as_str().eq_ignore_ascii_case(host)).then(|| {
        format!(
            "the request's target names {:?} but its Host is {:?}",
            authority.as_str(),
            host
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_headers_keep_no_value_unless_harmless() {
        for name in ["X-Upstream-Auth", "X-Tenant", "Authorization", "Host"] {
            assert_eq!(recorded_added(name, "s3cr3t-value"), "[REDACTED]", "{name}");
        }
        for name in ["User-Agent", "accept-language", "X-Request-Id"] {
            assert_eq!(recorded_added(name, "agent/1.0"), "agent/1.0", "{name}");
        }
    }

    #[test]
    fn connection_headers_stay_on_their_connection() {
        let also = connection_listed(&["keep-alive, X-Hop"]);
        assert!(!passed_on("Transfer-Encoding", &also));
        assert!(!passed_on("x-hop", &also));
        assert!(passed_on("Mcp-Session-Id", &also));
        assert!(passed_on("X-Custom", &also));
    }

    #[test]
    fn static_headers_read_the_environment() {
        let env = |k: &str| (k == "TOKEN").then(|| "Bearer abc".to_owned());
        assert_eq!(
            parse_static("Authorization: $TOKEN", env),
            Ok(("Authorization".into(), "Bearer abc".into()))
        );
        assert!(parse_static("Authorization: $MISSING", env).is_err());
        // A mistake is said without the value, which may be a secret.
        for bad in ["X-Auth s3cr3t-value", "Bad Name: s3cr3t-value"] {
            let e = parse_static(bad, env).expect_err(bad);
            assert!(e.starts_with("--header") && !e.contains("s3cr3t"), "{e}");
        }
        // What the proxy frames or holds itself is refused by name; Host may be set.
        for set in [
            "Content-Length: 5",
            "transfer-encoding: chunked",
            "Connection: close",
            "Mcp-Session-Id: abc",
            "MCP-Protocol-Version: 2025-06-18",
            "Mcp-Method: tools/call",
            "Mcp-Param-Order: o-1",
            "Accept: text/html",
            "Accept-Encoding: gzip",
            "Content-Encoding: gzip",
        ] {
            let e = parse_static(set, env).expect_err(set);
            assert!(e.contains("the proxy sets this header itself"), "{e}");
        }
        let e = parse_static("Proxy-Authorization: Basic eA==", env).expect_err("refused");
        assert!(e.contains("HTTPS_PROXY") && !e.contains("eA=="), "{e}");
        assert!(parse_static("Host: mcp.internal", env).is_ok());
    }

    #[test]
    fn rebinding_is_refused_unless_the_host_is_allowed() {
        let none: &[String] = &[];
        assert_eq!(refused(Some("127.0.0.1:8931"), None, false, none), None);
        assert_eq!(
            refused(
                Some("localhost:8931"),
                Some("http://localhost:3000"),
                false,
                none
            ),
            None
        );
        assert_eq!(refused(Some("[::1]:80"), None, false, none), None);
        assert!(refused(Some("evil.example:8931"), None, false, none).is_some());
        let evil = refused(
            Some("127.0.0.1:8931"),
            Some("http://evil.example"),
            false,
            none,
        );
        assert!(evil.is_some());
        assert!(refused(None, None, false, none).is_some());
        // With --allow-remote the Host check stays: a rebinding page's name is refused, and
        // says how to allow a name.
        let rebound = refused(Some("evil.example:8931"), None, true, none).expect("refused");
        assert!(rebound.contains("--allow-host evil.example"), "{rebound}");
        let allowed = ["10.0.0.5".to_owned(), "mcp.lan:8931".to_owned()];
        assert_eq!(refused(Some("10.0.0.5:8931"), None, true, &allowed), None);
        assert_eq!(refused(Some("MCP.lan:8931"), None, true, &allowed), None);
        assert!(refused(Some("10.0.0.6:8931"), None, true, &allowed).is_some());
        let foreign = refused(
            Some("10.0.0.5:8931"),
            Some("http://evil.example"),
            true,
            &allowed,
        );
        assert!(foreign.is_some());
        assert_eq!(
            refused(
                Some("10.0.0.5:8931"),
                Some("http://10.0.0.5:8931"),
                true,
                &allowed
            ),
            None
        );
    }

    #[test]
    fn two_hosts_or_a_target_naming_another_authority_are_malformed() {
        let head = |hosts: &[&str]| {
            let mut h = hyper::HeaderMap::new();
            for v in hosts {
                h.append(
                    hyper::header::HOST,
                    hyper::header::HeaderValue::from_str(v).expect("value"),
                );
            }
            h
        };
        let origin_form: hyper::Uri = "/mcp".parse().expect("uri");
        let absolute: hyper::Uri = "http://127.0.0.1:8931/mcp".parse().expect("uri");
        let elsewhere: hyper::Uri = "http://evil.example/mcp".parse().expect("uri");
        assert_eq!(malformed(&head(&["127.0.0.1:8931"]), &origin_form), None);
        assert_eq!(malformed(&head(&["127.0.0.1:8931"]), &absolute), None);
        let two = malformed(&head(&["127.0.0.1:8931", "evil.example"]), &origin_form);
        assert!(two.is_some_and(|w| w.contains("two Host")));
        let other = malformed(&head(&["127.0.0.1:8931"]), &elsewhere);
        assert!(other.is_some_and(|w| w.contains("evil.example")));
    }
}
