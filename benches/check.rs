//! Benchmark: `check` on a 10,000-call, ~3 MB cassette (load, validate in full, judge).
//! Targets: under 40 ms wall and under 30 MB peak memory. Run with `cargo bench --bench check`.
//! Peak memory is measured in a child process (VmHWM), so the parent's own allocations do not
//! count.

use std::time::Instant;

use toolstorm::cassette::{self, Cassette};

mod common;
use common::big_cassette;

fn check_once(path: &std::path::Path) -> usize {
    let cassettes = cassette::load_document(path).expect("loads");
    let summary = cassette::check(&cassettes, 100_000).expect("checks");
    summary.text().len()
}

fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let path = std::env::temp_dir().join("toolstorm-bench-10000.cassette.json");
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--child") {
        check_once(&path);
        println!("{}", peak_kib().unwrap_or(0));
        return;
    }
    big_cassette(&path);
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let calls = Cassette::load(&path).expect("load").report.calls.len();
    let mut times = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        check_once(&path);
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .arg("--child")
        .output()
        .expect("child");
    let peak: u64 = String::from_utf8_lossy(&child.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    println!("check: {calls} calls, {size} bytes");
    println!(
        "  best {:.2} ms, median {:.2} ms (target < 40 ms)",
        times[0] * 1e3,
        times[times.len() / 2] * 1e3
    );
    println!(
        "  peak memory of one check in a fresh process: {:.1} MB (target < 30 MB)",
        peak as f64 / 1024.0
    );
    if std::env::var_os("KEEP_BENCH_FILE").is_none() {
        let _ = std::fs::remove_file(&path);
    }
}
