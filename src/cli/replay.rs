//! `replay FILE --policy P`: re-run a bundled lab policy against a recorded shipping cassette,
//! offline. Exit 0 when the policy's calls match the recording and consume it; exit 1 on
//! divergence, naming the call and, for a mismatch, the closest recorded call with a per-field
//! diff of the arguments; exit 2 when the file cannot be replayed.

use std::path::PathBuf;

use clap::Args;

use super::Io;
use crate::cassette::ClosestRecord;
use crate::document::Error;
use crate::exit;
use crate::json::one_line;
use crate::lab::Policy;
use crate::lab::offline::{OfflineReplay, replay_policy};

/// Flags of `replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// A recorded shipping cassette, run file or comparison
    file: PathBuf,
    /// The policy to replay
    #[arg(long, value_parser = ["optimistic", "retry", "resilient"])]
    policy: String,
    /// Which run of a comparison file (1-based)
    #[arg(long)]
    run: Option<usize>,
}

/// Runs `replay`.
pub fn run(a: &ReplayArgs, io: &mut Io<'_>) -> i32 {
    let trace = match crate::document::open_trace(&a.file) {
        Ok(t) => t,
        Err(e) => return io.fail(e),
    };
    if trace.mcp.is_some() {
        // Its calls came from an agent through the proxy: no lab policy made them.
        return io.fail(format!(
            "{} is an MCP recording: replay it to the agent that made it with `toolstorm-tui \
             mcp --replay {}` (an MCP server answering from the recording, strictly), or \
             judge it with `toolstorm-tui check {}`",
            a.file.display(),
            a.file.display(),
            a.file.display()
        ));
    }
    let cassettes = trace.cassettes;
    let cassette = match (a.run, cassettes.len()) {
        (None, 1) => &cassettes[0],
        (None, n) => {
            return io.fail(format!(
                "ValueError: {} holds {n} runs; choose one with --run 1..{n}",
                a.file.display()
            ));
        }
        (Some(i), n) if (1..=n).contains(&i) => &cassettes[i - 1],
        (Some(i), n) => {
            return io.fail(format!(
                "ValueError: --run {i}: {} holds {n} run(s)",
                a.file.display()
            ));
        }
    };
    let Some(policy) = Policy::parse(&a.policy) else {
        return io.fail("ConfigurationError: Unknown demo scenario or policy");
    };
    let result = match replay_policy(cassette, policy) {
        Ok(r) => r,
        Err(e) => return io.fail(Error::run(Some(&a.file), e)),
    };
    print(a, policy, cassette.report.calls.len(), &result, io);
    if result.matched() {
        exit::OK
    } else {
        exit::CONTRACT_FAILED
    }
}

fn print(a: &ReplayArgs, policy: Policy, recorded: usize, r: &OfflineReplay, io: &mut Io<'_>) {
    io.println(&format!(
        "Replaying {} with policy {} ({recorded} recorded calls; offline, no tool runs)",
        a.file.display(),
        policy.as_str()
    ));
    for (i, step) in r.steps.iter().enumerate() {
        let answer = match &step.answer {
            Ok(v) => format!("ok {}", one_line(v)),
            Err(t) => t.clone(),
        };
        io.println(&format!(
            "  {:>2} {:<16} {}  -> {answer}",
            i + 1,
            step.tool,
            one_line(&step.arguments)
        ));
    }
    match &r.divergence {
        None => io.println_marked(
            &format!(
                "MATCH  {} calls replayed; the recording is fully consumed; outcome {}",
                r.steps.len(),
                one_line(&r.outcome)
            ),
            Some(true),
        ),
        Some(d) => {
            let line = match d.step {
                Some(n) => format!("DIVERGED at the policy's call {n}: {}", d.message),
                None => format!("DIVERGED: {}", d.message),
            };
            io.println_marked(&line, Some(false));
            if let Some(c) = &d.closest {
                print_closest(c, io);
            }
        }
    }
}

fn print_closest(c: &ClosestRecord, io: &mut Io<'_>) {
    for line in c.explain_lines() {
        io.println(&format!("  {line}"));
    }
}
