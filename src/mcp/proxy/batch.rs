//! JSON-RPC batches (arrays of messages), removed from the protocol in 2025-06-18 but still
//! sent by some peers: relayed as they came, and every `tools/call` inside them judged like
//! any other. A call a fault answers in the server's place is taken out of its batch (and
//! answered on its own); so is an answer a lost acknowledgement drops. Everything else in a
//! batch passes untouched — the batch is rewritten only when a fault changes it.

use super::answers::read_answer;
use super::link::{HeldAnswer, Relay};
use crate::json::{Value, compact};
use crate::mcp::wire::Id;
use crate::storm::Prelude;

impl Relay {
    /// A batch from the client; false when it holds no `tools/call` (relay it as it is).
    pub(super) fn client_batch(&mut self, items: &[Value], line: &[u8]) -> bool {
        let calls = |m: &Value| {
            let o = m.as_object()?;
            (o.get("method")?.as_str()? == "tools/call").then_some(())?;
            let id = o.get("id")?;
            let params = o.get("params").and_then(Value::as_object);
            let (tool, _) = super::calls::tool_name(params);
            let args = params
                .and_then(|p| p.get("arguments"))
                .cloned()
                .unwrap_or_else(|| crate::obj! {});
            Some((Id::of(id), compact(id), tool, args))
        };
        if !self.recording || !items.iter().any(|m| calls(m).is_some()) {
            return false;
        }
        let mut kept = Vec::with_capacity(items.len());
        let mut answered_here = Vec::new();
        let mut forwarded = Vec::new();
        let mut changed = false;
        for m in items {
            let Some((id, raw, tool, args)) = calls(m) else {
                kept.push(m.clone());
                continue;
            };
            if self.refuses_call(&raw) {
                // Answered with an error on its own, and taken out of the batch.
                changed = true;
                continue;
            }
            let note = Some("it came in a batch (no latency is applied inside a batch)".to_owned());
            match self.begin(&tool, args, note, raw, id.clone()) {
                Some((call, Prelude::Skip(outcome))) => {
                    changed = true;
                    answered_here.push((call, outcome));
                }
                Some((call, Prelude::Run { .. })) => {
                    forwarded.push(call);
                    kept.push(m.clone());
                }
                None => {
                    self.client_requests.insert(id);
                    kept.push(m.clone());
                }
            }
        }
        // The batch's line goes first; its calls ran only if it was held for the server (and
        // are taken back, like any request, if the write does not get past it).
        let before = self.server_held.len();
        let sent = kept.is_empty()
            || if changed {
                let mut out = compact(&Value::Array(kept)).into_bytes();
                out.push(b'\n');
                self.send_server(&out)
            } else {
                self.send_server(line)
            };
        let held_to = self.server_held.len();
        for call in forwarded {
            if sent {
                self.forward(call);
                if held_to > before {
                    self.unsent.push((call, before..held_to));
                }
            }
        }
        for (call, outcome) in answered_here {
            if let Some(p) = self.pending.get_mut(&call) {
                p.injected = Some(outcome);
            }
            self.answer_injected(call);
        }
        true
    }

    /// A batch from the server; false when it answers none of the calls in hand.
    pub(super) fn server_batch(&mut self, items: &[Value], line: &[u8]) -> bool {
        let answered: Vec<(usize, u64)> = items
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let o = m.as_object()?;
                if !(o.contains_key("result") || o.contains_key("error")) {
                    return None;
                }
                Some((i, self.answered_call(&Id::of(o.get("id")?))?))
            })
            .collect();
        if answered.is_empty() {
            return false;
        }
        let mut dropped = Vec::new();
        let answered_at: Vec<usize> = answered.iter().map(|(i, _)| *i).collect();
        let ids: Vec<String> = answered
            .iter()
            .filter_map(|(_, call)| self.pending.get(call).map(|p| p.raw_id.clone()))
            .collect();
        for (i, call) in answered {
            let o = items[i].as_object();
            let (answer, delivered) = read_answer(
                o.and_then(|o| o.get("result")).cloned(),
                o.and_then(|o| o.get("error")).cloned(),
                None,
            );
            let lost = self.will_lose_answer(call) && answer.is_success();
            if lost {
                dropped.push(i);
            }
            // Journaled now; the batch carries the answer (or the fault's own answer goes).
            self.ended_by_server(call, answer, delivered, None, false, true);
        }
        let before = self.client_held.len();
        if dropped.is_empty() {
            self.send_client(line);
        } else {
            let rest: Vec<Value> = items
                .iter()
                .enumerate()
                .filter(|(i, _)| !dropped.contains(i))
                .map(|(_, m)| m.clone())
                .collect();
            if !rest.is_empty() {
                let mut out = compact(&Value::Array(rest)).into_bytes();
                out.push(b'\n');
                self.send_client(&out);
            }
        }
        // The calls' journal lines stand behind the batch; its members that answer no call
        // go on alone if those lines cannot be written.
        if self.client_held.len() > before {
            let at = before..self.client_held.len();
            let others: Vec<Value> = items
                .iter()
                .enumerate()
                .filter(|(i, _)| !answered_at.contains(i))
                .map(|(_, m)| m.clone())
                .collect();
            let rest = (!others.is_empty()).then(|| {
                let mut out = compact(&Value::Array(others)).into_bytes();
                out.push(b'\n');
                out
            });
            self.answers_held.push(HeldAnswer { at, ids, rest });
        }
        true
    }
}
