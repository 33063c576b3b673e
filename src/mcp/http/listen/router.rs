//! Where the relay's lines for HTTP clients go: each whole line is routed to the stream it
//! belongs to — an answer to its request's POST (the session it came in first), a server's
//! request or notification to the stream it came on, its progress token's, or the session's
//! GET stream — and a control line is acted on ([`super::control`]).

use super::control::{cut_stream, status_answer};
use super::*;

/// Where the relay writes the clients' messages: each whole line is routed to its stream.
pub struct Router {
    pub(super) face: Arc<Mutex<Face>>,
    pub(super) origins: Option<Arc<Tags<Origin>>>,
    pub(super) partial: Vec<u8>,
    pub(super) log_shared: Arc<Listener>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router").finish()
    }
}

impl Write for Router {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut partial = std::mem::take(&mut self.partial);
        let r = super::super::pipe::cut_lines(&mut partial, buf, |line| {
            self.route(&line);
            Ok(())
        });
        self.partial = partial;
        r
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Router {
    pub(super) fn route(&mut self, line: &[u8]) {
        if let Some(rest) = line.strip_prefix(b"\0") {
            return self.act(rest);
        }
        let origin = self.origins.as_ref().and_then(|o| o.take(line));
        // An answer goes by its id alone: found by a scan, its body never read here (it may
        // be too large to read whole). What else the relay writes is read for where it goes.
        let message = match wire::unread_message(line) {
            Some(answer @ Message::Response { .. }) => answer,
            _ => wire::classify(line),
        };
        let Ok(mut face) = self.face.lock() else {
            return;
        };
        match message {
            Message::Response { id, .. } => {
                let Some(n) = pick_waiter(&face, &id, origin.as_ref()) else {
                    drop(face);
                    self.log_shared.note(&format!(
                        "an answer to {} has no client waiting for it (its stream is gone); dropped",
                        crate::printable::line(&id.0)
                    ));
                    return;
                };
                let mut headers = origin
                    .as_ref()
                    .map(|o| o.headers.clone())
                    .unwrap_or_default();
                let initialized = face.initializing.remove(&id);
                let mut opened = None;
                if initialized && self.log_shared.passage.is_none() {
                    face.issued += 1;
                    let session = self.log_shared.secret.id("session", face.issued);
                    let credential = face
                        .streams
                        .get(&n)
                        .map(|st| st.credential)
                        .unwrap_or_default();
                    face.sessions.push_back((session.clone(), credential));
                    while face.sessions.len() > SESSIONS_MAX {
                        face.sessions.pop_front();
                    }
                    headers.push(("Mcp-Session-Id".into(), session.clone()));
                    if let Some(st) = face.streams.get_mut(&n) {
                        st.session = Some(session.clone());
                    }
                    opened = Some(session);
                } else if let Some(s) = origin.as_ref().and_then(|o| o.session.as_ref()) {
                    if let Some(st) = face.streams.get_mut(&n)
                        && st.session.is_none()
                    {
                        // A remote server's initialize opened this session: the stream is its.
                        st.session = Some(s.clone());
                    }
                    opened = initialized.then(|| s.clone());
                }
                if let Some(session) = opened
                    && let Some(version) = negotiated_version(line)
                {
                    face.negotiated.push_back((session, version));
                    while face.negotiated.len() > SESSIONS_MAX {
                        face.negotiated.pop_front();
                    }
                }
                let status = origin.as_ref().map_or(200, |o| o.status);
                let json = origin.as_ref().is_none_or(|o| o.json || o.status >= 300);
                let Some(st) = face.streams.get_mut(&n) else {
                    return;
                };
                // The client gets its answer under the id it wrote.
                let restored;
                let line: &[u8] = match (&st.original, wire::member(line, "id")) {
                    (Some(o), Some(at)) => {
                        let mut l = line.to_vec();
                        l.splice(at, o.iter().copied());
                        restored = l;
                        &restored
                    }
                    _ => line,
                };
                if !st.started && (json && st.takes_json || status >= 300) {
                    st.whole(status, headers, Bytes::copy_from_slice(line));
                } else {
                    if !st.started {
                        let retry = origin.as_ref().and_then(|o| o.retry);
                        start_events(&mut face, n, status, headers, retry);
                    }
                    push_event(&mut face, n, line);
                }
                end_stream(&mut face, n);
            }
            Message::Request { params, .. } | Message::Notification { params, .. } => {
                let n = stream_for(&face, &params, origin.as_ref());
                match n {
                    Some(n) => {
                        if face.streams.get(&n).is_some_and(|s| !s.started) {
                            let (headers, retry) =
                                origin.map(|o| (o.headers, o.retry)).unwrap_or_default();
                            start_events(&mut face, n, 200, headers, retry);
                        }
                        push_event(&mut face, n, line);
                    }
                    None => {
                        face.unsent.push_back(line.to_vec());
                        while face.unsent.len() > UNSENT_MAX {
                            face.unsent.pop_front();
                        }
                    }
                }
            }
            Message::Other(_) | Message::Invalid(_) => {
                let n = face.gets.values().copied().max();
                if let Some(n) = n {
                    push_event(&mut face, n, line);
                }
            }
        }
    }
}

impl Router {
    /// Carries out a control line.
    pub(super) fn act(&mut self, rest: &[u8]) {
        let Some(asked) = std::str::from_utf8(rest).ok().and_then(control::read) else {
            return;
        };
        let id_of = |raw: &str| crate::json::parse(raw).ok().map(|v| Id::of(&v));
        match asked {
            control::Asked::Cut(raw) => {
                if let Some(id) = id_of(&raw) {
                    cut_stream(&self.face, &id);
                }
            }
            control::Asked::Status {
                status,
                retry_after,
                raw_id,
                text,
            } => {
                if let Some(id) = id_of(&raw_id) {
                    let headers: Vec<Header> = retry_after
                        .map(|s| ("Retry-After".to_owned(), s.to_string()))
                        .into_iter()
                        .collect();
                    status_answer(&self.face, &id, status, headers, &format!("{text}\n"));
                }
            }
        }
    }
}

/// The protocol version an initialize's answer agreed on (`result.protocolVersion`).
pub(super) fn negotiated_version(answer: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(answer).ok()?;
    let v = crate::json::parse(text).ok()?;
    v.as_object()?
        .get("result")?
        .as_object()?
        .get("protocolVersion")?
        .as_str()
        .map(str::to_owned)
}

impl Face {
    /// The version session `s` negotiated, if it is one we saw begin.
    pub(super) fn negotiated(&self, s: &str) -> Option<&str> {
        self.negotiated
            .iter()
            .rev()
            .find(|(k, _)| k == s)
            .map(|(_, v)| v.as_str())
    }
}

/// The stream waiting for the answer `id`: the one of the session the answer came in, else
/// the oldest.
pub(super) fn pick_waiter(face: &Face, id: &Id, origin: Option<&Origin>) -> Option<u64> {
    let q = face.waiting.get(id)?;
    let session = origin.and_then(|o| o.session.as_ref());
    q.iter()
        .copied()
        .find(|n| {
            session.is_some()
                && face
                    .streams
                    .get(n)
                    .is_some_and(|s| s.session.as_ref() == session)
        })
        .or_else(|| q.front().copied())
}

/// The stream a server's request or notification goes on: the stream it came on upstream,
/// the request its progress token names, the session's GET stream, or the newest open POST
/// stream.
pub(super) fn stream_for(
    face: &Face,
    params: &crate::json::Value,
    origin: Option<&Origin>,
) -> Option<u64> {
    let open = |n: &u64| face.streams.get(n).is_some_and(|s| !s.done);
    if let Some(o) = origin {
        match &o.stream {
            Stream::Post(id) => {
                if let Some(n) = pick_waiter(face, id, Some(o)) {
                    return Some(n);
                }
            }
            Stream::Get => {
                if let Some(n) = face.gets.get(&o.session).filter(|n| open(n)) {
                    return Some(*n);
                }
            }
        }
    }
    let token = params
        .as_object()
        .and_then(|p| p.get("progressToken"))
        .map(Id::of);
    if let Some(n) = token
        .and_then(|t| face.progress.get(&t).copied())
        .filter(open)
    {
        return Some(n);
    }
    if let Some(n) = face.gets.values().copied().filter(open).max() {
        return Some(n);
    }
    if origin.is_some() {
        return None;
    }
    face.streams
        .iter()
        .filter(|(_, s)| !s.done && s.tx.is_some() && s.request.is_some())
        .map(|(k, _)| *k)
        .max()
}
