//! How the relay acts on the clients' HTTP streams beyond writing a message: the control
//! lines it writes among the messages for an HTTP client (cut a request's stream; answer it
//! with an HTTP status), and the [`Control`] handle through which it asks the listener what
//! a message cannot carry (a request's headers, whether its client is still there).
//!
//! Lines the relay writes among the messages for an HTTP client to act on a stream beyond
//! writing a message: they go out in order with the messages, after the journal lines that
//! describe them (the relay's group commit), and never reach a stdio client. A control line
//! begins with a NUL byte, which no JSON text can.

use super::*;

/// Cut the stream of the request whose id is the JSON text `raw_id`.
pub fn cut(raw_id: &str) -> Vec<u8> {
    format!("\0cut {raw_id}\n").into_bytes()
}

/// Answer the request `raw_id` with HTTP `status` (and `Retry-After`), `body` (a JSON
/// text on one line) its `application/json` body.
pub fn status(raw_id: &str, status: u16, retry_after: Option<u64>, body: &[u8]) -> Vec<u8> {
    let retry = retry_after.map_or("-".to_owned(), |s| s.to_string());
    let mut out = format!("\0status {status} {retry} {raw_id}\t").into_bytes();
    // Compact JSON holds none of these outside its strings, and escapes them inside.
    out.extend(body.iter().map(|&b| {
        if matches!(b, b'\n' | b'\r' | 0) {
            b' '
        } else {
            b
        }
    }));
    out.push(b'\n');
    out
}

/// What a control line asks.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::mcp::http::listen) enum Asked {
    Cut(String),
    Status {
        status: u16,
        retry_after: Option<u64>,
        raw_id: String,
        text: String,
    },
}

/// Reads a control line (without its NUL and line end).
pub(in crate::mcp::http::listen) fn read(line: &str) -> Option<Asked> {
    if let Some(id) = line.strip_prefix("cut ") {
        return Some(Asked::Cut(id.to_owned()));
    }
    let rest = line.strip_prefix("status ")?;
    let (status, rest) = rest.split_once(' ')?;
    let (retry, rest) = rest.split_once(' ')?;
    let (raw_id, text) = rest.split_once('\t')?;
    Some(Asked::Status {
        status: status.parse().ok()?,
        retry_after: retry.parse().ok(),
        raw_id: raw_id.to_owned(),
        text: text.to_owned(),
    })
}

/// How the relay acts on the clients' HTTP streams beyond writing messages.
pub struct Control {
    pub(super) shared: Arc<Listener>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control").finish()
    }
}

/// Cuts the stream waiting for the answer to `id` without an answer (the `stream_cut`
/// delivery): the client sees its connection end; resuming it gives nothing.
pub(super) fn cut_stream(face: &Mutex<Face>, id: &Id) -> bool {
    {
        let Ok(mut face) = face.lock() else {
            return false;
        };
        let Some(n) = face.waiting.get(id).and_then(|q| q.front().copied()) else {
            return false;
        };
        if let Some(st) = face.streams.get_mut(&n) {
            st.cut = true;
            if !st.started {
                // A stream not yet begun is begun (so the client has an event id to resume
                // from, as a real cut stream would), then cut.
                start_events(&mut face, n, 200, vec![], None);
            }
        }
        end_stream(&mut face, n);
        true
    }
}

/// Answers the request `id` with an HTTP status in place of a JSON-RPC answer (the
/// `http_status` delivery: what a gateway in front of a server sends).
pub(super) fn status_answer(
    face: &Mutex<Face>,
    id: &Id,
    status: u16,
    headers: Vec<Header>,
    body: &str,
) -> bool {
    {
        let Ok(mut face) = face.lock() else {
            return false;
        };
        let Some(n) = face.waiting.get(id).and_then(|q| q.front().copied()) else {
            return false;
        };
        if let Some(st) = face.streams.get_mut(&n)
            && !st.started
        {
            st.whole(status, headers, Bytes::from(body.to_owned()));
        }
        end_stream(&mut face, n);
        true
    }
}

impl Control {
    /// The headers of the request that carried the `tools/call` `line`, as the recording
    /// keeps them (taken); none for a line no request carried.
    pub fn request_headers_of(&self, line: &[u8]) -> Vec<Header> {
        self.shared.call_headers.take(line).unwrap_or_default()
    }

    /// The headers clients' requests carried so far, by name, as the recording keeps them.
    pub fn headers_seen(&self) -> Vec<Header> {
        self.shared
            .seen
            .lock()
            .map(|s| s.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    /// Puts each request and its answer's head in `x`, for a wire log to take (the first
    /// one given stays).
    pub fn log_exchanges(&self, x: crate::mcp::wirelog::Exchanges) {
        let _ = self.shared.exchanges.set(x);
    }

    /// Whether an answer to `id` can no longer be an HTTP status: a stream waiting for it
    /// has sent its head already (the server sent a message on it first, a progress
    /// notification say), so only its end can still tell the client something went wrong.
    pub fn answer_started(&self, id: &Id) -> bool {
        let Ok(face) = self.shared.face.lock() else {
            return false;
        };
        face.waiting.get(id).is_some_and(|q| {
            q.iter()
                .any(|n| face.streams.get(n).is_some_and(|st| st.started))
        })
    }

    /// Whether the client that asked `id` is gone before its answer: every stream waiting
    /// for it has lost its connection (the client was killed, or gave up at its own timeout)
    /// and cannot be resumed for the answer (no event of it was sent, so the client has no
    /// id to resume from, or its revision does not resume). False when nothing waits for
    /// `id` here (its stream was cut, or it came another way).
    pub fn client_gone(&self, id: &Id) -> bool {
        let Ok(face) = self.shared.face.lock() else {
            return false;
        };
        let Some(q) = face.waiting.get(id).filter(|q| !q.is_empty()) else {
            return false;
        };
        q.iter().all(|n| {
            face.streams.get(n).is_none_or(|st| {
                let closed = st.tx.as_ref().is_none_or(|t| t.is_closed());
                closed && (!st.started || !st.resumable)
            })
        })
    }

    /// Why each request refused as invalid since the last look was (taken).
    pub fn refused_since(&self) -> Vec<String> {
        self.shared
            .refused
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default()
    }

    /// No more client messages reach the relay (the proxy is ending).
    pub fn close(&self) {
        if let Ok(mut t) = self.shared.to_relay.lock() {
            *t = None;
        }
    }
}
