//! The error taxonomy: the seven kinds a failed call is reported as, the typed failures that
//! map onto them, and each kind's default hint for a model.
//!
//! Classification goes by the failure's type, never by parsing its message. Each failure type
//! has exactly one kind; the one place two readings compete — a tool that finds its arguments
//! malformed is also looking at "an invalid value" — is settled in [`Failure::kind`]: a
//! schema problem ([`ToolError::InvalidArguments`]) is `bad_args`, checked before the
//! permanent value errors.

use std::fmt;

use crate::error::Error;

/// How a failed call is classified in its envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The call exceeded its deadline.
    Timeout,
    /// A temporary failure: busy or locked store, dropped connection, rate limit, outage.
    Transient,
    /// The approver said no (or failed, or could not ask).
    Denied,
    /// The arguments were not JSON or did not match the tool's schema.
    BadArgs,
    /// The same call will fail again: unknown id, failed lookup, invalid value.
    Permanent,
    /// The tool is not in the registry.
    UnknownTool,
    /// Anything else.
    Unknown,
}

impl ErrorKind {
    /// Every kind, in classification order.
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::Timeout,
        ErrorKind::Transient,
        ErrorKind::Denied,
        ErrorKind::BadArgs,
        ErrorKind::Permanent,
        ErrorKind::UnknownTool,
        ErrorKind::Unknown,
    ];

    /// The name in envelopes and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::Transient => "transient",
            ErrorKind::Denied => "denied",
            ErrorKind::BadArgs => "bad_args",
            ErrorKind::Permanent => "permanent",
            ErrorKind::UnknownTool => "unknown_tool",
            ErrorKind::Unknown => "unknown",
        }
    }

    /// Whether trying again can help: true exactly for `timeout` and `transient`.
    pub fn retryable(self) -> bool {
        matches!(self, ErrorKind::Timeout | ErrorKind::Transient)
    }

    /// The default hint: what a model should do next.
    pub fn hint(self) -> &'static str {
        match self {
            ErrorKind::Timeout => {
                "The tool ran out of time. Try once more with a narrower request (one id, one \
                 section); if that also times out, carry on without this result and say so. \
                 A write may still have happened: check before repeating it."
            }
            ErrorKind::Transient => {
                "A temporary failure (busy, locked or unreachable). One later retry may work; \
                 if it fails again, carry on without this result and say it is missing."
            }
            ErrorKind::Denied => {
                "This action was not approved. Do not retry it and do not look for another way \
                 to get the same effect; tell the user what you wanted to do and why."
            }
            ErrorKind::BadArgs => {
                "The arguments do not fit the tool's schema. Fix them as the message says and \
                 call again; do not repeat the same arguments."
            }
            ErrorKind::Permanent => {
                "This exact call will fail again, so do not repeat it. Change the request (for \
                 example an id the user actually gave) or tell the user it cannot be done."
            }
            ErrorKind::UnknownTool => {
                "There is no such tool. Use only the tools you were given (listed in the \
                 message); do not invent tool names."
            }
            ErrorKind::Unknown => {
                "Something unexpected went wrong. Do not retry; carry on without this result \
                 and tell the user it is missing."
            }
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a tool body can fail with. A tool may attach its own hint, which replaces the kind's
/// default in the envelope.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The backing store is busy or locked, or the connection dropped (transient).
    #[error("{message}")]
    Busy {
        /// What happened.
        message: String,
    },
    /// The arguments do not fit the schema (bad_args).
    #[error("{message}")]
    InvalidArguments {
        /// What is wrong, naming the argument.
        message: String,
    },
    /// The request names something that does not exist (permanent).
    #[error("{message}")]
    NotFound {
        /// What was not found.
        message: String,
        /// A tool-specific hint.
        hint: Option<String>,
    },
    /// A well-formed value the tool refuses (permanent).
    #[error("{message}")]
    InvalidValue {
        /// Why the value is refused.
        message: String,
        /// A tool-specific hint.
        hint: Option<String>,
    },
    /// The tool's own source gave no answer in time (an MCP server past the call's
    /// deadline): timeout.
    #[error("{message}")]
    NoAnswer {
        /// What was waited for, and how long.
        message: String,
    },
    /// Anything else the tool ran into (unknown).
    #[error("{message}")]
    Other {
        /// What happened.
        message: String,
    },
}

/// Every way a call can fail, wherever the failure came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The deadline passed before the call was answered.
    DeadlineExceeded {
        /// The deadline, in virtual seconds after the first attempt began.
        after_seconds: f64,
    },
    /// The engine failed the call (an injected fault, the budget, ...).
    Engine(Error),
    /// The tool's body failed.
    Tool(ToolError),
    /// The approver did not say yes.
    Denied {
        /// Why (said no, failed, no terminal).
        reason: String,
    },
    /// The arguments did not parse or did not fit the schema.
    BadArguments {
        /// What is wrong.
        reason: String,
    },
    /// The tool is not in the registry.
    UnknownTool {
        /// The name that was asked for.
        name: String,
        /// The registry's tool names.
        available: Vec<String>,
    },
    /// The executor itself ran into something unexpected (a panicking tool, ...).
    Internal {
        /// What happened.
        message: String,
    },
}

impl Failure {
    /// The failure's kind (first match wins, see the module docs).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Failure::DeadlineExceeded { .. } => ErrorKind::Timeout,
            Failure::Engine(Error::Timeout(_)) | Failure::Tool(ToolError::NoAnswer { .. }) => {
                ErrorKind::Timeout
            }
            Failure::Engine(
                Error::RateLimited { .. } | Error::Unavailable(_) | Error::ResponseLost(_),
            ) => ErrorKind::Transient,
            Failure::Tool(ToolError::Busy { .. }) => ErrorKind::Transient,
            Failure::Denied { .. } => ErrorKind::Denied,
            Failure::BadArguments { .. } | Failure::Tool(ToolError::InvalidArguments { .. }) => {
                ErrorKind::BadArgs
            }
            Failure::Tool(ToolError::NotFound { .. } | ToolError::InvalidValue { .. }) => {
                ErrorKind::Permanent
            }
            Failure::Engine(Error::BudgetExceeded(_)) => ErrorKind::Permanent,
            Failure::UnknownTool { .. } => ErrorKind::UnknownTool,
            Failure::Engine(_)
            | Failure::Tool(ToolError::Other { .. })
            | Failure::Internal { .. } => ErrorKind::Unknown,
        }
    }

    /// The message for the envelope (before the 300-character cut).
    pub fn message(&self) -> String {
        match self {
            Failure::DeadlineExceeded { after_seconds } => format!(
                "No answer within the {}s deadline; the work was not cancelled and may still \
                 complete",
                crate::error::format_g(*after_seconds)
            ),
            Failure::Engine(Error::Unavailable(m)) => {
                format!("The store is locked or unavailable: {m}")
            }
            Failure::Engine(Error::ResponseLost(m)) => {
                format!("The connection dropped before the answer arrived: {m}")
            }
            Failure::Engine(e) => e.to_string(),
            Failure::Tool(e) => e.to_string(),
            Failure::Denied { reason } => reason.clone(),
            Failure::BadArguments { reason } => reason.clone(),
            Failure::UnknownTool { name, available } => format!(
                "No tool named {name:?}; available tools: {}",
                available.join(", ")
            ),
            Failure::Internal { message } => message.clone(),
        }
    }

    /// A hint specific to this failure, if the tool gave one.
    pub fn specific_hint(&self) -> Option<&str> {
        match self {
            Failure::Tool(
                ToolError::NotFound { hint, .. } | ToolError::InvalidValue { hint, .. },
            ) => hint.as_deref(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_errors_are_bad_args_not_permanent() {
        let schema = Failure::Tool(ToolError::InvalidArguments {
            message: "issue_id: expected an integer".into(),
        });
        assert_eq!(schema.kind(), ErrorKind::BadArgs);
        let value = Failure::Tool(ToolError::InvalidValue {
            message: "label is empty".into(),
            hint: None,
        });
        assert_eq!(value.kind(), ErrorKind::Permanent);
    }

    #[test]
    fn only_timeout_and_transient_are_retryable() {
        let retryable: Vec<_> = ErrorKind::ALL.iter().filter(|k| k.retryable()).collect();
        assert_eq!(retryable, [&ErrorKind::Timeout, &ErrorKind::Transient]);
        assert!(ErrorKind::ALL.iter().all(|k| !k.hint().is_empty()));
    }
}
