//! Campaigns over a real agent (examples/mcp_agent.rs, on the official Rust SDK) through the
//! proxy in front of the example shipping server: the naive agent fails exactly on the seeds
//! whose decisions inject the lost acknowledgement (computed here from the decision function,
//! not from the runs), the idempotent agent passes every run, an oracle that disagrees with
//! our checks is reported as such, a killed campaign keeps its finished runs and resumes, and
//! `--rerun` meets the same faults on the same calls.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use toolstorm::campaign::CampaignFile;
use toolstorm::decision::Draw;
use toolstorm::json::{Text, Value, parse};

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

fn agent() -> PathBuf {
    let server = common::example_server();
    let path = server.with_file_name("mcp_agent");
    assert!(path.exists(), "{} (built by `cargo test`)", path.display());
    path
}

/// A fresh folder with `mcp-lost-ack.json`, its server the example binary.
fn workspace(tag: &str) -> (PathBuf, PathBuf) {
    common::lost_ack_workspace(tag)
}

fn campaign(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .arg("campaign")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run campaign");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn agent_args(idempotent: bool) -> Vec<String> {
    let mut a = vec![
        "--".to_owned(),
        agent().display().to_string(),
        "--mcp-config".into(),
        "{mcp_config}".into(),
    ];
    if idempotent {
        a.push("--idempotent".into());
    }
    a
}

/// A finished campaign of the naive agent on seeds `seeds` at probability 0.5, in a fresh
/// folder `tag`: the folder and its scenario.
fn naive_campaign(tag: &str, seeds: &str) -> (PathBuf, PathBuf) {
    let (dir, scenario) = workspace(tag);
    let mut args = vec![
        scenario.to_str().expect("path").to_owned(),
        "--seeds".into(),
        seeds.into(),
        "--probability".into(),
        "0.5".into(),
    ];
    args.extend(agent_args(false));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = campaign(&dir, &args);
    assert_failed_runs_exit_1(code, &out, &err);
    (dir, scenario)
}

/// A campaign exits 1 when a run failed (saying how many did not pass), 0 when none did.
fn assert_failed_runs_exit_1(code: i32, out: &str, err: &str) {
    if out.contains("FAIL") || out.contains("\"passed\": false") {
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("planned run(s) did not pass"), "{err}");
    } else {
        assert_eq!(code, 0, "{err}");
    }
}

fn summary(stdout: &str) -> Value {
    parse(stdout).unwrap_or_else(|e| panic!("--json prints JSON ({e}): {stdout}"))
}

fn seeds_at(v: &Value, key: &str) -> Vec<i64> {
    v.as_object()
        .and_then(|o| o.get(key))
        .and_then(Value::as_array)
        .expect(key)
        .iter()
        .filter_map(Value::as_i64)
        .collect()
}

/// The seeds on which `lost-receipt` fires on the first `create_shipment` at probability
/// 0.5: the decision is ours, so this is known before any agent runs.
fn predicted_failures(seeds: impl Iterator<Item = i64>) -> Vec<i64> {
    seeds
        .filter(|s| {
            Draw::new(
                *s,
                &Text::from("lost-receipt"),
                &Text::from("create_shipment"),
                &Text::from("#1"),
            )
            .hits(0.5)
        })
        .collect()
}

#[test]
fn the_naive_agent_fails_on_exactly_the_seeds_the_decisions_predict() {
    let (dir, scenario) = workspace("naive");
    let mut args = vec![
        scenario.to_str().expect("path").to_owned(),
        "--runs".into(),
        "20".into(),
        "--jobs".into(),
        "2".into(),
        "--probability".into(),
        "0.5".into(),
        "--json".into(),
    ];
    args.extend(agent_args(false));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = campaign(&dir, &args);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("of 20 planned run(s) did not pass"), "{err}");
    let v = summary(&out);
    // The scenario's seed is 42: runs use 43..=62.
    let want = predicted_failures(43..=62);
    assert!(
        !want.is_empty() && want.len() < 20,
        "a mixed sample: {want:?}"
    );
    assert_eq!(seeds_at(&v, "failing_seeds"), want);
    let passed = v
        .as_object()
        .and_then(|o| o.get("passed"))
        .and_then(Value::as_i64);
    assert_eq!(passed, Some(20 - want.len() as i64));
    let first = v
        .as_object()
        .and_then(|o| o.get("pass_hat"))
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(|p| p.as_object())
        .and_then(|p| p.get("p"))
        .and_then(Value::as_number_f64)
        .expect("pass^1");
    assert!((first - (20 - want.len()) as f64 / 20.0).abs() < 1e-12);
    // Per run, for CI scripts: the seed, the outcome, what failed, where the recording is.
    let results = v
        .as_object()
        .and_then(|o| o.get("results"))
        .and_then(Value::as_array)
        .expect("results");
    assert_eq!(results.len(), 20);
    for r in results {
        let o = r.as_object().expect("a run");
        let seed = o.get("seed").and_then(Value::as_i64).expect("seed");
        let fired = want.contains(&seed);
        let failed: Vec<&str> = o
            .get("failed_checks")
            .and_then(Value::as_array)
            .expect("failed_checks")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let expected: Vec<&str> = if fired {
            vec!["No duplicate side effects"]
        } else {
            vec![]
        };
        assert_eq!(failed, expected, "seed {seed}");
        assert_eq!(o.get("passed").and_then(Value::as_bool), Some(!fired));
        assert_eq!(
            o.get("duplicates").and_then(Value::as_i64),
            Some(i64::from(fired))
        );
        assert_eq!(o.get("outcome").and_then(Value::as_str), Some("finished"));
        let recording = o
            .get("recording")
            .and_then(Value::as_str)
            .expect("recording");
        assert!(dir.join(recording).is_file(), "{recording}");
    }
    // Every failure is the duplicate commit, and the file says so run by run.
    let file = CampaignFile::from_text(
        &std::fs::read_to_string(dir.join("mcp-lost-ack.campaign.json")).expect("file"),
    )
    .expect("a valid campaign file");
    for r in &file.runs {
        let fired = want.contains(&r.seed);
        assert_eq!(r.faults, u64::from(fired), "seed {}", r.seed);
        assert_eq!(r.duplicates, u64::from(fired), "seed {}", r.seed);
        assert_eq!(r.passed, !fired, "seed {}", r.seed);
    }
    // Below --min-pass the exit is 1.
    let (code, _, _) = campaign(
        &dir,
        &["mcp-lost-ack.campaign.json", "--json", "--min-pass", "1.0"],
    );
    assert_eq!(code, 1);
}

#[test]
fn the_idempotent_agent_passes_every_run_and_a_disagreeing_oracle_is_named() {
    let (dir, scenario) = workspace("idem");
    let mut args = vec![
        scenario.to_str().expect("path").to_owned(),
        "--runs".into(),
        "6".into(),
        "--probability".into(),
        "0.5".into(),
        "--verify".into(),
        // The oracle fails seed 45 whatever happened: it disagrees with our checks there.
        "test \"$TOOLSTORM_SEED\" != 45".into(),
    ];
    args.extend(agent_args(true));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = campaign(&dir, &args);
    assert_failed_runs_exit_1(code, &out, &err);
    assert!(
        out.contains("the oracle disagrees with our checks on seeds 45"),
        "{out}"
    );
    let (_, json, _) = campaign(&dir, &["mcp-lost-ack.campaign.json", "--json"]);
    let v = summary(&json);
    assert_eq!(seeds_at(&v, "failing_seeds"), [45]);
    assert_eq!(seeds_at(&v, "oracle_disagrees"), [45]);
    let file = CampaignFile::from_text(
        &std::fs::read_to_string(dir.join("mcp-lost-ack.campaign.json")).expect("file"),
    )
    .expect("valid");
    assert!(
        file.runs
            .iter()
            .all(|r| r.duplicates == 0 && r.checks.iter().all(|c| c.passed)),
        "every run recovered without a duplicate"
    );
    // A re-run of seed 45 says the oracle's verdict beside the checks': it fails there again.
    let (_, out, err) = campaign(&dir, &["mcp-lost-ack.campaign.json", "--rerun", "45"]);
    assert!(
        out.contains("    ✗ → ✗  oracle (--verify): fail → fail"),
        "{out}\n{err}"
    );
    let (_, out, err) = campaign(&dir, &["mcp-lost-ack.campaign.json", "--rerun", "44"]);
    assert!(
        out.contains("    ✓ → ✓  oracle (--verify): pass → pass"),
        "{out}\n{err}"
    );
    // Started again onto it with another probability: refused, saying what differs.
    let again: Vec<&str> = args
        .iter()
        .map(|a| if *a == "0.5" { "0.7" } else { a })
        .collect();
    let (code, _, err) = campaign(&dir, &again);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("holds another campaign (probability: was 0.5, now 0.7)"),
        "{err}"
    );
    // And without the oracle.
    let at = args
        .iter()
        .position(|a| *a == "--verify")
        .expect("--verify");
    let mut unverified = args.clone();
    unverified.drain(at..at + 2);
    let (code, _, err) = campaign(&dir, &unverified);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("(--verify: was \"test \\\"$TOOLSTORM_SEED\\\" != 45\", now \"none\")"),
        "{err}"
    );
}

/// Starts (without waiting) a campaign of `runs` runs of the naive agent, `before` each: the
/// process, and its arguments.
fn start_naive(
    dir: &Path,
    scenario: &Path,
    runs: &str,
    before: &str,
) -> (std::process::Child, Vec<String>) {
    let mut args = vec![
        "campaign".to_owned(),
        scenario.to_str().expect("path").to_owned(),
        "--runs".into(),
        runs.into(),
        "--before".into(),
        before.into(),
    ];
    args.extend(agent_args(false));
    let child = Command::new(BIN)
        .args(&args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start");
    (child, args)
}

#[test]
fn a_killed_campaign_keeps_its_finished_runs_and_resumes() {
    let (dir, scenario) = workspace("kill");
    let (mut child, args) = start_naive(&dir, &scenario, "6", "sleep 0.3");
    let file = dir.join("mcp-lost-ack.campaign.json");
    let until = Instant::now() + Duration::from_secs(30);
    let finished = |f: &Path| {
        std::fs::read_to_string(f)
            .ok()
            .and_then(|t| CampaignFile::from_text(&t).ok())
            .map_or(0, |c| c.runs.len())
    };
    while finished(&file) < 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("kill");
    let _ = child.wait();
    let kept = finished(&file);
    assert!(
        (2..6).contains(&kept),
        "killed mid-way with {kept} runs on record"
    );
    let args: Vec<&str> = args[1..].iter().map(String::as_str).collect();
    let (code, out, err) = campaign(&dir, &args);
    assert_failed_runs_exit_1(code, &out, &err);
    assert!(
        err.contains("resuming") && err.contains(&format!("{kept} of 6 runs")),
        "{err}"
    );
    assert!(out.contains("6 of 6 runs"), "{out}");
    assert_eq!(finished(&file), 6);
}

#[test]
fn rerun_meets_the_same_faults_on_the_same_calls() {
    let (dir, _) = naive_campaign("rerun", "43..46");
    let failing = predicted_failures(43..=46);
    let seed = failing.first().copied().unwrap_or(43).to_string();
    let (code, out, err) = campaign(&dir, &["mcp-lost-ack.campaign.json", "--rerun", &seed]);
    // The exit status is the re-run's verdict: the naive agent fails a failing seed again.
    assert_eq!(code, if failing.is_empty() { 0 } else { 1 }, "{out}{err}");
    assert!(out.contains("the same faults on the same calls"), "{out}");
    if !failing.is_empty() {
        assert!(out.contains("lost-receipt on create_shipment #1"), "{out}");
    }
    let (code, _, err) = campaign(&dir, &["mcp-lost-ack.campaign.json", "--rerun", "7"]);
    assert_eq!(code, 2);
    assert!(err.contains("no finished run of seed 7"), "{err}");
}

#[test]
fn bad_campaigns_say_what_is_wrong() {
    let (dir, scenario) = workspace("bad");
    let scenario = scenario.to_str().expect("path");
    let (code, _, err) = campaign(&dir, &[scenario, "--runs", "2"]);
    assert_eq!(code, 2);
    assert!(err.contains("the agent's command after `--`"), "{err}");
    let orbit = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/orbit-parallel.json");
    let (code, _, err) = campaign(&dir, &[orbit, "--", "agent"]);
    assert_eq!(code, 2);
    assert!(err.contains("world \"mcp\""), "{err}");
    let serverless = dir.join("no-server.json");
    std::fs::write(
        &serverless,
        r#"{"schema_version": 1, "world": "mcp", "name": "n", "title": "T", "seed": 1, "rules": []}"#,
    )
    .expect("write");
    let (code, _, err) = campaign(&dir, &[serverless.to_str().expect("path"), "--", "agent"]);
    assert_eq!(code, 2);
    assert!(err.contains("\"server\""), "{err}");
    let (code, _, err) = campaign(&dir, &["missing.json", "--", "agent"]);
    assert_eq!(code, 2);
    assert!(err.contains("missing.json"), "{err}");
    // A run whose agent cannot start is a failed run, not a crash, and nothing was tested:
    // exit 2, saying so; the table keeps its columns.
    let (code, out, err) = campaign(&dir, &[scenario, "--runs", "2", "--", "/nonexistent/agent"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.contains("cannot start the agent"), "{out}");
    assert!(
        err.contains("2 of 2 run(s) could not start (seeds 43, 44): nothing was tested"),
        "{err}"
    );
    let header = out.lines().nth(1).expect("the table's header");
    let row = out.lines().nth(2).expect("a row");
    assert_eq!(
        header.find("faults").map(|i| i + "faults".len()),
        row.find("start_failed")
            .map(|i| i + "start_failed".len() + "       0".len()),
        "the faults column lines up:\n{header}\n{row}"
    );
    // --min-pass is a fraction: 90 (meaning 90%) is refused with what it meant.
    let (code, _, err) = campaign(
        &dir,
        &[scenario, "--runs", "1", "--min-pass", "90", "--", "agent"],
    );
    assert_eq!(code, 2);
    assert!(err.contains("for 90% write 0.9"), "{err}");
}

#[test]
fn shrink_finds_the_single_rule_single_call_schedule() {
    let (dir, scenario) = workspace("shrink");
    // Two rules fire on the naive agent's two calls: the lost acknowledgement of the first
    // (the incident) and a small delay on the second (noise).
    let mut v = parse(&std::fs::read_to_string(&scenario).expect("read")).expect("json");
    let noise = parse(
        r#"{"name": "slow-second", "tool": "create_*", "kind": "latency", "calls": [2],
            "probability": 1.0, "limit": null, "delay": 0.01, "replacement": null}"#,
    )
    .expect("rule");
    if let Some(Value::Array(rules)) = v.as_object_mut().and_then(|o| o.get_mut("rules")) {
        rules.push(noise);
    }
    std::fs::write(&scenario, toolstorm::json::pretty(&v)).expect("write");
    let mut args = vec![
        scenario.to_str().expect("path").to_owned(),
        "--seeds".into(),
        "43..43".into(),
    ];
    args.extend(agent_args(false));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = campaign(&dir, &args);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("FAIL"), "{out}");
    // A budget of no runs is refused before any run: the agent is not started.
    let runs = dir.join("mcp-lost-ack.campaign.runs");
    let before = std::fs::read_dir(&runs).map_or(0, |d| d.count());
    let (code, _, err) = campaign(
        &dir,
        &[
            "mcp-lost-ack.campaign.json",
            "--shrink",
            "43",
            "--budget",
            "0",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--budget 0 allows no run"), "{err}");
    assert_eq!(std::fs::read_dir(&runs).map_or(0, |d| d.count()), before);
    assert!(!dir.join("mcp-lost-ack.campaign.shrunk-43.json").exists());
    assert!(
        !dir.join("mcp-lost-ack.campaign.shrink-43.runs").exists(),
        "no try was run"
    );
    let (code, out, err) = campaign(&dir, &["mcp-lost-ack.campaign.json", "--shrink", "43"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("2 faults → 1 (lost-receipt on create_shipment #1)"),
        "{out}"
    );
    // The schedule is a scenario file: valid, one rule pinned to one call.
    let shrunk = dir.join("mcp-lost-ack.campaign.shrunk-43.json");
    let doc = toolstorm::document::open_scenario(&shrunk).expect("a valid scenario");
    let toolstorm::document::Scenario::Mcp(s) = doc else {
        panic!("an MCP scenario");
    };
    assert_eq!(s.rules.len(), 1, "{:?}", s.rules);
    let text = toolstorm::json::compact(&s.rules[0]);
    assert!(
        text.contains(r#""calls":[1]"#) && text.contains(r#""tool":"create_shipment""#),
        "{text}"
    );
    // A search with a smaller budget finds less: the better earlier result is kept, the new
    // one goes beside it, and that is said.
    let before = std::fs::read_to_string(&shrunk).expect("shrunk");
    let (code, out, err) = campaign(
        &dir,
        &[
            "mcp-lost-ack.campaign.json",
            "--shrink",
            "43",
            "--budget",
            "1",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("2 faults → 2"), "{out}");
    assert_eq!(std::fs::read_to_string(&shrunk).expect("kept"), before);
    assert!(
        err.contains("an earlier search found a smaller schedule (1 fault(s))"),
        "{err}"
    );
    assert!(
        dir.join("mcp-lost-ack.campaign.shrunk-43-2.json").is_file(),
        "{out}"
    );
}

/// Processes whose command line holds `mark`.
fn running_with(mark: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(mark))
        })
        .collect()
}

#[test]
fn a_killed_campaign_leaves_nothing_running() {
    let (dir, scenario) = workspace("orphans");
    let mark = format!("toolstorm-orphan-{}", std::process::id());
    let (mut child, _) = start_naive(&dir, &scenario, "2", &format!("sleep 30 # {mark}"));
    let until = Instant::now() + Duration::from_secs(20);
    while running_with(&mark).len() < 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !running_with(&mark).is_empty(),
        "the --before command is running"
    );
    child.kill().expect("kill");
    let _ = child.wait();
    // The watchdog stops the run's process group once the campaign is gone.
    let until = Instant::now() + Duration::from_secs(10);
    while !running_with(&mark).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(running_with(&mark), Vec::<u32>::new(), "left running");
}

#[test]
fn placeholders_in_any_quotes_stay_the_path_they_name_in_a_hostile_folder() {
    // A folder whose name runs a command if a shell ever reads it as code.
    let (dir, scenario) = workspace("q $(touch PWNED) it's `touch PWNED2`");
    let mut args = vec![
        scenario.to_str().expect("path").to_owned(),
        "--runs".into(),
        "1".into(),
        "--before".into(),
        r#"test -d "{run_dir}" && test -d {run_dir} && test -d '{run_dir}'"#.into(),
        "--verify".into(),
        r#"test -f "{record}" && test -f {record} && test -f '{record}' && test "{seed}" = "$TOOLSTORM_SEED""#.into(),
    ];
    args.extend(agent_args(true));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = campaign(&dir, &args);
    assert_eq!(code, 0, "{out}{err}");
    let file = CampaignFile::from_text(
        &std::fs::read_to_string(dir.join("mcp-lost-ack.campaign.json")).expect("file"),
    )
    .expect("valid");
    assert_eq!(file.runs.len(), 1);
    assert_eq!(
        file.runs[0].oracle,
        Some(true),
        "the oracle found the recording: {out}"
    );
    assert!(file.runs[0].passed, "{out}");
    let ran = Command::new("find")
        .args([dir.parent().expect("parent"), Path::new("/tmp")])
        .args(["-maxdepth", "4", "-name", "PWNED*"])
        .output()
        .expect("find");
    assert!(
        ran.stdout.is_empty(),
        "the folder's name ran: {}",
        String::from_utf8_lossy(&ran.stdout)
    );
}

#[test]
fn secrets_in_the_agent_and_oracle_commands_stay_out_of_the_campaign_file() {
    let (dir, scenario) = workspace("secrets");
    let verify = r#"test -n "$TOOLSTORM_SEED" && API_PASSWORD=pw-live-1 true --api-key=sk-live-2"#;
    let mut args = vec![
        scenario.to_str().expect("path").to_owned(),
        "--runs".into(),
        "2".into(),
        "--verify".into(),
        verify.into(),
        "--".into(),
        "env".into(),
        "GITHUB_TOKEN=ghp-live-3".into(),
    ];
    args.extend(agent_args(true).into_iter().skip(1));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = campaign(&dir, &argv);
    assert_eq!(code, 0, "{out}{err}");
    let file_path = dir.join("mcp-lost-ack.campaign.json");
    let (_, table, _) = campaign(&dir, &["mcp-lost-ack.campaign.json"]);
    let (_, json, _) = campaign(&dir, &["mcp-lost-ack.campaign.json", "--json"]);
    let text = std::fs::read_to_string(&file_path).expect("file");
    for shown in [&text, &out, &table, &json] {
        for secret in ["pw-live-1", "sk-live-2", "ghp-live-3"] {
            assert!(!shown.contains(secret), "{secret} kept: {shown}");
        }
    }
    assert!(text.contains("GITHUB_TOKEN=[REDACTED]"), "{text}");
    assert!(text.contains("API_PASSWORD=[REDACTED]"), "{text}");
    // Run again, the same campaign resumes (its plan compares as redacted)...
    let (code, _, err) = campaign(&dir, &argv);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("2 of 2 runs already finished"), "{err}");
    // ...and a rerun asks for the commands with their secrets, then runs with them.
    let (code, _, err) = campaign(&dir, &["mcp-lost-ack.campaign.json", "--rerun", "43"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("with a secret redacted") && err.contains("give it again"),
        "{err}"
    );
    let mut again = vec![
        "mcp-lost-ack.campaign.json",
        "--rerun",
        "43",
        "--verify",
        verify,
    ];
    again.extend(argv[5..].iter().copied());
    let (code, out, err) = campaign(&dir, &again);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn a_daemon_the_agent_starts_in_a_session_of_its_own_does_not_outlive_its_run() {
    let (dir, scenario) = workspace("setsid");
    let mark = format!("sleep 300.{}", std::process::id());
    // The agent first starts a daemon that leaves its process group (`setsid`), then works.
    let launcher = format!("setsid sh -c '{mark}' & exec \"$0\" \"$@\"");
    let mut args = vec![
        scenario.to_str().expect("path").to_owned(),
        "--runs".into(),
        "2".into(),
        "--".into(),
        "sh".into(),
        "-c".into(),
        launcher,
    ];
    args.extend(agent_args(true).into_iter().skip(1));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = campaign(&dir, &argv);
    assert_eq!(code, 0, "{out}{err}");
    let left = running_with(&mark);
    for pid in &left {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    assert!(
        left.is_empty(),
        "the daemons outlived the campaign: {left:?}"
    );
}

#[test]
fn rerun_with_edited_rules_prints_the_comparison_and_exits_by_the_new_run() {
    let (dir, scenario) = naive_campaign("rerun-edited", "43..44");
    let seed = *predicted_failures(43..=44)
        .first()
        .expect("a failing seed in 43..44");
    // The edit: the acknowledgement is lost on the second call instead of the first.
    let text = std::fs::read_to_string(&scenario).expect("scenario");
    let mut v = parse(&text).expect("json");
    if let Some(Value::Array(rules)) = v.as_object_mut().and_then(|o| o.get_mut("rules"))
        && let Some(Value::Object(rule)) = rules.first_mut()
    {
        rule.insert("calls", Value::Array(vec![Value::from(2)]));
    }
    std::fs::write(dir.join("edited.json"), toolstorm::json::pretty(&v)).expect("write");
    let seed_text = seed.to_string();
    let (code, out, err) = campaign(
        &dir,
        &[
            "mcp-lost-ack.campaign.json",
            "--rerun",
            &seed_text,
            "--scenario",
            "edited.json",
        ],
    );
    let recording = dir.join(format!(
        "mcp-lost-ack.campaign.rerun-{seed}.runs/run-001/recording.json"
    ));
    let expected = format!(
        "seed {seed}: first run FAIL (lost-receipt on create_shipment #1); rerun with the rules of edited.json PASS (no faults) · the faults differ
run 1 (seed {seed}) → rerun: calls +0 -1 ~1 · faults 1→0 · duplicates 1→0 · 2 verdict(s) flipped
    tool              arguments                   fault: first → rerun              client got: first → rerun · commits
  ~ create_shipment   {{\"order_id\":\"o-1\"}}          lost-receipt → -                  a result with isError: true (the model sees the error) → the result · 1 → 1
  - create_shipment   {{\"order_id\":\"o-1\"}}          - → (none)                        the result → (none) · 1 → 0
  verdicts: first → rerun
    ✓ → ✗  Fault exercised: lost-receipt: Triggered 0 time(s) (coverage, not part of a run's verdict)
    ✗ → ✓  No duplicate side effects: 0 duplicate effect(s) across 1 commits
    ✓ → ✓  Call budget: 1 / 10000 calls
    ✓ → ✓  Session finished: the proxy finished the session; no call was left in flight
    ✓ → ✓  Recording complete: the recording took every tools/call the client sent
rerun recording: {}
",
        recording.display()
    );
    assert_eq!(out, expected, "{err}");
    assert_eq!(code, 0, "the re-run passed: {err}");
    // Rules that make the re-run fail make it exit 1.
    let (code, out, _) = campaign(
        &dir,
        &[
            "mcp-lost-ack.campaign.json",
            "--rerun",
            &seed_text,
            "--scenario",
            "mcp-lost-ack.json",
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("rerun with the rules of mcp-lost-ack.json FAIL"),
        "{out}"
    );
}

#[test]
fn a_run_past_its_timeout_says_why_in_the_table_and_in_agent_log() {
    let (dir, scenario) = workspace("timeout");
    let (code, out, err) = campaign(
        &dir,
        &[
            scenario.to_str().expect("path"),
            "--runs",
            "1",
            "--timeout",
            "1",
            "--",
            "sh",
            "-c",
            "echo waiting for a model; sleep 30",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains("timeout")
            && out.contains("stopped after 1s (--timeout); the proxy recorded no call: did the agent start its MCP server?"),
        "{out}"
    );
    let log = std::fs::read_to_string(dir.join("mcp-lost-ack.campaign.runs/run-001/agent.log"))
        .expect("agent.log");
    assert!(
        log.starts_with("waiting for a model")
            && log.contains("toolstorm-tui campaign: the agent was stopped after 1s (--timeout)"),
        "{log}"
    );
}
