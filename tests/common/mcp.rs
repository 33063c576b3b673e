//! The harness of the tests that drive `toolstorm-tui mcp` as a process (`mcp_proxy`,
//! `mcp_lifecycle`): the binary, its scratch files, the raw JSON-RPC lines a client sends, the
//! recording it leaves and `check`'s word on it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use toolstorm::cassette::Cassette;
use toolstorm::mcp::session::{CallRecord, McpSession, sidecar_path};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

/// A lost acknowledgement on the first `create_*`, answered as an `isError` result; commits
/// keyed by the order, with the server's `shipment_id`.
pub const LOST_ACK: &str = r#"{
  "schema_version": 1, "world": "mcp", "name": "lost-ack", "title": "Lost acknowledgement", "seed": 42,
  "rules": [{"name": "lost-receipt", "tool": "create_*", "kind": "response_lost", "calls": [1]}],
  "effects": [{"tool": "create_*", "effect": "shipment", "key": "order_id", "commit_id": "shipment_id"},
              {"tool": "check_*", "effect": "none"}]
}"#;

/// A path as an argument.
pub fn text(p: &Path) -> &str {
    p.to_str().expect("path")
}

/// This test binary's scratch folder's tag: its name without the hash cargo adds.
fn tag() -> String {
    let exe = std::env::current_exe().expect("test exe");
    let stem = exe
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("test exe name");
    stem.rsplit_once('-')
        .map_or(stem, |(name, _)| name)
        .to_owned()
}

/// A fresh path `name` in this test binary's scratch folder, with no recording there.
pub fn scratch(name: &str) -> PathBuf {
    super::scratch_recording(&tag(), name)
}

/// [`scratch`] with `body` written there (a scenario, a server, a file of the user's).
pub fn write(name: &str, body: &str) -> PathBuf {
    super::scratch_file(&tag(), name, body)
}

/// The `initialize` request a raw client sends (id 1).
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// The notification that ends the handshake.
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A `tools/list` request (id 2).
pub const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

/// A `tools/call` of `tool` with `args` (JSON text) under the id `id` (JSON text).
pub fn call(id: &str, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
    )
}

/// Starts `cmd` with its input, output and errors piped to the test.
pub fn spawn_piped(cmd: &mut Command) -> Child {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// Runs the binary with `args` to its end: exit code, stdout, stderr.
pub fn bin(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `check` of the recording at `path`: exit code, stdout, stderr.
pub fn check(path: &Path) -> (i32, String, String) {
    bin(&["check", text(path)])
}

/// [`check`] of the recording at `path`, which must exit with `code`: its stdout.
#[track_caller]
pub fn checked(path: &Path, code: i32) -> String {
    let (got, out, _) = check(path);
    assert_eq!(got, code, "{out}");
    out
}

/// Whether the note on a call's record holds `what`.
pub fn noted(record: &CallRecord, what: &str) -> bool {
    record.note.as_deref().is_some_and(|n| n.contains(what))
}

/// The cassette of the recording at `path`.
pub fn cassette(path: &Path) -> Cassette {
    Cassette::load(path).expect("the recording is a valid cassette")
}

/// The sidecar (the session's facts) of the recording at `path`.
pub fn sidecar(path: &Path) -> McpSession {
    McpSession::load(&sidecar_path(path)).expect("the sidecar is valid")
}

/// The recording at `path`: its cassette and its sidecar.
pub fn recording(path: &Path) -> (Cassette, McpSession) {
    (cassette(path), sidecar(path))
}
