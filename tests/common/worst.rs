//! The most expensive valid files we know how to build, for the hostile-input tests and the
//! `hostile` benchmark: every one passes the loader, and each aims at one cost — glob matching
//! against a huge tool name, many long distinct names, a huge `calls` list, and every rule
//! eligible for a huge name (a draw per rule hashes the name).

use std::path::{Path, PathBuf};

fn rule(name: &str, tool: &str, calls: &str, probability: &str) -> String {
    format!(
        r#"{{"calls":[{calls}],"delay":0.0,"kind":"timeout","limit":null,"name":"{name}","probability":{probability},"replacement":null,"tool":"{tool}"}}"#
    )
}

fn call(id: usize, tool: &str, ordinal: usize) -> String {
    format!(
        r##"{{"arguments":{{}},"capture_error":false,"elapsed":0.0,"error":null,"executed":true,"fault":null,"id":{id},"injected":false,"key":"#{ordinal}","kind":null,"ordinal":{ordinal},"output":null,"parent_id":null,"started":0.0,"status":"ok","tool":"{tool}"}}"##
    )
}

/// A cassette with these rules (name, eligible count) and calls.
fn cassette(rules: &[(String, String, u64)], calls: &[String]) -> String {
    let coverage: Vec<String> = rules
        .iter()
        .map(|(name, _, eligible)| {
            format!(r#""{name}":{{"eligible":{eligible},"selected":0,"triggered":0}}"#)
        })
        .collect();
    let rule_list: Vec<&str> = rules.iter().map(|(_, r, _)| r.as_str()).collect();
    format!(
        r#"{{"budget_rejections":0,"calls":[{}],"capture":true,"clock":"VirtualClock","coverage":{{{}}},"effects":[],"rules":[{}],"schema_version":1,"seed":0}}"#,
        calls.join(","),
        coverage.join(","),
        rule_list.join(",")
    )
}

/// `n` ok calls of tool `t` and no rules (10,001 is one past the loader's limit). Only the
/// tests use it; the `hostile` benchmark includes this file too.
#[allow(dead_code)]
pub fn ok_calls(n: usize) -> String {
    let calls: Vec<String> = (1..=n).map(|i| call(i, "t", i)).collect();
    cassette(&[], &calls)
}

/// One 7.8 M-character tool name and 100 rules `*aaa…<i>b` (200 characters) that never match:
/// quadratic glob matching took 642 s here.
pub fn huge_name_many_globs() -> String {
    let rules: Vec<(String, String, u64)> = (0..100)
        .map(|i| {
            let name = format!("r{i}");
            let glob = format!("*{}{i}b", "a".repeat(198 - i.to_string().len()));
            let r = rule(&name, &glob, "", "1.0");
            (name, r, 0)
        })
        .collect();
    cassette(&rules, &[call(1, &"a".repeat(7_800_000), 1)])
}

/// 10,000 calls with distinct 480-character names and 100 rules `*aaa…<i>*b` (two stars):
/// 235 s in `check` before.
pub fn many_long_names() -> String {
    let rules: Vec<(String, String, u64)> = (0..100)
        .map(|i| {
            let name = format!("r{i}");
            let glob = format!("*{}{i}*b", "a".repeat(60 - i.to_string().len()));
            let r = rule(&name, &glob, "", "1.0");
            (name, r, 0)
        })
        .collect();
    let calls: Vec<String> = (0..10_000)
        .map(|i| call(i + 1, &format!("{}{i:010}", "a".repeat(470)), 1))
        .collect();
    cassette(&rules, &calls)
}

/// One rule with 680,000 ordinals, none of them called, and 10,000 calls of its tool: a
/// linear scan per call took 8 s in `inspect` and 12 s to the explorer's first frame.
pub fn huge_calls_list() -> String {
    let ordinals: Vec<String> = (20_001..700_001).map(|n: u64| n.to_string()).collect();
    let r = rule("big", "t", &ordinals.join(","), "1.0");
    let calls: Vec<String> = (1..=10_000).map(|i| call(i, "t", i)).collect();
    cassette(&[("big".into(), r, 0)], &calls)
}

/// One 7.8 M-character tool name that 100 rules of probability 0 all cover: the decision
/// trace of that call draws once per rule, and each draw hashes the name.
pub fn huge_name_every_rule_eligible() -> String {
    let rules: Vec<(String, String, u64)> = (0..100)
        .map(|i| {
            let name = format!("r{i}");
            let r = rule(&name, "*", "", "0.0");
            (name, r, 1)
        })
        .collect();
    cassette(&rules, &[call(1, &"a".repeat(7_800_000), 1)])
}

/// Builds one worst case's text.
pub type Maker = fn() -> String;

/// Every worst case by name.
pub fn all() -> Vec<(&'static str, Maker)> {
    vec![
        ("huge-name-many-globs", huge_name_many_globs as Maker),
        ("many-long-names", many_long_names),
        ("huge-calls-list", huge_calls_list),
        (
            "huge-name-every-rule-eligible",
            huge_name_every_rule_eligible,
        ),
    ]
}

/// Writes every worst case into `dir`; returns (name, path).
pub fn write_all(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    std::fs::create_dir_all(dir).expect("dir");
    all()
        .into_iter()
        .map(|(name, make)| {
            let path = dir.join(format!("{name}.json"));
            let text = make();
            assert!(text.len() <= 8_000_000, "{name}: {} bytes", text.len());
            std::fs::write(&path, text).expect("write");
            (name, path)
        })
        .collect()
}
