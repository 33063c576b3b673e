//! Strict offline replay of a model: the recorded answers served in order, with no network
//! and no key, each only to a request equal to the one recorded. A request that differs, one
//! past the recording's end, or a recording not used to its end is a [`Divergence`] naming the
//! round and the first difference (its JSON path, the recorded value and the new one), as
//! cassette replay names its first divergent call.

use crate::json::{Value, compact};
use crate::redact::Redactor;

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

/// A recorded model: (request, response) bodies in order, as the record keeps them
/// (redacted).
#[derive(Debug)]
pub struct Replayer {
    api: Api,
    rounds: Vec<(Value, Value)>,
    next: usize,
    redactor: Redactor,
    last: Option<Exchange>,
    diverged: Option<Divergence>,
}

impl Replayer {
    /// Serves `rounds` for requests spoken in `api`; each new request is redacted with
    /// `redactor` before it is compared, as the recorded one was before it was kept.
    pub fn new(api: Api, rounds: Vec<(Value, Value)>, redactor: Redactor) -> Replayer {
        Replayer {
            api,
            rounds,
            next: 0,
            redactor,
            last: None,
            diverged: None,
        }
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
        let body = self.redactor.redact(&wire::request_body(self.api, request));
        let Some((recorded, response)) = self.rounds.get(self.next) else {
            let d = Divergence::Extra {
                round,
                recorded: self.rounds.len(),
            };
            self.diverged = Some(d.clone());
            return Err(ModelError::Script(d.to_string()));
        };
        if let Some((path, was, now)) = first_difference(recorded, &body) {
            let d = Divergence::Differs {
                round,
                path,
                recorded: was,
                now,
            };
            self.diverged = Some(d.clone());
            return Err(ModelError::Script(d.to_string()));
        }
        let reply = wire::read_reply(self.api, response).map_err(|wire| ModelError::Wire {
            url: "the recording".into(),
            status: 200,
            wire,
        })?;
        self.last = Some(Exchange {
            request: recorded.clone(),
            response: response.clone(),
            attempts: 1,
        });
        self.next += 1;
        Ok(reply)
    }

    fn last_exchange(&self) -> Option<&Exchange> {
        self.last.as_ref()
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

    fn request(question: &str) -> Request {
        Request {
            model: "m".into(),
            instructions: "i".into(),
            input: vec![Item::User(question.into())],
            tools: Vec::new(),
            parallel_tool_calls: true,
        }
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
    }

    #[test]
    fn a_recorded_answer_is_served_only_to_its_request() {
        let recorded = wire::request_body(Api::Responses, &request("q"));
        let mut replay = Replayer::new(
            Api::Responses,
            vec![(recorded, answer())],
            Redactor::default(),
        );
        let reply = replay.respond(&request("q")).expect("matches");
        assert_eq!(reply.text().as_deref(), Some("hi"));
        assert_eq!(replay.finish(), Ok(1));
        let e = replay.respond(&request("q")).expect_err("extra");
        assert_eq!(e.to_string(), "round 2: the recording ends after 1 round");

        let recorded = wire::request_body(Api::Responses, &request("q"));
        let mut replay = Replayer::new(
            Api::Responses,
            vec![(recorded, answer())],
            Redactor::default(),
        );
        let e = replay.respond(&request("other")).expect_err("differs");
        assert_eq!(
            e.to_string(),
            "round 1: the request differs from the recording at input[0].content: recorded \"q\", now \"other\""
        );
        assert!(replay.finish().is_err());
    }

    #[test]
    fn a_recording_not_used_to_its_end_is_missing_rounds() {
        let recorded = wire::request_body(Api::Chat, &request("q"));
        let replay = Replayer::new(
            Api::Chat,
            vec![(recorded.clone(), answer()), (recorded, answer())],
            Redactor::default(),
        );
        assert_eq!(
            replay.finish().expect_err("missing").to_string(),
            "the recording has 2 rounds; the replay ended after 0"
        );
    }
}
