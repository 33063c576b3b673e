//! Scenario files: the bundled `scenarios/*.json` reproduce `demo` exactly, stay in sync with
//! the built-in catalog, and bad files are refused with the file, JSON path and reason.

mod common;

use std::path::PathBuf;

use common::cli;
use common::transcript;
use toolstorm::lab::scenario::names;
use toolstorm::lab::scenario_file::ScenarioFile;

fn scenario_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.json"))
}

#[test]
fn bundled_files_match_the_catalog() {
    for name in names() {
        let text = std::fs::read_to_string(scenario_path(name)).expect("scenario file");
        let want = ScenarioFile::bundled(name).expect("bundled").to_text();
        assert_eq!(
            text, want,
            "scenarios/{name}.json is out of sync with the catalog"
        );
        assert_eq!(
            ScenarioFile::from_text(&text).expect("valid"),
            ScenarioFile::bundled(name).expect("bundled")
        );
    }
}

#[test]
fn run_reproduces_demo_all() {
    for name in names() {
        let path = scenario_path(name);
        let (code, out, err) = cli(&["run", path.to_str().expect("utf-8 path")]);
        let t = transcript(&format!("demo/{name}.all.txt"));
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (t.exit_code, t.stdout.as_str(), ""),
            "{name}"
        );
        let (_, json, _) = cli(&["run", path.to_str().expect("path"), "--json"]);
        assert_eq!(
            json,
            common::fixture(&format!("demo/{name}.all.comparison.json")),
            "{name}"
        );
        let (_, single, _) = cli(&[
            "run",
            path.to_str().expect("path"),
            "--policy",
            "retry",
            "--json",
        ]);
        assert_eq!(
            single,
            common::fixture(&format!("demo/{name}.retry.run.json")),
            "{name}"
        );
    }
}

#[test]
fn run_overrides_match_demo_variants() {
    let path = scenario_path("lost_ack");
    let (code, out, _) = cli(&[
        "run",
        path.to_str().expect("path"),
        "--policy",
        "optimistic",
        "--seed",
        "7",
        "--probability",
        "0.5",
    ]);
    let t = transcript("demo-variants/lost_ack.optimistic.seed7.p0.5.txt");
    assert_eq!((code, out), (t.exit_code, t.stdout));
}

fn write_temp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolstorm-scn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

fn edited(name: &str, from: &str, to: &str) -> String {
    let text = ScenarioFile::bundled(name).expect("bundled").to_text();
    assert!(text.contains(from), "{from} not in {name}");
    text.replacen(from, to, 1)
}

#[test]
fn bad_files_name_the_path_and_reason() {
    let cases = [
        (
            "bad-prob.json",
            edited(
                "lost_ack",
                "\"probability\": 1.0,\n      \"limit\"",
                "\"probability\": 2,\n      \"limit\"",
            ),
            "Invalid fault rule",
            "rules[0].probability",
        ),
        (
            "bad-world.json",
            edited("lost_ack", "\"shipping\"", "\"mars\""),
            "Invalid scenario file",
            "world",
        ),
        (
            "bad-seed.json",
            edited("lost_ack", "\"seed\": 42", "\"seed\": \"42\""),
            "Invalid scenario file",
            "seed",
        ),
        (
            "bad-budget.json",
            edited("lost_ack", "\"max_calls\": 8", "\"max_calls\": 0"),
            "Invalid scenario file",
            "max_calls",
        ),
        (
            "unknown-field.json",
            edited("lost_ack", "\"seed\": 42", "\"seeds\": 1, \"seed\": 42"),
            "Invalid scenario file",
            "seeds",
        ),
        (
            "bad-kind.json",
            edited("lost_ack", "\"response_lost\"", "\"explode\""),
            "Invalid fault rule",
            "rules[0].kind",
        ),
        (
            "truncated.json",
            "{\"schema_version\": 1,".into(),
            "Invalid or excessively nested JSON",
            "byte",
        ),
    ];
    for (file, text, message, path) in cases {
        let p = write_temp(file, &text);
        let (code, out, err) = cli(&["run", p.to_str().expect("path")]);
        assert_eq!(code, 2, "{file}: {err}");
        assert!(out.is_empty(), "{file}");
        assert_eq!(err.lines().count(), 1, "{file}: one line: {err}");
        assert!(
            err.contains(message) && err.contains(path) && err.contains(file),
            "{file}: {err}"
        );
    }
    let (code, _, err) = cli(&["run", "no/such/scenario.json"]);
    assert_eq!(code, 2);
    // In this tool's words: `run` is none of the reference's commands.
    assert_eq!(
        err.trim_end(),
        "toolstorm-tui: cannot open 'no/such/scenario.json': no such file or directory",
        "{err}"
    );
    // `check` is one: the reference's exact line is part of compatibility.
    let (code, _, err) = cli(&["check", "no/such/scenario.json"]);
    assert_eq!(code, 2);
    assert_eq!(
        err.trim_end(),
        "toolstorm-tui: FileNotFoundError: [Errno 2] No such file or directory: 'no/such/scenario.json'"
    );
}

#[test]
fn verdict_file_holds_every_check() {
    let out = write_temp("verdict.json", "");
    let path = scenario_path("rate_limit");
    let (code, _, _) = cli(&[
        "run",
        path.to_str().expect("path"),
        "--verdict",
        out.to_str().expect("path"),
        "--fail-on-contract",
    ]);
    assert_eq!(code, 1);
    let v = toolstorm::json::parse(&std::fs::read_to_string(&out).expect("verdict")).expect("json");
    let runs = common::get_array(&v, "runs");
    assert_eq!(runs.len(), 3);
    assert_eq!(common::get(&v, "passed").as_bool(), Some(false));
    let checks = common::get_array(common::get(&runs[1], "contract"), "checks");
    assert!(
        checks
            .iter()
            .any(|c| common::get_str(c, "name") == "Retry-after respected"
                && common::get(c, "passed").as_bool() == Some(false))
    );
}

#[test]
fn secrets_never_reach_written_results() {
    let fake = r#"{"name": "fake-receipt", "tool": "create_shipment", "kind": "replace", "calls": [1], "probability": 1.0, "limit": null, "delay": 0.0, "replacement": {"shipment_id": "SHP-9", "api_key": "sk-live-123"}}"#;
    let text = ScenarioFile::bundled("lost_ack")
        .expect("bundled")
        .to_text()
        .replacen("\"policy\": \"all\"", "\"policy\": \"optimistic\"", 1);
    let start = text.find("\"rules\": [").expect("rules") + "\"rules\": [".len();
    let end = start + text[start..].find("\n  ]").expect("end of rules");
    let scenario = format!("{}{fake}{}", &text[..start], &text[end..]);
    let path = write_temp("secret-receipt.json", &scenario);
    let output = write_temp("secret-output.json", "");
    let (code, out, err) = cli(&[
        "run",
        path.to_str().expect("path"),
        "--json",
        "--output",
        output.to_str().expect("path"),
    ]);
    assert_eq!(code, 0, "{err}");
    let written = std::fs::read_to_string(&output).expect("output");
    for (what, text) in [("stdout", &out), ("--output", &written)] {
        assert!(
            !text.contains("sk-live-123"),
            "{what} leaks the secret:\n{text}"
        );
        assert!(text.contains("\"api_key\": \"[REDACTED]\""), "{what}");
        // The receipt the policy got is the outcome, redacted like the report's copy.
        let v = toolstorm::json::parse(text).expect("json");
        let outcome = common::get(&v, "outcome");
        assert!(
            toolstorm::json::canonical(outcome).contains("[REDACTED]"),
            "{what}"
        );
    }

    // Orbit: a replaced read returns a secret to the model; the envelope in the result is
    // redacted.
    let orbit = std::fs::read_to_string(scenario_path("orbit-parallel"))
        .expect("read")
        .replacen("\"kind\": \"unavailable\",", "\"kind\": \"replace\",", 1)
        .replacen(
            "\"replacement\": null",
            "\"replacement\": {\"id\": 41, \"password\": \"hunter2\"}",
            1,
        );
    let path = write_temp("secret-orbit.json", &orbit);
    let work = std::env::temp_dir().join(format!("toolstorm-scn-work-{}", std::process::id()));
    let (code, out, err) = cli(&[
        "run",
        path.to_str().expect("path"),
        "--json",
        "--work-dir",
        work.to_str().expect("path"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !out.contains("hunter2"),
        "the orbit result leaks the secret"
    );
    assert!(out.contains("[REDACTED]"));
}

#[test]
fn probability_errors_say_what_a_probability_must_be() {
    // demo: the reference's line, then the flag's problem.
    let (code, _, err) = cli(&["demo", "--probability", "nan"]);
    assert_eq!(code, 2);
    assert_eq!(
        err.trim_end(),
        "toolstorm-tui: ConfigurationError: Invalid fault rule (--probability nan: expected a number between 0 and 1)"
    );
    // A rule's own probability of -1 is not a "duration".
    let p = write_temp(
        "negative-probability.json",
        &edited(
            "lost_ack",
            "\"probability\": 1.0,\n      \"limit\"",
            "\"probability\": -1,\n      \"limit\"",
        )
        .replacen("\"probability\": 1.0,", "\"probability\": null,", 1),
    );
    let (code, _, err) = cli(&["run", p.to_str().expect("path")]);
    assert_eq!(code, 2);
    assert!(err.contains("Invalid fault rule"), "{err}");
    assert!(
        err.contains("rules[0].probability: expected a number between 0 and 1, got -1"),
        "{err}"
    );
    assert!(!err.contains("Duration"), "{err}");
    // The override is named as such.
    let (code, _, err) = cli(&[
        "run",
        &scenario_path("lost_ack").to_string_lossy(),
        "--probability",
        "-1",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("the probability for every rule must be a number between 0 and 1"),
        "{err}"
    );
    // Invalid JSON is said once, not twice.
    let p = write_temp("truncated-once.json", "{\"schema_version\": 1,");
    let (_, _, err) = cli(&["run", p.to_str().expect("path")]);
    assert_eq!(
        err.matches("Invalid or excessively nested JSON").count(),
        1,
        "{err}"
    );
}
