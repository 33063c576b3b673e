//! `toolstorm-tui ask` end to end: the real binary against a scripted model server in this
//! process (a small HTTP/1.1 server on a std `TcpListener` that answers each request with the
//! next scripted answer and keeps every request it got), on both wire formats, over the Orbit
//! world.

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::model::{Api, Scripted, Server, calls, status, text};
use toolstorm::json::{Value, compact, parse};

/// A distinctive key: it must appear in no output and no file.
const KEY: &str = "sk-toolstorm-test-KEY-8f3a91c2";

/// Runs `ask` with a key, no model variable, stdin not a terminal.
fn ask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .arg("ask")
        .args(args)
        .env("OPENAI_API_KEY", KEY)
        .env_remove("TOOLSTORM_MODEL")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run toolstorm-tui")
}

/// Starts `ask QUESTION --record RECORD` against `url` (model `m`, the key set), output
/// dropped.
fn ask_in_background(url: &str, question: &str, record: &std::path::Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args([
            "ask",
            question,
            "--base-url",
            url,
            "--model",
            "m",
            "--record",
        ])
        .arg(record)
        .env("OPENAI_API_KEY", KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ask starts")
}

/// Runs `ask` against `url` with model `m`.
fn ask_to(url: &str, args: &[&str]) -> Output {
    let mut all = vec!["--base-url", url, "--model", "m"];
    all.extend(args);
    ask(&all)
}

fn text_of(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn get<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.as_object()
        .and_then(|o| o.get(key))
        .unwrap_or_else(|| panic!("no {key} in {}", compact(v)))
}

/// `(call_id, tool, kind, attempts, round)` of each call of a `--json` result.
fn call_rows(result: &Value) -> Vec<(String, String, String, i64, i64)> {
    get(result, "calls")
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| {
            (
                get(c, "call_id").as_str().expect("id").to_owned(),
                get(c, "tool").as_str().expect("tool").to_owned(),
                get(c, "kind").as_str().expect("kind").to_owned(),
                get(c, "attempts").as_i64().expect("attempts"),
                get(c, "round").as_i64().expect("round"),
            )
        })
        .collect()
}

/// The Responses `input` items of type `ty` in a request body.
fn input_items(body: &str, ty: &str) -> Vec<Value> {
    let v = parse(body).expect("request JSON");
    get(&v, "input")
        .as_array()
        .expect("input")
        .iter()
        .filter(|i| {
            i.as_object()
                .and_then(|o| o.get("type"))
                .and_then(Value::as_str)
                == Some(ty)
        })
        .cloned()
        .collect()
}

/// The Chat `messages` of a request body.
fn messages(body: &str) -> Vec<Value> {
    let v = parse(body).expect("request JSON");
    get(&v, "messages").as_array().expect("messages").clone()
}

fn str_of(v: &Value, key: &str) -> String {
    get(v, key).as_str().expect("a string").to_owned()
}

/// The outputs fed back in a request body, by call id, in the order sent.
fn outputs_sent(api: Api, body: &str) -> Vec<(String, String)> {
    match api {
        Api::Responses => input_items(body, "function_call_output")
            .iter()
            .map(|i| (str_of(i, "call_id"), str_of(i, "output")))
            .collect(),
        Api::Chat => messages(body)
            .iter()
            .filter(|m| get(m, "role").as_str() == Some("tool"))
            .map(|m| (str_of(m, "tool_call_id"), str_of(m, "content")))
            .collect(),
    }
}

/// The call ids kept in the history of a request body, in order.
fn calls_kept(api: Api, body: &str) -> Vec<String> {
    match api {
        Api::Responses => input_items(body, "function_call")
            .iter()
            .map(|i| str_of(i, "call_id"))
            .collect(),
        Api::Chat => messages(body)
            .iter()
            .filter_map(|m| m.as_object().and_then(|o| o.get("tool_calls")))
            .flat_map(|t| t.as_array().expect("tool_calls").clone())
            .map(|c| str_of(&c, "id"))
            .collect(),
    }
}

const QUESTION: &str =
    "Compare issues #41 and #87 and check what the error-codes doc says about ORB-1101.";
const ANSWER: &str = "#41 is the lease problem (ORB-1101 LeaseExpired); #87 is a docs question.";

fn orbit_script(api: Api) -> Vec<Scripted> {
    vec![
        calls(
            api,
            &[
                ("call_A", "get_issue", r#"{"issue_id": 41}"#),
                ("call_B", "get_issue", r#"{"issue_id": 87}"#),
                (
                    "call_C",
                    "get_doc_section",
                    r#"{"doc_id": "error-codes", "heading": "ORB-1101 LeaseExpired"}"#,
                ),
            ],
        ),
        text(api, ANSWER),
    ]
}

#[test]
fn a_whole_orbit_loop_gives_the_same_calls_and_answer_on_both_apis() {
    let mut results = Vec::new();
    for api in [Api::Responses, Api::Chat] {
        let server = Server::start(orbit_script(api));
        let work = tempfile::tempdir().expect("tmp");
        let out = ask_to(
            &server.url,
            &[
                QUESTION,
                "--api",
                api.name(),
                "--json",
                "--price-in",
                "2",
                "--price-out",
                "8",
                "--work-dir",
                work.path().to_str().expect("utf-8"),
            ],
        );
        let (stdout, stderr) = text_of(&out);
        assert_eq!(out.status.code(), Some(0), "{api:?}: {stdout}\n{stderr}");
        let seen = server.seen();
        assert_eq!(seen.len(), 2, "{api:?}: two rounds");
        let path = match api {
            Api::Responses => "/v1/responses",
            Api::Chat => "/v1/chat/completions",
        };
        for s in &seen {
            assert_eq!(s.path, path);
            assert_eq!(s.authorization.as_deref(), Some(&*format!("Bearer {KEY}")));
        }
        // The first request: the question, the four tools, parallel calls allowed.
        let first = parse(&seen[0].body).expect("json");
        assert_eq!(get(&first, "model").as_str(), Some("m"));
        assert_eq!(get(&first, "tools").as_array().map(Vec::len), Some(4));
        assert_eq!(get(&first, "parallel_tool_calls").as_bool(), Some(true));
        assert!(seen[0].body.contains("ORB-1101."), "the question is sent");
        assert!(seen[0].body.contains("untrusted"), "default instructions");
        // The second: the calls kept in the history, then one output per call id, in order.
        assert_eq!(
            calls_kept(api, &seen[1].body),
            ["call_A", "call_B", "call_C"]
        );
        let outputs = outputs_sent(api, &seen[1].body);
        let ids: Vec<&str> = outputs.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["call_A", "call_B", "call_C"]);
        assert!(
            outputs[0].1.starts_with(r#"{"ok":true"#),
            "{}",
            outputs[0].1
        );
        assert!(outputs[0].1.contains("long GC pause"), "{}", outputs[0].1);
        assert!(outputs[2].1.contains("LeaseExpired"), "{}", outputs[2].1);
        let result = parse(&stdout).expect("--json result");
        assert_eq!(get(&result, "answer").as_str(), Some(ANSWER));
        assert_eq!(get(&result, "rounds").as_i64(), Some(2));
        assert_eq!(get(&result, "stopped").as_bool(), Some(false));
        assert_eq!(
            compact(get(&result, "tokens")),
            r#"{"input":400,"output":60}"#
        );
        // 400 × $2/M + 60 × $8/M.
        let cost = get(&result, "cost").as_number_f64().expect("cost");
        assert!((cost - 0.00128).abs() < 1e-12, "{cost}");
        results.push((call_rows(&result), compact(get(&result, "answer"))));
        assert!(!stdout.contains(KEY) && !stderr.contains(KEY));
    }
    assert_eq!(results[0], results[1], "both APIs give the same records");
    assert_eq!(
        results[0].0,
        [
            ("call_A".into(), "get_issue".into(), "ok".into(), 1, 1),
            ("call_B".into(), "get_issue".into(), "ok".into(), 1, 1),
            ("call_C".into(), "get_doc_section".into(), "ok".into(), 1, 1),
        ]
    );
}

#[test]
fn the_text_output_has_rounds_summary_answer_and_log() {
    let server = Server::start(orbit_script(Api::Responses));
    let out = ask_to(&server.url, &[QUESTION]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("round 1: 3 calls in 1."), "{stdout}");
    assert!(lines[0].ends_with('s'), "{stdout}");
    assert_eq!(
        lines[1],
        "rounds=2  tokens in/out=400/60  cost\u{2248}$0.0000"
    );
    assert_eq!(lines[3], ANSWER);
    assert!(
        lines[5].starts_with("round  call_id") && lines[5].ends_with("attempts"),
        "{stdout}"
    );
    let rows: Vec<&str> = lines[6..9].to_vec();
    for id in ["call_A", "call_B", "call_C"] {
        assert!(
            rows.iter().any(|r| r.contains(id) && r.contains(" ok ")),
            "{id}: {stdout}"
        );
    }
}

#[test]
fn a_429_with_retry_after_is_waited_for() {
    let server = Server::start(vec![
        status(
            429,
            &[("retry-after", "1")],
            r#"{"error":{"message":"slow down"}}"#,
        ),
        text(Api::Chat, "fine"),
    ]);
    let out = ask_to(&server.url, &["hi", "--api", "chat"]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("\nfine\n"), "{stdout}");
    assert!(
        stderr.contains("model attempt 1 failed (HTTP 429); retrying in 1.0s (its Retry-After)"),
        "{stderr}"
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].body, seen[1].body, "the same request again");
    let gap = seen[1].at - seen[0].at;
    assert!(gap >= Duration::from_millis(950), "waited {gap:?}");
}

#[test]
fn a_429_with_retry_after_as_an_http_date_is_waited_for() {
    // Two seconds from now, as a server writes it (whole seconds: the wait is over 1 s, more
    // than the 0.5 s the client waits without a Retry-After).
    let at = std::time::SystemTime::now() + Duration::from_secs(2);
    let date = httpdate::fmt_http_date(at);
    let server = Server::start(vec![
        status(
            429,
            &[("retry-after", &date)],
            r#"{"error":{"message":"slow down"}}"#,
        ),
        text(Api::Chat, "fine"),
    ]);
    let out = ask_to(&server.url, &["hi", "--api", "chat"]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("(its Retry-After)"), "{stderr}");
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    let gap = seen[1].at - seen[0].at;
    assert!(gap >= Duration::from_millis(950), "waited {gap:?}");
}

#[test]
fn a_server_error_on_every_attempt_is_exit_2_naming_url_and_status() {
    let server = Server::start(vec![
        status(500, &[], r#"{"error":"cannot parse the model's output"}"#),
        status(502, &[], "bad gateway"),
        status(503, &[], r#"{"error":"still down"}"#),
        text(Api::Responses, "too late"),
    ]);
    let out = ask_to(&server.url, &["hi"]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert_eq!(server.seen().len(), 3, "one attempt and max_retries=2");
    let url = format!("{}/responses", server.url);
    assert!(
        stderr.contains(&format!(
            "round 1: {url} answered HTTP 503: {{\"error\":\"still down\"}} (after 3 attempts)"
        )),
        "{stderr}"
    );
    // Backoff without Retry-After: 0.5 s, then 1 s.
    assert!(
        stderr.contains("attempt 1 failed (HTTP 500); retrying in 0.5s\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("attempt 2 failed (HTTP 502); retrying in 1.0s\n"),
        "{stderr}"
    );
}

#[test]
fn a_model_that_does_not_answer_in_time_is_retried_then_exit_2() {
    let never = || status(0, &[], "");
    let server = Server::start(vec![never(), never(), never()]);
    let out = ask_to(&server.url, &["hi", "--timeout", "0.3"]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert_eq!(server.seen().len(), 3);
    assert!(
        stderr.contains("attempt 1 failed (no answer within 0.3s); retrying in 0.5s"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "round 1: {}/responses did not answer within 0.3s (after 3 attempts)",
            server.url
        )),
        "{stderr}"
    );
}

#[test]
fn a_refused_connection_is_exit_2_naming_the_url() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port");
    let base = format!("http://127.0.0.1:{port}/v1");
    let out = ask(&["hi", "--base-url", &base, "--model", "m", "--api", "chat"]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("round 1: cannot reach {base}/chat/completions: ")),
        "{stderr}"
    );
    assert!(stderr.contains("(after 3 attempts)"), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
}

#[test]
fn malformed_calls_come_back_to_the_model_as_envelopes() {
    for api in [Api::Responses, Api::Chat] {
        let server = Server::start(vec![
            calls(
                api,
                &[
                    ("c_json", "get_issue", r#"{"issue_id": 41"#),
                    ("c_schema", "get_issue", r#"{"issue": 41}"#),
                    ("c_tool", "delete_repo", r#"{"name": "orbit"}"#),
                ],
            ),
            text(api, "I could not read those."),
        ]);
        let out = ask_to(&server.url, &["hi", "--api", api.name(), "--json"]);
        let (stdout, stderr) = text_of(&out);
        assert_eq!(out.status.code(), Some(0), "{api:?}: {stdout}\n{stderr}");
        let result = parse(&stdout).expect("json");
        let kinds: Vec<String> = call_rows(&result).into_iter().map(|r| r.2).collect();
        assert_eq!(kinds, ["bad_args", "bad_args", "unknown_tool"], "{api:?}");
        let outputs = outputs_sent(api, &server.seen()[1].body);
        assert_eq!(outputs.len(), 3);
        assert_eq!(outputs[0].0, "c_json");
        assert!(
            outputs[0].1.contains(r#""kind":"bad_args""#),
            "{}",
            outputs[0].1
        );
        assert!(outputs[0].1.contains("not valid JSON"), "{}", outputs[0].1);
        assert!(
            outputs[1].1.contains("missing argument"),
            "{}",
            outputs[1].1
        );
        assert_eq!(outputs[2].0, "c_tool");
        assert!(
            outputs[2].1.contains(r#""kind":"unknown_tool""#),
            "{}",
            outputs[2].1
        );
        assert!(
            outputs[2].1.contains("get_issue"),
            "lists the tools: {}",
            outputs[2].1
        );
    }
}

#[test]
fn past_the_round_limit_the_loop_stops_with_exit_1() {
    let again = || {
        calls(
            Api::Responses,
            &[(
                "c1",
                "get_doc_section",
                r#"{"doc_id": "triage", "heading": null}"#,
            )],
        )
    };
    let server = Server::start(vec![again(), again(), again()]);
    let out = ask_to(&server.url, &["hi", "--max-rounds", "2", "--no-parallel"]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(server.seen().len(), 2);
    let first = parse(&server.seen()[0].body).expect("json");
    assert_eq!(get(&first, "parallel_tool_calls").as_bool(), Some(false));
    assert!(stdout.contains("round 1: 1 call in "), "{stdout}");
    assert!(stdout.contains("round 2: 1 call in "), "{stdout}");
    assert!(stdout.contains("rounds=2 "), "{stdout}");
    assert!(
        stdout.contains("\n(stopped at max_rounds without a final answer)\n"),
        "{stdout}"
    );
    let server = Server::start(vec![again()]);
    let json = ask_to(&server.url, &["hi", "--max-rounds", "1", "--json"]);
    assert_eq!(json.status.code(), Some(1));
    let result = parse(&String::from_utf8_lossy(&json.stdout)).expect("json");
    assert_eq!(get(&result, "stopped").as_bool(), Some(true));
    assert!(get(&result, "answer").is_null());
}

#[test]
fn side_effects_are_denied_without_a_terminal_and_run_when_approved() {
    let script = |api| {
        vec![
            calls(
                api,
                &[(
                    "c_label",
                    "add_label",
                    r#"{"issue_id": 41, "label": "severity:S1"}"#,
                )],
            ),
            text(api, "done"),
        ]
    };
    let server = Server::start(script(Api::Responses));
    let work = tempfile::tempdir().expect("tmp");
    let dir = work.path().to_str().expect("utf-8");
    let out = ask_to(&server.url, &["label it", "--work-dir", dir]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "approval: Approve add_label(issue_id=41, label='severity:S1')? [y/N] denied"
        ),
        "{stdout}"
    );
    let outputs = outputs_sent(Api::Responses, &server.seen()[1].body);
    assert!(
        outputs[0].1.contains(r#""kind":"denied""#),
        "{}",
        outputs[0].1
    );
    assert!(outputs[0].1.contains("no terminal"), "{}", outputs[0].1);
    assert!(
        !work.path().join("tracker.jsonl").exists(),
        "nothing committed"
    );

    let server = Server::start(script(Api::Chat));
    let out = ask_to(
        &server.url,
        &[
            "label it",
            "--api",
            "chat",
            "--work-dir",
            dir,
            "--approve",
            "yes",
        ],
    );
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let tracker = std::fs::read_to_string(work.path().join("tracker.jsonl")).expect("tracker");
    assert_eq!(tracker.lines().count(), 1, "{tracker}");
    assert!(tracker.contains("severity:S1"), "{tracker}");
    assert!(stdout.contains("tracker: 1 action in "), "{stdout}");
}

#[test]
fn the_key_is_in_no_output_and_no_file() {
    // A server that echoes what it was sent, the Authorization header included.
    let server = Server::start(vec![status(
        401,
        &[],
        &format!(r#"{{"error":{{"message":"Incorrect API key provided: Bearer {KEY}"}}}}"#),
    )]);
    let work = tempfile::tempdir().expect("tmp");
    let dir = work.path().to_str().expect("utf-8");
    let out = ask_to(&server.url, &["hi", "--work-dir", dir]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("answered HTTP 401"), "{stderr}");
    assert!(stderr.contains("Bearer [REDACTED]"), "{stderr}");
    assert_eq!(server.seen().len(), 1, "a 401 is not retried");
    // And a whole loop that writes the tracker: nothing written holds the key.
    let server = Server::start(vec![
        calls(
            Api::Chat,
            &[("c1", "post_comment", r#"{"issue_id": 41, "body": "hello"}"#)],
        ),
        text(Api::Chat, "posted"),
    ]);
    let record = format!("{dir}/run.json");
    let ok = ask_to(
        &server.url,
        &[
            "hi",
            "--api",
            "chat",
            "--work-dir",
            dir,
            "--approve",
            "yes",
            "--record",
            &record,
            "--json",
        ],
    );
    assert_eq!(ok.status.code(), Some(0));
    let mut outputs = vec![out.stdout, out.stderr, ok.stdout, ok.stderr];
    let mut files = 0;
    for entry in walk(work.path()) {
        outputs.push(std::fs::read(&entry).expect("read"));
        files += 1;
    }
    assert!(
        files >= 3,
        "the database, the tracker and the record at least"
    );
    assert!(work.path().join("run.json").exists());
    for bytes in outputs {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key leaked: {}",
            String::from_utf8_lossy(&bytes)
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn configuration_errors_are_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["ask", "hi", "--base-url", "http://127.0.0.1:9/v1"])
        .env_remove("TOOLSTORM_MODEL")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("give --model NAME or set TOOLSTORM_MODEL")
    );
    let out = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args([
            "ask",
            "hi",
            "--model",
            "m",
            "--api-key-env",
            "TOOLSTORM_NO_SUCH_KEY_VAR",
        ])
        .env_remove("TOOLSTORM_NO_SUCH_KEY_VAR")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("TOOLSTORM_NO_SUCH_KEY_VAR (named by --api-key-env) is not set")
    );
    let out = ask(&["hi", "--model", "m", "--base-url", "ftp://example.com/v1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("ftp://example.com/v1/responses is not a URL"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read_json(path: &std::path::Path) -> Value {
    parse(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

/// The Orbit conversation with a side effect in its second answer (labelling #41).
fn orbit_script_with_a_label(api: Api) -> Vec<Scripted> {
    let mut script = orbit_script(api);
    script.insert(
        1,
        calls(
            api,
            &[(
                "call_L",
                "add_label",
                r#"{"issue_id": 41, "label": "lease"}"#,
            )],
        ),
    );
    script
}

#[test]
fn a_recorded_run_replays_offline_with_the_same_calls_and_answer() {
    for api in [Api::Responses, Api::Chat] {
        let server = Server::start(orbit_script_with_a_label(api));
        let work = tempfile::tempdir().expect("tmp");
        let record = work.path().join("run.json");
        let rec = record.to_str().expect("utf-8");
        let out = ask_to(
            &server.url,
            &[
                QUESTION,
                "--api",
                api.name(),
                "--approve",
                "yes",
                "--record",
                rec,
                "--json",
            ],
        );
        let (stdout, stderr) = text_of(&out);
        assert_eq!(out.status.code(), Some(0), "{api:?}: {stdout}\n{stderr}");
        let live = parse(&stdout).expect("json");
        let file = read_json(&record);
        assert_eq!(get(&file, "toolstorm_ask").as_i64(), Some(1));
        assert_eq!(get(&file, "api").as_str(), Some(api.name()));
        assert_eq!(get(&file, "complete").as_bool(), Some(true));
        assert_eq!(get(&file, "answer").as_str(), Some(ANSWER));
        let rounds = get(&file, "rounds").as_array().expect("rounds");
        assert_eq!(rounds.len(), 3);
        // Each round keeps the request as sent, but of the conversation only what is new.
        let mut sent = parse(&server.seen()[1].body).expect("sent");
        let key = match api {
            Api::Responses => "input",
            Api::Chat => "messages",
        };
        let from = get(&rounds[1], "history_from").as_i64().expect("from") as usize;
        assert_eq!(
            from,
            if api == Api::Chat { 2 } else { 1 },
            "the question (and instructions)"
        );
        if let Some(Value::Array(items)) = sent.as_object_mut().and_then(|o| o.get_mut(key)) {
            items.drain(..from);
        }
        assert_eq!(
            compact(get(&rounds[1], "request")),
            compact(&sent),
            "the request as sent, from the new items on"
        );
        assert!(
            get(&rounds[2], "batch").is_null(),
            "the answer ran no batch"
        );
        let text = std::fs::read_to_string(&record).expect("read");
        assert!(!text.contains(KEY), "the key is not in the record");
        assert!(text.contains(r#""approved": true"#), "{text}");
        // The record opens where an executor run's output opens: inspect, check.
        for (command, want) in [
            ("inspect", "Valid trace v1: 4 calls, 1 effects"),
            ("check", "PASS"),
        ] {
            let out = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
                .args([command, rec])
                .output()
                .expect(command);
            let (said, err) = text_of(&out);
            assert_eq!(out.status.code(), Some(0), "{command}: {said}\n{err}");
            assert!(said.starts_with(want), "{command}: {said}");
            if command == "inspect" {
                assert!(
                    said.contains(
                        "ask record: 3 rounds (calls per round: 3, 1, 0) \u{b7} tokens in/out \
                         500/80 \u{b7} answered"
                    ),
                    "{said}"
                );
            }
        }
        // And where the explorer opens it: each round's batch in the lanes.
        let doc = toolstorm::document::Document::open(&record).expect("the explorer opens it");
        assert_eq!(doc.runs.len(), 1);
        assert_eq!(
            doc.runs[0].batches.len(),
            2,
            "the two rounds that made calls"
        );
        assert_eq!(doc.runs[0].batches[1].lanes[0].call_id, "call_L");

        // Offline: no server, no key, the tools run again in a fresh folder.
        let out = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
            .args(["ask", "--replay", rec, "--json"])
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .output()
            .expect("replay");
        let (stdout, stderr) = text_of(&out);
        assert_eq!(out.status.code(), Some(0), "{api:?}: {stdout}\n{stderr}");
        let replayed = parse(&stdout).expect("json");
        assert_eq!(call_rows(&replayed), call_rows(&live));
        assert_eq!(get(&replayed, "answer").as_str(), Some(ANSWER));
        assert_eq!(
            compact(get(&replayed, "tokens")),
            compact(get(&live, "tokens"))
        );
        assert_eq!(server.seen().len(), 3, "the replay asked no server");
        // Text mode says it matched.
        let out = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
            .args(["ask", "--replay", rec])
            .stdin(Stdio::null())
            .output()
            .expect("replay");
        let (stdout, _) = text_of(&out);
        assert!(
            stdout.contains(&format!("replay: 3 rounds matched {rec}")),
            "{stdout}"
        );
    }
}

#[test]
fn a_denied_side_effect_replays_in_the_words_the_model_read() {
    // Denied by nobody to ask (no terminal) and by --approve deny: the model reads different
    // words, and a replay (with no terminal either) must feed back the same ones.
    for (approve, approver, words) in [
        (None, "no terminal", "no terminal is attached to ask"),
        (Some("deny"), "deny", "the approver said no"),
    ] {
        let server = Server::start(orbit_script_with_a_label(Api::Chat));
        let work = tempfile::tempdir().expect("tmp");
        let record = work.path().join("run.json");
        let rec = record.to_str().expect("utf-8");
        let mut args = vec![QUESTION, "--api", "chat", "--record", rec];
        if let Some(choice) = approve {
            args.extend(["--approve", choice]);
        }
        let out = ask_to(&server.url, &args);
        let (stdout, stderr) = text_of(&out);
        assert_eq!(out.status.code(), Some(0), "{approver}: {stdout}\n{stderr}");
        let fed_back = server.seen()[2].body.clone();
        assert!(fed_back.contains(words), "{approver}: {fed_back}");
        assert_eq!(
            get(&read_json(&record), "approver").as_str(),
            Some(approver)
        );
        let out = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
            .args(["ask", "--replay", rec])
            .stdin(Stdio::null())
            .output()
            .expect("replay");
        let (stdout, stderr) = text_of(&out);
        assert_eq!(out.status.code(), Some(0), "{approver}: {stdout}\n{stderr}");
        assert!(
            stdout.contains(&format!("replay: 3 rounds matched {rec}")),
            "{approver}: {stdout}\n{stderr}"
        );
    }
}

#[test]
fn a_replay_that_differs_names_the_first_difference() {
    let server = Server::start(orbit_script(Api::Chat));
    let work = tempfile::tempdir().expect("tmp");
    let record = work.path().join("run.json");
    let rec = record.to_str().expect("utf-8");
    let out = ask_to(&server.url, &[QUESTION, "--api", "chat", "--record", rec]);
    assert_eq!(out.status.code(), Some(0));
    let out = ask(&["What changed?", "--replay", rec]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "the replay of {rec} diverged: round 1: the request differs from the recording at \
             messages[1].content: recorded \"Compare issues #41"
        )),
        "{stderr}"
    );
    assert!(stderr.contains(r#"now "What changed?""#), "{stderr}");
    // A record cut short: its rounds are served, the next one is not there.
    let mut file = read_json(&record);
    let rounds = file
        .as_object_mut()
        .and_then(|o| o.get_mut("rounds"))
        .and_then(Value::as_array_mut)
        .expect("rounds");
    rounds.pop();
    std::fs::write(&record, compact(&file)).expect("write");
    let out = ask(&["--replay", rec]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("round 1: 3 calls in "), "{stdout}");
    assert!(
        stderr.contains("diverged: round 2: the recording ends after 1 round\n"),
        "{stderr}"
    );
}

#[test]
fn a_record_killed_mid_round_still_opens() {
    let server = Server::start(vec![
        calls(
            Api::Responses,
            &[(
                "c1",
                "get_doc_section",
                r#"{"doc_id": "triage", "heading": null}"#,
            )],
        ),
        status(0, &[], ""),
    ]);
    let work = tempfile::tempdir().expect("tmp");
    let record = work.path().join("run.json");
    let rec = record.to_str().expect("utf-8");
    let mut child = ask_in_background(&server.url, "hi", &record);
    // Wait for the second request (the model now never answers), then kill.
    let start = Instant::now();
    while server.seen().len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no second request"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("kill");
    let _ = child.wait();
    let file = read_json(&record);
    assert_eq!(get(&file, "complete").as_bool(), Some(false));
    assert_eq!(get(&file, "rounds").as_array().map(Vec::len), Some(1));
    assert!(
        !std::fs::read_to_string(&record)
            .expect("read")
            .contains(KEY)
    );
    let inspect = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["inspect", rec])
        .output()
        .expect("inspect");
    let (said, err) = text_of(&inspect);
    assert_eq!(inspect.status.code(), Some(0), "{said}\n{err}");
    assert!(said.starts_with("Valid trace v1: 1 calls"), "{said}");
    assert!(
        said.contains("ask record: 1 round (calls per round: 1) \u{b7} tokens in/out 100/20 \u{b7} not finished"),
        "{said}"
    );
    let out = ask(&["--replay", rec]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("round 2: the recording ends after 1 round"),
        "{stderr}"
    );
}

#[test]
fn a_record_replaces_only_a_record() {
    let work = tempfile::tempdir().expect("tmp");
    let other = work.path().join("notes.json");
    std::fs::write(&other, "{\"mine\": true}").expect("write");
    let server = Server::start(vec![text(Api::Responses, "hi")]);
    let out = ask_to(
        &server.url,
        &["hi", "--record", other.to_str().expect("utf-8")],
    );
    let (_, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("exists and is not an ask record"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&other).expect("read"),
        "{\"mine\": true}"
    );
    assert!(server.seen().is_empty(), "nothing was asked");
}

/// The example MCP shipping server (built by `cargo test`).
fn shipping_server() -> String {
    common::example_server().to_str().expect("utf-8").to_owned()
}

#[test]
fn an_mcp_servers_tools_answer_the_model() {
    let server = Server::start(vec![
        calls(
            Api::Chat,
            &[
                ("c1", "check_inventory", r#"{"sku": "A-1"}"#),
                ("c2", "create_shipment", r#"{"order_id": "7"}"#),
            ],
        ),
        text(Api::Chat, "checked"),
    ]);
    let ship = shipping_server();
    let out = ask_to(
        &server.url,
        &["ship 7", "--api", "chat", "--json", "--mcp", "--", &ship],
    );
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let first = parse(&server.seen()[0].body).expect("json");
    let names: Vec<String> = get(&first, "tools")
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            get(get(t, "function"), "name")
                .as_str()
                .expect("name")
                .to_owned()
        })
        .collect();
    assert_eq!(names, ["check_inventory", "create_shipment"]);
    let kinds: Vec<String> = call_rows(&parse(&stdout).expect("json"))
        .into_iter()
        .map(|r| r.2)
        .collect();
    // The shipment is a side effect (not annotated read-only): denied without a terminal.
    assert_eq!(kinds, ["ok", "denied"]);
    let out = ask_to(&server.url, &["ship 7", "--mcp"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--mcp needs the server's command after `--`")
    );
}

#[test]
fn a_lost_acknowledgement_through_the_proxy_reaches_the_model_and_its_retry_ships_twice() {
    let server = Server::start(vec![
        calls(
            Api::Responses,
            &[("c1", "create_shipment", r#"{"order_id": "7"}"#)],
        ),
        calls(
            Api::Responses,
            &[("c2", "create_shipment", r#"{"order_id": "7"}"#)],
        ),
        text(Api::Responses, "shipped"),
    ]);
    let work = tempfile::tempdir().expect("tmp");
    let record = work.path().join("run.json");
    let rec = record.to_str().expect("utf-8");
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/mcp-lost-ack.json");
    let ship = shipping_server();
    let out = ask_to(
        &server.url,
        &[
            "ship order 7",
            "--scenario",
            scenario,
            "--approve",
            "yes",
            "--record",
            rec,
            "--json",
            "--",
            "env",
            "SHIPPING_EFFECTS_META=1",
            &ship,
        ],
    );
    let (stdout, stderr) = text_of(&out);
    // The model answered, but the scenario's check failed: the order shipped twice.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let result = parse(&stdout).expect("json");
    assert_eq!(get(&result, "answer").as_str(), Some("shipped"));
    assert_eq!(get(&result, "checks_passed").as_bool(), Some(false));
    let failed: Vec<String> = get(&result, "checks")
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| get(c, "passed").as_bool() == Some(false))
        .map(|c| str_of(c, "name"))
        .collect();
    assert_eq!(failed, ["No duplicate side effects"]);
    let rows = call_rows(&result);
    assert_ne!(rows[0].2, "ok", "the lost acknowledgement: {rows:?}");
    assert_eq!(rows[1].2, "ok", "{rows:?}");
    let outputs = outputs_sent(Api::Responses, &server.seen()[1].body);
    assert!(
        outputs[0].1.starts_with(r#"{"ok":false"#),
        "{}",
        outputs[0].1
    );
    let file = read_json(&record);
    assert_eq!(get(&file, "world").as_str(), Some("mcp"));
    let from = get(&file, "tools_from").as_str().expect("tools_from");
    assert!(
        from.contains(" mcp ") && from.contains("mcp-lost-ack.json"),
        "{from}"
    );
    // The proxy's own recording beside the record: the shipment committed twice.
    let proxy = work.path().join("run.mcp.json");
    assert!(proxy.exists(), "the proxy's recording");
    let check = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["check", proxy.to_str().expect("utf-8")])
        .output()
        .expect("check");
    let (said, _) = text_of(&check);
    assert_eq!(check.status.code(), Some(1), "{said}");
    assert!(said.contains("FAIL"), "{said}");
    // `check` of the record itself adds the scenario's checks on that recording: the model saw
    // its first call fail, but the server committed both.
    let check = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["check", rec])
        .output()
        .expect("check");
    let (said, _) = text_of(&check);
    assert_eq!(check.status.code(), Some(1), "{said}");
    let (_, scenario_part) = said
        .split_once("scenario checks on the proxy's recording ")
        .unwrap_or_else(|| panic!("no scenario checks: {said}"));
    assert!(scenario_part.contains("run.mcp.json: FAIL"), "{said}");
    assert!(
        scenario_part
            .contains("✗ No duplicate side effects: 1 duplicate effect(s) across 2 commits"),
        "{said}"
    );
    assert!(scenario_part.contains("✓ Fault exercised"), "{said}");
    // Without the proxy's recording beside it, `check` says only what the record holds.
    let aside = work.path().join("aside.mcp.json");
    std::fs::rename(&proxy, &aside).expect("move");
    let check = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["check", rec])
        .output()
        .expect("check");
    let (said, _) = text_of(&check);
    assert!(!said.contains("scenario checks"), "{said}");
    std::fs::rename(&aside, &proxy).expect("move back");
    // A replay needs the MCP tools again.
    let out = ask(&["--replay", rec]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the record's tools came from mcp"));
}

#[test]
fn a_campaign_runs_ask_as_its_agent_with_the_mcp_config_it_hands_out() {
    let (dir, scenario) = common::lost_ack_workspace("ask");
    // Two runs, each: a shipment, its retry after the lost acknowledgement, an answer.
    let mut script = Vec::new();
    for _ in 0..2 {
        script.push(calls(
            Api::Responses,
            &[("c1", "create_shipment", r#"{"order_id": "7"}"#)],
        ));
        script.push(calls(
            Api::Responses,
            &[("c2", "create_shipment", r#"{"order_id": "7"}"#)],
        ));
        script.push(text(Api::Responses, "shipped"));
    }
    let server = Server::start(script);
    let out = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args([
            "campaign",
            scenario.to_str().expect("utf-8"),
            "--runs",
            "2",
            "--jobs",
            "1",
            "--json",
            "--",
        ])
        .args([
            env!("CARGO_BIN_EXE_toolstorm-tui"),
            "ask",
            "Ship order 7.",
            "--mcp-config",
            "{mcp_config}",
            "--base-url",
            &server.url,
            "--model",
            "m",
            "--approve",
            "yes",
        ])
        .current_dir(&dir)
        .output()
        .expect("campaign");
    let (stdout, stderr) = text_of(&out);
    // Both runs ship twice, so the campaign fails as a test runner does.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(server.seen().len(), 6, "three rounds per run");
    let v = parse(&stdout).expect("json");
    let results = get(&v, "results").as_array().expect("results");
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(get(r, "passed").as_bool(), Some(false), "{}", compact(r));
        assert_eq!(get(r, "duplicates").as_i64(), Some(1), "{}", compact(r));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_mcp_config_names_one_server() {
    let work = tempfile::tempdir().expect("tmp");
    let config = work.path().join("mcp.json");
    std::fs::write(
        &config,
        r#"{"mcpServers": {"a": {"command": "x"}, "b": {"url": "http://127.0.0.1:9/mcp"}}}"#,
    )
    .expect("write");
    let out = ask(&[
        "hi",
        "--model",
        "m",
        "--mcp-config",
        config.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("names 2 servers (a, b); ask uses exactly one"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_changed_tool_output_is_named_at_its_place_in_the_whole_request() {
    let server = Server::start(orbit_script(Api::Responses));
    let work = tempfile::tempdir().expect("tmp");
    let record = work.path().join("run.json");
    let rec = record.to_str().expect("utf-8");
    let out = ask_to(&server.url, &[QUESTION, "--record", rec]);
    assert_eq!(out.status.code(), Some(0));
    // Round 2 repeats the question (history_from 1) and keeps the three calls and their
    // outputs: the first output is item 4 of the whole request.
    let mut file = read_json(&record);
    let round2 = file
        .as_object_mut()
        .and_then(|o| o.get_mut("rounds"))
        .and_then(Value::as_array_mut)
        .and_then(|r| r.get_mut(1))
        .expect("round 2");
    assert_eq!(get(round2, "history_from").as_i64(), Some(1));
    let item = round2
        .as_object_mut()
        .and_then(|o| o.get_mut("request"))
        .and_then(|q| q.as_object_mut())
        .and_then(|q| q.get_mut("input"))
        .and_then(Value::as_array_mut)
        .and_then(|items| items.get_mut(3))
        .and_then(Value::as_object_mut)
        .expect("the first output");
    item.insert("output", "tampered");
    std::fs::write(&record, compact(&file)).expect("write");
    let out = ask(&["--replay", rec]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "diverged: round 2: the request differs from the recording at input[4].output: \
             recorded \"tampered\", now \"{\\\"ok\\\":true"
        ),
        "{stderr}"
    );
}

/// On a terminal (util-linux `script` gives one; its input ends at once, as a Ctrl-D would),
/// the default approver asks: the question is shown with the call and its arguments, after
/// the sentence that says why; the input having ended, the side effect is denied.
#[cfg(target_os = "linux")]
#[test]
fn on_a_terminal_the_approval_is_asked() {
    let server = Server::start(vec![
        calls(
            Api::Responses,
            &[("c1", "add_label", r#"{"issue_id": 41, "label": "lease"}"#)],
        ),
        text(Api::Responses, "not labelled"),
    ]);
    let work = tempfile::tempdir().expect("tmp");
    let log = work.path().join("terminal.log");
    let line = format!(
        "{} ask 'label 41' --model m --base-url {}",
        env!("CARGO_BIN_EXE_toolstorm-tui"),
        server.url
    );
    let status = Command::new("script")
        .args(["-qec", &line])
        .arg(&log)
        .env("TERM", "xterm-256color")
        .env("OPENAI_API_KEY", KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("util-linux `script` runs the command on a pseudo-terminal");
    let shown = std::fs::read_to_string(&log).expect("the terminal's log");
    assert!(status.success(), "{shown}");
    assert!(
        shown.contains("it changes the world its tools act on"),
        "{shown}"
    );
    assert!(
        shown.contains("Approve add_label(issue_id=41, label='lease')? [y/N]"),
        "{shown}"
    );
    let outputs = outputs_sent(Api::Responses, &server.seen()[1].body);
    assert!(
        outputs[0].1.contains(r#""kind":"denied""#),
        "{}",
        outputs[0].1
    );
    assert!(!shown.contains(KEY));
}

#[test]
fn an_mcp_server_reached_by_url_answers_the_model() {
    // Our own proxy listening in front of the example server: a Streamable HTTP MCP server.
    let mut proxy = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(["mcp", "--listen", "127.0.0.1:0", "--", &shipping_server()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the proxy starts");
    let mut first = String::new();
    BufReader::new(proxy.stderr.take().expect("stderr"))
        .read_line(&mut first)
        .expect("the proxy says where it listens");
    let mcp_url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line: {first}"))
        .to_owned();
    // The URL after `--`, and as --mcp's value.
    let after_dashes = ["stock?", "--api", "chat", "--json", "--mcp", "--", &mcp_url];
    let as_value = ["stock?", "--api", "chat", "--json", "--mcp", &mcp_url];
    for args in [&after_dashes[..], &as_value[..]] {
        let server = Server::start(vec![
            calls(Api::Chat, &[("c1", "check_inventory", r#"{"sku": "A-1"}"#)]),
            text(Api::Chat, "in stock"),
        ]);
        let out = ask_to(&server.url, args);
        let (stdout, stderr) = text_of(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}\n{stdout}\n{stderr}");
        let rows = call_rows(&parse(&stdout).expect("json"));
        assert_eq!(rows[0].1, "check_inventory");
        assert_eq!(rows[0].2, "ok", "{stdout}");
    }
    // A value that is not a URL (a command belongs after `--`) is refused by name; so is a
    // server given twice.
    let server = Server::start(Vec::new());
    let out = ask_to(
        &server.url,
        &["stock?", "--mcp", "python3", "--", "server.py"],
    );
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("--mcp takes a server's URL"), "{stderr}");
    let out = ask_to(&server.url, &["stock?", "--mcp", &mcp_url, "--", &mcp_url]);
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("give the server once"), "{stderr}");
    assert!(
        server.seen().is_empty(),
        "no model request for a bad command line"
    );
    let _ = proxy.kill();
    let _ = proxy.wait();
}

#[test]
fn the_explorer_follows_a_record_as_ask_writes_it() {
    use toolstorm::tui::action::Action;
    use toolstorm::tui::app::App;
    let mut slow = calls(
        Api::Responses,
        &[(
            "c2",
            "get_doc_section",
            r#"{"doc_id": "triage", "heading": null}"#,
        )],
    );
    slow.delay = Duration::from_millis(1500);
    let server = Server::start(vec![
        calls(
            Api::Responses,
            &[(
                "c1",
                "get_doc_section",
                r#"{"doc_id": "error-codes", "heading": null}"#,
            )],
        ),
        slow,
        text(Api::Responses, "read both"),
    ]);
    let work = tempfile::tempdir().expect("tmp");
    let record = work.path().join("run.json");
    let mut child = ask_in_background(&server.url, "read the docs", &record);
    // Once the first round is on file, the explorer opens it: one batch, one call.
    let start = Instant::now();
    while std::fs::read_to_string(&record)
        .ok()
        .and_then(|t| parse(&t).ok())
        .and_then(|v| {
            v.as_object()
                .and_then(|o| o.get("rounds"))
                .and_then(Value::as_array)
                .map(Vec::len)
        })
        .unwrap_or(0)
        < 1
    {
        assert!(start.elapsed() < Duration::from_secs(20), "no first round");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut app = App::new(toolstorm::document::Document::open(&record).expect("opens mid-run"));
    assert_eq!(app.doc.runs[0].batches.len(), 1);
    assert_eq!(app.doc.runs[0].timeline.report().calls.len(), 1);
    assert!(child.wait().expect("ask ends").success());
    // The file changed: the explorer reloads it, with the second round's batch and call.
    toolstorm::tui::runtime::dispatch(&mut app, Action::FileChanged);
    assert_eq!(app.doc.runs[0].batches.len(), 2, "{}", app.status);
    assert_eq!(app.doc.runs[0].timeline.report().calls.len(), 2);
}

#[test]
fn the_model_is_reached_through_the_http_proxy_the_environment_names() {
    // The scripted server stands in for a company's forwarding proxy: it is asked for the
    // model's absolute URL. The model's host does not resolve, so only the proxy reaches it.
    let proxy = Server::start(vec![text(Api::Chat, "through the proxy")]);
    let proxy_url = proxy.url.trim_end_matches("/v1").to_owned();
    let run = |http_proxy: &str, no_proxy: &str| {
        Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
            .args(["ask", "hi", "--api", "chat", "--model", "m"])
            .args(["--base-url", "http://model.invalid/v1"])
            .env("HTTP_PROXY", http_proxy)
            .env("NO_PROXY", no_proxy)
            .env_remove("http_proxy")
            .env_remove("no_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .env_remove("REQUEST_METHOD")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .output()
            .expect("run")
    };
    let out = run(&proxy_url, "");
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("through the proxy"), "{stdout}");
    let seen = proxy.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "http://model.invalid/v1/chat/completions");
    // Listed in NO_PROXY: straight to a host that does not resolve, exit 2 naming the URL.
    let out = run(&proxy_url, "model.invalid");
    let (stdout, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("cannot reach http://model.invalid/v1/chat/completions"),
        "{stderr}"
    );
    assert_eq!(proxy.seen().len(), 1, "the proxy was not asked");
    // A proxy of a kind we do not speak is refused by name, not bypassed.
    let out = run("socks5://127.0.0.1:1", "");
    let (_, stderr) = text_of(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("through the environment's HTTP proxy")
            && stderr.contains("only http:// proxies are supported"),
        "{stderr}"
    );
}
