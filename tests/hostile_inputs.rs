//! Hostile files given to the real binary: each gets one clear line on stderr and exit 2 —
//! no panic, no hang, bounded memory. Every run is under `prlimit --as` (256 MB of address
//! space) and a 20-second watchdog, so a blow-up fails the test instead of the machine.
//!
//! Measured bounds (release or debug alike): at most 8,000,001 bytes are read from any file;
//! nesting stops at depth 33; integers stop at 4,301 digits.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");
const MEMORY_LIMIT: &str = "268435456";

struct Out {
    code: Option<i32>,
    stderr: String,
    stdout: String,
}

fn run(args: &[&str]) -> Out {
    let mut child = Command::new("prlimit")
        .arg(format!("--as={MEMORY_LIMIT}"))
        .arg("--")
        .arg(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn under prlimit");
    let start = Instant::now();
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("{args:?} did not finish within 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    Out {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolstorm-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    dir.join(name)
}

/// `inspect`, `check` and the explorer all refuse `path` with one line containing `needle`.
fn refused(path: &Path, needle: &str) {
    refused_as(path, needle, needle);
}

/// `inspect` and `check` refuse `path` with one line containing `needle` (the reference's
/// words), the explorer with one containing `ours` (this tool's, for an OS error).
fn refused_as(path: &Path, needle: &str, ours: &str) {
    let p = path.to_str().expect("utf-8 path");
    for args in [vec!["inspect", p], vec!["check", p], vec![p]] {
        let needle = if args.len() == 1 { ours } else { needle };
        let out = run(&args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        assert_eq!(
            out.stderr.lines().count(),
            1,
            "{args:?}: one line: {}",
            out.stderr
        );
        assert!(
            out.stderr.starts_with("toolstorm-tui: "),
            "{args:?}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains(needle),
            "{args:?}: {} lacks {needle}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{args:?}");
    }
}

#[test]
fn deep_nesting_beyond_the_limit() {
    let path = scratch("deep.json");
    std::fs::write(
        &path,
        format!("{}{}", "[".repeat(4_000_000), "]".repeat(3_000_000)),
    )
    .expect("write");
    refused(&path, "nesting deeper than 32");
}

#[test]
fn a_hundred_million_digit_number() {
    let path = scratch("digits.json");
    let mut f = std::fs::File::create(&path).expect("create");
    let chunk = vec![b'7'; 1 << 20];
    for _ in 0..95 {
        f.write_all(&chunk).expect("write");
    }
    f.write_all(&vec![b'7'; 100_000_000 - 95 * (1 << 20)])
        .expect("write");
    drop(f);
    refused(&path, "File exceeds 8 MB limit");
    // Under the size limit, a 7,000,000-digit integer is refused by the digit rule.
    std::fs::write(&path, vec![b'7'; 7_000_000]).expect("write");
    refused(&path, "longer than 4300 digits");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn ten_thousand_and_one_calls() {
    let doc = common::worst::ok_calls(10_001);
    let path = scratch("calls.json");
    std::fs::write(&path, doc).expect("write");
    refused(&path, "Invalid trace call list");
}

#[test]
fn a_file_that_grows_while_being_read() {
    let path = scratch("growing.json");
    std::fs::write(&path, "[").expect("write");
    let writer_path = path.clone();
    let writer = std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&writer_path)
            .expect("open");
        let chunk = "0,".repeat(1 << 16);
        for _ in 0..150 {
            if f.write_all(chunk.as_bytes()).is_err() {
                return;
            }
        }
    });
    let out = run(&["inspect", path.to_str().expect("path")]);
    let _ = writer.join();
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1);
    // Whatever moment it read, it is a clean refusal (truncated JSON or over the size limit).
    assert!(
        out.stderr.contains("JSON") || out.stderr.contains("8 MB"),
        "{}",
        out.stderr
    );
}

#[test]
fn special_files() {
    let fifo = scratch("fifo.json");
    let _ = std::fs::remove_file(&fifo);
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    refused(&fifo, "not a regular file (a FIFO)");
    refused(
        Path::new("/dev/zero"),
        "not a regular file (a character device)",
    );
    let dir = scratch("a-directory");
    std::fs::create_dir_all(&dir).expect("dir");
    refused_as(
        &dir,
        "IsADirectoryError: [Errno 21] Is a directory",
        "': is a directory",
    );
}

#[cfg(unix)]
#[test]
fn symlink_loops_and_odd_paths() {
    use std::os::unix::ffi::OsStrExt;
    let a = scratch("loop-a.json");
    let b = scratch("loop-b.json");
    let _ = std::fs::remove_file(&a);
    let _ = std::fs::remove_file(&b);
    std::os::unix::fs::symlink(&b, &a).expect("symlink");
    std::os::unix::fs::symlink(&a, &b).expect("symlink");
    refused_as(&a, "[Errno 40]", "': too many levels of symbolic links");
    // A path that is not UTF-8 is shown, not a reason to crash.
    let odd = scratch("x").with_file_name(std::ffi::OsStr::from_bytes(b"odd-\xff-name.json"));
    std::fs::write(&odd, "{").expect("write");
    let out = Command::new(BIN)
        .arg("inspect")
        .arg(&odd)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("odd-") && err.contains("Invalid or excessively nested JSON"),
        "{err}"
    );
    let _ = std::fs::remove_file(&odd);
}

#[cfg(unix)]
#[test]
fn unreadable_file() {
    use std::os::unix::fs::PermissionsExt;
    let path = scratch("unreadable.json");
    std::fs::write(&path, "{}").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    let out = run(&["inspect", path.to_str().expect("path")]);
    // Root reads it anyway (and it is then an invalid document); anyone else is refused.
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("PermissionError")
            || out.stderr.contains("Missing required document fields"),
        "{}",
        out.stderr
    );
    let _ = std::fs::remove_file(&path);
}

/// Text that would act on a terminal: an OSC title change, a bell, a raw newline, a
/// right-to-left override and a C1 control.
const EVIL: &str = "ev\u{1b}]0;pwned\u{7}il\nname\u{202e}x\u{9b}2J";

/// Whether `out` holds anything a terminal would act on (other than the newlines that end
/// lines).
fn acts_on_a_terminal(out: &str) -> Option<char> {
    out.chars()
        .find(|&c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c))
}

fn json_string(s: &str) -> String {
    toolstorm::json::quote(s)
}

#[test]
fn names_from_files_never_reach_the_terminal_raw() {
    let evil = json_string(EVIL);
    // check: a rule that never fired is named in a verdict line.
    let cassette = scratch("evil-rule.json");
    std::fs::write(
        &cassette,
        format!(
            r#"{{"budget_rejections":0,"calls":[],"capture":true,"clock":"VirtualClock","coverage":{{{evil}:{{"eligible":0,"selected":0,"triggered":0}}}},"effects":[],"rules":[{{"calls":[],"delay":0.0,"kind":"timeout","limit":null,"name":{evil},"probability":1.0,"replacement":null,"tool":"t"}}],"schema_version":1,"seed":0}}"#
        ),
    )
    .expect("write");
    let p = cassette.to_str().expect("path");
    let out = run(&["check", p]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert_eq!(acts_on_a_terminal(&out.stdout), None, "{:?}", out.stdout);
    assert!(
        out.stdout
            .contains("ev\\x1b]0;pwned\\x07il\\nname\\u202ex\\x9b2J"),
        "{}",
        out.stdout
    );
    assert_eq!(
        out.stdout.lines().count(),
        4,
        "the newline stays inside its line"
    );

    // run: a shipping scenario's title and rule name; an Orbit scenario's title and call id.
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/lost_ack.json"),
    )
    .expect("read")
    .replacen("\"Lost acknowledgement\"", &evil, 1)
    .replacen("\"lost-receipt\"", &evil, 1);
    let scenario = scratch("evil-scenario.json");
    std::fs::write(&scenario, text).expect("write");
    let out = run(&["run", scenario.to_str().expect("path")]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("pwned"), "{}", out.stdout);
    assert_eq!(acts_on_a_terminal(&out.stdout), None, "{:?}", out.stdout);

    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/orbit-parallel.json"),
    )
    .expect("read")
    .replacen("\"Parallel batch with faults\"", &evil, 1)
    .replacen("\"call_A\"", &evil, 1);
    let orbit = scratch("evil-orbit.json");
    std::fs::write(&orbit, text).expect("write");
    let work = scratch("evil-orbit-work");
    let out = run(&[
        "run",
        orbit.to_str().expect("path"),
        "--work-dir",
        work.to_str().expect("path"),
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.matches("pwned").count() >= 2, "{}", out.stdout);
    assert_eq!(acts_on_a_terminal(&out.stdout), None, "{:?}", out.stdout);

    // Error lines that quote a name, from every command and the explorer.
    let bad = scratch("evil-fault.json");
    std::fs::write(
        &bad,
        format!(
            r##"{{"budget_rejections":0,"calls":[{{"arguments":{{}},"capture_error":false,"elapsed":0.0,"error":null,"executed":true,"fault":{evil},"id":1,"injected":false,"key":"#1","kind":"timeout","ordinal":1,"output":null,"parent_id":null,"started":0.0,"status":"ok","tool":"t"}}],"capture":true,"clock":"VirtualClock","coverage":{{}},"effects":[],"rules":[],"schema_version":1,"seed":0}}"##
        ),
    )
    .expect("write");
    let b = bad.to_str().expect("path");
    for args in [vec!["inspect", b], vec!["check", b], vec![b]] {
        let out = run(&args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("pwned"), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert_eq!(
            acts_on_a_terminal(&out.stderr),
            None,
            "{args:?}: {:?}",
            out.stderr
        );
    }
}

#[test]
fn a_seven_megabyte_name_gives_a_short_error() {
    let name = json_string(&"n".repeat(7_000_000));
    let bad = scratch("huge-fault.json");
    std::fs::write(
        &bad,
        format!(
            r##"{{"budget_rejections":0,"calls":[{{"arguments":{{}},"capture_error":false,"elapsed":0.0,"error":null,"executed":true,"fault":{name},"id":1,"injected":false,"key":"#1","kind":"timeout","ordinal":1,"output":null,"parent_id":null,"started":0.0,"status":"ok","tool":"t"}}],"capture":true,"clock":"VirtualClock","coverage":{{}},"effects":[],"rules":[],"schema_version":1,"seed":0}}"##
        ),
    )
    .expect("write");
    let out = run(&["check", bad.to_str().expect("path")]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("Call references an unknown fault rule"),
        "{}",
        &out.stderr[..200]
    );
    assert!(out.stderr.len() < 1000, "{} bytes", out.stderr.len());
    assert!(out.stderr.contains("more characters"), "{}", out.stderr);
}

/// Every worst case we can build is inspected, checked and opened in the explorer (to its
/// first frame) well within the watchdog. In a release build each takes under 0.2 s whole
/// process (`cargo bench --bench hostile`); before the linear glob and ordinal lookups they
/// took from 4 s to 11 minutes.
#[test]
fn no_valid_file_stalls_us() {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use toolstorm::document::Document;
    use toolstorm::tui::app::App;
    use toolstorm::tui::theme::Theme;

    let dir = scratch("worst");
    for (name, path) in common::worst::write_all(&dir) {
        let p = path.to_str().expect("path");
        for cmd in ["inspect", "check"] {
            let out = run(&[cmd, p]);
            assert!(
                matches!(out.code, Some(0 | 1)),
                "{name} {cmd}: {}",
                out.stderr
            );
        }
        let start = Instant::now();
        let mut app = App::new(Document::open(&path).expect("opens"));
        let mut terminal = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
        app.update(toolstorm::tui::action::Action::Resize(200, 60));
        terminal
            .draw(|f| app.render_with(f.area(), f.buffer_mut(), &Theme::new(true)))
            .expect("draw");
        let took = start.elapsed();
        eprintln!("{name}: first frame in {took:?}");
        assert!(
            took < Duration::from_secs(20),
            "{name}: first frame after {took:?}"
        );
        let _ = std::fs::remove_file(&path);
    }
}

#[test]
fn a_journal_twice_the_bound_is_refused_before_it_is_read() {
    let cassette = scratch("huge-journal.json");
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("cassettes");
    std::fs::copy(here.join("mcp-incident.json"), &cassette).expect("cassette");
    std::fs::copy(
        here.join("mcp-incident.mcp.json"),
        cassette.with_extension("mcp.json"),
    )
    .expect("sidecar");
    let journal = toolstorm::mcp::session::journal_path(&cassette);
    let mut f = std::fs::File::create(&journal).expect("journal");
    std::io::Write::write_all(&mut f, b"{\"kind\":\"toolstorm-mcp-journal\"}\n").expect("write");
    // Twice the bound (the rest reads as NUL bytes; nothing past the size is looked at).
    f.set_len(2 * toolstorm::mcp::journal::MAX_JOURNAL_BYTES)
        .expect("extend");
    drop(f);
    refused(&cassette, "exceeds 32000000 bytes");
    let out = run(&["mcp", "--replay", cassette.to_str().expect("path")]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("exceeds 32000000 bytes"),
        "{}",
        out.stderr
    );
    let _ = std::fs::remove_file(&journal);
}
