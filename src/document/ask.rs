//! An `ask` record (`ask --record RUN.json`) as the explorer shows it: per round, the model's
//! text and each `function_call` as the model sent it (name, `call_id`, the arguments string
//! exactly as it came, JSON or not), with the output fed back for it; the tokens, the cost at
//! the prices the run was given, and how the run ended. Read from the parsed record alone
//! (each round's answer through [`crate::model::read_reply`], both wire formats), so it
//! costs no second read; the text here is the file's, unescaped: whoever draws it escapes it.

use crate::json::{Value, float::py_fixed};
use crate::model::Api;
use crate::model::wire::read_reply;

/// The key that marks a record (its value is the format version).
pub const MARK: &str = "toolstorm_ask";

/// How a recorded run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AskEnd {
    /// The model gave a final answer.
    Answered,
    /// The loop stopped at `max_rounds` without a final answer.
    Stopped,
    /// The model could not be asked (the error, as recorded).
    Failed(String),
    /// The record is not complete: its run is still going, or was killed.
    Unfinished,
}

impl AskEnd {
    /// For people: `answered`, `stopped at max_rounds`, `ended by an error`, `unfinished`;
    /// `short` says `stopped` for the second.
    pub fn describe(&self, short: bool) -> &'static str {
        match self {
            AskEnd::Answered => "answered",
            AskEnd::Stopped if short => "stopped",
            AskEnd::Stopped => "stopped at max_rounds",
            AskEnd::Failed(_) => "ended by an error",
            AskEnd::Unfinished => "unfinished",
        }
    }
}

/// One `function_call` of a round, and what the model got back for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AskCall {
    /// The tool the model named.
    pub name: String,
    /// Its `call_id` (one the reader made up from its place when the model gave none).
    pub call_id: String,
    /// The arguments as the model sent them (an object some servers send: its JSON text).
    pub arguments: String,
    /// The output fed back to the model for this call (`None`: not in the record yet).
    pub output: Option<String>,
}

/// One round: the model's answer and the batch its calls ran in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AskRound {
    /// 1-based.
    pub number: usize,
    /// The executor batch its calls ran in (`None`: it made none).
    pub batch: Option<usize>,
    /// What the model wrote beside its calls (or as its answer), when it wrote anything.
    pub text: Option<String>,
    /// Its calls, in the order the model gave them (the batch's lanes, in order).
    pub calls: Vec<AskCall>,
    /// Input and output tokens of this round.
    pub tokens: (u64, u64),
    /// Why the answer could not be read, when it could not.
    pub unreadable: Option<String>,
}

/// A record as the explorer shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct AskView {
    /// The model's name.
    pub model: String,
    /// The wire format it spoke.
    pub api: Api,
    /// The round limit.
    pub max_rounds: usize,
    /// The question.
    pub question: String,
    /// Every recorded round, in order.
    pub rounds: Vec<AskRound>,
    /// USD per million input and output tokens, when the run was given prices.
    pub prices: Option<(f64, f64)>,
    /// The final answer.
    pub answer: Option<String>,
    /// How it ended.
    pub end: AskEnd,
}

fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_object().and_then(|o| o.get(key))
}

fn count(v: Option<&Value>, key: &str) -> u64 {
    v.and_then(|t| get(t, key))
        .and_then(Value::as_i64)
        .map_or(0, |n| n.max(0) as u64)
}

fn text(v: &Value, key: &str) -> Option<String> {
    get(v, key).and_then(Value::as_str).map(str::to_owned)
}

/// The outputs of batch `number` in the record's `batches`, in lane order: (`call_id`,
/// output).
fn outputs(record: &Value, number: usize) -> Vec<(String, String)> {
    let batch = get(record, "batches")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|b| get(b, "batch").and_then(Value::as_i64) == i64::try_from(number).ok());
    batch
        .and_then(|b| get(b, "outputs"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| Some((text(o, "call_id")?, text(o, "output")?)))
        .collect()
}

fn round(record: &Value, api: Api, r: &Value, place: usize) -> AskRound {
    let tokens = get(r, "tokens");
    let batch = get(r, "batch")
        .and_then(Value::as_i64)
        .and_then(|n| usize::try_from(n).ok());
    let mut round = AskRound {
        number: get(r, "round")
            .and_then(Value::as_i64)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(place + 1),
        batch,
        text: None,
        calls: Vec::new(),
        tokens: (count(tokens, "input"), count(tokens, "output")),
        unreadable: None,
    };
    let reply = match get(r, "response") {
        Some(answer @ Value::Object(_)) => read_reply(api, answer).map_err(|e| e.to_string()),
        _ => Err("the round has no answer".to_owned()),
    };
    let reply = match reply {
        Ok(reply) => reply,
        Err(why) => {
            round.unreadable = Some(why);
            return round;
        }
    };
    round.text = reply.text().filter(|t| !t.trim().is_empty());
    let fed = batch.map(|b| outputs(record, b)).unwrap_or_default();
    let mut used = vec![false; fed.len()];
    for (i, call) in reply.calls().into_iter().enumerate() {
        // The lane at the call's place, when it answers this call_id; else the first unused
        // output for the call_id (a model may repeat an id).
        let at = match fed.get(i) {
            Some((id, _)) if *id == call.call_id && !used[i] => Some(i),
            _ => (0..fed.len()).find(|&j| !used[j] && fed[j].0 == call.call_id),
        };
        if let Some(j) = at {
            used[j] = true;
        }
        round.calls.push(AskCall {
            name: call.name,
            call_id: call.call_id,
            arguments: call.arguments,
            output: at.map(|j| fed[j].1.clone()),
        });
    }
    round
}

impl AskView {
    /// The view of a parsed record; `None` when `record` is not one (no [`MARK`], or an API
    /// it does not name).
    pub fn from_value(record: &Value) -> Option<AskView> {
        get(record, MARK)?;
        let api = match get(record, "api").and_then(Value::as_str)? {
            "responses" => Api::Responses,
            "chat" => Api::Chat,
            _ => return None,
        };
        let rounds = get(record, "rounds")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, r)| round(record, api, r, i))
            .collect();
        let prices = get(record, "prices").and_then(|p| {
            let price = |key| get(p, key).and_then(Value::as_number_f64);
            Some((price("input")?, price("output")?))
        });
        let flag = |key| get(record, key).and_then(Value::as_bool) == Some(true);
        let end = match text(record, "error") {
            _ if !flag("complete") => AskEnd::Unfinished,
            Some(e) => AskEnd::Failed(e),
            None if flag("stopped") => AskEnd::Stopped,
            None => AskEnd::Answered,
        };
        Some(AskView {
            model: text(record, "model").unwrap_or_default(),
            api,
            max_rounds: get(record, "max_rounds")
                .and_then(Value::as_i64)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0),
            question: text(record, "question").unwrap_or_default(),
            rounds,
            prices,
            answer: text(record, "answer"),
            end,
        })
    }

    /// Input and output tokens, summed over the rounds.
    pub fn tokens(&self) -> (u64, u64) {
        self.rounds
            .iter()
            .fold((0, 0), |(i, o), r| (i + r.tokens.0, o + r.tokens.1))
    }

    /// The cost in USD at the run's prices, when it was given any.
    pub fn cost(&self) -> Option<f64> {
        let (pin, pout) = self.prices?;
        let (i, o) = self.tokens();
        Some((i as f64 * pin + o as f64 * pout) / 1_000_000.0)
    }

    /// `ask · 3 rounds · tokens in/out 500/80 · cost≈$0.0012` (the cost only with prices).
    pub fn headline(&self) -> String {
        let n = self.rounds.len();
        let (i, o) = self.tokens();
        let mut line = format!(
            "ask \u{b7} {n} round{} \u{b7} tokens in/out {i}/{o}",
            if n == 1 { "" } else { "s" }
        );
        if let Some(cost) = self.cost() {
            line.push_str(&format!(" \u{b7} cost\u{2248}${}", py_fixed(cost, 4)));
        }
        line
    }

    /// The round whose calls ran as executor batch `batch`.
    pub fn round_of_batch(&self, batch: usize) -> Option<&AskRound> {
        self.rounds.iter().find(|r| r.batch == Some(batch))
    }

    /// The call in lane `lane` of batch `batch`, and its round.
    pub fn call(&self, batch: usize, lane: usize) -> Option<(&AskRound, &AskCall)> {
        let round = self.round_of_batch(batch)?;
        Some((round, round.calls.get(lane)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn record(api: &str, response: &str, end: &str) -> Value {
        parse(&format!(
            r#"{{"toolstorm_ask": 1, "api": "{api}", "model": "m", "max_rounds": 5,
                "question": "q", "prices": {{"input": 2.5, "output": 10}},
                "rounds": [{{"round": 1, "history_from": 0, "request": {{}},
                    "response": {response}, "tokens": {{"input": 1000, "output": 100}},
                    "batch": 1}}],
                "batches": [{{"batch": 1, "outputs": [
                    {{"type": "function_call_output", "call_id": "c1", "output": "{{\"ok\":true}}"}},
                    {{"type": "function_call_output", "call_id": "c2", "output": "{{\"ok\":false}}"}}]}}],
                {end}}}"#
        ))
        .expect("json")
    }

    #[test]
    fn both_wire_formats_give_the_same_rounds_with_text_calls_and_outputs() {
        let chat = record(
            "chat",
            r#"{"choices": [{"message": {"content": "let me look", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_issue", "arguments": "{\"issue_id\": 41}"}},
                {"id": "c2", "type": "function", "function": {"name": "get_issue", "arguments": "{issue 87"}}]}}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}"#,
            r#""complete": true, "stopped": true, "answer": null, "error": null"#,
        );
        let responses = record(
            "responses",
            r#"{"output": [{"type": "message", "content": [{"type": "output_text", "text": "let me look"}]},
                {"type": "function_call", "call_id": "c1", "name": "get_issue", "arguments": "{\"issue_id\": 41}"},
                {"type": "function_call", "call_id": "c2", "name": "get_issue", "arguments": "{issue 87"}]}"#,
            r#""complete": true, "stopped": true, "answer": null, "error": null"#,
        );
        let a = AskView::from_value(&chat).expect("a record");
        let b = AskView::from_value(&responses).expect("a record");
        assert_eq!(a.rounds, b.rounds);
        let (round, call) = a.call(1, 1).expect("lane 1 of batch 1");
        assert_eq!(round.text.as_deref(), Some("let me look"));
        // The arguments exactly as sent, not JSON; the output fed back for its call_id.
        assert_eq!(call.arguments, "{issue 87");
        assert_eq!(call.output.as_deref(), Some(r#"{"ok":false}"#));
        assert_eq!(a.end, AskEnd::Stopped);
        assert_eq!(
            a.headline(),
            "ask \u{b7} 1 round \u{b7} tokens in/out 1000/100 \u{b7} cost\u{2248}$0.0035"
        );
        assert!(a.call(2, 0).is_none() && a.call(1, 2).is_none());
    }

    #[test]
    fn how_it_ended_and_what_is_not_a_record() {
        let answer = r#"{"choices": [{"message": {"content": "done"}}]}"#;
        let ended = |end: &str| {
            AskView::from_value(&record("chat", answer, end))
                .expect("a record")
                .end
        };
        assert_eq!(
            ended(r#""complete": true, "stopped": false, "answer": "done", "error": null"#),
            AskEnd::Answered
        );
        assert_eq!(
            ended(r#""complete": true, "stopped": false, "answer": null, "error": "round 2: no""#),
            AskEnd::Failed("round 2: no".into())
        );
        assert_eq!(ended(r#""complete": false"#), AskEnd::Unfinished);
        let bad = record("chat", r#"{"nope": 1}"#, r#""complete": false"#);
        let view = AskView::from_value(&bad).expect("still a record");
        assert!(
            view.rounds[0]
                .unreadable
                .as_deref()
                .is_some_and(|w| w.contains("choices"))
        );
        let mut plain = bad.clone();
        if let Value::Object(o) = &mut plain {
            o.remove(MARK);
        }
        assert!(AskView::from_value(&plain).is_none());
    }
}
