//! The plan of one run: what it ran with — the scenario file (and the digest of its bytes
//! then), the seed, the probability override a campaign set (`--probability`) — where its
//! recording is, and the campaign it belongs to. One source for both faces: `campaign
//! --rerun` and the explorer's `R`, `i` and `Y` read a run's plan from here, never from the
//! scenario file alone (which knows neither the run's seed nor the campaign's override).

use std::path::{Path, PathBuf};

use super::Error;
use crate::campaign::CampaignFile;
use crate::error::ConfigError;
use crate::mcp::scenario::McpScenario;

/// What one run ran with, and where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct RunPlan {
    /// The run's recording.
    pub recording: PathBuf,
    /// The scenario file it ran with.
    pub scenario: PathBuf,
    /// SHA-256 of the scenario file's bytes when it ran (empty when not known).
    pub scenario_sha256: String,
    /// Its seed.
    pub seed: i64,
    /// Every rule's probability, when the run overrode them (a campaign's `--probability`).
    pub probability: Option<f64>,
    /// The campaign file whose run (or re-run of a run) it is: its agent, timeout, folder,
    /// setup and oracle are the campaign's.
    pub campaign: Option<PathBuf>,
}

/// The plan of the campaign at `out`'s finished run of `seed`, as the campaign ran it (`None`
/// when it has no finished run of that seed).
pub fn of_campaign_run(out: &Path, file: &CampaignFile, seed: i64) -> Option<RunPlan> {
    let record = file.runs.iter().find(|r| r.seed == seed)?;
    Some(RunPlan {
        recording: super::campaign::recording_path(out, record),
        scenario: super::campaign::scenario_of(out, file),
        scenario_sha256: file.scenario_sha256.clone(),
        seed,
        probability: file.probability,
        campaign: Some(out.to_path_buf()),
    })
}

/// The plan of a single recording (not a campaign's run): the scenario and probability its
/// session kept, and its seed.
pub fn of_recording(
    recording: &Path,
    session: &crate::mcp::session::McpSession,
    scenario: PathBuf,
    seed: i64,
) -> RunPlan {
    RunPlan {
        recording: recording.to_path_buf(),
        scenario,
        scenario_sha256: String::new(),
        seed,
        probability: session.probability,
        campaign: None,
    }
}

impl RunPlan {
    /// The scenario as the run met it: the file read now, with the run's seed and the
    /// probability override applied, as the proxy applies `--seed` and `--probability`.
    pub fn open_scenario(&self) -> Result<McpScenario, Error> {
        let mut scenario = match super::open_scenario(&self.scenario)? {
            super::Scenario::Mcp(s) => s,
            other => {
                return Err(Error::invalid(
                    Some(&self.scenario),
                    ConfigError::new("Invalid scenario").because(format!(
                        "a scenario of world \"{}\", not \"mcp\"",
                        other.world().as_str()
                    )),
                ));
            }
        };
        scenario.seed = self.seed;
        if let Some(p) = self.probability {
            scenario.probability = Some(p);
        }
        Ok(scenario)
    }

    /// Whether the scenario file still holds the bytes the run ran with (`false` when they
    /// are not known, or it cannot be read).
    pub fn scenario_unchanged(&self) -> bool {
        !self.scenario_sha256.is_empty()
            && crate::fsread::read_document(&self.scenario)
                .is_ok_and(|b| crate::json::sha256_hex(&b) == self.scenario_sha256)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_campaign_runs_plan_has_its_seed_probability_and_recording() {
        let file = CampaignFile {
            scenario: "sc.json".into(),
            scenario_name: "x".into(),
            scenario_sha256: "ab".into(),
            cwd: ".".into(),
            agent: vec!["a".into()],
            probability: Some(0.5),
            timeout: 120.0,
            before: None,
            verify: None,
            seeds: vec![43, 44],
            runs: vec![crate::campaign::RunRecord::new(
                2,
                44,
                crate::campaign::Outcome::Finished,
                "c.runs/run-002/recording.json".into(),
            )],
            agent_http: false,
            shard: None,
        };
        let out = Path::new("/w/c.json");
        assert_eq!(of_campaign_run(out, &file, 43), None, "seed 43 has not run");
        let plan = of_campaign_run(out, &file, 44).expect("seed 44 ran");
        assert_eq!(plan.seed, 44);
        assert_eq!(plan.probability, Some(0.5));
        assert_eq!(plan.scenario, PathBuf::from("/w/sc.json"));
        assert_eq!(
            plan.recording,
            PathBuf::from("/w/c.runs/run-002/recording.json")
        );
        assert_eq!(plan.campaign.as_deref(), Some(out));
        assert!(!plan.scenario_unchanged(), "no such file");
    }
}
