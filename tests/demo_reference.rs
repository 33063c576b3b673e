//! Every shared demo run: our lab reproduces the reference's run JSON, cassette bytes, digest
//! and text output.

use std::path::PathBuf;

use toolstorm::json::{canonical, parse, pretty};
use toolstorm::lab::{self, Policy, RunConfig, scenario};

fn fixture(rel: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reference")
        .join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn check_run(scenario_name: &str, policy: Policy, config: &RunConfig, stem: &str) {
    let sc = scenario::bundled(scenario_name).expect("bundled scenario");
    let run = lab::run(&sc, policy, config).expect("run");
    let want_run = fixture(&format!("{stem}.run.json"));
    let got_run = pretty(&run.to_value()) + "\n";
    assert_eq!(got_run, want_run, "{stem}.run.json");
    let want_cassette = fixture(&format!("{stem}.cassette.json"));
    assert_eq!(
        canonical(&run.report.to_value()) + "\n",
        want_cassette,
        "{stem}.cassette.json"
    );
    let want_digest = parse(&want_run).expect("json");
    let digest = want_digest
        .as_object()
        .and_then(|o| o.get("digest"))
        .and_then(|d| d.as_str());
    assert_eq!(Some(run.digest.as_str()), digest);
}

#[test]
fn seed_42_runs_match_reference() {
    for sc in scenario::names() {
        for policy in Policy::ALL {
            check_run(
                sc,
                policy,
                &RunConfig::default(),
                &format!("demo/{sc}.{policy}"),
            );
        }
    }
}

#[test]
fn seed_7_half_probability_runs_match_reference() {
    let config = RunConfig {
        seed: 7,
        probability: Some(0.5),
        max_calls: 8,
    };
    for sc in scenario::names() {
        for policy in Policy::ALL {
            check_run(
                sc,
                policy,
                &config,
                &format!("demo-variants/{sc}.{policy}.seed7.p0.5"),
            );
        }
    }
}

/// The outcome table of spec §13.5 (`demo_outcomes.json`): verdict, outcome, counts, elapsed,
/// failing checks, call timeline and digest of each of the 18 runs.
#[test]
fn outcome_table_matches_reference() {
    use toolstorm::json::{Value, canonical};
    let doc = parse(&fixture("demo_outcomes.json")).expect("json");
    let rows = doc.as_array().expect("array");
    assert_eq!(rows.len(), 18);
    let get = |v: &Value, k: &str| {
        v.as_object()
            .and_then(|o| o.get(k))
            .cloned()
            .unwrap_or(Value::Null)
    };
    for row in rows {
        let sc = get(row, "scenario")
            .as_str()
            .map(str::to_owned)
            .expect("scenario");
        let policy = Policy::parse(get(row, "policy").as_str().expect("policy")).expect("policy");
        let run = lab::run(
            &scenario::bundled(&sc).expect("scenario"),
            policy,
            &RunConfig::default(),
        )
        .expect("run");
        let name = format!("{sc}/{policy}");
        assert_eq!(Some(run.passed()), get(row, "passed").as_bool(), "{name}");
        assert_eq!(
            canonical(&run.outcome),
            canonical(&get(row, "outcome")),
            "{name}"
        );
        assert_eq!(
            Some(run.report.calls.len() as i64),
            get(row, "calls").as_i64(),
            "{name}"
        );
        assert_eq!(
            Some(run.shipments.len() as i64),
            get(row, "shipments").as_i64(),
            "{name}"
        );
        assert_eq!(
            Some(run.faults() as i64),
            get(row, "faults_triggered").as_i64(),
            "{name}"
        );
        assert_eq!(
            Some(run.elapsed()),
            get(row, "elapsed").as_number_f64(),
            "{name}"
        );
        let failed: Vec<Value> = run
            .checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| Value::from(c.name.as_str()))
            .collect();
        assert_eq!(
            canonical(&Value::Array(failed)),
            canonical(&get(row, "failed_checks")),
            "{name}"
        );
        let checks: Vec<Value> = run
            .checks
            .iter()
            .map(|c| {
                Value::from(format!(
                    "{} {}: {}",
                    if c.passed { "PASS" } else { "FAIL" },
                    c.name,
                    c.detail
                ))
            })
            .collect();
        assert_eq!(
            canonical(&Value::Array(checks)),
            canonical(&get(row, "checks")),
            "{name}"
        );
        let sequence: Vec<Value> = run
            .report
            .calls
            .iter()
            .map(|c| {
                let fault = match &c.kind {
                    Some(k) => format!("{}/{k}", c.status.as_str()),
                    None => c.status.as_str().to_owned(),
                };
                let injected = if c.injected { " injected" } else { "" };
                Value::from(format!(
                    "{}:{}#{} {fault}{injected} start={} el={}",
                    c.id,
                    c.tool,
                    c.ordinal,
                    toolstorm::json::float::py_repr(c.started),
                    toolstorm::json::float::py_repr(c.elapsed)
                ))
            })
            .collect();
        assert_eq!(
            canonical(&Value::Array(sequence)),
            canonical(&get(row, "call_sequence")),
            "{name}"
        );
        assert_eq!(
            Some(run.digest.as_str()),
            get(row, "digest").as_str(),
            "{name}"
        );
    }
}
