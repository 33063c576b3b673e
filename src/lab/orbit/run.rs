//! Running an executor scenario in the Orbit world: every recorded batch through one
//! [`Executor`], with the scenario's approver and tools, and the result as data, JSON and the
//! text the command line prints.

use std::path::PathBuf;

use crate::error::ConfigError;
use crate::executor::approval::{AllowList, Approver, DenyAll, Interactive, NoTerminal, Prompt};
use crate::executor::scenario::{ApproverChoice, ExecutorScenario};
use crate::executor::{BatchResult, Executor};
use crate::json::Value;
use crate::json::float::py_fixed;
use crate::obj;
use crate::redact::Redactor;
use crate::report::Report;

use super::Orbit;

/// One finished executor scenario.
#[derive(Clone, Debug)]
pub struct OrbitRun {
    /// The scenario.
    pub scenario: ExecutorScenario,
    /// The seed used (the file's, or an override).
    pub seed: i64,
    /// Each batch's result, in order.
    pub batches: Vec<BatchResult>,
    /// The tracker's actions, in order.
    pub tracker: Vec<Value>,
    /// Where the tracker file is (written only when an action committed).
    pub tracker_path: Option<PathBuf>,
    /// Every question an interactive approver asked.
    pub asked: Vec<String>,
    /// Each question's answer (`None`: nobody could be asked, so denied).
    pub answers: Vec<Option<bool>>,
    /// The trace.
    pub report: Report,
    /// The report's digest.
    pub digest: String,
    /// Where the tools came from when not the bundled Orbit world (`MCP server NAME ...`).
    pub source: Option<String>,
}

/// The Orbit world a scenario runs in: its tracker's folder, its registry.
fn world(scenario: &ExecutorScenario, work_dir: Option<PathBuf>) -> Result<Orbit, ConfigError> {
    let mut orbit = Orbit::new()?;
    if let Some(dir) = work_dir {
        orbit = orbit.with_work_dir(dir);
    }
    if scenario.read_only {
        orbit = orbit.read_only();
    }
    Ok(orbit)
}

/// The approvers a scenario may name; the interactive one keeps what it asked.
struct Approvers<'p> {
    interactive: Interactive<&'p mut dyn Prompt>,
    deny: DenyAll,
    allow: AllowList,
}

impl<'p> Approvers<'p> {
    fn new(prompt: &'p mut dyn Prompt) -> Approvers<'p> {
        Approvers {
            interactive: Interactive::new(prompt),
            deny: DenyAll,
            allow: AllowList::default(),
        }
    }

    fn pick(&mut self, choice: &ApproverChoice) -> &mut dyn Approver {
        match choice {
            ApproverChoice::DenyAll => &mut self.deny,
            ApproverChoice::Interactive => &mut self.interactive,
            ApproverChoice::Allow(tools) => {
                self.allow.tools = tools.clone();
                &mut self.allow
            }
        }
    }
}

/// Runs a scenario; when its approver is interactive, `prompt` answers the questions
/// ([`NoTerminal`] when headless, which denies).
pub fn run_with_prompt(
    scenario: &ExecutorScenario,
    seed: i64,
    work_dir: Option<PathBuf>,
    prompt: &mut dyn Prompt,
) -> Result<OrbitRun, ConfigError> {
    let mut orbit = world(scenario, work_dir)?;
    let mut exec = Executor::new(scenario.rules()?, seed, scenario.limits)?;
    let mut approvers = Approvers::new(prompt);
    let approver = approvers.pick(&scenario.approver);
    let batches = scenario
        .batches
        .iter()
        .map(|calls| exec.run_batch(&mut orbit, approver, calls))
        .collect();
    let mut run = OrbitRun::of(scenario, seed, batches, exec.report(), approvers);
    (run.tracker, run.tracker_path) = (orbit.tracker().actions().to_vec(), orbit.tracker().path());
    Ok(run)
}

/// Runs a scenario on the wall clock ([`crate::executor::live`]): each tool body on a thread,
/// taking the time the world declares for it, deadlines in real time, issues read from a real
/// SQLite database built in the work folder ([`super::store`]). A body still running
/// when its call was answered is waited for at most `grace` after the last batch; the lanes
/// then say how it ended, or that it was still running.
pub fn run_live(
    scenario: &ExecutorScenario,
    seed: i64,
    work_dir: Option<PathBuf>,
    prompt: &mut dyn Prompt,
    grace: std::time::Duration,
) -> Result<OrbitRun, ConfigError> {
    use crate::executor::live::LiveTools;
    use std::sync::Arc;
    // The database goes in the work folder (a private one when none is given).
    let (dir, _scratch) = super::store::folder(work_dir.as_deref())?;
    let orbit = world(scenario, work_dir)?;
    let world = Arc::new(super::store::RealOrbit::new(orbit, &dir)?);
    let tools: Arc<dyn LiveTools> = world.clone();
    let mut run = run_live_on(scenario, seed, &tools, prompt, grace)?;
    (run.tracker, run.tracker_path) =
        world.with(|o| (o.tracker().actions().to_vec(), o.tracker().path()));
    Ok(run)
}

/// Where `run --live --mcp` gets its tools: an MCP server's command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpSource {
    /// The server's program and arguments.
    pub command: Vec<std::ffi::OsString>,
    /// Our binary, to watch the server's process group (`None`: no watchdog).
    pub watchdog: Option<PathBuf>,
}

/// Runs a scenario's batches on the wall clock against a real MCP server's tools
/// ([`crate::mcp::tools`]): the registry from its `tools/list`, every call a `tools/call` on
/// one session. The scenario's `tools: read_only` offers only the tools annotated read-only.
pub fn run_live_mcp(
    scenario: &ExecutorScenario,
    seed: i64,
    source: &McpSource,
    prompt: &mut dyn Prompt,
    grace: std::time::Duration,
) -> Result<OrbitRun, ConfigError> {
    use crate::executor::live::LiveTools;
    use crate::mcp::tools::McpTools;
    use std::sync::Arc;
    let mcp = McpTools::connect(
        &source.command,
        None,
        source.watchdog.as_ref(),
        &scenario.timeouts,
    )
    .map_err(|e| ConfigError::new("Cannot use the MCP server").because(e.to_string()))?
    // A cancelled call's thread gives up a moment before the run stops waiting for it, so
    // it is on record as having had no answer rather than as still running.
    .late_wait(grace.saturating_sub((grace / 10).min(std::time::Duration::from_millis(200))));
    let mcp = Arc::new(mcp);
    let info = mcp.server().clone();
    let count = mcp.registry().tools().len();
    let tools: Arc<dyn LiveTools> = if scenario.read_only {
        Arc::new(ReadOnly(Arc::clone(&mcp), Default::default()))
    } else {
        Arc::clone(&mcp) as Arc<dyn LiveTools>
    };
    let run = run_live_on(scenario, seed, &tools, prompt, grace);
    // The session ends with the run, whatever bodies still hold the tools.
    mcp.client().stop();
    let mut run = run?;
    let name = if info.name.is_empty() {
        "(unnamed)".to_owned()
    } else if info.version.is_empty() {
        info.name.clone()
    } else {
        format!("{} {}", info.name, info.version)
    };
    run.source = Some(format!(
        "MCP server {name} ({count} tool{})",
        if count == 1 { "" } else { "s" }
    ));
    Ok(run)
}

/// A tool source offering only its read-only tools.
struct ReadOnly<T>(
    std::sync::Arc<T>,
    std::sync::OnceLock<crate::executor::Registry>,
);

impl<T: crate::executor::live::LiveTools> crate::executor::live::LiveTools for ReadOnly<T> {
    fn registry(&self) -> &crate::executor::Registry {
        self.1.get_or_init(|| self.0.registry().read_only())
    }
    fn run(
        &self,
        tool: &str,
        args: &crate::json::Object,
        commit: &mut crate::executor::live::Commit<'_>,
    ) -> Result<Value, crate::executor::ToolError> {
        self.0.run(tool, args, commit)
    }
    fn run_within(
        &self,
        tool: &str,
        args: &crate::json::Object,
        commit: &mut crate::executor::live::Commit<'_>,
        left: std::time::Duration,
    ) -> Result<Value, crate::executor::ToolError> {
        self.0.run_within(tool, args, commit, left)
    }
}

/// Every batch of a scenario through one live executor on `tools`; late work waited for at
/// most `grace`, then written into the lanes of the batches it belongs to.
fn run_live_on(
    scenario: &ExecutorScenario,
    seed: i64,
    tools: &std::sync::Arc<dyn crate::executor::live::LiveTools>,
    prompt: &mut dyn Prompt,
    grace: std::time::Duration,
) -> Result<OrbitRun, ConfigError> {
    use crate::executor::live::LiveExecutor;
    let mut exec = LiveExecutor::new(scenario.rules()?, seed, scenario.limits)?;
    let mut approvers = Approvers::new(prompt);
    let approver = approvers.pick(&scenario.approver);
    let mut batches: Vec<BatchResult> = scenario
        .batches
        .iter()
        .map(|calls| exec.run_batch(tools, approver, calls))
        .collect();
    exec.settle(grace);
    // The late work, in the lanes of the batches it belongs to.
    for late in exec.late() {
        let lane = batches
            .get_mut(late.batch.saturating_sub(1))
            .and_then(|b| b.lanes.iter_mut().find(|l| l.call_id == late.call_id));
        let at = (late.attempt as usize).saturating_sub(1);
        if let Some(a) = lane.and_then(|l| l.attempts.get_mut(at)) {
            a.ended_ms = late.ended_ms;
            a.outcome = late.outcome.clone();
        }
    }
    for b in &mut batches {
        b.settled_ms = b
            .lanes
            .iter()
            .map(|l| l.settled_ms())
            .max()
            .unwrap_or(b.settled_ms);
    }
    Ok(OrbitRun::of(
        scenario,
        seed,
        batches,
        exec.report(),
        approvers,
    ))
}

/// Runs a scenario headlessly: an interactive approver has no terminal and denies.
pub fn run(
    scenario: &ExecutorScenario,
    seed: i64,
    work_dir: Option<PathBuf>,
) -> Result<OrbitRun, ConfigError> {
    run_with_prompt(scenario, seed, work_dir, &mut NoTerminal)
}

/// Virtual milliseconds as seconds, at least one decimal: `2000` → `2.0`, `1281` → `1.281`.
pub fn seconds(ms: u64) -> String {
    let text = py_fixed(ms as f64 / 1000.0, 3);
    let trimmed = text.trim_end_matches('0');
    if trimmed.ends_with('.') {
        format!("{trimmed}0")
    } else {
        trimmed.to_owned()
    }
}

impl OrbitRun {
    /// A finished run of `scenario`: its batches, its trace, what was asked (no tracker yet).
    fn of(
        scenario: &ExecutorScenario,
        seed: i64,
        batches: Vec<BatchResult>,
        report: Report,
        approvers: Approvers<'_>,
    ) -> OrbitRun {
        let digest = report.digest();
        OrbitRun {
            scenario: scenario.clone(),
            seed,
            batches,
            tracker: Vec::new(),
            tracker_path: None,
            asked: approvers.interactive.asked,
            answers: approvers.interactive.answers,
            report,
            digest,
            source: None,
        }
    }

    /// The result object (`--json`, `--output`). Envelopes, approval questions and tracker
    /// actions hold what tools returned and were given: they go through the redactor, as the
    /// report's payloads did when captured.
    pub fn to_value(&self) -> Value {
        let mut v = obj! {
            "scenario" => self.scenario.name.as_str(),
            "world" => "orbit",
            "seed" => self.seed,
            "limits" => self.scenario.limits.to_value(),
            "batches" => Value::Array(self.batches.iter().map(BatchResult::to_value).collect()),
            "tracker" => Value::Array(self.tracker.clone()),
            "report" => self.report.to_value(),
            "digest" => self.digest.as_str(),
        };
        if let (Some(source), Some(o)) = (&self.source, v.as_object_mut()) {
            o.push("tools_from", source.as_str());
        }
        Redactor::default().redact(&v)
    }

    /// The lines `run` prints.
    pub fn text_lines(&self) -> Vec<String> {
        self.marked_lines().into_iter().map(|(l, _)| l).collect()
    }

    /// [`OrbitRun::text_lines`], each with whether it says something went well (a call
    /// answered ok) or badly (a call that failed, an attempt that ended after its answer), for
    /// colour on a terminal.
    pub fn marked_lines(&self) -> Vec<(String, Option<bool>)> {
        let mut marked = Vec::new();
        let mut lines = vec![format!(
            "ToolStorm \u{b7} {} \u{b7} seed {}",
            self.scenario.story.title, self.seed
        )];
        if let Some(source) = &self.source {
            lines.push(format!("tools: {}", crate::printable::line(source)));
        }
        for b in &self.batches {
            lines.push(format!(
                "batch {}: {} call{} answered in {}s ({})",
                b.batch,
                b.lanes.len(),
                if b.lanes.len() == 1 { "" } else { "s" },
                seconds(b.answered_in_ms()),
                if self.report.clock == "RealClock" {
                    "wall clock"
                } else {
                    "virtual"
                }
            ));
            let id_w = b
                .log
                .iter()
                .map(|r| r.call_id.chars().count())
                .max()
                .unwrap_or(0)
                .max(7);
            let tool_w = b
                .log
                .iter()
                .map(|r| r.name.chars().count())
                .max()
                .unwrap_or(0)
                .max(4);
            lines.push(format!(
                "  {:<id_w$}  {:<tool_w$}  {:<12}  {:>6}  attempts",
                "call_id", "tool", "kind", "ms"
            ));
            for r in &b.log {
                marked.extend(lines.drain(..).map(|l| (l, None)));
                marked.push((
                    format!(
                        "  {:<id_w$}  {:<tool_w$}  {:<12}  {:>6}  {}",
                        r.call_id, r.name, r.kind, r.ms, r.attempts
                    ),
                    Some(r.kind == "ok"),
                ));
            }
            lines.push(format!(
                "  outputs in request order: {}",
                b.output_ids().join(", ")
            ));
            for lane in &b.lanes {
                for a in lane.attempts.iter().filter(|a| a.late) {
                    let commits: Vec<String> = self
                        .report
                        .effects
                        .iter()
                        .filter(|e| a.report_call == Some(e.call_id))
                        .map(|e| {
                            format!(
                                "{} {}",
                                crate::printable::line(&e.name.to_lossy()),
                                crate::printable::line(&e.key.to_lossy())
                            )
                        })
                        .collect();
                    let committed = if commits.is_empty() {
                        String::new()
                    } else {
                        format!(" and committed {}", commits.join(", "))
                    };
                    marked.extend(lines.drain(..).map(|l| (l, None)));
                    marked.push((
                        format!(
                            "  late: {} {} attempt {} ended {} at {}s{committed}, after its {} \
                             answer at {}s",
                            lane.call_id,
                            lane.name,
                            a.number,
                            a.outcome,
                            seconds(a.ended_ms),
                            lane.kind,
                            seconds(lane.answered_ms)
                        ),
                        Some(false),
                    ));
                }
            }
        }
        for (q, a) in self.asked.iter().zip(&self.answers) {
            lines.push(format!(
                "approval: {q} {}",
                match a {
                    Some(true) => "y (approved)",
                    Some(false) => "n (denied)",
                    None => "(no answer, denied)",
                }
            ));
        }
        let tracker = match self.source {
            Some(_) => String::new(),
            None => format!(
                "tracker: {} action{} \u{b7} ",
                self.tracker.len(),
                if self.tracker.len() == 1 { "" } else { "s" }
            ),
        };
        lines.push(format!(
            "{tracker}effects: {} \u{b7} faults triggered: {} \u{b7} digest {}",
            self.report.effects.len(),
            self.report.faults_triggered(),
            &self.digest[..self.digest.len().min(12)]
        ));
        marked.extend(lines.into_iter().map(|l| (l, None)));
        marked
    }
}
