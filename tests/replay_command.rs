//! `replay FILE --policy P`: a policy replayed against its own recording matches and consumes
//! it; a different policy diverges with the call and the argument that differ.

mod common;

use common::cli;
use common::fixture_path;
use toolstorm::lab::{Policy, scenario};

#[test]
fn every_policy_matches_its_own_recording() {
    for sc in scenario::names() {
        for policy in Policy::ALL {
            for stem in [
                format!("demo/{sc}.{policy}"),
                format!("demo-variants/{sc}.{policy}.seed7.p0.5"),
            ] {
                let path = fixture_path(&format!("{stem}.cassette.json"));
                let (code, out, err) = cli(&[
                    "replay",
                    path.to_str().expect("path"),
                    "--policy",
                    policy.as_str(),
                ]);
                assert_eq!(code, 0, "{stem}: {out}{err}");
                assert!(out.contains("MATCH"), "{stem}: {out}");
            }
        }
    }
}

#[test]
fn a_different_policy_diverges_with_a_diff() {
    let path = fixture_path("demo/lost_ack.retry.cassette.json");
    let (code, out, _) = cli(&[
        "replay",
        path.to_str().expect("path"),
        "--policy",
        "resilient",
    ]);
    assert_eq!(code, 1);
    assert!(
        out.contains("DIVERGED at the policy's call 2: Tool or arguments differ at call 2"),
        "{out}"
    );
    assert!(
        out.contains("closest recorded call: #2 create_shipment"),
        "{out}"
    );
    assert!(
        out.contains(r#"idempotency_key: changed: recorded null, given "order-1729""#),
        "{out}"
    );
    let (code, out, _) = cli(&[
        "replay",
        path.to_str().expect("path"),
        "--policy",
        "optimistic",
    ]);
    assert_eq!(code, 1);
    assert!(
        out.contains("DIVERGED: Replay ended with 1 unused call(s)"),
        "{out}"
    );
}

#[test]
fn unreplayable_files_exit_2() {
    for (file, needle) in [
        (
            "api/nested_sync.cassette.json",
            "Not a shipping-lab recording",
        ),
        (
            "demo/lost_ack.all.comparison.json",
            "choose one with --run 1..3",
        ),
        (
            "invalid/truncated.json",
            "Invalid or excessively nested JSON",
        ),
    ] {
        let path = fixture_path(file);
        let (code, out, err) = cli(&["replay", path.to_str().expect("path"), "--policy", "retry"]);
        assert_eq!((code, out.as_str()), (2, ""), "{file}");
        assert!(err.contains(needle), "{file}: {err}");
    }
    let path = fixture_path("demo/lost_ack.all.comparison.json");
    let (code, _, _) = cli(&[
        "replay",
        path.to_str().expect("path"),
        "--policy",
        "retry",
        "--run",
        "2",
    ]);
    assert_eq!(code, 0);
    // A shipping recording without captured payloads cannot be replayed.
    let text = common::fixture("demo/lost_ack.retry.cassette.json")
        .replace("\"capture\":true", "\"capture\":false");
    let tmp = std::env::temp_dir().join(format!("toolstorm-nocapture-{}.json", std::process::id()));
    std::fs::write(&tmp, text).expect("write");
    let (code, _, err) = cli(&["replay", tmp.to_str().expect("path"), "--policy", "retry"]);
    let _ = std::fs::remove_file(&tmp);
    assert_eq!(code, 2);
    assert!(
        err.contains("Replay needs captured payloads and no refused calls"),
        "{err}"
    );
    // An MCP recording's calls came from an agent, not a lab policy: the way to replay it is
    // named (it matched nothing and exited 0 before).
    let incident =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cassettes/mcp-incident.json");
    let shown = incident.to_str().expect("path");
    let (code, out, err) = cli(&["replay", shown, "--policy", "retry"]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(
        err.contains("is an MCP recording")
            && err.contains(&format!("toolstorm-tui mcp --replay {shown}")),
        "{err}"
    );
}
