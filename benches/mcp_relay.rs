//! Benchmark: what the MCP proxy adds, measured as an agent would see it. A client sends
//! `tools/call` requests one at a time (ping-pong) to a trivial server, first directly, then
//! through `toolstorm-tui mcp` (the release binary), and the round trips are compared per
//! percentile. Targets (issue 11): added latency p50 < 0.5 ms and p99 < 2 ms for 1 KB
//! messages; memory bounded by messages in flight, not by session length — measured as the
//! proxy's peak RSS over a 10,000-call recorded session. Run with
//! `cargo bench --bench mcp_relay`. This same binary is the trivial server (`--respond`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

/// The trivial server: answers every request with a text result of `size` bytes.
fn respond(size: usize) {
    let text = "x".repeat(size);
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        // The id is the first number after "id": in our requests.
        let Some(start) = line.find("\"id\":") else {
            continue;
        };
        let id: String = line[start + 5..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        let _ = writeln!(
            out,
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
        );
        let _ = out.flush();
    }
}

fn spawn(through_proxy: Option<&[&str]>, size: usize) -> Child {
    let me = std::env::current_exe().expect("exe");
    let mut cmd = match through_proxy {
        Some(args) => {
            let mut c = Command::new(BIN);
            c.args(args).arg("--").arg(&me);
            c
        }
        None => Command::new(&me),
    };
    cmd.arg("--respond")
        .arg(size.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn")
}

fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// Round trips (seconds) of `n` calls with `size`-byte arguments; and the child's peak RSS.
fn session(through_proxy: Option<&[&str]>, n: usize, size: usize) -> (Vec<f64>, u64) {
    let mut child = spawn(through_proxy, size);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let payload = "y".repeat(size.saturating_sub(100));
    let mut line = String::new();
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"create_shipment","arguments":{{"order_id":"o-{i}","note":"{payload}"}}}}}}"#
        );
        let start = Instant::now();
        writeln!(stdin, "{request}").expect("send");
        stdin.flush().expect("flush");
        line.clear();
        stdout.read_line(&mut line).expect("answer");
        times.push(start.elapsed().as_secs_f64());
    }
    let rss = peak_rss_kib(child.id());
    drop(stdin);
    let _ = child.wait();
    (times, rss)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--respond") {
        respond(args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(1000));
        return;
    }
    let n = 10_000;
    let dir = std::env::temp_dir().join(format!("toolstorm-bench-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let faults = dir.join("faults.json");
    std::fs::write(
        &faults,
        r#"{"schema_version": 1, "world": "mcp", "name": "bench", "title": "Bench", "seed": 1,
            "rules": [{"name": "slow", "tool": "create_*", "kind": "latency", "probability": 0.0}],
            "effects": [{"tool": "create_*", "effect": "shipment", "key": "order_id"}]}"#,
    )
    .expect("scenario");
    let record = dir.join("session.json");
    let faults_s = faults.to_str().expect("path").to_owned();
    let record_s = record.to_str().expect("path").to_owned();
    println!(
        "MCP relay, {n} sequential tools/call round trips (targets: added p50 < 0.5 ms, p99 < 2 ms)"
    );
    for (label, size, proxy) in [
        ("1 KB, relay only", 1000, vec!["mcp"]),
        (
            "1 KB, scenario + decisions",
            1000,
            vec!["mcp", faults_s.as_str()],
        ),
        (
            "200 B, scenario + recording",
            200,
            vec!["mcp", faults_s.as_str(), "--record", record_s.as_str()],
        ),
    ] {
        let (mut direct, _) = session(None, n, size);
        let (mut proxied, rss) = session(Some(&proxy), n, size);
        direct.sort_by(f64::total_cmp);
        proxied.sort_by(f64::total_cmp);
        let ms = |x: f64| x * 1e3;
        println!(
            "  {label:<30} direct p50 {:.3} ms p99 {:.3} ms · proxied p50 {:.3} ms p99 {:.3} ms · added p50 {:.3} ms p99 {:.3} ms · proxy peak RSS {:.1} MB",
            ms(pct(&direct, 0.5)),
            ms(pct(&direct, 0.99)),
            ms(pct(&proxied, 0.5)),
            ms(pct(&proxied, 0.99)),
            ms(pct(&proxied, 0.5) - pct(&direct, 0.5)),
            ms(pct(&proxied, 0.99) - pct(&direct, 0.99)),
            rss as f64 / 1024.0
        );
    }
    let calls = toolstorm::cassette::Cassette::load(&record)
        .map(|c| c.report.calls.len())
        .unwrap_or(0);
    println!("  the recorded session holds {calls} calls");
    let _ = std::fs::remove_dir_all(&dir);
}
