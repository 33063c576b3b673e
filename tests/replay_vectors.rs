//! Every session in `replay_vectors.json`: construction, each call's return value or error
//! (type, message and attributes), and `assert_consumed`.

mod common;

use std::path::PathBuf;

use toolstorm::cassette::{Cassette, DiffKind, Replay};
use toolstorm::error::Error;
use toolstorm::json::{Value, canonical, parse};
use toolstorm::redact::Redactor;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reference")
}

use common::{field as get, text_of as s};

const NAN_MARK: &str = "\u{0}toolstorm-test-nan";

/// Python wrote `NaN` for an argument that cannot be normalised; our strict parser refuses it,
/// so the test swaps it for a marker and puts a NaN float back afterwards.
fn restore_nan(v: Value) -> Value {
    match v {
        Value::Str(t) if t == NAN_MARK => Value::Float(f64::NAN),
        Value::Array(items) => Value::Array(items.into_iter().map(restore_nan).collect()),
        Value::Object(o) => Value::Object(
            o.into_members()
                .into_iter()
                .map(|(k, v)| (k, restore_nan(v)))
                .collect(),
        ),
        other => other,
    }
}

fn sessions() -> Vec<Value> {
    let text = std::fs::read_to_string(root().join("replay_vectors.json")).expect("vectors");
    let text = text.replace(
        ": NaN",
        &format!(": \"{}\"", NAN_MARK.replace('\u{0}', "\\u0000")),
    );
    let doc = restore_nan(parse(&text).expect("json"));
    get(&doc, "sessions").as_array().expect("sessions").clone()
}

fn redactor(spec: &str) -> Option<Redactor> {
    match spec {
        "default Redactor()" => None,
        "Redactor(keys=('customer_email','X-Custom-Secret'), secrets=('sk-live-123456','hunter2'))" => {
            Some(
                Redactor::new(
                    ["customer_email", "X-Custom-Secret"],
                    ["sk-live-123456", "hunter2"],
                )
                .expect("redactor"),
            )
        }
        other => panic!("unknown redactor {other}"),
    }
}

fn check_error(name: &str, step: usize, got: &Error, want: &Value) {
    assert_eq!(
        got.type_name(),
        s(want, "raise"),
        "{name} step {step}: {got:?}"
    );
    assert_eq!(got.to_string(), s(want, "message"), "{name} step {step}");
    match got {
        Error::RateLimited { retry_after } => {
            assert_eq!(
                Some(*retry_after),
                get(want, "retry_after").as_number_f64(),
                "{name} step {step}"
            );
        }
        Error::RecordedTool { original_type } => {
            assert_eq!(
                *original_type,
                s(want, "original_type"),
                "{name} step {step}"
            );
        }
        _ => {}
    }
}

#[test]
fn every_replay_session_matches() {
    let all = sessions();
    assert_eq!(all.len(), 40);
    for session in &all {
        let name = s(session, "name");
        let cassette = Cassette::load(root().join(s(session, "cassette")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let replay = Replay::new(&cassette, redactor(&s(session, "redactor")));
        let construct = get(session, "construct");
        let replay = match (replay, construct.as_str()) {
            (Ok(r), Some("ok")) => r,
            (Err(e), None) => {
                assert_eq!(s(construct, "raise"), "ConfigurationError", "{name}");
                assert_eq!(e.message, s(construct, "message"), "{name}");
                continue;
            }
            (got, _) => panic!("{name}: construct {got:?}, want {}", canonical(construct)),
        };
        for (i, step) in get(session, "steps")
            .as_array()
            .expect("steps")
            .iter()
            .enumerate()
        {
            let expect = get(step, "expect");
            match s(step, "op").as_str() {
                "call" => {
                    let got = replay.call(&s(step, "tool"), get(step, "arguments"));
                    match (got, expect.as_object().and_then(|o| o.get("return"))) {
                        (Ok(v), Some(want)) => {
                            assert_eq!(canonical(&v), canonical(want), "{name} step {i}")
                        }
                        (Err(e), None) => check_error(&name, i, &e, expect),
                        (got, _) => {
                            panic!("{name} step {i}: got {got:?}, want {}", canonical(expect))
                        }
                    }
                }
                "assert_consumed" => match (replay.assert_consumed(), expect.as_str()) {
                    (Ok(()), Some("ok")) => {}
                    (Err(e), None) => check_error(&name, i, &e, expect),
                    (got, _) => panic!("{name} step {i}: got {got:?}, want {}", canonical(expect)),
                },
                other => panic!("{name}: unknown op {other}"),
            }
        }
    }
}

#[test]
fn closest_record_explains_a_divergence() {
    let cassette = Cassette::load(root().join("demo/lost_ack.retry.cassette.json")).expect("load");
    let replay = Replay::new(&cassette, None).expect("replay");
    let data = &cassette.to_value();
    let first = &get(data, "calls").as_array().expect("calls")[0];
    let mut args = get(first, "arguments").clone();
    if let Value::Object(o) = &mut args {
        o.insert("sku", "OTHER-SKU");
        o.insert("extra", 1);
    }
    let tool = s(first, "tool");
    let closest = replay
        .closest_record(&tool, &args)
        .expect("a pending record");
    assert_eq!(closest.position, 1);
    assert!(closest.same_tool);
    assert!(
        closest
            .diffs
            .iter()
            .any(|d| d.path == "sku" && d.kind == DiffKind::Changed)
    );
    assert!(
        closest
            .diffs
            .iter()
            .any(|d| d.path == "extra" && d.kind == DiffKind::Unexpected)
    );
    assert!(
        matches!(replay.call(&tool, &args), Err(Error::ReplayMismatch(m)) if m == "Tool or arguments differ at call 1")
    );
}
