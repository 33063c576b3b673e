//! The proxy's relay reads and writes byte streams of one message per line (a child's pipes,
//! our stdin and stdout). An HTTP side gives it the same: an [`Inlet`] takes the whole
//! messages async tasks send — into a stream read like a pipe ([`LinesIn`], for replay and
//! the executor's client), or straight to the proxy's relay as the events its reader threads
//! would have sent (no thread in between: each hand-off between threads costs a wake-up) —
//! and [`LinesOut`] cuts what the relay writes into whole lines for them. Every way is
//! bounded, so a slow side slows the other as a full pipe would.

use std::io::{Read, Write};
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::mcp::transport::{self, Event, Flow, Look, Side, Sink};
use crate::mcp::wire;

/// Messages in flight on one channel before its sender waits.
pub const DEPTH: usize = 64;

/// Where an HTTP side sends the messages it read, one at a time (no line break in them); the
/// stream of messages ends when every clone of the inlet is gone.
#[derive(Clone, Debug)]
pub enum Inlet {
    /// Into a [`LinesIn`].
    Lines(mpsc::Sender<Vec<u8>>),
    /// To the proxy's relay, as one of its sides.
    Relay(Arc<Feed>),
}

/// One side of the proxy fed by async tasks: each message is counted against the side's
/// byte budget (a task waits for room, as a reader thread does), read ahead when it is short,
/// and sent to the relay as a line, or in pieces when it is too long to read as a message.
/// When the last clone goes, the relay hears the side ended.
#[derive(Debug)]
pub struct Feed {
    tx: Box<dyn Sink>,
    /// Held while a long message's pieces are queued.
    whole: std::sync::Mutex<()>,
    side: Side,
    flow: Arc<Flow>,
    look: Option<Look>,
}

impl Drop for Feed {
    fn drop(&mut self) {
        let _ = self.tx.send(Event::Eof(self.side));
    }
}

/// An inlet that feeds the relay's `tx` as `side`, within `flow`'s budget; `look` runs on each
/// message read ahead (as the reader thread of that side would run it).
pub fn feed(tx: impl Sink + 'static, side: Side, flow: Arc<Flow>, look: Option<Look>) -> Inlet {
    Inlet::Relay(Arc::new(Feed {
        tx: Box::new(tx),
        whole: std::sync::Mutex::new(()),
        side,
        flow,
        look,
    }))
}

impl Inlet {
    /// Sends a message, waiting for room; false once the other end is gone. A message the
    /// relay takes in pieces is counted whole before its first piece goes, and then its pieces
    /// go one after another with no wait between them: no other message's pieces come between
    /// them, and a sender cancelled while it waits has sent nothing (a cancelled send never
    /// leaves the relay in the middle of a message).
    pub async fn send(&self, line: Vec<u8>) -> bool {
        match self {
            Inlet::Lines(tx) => tx.send(line).await.is_ok(),
            Inlet::Relay(feed) => {
                let n = line.len() + 1;
                feed.flow.acquire_async(n).await;
                feed.pass(line)
            }
        }
    }

    /// Sends a message without waiting (from code that cannot wait): into a full channel it
    /// is dropped (false); to the relay it goes past the budget.
    pub fn try_send(&self, line: Vec<u8>) -> bool {
        match self {
            Inlet::Lines(tx) => tx.try_send(line).is_ok(),
            Inlet::Relay(feed) => {
                feed.flow.count(line.len() + 1);
                feed.pass(line)
            }
        }
    }
}

impl Inlet {
    /// Ends the stream a [`LinesIn`] reads from this inlet, after what was sent before it (a
    /// signal's stop, from a plain thread: it waits for room). Nothing for the relay's inlet,
    /// which ends when its last clone goes.
    pub fn end_lines(&self) {
        if let Inlet::Lines(tx) = self {
            let _ = tx.blocking_send(Vec::new());
        }
    }
}

impl Feed {
    /// Sends the relay a message already counted in the budget, as the reader thread cuts a
    /// stream: a line (read ahead when short), or, when it is longer than a message the relay
    /// reads, pieces — the first holds the message's first [`wire::MAX_PARSED_LINE`] bytes
    /// and one more (what the relay judges a long message by), the others at most
    /// [`transport::PIECE`] bytes. False once the relay is gone.
    fn pass(&self, mut line: Vec<u8>) -> bool {
        line.push(b'\n');
        if line.len() <= wire::MAX_PARSED_LINE {
            let read = transport::read_here(&line, &self.flow, self.look);
            return self.tx.send(Event::Line(self.side, line, read));
        }
        let mut rest = line.split_off(wire::MAX_PARSED_LINE + 1);
        let mut piece = line;
        {
            // All its pieces are queued before the relay takes any (it may be taking them on
            // this very thread, and another task's pieces must not come between them).
            let _whole = self.whole.lock();
            loop {
                let last = rest.is_empty();
                if !self.tx.queue(Event::Piece(self.side, piece, last)) {
                    return false;
                }
                if last {
                    break;
                }
                let tail = rest.split_off(rest.len().min(transport::PIECE));
                piece = std::mem::replace(&mut rest, tail);
            }
        }
        self.tx.run();
        true
    }
}

/// A byte stream made of the messages sent on a channel, each followed by a newline; it ends
/// when every sender is gone, or at an empty message ([`Inlet::end_lines`]: no message is
/// empty).
#[derive(Debug)]
pub struct LinesIn {
    rx: mpsc::Receiver<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
}

/// An inlet and the stream that reads what is sent into it.
pub fn lines_in() -> (Inlet, LinesIn) {
    let (tx, rx) = mpsc::channel(DEPTH);
    (
        Inlet::Lines(tx),
        LinesIn {
            rx,
            current: Vec::new(),
            at: 0,
        },
    )
}

impl Read for LinesIn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at >= self.current.len() {
            // Called on a plain thread (the proxy's reader), never inside the runtime.
            match self.rx.blocking_recv() {
                Some(m) if m.is_empty() => {
                    self.rx.close();
                    return Ok(0);
                }
                Some(mut m) => {
                    m.push(b'\n');
                    self.current = m;
                    self.at = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// A writer that sends each whole line written to it (without its line ending) on a
/// channel; a write fails with `BrokenPipe` once the receiver is gone.
#[derive(Debug)]
pub struct LinesOut {
    tx: mpsc::Sender<Vec<u8>>,
    partial: Vec<u8>,
}

/// A writer of lines and the channel that receives them.
pub fn lines_out() -> (LinesOut, mpsc::Receiver<Vec<u8>>) {
    let (tx, rx) = mpsc::channel(DEPTH);
    (
        LinesOut {
            tx,
            partial: Vec::new(),
        },
        rx,
    )
}

/// Sends `line`, waiting for room when the channel is full: on a plain thread as such, and
/// on a worker of the runtime (a task that runs the relay writes through here) in place,
/// the worker's other tasks handed to another. `BrokenPipe` once the receiver is gone.
fn send_waiting(tx: &mpsc::Sender<Vec<u8>>, line: Vec<u8>) -> std::io::Result<()> {
    let gone = |_| std::io::Error::from(std::io::ErrorKind::BrokenPipe);
    let line = match tx.try_send(line) {
        Ok(()) => return Ok(()),
        Err(mpsc::error::TrySendError::Closed(_)) => {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        Err(mpsc::error::TrySendError::Full(line)) => line,
    };
    let on_worker = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if on_worker {
        tokio::task::block_in_place(|| tx.blocking_send(line)).map_err(gone)
    } else {
        tx.blocking_send(line).map_err(gone)
    }
}

/// Cuts what is written into whole lines: `partial` holds a line not yet ended; each whole,
/// non-blank line (without its line ending) goes to `each`.
pub fn cut_lines(
    partial: &mut Vec<u8>,
    buf: &[u8],
    mut each: impl FnMut(Vec<u8>) -> std::io::Result<()>,
) -> std::io::Result<usize> {
    let mut rest = buf;
    while let Some(end) = memchr::memchr(b'\n', rest) {
        partial.extend_from_slice(&rest[..end]);
        rest = &rest[end + 1..];
        let mut line = std::mem::take(partial);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            each(line)?;
        }
    }
    partial.extend_from_slice(rest);
    Ok(buf.len())
}

impl Write for LinesOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let tx = &self.tx;
        cut_lines(&mut self.partial, buf, |line| send_waiting(tx, line))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A runtime, and an inlet feeding a relay's channel as `side` within a new budget.
    fn fed(
        side: Side,
    ) -> (
        tokio::runtime::Runtime,
        std::sync::mpsc::Receiver<Event>,
        Arc<Flow>,
        Inlet,
    ) {
        let rt = super::super::runtime().expect("a runtime");
        let (tx, rx) = std::sync::mpsc::channel();
        let flow = Flow::new();
        let inlet = feed(
            crate::mcp::proxy::inbox::Tx::plain(tx),
            side,
            Arc::clone(&flow),
            None,
        );
        (rt, rx, flow, inlet)
    }

    #[test]
    fn lines_cross_whole_in_both_directions() {
        let (mut out, mut rx) = lines_out();
        out.write_all(b"{\"a\":1}\n{\"b\"").expect("writes");
        out.write_all(b":2}\r\n\n").expect("writes");
        drop(out);
        let mut got = Vec::new();
        while let Some(l) = rx.blocking_recv() {
            got.push(l);
        }
        assert_eq!(got, vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()]);

        let (tx, mut input) = lines_in();
        std::thread::spawn(move || {
            for m in got {
                let _ = tx.try_send(m);
            }
        });
        let mut text = String::new();
        input.read_to_string(&mut text).expect("reads");
        assert_eq!(text, "{\"a\":1}\n{\"b\":2}\n");
    }

    #[test]
    fn a_feed_ends_its_side_when_the_last_inlet_goes_and_counts_what_it_sent() {
        let (rt, rx, flow, inlet) = fed(Side::Server);
        let second = inlet.clone();
        rt.block_on(async { assert!(inlet.send(ANSWER.to_vec()).await) });
        assert!(second.try_send(b"{}".to_vec()));
        drop(inlet);
        assert!(
            !rx.try_iter().any(|e| matches!(e, Event::Eof(_))),
            "no end while an inlet is left"
        );
        let flow_then = flow.in_flight();
        drop(second);
        let events: Vec<Event> = rx.try_iter().collect();
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(
            matches!(&events[0], Event::Eof(Side::Server)),
            "the end, once the last inlet went"
        );
        assert_eq!(
            flow_then,
            ANSWER.len() + 1 + 3,
            "counted until the relay releases them"
        );
    }

    #[test]
    fn a_feed_cuts_a_message_too_long_to_read_into_pieces() {
        let (rt, rx, _flow, inlet) = fed(Side::Server);
        let long = vec![b' '; wire::MAX_PARSED_LINE + transport::PIECE / 2];
        rt.block_on(async {
            assert!(inlet.send(ANSWER.to_vec()).await);
            assert!(inlet.send(long.clone()).await);
        });
        assert!(inlet.try_send(b"{}".to_vec()));
        drop(inlet);
        let events: Vec<Event> = rx.try_iter().collect();
        // The first piece is what the relay judges a long message by: as the reader's, the
        // first 8,000,000 bytes and one more; the rest at most a megabyte each.
        let pieces = 1 + (long.len() + 1 - (wire::MAX_PARSED_LINE + 1)).div_ceil(transport::PIECE);
        assert_eq!(events.len(), 1 + pieces + 2, "{}", events.len());
        assert!(
            matches!(&events[0], Event::Line(Side::Server, _, Some(_))),
            "read ahead"
        );
        assert!(
            matches!(&events[1], Event::Piece(_, p, false) if p.len() == wire::MAX_PARSED_LINE + 1)
        );
        for (i, e) in events[1..=pieces].iter().enumerate() {
            let last = i + 1 == pieces;
            assert!(matches!(e, Event::Piece(Side::Server, p, l) if *l == last && !p.is_empty()));
            assert!(matches!(e, Event::Piece(_, p, _) if p.len() <= wire::MAX_PARSED_LINE + 1));
        }
        assert_eq!(events_bytes(&events[1..=pieces]), long.len() + 1);
        assert!(matches!(&events[pieces], Event::Piece(_, p, true) if p.ends_with(b" \n")));
        assert!(
            matches!(&events[pieces + 1], Event::Line(Side::Server, l, None) if l == b"{}\n"),
            "not read ahead with more than a megabyte in flight"
        );
        assert!(matches!(&events[pieces + 2], Event::Eof(Side::Server)));
    }

    /// Which message each piece came from (the tests fill each with its own byte), in order,
    /// with the bytes of the message it ends.
    fn messages_of(events: &[Event]) -> Vec<(u8, usize)> {
        let mut out = Vec::new();
        let mut current: Option<(u8, usize)> = None;
        for e in events {
            if let Event::Piece(_, p, last) = e {
                let (b, n) = current.get_or_insert((p[0], 0));
                assert!(
                    p.iter().all(|x| x == b || *x == b'\n'),
                    "a piece of another message in the middle of one"
                );
                *n += p.len();
                if *last {
                    out.extend(current.take());
                }
            }
        }
        assert!(current.is_none(), "a message left without its last piece");
        out
    }

    /// Two tasks each send a message of `size` bytes, all `a` and all `b`.
    fn send_both(
        rt: &tokio::runtime::Runtime,
        inlet: &Inlet,
        size: usize,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        [b'a', b'b']
            .into_iter()
            .map(|b| {
                let inlet = inlet.clone();
                rt.spawn(async move { assert!(inlet.send(vec![b; size]).await) })
            })
            .collect()
    }

    #[test]
    fn long_messages_sent_at_once_reach_the_relay_one_whole_after_the_other() {
        let (rt, rx, flow, inlet) = fed(Side::Client);
        // Two messages that do not fit the budget together: the second waits for the first.
        let size = transport::BUDGET / 2 + transport::PIECE;
        let senders = send_both(&rt, &inlet, size);
        drop(inlet);
        let mut events = Vec::new();
        while events.len() < 2 || !matches!(events.last(), Some(Event::Piece(_, _, true))) {
            events.push(rx.recv_timeout(Duration::from_secs(10)).expect("pieces"));
        }
        std::thread::sleep(Duration::from_millis(100));
        assert!(rx.try_recv().is_err(), "the second waits for room");
        flow.release(size + 1);
        for s in senders {
            rt.block_on(s).expect("sent");
        }
        events.extend(rx.try_iter());
        assert!(matches!(events.last(), Some(Event::Eof(Side::Client))));
        let got = messages_of(&events);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().all(|(_, n)| *n == size + 1));
        assert_ne!(got[0].0, got[1].0);
    }

    #[test]
    fn two_tasks_long_messages_reach_a_relay_that_tasks_run_one_whole_after_the_other() {
        // The relay takes its time over a piece: while the first task runs it on its first
        // piece, the second sends its whole message.
        let (tx, seen) = crate::mcp::proxy::inbox::tests::slow_relay(Duration::from_millis(300));
        let rt = super::super::runtime().expect("a runtime");
        let inlet = feed(tx, Side::Client, Flow::new(), None);
        // Two that fit the budget together: neither waits for room.
        let size = wire::MAX_PARSED_LINE + 100_000;
        let senders = send_both(&rt, &inlet, size);
        for s in senders {
            rt.block_on(s).expect("sent");
        }
        let seen: Vec<Vec<u8>> = seen
            .lock()
            .expect("not poisoned")
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        assert_eq!(seen.len(), 4, "two pieces each");
        for whole in seen.chunks(2) {
            assert_eq!(
                whole[0][..2],
                whole[1][..2],
                "one message's pieces: {seen:?}"
            );
            assert_eq!((whole[0][2], whole[1][2]), (0, 1), "{seen:?}");
        }
        assert_ne!(seen[0][1], seen[2][1]);
    }

    #[test]
    fn a_send_cancelled_while_it_waits_for_room_sends_nothing() {
        let (rt, rx, flow, inlet) = fed(Side::Server);
        // Room for the first piece of the message, not for all of it.
        let held = transport::BUDGET - (wire::MAX_PARSED_LINE + 1);
        flow.count(held);
        let waiting = {
            let inlet = inlet.clone();
            rt.spawn(async move { inlet.send(vec![b'w'; wire::MAX_PARSED_LINE + 10]).await })
        };
        std::thread::sleep(Duration::from_millis(100));
        waiting.abort();
        assert!(rt.block_on(waiting).is_err(), "cancelled");
        flow.release(held);
        assert!(rx.try_recv().is_err(), "none of it went");
        assert_eq!(flow.in_flight(), 0, "nor is any of it counted");
        rt.block_on(async { assert!(inlet.send(vec![b'x'; wire::MAX_PARSED_LINE + 10]).await) });
        drop(inlet);
        let events: Vec<Event> = rx.try_iter().collect();
        assert_eq!(
            messages_of(&events),
            vec![(b'x', wire::MAX_PARSED_LINE + 11)]
        );
    }

    const ANSWER: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;

    fn events_bytes(events: &[Event]) -> usize {
        events
            .iter()
            .map(|e| match e {
                Event::Piece(_, p, _) | Event::Line(_, p, _) => p.len(),
                _ => 0,
            })
            .sum()
    }

    #[test]
    fn a_feed_waits_for_room_in_the_budget() {
        let (rt, rx, flow, inlet) = fed(Side::Client);
        // Two messages of the longest length read whole, then one that does not fit beside them.
        let whole = vec![b' '; wire::MAX_PARSED_LINE - 1];
        let rest = transport::BUDGET - 2 * wire::MAX_PARSED_LINE;
        let sending = rt.spawn(async move {
            assert!(inlet.send(whole.clone()).await);
            assert!(inlet.send(whole).await);
            assert!(
                inlet.send(vec![b' '; rest]).await,
                "sent once there is room"
            );
        });
        let mut first = 0;
        for _ in 0..2 {
            match rx.recv_timeout(Duration::from_secs(10)).expect("a message") {
                Event::Line(_, l, _) => first = l.len(),
                e => panic!("{e:?}"),
            }
        }
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            rx.try_recv().is_err(),
            "the third waits while the others are in flight"
        );
        assert!(!sending.is_finished());
        flow.release(first);
        let third = rx.recv_timeout(Duration::from_secs(10)).expect("the third");
        assert!(matches!(third, Event::Line(Side::Client, l, _) if l.len() == rest + 1));
        rt.block_on(sending).expect("the sender ends");
        assert!(matches!(
            rx.recv_timeout(Duration::from_secs(10)),
            Ok(Event::Eof(Side::Client))
        ));
    }

    #[test]
    fn a_gone_receiver_is_a_broken_pipe() {
        let (mut out, rx) = lines_out();
        drop(rx);
        let e = out.write_all(b"{}\n").expect_err("fails");
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
    }
}
