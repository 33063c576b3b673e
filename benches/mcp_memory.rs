//! Benchmark: the listening proxy's memory under large request bodies (issue 52, item 6),
//! measured as the user sees it: the release binary as a whole process, its peak RSS read from
//! `/proc/PID/status` (`VmHWM`), the median of `MCP_MEMORY_RUNS` (default 3) fresh proxies
//! per case. Targets: one 64 MB POST, peak under 100 MB; six concurrent 50 MB POSTs, peak
//! under 200 MB (both are past the 16 MB a request may hold, so each must be refused, 413,
//! before it is buffered whole). Shown without a target: one 15 MB call the proxy takes and
//! relays, its peak and its RSS 3 s after the answer.
//!
//! The server behind the proxy is this bench run as `--server`: a stdio MCP server that
//! answers `initialize`, and each `tools/call` with the number of bytes it was sent.
//! Run with `cargo bench --bench mcp_memory`; `MCP_MEMORY_BIN` measures another build.

#[path = "common/proxy.rs"]
mod proxy;

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::time::Duration;

const MB: usize = 1024 * 1024;

/// The stdio server: one answer per request line.
fn serve() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (msg.get("id"), msg["method"].as_str()) else {
            continue;
        };
        let result = match method {
            "initialize" => serde_json::json!({"protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "memory", "version": "1"}}),
            "tools/call" => serde_json::json!({"content": [{"type": "text",
                "text": format!("received {} bytes", line.len())}]}),
            _ => serde_json::json!({}),
        };
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
        if writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .is_err()
        {
            break;
        }
    }
}

struct Proxy {
    child: Child,
    addr: String,
}

impl Proxy {
    fn start(bin: &str, dir: &std::path::Path, n: usize) -> Proxy {
        let me = std::env::current_exe().expect("this bench");
        let record = dir.join(format!("memory-{n}.json"));
        let mut cmd = Command::new(bin);
        cmd.args(["mcp", "--record"])
            .arg(&record)
            .args(["--listen", "127.0.0.1:0", "--"])
            .arg(me)
            .arg("--server");
        let (child, url, mut err) = proxy::listening(cmd);
        let url = url.strip_prefix("http://").unwrap_or(&url);
        let addr = url.split('/').next().expect("host:port").to_owned();
        // The rest of its stderr is drained so it never blocks on it.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut err, &mut std::io::sink());
        });
        Proxy { child, addr }
    }

    fn kib(&self, field: &str) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("status");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("a Vm line")
    }

    /// POSTs `body` in one request; the answer's status.
    fn post(&self, body: &[u8]) -> u16 {
        let mut s = TcpStream::connect(&self.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(120)))
            .expect("timeout");
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\n\
             Accept: application/json\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        // A refused body stops being read: what is left unsent is the client's to drop.
        let _ = s
            .write_all(head.as_bytes())
            .and_then(|()| s.write_all(body));
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        String::from_utf8_lossy(&answer)
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `tools/call` of about `size` bytes.
fn call(id: usize, size: usize) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"upload","arguments":{{"data":"{}"}}}}}}"#,
        "d".repeat(size)
    )
    .into_bytes()
}

/// One run of a case on a fresh proxy: the statuses, peak RSS and RSS 3 s later (MB).
fn run(
    bin: &str,
    dir: &std::path::Path,
    n: usize,
    bodies: usize,
    size: usize,
) -> (Vec<u16>, f64, f64) {
    let proxy = Proxy::start(bin, dir, n);
    let statuses = std::thread::scope(|s| {
        let tasks: Vec<_> = (0..bodies)
            .map(|i| {
                let proxy = &proxy;
                s.spawn(move || proxy.post(&call(i + 1, size)))
            })
            .collect();
        tasks
            .into_iter()
            .map(|t| t.join().expect("a client"))
            .collect::<Vec<u16>>()
    });
    let peak = proxy.kib("VmHWM:") as f64 / 1024.0;
    std::thread::sleep(Duration::from_secs(3));
    let after = proxy.kib("VmRSS:") as f64 / 1024.0;
    proxy.stop();
    (statuses, peak, after)
}

/// A case: its label, how many bodies at once, each body's size, and its target (the most
/// peak RSS in MB, and the status every answer must have), if it has one.
type Case = (&'static str, usize, usize, Option<(f64, u16)>);

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--server") {
        return serve();
    }
    let bin = std::env::var("MCP_MEMORY_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_toolstorm-tui").to_owned());
    let runs = std::env::var("MCP_MEMORY_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n: &usize| *n > 0)
        .unwrap_or(3);
    let dir = std::env::temp_dir().join(format!("toolstorm-bench-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    println!(
        "MCP over Streamable HTTP: the listening proxy's peak RSS under large request bodies ({runs} runs, median)"
    );
    let cases: [Case; 3] = [
        ("one 64 MB POST", 1, 64 * MB, Some((100.0, 413))),
        ("six 50 MB POSTs at once", 6, 50 * MB, Some((200.0, 413))),
        ("one 15 MB call, taken", 1, 15 * MB, None),
    ];
    let mut n = 0;
    for (label, bodies, size, target) in cases {
        let (mut peaks, mut afters, mut statuses) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            n += 1;
            let (s, peak, after) = run(&bin, &dir, n, bodies, size);
            statuses.extend(s);
            peaks.push(peak);
            afters.push(after);
        }
        let (peak, after) = (median(peaks), median(afters));
        let verdict = match target {
            Some((most, status)) => {
                let ok = peak < most && statuses.iter().all(|s| *s == status);
                format!(
                    "target < {most:.0} MB, every answer {status}: {}",
                    if ok { "met" } else { "NOT met" }
                )
            }
            None => String::from("no target"),
        };
        let mut seen = statuses.clone();
        seen.sort_unstable();
        seen.dedup();
        println!(
            "  {label:<26} peak {peak:>6.1} MB, {after:>6.1} MB 3 s later · answers {seen:?} · {verdict}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
