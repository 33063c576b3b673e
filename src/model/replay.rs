//! Strict offline replay of a model: the recorded answers served in order, with no network
//! and no key, each only to a request equal to the one recorded. A record keeps of each
//! request's conversation only the items after the ones the request before held
//! ([`Recorded::history_from`]); the replay compares the new items with the record and the
//! earlier ones with the request before, so a long run replays in time linear in its size.
//! A value the record redacted (`"[REDACTED]"`) matches whatever the new request holds there. A request that differs, one
//! past the recording's end, or a recording not used to its end is a [`Divergence`] naming the
//! round and the first difference (its JSON path, the recorded value and the new one), as
//! cassette replay names its first divergent call.

use crate::json::{Value, compact};

use super::wire::{self, Api, Reply, Request};
use super::{Exchange, ModelError, Respond};

/// How a replay left the recording.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Divergence {
    /// A request differs from the recorded one.
    #[error(
        "round {round}: the request differs from the recording at {path}: recorded {recorded}, now {now}"
    )]
    Differs {
        /// The round.
        round: usize,
        /// The JSON path of the first difference (`input[3].output`).
        path: String,
        /// The recorded value there (cut), or `(nothing)`.
        recorded: String,
        /// The new value there (cut), or `(nothing)`.
        now: String,
    },
    /// A round the recording does not have.
    #[error("round {round}: the recording ends after {recorded} round{}", if *recorded == 1 { "" } else { "s" })]
    Extra {
        /// The round asked for.
        round: usize,
        /// Rounds recorded.
        recorded: usize,
    },
    /// The replay ended before the recording did.
    #[error("the recording has {recorded} rounds; the replay ended after {used}")]
    Missing {
        /// Rounds used.
        used: usize,
        /// Rounds recorded.
        recorded: usize,
    },
}

/// One recorded round, as a record keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// How many conversation items of the request before this request repeats.
    pub history_from: usize,
    /// The request body, its conversation list holding only the items after those.
    pub request: Value,
    /// The answer's body.
    pub response: Value,
}

impl Recorded {
    /// A round whose request is kept whole.
    pub fn whole(request: Value, response: Value) -> Recorded {
        Recorded {
            history_from: 0,
            request,
            response,
        }
    }
}

/// A recorded model: its rounds in order.
#[derive(Debug)]
pub struct Replayer {
    api: Api,
    rounds: Vec<Recorded>,
    next: usize,
    /// The conversation of the last request served.
    before: Vec<Value>,
    last: Option<Exchange>,
    diverged: Option<Divergence>,
}

impl Replayer {
    /// Serves `rounds` for requests spoken in `api`.
    pub fn new(api: Api, rounds: Vec<Recorded>) -> Replayer {
        Replayer {
            api,
            rounds,
            next: 0,
            before: Vec::new(),
            last: None,
            diverged: None,
        }
    }

    fn diverge(&mut self, d: Divergence) -> ModelError {
        self.diverged = Some(d.clone());
        ModelError::Script(d.to_string())
    }

    /// The first divergence, if any; at the end, also a recording not used to its end.
    pub fn finish(&self) -> Result<usize, Divergence> {
        if let Some(d) = &self.diverged {
            return Err(d.clone());
        }
        if self.next < self.rounds.len() {
            return Err(Divergence::Missing {
                used: self.next,
                recorded: self.rounds.len(),
            });
        }
        Ok(self.next)
    }
}

impl Respond for Replayer {
    fn respond(&mut self, request: &Request) -> Result<Reply, ModelError> {
        let round = self.next + 1;
        let Some(recorded) = self.rounds.get(self.next) else {
            let d = Divergence::Extra {
                round,
                recorded: self.rounds.len(),
            };
            return Err(self.diverge(d));
        };
        let key = self.api.history_key();
        let mut body = wire::request_body(self.api, request);
        let items = match body.as_object_mut().and_then(|o| o.get_mut(key)) {
            Some(Value::Array(items)) => std::mem::take(items),
            _ => Vec::new(),
        };
        let from = recorded.history_from;
        // The items the request before held, repeated.
        let repeated = (0..from).find(|&i| match (self.before.get(i), items.get(i)) {
            (Some(a), Some(b)) => !a.identical(b),
            _ => true,
        });
        if let Some(i) = repeated {
            let d = Divergence::Differs {
                round,
                path: format!("{key}[{i}]"),
                recorded: shown(self.before.get(i)),
                now: shown(items.get(i)),
            };
            return Err(self.diverge(d));
        }
        // The rest against the record: the new items in their place.
        let new: Vec<Value> = items[from..].to_vec();
        if let Some(Value::Array(list)) = body.as_object_mut().and_then(|o| o.get_mut(key)) {
            *list = new;
        }
        if let Some((path, was, now)) = first_difference(&recorded.request, &body) {
            let path = shift(&path, key, from);
            let d = Divergence::Differs {
                round,
                path,
                recorded: was,
                now,
            };
            return Err(self.diverge(d));
        }
        let reply =
            wire::read_reply(self.api, &recorded.response).map_err(|wire| ModelError::Wire {
                url: "the recording".into(),
                status: 200,
                wire,
            })?;
        self.last = Some(Exchange {
            request: recorded.request.clone(),
            response: recorded.response.clone(),
            attempts: 1,
        });
        self.before = items;
        self.next += 1;
        Ok(reply)
    }

    fn last_exchange(&self) -> Option<&Exchange> {
        self.last.as_ref()
    }
}

/// A path into a request whose conversation list starts at item `from`, as a path into the
/// whole request: `input[2].output` → `input[9].output` for `from` 7.
fn shift(path: &str, key: &str, from: usize) -> String {
    let Some(rest) = path.strip_prefix(key).and_then(|r| r.strip_prefix('[')) else {
        return path.to_owned();
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    match digits.parse::<usize>() {
        Ok(i) => format!("{key}[{}{}", i + from, &rest[digits.len()..]),
        Err(_) => path.to_owned(),
    }
}

fn shown(v: Option<&Value>) -> String {
    match v {
        None => "(nothing)".into(),
        Some(v) => {
            let text = compact(v);
            if text.chars().count() > 120 {
                let cut: String = text.chars().take(119).collect();
                format!("{cut}\u{2026}")
            } else {
                text
            }
        }
    }
}

/// The first place two values differ: its path (`input[2].content`, `` for the whole), and
/// both values there, shown compact and cut.
pub fn first_difference(recorded: &Value, now: &Value) -> Option<(String, String, String)> {
    fn walk(a: &Value, b: &Value, path: &str) -> Option<(String, String, String)> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let child = |key: &str| {
                    if path.is_empty() {
                        key.to_owned()
                    } else {
                        format!("{path}.{key}")
                    }
                };
                for (k, va) in x.iter() {
                    let key = k.to_lossy();
                    let p = child(&key);
                    match y.get(&key) {
                        Some(vb) => {
                            if let Some(d) = walk(va, vb, &p) {
                                return Some(d);
                            }
                        }
                        None => return Some((p, shown(Some(va)), shown(None))),
                    }
                }
                y.iter()
                    .find(|(k, _)| !x.contains_key(&k.to_lossy()))
                    .map(|(k, vb)| (child(&k.to_lossy()), shown(None), shown(Some(vb))))
            }
            (Value::Array(x), Value::Array(y)) => {
                for i in 0..x.len().max(y.len()) {
                    let p = format!("{path}[{i}]");
                    match (x.get(i), y.get(i)) {
                        (Some(va), Some(vb)) => {
                            if let Some(d) = walk(va, vb, &p) {
                                return Some(d);
                            }
                        }
                        (va, vb) => return Some((p, shown(va), shown(vb))),
                    }
                }
                None
            }
            _ if a.identical(b) => None,
            // What the record redacted matches whatever stands there now.
            (Value::Str(t), _) if t.to_lossy() == crate::redact::MARKER => None,
            _ => Some((
                if path.is_empty() {
                    "(the whole body)".into()
                } else {
                    path.to_owned()
                },
                shown(Some(a)),
                shown(Some(b)),
            )),
        }
    }
    walk(recorded, now, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;
    use crate::model::Item;

    fn request(input: &[Item]) -> Request<'_> {
        Request {
            model: "m",
            instructions: "i",
            input,
            tools: &[],
            parallel_tool_calls: true,
        }
    }

    fn asked(question: &str) -> Vec<Item> {
        vec![Item::User(question.into())]
    }

    fn answer() -> Value {
        parse(r#"{"output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}"#)
            .expect("json")
    }

    #[test]
    fn the_first_difference_is_named_by_its_path() {
        let a = parse(r#"{"input":[{"role":"user","content":"a"}],"model":"m"}"#).expect("a");
        let b = parse(r#"{"input":[{"role":"user","content":"b"}],"model":"m"}"#).expect("b");
        assert_eq!(
            first_difference(&a, &b),
            Some(("input[0].content".into(), "\"a\"".into(), "\"b\"".into()))
        );
        let c = parse(r#"{"input":[{"role":"user","content":"a"},1],"model":"m"}"#).expect("c");
        assert_eq!(
            first_difference(&a, &c),
            Some(("input[1]".into(), "(nothing)".into(), "1".into()))
        );
        assert_eq!(first_difference(&a, &a), None);
        let redacted =
            parse(r#"{"input":[{"role":"user","content":"[REDACTED]"}],"model":"m"}"#).expect("r");
        assert_eq!(first_difference(&redacted, &a), None);
        assert_eq!(shift("input[2].output", "input", 7), "input[9].output");
        assert_eq!(shift("model", "input", 7), "model");
    }

    #[test]
    fn a_recorded_answer_is_served_only_to_its_request() {
        let recorded = wire::request_body(Api::Responses, &request(&asked("q")));
        let mut replay = Replayer::new(Api::Responses, vec![Recorded::whole(recorded, answer())]);
        let reply = replay.respond(&request(&asked("q"))).expect("matches");
        assert_eq!(reply.text().as_deref(), Some("hi"));
        assert_eq!(replay.finish(), Ok(1));
        let e = replay.respond(&request(&asked("q"))).expect_err("extra");
        assert_eq!(e.to_string(), "round 2: the recording ends after 1 round");

        let recorded = wire::request_body(Api::Responses, &request(&asked("q")));
        let mut replay = Replayer::new(Api::Responses, vec![Recorded::whole(recorded, answer())]);
        let e = replay
            .respond(&request(&asked("other")))
            .expect_err("differs");
        assert_eq!(
            e.to_string(),
            "round 1: the request differs from the recording at input[0].content: recorded \"q\", now \"other\""
        );
        assert!(replay.finish().is_err());
    }

    #[test]
    fn a_recording_not_used_to_its_end_is_missing_rounds() {
        let recorded = wire::request_body(Api::Chat, &request(&asked("q")));
        let replay = Replayer::new(
            Api::Chat,
            vec![
                Recorded::whole(recorded.clone(), answer()),
                Recorded::whole(recorded, answer()),
            ],
        );
        assert_eq!(
            replay.finish().expect_err("missing").to_string(),
            "the recording has 2 rounds; the replay ended after 0"
        );
    }
}
