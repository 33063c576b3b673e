//! Who runs the relay. Every reader sends what it has as an [`Event`] through a [`Tx`]. When
//! both sides are HTTP, a side's tasks then run the relay on the events waiting themselves
//! when no one else is running it (flat combining): a message crosses the proxy without a
//! hand-off between threads, each of which costs a wake-up and a switch. Whoever finds the
//! relay busy leaves its event to the one running it, who takes every event waiting (up to a
//! bound, then the relay's thread takes the rest) before it lets go.
//!
//! Every other sender hands its events to the relay's own thread: a reader thread of a byte
//! stream (a child's output, our stdin), the signal handler, and an HTTP side's tasks when
//! the other side is a stdio peer. A reader thread that ran the relay could block writing to
//! a server that waits for that very reader to take its output; a task could block a runtime
//! worker writing to a peer that stopped reading. The relay's thread blocks there instead,
//! while the readers still read. It also keeps what needs a thread that waits: the timers
//! (injected latency, the grace a server gets to leave) and the end of the session (the
//! server's exit, every sender gone); a task wakes it only when that changes.

use std::sync::atomic::{AtomicIsize, Ordering::SeqCst};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, TryLockError};
use std::thread::Thread;
use std::time::Instant;

use crate::mcp::transport::{Event, Side};

/// Past this many bytes held for the two sides, they are written before the next event is
/// taken.
const FLUSH_AT: usize = 64 * 1024;
/// And past this many events taken in a row: the first message of a batch waits for the
/// others' handling, so a long batch costs the tail what it saves in writes (measured at 16
/// calls in flight: 4–8 gave the lowest p50 and p99; 64 doubled the p99).
const BATCH: usize = 8;
/// Events one sender takes before it leaves the rest to the relay's thread: a sender is a
/// reader too, and it does not stop reading its own side for long.
const TAKE_MAX: usize = 64;

/// What runs on the events: the relay (a fake one in tests).
pub(super) trait Runs: Send {
    /// Handles one event (never the server's end: that is the relay thread's).
    fn handle(&mut self, event: Event);
    /// Writes what the events handled left to write (the group commit).
    fn flush(&mut self);
    /// Bytes held to write.
    fn held(&self) -> usize;
    /// When the relay's thread must next look (a timer, the end of a grace).
    fn deadline(&self) -> Option<Instant>;
    /// Says something on the proxy's log.
    fn note(&mut self, text: &str);
}

/// What a sender tells the queue.
trait Sent: Send + Sync {
    /// It queued an event.
    fn queued(&self);
    /// It is done queueing for now.
    fn run(&self, combines: bool);
    /// It is gone (when it was the last, the relay's thread ends the session).
    fn left(&self);
}

/// A sender's handle: events sent through it are taken in the order sent.
#[derive(Clone)]
pub struct Tx {
    /// Always some until the handle drops.
    tx: Option<Sender<Event>>,
    hub: Option<Arc<dyn Sent>>,
    /// Whether the sender runs the relay itself (else the relay's thread is woken).
    combines: bool,
}

impl std::fmt::Debug for Tx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tx").finish_non_exhaustive()
    }
}

impl crate::mcp::transport::Sink for Tx {
    fn queue(&self, event: Event) -> bool {
        Tx::queue(self, event)
    }

    fn run(&self) {
        Tx::run(self)
    }
}

impl Tx {
    /// A handle that only queues events on `tx` (whoever holds the receiver takes them).
    #[cfg(test)]
    pub(crate) fn plain(tx: Sender<Event>) -> Tx {
        Tx {
            tx: Some(tx),
            hub: None,
            combines: false,
        }
    }

    /// The same queue, for a sender that runs the relay itself: an async task, which never
    /// blocks on a side that only it reads.
    pub fn combining(&self) -> Tx {
        let mut tx = self.clone();
        tx.combines = true;
        tx
    }

    /// Sends `event`; then runs the relay on what waits if this sender combines and the relay
    /// is free, or wakes the relay's thread. False once the relay is gone.
    pub fn send(&self, event: Event) -> bool {
        let sent = self.queue(event);
        if sent {
            self.run();
        }
        sent
    }

    /// Queues `event` and no more (events queued together are taken together: [`Tx::run`]
    /// after them). False once the relay is gone.
    pub fn queue(&self, event: Event) -> bool {
        if self.tx.as_ref().is_none_or(|tx| tx.send(event).is_err()) {
            return false;
        }
        if let Some(hub) = &self.hub {
            hub.queued();
        }
        true
    }

    /// Runs the relay on what waits if this sender combines and the relay is free, or wakes
    /// the relay's thread.
    pub fn run(&self) {
        if let Some(hub) = &self.hub {
            hub.run(self.combines);
        }
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        // Gone first: the relay's thread, woken, finds it gone.
        drop(self.tx.take());
        if let Some(hub) = &self.hub {
            hub.left();
        }
    }
}

impl<R: Runs + 'static> Sent for Hub<R> {
    fn queued(&self) {
        self.queued.fetch_add(1, SeqCst);
    }

    fn run(&self, combines: bool) {
        if combines {
            self.combine();
        } else if let Some(t) = self.thread.get() {
            // A system call only when the thread sleeps.
            t.unpark();
        }
    }

    fn left(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

/// The relay and its queue of events, shared by everyone who sends.
pub(super) struct Hub<R> {
    core: Mutex<Core<R>>,
    /// Events sent and not yet taken (a sender counts after it sends, so this may be
    /// briefly below zero). Whoever lets go of the relay looks again, so an event whose
    /// sender found the relay busy is never left behind.
    queued: AtomicIsize,
    /// The relay's thread, woken when it is needed.
    thread: OnceLock<Thread>,
}

/// What the relay's lock guards.
pub(super) struct Core<R> {
    /// The relay (none before the session starts and once it has ended).
    pub(super) relay: Option<R>,
    /// The events (none once the proxy is done: then sending fails).
    rx: Option<Receiver<Event>>,
    /// The server's output ended: the relay's thread ends the session, and nothing more is
    /// taken.
    server_left: bool,
    /// Every sender is gone.
    senders_gone: bool,
    /// The relay's thread ended the session.
    ended: bool,
    /// While the relay's thread sleeps, until when (none: until woken).
    asleep: Option<Option<Instant>>,
}

/// What a turn at the relay took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Took {
    /// Every event waiting.
    All,
    /// As many as one turn takes; more wait.
    Backlog,
    /// Nothing more is taken: the relay has not started or has ended, the server's output
    /// ended, or every sender is gone.
    Stopped,
}

/// How the relay's thread left [`Hub::serve`].
pub(super) enum Served {
    /// The server's output ended.
    ServerLeft,
    /// The session ended with this exit code.
    Ended(i32),
}

impl<R: Runs + 'static> Hub<R> {
    /// A hub with no relay yet, and a handle to send to it.
    pub(super) fn new() -> (Arc<Hub<R>>, Tx) {
        let (tx, rx) = channel();
        let hub = Arc::new(Hub {
            core: Mutex::new(Core {
                relay: None,
                rx: Some(rx),
                server_left: false,
                senders_gone: false,
                ended: false,
                asleep: None,
            }),
            queued: AtomicIsize::new(0),
            thread: OnceLock::new(),
        });
        let handle = Tx {
            tx: Some(tx),
            hub: Some(Arc::clone(&hub) as Arc<dyn Sent>),
            combines: false,
        };
        (hub, handle)
    }

    /// The relay's lock. After a panic while it was held (a bug) the relay is still taken:
    /// its thread then ends the session, and the recording is finished from its journal.
    pub(super) fn lock(&self) -> MutexGuard<'_, Core<R>> {
        self.core
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// An event sent before the relay starts, if one waits (taken off the queue).
    pub(super) fn early(&self) -> Option<Event> {
        let core = self.lock();
        let e = core.rx.as_ref()?.try_recv().ok();
        if e.is_some() {
            self.queued.fetch_sub(1, SeqCst);
        }
        e
    }

    /// The proxy is done: later sends fail (and readers stop).
    pub(super) fn close(&self) {
        let mut core = self.lock();
        core.rx = None;
        core.relay = None;
    }

    /// Runs the relay on the events waiting while no one else is; wakes the relay's thread
    /// when only it can go on.
    fn combine(&self) {
        let _wake = WakeOnPanic(self);
        let mut left = TAKE_MAX;
        loop {
            let mut core = match self.core.try_lock() {
                Ok(core) => core,
                // Whoever holds it looks at the queue after letting go.
                Err(TryLockError::WouldBlock | TryLockError::Poisoned(_)) => return,
            };
            let (took, n) = core.take_waiting(&self.queued, left);
            left -= n;
            let wake = took == Took::Backlog || core.wants_thread();
            drop(core);
            if wake && let Some(t) = self.thread.get() {
                t.unpark();
            }
            if took != Took::All || self.queued.load(SeqCst) <= 0 {
                return;
            }
        }
    }

    /// The relay starts taking events (those sent before it started first).
    pub(super) fn start(&self, relay: R) {
        self.lock().relay = Some(relay);
    }

    /// The relay's thread: takes what waits, and gives `tick` its turn (the timers that are
    /// due; the exit code when the session ends now), then sleeps until the relay's next
    /// deadline (or until woken) — until the server's output ends, `tick` ends the session,
    /// or every sender is gone (`gone` gives the exit code then).
    pub(super) fn serve(
        &self,
        tick: &mut dyn FnMut(&mut R) -> Option<i32>,
        gone: &dyn Fn(&R) -> i32,
    ) -> Served {
        let _ = self.thread.set(std::thread::current());
        loop {
            let mut core = self.lock();
            if self.core.is_poisoned() {
                if let Some(relay) = core.relay.as_mut() {
                    relay.note("the relay stopped after an internal error; ending the session");
                }
                return Served::Ended(1);
            }
            core.asleep = None;
            core.take_waiting(&self.queued, TAKE_MAX);
            if core.server_left {
                return Served::ServerLeft;
            }
            let senders_gone = core.senders_gone;
            let Some(relay) = core.relay.as_mut() else {
                return Served::Ended(0);
            };
            if senders_gone {
                return Served::Ended(gone(relay));
            }
            if let Some(code) = tick(relay) {
                // Over: nothing more is taken.
                core.ended = true;
                return Served::Ended(code);
            }
            relay.flush();
            let until = relay.deadline();
            core.asleep = Some(until);
            drop(core);
            if self.queued.load(SeqCst) > 0 {
                continue;
            }
            match until {
                Some(at) => std::thread::park_timeout(at.saturating_duration_since(Instant::now())),
                None => std::thread::park(),
            }
        }
    }
}

/// Wakes the relay's thread when a sender panics while it runs the relay (a bug): the
/// session then ends, instead of waiting for an event that may never come.
struct WakeOnPanic<'a, R>(&'a Hub<R>);

impl<R> Drop for WakeOnPanic<'_, R> {
    fn drop(&mut self) {
        if std::thread::panicking()
            && let Some(t) = self.0.thread.get()
        {
            t.unpark();
        }
    }
}

impl<R: Runs> Core<R> {
    /// Takes the events waiting, at most `max`, in batches with a write between them; what
    /// that left, and how many it took.
    fn take_waiting(&mut self, queued: &AtomicIsize, max: usize) -> (Took, usize) {
        let (Some(relay), Some(rx)) = (self.relay.as_mut(), self.rx.as_ref()) else {
            return (Took::Stopped, 0);
        };
        let mut taken = 0;
        loop {
            if self.server_left || self.senders_gone || self.ended {
                return (Took::Stopped, taken);
            }
            if taken >= max {
                return (Took::Backlog, taken);
            }
            let mut batch = 0;
            let mut empty = false;
            while batch < BATCH && relay.held() < FLUSH_AT && taken < max {
                match rx.try_recv() {
                    Ok(Event::Eof(Side::Server)) => {
                        queued.fetch_sub(1, SeqCst);
                        self.server_left = true;
                        break;
                    }
                    Ok(event) => {
                        queued.fetch_sub(1, SeqCst);
                        relay.handle(event);
                        batch += 1;
                        taken += 1;
                    }
                    Err(TryRecvError::Empty) => {
                        empty = true;
                        break;
                    }
                    Err(TryRecvError::Disconnected) => {
                        self.senders_gone = true;
                        break;
                    }
                }
            }
            if batch > 0 {
                relay.flush();
            }
            if empty {
                return (Took::All, taken);
            }
        }
    }

    /// Whether the relay's thread, asleep, must wake: the session is ending, or something it
    /// waits for is now due sooner.
    fn wants_thread(&self) -> bool {
        let Some(until) = self.asleep else {
            return false;
        };
        if self.server_left || self.senders_gone {
            return true;
        }
        match (self.relay.as_ref().and_then(R::deadline), until) {
            (Some(due), Some(until)) => due < until,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::thread::ThreadId;
    use std::time::Duration;

    pub(crate) type Seen = Arc<Mutex<Vec<(ThreadId, Vec<u8>)>>>;

    /// A relay that keeps what it handled and on which thread. `later` gives it a deadline
    /// 100 ms on, `boom` is a bug, and `chain:N` has it queue `chain:N-1` (a message that
    /// comes while it runs). A piece is kept as `P`, its first byte and whether it is the
    /// last, and a piece that is not the last takes `slow` to handle.
    struct Fake {
        seen: Seen,
        deadline: Option<Instant>,
        chain: Option<Tx>,
        slow: Duration,
    }

    impl Runs for Fake {
        fn handle(&mut self, event: Event) {
            let text = match event {
                Event::Line(_, text, _) => text,
                Event::Piece(_, piece, last) => {
                    if !last {
                        std::thread::sleep(self.slow);
                    }
                    vec![b'P', piece.first().copied().unwrap_or(b' '), u8::from(last)]
                }
                _ => return,
            };
            match text.as_slice() {
                b"later" => self.deadline = Some(Instant::now() + Duration::from_millis(100)),
                b"boom" => panic!("a bug in the relay"),
                _ => {}
            }
            if let Some(n) = text.strip_prefix(b"chain:")
                && let Some(n) = std::str::from_utf8(n)
                    .ok()
                    .and_then(|n| n.parse::<u32>().ok())
                && n > 0
                && let Some(tx) = &self.chain
            {
                tx.queue(line(&format!("chain:{}", n - 1)));
            }
            let mut seen = self.seen.lock().expect("not poisoned");
            seen.push((std::thread::current().id(), text));
        }
        fn flush(&mut self) {}
        fn held(&self) -> usize {
            0
        }
        fn deadline(&self) -> Option<Instant> {
            self.deadline
        }
        fn note(&mut self, _: &str) {}
    }

    fn started() -> (Arc<Hub<Fake>>, Tx, Seen) {
        started_with(Duration::ZERO, false)
    }

    /// A hub running a fake relay (that sends through its own handle when `chain`).
    fn started_with(slow: Duration, chain: bool) -> (Arc<Hub<Fake>>, Tx, Seen) {
        let (hub, tx) = Hub::new();
        let seen = Seen::default();
        hub.start(Fake {
            seen: Arc::clone(&seen),
            deadline: None,
            chain: chain.then(|| tx.clone()),
            slow,
        });
        (hub, tx, seen)
    }

    /// A sender that runs a relay whose pieces (but the last) take `slow` each; what it
    /// handled (see `Fake`).
    pub(crate) fn slow_relay(slow: Duration) -> (Tx, Seen) {
        let (_hub, tx, seen) = started_with(slow, false);
        (tx.combining(), seen)
    }

    fn line(text: &str) -> Event {
        Event::Line(Side::Client, text.as_bytes().to_vec(), None)
    }

    /// Runs the relay's thread; what `serve` returned comes on the channel (code 7 when every
    /// sender is gone; 3 once the fake's deadline has passed).
    fn serving(hub: &Arc<Hub<Fake>>) -> (ThreadId, std::sync::mpsc::Receiver<Served>) {
        let (done, ended) = std::sync::mpsc::channel();
        let hub = Arc::clone(hub);
        let (id_tx, id_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = id_tx.send(std::thread::current().id());
            let served = hub.serve(
                &mut |f| f.deadline.filter(|d| Instant::now() >= *d).map(|_| 3),
                &|_| 7,
            );
            let _ = done.send(served);
        });
        (id_rx.recv().expect("the thread starts"), ended)
    }

    fn code(ended: &std::sync::mpsc::Receiver<Served>) -> Option<i32> {
        match ended.recv_timeout(Duration::from_secs(10)) {
            Ok(Served::Ended(code)) => Some(code),
            Ok(Served::ServerLeft) => Some(-1),
            Err(_) => None,
        }
    }

    #[test]
    fn a_task_runs_the_relay_on_its_own_event_with_no_other_thread() {
        let (_hub, tx, seen) = started();
        assert!(tx.combining().send(line("a")));
        let seen = seen.lock().expect("not poisoned");
        assert_eq!(*seen, vec![(std::thread::current().id(), b"a".to_vec())]);
    }

    #[test]
    fn a_reader_thread_hands_its_event_to_the_relay_thread() {
        let (hub, tx, seen) = started();
        let (relay_thread, ended) = serving(&hub);
        assert!(tx.send(line("b")));
        let deadline = Instant::now() + Duration::from_secs(10);
        while seen.lock().expect("not poisoned").is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            *seen.lock().expect("not poisoned"),
            vec![(relay_thread, b"b".to_vec())]
        );
        drop(tx);
        assert_eq!(code(&ended), Some(7), "every sender gone ends the session");
    }

    #[test]
    fn every_event_is_taken_once_and_in_each_senders_order() {
        let (hub, tx, seen) = started();
        let (_, ended) = serving(&hub);
        const EACH: usize = 3000;
        let senders: Vec<_> = (0..5)
            .map(|s| {
                // Four senders run the relay; one hands its events to the relay's thread.
                let tx = if s < 4 { tx.combining() } else { tx.clone() };
                std::thread::spawn(move || {
                    for n in 0..EACH {
                        assert!(tx.send(line(&format!("{s}:{n}"))));
                    }
                })
            })
            .collect();
        for s in senders {
            s.join().expect("a sender");
        }
        // No event is left waiting once the senders are done: none is lost between a sender
        // that found the relay busy and the one running it.
        let deadline = Instant::now() + Duration::from_secs(10);
        while seen.lock().expect("not poisoned").len() < 5 * EACH && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(tx);
        assert_eq!(code(&ended), Some(7));
        let seen = seen.lock().expect("not poisoned");
        assert_eq!(seen.len(), 5 * EACH);
        let mut next = [0usize; 5];
        for (_, l) in seen.iter() {
            let text = String::from_utf8_lossy(l);
            let (s, n) = text.split_once(':').expect("s:n");
            let (s, n): (usize, usize) = (s.parse().expect("s"), n.parse().expect("n"));
            assert_eq!(n, next[s], "sender {s}'s events in the order sent");
            next[s] += 1;
        }
    }

    #[test]
    fn a_deadline_a_task_sets_wakes_the_sleeping_relay_thread() {
        let (hub, tx, _seen) = started();
        let (_, ended) = serving(&hub);
        // Let the relay's thread go to sleep with nothing due.
        std::thread::sleep(Duration::from_millis(50));
        let t0 = Instant::now();
        assert!(tx.combining().send(line("later")));
        assert_eq!(code(&ended), Some(3), "the relay's thread saw the deadline");
        assert!(t0.elapsed() >= Duration::from_millis(100));
        drop(tx);
    }

    #[test]
    fn nothing_is_taken_after_the_servers_end() {
        let (hub, tx, seen) = started();
        let task = tx.combining();
        assert!(task.send(line("a")));
        assert!(task.send(Event::Eof(Side::Server)));
        assert!(task.send(line("b")));
        let (_, ended) = serving(&hub);
        assert_eq!(
            code(&ended),
            Some(-1),
            "the relay's thread ends the session"
        );
        let seen = seen.lock().expect("not poisoned");
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].1, b"a".to_vec());
    }

    #[test]
    fn a_panic_while_a_task_runs_the_relay_ends_the_session() {
        let (hub, tx, _seen) = started();
        let (_, ended) = serving(&hub);
        std::thread::sleep(Duration::from_millis(50));
        let task = tx.combining();
        let broke = std::thread::spawn(move || task.send(line("boom"))).join();
        assert!(broke.is_err(), "the bug panicked its sender");
        assert_eq!(code(&ended), Some(1));
        drop(tx);
    }

    #[test]
    fn sending_fails_once_the_proxy_is_done() {
        let (hub, tx, _seen) = started();
        hub.close();
        assert!(!tx.send(line("a")));
        assert!(!tx.combining().send(line("a")));
    }

    #[test]
    fn one_turn_takes_a_bounded_number_of_events_and_leaves_the_rest_to_the_relay_thread() {
        let (hub, tx, seen) = started_with(Duration::ZERO, true);
        // Each event handled brings another, as messages that keep coming would.
        assert!(tx.combining().send(line("chain:200")));
        let me = std::thread::current().id();
        {
            let seen = seen.lock().expect("not poisoned");
            assert_eq!(seen.len(), TAKE_MAX, "the task went back to its own work");
            assert!(seen.iter().all(|(t, _)| *t == me));
        }
        let (relay_thread, ended) = serving(&hub);
        let deadline = Instant::now() + Duration::from_secs(10);
        while seen.lock().expect("not poisoned").len() < 201 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let seen = seen.lock().expect("not poisoned");
        assert_eq!(seen.len(), 201);
        assert!(seen[TAKE_MAX..].iter().all(|(t, _)| *t == relay_thread));
        drop(seen);
        drop(hub.lock().relay.take());
        drop(tx);
        assert!(code(&ended).is_some());
    }

    #[test]
    fn nothing_is_taken_once_the_relay_thread_ended_the_session() {
        let (hub, tx, seen) = started();
        let (_, ended) = serving(&hub);
        assert!(tx.combining().send(line("later")));
        assert_eq!(code(&ended), Some(3));
        // The relay is still in place (the proxy takes it next), and a task comes.
        assert!(tx.combining().send(line("after")));
        let seen = seen.lock().expect("not poisoned");
        assert!(seen.iter().all(|(_, l)| l != b"after"), "{seen:?}");
    }
}
