//! Campaigns split over machines: `--shard I/N` (and the index read from a Kubernetes Indexed
//! Job's or a CI system's variables), and `campaign merge`. A 40-seed campaign of the example
//! agent (examples/mcp_agent.rs, naive: the lost acknowledgement fails it on some seeds), run
//! once and as four shards in parallel processes, merges into the same runs, pass^k and
//! failing seeds; merge refuses parts of another campaign and a seed run twice with different
//! outcomes, and reports a missing shard's seeds as missing, never as passed.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use toolstorm::campaign::CampaignFile;
use toolstorm::json::{Value, parse, pretty};

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

fn agent() -> String {
    let path = common::example_server().with_file_name("mcp_agent");
    assert!(path.exists(), "{} (built by `cargo test`)", path.display());
    path.display().to_string()
}

fn cmd(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("campaign").args(args).current_dir(dir);
    for (k, _) in std::env::vars() {
        if k.starts_with("CI_NODE")
            || k.starts_with("CIRCLE_NODE")
            || k.starts_with("BUILDKITE_PARALLEL")
            || k.starts_with("SEMAPHORE_JOB")
            || k.starts_with("BITBUCKET_PARALLEL")
            || k == "JOB_COMPLETION_INDEX"
        {
            c.env_remove(k);
        }
    }
    c
}

fn text(o: &Output) -> (i32, String, String) {
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn campaign(dir: &Path, args: &[&str]) -> (i32, String, String) {
    text(&cmd(dir, args).output().expect("run campaign"))
}

/// The arguments of a campaign of the naive agent on `seeds` at probability 0.5.
fn plan_args(scenario: &Path, seeds: &str, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = vec![
        scenario.display().to_string(),
        "--seeds".into(),
        seeds.into(),
        "--probability".into(),
        "0.5".into(),
        // As the CI examples run shards: any pass rate is accepted there (a failed run would
        // exit 1), and the merge judges the whole.
        "--min-pass".into(),
        "0".into(),
    ];
    a.extend(extra.iter().map(|s| (*s).to_owned()));
    a.extend([
        "--".into(),
        agent(),
        "--mcp-config".into(),
        "{mcp_config}".into(),
    ]);
    a
}

/// A merge (or a campaign file read again) without `--min-pass` whose runs failed: exit 1,
/// saying how many did not pass.
fn assert_runs_failed(code: i32, err: &str) {
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("planned run(s) did not pass"), "{err}");
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Runs shards 1..=4 of `seeds` at once, each a process of its own, in `dir`: their files.
fn four_shards(dir: &Path, scenario: &Path, seeds: &str) -> Vec<PathBuf> {
    let children: Vec<_> = (1..=4)
        .map(|i| {
            let args = plan_args(scenario, seeds, &["--shard", &format!("{i}/4")]);
            cmd(dir, &strs(&args))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start shard")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("shard");
        assert!(out.status.success(), "{:?}", text(&out));
    }
    (1..=4)
        .map(|i| dir.join(format!("mcp-lost-ack.shard-{i}-of-4.campaign.json")))
        .collect()
}

fn load(path: &Path) -> CampaignFile {
    let t = std::fs::read_to_string(path).expect("read");
    CampaignFile::from_text(&t).expect("a campaign file")
}

fn json(stdout: &str) -> Value {
    parse(stdout).unwrap_or_else(|e| panic!("--json prints JSON ({e}): {stdout}"))
}

fn field<'a>(v: &'a Value, k: &str) -> &'a Value {
    v.as_object()
        .and_then(|o| o.get(k))
        .unwrap_or_else(|| panic!("no {k}"))
}

/// A run's result without what differs between two runs of one seed on one machine and on
/// four (its time, its folder).
fn result_of(r: &Value) -> String {
    let mut r = r.clone();
    if let Some(o) = r.as_object_mut() {
        o.remove("seconds");
        o.remove("recording");
    }
    pretty(&r)
}

#[test]
fn forty_seeds_on_one_machine_and_in_four_shards_merge_to_the_same_campaign() {
    let (dir, scenario) = common::lost_ack_workspace("shards-forty");
    let single = plan_args(
        &scenario,
        "1..40",
        &["--out", "single.campaign.json", "--json"],
    );
    let (code, single_out, err) = campaign(&dir, &strs(&single));
    assert_eq!(code, 0, "{err}");
    let single_json = json(&single_out);

    let shards = four_shards(&dir, &scenario, "1..40");
    for (i, s) in shards.iter().enumerate() {
        let f = load(s);
        assert_eq!(f.seeds.len(), 40, "a shard names the whole plan");
        assert_eq!(f.runs.len(), 10);
        assert!(
            f.runs.iter().all(|r| (r.run - 1) % 4 == i as u64),
            "shard {} ran {:?}",
            i + 1,
            f.runs.iter().map(|r| r.run).collect::<Vec<_>>()
        );
        let raw = std::fs::read_to_string(s).expect("read");
        assert!(raw.contains("\"agent_sha256\"") && raw.contains("\"scenario_sha256\""));
    }

    let mut merge = vec!["merge".to_owned(), "merged.campaign.json".into()];
    merge.extend(shards.iter().map(|p| p.display().to_string()));
    merge.extend(["--json".into(), "--junit".into(), "merged.junit.xml".into()]);
    let (code, merged_out, err) = campaign(&dir, &strs(&merge));
    assert_runs_failed(code, &err);
    assert!(
        err.contains("4 files") && err.contains("40 of 40 runs"),
        "{err}"
    );
    let merged_json = json(&merged_out);
    for k in [
        "pass_hat",
        "failing_seeds",
        "by_check",
        "passed",
        "runs",
        "planned",
        "missing_seeds",
    ] {
        assert_eq!(field(&merged_json, k), field(&single_json, k), "{k}");
    }
    let failing = field(&single_json, "failing_seeds")
        .as_array()
        .expect("list")
        .len();
    assert!(
        failing > 0 && failing < 40,
        "the naive agent fails some seeds at p 0.5: {failing}"
    );
    let results = |v: &Value| -> Vec<String> {
        field(v, "results")
            .as_array()
            .expect("list")
            .iter()
            .map(result_of)
            .collect()
    };
    assert_eq!(results(&merged_json), results(&single_json));

    // The merged file is an ordinary campaign file: the table, --min-pass, --rerun.
    let merged = load(&dir.join("merged.campaign.json"));
    assert_eq!(merged.shard, None);
    assert!(
        merged.runs.iter().all(|r| dir.join(&r.recording).is_file()),
        "recordings named from the merged file"
    );
    let (code, table, err) = campaign(&dir, &["merged.campaign.json"]);
    assert_runs_failed(code, &err);
    assert!(
        table.contains("40 of 40 runs") && !table.contains("MISSING"),
        "{table}"
    );
    let (code, _, err) = campaign(&dir, &["merged.campaign.json", "--min-pass", "1.0"]);
    assert_eq!(code, 1, "below --min-pass");
    assert!(
        err.contains("pass rate 0.375 < 1 (15 of 40 planned run(s) passed)"),
        "{err}"
    );
    let (code, _, err) = campaign(&dir, &["merged.campaign.json", "--min-pass", "0.3"]);
    assert_eq!(code, 0, "at --min-pass: {err}");
    let seed = merged
        .runs
        .iter()
        .find(|r| !r.passed)
        .map(|r| r.seed)
        .expect("a failing seed");
    let mut rerun = vec![
        "merged.campaign.json".to_owned(),
        "--rerun".into(),
        seed.to_string(),
        "--".into(),
    ];
    rerun.extend([agent(), "--mcp-config".into(), "{mcp_config}".into()]);
    let (code, out, err) = campaign(&dir, &strs(&rerun));
    assert_eq!(
        code, 1,
        "the rerun of a failing seed fails again: {out}{err}"
    );
    assert!(out.contains("same faults"), "{out}");

    // JUnit: one case per run, the failing ones failed, naming the calls behind.
    let xml = std::fs::read_to_string(dir.join("merged.junit.xml")).expect("junit");
    assert_eq!(xml.matches("<testcase ").count(), 40);
    assert_eq!(xml.matches("<failure ").count(), failing);
    assert!(xml.contains("committed shipment o-1 again"), "{xml}");

    // --copy-runs: the merged campaign stands alone once the shards are gone.
    let elsewhere = dir.join("ci-merge");
    std::fs::create_dir_all(&elsewhere).expect("dir");
    let mut copy = vec!["merge".to_owned(), "all.campaign.json".into()];
    copy.extend(shards.iter().map(|p| p.display().to_string()));
    copy.push("--copy-runs".into());
    let (code, _, err) = campaign(&elsewhere, &strs(&copy));
    assert_runs_failed(code, &err);
    assert!(err.contains("40 run folders copied"), "{err}");
    for s in &shards {
        let runs = s.with_file_name(format!(
            "{}.runs",
            s.file_stem().expect("stem").to_string_lossy()
        ));
        std::fs::remove_dir_all(runs).expect("remove a shard's runs");
    }
    // An artifact without its run folders: the copy names the missing source, not where it
    // was going.
    let again = dir.join("ci-merge-2");
    std::fs::create_dir_all(&again).expect("dir");
    let (code, _, err) = campaign(&again, &strs(&copy));
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains(".shard-1-of-4.campaign.runs/run-") && !err.contains("all.campaign.runs"),
        "{err}"
    );
    let copied = load(&elsewhere.join("all.campaign.json"));
    assert_eq!(
        (copied.scenario.as_str(), copied.cwd.as_str()),
        ("../mcp-lost-ack.json", ".."),
        "named from the merged file's folder"
    );
    assert!(
        copied
            .runs
            .iter()
            .all(|r| r.recording.starts_with("all.campaign.runs/run-")
                && elsewhere.join(&r.recording).is_file())
    );
    let (code, _, err) = campaign(&elsewhere, &["all.campaign.json", "--junit", "j.xml"]);
    assert_runs_failed(code, &err);
    let xml = std::fs::read_to_string(elsewhere.join("j.xml")).expect("junit");
    assert!(
        xml.contains("committed shipment o-1 again") && !xml.contains("cannot be read"),
        "{xml}"
    );
}

#[test]
fn merge_refuses_parts_of_other_campaigns_and_reports_missing_seeds() {
    let (dir, scenario) = common::lost_ack_workspace("shards-refuse");
    let shards = four_shards(&dir, &scenario, "1..8");

    // Another scenario: the same name, other rules.
    let other_dir = dir.join("other");
    std::fs::create_dir_all(&other_dir).expect("dir");
    let edited = std::fs::read_to_string(&scenario)
        .expect("scenario")
        .replacen("\"probability\": 1.0", "\"probability\": 0.9", 1);
    let other_scenario = other_dir.join("mcp-lost-ack.json");
    std::fs::write(&other_scenario, edited).expect("write");
    let args = plan_args(&other_scenario, "1..8", &["--shard", "2/4"]);
    let (code, _, err) = campaign(&other_dir, &strs(&args));
    assert_eq!(code, 0, "{err}");
    let other = other_dir.join("mcp-lost-ack.shard-2-of-4.campaign.json");
    let (code, _, err) = campaign(
        &dir,
        &[
            "merge",
            "m.campaign.json",
            &shards[0].display().to_string(),
            &other.display().to_string(),
        ],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("another scenario") && err.contains("shard-2-of-4"),
        "{err}"
    );
    assert!(!dir.join("m.campaign.json").exists(), "nothing written");

    // Another agent: the idempotent one.
    let mut args = plan_args(
        &scenario,
        "1..8",
        &["--shard", "2/4", "--out", "idem.campaign.json"],
    );
    args.push("--idempotent".into());
    let (code, _, err) = campaign(&dir, &strs(&args));
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = campaign(
        &dir,
        &[
            "merge",
            "m.campaign.json",
            &shards[0].display().to_string(),
            "idem.campaign.json",
        ],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("idem.campaign.json is not a part") && err.contains("another agent"),
        "{err}"
    );

    // A seed run twice, saying otherwise the second time.
    let mut v = parse(&std::fs::read_to_string(&shards[1]).expect("read")).expect("json");
    let seed = {
        let run = v
            .as_object_mut()
            .and_then(|o| o.get_mut("runs"))
            .and_then(|r| r.as_array_mut())
            .and_then(|r| r.first_mut())
            .and_then(Value::as_object_mut)
            .expect("a run");
        let passed = run.get("passed").and_then(Value::as_bool).expect("passed");
        run.insert("passed", Value::Bool(!passed));
        run.get("seed").and_then(Value::as_i64).expect("seed")
    };
    let twice = dir.join("twice");
    std::fs::create_dir_all(&twice).expect("dir");
    std::fs::write(twice.join("again.campaign.json"), pretty(&v)).expect("write");
    let (code, _, err) = campaign(
        &dir,
        &[
            "merge",
            "m.campaign.json",
            &shards[1].display().to_string(),
            "twice",
        ],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!(
            "seed {seed} (run 2) was run twice with different outcomes"
        )) && err.contains("again.campaign.json"),
        "{err}"
    );

    // A missing shard: its seeds are named; --allow-missing merges and reports them missing.
    let three: Vec<String> = [0, 1, 3]
        .iter()
        .map(|i| shards[*i].display().to_string())
        .collect();
    let mut args = vec!["merge".to_owned(), "m.campaign.json".into()];
    args.extend(three.iter().cloned());
    let (code, _, err) = campaign(&dir, &strs(&args));
    assert_eq!(code, 2);
    assert!(
        err.contains("2 of 8 seeds were run by no shard: 3, 7"),
        "{err}"
    );
    args.extend(["--allow-missing".into(), "--junit".into(), "m.xml".into()]);
    let (code, table, err) = campaign(&dir, &strs(&args));
    assert_runs_failed(code, &err);
    assert!(
        table.contains("6 of 8 runs")
            && table.contains("MISSING 2 planned seeds not run (not counted as passed): 3, 7"),
        "{table}"
    );
    let xml = std::fs::read_to_string(dir.join("m.xml")).expect("junit");
    assert_eq!(xml.matches("<skipped ").count(), 2, "{xml}");
    assert!(xml.contains("seed 3") && xml.contains("seed 7"));
    let (code, out, _) = campaign(&dir, &["m.campaign.json", "--json", "--min-pass", "0.0"]);
    assert_eq!(code, 0);
    assert_eq!(
        pretty(field(&json(&out), "missing_seeds")),
        "[\n  3,\n  7\n]"
    );
    // Missing seeds count against --min-pass: 8 planned, at most 6 passed.
    let (code, _, _) = campaign(&dir, &["m.campaign.json", "--min-pass", "0.8"]);
    assert_eq!(code, 1);
}

#[test]
fn the_shard_comes_from_kubernetes_or_the_ci_system_when_asked() {
    let (dir, scenario) = common::lost_ack_workspace("shards-env");
    let args = plan_args(
        &scenario,
        "1..8",
        &["--shard", "k8s/4", "--out", "k8s.campaign.json"],
    );
    let out = cmd(&dir, &strs(&args))
        .env("JOB_COMPLETION_INDEX", "2")
        .output()
        .expect("run");
    assert!(out.status.success(), "{:?}", text(&out));
    let f = load(&dir.join("k8s.campaign.json"));
    assert_eq!(f.shard.map(|s| s.to_string()), Some("3/4".into()));
    assert_eq!(
        f.runs.iter().map(|r| r.seed).collect::<Vec<_>>(),
        vec![3, 7]
    );

    let args = plan_args(&scenario, "1..8", &["--shard", "ci"]);
    let out = cmd(&dir, &strs(&args))
        .env("CIRCLE_NODE_INDEX", "0")
        .env("CIRCLE_NODE_TOTAL", "2")
        .output()
        .expect("run");
    assert!(out.status.success(), "{:?}", text(&out));
    let f = load(&dir.join("mcp-lost-ack.shard-1-of-2.campaign.json"));
    assert_eq!(
        f.runs.iter().map(|r| r.seed).collect::<Vec<_>>(),
        vec![1, 3, 5, 7]
    );

    for (shard, env, said) in [
        (
            "k8s/4",
            None,
            "--shard k8s/4: the shard's index is read from JOB_COMPLETION_INDEX, which is not set",
        ),
        (
            "ci",
            None,
            "none of the CI systems' variables are set (CI_NODE_INDEX/CI_NODE_TOTAL",
        ),
        ("5/4", None, "expected 1 <= I <= N"),
        (
            "k8s/4",
            Some(("JOB_COMPLETION_INDEX", "4")),
            "shard 5 of 4 does not exist",
        ),
    ] {
        let args = plan_args(&scenario, "1..8", &["--shard", shard]);
        let mut c = cmd(&dir, &strs(&args));
        if let Some((k, v)) = env {
            c.env(k, v);
        }
        let (code, _, err) = text(&c.output().expect("run"));
        assert_eq!(code, 2, "{shard}: {err}");
        assert!(
            err.contains(said) && !err.contains("panicked"),
            "{shard}: {err}"
        );
    }
    let (code, _, err) = campaign(&dir, &["k8s.campaign.json", "--shard", "1/2"]);
    assert_eq!(code, 2);
    assert!(err.contains("--shard runs part of a new campaign"), "{err}");
}

#[test]
fn a_campaign_of_ten_thousand_runs_merges_and_reads_back_past_the_documents_limit() {
    use toolstorm::campaign::file::{CheckResult, Outcome, RunRecord};
    use toolstorm::campaign::shard::Shard;
    let dir = common::fresh_dir("shards-big");
    let seeds: Vec<i64> = (1..=10_000).collect();
    let detail = "the proxy finished the session: every answer reached the client ".repeat(6);
    for index in 1..=10 {
        let shard = Shard { index, total: 10 };
        let runs = (1..=10_000u64)
            .filter(|r| shard.owns(*r))
            .map(|run| RunRecord {
                run,
                seed: run as i64,
                outcome: Outcome::Finished,
                exit: Some(0),
                seconds: 1.0,
                // Named in the shard's run folder, as a campaign names them; no run left a
                // recording, so none passed (a merge works each verdict out again).
                recording: format!("s{index}.campaign.runs/run-{run:05}/recording.json"),
                calls: 2,
                faults: 0,
                commits: 1,
                duplicates: 0,
                checks: vec![CheckResult {
                    name: "Session finished".into(),
                    passed: run % 10 != 0,
                    detail: detail.clone(),
                }],
                oracle: None,
                passed: false,
                note: None,
            })
            .collect();
        let file = CampaignFile {
            scenario: "s.json".into(),
            scenario_name: "s".into(),
            scenario_sha256: "ab".repeat(32),
            cwd: ".".into(),
            agent: vec!["agent".into()],
            probability: None,
            timeout: 60.0,
            before: None,
            verify: None,
            seeds: seeds.clone(),
            runs,
            agent_http: false,
            shard: Some(shard),
        };
        std::fs::write(dir.join(format!("s{index}.campaign.json")), file.to_text()).expect("write");
    }
    let (code, _, err) = campaign(&dir, &["merge", "all.campaign.json", "."]);
    // Runs failed and no --min-pass was given: 1, as a test runner does, saying how many.
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("planned run(s) did not pass"), "{err}");
    let size = std::fs::metadata(dir.join("all.campaign.json"))
        .expect("merged")
        .len();
    assert!(
        size > 8_000_000,
        "the merged file is past the documents' limit: {size}"
    );
    let (code, out, err) = campaign(&dir, &["all.campaign.json", "--json"]);
    assert_runs_failed(code, &err);
    let v = json(&out);
    assert_eq!(pretty(field(&v, "runs")), "10000");
    assert_eq!(pretty(field(&v, "passed")), "0");
    // The explorer's reader takes it too (it says which recording is missing, not its size).
    let e = toolstorm::document::Document::open(&dir.join("all.campaign.json"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(!e.contains("exceeds") && e.contains("recording"), "{e}");
}

/// A campaign of seeds 1..=4 (not a shard: any campaign file merges) in a workspace of its
/// own: the workspace, and the campaign's file (`s.campaign.json`, its runs in
/// `s.campaign.runs/`).
fn small_campaign(tag: &str) -> (PathBuf, PathBuf) {
    let (dir, scenario) = common::lost_ack_workspace(tag);
    let args = plan_args(&scenario, "1..4", &["--out", "s.campaign.json"]);
    let (code, _, err) = campaign(&dir, &strs(&args));
    assert_eq!(code, 0, "{err}");
    (dir.clone(), dir.join("s.campaign.json"))
}

/// A folder outside the workspace holding files with a secret in them (`recording.json`,
/// `shadow`): what a forged shard points at. The folder and the secret.
fn secret_folder(tag: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("toolstorm-secret-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let secret = format!("SECRET-{tag}-{}", std::process::id());
    for name in ["recording.json", "shadow"] {
        std::fs::write(dir.join(name), format!("root:{secret}:19000::\n")).expect("write");
    }
    (dir, secret)
}

/// Rewrites the campaign file at `path` with `edit` applied.
fn forge(path: &Path, edit: impl FnOnce(&mut CampaignFile)) {
    let mut file = load(path);
    edit(&mut file);
    std::fs::write(path, file.to_text()).expect("write");
}

/// Merges `s.campaign.json` into `out/m.campaign.json` with `--copy-runs` and expects a
/// refusal naming the shard and `field`; nothing of `secret` may be in `out`.
fn refused_with_nothing_copied(dir: &Path, field: &str, secret: &str) {
    let out = dir.join("out");
    std::fs::create_dir_all(&out).expect("dir");
    let (code, _, err) = campaign(
        dir,
        &[
            "merge",
            "out/m.campaign.json",
            "s.campaign.json",
            "--copy-runs",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("s.campaign.json") && err.contains(field) && !err.contains("panicked"),
        "{err}"
    );
    assert!(!err.contains(secret), "{err}");
    assert!(!out.join("m.campaign.json").exists(), "no merged file");
    let mut todo = vec![out];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap_or_default();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(secret),
                    "{} holds the secret",
                    p.display()
                );
            }
        }
    }
}

#[test]
fn merge_copies_only_the_files_a_run_writes_and_refuses_a_recording_named_outside() {
    let (dir, shard) = small_campaign("shards-outside");
    let (secret_dir, secret) = secret_folder("outside");
    // A shard as the campaign wrote it merges; of its run folder only the run's own files
    // are copied (by name), not whatever else was left there.
    let run1 = dir.join("s.campaign.runs/run-001");
    std::fs::write(run1.join("stray.txt"), &secret).expect("write");
    std::fs::create_dir_all(dir.join("ok")).expect("dir");
    let (code, _, err) = campaign(
        &dir,
        &[
            "merge",
            "ok/m.campaign.json",
            "s.campaign.json",
            "--copy-runs",
        ],
    );
    assert_runs_failed(code, &err);
    let copied = dir.join("ok/m.campaign.runs/run-001");
    assert!(
        copied.join("recording.json").is_file() && copied.join("agent.log").is_file(),
        "the run's files are copied"
    );
    assert!(
        !copied.join("stray.txt").exists(),
        "a file the run did not write is not"
    );
    std::fs::remove_file(run1.join("stray.txt")).expect("remove");

    // An absolute path.
    let named = secret_dir.join("recording.json").display().to_string();
    forge(&shard, |f| f.runs[0].recording = named);
    refused_with_nothing_copied(&dir, "runs[0].recording", &secret);

    // A path up and out of the shard's folder.
    let up = format!(
        "../{}/recording.json",
        secret_dir.file_name().expect("name").to_string_lossy()
    );
    forge(&shard, |f| f.runs[0].recording = up);
    refused_with_nothing_copied(&dir, "runs[0].recording", &secret);
    let _ = std::fs::remove_dir_all(secret_dir);
}

#[test]
fn merge_refuses_a_run_folder_that_links_out_of_the_shard() {
    let (dir, shard) = small_campaign("shards-link");
    let (secret_dir, secret) = secret_folder("link");
    // The second run's folder is a link to the secret folder; the file names it as the
    // campaign wrote it.
    let run2 = dir.join("s.campaign.runs/run-002");
    std::fs::remove_dir_all(&run2).expect("remove");
    std::os::unix::fs::symlink(&secret_dir, &run2).expect("link");
    assert_eq!(
        load(&shard).runs[1].recording,
        "s.campaign.runs/run-002/recording.json"
    );
    refused_with_nothing_copied(&dir, "runs[1].recording", &secret);

    // The folder is the run's own, but its recording is a link out.
    std::fs::remove_file(&run2).expect("remove the link");
    std::fs::create_dir_all(&run2).expect("dir");
    std::os::unix::fs::symlink(
        secret_dir.join("recording.json"),
        run2.join("recording.json"),
    )
    .expect("link");
    refused_with_nothing_copied(&dir, "runs[1].recording", &secret);
    let _ = std::fs::remove_dir_all(secret_dir);
}

#[test]
fn merge_recomputes_each_verdict_from_the_recording() {
    let (dir, shard) = small_campaign("shards-verdict");
    let file = load(&shard);
    let failed = file
        .runs
        .iter()
        .position(|r| !r.passed && r.note.is_none())
        .expect("the naive agent fails a seed of 1..4 at p 0.5");
    let (run, seed) = (file.runs[failed].run, file.runs[failed].seed);
    // The run says it passed, every check with it.
    forge(&shard, |f| {
        let r = &mut f.runs[failed];
        r.passed = true;
        r.duplicates = 0;
        for c in &mut r.checks {
            c.passed = true;
        }
    });
    let (code, _, err) = campaign(&dir, &["merge", "m.campaign.json", "s.campaign.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("s.campaign.json")
            && err.contains(&format!("run {run} (seed {seed}) says passed"))
            && err.contains(&format!("runs[{failed}].passed"))
            && err.contains("No duplicate side effects"),
        "{err}"
    );
    assert!(!dir.join("m.campaign.json").exists(), "no merged file");

    // A run that passed, whose recording is gone: its word is not enough.
    forge(&shard, |f| f.runs[failed] = file.runs[failed].clone());
    let passed = file
        .runs
        .iter()
        .position(|r| r.passed)
        .expect("a passing run");
    let recording = dir.join(&file.runs[passed].recording);
    std::fs::remove_file(&recording).expect("remove the recording");
    let (code, _, err) = campaign(&dir, &["merge", "m.campaign.json", "s.campaign.json"]);
    assert_eq!(code, 2, "{err}");
    let p = file.runs[passed].clone();
    assert!(
        err.contains(&format!("run {} (seed {}) says passed", p.run, p.seed))
            && err.contains(&p.recording)
            && err.contains("there is no such file"),
        "{err}"
    );
    assert!(!dir.join("m.campaign.json").exists(), "no merged file");
}
