//! Benchmark: `campaign merge` of 100 shard files of 100 runs each (a 10,000-seed plan split
//! 100 ways, each file naming the whole plan, each run with four checks and a recording path,
//! as `campaign --shard` writes them), by the release binary as a whole process: median of 5
//! runs, and its peak RSS. Targets: under 1 s and under 100 MB. Then what a campaign spends per
//! run beside the agent's own time: the example agent (examples/mcp_agent.rs) through the
//! proxy, 20 runs, the campaign's wall time per run against the runs' own `seconds`.
//!
//! Run with `cargo bench --bench campaign_merge` (it builds nothing: build the release binary
//! and examples first, `cargo build --release --examples`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use nix::sys::resource::{UsageWho, getrusage};
use toolstorm::campaign::file::{CampaignFile, CheckResult, Outcome, RunRecord};
use toolstorm::campaign::shard::Shard;

const SHARDS: u32 = 100;
const RUNS: u64 = 10_000;

fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("exe");
    // target/release/deps/campaign_merge-HASH → target/release
    exe.parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf()
}

fn shard_file(index: u32, seeds: &[i64]) -> CampaignFile {
    let shard = Shard {
        index,
        total: SHARDS,
    };
    let names = [
        "No duplicate side effects",
        "Call budget",
        "Session finished",
        "Recording complete",
    ];
    let runs = (1..=RUNS)
        .filter(|r| shard.owns(*r))
        .map(|run| {
            let failed = run % 3 == 0;
            RunRecord {
                run,
                seed: seeds[run as usize - 1],
                outcome: Outcome::Finished,
                exit: Some(0),
                seconds: 1.25 + (run % 7) as f64 / 10.0,
                recording: format!("shard-{index}.campaign.runs/run-{run:05}/recording.json"),
                calls: 2 + u64::from(failed),
                faults: u64::from(failed),
                commits: 1 + u64::from(failed),
                duplicates: u64::from(failed),
                checks: names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| CheckResult {
                        name: (*n).into(),
                        passed: !(failed && i == 0),
                        detail: if failed && i == 0 {
                            "1 duplicate effect(s) across 2 commits".into()
                        } else {
                            "ok".into()
                        },
                    })
                    .collect(),
                oracle: None,
                passed: !failed,
                note: None,
            }
        })
        .collect();
    CampaignFile {
        scenario: "../scenarios/mcp-lost-ack.json".into(),
        scenario_name: "mcp-lost-ack".into(),
        scenario_sha256: "5e".repeat(32),
        cwd: ".".into(),
        agent: vec![
            "python".into(),
            "agent.py".into(),
            "--mcp-config".into(),
            "{mcp_config}".into(),
        ],
        probability: Some(0.5),
        timeout: 120.0,
        before: None,
        verify: None,
        seeds: seeds.to_vec(),
        runs,
        agent_http: false,
        shard: Some(shard),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn merge_bench(bin: &Path) {
    let dir = std::env::temp_dir().join(format!("toolstorm-bench-merge-{}", std::process::id()));
    let shards = dir.join("shards");
    std::fs::create_dir_all(&shards).expect("dir");
    let seeds: Vec<i64> = (1..=RUNS as i64).map(|s| 1000 + s).collect();
    let mut bytes = 0;
    for i in 1..=SHARDS {
        let text = shard_file(i, &seeds).to_text();
        bytes += text.len();
        std::fs::write(shards.join(format!("shard-{i}.campaign.json")), text).expect("write");
    }
    let mut times = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let out = Command::new(bin)
            .args([
                "campaign",
                "merge",
                "merged.campaign.json",
                "shards",
                "--json",
            ])
            .current_dir(&dir)
            .output()
            .expect("run merge");
        times.push(start.elapsed().as_secs_f64());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let merged = std::fs::read_to_string(dir.join("merged.campaign.json")).expect("merged");
        let f = CampaignFile::from_text(&merged).expect("a campaign file");
        assert_eq!(f.runs.len(), RUNS as usize, "every run merged");
        assert_eq!(f.passed().0, (RUNS - RUNS / 3) as usize);
    }
    // ru_maxrss of the children waited for: the merges (the only children so far), in KiB.
    let peak_kib = getrusage(UsageWho::RUSAGE_CHILDREN)
        .map(|u| u.max_rss())
        .unwrap_or(0);
    println!(
        "campaign merge: {SHARDS} shard files of {} runs ({:.1} MB in all) → {RUNS} runs",
        RUNS / u64::from(SHARDS),
        bytes as f64 / 1e6
    );
    println!(
        "  median {:.0} ms, best {:.0} ms (target < 1000 ms); peak RSS {:.1} MB (target < 100 MB)",
        median(times.clone()) * 1e3,
        times.iter().copied().fold(f64::INFINITY, f64::min) * 1e3,
        peak_kib as f64 / 1024.0
    );
    // A campaign rewrites its file after every run: what that costs when the file is this big.
    let merged = CampaignFile::from_text(
        &std::fs::read_to_string(dir.join("merged.campaign.json")).expect("merged"),
    )
    .expect("campaign");
    let mut rewrite = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        toolstorm::atomic::write(
            &dir.join("rewrite.campaign.json"),
            merged.to_text().as_bytes(),
        )
        .expect("write");
        rewrite.push(start.elapsed().as_secs_f64());
    }
    println!(
        "  rewriting a {RUNS}-run campaign file after a run (atomic, synced): median {:.0} ms",
        median(rewrite) * 1e3
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn overhead_bench(bin: &Path) {
    let examples = target_dir().join("examples");
    let (agent, server) = (
        examples.join("mcp_agent"),
        examples.join("mcp_shipping_server"),
    );
    if !agent.exists() || !server.exists() {
        println!(
            "campaign overhead: skipped ({} not built: cargo build --release --examples)",
            agent.display()
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("toolstorm-bench-overhead-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/mcp-lost-ack.json"
    ))
    .expect("scenario");
    let text = text.replace(
        "../target/release/examples/mcp_shipping_server",
        &server.display().to_string(),
    );
    std::fs::write(dir.join("s.json"), text).expect("write");
    let n = 20;
    let mut per_run = Vec::new();
    let mut agent_own = Vec::new();
    for round in 0..3 {
        let out = format!("c{round}.campaign.json");
        let start = Instant::now();
        let status = Command::new(bin)
            .args([
                "campaign",
                "s.json",
                "--runs",
                &n.to_string(),
                "--probability",
                "0.5",
            ])
            .args(["--out", &out, "--json", "--"])
            .arg(&agent)
            .args(["--mcp-config", "{mcp_config}"])
            .current_dir(&dir)
            .output()
            .expect("campaign");
        let wall = start.elapsed().as_secs_f64();
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
        let f = CampaignFile::from_text(&std::fs::read_to_string(dir.join(&out)).expect("file"))
            .expect("campaign");
        let own: f64 = f.runs.iter().map(|r| r.seconds).sum::<f64>() / f.runs.len() as f64;
        per_run.push(wall / f64::from(n));
        agent_own.push(own);
    }
    let (w, a) = (median(per_run), median(agent_own));
    println!(
        "campaign overhead: {n} runs of the example agent through the proxy, median of 3: \
         {:.1} ms per run, of which the agent's own run {:.1} ms → {:.1} ms per run of \
         scheduling (folder, mcp.json, judging the recording, rewriting the file)",
        w * 1e3,
        a * 1e3,
        (w - a) * 1e3
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let bin = std::env::var_os("CAMPAIGN_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("toolstorm-tui"));
    assert!(
        bin.exists(),
        "{} (cargo build --release first)",
        bin.display()
    );
    merge_bench(&bin);
    overhead_bench(&bin);
}
