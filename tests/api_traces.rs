//! Traces the reference wrote through its Python API, rebuilt call for call through our Rust
//! API: the reports must be byte-identical (same canonical form, same digest).

mod common;

use common::fixture;
use toolstorm::json::{Value, canonical};
use toolstorm::rule::{FaultKind, RuleSpec};
use toolstorm::{Error, Storm, obj};

fn assert_same(storm: &Storm, file: &str) {
    let want = fixture(file);
    let got = canonical(&storm.report().to_value()) + "\n";
    assert_eq!(got, want, "{file}");
}

#[test]
fn rule_limits() {
    let rules = vec![
        RuleSpec::new("first", "tool", FaultKind::Timeout)
            .limit(1)
            .build(),
        RuleSpec::new("second", "tool", FaultKind::Replace)
            .limit(2)
            .replacement("fallback")
            .build(),
        RuleSpec::new("third", "t*", FaultKind::Unavailable)
            .calls([5, 6, 7])
            .build(),
        RuleSpec::new("never", "missing", FaultKind::Timeout).build(),
    ];
    let storm = Storm::builder()
        .rules(rules.into_iter().map(|r| r.expect("rule")))
        .seed(10)
        .build()
        .expect("storm");
    for _ in 0..8 {
        let _ = storm.call("tool", obj! {}, || Ok(Value::from("live")));
    }
    assert_same(&storm, "api/rule_limits.cassette.json");
}

#[test]
fn budget_rejections() {
    let storm = Storm::builder()
        .seed(12)
        .max_calls(3)
        .build()
        .expect("storm");
    let results: Vec<_> = (0..5)
        .map(|_| storm.call("read", obj! {}, || Ok(Value::from(1))))
        .collect();
    assert!(
        matches!(results[3], Err(Error::BudgetExceeded(ref m)) if m == "Tool call budget of 3 exhausted")
    );
    assert_same(&storm, "api/budget_rejections.report.json");
}

#[test]
fn nested_sync() {
    let storm = Storm::builder().seed(1).build().expect("storm");
    let leaf = |x: i64| {
        storm.call("leaf", obj! {"x" => x}, || {
            storm.sleep(0.01)?;
            storm.effect("leaf-write", &format!("k{x}"))?;
            Ok(Value::from(2 * x))
        })
    };
    let mid = |x: i64| {
        storm.call("mid", obj! {"x" => x}, || {
            storm.sleep(0.02)?;
            Ok(Value::Array(vec![leaf(x)?, leaf(x + 1)?]))
        })
    };
    let top = |x: i64| {
        storm.call("top", obj! {"x" => x}, || {
            let m = mid(x)?;
            let again = leaf(x + 10)?;
            Ok(obj! {"mid" => m, "again" => again})
        })
    };
    top(1).expect("top 1");
    top(5).expect("top 5");
    leaf(99).expect("bare leaf");
    assert_same(&storm, "api/nested_sync.cassette.json");
}

#[test]
fn invocation_keys() {
    let coin = RuleSpec::new("coin", "lookup", FaultKind::Timeout)
        .probability(0.5)
        .build()
        .expect("rule");
    let storm = Storm::builder()
        .rule(coin)
        .seed(981)
        .build()
        .expect("storm");
    let lookup = |i: i64| storm.call("lookup", obj! {"i" => i}, || Ok(obj! {"i" => i}));
    for i in 0..20 {
        let _ = storm.call("other", obj! {}, || Ok(Value::from("noise")));
        let _ = storm
            .invocation(&format!("request-{i}"), || lookup(i))
            .expect("valid key");
    }
    let _ = lookup(100);
    assert_same(&storm, "api/invocation_keys.cassette.json");
    // A key used twice for the same tool is refused before anything is recorded.
    let again = storm
        .invocation("request-3", || lookup(3))
        .expect("valid key");
    assert!(
        matches!(again, Err(Error::Config(ref e)) if e.message == "Duplicate invocation key for this tool")
    );
    assert_eq!(storm.report().calls.len(), 41);
}

#[test]
fn effect_outside_a_call_and_bad_names_are_refused() {
    let storm = Storm::builder().build().expect("storm");
    let e = storm.effect("x", "y").expect_err("outside a call");
    assert!(
        matches!(e, Error::Config(ref c) if c.message == "effect() must be called inside an executing wrapped tool")
    );
    let e = storm
        .call("t", obj! {}, || storm.effect("", "y").map(|_| Value::Null))
        .expect_err("empty name");
    assert!(
        matches!(e, Error::Config(ref c) if c.message == "Effect name and key must be 1–200 characters")
    );
    let e = storm
        .call("", obj! {}, || Ok(Value::Null))
        .expect_err("empty tool");
    assert!(matches!(e, Error::Config(ref c) if c.message == "Tool name must be 1–200 characters"));
    assert!(Storm::builder().seed(1 << 53).build().is_err());
    assert!(Storm::builder().max_calls(0).build().is_err());
}

#[test]
fn capture_failures_mark_capture_error() {
    let storm = Storm::builder().build().expect("storm");
    let big = Value::from("x".repeat(130_000));
    let out = storm
        .call("t", obj! {}, || Ok(big.clone()))
        .expect("the caller still gets the value");
    assert_eq!(out, big);
    let call = &storm.report().calls[0];
    assert!(call.capture_error && call.output.is_null());
    // Oversized arguments fail before the call is recorded.
    assert!(
        storm
            .call("t", obj! {"a" => big.clone()}, || Ok(Value::Null))
            .is_err()
    );
    assert_eq!(storm.report().calls.len(), 1);
}
