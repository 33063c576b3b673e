//! `run FILE`: run a scenario file headlessly, with the same output forms as `demo`, plus
//! `--verdict` to write the contract verdicts as JSON. Also the shared output step of both.
//! Files of world `orbit` go to the executor (the `orbit` command module).

use std::path::{Path, PathBuf};

use clap::Args;

use super::{EXIT_CONTRACT, EXIT_OK, Io, PyInt, os_error, py_int};
use crate::atomic;
use crate::contract::checks_to_value;
use crate::json::{Object, Value, canonical, pretty};
use crate::lab::scenario_file::{PolicyChoice, ScenarioFile};
use crate::lab::{self, LabRun, RunConfig, Scenario, comparison_value, header_line};

/// The output flags `demo` and `run` share.
#[derive(Args, Debug, Clone, Default)]
pub struct OutputFlags {
    /// Print the complete JSON result
    #[arg(long)]
    pub json: bool,
    /// Save the complete result as JSON
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Save a single policy trace for replay
    #[arg(long)]
    pub cassette: Option<PathBuf>,
    /// Exit 1 if any contract fails
    #[arg(long)]
    pub fail_on_contract: bool,
}

impl OutputFlags {
    /// Where results go, plus an optional verdict file.
    pub fn emit(&self, verdict: Option<PathBuf>) -> Emit {
        Emit {
            json: self.json,
            output: self.output.clone(),
            cassette: self.cassette.clone(),
            verdict,
            fail_on_contract: self.fail_on_contract,
        }
    }
}

/// Flags of `run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The scenario file
    file: PathBuf,
    /// Override the file's policy (optimistic, retry, resilient, all)
    #[arg(long, value_parser = ["optimistic", "retry", "resilient", "all"])]
    policy: Option<String>,
    /// Override the file's seed
    #[arg(long, value_parser = py_int, allow_hyphen_values = true)]
    seed: Option<PyInt>,
    /// Override every rule's probability
    #[arg(long, value_parser = super::parse_python_float, allow_hyphen_values = true)]
    probability: Option<f64>,
    /// Override the file's call budget (1-20)
    #[arg(long, value_parser = py_int, allow_hyphen_values = true)]
    max_calls: Option<PyInt>,
    #[command(flatten)]
    out: OutputFlags,
    /// Save the contract verdicts as JSON
    #[arg(long)]
    verdict: Option<PathBuf>,
    /// Save the scenario as run (with --policy/--seed/--probability/--max-calls applied)
    #[arg(long)]
    save_scenario: Option<PathBuf>,
    /// Folder for the Orbit tracker's file (orbit scenarios; default: a fresh temp folder)
    #[arg(long)]
    work_dir: Option<PathBuf>,
}

impl RunArgs {
    /// Plain `run FILE`.
    pub fn for_file(file: PathBuf) -> RunArgs {
        RunArgs {
            file,
            policy: None,
            seed: None,
            probability: None,
            max_calls: None,
            out: OutputFlags::default(),
            verdict: None,
            save_scenario: None,
            work_dir: None,
        }
    }

    /// The options an Orbit executor scenario takes; lab-only flags are refused.
    fn orbit_options(&self) -> Result<super::orbit::RunOptions, String> {
        let lab_only = [
            ("--policy", self.policy.is_some()),
            ("--probability", self.probability.is_some()),
            ("--max-calls", self.max_calls.is_some()),
            ("--verdict", self.verdict.is_some()),
            ("--save-scenario", self.save_scenario.is_some()),
            ("--fail-on-contract", self.out.fail_on_contract),
        ];
        if let Some((flag, _)) = lab_only.iter().find(|(_, given)| *given) {
            return Err(format!(
                "ValueError: {flag} applies to shipping scenarios, not to orbit scenario files"
            ));
        }
        Ok(super::orbit::RunOptions {
            seed: self.seed,
            json: self.out.json,
            output: self.out.output.clone(),
            cassette: self.out.cassette.clone(),
            work_dir: self.work_dir.clone(),
        })
    }
}

/// Where a run's results go.
pub struct Emit {
    /// Print JSON instead of text.
    pub json: bool,
    /// Write the JSON result here.
    pub output: Option<PathBuf>,
    /// Write the cassette here.
    pub cassette: Option<PathBuf>,
    /// Write the verdicts here.
    pub verdict: Option<PathBuf>,
    /// Exit 1 when a contract failed.
    pub fail_on_contract: bool,
}

/// Reads and validates a scenario file; the error names the file, the JSON path and the reason.
pub fn load_scenario(path: &Path) -> Result<ScenarioFile, String> {
    let text = read_scenario_text(path)?;
    ScenarioFile::from_text(&text).map_err(|e| scenario_error_line(path, &e))
}

/// Reads a scenario file's text (bounded, UTF-8), or the one-line error saying why not.
pub fn read_scenario_text(path: &Path) -> Result<String, String> {
    let bytes = crate::fsread::read_document(path).map_err(|e| os_error(path, &e))?;
    if bytes.len() > crate::json::MAX_DOCUMENT_BYTES {
        return Err(format!(
            "ValueError: File exceeds 8 MB limit ({})",
            path.display()
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "ConfigurationError: Invalid scenario file ({}: not UTF-8 at byte {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// The one-line error for a bad scenario file: message, then file, JSON path and reason.
pub fn scenario_error_line(path: &Path, e: &crate::error::ConfigError) -> String {
    let mut line = format!("ConfigurationError: {} ({}", e.message, path.display());
    if let Some(p) = &e.path {
        line.push_str(&format!(": {p}"));
    }
    if let Some(d) = &e.detail {
        line.push_str(&format!(": {d}"));
    }
    line.push(')');
    line
}

/// Runs `run`.
pub fn run(a: &RunArgs, io: &mut Io<'_>) -> i32 {
    if super::orbit::is_orbit_file(&a.file) {
        return match a.orbit_options() {
            Ok(opts) => super::orbit::run_file(&a.file, &opts, io),
            Err(msg) => io.fail(&msg),
        };
    }
    let file = match load_scenario(&a.file) {
        Ok(f) => f,
        Err(msg) => return io.fail(&msg),
    };
    let choice = a
        .policy
        .as_deref()
        .and_then(PolicyChoice::parse)
        .unwrap_or(file.policy);
    let mut config = file.config.clone();
    if let Some(PyInt(seed)) = a.seed {
        match seed {
            Some(s) => config.seed = s,
            None => {
                return io.fail(
                    "ConfigurationError: Seed must be an integer in the JavaScript-safe range",
                );
            }
        }
    }
    if let Some(p) = a.probability {
        config.probability = Some(p);
    }
    if let Some(PyInt(m)) = a.max_calls {
        config.max_calls = m.unwrap_or(i64::MAX);
    }
    let opts = a.out.emit(a.verdict.clone());
    let code = emit(&file.scenario, choice, &config, &opts, io);
    if let Some(path) = &a.save_scenario
        && code != super::EXIT_USAGE
    {
        let saved = ScenarioFile {
            config,
            policy: choice,
            ..file
        };
        // The overrides may not form a valid file (e.g. a budget outside 1-20 already failed).
        if let Err(e) = ScenarioFile::from_text(&saved.to_text()) {
            return io.fail(&scenario_error_line(path, &e));
        }
        if let Err(e) = atomic::write(path, saved.to_text().as_bytes()) {
            return io.fail(&os_error(path, &e));
        }
    }
    code
}

/// The verdicts document `--verdict` writes: scenario, configuration and per-run checks.
pub fn verdicts_value(scenario: &str, config: &RunConfig, runs: &[LabRun]) -> Value {
    let mut o = Object::new();
    o.push("schema_version", 1);
    o.push("scenario", scenario);
    o.push("config", lab::config_value(scenario, config));
    o.push("passed", runs.iter().all(LabRun::passed));
    let items = runs
        .iter()
        .map(|r| {
            let mut v = Object::new();
            v.push("policy", r.policy.as_str());
            v.push("digest", r.digest.as_str());
            v.push("contract", checks_to_value(&r.checks));
            Value::Object(v)
        })
        .collect();
    o.push("runs", Value::Array(items));
    Value::Object(o)
}

/// Runs the policies and writes/prints results as `demo` does.
pub fn emit(
    sc: &Scenario,
    choice: PolicyChoice,
    config: &RunConfig,
    opts: &Emit,
    io: &mut Io<'_>,
) -> i32 {
    let runs: Result<Vec<LabRun>, _> = choice
        .policies()
        .into_iter()
        .map(|p| lab::run(sc, p, config))
        .collect();
    let runs = match runs {
        Ok(r) => r,
        Err(e) => {
            let mut line = format!("ConfigurationError: {}", e.message);
            if let Some(p) = &e.path {
                line.push_str(&format!(" (at {p})"));
            }
            return io.fail(&line);
        }
    };
    if let Some(path) = &opts.cassette {
        let [single] = runs.as_slice() else {
            return io.fail("ValueError: --cassette requires a single --policy");
        };
        let text = canonical(&single.report.to_value()) + "\n";
        if let Err(e) = atomic::write(path, text.as_bytes()) {
            return io.fail(&os_error(path, &e));
        }
    }
    let result = match (choice, runs.as_slice()) {
        (PolicyChoice::One(_), [single]) => single.to_value(),
        _ => comparison_value(&sc.name, config, &runs),
    };
    let json = pretty(&result) + "\n";
    if let Some(path) = &opts.output
        && let Err(e) = atomic::write(path, json.as_bytes())
    {
        return io.fail(&os_error(path, &e));
    }
    if let Some(path) = &opts.verdict {
        let text = pretty(&verdicts_value(&sc.name, config, &runs)) + "\n";
        if let Err(e) = atomic::write(path, text.as_bytes()) {
            return io.fail(&os_error(path, &e));
        }
    }
    if opts.json {
        io.print(&json);
    } else {
        io.println(&header_line(sc, config.seed));
        for r in &runs {
            for line in r.text_lines() {
                io.println(&line);
            }
        }
    }
    if opts.fail_on_contract && runs.iter().any(|r| !r.passed()) {
        EXIT_CONTRACT
    } else {
        EXIT_OK
    }
}
