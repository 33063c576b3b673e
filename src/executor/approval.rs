//! Approvals for side-effecting calls: deny by default, only an explicit yes approves, and a
//! failing (or crashing) approver counts as no. The executor asks one approver at a time, in
//! request order, so two prompts are never open at once.

use crate::json::float::py_repr;
use crate::json::{Object, Value, one_line};
use crate::redact::Redactor;

use super::registry::ToolSpec;

/// A side-effecting call waiting for a yes or no.
#[derive(Clone, Copy, Debug)]
pub struct ApprovalRequest<'a> {
    /// The call's id.
    pub call_id: &'a str,
    /// The tool.
    pub tool: &'a ToolSpec,
    /// Its checked arguments.
    pub arguments: &'a Object,
}

impl ApprovalRequest<'_> {
    /// The call as a person reads it: `add_label(issue_id=92, label='severity:S1')`. Values
    /// are redacted as records are (a `password=` argument shows as `'[REDACTED]'`): the
    /// question is drawn on screen and kept in the run's result.
    pub fn describe(&self) -> String {
        let redacted = Redactor::default().redact(&Value::Object(self.arguments.clone()));
        let args: Vec<String> = redacted
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| format!("{}={}", k.to_lossy(), py_literal(v)))
                    .collect()
            })
            .unwrap_or_default();
        format!("{}({})", self.tool.name, args.join(", "))
    }

    /// The prompt line: `Approve add_label(issue_id=92, label='severity:S1')? [y/N]`.
    pub fn question(&self) -> String {
        format!("Approve {}? [y/N]", self.describe())
    }
}

fn py_literal(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Int(i) => i.to_decimal(),
        Value::Float(f) => py_repr(*f),
        Value::Str(t) => {
            let s = t.to_lossy().replace('\\', "\\\\").replace('\'', "\\'");
            format!("'{s}'")
        }
        other => one_line(other),
    }
}

/// Why an approver could not answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalError {
    /// There is no terminal to ask on.
    #[error("no terminal is attached to ask")]
    NoTerminal,
    /// The approver itself failed.
    #[error("the approver failed: {0}")]
    Failed(String),
}

/// Decides whether a side-effecting call may run. Only `Ok(true)` approves.
pub trait Approver {
    /// Answers one request.
    fn decide(&mut self, request: &ApprovalRequest<'_>) -> Result<bool, ApprovalError>;
}

/// The default approver: no to everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct DenyAll;

impl Approver for DenyAll {
    fn decide(&mut self, _: &ApprovalRequest<'_>) -> Result<bool, ApprovalError> {
        Ok(false)
    }
}

/// Yes to the listed tools, no to everything else.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AllowList {
    /// Tool names that are approved.
    pub tools: Vec<String>,
}

impl Approver for AllowList {
    fn decide(&mut self, request: &ApprovalRequest<'_>) -> Result<bool, ApprovalError> {
        Ok(self.tools.contains(&request.tool.name))
    }
}

/// Where an interactive approver asks its question.
pub trait Prompt {
    /// Shows `question` and returns the person's answer, or `None` when nobody can be asked.
    fn ask(&mut self, question: &str) -> Option<String>;
}

impl<P: Prompt + ?Sized> Prompt for &mut P {
    fn ask(&mut self, question: &str) -> Option<String> {
        (**self).ask(question)
    }
}

/// A prompt with no terminal behind it: nobody can be asked.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTerminal;

impl Prompt for NoTerminal {
    fn ask(&mut self, _: &str) -> Option<String> {
        None
    }
}

/// Asks a person through a [`Prompt`]; `y` or `yes` approves ([`approves`]), anything else (or nobody to
/// ask) denies.
#[derive(Clone, Debug, Default)]
pub struct Interactive<P> {
    /// Where questions go.
    pub prompt: P,
    /// Every question asked, in order.
    pub asked: Vec<String>,
    /// Each question's answer, in the same order: approved or not, `None` when nobody could
    /// be asked (no terminal, its input ended, or no answers left: denied).
    pub answers: Vec<Option<bool>>,
}

impl<P: Prompt> Interactive<P> {
    /// An interactive approver on `prompt`.
    pub fn new(prompt: P) -> Self {
        Interactive {
            prompt,
            asked: Vec::new(),
            answers: Vec::new(),
        }
    }
}

impl<P: Prompt> Approver for Interactive<P> {
    fn decide(&mut self, request: &ApprovalRequest<'_>) -> Result<bool, ApprovalError> {
        let question = request.question();
        self.asked.push(question.clone());
        let answer = self.prompt.ask(&question).map(|a| approves(&a));
        self.answers.push(answer);
        answer.ok_or(ApprovalError::NoTerminal)
    }
}

/// Answers given up front, in the order the questions come (`--answers y,n`); once they run
/// out nobody is there to ask.
#[derive(Clone, Debug, Default)]
pub struct Scripted {
    answers: std::collections::VecDeque<String>,
    asked: usize,
}

impl Scripted {
    /// Answers in order.
    pub fn new(answers: impl IntoIterator<Item = String>) -> Scripted {
        Scripted {
            answers: answers.into_iter().collect(),
            asked: 0,
        }
    }

    /// How many questions were asked.
    pub fn asked(&self) -> usize {
        self.asked
    }

    /// The answers no question used.
    pub fn left(&self) -> usize {
        self.answers.len()
    }
}

impl Prompt for Scripted {
    fn ask(&mut self, _: &str) -> Option<String> {
        self.asked += 1;
        self.answers.pop_front()
    }
}

/// Whether a typed answer approves: `y` or `yes` in any case, nothing else.
pub fn approves(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::registry::{Param, ParamType};

    #[test]
    fn question_reads_like_a_call() {
        let tool = ToolSpec::new("add_label", "Adds a label.")
            .param(Param::new("issue_id", ParamType::Integer, "Issue."))
            .param(Param::new("label", ParamType::String, "Label."));
        let args = tool
            .check_arguments(r#"{"issue_id": 92, "label": "severity:S1"}"#)
            .expect("valid");
        let req = ApprovalRequest {
            call_id: "c1",
            tool: &tool,
            arguments: &args,
        };
        assert_eq!(
            req.question(),
            "Approve add_label(issue_id=92, label='severity:S1')? [y/N]"
        );
        let mut headless = Interactive::new(NoTerminal);
        assert_eq!(headless.decide(&req), Err(ApprovalError::NoTerminal));
        assert_eq!(DenyAll.decide(&req), Ok(false));
        let mut allow = AllowList {
            tools: vec!["add_label".into()],
        };
        assert_eq!(allow.decide(&req), Ok(true));
    }
}
