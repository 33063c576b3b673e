//! Async tools through the Rust API: the reference's async traces rebuilt call for call
//! (identical bytes and digests), any interleaving of concurrent calls giving a valid trace
//! with every effect on the call that made it, cancellation, and tokio on the virtual and the
//! real clock.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use common::fixture;
use proptest::prelude::*;
use toolstorm::cassette::Cassette;
use toolstorm::clock::RealClock;
use toolstorm::json::{Value, canonical};
use toolstorm::report::Status;
use toolstorm::rule::{FaultKind, RuleSpec};
use toolstorm::{Error, Scope, Storm, obj};

type Task<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// Polls the tasks in the order `schedule` names them (each entry picks among the unfinished
/// ones, modulo their number), then round-robin until all are done: a deterministic
/// interleaving of concurrent futures on one thread, with no runtime.
fn run_schedule(mut tasks: Vec<Task<'_>>, schedule: &[usize]) {
    let mut cx = Context::from_waker(Waker::noop());
    let mut steps = schedule.iter().copied();
    let mut turn = 0;
    while !tasks.is_empty() {
        let pick = match steps.next() {
            Some(s) => s % tasks.len(),
            None => {
                let pick = turn % tasks.len();
                turn = pick + 1;
                pick
            }
        };
        if tasks[pick].as_mut().poll(&mut cx).is_ready() {
            drop(tasks.remove(pick));
            turn = pick;
        }
    }
}

/// Runs one future to completion on this thread.
fn block_on<T>(fut: impl Future<Output = T>) -> T {
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn assert_same(storm: &Storm, file: &str) {
    let want = fixture(file);
    let got = canonical(&storm.report().to_value()) + "\n";
    assert_eq!(got, want, "{file}");
}

async fn leaf(scope: Scope<'_>, name: String) -> Result<Value, Error> {
    scope
        .call("leaf", obj! {"name" => name.as_str()}, |_| async move {
            Ok(obj! {"leaf" => name.as_str()})
        })
        .await
}

async fn child(scope: Scope<'_>, name: String) -> Result<Value, Error> {
    scope
        .call(
            "child",
            obj! {"name" => name.as_str()},
            |inside| async move {
                inside.sleep(0.0).await?; // let the other root run
                leaf(inside, name).await
            },
        )
        .await
}

async fn root(scope: Scope<'_>, name: &str) -> Result<Value, Error> {
    let name = name.to_owned();
    scope
        .call(
            "root",
            obj! {"name" => name.as_str()},
            |inside| async move {
                let first = child(inside.clone(), name.clone()).await?;
                let second = leaf(inside, format!("{name}-second")).await?;
                Ok(Value::Array(vec![first, second]))
            },
        )
        .await
}

#[test]
fn async_interleaved() {
    // Two roots gathered concurrently (ids/parents (1,-),(2,1),(3,-),(4,3),(5,2),(6,1),(7,4),
    // (8,3)), then an independent root.
    let storm = Storm::builder().seed(0).build().expect("storm");
    let top = storm.scope();
    let a = {
        let top = top.clone();
        Box::pin(async move {
            root(top, "a").await.expect("root a");
        }) as Task<'_>
    };
    let b = {
        let top = top.clone();
        Box::pin(async move {
            root(top, "b").await.expect("root b");
        }) as Task<'_>
    };
    run_schedule(vec![a, b], &[]);
    block_on(top.call("independent", obj! {}, |_| async {
        Ok(obj! {"independent" => true})
    }))
    .expect("independent");
    assert_same(&storm, "api/async_interleaved.cassette.json");
}

/// A future that never completes (a tool waiting on something that never comes).
struct Forever;

impl Future for Forever {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        Poll::Pending
    }
}

#[test]
fn cancelled_call() {
    let storm = Storm::builder().seed(15).build().expect("storm");
    {
        let call = storm.call_async("blocked", obj! {}, |_| async {
            Forever.await;
            Ok(Value::Null)
        });
        let mut call = std::pin::pin!(call);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(call.as_mut().poll(&mut cx).is_pending());
        // Dropped here: the task was cancelled while its tool ran.
    }
    assert_eq!(storm.report().calls[0].status, Status::Cancelled);
    assert_same(&storm, "api/cancelled_call.report.json");
}

#[test]
fn running_call() {
    let storm = Storm::builder().seed(16).build().expect("storm");
    let mut seen = None;
    block_on(storm.call_async("outer", obj! {}, |inside| {
        let seen = &mut seen;
        async move {
            inside
                .call("inner", obj! {}, |_| async { Ok(Value::from(2)) })
                .await?;
            // A report taken while `outer` still runs shows it running.
            *seen = Some(canonical(&inside.storm().report().to_value()) + "\n");
            Ok(Value::from(1))
        }
    }))
    .expect("outer");
    assert_eq!(
        seen.as_deref(),
        Some(fixture("api/running_call.report.json").as_str())
    );
    assert_eq!(storm.report().calls[0].status, Status::Ok);
}

#[test]
fn cancelled_during_latency_never_runs_the_tool() {
    // The reference: cancellation during a latency sleep leaves executed=false, cancelled.
    let slow = RuleSpec::new("slow", "t", FaultKind::Latency)
        .delay(1.0)
        .build()
        .expect("rule");
    let storm = Storm::builder().rule(slow).build().expect("storm");
    {
        let call = storm.call_async("t", obj! {}, |_| async { Ok(Value::Null) });
        let mut call = std::pin::pin!(call);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(
            call.as_mut().poll(&mut cx).is_pending(),
            "yields after the sleep"
        );
    }
    let report = storm.report();
    let c = &report.calls[0];
    assert_eq!(c.status, Status::Cancelled);
    assert!(!c.executed);
    assert!(c.injected);
    assert_eq!(c.elapsed, 1.0);
}

/// A rule of every kind, each on its own tool.
fn one_of_each_kind() -> Vec<toolstorm::rule::Rule> {
    [
        RuleSpec::new("t", "timeout", FaultKind::Timeout).build(),
        RuleSpec::new("r", "limited", FaultKind::RateLimit)
            .delay(0.5)
            .build(),
        RuleSpec::new("u", "down", FaultKind::Unavailable).build(),
        RuleSpec::new("x", "swapped", FaultKind::Replace)
            .replacement("fallback")
            .build(),
        RuleSpec::new("l", "slow", FaultKind::Latency)
            .delay(0.25)
            .build(),
        RuleSpec::new("lost", "ship", FaultKind::ResponseLost).build(),
    ]
    .into_iter()
    .map(|r| r.expect("rule"))
    .collect()
}

#[test]
fn faults_act_in_their_phase_and_the_tool_is_polled_only_when_it_runs() {
    let storm = Storm::builder()
        .rules(one_of_each_kind())
        .build()
        .expect("storm");
    let polled = std::cell::Cell::new(0);
    let tool = |name: &'static str| {
        let polled = &polled;
        let storm = &storm;
        block_on(storm.call_async(name, obj! {}, move |call| async move {
            polled.set(polled.get() + 1);
            call.effect("commit", name)?;
            Ok(Value::from("live"))
        }))
    };
    assert!(matches!(tool("timeout"), Err(Error::Timeout(_))));
    assert!(
        matches!(tool("limited"), Err(Error::RateLimited { retry_after }) if retry_after == 0.5)
    );
    assert!(matches!(tool("down"), Err(Error::Unavailable(_))));
    assert_eq!(tool("swapped").expect("replaced"), Value::from("fallback"));
    assert_eq!(
        polled.get(),
        0,
        "pre-call faults and replacements never poll the tool"
    );
    assert_eq!(tool("slow").expect("late"), Value::from("live"));
    assert!(matches!(tool("ship"), Err(Error::ResponseLost(_))));
    assert_eq!(
        polled.get(),
        2,
        "latency and response_lost run it once each"
    );
    let report = storm.report();
    assert_eq!(
        report.effects.len(),
        2,
        "the lost acknowledgement still committed"
    );
    assert_eq!(report.calls[4].elapsed, 0.25, "latency waited on the clock");
    assert!(report.calls.iter().all(|c| c.injected));
    // The same run through the sync API gives the same trace.
    let sync = Storm::builder()
        .rules(one_of_each_kind())
        .build()
        .expect("storm");
    for name in ["timeout", "limited", "down", "swapped", "slow", "ship"] {
        let _ = sync.call(name, obj! {}, || {
            sync.effect("commit", name)?;
            Ok(Value::from("live"))
        });
    }
    assert_eq!(sync.report().digest(), report.digest());
}

#[test]
fn effects_outside_a_call_and_after_it_are_refused() {
    let storm = Storm::builder().build().expect("storm");
    let top = storm.scope();
    assert!(matches!(
        top.effect("x", "y"),
        Err(Error::Config(ref c)) if c.message == "effect() must be called inside an executing wrapped tool"
    ));
    let mut kept = None;
    block_on(top.call("t", obj! {}, |inside| {
        let kept = &mut kept;
        async move {
            *kept = Some(inside);
            Ok(Value::Null)
        }
    }))
    .expect("call");
    let late = kept.expect("scope").effect("x", "y");
    assert!(matches!(
        late,
        Err(Error::Config(ref c)) if c.message == "Cannot record an effect after its wrapped call completed"
    ));
    assert!(top.with_key("").is_err());
}

#[test]
fn invocation_keys_reach_nested_calls() {
    let storm = Storm::builder().build().expect("storm");
    let keyed = storm.scope().with_key("request-7").expect("key");
    block_on(keyed.call("outer", obj! {}, |inside| async move {
        inside
            .call("inner", obj! {}, |_| async { Ok(Value::Null) })
            .await
    }))
    .expect("calls");
    let report = storm.report();
    assert!(report.calls.iter().all(|c| c.key.to_lossy() == "request-7"));
    assert_eq!(report.calls[1].parent_id, Some(1));
    // The same key for the same tool again is refused before anything is recorded.
    let again = block_on(keyed.call("outer", obj! {}, |_| async { Ok(Value::Null) }));
    assert!(
        matches!(again, Err(Error::Config(ref c)) if c.message == "Duplicate invocation key for this tool")
    );
    assert_eq!(storm.report().calls.len(), 2);
}

/// One concurrent task: `tool` with `yields` awaits before and after an optional nested call,
/// committing `("write", "task-{n}")`.
async fn task(scope: Scope<'_>, n: usize, tool: &'static str, yields: usize, nested: bool) {
    let _ = scope
        .call(tool, obj! {"task" => n as i64}, |inside| async move {
            for _ in 0..yields {
                inside.sleep(0.0).await?;
            }
            if nested {
                inside
                    .call("nested", obj! {"task" => n as i64}, |deeper| async move {
                        deeper.sleep(0.0).await?;
                        deeper.effect("nested-write", &format!("task-{n}"))?;
                        Ok(Value::Null)
                    })
                    .await?;
            }
            inside.effect("write", &format!("task-{n}"))?;
            for _ in 0..yields {
                inside.sleep(0.0).await?;
            }
            Ok(Value::from(n as i64))
        })
        .await;
}

fn interleaved_report(
    plan: &[(usize, usize, bool)],
    schedule: &[usize],
) -> toolstorm::report::Report {
    let lost = RuleSpec::new("lost", "alpha", FaultKind::ResponseLost)
        .probability(0.5)
        .build()
        .expect("rule");
    let storm = Storm::builder().rule(lost).seed(3).build().expect("storm");
    let top = storm.scope();
    let tasks: Vec<Task<'_>> = plan
        .iter()
        .enumerate()
        .map(|(n, &(tool, yields, nested))| {
            let tool = ["alpha", "beta", "gamma"][tool % 3];
            Box::pin(task(top.clone(), n, tool, yields, nested)) as Task<'_>
        })
        .collect();
    run_schedule(tasks, schedule);
    storm.report()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn any_interleaving_gives_a_valid_trace(
        plan in proptest::collection::vec((0usize..3, 0usize..4, any::<bool>()), 1..8),
        schedule in proptest::collection::vec(0usize..16, 0..64),
    ) {
        let report = interleaved_report(&plan, &schedule);
        // Valid for the loader (parents, nesting, effects within their calls, ...).
        let cassette = Cassette::from_report(&report);
        prop_assert!(cassette.is_ok(), "{:?}", cassette.err());
        // Every effect belongs to the call that made it.
        for e in &report.effects {
            let call = &report.calls[(e.call_id - 1) as usize];
            let task = call.arguments.as_object().and_then(|o| o.get("task")).cloned();
            prop_assert_eq!(Some(e.key.to_lossy()), task.map(|t| format!("task-{}", canonical(&t))));
            let expect_tool = if e.name.to_lossy() == "nested-write" { "nested" } else { "" };
            if !expect_tool.is_empty() {
                prop_assert_eq!(call.tool.to_lossy(), expect_tool);
            }
        }
        // Nested calls name their own task's call as parent.
        for c in report.calls.iter().filter(|c| c.tool.to_lossy() == "nested") {
            let parent = &report.calls[(c.parent_id.expect("parent") - 1) as usize];
            prop_assert_eq!(&parent.arguments, &c.arguments);
        }
        // Ordinals count each tool's calls in the order they began; keys are `#ordinal`.
        let mut seen = std::collections::HashMap::new();
        for c in &report.calls {
            let n = seen.entry(c.tool.to_lossy()).or_insert(0u64);
            *n += 1;
            prop_assert_eq!(c.ordinal, *n);
            prop_assert_eq!(c.key.to_lossy(), format!("#{n}"));
        }
        // The same schedule gives the same trace.
        prop_assert_eq!(interleaved_report(&plan, &schedule).digest(), report.digest());
    }
}

/// Each call's (started, elapsed), as the timeline shows them.
fn times(report: &toolstorm::report::Report) -> Vec<(f64, f64)> {
    report
        .calls
        .iter()
        .map(|c| (c.started, c.elapsed))
        .collect()
}

#[tokio::test]
async fn a_rate_limited_tool_is_retried_after_its_wait_on_the_virtual_clock() {
    let throttled = RuleSpec::new("throttled", "create_shipment", FaultKind::RateLimit)
        .calls([1])
        .delay(0.5)
        .build()
        .expect("rule");
    let storm = Storm::builder()
        .rule(throttled)
        .seed(7)
        .build()
        .expect("storm");
    let top = storm.scope();
    let ship = || {
        top.call(
            "create_shipment",
            obj! {"order_id" => "o-1"},
            |call| async move {
                call.sleep(0.12).await?;
                call.effect("shipment", "o-1")?;
                Ok(obj! {"shipment_id" => "SHP-0001"})
            },
        )
    };
    let wait = match ship().await {
        Err(Error::RateLimited { retry_after }) => retry_after,
        other => panic!("{other:?}"),
    };
    top.sleep(wait).await.expect("wait");
    ship().await.expect("the retry after the wait");
    let report = storm.report();
    assert_eq!(times(&report), [(0.0, 0.0), (0.5, 0.12)]);
    assert_eq!(report.effects.len(), 1);
    assert_eq!(report.effects[0].at, 0.62);
}

#[tokio::test]
async fn a_latency_rule_delays_every_call() {
    let slow = RuleSpec::new("slow", "read", FaultKind::Latency)
        .delay(0.2)
        .build()
        .expect("rule");
    let storm = Storm::builder().rule(slow).build().expect("storm");
    for _ in 0..3 {
        storm
            .call_async("read", obj! {}, |call| async move {
                call.sleep(0.1).await?;
                Ok(Value::from(1))
            })
            .await
            .expect("read");
    }
    let report = storm.report();
    // What the reference records for the same program: begin, 0.2 s latency, 0.1 s of work.
    assert_eq!(times(&report), [(0.0, 0.3), (0.3, 0.3), (0.6, 0.3)]);
    assert_eq!(report.coverage[0].1.triggered, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawned_calls_on_a_real_clock_wait_through_tokio() {
    let slow = RuleSpec::new("slow", "fetch", FaultKind::Latency)
        .delay(0.05)
        .build()
        .expect("rule");
    let storm = Arc::new(
        Storm::builder()
            .rule(slow)
            .clock(Arc::new(RealClock::default()))
            .sleeper(tokio::time::sleep)
            .build()
            .expect("storm"),
    );
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let top = Storm::shared_scope(&storm);
            tokio::spawn(async move {
                top.call("fetch", obj! {"i" => i}, move |call| async move {
                    call.effect("fetched", &format!("item-{i}"))?;
                    Ok(Value::from(i))
                })
                .await
            })
        })
        .collect();
    for h in handles {
        h.await.expect("joined").expect("fetched");
    }
    let report = storm.report();
    assert_eq!(report.calls.len(), 4);
    assert!(
        report.calls.iter().all(|c| c.elapsed >= 0.05),
        "{:?}",
        report.calls
    );
    for e in &report.effects {
        let call = &report.calls[(e.call_id - 1) as usize];
        let i = canonical(
            call.arguments
                .as_object()
                .and_then(|o| o.get("i"))
                .expect("i"),
        );
        assert_eq!(e.key.to_lossy(), format!("item-{i}"));
    }
    // Without a sleeper, a real clock cannot wait in an async call: said, and recorded.
    let storm = Storm::builder()
        .rule(
            RuleSpec::new("slow", "fetch", FaultKind::Latency)
                .delay(0.05)
                .build()
                .expect("rule"),
        )
        .clock(Arc::new(RealClock::default()))
        .build()
        .expect("storm");
    let e = storm
        .call_async("fetch", obj! {}, |_| async { Ok(Value::Null) })
        .await
        .expect_err("no sleeper");
    assert!(e.to_string().contains("sleeper"), "{e}");
    assert_eq!(storm.report().calls[0].status, Status::Error);
}
