//! Shared helpers for the reference-driven tests.
#![allow(dead_code)]

pub mod agents;
pub mod mcp;
pub mod model;
pub mod worst;

use std::path::PathBuf;

use std::ffi::OsString;

use toolstorm::json::{Value, parse};

/// Path of a reference fixture.
pub fn fixture_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reference")
        .join(rel)
}

/// Text of a reference fixture.
pub fn fixture(rel: &str) -> String {
    let path = fixture_path(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parsed JSON of a reference fixture.
pub fn fixture_json(rel: &str) -> Value {
    parse(&fixture(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Member `key` of an object value.
pub fn get<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.as_object()
        .and_then(|o| o.get(key))
        .unwrap_or_else(|| panic!("missing {key}"))
}

/// String member.
pub fn get_str<'a>(v: &'a Value, key: &str) -> &'a str {
    get(v, key)
        .as_str()
        .unwrap_or_else(|| panic!("{key} not a string"))
}

/// Array member.
pub fn get_array<'a>(v: &'a Value, key: &str) -> &'a Vec<Value> {
    get(v, key)
        .as_array()
        .unwrap_or_else(|| panic!("{key} not an array"))
}

/// A transcript sidecar (`*.txt`): exit code, stdout, stderr.
pub struct Transcript {
    pub command: String,
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Parses a `*.txt` transcript.
pub fn transcript(rel: &str) -> Transcript {
    let text = fixture(rel);
    let header_end = text.find("---- stdout ----\n").expect("stdout marker");
    let header = &text[..header_end];
    let field = |name: &str| {
        header
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .unwrap_or_default()
            .to_owned()
    };
    let rest = &text[header_end + "---- stdout ----\n".len()..];
    let (stdout, rest) = rest
        .split_once("---- stderr ----\n")
        .expect("stderr marker");
    let (stderr, _) = rest.rsplit_once("---- end ----").expect("end marker");
    Transcript {
        command: field("command"),
        exit_code: field("exit_code").parse().expect("exit code"),
        stdout: stdout.to_owned(),
        stderr: stderr.to_owned(),
    }
}

/// Runs the CLI in-process: exit code, stdout, stderr.
pub fn cli(args: &[&str]) -> (i32, String, String) {
    cli_for(args, false)
}

/// [`cli`] as a person at a terminal sees it (`people`: text for people, colour on).
#[allow(dead_code)]
pub fn cli_for(args: &[&str], people: bool) -> (i32, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let argv: Vec<OsString> = std::iter::once("toolstorm-tui")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect();
    let code = toolstorm::cli::dispatch(
        argv,
        &mut toolstorm::cli::Io {
            out: &mut out,
            err: &mut err,
            people,
            reference: false,
        },
    )
    .code()
    .expect("a command, not the explorer");
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

/// Member `key`, or `null` when absent (lenient, for optional fields).
pub fn field<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.as_object()
        .and_then(|o| o.get(key))
        .unwrap_or(&Value::Null)
}

/// String member, or empty when absent.
pub fn text_of(v: &Value, key: &str) -> String {
    field(v, key).as_str().unwrap_or_default().to_owned()
}

/// The example MCP server (`examples/mcp_shipping_server.rs`), built by `cargo test` next to
/// the test binaries.
pub fn example_server() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    let dir = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("target dir");
    let path = dir.join("examples").join("mcp_shipping_server");
    assert!(path.exists(), "{} (built by `cargo test`)", path.display());
    path
}

/// This test binary's scratch folder `tag` (`toolstorm-TAG-PID` in the temp folder), made
/// if missing.
pub fn scratch_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolstorm-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// [`scratch_dir`] emptied first.
pub fn fresh_dir(tag: &str) -> PathBuf {
    let _ = std::fs::remove_dir_all(scratch_dir(tag));
    scratch_dir(tag)
}

/// A fresh path `name` in this test binary's scratch folder `tag`, with no recording there:
/// the file, its MCP sidecar and its journal are removed.
pub fn scratch_recording(tag: &str, name: &str) -> PathBuf {
    let p = scratch_dir(tag).join(name);
    for f in [
        p.clone(),
        toolstorm::mcp::session::sidecar_path(&p),
        toolstorm::mcp::session::journal_path(&p),
    ] {
        let _ = std::fs::remove_file(f);
    }
    p
}

/// [`scratch_recording`] with `body` written there (a scenario file).
pub fn scratch_file(tag: &str, name: &str, body: &str) -> PathBuf {
    let p = scratch_recording(tag, name);
    std::fs::write(&p, body).expect("write");
    p
}

/// A fresh folder `toolstorm-campaign-TAG-PID` holding `mcp-lost-ack.json` whose server is the
/// example binary: (the folder, the scenario).
pub fn lost_ack_workspace(tag: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("toolstorm-campaign-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/mcp-lost-ack.json"
    ))
    .expect("scenario");
    let mut v = parse(&text).expect("json");
    let server = toolstorm::obj! {
        "command" => example_server().display().to_string(),
        "args" => Value::Array(Vec::new()),
    };
    if let Some(o) = v.as_object_mut() {
        o.insert("server", server);
    }
    let scenario = dir.join("mcp-lost-ack.json");
    std::fs::write(&scenario, toolstorm::json::pretty(&v)).expect("write");
    (dir, scenario)
}

/// The outcome lines `run scenarios/mcp-batch.json --live --mcp` prints against the example
/// server (started with `SHIPPING_EFFECTS_META=1`), however it is reached.
#[allow(dead_code)]
pub const MCP_BATCH_OUTCOMES: [&str; 4] = [
    "call_A   check_inventory  ok",
    "call_C   create_shipment  bad_args",
    "call_D   cancel_order     unknown_tool",
    "call_E   create_shipment  transient",
];

/// The explorer's re-run (`R`) of seed 42 of the agent the sidecar of `recording` names, with
/// the rules of `scenario`, its proxy the built binary: not shown to anyone yet.
pub fn recording_rerun(
    recording: &std::path::Path,
    scenario: &std::path::Path,
) -> toolstorm::tui::action::AgentRerun {
    toolstorm::tui::action::AgentRerun::new(
        toolstorm::tui::action::AgentSource::Recording(recording.to_path_buf()),
        42,
        scenario.to_path_buf(),
        "the rules now".into(),
        "re-run",
        Some(PathBuf::from(env!("CARGO_BIN_EXE_toolstorm-tui"))),
    )
}

/// Asserts `check` (exit `code`, output `out`) failed a recording whose call #1's outcome is
/// unknown and whose call #2 committed order A1's shipment again.
pub fn assert_possible_duplicate(code: i32, out: &str) {
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("✗ No duplicate side effects"), "{out}");
    assert!(
        out.contains("possible duplicate commit: #1's outcome is unknown"),
        "{out}"
    );
    assert!(out.contains("#2 committed shipment A1 again"), "{out}");
}
