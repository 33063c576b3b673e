//! Every file in `invalid/`: our loader's verdict and message, and the command line's exit
//! codes, stdout and stderr line, against the reference's `invalid/_verdicts.json`.

use std::path::PathBuf;

use toolstorm::cassette::{Cassette, check, inspect_text, load_document};
use toolstorm::json::{Value, parse};

fn reference(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reference")
        .join(rel)
}

fn verdicts() -> Vec<Value> {
    let text = std::fs::read_to_string(reference("invalid/_verdicts.json")).expect("verdicts");
    match parse(&text).expect("verdicts json") {
        Value::Array(items) => items,
        _ => panic!("verdicts must be a list"),
    }
}

fn text_field(v: &Value, key: &str) -> String {
    v.as_object()
        .and_then(|o| o.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn int_field(v: &Value, key: &str) -> i64 {
    v.as_object()
        .and_then(|o| o.get(key))
        .and_then(Value::as_i64)
        .expect(key)
}

/// Checks one verdict; returns a description of every disagreement.
fn judge(verdict: &Value) -> Vec<String> {
    let rel = text_field(verdict, "file");
    let path = reference(&rel);
    let mut problems = Vec::new();
    // Cassette.load
    let loaded = Cassette::load(&path);
    match (text_field(verdict, "cassette_load").as_str(), &loaded) {
        ("VALID", Ok(_)) => {}
        ("INVALID", Err(e)) => {
            let got = e
                .config_error()
                .map(|c| c.message)
                .unwrap_or("(not a ConfigurationError)");
            let want = text_field(verdict, "error_message");
            if got != want {
                problems.push(format!(
                    "Cassette::load message: got {got:?} ({e}), want {want:?}"
                ));
            }
        }
        (want, got) => problems.push(format!("Cassette::load: want {want}, got {got:?}")),
    }
    // CLI inspect and check (default --max-calls 100)
    let document = load_document(&path);
    for command in ["inspect", "check"] {
        let want_exit = int_field(verdict, &format!("cli_{command}_exit"));
        let want_stderr = text_field(verdict, &format!("cli_{command}_stderr"));
        let want_stdout = text_field(verdict, &format!("cli_{command}_stdout"));
        let (exit, stdout, stderr) = match &document {
            Err(e) => (2, String::new(), e.reference_line()),
            Ok(cassettes) if command == "inspect" => (0, inspect_text(cassettes), String::new()),
            Ok(cassettes) => match check(cassettes, 100) {
                Ok(summary) => (
                    i64::from(summary.exit_code()),
                    summary.text(),
                    String::new(),
                ),
                Err(e) => (
                    2,
                    String::new(),
                    format!("toolstorm: ConfigurationError: {}", e.message),
                ),
            },
        };
        // The verdict file joins lines with " | " and keeps at most 300 characters.
        let stdout: String = stdout
            .lines()
            .collect::<Vec<_>>()
            .join(" | ")
            .chars()
            .take(300)
            .collect();
        if (exit, &stdout, &stderr) != (want_exit, &want_stdout, &want_stderr) {
            problems.push(format!(
                "{command}: got exit {exit} stdout {stdout:?} stderr {stderr:?}; want exit {want_exit} stdout {want_stdout:?} stderr {want_stderr:?}"
            ));
        }
    }
    problems
}

fn judge_file(name: &str) {
    let rel = format!("invalid/{name}");
    let verdicts = verdicts();
    let verdict = verdicts
        .iter()
        .find(|v| text_field(v, "file") == rel)
        .expect("a verdict for the file");
    let problems = judge(verdict);
    assert!(problems.is_empty(), "{rel}:\n  {}", problems.join("\n  "));
}

macro_rules! invalid_files {
    ($($test:ident => $file:literal,)+) => {
        $(
            #[test]
            fn $test() {
                judge_file($file);
            }
        )+
    };
}

invalid_files! {
    argument_nan => "argument_nan.json",
    bom_prefix => "bom_prefix.json",
    call_extra_field => "call_extra_field.json",
    capture_int => "capture_int.json",
    comparison_empty_runs => "comparison_empty_runs.json",
    comparison_wrapper => "comparison_wrapper.json",
    coverage_forged_from_p0_run => "coverage_forged_from_p0_run.json",
    coverage_negative => "coverage_negative.json",
    demo_run_wrapper => "demo_run_wrapper.json",
    effect_before_call_start => "effect_before_call_start.json",
    effect_identity_gap => "effect_identity_gap.json",
    effect_missing_field => "effect_missing_field.json",
    effect_outside_call_time => "effect_outside_call_time.json",
    elapsed_huge_int => "elapsed_huge_int.json",
    elapsed_neg_infinity => "elapsed_neg_infinity.json",
    error_extra_message => "error_extra_message.json",
    error_missing_known => "error_missing_known.json",
    error_type_201_chars => "error_type_201_chars.json",
    exponent_numbers_valid => "exponent_numbers_valid.json",
    fault_number => "fault_number.json",
    id_bool => "id_bool.json",
    injected_null => "injected_null.json",
    invalid_utf8 => "invalid_utf8.json",
    kind_invalid => "kind_invalid.json",
    limit_exceeded => "limit_exceeded.json",
    nested_precedes_parent => "nested_precedes_parent.json",
    ordinal_bad => "ordinal_bad.json",
    parent_later => "parent_later.json",
    parent_self => "parent_self.json",
    precall_executed => "precall_executed.json",
    precall_wrong_error => "precall_wrong_error.json",
    ratelimit_missing_retry_after => "ratelimit_missing_retry_after.json",
    recursion_100000 => "recursion_100000.json",
    replace_output_mismatch_capture_error_valid => "replace_output_mismatch_capture_error_valid.json",
    response_lost_success => "response_lost_success.json",
    retry_after_negative => "retry_after_negative.json",
    rule_calls_zero => "rule_calls_zero.json",
    rule_probability_2 => "rule_probability_2.json",
    rules_object => "rules_object.json",
    schema_version_missing => "schema_version_missing.json",
    seed_2_64_valid => "seed_2_64_valid.json",
    seed_string => "seed_string.json",
    started_bool => "started_bool.json",
    status_invalid => "status_invalid.json",
    tool_number => "tool_number.json",
    top_level_null => "top_level_null.json",
    truncated => "truncated.json",
}

/// Held-back verdicts are checked too whenever their file is present.
#[test]
fn every_present_verdict_agrees() {
    let mut failures = Vec::new();
    for verdict in verdicts() {
        let rel = text_field(&verdict, "file");
        if !reference(&rel).exists() {
            continue;
        }
        for p in judge(&verdict) {
            failures.push(format!("{rel}: {p}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn errors_name_the_field() {
    let e = Cassette::load(reference("invalid/parent_later.json")).expect_err("invalid");
    let c = e.config_error().expect("config error");
    assert!(
        c.path.as_deref().is_some_and(|p| p.ends_with(".parent_id")),
        "{e}"
    );
    assert!(c.detail.is_some(), "{e}");
}
