//! Crash safety of `Cassette::save`: the old file survives a failed write, no `.toolstorm-*`
//! temporary files are left behind, and new files are private (0600).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use toolstorm::atomic::write_with;
use toolstorm::cassette::Cassette;

fn tempdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolstorm-save-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("list")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".toolstorm-"))
        .collect()
}

fn cassette() -> Cassette {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reference/demo/lost_ack.retry.cassette.json");
    Cassette::load(path).expect("load")
}

#[test]
fn save_creates_parents_and_private_file() {
    let dir = tempdir("new");
    let target = dir.join("a/b/trace.json");
    let c = cassette();
    c.save(&target).expect("save");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), c.dumps());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&target)
            .expect("meta")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
    }
    assert!(leftovers(&dir.join("a/b")).is_empty());
    // Overwriting replaces the content.
    c.save(&target).expect("save again");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), c.dumps());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn injected_write_error_keeps_old_target_and_cleans_up() {
    let dir = tempdir("inject");
    let target = dir.join("trace.json");
    std::fs::write(&target, "old contents\n").expect("seed");
    let result = write_with(&target, |file| {
        file.write_all(b"{\"partial\":")?;
        Err(io::Error::other("disk full (injected)"))
    });
    assert!(result.is_err());
    assert_eq!(
        std::fs::read_to_string(&target).expect("read"),
        "old contents\n"
    );
    assert_eq!(leftovers(&dir), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn failed_rename_cleans_up() {
    // The target is a non-empty directory: the temporary file is written, the rename fails.
    let dir = tempdir("rename");
    let target = dir.join("occupied");
    std::fs::create_dir_all(target.join("inside")).expect("dir");
    let err = cassette().save(&target);
    assert!(err.is_err());
    assert!(target.join("inside").is_dir());
    assert_eq!(leftovers(&dir), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn read_only_directory_keeps_old_target() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir("readonly");
    let target = dir.join("trace.json");
    std::fs::write(&target, "old\n").expect("seed");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let result = cassette().save(&target);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod back");
    // As root the write may be allowed; either way the directory holds no temporary files and
    // the target is either untouched or fully replaced.
    let now = std::fs::read_to_string(&target).expect("read");
    match result {
        Err(_) => assert_eq!(now, "old\n"),
        Ok(()) => assert_eq!(now, cassette().dumps()),
    }
    assert!(leftovers(&dir).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn an_existing_file_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir("mode");
    let target = dir.join("scenario.json");
    std::fs::write(&target, "{}\n").expect("seed");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    cassette().save(&target).expect("save");
    let mode = std::fs::metadata(&target)
        .expect("meta")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o644, "overwriting keeps the file's permissions");
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn a_symlink_is_written_through() {
    let dir = tempdir("link");
    let real = dir.join("real.json");
    let link = dir.join("link.json");
    std::fs::write(&real, "old\n").expect("seed");
    std::os::unix::fs::symlink("real.json", &link).expect("symlink");
    cassette().save(&link).expect("save");
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );
    assert_eq!(
        std::fs::read_to_string(&real).expect("read"),
        cassette().dumps(),
        "the file it points to got the new content"
    );
    // A dangling link creates its target.
    let dangling = dir.join("dangling.json");
    std::os::unix::fs::symlink("made-by-write.json", &dangling).expect("symlink");
    cassette().save(&dangling).expect("save");
    assert_eq!(
        std::fs::read_to_string(dir.join("made-by-write.json")).expect("read"),
        cassette().dumps()
    );
    assert!(leftovers(&dir).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stale_temporary_files_are_swept_on_the_next_write() {
    let dir = tempdir("sweep");
    // Left by a writer that was killed (no such process), by a live process (pid 1: kept,
    // it may still be writing), and a file of someone else's that merely looks similar.
    let dead = dir.join(".toolstorm-999999999-aBcDeF.tmp");
    let live = dir.join(".toolstorm-1-aBcDeF.tmp");
    let other = dir.join(".toolstorm-notes.tmp");
    for p in [&dead, &live, &other] {
        std::fs::write(p, "partial").expect("seed");
    }
    cassette().save(dir.join("trace.json")).expect("save");
    assert!(!dead.exists(), "a dead writer's temporary file is removed");
    assert!(live.exists(), "a live writer's temporary file is kept");
    assert!(other.exists(), "files that are not ours are kept");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the release-or-debug binary in `dir` with `args`; (exit code, stderr).
fn toolstorm(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_report_never_replaces_a_file_of_another_kind() {
    let dir = tempdir("foreign");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for f in [
        "cassettes/mcp-incident.json",
        "cassettes/mcp-incident.mcp.json",
    ] {
        let from = root.join(f);
        let name = from.file_name().expect("a name");
        std::fs::copy(&from, dir.join(name)).expect("copy");
    }
    std::fs::copy(
        root.join("scenarios/mcp-lost-ack.json"),
        dir.join("scenario.json"),
    )
    .expect("copy");
    let before = |name: &str| std::fs::read(dir.join(name)).expect("read");
    let (recording, scenario) = (before("mcp-incident.json"), before("scenario.json"));
    // Each names, by mistake, an input where its report goes.
    for (args, file, what) in [
        (
            vec![
                "mcp",
                "--replay",
                "mcp-incident.json",
                "--replay-report",
                "mcp-incident.json",
            ],
            "mcp-incident.json",
            "a replay report",
        ),
        (
            vec![
                "mcp",
                "--replay",
                "mcp-incident.json",
                "--junit",
                "scenario.json",
            ],
            "scenario.json",
            "a JUnit report",
        ),
        (
            vec!["check", "mcp-incident.json", "--junit", "scenario.json"],
            "scenario.json",
            "a JUnit report",
        ),
        (
            vec!["campaign", "merge", "scenario.json", "mcp-incident.json"],
            "scenario.json",
            "a campaign file",
        ),
    ] {
        let (code, err) = toolstorm(&dir, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(file) && err.contains(&format!("only {what} is replaced")),
            "{args:?}: {err}"
        );
    }
    assert_eq!(
        before("mcp-incident.json"),
        recording,
        "the recording is intact"
    );
    assert_eq!(before("scenario.json"), scenario, "the scenario is intact");
    // Its own kind is replaced, run after run.
    for _ in 0..2 {
        let (code, err) = toolstorm(
            &dir,
            &[
                "mcp",
                "--replay",
                "mcp-incident.json",
                "--replay-report",
                "r.json",
                "--junit",
                "j.xml",
            ],
        );
        assert_eq!(code, 1, "no call was asked for: {err}");
        let (code, err) = toolstorm(&dir, &["check", "mcp-incident.json", "--junit", "j.xml"]);
        assert!(code == 0 || code == 1, "{err}");
    }
    let report = String::from_utf8(before("r.json")).expect("text");
    assert!(report.contains("toolstorm-mcp-replay"), "{report}");
    let junit = String::from_utf8(before("j.xml")).expect("text");
    assert!(
        junit.starts_with("<?xml") && junit.contains("<testsuites"),
        "{junit}"
    );
}
