//! Every subcommand of the real binary under a pseudo-terminal (stdout and stderr a tty, as
//! when a person types it), required to finish with its exit code. In-process tests with
//! buffers cannot see a command that hangs on a terminal: `sweep` once did (the progress
//! writer waited for a stderr lock `main` held for the whole run).
//!
//! Uses util-linux `script` to provide the terminal.
#![cfg(target_os = "linux")]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn repo(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .display()
        .to_string()
}

fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// Runs the binary with `args` on a fresh pseudo-terminal; returns its exit code and what the
/// terminal showed. Fails the test if it has not finished within `limit`.
fn on_a_terminal(args: &[&str], limit: Duration) -> (i32, String) {
    let bin = env!("CARGO_BIN_EXE_toolstorm-tui");
    let line: Vec<String> = std::iter::once(bin)
        .chain(args.iter().copied())
        .map(quote)
        .collect();
    let log = std::env::temp_dir().join(format!(
        "toolstorm-pty-{}-{}.log",
        std::process::id(),
        args.join("_")
            .replace(['/', ' '], "_")
            .chars()
            .take(60)
            .collect::<String>()
    ));
    let mut child = Command::new("script")
        .args(["-qec", &line.join(" ")])
        .arg(&log)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("TERM", "xterm-256color")
        .env("COLUMNS", "100")
        .env("LINES", "30")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("util-linux `script` runs the command on a pseudo-terminal");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let shown = std::fs::read_to_string(&log).unwrap_or_default();
            panic!(
                "`toolstorm-tui {}` hung on a terminal: {shown}",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let shown = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    (status.code().unwrap_or(-1), shown)
}

#[test]
fn every_subcommand_finishes_on_a_terminal() {
    let incident = repo("cassettes/incident.json");
    let comparison = repo("cassettes/lost-ack-comparison.json");
    let scenario = repo("scenarios/lost_ack.json");
    let orbit = repo("scenarios/orbit-parallel.json");
    let mcp = repo("cassettes/mcp-incident.json");
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["--help"], 0, "Usage"),
        (vec!["--version"], 0, "toolstorm-tui"),
        (vec!["demo"], 0, "Lost acknowledgement"),
        (vec!["scenarios"], 0, "lost_ack"),
        (vec!["inspect", &incident], 0, "Valid trace v1"),
        (
            vec!["inspect", &comparison],
            0,
            "run 2: retry (Unchecked retries)",
        ),
        (vec!["check", &incident], 1, "FAIL"),
        (
            vec!["check", &comparison],
            1,
            "lab contract recorded in the file",
        ),
        (vec!["replay", &incident, "--policy", "retry"], 0, "MATCH"),
        (vec!["replay", &incident, "--policy", "resilient"], 1, ""),
        (vec!["run", &scenario], 0, "Unchecked retries (retry)"),
        (vec!["run", &orbit], 0, "batch 1"),
        (vec!["tools"], 0, "get_issue"),
        (vec!["sweep"], 0, "runs"),
        (vec!["sweep", "--jsonl", "--seeds", "1"], 0, "digest"),
        (
            vec![
                "decide", "--seed", "7", "--rule", "r", "--tool", "t", "--key", "#1",
            ],
            0,
            "",
        ),
        (vec!["canonical", &incident], 0, ""),
        // Reading standard input from the terminal: end of input ends it.
        (vec!["canonical"], 2, ""),
        (vec!["mcp"], 2, "--"),
        // No client on the terminal: nothing asked for, strict replay fails and says what.
        (vec!["mcp", "--replay", &mcp], 1, "never asked for"),
        // No model there: its retries, then the URL named.
        (
            vec![
                "ask",
                "hi",
                "--model",
                "m",
                "--base-url",
                "http://127.0.0.1:9/v1",
            ],
            2,
            "cannot reach http://127.0.0.1:9/v1/responses",
        ),
        (
            vec!["inspec", &incident],
            2,
            "did you mean the command `inspect`",
        ),
        (vec!["no-such-file.json"], 2, "no-such-file.json"),
    ];
    let mut failures = Vec::new();
    for (args, code, wanted) in &cases {
        let (got, shown) = on_a_terminal(args, Duration::from_secs(60));
        if got != *code || !shown.contains(wanted) {
            failures.push(format!(
                "`{}`: exit {got} (wanted {code}), wanted {wanted:?} in:\n{shown}",
                args.join(" ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn sweep_shows_progress_on_a_terminal_only() {
    // On a terminal the progress bar is drawn on stderr and cleared; piped, stderr is empty.
    let (code, shown) = on_a_terminal(
        &["sweep", "--seed-range", "0..299"],
        Duration::from_secs(120),
    );
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("/5400 runs ·"), "the bar was drawn: {shown}");
    let out = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["sweep", "--seeds", "20"])
        .output()
        .expect("runs");
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `check` on a pseudo-terminal, with `NO_COLOR` set or not: what the terminal got.
fn check_on_a_terminal(no_color: bool) -> String {
    on_a_terminal_coloured(&["check", "cassettes/incident.json"], no_color, 1)
}

/// `toolstorm-tui ARGS` on a pseudo-terminal (from the repository), `NO_COLOR` set or not,
/// exiting `code`: what the terminal got.
fn on_a_terminal_coloured(args: &[&str], no_color: bool, code: i32) -> String {
    let bin = env!("CARGO_BIN_EXE_toolstorm-tui");
    let log = std::env::temp_dir().join(format!(
        "toolstorm-pty-colour-{}-{no_color}-{}.log",
        std::process::id(),
        args.join("-").replace('/', "_")
    ));
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &format!("{bin} {}", args.join(" "))])
        .arg(&log)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    let status = cmd.status().expect("script runs");
    assert_eq!(status.code(), Some(code));
    let shown = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    shown
}

#[test]
fn verdicts_are_coloured_on_a_terminal_only() {
    let shown = check_on_a_terminal(false);
    assert!(shown.contains("\x1b[31mFAIL\x1b[0m"), "{shown:?}");
    assert!(shown.contains("\x1b[32m✓ Fault exercised"), "{shown:?}");
    let plain = check_on_a_terminal(true);
    assert!(
        !plain.contains('\x1b') && plain.contains("FAIL"),
        "NO_COLOR: {plain:?}"
    );
    let piped = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["check", "cassettes/incident.json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("NO_COLOR")
        .output()
        .expect("runs");
    assert!(!piped.stdout.contains(&0x1b), "piped output stays plain");
}

#[test]
fn a_campaigns_table_is_coloured_by_each_runs_result() {
    // (Exit 1: runs of the bundled campaign failed.)
    let shown = on_a_terminal_coloured(&["campaign", "cassettes/lost-ack-campaign.json"], false, 1);
    assert!(shown.contains("FAIL\x1b[0m"), "{shown:?}");
    assert!(shown.contains("PASS\x1b[0m"), "{shown:?}");
    let plain = on_a_terminal_coloured(&["campaign", "cassettes/lost-ack-campaign.json"], true, 1);
    assert!(
        !plain.contains('\x1b') && plain.contains("FAIL"),
        "NO_COLOR: {plain:?}"
    );
}

#[test]
fn replay_and_executor_runs_are_coloured_on_a_terminal_only() {
    let args = ["replay", "cassettes/incident.json", "--policy", "retry"];
    let shown = on_a_terminal_coloured(&args, false, 0);
    assert!(shown.contains("\x1b[32mMATCH "), "{shown:?}");
    let args = ["replay", "cassettes/incident.json", "--policy", "resilient"];
    let shown = on_a_terminal_coloured(&args, false, 1);
    assert!(shown.contains("\x1b[31mDIVERGED"), "{shown:?}");
    let args = ["run", "scenarios/orbit-parallel.json"];
    let shown = on_a_terminal_coloured(&args, false, 0);
    // A call answered ok is green, one that failed (a timeout here) red.
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("\x1b[32m  call_") && l.contains(" ok ")),
        "{shown:?}"
    );
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("\x1b[31m  call_") && l.contains("timeout")),
        "{shown:?}"
    );
    let plain = on_a_terminal_coloured(&args, true, 0);
    assert!(
        !plain.contains('\x1b') && plain.contains("timeout"),
        "NO_COLOR: {plain:?}"
    );
}

#[test]
fn a_person_is_told_what_asks_before_the_first_approval_and_ctrl_d_denies_the_rest() {
    // The bundled injection scenario with a person as its approver.
    let text = std::fs::read_to_string(repo("scenarios/orbit-injection.json")).expect("scenario");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    v["approver"] = "interactive".into();
    let path = std::env::temp_dir().join(format!(
        "toolstorm-pty-{}-interactive.json",
        std::process::id()
    ));
    std::fs::write(&path, v.to_string()).expect("write");
    // The terminal's input ends at once (as Ctrl-D): the first question is denied, and the
    // later calls are denied without asking.
    let (code, shown) = on_a_terminal(
        &["run", &path.display().to_string()],
        Duration::from_secs(60),
    );
    let _ = std::fs::remove_file(&path);
    assert_eq!(code, 0, "{shown}");
    let context = shown
        .find("a side-effecting call waits for your approval")
        .expect("what asks is said");
    let first = shown.find("Approve ").expect("a question");
    assert!(context < first, "the context comes first: {shown}");
    let asked = shown
        .lines()
        .filter(|l| l.starts_with("Approve ") && l.contains("? [y/N]"))
        .count();
    assert_eq!(asked, 1, "asked once: {shown}");
    assert_eq!(shown.matches("(no answer, denied)").count(), 2, "{shown}");
    assert_eq!(
        shown.lines().filter(|l| l.contains(" denied ")).count(),
        2,
        "both side-effecting calls denied: {shown}"
    );
}

#[test]
fn ask_tells_a_person_what_asks_before_the_approval_and_the_model_reads_the_denial() {
    use common::model::{Api, Server, calls, text};
    // The model wants a label on #41; the person's terminal input ends at once (as Ctrl-D).
    let server = Server::start(vec![
        calls(
            Api::Chat,
            &[("c1", "add_label", r#"{"issue_id": 41, "label": "lease"}"#)],
        ),
        text(Api::Chat, "I could not label it."),
    ]);
    let (code, shown) = on_a_terminal(
        &[
            "ask",
            "Label #41.",
            "--api",
            "chat",
            "--model",
            "m",
            "--base-url",
            &server.url,
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "the model answered: {shown}");
    said_in_order(
        &shown,
        "The model asks for a tool call with a side effect",
        "Approve add_label(issue_id=41, label='lease')? [y/N]",
    );
    assert!(shown.contains("I could not label it."), "{shown}");
    // The model read why: nobody answered.
    let fed_back = &server.seen()[1].body;
    assert!(fed_back.contains("denied"), "{fed_back}");
}

#[test]
fn replaying_a_records_approvals_on_a_server_asks_first_and_an_ended_input_refuses() {
    // The bundled lost-ack record approved every side effect; on a terminal the person is
    // asked before anything starts, and input that ends (Ctrl-D) is a no.
    let server = common::example_server();
    let server = server.to_str().expect("utf-8");
    let (code, shown) = on_a_terminal(
        &[
            "ask",
            "--replay",
            "cassettes/ask-mcp-lost-ack-qwen.json",
            "--mcp",
            "--",
            server,
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, 2, "{shown}");
    said_in_order(
        &shown,
        "approves every side effect",
        "Replay them there? [y/N]",
    );
    assert!(
        shown.contains("not replayed: give --approve yes"),
        "{shown}"
    );
    assert!(!shown.contains("round 1:"), "nothing ran: {shown}");
}

/// `shown` says `first`, and `then` after it.
fn said_in_order(shown: &str, first: &str, then: &str) {
    let a = shown
        .find(first)
        .unwrap_or_else(|| panic!("{first:?} is not said: {shown}"));
    let b = shown
        .find(then)
        .unwrap_or_else(|| panic!("{then:?} is not said: {shown}"));
    assert!(a < b, "{first:?} comes before {then:?}: {shown}");
}

#[test]
fn help_on_a_terminal_is_wrapped_at_its_width_between_words() {
    // A 60-column terminal: clap fits the help to it, so the terminal never cuts a word.
    let bin = env!("CARGO_BIN_EXE_toolstorm-tui");
    let log = std::env::temp_dir().join(format!("toolstorm-pty-help-{}.log", std::process::id()));
    let status = Command::new("script")
        .args([
            "-qec",
            &format!("stty cols 60 rows 40; {} mcp --help", quote(bin)),
        ])
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("util-linux `script` runs the command on a pseudo-terminal");
    assert!(status.success());
    let shown = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    // What `script` adds to its log (the lines saying it started and finished) aside.
    let lines: Vec<&str> = shown
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.starts_with("Script "))
        .collect();
    assert!(lines.len() > 20, "{shown}");
    for l in &lines {
        assert!(
            l.chars().count() <= 60,
            "{} columns: {l:?}",
            l.chars().count()
        );
    }
    // The first sentence goes on on the next line with a whole word.
    assert!(
        lines
            .iter()
            .any(|l| l.trim() == "record, or replay a recording"),
        "{shown}"
    );
    // Piped, it is as written: one line however long.
    let piped = Command::new(bin)
        .args(["mcp", "--help"])
        .output()
        .expect("runs");
    let piped = String::from_utf8_lossy(&piped.stdout);
    assert!(
        piped
            .lines()
            .next()
            .is_some_and(|l| l.ends_with("or replay a recording")),
        "{piped}"
    );
    // Both commands that take a server say it can be a URL.
    for command in ["mcp", "run"] {
        let help = Command::new(bin)
            .args([command, "--help"])
            .output()
            .expect("runs");
        let help = String::from_utf8_lossy(&help.stdout);
        assert!(
            help.contains("or its URL") && help.contains("`https://`"),
            "{command}: {help}"
        );
    }
}
