//! `sweep`: grid order, determinism across runs (and threads), and agreement with single runs.

mod common;

use common::cli;

use toolstorm::json::{Value, parse};
use toolstorm::lab::{self, Policy, RunConfig, scenario};

const GRID: [&str; 9] = [
    "sweep",
    "--jsonl",
    "--seeds",
    "-17,0,7",
    "--probabilities",
    "0,0.5,1",
    "--max-calls",
    "1,2,8",
    "--policies=retry,resilient",
];

#[test]
fn jsonl_is_deterministic_and_in_grid_order() {
    let (code, first, err) = cli(&GRID);
    assert_eq!((code, err.as_str()), (0, ""));
    let (_, second, _) = cli(&GRID);
    assert_eq!(first, second);
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines.len(), 6 * 2 * 3 * 3 * 3);
    let key = |l: &str| {
        let v = parse(l).expect("json line");
        let o = v.as_object().expect("object").clone();
        let s = |k: &str| {
            o.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .expect("str")
        };
        let n = |k: &str| o.get(k).and_then(Value::as_number_f64).expect("num");
        (
            s("scenario"),
            s("policy"),
            n("seed"),
            n("probability"),
            n("max_calls"),
            s("digest"),
            o.get("passed").and_then(Value::as_bool),
            o.get("recovered").and_then(Value::as_bool),
        )
    };
    // Grid order: scenario, policy, seed, probability, max_calls (slowest first).
    let names: Vec<&str> = scenario::names().collect();
    for (i, line) in lines.iter().enumerate() {
        let (sc, policy, seed, p, m, digest, passed, recovered) = key(line);
        assert_eq!(sc, names[i / 54]);
        assert_eq!(policy, ["retry", "resilient"][(i / 27) % 2]);
        assert_eq!(seed, [-17.0, 0.0, 7.0][(i / 9) % 3]);
        assert_eq!(p, [0.0, 0.5, 1.0][(i / 3) % 3]);
        assert_eq!(m, [1.0, 2.0, 8.0][i % 3]);
        // Each line agrees with a single run of the same configuration.
        let run = lab::run(
            &scenario::bundled(&sc).expect("scenario"),
            Policy::parse(&policy).expect("policy"),
            &RunConfig {
                seed: seed as i64,
                probability: Some(p),
                max_calls: m as i64,
            },
        )
        .expect("run");
        assert_eq!(digest, run.digest);
        assert_eq!(passed, Some(run.passed()), "the contract's verdict");
        assert_eq!(recovered, Some(run.recovered()), "the campaign's");
    }
    assert!(first.starts_with(r#"{"scenario":"lost_ack","policy":"retry","seed":-17,"probability":0.0,"max_calls":1,"digest":""#));
}

#[test]
fn summary_and_errors() {
    let (code, out, _) = cli(&[
        "sweep",
        "--scenarios",
        "lost_ack",
        "--seed-range",
        "1..4",
        "--fail-on-contract",
    ]);
    assert_eq!(code, 1);
    assert!(out.starts_with("12 runs\n"), "{out}");
    assert!(out.contains("lost_ack       retry"), "{out}");
    let (code, _, err) = cli(&["sweep", "--scenarios", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown scenario 'nope'"), "{err}");
    let (code, _, err) = cli(&["sweep", "--max-calls", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--max-calls"), "{err}");
}

#[test]
fn output_is_the_same_for_any_number_of_threads() {
    let run = |threads: &str, jsonl: bool| {
        let mut args: Vec<&str> = vec![
            "sweep",
            "--seed-range",
            "0..60",
            "--probabilities",
            "0.5,1",
            "--threads",
            threads,
        ];
        if jsonl {
            args.push("--jsonl");
        }
        let (code, out, err) = cli(&args);
        assert_eq!((code, err.as_str()), (0, ""));
        out
    };
    for jsonl in [true, false] {
        let one = run("1", jsonl);
        assert!(one.lines().count() > 18, "{one}");
        assert_eq!(one, run("2", jsonl), "jsonl {jsonl}");
        assert_eq!(one, run("7", jsonl), "jsonl {jsonl}");
    }
    let (code, _, err) = cli(&["sweep", "--threads", "0"]);
    assert_eq!(code, 2, "{err}");
}

/// `sweep --campaign` keeps the sweep as an agent's campaign is kept: the same file shape
/// (the scripted policy as the agent), each run's cassette beside it, the same failing seeds
/// as the lab's own runs, and it opens in the explorer as a campaign.
#[test]
fn a_sweep_can_be_kept_as_a_campaign() {
    let dir = common::fresh_dir("sweep-campaign");
    let out = dir.join("lost.campaign.json");
    let out_s = out.to_str().expect("path");
    let (code, text, err) = cli(&[
        "sweep",
        "--scenarios",
        "lost_ack",
        "--policies",
        "retry",
        "--seed-range",
        "1..8",
        "--probabilities",
        "0.5",
        "--campaign",
        out_s,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("8 of 8 runs"), "{text}");
    let file = toolstorm::campaign::CampaignFile::from_text(
        &std::fs::read_to_string(&out).expect("written"),
    )
    .expect("a valid campaign file");
    assert_eq!(file.runs.len(), 8);
    // The same verdicts as running the lab directly (Fault exercised left out, as a
    // campaign judges).
    let sc = scenario::bundled("lost_ack").expect("bundled");
    for r in &file.runs {
        let config = RunConfig {
            seed: r.seed,
            probability: Some(0.5),
            ..RunConfig::default()
        };
        let lab = lab::run(&sc, Policy::Retry, &config).expect("runs");
        let passed = lab
            .checks
            .iter()
            .filter(|c| !c.name.starts_with("Fault exercised"))
            .all(|c| c.passed);
        assert_eq!(r.passed, passed, "seed {}", r.seed);
        assert_eq!(r.faults, lab.report.faults_triggered(), "seed {}", r.seed);
    }
    assert!(file.runs.iter().any(|r| r.passed) && file.runs.iter().any(|r| !r.passed));
    let doc = toolstorm::document::Document::open(&out).expect("opens as a campaign");
    assert_eq!(doc.kind, toolstorm::document::DocKind::Campaign);
    assert_eq!(doc.runs.len(), 8);
    // One scenario and one policy only.
    let (code, _, err) = cli(&["sweep", "--campaign", out_s]);
    assert_eq!(code, 2);
    assert!(err.contains("one scenario, one policy"), "{err}");
}

#[test]
fn a_sweep_and_its_campaign_judge_a_run_by_one_definition() {
    // Seeds 4 and 5 of lost_ack at p 0.5: the fault does not fire on them. `sweep` counted that
    // as a failure (Fault exercised) where `sweep --campaign` did not.
    let args = [
        "sweep",
        "--scenarios",
        "lost_ack",
        "--policies",
        "retry",
        "--seed-range",
        "4..5",
        "--probabilities",
        "0.5",
    ];
    let (code, table, _) = cli(&args);
    assert_eq!(code, 0);
    let out = std::env::temp_dir().join(format!(
        "toolstorm-sweep-verdict-{}.json",
        std::process::id()
    ));
    let out_text = out.display().to_string();
    let mut with_campaign = args.to_vec();
    with_campaign.extend(["--campaign", &out_text]);
    let (code, campaign, err) = cli(&with_campaign);
    assert_eq!(code, 0, "{err}");
    let row = table
        .lines()
        .find(|l| l.starts_with("lost_ack"))
        .expect("the table's row");
    let counts: Vec<&str> = row.split_whitespace().collect();
    let campaign_passed = campaign
        .lines()
        .find_map(|l| l.split_once(" passed · ").map(|(n, _)| n.to_owned()))
        .expect("the campaign's count");
    assert_eq!(
        format!("{}/{}", counts[2], 2),
        campaign_passed,
        "{table}\n{campaign}"
    );
    let said = "a run passes when every check but Fault exercised holds";
    assert!(
        table.contains(said) && campaign.contains(said),
        "{table}\n{campaign}"
    );
}

#[test]
fn a_sweep_takes_scenario_files_and_breaks_its_table_down_by_probability_and_check() {
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/lost_ack.json");
    let list = format!("{scenario},timeout");
    let (code, out, err) = cli(&[
        "sweep",
        "--scenarios",
        &list,
        "--policies",
        "retry",
        "--seeds",
        "1,2",
        "--probabilities",
        "0,1",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("scenario") && l.contains(" p ")),
        "{out}"
    );
    // A row per probability: at 0 no fault fires and the retry policy passes; at 1 it fails.
    let row = |p: &str| {
        lines
            .iter()
            .find(|l| l.starts_with("lost_ack") && l.split_whitespace().nth(2) == Some(p))
            .unwrap_or_else(|| panic!("no lost_ack row at p {p}: {out}"))
            .split_whitespace()
            .skip(3)
            .take(2)
            .collect::<Vec<_>>()
    };
    assert_eq!(row("0.0"), vec!["2", "0"], "{out}");
    assert_eq!(row("1.0"), vec!["0", "2"], "{out}");
    assert!(
        out.contains("failures by check:\n  No duplicate side effects: 2 runs (seeds 1,2)"),
        "{out}"
    );
    // One probability: no p column (the table as before).
    let (code, out, _) = cli(&["sweep", "--scenarios", scenario, "--policies", "retry"]);
    assert_eq!(code, 0);
    assert!(
        !out.lines()
            .any(|l| l.starts_with("scenario") && l.contains(" p ")),
        "{out}"
    );
    // A file of another world, or none, is refused by name.
    let mcp = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/mcp-lost-ack.json");
    let (code, _, err) = cli(&["sweep", "--scenarios", mcp]);
    assert_eq!(code, 2);
    assert!(
        err.contains("world \"mcp\"") && err.contains("campaign"),
        "{err}"
    );
    let (code, _, err) = cli(&["sweep", "--scenarios", "missing/nope.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("nope.json"), "{err}");
}

/// `passed` is the contract's verdict as ToolStorm 0.2.0 computes it (every check, `Fault
/// exercised` among them) and `recovered` the campaign's (every check but it): each row of the
/// reference's seed-7, p-0.5 grid (`tests/fixtures/reference/demo-variants`) has the
/// reference's digest and verdict.
#[test]
fn jsonl_rows_carry_the_references_verdict_and_the_recovery_beside_it() {
    let (code, out, err) = cli(&[
        "sweep",
        "--jsonl",
        "--seeds",
        "7",
        "--probabilities",
        "0.5",
        "--max-calls",
        "8",
    ]);
    assert_eq!(code, 0, "{err}");
    let dir = common::fixture_path("demo-variants");
    let mut compared = 0;
    let mut differs_from_recovered = 0;
    for line in out.lines() {
        let row = parse(line).expect("a JSON line");
        let name = format!(
            "{}.{}.seed7.p0.5.run.json",
            common::get_str(&row, "scenario"),
            common::get_str(&row, "policy")
        );
        let Ok(text) = std::fs::read_to_string(dir.join(&name)) else {
            continue;
        };
        let reference = parse(&text).expect("reference run");
        assert_eq!(
            common::get_str(&row, "digest"),
            common::get_str(&reference, "digest"),
            "{name}"
        );
        let passed = common::get(common::get(&reference, "contract"), "passed").as_bool();
        assert_eq!(
            common::get(&row, "passed").as_bool(),
            passed,
            "{name}: {line}"
        );
        let recovered = common::get(&row, "recovered").as_bool().expect("recovered");
        if Some(recovered) != passed {
            differs_from_recovered += 1;
        }
        compared += 1;
    }
    assert_eq!(compared, 18, "every reference variant has its row");
    // The two verdicts differ where the fault did not fire (the reference's `Fault
    // exercised` fails): the row keeps both.
    assert!(differs_from_recovered > 0, "no row tells them apart");
}
