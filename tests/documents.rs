//! The document layer: one way in for every kind of file. Each kind is recognised and opened
//! with its runs and checks; each failure is a typed error the faces can match on, with one
//! line naming the file, the JSON path and the reason; scenario files of every world run
//! through one library call.

mod common;

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use toolstorm::document::{
    self, Contents, DocKind, Document, Error, Problem, Scenario, ScenarioRun, Settings, World,
};
use toolstorm::executor::approval::NoTerminal;
use toolstorm::lab::Policy;
use toolstorm::lab::scenario_file::PolicyChoice;
use toolstorm::tui::action::Action;
use toolstorm::tui::app::{App, StatusKind};
use toolstorm::tui::runtime::dispatch;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolstorm-docs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    dir.join(name)
}

#[test]
fn every_kind_of_file_is_recognised() {
    let cases = [
        ("cassettes/incident.json", DocKind::Cassette, 1),
        ("cassettes/lost-ack-comparison.json", DocKind::Comparison, 3),
        (
            "tests/fixtures/reference/demo/lost_ack.retry.run.json",
            DocKind::RunFile,
            1,
        ),
        ("scenarios/lost_ack.json", DocKind::Scenario, 3),
        ("scenarios/orbit-parallel.json", DocKind::Scenario, 1),
    ];
    for (rel, kind, runs) in cases {
        let doc = Document::open(&repo(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(doc.kind, kind, "{rel}");
        assert_eq!(doc.runs.len(), runs, "{rel}");
        assert!(
            doc.runs.iter().all(|r| !r.checks.is_empty()),
            "{rel}: judged"
        );
    }
    // A run file keeps its policy's name; a comparison labels every run.
    let run = Document::open(&repo(
        "tests/fixtures/reference/demo/lost_ack.retry.run.json",
    ))
    .expect("run file");
    assert_eq!(run.runs[0].policy, Some(Policy::Retry));
    let cmp = Document::open(&repo("cassettes/lost-ack-comparison.json")).expect("comparison");
    let labels: Vec<&str> = cmp.runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["optimistic", "retry", "resilient"]);
}

#[test]
fn read_says_what_a_file_holds_without_running_it() {
    match document::read(&repo("scenarios/orbit-injection.json")).expect("reads") {
        Contents::Scenario(s) => {
            assert_eq!(s.world(), World::Orbit);
            assert!(!s.title().is_empty());
        }
        Contents::Trace(_) | Contents::Campaign(_) => panic!("an orbit scenario is a scenario"),
    }
    match document::read(&repo("cassettes/incident.json")).expect("reads") {
        Contents::Trace(t) => {
            assert_eq!(t.kind, DocKind::Cassette);
            assert_eq!(t.cassettes.len(), 1);
        }
        Contents::Scenario(_) | Contents::Campaign(_) => panic!("a cassette is a trace"),
    }
    match document::read(&repo("cassettes/lost-ack-campaign.json")).expect("reads") {
        Contents::Campaign(c) => {
            assert_eq!(c.scenario_name, "mcp-lost-ack");
            assert_eq!(c.runs.len(), 10);
        }
        _ => panic!("a campaign file is a campaign"),
    }
    // The trace readers (check, inspect) refuse it in words, pointing at `campaign`.
    let e =
        document::open_trace(&repo("cassettes/lost-ack-campaign.json")).expect_err("not a trace");
    assert!(e.to_string().contains("toolstorm-tui campaign FILE"), "{e}");
}

#[test]
fn a_missing_file_and_an_invalid_file_are_different_errors() {
    let missing = Document::open(&scratch("not-there.json")).expect_err("missing");
    assert!(missing.is_missing());
    match &missing.problem {
        Problem::Unreadable(e) => assert_eq!(e.0.kind(), ErrorKind::NotFound),
        other => panic!("want Unreadable, got {other:?}"),
    }
    assert_eq!(missing.class_name(), "FileNotFoundError");

    let bad = scratch("bad-rule.json");
    let text = std::fs::read_to_string(repo("scenarios/lost_ack.json"))
        .expect("read")
        .replacen("\"response_lost\"", "\"explode\"", 1);
    std::fs::write(&bad, text).expect("write");
    let invalid = Document::open(&bad).expect_err("invalid");
    assert!(!invalid.is_missing());
    match &invalid.problem {
        Problem::Invalid(e) => {
            assert_eq!(e.message, "Invalid fault rule");
            assert_eq!(e.path.as_deref(), Some("rules[0].kind"));
        }
        other => panic!("want Invalid, got {other:?}"),
    }
    // One line: the reference's class and message, then the file, the JSON path and why.
    assert_eq!(
        invalid.to_string(),
        format!(
            "ConfigurationError: Invalid fault rule ({} at rules[0].kind: Unknown fault kind: \
             expected timeout, rate_limit, unavailable, response_lost, replace or latency)",
            bad.display()
        )
    );
}

#[test]
fn the_explorer_tells_a_removed_file_from_a_broken_one() {
    let path = scratch("watched.json");
    std::fs::write(&path, common::fixture("demo/lost_ack.retry.cassette.json")).expect("write");
    let mut app = App::new(Document::open(&path).expect("open"));
    let calls = app.timeline().report().calls.len();

    std::fs::remove_file(&path).expect("remove");
    dispatch(&mut app, Action::FileChanged);
    assert_eq!(app.status_kind, StatusKind::Error);
    assert!(app.status.contains("removed"), "{}", app.status);
    assert!(!app.status.contains("invalid"), "{}", app.status);
    assert_eq!(
        app.timeline().report().calls.len(),
        calls,
        "last version kept"
    );

    std::fs::write(&path, "{\"schema_version\": ").expect("write");
    dispatch(&mut app, Action::FileChanged);
    assert!(app.status.contains("invalid"), "{}", app.status);
    assert!(!app.status.contains("removed"), "{}", app.status);

    // The same two cases arrive as typed errors the app matches on, whatever their text.
    let mut app2 = app.clone();
    app2.update(Action::Reloaded(Err(Error::io(
        &path,
        std::io::Error::from(ErrorKind::NotFound),
    ))));
    assert!(app2.status.contains("removed"), "{}", app2.status);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn scenario_files_of_every_world_run_through_one_call() {
    let lab = document::open_scenario(&repo("scenarios/lost_ack.json")).expect("lab");
    let settings = Settings {
        policy: Some(PolicyChoice::One(Policy::Retry)),
        seed: Some(7),
        ..Settings::default()
    };
    match lab.run(None, &settings, &mut NoTerminal).expect("runs") {
        ScenarioRun::Lab(l) => {
            assert_eq!(l.runs.len(), 1);
            assert_eq!(l.runs[0].policy, Policy::Retry);
            assert_eq!(l.file.config.seed, 7, "the settings are applied");
            // The same run through the lab directly gives the same digest.
            let direct = toolstorm::lab::run(&l.file.scenario, Policy::Retry, &l.file.config)
                .expect("lab run");
            assert_eq!(direct.digest, l.runs[0].digest);
        }
        ScenarioRun::Orbit(_) => panic!("a shipping scenario runs in the lab"),
    }
    let orbit = document::open_scenario(&repo("scenarios/orbit-parallel.json")).expect("orbit");
    assert!(matches!(orbit, Scenario::Orbit(_)));
    match orbit
        .run(None, &Settings::default(), &mut NoTerminal)
        .expect("runs")
    {
        ScenarioRun::Orbit(r) => assert!(!r.batches.is_empty()),
        ScenarioRun::Lab(_) => panic!("an orbit scenario runs in the executor"),
    }
    // Settings the scenario cannot take are run errors naming the file.
    let path = repo("scenarios/lost_ack.json");
    let too_many = Settings {
        max_calls: Some(99),
        ..Settings::default()
    };
    let e = lab
        .run(Some(&path), &too_many, &mut NoTerminal)
        .expect_err("budget out of range");
    assert!(matches!(e.problem, Problem::Run(_)));
    assert!(
        e.to_string()
            .contains("Demo call budget must be between 1 and 20")
    );
    assert!(e.to_string().contains("lost_ack.json"));
}

#[test]
fn traces_are_read_with_the_reference_semantics_only() {
    // `inspect` and `check` never run a scenario: a scenario file is not a valid trace.
    let e = document::open_trace(&repo("scenarios/lost_ack.json")).expect_err("not a trace");
    assert_eq!(e.class_name(), "ConfigurationError");
    let unknown_world = scratch("mars.json");
    std::fs::write(&unknown_world, "{\"world\": \"mars\"}").expect("write");
    let e = Document::open(&unknown_world).expect_err("unknown world");
    assert_eq!(
        e.config_error().and_then(|c| c.path.as_deref()),
        Some("world")
    );
    assert!(
        e.to_string().contains("expected one of: shipping, orbit"),
        "{e}"
    );
}

#[test]
fn mcp_scenarios_and_recordings_open_through_the_same_door() {
    // The bundled MCP scenarios are valid and in their canonical layout.
    for name in ["mcp-lost-ack", "mcp-rate-limit"] {
        let path = repo(&format!("scenarios/{name}.json"));
        match document::open_scenario(&path).unwrap_or_else(|e| panic!("{name}: {e}")) {
            Scenario::Mcp(s) => {
                assert_eq!(
                    s.to_text(),
                    std::fs::read_to_string(&path).expect("read"),
                    "{name}"
                );
                // The prebuilt example server the README builds (release), never a `cargo
                // run` that builds a debug one while the agent waits.
                let server = s.server.as_ref().expect("names the example server");
                assert_eq!(
                    server.command, "../target/release/examples/mcp_shipping_server",
                    "{name}"
                );
                assert!(server.args.is_empty(), "{name}: {:?}", server.args);
            }
            other => panic!("{name}: {:?}", other.world()),
        }
        // An MCP scenario is not run by `run` or the explorer: it says how to start it.
        let e = Document::open(&path).expect_err("runs in front of a server");
        assert!(matches!(e.problem, Problem::Run(_)));
        assert!(e.to_string().contains("toolstorm-tui mcp"), "{e}");
    }
    // The bundled recording: a cassette with its sidecar.
    let doc = Document::open(&repo("cassettes/mcp-incident.json")).expect("opens");
    assert_eq!(doc.kind, DocKind::McpRecording);
    // It was re-recorded (issue 54) by a proxy that says how the session ended.
    let finished = |doc: &Document| {
        doc.runs[0]
            .checks
            .iter()
            .find(|c| c.name == "Session finished")
            .expect("Session finished")
            .clone()
    };
    let ours = finished(&doc);
    assert!(
        ours.passed && ours.detail.contains("the proxy finished the session"),
        "{}",
        ours.detail
    );
    // A sidecar that predates `finished` (the bundled retry storm's): that is said, and only
    // calls left in flight (none here) would fail the check — the missing fact neither passes
    // nor fails it.
    let old = Document::open(&repo("cassettes/rate-limit-retry-storm.json")).expect("opens");
    let finished = finished(&old);
    assert!(
        finished
            .detail
            .contains("made before sessions said how they ended")
            && finished.detail.contains("no call was left in flight"),
        "{}",
        finished.detail
    );
    assert!(finished.passed);
    let session = doc.runs[0].mcp.as_deref().expect("sidecar");
    assert_eq!(
        session.calls.len(),
        doc.runs[0].timeline.report().calls.len()
    );
    assert_eq!(
        doc.runs[0].max_calls, session.max_calls,
        "judged against its own budget"
    );
    assert!(
        !doc.runs[0].checks.iter().all(|c| c.passed),
        "the duplicate fails it"
    );

    // A broken sidecar is an error naming the sidecar, not a silent plain cassette.
    let dir = scratch("rec");
    let _ = std::fs::remove_file(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let cassette = dir.join("incident.json");
    std::fs::copy(repo("cassettes/mcp-incident.json"), &cassette).expect("copy");
    std::fs::write(dir.join("incident.mcp.json"), "{\"schema_version\": 2}").expect("write");
    let e = Document::open(&cassette).expect_err("bad sidecar");
    assert!(e.to_string().contains("incident.mcp.json"), "{e}");
    assert_eq!(
        e.config_error().map(|c| c.message),
        Some("Invalid MCP session file")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_example_recording_fails_on_its_bug() {
    // Before: `rate-limit-retry-storm.json` passed `check` although its story is a retry before
    // the advertised wait. Each example in cassettes/ must fail the check that names its bug.
    let cases = [
        ("cassettes/incident.json", "No duplicate side effects"),
        ("cassettes/mcp-incident.json", "No duplicate side effects"),
        (
            "cassettes/rate-limit-retry-storm.json",
            "Retry-after respected",
        ),
    ];
    for (file, bug) in cases {
        let trace = document::open_trace(&repo(file)).expect(file);
        let summary = document::judge(&trace, None).expect(file);
        let failed: Vec<&str> = summary
            .runs
            .iter()
            .flatten()
            .filter(|c| !c.passed)
            .map(|c| c.name.as_str())
            .collect();
        assert!(failed.contains(&bug), "{file}: failed {failed:?}");
        assert_ne!(summary.exit_code(), 0, "{file}");
    }
}

#[test]
fn a_file_of_another_kind_says_what_it_is() {
    // Before: a verdict file was called a bad comparison ("runs[0] has no report"), a scenario
    // file was missing "clock", with no word on what to do instead.
    let verdicts = scratch("kind.verdicts.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .arg("run")
        .arg(repo("scenarios/lost_ack.json"))
        .arg("--verdict")
        .arg(&verdicts)
        .output()
        .expect("run");
    assert!(out.status.success());
    let cases = [
        (
            verdicts,
            "ValueError: Each comparison run needs a report",
            "a verdict file",
        ),
        (
            repo("scenarios/lost_ack.json"),
            "ConfigurationError: Missing required document fields",
            "a scenario file, not a recording: `toolstorm-tui run",
        ),
        (
            repo("cassettes/mcp-incident.mcp.json"),
            "ConfigurationError: Missing required document fields",
            "the session sidecar of an MCP recording",
        ),
    ];
    for (path, reference, hint) in cases {
        let message = document::open_trace(&path)
            .expect_err("not a trace")
            .to_string();
        assert!(message.starts_with(reference), "{message}");
        assert!(message.contains(hint), "{message}");
        assert_eq!(message.matches("runs[0]").count(), 0, "{message}");
    }
}

#[test]
fn an_executor_run_output_opens_as_a_recording() {
    let out = common::scratch_dir("run-output").join("out.json");
    let done = std::process::Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["run", "scenarios/orbit-parallel.json", "--output"])
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run");
    assert!(out.is_file(), "{}", String::from_utf8_lossy(&done.stderr));
    // It names its world (as a scenario does) and holds a report: a recording, not a
    // scenario to run ("missing schema_version" before).
    let doc = Document::open(&out).expect("the run's output opens");
    assert_eq!(doc.runs.len(), 1);
    let calls = doc.runs[0].timeline.len();
    assert_eq!(calls, 5, "the five calls of the parallel batch");
    // Its batches are read back, lanes and all, equal to the live run's.
    let live = Document::open(&repo("scenarios/orbit-parallel.json")).expect("runs");
    let (read, ran) = (&doc.runs[0].batches, &live.runs[0].batches);
    assert_eq!(read.len(), ran.len());
    for (r, l) in read.iter().zip(ran) {
        assert_eq!(r.lanes, l.lanes);
        assert_eq!(r.log, l.log);
        assert_eq!((r.started_ms, r.answered_ms), (l.started_ms, l.answered_ms));
    }
    assert!(read.iter().map(|b| b.lanes.len()).sum::<usize>() >= 4);
    // A damaged batch is refused naming the file and where in it.
    let text = std::fs::read_to_string(&out).expect("read");
    let broken = out.with_file_name("broken.json");
    std::fs::write(
        &broken,
        text.replacen("\"lanes\": [", "\"lanes\": 7, \"x\": [", 1),
    )
    .expect("write");
    let e = Document::open(&broken).expect_err("a damaged batch");
    let said = e.to_string();
    assert!(
        said.contains("broken.json") && said.contains("batches[0].lanes"),
        "{said}"
    );
}
