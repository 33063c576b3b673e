//! The MCP proxy under the lifecycles real clients have and traffic that is odd rather than
//! polite: killed right after an answer, left with answers in flight, answers it cannot read,
//! odd and repeated ids, requests too large to record, servers behind launchers that ignore
//! their end of input, a foreign sidecar. Every test asserts what the recording holds.
//!
//! Servers: the example server (official Rust SDK) and `tests/fixtures/mcp/odd_server.py`, a
//! small server whose answers are deliberately odd and which counts what really committed.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use toolstorm::document::{self, Document};
use toolstorm::json::{Value, canonical, parse};
use toolstorm::mcp::session::{Delivered, journal_path, sidecar_path};
use toolstorm::report::Status;

mod common;

use common::example_server;
use common::mcp::{
    BIN, INITIALIZE, INITIALIZED, LOST_ACK, TOOLS_LIST, bin, call, cassette, check, checked, noted,
    scratch, sidecar, text, write,
};

/// `tests/fixtures/mcp/odd_server.py`.
const ODD_SERVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/mcp/odd_server.py"
);

/// The odd server's command line.
const ODD: [&str; 2] = ["python3", ODD_SERVER];

/// The example server's command line (its path).
fn example() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| text(&example_server()).to_owned())
}

/// The proxy's arguments that inject the scenario `faults` and record to `incident`.
fn recorded<'a>(faults: &'a Path, incident: &'a Path) -> [&'a str; 3] {
    [text(faults), "--record", text(incident)]
}

/// [`recorded`], continuing the recording at `incident` (`--append`).
fn appending<'a>(faults: &'a Path, incident: &'a Path) -> [&'a str; 4] {
    [text(faults), "--record", text(incident), "--append"]
}

/// The scenario `body` written to `NAME.json`, and a fresh recording `NAME-rec.json`.
fn faults_and_recording(name: &str, body: &str) -> (PathBuf, PathBuf) {
    (
        write(&format!("{name}.json"), body),
        scratch(&format!("{name}-rec.json")),
    )
}

/// A scenario of `members` (its name, title, rules, effects, budget: JSON members) under the
/// header the scenarios here share (schema 1, the MCP world, seed 1), written to `NAME.json`;
/// and a fresh recording `NAME-rec.json`.
fn scenario_and_recording(name: &str, members: &str) -> (PathBuf, PathBuf) {
    let body = format!(r#"{{"schema_version": 1, "world": "mcp", "seed": 1, {members}}}"#);
    faults_and_recording(name, &body)
}

/// [`LOST_ACK`] with its commits keyed by the order alone: each session that starts a new
/// example server has its shipment numbers start again.
fn lost_ack_by_order() -> String {
    LOST_ACK.replace(r#", "commit_id": "shipment_id""#, "")
}

/// Asserts the message `v` holds `what` (in its canonical text).
#[track_caller]
fn assert_holds(v: &Value, what: &str) {
    let text = canonical(v);
    assert!(text.contains(what), "{text}");
}

/// The odd server's writes, keyed by their `row`.
const ROWS: &str = r#"{
  "schema_version": 1, "world": "mcp", "name": "rows", "title": "Rows", "seed": 1,
  "rules": [],
  "effects": [{"tool": "write_row", "effect": "row", "key": "row"}]
}"#;

/// [`ROWS`] written to `TAG-rows.json`, and a fresh `TAG-rows.db` for the odd server's rows.
fn rows_and_db(tag: &str) -> (PathBuf, PathBuf) {
    (
        write(&format!("{tag}-rows.json"), ROWS),
        scratch(&format!("{tag}-rows.db")),
    )
}

/// The odd server writing its rows to `db`, with `env`, behind the proxy with `args`: after
/// the handshake.
fn odd_writing(db: &Path, args: &[&str], env: &[(&str, &str)]) -> Session {
    let env = [&[("ODD_DB", text(db))][..], env].concat();
    Session::started(args, &ODD, &env)
}

/// How a proxy is started with an injected write error: its files may grow to 256 KB
/// (`ulimit -f` counts 512-byte blocks in sh), and SIGXFSZ is ignored so that writes past it
/// fail with EFBIG instead.
const EFBIG: &str = "trap '' XFSZ; ulimit -f 512; exec";

/// `mcp RULES --record INCIDENT -- python3 odd_server.py` started by `launch` (a shell line
/// ending in the proxy's command), the server writing its rows to `db`, with `env`: after the
/// handshake.
fn odd_launched(
    launch: &str,
    rules: &Path,
    incident: &Path,
    db: &Path,
    env: &[(&str, &str)],
) -> Session {
    let proxy = format!(
        "{launch} {BIN} mcp {} --record {} -- python3 {ODD_SERVER}",
        text(rules),
        text(incident),
    );
    let mut s = Session::of(
        Command::new("sh")
            .args(["-c", &proxy])
            .env("ODD_DB", db)
            .envs(env.iter().copied()),
    );
    s.handshake();
    s
}

/// The `i`th of many calls of `tool` with `args` (JSON text): its id is 10 + i.
fn nth_call(i: usize, tool: &str, args: &str) -> String {
    call(&(10 + i).to_string(), tool, args)
}

/// The `i`th of many `write_row` calls ([`nth_call`]), of row `r-ROW`, with `pad` in its
/// arguments unless it is empty.
fn nth_write(i: usize, row: usize, pad: &str) -> String {
    let args = if pad.is_empty() {
        format!(r#"{{"row":"r-{row}"}}"#)
    } else {
        format!(r#"{{"row":"r-{row}","pad":"{pad}"}}"#)
    };
    nth_call(i, "write_row", &args)
}

/// A proxy started as a client starts it, talking raw lines.
struct Session {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Session {
    /// A session with the proxy `cmd` starts (a shell line, a folder of its own), piped.
    fn of(cmd: &mut Command) -> Session {
        let mut child = common::mcp::spawn_piped(cmd);
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        Session { child, out }
    }

    /// The proxy `mcp ARGS -- SERVER`, with `env` set.
    fn start(args: &[&str], server: &[&str], env: &[(&str, &str)]) -> Session {
        Session::of(
            Command::new(BIN)
                .arg("mcp")
                .args(args)
                .arg("--")
                .args(server)
                .envs(env.iter().copied()),
        )
    }

    /// [`Session::start`] and the handshake.
    fn started(args: &[&str], server: &[&str], env: &[(&str, &str)]) -> Session {
        let mut s = Session::start(args, server, env);
        s.handshake();
        s
    }

    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    /// The next line from the proxy, as bytes.
    fn read_raw(&mut self) -> Vec<u8> {
        let mut line = Vec::new();
        self.out.read_until(b'\n', &mut line).expect("read");
        assert!(!line.is_empty(), "the proxy closed its output");
        line
    }

    /// The next message that is not a notification, parsed.
    fn answer(&mut self) -> Value {
        loop {
            let line = self.read_raw();
            let text = String::from_utf8_lossy(&line).into_owned();
            if let Ok(v) = parse(text.trim_end())
                && v.as_object().is_some_and(|o| !o.contains_key("method"))
            {
                return v;
            }
        }
    }

    /// [`Session::started`] and a `tools/list` (so the server's annotations are
    /// on record).
    fn listed(args: &[&str], server: &[&str]) -> Session {
        let mut s = Session::started(args, server, &[]);
        s.send(TOOLS_LIST);
        s.answer();
        s
    }

    fn handshake(&mut self) {
        self.send(INITIALIZE);
        self.answer();
        self.send(INITIALIZED);
    }

    /// Waits for the proxy to exit (at most `limit`); its exit code and stderr.
    fn wait(mut self, limit: Duration) -> (Option<i32>, String) {
        drop(self.child.stdin.take());
        let until = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                return (status.code(), err);
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                panic!("the proxy did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// [`Session::wait`] for a proxy that must exit 0: its stderr.
    #[track_caller]
    fn ends(self, limit: Duration) -> String {
        let (code, err) = self.wait(limit);
        assert_eq!(code, Some(0), "{err}");
        err
    }

    /// SIGKILL, as a client gone at once does; the proxy is reaped.
    fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
    }
}

/// Whether a process whose command line contains `marker` is running.
fn running(marker: &str) -> bool {
    !matching(marker).is_empty()
}

/// The processes (pid, command line, state) whose command line holds `marker`, ours aside.
fn matching(marker: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let c = std::fs::read(e.path().join("cmdline")).ok()?;
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            (c.contains(marker) && !c.contains("toolstorm-tui")).then(|| {
                let state: String = std::fs::read_to_string(e.path().join("stat"))
                    .ok()
                    .and_then(|s| {
                        s.rsplit(')')
                            .next()
                            .map(|r| r.trim().chars().take(1).collect())
                    })
                    .unwrap_or_default();
                format!("{} [{state}] {c}", e.file_name().to_string_lossy())
            })
        })
        .collect()
}

/// Asserts that no process whose command line holds `marker` is left within 5 s (`why`
/// says what it would mean).
#[track_caller]
fn assert_gone(marker: &str, why: &str) {
    assert!(gone_within(marker, Duration::from_secs(5)), "{why}");
}

fn gone_within(marker: &str, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if !running(marker) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    !running(marker)
}

/// How many entries `check --json` lists under `mcp.<key>` for the recording at `incident`.
fn mcp_json_count(incident: &Path, key: &str) -> usize {
    let (_, json, _) = bin(&["check", "--json", text(incident)]);
    let v = parse(json.trim()).expect("json");
    v.as_object()
        .and_then(|o| o.get("mcp"))
        .and_then(Value::as_object)
        .and_then(|m| m.get(key))
        .and_then(Value::as_array)
        .map_or_else(|| panic!("no mcp.{key}: {json}"), Vec::len)
}

/// A shell command line that runs the example server behind `sh -c` (a launcher), with
/// `marker` in the launcher's command line so the test can find what is left of it.
fn behind_launcher(marker: &str) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("{} ; : {marker}", example_server().display()),
    ]
}

#[test]
fn killed_right_after_the_last_answer_the_recording_has_every_answer() {
    let (faults, incident) = faults_and_recording("killed", LOST_ACK);
    let marker = format!("tsmark-kill-{}", std::process::id());
    let server = behind_launcher(&marker);
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    let mut s = Session::started(&recorded(&faults, &incident), &server, &[]);
    s.send(&call("2", "create_shipment", r#"{"order_id":"o-1"}"#));
    assert_holds(&s.answer(), "ResponseLost");
    s.send(&call("3", "create_shipment", r#"{"order_id":"o-1"}"#));
    assert_holds(&s.answer(), "SHP-0002");
    // While the proxy runs, the session is live: its verdicts are so far, and say so.
    let doc = Document::open(&incident).expect("the recording opens while it is made");
    assert!(
        doc.live,
        "the proxy holds the recording: the session is live"
    );
    let (_, out, _) = check(&incident);
    assert!(
        out.contains("✓ Session finished: the session is still running (its proxy holds the recording): 0 call(s) in flight so far"),
        "{out}"
    );
    // As fastmcp does at interpreter exit: SIGKILL, a moment after the last answer.
    s.kill();

    // Every reader recovers from the journal and says so.
    let doc = Document::open(&incident).expect("the recording opens");
    assert!(
        !doc.live,
        "a killed proxy holds nothing: the session is over"
    );
    let report = doc.runs[0].timeline.report();
    assert_eq!(report.calls.len(), 2, "both answers are in the recording");
    assert_eq!(report.duplicate_effects(), 1, "the double commit is judged");
    let mcp = doc.runs[0].mcp.as_deref().expect("an MCP recording");
    assert_eq!(mcp.finished, Some(false), "the session did not finish");
    let (code, out, err) = check(&incident);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("✗ No duplicate side effects"), "{out}");
    // Killed after its last answer, with nothing in flight: nothing was lost or unknown.
    assert!(
        out.contains("✓ Session finished: the session was not closed: the proxy was killed after its last answer"),
        "{out}"
    );
    assert!(
        err.contains("recovered 2 call(s) from the journal"),
        "{err}"
    );
    let (code, out, _) = bin(&["inspect", text(&incident)]);
    assert_eq!(code, 0);
    assert!(
        out.contains("session: not finished (the session was not closed: the proxy was killed"),
        "inspect says how it ended: {out}"
    );
    // The watchdog stopped the server's group, launcher and all.
    assert_gone(&marker, "the server outlived the proxy");
    // Replay serves the recovered recording.
    let (code, _, err) = replay_twice(&incident, "create_shipment", r#"{"order_id":"o-1"}"#);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("2 of 2 recorded call(s) matched"), "{err}");
}

#[test]
fn a_client_that_closes_then_kills_the_proxy_while_the_server_exits_ended_its_session() {
    // As the official Python SDK does: it closes the proxy's input, then SIGTERMs it after 2 s
    // and SIGKILLs it after 4 s; this server takes longer than that to exit.
    let incident = scratch("closed-then-killed.json");
    let marker = format!("tsmark-slowexit-{}", std::process::id());
    let script = format!("{}; sleep 30; : {marker}", example_server().display());
    let mut s = Session::started(&["--record", text(&incident)], &["sh", "-c", &script], &[]);
    s.send(&call("2", "create_shipment", r#"{"order_id":"o-1"}"#));
    assert_holds(&s.answer(), "SHP-0001");
    drop(s.child.stdin.take());
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        s.child.try_wait().expect("wait").is_none(),
        "the proxy is still giving the server its grace"
    );
    s.kill();
    let side = Document::open(&incident).expect("the recording opens");
    let mcp = side.runs[0].mcp.as_deref().expect("an MCP recording");
    assert_eq!(
        mcp.finished,
        Some(false),
        "the proxy did not finish its work"
    );
    assert_eq!(
        mcp.client_closed,
        Some(true),
        "but the client closed the session"
    );
    assert_eq!(side.runs[0].timeline.report().calls.len(), 1);
    let (code, out, err) = check(&incident);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            "✓ Session finished: the client closed the session; the proxy had not written its end"
        ),
        "{out}"
    );
    let (_, out, _) = bin(&["inspect", text(&incident)]);
    assert!(
        out.contains("session: not finished (the client closed the session"),
        "{out}"
    );
    assert_gone(&marker, "the server outlived the proxy");
}

/// Replays `recording` to a client that calls `tool` with `args` twice.
fn replay_twice(recording: &Path, tool: &str, args: &str) -> (i32, String, String) {
    replay_with(
        recording,
        &[
            INITIALIZE,
            INITIALIZED,
            &call("2", tool, args),
            &call("3", tool, args),
        ],
    )
}

/// The line of `out` that answers the call `id` (empty when none does).
fn answer_to(out: &str, id: u64) -> &str {
    let start = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},");
    out.lines()
        .find(|l| l.starts_with(&start))
        .unwrap_or_default()
}

fn replay_with(recording: &Path, lines: &[&str]) -> (i32, String, String) {
    let mut child = Command::new(BIN)
        .args(["mcp", "--replay", text(recording)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("replay");
    {
        let stdin = child.stdin.as_mut().expect("stdin");
        for l in lines {
            writeln!(stdin, "{l}").expect("write");
        }
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("ends");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn killed_mid_call_the_recording_names_the_call_in_flight() {
    let incident = scratch("mid-call.json");
    let mut s = Session::started(
        &["--record", text(&incident)],
        &[example()],
        &[("SHIPPING_DELAY_MS", "3000")],
    );
    s.send(&call("2", "check_inventory", r#"{"sku":"A1"}"#));
    s.answer();
    s.send(&call("3", "create_shipment", r#"{"order_id":"o-9"}"#));
    std::thread::sleep(Duration::from_millis(500));
    s.kill();
    let out = checked(&incident, 1);
    assert!(
        out.contains("✗ Session finished: the session did not end: 1 call(s) in flight")
            && out.contains("#2 create_shipment"),
        "{out}"
    );
    let (_, out, _) = bin(&["inspect", text(&incident)]);
    assert!(
        out.contains("running"),
        "inspect shows the call in flight: {out}"
    );
    // Replay serves what completed and stays silent for the call in flight, as then.
    let (code, stdout, err) = replay_with(
        &incident,
        &[
            INITIALIZE,
            INITIALIZED,
            &call("2", "check_inventory", r#"{"sku":"A1"}"#),
            &call("3", "create_shipment", r#"{"order_id":"o-9"}"#),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        !stdout.contains("\"id\":3"),
        "no answer to the call in flight: {stdout}"
    );
    assert!(stdout.contains("\"id\":2"), "{stdout}");
}

#[test]
fn a_client_that_leaves_with_answers_in_flight_loses_nothing() {
    let incident = scratch("leaves.json");
    let marker = format!("tsmark-leave-{}", std::process::id());
    let server = behind_launcher(&marker);
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    let mut s = Session::started(&["--record", text(&incident)], &server, &[]);
    let n = 2000;
    let mut batch = String::new();
    for i in 0..n {
        batch.push_str(&nth_call(i, "check_inventory", r#"{"sku":"A1"}"#));
        batch.push('\n');
    }
    s.child
        .stdin
        .as_mut()
        .expect("stdin")
        .write_all(batch.as_bytes())
        .expect("pipelined");
    for _ in 0..n / 2 {
        s.answer();
    }
    // The client leaves: both pipes close with half the answers unread.
    drop(s.child.stdin.take());
    let Session { mut child, out } = s;
    drop(out);
    let until = Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < until, "the proxy did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_gone(&marker, "the server was left running");
    assert!(
        !journal_path(&incident).exists(),
        "the proxy finished: no journal left"
    );
    let c = cassette(&incident);
    let side = sidecar(&incident);
    assert_eq!(c.report.calls.len(), n);
    assert!(
        c.report.calls.iter().all(|c| c.status != Status::Running),
        "no call is left running"
    );
    assert_eq!(side.calls.len(), n, "every call has its record");
    // Every call the server answered keeps its output, also one whose answer went nowhere
    // (delivered nothing: the client had left).
    for call in c.report.calls.iter().filter(|c| c.status == Status::Ok) {
        let record = side.call(call.id).expect("a record");
        assert!(
            call.output
                .as_object()
                .is_some_and(|o| o.contains_key("content")),
            "call #{} lost its output: {:?} ({:?})",
            call.id,
            call.output,
            record.delivered
        );
    }
    assert_eq!(side.finished, Some(true));
    let (code, out, _) = check(&incident);
    assert!(out.contains("✓ Session finished"), "{out}");
    assert_eq!(code, 0, "{out}");
}

#[test]
fn answers_the_proxy_cannot_read_are_judged_and_given_back() {
    for mode in ["deep", "badutf8", "nul", "batch", "big", "secrets"] {
        let (faults, db) = rows_and_db(&format!("unreadable-{mode}"));
        let incident = scratch(&format!("unreadable-{mode}.json"));
        let mut s = odd_writing(&db, &recorded(&faults, &incident), &[("ODD_ANSWER", mode)]);
        for id in ["2", "3"] {
            s.send(&call(id, "write_row", r#"{"row":"r-1"}"#));
            let line = s.read_raw();
            assert!(line.len() > 10, "{mode}: an answer came back");
        }
        let (code, err) = s.wait(Duration::from_secs(20));
        assert_eq!(code, Some(0), "{mode}: {err}");
        let commits = std::fs::read_to_string(&db).expect("db").lines().count();
        assert_eq!(commits, 2, "{mode}: the server really committed twice");
        let (code, out, _) = check(&incident);
        assert_eq!(code, 1, "{mode}: two commits of row r-1 fail check: {out}");
        assert!(
            out.contains("1 duplicate effect(s) across 2 commits"),
            "{mode}: {out}"
        );
        let side = sidecar(&incident);
        let rec = side.call(1).expect("record");
        if mode == "batch" {
            // A batch is read as one: its answer is recorded as any other.
            assert!(
                matches!(rec.delivered, Delivered::Result(_)),
                "{:?}",
                rec.delivered
            );
            continue;
        }
        let Delivered::Unreadable(u) = &rec.delivered else {
            panic!("{mode}: recorded as {:?}", rec.delivered);
        };
        assert!(u.bytes > 0 && u.sha256.len() == 64, "{mode}");
        if mode == "big" {
            assert!(u.raw.is_none(), "a 9 MB answer is not kept whole");
        } else if mode != "badutf8" {
            // Small enough to keep: replay gives back exactly what the client got.
            let raw = u.raw.as_deref().expect("kept");
            let (code, stdout, err) = replay_twice(&incident, "write_row", r#"{"row":"r-1"}"#);
            assert_eq!(code, 0, "{mode}: {err}");
            assert!(
                stdout.contains(raw),
                "{mode}: the bytes come back: {stdout}"
            );
            if mode == "secrets" {
                // Kept raw, but never with its secrets: not on disk, not served back.
                assert!(raw.contains(r#""password": "[REDACTED]""#), "{raw}");
                assert!(raw.contains(r#""session_token": "[REDACTED]""#), "{raw}");
                assert!(raw.contains("NaN"), "the rest is kept as sent: {raw}");
                for secret in ["hunter2", "AKIA-0042", "tok-xyz"] {
                    assert!(!stdout.contains(secret), "replay served {secret}");
                    for file in [incident.clone(), sidecar_path(&incident)] {
                        let on_disk = std::fs::read_to_string(&file).expect("file");
                        assert!(!on_disk.contains(secret), "{secret} in {}", file.display());
                    }
                }
            }
        }
    }
}

#[test]
fn odd_and_repeated_ids_are_recorded_and_answered_as_sent_and_invalid_ones_refused() {
    let (faults, incident) = scenario_and_recording(
        "odd-ids",
        r#""name": "odd-ids", "title": "Odd ids",
      "rules": [{"name": "gone", "tool": "read_rows", "kind": "unavailable"}],
      "effects": [{"tool": "write_row", "effect": "row", "key": "row"}]"#,
    );
    let mut s = Session::started(&recorded(&faults, &incident), &ODD, &[]);
    // The proxy answers these itself (the rule): each answer carries the id exactly as sent.
    for id in ["1e3", r#""s""#] {
        s.send(&call(id, "read_rows", "{}"));
        let line = String::from_utf8_lossy(&s.read_raw()).into_owned();
        assert!(
            line.starts_with(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},")),
            "{id}: {line}"
        );
    }
    // Ids JSON-RPC calls invalid are refused at once (-32600, id null), never recorded as
    // calls: no answer could be routed back by them.
    for id in ["1.5", "null", "true", r#"{"a":1}"#] {
        s.send(&call(id, "read_rows", "{}"));
        let line = String::from_utf8_lossy(&s.read_raw()).into_owned();
        assert!(
            line.contains("-32600") && line.contains(r#""id":null"#),
            "{id}: {line}"
        );
    }
    // Two calls in flight under the same id: both answered, both recorded.
    s.send(&call("7", "write_row", r#"{"row":"a"}"#));
    s.send(&call("7", "write_row", r#"{"row":"b"}"#));
    s.answer();
    s.answer();
    s.ends(Duration::from_secs(20));
    let c = cassette(&incident);
    let side = sidecar(&incident);
    assert_eq!(c.report.calls.len(), 4);
    assert!(c.report.calls.iter().all(|c| c.status != Status::Running));
    assert_eq!(side.calls.len(), 4);
    assert_eq!(
        side.refused_requests.len(),
        4,
        "{:?}",
        side.refused_requests
    );
    assert_eq!(c.report.effects.len(), 2, "both writes are on record");
    let doc = Document::open(&incident).expect("opens");
    assert_eq!(doc.runs[0].timeline.report().calls.len(), 4);
    // Replay refuses them as the proxy did, and goes on to the next line.
    let (_, out, err) = replay_with(
        &incident,
        &[
            INITIALIZE,
            INITIALIZED,
            &call("null", "read_rows", "{}"),
            &call("2", "read_rows", "{}"),
        ],
    );
    assert!(
        out.lines()
            .any(|l| l.contains("-32600") && l.contains(r#""id":null"#)),
        "{out}\n{err}"
    );
    assert!(!answer_to(&out, 2).is_empty(), "{out}\n{err}");
}

#[test]
fn requests_too_large_to_record_keep_their_ordinal_and_decision() {
    let (faults, incident) = scenario_and_recording(
        "big-args",
        r#""name": "big", "title": "Big",
      "rules": [{"name": "lost-receipt", "tool": "create_*", "kind": "response_lost", "calls": [2]}],
      "effects": [{"tool": "create_*", "effect": "shipment", "key": "order_id"}]"#,
    );
    let mut s = Session::started(&recorded(&faults, &incident), &[example()], &[]);
    let big = "x".repeat(200_000);
    s.send(&call(
        "2",
        "create_shipment",
        &format!(r#"{{"order_id":"o-1","note":"{big}"}}"#),
    ));
    s.answer();
    s.send(&call("3", "create_shipment", r#"{"order_id":"o-2"}"#));
    let second = s.answer();
    assert!(
        canonical(&second).contains("ResponseLost"),
        "the second call is still the rule's ordinal 2: {}",
        canonical(&second)
    );
    let long_name = "t".repeat(300);
    s.send(&call("4", &long_name, "{}"));
    s.answer();
    // A request too long to read whole (over 8 MB); its answer (the SKU twice) is too long to
    // keep.
    let huge = call(
        "5",
        "check_inventory",
        &format!(r#"{{"sku":"{}"}}"#, "s".repeat(8_100_000)),
    );
    s.send(&huge);
    let answer = s.read_raw(); // longer than `answer` parses
    assert!(answer.len() > 16_000_000, "{}", answer.len());
    s.ends(Duration::from_secs(20));
    // Replayed, every one of them is answered (none is left waiting): the first and the last
    // matched by their tool and place, the long name as the record cut it.
    let lines = [
        INITIALIZE.to_owned(),
        INITIALIZED.to_owned(),
        call(
            "2",
            "create_shipment",
            &format!(r#"{{"order_id":"o-1","note":"{big}"}}"#),
        ),
        call("3", "create_shipment", r#"{"order_id":"o-2"}"#),
        call("4", &long_name, "{}"),
        huge,
    ];
    let lines_all = lines.to_vec();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (code, out, err) = replay_with(&incident, &lines);
    for id in 2..=5 {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},"))),
            "call {id} is answered: {err}"
        );
    }
    assert!(err.contains("4 of 4 recorded call(s) matched"), "{err}");
    // What the record kept of a summarised call is checked: a member kept whole (the key)
    // and a large one (by size and digest) that differ are mismatches, read whole or not.
    for (what, args) in [
        ("its key", format!(r#"{{"order_id":"o-9","note":"{big}"}}"#)),
        (
            "its large member",
            format!(r#"{{"order_id":"o-1","note":"{}"}}"#, "y".repeat(200_000)),
        ),
    ] {
        let changed = call("2", "create_shipment", &args);
        let lines = [INITIALIZE.to_owned(), INITIALIZED.to_owned(), changed];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (code, out, err) = replay_with(&incident, &lines);
        let answer = answer_to(&out, 2);
        assert!(
            answer.contains("\"isError\":true") && answer.contains("Replay mismatch"),
            "a call differing in {what} does not match: {answer} {err}"
        );
        assert_eq!(code, 1, "{what}: {err}");
    }
    // A call past the recording's end is a mismatch that names the call made.
    let mut past = lines_all.clone();
    past.push(call("6", "create_shipment", r#"{"order_id":"o-3"}"#));
    let past: Vec<&str> = past.iter().map(String::as_str).collect();
    let (_, out, err) = replay_with(&incident, &past);
    let answer = answer_to(&out, 6);
    assert!(
        answer.contains(
            "Replay mismatch: the client called create_shipment, but all 4 recorded calls were already used"
        ),
        "{answer} {err}"
    );
    // The request's summary says it is of its first part (it was judged on that).
    let summarised = cassette(&incident).report.calls[3].arguments.clone();
    assert_holds(&summarised, "digest of its first 8 MB");
    assert!(err.contains("could not be given back"), "{err}");
    assert_eq!(
        code, 1,
        "an answer too long to keep is not reproduced: {err}"
    );
    let c = cassette(&incident);
    assert_eq!(c.report.calls.len(), 4, "every call is on record");
    let first = &c.report.calls[0];
    assert_eq!(first.ordinal, 1);
    assert!(
        canonical(&first.arguments).contains("toolstorm_summary"),
        "{}",
        canonical(&first.arguments)
    );
    assert!(c.report.calls[1].injected);
    assert!(c.report.calls[2].tool.to_lossy().starts_with("tttt"));
    let side = sidecar(&incident);
    assert!(
        side.call(1).is_some_and(|r| noted(r, "summarised")),
        "the record says its arguments are summarised"
    );
}

#[test]
fn a_server_behind_a_launcher_that_ignores_its_end_of_input_and_sigterm_is_stopped() {
    let marker = format!("tsmark-stubborn-{}", std::process::id());
    // The launcher's child ignores SIGTERM and its input: only SIGKILL to the group stops it.
    // Its command line is this test's own (a `sleep 300` anyone else runs is not it).
    let sleeper = format!("sleep 300.{}", std::process::id());
    let script =
        format!("trap '' TERM; (trap '' TERM; exec {sleeper}) & cat >/dev/null; wait; : {marker}");
    let s = Session::start(&[], &["sh", "-c", &script], &[]);
    let started = Instant::now();
    let (code, _) = s.wait(Duration::from_secs(20));
    assert_eq!(code, Some(0));
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "a grace came first"
    );
    assert!(
        gone_within(&marker, Duration::from_secs(3))
            && gone_within(&sleeper, Duration::from_secs(3)),
        "the group was left running: {:?} {:?}",
        matching(&marker),
        matching(&sleeper)
    );
}

#[test]
fn a_slow_reader_gets_back_pressure_not_a_huge_queue() {
    let mut s = Session::started(&[], &ODD, &[("ODD_NOTIFY", "60")]);
    s.send(&call("2", "write_row", r#"{"row":"r"}"#));
    // The client pauses while 60 notifications of 8 MB (480 MB) are on their way.
    std::thread::sleep(Duration::from_secs(3));
    let pid = s.child.id();
    let peak = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|t| {
            t.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<u64>().ok())
            })
        })
        .expect("VmHWM");
    assert!(
        peak < 200 * 1024,
        "the proxy's peak memory is bounded by its byte budget, not by the queue: {peak} kB"
    );
    let mut notes = 0;
    loop {
        let line = s.read_raw();
        if line.starts_with(b"{\"jsonrpc\": \"2.0\", \"method\"") {
            notes += 1;
        } else {
            break;
        }
    }
    assert_eq!(notes, 60, "every notification arrived");
    let (code, _) = s.wait(Duration::from_secs(20));
    assert_eq!(code, Some(0));
}

#[test]
fn a_sidecar_from_another_recording_is_refused() {
    let a = scratch("first.json");
    let b = scratch("second.json");
    for (path, order) in [(&a, "o-1"), (&b, "o-2")] {
        let mut s = Session::started(&["--record", text(path)], &[example()], &[]);
        s.send(&call(
            "2",
            "create_shipment",
            &format!(r#"{{"order_id":"{order}"}}"#),
        ));
        s.answer();
        s.ends(Duration::from_secs(20));
    }
    std::fs::copy(sidecar_path(&a), sidecar_path(&b)).expect("copy");
    let (code, _, err) = check(&b);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("written for another cassette"), "{err}");
    let e = document::open_trace(&b).expect_err("refused");
    assert!(e.to_string().contains("second.mcp.json"), "{e}");
    let (code, _, err) = replay_with(&b, &[]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn secrets_stay_out_of_effect_keys_and_the_server_command() {
    let incident = scratch("secrets.json");
    // Annotations-only evidence (no scenario): the key is the arguments, redacted.
    let mut s = Session::started(
        &["--record", text(&incident)],
        &[
            "env",
            "GITHUB_TOKEN=ghp-live-789",
            "python3",
            ODD_SERVER,
            "--token=sk-live-123",
            "--api-key",
            "sk-live-456",
        ],
        &[],
    );
    s.send(&call(
        "2",
        "write_row",
        r#"{"row":"r","password":"hunter2"}"#,
    ));
    s.answer();
    s.ends(Duration::from_secs(20));
    let (_, out, _) = check(&incident);
    let (_, json, _) = bin(&["check", "--json", text(&incident)]);
    let files = [
        std::fs::read_to_string(&incident).expect("cassette"),
        std::fs::read_to_string(sidecar_path(&incident)).expect("sidecar"),
        out,
        json,
    ];
    for f in &files {
        for secret in ["hunter2", "sk-live-123", "sk-live-456", "ghp-live-789"] {
            assert!(!f.contains(secret), "{secret} leaked: {f}");
        }
    }
    assert!(files[1].contains("--token=[REDACTED]"), "{}", files[1]);
    assert!(files[1].contains("GITHUB_TOKEN=[REDACTED]"), "{}", files[1]);
}

#[test]
fn a_bad_record_target_fails_before_the_server_starts() {
    let dir = scratch("a-folder");
    std::fs::create_dir_all(&dir).expect("dir");
    let marker = format!("tsmark-never-{}", std::process::id());
    let (code, _, err) = bin(&[
        "mcp",
        "--record",
        text(&dir),
        "--",
        "sh",
        "-c",
        &format!("sleep 5; : {marker}"),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("it is a folder"), "{err}");
    assert!(!running(&marker), "the server never started");
    assert!(!dir.with_extension("mcp.json").exists());
    let (code, _, err) = bin(&["mcp", "--record", "/nonexistent-dir/x.json", "--", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not exist"), "{err}");
    // The same through a link that leads there: refused, and no folder is made for it.
    let link = scratch("dangling.json");
    let gone = std::env::temp_dir().join(format!("toolstorm-gone-{}", std::process::id()));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(gone.join("x.json"), &link).expect("a link");
    let (code, _, err) = bin(&["mcp", "--record", text(&link), "--", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not exist"), "{err}");
    assert!(!gone.exists(), "a folder was made for the link");
}

#[test]
fn the_recording_exists_from_the_first_message() {
    let incident = scratch("early.json");
    let s = Session::started(&["--record", text(&incident)], &[example()], &[]);
    let doc = Document::open(&incident).expect("opens before any call");
    assert_eq!(doc.runs[0].timeline.report().calls.len(), 0);
    s.ends(Duration::from_secs(20));
    let side = sidecar(&incident);
    assert_eq!(side.finished, Some(true));
    assert!(side.session_id.is_some());
    let c = cassette(&incident);
    assert_eq!(side.cassette_digest.as_deref(), Some(c.digest().as_str()));
}

/// One client session through a fresh proxy, as LangChain's `get_tools()` runs each call.
fn one_call_session(args: &[&str], order: &str) -> Value {
    let mut s = Session::started(args, &[example()], &[]);
    s.send(&call(
        "2",
        "create_shipment",
        &format!(r#"{{"order_id":"{order}"}}"#),
    ));
    let answer = s.answer();
    s.ends(Duration::from_secs(20));
    answer
}

#[test]
fn a_server_per_call_client_appends_to_one_run() {
    let (faults, incident) = faults_and_recording("appended", &lost_ack_by_order());
    let args = appending(&faults, &incident);
    // The first session's call loses its acknowledgement; the retry comes in a new session.
    assert_holds(&one_call_session(&args, "o-1"), "ResponseLost");
    let second = one_call_session(&args, "o-1");
    assert!(
        canonical(&second).contains("shipment_id")
            && !canonical(&second).contains("isError\":true"),
        "the retry is the tool's second call, not faulted again: {}",
        canonical(&second)
    );
    let c = cassette(&incident);
    assert_eq!(c.report.calls.len(), 2, "one run, both calls");
    assert_eq!(
        c.report.calls.iter().map(|c| c.ordinal).collect::<Vec<_>>(),
        [1, 2]
    );
    assert!(c.report.calls[1].started >= c.report.calls[0].started);
    assert_eq!(
        c.report.duplicate_effects(),
        1,
        "the double commit across sessions"
    );
    let out = checked(&incident, 1);
    assert!(
        out.contains("duplicate commit: shipment o-1 by call #2"),
        "{out}"
    );
    // Without --append a new session replaces the recording, and says so.
    let s = Session::started(&recorded(&faults, &incident), &[example()], &[]);
    let (_, err) = s.wait(Duration::from_secs(20));
    assert!(err.contains("replacing the recording"), "{err}");
    // A recording of another scenario is not continued.
    let other = write("append-other.json", ROWS);
    let (code, _, err) = bin(&[
        "mcp",
        text(&other),
        "--record",
        text(&incident),
        "--append",
        "--",
        "true",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot append"), "{err}");
}

#[test]
fn concurrent_sessions_on_one_recording_take_turns() {
    let (faults, incident) = faults_and_recording("turns", LOST_ACK);
    let args: Vec<String> = appending(&faults, &incident)
        .iter()
        .map(|s| s.to_string())
        .collect();
    let threads: Vec<_> = (0..3)
        .map(|i| {
            let args = args.clone();
            std::thread::spawn(move || {
                let a: Vec<&str> = args.iter().map(String::as_str).collect();
                one_call_session(&a, &format!("o-{i}"))
            })
        })
        .collect();
    for t in threads {
        t.join().expect("session");
    }
    let c = cassette(&incident);
    assert_eq!(c.report.calls.len(), 3, "no session lost another's calls");
    let mut ordinals: Vec<u64> = c.report.calls.iter().map(|c| c.ordinal).collect();
    ordinals.sort_unstable();
    assert_eq!(ordinals, [1, 2, 3]);
    assert_eq!(
        c.report.calls.iter().filter(|c| c.injected).count(),
        1,
        "the rule's ordinal 1 happened once"
    );
}

#[test]
fn repeats_on_annotations_alone_are_a_warning_not_a_failure() {
    let incident = scratch("annotations.json");
    let mut s = Session::listed(&["--record", text(&incident)], &ODD);
    for id in ["3", "4"] {
        s.send(&call(id, "write_row", r#"{"row":"r-1"}"#));
        s.answer();
        s.send(&call(&format!("1{id}"), "read_rows", "{}"));
        s.answer();
    }
    s.ends(Duration::from_secs(20));
    let (code, out, _) = check(&incident);
    assert_eq!(code, 0, "annotations alone do not fail check: {out}");
    assert!(
        out.contains("warning: possible duplicate (annotations only): call #3 repeats call #1"),
        "{out}"
    );
    assert!(
        !out.contains("call #4 repeats"),
        "a read-only tool commits nothing: {out}"
    );
    assert_eq!(mcp_json_count(&incident, "possible_duplicates"), 1);
}

#[test]
fn a_client_that_drops_the_separator_still_starts_the_server() {
    let (faults, incident) = faults_and_recording("no-dashes", LOST_ACK);
    // As the MCP Inspector passes it: no `--` before the server's command.
    let mut s = Session::of(Command::new(BIN).args([
        "mcp",
        text(&faults),
        "--record",
        text(&incident),
        example(),
    ]));
    s.handshake();
    s.send(&call("2", "create_shipment", r#"{"order_id":"o-1"}"#));
    assert_holds(&s.answer(), "ResponseLost");
    s.ends(Duration::from_secs(20));
    assert_eq!(cassette(&incident).report.calls.len(), 1);
}

#[test]
fn print_config_gives_absolute_paths_for_the_server_too() {
    let dir = scratch("cfg");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("server.py"), "print()").expect("write");
    let out = Command::new(BIN)
        .current_dir(&dir)
        .args([
            "mcp",
            "--print-config",
            "s",
            "--record",
            "x.json",
            "--",
            "python3",
            "server.py",
            "-u",
        ])
        .output()
        .expect("runs");
    let v = parse(String::from_utf8_lossy(&out.stdout).trim()).expect("json");
    let args = v
        .as_object()
        .and_then(|o| o.get("mcpServers"))
        .and_then(Value::as_object)
        .and_then(|o| o.get("s"))
        .and_then(Value::as_object)
        .and_then(|o| o.get("args"))
        .and_then(Value::as_array)
        .cloned()
        .expect("args");
    let texts: Vec<String> = args
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let server_arg = dir.join("server.py");
    assert!(
        texts.contains(&server_arg.display().to_string()),
        "{texts:?}"
    );
    assert!(
        texts.contains(&"python3".to_owned()),
        "a bare program stays: {texts:?}"
    );
    assert!(texts.contains(&"-u".to_owned()));
}

#[test]
fn an_idempotent_repeat_and_a_result_that_says_nothing_committed_pass_check() {
    let (faults, incident) = scenario_and_recording(
        "dedupe",
        r#""name": "dedupe", "title": "Dedupe",
      "rules": [],
      "effects": [{"tool": "add_observation", "effect": "observation", "key": "entity",
                   "committed": "added"}]"#,
    );
    let mut s = Session::listed(&recorded(&faults, &incident), &ODD);
    for id in ["3", "4"] {
        s.send(&call(id, "put_file", r#"{"path":"a.txt","content":"x"}"#));
        s.answer();
    }
    for id in ["5", "6"] {
        s.send(&call(
            id,
            "add_observation",
            r#"{"entity":"e-1","text":"likes tea"}"#,
        ));
        s.answer();
    }
    s.ends(Duration::from_secs(20));
    let out = checked(&incident, 0);
    assert!(
        !out.contains("warning"),
        "an idempotent repeat is no possible duplicate: {out}"
    );
    let c = cassette(&incident);
    assert_eq!(c.report.effects.len(), 1, "the repeat added no observation");
    let side = sidecar(&incident);
    assert_eq!(
        side.call(2).and_then(|r| r.replay_of),
        Some(1),
        "put_file again: a replay"
    );
}

#[test]
fn calls_in_a_batch_or_nested_too_deep_are_judged_like_any_other() {
    let (faults, incident) = scenario_and_recording(
        "batch",
        r#""name": "batch", "title": "Batch",
      "rules": [{"name": "gone", "tool": "read_rows", "kind": "unavailable"}],
      "effects": [{"tool": "write_row", "effect": "row", "key": "row"}]"#,
    );
    let db = scratch("batch.db");
    let mut s = odd_writing(&db, &recorded(&faults, &incident), &[]);
    // A batch: the fault answers read_rows in the server's place, write_row goes through.
    s.send(&format!(
        "[{},{}]",
        call("2", "read_rows", "{}"),
        call("3", "write_row", r#"{"row":"b-1"}"#)
    ));
    let mut got = String::new();
    for _ in 0..2 {
        got.push_str(&String::from_utf8_lossy(&s.read_raw()));
    }
    assert!(
        got.contains("ToolUnavailable") && got.contains("row written"),
        "{got}"
    );
    // Arguments nested deeper than a message may be read: still a call, summarised.
    let mut deep = String::from("1");
    for _ in 0..30 {
        deep = format!(r#"{{"d":{deep}}}"#);
    }
    s.send(&call(
        "4",
        "write_row",
        &format!(r#"{{"row":"d-1","x":{deep}}}"#),
    ));
    s.read_raw();
    s.ends(Duration::from_secs(20));
    let c = cassette(&incident);
    let tools: Vec<String> = c.report.calls.iter().map(|c| c.tool.to_lossy()).collect();
    assert_eq!(
        tools,
        ["read_rows", "write_row", "write_row"],
        "every call is on record"
    );
    assert!(c.report.calls[0].injected);
    assert_eq!(
        c.report.effects.len(),
        2,
        "both writes committed and are judged"
    );
    assert!(canonical(&c.report.calls[2].arguments).contains("toolstorm_summary"));
    assert_eq!(std::fs::read_to_string(&db).expect("db").lines().count(), 2);
}

#[test]
fn replay_keeps_its_verdict_in_a_report_file() {
    let incident = scratch("report-src.json");
    let mut s = Session::started(&["--record", text(&incident)], &[example()], &[]);
    s.send(&call("2", "create_shipment", r#"{"order_id":"o-1"}"#));
    s.answer();
    s.ends(Duration::from_secs(20));
    // A client that asks another order (a mismatch), then one that asks what was recorded:
    // both kill the replay at exit; the report judges what each asked.
    for (order, matched, mismatched, passed) in
        [("", 0, 0, false), ("o-2", 0, 1, false), ("o-1", 1, 0, true)]
    {
        let report = scratch(&format!("replay-report-{order}.json"));
        let junit = scratch(&format!("replay-junit-{order}.xml"));
        let mut child = Command::new(BIN)
            .args([
                "mcp",
                "--replay",
                text(&incident),
                "--replay-report",
                text(&report),
                "--junit",
                text(&junit),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("replay");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        {
            let stdin = child.stdin.as_mut().expect("stdin");
            writeln!(stdin, "{INITIALIZE}").expect("write");
            // The first client leaves after the handshake, asking nothing.
            if !order.is_empty() {
                writeln!(
                    stdin,
                    "{}",
                    call(
                        "2",
                        "create_shipment",
                        &format!(r#"{{"order_id":"{order}"}}"#)
                    )
                )
                .expect("write");
            }
        }
        let mut line = String::new();
        for _ in 0..if order.is_empty() { 1 } else { 2 } {
            line.clear();
            out.read_line(&mut line).expect("answer");
        }
        // As SDKs do at exit: SIGKILL, the exit status never seen. The report says it all.
        std::thread::sleep(Duration::from_millis(200));
        child.kill().expect("kill");
        let _ = child.wait();
        let v = parse(&std::fs::read_to_string(&report).expect("report")).expect("json");
        let field = |k: &str| {
            v.as_object()
                .and_then(|o| o.get(k))
                .cloned()
                .unwrap_or(Value::Null)
        };
        assert_eq!(
            field("mismatched").as_i64(),
            Some(mismatched),
            "{}",
            canonical(&v)
        );
        assert_eq!(
            field("matched").as_i64(),
            Some(matched),
            "{}",
            canonical(&v)
        );
        assert_eq!(field("passed").as_bool(), Some(passed), "{}", canonical(&v));
        assert_eq!(field("finished").as_bool(), Some(false));
        // The JUnit file says the same, for CI, however the replay was ended.
        let xml = std::fs::read_to_string(&junit).expect("junit");
        assert_eq!(xml.matches("<testcase ").count(), 3, "{xml}");
        assert_eq!(xml.contains("<failure "), !passed, "{xml}");
        if mismatched > 0 {
            assert!(
                xml.contains("1 call(s) did not match their recording"),
                "{xml}"
            );
        }
    }
}

#[test]
fn append_keeps_the_commit_id_a_lost_acknowledgement_dropped() {
    let (faults, incident) = scenario_and_recording(
        "append-idem",
        r#""name": "append-idem", "title": "Append",
      "rules": [{"name": "lost", "tool": "write_row", "kind": "response_lost", "calls": [1]}],
      "effects": [{"tool": "write_row", "effect": "row", "key": "row", "commit_id": "row_id"}]"#,
    );
    for _ in 0..2 {
        // A server (and a proxy) per call; the server gives the same row id back.
        let mut s = Session::started(&appending(&faults, &incident), &ODD, &[]);
        s.send(&call("2", "write_row", r#"{"row":"r-1"}"#));
        s.answer();
        s.ends(Duration::from_secs(20));
    }
    let side = sidecar(&incident);
    assert!(
        side.call(1).is_some_and(|r| r.dropped.is_some()),
        "the dropped answer is kept"
    );
    assert_eq!(
        side.call(2).and_then(|r| r.replay_of),
        Some(1),
        "the retry got the dropped commit's id back: an idempotent replay, across sessions"
    );
    checked(&incident, 0);
}

#[test]
fn calls_the_budget_refused_still_fail_check() {
    let (faults, incident) = scenario_and_recording(
        "budget",
        r#""name": "budget", "title": "Budget",
      "max_calls": 2, "rules": []"#,
    );
    let mut s = Session::started(&recorded(&faults, &incident), &ODD, &[]);
    for id in ["2", "3", "4"] {
        s.send(&call(id, "read_rows", "{}"));
        s.answer();
    }
    s.ends(Duration::from_secs(20));
    let c = cassette(&incident);
    assert_eq!(c.report.calls.len(), 2);
    assert_eq!(c.report.budget_rejections, 1, "the refused call is counted");
    let out = checked(&incident, 1);
    assert!(out.contains("✗ Call budget"), "{out}");
}

#[test]
fn a_full_recording_stops_letting_calls_through_and_check_says_why() {
    let incident = scratch("full.json");
    let (rows, db) = rows_and_db("full");
    let mut s = odd_writing(&db, &recorded(&rows, &incident), &[("ODD_ANSWER", "large")]);
    let mut refused = 0;
    for i in 0..80 {
        // Past the cap, a repeat of row 0: a duplicate the recording could not judge, had
        // it reached the server.
        let row = if i >= 70 { 0 } else { i };
        s.send(&nth_write(i, row, ""));
        let answer = s.answer();
        if canonical(&answer).contains("not sent to the MCP server") {
            refused += 1;
        }
    }
    // A request over 8 MB is refused too (it is never read whole), its id first or last.
    let pad = "p".repeat(9_000_000);
    for (id, line) in [
        (
            "200",
            call(
                "200",
                "write_row",
                &format!(r#"{{"row":"r-0","pad":"{pad}"}}"#),
            ),
        ),
        (
            "201",
            format!(
                r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"write_row","arguments":{{"row":"r-0","pad":"{pad}"}}}},"id":201}}"#
            ),
        ),
    ] {
        s.send(&line);
        let answer = canonical(&s.answer());
        assert!(
            answer.contains("not sent to the MCP server")
                && answer.contains(&format!("\"id\":{id}")),
            "{}",
            &answer[..answer.len().min(300)]
        );
        refused += 1;
    }
    let err = s.ends(Duration::from_secs(30));
    assert!(
        err.contains("the recording is full") && err.contains("answered with an error"),
        "the proxy says the recording is full: {err}"
    );
    // The recording stopped taking calls before a file would be too large: its files hold
    // every call it took, and it opens like any other.
    let (code, out, err) = bin(&["inspect", text(&incident)]);
    assert_eq!(code, 0, "{out}{err}");
    let doc = Document::open(&incident).expect("the recording opens");
    let n = doc.runs[0].timeline.report().calls.len();
    assert!(n > 10 && n < 70, "the calls that fit: {n}");
    assert_eq!(n + refused, 82, "every call was recorded or refused");
    // Nothing reached the server that the recording does not hold.
    let committed = std::fs::read_to_string(&db).expect("db").lines().count();
    assert_eq!(committed, n, "the server committed only the recorded calls");
    let mcp = doc.runs[0].mcp.as_deref().expect("mcp");
    let st = mcp
        .recording_stopped
        .as_ref()
        .expect("the recording says it stopped");
    assert_eq!((st.after_calls as usize, st.refused as usize), (n, refused));
    assert!(!journal_path(&incident).exists());
    let out = checked(&incident, 1);
    assert!(
        out.contains(&format!(
            "✗ Recording complete: the recording stopped after {n} call(s): the recording is full"
        )) && out.contains(&format!("{refused} later tools/call request(s)")),
        "{out}"
    );
}

#[test]
fn a_journal_that_would_pass_its_bound_stops_the_recording_and_stays_readable() {
    // A hundred rules with long names: every journal line carries their counters (15 KB),
    // so the journal, not the files, fills first; 3,000 calls sent at once, all in flight.
    let rules: Vec<String> = (0..100)
        .map(|i| {
            format!(
                r#"{{"name": "r{i:03}-{}", "tool": "other_{i}", "kind": "unavailable"}}"#,
                "x".repeat(95)
            )
        })
        .collect();
    let (faults, incident) = scenario_and_recording(
        "journal-bound",
        &format!(
            r#""name": "jb", "title": "Journal bound",
               "rules": [{}], "effects": [{{"tool": "write_row", "effect": "row", "key": "row"}}]"#,
            rules.join(",")
        ),
    );
    let mut s = Session::started(&recorded(&faults, &incident), &ODD, &[]);
    let mut all = String::new();
    for i in 0..3000 {
        all.push_str(&nth_write(i, i, ""));
        all.push('\n');
    }
    s.send(all.trim_end());
    let mut refused = 0;
    for _ in 0..3000 {
        if canonical(&s.answer()).contains("not sent to the MCP server") {
            refused += 1;
        }
    }
    // Killed before it finishes: the journal is what readers read, and it is within bounds.
    s.kill();
    let journal = std::fs::metadata(journal_path(&incident))
        .expect("journal")
        .len();
    assert!(
        journal <= toolstorm::mcp::journal::MAX_JOURNAL_BYTES,
        "{journal} bytes"
    );
    assert!(refused > 0, "the recording stopped");
    let doc = Document::open(&incident).expect("the recording opens");
    assert_eq!(doc.runs[0].timeline.report().calls.len() + refused, 3000);
    let (code, out, err) = check(&incident);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("✗ Recording complete") && out.contains("32,000,000 for its journal"),
        "{out}"
    );
}

/// A session of the odd server's large answers recorded at `incident`, started by `launch`
/// ([`odd_launched`]), its rows named by `tag` ([`rows_and_db`]), 16 calls one after another:
/// what the client received, answer by answer, and the rows the server committed.
fn large_answers_session(launch: &str, incident: &Path, tag: &str) -> (Vec<Value>, usize) {
    let (rows, db) = rows_and_db(tag);
    let mut s = odd_launched(launch, &rows, incident, &db, &[("ODD_ANSWER", "large")]);
    let mut answers = Vec::new();
    for i in 0..16 {
        s.send(&nth_write(i, i, ""));
        answers.push(s.answer());
    }
    let (_, err) = s.wait(Duration::from_secs(30));
    assert!(err.contains("the recording stops here"), "{err}");
    let committed = std::fs::read_to_string(&db)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    (answers, committed)
}

/// What a recording that ran out of room must hold: every answer the client received from
/// the server is on record with that answer; every call the server committed is on record
/// (answered, or in flight when its answer was withheld); and check fails, saying why.
fn judged_like_the_client_saw_it(incident: &Path, answers: &[Value], committed: usize) {
    let received: Vec<u64> = answers
        .iter()
        .filter(|a| canonical(a).contains("row written"))
        .filter_map(|a| a.as_object()?.get("id")?.as_i64())
        .map(|id| id as u64)
        .collect();
    assert!(
        received.len() < answers.len(),
        "the disk filled up before the 16th answer"
    );
    let (code, out, err) = check(incident);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("✗ Recording complete") || out.contains("✗ Session finished"),
        "{out}"
    );
    let doc = Document::open(incident).expect("the recording opens");
    let report = doc.runs[0].timeline.report();
    let mcp = doc.runs[0].mcp.as_deref().expect("mcp");
    for id in &received {
        let record = mcp
            .calls
            .iter()
            .find(|r| r.request_id.as_i64() == Some(*id as i64))
            .unwrap_or_else(|| panic!("the answer to request {id} is on record"));
        assert!(
            record
                .delivered
                .received()
                .iter()
                .any(|(_, t)| t.contains("row written")),
            "request {id}: {:?}",
            record.delivered
        );
    }
    // Stopped after the calls it holds: a call whose begin line was lost is refused, not
    // counted as taken.
    let st = mcp
        .recording_stopped
        .as_ref()
        .expect("the recording says it stopped");
    assert_eq!(st.after_calls as usize, report.calls.len(), "{st:?}");
    let ran = report.calls.iter().filter(|c| c.executed).count();
    assert!(
        ran >= committed,
        "every call the server committed ({committed}) is on record as run ({ran})"
    );
}
#[test]
fn lines_over_8_mb_with_their_id_last_are_still_judged() {
    let (faults, incident) = scenario_and_recording(
        "id-last",
        r#""name": "id-last", "title": "Id last",
      "rules": [{"name": "lost", "tool": "write_row", "kind": "response_lost", "calls": [1]}],
      "effects": [{"tool": "write_row", "effect": "row", "key": "row"}]"#,
    );
    let db = scratch("id-last.db");
    let mut s = odd_writing(
        &db,
        &recorded(&faults, &incident),
        &[("ODD_ANSWER", "bigidlast")],
    );
    // A 9 MB answer whose id comes last: relayed as it comes (too late to drop it) and judged.
    s.send(&call("2", "write_row", r#"{"row":"r-1"}"#));
    assert!(s.read_raw().len() > 8_000_000);
    // A 9 MB request whose id comes last, as the TypeScript SDK writes it.
    let big = "q".repeat(9_000_000);
    s.send(&format!(
        r#"{{"method":"tools/call","params":{{"name":"write_row","arguments":{{"row":"r-1","x":"{big}"}}}},"jsonrpc":"2.0","id":77}}"#
    ));
    assert!(s.read_raw().len() > 8_000_000);
    s.ends(Duration::from_secs(30));
    assert_eq!(std::fs::read_to_string(&db).expect("db").lines().count(), 2);
    let c = cassette(&incident);
    assert_eq!(c.report.calls.len(), 2, "both calls are on record");
    assert!(c.report.calls.iter().all(|c| c.status == Status::Ok));
    assert!(
        !c.report.calls[0].injected,
        "an answer already on its way was not dropped"
    );
    assert_eq!(c.report.duplicate_effects(), 1, "both commits are judged");
    let side = sidecar(&incident);
    assert!(
        side.call(1)
            .is_some_and(|r| noted(r, "could not be injected")),
        "{:?}",
        side.call(1)
    );
    assert_eq!(
        side.call(2).map(|r| r.request_id.clone()),
        Some(Value::from(77))
    );
}

#[test]
fn bad_inputs_name_the_file_and_the_problem() {
    // A replay report that cannot be written: refused before the client is served.
    let (code, _, err) = bin(&[
        "mcp",
        "--replay",
        "cassettes/mcp-incident.json",
        "--replay-report",
        "/nonexistent-dir/report.json",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("/nonexistent-dir/report.json") && err.contains("does not exist"),
        "{err}"
    );
    // A journal that is not one of ours: every reader names it.
    let incident = scratch("bad-journal.json");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("cassettes/incident.json"),
        &incident,
    )
    .expect("copy");
    std::fs::write(journal_path(&incident), "{\"kind\":\"something else\"}\n").expect("write");
    for command in ["check", "inspect"] {
        let (code, _, err) = bin(&[command, text(&incident)]);
        assert_eq!(code, 2, "{command}: {err}");
        assert!(
            err.contains("bad-journal.mcp.journal") && err.contains("Invalid MCP journal"),
            "{err}"
        );
    }
    // A scenario with a wrong `annotations` value.
    let bad = write(
        "bad-annotations.json",
        &LOST_ACK.replace(r#""seed": 42,"#, r#""seed": 42, "annotations": "maybe","#),
    );
    let (code, _, err) = bin(&["mcp", text(&bad), "--", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("annotations") && err.contains("bad-annotations.json"),
        "{err}"
    );
}

#[test]
fn a_request_the_server_could_not_be_given_is_recorded_as_never_run() {
    // The server closes its input at once and lingers: the request cannot be written to it
    // (the proxy holds it with others and writes them together), so the call never ran.
    let incident = scratch("never-given.json");
    let mut s = Session::start(
        &["--record", text(&incident)],
        &["sh", "-c", "exec 0<&-; sleep 1"],
        &[],
    );
    std::thread::sleep(Duration::from_millis(300));
    s.send(&call("7", "create_shipment", r#"{"order_id":"o-1"}"#));
    let answer = s.answer();
    let o = answer.as_object().expect("an answer");
    assert_eq!(o.get("id"), Some(&Value::from(7)), "{answer:?}");
    assert!(
        o.contains_key("error"),
        "the client hears of it: {answer:?}"
    );
    let (_, err) = s.wait(Duration::from_secs(10));
    assert!(
        err.contains("the server no longer reads its input"),
        "{err}"
    );
    let cassette = cassette(&incident);
    let calls = &cassette.report.calls;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(
        !calls[0].executed,
        "a request the server never got did not run: {:?}",
        calls[0]
    );
}

#[test]
fn a_request_the_server_read_before_it_left_stays_run_when_the_next_cannot_be_written() {
    // The server answers the first request and exits without reading more. Two large
    // requests sent together may be held and written as one: the write fails part-way, and
    // only the request it did not get past is taken back.
    let incident = scratch("read-then-left.json");
    let script = r#"
import json, sys
line = sys.stdin.readline()
msg = json.loads(line)
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": "done"}]}}) + "\n")
sys.stdout.flush()
"#;
    let mut s = Session::start(
        &["--record", text(&incident)],
        &["python3", "-c", script],
        &[],
    );
    let big = "z".repeat(40_000);
    let first = call("1", "write_row", &format!(r#"{{"row":"a","pad":"{big}"}}"#));
    let second = call("2", "write_row", &format!(r#"{{"row":"b","pad":"{big}"}}"#));
    s.send(&format!("{first}\n{second}"));
    let mut answers = Vec::new();
    loop {
        let mut line = Vec::new();
        if s.out.read_until(b'\n', &mut line).expect("read") == 0 {
            break;
        }
        answers.push(parse(String::from_utf8_lossy(&line).trim_end()).expect("JSON"));
        if answers.len() == 2 {
            break;
        }
    }
    let of = |id: i64| -> Vec<&Value> {
        answers
            .iter()
            .filter(|a| a.as_object().and_then(|o| o.get("id")) == Some(&Value::from(id)))
            .collect()
    };
    let one = of(1);
    assert_eq!(
        one.len(),
        1,
        "one answer to the request the server read: {answers:?}"
    );
    assert!(
        one[0].as_object().is_some_and(|o| o.contains_key("result")),
        "the server's own answer: {answers:?}"
    );
    let _ = s.wait(Duration::from_secs(15));
    let cassette = cassette(&incident);
    let first = &cassette.report.calls[0];
    assert!(first.executed, "the server read it and answered: {first:?}");
    assert_eq!(first.status, Status::Ok, "{first:?}");
}

#[test]
fn a_lost_acknowledgement_in_flight_reads_as_in_flight_before_and_after_a_kill() {
    let (faults, incident) = faults_and_recording("inflight-lost-ack", LOST_ACK);
    let mut s = Session::started(
        &recorded(&faults, &incident),
        &[example()],
        &[("SHIPPING_DELAY_MS", "3000")],
    );
    s.send(&call("2", "create_shipment", r#"{"order_id":"o-7"}"#));
    std::thread::sleep(Duration::from_millis(700));
    // While the server has the call (the proxy alive), and after the proxy is killed: every
    // reader opens the recording and names the call in flight.
    for moment in ["while the server has it", "after a SIGKILL"] {
        if moment == "after a SIGKILL" {
            s.kill();
        }
        let (code, out, err) = check(&incident);
        assert_eq!(code, 1, "{moment}: {out}{err}");
        // Alive, the session is still running; killed, it did not end.
        let said = if moment == "after a SIGKILL" {
            "✗ Session finished: the session did not end: 1 call(s) in flight"
        } else {
            "✗ Session finished: the session is still running (its proxy holds the recording): 1 call(s) in flight so far"
        };
        assert!(
            out.contains(said) && out.contains("#1 create_shipment"),
            "{moment}: {out}{err}"
        );
        let doc = Document::open(&incident).expect("the recording opens");
        assert_eq!(doc.live, moment != "after a SIGKILL", "{moment}");
        let report = doc.runs[0].timeline.report();
        assert_eq!(report.calls.len(), 1, "{moment}");
        let c = &report.calls[0];
        assert_eq!(c.status, Status::Running, "{moment}");
        assert!(
            c.executed,
            "{moment}: the request was on its way to the server"
        );
        assert_eq!(
            c.kind.map(|k| k.as_str()),
            Some("response_lost"),
            "{moment}"
        );
        let (code, out, err) = bin(&["inspect", text(&incident)]);
        assert_eq!(code, 0, "{moment}: {out}{err}");
        assert!(out.contains("running"), "{moment}: {out}");
        let live = moment != "after a SIGKILL";
        assert_eq!(
            out.contains("session: running (its proxy holds the recording)"),
            live,
            "{moment}: {out}"
        );
        let (_, out, _) = bin(&["check", "--json", text(&incident)]);
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
        assert_eq!(v["mcp"]["live"], live, "{moment}: {out}");
    }
    let (code, _, err) = replay_with(
        &incident,
        &[
            INITIALIZE,
            INITIALIZED,
            &call("2", "create_shipment", r#"{"order_id":"o-7"}"#),
        ],
    );
    assert_eq!(code, 0, "replay serves the recording: {err}");
}

/// A finished recording of `calls` inventory checks and a lost acknowledgement's retry: two
/// commits of one order, so one duplicate.
fn finished_recording_with_a_duplicate(faults: &Path, incident: &Path, calls: usize) {
    let mut s = Session::started(&recorded(faults, incident), &[example()], &[]);
    for i in 0..calls {
        s.send(&nth_call(i, "check_inventory", r#"{"sku":"A1"}"#));
    }
    for _ in 0..calls {
        s.answer();
    }
    s.send(&call("2", "create_shipment", r#"{"order_id":"o-1"}"#));
    s.answer();
    s.send(&call("3", "create_shipment", r#"{"order_id":"o-1"}"#));
    s.answer();
    s.ends(Duration::from_secs(30));
}

#[test]
fn append_killed_at_any_point_of_its_start_keeps_the_earlier_calls() {
    let (faults, incident) = faults_and_recording("append-kill", &lost_ack_by_order());
    const EARLIER: usize = 2000;
    finished_recording_with_a_duplicate(&faults, &incident, EARLIER);
    let args = appending(&faults, &incident);
    // How long a start takes, to spread the kills over it.
    let t0 = Instant::now();
    let s = Session::start(&args, &[example()], &[]);
    s.ends(Duration::from_secs(30));
    let whole = t0.elapsed();
    // Kill points: from the moment the journal appears (when the earlier calls are being
    // written to it, if they are written where readers look) on, 0.2 ms apart; then a seeded
    // spread from 0 to 1.5 times the whole start.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..24 {
        let stamp = || {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(journal_path(&incident))
                .ok()
                .map(|m| (m.ino(), m.size(), m.mtime_nsec()))
        };
        let before = stamp();
        let mut s = Session::start(&args, &[example()], &[]);
        let at = if round < 12 {
            let until = Instant::now() + Duration::from_secs(10);
            while stamp() == before && Instant::now() < until {
                std::thread::sleep(Duration::from_micros(50));
            }
            Duration::from_micros(200 * round)
        } else {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            whole.mul_f64((x % 1000) as f64 / 1000.0 * 1.5)
        };
        std::thread::sleep(at);
        s.kill();
        let doc = Document::open(&incident)
            .unwrap_or_else(|e| panic!("round {round}, killed at {at:?}: {e}"));
        let report = doc.runs[0].timeline.report();
        assert_eq!(
            report.calls.len(),
            EARLIER + 2,
            "round {round}, killed at {at:?}: the earlier calls are all there"
        );
        assert_eq!(
            report.duplicate_effects(),
            1,
            "round {round}, killed at {at:?}"
        );
    }
    // A session after all those kills continues from every earlier call, and its retry of
    // the order is judged a second duplicate.
    let mut s = Session::started(&args, &[example()], &[]);
    s.send(&call("2", "create_shipment", r#"{"order_id":"o-1"}"#));
    s.answer();
    s.ends(Duration::from_secs(30));
    let c = cassette(&incident);
    assert_eq!(c.report.calls.len(), EARLIER + 3);
    assert_eq!(
        c.report.duplicate_effects(),
        2,
        "the triple commit is judged"
    );
    let (code, out, err) = check(&incident);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("✗ No duplicate side effects"), "{out}");
}

#[test]
fn a_journal_from_another_session_is_refused_not_taken_for_the_files() {
    let faults = write("foreign-journal.json", LOST_ACK);
    let killed = scratch("foreign-killed.json");
    let finished = scratch("foreign-finished.json");
    finished_recording_with_a_duplicate(&faults, &finished, 3);
    // A session killed with its journal left.
    let mut s = Session::started(&recorded(&faults, &killed), &[example()], &[]);
    s.send(&call("2", "check_inventory", r#"{"sku":"A1"}"#));
    s.answer();
    s.kill();
    assert!(journal_path(&killed).exists());
    std::fs::copy(journal_path(&killed), journal_path(&finished)).expect("copy");
    for args in [
        vec!["check", text(&finished)],
        vec!["inspect", text(&finished)],
    ] {
        let (code, out, err) = bin(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(
            err.contains("a journal from another recording")
                && err.contains("foreign-finished.mcp.journal"),
            "{args:?}: {err}"
        );
    }
    let (code, _, err) = replay_with(&finished, &[]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = bin(&[
        "mcp",
        text(&faults),
        "--record",
        text(&finished),
        "--append",
        "--",
        example(),
    ]);
    assert_eq!(code, 2, "--append does not continue from it: {err}");
    // Moved away, the files read as they are: the finished session and its duplicate.
    std::fs::remove_file(journal_path(&finished)).expect("rm");
    let c = cassette(&finished);
    assert_eq!((c.report.calls.len(), c.report.duplicate_effects()), (5, 1));
}

#[test]
fn a_journal_that_cannot_be_written_withholds_answers_and_fails_check() {
    // An injected write error (EFBIG).
    let incident = scratch("efbig.json");
    let (answers, committed) = large_answers_session(EFBIG, &incident, "efbig");
    judged_like_the_client_saw_it(&incident, &answers, committed);
}

#[test]
fn a_call_waiting_on_injected_latency_whose_line_was_lost_never_reaches_the_server() {
    // Each write_row waits 0.2 s (a latency rule) and carries 30 KB of arguments, so the
    // journal's writes fail (as above: past 256 KB) at a call's begin line. That call is
    // refused at once, not sent when its latency has passed: the server commits only calls
    // the recording holds.
    let rules = write(
        "latency-rows.json",
        &ROWS.replace(
            "\"rules\": []",
            r#""rules": [{"name": "slow", "tool": "write_row", "kind": "latency", "delay": 0.2, "probability": 1.0}]"#,
        ),
    );
    let incident = scratch("efbig-latency.json");
    let db = scratch("efbig-latency.db");
    let mut s = odd_launched(EFBIG, &rules, &incident, &db, &[]);
    let pad = "p".repeat(30_000);
    let (mut written, mut refused) = (0, 0);
    for i in 0..16 {
        s.send(&nth_write(i, i, &pad));
        let a = canonical(&s.answer());
        if a.contains("row written") {
            assert_eq!(
                refused, 0,
                "no call is answered after the recording stopped: {a}"
            );
            written += 1;
        } else if a.contains("not sent to the MCP server") {
            refused += 1;
        } else {
            panic!("call {i}: {a}");
        }
    }
    let (_, err) = s.wait(Duration::from_secs(30));
    assert!(err.contains("the recording stops here"), "{err}");
    assert!(
        written > 2 && refused > 2,
        "{written} written, {refused} refused"
    );
    // Give a timer that should not have forwarded anything its time, then count.
    std::thread::sleep(Duration::from_millis(300));
    let committed = std::fs::read_to_string(&db)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    assert_eq!(
        committed, written,
        "the server committed only the answered calls"
    );
    let doc = Document::open(&incident).expect("the recording opens");
    let calls = doc.runs[0].timeline.report().calls.len();
    assert_eq!(
        calls, written,
        "the recording holds the calls the server committed"
    );
    let mcp = doc.runs[0].mcp.as_deref().expect("mcp");
    let st = mcp.recording_stopped.as_ref().expect("it says it stopped");
    assert_eq!(st.after_calls as usize, written, "{st:?}");
}

#[test]
fn a_server_batch_whose_journal_line_is_lost_keeps_what_answers_no_call() {
    // Each answer comes in a batch beside a notification; the journal's writes start
    // failing part-way (as above). A withheld answer must not take its batch-mate with it.
    let incident = scratch("efbig-batch.json");
    let (rows, db) = rows_and_db("efbig-batch");
    let mut s = odd_launched(
        EFBIG,
        &rows,
        &incident,
        &db,
        &[("ODD_ANSWER", "largebatch")],
    );
    let (mut notes, mut withheld) = (0, 0);
    for i in 0..16 {
        let id = 10 + i;
        s.send(&call(
            &id.to_string(),
            "write_row",
            &format!(r#"{{"row":"r-{i}"}}"#),
        ));
        // Lines until the call's answer: in the batch, or alone.
        loop {
            let line = String::from_utf8_lossy(&s.read_raw()).into_owned();
            notes += line.matches("beside r-").count();
            if line.contains("answer was withheld") {
                withheld += 1;
            }
            if line.contains(&format!("\"id\": {id}")) || line.contains(&format!("\"id\":{id}")) {
                break;
            }
        }
    }
    let (_, err) = s.wait(Duration::from_secs(30));
    assert!(err.contains("the recording stops here"), "{err}");
    let committed = std::fs::read_to_string(&db)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    assert!(withheld > 0, "the journal failed under an answer");
    // Every call the server answered sent its notification, and each reached the client.
    assert_eq!(
        notes, committed,
        "{withheld} withheld, {committed} committed"
    );
}

#[test]
fn a_full_disk_withholds_answers_and_fails_check() {
    // A 1 MB tmpfs, where the machine lets the test mount one (root); the injected write
    // error above covers the rest.
    let dir = scratch("tmpfs-1m");
    std::fs::create_dir_all(&dir).expect("dir");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs", text(&dir)])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!(
            "no tmpfs could be mounted here: the full-disk case is covered by the injected write error"
        );
        return;
    }
    let incident = dir.join("disk.json");
    let (answers, committed) = large_answers_session("exec", &incident, "disk");
    judged_like_the_client_saw_it(&incident, &answers, committed);
    let _ = Command::new("umount").arg(&dir).status();
}

#[test]
fn calls_with_odd_tool_names_are_recorded_like_any_other() {
    let incident = scratch("odd-names.json");
    let mut s = Session::started(&["--record", text(&incident)], &ODD, &[]);
    let requests = [
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":42,"arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"w\ud800x","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write_row","arguments":{"row":"a"}}}"#,
        r#"[{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":null}}]"#,
    ];
    for r in requests {
        s.send(r);
        s.read_raw();
    }
    s.ends(Duration::from_secs(20));
    let doc = Document::open(&incident).expect("opens");
    let report = doc.runs[0].timeline.report();
    let tools: Vec<String> = report.calls.iter().map(|c| c.tool.to_lossy()).collect();
    assert_eq!(
        tools,
        ["(42)", "(unnamed)", "w\u{fffd}x", "write_row", "(null)"],
        "every call is on record"
    );
    let mcp = doc.runs[0].mcp.as_deref().expect("mcp");
    assert_eq!(mcp.calls.len(), 5, "each with the answer the client got");
    let notes: Vec<String> = mcp.calls.iter().filter_map(|c| c.note.clone()).collect();
    assert!(
        notes.iter().any(|n| n.contains("not a string (42)"))
            && notes.iter().any(|n| n.contains("named no tool"))
            && notes.iter().any(|n| n.contains("lone surrogate")),
        "{notes:?}"
    );
}

/// Runs the binary with `args`, stopped if it takes longer than `limit`: its exit code (None
/// when it had to be stopped) and stderr.
fn cli_within(args: &[&str], limit: Duration) -> (Option<i32>, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let until = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            return (status.code(), err);
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            return (None, String::new());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let ok = Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", path.display());
}

#[test]
fn files_that_are_not_files_are_refused_never_waited_on_or_replaced() {
    let limit = Duration::from_secs(10);
    let faults = write("special-lost-ack.json", LOST_ACK);
    // A finished recording, then a FIFO where its journal would be: every reader refuses it
    // at once, naming it.
    let rec = scratch("special-rec.json");
    finished_recording_with_a_duplicate(&faults, &rec, 1);
    mkfifo(&journal_path(&rec));
    let proxy = [
        "mcp",
        text(&faults),
        "--record",
        text(&rec),
        "--",
        example(),
    ];
    let appending = [&proxy[..4], &["--append"], &proxy[4..]].concat();
    for args in [
        vec!["check", text(&rec)],
        vec!["inspect", text(&rec)],
        vec!["mcp", "--replay", text(&rec)],
        proxy.to_vec(),
        appending,
    ] {
        let (code, err) = cli_within(&args, limit);
        assert_eq!(
            code,
            Some(2),
            "{args:?} ends with an error, never waits: {err}"
        );
        assert!(
            err.contains("FIFO") && err.contains("special-rec.mcp.journal"),
            "{args:?}: {err}"
        );
    }
    std::fs::remove_file(journal_path(&rec)).expect("rm fifo");
    // Links out of the folder and devices where the proxy keeps its files: refused before
    // the server starts, and nothing they lead to is written.
    let outside = scratch("outside-target.txt");
    for (name, at) in [
        ("journal link", journal_path(&rec)),
        ("sidecar link", sidecar_path(&rec)),
        ("lock link", journal_path(&rec).with_extension("lock")),
    ] {
        std::fs::write(&outside, "keep me").expect("outside");
        let backup = scratch("special-backup");
        let had = std::fs::rename(&at, &backup).is_ok();
        std::os::unix::fs::symlink(&outside, &at).expect("symlink");
        let (code, err) = cli_within(&proxy, limit);
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(err.contains("symbolic link"), "{name}: {err}");
        assert_eq!(
            std::fs::read_to_string(&outside).expect("outside"),
            "keep me",
            "{name}: the link's target is untouched"
        );
        std::fs::remove_file(&at).expect("rm link");
        if had {
            std::fs::rename(&backup, &at).expect("restore");
        }
    }
    // A lock that is a FIFO.
    let lock = journal_path(&rec).with_extension("lock");
    mkfifo(&lock);
    let (code, err) = cli_within(&proxy, limit);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("FIFO"), "{err}");
    std::fs::remove_file(&lock).expect("rm");
    // The recording, the campaign file and --output named as links to a device: refused,
    // and the device stays a device.
    let device = scratch("to-dev-null");
    let _ = std::fs::remove_file(&device);
    std::os::unix::fs::symlink("/dev/null", &device).expect("symlink");
    let lab = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/lost_ack.json");
    let mcp_scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/mcp-lost-ack.json");
    for args in [
        vec!["mcp", "--record", text(&device), "--", example()],
        vec!["run", text(&lab), "--output", text(&device)],
        vec![
            "run",
            text(&lab),
            "--policy",
            "retry",
            "--cassette",
            text(&device),
        ],
        vec![
            "campaign",
            text(&mcp_scenario),
            "--runs",
            "1",
            "--out",
            text(&device),
            "--",
            "true",
        ],
    ] {
        let (code, err) = cli_within(&args, Duration::from_secs(60));
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("character device"), "{args:?}: {err}");
        use std::os::unix::fs::FileTypeExt;
        let meta = std::fs::metadata("/dev/null").expect("/dev/null");
        assert!(
            meta.file_type().is_char_device(),
            "{args:?} replaced /dev/null"
        );
    }
    // A campaign file that is a FIFO is not waited on.
    let fifo_out = scratch("special.campaign.json");
    mkfifo(&fifo_out);
    let (code, err) = cli_within(
        &[
            "campaign",
            text(&mcp_scenario),
            "--runs",
            "1",
            "--out",
            text(&fifo_out),
            "--",
            "true",
        ],
        limit,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("FIFO"), "{err}");
}

#[test]
fn a_file_that_is_not_a_recording_is_never_replaced_by_one() {
    let limit = Duration::from_secs(10);
    let faults = write("not-rec-lost-ack.json", LOST_ACK);
    let notes = write("not-rec-notes.json", "{\"my\": \"notes\"}");
    let outside = write("not-rec-outside.txt", "keep me");
    let link = scratch("not-rec-link.json");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&outside, &link).expect("symlink");
    // The user's own file, the scenario itself (named twice by mistake), a link to a file
    // elsewhere: refused before the server starts, each left as it was.
    for target in [&notes, &faults, &link] {
        let before = std::fs::read(target).expect("before");
        let (code, err) = cli_within(
            &[
                "mcp",
                text(&faults),
                "--record",
                text(target),
                "--",
                example(),
            ],
            limit,
        );
        assert_eq!(code, Some(2), "{}: {err}", target.display());
        assert!(
            err.contains(&format!("cannot record to {}", target.display()))
                && err.contains("not a recording"),
            "{}: {err}",
            target.display()
        );
        assert_eq!(std::fs::read(target).expect("after"), before);
        assert!(!journal_path(target).exists(), "{}", target.display());
    }
    // An empty file, a recording, and a cassette without a sidecar (as ToolStorm writes
    // them) are replaced.
    let empty = write("not-rec-empty.json", "");
    let rec = scratch("not-rec-rec.json");
    finished_recording_with_a_duplicate(&faults, &rec, 1);
    let bare = scratch("not-rec-bare.json");
    std::fs::copy(&rec, &bare).expect("copy");
    for target in [&empty, &rec, &bare] {
        finished_recording_with_a_duplicate(&faults, target, 1);
        let (code, out) = cli_within(&["check", text(target)], limit);
        assert_eq!(code, Some(1), "{}: {out}", target.display());
    }
}

#[test]
fn a_scenario_names_its_server_by_a_path_from_its_own_folder() {
    // The bundled scenarios start the prebuilt example from `../target/release/examples`:
    // here a scenario in a folder of its own names `bin/server`, and the proxy runs from
    // elsewhere.
    let dir = scratch("own-server");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).expect("dir");
    std::fs::copy(example_server(), dir.join("bin/server")).expect("copy the example server");
    let scenario = dir.join("faults.json");
    std::fs::write(
        &scenario,
        LOST_ACK.replace(
            r#""seed": 42,"#,
            r#""seed": 42, "server": {"command": "bin/server", "args": []},"#,
        ),
    )
    .expect("scenario");
    let incident = scratch("own-server-rec.json");
    let mut s = Session::of(
        Command::new(BIN)
            .args(["mcp", text(&scenario), "--record", text(&incident)])
            .current_dir(std::env::temp_dir()),
    );
    s.handshake();
    s.send(&call("2", "create_shipment", r#"{"order_id":"o-1"}"#));
    assert_holds(&s.answer(), "ResponseLost");
    s.ends(Duration::from_secs(20));
    // A server that is not there is named, with where it was looked for.
    std::fs::remove_file(dir.join("bin/server")).expect("rm");
    let (code, _, err) = bin(&["mcp", text(&scenario), "--record", text(&incident)]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bin/server")
            && err.contains("is not a file")
            && err.contains("scenario's folder"),
        "{err}"
    );
}

#[test]
fn sigterm_ends_a_session_whose_server_reads_nothing_while_the_client_floods_it() {
    // The relay blocks writing to a server that never reads its input, so it cannot see the
    // signal: the server's group is stopped after a grace, which ends that write, and the
    // session ends as SIGTERM asks, its recording whole.
    let incident = scratch("flooded.json");
    let marker = format!("tsmark-deaf-{}", std::process::id());
    let script = format!("sleep 60; : {marker}");
    let mut s = Session::start(&["--record", text(&incident)], &["sh", "-c", &script], &[]);
    let mut stdin = s.child.stdin.take().expect("stdin");
    let flood = std::thread::spawn(move || {
        let note = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{}"}}}}"#,
            "x".repeat(1 << 20)
        );
        // Stops when the proxy's input is closed (it has ended).
        for _ in 0..64 {
            if writeln!(stdin, "{note}").is_err() {
                break;
            }
        }
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        s.child.try_wait().expect("wait").is_none(),
        "still relaying"
    );
    let pid = nix::unistd::Pid::from_raw(s.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let sent = Instant::now();
    let (code, err) = s.wait(Duration::from_secs(40));
    assert_eq!(code, Some(143), "{err}");
    assert!(
        sent.elapsed() < Duration::from_secs(30),
        "ended {:?} after SIGTERM",
        sent.elapsed()
    );
    assert_gone(&marker, "the server is gone");
    let _ = flood.join();
    checked(&incident, 0);
}

/// A retry after a lost acknowledgement of `create_shipment`, which the example server
/// annotates `idempotentHint: false`, with no `effects` entry: recorded with `faults`, the
/// check's exit code and output.
fn declared_retry(name: &str, extra: &str) -> (PathBuf, i32, String) {
    let (faults, incident) = scenario_and_recording(
        name,
        &format!(
            r#""name": "declared", "title": "Declared",{extra}
      "rules": [{{"name": "lost", "tool": "create_shipment", "kind": "response_lost", "calls": [1]}}]"#
        ),
    );
    let mut s = Session::listed(&recorded(&faults, &incident), &[example()]);
    for id in ["3", "4"] {
        s.send(&call(id, "create_shipment", r#"{"order_id":"o-1"}"#));
        s.answer();
    }
    s.ends(Duration::from_secs(20));
    // The server made two shipments: the lost one and the retry's.
    let side = sidecar(&incident);
    let shipment = |r: &toolstorm::mcp::session::CallRecord| {
        let answer = r.dropped.clone().unwrap_or_else(|| match &r.delivered {
            Delivered::Result(v) => v.clone(),
            other => panic!("{other:?}"),
        });
        canonical(&answer)
    };
    let (first, second) = (
        shipment(side.call(1).expect("call 1")),
        shipment(side.call(2).expect("call 2")),
    );
    assert!(
        first.contains("SHP-0001") && second.contains("SHP-0002"),
        "{first} {second}"
    );
    let (code, out, _) = check(&incident);
    (incident, code, out)
}

#[test]
fn a_retry_of_a_tool_the_server_declares_non_idempotent_fails_check() {
    let (incident, code, out) = declared_retry("declared", "");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("✗ No duplicate side effects")
            && out.contains(
                "call #2 repeated call #1 of create_shipment with the same arguments \
                 ({\"order_id\":\"o-1\"}) after its answer was lost: the server declares this \
                 tool non-idempotent; add an `effects` entry to judge by what committed"
            ),
        "{out}"
    );
    assert!(!out.contains("warning: possible duplicate"), "{out}");
    // The reasons say it too, naming both calls.
    let trace = document::open_trace(&incident).expect("opens");
    let summary = document::judge(&trace, None).expect("judges");
    let check = summary.runs[0]
        .iter()
        .find(|c| c.name == "No duplicate side effects")
        .expect("check");
    let reasons = document::explain::reasons(&trace.cassettes[0].report, trace.mcp.as_ref(), check);
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert_eq!(reasons[0].calls, [1, 2]);
    assert!(
        reasons[0]
            .text
            .contains("declares this tool non-idempotent"),
        "{reasons:?}"
    );
    assert_eq!(mcp_json_count(&incident, "declared_duplicates"), 1);
    // The explorer says so of call #2, not "a hint".
    let mut app = toolstorm::tui::app::App::new(Document::open(&incident).expect("opens"));
    app.update(toolstorm::tui::action::Action::Next);
    app.update(toolstorm::tui::action::Action::Resize(160, 50));
    let mut terminal =
        ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 50)).expect("terminal");
    let theme = toolstorm::tui::theme::Theme::new(true);
    terminal
        .draw(|f| app.render_with(f.area(), f.buffer_mut(), &theme))
        .expect("draw");
    let screen = terminal.backend().to_string();
    // (The pane wraps the sentence.)
    assert!(
        screen.contains("(a retry of call")
            && screen.contains("non-idempotent, judged a duplicate)"),
        "{screen}"
    );
}

#[test]
fn annotations_warn_turns_a_declared_retry_back_into_a_warning() {
    let (incident, code, out) = declared_retry("declared-warn", r#" "annotations": "warn","#);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("✓ No duplicate side effects")
            && out.contains(
                "warning: possible duplicate (annotations only): call #2 repeats call #1"
            ),
        "{out}"
    );
    let side = sidecar(&incident);
    assert_eq!(
        side.annotations,
        toolstorm::mcp::scenario::Annotations::Warn
    );
}

#[test]
fn every_call_answered_is_recorded_when_the_answers_in_flight_pass_the_size_cap() {
    // 80 calls of 120 KB sent at once, each answered with 120 KB: the answers of the calls
    // in flight would double what the files hold.
    let incident = scratch("in-flight-full.json");
    let (rows, db) = rows_and_db("in-flight");
    let mut s = odd_writing(&db, &recorded(&rows, &incident), &[("ODD_ANSWER", "large")]);
    let pad = "p".repeat(120_000);
    let mut all = String::new();
    for i in 0..80 {
        all.push_str(&nth_write(i, i, &pad));
        all.push('\n');
    }
    // Written while the answers are read: neither side waits on the other's pipe.
    let mut stdin = s.child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        stdin.write_all(all.as_bytes()).expect("write");
        stdin.flush().expect("flush");
        stdin
    });
    let mut answered = Vec::new();
    let mut refused = 0;
    for _ in 0..80 {
        let a = s.answer();
        let t = canonical(&a);
        if t.contains("row written") {
            answered.push(
                a.as_object()
                    .and_then(|o| o.get("id")?.as_i64())
                    .expect("id"),
            );
        } else {
            assert!(
                t.contains("not sent to the MCP server"),
                "{}",
                &t[..t.len().min(300)]
            );
            refused += 1;
        }
    }
    s.child.stdin = Some(writer.join().expect("writer"));
    let err = s.ends(Duration::from_secs(30));
    assert!(refused > 0 && !answered.is_empty(), "{refused} refused");
    // Every call the client got an answer for is in the files: with that answer, or, once
    // the files had no room for it, without it (and saying so).
    let doc = Document::open(&incident).expect("the recording opens");
    let report = doc.runs[0].timeline.report();
    let mcp = doc.runs[0].mcp.as_deref().expect("mcp");
    assert_eq!(report.calls.len(), answered.len(), "{err}");
    let mut unkept = 0;
    for id in &answered {
        let record = mcp
            .calls
            .iter()
            .find(|r| r.request_id.as_i64() == Some(*id))
            .unwrap_or_else(|| panic!("the answer to request {id} is on record"));
        match &record.delivered {
            Delivered::Result(r) => assert!(canonical(r).contains("row written"), "{id}"),
            Delivered::Unrecorded => {
                unkept += 1;
                assert!(noted(record, "no room for its answer"), "{record:?}");
            }
            other => panic!("request {id}: {other:?}"),
        }
    }
    assert!(unkept > 0, "the answers in flight passed the room left");
    assert!(report.calls.iter().all(|c| c.status == Status::Ok));
    let committed = std::fs::read_to_string(&db).expect("db").lines().count();
    assert_eq!(
        committed,
        answered.len(),
        "the server committed only the recorded calls"
    );
    assert!(
        !journal_path(&incident).exists(),
        "the files hold what the journal did"
    );
    let out = checked(&incident, 1);
    assert!(
        out.contains(&format!(
            "✗ Recording complete: the recording stopped after {} call(s): the recording is full",
            answered.len()
        )) && out.contains(&format!("{refused} later tools/call request(s)")),
        "{out}"
    );
}

/// A shipping server that commits each call (a line in the file `argv[2]`) and then, per
/// `argv[1]`: `exit` leaves without answering the first commit ever (later ones are
/// answered); `half` writes the first 40 bytes of its answer, no newline, and leaves; `hold`
/// never answers (it sleeps until it is stopped).
const COMMIT_THEN_LEAVE: &str = r#"import json, os, sys
mode, commits = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
             "serverInfo": {"name": "leaver", "version": "1"}}
    elif m["method"] == "tools/call":
        before = os.path.exists(commits) and len(open(commits).read().splitlines())
        with open(commits, "a") as f:
            f.write(m["params"]["arguments"]["order_id"] + "\n")
        r = {"content": [{"type": "text", "text": "{\"shipment_id\": 7}"}],
             "structuredContent": {"shipment_id": 7}}
        answer = json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r})
        if mode == "half":
            sys.stdout.write(answer[:40])
            sys.stdout.flush()
            os._exit(0)
        if mode == "exit" and not before:
            os._exit(0)
        if mode == "hold":
            import time
            time.sleep(600)
    else:
        r = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
    sys.stdout.flush()
"#;

/// Shipments keyed by their order.
const SHIPMENTS: &str = r#"{
  "schema_version": 1, "world": "mcp", "name": "shipments", "title": "Shipments", "seed": 1,
  "rules": [],
  "effects": [{"tool": "create_*", "effect": "shipment", "key": "order_id"}]
}"#;

/// The sidecar of `incident`, as JSON.
fn sidecar_json(incident: &Path) -> Value {
    let text = std::fs::read_to_string(sidecar_path(incident)).expect("sidecar");
    parse(&text).expect("json")
}

/// `outcome_unknown.why` of the sidecar's call `i` (0-based), if the record has one.
fn unknown_why(side: &Value, i: usize) -> Option<String> {
    let calls = side.as_object()?.get("calls")?.as_array()?;
    let u = calls
        .get(i)?
        .as_object()?
        .get("outcome_unknown")?
        .as_object()?;
    u.get("why")?.as_str().map(str::to_owned)
}

/// A [`COMMIT_THEN_LEAVE`] server's files: the script, its commits, the [`SHIPMENTS`]
/// scenario and the recording.
struct Leaving {
    server: PathBuf,
    commits: PathBuf,
    faults: PathBuf,
    incident: PathBuf,
}

impl Leaving {
    /// The files named by `tag`, with no commits yet.
    fn new(tag: &str) -> Leaving {
        let server = write(&format!("{tag}.py"), COMMIT_THEN_LEAVE);
        let commits = scratch(&format!("{tag}-commits.txt"));
        let _ = std::fs::remove_file(&commits);
        let faults = write(&format!("{tag}-shipments.json"), SHIPMENTS);
        let incident = scratch(&format!("{tag}.json"));
        Leaving {
            server,
            commits,
            faults,
            incident,
        }
    }

    /// A session recording with `args` whose server commits and then leaves as `mode` says,
    /// after the handshake and a `create_shipment` of order A1.
    fn session(&self, args: &[&str], mode: &str) -> Session {
        let server = ["python3", text(&self.server), mode, text(&self.commits)];
        let mut s = Session::started(args, &server, &[]);
        s.send(&call("2", "create_shipment", r#"{"order_id":"A1"}"#));
        s
    }
}

#[test]
fn a_server_that_exits_mid_call_leaves_it_unknown_and_a_retry_a_possible_duplicate() {
    let files = Leaving::new("leaver");
    let (commits, incident) = (&files.commits, &files.incident);
    let args = appending(&files.faults, incident);
    // A server-per-call client: the server commits, then exits before it answers.
    let mut s = files.session(&args, "exit");
    assert_holds(&s.answer(), "exited");
    s.wait(Duration::from_secs(20));
    // It retries in a new session, whose server answers.
    let mut s = files.session(&args, "exit");
    assert_holds(&s.answer(), "shipment_id");
    s.wait(Duration::from_secs(20));
    let committed = std::fs::read_to_string(commits).expect("commits");
    assert_eq!(committed, "A1\nA1\n", "the server holds two commits");
    let side = sidecar_json(incident);
    let why = unknown_why(&side, 0).unwrap_or_default();
    assert!(why.contains("after the request had reached it"), "{why}");
    assert_eq!(unknown_why(&side, 1), None, "the retry was answered");
    let (code, out, _) = check(incident);
    common::assert_possible_duplicate(code, &out);
}

#[test]
fn a_session_stopped_while_the_server_holds_a_committed_call_is_not_finished() {
    let files = Leaving::new("held");
    let (commits, incident) = (&files.commits, &files.incident);
    let s = files.session(&recorded(&files.faults, incident), "hold");
    let until = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(commits).unwrap_or_default() != "A1\n" {
        assert!(Instant::now() < until, "the server never committed");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The server committed and holds its answer; the proxy is told to stop.
    let pid = nix::unistd::Pid::from_raw(s.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let (code, err) = s.wait(Duration::from_secs(40));
    // (0 when the end of its input, closed as it stops, is read before the signal.)
    assert!(matches!(code, Some(143 | 0)), "{code:?} {err}");
    let side = sidecar_json(incident);
    assert!(
        unknown_why(&side, 0).is_some_and(|w| w.contains("the session ended")),
        "{side:?}"
    );
    let out = checked(incident, 1);
    assert!(
        out.contains(
            "✗ Session finished: the proxy finished the session, with 1 call(s) still with the \
             server (#1 create_shipment): nobody saw their outcome; the server may have \
             committed them"
        ),
        "{out}"
    );
}

#[test]
fn a_server_that_dies_mid_line_never_has_its_half_line_relayed() {
    let files = Leaving::new("half");
    let incident = &files.incident;
    let mut s = files.session(&recorded(&files.faults, incident), "half");
    // The one line the client gets for its call is a whole message: the proxy's error.
    let line = s.read_raw();
    let text_line = String::from_utf8_lossy(&line).into_owned();
    let answer = parse(text_line.trim_end()).unwrap_or_else(|_| panic!("a message: {text_line:?}"));
    assert!(canonical(&answer).contains("exited"), "{text_line}");
    assert!(!text_line.contains("\"res"), "no half line: {text_line}");
    let (_, err) = s.wait(Duration::from_secs(20));
    assert!(err.contains("was cut at byte 40"), "{err}");
    let side = sidecar_json(incident);
    let why = unknown_why(&side, 0).unwrap_or_default();
    assert!(
        why.contains("the server's answer was cut at byte 40"),
        "{side:?}"
    );
    let record = sidecar(incident);
    assert!(
        matches!(record.calls[0].delivered, Delivered::Error(_)),
        "what the client got: {:?}",
        record.calls[0].delivered
    );
    let c = cassette(incident);
    assert_ne!(
        c.report.calls[0].status,
        Status::Ok,
        "not ok: nobody saw it"
    );
}

#[test]
fn a_call_the_client_cancelled_is_answered_by_the_replay_only_once_cancelled_again() {
    // Recorded: the client cancels write_row before the server's answer, which comes anyway.
    let incident = scratch("cancelled-then-answered.json");
    let db = scratch("cancelled-then-answered.db");
    let mut proxy = common::mcp::spawn_piped(
        Command::new(BIN)
            .args(["mcp", "--record", text(&incident), "--"])
            .args(ODD)
            .env("ODD_DB", &db)
            .env("ODD_DELAY_MS", "600"),
    );
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"timeout"}}"#;
    let write_row = call("3", "write_row", r#"{"row":"r1"}"#);
    {
        let stdin = proxy.stdin.as_mut().expect("stdin");
        for l in [INITIALIZE, INITIALIZED, write_row.as_str()] {
            writeln!(stdin, "{l}").expect("write");
        }
        std::thread::sleep(Duration::from_millis(200));
        writeln!(stdin, "{cancel}").expect("write");
        std::thread::sleep(Duration::from_millis(1500));
    }
    drop(proxy.stdin.take());
    let live = proxy.wait_with_output().expect("ends");
    let live = String::from_utf8_lossy(&live.stdout).into_owned();
    assert!(
        live.contains("R-r1"),
        "the late answer reached the client: {live}"
    );
    let (c, side) = common::mcp::recording(&incident);
    assert_eq!(c.report.calls[0].status, Status::Cancelled);
    assert!(
        matches!(
            side.call(1).map(|r| &r.delivered),
            Some(Delivered::Result(_))
        ),
        "{:?}",
        side.call(1)
    );

    // Replayed to a client that does not cancel: no answer, as there was none before the
    // cancel; to one that cancels: the answer it got then, after its cancel.
    let (code, out, err) = replay_with(&incident, &[INITIALIZE, INITIALIZED, &write_row]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("R-r1"), "answered before any cancel: {out}");
    assert!(err.contains("1 of 1 recorded call(s) matched"), "{err}");
    let (code, out, err) = replay_with(&incident, &[INITIALIZE, &write_row, cancel]);
    assert_eq!(code, 0, "{err}");
    let answer = out
        .lines()
        .filter_map(|l| parse(l).ok())
        .find(|v| v.as_object().and_then(|o| o.get("id")) == Some(&Value::from(3)))
        .unwrap_or_else(|| panic!("no answer to the cancelled call: {out}"));
    assert!(
        canonical(&answer).contains("R-r1"),
        "{}",
        canonical(&answer)
    );
}
