//! The recording's promise under random sessions: a real proxy (the binary) in front of a
//! server that logs every commit (`tests/fixtures/mcp/odd_server.py`), driven by a random
//! client — calls one at a time or pipelined, reads, rows repeated so that commits repeat —
//! ending by its own close, or by a SIGKILL of the proxy or of the server at a random point,
//! with the journal's writes failing past a random size (`ulimit -f`) or not; a server that
//! may leave on a random write after committing it, without answering or half-way through its
//! answer's line (its stream cut); and a client that may start again (`--append`) and retry
//! every step, as a server-per-call client does. After each:
//!
//! - every answer the client received is in the recording (except the proxy's own refusals,
//!   which the recording counts, and answers it withheld, whose calls stay in flight);
//! - `check` never passes a session whose server committed a row twice (a commit nobody saw
//!   the outcome of is a possible one), never reports a duplicate the server did not commit,
//!   and never fails to read the recording;
//! - the client never receives a line that is no message (a half line);
//! - a proxy killed while it ran never reads as finished.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use toolstorm::document::Document;
use toolstorm::json::{Value, parse};

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

/// One step of the client.
#[derive(Clone, Debug)]
enum Step {
    /// A `write_row` of row `r-N`, its answer awaited.
    Write(u8),
    /// Two `write_row`s sent together, then both answers awaited.
    Pipelined(u8, u8),
    /// A `read_rows` (commits nothing).
    Read,
}

/// How the session ends.
#[derive(Clone, Debug)]
enum End {
    /// The client closes its end and waits.
    Close,
    /// SIGKILL of the proxy after step `at`, before (`early`) or after its answers are read.
    KillProxy { at: usize, early: bool },
    /// SIGKILL of the server after step `at`; then the client closes.
    KillServer { at: usize, early: bool },
}

#[derive(Clone, Debug)]
struct Session {
    steps: Vec<Step>,
    end: End,
    /// `ulimit -f` for the proxy, in 512-byte blocks (writes past it fail with EFBIG).
    write_limit: Option<u32>,
    seed: u32,
    delay_ms: u32,
    /// The server leaves on its Nth write, after committing it: half-way through its answer's
    /// line (`true`), or without answering.
    leave: Option<(bool, u8)>,
    /// After the first session ends (closed, or its server gone), the client starts the
    /// proxy again with `--append` and runs every step again, with a server that stays.
    again: bool,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u8..3).prop_map(Step::Write),
        2 => ((0u8..3), (0u8..3)).prop_map(|(a, b)| Step::Pipelined(a, b)),
        1 => Just(Step::Read),
    ]
}

fn session() -> impl Strategy<Value = Session> {
    (
        prop::collection::vec(step(), 1..7),
        0u8..3,
        0usize..7,
        any::<bool>(),
        prop_oneof![3 => Just(None), 1 => (3u32..40).prop_map(Some)],
        0u32..1000,
        prop_oneof![1 => Just(0u32), 2 => Just(150u32)],
        prop_oneof![2 => Just(None), 1 => (any::<bool>(), 1u8..4).prop_map(Some)],
        any::<bool>(),
    )
        .prop_map(
            |(steps, how, at, early, write_limit, seed, delay_ms, leave, again)| {
                let at = at.min(steps.len() - 1);
                let end = match how {
                    0 => End::Close,
                    1 => End::KillProxy { at, early },
                    _ => End::KillServer { at, early },
                };
                // A proxy killed leaves its recording to the next one: not this property's.
                // Nor is a server that leaves beside it: the proxy then ends on its own, and
                // a kill racing its end cannot tell whether it was still running.
                let killed = matches!(end, End::KillProxy { .. });
                let again = again && !killed;
                let leave = leave.filter(|_| !killed);
                Session {
                    steps,
                    end,
                    write_limit,
                    seed,
                    delay_ms,
                    leave,
                    again,
                }
            },
        )
}

/// The proxy under test and the lines it writes, read on a thread of their own.
struct Proxy {
    child: Child,
    lines: Receiver<String>,
    /// Answers received, by JSON-RPC id.
    answers: BTreeMap<i64, String>,
    /// Lines received that are no JSON message.
    broken: Vec<String>,
}

impl Proxy {
    fn send(&mut self, line: &str) {
        if let Some(stdin) = self.child.stdin.as_mut() {
            let _ = stdin
                .write_all(format!("{line}\n").as_bytes())
                .and_then(|()| stdin.flush());
        }
    }

    /// Reads answers until every id in `ids` has one, or `limit` passes, or the proxy closes.
    fn await_ids(&mut self, ids: &[i64], limit: Duration) {
        let until = Instant::now() + limit;
        while ids.iter().any(|i| !self.answers.contains_key(i)) {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let Ok(v) = parse(line.trim_end()) else {
                        self.broken.push(line);
                        continue;
                    };
                    if let Some(id) = v.as_object().and_then(|o| o.get("id")?.as_i64()) {
                        self.answers.insert(id, line);
                    }
                }
                Err(_) => return,
            }
        }
    }

    fn close_and_wait(&mut self, limit: Duration) -> bool {
        drop(self.child.stdin.take());
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        false
    }
}

fn call(id: i64, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
    )
}

fn kill_server(marker: &str) {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return;
    };
    for e in dir.flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmd).contains(marker)
            && let Some(pid) = e.file_name().to_str()
        {
            let _ = Command::new("kill").args(["-9", pid]).status();
        }
    }
}

/// What one session leaves: for the assertions.
struct Outcome {
    incident: PathBuf,
    answers: BTreeMap<i64, String>,
    /// The server's commits: the row of each, in order.
    commits: Vec<String>,
    /// The proxy was SIGKILLed while it still ran.
    killed_running: bool,
    /// Lines the client received that are no message.
    broken: Vec<String>,
}

/// Where one case's files are.
struct Files {
    scenario: PathBuf,
    incident: PathBuf,
    db: PathBuf,
    marker: String,
}

/// Starts the proxy (recording with `--append`) in front of the odd server, which leaves as
/// `leave` says (`ODD_LEAVE`), and has it initialized.
fn start(s: &Session, f: &Files, leave: Option<(bool, u8)>) -> Proxy {
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/odd_server.py");
    let limit = s
        .write_limit
        .map_or_else(String::new, |n| format!("ulimit -f {n}; "));
    let leave = leave.map_or_else(String::new, |(half, at)| {
        format!("{}:{at}", if half { "half" } else { "exit" })
    });
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("trap '' XFSZ; {limit}exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(["mcp", path(&f.scenario), "--record", path(&f.incident)])
        .args(["--append", "--"])
        .args(["python3", path(&server), &f.marker])
        .env("ODD_DB", &f.db)
        .env("ODD_DELAY_MS", s.delay_ms.to_string())
        .env("ODD_LEAVE", leave)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the proxy");
    let out = child.stdout.take().expect("stdout");
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut p = Proxy {
        child,
        lines,
        answers: BTreeMap::new(),
        broken: Vec::new(),
    };
    p.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"prop","version":"1"}}}"#);
    p.await_ids(&[0], Duration::from_secs(10));
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    p
}

/// Runs the steps through `p`, request ids from `next` on, ending as `end` says; whether the
/// proxy was killed while it ran.
fn drive(p: &mut Proxy, s: &Session, f: &Files, next: &mut i64, end: &End) -> bool {
    let mut killed_running = false;
    let wait = Duration::from_secs(5);
    for (i, st) in s.steps.iter().enumerate() {
        let ids: Vec<i64> = match st {
            Step::Write(r) => vec![*r as i64],
            Step::Pipelined(a, b) => vec![*a as i64, *b as i64],
            Step::Read => vec![-1],
        }
        .into_iter()
        .map(|row| {
            let id = *next;
            *next += 1;
            if row < 0 {
                p.send(&call(id, "read_rows", "{}"));
            } else {
                p.send(&call(id, "write_row", &format!(r#"{{"row":"r-{row}"}}"#)));
            }
            id
        })
        .collect();
        let kill_here = match end {
            End::KillProxy { at, early } | End::KillServer { at, early } if *at == i => {
                Some(*early)
            }
            _ => None,
        };
        if kill_here != Some(true) {
            p.await_ids(&ids, wait);
        }
        if kill_here.is_some() {
            match end {
                End::KillProxy { .. } => {
                    killed_running = matches!(p.child.try_wait(), Ok(None));
                    let _ = p.child.kill();
                    let _ = p.child.wait();
                    // What was on its way out reaches the client still.
                    p.await_ids(&ids, Duration::from_millis(200));
                }
                _ => {
                    kill_server(&f.marker);
                    p.await_ids(&ids, wait);
                }
            }
            break;
        }
    }
    if !killed_running {
        p.close_and_wait(Duration::from_secs(20));
    }
    kill_server(&f.marker);
    killed_running
}

fn run(s: &Session, case: usize) -> Outcome {
    let dir =
        std::env::temp_dir().join(format!("toolstorm-property-{}-{case}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let f = Files {
        scenario: dir.join("faults.json"),
        incident: dir.join("incident.json"),
        db: dir.join("commits.db"),
        marker: format!("tsprop-{}-{case}", std::process::id()),
    };
    std::fs::write(
        &f.scenario,
        format!(
            r#"{{"schema_version": 1, "world": "mcp", "name": "prop", "title": "Property", "seed": {},
              "rules": [{{"name": "lost", "tool": "write_row", "kind": "response_lost", "probability": 0.5}}],
              "effects": [{{"tool": "write_row", "effect": "row", "key": "row"}}]}}"#,
            s.seed
        ),
    )
    .expect("scenario");
    let mut next = 1i64;
    let mut p = start(s, &f, s.leave);
    let killed_running = drive(&mut p, s, &f, &mut next, &s.end);
    let (mut answers, mut broken) = (p.answers, p.broken);
    if s.again {
        let mut p = start(s, &f, None);
        drive(&mut p, s, &f, &mut next, &End::Close);
        answers.extend(p.answers.into_iter().filter(|(id, _)| *id > 0));
        broken.extend(p.broken);
    }
    let commits = std::fs::read_to_string(&f.db)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            parse(l)
                .ok()?
                .as_object()?
                .get("row")?
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    Outcome {
        incident: f.incident,
        answers,
        commits,
        killed_running,
        broken,
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Checks the promise on one session's outcome; the reason when it does not hold.
fn holds(o: &Outcome) -> Result<(), String> {
    if let Some(line) = o.broken.first() {
        return Err(format!(
            "the client received a line that is no message: {line:?}"
        ));
    }
    let calls: BTreeMap<i64, &String> = o
        .answers
        .iter()
        .filter(|(id, _)| **id > 0)
        .map(|(k, v)| (*k, v))
        .collect();
    if !o.incident.exists() {
        // The proxy could not start its recording (the write limit is below its first
        // lines): then it relays nothing.
        return if calls.is_empty() && o.commits.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "no recording, yet {} answers and {} commits",
                calls.len(),
                o.commits.len()
            ))
        };
    }
    let check = Command::new(BIN)
        .args(["check", "--json", path(&o.incident)])
        .output()
        .map_err(|e| e.to_string())?;
    let code = check.status.code();
    let stdout = String::from_utf8_lossy(&check.stdout);
    if code != Some(0) && code != Some(1) {
        return Err(format!(
            "check exited {code:?}: {}",
            String::from_utf8_lossy(&check.stderr)
        ));
    }
    let doc =
        Document::open(&o.incident).map_err(|e| format!("the recording does not open: {e}"))?;
    let mcp = doc.runs[0].mcp.as_deref().ok_or("not an MCP recording")?;
    let recorded: BTreeSet<i64> = mcp
        .calls
        .iter()
        .filter_map(|r| r.request_id.as_i64())
        .collect();
    for (id, line) in &calls {
        let proxys_own =
            line.contains("was not sent to the MCP server") || line.contains("answer was withheld");
        if !proxys_own && !recorded.contains(id) {
            return Err(format!(
                "the answer to request {id} is not in the recording: {line}"
            ));
        }
    }
    let distinct: BTreeSet<&String> = o.commits.iter().collect();
    let server_dups = o.commits.len() - distinct.len();
    if code == Some(0) && server_dups > 0 {
        return Err(format!(
            "check passed, but the server committed {:?}: {stdout}",
            o.commits
        ));
    }
    let report = doc.runs[0].timeline.report();
    if report.duplicate_effects() > 0 && server_dups == 0 {
        return Err(format!(
            "the recording has {} duplicate(s), the server committed {:?}",
            report.duplicate_effects(),
            o.commits
        ));
    }
    if o.killed_running && mcp.finished == Some(true) {
        return Err("a proxy killed while it ran reads as finished".into());
    }
    let v = parse(stdout.trim()).map_err(|e| e.to_string())?;
    let passed = v
        .as_object()
        .and_then(|o| o.get("passed"))
        .and_then(Value::as_bool);
    if passed != Some(code == Some(0)) {
        return Err(format!("check --json and its exit disagree: {stdout}"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]
    #[test]
    fn nothing_a_client_received_is_lost_and_nothing_is_misjudged(s in session()) {
        static CASE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let case = CASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let o = run(&s, case);
        if let Err(why) = holds(&o) {
            prop_assert!(false, "{:?}: {}", s, why);
        }
    }
}
