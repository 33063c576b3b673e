//! The executor on the command line: `run` on Orbit scenario files (text and `--json`),
//! `tools --schema`, the bundled files' layout, and bad files refused with file, path and
//! reason.

mod common;

use common::cli;

use std::path::PathBuf;

use toolstorm::executor::scenario::ExecutorScenario;
use toolstorm::json::parse;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scenario_path(name: &str) -> String {
    root()
        .join("scenarios")
        .join(format!("{name}.json"))
        .to_string_lossy()
        .into_owned()
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(root().join("tests/fixtures/executor").join(name)).expect("fixture")
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolstorm-exec-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

#[test]
fn run_prints_the_parallel_incident() {
    let work = temp("work-parallel");
    let (code, out, err) = cli(&[
        "run",
        &scenario_path("orbit-parallel"),
        "--work-dir",
        work.to_str().expect("path"),
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, fixture("orbit-parallel.txt"));
    assert!(out.contains("batch 1: 4 calls answered in 2.0s (virtual)"));
    assert!(out.contains("outputs in request order: call_A, call_B, call_C, call_D"));
}

#[test]
fn run_json_gives_outputs_log_and_report() {
    let (code, out, _) = cli(&["run", &scenario_path("orbit-parallel"), "--json"]);
    assert_eq!(code, 0);
    let v = parse(&out).expect("json");
    let batches = common::get_array(&v, "batches");
    let log = common::get_array(&batches[0], "log");
    let order: Vec<&str> = log.iter().map(|r| common::get_str(r, "call_id")).collect();
    assert_eq!(order, ["call_B", "call_D", "call_A", "call_C"]);
    let ms: Vec<i64> = log
        .iter()
        .map(|r| common::get(r, "ms").as_i64().expect("int ms"))
        .collect();
    assert_eq!(ms, [1000, 1000, 1302, 2000]);
    assert_eq!(common::get_array(&batches[0], "outputs").len(), 4);
    assert_eq!(common::get_array(&batches[0], "lanes").len(), 4);
    let report = common::get(&v, "report");
    assert_eq!(common::get_array(report, "calls").len(), 5);
    assert_eq!(common::get_str(report, "clock"), "VirtualClock");
    // Same seed, same bytes.
    let (_, again, _) = cli(&["run", &scenario_path("orbit-parallel"), "--json"]);
    assert_eq!(out, again);
}

#[test]
fn cassette_of_an_executor_run_loads_like_any_trace() {
    let cassette = temp("parallel.cassette.json");
    let (code, _, err) = cli(&[
        "run",
        &scenario_path("orbit-parallel"),
        "--cassette",
        cassette.to_str().expect("path"),
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    let (code, out, err) = cli(&["inspect", cassette.to_str().expect("path")]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn injection_writes_nothing_to_the_tracker() {
    let work = temp("work-injection");
    let _ = std::fs::remove_dir_all(&work);
    let (code, out, _) = cli(&[
        "run",
        &scenario_path("orbit-injection"),
        "--work-dir",
        work.to_str().expect("path"),
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("call_2   add_label     denied"), "{out}");
    assert!(out.contains("tracker: 0 actions"));
    assert!(!work.exists());
}

#[test]
fn timeout_commit_writes_its_label_to_the_work_folder() {
    let work = temp("work-commit");
    let _ = std::fs::remove_dir_all(&work);
    let (code, out, _) = cli(&[
        "run",
        &scenario_path("orbit-timeout-commit"),
        "--work-dir",
        work.to_str().expect("path"),
    ]);
    assert_eq!(code, 0);
    assert!(
        out.contains(
            "late: call_1 add_label attempt 1 ended ok at 5.6s and committed label 41/triaged, after \
             its timeout answer at 5.0s"
        ),
        "{out}"
    );
    let lines = std::fs::read_to_string(work.join("tracker.jsonl")).expect("tracker file");
    assert_eq!(
        lines,
        "{\"action\":\"add_label\",\"issue_id\":41,\"label\":\"triaged\"}\n"
    );
}

#[test]
fn tools_schema_prints_function_tools() {
    let (code, out, err) = cli(&["tools", "--schema"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, fixture("tools-schema.json"));
    let v = parse(&out).expect("json");
    let names: Vec<&str> = v
        .as_array()
        .expect("list")
        .iter()
        .map(|t| common::get_str(t, "name"))
        .collect();
    assert_eq!(
        names,
        ["get_issue", "get_doc_section", "add_label", "post_comment"]
    );
    let (_, ro, _) = cli(&["tools", "--schema", "--read-only"]);
    assert_eq!(parse(&ro).expect("json").as_array().map(Vec::len), Some(2));
    let (code, table, _) = cli(&["tools"]);
    assert_eq!(code, 0);
    assert!(table.contains("post_comment     side effect  not idempotent  timeout default"));
}

#[test]
fn bundled_orbit_files_are_in_canonical_layout() {
    for name in ["orbit-parallel", "orbit-injection", "orbit-timeout-commit"] {
        let text = std::fs::read_to_string(scenario_path(name)).expect("file");
        let sc = ExecutorScenario::from_text(&text).expect("valid");
        assert_eq!(sc.to_text(), text, "{name}");
        assert_eq!(sc.name, name);
    }
}

fn edited(name: &str, from: &str, to: &str) -> String {
    let text = std::fs::read_to_string(scenario_path(name)).expect("file");
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1)
}

#[test]
fn bad_orbit_files_name_the_file_path_and_reason() {
    let cases = [
        (
            "orbit-unknown-field.json",
            edited("orbit-parallel", "\"seed\": 7", "\"seeds\": 1, \"seed\": 7"),
            "seeds",
        ),
        (
            "orbit-bad-approver.json",
            edited("orbit-parallel", "\"deny_all\"", "\"yes_to_all\""),
            "approver",
        ),
        (
            "orbit-bad-limits.json",
            edited(
                "orbit-parallel",
                "\"max_concurrency\": 4",
                "\"max_concurrency\": 0",
            ),
            "limits.max_concurrency",
        ),
        (
            "orbit-bad-call.json",
            edited(
                "orbit-parallel",
                "\"call_id\": \"call_C\"",
                "\"id\": \"call_C\"",
            ),
            "batches[0][2]",
        ),
        (
            "orbit-bad-type.json",
            edited(
                "orbit-parallel",
                "\"type\": \"function_call\"",
                "\"type\": \"message\"",
            ),
            "batches[0][0].type",
        ),
        (
            "orbit-bad-rule.json",
            edited("orbit-parallel", "\"unavailable\"", "\"explode\""),
            "rules[0].kind",
        ),
    ];
    for (file, text, path) in cases {
        let p = temp(file);
        std::fs::write(&p, text).expect("write");
        let (code, out, err) = cli(&["run", p.to_str().expect("path")]);
        assert_eq!(code, 2, "{file}: {err}");
        assert!(out.is_empty(), "{file}");
        assert_eq!(err.lines().count(), 1, "{file}: {err}");
        assert!(err.contains(file) && err.contains(path), "{file}: {err}");
    }
    let (code, _, err) = cli(&["run", &scenario_path("orbit-parallel"), "--policy", "retry"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--policy applies to shipping scenarios"),
        "{err}"
    );
}

#[test]
fn without_work_dir_the_tracker_folder_is_private_and_removed() {
    // The real binary, with its temporary folder pointed at a scratch folder we can inspect.
    let tmp = temp("tmpdir-for-tracker");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("tmp");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["run", &scenario_path("orbit-timeout-commit")])
        .env("TMPDIR", &tmp)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("tracker: 1 action"), "{stdout}");
    assert!(
        stdout.contains("removed at exit (keep it with --work-dir DIR)"),
        "{stdout}"
    );
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .expect("list")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn a_call_id_used_twice_in_a_batch_is_refused() {
    let text = edited("orbit-parallel", "\"call_B\"", "\"call_A\"");
    let path = temp("dup-call-id.json");
    std::fs::write(&path, text).expect("write");
    let (code, out, err) = cli(&["run", path.to_str().expect("path")]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("Invalid scenario file")
            && err.contains("batches[0][1].call_id")
            && err.contains("call id \"call_A\" is used twice"),
        "{err}"
    );
}

#[test]
fn answers_are_checked_and_only_orbit_scenarios_take_them() {
    let (code, _, err) = cli(&[
        "run",
        &scenario_path("orbit-injection"),
        "--answers",
        "maybe",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("expected y or n for each question"), "{err}");
    let (code, _, err) = cli(&["run", &scenario_path("lost_ack"), "--answers", "y"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--answers applies to orbit scenario files"),
        "{err}"
    );
    // A deny_all scenario asks nobody: answers change nothing and no approval line is printed,
    // and stderr says the answers were not used.
    let (code, out, err) = cli(&["run", &scenario_path("orbit-injection"), "--answers", "y,y"]);
    assert_eq!(code, 0);
    assert!(!out.contains("approval:"), "{out}");
    assert!(out.contains("tracker: 0 actions"), "{out}");
    assert!(
        err.contains("--answers y,y not used: the scenario's approver never asked"),
        "{err}"
    );
    // An interactive approver asked once: the answer left over is said too.
    let text = std::fs::read_to_string(scenario_path("orbit-injection")).expect("scenario");
    let interactive = text.replace("\"deny_all\"", "\"interactive\"");
    assert_ne!(interactive, text, "the scenario names its approver");
    let path = temp("interactive-orbit.json");
    std::fs::write(&path, interactive).expect("write");
    let (code, out, err) = cli(&["run", path.to_str().expect("path"), "--answers", "n,y,y"]);
    assert_eq!(code, 0, "{err}");
    let asked = out.matches("approval:").count();
    assert!(asked >= 1, "{out}");
    assert!(
        err.contains(&format!(
            "--answers: {} of 3 answer(s) not used: the approver asked {asked} question(s)",
            3 - asked
        )),
        "{err}"
    );
}

#[test]
fn live_runs_on_the_wall_clock_and_only_for_orbit_scenarios() {
    let (code, out, err) = cli(&["run", &scenario_path("orbit-injection"), "--live"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("batch 1: 1 call answered in 1."), "{out}");
    assert!(out.contains("(wall clock)"), "{out}");
    assert!(out.contains("call_2   add_label     denied"), "{out}");
    let (code, _, err) = cli(&["run", &scenario_path("lost_ack"), "--live"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--live applies to orbit scenario files"),
        "{err}"
    );
    let (code, _, err) = cli(&["run", &scenario_path("orbit-injection"), "--grace", "1"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = cli(&[
        "run",
        &scenario_path("orbit-injection"),
        "--live",
        "--grace",
        "-1",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("expected seconds between 0 and 3600"), "{err}");
}

#[test]
fn a_cassette_is_not_written_beside_another_recordings_journal() {
    // Before: `run --cassette x.json` over a killed MCP session's files wrote the cassette,
    // and every reader then recovered the old session from its journal instead.
    let cassette = temp("beside-journal.json");
    let journal = cassette.with_extension("mcp.journal");
    std::fs::write(&journal, "{}\n").expect("journal");
    let path = cassette.to_str().expect("path");
    for file in ["orbit-parallel", "lost_ack"] {
        let scenario = scenario_path(file);
        let mut args = vec!["run", scenario.as_str(), "--cassette", path];
        if file == "lost_ack" {
            args.extend(["--policy", "retry"]);
        }
        let (code, _, err) = cli(&args);
        assert_eq!(code, 2, "{file}: {err}");
        assert!(
            err.contains("has an MCP recording's journal beside it"),
            "{err}"
        );
        assert!(!cassette.exists(), "{file}: nothing written");
    }
    std::fs::remove_file(&journal).expect("remove");
    let (code, _, err) = cli(&["run", &scenario_path("orbit-parallel"), "--cassette", path]);
    assert_eq!(code, 0, "{err}");
    assert!(cassette.exists());
    let _ = std::fs::remove_file(&cassette);
}
