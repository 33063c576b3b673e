//! Benchmark: what the MCP proxy adds, measured as an agent would see it. A client sends
//! `tools/call` requests to a trivial server — one at a time, or keeping 16 in flight —
//! first directly, then through `toolstorm-tui mcp` (the release binary), and the latencies
//! are compared per percentile. Targets (issue 20): with `--record` (the write-ahead journal
//! on every call), added latency p50 < 0.3 ms and p99 < 2 ms for 1 KB calls at 1 and 16 in
//! flight; a 10,000-call recorded session under 30 MB peak RSS. Run with
//! `cargo bench --bench mcp_relay`; words after `--` run only the cases whose label holds
//! one (`-- "record, 16"`). Each case is five sessions (`MCP_RELAY_RUNS`), each against its
//! own direct run; the figures are their median and range, with the proxy's CPU per call
//! (all threads, and its busiest: the relay's) from the scheduler's own count; `MCP_RELAY_DETAIL=1`
//! shows each session's figures by thread. This same binary is the trivial server
//! (`--respond`). Client and server write each message in one write, as the official SDKs do
//! (a line written in pieces wakes the reader once per piece).

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
        // Each answer in one write, as the SDKs' servers send a message.
        let answer = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}}}}\n"
        );
        let _ = out.write_all(answer.as_bytes());
        let _ = out.flush();
    }
}

fn spawn(through_proxy: Option<&[&str]>, size: usize) -> Child {
    let me = std::env::current_exe().expect("exe");
    let mut cmd = match through_proxy {
        Some(args) => {
            // MCP_RELAY_BIN compares another build of the proxy on the same cases.
            let bin = std::env::var_os("MCP_RELAY_BIN").unwrap_or_else(|| BIN.into());
            let mut c = Command::new(bin);
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

/// A task's CPU time so far (from the scheduler's own count, in nanoseconds) and its context
/// switches (voluntary and not), from its folder under `/proc`.
fn task_figures(task: &std::path::Path) -> (u64, u64) {
    let on_cpu = std::fs::read_to_string(task.join("schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0);
    let status = std::fs::read_to_string(task.join("status")).unwrap_or_default();
    let switches = status
        .lines()
        .filter(|l| l.contains("ctxt_switches:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum();
    (on_cpu, switches)
}

/// A process's write system calls so far (its threads', and its reaped children's).
fn writes(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("syscw:"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// The child's CPU time so far (all threads), in seconds: the whole and its busiest thread's
/// (the relay's); and its context switches (summed over its threads). With `detail`, each
/// thread's figures per call, the server's, and the write calls per call of both go to
/// stderr.
fn cpu_and_switches(pid: u32, detail: Option<usize>) -> (f64, f64, u64) {
    let (mut total, mut busiest, mut switches) = (0u64, 0u64, 0u64);
    let mut line = String::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        let mut tasks: Vec<_> = tasks.flatten().collect();
        // In the order they started: the relay (the main thread) first.
        tasks.sort_by_key(|t| t.file_name().to_string_lossy().parse::<u64>().unwrap_or(0));
        for task in tasks {
            let (on_cpu, own) = task_figures(&task.path());
            total += on_cpu;
            busiest = busiest.max(on_cpu);
            switches += own;
            if let Some(n) = detail {
                let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
                line.push_str(&format!(
                    " {} {:.1} µs/{:.2} sw",
                    name.trim(),
                    on_cpu as f64 / 1e3 / n as f64,
                    own as f64 / n as f64
                ));
            }
        }
    }
    if let Some(n) = detail {
        let per_call = |x: u64| x as f64 / n as f64;
        line.push_str(&format!(
            " · writes {:.2}",
            per_call(writes(&pid.to_string()))
        ));
        // The server (and the watchdog): the proxy's children.
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        for child in children.split_whitespace() {
            let (on_cpu, own) = task_figures(std::path::Path::new(&format!("/proc/{child}")));
            line.push_str(&format!(
                " · child {:.1} µs/{:.2} sw, writes {:.2}",
                on_cpu as f64 / 1e3 / n as f64,
                per_call(own),
                per_call(writes(child))
            ));
        }
        eprintln!("   proxy threads, per call:{line}");
    }
    (total as f64 / 1e9, busiest as f64 / 1e9, switches)
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

/// Latencies (seconds, request sent → answer read) of `n` calls with `size`-byte arguments,
/// keeping `window` in flight; and the child's peak RSS.
fn session(
    through_proxy: Option<&[&str]>,
    n: usize,
    size: usize,
    window: usize,
) -> (Vec<f64>, u64, (f64, f64, u64)) {
    let detail = through_proxy.is_some() && detail();
    let mut child = spawn(through_proxy, size);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let payload = "y".repeat(size.saturating_sub(100));
    let mut line = String::new();
    let mut sent = vec![None; n];
    let mut times = Vec::with_capacity(n);
    let mut next = 0;
    let send = |i: usize, stdin: &mut std::process::ChildStdin, sent: &mut Vec<Option<Instant>>| {
        // Each request in one write, as the SDKs' clients send a message (a line written in
        // pieces would wake the reader once per piece).
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/call\",\"params\":{{\"name\":\"create_shipment\",\"arguments\":{{\"order_id\":\"o-{i}\",\"note\":\"{payload}\"}}}}}}\n"
        );
        sent[i] = Some(Instant::now());
        stdin.write_all(request.as_bytes()).expect("send");
    };
    while next < window.min(n) {
        send(next, &mut stdin, &mut sent);
        next += 1;
    }
    for _ in 0..n {
        line.clear();
        stdout.read_line(&mut line).expect("answer");
        let at = Instant::now();
        let id: usize = line
            .find("\"id\":")
            .map(|s| {
                line[s + 5..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
            .and_then(|d| d.parse().ok())
            .expect("an id");
        if let Some(t) = sent[id] {
            times.push(at.duration_since(t).as_secs_f64());
        }
        if next < n {
            send(next, &mut stdin, &mut sent);
            next += 1;
        }
    }
    let rss = peak_rss_kib(child.id());
    let cpu = cpu_and_switches(child.id(), detail.then_some(n));
    drop(stdin);
    let _ = child.wait();
    (times, rss, cpu)
}

/// Whether each proxied session's figures are shown, by thread (`MCP_RELAY_DETAIL`).
fn detail() -> bool {
    std::env::var_os("MCP_RELAY_DETAIL").is_some()
}

/// One session's figures (milliseconds unless named otherwise).
struct Run {
    direct_p50: f64,
    /// Added latency at p50, p99 and p99.9.
    added: [f64; 3],
    max: f64,
    rss_mb: f64,
    cpu_us: f64,
    relay_us: f64,
    switches: f64,
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
    // Words after the flags pick the cases whose label holds one of them ("16 in flight").
    let filters: Vec<String> = args
        .iter()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .cloned()
        .collect();
    // Sessions per case (MCP_RELAY_RUNS, default 5): the median is reported, and the range.
    let repeats: usize = std::env::var("MCP_RELAY_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(5);
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
    let recorded = vec!["mcp", faults_s.as_str(), "--record", record_s.as_str()];
    println!(
        "MCP relay: added latency per percentile (targets with --record, 1 KB calls: p50 < 0.3 ms, p99 < 2 ms)"
    );
    // 3,000 calls of 1 KB arguments and 1 KB answers fit one recording (a cassette holds at
    // most 8 MB); the memory figure is a 10,000-call session of 200 B calls.
    for (label, n, size, window, proxy) in [
        ("1 KB, relay only, 1 in flight", 3000, 1000, 1, vec!["mcp"]),
        (
            "1 KB, relay only, 16 in flight",
            3000,
            1000,
            16,
            vec!["mcp"],
        ),
        (
            "1 KB, --record, 1 in flight",
            3000,
            1000,
            1,
            recorded.clone(),
        ),
        (
            "1 KB, --record, 16 in flight",
            3000,
            1000,
            16,
            recorded.clone(),
        ),
        (
            "200 B, --record, 10,000 calls",
            10_000,
            200,
            1,
            recorded.clone(),
        ),
    ] {
        if !filters.is_empty() && !filters.iter().any(|f| label.contains(f.as_str())) {
            continue;
        }
        // Several sessions, each measured against its own direct run: the figures are the
        // median across them, with their range.
        let mut runs = Vec::new();
        for _ in 0..repeats {
            let (mut direct, _, _) = session(None, n, size, window);
            let (mut proxied, rss, (cpu, busiest, switches)) =
                session(Some(&proxy), n, size, window);
            direct.sort_by(f64::total_cmp);
            proxied.sort_by(f64::total_cmp);
            let added = |p: f64| (pct(&proxied, p) - pct(&direct, p)) * 1e3;
            if detail() {
                eprintln!(
                    "   session: added p50 {:.3} ms, busiest {:.1} µs, CPU {:.1} µs per call",
                    added(0.5),
                    busiest * 1e6 / n as f64,
                    cpu * 1e6 / n as f64
                );
            }
            runs.push(Run {
                direct_p50: pct(&direct, 0.5) * 1e3,
                added: [added(0.5), added(0.99), added(0.999)],
                max: pct(&proxied, 1.0) * 1e3,
                rss_mb: rss as f64 / 1024.0,
                cpu_us: cpu * 1e6 / n as f64,
                relay_us: busiest * 1e6 / n as f64,
                switches: switches as f64 / n as f64,
            });
        }
        let stat = |f: &dyn Fn(&Run) -> f64| {
            let mut v: Vec<f64> = runs.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            (v[v.len() / 2], v[0], v[v.len() - 1])
        };
        let show = |(mid, lo, hi): (f64, f64, f64), digits: usize| {
            format!("{mid:.digits$} ({lo:.digits$}–{hi:.digits$})")
        };
        println!(
            "  {label:<31} added p50 {} · p99 {} · p99.9 {} ms · direct p50 {} ms · worst call {} ms",
            show(stat(&|r| r.added[0]), 3),
            show(stat(&|r| r.added[1]), 3),
            show(stat(&|r| r.added[2]), 3),
            show(stat(&|r| r.direct_p50), 3),
            show(stat(&|r| r.max), 1),
        );
        println!(
            "  {:<31} proxy peak RSS {} MB · CPU per call {} µs, busiest thread {} µs · {} context switches per call",
            "",
            show(stat(&|r| r.rss_mb), 1),
            show(stat(&|r| r.cpu_us), 0),
            show(stat(&|r| r.relay_us), 0),
            show(stat(&|r| r.switches), 1),
        );
        if proxy.len() > 2 {
            let calls = toolstorm::cassette::Cassette::load(&record)
                .map(|c| c.report.calls.len())
                .unwrap_or(0);
            println!("    the recording holds {calls} calls");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
