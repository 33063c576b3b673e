//! The model's side of the tool loop: asking a real model, through an OpenAI-compatible
//! server, for its next answer. It owns the two wire formats ([`wire`]: Responses and Chat
//! Completions, to and from neutral items) and the HTTP client ([`client`]: timeout, retries
//! with `Retry-After`, the key kept secret); [`Model`] joins them into one
//! [`Respond::respond`] call, and [`replay`] serves a recorded model's answers offline,
//! strictly. It runs no tools: the loop ([`crate::ask`]) hands the calls to
//! the executor.

pub mod client;
pub mod replay;
pub mod wire;

pub use client::{Client, ClientError, Key, Retry, Settings};
pub use replay::{Divergence, Recorded, Replayer};
pub use wire::{Api, Item, Reply, Request, Usage, WireError};

use crate::json::{Value, compact};

/// The default base URL: OpenAI's API.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Why a model gave no answer the loop can use.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The server could not be asked (URL, connection, timeout, HTTP status).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// It answered 2xx with a body that is not JSON.
    #[error("{url} answered HTTP {status} with a body that is not JSON: {reason}")]
    NotJson {
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The parser's complaint.
        reason: String,
    },
    /// It answered JSON that is not the API's answer.
    #[error("{url} answered HTTP {status}, but {wire}")]
    Wire {
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// What is wrong.
        wire: WireError,
    },
    /// A recorded or scripted model has no answer for this request.
    #[error("{0}")]
    Script(String),
}

/// One request and the answer it got, as they went over the wire.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    /// The request body sent.
    pub request: Value,
    /// The answer's body.
    pub response: Value,
    /// HTTP attempts made (retries included).
    pub attempts: u32,
}

/// Anything that answers a round's request: a real model, a recording, a script.
pub trait Respond {
    /// The model's answer to `request`.
    fn respond(&mut self, request: &Request) -> Result<Reply, ModelError>;

    /// The last successful exchange as it went over the wire (for a record), when the
    /// model has one.
    fn last_exchange(&self) -> Option<&Exchange> {
        None
    }
}

/// A model behind an OpenAI-compatible server.
pub struct Model {
    api: Api,
    url: String,
    client: Client,
    notice: Box<dyn FnMut(&Retry)>,
    exchanges: Vec<Exchange>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("api", &self.api)
            .field("url", &self.url)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl Model {
    /// A model at `base_url` (`https://api.openai.com/v1`, `http://localhost:8080/v1`) spoken
    /// to through `api`.
    pub fn new(api: Api, base_url: &str, client: Client) -> Result<Model, ModelError> {
        let url = format!("{}{}", base_url.trim_end_matches('/'), api.path());
        client::parse_url(&url)?;
        Ok(Model {
            api,
            url,
            client,
            notice: Box::new(|_| {}),
            exchanges: Vec::new(),
        })
    }

    /// Calls `notice` before each retry is waited for.
    pub fn on_retry(mut self, notice: impl FnMut(&Retry) + 'static) -> Model {
        self.notice = Box::new(notice);
        self
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The API.
    pub fn api(&self) -> Api {
        self.api
    }

    /// Every exchange so far, in order.
    pub fn exchanges(&self) -> &[Exchange] {
        &self.exchanges
    }
}

impl Respond for Model {
    fn respond(&mut self, request: &Request) -> Result<Reply, ModelError> {
        let body = wire::request_body(self.api, request);
        let answer =
            self.client
                .post_json(&self.url, compact(&body).into_bytes(), &mut *self.notice)?;
        let text = String::from_utf8_lossy(&answer.body);
        let parsed = crate::json::parse(&text).map_err(|e| ModelError::NotJson {
            url: self.url.clone(),
            status: answer.status,
            reason: self.client.mask(&e.to_string()),
        })?;
        let reply = wire::read_reply(self.api, &parsed).map_err(|wire| ModelError::Wire {
            url: self.url.clone(),
            status: answer.status,
            wire: WireError {
                api: wire.api,
                reason: self.client.mask(&wire.reason),
            },
        })?;
        self.exchanges.push(Exchange {
            request: body,
            response: parsed,
            attempts: answer.attempts,
        });
        Ok(reply)
    }

    fn last_exchange(&self) -> Option<&Exchange> {
        self.exchanges.last()
    }
}
