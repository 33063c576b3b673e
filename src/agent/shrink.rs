//! Shrinking a failing seed: a smallest fault schedule on which the agent still fails —
//! whole rules dropped, then single calls, re-running the agent each time (delta debugging
//! within a budget of runs) — written as a scenario with each rule pinned to its calls.

use std::path::{Path, PathBuf};

use super::run::{Plan, run_one};
use crate::campaign::Outcome;
use crate::document::Error;
use crate::json::{Value, pretty};
use crate::obj;

/// One fault a run met: which rule, on which tool, at which of that tool's calls.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Fault {
    /// The rule's name.
    pub rule: String,
    /// The tool it fired on.
    pub tool: String,
    /// That tool's call number.
    pub ordinal: u64,
}

/// The faults a recording met, in call order.
pub fn faults_of(path: &Path) -> Result<Vec<Fault>, Error> {
    let trace = crate::document::open_trace(path)?;
    Ok(trace
        .cassettes
        .first()
        .map(|c| {
            c.report
                .calls
                .iter()
                .filter(|call| call.injected)
                .map(|call| Fault {
                    rule: call
                        .fault
                        .as_ref()
                        .map(|f| f.to_lossy())
                        .unwrap_or_default(),
                    tool: call.tool.to_lossy(),
                    ordinal: call.ordinal,
                })
                .collect()
        })
        .unwrap_or_default())
}

/// What [`shrink`] found.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The faults of the failing run it started from.
    pub from: Vec<Fault>,
    /// A smallest schedule that still fails (1-minimal within the budget: dropping any one
    /// of its faults made the run pass); empty when the run did not fail again with all its
    /// faults pinned (the agent, not the schedule, decided it).
    pub schedule: Vec<Fault>,
    /// The scenario that schedule is (every rule pinned to its calls, probability 1).
    pub scenario: Value,
    /// Runs of the agent it took.
    pub runs: usize,
    /// Whether the budget ran out before every fault was tried.
    pub out_of_budget: bool,
}

/// `scenario` (the file's document) with only `schedule`'s faults: each rule kept fires on
/// exactly its scheduled calls (its tool made exact when it fired on one tool), with
/// probability 1 and no file-wide override; rules not scheduled, and their deliveries, go.
/// The server is started in `server_dir` (the original file's folder) wherever the new file
/// is written.
pub fn pinned(scenario: &Value, schedule: &[Fault], server_dir: &Path) -> Value {
    let mut v = scenario.clone();
    let Some(o) = v.as_object_mut() else {
        return v;
    };
    let kept: Vec<Value> = o
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|rule| {
            let name = rule.as_object()?.get("name")?.as_str()?.to_owned();
            let mine: Vec<&Fault> = schedule.iter().filter(|f| f.rule == name).collect();
            if mine.is_empty() {
                return None;
            }
            let mut r = rule.clone();
            let ro = r.as_object_mut()?;
            let mut ordinals: Vec<u64> = mine.iter().map(|f| f.ordinal).collect();
            ordinals.sort_unstable();
            ordinals.dedup();
            ro.insert(
                "calls",
                Value::Array(ordinals.into_iter().map(Value::from).collect()),
            );
            ro.insert("probability", Value::Float(1.0));
            let tools: std::collections::BTreeSet<&str> =
                mine.iter().map(|f| f.tool.as_str()).collect();
            if let [only] = tools.into_iter().collect::<Vec<_>>().as_slice() {
                ro.insert("tool", *only);
            }
            Some(r)
        })
        .collect();
    let names: Vec<String> = kept
        .iter()
        .filter_map(|r| r.as_object()?.get("name")?.as_str().map(str::to_owned))
        .collect();
    o.insert("rules", Value::Array(kept));
    o.insert("probability", Value::Null);
    if let Some(Value::Object(d)) = o.get_mut("delivery") {
        let keep: crate::json::Object = d
            .iter()
            .filter(|(k, _)| names.contains(&k.to_lossy()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        *d = keep;
    }
    // Started through `sh`, the server runs in its own folder as before.
    if let Some(server) = o.get("server").and_then(Value::as_object).cloned() {
        let mut args: Vec<Value> = vec![
            "-c".into(),
            "cd \"$0\" && exec \"$@\"".into(),
            server_dir.display().to_string().into(),
        ];
        if let Some(c) = server.get("command") {
            args.push(c.clone());
        }
        if let Some(Value::Array(a)) = server.get("args") {
            args.extend(a.iter().cloned());
        }
        o.insert(
            "server",
            obj! {"command" => "sh", "args" => Value::Array(args)},
        );
    }
    v
}

/// Delta debugging over a failing run's faults: first whole rules are dropped, then single
/// calls, each candidate run with the agent (in `work`, on `seed`), keeping a drop whenever
/// the run still fails; at most `budget` runs. The schedule left is 1-minimal when the budget
/// allowed every try.
pub fn shrink(
    plan: &Plan,
    scenario: &Value,
    seed: i64,
    from: Vec<Fault>,
    budget: usize,
    work: &Path,
) -> Result<Shrunk, Error> {
    let server_dir = plan
        .scenario_path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let mut schedule = from.clone();
    let mut runs = 0;
    let mut out_of_budget = false;
    let fails = |candidate: &[Fault], runs: &mut usize| -> Result<bool, Error> {
        *runs += 1;
        let file = work.join(format!("try-{runs:02}.json"));
        let text = pretty(&pinned(scenario, candidate, &server_dir)) + "\n";
        crate::atomic::write(&file, text.as_bytes()).map_err(|e| Error::io(&file, e))?;
        let mut p = plan.clone();
        p.scenario_path = file.clone();
        p.probability = None;
        p.scenario = match crate::document::open_scenario(&file)? {
            crate::document::Scenario::Mcp(s) => s,
            _ => return Ok(false),
        };
        p.out = work.join(format!("try-{runs:02}.campaign.json"));
        // A failure of the agent's, not of the run: it finished, was judged, and lost.
        let r = run_one(&p, 1, seed);
        Ok(r.outcome == Outcome::Finished && r.note.is_none() && !r.passed)
    };
    // The failure must come back with its faults pinned, or there is nothing to shrink.
    if !fails(&schedule, &mut runs)? {
        return Ok(Shrunk {
            scenario: pinned(scenario, &schedule, &server_dir),
            from,
            schedule: Vec::new(),
            runs,
            out_of_budget: false,
        });
    }
    // Rules first, then calls.
    let mut rules: Vec<String> = Vec::new();
    for f in &schedule {
        if !rules.contains(&f.rule) {
            rules.push(f.rule.clone());
        }
    }
    for rule in rules {
        if schedule.iter().all(|f| f.rule == rule) {
            continue; // dropping it would leave no fault
        }
        if runs >= budget {
            out_of_budget = true;
            break;
        }
        let candidate: Vec<Fault> = schedule
            .iter()
            .filter(|f| f.rule != rule)
            .cloned()
            .collect();
        if fails(&candidate, &mut runs)? {
            schedule = candidate;
        }
    }
    let mut i = 0;
    while schedule.len() > 1 && i < schedule.len() {
        if runs >= budget {
            out_of_budget = true;
            break;
        }
        let mut candidate = schedule.clone();
        candidate.remove(i);
        if fails(&candidate, &mut runs)? {
            // Smaller now: the faults tried before may have become droppable.
            schedule = candidate;
            i = 0;
        } else {
            i += 1;
        }
    }
    let scenario = pinned(scenario, &schedule, &server_dir);
    Ok(Shrunk {
        from,
        schedule,
        scenario,
        runs,
        out_of_budget,
    })
}
