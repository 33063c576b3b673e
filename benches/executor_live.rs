//! Benchmark: the live executor's own overhead, per call and per batch, against the tools' own
//! time. Each batch runs `n` calls of a tool whose body sleeps `body` ms; the overhead is the
//! batch's wall time minus the longest body (bodies run in parallel, `max_concurrency` = `n`).
//! Target (issue 22): under 1 ms per call on the live path. Median of 15 batches per shape.
//!
//! Then the same against an MCP server (the example shipping server, release build): a batch
//! of `n` `check_inventory` calls through the executor on one session, against the same calls
//! sent by the bare client (`McpClient`, no executor) — the difference is the executor's own
//! share. Build the server first: `cargo build --release --example mcp_shipping_server`.
//! Run with `cargo bench --bench executor_live`.

use std::time::{Duration, Instant};

use toolstorm::executor::approval::DenyAll;
use toolstorm::executor::live::{LiveExecutor, Tools};
use toolstorm::executor::{FunctionCall, Limits, Param, ParamType, ToolSpec};
use toolstorm::json::Value;
use toolstorm::mcp::tools::McpTools;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    println!("live executor: overhead = batch wall time - the body's own time (median of 15)");
    for (n, body_ms) in [(1, 0u64), (1, 10), (16, 0), (16, 10), (64, 0), (64, 10)] {
        let tools = Tools::new()
            .tool(
                ToolSpec::new("work", "Works").param(Param::new("i", ParamType::Integer, "n")),
                move |args, _| {
                    if body_ms > 0 {
                        std::thread::sleep(Duration::from_millis(body_ms));
                    }
                    Ok(args.get("i").cloned().unwrap_or(Value::Null))
                },
            )
            .shared();
        let limits = Limits {
            max_concurrency: n.min(64),
            ..Limits::default()
        };
        let mut exec = LiveExecutor::new(Vec::new(), 7, limits).expect("executor");
        let calls: Vec<FunctionCall> = (0..n)
            .map(|i| FunctionCall::new("work", &format!(r#"{{"i": {i}}}"#), &format!("c{i}")))
            .collect();
        let mut per_batch = Vec::new();
        for _ in 0..15 {
            let t = Instant::now();
            let batch = exec.run_batch(&tools, &mut DenyAll, &calls);
            let wall = t.elapsed().as_secs_f64() * 1e3;
            assert!(batch.kinds().iter().all(|k| *k == "ok"));
            per_batch.push(wall - body_ms as f64);
        }
        let overhead = median(per_batch);
        println!(
            "  {n:>2} call(s), body {body_ms:>2} ms: overhead {overhead:.3} ms per batch, {:.3} ms per call (target < 1 ms per call)",
            overhead / n as f64
        );
    }
    mcp();
}

/// The executor on an MCP server's tools, against the bare client's round trips.
fn mcp() {
    let server = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/release/examples/mcp_shipping_server");
    if !server.exists() {
        println!(
            "MCP: {} is missing (cargo build --release --example mcp_shipping_server)",
            server.display()
        );
        return;
    }
    let command = [server.into_os_string()];
    let tools = McpTools::connect(&command, None, None, &[]).expect("server");
    println!("MCP (example server): batch wall time, executor vs bare client (median of 15)");
    for n in [1usize, 16, 64] {
        let args = r#"{"sku": "SKU-1"}"#;
        let bare = median(
            (0..15)
                .map(|_| {
                    let t = Instant::now();
                    let pending: Vec<_> = (0..n)
                        .map(|_| {
                            tools.client().request(
                                "tools/call",
                                toolstorm::obj! {"name" => "check_inventory", "arguments" => toolstorm::json::parse(args).expect("args")},
                            )
                        })
                        .collect();
                    for p in pending {
                        p.wait(Duration::from_secs(10)).expect("answer");
                    }
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect(),
        );
        let limits = Limits {
            max_concurrency: n.min(64),
            ..Limits::default()
        };
        let mut exec = LiveExecutor::new(Vec::new(), 7, limits).expect("executor");
        let calls: Vec<FunctionCall> = (0..n)
            .map(|i| FunctionCall::new("check_inventory", args, &format!("c{i}")))
            .collect();
        let shared: std::sync::Arc<dyn toolstorm::executor::live::LiveTools> =
            std::sync::Arc::new(McpTools::connect(&command, None, None, &[]).expect("server"));
        let through = median(
            (0..15)
                .map(|_| {
                    let t = Instant::now();
                    let batch = exec.run_batch(&shared, &mut DenyAll, &calls);
                    assert!(batch.kinds().iter().all(|k| *k == "ok"));
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect(),
        );
        println!(
            "  {n:>2} call(s): executor {through:.3} ms, bare client {bare:.3} ms: the executor's share {:.3} ms per call (target < 1 ms)",
            (through - bare).max(0.0) / n as f64
        );
    }
}
