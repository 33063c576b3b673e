//! The proxy over Streamable HTTP, driven as a user runs it: the release of the real binary,
//! `--listen` in front of the example server (stdio) or of a scripted HTTP server, and a stdio
//! client in front of a scripted HTTP server. The scripted server plays the exchanges real
//! servers produce rarely on demand (messages before the answer on an SSE stream, a stream cut
//! by the network, a session the server ended); the official SDKs' clients and FastMCP are in
//! the interop suite (`tests/interop`, cases `http*` and `conformance`).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

// ----- the proxy -----

/// A running proxy: its child, its URL when it listens, its stderr as it comes.
struct Proxy {
    child: Child,
    url: Option<String>,
    log: Arc<Mutex<String>>,
}

impl Proxy {
    fn start(args: &[&str], env: &[(&str, &str)]) -> Proxy {
        let mut cmd = Command::new(BIN);
        cmd.arg("mcp").args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Proxy::spawn(cmd, args.contains(&"--listen"))
    }

    /// Starts `cmd` (the proxy, or a shell that runs it); `listening` when it listens.
    fn spawn(mut cmd: Command, listening: bool) -> Proxy {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("proxy starts");
        let err = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let log = Arc::clone(&log);
            thread::spawn(move || {
                let mut first = true;
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    if first {
                        let _ = tx.send(line.clone());
                        first = false;
                    }
                    let mut l = log.lock().expect("log");
                    l.push_str(&line);
                    l.push('\n');
                }
            });
        }
        let url = listening.then(|| {
            let line = rx
                .recv_timeout(Duration::from_secs(20))
                .expect("the proxy says where it listens");
            line.strip_prefix("listening on ")
                .unwrap_or_else(|| panic!("first stderr line: {line}"))
                .to_owned()
        });
        Proxy { child, url, log }
    }

    fn url(&self) -> &str {
        self.url.as_deref().expect("listening")
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Ends it as a user would (SIGTERM) and waits.
    fn stop(mut self) -> (i32, String) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        let status = wait_for(&mut self.child, Duration::from_secs(15));
        thread::sleep(Duration::from_millis(50));
        (status, self.log.lock().expect("log").clone())
    }
}

/// A test that fails half-way leaves no proxy running (its watchdog then stops the server).
impl Drop for Proxy {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn wait_for(child: &mut Child, limit: Duration) -> i32 {
    let until = Instant::now() + limit;
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return s.code().unwrap_or(-1);
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("the proxy did not exit");
        }
        thread::sleep(Duration::from_millis(20));
    }
}

// ----- a small HTTP client: one request per connection, read as it comes -----

struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }

    /// The JSON messages of an event stream (or the JSON body).
    fn messages(&self) -> Vec<serde_json::Value> {
        if self
            .header("content-type")
            .is_some_and(|c| c.contains("json"))
        {
            return vec![serde_json::from_str(&self.body).expect("a JSON body")];
        }
        self.body
            .split("\n\n")
            .filter_map(|ev| {
                let data: Vec<&str> = ev
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                let data = data.join("\n");
                (!data.trim().is_empty())
                    .then(|| serde_json::from_str(&data).expect("an event's JSON"))
            })
            .collect()
    }
}

fn host_port(url: &str) -> String {
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .expect("host")
        .to_owned()
}

/// Sends a request and reads its whole answer (chunked or until the connection ends).
fn request(url: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut s = open(url, method, headers, body);
    read_answer(&mut s)
}

fn open(url: &str, method: &str, headers: &[(&str, &str)], body: &str) -> TcpStream {
    let hp = host_port(url);
    let mut s = TcpStream::connect(&hp).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut text = format!("{method} /mcp HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        text.push_str(&format!("Host: {hp}\r\n"));
    }
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    if method == "POST" {
        text.push_str("Content-Type: application/json\r\n");
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("accept"))
        {
            text.push_str("Accept: application/json, text/event-stream\r\n");
        }
    }
    text.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(text.as_bytes()).expect("send");
    s
}

fn read_answer(s: &mut TcpStream) -> Answer {
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Answer {
        status,
        head: head.to_owned(),
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"http-test","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn call(id: u64, order: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"create_shipment","arguments":{{"order_id":"{order}"}},"_meta":{{"progressToken":"p{id}"}}}}}}"#
    )
}

/// Initializes a session with a listening proxy; its session id.
fn initialize(url: &str, extra: &[(&str, &str)]) -> String {
    let a = request(url, "POST", extra, INIT);
    assert_eq!(a.status, 200, "initialize: {} {}", a.head, a.body);
    let session = a.header("mcp-session-id").expect("a session id");
    let mut h = vec![
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    h.extend_from_slice(extra);
    let b = request(url, "POST", &h, INITIALIZED);
    assert_eq!(b.status, 202, "initialized: {}", b.head);
    session
}

/// A new session's call for `order` (its id 1): the answer.
fn a_session_with_one_call(url: &str, order: &str) -> Answer {
    let session = initialize(url, &[]);
    request(
        url,
        "POST",
        &[("Mcp-Session-Id", &session)],
        &call(1, order),
    )
}

fn scenario(tag: &str, rules: &str, delivery: &str) -> std::path::PathBuf {
    let body = format!(
        r#"{{"schema_version":1,"world":"mcp","name":"http","title":"HTTP faults","code":"T-1","category":"TEST",
  "description":"faults at the HTTP boundary","lesson":"-","seed":1,"max_calls":10000,"probability":null,
  "rules":[{rules}],"delivery":{{{delivery}}},
  "effects":[{{"tool":"create_*","effect":"shipment","key":"order_id","commit_id":"shipment_id"}}],"checks":[]}}"#
    );
    common::scratch_file(tag, "scenario.json", &body)
}

fn check(record: &Path) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["check", &record.display().to_string()])
        .output()
        .expect("check runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn files_of(record: &Path) -> String {
    [
        record.to_path_buf(),
        toolstorm::mcp::session::sidecar_path(record),
        toolstorm::mcp::session::journal_path(record),
        toolstorm::mcp::wirelog::wire_path(record),
    ]
    .iter()
    .filter_map(|p| std::fs::read_to_string(p).ok())
    .collect()
}

/// `mcp --record R --listen 127.0.0.1:0 -- EXAMPLE_SERVER`, the server with `env`: the
/// recording's path (in a scratch folder named by `tag`) and the proxy.
fn listening(tag: &str, name: &str, env: &[(&str, &str)]) -> (std::path::PathBuf, Proxy) {
    let record = common::scratch_recording(tag, name);
    let rec = record.display().to_string();
    let server = common::example_server().display().to_string();
    let p = Proxy::start(
        &["--record", &rec, "--listen", "127.0.0.1:0", "--", &server],
        env,
    );
    (record, p)
}

// ----- listening in front of the example server (stdio) -----

#[test]
fn a_listening_proxy_serves_http_clients_and_refuses_what_it_must() {
    let (record, p) = listening("http-listen", "listen.json", &[]);
    let url = p.url().to_owned();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );

    // DNS rebinding: a foreign Host or Origin is refused before anything is read.
    let evil_host = request(&url, "POST", &[("Host", "evil.example:80")], INIT);
    assert_eq!(evil_host.status, 403, "{}", evil_host.head);
    let evil_origin = request(&url, "POST", &[("Origin", "http://evil.example")], INIT);
    assert_eq!(evil_origin.status, 403, "{}", evil_origin.head);
    let local_origin = request(&url, "POST", &[("Origin", "http://localhost:3000")], INIT);
    assert_eq!(local_origin.status, 200, "{}", local_origin.head);

    // The proxy issues the session (the server is on stdio) and then asks for it.
    let secret = "Bearer sk-live-DO-NOT-KEEP";
    let auth = [("Authorization", secret), ("X-Api-Key", "key-DO-NOT-KEEP")];
    let session = initialize(&url, &auth);
    let no_session = request(&url, "POST", &[], &call(1, "A0"));
    assert_eq!(no_session.status, 400, "{}", no_session.body);
    let unknown = request(&url, "POST", &[("Mcp-Session-Id", "nope")], &call(1, "A0"));
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    // What is not JSON is a parse error; JSON that is no message, an invalid request.
    let ours = [("Mcp-Session-Id", session.as_str())];
    for (body, code) in [
        ("{not json", -32700),
        ("[1, 2]", -32600),
        // A batch, which the HTTP transport has not allowed since 2025-06-18.
        (
            "[{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}]",
            -32600,
        ),
        ("{\"id\": 1}", -32600),
        // Cut short: a parse error, even though its id and method can be found.
        (
            "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{",
            -32700,
        ),
    ] {
        let r = request(&url, "POST", &ours, body);
        assert_eq!(r.status, 400, "{body}: {}", r.head);
        let answer: serde_json::Value = serde_json::from_str(&r.body).expect("a JSON answer");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
        assert!(answer["id"].is_null(), "{body}: {answer}");
    }

    // A call answered on an event stream, with an event id to resume from.
    let mut h = vec![("Mcp-Session-Id", session.as_str())];
    h.extend_from_slice(&auth);
    let a = request(&url, "POST", &h, &call(1, "A1"));
    assert_eq!(a.status, 200, "{}", a.head);
    let msgs = a.messages();
    let answer = msgs.last().expect("an answer");
    assert_eq!(answer["id"], 1);
    assert_eq!(
        answer["result"]["structuredContent"]["order_id"], "A1",
        "{answer}"
    );
    assert!(a.body.contains("id: "), "events carry ids: {}", a.body);

    // A client that takes only JSON gets a JSON body.
    let mut hj = h.clone();
    hj.push(("Accept", "application/json"));
    hj.push(("X-Request-Id", "trace-2"));
    let big = "b".repeat(20_000);
    hj.push(("X-Big", big.as_str()));
    // A header sent twice is kept once, its values joined (a JSON object has no twin keys).
    hj.push(("X-Forwarded-For", "10.0.0.1"));
    hj.push(("X-Forwarded-For", "10.0.0.2"));
    let j = request(&url, "POST", &hj, &call(2, "A2"));
    assert!(
        j.header("content-type")
            .is_some_and(|c| c.contains("application/json")),
        "{}",
        j.head
    );
    assert_eq!(j.messages()[0]["id"], 2);

    // Messages too long to read whole (over 8,000,000 bytes) go on as on stdio: a call whose
    // answer is that long (the example server says the SKU twice), and a call that long
    // itself, each get their answer, found by its id.
    let large = |id: u64, sku: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"check_inventory","arguments":{{"sku":"{sku}"}}}}}}"#
        )
    };
    let mut hj_large = h.clone();
    hj_large.push(("Accept", "application/json"));
    for (id, sku_len) in [(3, 4_100_000), (4, 8_000_001)] {
        let big = request(&url, "POST", &hj_large, &large(id, &"s".repeat(sku_len)));
        assert_eq!(big.status, 200, "{}", big.head);
        assert!(big.body.len() > 8_000_000, "{}", big.body.len());
        let answer: serde_json::Value = serde_json::from_str(&big.body).expect("JSON");
        assert_eq!(answer["id"], id);
    }
    // An answer longer than the bytes a stream may hold for a client that does not read
    // (16 MB: the SKU twice) still reaches a client that reads, as an event of its stream.
    let long = request(&url, "POST", &h, &large(6, &"e".repeat(8_500_000)));
    assert_eq!(long.status, 200, "{}", long.head);
    let got = long.messages();
    assert!(
        got.iter().any(|m| m["id"] == 6 && m["result"].is_object()),
        "the answer, {} bytes of events",
        long.body.len()
    );
    // Nested deeper than the proxy reads, yet JSON: it goes on, as on stdio, and is recorded
    // with its arguments summarised.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"check_inventory","arguments":{{"sku":"d","deep":{}1{}}}}}}}"#,
        "[".repeat(40),
        "]".repeat(40)
    );
    let d = request(&url, "POST", &hj_large, &deep);
    assert_eq!(d.status, 200, "{}: {}", d.head, d.body);
    let answer: serde_json::Value = serde_json::from_str(&d.body).expect("JSON");
    assert_eq!(answer["id"], 5, "{answer}");
    // A body said to be longer than the proxy takes is refused unread.
    let mut s = TcpStream::connect(host_port(&url)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {session}\r\nContent-Type: \
         application/json\r\nAccept: application/json\r\nContent-Length: 500000000\r\n\r\n",
        host_port(&url)
    );
    s.write_all(head.as_bytes()).expect("send");
    let refused = read_answer(&mut s);
    assert_eq!(refused.status, 413, "{}", refused.head);
    assert!(
        refused.body.contains("Payload Too Large"),
        "{}",
        refused.body
    );

    // A body past the 16 MB a request may hold is refused as it comes (never buffered whole),
    // even when it is a call the proxy could otherwise relay.
    let over = large(7, &"o".repeat(17 * 1024 * 1024));
    let refused = request(&url, "POST", &hj_large, &over);
    assert_eq!(refused.status, 413, "{}", refused.head);
    assert!(refused.body.contains("16777216 bytes"), "{}", refused.body);

    // The session ends with DELETE; then it is unknown.
    let d = request(&url, "DELETE", &h, "");
    assert_eq!(d.status, 200, "{}", d.head);
    let after = request(&url, "POST", &h, &call(3, "A3"));
    assert_eq!(after.status, 404, "{}", after.body);

    let (code, log) = p.stop();
    assert_eq!(code, 128 + 15, "{log}");
    let lock = toolstorm::mcp::session::journal_path(&record).with_extension("lock");
    assert!(
        !lock.exists(),
        "the session's lock file is left behind: {}",
        lock.display()
    );
    let files = files_of(&record);
    assert!(
        !files.contains("DO-NOT-KEEP"),
        "a credential was written: {files}"
    );
    let side: serde_json::Value = sidecar(&record);
    let t = &side["transport"];
    assert_eq!(t["client"], "streamable-http", "{side}");
    assert_eq!(t["server"], "stdio");
    assert_eq!(t["request_headers"]["authorization"], "[REDACTED]");
    assert_eq!(t["request_headers"]["x-api-key"], "[REDACTED]");
    // Each call keeps the headers of its own request: the second one's trace id is its own.
    let calls = side["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 6, "{side}");
    let first = &calls[0]["request_headers"];
    let second = &calls[1]["request_headers"];
    assert_eq!(first["authorization"], "[REDACTED]", "{side}");
    assert_eq!(first["x-api-key"], "[REDACTED]", "{side}");
    assert_eq!(first["mcp-session-id"], session.as_str(), "{side}");
    assert!(first.get("x-request-id").is_none(), "{side}");
    assert_eq!(second["x-request-id"], "trace-2", "{side}");
    assert_eq!(second["accept"], "application/json", "{side}");
    assert_eq!(second["x-forwarded-for"], "10.0.0.1, 10.0.0.2", "{side}");
    // A large header is kept cut, saying how long it was.
    let kept = second["x-big"].as_str().expect("x-big");
    assert!(
        kept.len() < 400 && kept.ends_with("(20000 bytes)"),
        "{kept}"
    );
    assert!(first.get("content-length").is_none(), "{side}");
    // The explorer reads them with the call.
    let doc = toolstorm::document::Document::open(&record).expect("the recording opens");
    let session_facts = doc.runs[0].mcp.as_deref().expect("an MCP recording");
    let kept = &session_facts.call(2).expect("call 2").request_headers;
    assert!(
        kept.iter()
            .any(|(n, v)| n == "x-request-id" && v == "trace-2"),
        "{kept:?}"
    );
    let (code, out) = check(&record);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Call budget: 6 /"),
        "six calls recorded: {out}"
    );
    // The wire log has each HTTP request with its answer's status and headers, refused ones
    // too, the credentials redacted (no file above holds them), in time order.
    let wire = toolstorm::mcp::wirelog::read::read(&toolstorm::mcp::wirelog::wire_path(&record))
        .expect("the wire log");
    let exchanges: Vec<&toolstorm::mcp::wirelog::Exchange> = wire
        .entries
        .iter()
        .filter_map(|e| e.exchange.as_ref())
        .collect();
    let statuses: Vec<(String, u16)> = exchanges
        .iter()
        .map(|x| (x.method.clone(), x.status))
        .collect();
    for seen in [
        ("POST", 403),
        ("POST", 202),
        ("POST", 404),
        ("POST", 413),
        ("DELETE", 200),
    ] {
        assert!(
            statuses.contains(&(seen.0.to_owned(), seen.1)),
            "{seen:?}: {statuses:?}"
        );
    }
    let header = |h: &[(String, String)], name: &str| {
        h.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    };
    let init = exchanges
        .iter()
        .find(|x| header(&x.response, "mcp-session-id").as_deref() == Some(session.as_str()))
        .expect("the initialize that issued the session");
    assert_eq!((init.method.as_str(), init.status), ("POST", 200));
    assert_eq!(init.path, "/mcp");
    assert_eq!(
        header(&init.request, "authorization").as_deref(),
        Some("[REDACTED]")
    );
    assert!(
        header(&init.response, "content-type").is_some_and(|c| c.starts_with("text/event-stream")),
        "{init:?}"
    );
    assert!(
        wire.entries.windows(2).all(|w| w[0].ms <= w[1].ms),
        "in time order"
    );
}

/// `mcp SCENARIO --record R --listen 127.0.0.1:0 -- EXAMPLE_SERVER`, the scenario made of
/// `rules` and `delivery` (in a scratch folder named by `tag`): the recording's path and the
/// proxy.
fn faulted(tag: &str, name: &str, rules: &str, delivery: &str) -> (std::path::PathBuf, Proxy) {
    faulted_with(tag, name, rules, delivery, &[])
}

/// As [`faulted`], the example server started with the environment settings `env`
/// (`NAME=VALUE`).
fn faulted_with(
    tag: &str,
    name: &str,
    rules: &str,
    delivery: &str,
    env: &[&str],
) -> (std::path::PathBuf, Proxy) {
    let scen = scenario(tag, rules, delivery);
    let record = common::scratch_recording(tag, name);
    let server = common::example_server().display().to_string();
    let scen = scen.display().to_string();
    let rec = record.display().to_string();
    let mut args = vec![&scen[..], "--record", &rec, "--listen", "127.0.0.1:0", "--"];
    if !env.is_empty() {
        args.push("env");
        args.extend_from_slice(env);
    }
    args.push(&server);
    (record, Proxy::start(&args, &[]))
}

#[test]
fn http_faults_cut_the_stream_or_answer_with_a_status() {
    let rules = r#"{"name":"cut","tool":"create_*","kind":"response_lost","calls":[1],"probability":1.0,"limit":null,"delay":0.0,"replacement":null},
                   {"name":"busy","tool":"create_*","kind":"rate_limit","calls":[2],"probability":1.0,"limit":null,"delay":30.0,"replacement":null}"#;
    let (record, p) = faulted(
        "http-faults",
        "faults.json",
        rules,
        r#""cut":"stream_cut","busy":"http_status""#,
    );
    let url = p.url().to_owned();
    let session = initialize(&url, &[]);
    let h = [("Mcp-Session-Id", session.as_str())];

    // The lost acknowledgement: the stream ends without the answer...
    let cut = request(&url, "POST", &h, &call(1, "A1"));
    assert_eq!(cut.status, 200);
    assert!(
        cut.messages()
            .iter()
            .all(|m| m.get("result").is_none() && m.get("error").is_none()),
        "no answer on a cut stream: {}",
        cut.body
    );
    // ...and resuming it from its first event gives nothing either.
    let first_id = cut
        .body
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("the cut stream had an event id")
        .to_owned();
    let resumed = request(
        &url,
        "GET",
        &[
            ("Mcp-Session-Id", &session),
            ("Accept", "text/event-stream"),
            ("Last-Event-ID", &first_id),
        ],
        "",
    );
    assert!(
        resumed.messages().is_empty(),
        "the lost answer came back: {}",
        resumed.body
    );

    // The client's retry (a new id) commits again.
    let retry = request(&url, "POST", &h, &call(2, "A1"));
    let busy = retry;
    assert_eq!(
        busy.status, 429,
        "the rule on call 2: {} {}",
        busy.head, busy.body
    );
    assert_eq!(busy.header("retry-after").as_deref(), Some("30"));
    let third = request(&url, "POST", &h, &call(3, "A1"));
    assert_eq!(third.messages().last().expect("answer")["id"], 3);

    let (_, log) = p.stop();
    let (code, out) = check(&record);
    assert_eq!(code, 1, "a duplicate commit fails: {out}\n{log}");
    assert!(out.contains("duplicate commit: shipment A1"), "{out}");
    // The wire log has both HTTP faults as the client got them: the cut stream, and the
    // 429 with its Retry-After and JSON-RPC body, made by the proxy.
    let wire = toolstorm::mcp::wirelog::read::read(&toolstorm::mcp::wirelog::wire_path(&record))
        .expect("the wire log");
    let to_client = |id: &str| {
        wire.entries
            .iter()
            .filter(|e| e.dir == toolstorm::mcp::wirelog::Dir::ToClient)
            .find(|e| e.id.as_deref() == Some(id))
            .cloned()
            .expect(id)
    };
    let cut = to_client("1");
    assert!(
        cut.note.as_deref().is_some_and(|n| n.contains("cut")),
        "{cut:?}"
    );
    let busy = to_client("2");
    assert_eq!(busy.http, Some((429, Some(30))), "{busy:?}");
    assert_eq!(busy.fate, toolstorm::mcp::wirelog::read::Fate::Made);
    assert!(busy.message.is_some(), "{busy:?}");
}

#[test]
fn a_status_due_after_the_server_spoke_on_the_stream_is_a_cut_and_recorded_as_one() {
    // The server sends a progress notification on the call's stream before its answer, so
    // the stream's head (200, an event stream) is out when the lost acknowledgement is due
    // as a 502: the client can only see the stream end, and the record says so.
    let rules = r#"{"name":"gateway","tool":"create_*","kind":"response_lost","calls":[1],"probability":1.0,"limit":null,"delay":0.0,"replacement":null}"#;
    let (record, p) = faulted_with(
        "http-started",
        "started.json",
        rules,
        r#""gateway":"http_status""#,
        &["SHIPPING_PROGRESS=1"],
    );
    let url = p.url().to_owned();
    let session = initialize(&url, &[]);
    let h = [("Mcp-Session-Id", session.as_str())];
    let got = request(&url, "POST", &h, &call(1, "A1"));
    let second = request(&url, "POST", &h, &call(2, "A2"));
    let (_, log) = p.stop();
    assert_eq!(got.status, 200, "{} {}\n{log}", got.head, got.body);
    let methods: Vec<String> = got
        .messages()
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("an answer").to_owned())
        .collect();
    assert_eq!(methods, ["notifications/progress"], "{}", got.body);
    // The second call, with no fault, has its progress and its answer.
    assert!(
        second
            .messages()
            .last()
            .is_some_and(|m| m["result"].is_object()),
        "{}",
        second.body
    );
    let side: serde_json::Value = sidecar(&record);
    let calls = side["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["delivered"], "stream_cut", "{}", calls[0]);
    assert!(
        calls[0]["note"]
            .as_str()
            .is_some_and(|n| n.contains("the HTTP status due became a cut stream")),
        "{}",
        calls[0]
    );
    assert_eq!(calls[1]["delivered"], "result", "{}", calls[1]);
    // And the replay cuts it as the client saw it.
    let replay = Proxy::start(
        &[
            "--replay",
            &record.display().to_string(),
            "--listen",
            "127.0.0.1:0",
        ],
        &[],
    );
    let session = initialize(replay.url(), &[]);
    let h = [("Mcp-Session-Id", session.as_str())];
    let again = request(replay.url(), "POST", &h, &call(1, "A1"));
    let (_, log) = replay.stop();
    assert_eq!(again.status, 200, "{} {}\n{log}", again.head, again.body);
    assert!(
        again
            .messages()
            .iter()
            .all(|m| m.get("result").is_none() && m.get("error").is_none()),
        "{}",
        again.body
    );
}

/// The sidecar of the recording `record`, as JSON.
fn sidecar(record: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(toolstorm::mcp::session::sidecar_path(record)).expect("a sidecar");
    serde_json::from_str(&text).expect("the sidecar is JSON")
}

/// Sends `call` and reads its answer: the answer and how long it took.
fn timed(url: &str, h: &[(&str, &str)], call: &str) -> (Answer, Duration) {
    let started = Instant::now();
    let a = request(url, "POST", h, call);
    (a, started.elapsed())
}

#[test]
fn an_http_status_and_a_cut_stream_are_recorded_as_the_client_saw_them_and_replayed_so() {
    let rules = r#"{"name":"cut","tool":"create_*","kind":"response_lost","calls":[1],"probability":1.0,"limit":null,"delay":0.0,"replacement":null},
                   {"name":"gateway","tool":"create_*","kind":"response_lost","calls":[2],"probability":1.0,"limit":null,"delay":0.0,"replacement":null},
                   {"name":"busy","tool":"create_*","kind":"rate_limit","calls":[3],"probability":1.0,"limit":null,"delay":30.0,"replacement":null}"#;
    let (record, live) = faulted(
        "http-seen",
        "seen.json",
        rules,
        r#""cut":"stream_cut","gateway":"http_status","busy":"http_status""#,
    );
    let rec = record.display().to_string();
    // The same four calls, live and replayed: what each client got.
    let four = |url: &str| -> Vec<(Answer, Duration)> {
        let session = initialize(url, &[]);
        let h = [
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        (1..=4).map(|n| timed(url, &h, &call(n, "A1"))).collect()
    };
    let seen = four(live.url());
    let (code, log) = live.stop();
    assert_eq!(code, 128 + 15, "{log}");

    // Live: the cut stream began (200, an event stream) and ended without the answer.
    let (cut, _) = &seen[0];
    assert_eq!(cut.status, 200, "{}", cut.head);
    assert!(
        cut.header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream")),
        "{}",
        cut.head
    );
    assert!(cut.messages().is_empty(), "{}", cut.body);
    // The statuses came with a body of the type they said: a JSON-RPC error for the request.
    for ((a, _), (status, retry)) in seen[1..3].iter().zip([(502, None), (429, Some("30"))]) {
        assert_eq!(a.status, status, "{} {}", a.head, a.body);
        assert_eq!(a.header("retry-after").as_deref(), retry, "{}", a.head);
        assert_eq!(
            a.header("content-type").as_deref(),
            Some("application/json"),
            "{}",
            a.head
        );
        let body: serde_json::Value = serde_json::from_str(&a.body)
            .unwrap_or_else(|e| panic!("the {status} body is not JSON ({e}): {:?}", a.body));
        assert_eq!(body["error"]["code"], -32000, "{body}");
        assert!(body["id"].is_u64(), "{body}");
    }
    let (last, _) = &seen[3];
    let answered = last.messages().last().cloned().expect("call 4 is answered");
    assert!(answered["result"].is_object(), "{answered}");

    // The record says what the client got: the cut stream, the statuses.
    let side: serde_json::Value = sidecar(&record);
    let calls = side["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["delivered"], "stream_cut", "{}", calls[0]);
    assert_eq!(calls[1]["delivered"], "http_status", "{}", calls[1]);
    assert_eq!(calls[1]["response"]["status"], 502, "{}", calls[1]);
    assert_eq!(calls[2]["delivered"], "http_status", "{}", calls[2]);
    assert_eq!(calls[2]["response"]["status"], 429, "{}", calls[2]);
    assert_eq!(calls[2]["response"]["retry_after"], 30, "{}", calls[2]);
    assert_eq!(calls[3]["delivered"], "result", "{}", calls[3]);
    let shown = Command::new(BIN)
        .args(["inspect", &rec])
        .output()
        .expect("inspect runs");
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("HTTP 429"), "{shown}");

    // Replayed: the same statuses and bodies, the stream cut at once (not held until the
    // client gives up), the same answer last.
    let report = record.with_file_name("replay-report.json");
    let replay = Proxy::start(
        &[
            "--replay",
            &rec,
            "--replay-report",
            &report.display().to_string(),
            "--listen",
            "127.0.0.1:0",
        ],
        &[],
    );
    let again = four(replay.url());
    // The report is written just after the last answer went out: read it before the stop.
    let matched = |n: i64| {
        std::fs::read_to_string(&report)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|v| v["matched"] == n)
    };
    let until = Instant::now() + Duration::from_secs(10);
    while !matched(4) && Instant::now() < until {
        thread::sleep(Duration::from_millis(20));
    }
    let (_, log) = replay.stop();
    let (cut_again, took) = &again[0];
    assert!(
        *took < Duration::from_secs(5),
        "the replayed cut stream was held {took:?}: {} {}\n{log}",
        cut_again.head,
        cut_again.body
    );
    assert_eq!(cut_again.status, 200, "{}\n{log}", cut_again.head);
    assert!(
        cut_again
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream")),
        "{}",
        cut_again.head
    );
    assert!(cut_again.messages().is_empty(), "{}", cut_again.body);
    for ((a, _), (b, _)) in seen[1..3].iter().zip(&again[1..3]) {
        assert_eq!(b.status, a.status, "{} {}\n{log}", b.head, b.body);
        assert_eq!(b.header("retry-after"), a.header("retry-after"));
        assert_eq!(b.header("content-type"), a.header("content-type"));
        assert_eq!(b.messages(), a.messages(), "the body given back");
    }
    assert_eq!(
        again[3].0.messages().last(),
        Some(&answered),
        "{}",
        again[3].0.body
    );
    let verdict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("a report")).expect("JSON");
    assert_eq!(verdict["matched"], 4, "{verdict}");
    // The replay reproduced the recording; the recording itself fails its checks (the
    // lost acknowledgement's retry committed twice), so the report never says passed.
    assert_eq!(verdict["reproduced"], true, "{verdict}");
    assert_eq!(
        verdict["recording_failed"],
        serde_json::json!(["No duplicate side effects"]),
        "{verdict}"
    );
    assert_eq!(verdict["passed"], false, "{verdict}");
}

#[test]
fn a_sessions_call_goes_to_the_server_only_after_it_took_the_notification_before_it() {
    // A server slow to take `notifications/initialized`: each of the proxy's messages is its own
    // POST, and the call the client sends next must not overtake the notification, as it cannot
    // on stdio and does not when the client speaks to the server itself.
    let (upstream, order) = slow_to_take_initialized(Duration::from_millis(400));
    // An HTTP client of the listening proxy: its 202 comes at once, and it calls at once.
    let (_record, live) = listening_to(&upstream, "http-notification-order", "listen.json");
    let got = a_session_with_one_call(live.url(), "A1");
    let _ = live.stop();
    assert_eq!(got.status, 200, "{} {}", got.head, got.body);
    // A stdio client, which writes its notification and its call without waiting at all.
    initialized_then_call(&upstream, "stdio.json");
    assert_eq!(
        *order.lock().expect("order"),
        [
            "initialized taken",
            "call received",
            "initialized taken",
            "call received"
        ]
    );
}

#[test]
fn a_notification_the_server_never_takes_holds_the_next_call_only_so_long() {
    // Past the wait's bound (5 s) the call goes on: a server that sits on a notification
    // cannot stop the session.
    let (upstream, order) = slow_to_take_initialized(Duration::from_secs(9));
    initialized_then_call(&upstream, "held.json");
    assert_eq!(
        *order.lock().expect("order"),
        ["call received", "initialized taken"]
    );
}

#[test]
fn a_stateless_clients_notification_never_holds_up_another_clients_call() {
    // Under 2026-07-28 clients have no session: one client's notification the server is slow
    // to take is nothing to another client's call, which goes on at once.
    let order: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let log = Arc::clone(&order);
    let (upstream, _seen) = scripted(move |method, _, body| {
        if body.contains("notifications/roots/list_changed") {
            thread::sleep(Duration::from_secs(3));
            log.lock().expect("order").push("notification taken");
        } else if body.contains("tools/call") {
            log.lock().expect("order").push("call received");
        }
        usual(method, body, |_| {
            json_answer("", r#"{"jsonrpc":"2.0","id":5,"result":{"content":[]}}"#)
        })
    });
    let (_record, p) = listening_to(&upstream, "http-2026-strangers", "strangers.json");
    let purl = p.url().to_owned();
    let version = ("MCP-Protocol-Version", "2026-07-28");
    let note = r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let a = request(
        &purl,
        "POST",
        &[version, ("Mcp-Method", "notifications/roots/list_changed")],
        note,
    );
    assert_eq!(a.status, 202, "{} {}", a.head, a.body);
    let call = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"create_shipment","arguments":{"order_id":"B5"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let b = request(
        &purl,
        "POST",
        &[
            version,
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "create_shipment"),
        ],
        call,
    );
    assert_eq!(b.status, 200, "{} {}", b.head, b.body);
    thread::sleep(Duration::from_secs(3));
    let _ = p.stop();
    assert_eq!(
        *order.lock().expect("order"),
        ["call received", "notification taken"]
    );
}

/// A scripted server that takes `delay` to accept `notifications/initialized`, and the order in
/// which it took that and received each call.
fn slow_to_take_initialized(delay: Duration) -> (String, Arc<Mutex<Vec<&'static str>>>) {
    let order: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let log = Arc::clone(&order);
    let (upstream, _seen) = scripted(move |method, _, body| {
        if body.contains("notifications/initialized") {
            thread::sleep(delay);
            log.lock().expect("order").push("initialized taken");
        } else if body.contains("tools/call") {
            log.lock().expect("order").push("call received");
        }
        usual(method, body, |_| {
            json_answer("", r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#)
        })
    });
    (upstream, order)
}

/// A stdio client of a proxy in front of `upstream` that writes `initialized` and a call at
/// once, reads the call's answer and leaves; the proxy ends.
fn initialized_then_call(upstream: &str, name: &str) {
    let (_record, mut p, mut c) = recording_to(upstream, "http-notification-order", name);
    c.initialize(name);
    c.send(INITIALIZED);
    c.send(&call(1, "A2"));
    let answer = c.next();
    drop(c);
    wait_for(&mut p.child, Duration::from_secs(30));
    assert_eq!(answer["id"], 1, "{answer}");
}

#[test]
fn an_http_servers_error_status_is_given_back_by_the_replay_as_it_was_relayed() {
    let (upstream, _seen) = scripted(|method, _, body| {
        usual(method, body, |_| {
            let err =
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"overloaded"}}"#;
            format!(
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{err}",
                err.len()
            )
        })
    });
    let (record, live) = listening_to(&upstream, "http-upstream-status", "status.json");
    let one = |url: &str| -> Answer {
        let session = initialize(url, &[]);
        let h = [
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        request(url, "POST", &h, &call(1, "A1"))
    };
    let got = one(live.url());
    let _ = live.stop();
    assert_eq!(got.status, 503, "{} {}", got.head, got.body);
    assert_eq!(got.messages()[0]["error"]["message"], "overloaded");
    // The wire log has both sides' HTTP: the server's 503 to the proxy's POST, and the 503
    // the client got, each with its headers.
    let wire = toolstorm::mcp::wirelog::read::read(&toolstorm::mcp::wirelog::wire_path(&record))
        .expect("the wire log");
    let status_of = |dir: toolstorm::mcp::wirelog::Dir| -> Vec<u16> {
        wire.entries
            .iter()
            .filter_map(|e| e.exchange.as_ref())
            .filter(|x| x.dir == dir && x.method == "POST")
            .map(|x| x.status)
            .collect()
    };
    assert_eq!(
        status_of(toolstorm::mcp::wirelog::Dir::ToServer),
        [200, 202, 503],
        "{wire:?}"
    );
    assert_eq!(
        status_of(toolstorm::mcp::wirelog::Dir::FromClient),
        [200, 202, 503],
        "{wire:?}"
    );
    let to_server = wire
        .entries
        .iter()
        .filter_map(|e| e.exchange.as_ref())
        .find(|x| x.dir == toolstorm::mcp::wirelog::Dir::ToServer && x.status == 503)
        .expect("the server's 503");
    assert!(
        to_server
            .response
            .iter()
            .any(|(n, v)| n == "content-type" && v == "application/json"),
        "{to_server:?}"
    );
    assert!(
        to_server.request.iter().any(|(n, _)| n == "mcp-session-id"),
        "the session's id went with it: {to_server:?}"
    );

    let rec = record.display().to_string();
    let replay = Proxy::start(&["--replay", &rec, "--listen", "127.0.0.1:0"], &[]);
    let again = one(replay.url());
    let (_, log) = replay.stop();
    assert_eq!(again.status, 503, "{} {}\n{log}", again.head, again.body);
    assert_eq!(again.header("content-type"), got.header("content-type"));
    assert_eq!(again.messages(), got.messages());
}

/// The id of the first event of an answer's stream (its priming event).
fn first_event_id(a: &Answer) -> String {
    a.body
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .unwrap_or_else(|| panic!("no event id: {}", a.body))
        .to_owned()
}

/// A GET resuming a stream from `last`, with `headers`.
fn resume(url: &str, last: &str, headers: &[(&str, &str)]) -> Answer {
    let mut h = vec![("Accept", "text/event-stream"), ("Last-Event-ID", last)];
    h.extend_from_slice(headers);
    request(url, "GET", &h, "")
}

#[test]
fn a_stream_is_resumed_only_in_its_session_with_its_credentials_and_never_after_delete() {
    let (record, p) = listening("http-owner", "owner.json", &[]);
    let url = p.url().to_owned();
    let alice_auth = ("Authorization", "Bearer alice");
    let bob_auth = ("Authorization", "Bearer bob");
    let alice = initialize(&url, &[alice_auth]);
    let bob = initialize(&url, &[bob_auth]);
    assert_ne!(alice, bob);
    assert!(alice.len() >= 32, "a session id of 128 bits: {alice}");
    let as_alice = [("Mcp-Session-Id", alice.as_str()), alice_auth];
    let as_bob = [("Mcp-Session-Id", bob.as_str()), bob_auth];

    // Alice's call, answered on an event stream whose ids cannot be guessed.
    let a = request(&url, "POST", &as_alice, &call(1, "ALICE-ORDER"));
    assert_eq!(a.status, 200, "{}", a.head);
    assert!(a.body.contains("ALICE-ORDER"), "{}", a.body);
    let first = first_event_id(&a);
    let (stream, _) = first.rsplit_once('-').expect("S-N");
    assert!(stream.len() > 32, "the stream part is a secret: {first}");

    // Another local client with that very id cannot read the stream: with no session, with
    // its own session, or with Alice's session but its own credentials (or none).
    let intruders: [&[(&str, &str)]; 4] = [
        &[],
        &as_bob,
        &[("Mcp-Session-Id", alice.as_str()), bob_auth],
        &[("Mcp-Session-Id", alice.as_str())],
    ];
    for headers in intruders {
        let r = resume(&url, &first, headers);
        assert!(
            r.status == 404 || r.status == 400,
            "{headers:?}: {} {}",
            r.head,
            r.body
        );
        assert!(!r.body.contains("ALICE-ORDER"), "{headers:?}: {}", r.body);
    }
    // Ids of the shape the proxy wrote before (a counter) name no stream.
    for guess in ["0-0", "1-0", "2-0", "3-0"] {
        let r = resume(&url, guess, &as_alice);
        assert_eq!(r.status, 404, "{guess}: {}", r.body);
    }
    // Alice's session is Alice's: Bob's credentials under its id are an unknown session.
    let taken = request(
        &url,
        "POST",
        &[("Mcp-Session-Id", alice.as_str()), bob_auth],
        &call(2, "BOB-IN-ALICE"),
    );
    assert_eq!(taken.status, 404, "{}", taken.body);
    let ended = request(
        &url,
        "DELETE",
        &[("Mcp-Session-Id", alice.as_str()), bob_auth],
        "",
    );
    assert_eq!(ended.status, 404, "Bob cannot end Alice's session");

    // Alice herself resumes her stream.
    let own = resume(&url, &first, &as_alice);
    assert_eq!(own.status, 200, "{}", own.head);
    assert!(own.body.contains("ALICE-ORDER"), "{}", own.body);

    // After her DELETE nobody resumes it, not even with her session and credentials.
    let d = request(&url, "DELETE", &as_alice, "");
    assert_eq!(d.status, 200, "{}", d.head);
    let after = resume(&url, &first, &as_alice);
    assert_eq!(after.status, 404, "{}", after.body);
    assert!(!after.body.contains("ALICE-ORDER"), "{}", after.body);

    let (code, log) = p.stop();
    assert_eq!(code, 128 + 15, "{log}");
    let files = files_of(&record);
    assert!(
        !files.contains("BOB-IN-ALICE"),
        "a refused call was relayed"
    );

    // A replay's session ids are as unguessable: two replays of the same recording issue
    // different ones (they were a digest of the recording's path and a count).
    let rec = record.display().to_string();
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let r = Proxy::start(&["--replay", &rec, "--listen", "127.0.0.1:0"], &[]);
            let id = initialize(r.url(), &[]);
            let _ = r.stop();
            id
        })
        .collect();
    assert_ne!(ids[0], ids[1], "replay session ids repeat");
}

#[test]
fn with_allow_remote_a_host_not_allowed_is_refused_and_a_head_with_two_names_is_malformed() {
    let record = common::scratch_recording("http-hosts", "hosts.json");
    let rec = record.display().to_string();
    let server = common::example_server().display().to_string();
    let p = Proxy::start(
        &[
            "--record",
            &rec,
            "--listen",
            "127.0.0.1:0",
            "--allow-remote",
            "--allow-host",
            "mcp.lan",
            "--",
            &server,
        ],
        &[],
    );
    let url = p.url().to_owned();
    let port = host_port(&url).rsplit_once(':').expect("port").1.to_owned();

    // A DNS-rebinding page: its own name as Host, and (a same-origin request) no Origin.
    let rebound = request(
        &url,
        "POST",
        &[("Host", &format!("evil.example:{port}"))],
        INIT,
    );
    assert_eq!(rebound.status, 403, "{}", rebound.head);
    assert!(
        rebound.body.contains("--allow-host evil.example"),
        "{}",
        rebound.body
    );
    // A name given with --allow-host, and the listen address, are taken.
    let named = request(&url, "POST", &[("Host", &format!("mcp.lan:{port}"))], INIT);
    assert_eq!(named.status, 200, "{} {}", named.head, named.body);
    let direct = request(&url, "POST", &[], INIT);
    assert_eq!(direct.status, 200, "{}", direct.head);

    // Two Host headers, or an absolute-form target naming another authority: 400.
    let two = request(
        &url,
        "POST",
        &[("Host", &host_port(&url)), ("Host", "evil.example")],
        INIT,
    );
    assert_eq!(two.status, 400, "{}", two.head);
    assert!(two.body.contains("two Host headers"), "{}", two.body);
    let mut s = TcpStream::connect(host_port(&url)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let head = format!(
        "POST http://evil.example/mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{INIT}",
        host_port(&url),
        INIT.len()
    );
    s.write_all(head.as_bytes()).expect("send");
    let absolute = read_answer(&mut s);
    assert_eq!(absolute.status, 400, "{}", absolute.head);
    assert!(absolute.body.contains("evil.example"), "{}", absolute.body);

    let (code, log) = p.stop();
    assert_eq!(code, 128 + 15, "{log}");
}

#[test]
fn a_protocol_version_the_session_did_not_negotiate_is_refused_and_never_reframes_it() {
    let (record, p) = listening("http-version", "version.json", &[]);
    let url = p.url().to_owned();
    let init = request(&url, "POST", &[], INIT);
    assert_eq!(init.status, 200, "{}", init.body);
    let agreed = init.messages()[0]["result"]["protocolVersion"]
        .as_str()
        .expect("the negotiated version")
        .to_owned();
    let session = init.header("mcp-session-id").expect("a session");
    let ok = request(
        &url,
        "POST",
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", &agreed),
        ],
        INITIALIZED,
    );
    assert_eq!(ok.status, 202, "{}", ok.head);
    let other = ["2025-06-18", "2025-03-26"]
        .into_iter()
        .find(|v| *v != agreed)
        .expect("another version");
    // An unknown version, another known one, and 2026-07-28 (whose framing has no resumable
    // streams) mid-session: each 400 with a JSON-RPC error saying why, never relayed.
    for (version, why) in [
        ("banana", "Unsupported protocol version: banana"),
        (other, "is not the version this session negotiated"),
        ("2026-07-28", "is not the version this session negotiated"),
    ] {
        let r = request(
            &url,
            "POST",
            &[
                ("Mcp-Session-Id", &session),
                ("MCP-Protocol-Version", version),
            ],
            &call(1, "NEVER-SENT"),
        );
        assert_eq!(r.status, 400, "{version}: {} {}", r.head, r.body);
        let answer: serde_json::Value = serde_json::from_str(&r.body).expect("JSON-RPC");
        let message = answer["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(why), "{version}: {answer}");
    }
    // The agreed version, and none at all, are taken; the stream keeps its resumable ids.
    for headers in [
        vec![
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", agreed.as_str()),
        ],
        vec![("Mcp-Session-Id", session.as_str())],
    ] {
        let r = request(&url, "POST", &headers, &call(2, "SENT"));
        assert_eq!(r.status, 200, "{headers:?}: {}", r.head);
        assert!(
            r.body.contains("SENT") && r.body.contains("id: "),
            "{}",
            r.body
        );
    }
    let (code, log) = p.stop();
    assert_eq!(code, 128 + 15, "{log}");
    assert!(
        !files_of(&record).contains("NEVER-SENT"),
        "a refused call was relayed"
    );
}

#[test]
fn a_remote_listen_address_needs_allow_remote() {
    let out = Command::new(BIN)
        .args(["mcp", "--listen", "0.0.0.0:0", "--", "true"])
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-remote"), "{err}");
}

#[test]
fn a_session_that_cannot_start_leaves_the_earlier_recording_as_it_was() {
    // An incident on record: one call through a listening proxy.
    let (record, p) = listening("http-nostart", "incident.json", &[]);
    let url = p.url().to_owned();
    let a = a_session_with_one_call(&url, "A1");
    assert_eq!(a.status, 200, "{}", a.body);
    let (code, log) = p.stop();
    assert_eq!(code, 128 + 15, "{log}");
    let before = files_of(&record);
    assert!(before.contains("A1"), "{before}");

    // The same command again, each time with one thing that stops it before the session
    // starts: the earlier recording stays whole, and no temporary file is left beside it.
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken = taken.local_addr().expect("address").to_string();
    let missing = record.with_file_name("no-such-server");
    let missing = missing.display().to_string();
    // A server that leaves a mark when it starts: an address that cannot be used stops the
    // proxy before it starts any server.
    let mark = record.with_file_name("server-started");
    let marking = format!("touch '{}'", mark.display());
    let cases: [(&[&str], &str); 4] = [
        (
            &["--listen", "0.0.0.0:0", "--", "sh", "-c", &marking],
            "--allow-remote",
        ),
        (
            &["--listen", &taken, "--", "sh", "-c", &marking],
            "cannot listen on",
        ),
        (&["--", &missing], "cannot start the server"),
        (&["--", "http://"], "is not an http:// or https:// URL"),
    ];
    for (args, said) in cases {
        let out = Command::new(BIN)
            .args(["mcp", "--record", &record.display().to_string()])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
        assert!(!err.contains("replacing the recording"), "{args:?}: {err}");
        assert_eq!(files_of(&record), before, "{args:?} changed the recording");
        assert!(!mark.exists(), "{args:?} started the server");
        let dir = record.parent().expect("a folder");
        let temps: Vec<_> = std::fs::read_dir(dir)
            .expect("the folder")
            .flatten()
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                // No temporary file, and no lock file: a refused start lets go of the
                // recording's lock and removes it, as a session's end does.
                name.ends_with(".tmp") || name.ends_with(".new") || name.ends_with(".lock")
            })
            .collect();
        assert!(temps.is_empty(), "{args:?} left {temps:?}");
    }
    let (code, out) = check(&record);
    assert_eq!(code, 0, "{out}");
}

/// `mcp --listen 127.0.0.1:0 -- EXAMPLE_SERVER` allowed `descriptors` open files.
fn listening_within(descriptors: u32) -> Proxy {
    let server = common::example_server().display().to_string();
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        &format!("ulimit -n {descriptors} && exec \"$0\" \"$@\""),
        BIN,
        "mcp",
    ])
    .args(["--listen", "127.0.0.1:0", "--", &server]);
    Proxy::spawn(cmd, true)
}

#[test]
fn out_of_file_descriptors_the_listener_waits_instead_of_spinning() {
    // 64 descriptors: 40 clients hold GET streams (requests in hand, which the listener
    // never closes to make room), then 60 connections that send nothing take the rest (each
    // kept for a moment, as a client's first request may be on its way).
    let p = listening_within(64);
    let url = p.url().to_owned();
    let host = host_port(&url);
    let mut held: Vec<TcpStream> = Vec::new();
    for _ in 0..40 {
        let a = request(&url, "POST", &[], INIT);
        let Some(session) = a.header("mcp-session-id") else {
            break; // out of descriptors already
        };
        held.push(open(
            &url,
            "GET",
            &[
                ("Mcp-Session-Id", &session),
                ("Accept", "text/event-stream"),
            ],
            "",
        ));
    }
    let idle: Vec<TcpStream> = (0..60)
        .filter_map(|_| TcpStream::connect(&host).ok())
        .collect();
    thread::sleep(Duration::from_millis(300));
    // While the descriptors are gone, the proxy waits: it does not spin on accept (which
    // took most of a core), and it says why new clients wait.
    let cpu = || {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", p.pid())).expect("stat");
        let after = &stat[stat.rfind(')').expect("comm") + 2..];
        // From field 3 (the state) on: utime and stime, in clock ticks, are fields 14 and 15.
        let f: Vec<&str> = after.split_whitespace().collect();
        let ticks = |i: usize| f[i - 3].parse::<u64>().expect("ticks");
        ticks(14) + ticks(15)
    };
    let before = cpu();
    thread::sleep(Duration::from_secs(2));
    let used = cpu() - before;
    assert!(
        used < 50,
        "{used} ticks of CPU in 2 s while out of descriptors"
    );
    let log = p.log.lock().expect("log").clone();
    assert!(log.contains("cannot take a new connection"), "{log}");
    // Once they are given back, a client is served.
    drop(idle);
    drop(held);
    let session = initialize(&url, &[]);
    assert!(!session.is_empty());
    let (code, log) = p.stop();
    assert_eq!(code, 128 + 15, "{log}");
}

#[test]
fn clients_trickling_bodies_cannot_keep_others_out() {
    // 48 descriptors, and 40 connections that each send a request's head and one byte of a
    // kilobyte body, then nothing: idle connections, the oldest closed for each new client.
    let p = listening_within(48);
    let url = p.url().to_owned();
    let host = host_port(&url);
    let trickling: Vec<TcpStream> = (0..40)
        .filter_map(|_| {
            let mut s = TcpStream::connect(&host).ok()?;
            let head = format!(
                "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
                 Accept: application/json\r\nContent-Length: 1000\r\n\r\n{{"
            );
            s.write_all(head.as_bytes()).ok()?;
            Some(s)
        })
        .collect();
    assert_eq!(trickling.len(), 40);
    thread::sleep(Duration::from_millis(300));
    // A real client is served at once, not after the tricklers time out.
    let started = Instant::now();
    let a = a_session_with_one_call(&url, "A1");
    assert_eq!(a.status, 200, "{}", a.head);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "served after {:?}",
        started.elapsed()
    );
    let log = p.log.lock().expect("log").clone();
    assert!(
        log.contains("closed the oldest with no request in hand"),
        "{log}"
    );
    drop(trickling);
    let (code, log) = p.stop();
    assert_eq!(code, 128 + 15, "{log}");
}

#[test]
fn the_listening_line_comes_before_what_the_server_says_at_start() {
    // A server with a banner on stderr (FastMCP prints one), and a recording to start.
    let record = common::scratch_recording("http-banner", "banner.json");
    let rec = record.display().to_string();
    let server = common::example_server().display().to_string();
    let banner = format!("echo 'banner: starting' >&2; exec '{server}'");
    let args = [
        "--record",
        &rec,
        "--listen",
        "127.0.0.1:0",
        "--",
        "sh",
        "-c",
        &banner,
    ];
    // Proxy::start takes the first stderr line as the one that says where it listens.
    let p = Proxy::start(&args, &[]);
    let session = initialize(p.url(), &[]);
    assert!(!session.is_empty());
    let (code, log) = p.stop();
    assert_eq!(code, 128 + 15, "{log}");
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines[0].starts_with("listening on "), "{log}");
    assert!(
        lines.contains(&"banner: starting"),
        "the banner is relayed: {log}"
    );
    // Again on the same recording: what the start says of it comes after that line too.
    let p = Proxy::start(&args, &[]);
    let (_, log) = p.stop();
    assert!(log.starts_with("listening on "), "{log}");
    assert!(log.contains("replacing the recording"), "{log}");
    // And continued with --append.
    let mut appended = args.to_vec();
    appended.insert(2, "--append");
    let p = Proxy::start(&appended, &[]);
    let (_, log) = p.stop();
    assert!(log.starts_with("listening on "), "{log}");
    assert!(log.contains("continuing the recording"), "{log}");
    // A FIFO where the wire log goes: said after that line too, and recorded without it.
    let wire = toolstorm::mcp::wirelog::wire_path(&record);
    std::fs::remove_file(&wire).expect("the wire log of the runs above");
    let made = Command::new("mkfifo").arg(&wire).status().expect("mkfifo");
    assert!(made.success());
    let p = Proxy::start(&args, &[]);
    let session = initialize(p.url(), &[]);
    assert!(!session.is_empty());
    let (_, log) = p.stop();
    assert!(log.starts_with("listening on "), "{log}");
    assert!(
        log.contains("banner.wire.jsonl could not be started (not a regular file (a FIFO)); recording without it"),
        "{log}"
    );
    assert!(record.exists(), "{log}");
}

#[test]
fn a_url_of_another_scheme_is_refused_by_name_not_started() {
    let out = Command::new(BIN)
        .args(["mcp", "--", "ws://127.0.0.1:1/mcp"])
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"ws://127.0.0.1:1/mcp\" is not an http:// or https:// URL"),
        "{err}"
    );
    assert!(!err.contains("cannot start"), "{err}");
}

#[test]
fn a_client_gone_mid_stream_leaves_its_call_in_flight_on_record() {
    let (record, p) = listening("http-gone", "gone.json", &[("SHIPPING_DELAY_MS", "3000")]);
    let url = p.url().to_owned();
    let session = initialize(&url, &[]);
    let s = open(
        &url,
        "POST",
        &[("Mcp-Session-Id", &session)],
        &call(1, "A1"),
    );
    thread::sleep(Duration::from_millis(300));
    drop(s);
    // Killed while the server still works on it: the call is in flight, never lost.
    let mut p = p;
    let _ = Command::new("kill")
        .args(["-KILL", &p.pid().to_string()])
        .status();
    wait_for(&mut p.child, Duration::from_secs(5));
    let (code, out) = check(&record);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("✗ Session finished"), "{out}");
    assert!(out.contains("Call budget: 1 /"), "{out}");
}

#[test]
fn an_answer_that_comes_after_its_client_left_is_recorded_as_not_delivered() {
    let (record, p) = listening("http-left", "left.json", &[("SHIPPING_DELAY_MS", "1500")]);
    let url = p.url().to_owned();
    let session = initialize(&url, &[]);
    let s = open(
        &url,
        "POST",
        &[("Mcp-Session-Id", &session)],
        &call(1, "A1"),
    );
    // The client gives up (its own timeout, or it was killed) before the server answers.
    thread::sleep(Duration::from_millis(300));
    drop(s);
    // The server answers after it: its log says so, then the proxy is ended.
    let until = Instant::now() + Duration::from_secs(10);
    while !files_of(&record).contains("the client was gone") {
        assert!(Instant::now() < until, "the server never answered");
        thread::sleep(Duration::from_millis(50));
    }
    let (code, log) = p.stop();
    assert_eq!(code, 143, "{log}");
    let side =
        toolstorm::mcp::session::McpSession::load(&toolstorm::mcp::session::sidecar_path(&record))
            .expect("sidecar");
    let r = side.call(1).expect("the call's record");
    assert_eq!(r.delivered, toolstorm::mcp::session::Delivered::Nothing);
    assert!(
        r.note
            .as_deref()
            .is_some_and(|n| n.contains("the client was gone before the answer came")),
        "{r:?}"
    );
    // What the server answered is kept: it is what committed.
    assert!(
        r.dropped
            .as_ref()
            .is_some_and(|d| toolstorm::json::canonical(d).contains("SHP-")),
        "{r:?}"
    );
    // Nothing was left with the server: the session finished.
    let (_, out) = check(&record);
    assert!(out.contains("✓ Session finished"), "{out}");
}

#[test]
fn a_listening_replay_ended_by_sigterm_writes_its_report_finished() {
    let (record, p) = listening("http-replay-term", "term.json", &[]);
    let url = p.url().to_owned();
    let answer = a_session_with_one_call(&url, "A1");
    assert_eq!(answer.status, 200, "{}", answer.body);
    let (code, log) = p.stop();
    assert_eq!(code, 143, "{log}");
    let rec = record.display().to_string();
    let report = record.with_file_name("term-replay.json");
    let rep = report.display().to_string();
    let r = Proxy::start(
        &[
            "--replay",
            &rec,
            "--replay-report",
            &rep,
            "--listen",
            "127.0.0.1:0",
        ],
        &[],
    );
    let again = a_session_with_one_call(r.url(), "A1");
    assert_eq!(again.status, 200, "{}", again.body);
    let (code, log) = r.stop();
    assert_eq!(code, 143, "{log}");
    assert!(log.contains("1 of 1 recorded call(s) matched"), "{log}");
    let written = std::fs::read_to_string(&report).expect("report");
    let v = toolstorm::json::parse(&written).expect("json");
    let o = v.as_object().expect("object");
    assert_eq!(
        o.get("finished").and_then(|f| f.as_bool()),
        Some(true),
        "{written}"
    );
    assert_eq!(
        o.get("matched").and_then(|m| m.as_i64()),
        Some(1),
        "{written}"
    );
}

#[test]
fn the_executor_runs_a_batch_against_a_server_reached_by_url() {
    // The example server behind a recording proxy that listens: to the executor, a server
    // at a URL. The same batch and outcomes as over stdio (tests/executor_mcp.rs), and the
    // approved calls reach the server once each, on record.
    let (record, p) = listening(
        "http-executor",
        "exec.json",
        &[("SHIPPING_EFFECTS_META", "1")],
    );
    let url = p.url().to_owned();
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/mcp-batch.json");
    let out = Command::new(BIN)
        .args(["run", scenario, "--live", "--mcp", "--", &url])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{text}{err}");
    assert!(text.contains("tools: MCP server"), "{text}");
    for line in common::MCP_BATCH_OUTCOMES {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    assert!(text.contains("effects: 2"), "{text}");
    let (code, log) = p.stop();
    assert_eq!(code, 143, "a listener ends on SIGTERM: {log}");
    // What the server was asked, as the proxy recorded it: one call per attempt (A, B and
    // E), not the one the executor refused for bad arguments nor the unknown tool.
    let doc = toolstorm::document::Document::open(&record).expect("the recording opens");
    let mut tools: Vec<String> = doc.runs[0]
        .timeline
        .report()
        .calls
        .iter()
        .map(|c| c.tool.to_lossy())
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        ["check_inventory", "create_shipment", "create_shipment"]
    );
}

#[test]
fn the_explorer_follows_an_http_recording_while_its_proxy_runs_and_judges_it_once_it_ends() {
    use toolstorm::tui::action::Action;
    use toolstorm::tui::runtime::dispatch;
    let (record, p) = listening("http-follow", "follow.json", &[]);
    let url = p.url().to_owned();
    let session = initialize(&url, &[]);
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let a = request(&url, "POST", &headers, &call(1, "A1"));
    assert!(a.body.contains("shipment_id"), "{}", a.body);
    // Opened while the session runs: live, with the call so far, and how it was reached.
    let doc = toolstorm::document::Document::open(&record).expect("a live recording opens");
    assert!(doc.live, "its proxy holds it");
    assert_eq!(doc.runs[0].timeline.report().calls.len(), 1);
    let transport = doc.runs[0]
        .mcp
        .as_deref()
        .and_then(|m| m.transport.as_deref())
        .expect("the transport is on record");
    assert_eq!(transport.client, "streamable-http");
    let mut app = toolstorm::tui::app::App::new(doc);
    app.update(Action::Last);
    // A second call: on the last call, the explorer moves to it.
    let a = request(&url, "POST", &headers, &call(2, "A2"));
    assert!(a.body.contains("shipment_id"), "{}", a.body);
    dispatch(&mut app, Action::FileChanged);
    assert_eq!(app.cursor, Some(1), "{}", app.status);
    assert!(app.doc.live);
    assert!(app.status.contains("1 new call"), "{}", app.status);
    // The proxy ends: the next tick sees the session over and reads the finished recording.
    let (code, log) = p.stop();
    assert_eq!(code, 143, "{log}");
    dispatch(&mut app, Action::Tick);
    assert!(!app.doc.live, "{}", app.status);
    assert_eq!(app.doc.runs[0].timeline.report().calls.len(), 2);
}

#[test]
fn print_config_gives_the_url_entry_of_a_listening_proxy_and_the_stdio_entry_of_a_url_server() {
    let config = |args: &[&str]| {
        let out = Command::new(BIN)
            .arg("mcp")
            .args(args)
            .output()
            .expect("runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), text, err)
    };
    let entry = |text: &str| {
        let v = toolstorm::json::parse(text.trim()).expect("JSON");
        common::get(common::get(&v, "mcpServers"), "ship").clone()
    };
    // A client that speaks HTTP is given the listening proxy's URL, with the type Claude
    // Code and VS Code ask for; a wildcard address is reached on loopback.
    for (listen, url) in [
        ("127.0.0.1:8931", "http://127.0.0.1:8931/mcp"),
        ("0.0.0.0:8931", "http://127.0.0.1:8931/mcp"),
        ("[::1]:8931", "http://[::1]:8931/mcp"),
    ] {
        let (code, text, err) = config(&[
            "--print-config",
            "ship",
            "--record",
            "x.json",
            "--listen",
            listen,
            "--allow-remote",
            "--",
            "https://mcp.example.com/mcp",
        ]);
        assert_eq!(code, Some(0), "{err}");
        let e = entry(&text);
        assert_eq!(common::get_str(&e, "type"), "http", "{text}");
        assert_eq!(common::get_str(&e, "url"), url, "{text}");
        assert!(
            err.contains("start the proxy with the same command"),
            "{err}"
        );
    }
    // Port 0 cannot be given to a client before the proxy starts.
    let (code, text, err) = config(&[
        "--print-config",
        "ship",
        "--listen",
        "127.0.0.1:0",
        "--",
        "https://mcp.example.com/mcp",
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(err.contains("needs a fixed port"), "{err}");
    assert!(text.is_empty(), "{text}");
    // A --header the proxy would refuse at start is refused before a client is given it,
    // and so is a name given twice.
    for (headers, why) in [
        (
            &["Content-Length: 5"][..],
            "the proxy sets this header itself",
        ),
        (
            &["X-Team: a", "x-team: b"][..],
            "--header x-team is given twice",
        ),
    ] {
        let mut args = vec!["--print-config", "ship"];
        for h in headers {
            args.extend(["--header", h]);
        }
        args.extend(["--", "https://mcp.example.com/mcp"]);
        let (code, text, err) = config(&args);
        assert_eq!(code, Some(2), "{text}");
        assert!(err.contains(why), "{err}");
        assert!(text.is_empty(), "{text}");
    }
    // A `$VAR` is read when the proxy starts, not here.
    let (code, _, err) = config(&[
        "--print-config",
        "ship",
        "--header",
        "Authorization: $UNSET_FOR_PRINT_CONFIG",
        "--",
        "https://mcp.example.com/mcp",
    ]);
    assert_eq!(code, Some(0), "{err}");
    // A stdio client of a URL server starts the proxy, which reaches the URL.
    let (code, text, err) = config(&[
        "--print-config",
        "ship",
        "--record",
        "x.json",
        "--",
        "https://mcp.example.com/mcp",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let e = entry(&text);
    let args: Vec<&str> = common::get_array(&e, "args")
        .iter()
        .filter_map(toolstorm::json::Value::as_str)
        .collect();
    assert_eq!(args.first(), Some(&"mcp"), "{text}");
    assert_eq!(args.last(), Some(&"https://mcp.example.com/mcp"), "{text}");
    assert!(
        Path::new(common::get_str(&e, "command")).is_absolute(),
        "{text}"
    );
}

#[test]
fn a_full_disk_refuses_the_calls_it_cannot_record_and_check_counts_them_apart() {
    // A 48 KB tmpfs where the machine lets the test mount one (root; the recorder's own
    // tests inject the write error elsewhere). Calls with 2 KB arguments fill it.
    let dir = common::scratch_dir("http-full").join("tmpfs-48k");
    std::fs::create_dir_all(&dir).expect("dir");
    let shown = dir.display().to_string();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=48k", "tmpfs", &shown])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("no tmpfs could be mounted here: the full-disk case is not run");
        return;
    }
    /// Unmounts the folder however the test ends.
    struct Mounted(String);
    impl Drop for Mounted {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _mounted = Mounted(shown.clone());
    let record = dir.join("full.json");
    let rec = record.display().to_string();
    let server = common::example_server().display().to_string();
    let p = Proxy::start(
        &["--record", &rec, "--listen", "127.0.0.1:0", "--", &server],
        &[],
    );
    let url = p.url().to_owned();
    let session = initialize(&url, &[]);
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let note = "n".repeat(2000);
    let (mut answered, mut refused) = (0, 0);
    for id in 1..=40 {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"create_shipment","arguments":{{"order_id":"o-{id}","note":"{note}"}}}}}}"#
        );
        let a = request(&url, "POST", &headers, &body);
        if a.body.contains("shipment_id") {
            assert_eq!(
                refused, 0,
                "no call is answered after the recording stopped"
            );
            answered += 1;
        } else if a.body.contains("this call was not sent to the MCP server") {
            refused += 1;
        } else {
            panic!("call {id}: {}", a.body);
        }
    }
    assert!(
        answered > 3 && refused > 3,
        "{answered} answered, {refused} refused"
    );
    let (_, log) = p.stop();
    assert!(log.contains("No space left on device"), "{log}");
    // The recording holds the calls answered, and says it stopped after them: a call whose
    // line could not be written is one of those refused, not one taken.
    let doc = toolstorm::document::Document::open(&record).expect("the recording opens");
    let calls = doc.runs[0].timeline.report().calls.len();
    assert_eq!(calls, answered);
    let mcp = doc.runs[0].mcp.as_deref().expect("mcp");
    let st = mcp.recording_stopped.as_ref().expect("it says it stopped");
    assert_eq!(st.after_calls as usize, answered, "{st:?}");
    // What it counted before the disk took no more is a floor, and said as one.
    assert!(st.refused as usize <= refused, "{st:?}");
    let (code, out) = check(&record);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "✗ Recording complete: the recording stopped after {answered} call(s): the journal \
             could not be written"
        )) && out.contains(&format!("at least {} later", st.refused)),
        "{out}"
    ); // The wire log left the little room there was to the recording: it stopped at once,
    // and says why.
    let wire = toolstorm::mcp::wirelog::read::read(&toolstorm::mcp::wirelog::wire_path(&record))
        .expect("the wire log is there");
    assert!(wire.entries.is_empty(), "{wire:?}");
    assert!(
        wire.stopped
            .as_deref()
            .is_some_and(|s| s.contains("MB free")),
        "{wire:?}"
    );
}

// ----- a scripted Streamable HTTP server upstream -----

/// What the scripted server saw: (method, headers lower-cased, body).
type Seen = Arc<Mutex<Vec<(String, String, String)>>>;

/// How many `tools/call` requests the scripted server was sent.
fn calls_sent(seen: &Seen) -> usize {
    let seen = seen.lock().expect("seen");
    seen.iter()
        .filter(|(_, _, b)| b.contains("tools/call"))
        .count()
}

/// Serves each request with `script(method, headers, body)`, whose answer is written as is
/// (status line, headers, body) and the connection closed.
fn scripted(script: impl Fn(&str, &str, &str) -> String + Send + Sync + 'static) -> (String, Seen) {
    scripted_on(None, script)
}

/// An HTTP request's head, up to its blank line (what there is of it, if the connection ends).
fn read_head(reader: &mut impl BufRead) -> String {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            return head;
        }
        head.push_str(&line);
    }
}

/// A connection of the scripted server: plain TCP or TLS over it.
trait Conn: Read + Write + Send {}
impl<T: Read + Write + Send> Conn for T {}

/// [`scripted`], over TLS with `tls` (then the URL is `https://localhost:PORT/mcp`).
fn scripted_on(
    tls: Option<Arc<rustls::ServerConfig>>,
    script: impl Fn(&str, &str, &str) -> String + Send + Sync + 'static,
) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let url = match tls {
        Some(_) => format!("https://localhost:{port}/mcp"),
        None => format!("http://127.0.0.1:{port}/mcp"),
    };
    let seen: Seen = Arc::default();
    let script = Arc::new(script);
    let log = Arc::clone(&seen);
    thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { continue };
            let script = Arc::clone(&script);
            let log = Arc::clone(&log);
            let tls = tls.clone();
            thread::spawn(move || {
                let conn: Box<dyn Conn> = match tls {
                    Some(config) => {
                        let Ok(server) = rustls::ServerConnection::new(config) else {
                            return;
                        };
                        Box::new(rustls::StreamOwned::new(server, tcp))
                    }
                    None => Box::new(tcp),
                };
                let mut reader = BufReader::new(conn);
                let head = read_head(&mut reader);
                let len = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                    })
                    .unwrap_or(0);
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                let method = head.split_whitespace().next().unwrap_or("").to_owned();
                let body = String::from_utf8_lossy(&body).into_owned();
                let lower = head.to_ascii_lowercase();
                log.lock()
                    .expect("log")
                    .push((method.clone(), lower.clone(), body.clone()));
                let answer = script(&method, &lower, &body);
                // An answer may be given in parts: `\u{0}` pauses between them.
                let conn = reader.get_mut();
                for part in answer.split('\u{0}') {
                    let _ = conn.write_all(part.as_bytes());
                    let _ = conn.flush();
                    thread::sleep(Duration::from_millis(30));
                }
            });
        }
    });
    (url, seen)
}

fn json_answer(extra: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn sse_head() -> String {
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n".to_owned()
}

const INIT_ANSWER: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}}"#;

/// The scripted server's usual answers: initialize (session S1), 202 for notifications and
/// answers, 405 for GET, 200 for DELETE; `tools` answers a tools/call.
fn usual(method: &str, body: &str, tools: impl Fn(&str) -> String) -> String {
    match method {
        "GET" => {
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                .into()
        }
        "DELETE" => "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into(),
        _ if body.contains("\"initialize\"") => json_answer("Mcp-Session-Id: S1\r\n", INIT_ANSWER),
        _ if body.contains("tools/call") => tools(body),
        _ => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into(),
    }
}

/// An answer that never comes fails the test instead of hanging it: the proxy is stopped
/// after a minute unless the test says it is done first (sends on what this gives).
fn stop_unless_done(p: &Proxy) -> std::sync::mpsc::Sender<()> {
    let pid = p.child.id().to_string();
    let (done, watch) = std::sync::mpsc::channel::<()>();
    thread::spawn(move || {
        if watch.recv_timeout(Duration::from_secs(60)).is_err() {
            let _ = Command::new("kill").arg(&pid).status();
        }
    });
    done
}

/// A stdio client's session with a proxy: lines in, lines out.
/// A stdio client of a proxy recording (to `name` in a scratch folder named by `tag`) in
/// front of the server at `url`: the recording's path, the proxy and the client.
fn recording_to(url: &str, tag: &str, name: &str) -> (std::path::PathBuf, Proxy, Stdio2) {
    let record = common::scratch_recording(tag, name);
    let mut p = Proxy::start(&["--record", &record.display().to_string(), "--", url], &[]);
    let c = Stdio2::of(&mut p);
    (record, p, c)
}

/// A proxy listening for HTTP clients on a free port, recording (to `name` in a scratch folder
/// named by `tag`) in front of the server at `url`: the recording's path and the proxy.
fn listening_to(url: &str, tag: &str, name: &str) -> (std::path::PathBuf, Proxy) {
    let record = common::scratch_recording(tag, name);
    let rec = record.display().to_string();
    let p = Proxy::start(
        &["--record", &rec, "--listen", "127.0.0.1:0", "--", url],
        &[],
    );
    (record, p)
}

struct Stdio2 {
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Stdio2 {
    /// Sends `initialize` and checks the scripted server answered it (`what` names the case).
    fn initialize(&mut self, what: &str) {
        self.send(INIT);
        let answer = self.next();
        assert_eq!(
            answer["result"]["serverInfo"]["name"], "scripted",
            "{what}: {answer}"
        );
    }

    fn of(p: &mut Proxy) -> Stdio2 {
        Stdio2 {
            input: p.child.stdin.take().expect("stdin"),
            output: BufReader::new(p.child.stdout.take().expect("stdout")),
        }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.input, "{line}").expect("send");
        self.input.flush().expect("flush");
    }

    fn next(&mut self) -> serde_json::Value {
        let mut line = String::new();
        self.output.read_line(&mut line).expect("read");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("a message: {line:?}"))
    }
}

#[test]
fn a_web_page_or_no_server_at_the_url_is_said_in_an_error_without_the_urls_secrets() {
    // A URL without its /mcp: the site's page, 200 text/html, to every request.
    let page = "<html>\n<body><h1>Welcome to Shipping Co</h1></body>\n</html>";
    let (url, _) = scripted(move |_, _, _| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        )
    });
    // A user, a key in the path and a key in the query, as hosted servers take them.
    let url = url
        .replacen("http://", "http://ops:pw-DO-NOT-KEEP@", 1)
        .replacen("/mcp", "/s/PathKey0DoNotKeep/mcp", 1)
        + "?api_key=key-DO-NOT-KEEP";
    // And a URL where nothing listens (port 1), with the same secrets.
    let nobody =
        "http://ops:pw-DO-NOT-KEEP@127.0.0.1:1/s/PathKey0DoNotKeep/mcp?api_key=key-DO-NOT-KEEP";
    for (target, said) in [
        (
            url.as_str(),
            "answered HTTP 200 with text/html; charset=utf-8, not an MCP message",
        ),
        (nobody, "cannot reach the MCP server at"),
    ] {
        let record = common::scratch_recording("http-notmcp", "notmcp.json");
        let rec = record.display().to_string();
        let mut p = Proxy::start(&["--record", &rec, "--", target], &[]);
        let mut c = Stdio2::of(&mut p);
        c.send(INIT);
        // An error the client can show, not a page it cannot read as a message.
        let answer = c.next();
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(said), "{answer}");
        if target == url {
            assert!(message.contains("Welcome to Shipping Co"), "{answer}");
            assert!(message.contains("/mcp"), "{answer}");
            assert_eq!(answer["error"]["data"]["http_status"], 200, "{answer}");
        }
        drop(c);
        wait_for(&mut p.child, Duration::from_secs(15));
        let log = p.log.lock().expect("log").clone();
        assert!(log.contains(said), "{log}");
        // No agent was tested: the session never started, whatever else passed.
        let (code, out) = check(&record);
        assert_eq!(code, 1, "{out}");
        assert!(
            out.contains("✗ Session finished: the session never started: the server answered initialize with an error (JSON-RPC error -32000: "),
            "{out}"
        );
        assert!(log.contains("/s/[REDACTED]/mcp"), "{log}");
        for secret in ["pw-DO-NOT-KEEP", "key-DO-NOT-KEEP", "PathKey0DoNotKeep"] {
            assert!(!message.contains(secret), "{secret} in {answer}");
            assert!(!out.contains(secret), "{secret} in {out}");
            assert!(!log.contains(secret), "{secret} in {log}");
            assert!(!files_of(&record).contains(secret), "{secret} kept");
        }
    }
}

/// The scripted server's answers, with each call's `{"shipment_id":1}`.
fn shipping(method: &str, _: &str, body: &str) -> String {
    usual(method, body, |b| {
        let id = serde_json::from_str::<serde_json::Value>(b).expect("a call")["id"].clone();
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
            "content": [{"type": "text", "text": "{\"shipment_id\":1}"}],
            "structuredContent": {"shipment_id": 1}}});
        json_answer("", &answer.to_string())
    })
}

/// A stdio client's session through `p` with a [`shipping`] server: initialize, one call;
/// the proxy's exit code and its stderr.
fn one_shipment(mut p: Proxy, what: &str) -> (i32, String) {
    let mut c = Stdio2::of(&mut p);
    c.initialize(what);
    c.send(INITIALIZED);
    shipped(&mut c, 2, what);
    drop(c);
    let code = wait_for(&mut p.child, Duration::from_secs(15));
    thread::sleep(Duration::from_millis(50));
    let log = p.log.lock().expect("log").clone();
    (code, log)
}

/// Sends call `id` for order A1 and checks a [`shipping`] server answered it.
fn shipped(c: &mut Stdio2, id: u64, what: &str) {
    c.send(&call(id, "A1"));
    let done = c.next();
    assert_eq!(
        done["result"]["structuredContent"]["shipment_id"], 1,
        "{what}: {done}"
    );
}

/// The scripted server's TLS set-up: the certificate for localhost that the test authority
/// (tests/fixtures/tls) signed.
fn test_tls() -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    let certs = CertificateDer::pem_file_iter(dir.join("localhost.pem"))
        .expect("the certificate")
        .collect::<Result<Vec<_>, _>>()
        .expect("the certificate");
    let key = PrivateKeyDer::from_pem_file(dir.join("localhost.key")).expect("the key");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .expect("a TLS set-up");
    Arc::new(config)
}

#[test]
fn an_https_server_is_verified_reached_when_its_authority_is_trusted_and_refused_in_words_when_not()
{
    let (url, seen) = scripted_on(Some(test_tls()), shipping);
    assert!(url.starts_with("https://localhost:"), "{url}");
    let authority = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls/authority.pem");
    // Trusted through SSL_CERT_FILE: the session runs over TLS and is recorded.
    let record = common::scratch_recording("https-trusted", "tls.json");
    let rec = record.display().to_string();
    let p = Proxy::start(
        &["--record", &rec, "--", &url],
        &[("SSL_CERT_FILE", &authority.display().to_string())],
    );
    let (code, log) = one_shipment(p, &url);
    assert_eq!(code, 0, "{log}");
    let (code, out) = check(&record);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Call budget: 1 /"), "{out}");
    assert!(
        seen.lock()
            .expect("seen")
            .iter()
            .any(|(_, _, b)| b.contains("tools/call")),
        "the call went over TLS"
    );
    // Not trusted (neither bundled nor in this machine's store): refused, in words, and no
    // request reaches the server.
    // (A connection whose handshake failed shows as a request without a method.)
    let requests = || {
        seen.lock()
            .expect("seen")
            .iter()
            .filter(|(m, _, _)| !m.is_empty())
            .count()
    };
    let before = requests();
    let (_record, mut p, mut c) = recording_to(&url, "https-untrusted", "tls.json");
    c.send(INIT);
    let refused = c.next();
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("UnknownIssuer")
            && message.contains("not signed by an authority trusted here")
            && message.contains("SSL_CERT_FILE"),
        "{refused}"
    );
    drop(c);
    wait_for(&mut p.child, Duration::from_secs(15));
    assert_eq!(requests(), before, "nothing was sent");

    // A listening proxy whose SSL_CERT_FILE cannot be used still says where it listens
    // first (Proxy::start reads that line), and the note why comes after it.
    let note_for = |file: &str| {
        let p = Proxy::start(
            &["--listen", "127.0.0.1:0", "--", &url],
            &[("SSL_CERT_FILE", file)],
        );
        assert!(p.url().starts_with("http://127.0.0.1:"));
        let (_, log) = p.stop();
        log.lines().nth(1).unwrap_or_default().to_owned()
    };
    let note = note_for("/nonexistent/ca.pem");
    assert!(
        note.contains("SSL_CERT_FILE /nonexistent/ca.pem cannot be read"),
        "{note}"
    );
    // A FIFO is refused, not waited on (nothing will ever write to it).
    let fifo = common::scratch_recording("https-fifo", "ca.pem");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let shown = fifo.display().to_string();
    let note = note_for(&shown);
    assert!(
        note.contains(&shown) && note.contains("cannot be read (not a regular file (a FIFO))"),
        "{note}"
    );
    // A file without a PEM certificate (a DER file, a key, a typo) is said to add none.
    let garbage = common::scratch_file("https-garbage", "ca.der", "not a certificate\n");
    let note = note_for(&garbage.display().to_string());
    assert!(note.contains("ca.der holds no PEM certificate"), "{note}");
    // Past the 8 MB every file we read stops at, the rest is said to be left out.
    let pem = std::fs::read_to_string(&authority).expect("authority");
    let big = pem.repeat(8_000_001 / pem.len() + 1);
    let huge = common::scratch_file("https-huge", "bundle.pem", &big);
    let note = note_for(&huge.display().to_string());
    assert!(
        note.contains("bundle.pem exceeds 8,000,000 bytes"),
        "{note}"
    );
    // SSL_CERT_DIR still stands in for the store beside it: the authority there is trusted.
    let dir = common::scratch_dir("https-cert-dir").join("certs");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::copy(&authority, dir.join("authority.pem")).expect("copy");
    let record = common::scratch_recording("https-cert-dir", "tls.json");
    let rec = record.display().to_string();
    let p = Proxy::start(
        &["--record", &rec, "--", &url],
        &[
            ("SSL_CERT_FILE", &shown),
            ("SSL_CERT_DIR", &dir.display().to_string()),
        ],
    );
    let (code, log) = one_shipment(p, &url);
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("(a FIFO)"), "{log}");
}

// ----- an HTTP proxy between us and the server -----

/// `Proxy-Authorization` the test proxy asks for: `ops:pw-DO-NOT-KEEP`, in Basic.
const PROXY_AUTH: &str = "proxy-authorization: basic b3bzonb3lurplu5pvc1lruvq";

/// Copies one way until the end, then ends the other side's writing.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// A small HTTP proxy as companies run them: it asks for credentials (407 without), opens
/// a tunnel for `CONNECT host:port`, and passes any other request on by its absolute URL;
/// every host it is asked for is this machine (so a name only it knows can be used). What
/// it saw: (request line, headers lower-cased, "").
fn http_proxy() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("addr");
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            let log = Arc::clone(&log);
            thread::spawn(move || {
                let mut reader = BufReader::new(client);
                let head = read_head(&mut reader);
                let first = head.lines().next().unwrap_or("").to_owned();
                let lower = head.to_ascii_lowercase();
                log.lock()
                    .expect("log")
                    .push((first.clone(), lower.clone(), String::new()));
                let mut words = first.split_whitespace();
                let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
                let authority = target.trim_start_matches("http://");
                let authority = authority.split('/').next().unwrap_or("");
                let port = authority.rsplit(':').next().unwrap_or("80");
                if !lower.contains(PROXY_AUTH) {
                    let _ = reader.get_mut().write_all(
                        b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"corp\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                    return;
                }
                let Ok(mut server) = TcpStream::connect(format!("127.0.0.1:{port}")) else {
                    return;
                };
                if method == "CONNECT" {
                    let _ = reader
                        .get_mut()
                        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                } else {
                    // Passed on in origin form, without our credentials, with what was read.
                    let path = &target[target.find(authority).unwrap_or(0) + authority.len()..];
                    let mut out = format!("{method} {path} HTTP/1.1\r\n");
                    for line in head.lines().skip(1) {
                        if !line.to_ascii_lowercase().starts_with("proxy-authorization") {
                            out.push_str(line);
                            out.push_str("\r\n");
                        }
                    }
                    out.push_str("\r\n");
                    let _ = server.write_all(out.as_bytes());
                    let _ = server.write_all(reader.buffer());
                }
                let client = reader.into_inner();
                let (c2, s2) = (
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                );
                thread::spawn(move || pipe(c2, s2));
                pipe(server, client);
            });
        }
    });
    (format!("http://{address}"), seen)
}

#[test]
fn a_server_is_reached_through_the_environments_http_proxy_and_its_credentials_kept_nowhere() {
    let (proxy, through) = http_proxy();
    let with_credentials = proxy.replacen("http://", "http://ops:pw-DO-NOT-KEEP@", 1);
    let authority = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls/authority.pem");
    let authority = authority.display().to_string();
    // https:// through a CONNECT tunnel, http:// by its absolute URL. The server's name is
    // one only the proxy resolves: reaching it at all proves the way.
    let (tls_url, tls_seen) = scripted_on(Some(test_tls()), shipping);
    let (plain_url, plain_seen) = scripted(shipping);
    let tls_url = tls_url.replacen("localhost", "mcp.example.test", 1);
    let plain_url = plain_url.replacen("127.0.0.1", "mcp.example.test", 1);
    // The plain server's URL carries its own user and password (sent as Basic, never in
    // the request line the proxy sees).
    let plain_with_user = plain_url.replacen("http://", "http://srv:srvpw-DO-NOT-KEEP@", 1);
    for (url, variable) in [(&tls_url, "HTTPS_PROXY"), (&plain_with_user, "HTTP_PROXY")] {
        let record = common::scratch_recording("http-proxy", "proxied.json");
        let rec = record.display().to_string();
        let p = Proxy::start(
            &["--record", &rec, "--", url],
            &[
                (variable, &with_credentials),
                ("NO_PROXY", ""),
                ("no_proxy", ""),
                ("SSL_CERT_FILE", &authority),
            ],
        );
        let (code, log) = one_shipment(p, url);
        assert_eq!(code, 0, "{log}");
        assert!(
            log.contains(&format!(
                "the server is reached through the HTTP proxy {proxy} "
            )),
            "{log}"
        );
        let (code, out) = check(&record);
        assert_eq!(code, 0, "{out}");
        for text in [&log, &out, &files_of(&record)] {
            assert!(!text.contains("pw-DO-NOT-KEEP"), "{text}");
            assert!(!text.contains("b3BzOnB3"), "{text}");
            assert!(!text.contains("c3J2OnNydnB3"), "{text}");
        }
    }
    let lines: Vec<String> = through
        .lock()
        .expect("seen")
        .iter()
        .map(|(l, _, _)| l.clone())
        .collect();
    let tls_authority = tls_url
        .trim_start_matches("https://")
        .trim_end_matches("/mcp");
    assert!(
        lines.contains(&format!("CONNECT {tls_authority} HTTP/1.1")),
        "{lines:?}"
    );
    assert!(
        lines.contains(&format!("POST {plain_url} HTTP/1.1")),
        "{lines:?}"
    );
    // Through the proxy: every absolute-form request with the proxy's credentials, in a
    // request line without the server's user part.
    let forwarded: Vec<(String, String, String)> = through
        .lock()
        .expect("seen")
        .iter()
        .filter(|(l, _, _)| !l.starts_with("CONNECT"))
        .cloned()
        .collect();
    assert!(!forwarded.is_empty());
    for (line, head, _) in &forwarded {
        assert!(line.contains(" http://mcp.example.test:"), "{line}");
        assert!(!line.contains("srv"), "{line}");
        assert!(head.contains(PROXY_AUTH), "{head}");
    }
    // The server's user and password reached it as Basic (base64 of srv:srvpw-DO-NOT-KEEP).
    assert!(
        plain_seen
            .lock()
            .expect("seen")
            .iter()
            .any(|(_, h, _)| h.contains("authorization: basic c3j2onnydnb3lurplu5pvc1lruvq")),
    );
    // Inside the tunnel, the server never sees the proxy's credentials.
    let tls_seen = tls_seen.lock().expect("seen").clone();
    assert!(tls_seen.iter().any(|(m, _, _)| m == "POST"));
    assert!(
        tls_seen
            .iter()
            .all(|(_, h, _)| !h.contains("proxy-authorization")),
        "{tls_seen:?}"
    );
    // Without credentials the proxy says 407, and the client is told what to do.
    for (url, variable) in [(&tls_url, "HTTPS_PROXY"), (&plain_url, "HTTP_PROXY")] {
        let mut p = Proxy::start(
            &["--", url],
            &[
                (variable, &proxy),
                ("NO_PROXY", ""),
                ("no_proxy", ""),
                ("SSL_CERT_FILE", &authority),
            ],
        );
        let mut c = Stdio2::of(&mut p);
        c.send(INIT);
        let refused = c.next();
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("(through the proxy {proxy})"))
                && message.contains("the HTTP proxy asks for credentials, or refused those given"),
            "{url}: {refused}"
        );
    }
}

#[test]
fn an_answer_with_a_byte_order_mark_and_another_label_still_reaches_the_client() {
    // JSON labelled text/plain, after a UTF-8 byte-order mark.
    let (url, _) = scripted(move |_, _, _| {
        let body = format!("\u{feff}{INIT_ANSWER}");
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nMcp-Session-Id: S1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    });
    let (_record, mut p, mut c) = recording_to(&url, "http-bom", "bom.json");
    c.initialize("JSON after a byte-order mark, labelled text/plain");
    drop(c);
    wait_for(&mut p.child, Duration::from_secs(15));
}

#[test]
fn a_stdio_client_reaches_a_remote_server_with_its_stream_messages_in_order() {
    let answer = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"shipment_id\":7}"}],"structuredContent":{"shipment_id":7}}}"#;
    let (url, seen) = scripted(move |m, _, body| {
        usual(m, body, |_| {
            format!(
                "{}id: a1\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"p2\",\"progress\":1}}}}\n\n\u{0}id: a2\ndata: {{\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"ping\"}}\n\n\u{0}id: a3\ndata: {answer}\n\n",
                sse_head()
            )
        })
    });
    let record = common::scratch_recording("http-upstream", "up.json");
    let rec = record.display().to_string();
    let mut p = Proxy::start(
        &[
            "--record",
            &rec,
            "--header",
            "Authorization: $UP_TOKEN",
            "--",
            &url,
        ],
        &[("UP_TOKEN", "Bearer up-DO-NOT-KEEP")],
    );
    let mut c = Stdio2::of(&mut p);
    c.initialize("a stdio client to a remote server");
    c.send(INITIALIZED);
    c.send(&call(2, "A1"));
    // Messages before the answer reach the client first, in the order the stream had them.
    assert_eq!(c.next()["method"], "notifications/progress");
    let ping = c.next();
    assert_eq!(ping["method"], "ping");
    c.send(r#"{"jsonrpc":"2.0","id":"srv-1","result":{}}"#);
    let done = c.next();
    assert_eq!(done["id"], 2);
    assert_eq!(done["result"]["structuredContent"]["shipment_id"], 7);
    drop(c);
    let code = wait_for(&mut p.child, Duration::from_secs(15));
    assert_eq!(code, 0, "{}", p.log.lock().expect("log"));
    let lock = toolstorm::mcp::session::journal_path(&record).with_extension("lock");
    assert!(!lock.exists(), "the session's lock file is left behind");

    let seen = seen.lock().expect("seen").clone();
    let methods: Vec<&str> = seen.iter().map(|(m, _, _)| m.as_str()).collect();
    assert_eq!(methods.first(), Some(&"POST"));
    assert_eq!(
        methods.last(),
        Some(&"DELETE"),
        "the session ends with DELETE: {methods:?}"
    );
    for (m, head, body) in &seen[1..] {
        assert!(
            head.contains("mcp-session-id: s1"),
            "{m} {body} without the session: {head}"
        );
        assert!(
            head.contains("mcp-protocol-version: 2025-11-25"),
            "{m}: {head}"
        );
        assert!(
            head.contains("authorization: bearer up-do-not-keep"),
            "--header sent: {head}"
        );
    }
    assert!(
        seen.iter()
            .any(|(_, _, b)| b.contains("\"srv-1\"") && b.contains("result")),
        "the client's answer to the server's ping went upstream"
    );
    assert_eq!(
        seen.iter()
            .filter(|(_, _, b)| b.contains("tools/call"))
            .count(),
        1,
        "never sent twice"
    );
    assert!(!files_of(&record).contains("DO-NOT-KEEP"));
    let (code, out) = check(&record);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_header_the_proxy_adds_reaches_the_server_and_its_value_is_written_and_shown_nowhere() {
    // Lower case: the scripted server keeps the heads it saw lower-cased.
    const SECRET: &str = "ship-unique-secret-7c41e9";
    let dir = common::fresh_dir("http-added");
    let record = common::scratch_recording("http-added", "added.json");
    let rec = record.display().to_string();
    let (url, seen) = scripted(shipping);
    let env = [("SHIP_TOKEN", SECRET)];
    let added = [
        "--header",
        "X-Upstream-Auth: $SHIP_TOKEN",
        "--header",
        "User-Agent: ship-agent/1",
    ];
    // The agent's command holds it too, as a user would write it out.
    let agent = format!(
        "export SHIP_TOKEN={SECRET}; curl -u ops:{SECRET} -H 'X-Upstream-Auth: {SECRET}' \
         https://ops:{SECRET}@ship.example/mcp && agent --ship-key {SECRET}"
    );
    let mut args = vec!["--record", rec.as_str(), "--agent-cmd", agent.as_str()];
    args.extend(added);
    args.extend(["--", url.as_str()]);
    let (code, log) = one_shipment(Proxy::start(&args, &env), "an added header");
    assert_eq!(code, 0, "{log}");
    // The server was sent it with every request (a connection the exiting proxy opened
    // and closed before it wrote a head carries no request).
    let sent = seen.lock().expect("seen").clone();
    assert!(sent.len() >= 3, "{sent:?}");
    for (_, head, _) in sent.iter().filter(|(method, _, _)| !method.is_empty()) {
        assert!(
            head.contains(&format!("x-upstream-auth: {SECRET}")),
            "{head}"
        );
    }
    // The sidecar keeps it as the proxy's, its value hidden (a harmless one shown), and
    // nothing among what the stdio client sent.
    let side: serde_json::Value = sidecar(&record);
    let t = &side["transport"];
    assert_eq!(
        t["added_headers"],
        serde_json::json!({"x-upstream-auth": "[REDACTED]", "user-agent": "ship-agent/1"}),
        "{side}"
    );
    assert_eq!(t["request_headers"], serde_json::json!({}), "{side}");
    let mut shown = log;
    let inspect = Command::new(BIN)
        .args(["inspect", &rec])
        .output()
        .expect("inspect runs");
    let said = String::from_utf8_lossy(&inspect.stdout).into_owned();
    assert!(
        said.contains("the proxy added x-upstream-auth, user-agent to each request"),
        "{said}"
    );
    assert!(
        said.contains(
            "export SHIP_TOKEN=[REDACTED]; curl -u [REDACTED] -H 'X-Upstream-Auth: [REDACTED]' \
             https://[REDACTED]@ship.example/mcp && agent --ship-key [REDACTED]"
        ),
        "{said}"
    );
    shown += &said;
    shown += &String::from_utf8_lossy(&inspect.stderr);
    let (code, out) = check(&record);
    assert_eq!(code, 0, "{out}");
    shown += &out;
    // A printed config names the variable; a value in clear is refused, and not echoed.
    let print = |header: &str| {
        let out = Command::new(BIN)
            .args([
                "mcp",
                "--print-config",
                "ship",
                "--header",
                header,
                "--",
                &url,
            ])
            .envs(env)
            .output()
            .expect("print-config runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };
    let (code, text) = print("X-Upstream-Auth: $SHIP_TOKEN");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("X-Upstream-Auth: $SHIP_TOKEN"), "{text}");
    shown += &text;
    let (code, text) = print(&format!("X-Upstream-Auth: {SECRET}"));
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("--print-config writes no header value into a client's config"),
        "{text}"
    );
    shown += &text;
    assert!(!shown.contains(SECRET), "shown: {shown}");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).expect("dir") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("read");
        assert!(
            !String::from_utf8_lossy(&bytes).contains(SECRET),
            "{} keeps the header's value",
            path.display()
        );
        files += 1;
    }
    assert!(files >= 2, "the cassette and its sidecar were written");
}

#[test]
fn a_call_too_long_to_read_reaches_a_remote_server_and_its_answer_comes_back() {
    // The server answers a tools/call under the id it was asked with, as JSON, and an answer
    // itself too long to read whole (the request's bytes again) as events.
    let (url, seen) = scripted(move |m, _, body| {
        usual(m, body, |body| {
            let at = body.rfind("\"id\":").expect("an id") + 5;
            let id: String = body[at..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            let text = "x".repeat(body.len());
            format!(
                "{}data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}}}}\n\n",
                sse_head()
            )
        })
    });
    let (record, mut p, mut c) = recording_to(&url, "http-upstream-long", "long.json");
    let done = stop_unless_done(&p);
    c.initialize("a call over 8 MB to a remote server");
    c.send(INITIALIZED);
    let sku = "s".repeat(8_100_000);
    c.send(&format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"check_inventory","arguments":{{"sku":"{sku}"}}}},"id":7}}"#
    ));
    let answer = c.next();
    assert_eq!(answer["id"], 7, "the answer to the long call, under its id");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.len() > 8_100_000),
        "whole"
    );
    let _ = done.send(());
    drop(c);
    let code = wait_for(&mut p.child, Duration::from_secs(15));
    assert_eq!(code, 0, "{}", p.log.lock().expect("log"));
    assert_eq!(calls_sent(&seen), 1, "sent once");
    let (code, out) = check(&record);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("no call was left in flight"), "{out}");
}

#[test]
fn a_2026_call_too_long_to_read_goes_to_a_remote_server_with_its_name_header() {
    let (url, seen) = scripted(move |m, _, body| {
        usual(m, body, |_| {
            json_answer(
                "",
                r#"{"jsonrpc":"2.0","id":3,"result":{"content":[],"resultType":"complete"}}"#,
            )
        })
    });
    let (_record, mut p, mut c) = recording_to(&url, "http-upstream-2026-long", "long2026.json");
    let done = stop_unless_done(&p);
    let sku = "k".repeat(8_100_000);
    c.send(&format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}},"name":"check_inventory","arguments":{{"sku":"{sku}"}}}}}}"#
    ));
    assert_eq!(c.next()["id"], 3);
    let _ = done.send(());
    drop(c);
    assert_eq!(wait_for(&mut p.child, Duration::from_secs(15)), 0);
    let seen = seen.lock().expect("seen").clone();
    let (_, head, _) = seen
        .iter()
        .find(|(_, _, b)| b.contains("tools/call"))
        .expect("the call went");
    assert!(head.contains("mcp-method: tools/call"), "{head}");
    assert!(head.contains("mcp-name: check_inventory"), "{head}");
}

#[test]
fn nothing_goes_to_a_remote_server_before_its_initialize_is_answered() {
    // A stdio client that sends its messages without waiting for the handshake's answer (the
    // server on stdio would read them in order): over HTTP they would race `initialize`.
    let times: Arc<Mutex<Vec<(String, Instant, Instant)>>> = Arc::default();
    let log = Arc::clone(&times);
    let (url, _) = scripted(move |m, _, body| {
        let came = Instant::now();
        if body.contains("\"initialize\"") {
            thread::sleep(Duration::from_millis(300));
        }
        let answer = usual(m, body, |_| {
            json_answer(
                "",
                r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}"#,
            )
        });
        let what = if body.contains("\"initialize\"") {
            "initialize"
        } else if body.contains("notifications/initialized") {
            "initialized"
        } else if body.contains("tools/call") {
            "call"
        } else if body.contains("srv-1") {
            "client's answer"
        } else {
            "other"
        };
        log.lock()
            .expect("times")
            .push((what.into(), came, Instant::now()));
        answer
    });
    let (_record, mut p, mut c) = recording_to(&url, "http-upstream-order", "order.json");
    c.send(INIT);
    // An answer of the client's (to a ping the server sent meanwhile) is no part of the race.
    c.send(r#"{"jsonrpc":"2.0","id":"srv-1","result":{}}"#);
    c.send(INITIALIZED);
    c.send(&call(2, "A1"));
    assert_eq!(c.next()["result"]["serverInfo"]["name"], "scripted");
    assert_eq!(c.next()["id"], 2);
    drop(c);
    assert_eq!(wait_for(&mut p.child, Duration::from_secs(15)), 0);
    let times = times.lock().expect("times").clone();
    let at = |what: &str| {
        times
            .iter()
            .find(|(w, _, _)| w == what)
            .unwrap_or_else(|| panic!("{what} not sent: {times:?}"))
            .clone()
    };
    let (_, _, answered) = at("initialize");
    for later in ["initialized", "call"] {
        assert!(
            at(later).1 >= answered,
            "{later} went before initialize was answered"
        );
    }
    assert!(
        at("client's answer").1 < answered,
        "the client's answer waited for the handshake"
    );
}

#[test]
fn a_remote_server_that_never_answers_initialize_holds_up_no_session_end() {
    // The handshake hangs; the client sends more than the pump's channel holds, then leaves.
    let (url, _) = scripted(move |m, _, body| {
        if body.contains("\"initialize\"") {
            thread::sleep(Duration::from_secs(30));
        }
        usual(m, body, |_| unreachable!("no call is made"))
    });
    let (_record, mut p, mut c) = recording_to(&url, "http-upstream-hung", "hung.json");
    c.send(INIT);
    for n in 0..200 {
        c.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"ping"}}"#,
            100 + n
        ));
    }
    let left = Instant::now();
    drop(c);
    let code = wait_for(&mut p.child, Duration::from_secs(25));
    assert!(
        left.elapsed() < Duration::from_secs(15),
        "the proxy ended {:?} after its client left (code {code})",
        left.elapsed()
    );
}

#[test]
fn one_http_clients_slow_handshake_holds_up_no_other_client() {
    let (url, _) = scripted(move |m, _, body| {
        if body.contains("slow-client") {
            thread::sleep(Duration::from_millis(1500));
        }
        if body.contains("\"initialize\"") {
            // Answered under the id it was asked with (the proxy gives the second client's
            // `initialize`, id 0 as the first's, an id of its own).
            let id = serde_json::from_str::<serde_json::Value>(body).expect("JSON")["id"].clone();
            let answer = INIT_ANSWER.replacen("\"id\":0", &format!("\"id\":{id}"), 1);
            return json_answer("Mcp-Session-Id: S1\r\n", &answer);
        }
        usual(m, body, |_| {
            json_answer(
                "",
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}"#,
            )
        })
    });
    let (_record, p) = listening_to(&url, "http-slow-handshake", "slow.json");
    let listen = p.url().to_owned();
    let start = Instant::now();
    let slow = {
        let listen = listen.clone();
        thread::spawn(move || {
            let init = INIT.replace("http-test", "slow-client");
            let a = request(&listen, "POST", &[], &init);
            (a.status, start.elapsed())
        })
    };
    thread::sleep(Duration::from_millis(100));
    let session = initialize(&listen, &[]);
    let h = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let c = request(&listen, "POST", &h, &call(1, "A1"));
    let fast = start.elapsed();
    assert_eq!(c.status, 200, "{}", c.head);
    assert_eq!(c.messages().last().expect("an answer")["id"], 1);
    let (status, slow_done) = slow.join().expect("the slow client");
    assert_eq!(status, 200);
    assert!(
        fast < slow_done,
        "the other client's call ({fast:?}) waited for the slow handshake ({slow_done:?})"
    );
    let _ = p.stop();
}

#[test]
fn a_stdio_clients_batch_to_a_remote_server_is_answered_whole_or_refused_request_by_request() {
    // The server takes a batch (as under 2025-03-26) and answers it with an array, except one
    // holding the order "R", which it refuses as a server of a later revision does.
    let batch_answer = r#"[{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"ok"}]}},{"jsonrpc":"2.0","id":4,"result":{"tools":[]}}]"#;
    let (url, _) = scripted(move |m, _, body| {
        if body.starts_with('[') && body.contains("\"O\"") {
            // A single error object instead of the batch's answers.
            return json_answer(
                "",
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"one object"}}"#,
            );
        }
        if body.starts_with('[') && body.contains("\"S\"") {
            // Events answering the first request only, then the stream ends.
            return format!(
                "{}data: {{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{{\"content\":[]}}}}\n\n",
                sse_head()
            );
        }
        if body.starts_with('[') && body.contains("\"R\"") {
            let refusal =
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no batches"}}"#;
            return format!(
                "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{refusal}",
                refusal.len()
            );
        }
        if body.starts_with('[') {
            return json_answer("", batch_answer);
        }
        usual(m, body, |_| unreachable!("calls come in batches here"))
    });
    let (record, mut p, mut c) = recording_to(&url, "http-upstream-batch", "batch.json");
    let done = stop_unless_done(&p);
    c.initialize("batches to a remote server");
    c.send(INITIALIZED);
    let list = |id: u64| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#);
    c.send(&format!("[{},{}]", call(1, "R"), list(2)));
    let refused = c.next();
    let refused = refused.as_array().expect("a batch of errors");
    let ids: Vec<&serde_json::Value> = refused.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [1, 2], "{refused:?}");
    assert!(
        refused.iter().all(|a| a["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("HTTP 400") && m.contains("no batches"))),
        "each request says why: {refused:?}"
    );
    c.send(&format!("[{},{}]", call(3, "A3"), list(4)));
    let answered = c.next();
    assert_eq!(answered[0]["id"], 3, "{answered}");
    assert_eq!(
        answered[1]["result"]["tools"],
        serde_json::json!([]),
        "{answered}"
    );
    // A server that answers a batch with one object, or with events for part of it: what it
    // did not answer is answered with an error, saying why.
    c.send(&format!("[{},{}]", call(5, "S"), list(6)));
    assert_eq!(c.next()["id"], 5, "the event that came");
    let rest = c.next();
    assert_eq!(rest[0]["id"], 6, "{rest}");
    assert!(
        rest[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("ended without")),
        "{rest}"
    );
    c.send(&format!("[{},{}]", call(7, "O"), list(8)));
    let other = c.next();
    let ids: Vec<&serde_json::Value> = other
        .as_array()
        .expect("a batch")
        .iter()
        .map(|a| &a["id"])
        .collect();
    assert_eq!(ids, [7, 8], "{other}");
    assert!(
        other[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("one object"))
    );
    let _ = done.send(());
    drop(c);
    assert_eq!(wait_for(&mut p.child, Duration::from_secs(15)), 0);
    let (code, out) = check(&record);
    assert!(out.contains("no call was left in flight"), "{code}: {out}");
}

#[test]
fn a_stream_cut_by_the_network_is_resumed_and_a_session_the_server_ended_is_said() {
    let answer = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}"#;
    let (url, seen) = scripted(move |m, head, body| {
        if m == "GET" && head.contains("last-event-id: e1") {
            return format!("{}id: e2\ndata: {answer}\n\n", sse_head());
        }
        if body.contains("\"id\":3") {
            return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                .into();
        }
        // The call's stream: a priming event, then the connection ends (no answer).
        usual(m, body, |_| {
            format!("{}id: e1\nretry: 50\ndata: \n\n", sse_head())
        })
    });
    let record = common::scratch_recording("http-resume", "resume.json");
    let rec = record.display().to_string();
    // An SSL_CERT_FILE that cannot be read is for https:// servers only: it never stops an
    // http:// one from being reached.
    let mut p = Proxy::start(
        &["--record", &rec, "--", &url],
        &[("SSL_CERT_FILE", "/nonexistent/ca.pem")],
    );
    let mut c = Stdio2::of(&mut p);
    c.send(INIT);
    c.next();
    c.send(INITIALIZED);
    c.send(&call(2, "A1"));
    let resumed = c.next();
    assert_eq!(resumed["id"], 2, "{resumed}");
    assert_eq!(resumed["result"]["content"][0]["text"], "ok");
    c.send(&call(3, "A2"));
    let gone = c.next();
    assert_eq!(gone["id"], 3);
    let message = gone["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("404"), "{gone}");
    drop(c);
    wait_for(&mut p.child, Duration::from_secs(15));
    let seen = seen.lock().expect("seen").clone();
    assert!(
        seen.iter()
            .any(|(m, h, _)| m == "GET" && h.contains("last-event-id: e1")),
        "resumed with Last-Event-ID"
    );
    let (code, out) = check(&record);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Call budget: 2 /"), "{out}");
}

#[test]
fn a_listening_proxy_relays_a_remote_session_and_its_errors_as_they_came() {
    let (url, seen) = scripted(|m, head, body| {
        if m == "POST" && !head.contains("authorization: bearer client-do-not-keep") {
            return "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer resource_metadata=\"http://x/.well-known/oauth-protected-resource\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into();
        }
        if body.contains("\"id\":9") {
            return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                .into();
        }
        usual(m, body, |b| {
            let id = if b.contains("\"id\":1") { 1 } else { 2 };
            json_answer(
                "",
                &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}"#),
            )
        })
    });
    let (record, p) = listening_to(&url, "http-relay", "relay.json");
    let purl = p.url().to_owned();
    // No credentials: the server's 401 and its WWW-Authenticate reach the client untouched.
    let denied = request(&purl, "POST", &[], INIT);
    assert_eq!(denied.status, 401, "{}", denied.head);
    assert!(
        denied
            .header("www-authenticate")
            .is_some_and(|v| v.contains("resource_metadata"))
    );
    let auth = ("Authorization", "Bearer client-DO-NOT-KEEP");
    let a = request(&purl, "POST", &[auth], INIT);
    assert_eq!(
        a.header("mcp-session-id").as_deref(),
        Some("S1"),
        "relayed as is: {}",
        a.head
    );
    let h = [auth, ("Mcp-Session-Id", "S1")];
    let one = request(&purl, "POST", &h, &call(1, "A1"));
    assert_eq!(one.messages()[0]["id"], 1);
    let ended = request(&purl, "POST", &h, &call(9, "A9"));
    assert_eq!(
        ended.status, 404,
        "the server ended the session: {}",
        ended.head
    );
    let (_, log) = p.stop();
    let seen = seen.lock().expect("seen").clone();
    assert!(
        seen.iter()
            .filter(|(_, _, b)| b.contains("tools/call"))
            .all(|(_, h, _)| h.contains("mcp-session-id: s1")),
        "the client's session goes upstream"
    );
    assert!(!files_of(&record).contains("DO-NOT-KEEP"), "{log}");
    assert!(!log.contains("DO-NOT-KEEP"));
}

#[test]
fn injected_latency_between_two_http_sides_holds_the_call_then_sends_it_on() {
    // Both sides HTTP: the task that reads the call runs the relay itself, and the timer it
    // sets has to wake the relay's thread, asleep with nothing due.
    let (url, seen) = scripted(shipping);
    let rules = r#"{"name":"slow","tool":"create_*","kind":"latency","calls":[1],"probability":1.0,"limit":null,"delay":0.4,"replacement":null}"#;
    let sc = scenario("http-latency", rules, "");
    let record = common::scratch_recording("http-latency", "latency.json");
    let (sc, rec) = (sc.display().to_string(), record.display().to_string());
    let p = Proxy::start(
        &[&sc, "--record", &rec, "--listen", "127.0.0.1:0", "--", &url],
        &[],
    );
    let done = stop_unless_done(&p);
    let purl = p.url().to_owned();
    let session = initialize(&purl, &[]);
    thread::sleep(Duration::from_millis(100));
    let h = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let t0 = Instant::now();
    let a = request(&purl, "POST", &h, &call(2, "A1"));
    let took = t0.elapsed();
    assert_eq!(
        a.messages()[0]["result"]["structuredContent"]["shipment_id"],
        1,
        "{}",
        a.body
    );
    assert!(
        took >= Duration::from_millis(400),
        "held for the injected latency: {took:?}"
    );
    let _ = done.send(());
    let (_, log) = p.stop();
    assert!(log.contains("1 fault(s) injected"), "{log}");
    assert_eq!(calls_sent(&seen), 1, "sent on once");
    let (code, out) = check(&record);
    assert_eq!(code, 0, "{out}");
    assert!(
        files_of(&record).contains("latency"),
        "the fault is on record"
    );
}

#[test]
fn a_thousand_streams_at_once_are_answered_within_a_bounded_memory() {
    let (record, p) = listening("http-many", "many.json", &[("SHIPPING_DELAY_MS", "500")]);
    let url = p.url().to_owned();
    let session = initialize(&url, &[]);
    let h = [("Mcp-Session-Id", session.as_str())];
    let streams: Vec<TcpStream> = (0..1000)
        .map(|i| open(&url, "POST", &h, &call(10 + i, &format!("O{i}"))))
        .collect();
    let mut answered = 0;
    for mut s in streams {
        let a = read_answer(&mut s);
        if a.messages()
            .last()
            .is_some_and(|m| m.get("result").is_some())
        {
            answered += 1;
        }
    }
    assert_eq!(answered, 1000);
    let status = std::fs::read_to_string(format!("/proc/{}/status", p.pid())).unwrap_or_default();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let _ = p.stop();
    assert!(peak_kb > 0, "no VmHWM in {status}");
    assert!(
        peak_kb < 128 * 1024,
        "the proxy peaked at {peak_kb} kB for 1,000 streams"
    );
    let (code, out) = check(&record);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Call budget: 1000 /"), "{out}");
}

/// Reads from `s` until `needle` has come (or the connection ends, or 10 s pass).
fn read_until(s: &mut TcpStream, needle: &str) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while Instant::now() < until && !String::from_utf8_lossy(&got).contains(needle) {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn a_get_stream_carries_the_servers_own_messages_to_an_http_client() {
    let (url, seen) = scripted(|m, _, body| {
        if m == "GET" {
            return format!(
                "{}id: g1\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}}\n\n\u{0}",
                sse_head()
            );
        }
        usual(m, body, |_| {
            json_answer("", r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#)
        })
    });
    let (_record, p) = listening_to(&url, "http-get", "get.json");
    let purl = p.url().to_owned();
    let a = request(&purl, "POST", &[], INIT);
    assert_eq!(a.header("mcp-session-id").as_deref(), Some("S1"));
    let mut get = open(
        &purl,
        "GET",
        &[("Mcp-Session-Id", "S1"), ("Accept", "text/event-stream")],
        "",
    );
    let text = read_until(&mut get, "list_changed");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("text/event-stream"), "{text}");
    assert!(text.contains("notifications/tools/list_changed"), "{text}");
    drop(get);
    let _ = p.stop();
    let seen = seen.lock().expect("seen").clone();
    assert!(
        seen.iter()
            .any(|(m, h, _)| m == "GET" && h.contains("mcp-session-id: s1")),
        "the client's GET went upstream with its session"
    );
}

#[test]
fn under_2026_07_28_a_broken_answer_stream_is_the_clients_cancel() {
    let pause = "\u{0}".repeat(60);
    let (url, _seen) = scripted(move |m, _, body| {
        usual(m, body, |_| {
            format!(
                "{}id: c1\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"p5\",\"progress\":1}}}}\n\n{pause}id: c2\ndata: {{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{{\"content\":[]}}}}\n\n",
                sse_head()
            )
        })
    });
    let (record, p) = listening_to(&url, "http-2026", "cancel.json");
    let purl = p.url().to_owned();
    let call = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"create_shipment","arguments":{"order_id":"A5"},"_meta":{"progressToken":"p5","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let mut s = open(
        &purl,
        "POST",
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "create_shipment"),
        ],
        call,
    );
    let first = read_until(&mut s, "notifications/progress");
    assert!(first.contains("notifications/progress"), "{first}");
    drop(s);
    thread::sleep(Duration::from_millis(500));
    let (_, log) = p.stop();
    assert!(
        log.contains(
            "the client cancelled request 5 (2026-07-28): its stream to the server was closed"
        ),
        "{log}"
    );
    let side =
        std::fs::read_to_string(toolstorm::mcp::session::sidecar_path(&record)).expect("sidecar");
    assert!(
        side.contains("cancel"),
        "the call is recorded as cancelled: {side}"
    );
}

#[test]
fn two_sessions_using_one_id_at_once_each_get_and_record_their_own_answer() {
    let (record, p) = listening("http-ids", "ids.json", &[("SHIPPING_DELAY_MS", "300")]);
    let url = p.url().to_owned();
    let sessions: Vec<String> = (0..2).map(|_| initialize(&url, &[])).collect();
    // Both sessions send request id 7 at the same time, for different orders.
    let mut streams: Vec<TcpStream> = sessions
        .iter()
        .enumerate()
        .map(|(i, s)| {
            open(
                &url,
                "POST",
                &[("Mcp-Session-Id", s)],
                &call(7, &format!("S{i}")),
            )
        })
        .collect();
    for (i, s) in streams.iter_mut().enumerate() {
        let a = read_answer(s);
        let answer = a.messages().pop().expect("an answer");
        assert_eq!(answer["id"], 7, "the client's own id comes back: {answer}");
        assert_eq!(
            answer["result"]["structuredContent"]["order_id"],
            format!("S{i}"),
            "session {i} got another session's answer: {answer}"
        );
    }
    let _ = p.stop();
    // The recording pairs each call with its own answer.
    let trace = toolstorm::document::open_trace(&record).expect("the recording");
    let calls = &trace.cassettes[0].report.calls;
    assert_eq!(calls.len(), 2);
    for c in calls {
        let asked = toolstorm::json::compact(&c.arguments);
        let got = toolstorm::json::compact(&c.output);
        let order = if asked.contains("S0") { "S0" } else { "S1" };
        assert!(
            got.contains(order),
            "call #{} asked {asked} but recorded {got}",
            c.id
        );
    }
}

#[test]
fn odd_requests_and_answers_that_answer_nothing_are_answered_at_once_never_waited_on() {
    // The server answers order GARBAGE with text that is not JSON, and order OTHER with the
    // answer to another id; each under 200 application/json.
    let (url, seen) = scripted(|method, _, body| {
        usual(method, body, |b| match b {
            b if b.contains("GARBAGE") => json_answer("", "<html>oops</html>"),
            b if b.contains("OTHER") => {
                json_answer("", r#"{"jsonrpc":"2.0","id":99,"result":{"content":[]}}"#)
            }
            b => shipping("POST", "", b),
        })
    });
    let (record, mut p, mut c) = recording_to(&url, "http-odd", "odd.json");
    let done = stop_unless_done(&p);
    c.initialize("odd");
    c.send(INITIALIZED);
    let tool = r#""method":"tools/call","params":{"name":"create_shipment","arguments":{"order_id":"INVALID"}}"#;
    for (head, why) in [
        (r#""jsonrpc":"2.0","id":null"#, "id is null"),
        (r#""jsonrpc":"2.0","id":{"n":1}"#, "an object"),
        (r#""jsonrpc":"2.0","id":2.5"#, "a fraction"),
        (r#""id":3"#, "no \"jsonrpc\""),
    ] {
        c.send(&format!("{{{head},{tool}}}"));
        let answer = c.next();
        assert_eq!(answer["error"]["code"], -32600, "{head}: {answer}");
        assert!(answer["id"].is_null(), "{head}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(why), "{head}: {answer}");
    }
    // What the server answers nothing with: the request gets an error saying what came.
    c.send(&call(4, "GARBAGE"));
    let garbage = c.next();
    assert_eq!(garbage["id"], 4, "{garbage}");
    let said = garbage["error"]["message"].as_str().unwrap_or("");
    assert!(
        said.contains("not the answer to request 4") && said.contains("oops"),
        "{garbage}"
    );
    c.send(&call(5, "OTHER"));
    let other = c.next();
    assert_eq!(other["id"], 5, "{other}");
    let said = other["error"]["message"].as_str().unwrap_or("");
    assert!(said.contains("the answer to request 99"), "{other}");
    // And the session goes on.
    c.send(&call(6, "A1"));
    assert_eq!(c.next()["result"]["structuredContent"]["shipment_id"], 1);
    drop(c);
    let code = wait_for(&mut p.child, Duration::from_secs(15));
    let _ = done.send(());
    assert_eq!(code, 0, "{}", p.log.lock().expect("log"));
    // The invalid requests never reached the server, and the recording says they came.
    let bodies: Vec<String> = seen
        .lock()
        .expect("seen")
        .iter()
        .map(|(_, _, b)| b.clone())
        .collect();
    assert!(!bodies.iter().any(|b| b.contains("INVALID")), "{bodies:?}");
    let side: serde_json::Value = sidecar(&record);
    let refused = side["refused_requests"]
        .as_array()
        .expect("refused requests");
    assert_eq!(refused.len(), 4, "{side}");
    assert!(
        refused[0].as_str().unwrap_or("").contains("id is null"),
        "{side}"
    );
}

#[test]
fn an_invalid_request_to_a_listening_proxy_is_400_at_once() {
    let (record, p) = listening("http-invalid", "invalid.json", &[]);
    let url = p.url().to_owned();
    let session = initialize(&url, &[]);
    let h = [("Mcp-Session-Id", session.as_str())];
    for body in [
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
        r#"{"id":7,"method":"ping"}"#,
    ] {
        let started = Instant::now();
        let r = request(&url, "POST", &h, body);
        assert_eq!(r.status, 400, "{body}: {} {}", r.head, r.body);
        let answer: serde_json::Value = serde_json::from_str(&r.body).expect("JSON-RPC");
        assert_eq!(answer["error"]["code"], -32600, "{body}: {answer}");
        assert!(started.elapsed() < Duration::from_secs(10), "{body} waited");
    }
    let _ = p.stop();
    // Each refusal is on record, as on stdio.
    let side =
        toolstorm::mcp::session::McpSession::load(&toolstorm::mcp::session::sidecar_path(&record))
            .expect("sidecar");
    assert_eq!(
        side.refused_requests.len(),
        3,
        "{:?}",
        side.refused_requests
    );
    assert!(
        side.refused_requests[0].contains("null"),
        "{:?}",
        side.refused_requests
    );
}

/// A stdio client's session, recorded in a folder named by `tag`, with a server that cuts the
/// first call's answer stream before the answer (half an event, then the connection ends) and
/// answers the rest with `answer`: the client calls, gets an error, and retries the same order.
/// The recording, and how many calls the server was sent.
fn cut_then_retried(
    tag: &str,
    answer: impl Fn(&str, &str, &str) -> String + Send + Sync + 'static,
) -> (std::path::PathBuf, usize) {
    let (url, seen) = scripted(move |m, head, body| {
        if m == "POST" && body.contains("tools/call") && !body.contains("\"id\":3") {
            return format!("{}data: {{\"jsonrpc\":\"2.0\",\"id\":2,\"res", sse_head());
        }
        answer(m, head, body)
    });
    let sc = scenario(tag, "", "");
    let record = common::scratch_recording(tag, "unknown.json");
    let (sc, rec) = (sc.display().to_string(), record.display().to_string());
    let mut p = Proxy::start(&[&sc, "--record", &rec, "--", &url], &[]);
    let done = stop_unless_done(&p);
    let mut c = Stdio2::of(&mut p);
    c.initialize(tag);
    c.send(INITIALIZED);
    c.send(&call(2, "A1"));
    let lost = c.next();
    assert_eq!(lost["id"], 2, "{lost}");
    let message = lost["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("answer stream was cut"), "{lost}");
    assert_eq!(lost["error"]["data"]["dev.toolstorm/outcome"], "unknown");
    shipped(&mut c, 3, "the retry");
    drop(c);
    wait_for(&mut p.child, Duration::from_secs(15));
    let _ = done.send(());
    (record, calls_sent(&seen))
}

#[test]
fn a_call_whose_answer_stream_was_cut_is_unknown_and_its_retry_a_possible_duplicate() {
    // The server commits each call it is sent.
    let (record, sent) = cut_then_retried("http-unknown", shipping);
    assert_eq!(sent, 2, "the server committed twice");
    // The record says nobody saw #1's outcome, and what it would have committed.
    let side =
        std::fs::read_to_string(toolstorm::mcp::session::sidecar_path(&record)).expect("sidecar");
    let side: serde_json::Value = serde_json::from_str(&side).expect("json");
    let first = &side["calls"][0]["outcome_unknown"];
    assert!(
        first["why"]
            .as_str()
            .is_some_and(|w| w.contains("the stream ended before the answer")),
        "{side}"
    );
    assert_eq!(first["effects"][0]["name"], "shipment", "{side}");
    assert_eq!(first["effects"][0]["key"], "A1", "{side}");
    assert_eq!(side["calls"][0]["delivered"], "error", "{side}");
    assert!(side["calls"][1].get("outcome_unknown").is_none(), "{side}");
    let (code, out) = check(&record);
    common::assert_possible_duplicate(code, &out);
    // inspect and check --json say it too.
    let run = |args: &[&str]| {
        let out = Command::new(BIN).args(args).output().expect("runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shown = run(&["inspect", &record.display().to_string()]);
    assert!(
        shown.contains("outcome unknown: call #1 — the MCP server's answer stream was cut"),
        "{shown}"
    );
    let json = run(&["check", "--json", &record.display().to_string()]);
    let v: serde_json::Value = serde_json::from_str(json.trim()).expect("json");
    let unknown = &v["mcp"]["unknown_outcomes"];
    assert_eq!(unknown[0]["call"], 1, "{json}");
    assert_eq!(unknown[0]["again"][0]["call"], 2, "{json}");
    assert_eq!(unknown[0]["again"][0]["key"], "A1", "{json}");
}

#[test]
fn a_retry_the_server_says_committed_nothing_clears_an_unknown_outcome() {
    // The server deduplicates: the retry's answer lists no effect in its `_meta`, the
    // server's own word that it committed nothing new — so there is one commit at most.
    let (record, _) = cut_then_retried("http-unknown-dedup", |m, _, body| {
        usual(m, body, |b| {
            let id = serde_json::from_str::<serde_json::Value>(b).expect("a call")["id"].clone();
            let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                "content": [{"type": "text", "text": "{\"shipment_id\":1}"}],
                "structuredContent": {"shipment_id": 1},
                "_meta": {"dev.toolstorm/effects": []}}});
            json_answer("", &answer.to_string())
        })
    });
    let (code, out) = check(&record);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("✓ No duplicate side effects: 0 duplicate effect(s) across 0 commits"),
        "{out}"
    );
    assert!(!out.contains("possible duplicate"), "{out}");
}

#[test]
fn a_half_line_from_a_dying_server_never_reaches_an_http_client_as_an_event() {
    // The odd server commits the row, writes half its answer's line, and exits.
    let record = common::scratch_recording("http-half", "half.json");
    let db = common::scratch_recording("http-half", "commits.db");
    let _ = std::fs::remove_file(&db);
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/odd_server.py");
    let (rec, server, dbs) = (
        record.display().to_string(),
        server.display().to_string(),
        db.display().to_string(),
    );
    let p = Proxy::start(
        &[
            "--record",
            &rec,
            "--listen",
            "127.0.0.1:0",
            "--",
            "python3",
            &server,
        ],
        &[("ODD_LEAVE", "half:1"), ("ODD_DB", &dbs)],
    );
    let done = stop_unless_done(&p);
    let url = p.url().to_owned();
    // The odd server agrees on 2025-06-18.
    let init = request(&url, "POST", &[], INIT);
    let session = init.header("mcp-session-id").expect("a session id");
    let h = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    assert_eq!(request(&url, "POST", &h, INITIALIZED).status, 202);
    let a = request(
        &url,
        "POST",
        &h,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_row","arguments":{"row":"r-1"}}}"#,
    );
    // Every event is a whole message: the proxy's error, never the half line.
    let messages = a.messages();
    assert_eq!(messages.len(), 1, "{}", a.body);
    assert_eq!(messages[0]["id"], 2, "{}", a.body);
    let message = messages[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("exited"), "{}", a.body);
    assert!(!a.body.contains("\"result\""), "{}", a.body);
    let (_, log) = p.stop();
    let _ = done.send(());
    assert!(
        std::fs::read_to_string(&db).is_ok_and(|d| d.contains("r-1")),
        "committed"
    );
    let side =
        std::fs::read_to_string(toolstorm::mcp::session::sidecar_path(&record)).expect("sidecar");
    let side: serde_json::Value = serde_json::from_str(&side).expect("json");
    let why = side["calls"][0]["outcome_unknown"]["why"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.contains("the server's answer was cut at byte"),
        "{side}\n{log}"
    );
    assert_eq!(side["calls"][0]["delivered"], "error", "{side}");
}
