//! Every verdict names the calls behind it and the numbers that decided it: the library's
//! reasons for each check kind on the bundled files, and how `check` and `run` print them
//! (on a terminal, with `--why`, in `--json --why`) while piped output without `--why` stays
//! the reference's, byte for byte.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use toolstorm::contract::{Check, Contract};
use toolstorm::document::explain::{Reason, reasons};
use toolstorm::document::{self};
use toolstorm::lab::{self, Policy, RunConfig, scenario};
use toolstorm::report::Report;

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The checks `check` gives a file, each with its reasons.
fn judged(rel: &str, max_calls: Option<i64>) -> Vec<(Check, Vec<Reason>)> {
    let trace = document::open_trace(&repo(rel)).expect("opens");
    let summary = document::judge(&trace, max_calls).expect("judges");
    let report = &trace.cassettes[0].report;
    summary.runs[0]
        .iter()
        .map(|c| (c.clone(), reasons(report, trace.mcp.as_ref(), c)))
        .collect()
}

fn named<'a>(checks: &'a [(Check, Vec<Reason>)], name: &str) -> &'a (Check, Vec<Reason>) {
    checks
        .iter()
        .find(|(c, _)| c.name == name)
        .unwrap_or_else(|| panic!("no check {name}: {checks:?}"))
}

fn lab_run(name: &str, policy: Policy, config: &RunConfig) -> lab::LabRun {
    let sc = scenario::bundled(name).expect("bundled");
    lab::run(&sc, policy, config).expect("runs")
}

fn lab_check<'a>(run: &'a lab::LabRun, name: &str) -> &'a Check {
    run.checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name}"))
}

#[test]
fn the_incident_names_both_commits_and_the_faulted_call() {
    let checks = judged("cassettes/incident.json", None);
    let (dup, why) = named(&checks, "No duplicate side effects");
    assert!(!dup.passed);
    assert_eq!(why.len(), 1, "{why:?}");
    assert_eq!(why[0].calls, vec![2, 3]);
    assert_eq!(
        why[0].text,
        "call #3 committed shipment order-1729 again; call #2 committed it first"
    );
    let (_, why) = named(&checks, "Fault exercised: lost-receipt");
    assert_eq!(why[0].calls, vec![2]);
    assert!(why[0].text.contains("response_lost"), "{}", why[0].text);
    // A passing budget names no call.
    let (budget, why) = named(&checks, "Call budget");
    assert!(budget.passed && why.is_empty(), "{why:?}");
}

#[test]
fn the_retry_storm_names_the_retry_the_call_it_followed_and_the_wait() {
    let checks = judged("cassettes/rate-limit-retry-storm.json", None);
    let (check, why) = named(&checks, "Retry-after respected");
    assert!(!check.passed);
    assert_eq!(why.len(), 1, "{why:?}");
    assert_eq!(why[0].calls, vec![2, 3]);
    let text = &why[0].text;
    assert!(
        text.starts_with("call #3 retried") && text.ends_with("after #2 advertised 2 s"),
        "{text}"
    );
}

#[test]
fn a_budget_names_the_call_that_crossed_it() {
    let checks = judged("cassettes/incident.json", Some(2));
    let (check, why) = named(&checks, "Call budget");
    assert!(!check.passed);
    assert_eq!(why[0].calls, vec![3]);
    assert!(
        why[0].text.contains("call #3") && why[0].text.contains("the budget is 2"),
        "{}",
        why[0].text
    );
}

#[test]
fn a_rule_that_never_fired_names_its_eligible_calls_and_its_probability() {
    let config = RunConfig {
        probability: Some(0.0),
        ..RunConfig::default()
    };
    let run = lab_run("lost_ack", Policy::Retry, &config);
    let check = lab_check(&run, "Fault exercised: lost-receipt");
    assert!(!check.passed);
    let why = reasons(&run.report, None, check);
    assert_eq!(why[0].calls, vec![2], "{why:?}");
    assert_eq!(
        why[0].text,
        "eligible on 1 call (#2), selected on none (probability 0.0)"
    );
}

#[test]
fn a_rule_whose_pattern_matches_nothing_says_what_the_run_called() {
    let mut run = lab_run("lost_ack", Policy::Retry, &RunConfig::default());
    let rule =
        toolstorm::rule::RuleSpec::new("never", "delete_*", toolstorm::rule::FaultKind::Timeout)
            .build()
            .expect("rule");
    run.report.rules.push(rule.to_value());
    let check = Check {
        name: "Fault exercised: never".into(),
        passed: false,
        detail: "Triggered 0 time(s)".into(),
    };
    let why = reasons(&run.report, None, &check);
    assert!(why[0].calls.is_empty());
    assert_eq!(
        why[0].text,
        "never eligible: no call matched the tool pattern delete_* (the run called \
         check_inventory, create_shipment)"
    );
}

#[test]
fn the_lab_checks_name_their_calls() {
    // Task completed: the optimistic policy stops after the lost acknowledgement.
    let run = lab_run("lost_ack", Policy::Optimistic, &RunConfig::default());
    let check = lab_check(&run, "Task completed");
    assert!(!check.passed);
    let why = reasons(&run.report, None, check);
    assert_eq!(why[0].calls, vec![2]);
    assert_eq!(
        why[0].text,
        "no create_shipment call was confirmed: #2 error ResponseLost"
    );
    // ... and its shipment did commit: an honest outcome would have said so.
    let honest = Check {
        name: "Honest outcome".into(),
        passed: false,
        detail: String::new(),
    };
    let why = reasons(&run.report, None, &honest);
    assert_eq!(why[0].calls, vec![2]);
    // Latency budget: the first call to end past it, and the slowest call with its fault.
    let run = lab_run("latency", Policy::Retry, &RunConfig::default());
    let check = lab_check(&run, "Latency budget");
    assert!(!check.passed);
    let why = reasons(&run.report, None, check);
    let calls: Vec<Vec<u64>> = why.iter().map(|r| r.calls.clone()).collect();
    assert_eq!(calls, vec![vec![2], vec![1]], "{why:?}");
    assert!(
        why[1].text.contains("latency fault inventory-lag"),
        "{why:?}"
    );
    // A latency fault's phase is its kind: said once.
    let fired = lab_check(&run, "Fault exercised: inventory-lag");
    assert_eq!(
        reasons(&run.report, None, fired)[0].text,
        "latency on call #1"
    );
    // Retry-after in the lab: both early retries of the retry policy.
    let run = lab_run("rate_limit", Policy::Retry, &RunConfig::default());
    let check = lab_check(&run, "Retry-after respected");
    let why = reasons(&run.report, None, check);
    let calls: Vec<Vec<u64>> = why.iter().map(|r| r.calls.clone()).collect();
    assert_eq!(calls, vec![vec![1, 2], vec![2, 3]]);
    assert!(why[0].text.ends_with("advertised 600 ms"), "{why:?}");
}

#[test]
fn an_effect_budget_names_the_commit_past_it() {
    let run = lab_run("lost_ack", Policy::Retry, &RunConfig::default());
    let checks = Contract::new(&run.report)
        .at_most_effects("shipment", 1, None)
        .expect("contract")
        .into_checks();
    assert!(!checks[0].passed);
    let why = reasons(&run.report, None, &checks[0]);
    assert_eq!(why[0].calls, vec![3]);
    assert!(why[0].text.contains("commit 2 of shipment"), "{why:?}");
}

#[test]
fn a_session_cut_short_names_the_calls_in_flight() {
    let trace = document::open_trace(&repo("cassettes/mcp-incident.json")).expect("opens");
    let mut report: Report = trace.cassettes[0].report.clone();
    report.calls[1].status = toolstorm::report::Status::Running;
    let check = Check {
        name: "Session finished".into(),
        passed: false,
        detail: String::new(),
    };
    let why = reasons(&report, trace.mcp.as_ref(), &check);
    assert_eq!(why.len(), 1);
    assert_eq!(why[0].calls, vec![2]);
    assert!(why[0].text.contains("in flight"), "{why:?}");
}

#[test]
fn an_mcp_duplicate_carries_its_evidence() {
    let checks = judged("cassettes/mcp-incident.json", None);
    let (_, why) = named(&checks, "No duplicate side effects");
    assert_eq!(
        why[0].text,
        "call #2 committed shipment o-1 again (scenario evidence); call #1 committed it first \
         (scenario evidence)"
    );
}

// ---- the faces ----

fn binary(args: &[&str]) -> (Option<i32>, Vec<u8>) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("NO_COLOR")
        .output()
        .expect("runs");
    (out.status.code(), out.stdout)
}

/// A command as a person at a terminal sees it (in-process, `people` set), colour removed.
fn on_terminal(args: &[&str]) -> String {
    let (_, text, _) = common::cli_for(args, true);
    // Verdict lines are coloured on a terminal; the words are what is compared here.
    let mut plain = String::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("\x1b[") {
        plain.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest.find('m').map_or(rest.len(), |m| m + 1);
        rest = &rest[end..];
    }
    plain.push_str(rest);
    plain
}

#[test]
fn piped_check_without_why_is_the_reference_output_byte_for_byte() {
    let (code, out) = binary(&["check", "cassettes/incident.json"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        String::from_utf8(out).expect("utf-8"),
        "FAIL\n✓ Fault exercised: lost-receipt: Triggered 1 time(s)\n✗ No duplicate side \
         effects: 1 duplicate effect(s) across 2 commits\n✓ Call budget: 3 / 100 calls\n"
    );
    let (_, json) = binary(&["check", "cassettes/incident.json", "--json"]);
    let json = String::from_utf8(json).expect("utf-8");
    assert!(!json.contains("reasons"), "{json}");
}

#[test]
fn check_why_prints_every_reason_under_its_check_piped_too() {
    let (code, out) = binary(&["check", "cassettes/incident.json", "--why"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        String::from_utf8(out).expect("utf-8"),
        "FAIL\n\
         ✓ Fault exercised: lost-receipt: Triggered 1 time(s)\n\
         \x20   ↳ response_lost (after success) on call #2\n\
         ✗ No duplicate side effects: 1 duplicate effect(s) across 2 commits\n\
         \x20   ↳ call #3 committed shipment order-1729 again; call #2 committed it first\n\
         ✓ Call budget: 3 / 100 calls\n"
    );
}

#[test]
fn check_json_why_gives_each_check_its_reasons_and_call_ids() {
    let (_, out) = binary(&["check", "cassettes/incident.json", "--json", "--why"]);
    let v = toolstorm::json::parse(std::str::from_utf8(&out).expect("utf-8")).expect("json");
    let checks = common::get_array(&v, "checks");
    let dup = checks
        .iter()
        .find(|c| common::get_str(c, "name") == "No duplicate side effects")
        .expect("check");
    let reasons = common::get_array(dup, "reasons");
    assert_eq!(reasons.len(), 1);
    let calls: Vec<i64> = common::get_array(&reasons[0], "calls")
        .iter()
        .map(|c| c.as_i64().expect("id"))
        .collect();
    assert_eq!(calls, vec![2, 3]);
    // An MCP recording keeps its `mcp` details beside the reasons.
    let (_, out) = binary(&[
        "check",
        "cassettes/rate-limit-retry-storm.json",
        "--json",
        "--why",
    ]);
    let v = toolstorm::json::parse(std::str::from_utf8(&out).expect("utf-8")).expect("json");
    assert!(v.as_object().expect("object").get("mcp").is_some());
    let retry = common::get_array(&v, "checks")
        .iter()
        .find(|c| common::get_str(c, "name") == "Retry-after respected")
        .expect("check");
    let text = common::get_str(&common::get_array(retry, "reasons")[0], "text");
    assert!(text.contains("advertised 2 s"), "{text}");
}

#[test]
fn on_a_terminal_check_shows_reasons_and_an_mcp_duplicate_once() {
    let out = on_terminal(&["check", "cassettes/mcp-incident.json"]);
    assert!(
        out.contains("    ↳ call #2 committed shipment o-1 again (scenario evidence)"),
        "{out}"
    );
    // The evidence line the pipe gets is not repeated under the reasons.
    assert!(!out.contains("duplicate commit:"), "{out}");
    let piped = binary(&["check", "cassettes/mcp-incident.json"]).1;
    let piped = String::from_utf8(piped).expect("utf-8");
    assert!(
        piped.contains("duplicate commit: shipment o-1 by call #2"),
        "{piped}"
    );
    assert!(!piped.contains('↳'), "{piped}");
}

#[test]
fn on_a_terminal_run_names_the_calls_behind_each_failed_check() {
    let out = on_terminal(&["run", "scenarios/lost_ack.json"]);
    assert!(
        out.contains(
            "      ↳ call #3 committed shipment order-1729 again; call #2 committed it first"
        ),
        "{out}"
    );
    // Passing checks stay one line each.
    let after_pass = out
        .lines()
        .skip_while(|l| !l.contains("✓ Call budget"))
        .nth(1)
        .expect("a line after");
    assert!(!after_pass.contains('↳'), "{out}");
    let piped = binary(&["run", "scenarios/lost_ack.json"]).1;
    assert!(!String::from_utf8(piped).expect("utf-8").contains('↳'));
}

#[test]
fn a_reference_run_file_is_explained_from_its_recorded_checks() {
    // The lab's verdicts recorded by the reference carry no reasons; they are worked out from
    // the report.
    let path: &Path = &common::fixture_path("demo/lost_ack.retry.run.json");
    let doc = document::Document::open(path).expect("opens");
    let run = &doc.runs[0];
    let dup = run
        .checks
        .iter()
        .find(|c| c.name == "No duplicate side effects")
        .expect("check");
    let why = reasons(run.timeline.report(), None, dup);
    assert_eq!(why[0].calls, vec![2, 3]);
}
