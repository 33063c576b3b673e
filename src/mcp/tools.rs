//! An MCP server's tools as the live executor's tools ([`LiveTools`]): the registry comes
//! from `tools/list`, each call is a `tools/call` on the one session (calls of a batch go out
//! in parallel, each from its own thread), and what comes back is classified.
//!
//! **The registry.** A tool's `inputSchema` checks the arguments before the call goes out
//! (a mistake is `bad_args`, [`crate::executor::schema`]); a tool not annotated
//! `readOnlyHint: true` has a side effect, so it needs approval; a read-only tool, or one
//! annotated `idempotentHint: true`, may be retried; per-tool timeouts come from the
//! scenario.
//!
//! **Classification.** A JSON-RPC error goes by its code: invalid params (-32602) is
//! `bad_args`; a request the server timed out or dropped is `transient`; anything else is
//! `unknown`. A result with `isError: true` carries no error type, only text: it is
//! `permanent` (the tool refused this call), unless the text names a temporary condition
//! (locked, busy, rate limited, unavailable, try again), which is `transient`, or says the
//! arguments failed validation (as the Python SDK's servers word it), which is `bad_args`.
//! Words match whole (`blocked` is not `locked`). The session ending before the answer is a
//! dropped connection: `transient`.
//!
//! **Deadlines.** When a call's deadline passes, the server is sent `notifications/cancelled`
//! for it; the call is answered `timeout` by the executor. The thread goes on waiting, at most
//! [`McpTools::late_wait`], for an answer the server sends anyway: a late success is late work
//! on record, with its commits.
//!
//! **Commits.** What a successful call committed comes from [`super::evidence`]: the server's
//! own `_meta` list first; else a tool with a side effect (not annotated read-only, so the
//! approver was asked) committed its (redacted) arguments. Unlike the proxy, which only warns
//! about commits resting on annotations alone, the executor records them: its registry
//! already treats such a tool as changing the world. A repeat of an `idempotentHint` tool
//! with the same arguments is a replay, not a new commit.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::client::{ClientError, McpClient, Reply, ServerInfo};
use super::evidence::{Ledger, ToolIndex};
use crate::executor::live::{Commit, LiveTools};
use crate::executor::{Registry, ToolError, ToolSpec};
use crate::json::{Object, Value};
use crate::obj;

/// How long starting the server and listing its tools may take.
pub const START_LIMIT: Duration = Duration::from_secs(30);

/// Phrases in an `isError` text that say the arguments failed validation.
const INVALID: [&str; 4] = [
    "validation error",
    "invalid arguments",
    "invalid argument",
    "input validation",
];

/// Words in an `isError` text that name a temporary condition.
const TEMPORARY: [&str; 9] = [
    "locked",
    "busy",
    "rate limit",
    "too many requests",
    "temporarily",
    "unavailable",
    "try again",
    "timed out",
    "connection reset",
];

/// A server's tools, run on its session.
#[derive(Debug)]
pub struct McpTools {
    client: McpClient,
    registry: Registry,
    index: ToolIndex,
    ledger: Mutex<Ledger>,
    calls: AtomicU64,
    late_wait: Duration,
}

/// A tool of a `tools/list` result as a spec; `None` for an entry without a name.
pub fn spec_of(tool: &Value, timeouts: &[(String, f64)]) -> Option<ToolSpec> {
    let o = tool.as_object()?;
    let name = o.get("name")?.as_str().filter(|n| !n.is_empty())?;
    let description = o.get("description").and_then(Value::as_str).unwrap_or("");
    let hint = |key: &str| {
        o.get("annotations")
            .and_then(Value::as_object)
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
    };
    let read_only = hint("readOnlyHint") == Some(true);
    let idempotent = read_only || hint("idempotentHint") == Some(true);
    let schema = o
        .get("inputSchema")
        .cloned()
        .unwrap_or_else(|| obj! {"type" => "object"});
    let mut spec = ToolSpec::new(name, description)
        .input_schema(schema)
        .side_effect(!read_only)
        .idempotent(idempotent);
    if let Some((_, t)) = timeouts.iter().find(|(n, _)| n == name) {
        spec = spec.timeout(*t);
    }
    Some(spec)
}

impl McpTools {
    /// Starts `command` in `dir` and lists its tools (watched by a watchdog from our binary
    /// when `watchdog` is given).
    pub fn connect(
        command: &[OsString],
        dir: Option<&Path>,
        watchdog: Option<&PathBuf>,
        timeouts: &[(String, f64)],
    ) -> Result<McpTools, ClientError> {
        let client = McpClient::start(command, dir, watchdog, START_LIMIT)?;
        let listed = client.list_tools(START_LIMIT)?;
        let mut index = ToolIndex::default();
        index.learn(&obj! {"tools" => Value::Array(listed.clone())});
        let registry = Registry::new(listed.iter().filter_map(|t| spec_of(t, timeouts)));
        Ok(McpTools {
            client,
            registry,
            index,
            ledger: Mutex::new(Ledger::default()),
            calls: AtomicU64::new(0),
            late_wait: Duration::from_secs(5),
        })
    }

    /// How long a call's thread waits, after its deadline cancelled it, for an answer the
    /// server sends anyway (default 5 s).
    pub fn late_wait(mut self, wait: Duration) -> McpTools {
        self.late_wait = wait;
        self
    }

    /// What the server said about itself.
    pub fn server(&self) -> &ServerInfo {
        self.client.info()
    }

    /// The session (to stop it, or ask it something else).
    pub fn client(&self) -> &McpClient {
        &self.client
    }

    fn judge(&self, tool: &str, args: &Object, reply: Reply, commit: &mut Commit<'_>) -> Outcome {
        match reply {
            Reply::Result(result) => {
                let o = result.as_object();
                if o.and_then(|o| o.get("isError")).and_then(Value::as_bool) == Some(true) {
                    return Err(refusal(&result));
                }
                let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
                let commits = self
                    .ledger
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .commits(
                        None,
                        &self.index,
                        n,
                        tool,
                        &Value::Object(args.clone()),
                        &result,
                    );
                for e in commits.effects.iter().chain(&commits.possible) {
                    if let Err(e) = commit(&e.name, &e.key) {
                        return Err(ToolError::Other {
                            message: e.to_string(),
                        });
                    }
                }
                Ok(data_of(&result))
            }
            Reply::Error { code, message } => Err(rpc_error(code, &message)),
            Reply::Closed => Err(ToolError::Busy {
                message: format!(
                    "the MCP server closed the connection before answering{}",
                    match self.client.stderr_tail().trim() {
                        "" => String::new(),
                        t => format!(": {}", crate::printable::line(t)),
                    }
                ),
            }),
        }
    }
}

type Outcome = Result<Value, ToolError>;

/// What a successful result gives the model: its structured content, else its one text, else
/// its content blocks.
fn data_of(result: &Value) -> Value {
    let o = result.as_object();
    if let Some(s) = o.and_then(|o| o.get("structuredContent")) {
        return s.clone();
    }
    let blocks = o
        .and_then(|o| o.get("content"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match blocks.as_slice() {
        [one] if text_of(one).is_some() => text_of(one).map(Value::from).unwrap_or_default(),
        _ => Value::Array(blocks),
    }
}

fn text_of(block: &Value) -> Option<String> {
    let b = block.as_object()?;
    (b.get("type")?.as_str()? == "text").then_some(())?;
    b.get("text")?.as_str().map(str::to_owned)
}

/// An `isError` result as a failure: permanent, or transient when its text names a
/// temporary condition.
fn refusal(result: &Value) -> ToolError {
    let text = result
        .as_object()
        .and_then(|o| o.get("content"))
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(text_of)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| "the tool reported an error and said nothing more".into());
    let lower = text.to_lowercase();
    if INVALID.iter().any(|w| has_words(&lower, w)) {
        ToolError::InvalidArguments { message: text }
    } else if TEMPORARY.iter().any(|w| has_words(&lower, w)) {
        ToolError::Busy { message: text }
    } else {
        ToolError::InvalidValue {
            message: text,
            hint: None,
        }
    }
}

/// Whether `phrase` occurs in `text` as whole words (not inside a longer word).
fn has_words(text: &str, phrase: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    text.match_indices(phrase).any(|(i, m)| {
        !word(text[..i].chars().next_back()) && !word(text[i + m.len()..].chars().next())
    })
}

/// A JSON-RPC error as a failure, by its code.
fn rpc_error(code: i64, message: &str) -> ToolError {
    let message = format!("{message} (JSON-RPC error {code})");
    match code {
        -32602 => ToolError::InvalidArguments { message },
        // The SDKs' request timeout (-32001) and connection closed (-32000).
        -32001 | -32000 => ToolError::Busy { message },
        _ => ToolError::Other { message },
    }
}

impl LiveTools for McpTools {
    fn registry(&self) -> &Registry {
        &self.registry
    }

    fn run(&self, tool: &str, args: &Object, commit: &mut Commit<'_>) -> Outcome {
        let limit = self
            .registry
            .get(tool)
            .and_then(|t| t.timeout)
            .unwrap_or(5.0);
        self.run_within(tool, args, commit, Duration::from_secs_f64(limit))
    }

    fn run_within(
        &self,
        tool: &str,
        args: &Object,
        commit: &mut Commit<'_>,
        left: Duration,
    ) -> Outcome {
        let pending = self.client.request(
            "tools/call",
            obj! {"name" => tool, "arguments" => Value::Object(args.clone())},
        );
        if let Some(reply) = pending.wait(left) {
            return self.judge(tool, args, reply, commit);
        }
        self.client.cancel(
            pending.id,
            "the call's deadline passed; its answer was given",
        );
        let late = pending.wait(self.late_wait);
        self.client.forget(pending.id);
        match late {
            Some(reply) => self.judge(tool, args, reply, commit),
            None => Err(ToolError::NoAnswer {
                message: format!(
                    "{tool} gave no answer by its deadline, nor {}s after it was cancelled",
                    crate::error::format_g(self.late_wait.as_secs_f64())
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn annotations_decide_side_effect_and_retry() {
        let tools = parse(
            r#"[{"name": "read", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
                {"name": "put", "inputSchema": {"type": "object"}, "annotations": {"idempotentHint": true}},
                {"name": "send", "inputSchema": {"type": "object"}},
                {"description": "no name"}]"#,
        )
        .expect("tools");
        let specs: Vec<ToolSpec> = tools
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|t| spec_of(t, &[("send".into(), 1.5)]))
            .collect();
        let facts: Vec<(&str, bool, bool, Option<f64>)> = specs
            .iter()
            .map(|s| (s.name.as_str(), s.side_effect, s.idempotent, s.timeout))
            .collect();
        assert_eq!(
            facts,
            [
                ("read", false, true, None),
                ("put", true, true, None),
                ("send", true, false, Some(1.5))
            ]
        );
    }

    #[test]
    fn failures_are_classified() {
        use crate::executor::taxonomy::{ErrorKind, Failure};
        let kind = |e: ToolError| Failure::Tool(e).kind();
        let text = |t: &str| crate::mcp::wire::text_result(t, true);
        assert_eq!(
            kind(refusal(&text("database is locked"))),
            ErrorKind::Transient
        );
        assert_eq!(
            kind(refusal(&text("no such table: x"))),
            ErrorKind::Permanent
        );
        assert_eq!(
            kind(refusal(&text("request blocked by policy"))),
            ErrorKind::Permanent
        );
        assert_eq!(
            kind(refusal(&text(
                "1 validation error for add: x field required"
            ))),
            ErrorKind::BadArgs
        );
        assert_eq!(
            kind(refusal(&obj! {"isError" => true})),
            ErrorKind::Permanent
        );
        assert_eq!(kind(rpc_error(-32602, "bad")), ErrorKind::BadArgs);
        assert_eq!(kind(rpc_error(-32001, "timed out")), ErrorKind::Transient);
        assert_eq!(kind(rpc_error(-32603, "boom")), ErrorKind::Unknown);
    }

    #[test]
    fn data_is_the_structured_part_or_the_text() {
        let one = crate::mcp::wire::text_result("hello", false);
        assert_eq!(data_of(&one), Value::from("hello"));
        let structured =
            obj! {"content" => Value::Array(vec![]), "structuredContent" => obj! {"n" => 1}};
        assert_eq!(data_of(&structured), obj! {"n" => 1});
    }
}
