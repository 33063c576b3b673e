//! The address of an MCP server: a command to start, or an `http://`/`https://` URL — telling
//! which a server named after `--` is, parsing a URL, and how a URL is shown and kept (a
//! user part, a key in its path and a secret query value never are). Everything above it
//! reads a server's address here: the scenario that names one, the HTTP upstream that
//! reaches one, the proxy and the client that start one.

use hyper::Uri;

use crate::redact::MARKER;
use crate::redact::named::{is_credential, recorded};

/// A server URL that cannot be used.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("{url:?} is not an http:// or https:// URL: {why}")]
pub struct UrlError {
    /// As given, its secrets hidden ([`shown_url`]).
    pub url: String,
    /// Why.
    pub why: String,
}

/// Whether a server named after `--` is a URL (one word, `http://` or `https://`).
pub fn is_url(words: &[std::ffi::OsString]) -> bool {
    matches!(words, [one] if one.to_str().is_some_and(|s| {
        let l = s.to_ascii_lowercase();
        l.starts_with("http://") || l.starts_with("https://")
    }))
}

/// Whether a server named after `--` is a URL of another scheme (`ftp://`, `ws://`): one word
/// whose text before `://` is a URL scheme. It is refused by name, not started as a command.
pub fn is_other_url(words: &[std::ffi::OsString]) -> bool {
    let [one] = words else {
        return false;
    };
    let Some((scheme, _)) = one.to_str().and_then(|s| s.split_once("://")) else {
        return false;
    };
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !is_url(words)
}

/// Parses a server URL.
pub fn parse_url(url: &str) -> Result<Uri, UrlError> {
    let fail = |why: &str| UrlError {
        url: shown_url(url),
        why: why.to_owned(),
    };
    let uri: Uri = url
        .parse()
        .map_err(|e: hyper::http::uri::InvalidUri| fail(&e.to_string()))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err(fail("the scheme must be http or https")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(fail("it names no host"));
    }
    // (A password with an unescaped `#`, `/` or `?` ends the authority early and leaves a
    // word where the port is.)
    let host_port = uri.authority().map_or("", |a| {
        a.as_str().rsplit_once('@').map_or(a.as_str(), |(_, h)| h)
    });
    let port = match host_port.rsplit_once(']') {
        Some((_, after)) => after.strip_prefix(':'),
        None => host_port.rsplit_once(':').map(|(_, p)| p),
    };
    if port.is_some_and(|p| !p.bytes().all(|b| b.is_ascii_digit())) {
        return Err(fail(
            "its port is not a number (a password with '#', '/' or '?' must be written \
             %-escaped)",
        ));
    }
    Ok(uri)
}

/// A URL as messages show it, whether it is a valid URL or not: as the recording keeps it
/// ([`recorded_url`]), and with everything before the last `@` of its authority hidden, also
/// when its user part holds what a URL may not (`?`, `#`, another `@`), which would otherwise
/// end the authority early.
pub fn shown_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return recorded_url(url);
    };
    let end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..end];
    if let Some(at) = authority.rfind('@') {
        return recorded_url(&format!("{scheme}://{MARKER}{}", &rest[at..]));
    }
    // A password holding `/` ends the authority early (`user:pa` then `ss@host/...`): what
    // reads as its port is no number, and an `@` follows before any query or fragment.
    let port_is_word = !authority.starts_with('[')
        && authority
            .rsplit_once(':')
            .is_some_and(|(_, p)| !p.is_empty() && !p.bytes().all(|b| b.is_ascii_digit()));
    let stop = rest.find(['?', '#']).unwrap_or(rest.len());
    match rest[..stop].rfind('@') {
        Some(at) if port_is_word => recorded_url(&format!("{scheme}://{MARKER}{}", &rest[at..])),
        _ => recorded_url(url),
    }
}

/// A URL as the recording keeps it: a password in it, a path segment that looks like a key
/// ([`secret_like`]), and the value of any query parameter named like a secret or looking like
/// a key, redacted.
pub fn recorded_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, tail) = match rest.find(['/', '?', '#']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("{MARKER}@{host}"),
        None => authority.to_owned(),
    };
    let (path, query) = match tail.find(['?', '#']) {
        Some(i) => tail.split_at(i),
        None => (tail, ""),
    };
    let path = path
        .split('/')
        .map(|segment| match secret_like(segment) {
            true => MARKER,
            false => segment,
        })
        .collect::<Vec<_>>()
        .join("/");
    let tail = match query.strip_prefix('?') {
        Some(query) => {
            let (query, fragment) = match query.split_once('#') {
                Some((q, f)) => (q, Some(f)),
                None => (query, None),
            };
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, v)) => {
                        let shown = if is_credential(k) || secret_like(v) {
                            MARKER.to_owned()
                        } else {
                            recorded(k, v)
                        };
                        format!("{k}={shown}")
                    }
                    None if secret_like(pair) => MARKER.to_owned(),
                    None => pair.to_owned(),
                })
                .collect();
            let mut t = format!("{path}?{}", query.join("&"));
            if let Some(f) = fragment {
                t.push('#');
                t.push_str(f);
            }
            t
        }
        None => format!("{path}{query}"),
    };
    if scheme.is_empty() {
        format!("{authority}{tail}")
    } else {
        format!("{scheme}://{authority}{tail}")
    }
}

/// Whether a segment of a URL's path (or a query value) looks like a key rather than a name:
/// hosted MCP servers often put the user's secret there (`/api/mcp/s/<token>/mcp`,
/// `/<uuid>/mcp`). Read with its `%XX` escapes decoded, it is one when it is at least 16
/// characters of what tokens are made of and either holds a run of 16 letters and digits
/// mixing upper case, lower case and digits (a random key), or is hexadecimal with letters
/// and digits (an id, a UUID, a digest). Names of words (`server-everything`,
/// `AcmeCorp-Production-2025`), versions and dates are not.
pub fn secret_like(segment: &str) -> bool {
    const TOKEN_PUNCTUATION: &[u8] = b"-_.~+=";
    let decoded: Vec<u8> = percent_encoding::percent_decode_str(segment).collect();
    let bytes = decoded.as_slice();
    if bytes.len() < 16
        || !bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || TOKEN_PUNCTUATION.contains(b))
    {
        return false;
    }
    let mixes = |run: &[u8]| {
        run.len() >= 16
            && run.iter().any(u8::is_ascii_uppercase)
            && run.iter().any(u8::is_ascii_lowercase)
            && run.iter().any(u8::is_ascii_digit)
    };
    let random = bytes.split(|b| !b.is_ascii_alphanumeric()).any(mixes);
    let hex_digits = bytes.iter().filter(|b| b.is_ascii_hexdigit()).count();
    let hexadecimal = bytes.iter().all(|b| b.is_ascii_hexdigit() || *b == b'-')
        && hex_digits >= 16
        && bytes.iter().any(u8::is_ascii_digit)
        && bytes.iter().any(u8::is_ascii_alphabetic);
    random || hexadecimal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_no_credentials() {
        assert_eq!(
            recorded_url("https://user:pw@host/mcp?api_key=abc&x=1"),
            "https://[REDACTED]@host/mcp?api_key=[REDACTED]&x=1"
        );
        assert_eq!(
            recorded_url("http://127.0.0.1:8000/mcp"),
            "http://127.0.0.1:8000/mcp"
        );
        assert_eq!(
            recorded_url("http://h/mcp?token=t#f"),
            "http://h/mcp?token=[REDACTED]#f"
        );
    }

    #[test]
    fn keys_in_a_urls_path_are_hidden_and_names_kept() {
        for (url, kept) in [
            (
                "https://mcp.zapier.com/api/mcp/s/ZjM4YjE2NDUtMTk2Ny00NzQ1LWI0ZjctN2Jm/mcp",
                "https://mcp.zapier.com/api/mcp/s/[REDACTED]/mcp",
            ),
            (
                "https://h/3f2a9c1e-8b7d-4e6f-a5c4-1d2e3f4a5b6c/mcp?x=1#top",
                "https://h/[REDACTED]/mcp?x=1#top",
            ),
            (
                "https://h/mcp?user=ops&s=ZjM4YjE2NDUtMTk2Ny00NzQ1&v=2025-06-18",
                "https://h/mcp?user=ops&s=[REDACTED]&v=2025-06-18",
            ),
            ("https://h/a#x?y", "https://h/a#x?y"),
            // A key as the whole query, and one percent-encoded.
            (
                "https://h/mcp?ZjM4YjE2NDUtMTk2Ny00NzQ1",
                "https://h/mcp?[REDACTED]",
            ),
            (
                "https://h/k/ZjM4YjE2NDUtMTk2%2BNy00NzQ1/mcp",
                "https://h/k/[REDACTED]/mcp",
            ),
            // Names that only look busy: words with a version, escapes of a path or spaces.
            (
                "https://h/GitHubServer-v2-Prod/AcmeCorp-Production-2025/mcp",
                "https://h/GitHubServer-v2-Prod/AcmeCorp-Production-2025/mcp",
            ),
            (
                "https://h/my%2Fteam%2Fserver/Team%20Workspace%202025/mcp",
                "https://h/my%2Fteam%2Fserver/Team%20Workspace%202025/mcp",
            ),
            (
                "https://h/ghp_16C7e42F292c6912E7710c838347Ae178B4a",
                "https://h/[REDACTED]",
            ),
            // Names of words, dates and versions stay.
            (
                "http://127.0.0.1:3001/server-everything/v2/2025-06-18/mcp",
                "http://127.0.0.1:3001/server-everything/v2/2025-06-18/mcp",
            ),
            (
                "http://h/modelcontextprotocol-sqlite",
                "http://h/modelcontextprotocol-sqlite",
            ),
            ("http://h/deadbeefdeadbeef", "http://h/deadbeefdeadbeef"),
        ] {
            assert_eq!(recorded_url(url), kept, "{url}");
            assert_eq!(shown_url(url), kept, "{url}");
        }
    }

    #[test]
    fn urls_that_are_not_valid_show_no_user_part_either() {
        // A password with what a URL may not hold there, unencoded: all of it hidden.
        for bad in [
            "http://ops:p?w#x@host/mcp",
            "http://ops:p@ss@host/mcp",
            "http://ops:pw@host:99999/mcp",
            "http://ops:p/w@host/mcp",
            "http://ops:p/w/x@host/mcp?q=1",
        ] {
            let shown = shown_url(bad);
            assert!(
                shown.starts_with("http://[REDACTED]@host"),
                "{bad} → {shown}"
            );
            assert!(
                !shown.contains("ops") && !shown.contains("pw"),
                "{bad} → {shown}"
            );
        }
        assert_eq!(
            shown_url("https://user:pw@host/mcp?api_key=abc&x=1"),
            recorded_url("https://user:pw@host/mcp?api_key=abc&x=1")
        );
        assert_eq!(shown_url("http://h/mcp"), "http://h/mcp");
        assert_eq!(shown_url("not a url"), "not a url");
        // An `@` in the path of a URL whose port is a number is the path's.
        assert_eq!(
            shown_url("http://h:8080/users/@me/mcp"),
            "http://h:8080/users/@me/mcp"
        );
    }
}
