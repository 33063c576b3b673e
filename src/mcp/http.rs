//! Streamable HTTP at the MCP boundary: the proxy's client side can listen for HTTP clients
//! ([`listen`], `mcp --listen ADDR`) and its server side can be a remote server reached by URL
//! ([`upstream`], a URL after `--`), in any pairing with stdio. Neither changes the relay: each
//! HTTP side turns its exchanges into the same messages the relay reads and writes for a
//! child's pipes ([`pipe`]: in, the events the stdio transport's reader thread would send,
//! handed to the relay's [`super::transport::Sink`] by the tasks themselves; out, whole lines), so every call is decided, faulted, judged and
//! recorded write-ahead exactly as on stdio.
//!
//! What a line cannot carry travels beside it, keyed by the line's bytes ([`Tags`]): the
//! headers a client's request came with (passed on upstream with it), and where a server's
//! message came from (which request's stream, which session, what HTTP status) so the
//! listener answers on the right stream. The relay passes messages on as the bytes they came
//! as, so the key finds them again; a message the proxy made itself (an injected fault) has
//! no tag and is routed by its id.
//!
//! Both sides run on a small tokio runtime of their own ([`runtime`]); [`sse`] reads and
//! writes server-sent events, [`headers`] decides which headers pass and what the
//! recording keeps of them, and [`route`] how a URL server is reached (directly or through
//! the environment's HTTP proxy).

pub mod headers;
pub mod listen;
pub mod pipe;
/// How a URL server is reached: the crate's one HTTP route (`ask`'s model client uses it too).
pub use crate::http_route as route;
pub mod secret;
pub mod sse;
pub mod upstream;

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::Mutex;

use crate::hashing::Map;
use crate::mcp::wire::Id;

/// Tags kept at once before the oldest are let go (a message the relay dropped, a lost
/// acknowledgement, leaves its tag behind).
const TAGS_KEPT: usize = 16_384;

/// The runtime both HTTP sides run on: two worker threads (the machine this is built for has
/// two cores; the relay has its own thread).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("toolstorm-http")
        .enable_io()
        .enable_time()
        .build()
}

/// What travels beside a message's bytes, oldest first for equal bytes.
#[derive(Debug)]
pub struct Tags<T> {
    inner: Mutex<TagsInner<T>>,
}

#[derive(Debug)]
struct TagsInner<T> {
    by_hash: Map<u64, VecDeque<T>>,
    order: VecDeque<u64>,
}

impl<T> Default for Tags<T> {
    fn default() -> Self {
        Tags {
            inner: Mutex::new(TagsInner {
                by_hash: Map::default(),
                order: VecDeque::new(),
            }),
        }
    }
}

fn key(bytes: &[u8]) -> u64 {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    foldhash::fast::FixedState::default().hash_one(bytes)
}

impl<T> Tags<T> {
    /// Keeps `tag` for the message `bytes`.
    pub fn put(&self, bytes: &[u8], tag: T) {
        let k = key(bytes);
        let Ok(mut t) = self.inner.lock() else {
            return;
        };
        t.by_hash.entry(k).or_default().push_back(tag);
        t.order.push_back(k);
        while t.order.len() > TAGS_KEPT {
            if let Some(old) = t.order.pop_front()
                && let Some(q) = t.by_hash.get_mut(&old)
            {
                q.pop_front();
                if q.is_empty() {
                    t.by_hash.remove(&old);
                }
            }
        }
    }

    /// The oldest tag kept for `bytes`, taken.
    pub fn take(&self, bytes: &[u8]) -> Option<T> {
        let k = key(bytes);
        let mut t = self.inner.lock().ok()?;
        let q = t.by_hash.get_mut(&k)?;
        let tag = q.pop_front();
        if q.is_empty() {
            t.by_hash.remove(&k);
        }
        if let Some(pos) = t.order.iter().position(|o| *o == k) {
            t.order.remove(pos);
        }
        tag
    }
}

/// A header name and value, as text.
pub type Header = (String, String);

/// What a client's HTTP request carried beside its message: the headers passed on upstream.
#[derive(Debug, Clone, Default)]
pub struct Envelope {
    /// The headers to send with the message (credentials included: they are never written).
    pub headers: Vec<Header>,
}

/// The stream a server's message came on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stream {
    /// The answer stream of the request with this id.
    Post(Id),
    /// The session's GET stream.
    Get,
}

/// Where a server's message came from.
#[derive(Debug, Clone)]
pub struct Origin {
    /// The session it belongs to (`Mcp-Session-Id`), when the server keeps sessions.
    pub session: Option<String>,
    /// The stream it came on.
    pub stream: Stream,
    /// The HTTP status of the answer it came in (200, or the error the server gave).
    pub status: u16,
    /// The answer's headers the client is given with it.
    pub headers: Vec<Header>,
    /// It came as a JSON body, not as an event.
    pub json: bool,
    /// The `retry:` the server's stream named (passed on to the client's stream).
    pub retry: Option<u64>,
}
