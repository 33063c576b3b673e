//! The one gate an agent's command passes before the explorer starts it. Every re-run (`R`,
//! `p`, `R` from the rule editor) leaves [`App::update`] as a [`Command::RerunAgent`], and
//! `update` hands each to `App::gate_agents`: it works out what the re-run would start (a
//! [`crate::agent::Launch`]: the command line, its folder, the file it came from — a campaign
//! file or a recording's sidecar, which anyone can write — and the server its proxy starts)
//! and, unless the user said yes to that very launch earlier in this session, holds the
//! re-run in `Mode::Confirm(Question::RunAgent)` and shows the launch. `y` starts it; any
//! other key does not, and says so. The re-run then starts only the launch shown
//! ([`super::whatif::run_agent`] refuses a file changed since).

use std::path::PathBuf;

use super::action::{AgentRerun, AgentSource, Command};
use super::app::{AgentRunning, App, Mode, Question};
use crate::agent as run;

/// What the question's last line says the keys do.
pub const KEYS: &str = "y runs it · any other key does not";

impl App {
    /// The re-run of seed `seed` of the agent `source` knows, with the rules of `scenario`
    /// (as written, or under the run's own plan: [`AgentRerun::as_written`]; its files and
    /// run named `tag`, `label` for people): not started yet.
    pub(super) fn agent_rerun(
        &self,
        source: AgentSource,
        seed: i64,
        (scenario, as_written): (PathBuf, bool),
        label: String,
        tag: &'static str,
    ) -> Command {
        let mut r = AgentRerun::new(source, seed, scenario, label, tag, self.proxy_bin.clone());
        r.as_written = as_written;
        Command::RerunAgent(Box::new(r))
    }

    /// Lets through the commands `update` gives, except re-runs of an agent not confirmed:
    /// those are asked about (or refused with the reason they cannot start).
    pub(super) fn gate_agents(&mut self, commands: Vec<Command>) -> Vec<Command> {
        let mut out = Vec::with_capacity(commands.len());
        for command in commands {
            match command {
                Command::RerunAgent(r) => out.extend(self.gate(r)),
                other => out.push(other),
            }
        }
        out
    }

    fn gate(&mut self, mut r: Box<AgentRerun>) -> Option<Command> {
        if self.agent_running() {
            self.info("the agent is running: its run comes when it is done".into());
            return None;
        }
        let launch = match super::whatif::launch_of(&r) {
            Ok(l) => l,
            Err(e) => {
                self.agent_ran(Err(e), r.label);
                return None;
            }
        };
        let trusted = self.trusted.contains(&launch);
        r.launch = Some(launch);
        if !trusted {
            self.mode = Mode::Confirm(Question::RunAgent(r));
            return None;
        }
        // Its files named by its tag and seed: its stop flag, and where its agent's output
        // goes, for the status line.
        let out = run::rerun_out(&self.doc.path.clone().unwrap_or_default(), r.tag, r.seed);
        self.agent_run = Some(AgentRunning {
            stop: r.stop.clone(),
            // The folder it is about to take (re-runs are numbered; one runs at a time here).
            log: run::runs_dir(&out)
                .join(format!("run-{:03}", run::next_run(&out)))
                .join("agent.log"),
            started: std::time::Instant::now(),
        });
        Some(Command::RerunAgent(r))
    }

    /// The answer to the question about `r`: `y` starts it (and its launch is not asked
    /// about again this session); any other key starts nothing, and says so.
    pub(super) fn answer_agent(&mut self, r: Box<AgentRerun>, c: char) -> Vec<Command> {
        let Some(launch) = r.launch.clone() else {
            return Vec::new();
        };
        if c == 'y' {
            self.trusted.push(launch);
            // Through the gate again: what the file says now is what starts (asked again if
            // it changed while the question was shown).
            return vec![Command::RerunAgent(r)];
        }
        self.info(format!(
            "not run: {} (from {}): nothing was started",
            run::launch::command_line(&launch.agent),
            launch.file.display()
        ));
        Vec::new()
    }

    /// The question's title and text: where the command comes from, what it is and where it
    /// runs (escaped when drawn).
    pub fn agent_question(&self, r: &AgentRerun) -> (String, String) {
        let title = format!("start this agent? ({})", r.label);
        let mut lines = Vec::new();
        if let Some(l) = &r.launch {
            lines.push(format!("from    {}", l.file.display()));
            lines.extend(l.lines());
        }
        lines.push(String::new());
        lines.push(
            "Files name these commands and nothing vouches for them: start them only if you trust \
             the files."
                .into(),
        );
        (title, lines.join("\n"))
    }
}
