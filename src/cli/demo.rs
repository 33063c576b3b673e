//! `demo` and `scenarios`: the reference's lab commands, with its flags, defaults, output
//! and exit codes.

use clap::Args;

use super::output::{OutputFlags, emit};
use super::{Io, PyInt, parse_python_float, py_int};
use crate::lab::scenario::{self, names};
use crate::lab::scenario_file::PolicyChoice;
use crate::lab::{self, RunConfig};

const SCENARIOS: [&str; 6] = [
    "lost_ack",
    "rate_limit",
    "schema_drift",
    "timeout",
    "latency",
    "blackout",
];

/// Flags of `demo` (spec §14.1).
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Which incident to run
    #[arg(long, default_value = "lost_ack", value_parser = SCENARIOS)]
    scenario: String,
    /// Recovery policy, or all three side by side
    #[arg(long, default_value = "resilient", value_parser = ["optimistic", "retry", "resilient", "all"])]
    policy: String,
    /// Decision seed
    #[arg(long, default_value = "42", value_parser = py_int, allow_hyphen_values = true)]
    seed: PyInt,
    /// Probability for every rule
    #[arg(long, default_value = "1.0", value_parser = parse_python_float, allow_hyphen_values = true)]
    probability: f64,
    /// Call budget (1-20)
    #[arg(long, default_value = "8", value_parser = py_int, allow_hyphen_values = true)]
    max_calls: PyInt,
    #[command(flatten)]
    out: OutputFlags,
}

/// Runs `demo`.
pub fn run(a: &DemoArgs, io: &mut Io<'_>) -> i32 {
    let Some(sc) = scenario::bundled(&a.scenario) else {
        return io.fail("ConfigurationError: Unknown demo scenario or policy");
    };
    let Some(choice) = PolicyChoice::parse(&a.policy) else {
        return io.fail("ConfigurationError: Unknown demo scenario or policy");
    };
    let max_calls = a.max_calls.0.unwrap_or(i64::MAX);
    let config = RunConfig {
        seed: a.seed.0.unwrap_or(i64::MAX),
        probability: Some(a.probability),
        max_calls,
    };
    if let Err(e) = lab::check_config(&config)
        .and_then(|_| lab::scenario_rules(&sc, config.probability).map(|_| ()))
    {
        // The reference's line, then what was wrong with the flag.
        let flag = if e
            .path
            .as_deref()
            .is_some_and(|p| p.ends_with(".probability"))
        {
            format!(
                " (--probability {}: expected a number between 0 and 1)",
                crate::json::float::py_repr(a.probability)
            )
        } else {
            String::new()
        };
        return io.fail(format!("ConfigurationError: {}{flag}", e.message));
    }
    if a.seed.0.is_none() {
        return io.fail("ConfigurationError: Seed must be an integer in the JavaScript-safe range");
    }
    match lab::run_policies(&sc, &choice.policies(), &config) {
        Ok(runs) => emit(&sc, choice, &config, &runs, &a.out, None, io),
        Err(e) => io.fail(format!("ConfigurationError: {}", e.message)),
    }
}

/// Runs `scenarios`: one line per scenario, name padded to 15 columns, then the title.
pub fn scenarios(io: &mut Io<'_>) -> i32 {
    for name in names() {
        if let Some(sc) = scenario::bundled(name) {
            io.println(&format!("{:<15} {}", sc.name, sc.story.title));
        }
    }
    0
}
