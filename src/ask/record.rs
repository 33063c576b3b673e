//! The record of one `ask` run (`--record RUN.json`): the settings it ran with (API, base URL,
//! model, question, instructions, round limit), then per round the request as sent and the
//! answer as received (bodies, usage inside), the HTTP attempts, and the batch the executor
//! ran (lanes, kinds, attempts, approvals, outputs); at the end the answer. Beside them, as an
//! executor's `run --output` file holds them, the batches and the executor's trace
//! (`report`): `inspect`, `check` and the explorer open a record as an executor run. The file is
//! rewritten atomically after every round (readable after a kill: `complete` is false until
//! the loop ends), is never larger than a document we read (8,000,000 bytes), goes through
//! the redactor with the key as a literal secret (the key itself is never in a request body
//! or an answer we keep), and replaces only an earlier record or an empty file.
//!
//! [`read`] gives a record back, for `ask --replay` ([`crate::model::Replayer`]).

use std::path::{Path, PathBuf};

use crate::json::{MAX_DOCUMENT_BYTES, Object, Value, pretty};
use crate::model::{Api, Recorded};
use crate::obj;
use crate::redact::Redactor;

use super::{AskRun, Round};

/// The key that marks a record, and its format version.
pub const MARK: &str = crate::document::ask::MARK;
/// The format version written.
pub const VERSION: i64 = 1;

/// What a run was asked with.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The wire format.
    pub api: Api,
    /// The server's base URL.
    pub base_url: String,
    /// The model's name.
    pub model: String,
    /// The question.
    pub question: String,
    /// The instructions.
    pub instructions: String,
    /// The round limit.
    pub max_rounds: usize,
    /// Whether parallel calls were allowed.
    pub parallel: bool,
    /// Where the tools came from (`orbit`, `mcp`).
    pub world: String,
    /// For `mcp`: the server's command line, secrets redacted.
    pub tools_from: Option<String>,
    /// USD per million input and output tokens, when the run was given prices (the
    /// explorer shows the cost from them).
    pub prices: Option<(f64, f64)>,
    /// Who answered the approvals (`deny`, `yes`, `ask`, `no terminal`): a replay answers as
    /// they did, so a denial is fed back to the model in the same words. `None` in records
    /// written before it was kept (their replay answers with the recorded yes and no).
    pub approver: Option<String>,
}

/// A record that cannot be written or read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// Writing failed.
    #[error("cannot write the record {path}: {reason}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The record would be larger than a document we read.
    #[error(
        "the record {path} would exceed {MAX_DOCUMENT_BYTES} bytes at round {round}; it keeps the rounds before"
    )]
    TooLarge {
        /// The file.
        path: String,
        /// The round that did not fit.
        round: usize,
    },
    /// The file there is not a record: left as it is.
    #[error(
        "{path} exists and is not an ask record; it is left as it is (remove it or name another file)"
    )]
    Foreign {
        /// The file.
        path: String,
    },
    /// Reading failed.
    #[error("cannot read the record {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The file is not a record we can replay.
    #[error("{path} is not an ask record: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong, naming the field.
        reason: String,
    },
}

/// Writes a record as the run goes.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    header: Header,
    rounds: Vec<Value>,
    /// Each round's batch, in order (the rounds that made calls).
    batches: Vec<Value>,
    /// The executor's trace so far: a record opens as an executor run's output.
    report: Value,
    redactor: Redactor,
    /// How many conversation items the last request kept: the next one repeats them, and
    /// its record keeps only the items after them.
    history: usize,
}

impl Header {
    fn to_object(&self) -> Object {
        let mut o = Object::new();
        o.push(MARK, VERSION);
        o.push("api", self.api.as_str());
        o.push("base_url", self.base_url.as_str());
        o.push("model", self.model.as_str());
        o.push("question", self.question.as_str());
        o.push("instructions", self.instructions.as_str());
        o.push("max_rounds", self.max_rounds);
        o.push("parallel", self.parallel);
        o.push("world", self.world.as_str());
        o.push("tools_from", self.tools_from.clone());
        o.push(
            "prices",
            self.prices.map_or(Value::Null, |(i, out)| {
                obj! {"input" => Value::Float(i), "output" => Value::Float(out)}
            }),
        );
        o.push("approver", self.approver.clone());
        o
    }
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// Whether `text` is a record's (or nothing).
fn ours(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.trim().is_empty()
        || crate::json::parse(&text)
            .ok()
            .and_then(|v| v.as_object().map(|o| o.contains_key(MARK)))
            .unwrap_or(false)
}

impl Recorder {
    /// Starts a record at `path` (refusing a file there that is not a record); `secrets` are
    /// replaced wherever they appear.
    pub fn create(
        path: &Path,
        header: Header,
        secrets: &[String],
        report: Value,
    ) -> Result<Recorder, RecordError> {
        match crate::fsread::read_document(path) {
            Ok(bytes) if !ours(&bytes) => {
                return Err(RecordError::Foreign { path: shown(path) });
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(RecordError::Write {
                    path: shown(path),
                    reason: e.to_string(),
                });
            }
            _ => {}
        }
        let redactor = Redactor::new(
            Vec::<String>::new(),
            secrets.iter().filter(|s| !s.is_empty()),
        )
        .map_err(|e| RecordError::Write {
            path: shown(path),
            reason: e.to_string(),
        })?;
        let recorder = Recorder {
            path: path.to_path_buf(),
            header,
            rounds: Vec::new(),
            batches: Vec::new(),
            report,
            redactor,
            history: 0,
        };
        recorder.write(None, 0)?;
        Ok(recorder)
    }

    /// Adds a round (and the executor's trace after it) and rewrites the file.
    pub fn round(&mut self, round: &Round, report: Value) -> Result<(), RecordError> {
        let (mut request, response, attempts) = match &round.exchange {
            Some(x) => (x.request.clone(), x.response.clone(), x.attempts),
            None => (Value::Null, Value::Null, 0),
        };
        // Each request repeats the conversation so far: the record keeps only what is new
        // (a 100-round run stays linear in size), and a reader puts it back together.
        let from = self.history;
        let key = self.header.api.history_key();
        if let Some(Value::Array(items)) = request.as_object_mut().and_then(|o| o.get_mut(key)) {
            let from = from.min(items.len());
            self.history = items.len();
            items.drain(..from);
        }
        self.rounds.push(obj! {
            "round" => round.number,
            "history_from" => from,
            "request" => request,
            "response" => response,
            "attempts" => attempts,
            "tokens" => obj! {"input" => round.reply.usage.input, "output" => round.reply.usage.output},
            "batch" => round.batch.as_ref().map(|b| b.batch),
        });
        if let Some(b) = &round.batch {
            self.batches.push(b.to_value());
        }
        let report = std::mem::replace(&mut self.report, report);
        match self.write(None, round.number) {
            Err(e @ RecordError::TooLarge { .. }) => {
                self.rounds.pop();
                if round.batch.is_some() {
                    self.batches.pop();
                }
                self.report = report;
                Err(e)
            }
            other => other,
        }
    }

    /// Ends the record: the run's answer (or the error that ended it).
    pub fn finish(
        &mut self,
        run: &AskRun,
        error: Option<&str>,
        report: Value,
    ) -> Result<(), RecordError> {
        self.report = report;
        let usage = run.usage();
        let end = obj! {
            "answer" => run.answer.clone(),
            "stopped" => error.is_none() && run.stopped(),
            "error" => error.map(str::to_owned),
            "tokens" => obj! {"input" => usage.input, "output" => usage.output},
        };
        self.write(Some(end), self.rounds.len())
    }

    fn write(&self, end: Option<Value>, round: usize) -> Result<(), RecordError> {
        let mut o = self.header.to_object();
        o.push("rounds", Value::Array(self.rounds.clone()));
        o.push("batches", Value::Array(self.batches.clone()));
        o.push("report", self.report.clone());
        o.push("complete", end.is_some());
        if let Some(Value::Object(end)) = end {
            for (k, v) in end.into_members() {
                o.push(k, v);
            }
        }
        let text = pretty(&self.redactor.redact(&Value::Object(o))) + "\n";
        if text.len() > MAX_DOCUMENT_BYTES {
            return Err(RecordError::TooLarge {
                path: shown(&self.path),
                round,
            });
        }
        crate::atomic::write(&self.path, text.as_bytes()).map_err(|e| RecordError::Write {
            path: shown(&self.path),
            reason: e.to_string(),
        })
    }
}

/// A record read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// What the run was asked with.
    pub header: Header,
    /// Each round as kept: the request's new conversation items, and the answer.
    pub rounds: Vec<Recorded>,
    /// Each approval's answer, in the order asked.
    pub approvals: Vec<bool>,
    /// The recorded answer.
    pub answer: Option<String>,
    /// Whether the run ended (a record of a killed run is not complete).
    pub complete: bool,
    /// Whether it ended at the round limit without an answer.
    pub stopped: bool,
    /// The calls each round made, in order.
    pub calls_per_round: Vec<usize>,
    /// Input and output tokens, summed over the rounds.
    pub tokens: (u64, u64),
}

impl Record {
    /// The line `inspect` adds for a record: `ask record: 2 rounds (calls per round: 3, 0) ·
    /// tokens in/out 400/60 · answered`.
    pub fn summary_line(&self) -> String {
        let per: Vec<String> = self.calls_per_round.iter().map(usize::to_string).collect();
        let end = if !self.complete {
            "not finished (its run was stopped or is still going)"
        } else if self.stopped {
            "stopped at max_rounds without a final answer"
        } else if self.answer.is_some() {
            "answered"
        } else {
            "ended by an error"
        };
        format!(
            "ask record: {} round{} (calls per round: {}) \u{b7} tokens in/out {}/{} \u{b7} {end}",
            self.calls_per_round.len(),
            if self.calls_per_round.len() == 1 {
                ""
            } else {
                "s"
            },
            if per.is_empty() {
                "none".to_owned()
            } else {
                per.join(", ")
            },
            self.tokens.0,
            self.tokens.1,
        )
    }
}

/// Whether the file at `path` begins as a record does (its first bytes name [`MARK`]): a
/// cheap look before [`read`].
pub fn looks_like_record(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = crate::fsread::open_regular(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    String::from_utf8_lossy(&head[..n]).contains(MARK)
}

/// Reads a record.
pub fn read(path: &Path) -> Result<Record, RecordError> {
    let bytes = crate::fsread::read_document(path).map_err(|e| RecordError::Read {
        path: shown(path),
        reason: e.to_string(),
    })?;
    let invalid = |reason: String| RecordError::Invalid {
        path: shown(path),
        reason,
    };
    let v = crate::json::parse(&String::from_utf8_lossy(&bytes))
        .map_err(|e| invalid(format!("not JSON: {e}")))?;
    let o = v
        .as_object()
        .ok_or_else(|| invalid("expected an object".into()))?;
    match o.get(MARK).and_then(Value::as_i64) {
        Some(VERSION) => {}
        Some(n) => return Err(invalid(format!("{MARK}: version {n} is not {VERSION}"))),
        None => return Err(invalid(format!("no \"{MARK}\" version"))),
    }
    let text = |key: &str| {
        o.get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| invalid(format!("{key}: expected a string")))
    };
    let api = match text("api")?.as_str() {
        "responses" => Api::Responses,
        "chat" => Api::Chat,
        other => return Err(invalid(format!("api: {other:?} is not responses or chat"))),
    };
    let max_rounds = o
        .get("max_rounds")
        .and_then(Value::as_i64)
        .filter(|n| (1..=100).contains(n))
        .ok_or_else(|| invalid("max_rounds: expected an integer from 1 to 100".into()))?;
    let header = Header {
        api,
        base_url: text("base_url")?,
        model: text("model")?,
        question: text("question")?,
        instructions: text("instructions")?,
        max_rounds: max_rounds as usize,
        parallel: o
            .get("parallel")
            .and_then(Value::as_bool)
            .ok_or_else(|| invalid("parallel: expected true or false".into()))?,
        world: text("world")?,
        tools_from: o
            .get("tools_from")
            .and_then(Value::as_str)
            .map(str::to_owned),
        approver: o.get("approver").and_then(Value::as_str).map(str::to_owned),
        prices: o.get("prices").and_then(|p| {
            let price = |key| {
                p.as_object()
                    .and_then(|p| p.get(key))
                    .and_then(Value::as_number_f64)
            };
            Some((price("input")?, price("output")?))
        }),
    };
    let rounds = o
        .get("rounds")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("rounds: expected a list".into()))?;
    let mut kept = Vec::new();
    let mut calls_per_round = Vec::new();
    let mut tokens = (0u64, 0u64);
    let mut approvals = Vec::new();
    for (i, r) in rounds.iter().enumerate() {
        let field = |key: &str| r.as_object().and_then(|o| o.get(key));
        let count = |key: &str| {
            field("tokens")
                .and_then(|t| t.as_object())
                .and_then(|t| t.get(key))
                .and_then(Value::as_i64)
                .map_or(0, |n| n.max(0) as u64)
        };
        tokens = (tokens.0 + count("input"), tokens.1 + count("output"));
        let batch = field("batch").and_then(Value::as_i64);
        calls_per_round.push(
            o.get("batches")
                .and_then(Value::as_array)
                .and_then(|b| {
                    b.iter().find(|b| {
                        b.as_object()
                            .and_then(|b| b.get("batch"))
                            .and_then(Value::as_i64)
                            == batch
                            && batch.is_some()
                    })
                })
                .and_then(|b| b.as_object())
                .and_then(|b| b.get("lanes"))
                .and_then(Value::as_array)
                .map_or(0, Vec::len),
        );
        match (field("request"), field("response")) {
            (Some(q @ Value::Object(_)), Some(a @ Value::Object(_))) => {
                let from = field("history_from")
                    .map_or(Some(0), Value::as_i64)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| {
                        invalid(format!("rounds[{i}].history_from: expected a count"))
                    })?;
                kept.push(Recorded {
                    history_from: from,
                    request: q.clone(),
                    response: a.clone(),
                })
            }
            _ => {
                return Err(invalid(format!(
                    "rounds[{i}]: expected a request and a response object"
                )));
            }
        }
    }
    let batches = o.get("batches").and_then(Value::as_array);
    for batch in batches.into_iter().flatten() {
        let lanes = batch
            .as_object()
            .and_then(|b| b.get("lanes"))
            .and_then(Value::as_array);
        for lane in lanes.into_iter().flatten() {
            if let Some(yes) = lane
                .as_object()
                .and_then(|l| l.get("approval"))
                .and_then(Value::as_object)
                .and_then(|a| a.get("approved"))
                .and_then(Value::as_bool)
            {
                approvals.push(yes);
            }
        }
    }
    Ok(Record {
        header,
        rounds: kept,
        approvals,
        answer: o.get("answer").and_then(Value::as_str).map(str::to_owned),
        complete: o.get("complete").and_then(Value::as_bool) == Some(true),
        stopped: o.get("stopped").and_then(Value::as_bool) == Some(true),
        calls_per_round,
        tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Exchange, Reply};

    fn header(question: &str) -> Header {
        Header {
            api: Api::Chat,
            base_url: "http://localhost:8080/v1".into(),
            model: "m".into(),
            question: question.into(),
            instructions: "i".into(),
            max_rounds: 5,
            parallel: true,
            world: "orbit".into(),
            tools_from: None,
            prices: Some((2.5, 10.0)),
            approver: Some("no terminal".into()),
        }
    }

    fn round(number: usize, text: &str) -> Round {
        Round {
            number,
            reply: Reply::default(),
            batch: None,
            exchange: Some(Exchange {
                request: obj! {"messages" => text},
                response: obj! {"choices" => Value::Array(Vec::new())},
                attempts: 1,
            }),
        }
    }

    #[test]
    fn a_record_reads_back_keeps_no_secret_and_stays_bounded() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("run.json");
        let mut r = Recorder::create(
            &path,
            header("is sk-SECRET-42 my key?"),
            &["sk-SECRET-42".into()],
            Value::Null,
        )
        .expect("create");
        r.round(&round(1, "a"), Value::Null).expect("round 1");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(!text.contains("sk-SECRET-42") && text.contains("is [REDACTED] my key?"));
        let back = read(&path).expect("a record");
        assert_eq!(back.header.api, Api::Chat);
        assert_eq!(back.header.prices, Some((2.5, 10.0)));
        assert_eq!(back.rounds.len(), 1);
        assert!(!back.complete);
        // A round that would take the file past what we read is refused; the file keeps the
        // rounds before.
        let e = r
            .round(&round(2, &"x".repeat(MAX_DOCUMENT_BYTES)), Value::Null)
            .expect_err("too large");
        assert!(matches!(e, RecordError::TooLarge { round: 2, .. }), "{e}");
        assert_eq!(read(&path).expect("still a record").rounds.len(), 1);
        r.finish(&AskRun::default(), Some("round 2: no"), Value::Null)
            .expect("finish");
        let back = read(&path).expect("a record");
        assert!(back.complete);
    }

    #[test]
    fn files_that_are_not_records_are_refused_by_name() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("other.json");
        std::fs::write(&path, r#"{"version": 1}"#).expect("write");
        let e = Recorder::create(&path, header("q"), &[], Value::Null).expect_err("foreign");
        assert!(matches!(e, RecordError::Foreign { .. }));
        let e = read(&path).expect_err("not a record");
        assert!(
            e.to_string().ends_with("no \"toolstorm_ask\" version"),
            "{e}"
        );
    }
}
