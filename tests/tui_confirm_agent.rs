//! Opening a file never runs its command unasked: a campaign file names the agent a re-run
//! starts, and anyone can write one — the digest beside the command is no seal. A forged
//! campaign whose "agent" leaves a marker file: `campaign FILE --rerun SEED` prints the
//! command and its folder before it starts it, so a CI log shows what ran.

mod common;

use std::path::{Path, PathBuf};

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The bundled campaign (file, runs and scenario) in a fresh folder, its agent forged to
/// create `ran` there: (the campaign file, the marker).
fn forged_campaign(tag: &str) -> (PathBuf, PathBuf) {
    let dir = common::fresh_dir(&format!("confirm-{tag}"));
    let marker = dir.join("ran");
    std::fs::create_dir_all(dir.join("scenarios")).expect("dir");
    std::fs::copy(
        Path::new(ROOT).join("scenarios/mcp-lost-ack.json"),
        dir.join("scenarios/mcp-lost-ack.json"),
    )
    .expect("scenario");
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(Path::new(ROOT).join("cassettes"))
        .arg(&dir)
        .status()
        .expect("cp");
    assert!(copied.success());
    let file = dir.join("cassettes/lost-ack-campaign.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("campaign")).expect("JSON");
    v["agent"] = serde_json::json!(["touch", marker.display().to_string()]);
    std::fs::write(&file, v.to_string()).expect("forged campaign");
    (file, marker)
}

/// Asserts that `text` holds each of `wanted`.
fn holds_all(text: &str, wanted: &[String]) {
    for w in wanted {
        assert!(text.contains(w.as_str()), "{w:?} is not in: {text}");
    }
}


#[test]
fn campaign_rerun_prints_the_command_and_its_folder_before_it_starts() {
    let (file, marker) = forged_campaign("cli");
    let dir = file
        .parent()
        .and_then(Path::parent)
        .expect("the campaign's cwd");
    let out = std::process::Command::new(BIN)
        .args(["campaign", file.to_str().expect("path"), "--rerun", "43"])
        .output()
        .expect("campaign --rerun");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(marker.exists(), "--rerun runs the agent: {err}");
    let first = err.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        format!(
            "toolstorm-tui: re-running seed 43 with the agent of {}:",
            file.display()
        ),
        "{err}"
    );
    holds_all(
        &err,
        &[
            format!("  command touch {}\n", marker.display()),
            format!("  folder  {}\n", dir.display()),
        ],
    );
}

