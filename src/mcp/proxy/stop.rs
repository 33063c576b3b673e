//! When the recording cannot take a call: the proxy never lets a `tools/call` reach the
//! server, nor an answer reach the client, without its journal line. Once the recording is
//! full (the next call might not fit a file) or the journal could not be written, the
//! recording has stopped: every later `tools/call` is answered with a JSON-RPC error and not
//! sent; the requests and answers of the batch whose journal lines were lost are taken back
//! (the requests never sent, the answers withheld, an error in their place). The recording
//! says so (`recording_stopped` in its sidecar, when that can still be written) and `check`
//! fails `Recording complete`; calls whose answers were withheld stay in flight on record.
//! After a failed write the journal takes no more call lines (their counters would count
//! calls whose lines were lost), so every later answer of a call in flight is withheld too.
//! Calls in flight are taken while one more fits at its largest, but their answers come
//! later: an answer the files have no room for is not kept (the client still gets it; the
//! call is on record, its output not captured), and the recording stops there.

use std::ops::Range;

use super::link::Relay;
use crate::error::Error;
use crate::json::Value;
use crate::mcp::session::{CallRecord, Delivered, Stopped};
use crate::mcp::wire::error_line_as;
use crate::obj;

/// The JSON-RPC error code of an answer the proxy gives because the recording stopped.
const STOPPED_CODE: i64 = -32603;

/// Why the recording stops when an answer had no room in its files.
pub(super) const NO_ROOM: &str = "the recording is full (the answer of a call in flight had no \
     room in its files, 8,000,000 bytes each: the client got it, the recording keeps the call \
     without it)";

impl Relay {
    /// Whether the recording has stopped taking calls (checking, first, whether one more
    /// call could still fit it).
    pub(super) fn recording_stopped(&mut self) -> bool {
        if self.stopped.is_none()
            && let Some(r) = self.recorder.as_ref()
            && r.full(self.pending.len())
        {
            let why = r.trouble().unwrap_or_else(|| {
                "the recording is full (one more call might not fit its files: 8,000,000 bytes \
                 each, and 32,000,000 for its journal)"
                    .to_owned()
            });
            let _ = self.stop_recording(&why, 0);
        }
        self.stopped.is_some()
    }

    /// Whether the files have room for the answer in `record` (and the output of `outcome`,
    /// unless the answer holds it), beside the calls still in flight.
    pub(super) fn answer_has_room(
        &self,
        record: &CallRecord,
        outcome: &crate::error::Result<Value>,
        output_in_answer: bool,
    ) -> bool {
        let Some(r) = self.recorder.as_ref() else {
            return true;
        };
        r.has_room(self.pending.len(), || {
            let mut text = String::new();
            let answer = record.write_compact(&mut text);
            let output = match outcome {
                Ok(v) if !output_in_answer => {
                    crate::json::canonical_len(v).min(crate::redact::MAX_CAPTURE_BYTES)
                }
                _ => answer,
            };
            // Redaction may lengthen a value a little (a short secret becomes the marker).
            (output + 1024, text.len() + 1024)
        })
    }

    /// Ends call `handle` without keeping its answer, which the files have no room for: the
    /// engine records it without its output, `record` without the answer.
    pub(super) fn unkept(
        &mut self,
        handle: &crate::storm::CallHandle,
        record: &mut CallRecord,
        outcome: crate::error::Result<Value>,
    ) {
        match outcome {
            Ok(_) => self.storm.end_call_unkept(handle),
            Err(e) => self.storm.end_call(handle, Err(e)),
        }
        record.delivered = Delivered::Unrecorded;
        record.dropped = None;
        let why = "the recording had no room for its answer: the client got it, the recording \
                   did not keep it";
        record.note = Some(match record.note.take() {
            Some(n) => format!("{n}; {why}"),
            None => why.to_owned(),
        });
    }

    /// A `tools/call` with request id `raw_id` (its JSON text): true when the recording has
    /// stopped and the client was answered with an error instead (nothing is sent on).
    pub(super) fn refuses_call(&mut self, raw_id: &str) -> bool {
        if !self.recording_stopped() {
            return false;
        }
        let line = error_line_as(raw_id, STOPPED_CODE, &self.stopped_message(), None);
        self.send_client(&line);
        if let Some(st) = self.session.recording_stopped.as_mut() {
            st.refused += 1;
        }
        true
    }

    fn stopped_message(&self) -> String {
        format!(
            "toolstorm: this call was not sent to the MCP server: {}, and the proxy lets no \
             call through that it cannot record",
            self.stopped.as_deref().unwrap_or("the recording stopped")
        )
    }

    /// The recording stops taking calls, for `why`: said once on stderr, and in the
    /// recording (a facts line: with the next batch, or at once after a failed write). The
    /// `lost` calls begun last are not in the recording (their lines could not be written):
    /// they are refused, not recorded. The result says whether that write went.
    pub(super) fn stop_recording(&mut self, why: &str, lost: usize) -> std::io::Result<()> {
        if self.stopped.is_some() {
            // Stopped already (full, then a write failed in the same batch): the calls lost
            // now were counted as taken.
            if lost == 0 {
                return Ok(());
            }
            if let Some(st) = self.session.recording_stopped.as_mut() {
                st.after_calls = st.after_calls.saturating_sub(lost as u64);
                st.refused += lost as u64;
            }
            return self.facts_changed();
        }
        self.stopped = Some(why.to_owned());
        self.note(&format!(
            "{why}: the recording stops here; every tools/call from now on is answered with an \
             error and not sent to the server"
        ));
        self.session.recording_stopped = Some(Stopped {
            reason: why.to_owned(),
            after_calls: self.storm.call_count().saturating_sub(lost) as u64,
            refused: lost as u64,
        });
        self.facts_changed()
    }

    /// The journal lines of the batch in hand could not be written: the recording stops, the
    /// batch's requests are not sent (their calls end with an error the client gets), its
    /// answers are withheld (an error in place of each), and a call whose begin line was
    /// lost and that waits (on injected latency, or to be answered in the server's place)
    /// is refused now: nothing off the record reaches the server or the client.
    pub(super) fn journal_failed(&mut self, e: &std::io::Error) {
        let lost = self
            .recorder
            .as_mut()
            .map(|r| r.take_lost_begins())
            .unwrap_or_default();
        // The mark goes on its own, at once: the failed lines were cut back, which often
        // gives back room enough for one short line (the space taken ahead of the lines).
        if self
            .stop_recording(
                &format!("the journal could not be written ({e})"),
                lost.len(),
            )
            .is_err()
        {
            self.note_once(
                "mark",
                "the recording's stop could not be written either: readers see its calls in flight",
            );
        }
        let message = format!(
            "toolstorm: this call's answer was withheld: the journal could not be written ({e}), \
             and the proxy gives no answer it has not recorded; the tool may have run"
        );
        // Answers first: the errors that replace the requests below are answers of their own.
        let answers = std::mem::take(&mut self.answers_held);
        cut(
            &mut self.client_held,
            answers.iter().map(|h| h.at.clone()).collect(),
        );
        for held in answers {
            // What answers no call (a listing, a notification) was never in question.
            if let Some(rest) = &held.rest {
                self.send_client(rest);
            }
            for id in &held.ids {
                let line = error_line_as(id, STOPPED_CODE, &message, None);
                self.send_client(&line);
            }
        }
        let requests = std::mem::take(&mut self.unsent);
        cut(
            &mut self.server_held,
            requests.iter().map(|(_, r)| r.clone()).collect(),
        );
        let why = self.stopped_message();
        for (call, _) in requests {
            let Some(p) = self.pending.get_mut(&call) else {
                continue;
            };
            p.forwarded = false;
            self.storm.body_not_started(&p.handle);
            self.refuse_begun(call, &why);
        }
        for call in lost {
            let Some(p) = self.pending.get_mut(&call) else {
                continue;
            };
            // Not sent yet: its timer finds no line (or no call) and does nothing.
            if !p.forwarded && (p.line.take().is_some() || p.injected.is_some()) {
                self.storm.body_not_started(&p.handle);
                self.refuse_begun(call, &why);
            }
        }
    }

    /// Ends begun call `call`, which never reached the server, with an error the client gets.
    fn refuse_begun(&mut self, call: u64, why: &str) {
        let Some(p) = self.take(call) else {
            return;
        };
        let line = error_line_as(&p.raw_id, STOPPED_CODE, why, None);
        let delivered = Delivered::Error(obj! {
            "error" => obj! {"code" => STOPPED_CODE, "message" => why},
        });
        let outcome = Err(Error::raised("RecordingStopped", why.to_owned()));
        self.end_unsent(p, outcome, delivered, line);
    }
}

/// Takes `ranges` (which may repeat or nest: the calls of one batch line share its range)
/// out of `bytes`.
fn cut(bytes: &mut Vec<u8>, mut ranges: Vec<Range<usize>>) {
    ranges.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(m) if r.start < m.end => m.end = m.end.max(r.end),
            _ => merged.push(r),
        }
    }
    for r in merged.into_iter().rev() {
        let end = r.end.min(bytes.len());
        if r.start < end {
            bytes.drain(r.start..end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn cut_takes_out_overlapping_and_repeated_ranges_once() {
        let mut b = b"aaBBccDDDee".to_vec();
        cut(&mut b, vec![6..9, 2..4, 2..4, 7..8]);
        assert_eq!(b, b"aaccee");
        let mut b = b"xyz".to_vec();
        cut(&mut b, vec![1..10, 2..3]);
        assert_eq!(b, b"x");
    }
}
