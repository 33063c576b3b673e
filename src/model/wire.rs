//! The two wire formats a model speaks, and nothing else: a neutral [`Request`] turned into
//! the body of `POST {base}/responses` (OpenAI's Responses API) or `POST
//! {base}/chat/completions` (Chat Completions, what llama.cpp, vLLM, Ollama and LiteLLM
//! speak), and each API's answer turned back into neutral [`Item`]s and [`Usage`]. No I/O
//! here: the client sends the bytes, the loop decides what they mean.
//!
//! Reading an answer is lenient where servers differ and strict where the loop would go wrong:
//! arguments given as an object instead of JSON text are taken as their JSON text, a missing
//! `call_id` gets one from the call's place in the answer, parts of an answer the loop has no
//! use for (reasoning items, refusals) are skipped; an answer without its `output` (or
//! `choices`) is an error naming what is missing.

use crate::executor::FunctionCall;
use crate::json::{Object, Value, compact};
use crate::obj;

/// Which API the model is asked through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `POST {base}/responses`.
    Responses,
    /// `POST {base}/chat/completions`.
    Chat,
}

impl Api {
    /// The path after the base URL.
    pub fn path(self) -> &'static str {
        match self {
            Api::Responses => "/responses",
            Api::Chat => "/chat/completions",
        }
    }

    /// The request body's list that holds the conversation: `input` or `messages`.
    pub fn history_key(self) -> &'static str {
        match self {
            Api::Responses => "input",
            Api::Chat => "messages",
        }
    }

    /// `responses` or `chat`, as the command line names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Responses => "responses",
            Api::Chat => "chat",
        }
    }
}

/// One item of a conversation, in neither API's shape.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// What the person asked.
    User(String),
    /// Text the model wrote.
    Text(String),
    /// A function call the model made (kept in the history, as both APIs require).
    Call(FunctionCall),
    /// An item of a Responses answer the loop has no use for but the API wants back in the
    /// history (a reasoning model's `reasoning` item): sent back as it came. Chat
    /// Completions has none.
    Kept(Value),
    /// A call's output, fed back to the model.
    Output {
        /// The call it answers.
        call_id: String,
        /// The envelope's JSON text.
        output: String,
    },
}

/// Tokens one answer used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt (input) tokens.
    pub input: u64,
    /// Completion (output) tokens.
    pub output: u64,
}

/// What one round asks of the model (borrowed: the loop's history is not copied per round).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Request<'a> {
    /// The model's name.
    pub model: &'a str,
    /// The system instructions.
    pub instructions: &'a str,
    /// The conversation so far.
    pub input: &'a [Item],
    /// Function-tool objects (Responses' flat shape: `type`, `name`, `description`,
    /// `parameters`, `strict`), as [`crate::executor::Registry::function_tools`] gives them.
    pub tools: &'a [Value],
    /// Whether the model may call several tools in one answer.
    pub parallel_tool_calls: bool,
}

/// The model's answer, in neither API's shape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    /// Its text and calls, in the order it gave them.
    pub items: Vec<Item>,
    /// Tokens it used (zero when the server did not say).
    pub usage: Usage,
}

impl Reply {
    /// The function calls, in order.
    pub fn calls(&self) -> Vec<FunctionCall> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Call(c) => Some(c.clone()),
                _ => None,
            })
            .collect()
    }

    /// All its text, joined by newlines (`None` when it wrote none).
    pub fn text(&self) -> Option<String> {
        let parts: Vec<&str> = self
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    }
}

/// An answer that cannot be read as the API's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the answer is not a {api} answer: {reason}")]
pub struct WireError {
    /// `responses` or `chat`.
    pub api: &'static str,
    /// What is wrong, naming the field.
    pub reason: String,
}

/// The request body for `api`.
pub fn request_body(api: Api, request: &Request) -> Value {
    match api {
        Api::Responses => responses_body(request),
        Api::Chat => chat_body(request),
    }
}

/// Reads an answer of `api`.
pub fn read_reply(api: Api, body: &Value) -> Result<Reply, WireError> {
    match api {
        Api::Responses => read_responses(body),
        Api::Chat => read_chat(body),
    }
}

fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_object().and_then(|o| o.get(key))
}

fn get_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    get(v, key).and_then(Value::as_str)
}

fn count(v: Option<&Value>, key: &str) -> u64 {
    v.and_then(|u| get(u, key))
        .and_then(Value::as_i64)
        .map_or(0, |n| n.max(0) as u64)
}

/// Arguments as JSON text: a string as it is, anything else (an object some servers send)
/// as its compact JSON.
fn arguments_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::Str(t)) => t.to_lossy(),
        Some(Value::Null) | None => String::new(),
        Some(other) => compact(other),
    }
}

fn call_id(given: Option<&str>, round_place: usize) -> String {
    match given {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => format!("call_{}", round_place + 1),
    }
}

fn with_tools(mut body: Object, tools: Value, parallel: bool, any: bool) -> Value {
    if any {
        body.push("tools", tools);
        body.push("parallel_tool_calls", parallel);
    }
    Value::Object(body)
}

fn responses_body(r: &Request) -> Value {
    let input: Vec<Value> = r
        .input
        .iter()
        .map(|item| match item {
            Item::User(text) => obj! {"role" => "user", "content" => text.as_str()},
            Item::Text(text) => obj! {"role" => "assistant", "content" => text.as_str()},
            Item::Call(c) => c.to_value(),
            Item::Kept(v) => v.clone(),
            Item::Output { call_id, output } => obj! {
                "type" => "function_call_output",
                "call_id" => call_id.as_str(),
                "output" => output.as_str(),
            },
        })
        .collect();
    let mut body = Object::new();
    body.push("model", r.model);
    body.push("instructions", r.instructions);
    body.push("input", Value::Array(input));
    with_tools(
        body,
        Value::Array(r.tools.to_vec()),
        r.parallel_tool_calls,
        !r.tools.is_empty(),
    )
}

fn read_responses(body: &Value) -> Result<Reply, WireError> {
    let bad = |reason: String| WireError {
        api: "responses",
        reason,
    };
    let Some(output) = get(body, "output").and_then(Value::as_array) else {
        return Err(bad(match get(body, "error") {
            Some(e) if !e.is_null() => format!("no \"output\"; its error: {}", compact(e)),
            _ => "no \"output\" list".into(),
        }));
    };
    let mut items = Vec::new();
    let mut calls = 0;
    for (i, item) in output.iter().enumerate() {
        match get_str(item, "type") {
            Some("function_call") => {
                let name = get_str(item, "name")
                    .ok_or_else(|| bad(format!("output[{i}] (a function_call) has no name")))?;
                items.push(Item::Call(FunctionCall {
                    name: name.to_owned(),
                    arguments: arguments_text(get(item, "arguments")),
                    call_id: call_id(get_str(item, "call_id"), calls),
                }));
                calls += 1;
            }
            Some("message") => {
                let parts = get(item, "content").and_then(Value::as_array);
                let text: Vec<String> = parts
                    .into_iter()
                    .flatten()
                    .filter(|p| get_str(p, "type") == Some("output_text"))
                    .filter_map(|p| get_str(p, "text").map(str::to_owned))
                    .collect();
                if !text.is_empty() {
                    items.push(Item::Text(text.concat()));
                }
            }
            Some("reasoning") => items.push(Item::Kept(item.clone())),
            _ => {}
        }
    }
    let usage = get(body, "usage");
    Ok(Reply {
        items,
        usage: Usage {
            input: count(usage, "input_tokens"),
            output: count(usage, "output_tokens"),
        },
    })
}

fn chat_body(r: &Request) -> Value {
    let mut messages = vec![obj! {"role" => "system", "content" => r.instructions}];
    // One assistant message holds one answer's text and calls.
    let mut text: Option<String> = None;
    let mut calls: Vec<Value> = Vec::new();
    let flush = |messages: &mut Vec<Value>, text: &mut Option<String>, calls: &mut Vec<Value>| {
        if text.is_none() && calls.is_empty() {
            return;
        }
        let mut m = Object::new();
        m.push("role", "assistant");
        m.push("content", text.take().map_or(Value::Null, Value::from));
        if !calls.is_empty() {
            m.push("tool_calls", Value::Array(std::mem::take(calls)));
        }
        messages.push(Value::Object(m));
    };
    for item in r.input {
        match item {
            Item::Text(t) => match &mut text {
                Some(so_far) => {
                    so_far.push('\n');
                    so_far.push_str(t);
                }
                None => text = Some(t.clone()),
            },
            Item::Call(c) => calls.push(obj! {
                "id" => c.call_id.as_str(),
                "type" => "function",
                "function" => obj! {"name" => c.name.as_str(), "arguments" => c.arguments.as_str()},
            }),
            Item::User(q) => {
                flush(&mut messages, &mut text, &mut calls);
                messages.push(obj! {"role" => "user", "content" => q.as_str()});
            }
            Item::Kept(_) => {}
            Item::Output { call_id, output } => {
                flush(&mut messages, &mut text, &mut calls);
                messages.push(obj! {
                    "role" => "tool",
                    "tool_call_id" => call_id.as_str(),
                    "content" => output.as_str(),
                });
            }
        }
    }
    flush(&mut messages, &mut text, &mut calls);
    let tools: Vec<Value> = r.tools.iter().map(chat_tool).collect();
    let mut body = Object::new();
    body.push("model", r.model);
    body.push("messages", Value::Array(messages));
    with_tools(
        body,
        Value::Array(tools),
        r.parallel_tool_calls,
        !r.tools.is_empty(),
    )
}

/// Responses' flat function tool in Chat Completions' nested shape.
fn chat_tool(tool: &Value) -> Value {
    let mut function = Object::new();
    for key in ["name", "description", "parameters", "strict"] {
        if let Some(v) = get(tool, key) {
            function.push(key, v.clone());
        }
    }
    obj! {"type" => "function", "function" => function}
}

fn read_chat(body: &Value) -> Result<Reply, WireError> {
    let bad = |reason: String| WireError {
        api: "chat",
        reason,
    };
    let choice = get(body, "choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| {
            bad(match get(body, "error") {
                Some(e) if !e.is_null() => format!("no \"choices\"; its error: {}", compact(e)),
                _ => "no \"choices\" list with a first choice".into(),
            })
        })?;
    let message =
        get(choice, "message").ok_or_else(|| bad("choices[0] has no \"message\"".into()))?;
    let mut items = Vec::new();
    // The text: a string, or (some servers) a list of parts with their text.
    let text = match get(message, "content") {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| get_str(p, "text"))
            .collect::<Vec<_>>()
            .concat(),
        Some(Value::Str(t)) => t.to_lossy(),
        _ => String::new(),
    };
    if !text.is_empty() {
        items.push(Item::Text(text));
    }
    let calls = get(message, "tool_calls").and_then(Value::as_array);
    for (i, call) in calls.into_iter().flatten().enumerate() {
        let function = get(call, "function");
        let name = function.and_then(|f| get_str(f, "name")).ok_or_else(|| {
            bad(format!(
                "choices[0].message.tool_calls[{i}] has no function.name"
            ))
        })?;
        items.push(Item::Call(FunctionCall {
            name: name.to_owned(),
            arguments: arguments_text(function.and_then(|f| get(f, "arguments"))),
            call_id: call_id(get_str(call, "id"), i),
        }));
    }
    let usage = get(body, "usage");
    Ok(Reply {
        items,
        usage: Usage {
            input: count(usage, "prompt_tokens"),
            output: count(usage, "completion_tokens"),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn items() -> Vec<Item> {
        vec![
            Item::User("q?".into()),
            Item::Text("let me look".into()),
            Item::Call(FunctionCall::new("get_issue", r#"{"issue_id":41}"#, "c1")),
            Item::Call(FunctionCall::new("get_issue", r#"{"issue_id":87}"#, "c2")),
            Item::Output {
                call_id: "c1".into(),
                output: r#"{"ok":true}"#.into(),
            },
            Item::Output {
                call_id: "c2".into(),
                output: r#"{"ok":false}"#.into(),
            },
        ]
    }

    fn tools() -> Vec<Value> {
        vec![parse(
                r#"{"type":"function","name":"get_issue","description":"d","parameters":{"type":"object"},"strict":true}"#,
            )
            .expect("tool")]
    }

    fn request<'a>(items: &'a [Item], tools: &'a [Value]) -> Request<'a> {
        Request {
            model: "m",
            instructions: "be good",
            input: items,
            tools,
            parallel_tool_calls: false,
        }
    }

    #[test]
    fn responses_body_keeps_calls_and_outputs_as_items() {
        let (items, tools) = (items(), tools());
        let body = compact(&request_body(Api::Responses, &request(&items, &tools)));
        assert_eq!(
            body,
            r#"{"model":"m","instructions":"be good","input":[{"role":"user","content":"q?"},{"role":"assistant","content":"let me look"},{"type":"function_call","name":"get_issue","arguments":"{\"issue_id\":41}","call_id":"c1"},{"type":"function_call","name":"get_issue","arguments":"{\"issue_id\":87}","call_id":"c2"},{"type":"function_call_output","call_id":"c1","output":"{\"ok\":true}"},{"type":"function_call_output","call_id":"c2","output":"{\"ok\":false}"}],"tools":[{"type":"function","name":"get_issue","description":"d","parameters":{"type":"object"},"strict":true}],"parallel_tool_calls":false}"#
        );
    }

    #[test]
    fn chat_body_groups_one_answer_into_one_assistant_message() {
        let (items, tools) = (items(), tools());
        let body = compact(&request_body(Api::Chat, &request(&items, &tools)));
        assert_eq!(
            body,
            r#"{"model":"m","messages":[{"role":"system","content":"be good"},{"role":"user","content":"q?"},{"role":"assistant","content":"let me look","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_issue","arguments":"{\"issue_id\":41}"}},{"id":"c2","type":"function","function":{"name":"get_issue","arguments":"{\"issue_id\":87}"}}]},{"role":"tool","tool_call_id":"c1","content":"{\"ok\":true}"},{"role":"tool","tool_call_id":"c2","content":"{\"ok\":false}"}],"tools":[{"type":"function","function":{"name":"get_issue","description":"d","parameters":{"type":"object"},"strict":true}}],"parallel_tool_calls":false}"#
        );
    }

    #[test]
    fn no_tools_means_no_tool_fields() {
        let items = items();
        let r = request(&items, &[]);
        for api in [Api::Responses, Api::Chat] {
            let body = request_body(api, &r);
            assert!(get(&body, "tools").is_none() && get(&body, "parallel_tool_calls").is_none());
        }
    }

    #[test]
    fn both_answers_read_the_same() {
        let responses = parse(
            r#"{"id":"r","output":[{"type":"reasoning","summary":[]},
                {"type":"message","role":"assistant","content":[{"type":"output_text","text":"hm"}]},
                {"type":"function_call","id":"fc_1","call_id":"c1","name":"get_issue","arguments":"{\"issue_id\":41}","status":"completed"},
                {"type":"function_call","call_id":"c2","name":"get_doc_section","arguments":{"doc_id":"x","heading":null}}],
                "usage":{"input_tokens":120,"output_tokens":30,"total_tokens":150}}"#,
        )
        .expect("json");
        let chat = parse(
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hm","tool_calls":[
                {"id":"c1","type":"function","function":{"name":"get_issue","arguments":"{\"issue_id\":41}"}},
                {"id":"c2","type":"function","function":{"name":"get_doc_section","arguments":{"doc_id":"x","heading":null}}}]},
                "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":120,"completion_tokens":30}}"#,
        )
        .expect("json");
        let a = read_reply(Api::Responses, &responses).expect("responses");
        let b = read_reply(Api::Chat, &chat).expect("chat");
        // The same calls, text and usage (the reasoning item is Responses' alone).
        assert_eq!(
            (a.calls(), a.text(), a.usage),
            (b.calls(), b.text(), b.usage)
        );
        assert!(matches!(a.items[0], Item::Kept(_)));
        assert_eq!(a.items[1..], b.items[..]);
        assert_eq!(a.text().as_deref(), Some("hm"));
        assert_eq!(
            a.calls()[1],
            FunctionCall::new("get_doc_section", r#"{"doc_id":"x","heading":null}"#, "c2")
        );
        assert_eq!(
            a.usage,
            Usage {
                input: 120,
                output: 30
            }
        );
    }

    #[test]
    fn reasoning_items_go_back_to_responses_only_and_text_parts_are_read() {
        let answer = parse(
            r#"{"output":[{"type":"reasoning","id":"rs_1","summary":[]},
                {"type":"function_call","call_id":"c1","name":"t","arguments":"{}"}]}"#,
        )
        .expect("json");
        let reply = read_reply(Api::Responses, &answer).expect("reply");
        assert_eq!(reply.calls().len(), 1);
        let mut input = vec![Item::User("q".into())];
        input.extend(reply.items);
        let r = Request {
            model: "m",
            instructions: "i",
            input: &input,
            tools: &[],
            parallel_tool_calls: true,
        };
        let sent = compact(&request_body(Api::Responses, &r));
        assert!(
            sent.contains(r#"{"type":"reasoning","id":"rs_1","summary":[]}"#),
            "{sent}"
        );
        let chat = compact(&request_body(Api::Chat, &r));
        assert!(!chat.contains("reasoning"), "{chat}");
        let parts = parse(
            r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}"#,
        )
        .expect("json");
        let reply = read_reply(Api::Chat, &parts).expect("reply");
        assert_eq!(reply.text().as_deref(), Some("ab"));
    }

    #[test]
    fn a_missing_call_id_gets_one_from_its_place() {
        let chat = parse(
            r#"{"choices":[{"message":{"content":null,"tool_calls":[{"type":"function","function":{"name":"t","arguments":"{}"}}]}}]}"#,
        )
        .expect("json");
        let reply = read_reply(Api::Chat, &chat).expect("chat");
        assert_eq!(reply.calls()[0].call_id, "call_1");
        assert_eq!(reply.usage, Usage::default());
    }

    #[test]
    fn answers_without_their_list_are_errors_naming_it() {
        let e = read_reply(
            Api::Responses,
            &parse(r#"{"error":{"message":"x"}}"#).expect("j"),
        )
        .expect_err("no output");
        assert!(e.to_string().contains("no \"output\"; its error"), "{e}");
        let e = read_reply(Api::Chat, &parse(r#"{"choices":[]}"#).expect("j")).expect_err("none");
        assert!(e.to_string().contains("\"choices\""), "{e}");
    }
}
