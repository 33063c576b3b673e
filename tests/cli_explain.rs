//! `decide`, `canonical`, and the lab's budget and probability variants through the CLI.

mod common;

use common::cli;

use toolstorm::json::{Value, parse};

#[test]
fn decide_explains_every_vector() {
    let doc = common::fixture_json("decision_vectors.json");
    for v in common::get_array(&doc, "vectors") {
        let seed = common::get(v, "seed").as_i64().expect("seed").to_string();
        let (rule, tool, key) = (
            common::get_str(v, "rule"),
            common::get_str(v, "tool"),
            common::get_str(v, "key"),
        );
        for c in common::get_array(v, "checks") {
            let p = common::get_str(c, "probability_repr");
            let (code, out, err) = cli(&[
                "decide",
                "--seed",
                &seed,
                "--rule",
                rule,
                "--tool",
                tool,
                "--key",
                key,
                "--probability",
                p,
                "--json",
            ]);
            assert_eq!((code, err.as_str()), (0, ""), "{rule} {p}");
            let got = parse(out.trim_end()).expect("json");
            assert_eq!(
                common::get_str(&got, "u64"),
                common::get_str(v, "u64_decimal")
            );
            assert_eq!(
                common::get_str(&got, "canonical"),
                common::get_str(v, "canonical_json")
            );
            assert_eq!(
                common::get(&got, "selected"),
                common::get(c, "selected"),
                "{rule} {p}"
            );
        }
    }
    let (code, out, _) = cli(&[
        "decide",
        "--seed",
        "42",
        "--rule",
        "lost-receipt",
        "--tool",
        "create_shipment",
        "--key",
        "#1",
    ]);
    assert_eq!(code, 0);
    assert!(
        out.contains("618255713456486337") && out.contains("selected   yes"),
        "{out}"
    );
    let (code, _, err) = cli(&[
        "decide",
        "--seed",
        "1",
        "--rule",
        "r",
        "--tool",
        "t",
        "--key",
        "k",
        "--probability",
        "1.5",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("probability"), "{err}");
}

#[test]
fn canonical_prints_bytes_and_digests() {
    let file = common::fixture_path("demo/lost_ack.retry.cassette.json");
    let path = file.to_str().expect("path");
    let (code, out, _) = cli(&["canonical", path]);
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            common::fixture("demo/lost_ack.retry.cassette.json").as_str()
        )
    );
    let (code, out, _) = cli(&["canonical", path, "--digest"]);
    assert_eq!(
        (code, out.trim_end()),
        (
            0,
            "d7e6a5ac771da3f7f0465336917e17e0ba2fc9c874e37e31ee4843529d558ca7"
        )
    );
    let bad = common::fixture_path("invalid/truncated.json");
    let (code, out, err) = cli(&["canonical", bad.to_str().expect("path")]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(
        err.contains("Invalid or excessively nested JSON") && err.contains("at byte"),
        "{err}"
    );
}

fn demo_json(args: &[&str]) -> Value {
    let mut all = vec!["demo", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = cli(&all);
    assert_eq!(code, 0, "{err}");
    parse(&out).expect("json")
}

#[test]
fn budget_exceeded_shows_in_outcome_report_and_contract() {
    let run = demo_json(&[
        "--scenario",
        "lost_ack",
        "--policy",
        "retry",
        "--max-calls",
        "1",
    ]);
    assert_eq!(
        common::get_str(common::get(&run, "outcome"), "reason"),
        "BudgetExceeded"
    );
    assert_eq!(
        common::get(common::get(&run, "report"), "budget_rejections").as_i64(),
        Some(1)
    );
    let checks = common::get_array(common::get(&run, "contract"), "checks");
    let budget = checks
        .iter()
        .find(|c| common::get_str(c, "name") == "Call budget")
        .expect("budget check");
    assert_eq!(common::get(budget, "passed").as_bool(), Some(false));
    assert_eq!(common::get_str(budget, "detail"), "2 / 1 calls");
}

#[test]
fn probability_zero_never_exercises_a_fault() {
    for sc in toolstorm::lab::scenario::names() {
        let run = demo_json(&[
            "--scenario",
            sc,
            "--policy",
            "resilient",
            "--probability",
            "0",
        ]);
        let contract = common::get(&run, "contract");
        assert_eq!(
            common::get(contract, "passed").as_bool(),
            Some(false),
            "{sc}"
        );
        let first = &common::get_array(contract, "checks")[0];
        assert!(common::get_str(first, "name").starts_with("Fault exercised"));
        assert_eq!(common::get_str(first, "detail"), "Triggered 0 time(s)");
    }
}
