//! Running real agents: a campaign (the agent many times through the proxy, each run judged
//! from its recording), its shards merged, one seed run again with other rules, a failing
//! seed shrunk to its smallest fault schedule. Both faces use it (the command line's
//! `campaign`, the explorer's re-runs); opening files stays in [`crate::document`].
//!
//! - [`run`]: the plan and the runner (folders, the proxy's `mcpServers` entry, the agent in
//!   a process group with a watchdog, the oracle, judging each recording).
//! - [`rerun`]: the plan for one seed again (a campaign's, or an MCP recording's agent).
//! - [`launch`]: what a re-run starts (commands, folder, file), shown before it starts.
//! - [`shrink`]: the smallest failing fault schedule.
//! - [`merge`]: shard files joined into one campaign file.
//! - [`adopted`]: what a run leaves outside its process group, ended after it.
//! - [`before`]: a single recording's world reset (`mcp --before`).

pub mod adopted;
pub mod before;
pub mod launch;
pub mod merge;
pub mod rerun;
pub mod run;
pub mod shrink;

pub use crate::document::campaign::{
    named_path, read_file, recording_path, relative_to, runs_dir, scenario_of,
};
pub use launch::Launch;
pub use rerun::{
    Again, RerunError, Rules, next_run, replan, replan_recording, rerun_out, run_again,
};
pub use run::{Plan, StopFlag, lab_record, run_all, run_one};
pub use shrink::{Fault, Shrunk, faults_of, pinned, shrink};
