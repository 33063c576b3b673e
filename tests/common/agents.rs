//! The naive example agent (`examples/mcp_agent.rs`, the official Rust SDK) run as users run
//! it, for the explorer's re-run tests: a campaign of it at `--probability 0.5`, and a
//! recording made through `mcp --agent-cmd` (the agent's own mcpServers file starts the proxy).

use std::path::PathBuf;
use std::process::Command;

use toolstorm::json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

/// The example agent, built beside the example server.
pub fn agent() -> PathBuf {
    super::example_server().with_file_name("mcp_agent")
}

/// A campaign of seeds 43..44 at probability 0.5 in the fresh workspace `tag`: its file. Seed
/// 43's lost acknowledgement fires on the first call (the agent commits twice: FAIL); seed
/// 44's does not (PASS).
pub fn half_campaign(tag: &str) -> PathBuf {
    let (dir, _) = super::lost_ack_workspace(tag);
    let out = Command::new(BIN)
        .args([
            "campaign",
            "mcp-lost-ack.json",
            "--seeds",
            "43..44",
            "--probability",
            "0.5",
            "--min-pass",
            "0",
            "--",
        ])
        .arg(agent())
        .args(["--mcp-config", "{mcp_config}"])
        .current_dir(&dir)
        .output()
        .expect("campaign");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("mcp-lost-ack.campaign.json")
}

/// A recording of the agent made through `mcp --agent-cmd` in the fresh workspace `tag` (its
/// command `extra` longer): (the recording, its scenario).
pub fn agent_recording(tag: &str, extra: &str) -> (PathBuf, PathBuf) {
    let (dir, scenario) = super::lost_ack_workspace(tag);
    let agent = agent();
    let config = toolstorm::obj! {"mcpServers" => toolstorm::obj! {"shipping" => toolstorm::obj! {
        "command" => BIN,
        "args" => Value::Array(vec![
            "mcp".into(), "mcp-lost-ack.json".into(), "--record".into(), "rec.json".into(),
            "--agent-cmd".into(), format!("{} --mcp-config {{mcp_config}}{extra}", agent.display()).into(),
        ]),
    }}};
    std::fs::write(dir.join("mcp.json"), toolstorm::json::pretty(&config)).expect("config");
    let out = Command::new(&agent)
        .args(["--mcp-config", "mcp.json"])
        .current_dir(&dir)
        .output()
        .expect("the agent");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir.join("rec.json"), scenario)
}
