//! Where a lab run's results go: the output flags `demo` and `run` share, and the one step
//! that writes `--output`, `--cassette` and `--verdict` files and prints text or JSON.

use std::path::PathBuf;

use clap::Args;

use super::Io;
use crate::atomic;
use crate::document::Error;
use crate::exit;
use crate::json::{canonical, pretty};
use crate::lab::scenario_file::PolicyChoice;
use crate::lab::{LabRun, RunConfig, Scenario, comparison_value, header_line, verdicts_value};

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

/// Writes `text` to `path` atomically, or says why not.
pub fn write_file(path: &std::path::Path, text: &str, io: &mut Io<'_>) -> Result<(), i32> {
    atomic::write(path, text.as_bytes()).map_err(|e| io.fail(Error::io(path, e)))
}

/// Writes and prints the results of `runs` (the policies of `choice` on `sc` with `config`),
/// as the reference's `demo` does; `verdict` adds the verdicts file `run` can write.
pub fn emit(
    sc: &Scenario,
    choice: PolicyChoice,
    config: &RunConfig,
    runs: &[LabRun],
    flags: &OutputFlags,
    verdict: Option<&std::path::Path>,
    io: &mut Io<'_>,
) -> i32 {
    let written = (|| {
        if let Some(path) = &flags.cassette {
            let [single] = runs else {
                return Err(io.fail("ValueError: --cassette requires a single --policy"));
            };
            if let Some(why) = crate::mcp::journal::refuses_new_cassette(path) {
                return Err(io.fail(format!("ValueError: {why}")));
            }
            write_file(path, &(canonical(&single.report.to_value()) + "\n"), io)?;
        }
        let result = match (choice, runs) {
            (PolicyChoice::One(_), [single]) => single.to_value(),
            _ => comparison_value(&sc.name, config, runs),
        };
        let json = pretty(&result) + "\n";
        if let Some(path) = &flags.output {
            write_file(path, &json, io)?;
        }
        if let Some(path) = verdict {
            let text = pretty(&verdicts_value(&sc.name, config, runs)) + "\n";
            write_file(path, &text, io)?;
        }
        Ok(json)
    })();
    let json = match written {
        Ok(json) => json,
        Err(code) => return code,
    };
    if flags.json {
        io.emit(&json);
    } else {
        io.println(&header_line(sc, config.seed));
        for r in runs {
            let explainer = crate::document::explain::Explainer::new(&r.report, None);
            let lines = r.text_lines_named(io.people);
            for (i, line) in lines.iter().enumerate() {
                io.println_verdict(line);
                // On a terminal, a failed check names the calls behind it.
                match i.checked_sub(1).and_then(|k| r.checks.get(k)) {
                    Some(check) if io.people && !check.passed => {
                        let reasons = explainer.reasons(check);
                        for reason in reasons.iter().take(5) {
                            io.println(&format!("      ↳ {}", reason.text));
                        }
                        if reasons.len() > 5 {
                            io.println(&format!("      ↳ … and {} more", reasons.len() - 5));
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    if flags.fail_on_contract && runs.iter().any(|r| !r.passed()) {
        exit::CONTRACT_FAILED
    } else {
        exit::OK
    }
}
