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
