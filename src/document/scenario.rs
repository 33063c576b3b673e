//! Scenario files of every world, and running them: a shipping scenario runs its recovery
//! policies in the lab, an Orbit scenario runs its batches through the executor. The result is
//! data — runs, reports, checks — that the command line prints and the explorer shows.

use std::path::{Path, PathBuf};

use super::Error;
use crate::error::ConfigError;
use crate::executor::approval::Prompt;
use crate::executor::scenario::ExecutorScenario;
use crate::lab::orbit::run::{OrbitRun, run_with_prompt};
use crate::lab::scenario_file::{PolicyChoice, ScenarioFile};
use crate::lab::{self, LabRun, RunConfig};
use crate::mcp::scenario::McpScenario;
use crate::storm::MAX_SAFE_SEED;

/// The worlds a scenario file may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum World {
    /// The shipping lab: recovery policies against fault rules.
    Shipping,
    /// The Orbit world: batches of function calls through the robust executor.
    Orbit,
    /// The MCP boundary: faults between an agent and its MCP server (run by `mcp`).
    Mcp,
}

impl World {
    /// Every world, in the order error messages list them.
    pub const ALL: [World; 3] = [World::Shipping, World::Orbit, World::Mcp];

    /// The name files use.
    pub fn as_str(self) -> &'static str {
        match self {
            World::Shipping => crate::lab::scenario_file::WORLD,
            World::Orbit => crate::executor::scenario::WORLD,
            World::Mcp => crate::mcp::scenario::WORLD,
        }
    }

    /// The world called `name`.
    pub fn parse(name: &str) -> Option<World> {
        World::ALL.into_iter().find(|w| w.as_str() == name)
    }
}

/// A validated scenario file, of any world.
#[derive(Clone, Debug, PartialEq)]
pub enum Scenario {
    /// A shipping lab scenario.
    Shipping(ScenarioFile),
    /// An executor scenario in the Orbit world.
    Orbit(ExecutorScenario),
    /// Faults for the MCP proxy.
    Mcp(McpScenario),
}

/// Settings that override a scenario file's own for one run (the command line's flags).
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Which policies (shipping only).
    pub policy: Option<PolicyChoice>,
    /// The decision seed.
    pub seed: Option<i64>,
    /// Every rule's probability (shipping only).
    pub probability: Option<f64>,
    /// The call budget (shipping only).
    pub max_calls: Option<i64>,
    /// Where the Orbit tracker writes its file (Orbit only; `None` keeps actions in memory).
    pub work_dir: Option<PathBuf>,
    /// Run on real threads and the wall clock, waiting at most this long for late work at
    /// the end (Orbit only; `None`: the simulation on virtual time).
    pub live: Option<std::time::Duration>,
    /// With `live`: run the batches against this MCP server's tools instead of Orbit's.
    pub mcp: Option<crate::lab::orbit::run::McpSource>,
}

/// The lab's runs of a shipping scenario.
#[derive(Clone, Debug)]
pub struct LabRuns {
    /// The scenario as run: the file with the settings applied.
    pub file: ScenarioFile,
    /// One run per policy, in order.
    pub runs: Vec<LabRun>,
}

/// What running a scenario gave.
#[derive(Clone, Debug)]
pub enum ScenarioRun {
    /// A shipping scenario's policy runs.
    Lab(Box<LabRuns>),
    /// An executor scenario's batches.
    Orbit(Box<OrbitRun>),
}

impl ScenarioRun {
    /// Whether every run passed its scenario's checks (Orbit runs have none of their own).
    pub fn passed(&self) -> bool {
        match self {
            ScenarioRun::Lab(l) => l.runs.iter().all(LabRun::passed),
            ScenarioRun::Orbit(_) => true,
        }
    }
}

impl Scenario {
    /// The world it runs in.
    pub fn world(&self) -> World {
        match self {
            Scenario::Shipping(_) => World::Shipping,
            Scenario::Orbit(_) => World::Orbit,
            Scenario::Mcp(_) => World::Mcp,
        }
    }

    /// The scenario's title.
    pub fn title(&self) -> &str {
        match self {
            Scenario::Shipping(f) => &f.scenario.story.title,
            Scenario::Orbit(s) => &s.story.title,
            Scenario::Mcp(s) => &s.story.title,
        }
    }

    /// Runs it with `settings` applied; an interactive approver asks `prompt`. Errors name
    /// `path` (the file it came from, if any).
    pub fn run(
        &self,
        path: Option<&Path>,
        settings: &Settings,
        prompt: &mut dyn Prompt,
    ) -> Result<ScenarioRun, Error> {
        let fail = |e: ConfigError| Error::run(path, e);
        if settings.seed.is_some_and(|s| s.abs() > MAX_SAFE_SEED) {
            return Err(fail(ConfigError::new(
                "Seed must be an integer in the JavaScript-safe range",
            )));
        }
        if let Some(p) = settings.probability.filter(|p| !(0.0..=1.0).contains(p)) {
            return Err(fail(ConfigError::new("Invalid fault rule").because(
                format!(
                    "the probability for every rule must be a number between 0 and 1, got {}",
                    crate::json::float::py_repr(p)
                ),
            )));
        }
        match self {
            Scenario::Shipping(file) => {
                let file = settings.apply(file);
                let runs = lab::run_policies(&file.scenario, &file.policy.policies(), &file.config)
                    .map_err(fail)?;
                Ok(ScenarioRun::Lab(Box::new(LabRuns { file, runs })))
            }
            Scenario::Orbit(s) => {
                let seed = settings.seed.unwrap_or(s.seed);
                let work = settings.work_dir.clone();
                if s.from_mcp && settings.mcp.is_none() {
                    let file = path.map_or_else(|| "FILE".to_owned(), |p| p.display().to_string());
                    return Err(fail(
                        ConfigError::new("This batch is for an MCP server's tools").because(
                            format!(
                                "its \"tools\" is \"mcp\": run it with `toolstorm-tui run \
                                 {file} --live --mcp -- SERVER COMMAND`"
                            ),
                        ),
                    ));
                }
                match (settings.live, &settings.mcp) {
                    (Some(grace), Some(source)) => {
                        crate::lab::orbit::run::run_live_mcp(s, seed, source, prompt, grace)
                    }
                    (Some(grace), None) => {
                        crate::lab::orbit::run::run_live(s, seed, work, prompt, grace)
                    }
                    (None, _) => run_with_prompt(s, seed, work, prompt),
                }
                .map(|r| ScenarioRun::Orbit(Box::new(r)))
                .map_err(fail)
            }
            Scenario::Mcp(s) => {
                let file = path.map_or_else(|| "FILE".to_owned(), |p| p.display().to_string());
                let server = if s.server.is_some() {
                    ""
                } else {
                    " -- SERVER COMMAND"
                };
                Err(fail(
                    ConfigError::new("An MCP scenario runs in front of a server").because(format!(
                        "start it with `toolstorm-tui mcp {file} --record incident.json{server}`, \
                         point your agent at it, then open or check incident.json"
                    )),
                ))
            }
        }
    }
}

impl Settings {
    /// The shipping scenario file with these settings applied.
    pub fn apply(&self, file: &ScenarioFile) -> ScenarioFile {
        let mut file = file.clone();
        if let Some(p) = self.policy {
            file.policy = p;
        }
        let config: &mut RunConfig = &mut file.config;
        if let Some(s) = self.seed {
            config.seed = s;
        }
        if let Some(p) = self.probability {
            config.probability = Some(p);
        }
        if let Some(m) = self.max_calls {
            config.max_calls = m;
        }
        file
    }
}
