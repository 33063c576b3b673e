//! What the recording keeps of a named value — an HTTP header, a URL's query parameter: a
//! credential (by its name) never, anything else redacted as an argument of that name would
//! be, and cut to a bound.

use crate::json::Value;
use crate::redact::{MARKER, Redactor};

/// Whether a header's value is a credential that is never written anywhere: `Authorization`,
/// `Cookie`, and any `*-Key`, `*-Token` or `*-Auth` (`X-Upstream-Auth`).
pub fn is_credential(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "set-cookie"
    ) || ["key", "token", "auth"].iter().any(|end| {
        n.strip_suffix(end)
            .is_some_and(|rest| rest.ends_with(['-', '_']))
    })
}

/// The longest header value the recording keeps whole; a longer one is cut there and says how
/// long it was (a client sending a large header with every call must not fill the recording).
pub const KEPT_VALUE: usize = 256;

/// A header as the recording keeps it: a credential as `[REDACTED]`, anything else redacted
/// as an argument's value of that name would be, and cut at [`KEPT_VALUE`] characters.
pub fn recorded(name: &str, value: &str) -> String {
    if is_credential(name) {
        return MARKER.to_owned();
    }
    let whole = Redactor::builtin().redact(&crate::obj! { name => value });
    let kept = whole
        .as_object()
        .and_then(|o| o.get(name))
        .and_then(Value::as_str)
        .map_or_else(|| MARKER.to_owned(), str::to_owned);
    match kept.char_indices().nth(KEPT_VALUE) {
        Some((at, _)) => format!("{}… ({} bytes)", &kept[..at], value.len()),
        None => kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_never_kept() {
        for name in [
            "Authorization",
            "cookie",
            "X-Api-Key",
            "GitHub-Token",
            "x_api_key",
            "X-Upstream-Auth",
        ] {
            assert!(is_credential(name), "{name}");
            assert_eq!(recorded(name, "Bearer s3cr3t"), "[REDACTED]");
        }
        assert_eq!(recorded("Mcp-Method", "tools/call"), "tools/call");
        // A long value is cut, and says how long it was.
        let long = "é".repeat(KEPT_VALUE * 4);
        let kept = recorded("X-Trace", &long);
        assert_eq!(kept.chars().filter(|c| *c == 'é').count(), KEPT_VALUE);
        assert!(
            kept.ends_with(&format!("… ({} bytes)", long.len())),
            "{kept}"
        );
        assert_eq!(
            recorded("X-Trace", &"a".repeat(KEPT_VALUE)),
            "a".repeat(KEPT_VALUE)
        );
        assert!(!is_credential("Mcp-Session-Id"));
    }
}
