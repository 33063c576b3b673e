//! Server-sent events as Streamable HTTP uses them: a parser that takes a stream's bytes in
//! whatever pieces they arrive and gives whole events (`id:`, `data:`, `event:`, `retry:`),
//! and the writer of the events the proxy sends. A JSON-RPC message is one event's data; data
//! split over several `data:` lines joins with a newline, which JSON reads as white space.

/// One event.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Event {
    /// Its `id:`, when it had one (the stream's position, for `Last-Event-ID`).
    pub id: Option<String>,
    /// Its `event:` type (none: "message").
    pub kind: Option<String>,
    /// Its data lines, joined by newlines.
    pub data: String,
    /// A `retry:` in milliseconds, when it had one.
    pub retry: Option<u64>,
}

/// Why a stream could not be read as events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// One event grew past the bound.
    #[error("an event of more than {0} bytes")]
    TooLarge(usize),
    /// Not UTF-8.
    #[error("an event that is not UTF-8")]
    NotUtf8,
}

/// An incremental parser.
#[derive(Debug)]
pub struct Parser {
    /// Bytes of the line not yet ended.
    line: Vec<u8>,
    /// The event being read.
    event: Event,
    /// Whether the event has any field (an empty event is not dispatched).
    started: bool,
    /// Whether it has a `data:` line yet.
    has_data: bool,
    /// The last CR ended a line (a LF right after it is the same line end).
    after_cr: bool,
    /// The most bytes one event may hold.
    limit: usize,
    /// Bytes of the event being read.
    size: usize,
}

impl Parser {
    /// A parser that refuses events over `limit` bytes.
    pub fn new(limit: usize) -> Parser {
        Parser {
            line: Vec::new(),
            event: Event::default(),
            started: false,
            has_data: false,
            after_cr: false,
            limit,
            size: 0,
        }
    }

    /// Takes the next bytes of the stream; whole events go to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), SseError> {
        for &b in bytes {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    self.end_line(&line, out)?;
                }
                _ => {
                    self.after_cr = false;
                    self.size += 1;
                    if self.size > self.limit {
                        return Err(SseError::TooLarge(self.limit));
                    }
                    self.line.push(b);
                }
            }
        }
        Ok(())
    }

    fn end_line(&mut self, line: &[u8], out: &mut Vec<Event>) -> Result<(), SseError> {
        if line.is_empty() {
            if self.started {
                out.push(std::mem::take(&mut self.event));
            }
            self.event = Event::default();
            self.started = false;
            self.has_data = false;
            self.size = 0;
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let text = std::str::from_utf8(line).map_err(|_| SseError::NotUtf8)?;
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.event.data.push('\n');
                }
                self.event.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.event.id = Some(value.to_owned()),
            "event" => self.event.kind = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.event.retry = Some(ms);
                }
            }
            _ => return Ok(()),
        }
        self.started = true;
        Ok(())
    }
}

/// An event carrying `data` (one JSON message, no line breaks), with `id` when given.
pub fn event(id: Option<&str>, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 32);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    // A message arrives as one line; a stray CR or LF inside it would end the data line, so
    // each piece goes on a `data:` line of its own (they join back with a newline).
    for (i, piece) in data.split(|&b| b == b'\n' || b == b'\r').enumerate() {
        if i > 0 && piece.is_empty() {
            continue;
        }
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(piece);
        out.push(b'\n');
    }
    out.push(b'\n');
    out
}

/// A priming event: an id and empty data, so a client can resume before the first message.
pub fn priming(id: &str, retry_ms: Option<u64>) -> Vec<u8> {
    let mut out = format!("id: {id}\n").into_bytes();
    if let Some(ms) = retry_ms {
        out.extend_from_slice(format!("retry: {ms}\n").as_bytes());
    }
    out.extend_from_slice(b"data: \n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(pieces: &[&[u8]]) -> Vec<Event> {
        let mut p = Parser::new(1 << 20);
        let mut out = Vec::new();
        for piece in pieces {
            p.feed(piece, &mut out).expect("parses");
        }
        out
    }

    #[test]
    fn events_arrive_whole_whatever_the_pieces() {
        let text = b"id: 7\nretry: 1500\ndata: {\"a\":\ndata: 1}\n\n: a comment\n\ndata:x\r\n\r\n";
        let whole = parse_all(&[text]);
        for cut in 0..text.len() {
            let (a, b) = text.split_at(cut);
            assert_eq!(parse_all(&[a, b]), whole, "cut at {cut}");
        }
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[0].id.as_deref(), Some("7"));
        assert_eq!(whole[0].retry, Some(1500));
        assert_eq!(whole[0].data, "{\"a\":\n1}");
        assert_eq!(whole[1].data, "x");
    }

    #[test]
    fn an_event_past_the_bound_is_refused() {
        let mut p = Parser::new(8);
        let mut out = Vec::new();
        assert_eq!(
            p.feed(b"data: 0123456789\n\n", &mut out),
            Err(SseError::TooLarge(8))
        );
    }

    #[test]
    fn what_we_write_reads_back() {
        let bytes = event(Some("s1-3"), b"{\"jsonrpc\":\"2.0\"}");
        let got = parse_all(&[&bytes, &priming("s1-0", Some(500))]);
        assert_eq!(got[0].id.as_deref(), Some("s1-3"));
        assert_eq!(got[0].data, "{\"jsonrpc\":\"2.0\"}");
        assert_eq!(got[1].data, "");
        assert_eq!(got[1].retry, Some(500));
    }
}
