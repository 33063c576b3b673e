//! The listener's connections: each one's body channel, the open connections oldest first
//! (the oldest idle one is closed for a new client past the cap, or when no descriptor is
//! left), and the cap itself, kept below the descriptors the process may open.

use super::*;
use std::time::Instant;

/// The body of an answer: the stream's items as they come.
pub(super) struct ChannelBody {
    pub(super) rx: mpsc::UnboundedReceiver<Out>,
    pub(super) queued: Arc<AtomicUsize>,
    /// Runs when the connection lets the body go (it ended, or the client went away).
    pub(super) _on_drop: OnDrop,
    /// The connection's request in hand, let go with the body.
    pub(super) _busy: OnDrop,
}

/// One client connection's state: how many of its requests are in hand (read whole, their
/// answers not yet gone), and whether a request's head has come on it. One with none in hand
/// is idle: waiting between requests, or still sending a request's head or body.
#[derive(Debug, Default)]
pub(super) struct Conn {
    pub(super) busy: AtomicUsize,
    pub(super) heard: std::sync::atomic::AtomicBool,
}

/// How long a connection just taken, with no request's head read from it yet, is kept before
/// it counts as idle: its first request is usually on its way already (a client that sent a
/// GET and went on to its next request), and closing it would lose what the client sent.
/// Past this it is as idle as one that sends nothing.
pub(super) const FRESH_GRACE: Duration = Duration::from_secs(1);

impl Conn {
    /// A request's head came on this connection.
    pub(super) fn heard(&self) {
        self.heard.store(true, Ordering::Relaxed);
    }

    /// Whether it may be closed to make room at `now`, having been opened at `opened`.
    fn idle(&self, opened: Instant, now: Instant) -> bool {
        self.busy.load(Ordering::Relaxed) == 0
            && (self.heard.load(Ordering::Relaxed)
                || now.saturating_duration_since(opened) >= FRESH_GRACE)
    }

    /// A request is in hand until the guard is let go.
    pub(super) fn enter(self: &Arc<Conn>) -> OnDrop {
        self.busy.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::clone(self);
        OnDrop(Some(Box::new(move || {
            conn.busy.fetch_sub(1, Ordering::Relaxed);
        })))
    }
}

/// The connections open, by number (so oldest first), and how many may be: a client that
/// opens connections and trickles nothing or a body byte by byte cannot hold every
/// descriptor, since each new connection past the cap closes the oldest idle one.
#[derive(Debug)]
pub(super) struct Connections {
    pub(super) next: u64,
    pub(super) cap: usize,
    pub(super) open: std::collections::BTreeMap<u64, Open>,
}

/// An open connection: its state, when it was taken, and the signal that closes it.
#[derive(Debug)]
pub(super) struct Open {
    state: Arc<Conn>,
    opened: Instant,
    close: tokio::sync::oneshot::Sender<()>,
}

/// A connection just opened: its state, and how many were open when an idle one was closed
/// to make room for it.
pub(super) struct Opened {
    pub(super) state: Arc<Conn>,
    pub(super) dropped: Option<usize>,
}

impl Connections {
    pub(super) fn new(cap: usize) -> Connections {
        Connections {
            next: 0,
            cap,
            open: std::collections::BTreeMap::new(),
        }
    }

    /// Registers a new connection taken at `now`; past the cap, closes the oldest idle one
    /// first. Its number and the signal that closes it.
    pub(super) fn open(
        &mut self,
        now: Instant,
    ) -> (u64, Opened, tokio::sync::oneshot::Receiver<()>) {
        let mut dropped = None;
        if self.open.len() >= self.cap && self.close_oldest_idle(now) {
            dropped = Some(self.open.len() + 1);
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let state = Arc::new(Conn::default());
        let n = self.next;
        self.next += 1;
        self.open.insert(
            n,
            Open {
                state: Arc::clone(&state),
                opened: now,
                close: tx,
            },
        );
        (n, Opened { state, dropped }, rx)
    }

    /// Closes the oldest connection idle at `now`, if there is one (to make room for a new
    /// client when the cap is reached or no descriptor is left).
    pub(super) fn close_oldest_idle(&mut self, now: Instant) -> bool {
        let idle = self
            .open
            .iter()
            .find(|(_, o)| o.state.idle(o.opened, now))
            .map(|(n, _)| *n);
        match idle.and_then(|n| self.open.remove(&n)) {
            Some(o) => {
                let _ = o.close.send(());
                true
            }
            None => false,
        }
    }

    pub(super) fn close(&mut self, n: u64) {
        self.open.remove(&n);
    }
}

/// The connections kept at most: [`CONNECTIONS_MAX`], or fewer when the process may open
/// fewer descriptors ([`DESCRIPTORS_KEPT`] kept for the rest).
pub(super) fn connection_cap() -> usize {
    use nix::sys::resource::{Resource, getrlimit};
    let soft = getrlimit(Resource::RLIMIT_NOFILE).map_or(u64::MAX, |(soft, _)| soft);
    let room = usize::try_from(soft).unwrap_or(usize::MAX);
    room.saturating_sub(DESCRIPTORS_KEPT)
        .clamp(4, CONNECTIONS_MAX)
}

/// Something to do when the answer is let go: the connection dropped the body, or the
/// handler before it had one (the client went away first).
#[derive(Default)]
pub(super) struct OnDrop(pub(super) Option<Box<dyn FnOnce() + Send + Sync>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        loop {
            return match self.rx.poll_recv(cx) {
                Poll::Ready(Some(Out::Data(b))) => {
                    self.queued.fetch_sub(
                        b.len().min(self.queued.load(Ordering::Relaxed)),
                        Ordering::Relaxed,
                    );
                    Poll::Ready(Some(Ok(Frame::data(b))))
                }
                Poll::Ready(Some(Out::Head { .. })) => continue,
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            };
        }
    }
}

pub(super) type Answer = Response<http_body_util::Either<http_body_util::Full<Bytes>, ChannelBody>>;
