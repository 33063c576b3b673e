//! `toolstorm-tui diff`: two runs side by side on the command line, the real binary on the
//! bundled files: calls paired by tool and arguments (or by ordinal), what each got and
//! committed, verdicts A → B, exit 1 only when B is worse, and clear refusals.

use std::process::Command;

use toolstorm::json::{Value, parse};

fn diff(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .arg("diff")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn get<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.as_object()
        .and_then(|o| o.get(key))
        .unwrap_or_else(|| panic!("no {key}"))
}

fn numbers(v: &Value) -> Vec<i64> {
    v.as_array()
        .expect("a pair")
        .iter()
        .map(|n| n.as_i64().expect("a number"))
        .collect()
}

const COMPARISON: &str = "cassettes/lost-ack-comparison.json";

#[test]
fn a_worse_second_run_is_exit_1_and_a_better_one_exit_0() {
    // Run 1 of the comparison recovers from the lost acknowledgement; run 2 ships twice.
    let (code, stdout, stderr) = diff(&[&format!("{COMPARISON}#1"), &format!("{COMPARISON}#2")]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("B is worse than A"), "{stderr}");
    assert!(
        stdout.starts_with(&format!(
            "A {COMPARISON}#1 → B {COMPARISON}#2: calls +1 -0 ~0 · duplicates 0→1 · 1 verdict(s) \
             flipped · PASS→FAIL"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("✓ → ✗  No duplicate side effects: 1 duplicate effect(s) across 2 commits"),
        "{stdout}"
    );
    // The retry only B made: added, with what it got and committed.
    let added: Vec<&str> = stdout.lines().filter(|l| l.starts_with("  + ")).collect();
    assert_eq!(added.len(), 1, "{stdout}");
    assert!(added[0].contains("create_shipment") && added[0].contains("(none) → ok · 0 → 1"));

    let (code, stdout, stderr) = diff(&[&format!("{COMPARISON}#2"), &format!("{COMPARISON}#1")]);
    assert_eq!(code, Some(0), "better is not a failure: {stdout}\n{stderr}");
    assert!(stdout.contains("FAIL→PASS"), "{stdout}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn json_has_every_pair_the_counts_and_both_verdicts() {
    let (code, stdout, stderr) = diff(&[
        &format!("{COMPARISON}#1"),
        &format!("{COMPARISON}#2"),
        "--json",
    ]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    let v = parse(&stdout).expect("JSON");
    assert_eq!(get(&v, "regressed").as_bool(), Some(true));
    assert_eq!(get(&v, "identical").as_bool(), Some(false));
    assert_eq!(numbers(get(&v, "duplicates")), vec![0, 1]);
    assert_eq!(numbers(get(&v, "effects")), vec![1, 2]);
    let passed: Vec<Option<bool>> = get(&v, "passed")
        .as_array()
        .expect("pair")
        .iter()
        .map(Value::as_bool)
        .collect();
    assert_eq!(passed, vec![Some(true), Some(false)]);
    let calls = get(&v, "calls").as_array().expect("calls");
    assert_eq!(calls.len(), 3);
    let last = &calls[2];
    assert_eq!(get(last, "change").as_str(), Some("added"));
    assert!(get(last, "a").is_null());
    let b = get(last, "b");
    assert_eq!(get(b, "commits").as_i64(), Some(1));
    assert_eq!(
        get(get(b, "arguments"), "order_id").as_str(),
        Some("order-1729"),
        "arguments as JSON"
    );
    let dup = get(&v, "checks")
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| get(c, "name").as_str() == Some("No duplicate side effects"))
        .expect("the duplicate check");
    assert_eq!(get(dup, "a").as_bool(), Some(true));
    assert_eq!(get(dup, "b").as_bool(), Some(false));
}

#[test]
fn calls_pair_by_arguments_unless_asked_to_pair_by_ordinal() {
    // The lab's incident (check_inventory, create_shipment twice) and the MCP incident
    // (create_shipment twice) call the same tool with other arguments.
    let files = ["cassettes/incident.json", "cassettes/mcp-incident.json"];
    let counts = |by: &str| {
        let (code, stdout, stderr) = diff(&[files[0], files[1], "--json", "--by", by]);
        assert_eq!(code, Some(0), "{stdout}\n{stderr}");
        let counts = get(&parse(&stdout).expect("JSON"), "counts").clone();
        ["added", "removed", "changed"].map(|k| get(&counts, k).as_i64().expect("count"))
    };
    assert_eq!(counts("arguments"), [2, 3, 0]);
    assert_eq!(counts("ordinal"), [0, 1, 2]);
    // Pairing by arguments is the default.
    let (_, stdout, _) = diff(&[files[0], files[1]]);
    assert!(stdout.contains(": calls +2 -3 ~0"), "{stdout}");
}

#[test]
fn a_file_with_two_runs_compares_them() {
    let dir = tempfile::tempdir().expect("tmp");
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(COMPARISON))
            .expect("bundled");
    let mut v = parse(&text).expect("JSON");
    if let Some(Value::Array(runs)) = v.as_object_mut().and_then(|o| o.get_mut("runs")) {
        runs.truncate(2);
    }
    let two = dir.path().join("two.json");
    std::fs::write(&two, toolstorm::json::pretty(&v)).expect("write");
    let two = two.to_str().expect("utf-8");
    let (code, stdout, stderr) = diff(&[two]);
    assert_eq!(code, Some(1), "run 2 ships twice: {stdout}\n{stderr}");
    assert!(
        stdout.starts_with(&format!("A {two}#1 → B {two}#2: calls +1 -0 ~0")),
        "{stdout}"
    );
}

#[test]
fn the_same_run_twice_is_no_change() {
    let (code, stdout, stderr) = diff(&["cassettes/incident.json", "cassettes/incident.json"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("no change: identical run"), "{stdout}");
}

#[test]
fn bad_input_is_refused_naming_the_file_and_the_problem() {
    for (args, said) in [
        (
            vec![COMPARISON],
            "holds 3 run(s); diff FILE compares the two runs of a file that holds two",
        ),
        (
            vec![COMPARISON, "cassettes/incident.json"],
            "cassettes/lost-ack-comparison.json: holds 3 runs; name one: \
             cassettes/lost-ack-comparison.json#1",
        ),
        (
            vec![
                "cassettes/lost-ack-comparison.json#4",
                "cassettes/incident.json",
            ],
            "holds 3 run(s), not run 4",
        ),
        (
            vec![
                "cassettes/lost-ack-comparison.json#0",
                "cassettes/incident.json",
            ],
            "runs are numbered from 1",
        ),
        (
            vec!["no-such-file.json", "cassettes/incident.json"],
            "no-such-file.json",
        ),
        (
            vec!["scenarios/lost_ack.json", "cassettes/incident.json"],
            "scenarios/lost_ack.json",
        ),
    ] {
        let (code, stdout, stderr) = diff(&args);
        assert_eq!(code, Some(2), "{args:?}: {stdout}\n{stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
