//! Campaigns: one agent run many times against an MCP scenario, each run on its own seed, and
//! the answer to "how often does it recover?". This module owns the campaign file (versioned,
//! strict, rewritten atomically as runs finish) and the pass^k estimator; running the agent
//! and judging each recording is [`crate::agent`]'s.
//!
//! - [`file`]: the campaign file: its plan (scenario, agent command, seeds, oracle) and each
//!   finished run's record (faults, commits, duplicates, checks, the oracle's word).
//! - [`shard`]: a plan split over several machines (`--shard I/N`, `k8s/N`, `ci`).
//! - [`merge`]: shard files joined into one campaign, checking they are parts of one plan.
//! - [`passk`]: pass^k, the chance that k runs in a row all pass, estimated without bias from
//!   n runs (the estimator tau-bench uses).

pub mod file;
pub mod merge;
pub mod passk;
pub mod shard;

pub use file::{CampaignFile, CheckResult, Outcome, RunRecord};

/// Seconds a campaign's run may take unless told otherwise (`campaign --timeout`), also a
/// recording's agent started again from the explorer.
pub const DEFAULT_TIMEOUT: f64 = 120.0;
