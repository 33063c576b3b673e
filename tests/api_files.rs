//! The reference's API and demo files: they load (or not) per `api/_manifest.json`, digests
//! and counts match, canonical files re-save byte for byte, and `inspect` / `check` print what
//! the reference printed (`cli/inspect`, `cli/check`).

mod common;

use std::path::{Path, PathBuf};

use toolstorm::cassette::{Cassette, Replay, check, inspect_json, inspect_text, load_document};
use toolstorm::json::{Value, canonical, parse, sha256_hex};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reference")
}

fn json_file(rel: &str) -> Value {
    let text = std::fs::read_to_string(root().join(rel)).expect(rel);
    parse(&text).expect(rel)
}

use common::{field as get, text_of as s};

#[test]
fn manifest_files_load_with_their_digests_counts_and_replayability() {
    let Value::Array(entries) = json_file("api/_manifest.json") else {
        panic!("manifest")
    };
    let mut seen = 0;
    for entry in &entries {
        let rel = s(entry, "file");
        let path = root().join(&rel);
        if !path.exists() {
            continue; // held back
        }
        seen += 1;
        let loaded = Cassette::load(&path);
        if get(entry, "valid") != &Value::Bool(true) {
            assert!(loaded.is_err(), "{rel} should be rejected");
            continue;
        }
        let c = loaded.unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(c.digest(), s(entry, "digest"), "{rel} digest");
        assert_eq!(
            Some(c.report.calls.len() as i64),
            get(entry, "calls").as_i64(),
            "{rel} calls"
        );
        assert_eq!(
            Some(c.report.effects.len() as i64),
            get(entry, "effects").as_i64(),
            "{rel} effects"
        );
        assert_eq!(
            Some(c.report.budget_rejections as i64),
            get(entry, "budget_rejections").as_i64(),
            "{rel} budget_rejections"
        );
        assert_eq!(
            canonical(get(&c.to_value(), "coverage")),
            canonical(get(entry, "coverage")),
            "{rel} coverage"
        );
        match (
            Replay::new(&c, None),
            get(entry, "replayable") == &Value::Bool(true),
        ) {
            (Ok(_), true) => {}
            (Err(e), false) => assert_eq!(e.message, s(entry, "replay_refusal"), "{rel}"),
            (got, want) => panic!("{rel}: replayable {want}, got {got:?}"),
        }
        // Every API file is canonical JSON: re-dumping reproduces it.
        let bytes = std::fs::read_to_string(&path).expect("read");
        assert_eq!(c.dumps(), bytes, "{rel} re-dump");
    }
    assert!(seen >= 10, "only {seen} manifest files present");
}

fn files_in(dir: &str, suffix: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root().join(dir))
        .expect(dir)
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(suffix))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    out.sort();
    out
}

#[test]
fn demo_cassettes_resave_identically_and_match_their_runs() {
    let dir = tempdir("demo-resave");
    let mut count = 0;
    for sub in ["demo", "demo-variants"] {
        for rel in files_in(sub, ".cassette.json") {
            let c = Cassette::load(root().join(&rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
            let original = std::fs::read(root().join(&rel)).expect("read");
            assert_eq!(c.dumps().as_bytes(), &original[..], "{rel}");
            let out = dir.join(rel.replace('/', "_"));
            c.save(&out).expect("save");
            assert_eq!(
                std::fs::read(&out).expect("read back"),
                original,
                "{rel} saved bytes"
            );
            let run_rel = rel.replace(".cassette.json", ".run.json");
            let run = json_file(&run_rel);
            assert_eq!(c.digest(), s(&run, "digest"), "{rel} digest vs {run_rel}");
            // The run file itself is accepted by the CLI reader, and yields the same cassette.
            let from_run =
                load_document(root().join(&run_rel)).unwrap_or_else(|e| panic!("{run_rel}: {e}"));
            assert_eq!(from_run.len(), 1);
            assert_eq!(from_run[0].digest(), c.digest());
            count += 1;
        }
    }
    assert!(count >= 18, "{count}");
    for rel in files_in("demo", ".comparison.json") {
        let cassettes = load_document(root().join(&rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let doc = json_file(&rel);
        let runs = get(&doc, "runs").as_array().expect("runs");
        assert_eq!(cassettes.len(), runs.len(), "{rel}");
        for (c, run) in cassettes.iter().zip(runs) {
            assert_eq!(c.digest(), s(run, "digest"), "{rel}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolstorm-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A transcript: the command's arguments, exit code and stdout.
struct Transcript {
    args: Vec<String>,
    exit: i32,
    stdout: String,
}

fn transcript(txt: &Path) -> Transcript {
    let text = std::fs::read_to_string(txt).expect("transcript");
    let command = text
        .lines()
        .find_map(|l| l.strip_prefix("command: "))
        .expect("command line");
    let exit = text
        .lines()
        .find_map(|l| l.strip_prefix("exit_code: "))
        .and_then(|n| n.parse().ok())
        .expect("exit code");
    let stdout = std::fs::read_to_string(txt.with_extension("stdout")).expect("stdout file");
    Transcript {
        args: command.split(' ').skip(1).map(str::to_owned).collect(),
        exit,
        stdout,
    }
}

/// Runs `inspect` / `check` the way the reference's command line does, returning exit and stdout.
fn run(args: &[String]) -> (i32, String) {
    let command = args[0].as_str();
    let path = root().join(&args[1]);
    let json = args.iter().any(|a| a == "--json");
    let max_calls = args
        .iter()
        .position(|a| a == "--max-calls")
        .and_then(|i| args.get(i + 1))
        .map_or(100, |n| n.parse::<i64>().expect("number"));
    let cassettes = match load_document(&path) {
        Ok(c) => c,
        Err(_) => return (2, String::new()),
    };
    match command {
        "inspect" => (
            0,
            if json {
                inspect_json(&cassettes)
            } else {
                inspect_text(&cassettes)
            },
        ),
        "check" => match check(&cassettes, max_calls) {
            Ok(summary) => (
                summary.exit_code(),
                if json { summary.json() } else { summary.text() },
            ),
            Err(_) => (2, String::new()),
        },
        other => panic!("unexpected command {other}"),
    }
}

#[test]
fn inspect_and_check_transcripts_match() {
    let mut count = 0;
    for dir in ["cli/inspect", "cli/check"] {
        for rel in files_in(dir, ".txt") {
            let t = transcript(&root().join(&rel));
            let (exit, stdout) = run(&t.args);
            assert_eq!(stdout, t.stdout, "{rel}: {}", t.args.join(" "));
            assert_eq!(exit, t.exit, "{rel}");
            count += 1;
        }
    }
    assert!(count >= 64, "{count}");
}

#[test]
fn digest_vectors_hold() {
    let doc = json_file("digest_vectors.json");
    let mut checked = 0;
    for v in get(&doc, "vectors").as_array().expect("vectors") {
        let name = s(v, "name");
        let report = get(v, "report_to_dict");
        if !report.is_null() {
            let c = Cassette::from_value(report).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(canonical(&c.to_value()), s(v, "canonical"), "{name}");
            assert_eq!(c.digest(), s(v, "digest"), "{name}");
            assert_eq!(
                sha256_hex(c.dumps().as_bytes()),
                s(v, "cassette_file_sha256"),
                "{name}"
            );
            checked += 1;
            continue;
        }
        let rel = s(v, "cassette_file");
        let path = root().join(&rel);
        if !path.exists() {
            continue; // held back
        }
        let c = Cassette::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(c.digest(), s(v, "digest"), "{name}");
        if let Some(d) = get(v, "dumps").as_str() {
            assert_eq!(c.dumps(), d, "{name}");
        }
        if let Some(sha) = get(v, "cassette_file_sha256").as_str() {
            assert_eq!(sha256_hex(c.dumps().as_bytes()), sha, "{name}");
        }
        if let Some(n) = get(v, "canonical_bytes").as_str() {
            assert_eq!(canonical(&c.to_value()).len().to_string(), n, "{name}");
        }
        checked += 1;
    }
    assert!(checked >= 10, "{checked}");
}

#[test]
fn cli_read_errors_match_reference_lines() {
    let cwd_relative = |p: &str| PathBuf::from(p);
    let e = load_document(cwd_relative("does-not-exist.json")).expect_err("missing");
    assert_eq!(
        e.reference_line(),
        "toolstorm: FileNotFoundError: [Errno 2] No such file or directory: 'does-not-exist.json'"
    );
    let dir = tempdir("isdir");
    let demo = dir.join("demo");
    std::fs::create_dir_all(&demo).expect("dir");
    let e = load_document(&demo).expect_err("directory");
    assert_eq!(e.class_name(), "IsADirectoryError");
    assert!(
        e.reference_message()
            .starts_with("[Errno 21] Is a directory: '"),
        "{}",
        e.reference_message()
    );
    // Oversize and bad UTF-8.
    let big = dir.join("big.json");
    std::fs::write(&big, vec![b' '; 8_000_001]).expect("write");
    assert_eq!(
        load_document(&big).expect_err("big").reference_line(),
        "toolstorm: ValueError: File exceeds 8 MB limit"
    );
    assert_eq!(
        Cassette::load(&big)
            .expect_err("big")
            .config_error()
            .map(|c| c.message),
        Some("Cassette exceeds 8 MB limit")
    );
    for (bytes, want) in [
        (
            &b"{\"a\": \"\xe2\x28\xa1\"}"[..],
            "'utf-8' codec can't decode byte 0xe2 in position 7: invalid continuation byte",
        ),
        (
            &b"\"x\xf0\x90\x80"[..],
            "'utf-8' codec can't decode bytes in position 2-4: unexpected end of data",
        ),
        (
            &b"\x80"[..],
            "'utf-8' codec can't decode byte 0x80 in position 0: invalid start byte",
        ),
    ] {
        let f = dir.join("bad.json");
        std::fs::write(&f, bytes).expect("write");
        let e = load_document(&f).expect_err("bad utf-8");
        assert_eq!(
            e.reference_line(),
            format!("toolstorm: UnicodeDecodeError: {want}")
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn negative_call_limit_is_refused() {
    let cassettes = load_document(root().join("demo/lost_ack.retry.cassette.json")).expect("load");
    let e = check(&cassettes, -1).expect_err("negative");
    assert_eq!(e.message, "Call limit must be a nonnegative integer");
}
