//! Errors as types. The engine's failures mirror the reference's exception classes so that
//! recorded error records (`{"type", "known"}`) and command-line messages match it, while
//! carrying more context (a JSON path, a detail) for people.

use std::fmt;

/// The reference's `ConfigurationError`: `message` is its exact text (what verdicts compare);
/// `path` and `detail` say where and why, for people.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    /// The reference's message, e.g. `Parent must be an earlier call`.
    pub message: &'static str,
    /// Where in the document, e.g. `calls[7].parent_id`.
    pub path: Option<String>,
    /// Why, in more words than the reference gives.
    pub detail: Option<String>,
}

impl ConfigError {
    /// An error with the reference's message only.
    pub fn new(message: &'static str) -> Self {
        ConfigError {
            message,
            path: None,
            detail: None,
        }
    }

    /// Adds a JSON path (kept if one is already set: the innermost path wins).
    pub fn at(mut self, path: impl Into<String>) -> Self {
        if self.path.is_none() {
            self.path = Some(path.into());
        }
        self
    }

    /// Prefixes the path with an outer location (`calls[3]` + `.parent_id`).
    pub fn within(mut self, outer: &str) -> Self {
        self.path = Some(match self.path.take() {
            Some(inner) if inner.starts_with('[') => format!("{outer}{inner}"),
            Some(inner) => format!("{outer}.{inner}"),
            None => outer.to_owned(),
        });
        self
    }

    /// Adds a human explanation.
    pub fn because(mut self, detail: impl Into<String>) -> Self {
        if self.detail.is_none() {
            self.detail = Some(detail.into());
        }
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message)?;
        match (&self.path, &self.detail) {
            (Some(p), Some(d)) => write!(f, " (at {p}: {d})"),
            (Some(p), None) => write!(f, " (at {p})"),
            (None, Some(d)) => write!(f, " ({d})"),
            (None, None) => Ok(()),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Everything a wrapped tool call, the engine or a replay can fail with. A tool's closure
/// returns this type too, so a nested failure can be passed up with `?` and is recorded with
/// the right `type` and `known` flag.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Error {
    /// Invalid configuration or input (`ConfigurationError`).
    #[error("{0}")]
    Config(ConfigError),
    /// The call budget or effect trace limit is exhausted (`BudgetExceeded`).
    #[error("{0}")]
    BudgetExceeded(String),
    /// A timeout (`ToolTimeout`, portable).
    #[error("{0}")]
    Timeout(String),
    /// Rate limited (`RateLimited`, portable), with the advertised wait in seconds.
    #[error("Tool rate limited; retry after {}s", format_g(*retry_after))]
    RateLimited {
        /// Seconds to wait before retrying.
        retry_after: f64,
    },
    /// The tool completed but its acknowledgement was lost (`ResponseLost`, portable).
    #[error("{0}")]
    ResponseLost(String),
    /// The service is unavailable (`ToolUnavailable`, portable).
    #[error("{0}")]
    Unavailable(String),
    /// A replayed call whose recorded error was not portable (`RecordedToolError`).
    #[error("Recorded tool raised {original_type} (message omitted)")]
    RecordedTool {
        /// The recorded exception type.
        original_type: String,
    },
    /// A replay diverged from its cassette (`ReplayMismatch`).
    #[error("{0}")]
    ReplayMismatch(String),
    /// Any other failure raised by a tool, recorded with `known: false`.
    #[error("{type_name}: {message}")]
    Raised {
        /// The exception type recorded in the trace (e.g. `ValueError`).
        type_name: String,
        /// The message (never recorded in a trace).
        message: String,
    },
    /// The call was cancelled (recorded with status `cancelled`).
    #[error("{type_name}: cancelled")]
    Cancelled {
        /// The cancellation type recorded in the trace (e.g. `CancelledError`).
        type_name: String,
    },
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A `ConfigurationError` with the reference's message.
    pub fn config(message: &'static str) -> Self {
        Error::Config(ConfigError::new(message))
    }

    /// A tool failure of type `type_name` (recorded as `known: false`).
    pub fn raised(type_name: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Raised {
            type_name: type_name.into(),
            message: message.into(),
        }
    }

    /// The exception class name the reference records for this error.
    pub fn type_name(&self) -> &str {
        match self {
            Error::Config(_) => "ConfigurationError",
            Error::BudgetExceeded(_) => "BudgetExceeded",
            Error::Timeout(_) => "ToolTimeout",
            Error::RateLimited { .. } => "RateLimited",
            Error::ResponseLost(_) => "ResponseLost",
            Error::Unavailable(_) => "ToolUnavailable",
            Error::RecordedTool { .. } => "RecordedToolError",
            Error::ReplayMismatch(_) => "ReplayMismatch",
            Error::Raised { type_name, .. } | Error::Cancelled { type_name } => type_name,
        }
    }

    /// Whether this is one of the four portable tool errors (`known: true`).
    pub fn is_known(&self) -> bool {
        matches!(
            self,
            Error::Timeout(_)
                | Error::RateLimited { .. }
                | Error::ResponseLost(_)
                | Error::Unavailable(_)
        )
    }

    /// Whether the call ends `cancelled` rather than `error`.
    pub fn is_cancellation(&self) -> bool {
        matches!(self, Error::Cancelled { .. })
    }

    /// The reference's one-line form, `ClassName: message`.
    pub fn reference_line(&self) -> String {
        match self {
            Error::Config(c) => format!("ConfigurationError: {}", c.message),
            other => format!("{}: {}", other.type_name(), other),
        }
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Error::Config(e)
    }
}

/// Python's `format(x, 'g')`: 6 significant digits, trailing zeros dropped, exponent form
/// outside 1e-4 ≤ |x| < 1e6.
pub fn format_g(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    if !x.is_finite() {
        return crate::json::float::py_repr(x);
    }
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        let decimals = (5 - exp).max(0) as usize;
        let fixed = format!("{x:.decimals$}");
        trim_zeros(&fixed)
    } else {
        let m = trim_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.unsigned_abs())
    }
}

fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_format_like_python() {
        assert_eq!(format_g(0.6), "0.6");
        assert_eq!(format_g(1234567.0), "1.23457e+06");
        assert_eq!(format_g(1e-7), "1e-07");
        assert_eq!(format_g(1.0), "1");
        assert_eq!(format_g(100000.0), "100000");
    }

    #[test]
    fn paths_compose_outward() {
        let e = ConfigError::new("x").at("parent_id").within("calls[7]");
        assert_eq!(e.path.as_deref(), Some("calls[7].parent_id"));
        assert_eq!(e.to_string(), "x (at calls[7].parent_id)");
    }
}
