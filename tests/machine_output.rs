//! Machine output is never shortened or escaped for display: what a command prints for a
//! program (canonical text, `--json`, JSON lines, `mcp --print-config`) reaches a pipe byte for
//! byte, whatever its line length. Run through the real binary with standard output piped.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn piped(args: &[&str]) -> (i32, Vec<u8>) {
    let out = Command::new(BIN)
        .current_dir(root())
        .args(args)
        .output()
        .expect("runs");
    (out.status.code().unwrap_or(-1), out.stdout)
}

#[test]
fn canonical_of_a_canonical_file_is_the_file() {
    let rel = "tests/fixtures/reference/api/large_public_10000.cassette.json";
    let file = std::fs::read(root().join(rel)).expect("fixture");
    assert!(
        file.iter().position(|b| *b == b'\n').unwrap_or(file.len()) > 4_000,
        "the fixture has a line longer than the display limit"
    );
    let (code, out) = piped(&["canonical", rel]);
    assert_eq!(code, 0);
    assert!(
        out == file,
        "canonical piped differs from the canonical file ({} vs {} bytes)",
        out.len(),
        file.len()
    );
}

#[test]
fn json_outputs_are_whole_lines_of_json() {
    let big = "tests/fixtures/reference/api/large_public_10000.cassette.json";
    for args in [
        vec!["inspect", "--json", big],
        vec!["check", "--json", big],
        vec!["check", "--json", "cassettes/mcp-incident.json"],
        vec!["run", "--json", "scenarios/lost_ack.json"],
        vec!["mcp", "--print-config", "s", "--", "python3", "server.py"],
    ] {
        let (_, out) = piped(&args);
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(!text.contains("more characters)"), "{args:?} was cut");
        let whole: Result<Vec<_>, _> = if args.contains(&"--print-config") || args[0] == "run" {
            vec![toolstorm::json::parse(text.trim_end())]
                .into_iter()
                .collect()
        } else {
            text.lines().map(toolstorm::json::parse).collect()
        };
        assert!(
            whole.is_ok(),
            "{args:?} printed JSON that does not parse: {:?}",
            whole.err()
        );
    }
}

#[test]
fn check_writes_junit_with_one_case_per_check_and_the_calls_behind_a_failure() {
    let out = std::env::temp_dir().join(format!("toolstorm-junit-{}.xml", std::process::id()));
    let done = std::process::Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["check", "cassettes/incident.json", "--junit"])
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("check runs");
    assert_eq!(done.status.code(), Some(1));
    let xml = std::fs::read_to_string(&out).expect("the JUnit file");
    assert_eq!(xml.matches("<testcase ").count(), 3, "{xml}");
    assert!(
        xml.contains(r#"<testsuites name="toolstorm" tests="3" failures="1""#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<failure message="No duplicate side effects: 1 duplicate effect(s) across 2 commits""#),
        "{xml}"
    );
    assert!(
        xml.contains("call #3 committed shipment order-1729 again; call #2 committed it first"),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<property name="seed" value="42"/>"#),
        "{xml}"
    );
}

#[test]
fn campaign_writes_junit_with_one_case_per_run_and_seed() {
    let out = std::env::temp_dir().join(format!(
        "toolstorm-campaign-junit-{}.xml",
        std::process::id()
    ));
    let done = std::process::Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["campaign", "cassettes/lost-ack-campaign.json", "--junit"])
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("campaign runs");
    // Runs of the bundled campaign failed: 1, as a test runner exits, and the file is written.
    assert_eq!(done.status.code(), Some(1));
    let xml = std::fs::read_to_string(&out).expect("the JUnit file");
    let table = String::from_utf8_lossy(&done.stdout);
    let failing = table
        .lines()
        .filter(|l| l.trim_end().ends_with("FAIL"))
        .count();
    assert_eq!(xml.matches("<testcase ").count(), 10, "{xml}");
    assert_eq!(xml.matches("<failure ").count(), failing, "{table}\n{xml}");
    assert!(xml.contains(r#"<testcase name="run 1 · seed 43""#), "{xml}");
    assert!(
        xml.contains("call #2 committed shipment o-1 again"),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<property name="recording" value="cassettes/lost-ack-campaign.runs/run-001/recording.json"/>"#),
        "{xml}"
    );
}

#[test]
fn inspect_json_of_an_mcp_recording_says_what_its_text_says() {
    let (code, out) = piped(&["inspect", "cassettes/mcp-incident.json", "--json"]);
    assert_eq!(code, 0);
    let text = String::from_utf8(out).expect("utf-8");
    let v = toolstorm::json::parse(text.trim_end()).expect("one JSON object");
    let mcp = v
        .as_object()
        .and_then(|o| o.get("mcp"))
        .and_then(toolstorm::json::Value::as_object)
        .expect("an mcp object");
    let get = |k: &str| toolstorm::json::compact(mcp.get(k).expect(k));
    assert_eq!(get("client"), r#""rmcp 3.11.0""#);
    assert_eq!(get("recorded_calls"), "2");
    assert!(get("faults").contains(r#""rule":"lost-receipt""#), "{text}");
    assert!(get("faults").contains("isError: true"), "{text}");
    // Beside what the client got, what the server answered (the shipment that committed).
    assert!(
        get("faults").contains(r#""server_answered":{"content":"#)
            && get("faults").contains(r#"SHP-0001"#),
        "{text}"
    );
    let lost = get("lost_answers");
    assert!(
        lost.starts_with(r#"[{"call":1,"client_got":"a result with isError: true"#)
            && lost.contains(r#""structuredContent":{"order_id":"o-1","shipment_id":"SHP-0001"}"#),
        "{lost}"
    );
    assert!(get("duplicates").contains(r#""call":2"#), "{text}");
    assert_eq!(get("in_flight"), "[]");
    // The reference's fields are as they were, first.
    assert!(
        text.starts_with(r#"{"schema_version": 1, "calls": 2, "effects": 2,"#),
        "{text}"
    );
    // The text says it too.
    let (code, out) = piped(&["inspect", "cassettes/mcp-incident.json"]);
    assert_eq!(code, 0);
    let said = String::from_utf8(out).expect("utf-8");
    assert!(
        said.contains(
            r#"lost answer: call #1 — the server answered text {"order_id":"o-1","shipment_id":"SHP-0001"}"#
        ) && said.contains("the client never got it"),
        "{said}"
    );
    // A recording of the reference's kind has no mcp key (its bytes are the reference's).
    let (_, plain) = piped(&["inspect", "cassettes/incident.json", "--json"]);
    assert!(!String::from_utf8_lossy(&plain).contains("\"mcp\""));
}
