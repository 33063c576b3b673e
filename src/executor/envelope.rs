//! Envelopes: what the model reads back for each call. `{"ok": true, "data": ...}` on success;
//! `{"ok": false, "error": {"kind", "message", "retryable", "hint"}}` on failure, with the
//! message cut to 300 characters. Wrapped as a Responses API `function_call_output` item.

use crate::json::{Value, compact};
use crate::obj;
use crate::redact::Redactor;

use super::taxonomy::{ErrorKind, Failure};

/// Longest envelope message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 300;

/// A call's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Envelope {
    /// The tool's result.
    Ok(Value),
    /// A classified failure.
    Err {
        /// The taxonomy kind.
        kind: ErrorKind,
        /// What happened (at most 300 characters).
        message: String,
        /// What to do next.
        hint: String,
    },
}

impl Envelope {
    /// The envelope for a failure: its kind, cut message and hint (the tool's own, else the
    /// kind's default).
    pub fn failure(failure: &Failure) -> Envelope {
        let kind = failure.kind();
        Envelope::Err {
            kind,
            message: cut(&failure.message()),
            hint: failure
                .specific_hint()
                .map_or_else(|| kind.hint().to_owned(), str::to_owned),
        }
    }

    /// `"ok"` or the error kind.
    pub fn kind_str(&self) -> &'static str {
        match self {
            Envelope::Ok(_) => "ok",
            Envelope::Err { kind, .. } => kind.as_str(),
        }
    }

    /// The error kind, if failed.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        match self {
            Envelope::Ok(_) => None,
            Envelope::Err { kind, .. } => Some(*kind),
        }
    }

    /// The envelope object.
    pub fn to_value(&self) -> Value {
        match self {
            Envelope::Ok(data) => obj! {"ok" => true, "data" => data.clone()},
            Envelope::Err {
                kind,
                message,
                hint,
            } => obj! {
                "ok" => false,
                "error" => obj! {
                    "kind" => kind.as_str(),
                    "message" => message.as_str(),
                    "retryable" => kind.retryable(),
                    "hint" => hint.as_str(),
                },
            },
        }
    }

    /// The envelope's JSON text (compact), as the `output` of a function call output.
    pub fn to_text(&self) -> String {
        compact(&self.to_value())
    }

    /// The `{"type": "function_call_output", "call_id", "output"}` item the model gets.
    pub fn output_item(&self, call_id: &str) -> Value {
        obj! {
            "type" => "function_call_output",
            "call_id" => call_id,
            "output" => self.to_text(),
        }
    }

    /// The same item as a record keeps it: the envelope redacted before it is turned into
    /// text (inside the text, keys are out of the redactor's sight).
    pub fn recorded_item(&self, call_id: &str, redactor: &Redactor) -> Value {
        obj! {
            "type" => "function_call_output",
            "call_id" => call_id,
            "output" => compact(&redactor.redact(&self.to_value())),
        }
    }
}

/// Cuts a message to [`MAX_MESSAGE_CHARS`] characters, ending a cut one with `…`.
pub fn cut(message: &str) -> String {
    if message.chars().count() <= MAX_MESSAGE_CHARS {
        return message.to_owned();
    }
    let mut out: String = message.chars().take(MAX_MESSAGE_CHARS - 1).collect();
    out.push('\u{2026}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_to_300_characters() {
        let f = Failure::Internal {
            message: "é".repeat(1000),
        };
        let Envelope::Err { message, .. } = Envelope::failure(&f) else {
            panic!("an error envelope");
        };
        assert_eq!(message.chars().count(), MAX_MESSAGE_CHARS);
        assert!(message.ends_with('\u{2026}'));
    }

    #[test]
    fn error_envelope_layout() {
        let e = Envelope::failure(&Failure::Denied {
            reason: "no".into(),
        });
        let text = e.to_text();
        assert!(text.starts_with(
            r#"{"ok":false,"error":{"kind":"denied","message":"no","retryable":false,"hint":"#
        ));
    }
}
