//! What `Y` offers for a run the MCP proxy recorded (a recording, a campaign's run, an agent's
//! re-run): the commands that judge it, serve it and run it again, each on the files as they
//! are — the run's own recording (never the campaign file), its plan's scenario, seed and
//! probability ([`crate::document::plan::RunPlan`]) — and none writing over the recording:
//! a new recording goes to a name not taken yet beside it. Where a command would not do what
//! it says (a scenario changed since the run, a campaign's `--probability` over rules that were
//! run as written), a `#` line says so instead of offering it.

use std::path::{Path, PathBuf};

use super::app::App;
use crate::document::plan::RunPlan;
use crate::mcp::session::{AgentCommand, McpSession};

/// A command line from words, each quoted for a POSIX shell.
fn line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| super::copy::shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A name beside `recording` that no recording (nor its sidecar or journal) has yet:
/// `<stem>.again.json`, else `<stem>.again-2.json`, ….
pub fn fresh_recording(recording: &Path) -> PathBuf {
    let stem = recording
        .file_stem()
        .map_or_else(|| "recording".into(), |s| s.to_string_lossy().into_owned());
    let taken = |p: &Path| {
        p.exists()
            || crate::mcp::session::sidecar_path(p).exists()
            || crate::mcp::session::journal_path(p).exists()
    };
    let mut n = 1u32;
    loop {
        let name = match n {
            1 => format!("{stem}.again.json"),
            n => format!("{stem}.again-{n}.json"),
        };
        let p = recording.with_file_name(name);
        if !taken(&p) || n >= 10_000 {
            return p;
        }
        n += 1;
    }
}

impl App {
    /// The plan of the run shown: its own (a campaign's run, a re-run), else the recording's
    /// (its scenario and seed as the session kept them).
    fn shown_plan(&self, m: &McpSession) -> Option<RunPlan> {
        if let Some(p) = &self.tab().plan {
            return Some((**p).clone());
        }
        let recording = self.doc.path.clone()?;
        Some(crate::document::plan::of_recording(
            &recording,
            m,
            m.scenario.as_deref().map(PathBuf::from).unwrap_or_default(),
            self.tab().timeline.report().seed.as_i64().unwrap_or(0),
        ))
    }

    /// `Y` on an MCP run: the lines, in the order they are shown.
    pub(super) fn mcp_commands(&self, m: &McpSession) -> Vec<String> {
        let program = crate::exit::PROGRAM.to_owned();
        let Some(plan) = self.shown_plan(m) else {
            return vec!["# this run has no file of its own to name".into()];
        };
        let recording = plan.recording.display().to_string();
        let mut lines = Vec::new();
        lines.extend(self.campaign_rerun(&plan));
        // The proxy the agent's mcpServers entry starts, recording a new run beside this one.
        let fresh = fresh_recording(&plan.recording);
        let has_scenario = !plan.scenario.as_os_str().is_empty();
        if has_scenario && !plan.scenario_sha256.is_empty() && !plan.scenario_unchanged() {
            lines.push(format!(
                "# {} changed since this run: the line below runs its rules as they are now",
                plan.scenario.display()
            ));
        }
        let mut words = vec![program.clone(), "mcp".into()];
        if has_scenario {
            words.extend([
                plan.scenario.display().to_string(),
                "--seed".into(),
                plan.seed.to_string(),
            ]);
            if let Some(p) = plan.probability {
                words.extend(["--probability".into(), crate::json::float::py_repr(p)]);
            }
        }
        words.extend([
            "--record".into(),
            fresh.display().to_string(),
            "--append".into(),
        ]);
        if let Some(agent) = self.agent_of(m, &plan)
            && !agent.command.contains(crate::redact::MARKER)
        {
            words.extend(["--agent-cmd".into(), agent.command]);
            // The world reset goes with it (the new recording resets first, as this one did).
            if let Some(before) = agent.before.filter(|b| !b.contains(crate::redact::MARKER)) {
                words.extend(["--before".into(), before]);
            }
        }
        if m.server_command
            .iter()
            .any(|w| w.contains(crate::redact::MARKER))
        {
            lines.push(
                "# the server's command keeps a secret redacted: give it again after `--`".into(),
            );
        }
        words.push("--".into());
        words.extend(m.server_command.iter().cloned());
        lines.push(format!(
            "# in the agent's mcpServers entry: a new recording ({}), this one stays as it is",
            fresh.display()
        ));
        lines.push(line(&words));
        lines.push(line(&[
            program.clone(),
            "mcp".into(),
            "--replay".into(),
            recording.clone(),
        ]));
        lines.push(line(&[program, "check".into(), recording]));
        lines
    }

    /// The agent the proxy line keeps (`--agent-cmd`, and its `--before`): the session's own,
    /// or for a re-run of a recording the recording's (its re-run's proxy was started without
    /// it).
    fn agent_of(&self, m: &McpSession, plan: &RunPlan) -> Option<AgentCommand> {
        if let Some(a) = &m.agent {
            return Some(AgentCommand::clone(a));
        }
        if plan.campaign.is_some() {
            return None;
        }
        let first = self.doc.runs.first()?.mcp.as_deref()?;
        first.agent.as_deref().cloned()
    }

    /// `campaign FILE --rerun SEED [--scenario S]` for a campaign's run or a re-run of one,
    /// when it runs what this run ran; else why not, as a `#` line.
    fn campaign_rerun(&self, plan: &RunPlan) -> Vec<String> {
        let Some(campaign) = &plan.campaign else {
            return Vec::new();
        };
        let Some(file) = self
            .doc
            .campaign
            .as_ref()
            .map(|c| &c.file)
            .filter(|_| self.doc.path.as_deref() == Some(campaign.as_path()))
        else {
            return Vec::new();
        };
        let Some(own) = crate::document::plan::of_campaign_run(campaign, file, plan.seed) else {
            return Vec::new();
        };
        let mut words = vec![
            crate::exit::PROGRAM.to_owned(),
            "campaign".into(),
            campaign.display().to_string(),
            "--rerun".into(),
            plan.seed.to_string(),
        ];
        let changed = !plan.scenario_unchanged();
        if own.recording == plan.recording {
            if changed {
                return vec![format!(
                    "# {} changed since the campaign ran: `campaign --rerun {}` refuses it (restore it to run the agent again)",
                    plan.scenario.display(),
                    plan.seed
                )];
            }
            return vec![line(&words)];
        }
        if changed {
            return vec![format!(
                "# {} changed since this re-run: its rules are gone (R runs the rules there now)",
                plan.scenario.display()
            )];
        }
        // The CLI puts the campaign's --probability over the scenario given; the same run
        // only when this one ran at that probability (its own override, or the file's).
        let effective = |p: &RunPlan| p.open_scenario().ok().map(|s| s.probability);
        let cli = RunPlan {
            probability: own.probability,
            ..plan.clone()
        };
        if effective(plan) != effective(&cli) {
            return vec![format!(
                "# `campaign --rerun {} --scenario {}` would put the campaign's --probability over rules this re-run ran as written: R runs them again",
                plan.seed,
                plan.scenario.display()
            )];
        }
        words.extend(["--scenario".into(), plan.scenario.display().to_string()]);
        vec![line(&words)]
    }
}
