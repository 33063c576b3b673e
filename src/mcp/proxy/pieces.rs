//! Lines too long to read as a message, passed on in pieces as they come: a client's long
//! `tools/call` is known by a scan (its id, tool and arguments read without parsing it) and
//! judged like any other; a server's long answer is kept or summarised for the record while
//! its pieces reach the client.

use sha2::{Digest, Sha256};

use super::answers::sniffed_answer;
use super::link::{LongAnswer, LongRequest, Relay, raw_id};
use crate::mcp::session::{Delivered, Unreadable};
use crate::mcp::summary::{FIRST_PIECE, summarise_arguments};
use crate::mcp::transport::{Side, trim};
use crate::mcp::wire::{self, Id};
use crate::storm::Prelude;

/// What a line we cannot parse says it is, read without parsing it.
pub(super) struct Sniffed {
    pub(super) raw_id: String,
    pub(super) id: Id,
    pub(super) tool: String,
    pub(super) arguments: Vec<u8>,
}

pub(super) fn sniff_call(line: &[u8]) -> Option<Sniffed> {
    if wire::member_str(line, "method").as_deref() != Some("tools/call") {
        return None;
    }
    // The id may come after the params (then it is known only at the line's end).
    let (raw, id) = match wire::member(line, "id") {
        Some(r) => (
            std::str::from_utf8(&line[r.clone()]).ok()?.to_owned(),
            raw_id(&line[r])?,
        ),
        None => ("null".to_owned(), Id(ID_TO_COME.to_owned())),
    };
    let (tool, arguments) = wire::call_parts(line)?;
    Some(Sniffed {
        raw_id: raw,
        id,
        tool,
        arguments: arguments.to_vec(),
    })
}

/// The id a long request answers to until its last piece names its real one.
pub(super) const ID_TO_COME: &str = "\u{0}id to come";

/// Bytes of a long line's end kept to find an id written last.
pub(super) const TAIL: usize = 4096;

/// Keeps the last [`TAIL`] bytes seen of a long line.
pub(super) fn keep_tail(tail: &mut Vec<u8>, piece: &[u8]) {
    tail.extend_from_slice(piece);
    if tail.len() > TAIL {
        tail.drain(..tail.len() - TAIL);
    }
}

impl Relay {
    /// A piece of a long client line.
    pub(super) fn client_piece(&mut self, piece: Vec<u8>, last: bool) {
        if self.long_request.is_none() {
            let mut long = LongRequest {
                call: None,
                swallow: false,
                id_last: false,
                tail: Vec::new(),
                refused: None,
            };
            let sniffed = if self.recording {
                sniff_call(&piece)
            } else {
                None
            };
            if let Some(s) = &sniffed
                && self.recording_stopped()
            {
                // No call passes unrecorded, however long: none of it is sent.
                long.id_last = s.id.0 == ID_TO_COME;
                long.swallow = true;
                long.refused = Some(s.raw_id.clone());
            } else if let Some(s) = sniffed {
                long.id_last = s.id.0 == ID_TO_COME;
                // Judged on its first piece: the sizes and digests are of what that piece holds.
                let args = summarise_arguments(FIRST_PIECE, &s.arguments);
                let note = "the request was over 8 MB: its arguments are summarised".to_owned();
                if let Some((call, prelude)) = self.begin(&s.tool, args, Some(note), s.raw_id, s.id)
                {
                    long.call = Some(call);
                    long.swallow = matches!(prelude, Prelude::Skip(_));
                    // Latency cannot hold a message that is already on its way.
                    let prelude = match prelude {
                        Prelude::Run { .. } => Prelude::Run { latency: None },
                        skip => skip,
                    };
                    if long.swallow {
                        // Answered when its last piece has arrived.
                        if let (Some(p), Prelude::Skip(outcome)) =
                            (self.pending.get_mut(&call), prelude)
                        {
                            p.injected = Some(outcome);
                        }
                    } else {
                        self.start(call, prelude, None);
                    }
                }
            }
            if long.call.is_none() && long.refused.is_none() {
                self.note_once(
                    "long-client",
                    "a client message over 8 MB was relayed untouched (not read)",
                );
            }
            self.long_request = Some(long);
        }
        if let Some(l) = self.long_request.as_mut()
            && l.id_last
        {
            keep_tail(&mut l.tail, trim(&piece));
        }
        // An id written last: the call answers to it before the server can read the line.
        if last
            && let Some(l) = self.long_request.as_ref()
            && l.id_last
            && let Some(call) = l.call
            && let Some(r) = wire::tail_id(&l.tail)
            && let Some(id) = raw_id(&l.tail[r.clone()])
        {
            let raw = String::from_utf8_lossy(&l.tail[r]).into_owned();
            self.rekey(call, id, raw);
        }
        let swallow = self.long_request.as_ref().is_some_and(|l| l.swallow);
        if !swallow {
            self.piece(Side::Server, &piece, last);
        }
        if last
            && let Some(l) = self.long_request.take()
            && l.swallow
        {
            if let Some(call) = l.call {
                self.answer_injected(call);
            } else if let Some(id) = l.refused {
                let id = match wire::tail_id(&l.tail).filter(|_| l.id_last) {
                    Some(r) => String::from_utf8_lossy(&l.tail[r]).into_owned(),
                    None => id,
                };
                self.refuses_call(&id);
            }
        }
    }

    /// A piece of a long server line.
    pub(super) fn server_piece(&mut self, piece: Vec<u8>, last: bool) {
        let first = !self.server_in_pieces;
        self.server_in_pieces = !last;
        if self.long_answer.is_none() && first {
            let id = wire::member(&piece, "id").and_then(|r| raw_id(&piece[r]));
            let call = id.as_ref().and_then(|id| self.answered_call(id));
            // A response whose id comes after its body: bound to its call at the end.
            let response_first = id.is_none()
                && (wire::member(&piece, "result").is_some()
                    || wire::member(&piece, "error").is_some());
            if call.is_some() || response_first {
                let kind = sniffed_answer(&piece);
                let lost = call.is_some_and(|c| self.will_lose_answer(c));
                self.long_answer = Some(LongAnswer {
                    call,
                    tail: Vec::new(),
                    hasher: Sha256::new(),
                    bytes: 0,
                    swallow: lost && kind.is_success(),
                    kind,
                });
            }
        }
        let Some(mut long) = self.long_answer.take() else {
            self.note_once(
                "long-server",
                "a server message over 8 MB was relayed untouched (not read)",
            );
            return self.piece(Side::Client, &piece, last);
        };
        let content = if last { trim(&piece) } else { &piece[..] };
        long.hasher.update(content);
        long.bytes += content.len() as u64;
        if long.call.is_none() {
            keep_tail(&mut long.tail, content);
        }
        if !last {
            if !long.swallow {
                self.piece(Side::Client, &piece, false);
            }
            self.long_answer = Some(long);
            return;
        }
        let u = Unreadable {
            bytes: long.bytes,
            sha256: crate::json::hex(&long.hasher.finalize()),
            reason: "a message over 8 MB".into(),
            raw: None,
        };
        // Journaled before the last piece lets the client read the message; judged by what its
        // first piece said (the same reading that decided whether to drop it). An answer whose
        // id came last is bound now; its earlier pieces went out already, so it cannot be
        // dropped.
        let bound = long.call.map(|c| (c, true)).or_else(|| {
            wire::tail_id(&long.tail)
                .and_then(|r| raw_id(&long.tail[r]))
                .and_then(|id| self.answered_call(&id))
                .map(|c| (c, false))
        });
        match bound {
            Some((call, droppable)) => self.ended_by_server(
                call,
                long.kind,
                Delivered::Unreadable(u),
                None,
                true,
                droppable,
            ),
            None => self.note_once(
                "long-server",
                "a server message over 8 MB was relayed untouched (not read)",
            ),
        }
        if !long.swallow {
            self.piece(Side::Client, &piece, true);
        }
    }
}
