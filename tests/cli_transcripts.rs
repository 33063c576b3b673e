//! The reference's command-line transcripts for `demo` and `scenarios`, replayed against our
//! CLI in-process: same stdout bytes, same exit code, same error line (our program name), and
//! the files written by `--output` / `--cassette` byte-identical to the reference's.

mod common;

use std::ffi::OsString;
use std::path::PathBuf;

use common::{fixture_path, transcript};
use toolstorm::cli::{Io, dispatch};

struct Outcome {
    code: i32,
    out: String,
    err: String,
}

fn run_cli(args: &[String]) -> Outcome {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let argv: Vec<OsString> = std::iter::once("toolstorm-tui".into())
        .chain(args.iter().map(OsString::from))
        .collect();
    let code = dispatch(
        argv,
        &mut Io {
            out: &mut out,
            err: &mut err,
            people: false,
            reference: false,
        },
    )
    .code()
    .expect("a command, not the explorer");
    Outcome {
        code,
        out: String::from_utf8(out).expect("utf-8 stdout"),
        err: String::from_utf8(err).expect("utf-8 stderr"),
    }
}

fn transcripts(dirs: &[&str], prefix: &str) -> Vec<String> {
    let mut names = Vec::new();
    for dir in dirs {
        let path = fixture_path(dir);
        for entry in std::fs::read_dir(&path).expect("fixture dir") {
            let name = entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            if name.ends_with(".txt") && name.starts_with(prefix) {
                names.push(format!("{dir}/{name}"));
            }
        }
    }
    names.sort();
    names
}

/// Runs one transcript; returns a description of every difference.
fn replay(rel: &str, scratch: &std::path::Path) -> Vec<String> {
    let t = transcript(rel);
    let mut words = t.command.split_whitespace();
    assert_eq!(words.next(), Some("toolstorm"), "{rel}");
    let mut args: Vec<String> = Vec::new();
    let mut written: Vec<(PathBuf, String)> = Vec::new();
    let mut pending_path = false;
    for w in words {
        if pending_path {
            let target = scratch.join(w);
            written.push((target.clone(), w.to_owned()));
            args.push(target.display().to_string());
            pending_path = false;
        } else {
            pending_path = w == "--output" || w == "--cassette";
            args.push(w.to_owned());
        }
    }
    let got = run_cli(&args);
    let mut problems = Vec::new();
    if got.code != t.exit_code {
        problems.push(format!("exit {} (want {})", got.code, t.exit_code));
    }
    if got.out != t.stdout {
        problems.push(format!(
            "stdout differs:\n--- got\n{}\n--- want\n{}",
            got.out, t.stdout
        ));
    }
    if t.stderr.starts_with("usage:") {
        if got.err.is_empty() {
            problems.push("no usage error on stderr".into());
        }
    } else if t.stderr.is_empty() {
        if !got.err.is_empty() {
            problems.push(format!("unexpected stderr {:?}", got.err));
        }
    } else {
        // The reference's line, then (ours) what was wrong, on the same one line.
        let want = t
            .stderr
            .trim_end()
            .replacen("toolstorm:", "toolstorm-tui:", 1);
        if !got.err.starts_with(&want) || got.err.lines().count() != 1 {
            problems.push(format!(
                "stderr {:?} (want a line starting {want:?})",
                got.err
            ));
        }
    }
    for (path, rel_ref) in written {
        let reference = fixture_path(&rel_ref);
        match (std::fs::read(&path), reference.exists()) {
            (Ok(bytes), true) => {
                if bytes != std::fs::read(&reference).expect("reference") {
                    problems.push(format!("{rel_ref} differs"));
                }
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
                    if mode != 0o600 {
                        problems.push(format!("{rel_ref} has mode {mode:o}, want 600"));
                    }
                }
            }
            (Ok(_), false) => problems.push(format!("{rel_ref} was written but should not exist")),
            (Err(_), true) => problems.push(format!("{rel_ref} was not written")),
            (Err(_), false) => {}
        }
    }
    problems
}

fn check_all(names: Vec<String>, min: usize) {
    assert!(names.len() >= min, "only {} transcripts", names.len());
    let scratch = std::env::temp_dir().join(format!("toolstorm-cli-{}-{min}", std::process::id()));
    report_all(&names, |name| replay(name, &scratch));
    let _ = std::fs::remove_dir_all(&scratch);
}

/// Replays every transcript and fails once, listing every one that differs.
fn report_all(names: &[String], replay_one: impl Fn(&str) -> Vec<String>) {
    let failures: Vec<String> = names
        .iter()
        .filter_map(|n| {
            let p = replay_one(n);
            (!p.is_empty()).then(|| format!("{n}:\n  {}", p.join("\n  ")))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} transcripts differ:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
}

#[test]
fn demo_transcripts() {
    check_all(transcripts(&["demo"], ""), 73);
}

#[test]
fn demo_variant_transcripts() {
    check_all(transcripts(&["demo-variants"], ""), 18);
}

#[test]
fn demo_error_transcripts() {
    check_all(transcripts(&["cli/errors"], "demo-"), 12);
}

#[test]
fn scenarios_transcript() {
    check_all(vec!["cli/scenarios.txt".into()], 1);
}

/// Runs the real binary from the reference folder (the transcripts' working directory).
fn replay_process(rel: &str) -> Vec<String> {
    let t = transcript(rel);
    let args: Vec<&str> = t.command.split_whitespace().skip(1).collect();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolstorm-tui"))
        .args(&args)
        .current_dir(fixture_path(""))
        .output()
        .expect("binary runs");
    let code = output.status.code().unwrap_or(-1);
    let out = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    let mut problems = Vec::new();
    if code != t.exit_code {
        problems.push(format!("exit {code} (want {})", t.exit_code));
    }
    if out != t.stdout {
        problems.push(format!(
            "stdout differs:\n--- got\n{out}\n--- want\n{}",
            t.stdout
        ));
    }
    if t.stderr.starts_with("usage:") {
        if err.is_empty() {
            problems.push("no usage error on stderr".into());
        }
    } else if !t.stderr.is_empty() {
        // Our line starts with the reference's, then says where (file, JSON path, reason).
        let want = t
            .stderr
            .trim_end()
            .replacen("toolstorm:", "toolstorm-tui:", 1);
        if !err.starts_with(&want) || err.lines().count() != 1 {
            problems.push(format!("stderr {err:?} (want a line starting {want:?})"));
        }
    } else if !err.is_empty() {
        problems.push(format!("unexpected stderr {err:?}"));
    }
    problems
}

fn check_all_process(names: Vec<String>, min: usize) {
    assert!(names.len() >= min, "only {} transcripts", names.len());
    report_all(&names, replay_process);
}

#[test]
fn inspect_transcripts() {
    check_all_process(transcripts(&["cli/inspect"], ""), 32);
}

#[test]
fn check_transcripts() {
    check_all_process(transcripts(&["cli/check"], ""), 32);
}

#[test]
fn error_transcripts() {
    let mut names = transcripts(&["cli/errors"], "check-");
    names.extend(transcripts(&["cli/errors"], "inspect-"));
    names.extend(transcripts(&["cli/errors"], "unknown-"));
    names.push("cli/no-args.txt".into());
    check_all_process(names, 6);
}
