//! "What if, at this call": on a campaign's run, `p` offers the faults that fit the selected
//! call — its acknowledgement lost after it committed, a timeout, a rate limit with a wait, an
//! outage, a replaced answer — and re-runs the agent on the same seed with that one fault
//! pinned to that call (the pinned form `--shrink` writes), then shows the two runs side by
//! side. The agent runs in the background (the screen keeps answering), once
//! [`super::confirm`] has shown its command and the user said yes; its recording is judged
//! from its own files.

use std::path::{Path, PathBuf};

use super::action::{Action, AgentRerun, AgentSource, Command};
use super::app::{App, Mode, Screen};
use crate::agent as run;
use crate::agent::RerunError;
use crate::document::Document;
use crate::document::plan::RunPlan;
use crate::json::{Value, pretty};
use crate::obj;

/// A fault the picker offers: what people read, the rule's kind, its delay, and its
/// replacement.
pub struct Choice {
    /// Shown in the picker.
    pub label: &'static str,
    /// The rule's kind.
    pub kind: &'static str,
    /// The rule's delay (a rate limit's wait).
    pub delay: f64,
    /// A replaced answer's text.
    pub replacement: Option<&'static str>,
}

/// The faults offered, in the picker's order.
pub const CHOICES: [Choice; 5] = [
    Choice {
        label: "its acknowledgement lost after it committed (response_lost)",
        kind: "response_lost",
        delay: 0.0,
        replacement: None,
    },
    Choice {
        label: "a timeout: the tool does not run (timeout)",
        kind: "timeout",
        delay: 0.0,
        replacement: None,
    },
    Choice {
        label: "a rate limit: retry after 30 s (rate_limit)",
        kind: "rate_limit",
        delay: 30.0,
        replacement: None,
    },
    Choice {
        label: "an outage: the server is unavailable (unavailable)",
        kind: "unavailable",
        delay: 0.0,
        replacement: None,
    },
    Choice {
        label: "a replaced answer: an empty result (replace)",
        kind: "replace",
        delay: 0.0,
        replacement: Some("(the answer was replaced by toolstorm)"),
    },
];

/// The file a campaign's what-if scenario for `seed` is written to, beside the campaign.
pub fn scenario_path(campaign: &Path, seed: i64) -> PathBuf {
    // The name the re-run is planned under: a single run writes no campaign file there.
    run::rerun_out(campaign, "what-if", seed)
}

/// The file the explorer's edited rules for `seed` are written to before a re-run, beside
/// the recording (or campaign) at `beside`.
pub fn edited_path(beside: &Path, seed: i64) -> PathBuf {
    run::rerun_out(beside, "edited", seed)
}

/// Where rules `text` for a re-run are written: `base` when it is free or holds them already,
/// else the first free `<stem>-2.json`, `-3`, … — a file an earlier re-run ran with is never
/// written over (its plan names it, and `Y` offers it).
fn rules_file(base: PathBuf, text: &str) -> PathBuf {
    let holds = |p: &Path| match std::fs::read(p) {
        Ok(bytes) => Some(bytes == text.as_bytes()),
        Err(_) => None,
    };
    let stem = base
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    for n in 1..10_000u32 {
        let candidate = if n == 1 {
            base.clone()
        } else {
            base.with_file_name(format!("{stem}-{n}.json"))
        };
        match holds(&candidate) {
            None | Some(true) => return candidate,
            Some(false) => {}
        }
    }
    base
}

/// The scenario at `path` with its rules replaced by one: `choice` pinned to call `ordinal`
/// of `tool` (its delivery the default).
pub fn pinned_scenario(
    path: &Path,
    tool: &str,
    ordinal: u64,
    choice: &Choice,
) -> Result<Value, String> {
    let text = crate::fsread::read_text(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut v = crate::json::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let rule = obj! {
        "name" => "what-if",
        "tool" => tool,
        "kind" => choice.kind,
        "calls" => Value::Array(vec![Value::from(ordinal as i64)]),
        "probability" => Value::Float(1.0),
        "limit" => Value::Null,
        "delay" => Value::Float(choice.delay),
        "replacement" => choice.replacement.map_or(Value::Null, Value::from),
    };
    let Some(o) = v.as_object_mut() else {
        return Err(format!("{}: not a scenario object", path.display()));
    };
    o.insert("rules", Value::Array(vec![rule]));
    o.insert("delivery", obj! {});
    // The pinned fault fires: no file-wide probability overrides its 1.0.
    o.insert("probability", Value::Null);
    anchor_server(&mut v, path);
    Ok(v)
}

/// A copy of the scenario at `from` written elsewhere: a server it names by a path from its
/// own folder is named absolutely, so the copy starts the same server.
pub fn anchor_server(v: &mut Value, from: &Path) {
    if let Some(o) = v.as_object_mut()
        && let Some(Value::Object(server)) = o.get_mut("server")
        && let Some(cmd) = server.get("command").and_then(Value::as_str)
        && cmd.contains('/')
        && Path::new(cmd).is_relative()
        && let Some(dir) = from.parent()
    {
        let absolute = std::path::absolute(dir.join(cmd)).unwrap_or_else(|_| dir.join(cmd));
        server.insert("command", absolute.display().to_string());
    }
}

/// Runs a re-run the picker (or `R`) asked for (it takes the agent's time): the answer for
/// the app.
pub fn rerun(r: AgentRerun) -> Action {
    let result = run_agent(&r, r.seed, &r.scenario);
    Action::AgentRan(result, r.label)
}

/// The file the commands of `source` are read from: the campaign file, or the recording's
/// sidecar.
pub fn source_file(source: &AgentSource) -> PathBuf {
    match source {
        AgentSource::Campaign(campaign) => campaign.clone(),
        AgentSource::Recording(recording) => crate::mcp::session::sidecar_path(recording),
    }
}

/// The plan that runs seed `seed` of the agent `r.source` knows again with the rules of
/// `scenario`.
fn plan_of(r: &AgentRerun, seed: i64, scenario: &Path) -> Result<run::Plan, RerunError> {
    let tag = r.tag;
    let mut plan = match &r.source {
        AgentSource::Campaign(campaign) => {
            let file = run::read_file(campaign).map_err(|e| e.to_string())?;
            let again = run::Again::from_file(&file)?;
            // The run's own plan (its probability override) unless the scenario says it all.
            let rules = if r.as_written {
                run::Rules::Whole(scenario)
            } else {
                run::Rules::Other(scenario)
            };
            run::replan(campaign, &file, seed, rules, tag, again)?.0
        }
        AgentSource::Recording(recording) => run::replan_recording(recording, seed, scenario, tag)?,
    };
    plan.stop = r.stop.clone();
    if let Some(b) = &r.bin {
        plan.bin = b.clone();
    }
    Ok(plan)
}

/// What the re-run `r` would start, read from its file now (the error: why it cannot start).
pub fn launch_of(r: &AgentRerun) -> Result<run::Launch, RerunError> {
    let plan = plan_of(r, r.seed, &r.scenario)?;
    Ok(run::Launch::of(&plan, &source_file(&r.source)))
}

/// Runs seed `seed` of the agent `source` knows again with the rules of `scenario`: the new
/// run's recording, opened. It starts only the commands `r.launch` shows: when its file names
/// others now (or nothing was shown), nothing starts.
/// `bin` is the program the agent's `mcpServers` entry starts as the proxy (this one unless
/// given).
pub fn run_agent(r: &AgentRerun, seed: i64, scenario: &Path) -> Result<Box<Document>, RerunError> {
    let tag = r.tag;
    let plan = plan_of(r, seed, scenario)?;
    let file = source_file(&r.source);
    if r.launch.as_ref() != Some(&run::Launch::of(&plan, &file)) {
        return Err(RerunError::Failed(format!(
            "{} names other commands than the ones shown: nothing was started (R shows them)",
            file.display()
        )));
    }
    let record = run::run_again(&plan, seed);
    let recording = run::recording_path(&plan.out, &record);
    if plan.stop.stopped() {
        return Err(RerunError::Stopped(format!(
            "stopped (what it did before is in {})",
            recording.display()
        )));
    }
    let mut doc = Document::open(&recording).map_err(|e| {
        RerunError::Failed(match &record.note {
            Some(n) => format!("{e} ({n})"),
            None => e.to_string(),
        })
    })?;
    if let Some(new) = doc.runs.first_mut() {
        // Numbered as its folder is when there is more than one (`re-run 2`: `run-002/`).
        new.label = match record.run {
            1 => tag.into(),
            n => format!("{tag} {n}"),
        };
        // Judged as the campaign judges a run: the oracle's word and how the run ended too.
        crate::document::add_run_outcome(new, &record, plan.verify.as_deref());
        new.plan = Some(std::sync::Arc::new(RunPlan {
            recording: recording.clone(),
            scenario: plan.scenario_path.clone(),
            scenario_sha256: plan.scenario_sha256.clone(),
            seed,
            probability: plan.probability,
            campaign: match &r.source {
                AgentSource::Campaign(c) => Some(c.clone()),
                AgentSource::Recording(_) => None,
            },
        }));
    }
    Ok(Box::new(doc))
}

impl App {
    /// Where the agent of the run shown is known from, and the run's plan (its seed, scenario
    /// file and probability override): a campaign's run (the campaign), or an MCP recording
    /// whose sidecar names its agent. The error says why it cannot be started, and how to
    /// make it so.
    pub(super) fn agent_context(&self) -> Result<(AgentSource, RunPlan), String> {
        let path = self
            .doc
            .path
            .clone()
            .ok_or("this run has no file: nothing says how to start its agent")?;
        if let Some(c) = &self.doc.campaign {
            // One of its runs, or a re-run of one (its plan names the campaign's seed).
            let seed = match c.records.get(self.run) {
                Some(r) => Some(r.seed),
                None => self
                    .tab()
                    .plan
                    .as_deref()
                    .filter(|p| p.campaign.is_some())
                    .map(|p| p.seed),
            }
            .ok_or("this run is not one of the campaign's: open one from the list (L)")?;
            // The plan the campaign ran it with: its seed and `--probability` too.
            let plan = crate::document::plan::of_campaign_run(&path, &c.file, seed)
                .ok_or("this run is not one of the campaign's: open one from the list (L)")?;
            return Ok((AgentSource::Campaign(path), plan));
        }
        // The document's own recording (its first run; re-runs are added after it).
        let Some(mcp) = self.doc.runs.first().and_then(|r| r.mcp.as_deref()) else {
            return Err("re-running an agent needs an MCP recording or a campaign".into());
        };
        if mcp.agent.is_none() {
            return Err(format!(
                "{} does not say how to start its agent: record it with `mcp SCENARIO --record \
                 FILE --agent-cmd 'CMD' -- SERVER` (or run it as a campaign); the lab is not \
                 re-run for an MCP recording",
                path.display()
            ));
        }
        let scenario = mcp.scenario.clone().ok_or(
            "the recording was made without a scenario: there are no rules to change (record \
             with `mcp SCENARIO ...`)",
        )?;
        let seed = self
            .tab()
            .timeline
            .report()
            .seed
            .as_i64()
            .ok_or("the recording's seed is not a 64-bit integer")?;
        let plan = crate::document::plan::of_recording(&path, mcp, PathBuf::from(scenario), seed);
        Ok((AgentSource::Recording(path), plan))
    }

    /// The rule editor on the scenario of a run whose agent is known (an MCP recording or a
    /// campaign's run): the same editor as the lab's, its seed the run's. `w` writes back to
    /// a recording's scenario file; a campaign's stays as the campaign ran it (`w` asks where).
    pub(super) fn ensure_agent_editor(&mut self) -> bool {
        let made = self.agent_context().and_then(|(_, plan)| {
            // The rules as the run met them: its seed, and a campaign's `--probability`.
            let scenario = plan.open_scenario().map_err(|e| e.to_string())?;
            let editor = crate::lab::edit::Editor::mcp(&scenario).map_err(|e| e.to_string())?;
            Ok((editor, plan.scenario))
        });
        match made {
            Ok((editor, path)) => {
                self.editor = Some(editor);
                self.save_path = self.doc.campaign.is_none().then_some(path);
                true
            }
            Err(e) => {
                self.error(format!("cannot edit this run's rules: {e}"));
                false
            }
        }
    }

    /// `R` on an MCP recording or a campaign's run: the agent again, with the rules being
    /// edited (on the editor's seed), or else its scenario's rules as the file holds them
    /// now (on the run's seed); then the two runs compared.
    pub(super) fn rerun_agent_now(&mut self) -> Vec<Command> {
        if self.agent_running() {
            self.info("the agent is running: its run comes when it is done".into());
            return Vec::new();
        }
        let (source, plan) = match self.agent_context() {
            Ok(c) => c,
            Err(e) => {
                self.error(e);
                return Vec::new();
            }
        };
        let (mut seed, mut scenario) = (plan.seed, plan.scenario);
        // The scenario as it is now, under the run's own plan; edited rules say all of it.
        let mut as_written = false;
        let name = scenario
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let mut label = format!("the rules of {name} now");
        if let (Some(editor), Some(path)) = (&self.editor, &self.doc.path)
            && editor.mcp_scenario().is_some()
        {
            // The edited rules go to a file of their own beside the run (the scenario file is
            // written only by w).
            seed = editor.seed();
            let mut v = crate::json::parse(&editor.edited().to_text()).unwrap_or_default();
            anchor_server(&mut v, &scenario);
            let text = pretty(&v) + "\n";
            let target = rules_file(edited_path(path, seed), &text);
            if let Err(e) = crate::atomic::write(&target, text.as_bytes()) {
                self.error(format!("cannot write {}: {e}", target.display()));
                return Vec::new();
            }
            label = format!(
                "the edited rules ({})",
                self.last_edit.as_deref().unwrap_or("as loaded")
            );
            scenario = target;
            as_written = true;
        }
        self.info(format!(
            "re-running the agent on seed {seed} with {label} …"
        ));
        vec![self.agent_rerun(source, seed, (scenario, as_written), label, "re-run")]
    }

    /// `p`: the picker, on a run whose agent is known, with a call selected.
    pub(super) fn open_pin(&mut self) {
        if let Err(e) = self.agent_context() {
            self.info(format!(
                "p re-runs the agent with a fault pinned to a call: {e}"
            ));
            return;
        }
        if self.selected().is_none() {
            self.info("select a call first: the fault is pinned to it".into());
            return;
        }
        self.mode = Mode::PinFault(0);
    }

    /// The picker's title and text.
    pub fn pin_text(&self, at: usize) -> (String, String) {
        let call = self.selected().map_or_else(String::new, |c| {
            format!("call #{} {} #{}", c.id, c.tool.to_lossy(), c.ordinal)
        });
        let title = format!("what if, at {call}?");
        let text = CHOICES
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{} {}", if i == at { "▸" } else { " " }, c.label))
            .collect::<Vec<_>>()
            .join("\n");
        (title, text)
    }

    /// Keys in the picker.
    pub(super) fn pin_action(&mut self, action: &Action) -> Option<Vec<Command>> {
        let Mode::PinFault(at) = self.mode else {
            return None;
        };
        match action {
            Action::Pick(d) => {
                let n = CHOICES.len() as isize;
                self.mode = Mode::PinFault((at as isize + d).rem_euclid(n) as usize);
                Some(Vec::new())
            }
            Action::Submit => Some(self.pin_submit(at)),
            Action::Cancel | Action::Back => {
                self.mode = Mode::Browse;
                Some(Vec::new())
            }
            _ => None,
        }
    }

    fn pin_submit(&mut self, at: usize) -> Vec<Command> {
        self.mode = Mode::Browse;
        let (Some(path), Some(call)) = (self.doc.path.clone(), self.selected().cloned()) else {
            return Vec::new();
        };
        let (source, plan) = match self.agent_context() {
            Ok(c) => c,
            Err(e) => {
                self.info(e);
                return Vec::new();
            }
        };
        let (seed, scenario_file) = (plan.seed, plan.scenario);
        let choice = &CHOICES[at.min(CHOICES.len() - 1)];
        let tool = call.tool.to_lossy();
        let scenario = match pinned_scenario(&scenario_file, &tool, call.ordinal, choice) {
            Ok(v) => v,
            Err(e) => {
                self.error(format!("cannot write the what-if scenario: {e}"));
                return Vec::new();
            }
        };
        let text = pretty(&scenario) + "\n";
        let target = rules_file(scenario_path(&path, seed), &text);
        if let Err(e) = crate::atomic::write(&target, text.as_bytes()) {
            self.error(format!("cannot write {}: {e}", target.display()));
            return Vec::new();
        }
        let label = format!("{} on {tool} #{}", choice.kind, call.ordinal);
        self.info(format!(
            "re-running the agent on seed {seed} with {label} (rules in {}) …",
            target.display()
        ));
        vec![self.agent_rerun(source, seed, (target, true), label, "what-if")]
    }

    /// The re-run is over: on success, the new run beside the old one, compared.
    pub(super) fn agent_ran(&mut self, result: Result<Box<Document>, RerunError>, label: String) {
        self.agent_run = None;
        let mut doc = match result {
            Ok(d) => d,
            Err(RerunError::Stopped(e)) => {
                self.info(format!("the agent's re-run with {label} was {e}"));
                return;
            }
            Err(RerunError::Failed(e)) => {
                self.error(format!("the agent's re-run with {label} failed: {e}"));
                return;
            }
        };
        let Some(mut new) = doc.runs.pop() else {
            return;
        };
        new.label = format!("{}: {label}", new.label);
        // Both runs judged as a campaign judges a run (one verdict for the title, the status
        // line and the panes): whether the fault fired is not the agent's doing.
        // A campaign's own runs are judged so already, and say so in their contract.
        let as_campaign = |run: &mut crate::document::Run| {
            run.checks.retain(crate::contract::Check::judges_the_agent);
            run.contract = "check as a campaign judges a run (Fault exercised left out)".into();
        };
        as_campaign(&mut new);
        let mut old = self.tab().clone();
        if self.doc.campaign.is_none() {
            as_campaign(&mut old);
        }
        let judged = |checks: &[crate::contract::Check]| {
            if checks.iter().all(|c| c.passed) {
                "PASS"
            } else {
                "FAIL"
            }
        };
        // Rules that never fired changed nothing: the comparison is of two runs of the agent
        // as it is, and the user is told so (a fault pinned to a call the agent did not make).
        let report = new.timeline.report();
        let fired = |f: fn(&crate::report::Coverage) -> u64| {
            report.coverage.is_empty() || report.coverage.iter().any(|(_, c)| f(c) > 0)
        };
        let unfired = match (fired(|c| c.triggered), fired(|c| c.eligible)) {
            (true, _) => "",
            (false, false) => {
                " · no fault fired in the new run (the agent made no call its rules name)"
            }
            (false, true) => " · no fault fired in the new run",
        };
        self.info(format!(
            "the agent re-ran with {label}: {} → {}{unfired} · Esc returns, c toggles the comparison",
            judged(&old.checks),
            judged(&new.checks),
        ));
        self.rerun_from = Some(self.run);
        self.doc.runs.push(new);
        self.run = self.doc.runs.len() - 1;
        self.previous = Some(vec![old]);
        self.screen = Screen::Compare;
        // The new run's first call (a run that made none has none to select).
        self.cursor = self.visible().first().copied();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_an_earlier_rerun_ran_with_are_never_written_over() {
        let dir = tempfile::tempdir().expect("tmp");
        let base = dir.path().join("rec.edited-42.json");
        // Free: the name itself.
        assert_eq!(rules_file(base.clone(), "A"), base);
        std::fs::write(&base, "A").expect("write");
        // The same rules again: the same file.
        assert_eq!(rules_file(base.clone(), "A"), base);
        // Other rules: the next free name, the first file as it was.
        let second = dir.path().join("rec.edited-42-2.json");
        assert_eq!(rules_file(base.clone(), "B"), second);
        std::fs::write(&second, "B").expect("write");
        assert_eq!(rules_file(base.clone(), "B"), second);
        assert_eq!(
            rules_file(base.clone(), "C"),
            dir.path().join("rec.edited-42-3.json")
        );
        assert_eq!(std::fs::read_to_string(&base).expect("read"), "A");
    }
}
