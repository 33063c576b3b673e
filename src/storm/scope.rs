//! Async tools: the twin of [`Storm::call`] for tools that return futures, with the same
//! decisions, phases, coverage, budget, effects, capture, redaction and errors.
//!
//! Rust has no context variables, so the context a call runs in is explicit: a [`Scope`] is
//! where calls are made from — the top level ([`Storm::scope`]) or the inside of a running
//! call. A tool's body receives the scope of its own call; calls made through it are its
//! children, and effects recorded through it belong to it, however many calls of the same
//! tool are in flight. An invocation key set on a scope ([`Scope::with_key`]) applies to the
//! calls made from it and to their nested calls, as the reference's `storm.invocation` does.
//!
//! No runtime is needed: on a [`crate::clock::VirtualClock`] injected latency moves the clock
//! and yields once (the reference's `asleep`); on another clock it waits through the
//! [`Sleeper`] given to [`crate::storm::StormBuilder::sleeper`]. A call whose future is
//! dropped before it completes is recorded as cancelled (`CancelledError`), as the reference
//! records a cancelled task.
//!
//! ```
//! use toolstorm::rule::{FaultKind, RuleSpec};
//! use toolstorm::{Error, Storm, obj};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let lost = RuleSpec::new("lost", "ship", FaultKind::ResponseLost).calls([1]).build()?;
//! let storm = Storm::builder().rule(lost).seed(42).build()?;
//! let top = storm.scope();
//! let first = top
//!     .call("ship", obj! {"order" => "o-1"}, |call| async move {
//!         call.effect("shipment", "o-1")?; // this call's commit
//!         Ok(obj! {"id" => 1})
//!     })
//!     .await;
//! assert!(matches!(first, Err(Error::ResponseLost(_))));
//! assert_eq!(storm.report().effects.len(), 1);
//! # Ok(()) }
//! # let mut fut = std::pin::pin!(demo());
//! # let waker = std::task::Waker::noop();
//! # let mut cx = std::task::Context::from_waker(&waker);
//! # loop { if let std::task::Poll::Ready(r) = fut.as_mut().poll(&mut cx) { r.expect("ok"); break; } }
//! ```

use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use super::{CallHandle, Parent, Prelude, Storm};
use crate::clock::check_duration;
use crate::error::{Error, Result};
use crate::json::{Text, Value};

/// How async calls wait on a clock that is not virtual: a runtime's sleep.
///
/// Any `Fn(Duration) -> impl Future<Output = ()>` is one, e.g. `|d| tokio::time::sleep(d)`.
pub trait Sleeper: Send + Sync {
    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>>;
}

impl<F, Fut> Sleeper for F
where
    F: Fn(Duration) -> Fut + Send + Sync,
    Fut: Future<Output = ()> + Send + 'static,
{
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        Box::pin(self(duration))
    }
}

/// The run a scope belongs to: borrowed, or shared so that futures can be `'static` (and be
/// spawned on a runtime).
#[derive(Clone)]
enum Run<'a> {
    Borrowed(&'a Storm),
    Shared(Arc<Storm>),
}

impl Deref for Run<'_> {
    type Target = Storm;
    fn deref(&self) -> &Storm {
        match self {
            Run::Borrowed(s) => s,
            Run::Shared(s) => s,
        }
    }
}

/// Where calls are made from: the top level, or inside a running call (the scope its body
/// receives). Cheap to clone.
#[derive(Clone)]
pub struct Scope<'a> {
    run: Run<'a>,
    /// The call this scope is inside (its index), if any.
    call: Option<usize>,
    /// The invocation key of calls made from here.
    key: Option<Text>,
}

impl std::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("call_id", &self.call_id())
            .field("key", &self.key)
            .finish()
    }
}

impl Storm {
    /// The top level: calls made from it have no parent.
    pub fn scope(&self) -> Scope<'_> {
        Scope {
            run: Run::Borrowed(self),
            call: None,
            key: None,
        }
    }

    /// The top level of a shared run: its calls' futures own what they need and can be
    /// spawned (`tokio::spawn`).
    pub fn shared_scope(run: &Arc<Storm>) -> Scope<'static> {
        Scope {
            run: Run::Shared(Arc::clone(run)),
            call: None,
            key: None,
        }
    }

    /// The async twin of [`Storm::call`] at the top level: `storm.scope().call(...)`.
    pub async fn call_async<'a, F, Fut>(
        &'a self,
        tool: &str,
        arguments: Value,
        f: F,
    ) -> Result<Value>
    where
        F: FnOnce(Scope<'a>) -> Fut,
        Fut: Future<Output = Result<Value>>,
    {
        self.scope().call(tool, arguments, f).await
    }
}

impl<'a> Scope<'a> {
    /// The run.
    pub fn storm(&self) -> &Storm {
        &self.run
    }

    /// The id of the call this scope is inside (`None` at the top level).
    pub fn call_id(&self) -> Option<u64> {
        self.call.map(|i| i as u64 + 1)
    }

    /// The same place with `key` as the invocation key of the calls made from it and of their
    /// nested calls (1–200 characters). Keys stabilise decisions across scheduling.
    pub fn with_key(&self, key: &str) -> Result<Scope<'a>> {
        if !(1..=200).contains(&key.chars().count()) {
            return Err(Error::config("Invocation key must be 1–200 characters"));
        }
        Ok(Scope {
            key: Some(Text::from(key)),
            ..self.clone()
        })
    }

    /// Calls an async tool from here. `f` receives the scope of the new call: make nested
    /// calls and record effects through it. Faults may stop the tool before it is polled
    /// (`timeout`, `rate_limit`, `unavailable`, `replace`), delay it (`latency`), or lose its
    /// answer after it succeeded (`response_lost`), exactly as [`Storm::call`] does.
    pub async fn call<F, Fut>(&self, tool: &str, arguments: Value, f: F) -> Result<Value>
    where
        F: FnOnce(Scope<'a>) -> Fut,
        Fut: Future<Output = Result<Value>>,
    {
        let storm: &Storm = &self.run;
        let handle = storm.begin(
            tool,
            arguments,
            self.key.as_ref().map(Text::to_lossy).as_deref(),
            Parent::Of(self.call),
        )?;
        // Dropped before the end (the future was cancelled): record the call as cancelled.
        let mut pending = Pending {
            storm,
            handle: &handle,
            armed: true,
        };
        let outcome = match storm.prelude(&handle) {
            Prelude::Skip(outcome) => outcome,
            Prelude::Run { latency } => {
                let waited = match latency {
                    Some(delay) => self.sleep(delay).await,
                    None => Ok(()),
                };
                match waited {
                    Err(e) => Err(e),
                    Ok(()) => {
                        storm.body_started(&handle);
                        let inside = Scope {
                            run: self.run.clone(),
                            call: Some(handle.index),
                            key: self.key.clone(),
                        };
                        let value = f(inside).await;
                        storm.body_finished(&handle, value)
                    }
                }
            }
        };
        pending.armed = false;
        storm.finish_call(&handle, outcome)
    }

    /// Records a side-effect commit by the call this scope is inside (which must still be
    /// running), at the clock's current time.
    pub fn effect(&self, name: &str, key: &str) -> Result<()> {
        let storm: &Storm = &self.run;
        let Some(index) = self.call else {
            return Err(Error::config(
                "effect() must be called inside an executing wrapped tool",
            ));
        };
        let at = storm.since_start();
        let mut st = storm.lock();
        storm.record_effect(&mut st, index, name, key, at)
    }

    /// Waits `seconds` on the run's clock: a virtual clock moves and the task yields once;
    /// any other clock waits through the run's [`Sleeper`].
    pub async fn sleep(&self, seconds: f64) -> Result<()> {
        let storm: &Storm = &self.run;
        let seconds = check_duration(seconds)?;
        if storm.clock.is_virtual() {
            storm.clock.sleep(seconds)?;
            YieldOnce(false).await;
            return Ok(());
        }
        match &storm.sleeper {
            Some(sleeper) => {
                sleeper
                    .sleep(Duration::from_secs_f64(seconds.min(1e9)))
                    .await;
                Ok(())
            }
            None => Err(Error::config(
                "Waiting in an async call on a clock that is not virtual needs a sleeper \
                 (StormBuilder::sleeper)",
            )),
        }
    }
}

/// Records a call as cancelled when the future running it is dropped first.
struct Pending<'s> {
    storm: &'s Storm,
    handle: &'s CallHandle,
    armed: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.armed {
            let cancelled = Error::Cancelled {
                type_name: "CancelledError".into(),
            };
            let _ = self.storm.finish_call(self.handle, Err(cancelled));
        }
    }
}

/// Pending once, then ready: lets other tasks run, as the reference's `asleep` does.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}
