//! Crash safety of every file the tool writes: the real binary is killed with SIGKILL at
//! spread-out moments while it writes a run file, a cassette, a verdict file and a scenario
//! file over existing ones, many times. Each target must always be either the old file or the complete new one;
//! after normal exits no temporary `.toolstorm-*` file is left.

#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

fn scenario() -> String {
    format!("{}/scenarios/lost_ack.json", env!("CARGO_MANIFEST_DIR"))
}

fn write_all(dir: &Path) -> std::process::Child {
    Command::new(BIN)
        .args(["run", &scenario(), "--policy", "retry", "--output"])
        .arg(dir.join("run.json"))
        .arg("--cassette")
        .arg(dir.join("cassette.json"))
        .arg("--verdict")
        .arg(dir.join("verdict.json"))
        .arg("--save-scenario")
        .arg(dir.join("scenario.json"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn")
}

#[test]
fn killed_writers_leave_old_or_new_files() {
    let dir = std::env::temp_dir().join(format!("toolstorm-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    // The complete new contents, from one undisturbed run.
    assert!(write_all(&dir).wait().expect("run").success());
    let names = ["run.json", "cassette.json", "verdict.json", "scenario.json"];
    let new: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(dir.join(n)).expect("written"))
        .collect();
    let old = b"old content\n".to_vec();
    let mut killed = 0;
    // Spread the kill moments over the process's life with a fixed pseudo-random sequence.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..150 {
        for n in names {
            std::fs::write(dir.join(n), &old).expect("reset");
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let delay = Duration::from_micros(x % 6000);
        let mut child = write_all(&dir);
        std::thread::sleep(delay);
        if child.kill().is_ok() {
            killed += 1;
        }
        let _ = child.wait();
        for (n, fresh) in names.iter().zip(&new) {
            let got = std::fs::read(dir.join(n)).expect("target exists");
            assert!(
                got == old || &got == fresh,
                "round {round}: {n} is neither old nor new ({} bytes)",
                got.len()
            );
        }
    }
    assert!(killed > 0);
    // Leftover temporaries can only come from killed runs; clean them, then check a normal run
    // leaves none.
    for e in std::fs::read_dir(&dir).expect("dir").flatten() {
        if e.file_name().to_string_lossy().starts_with(".toolstorm-") {
            let _ = std::fs::remove_file(e.path());
        }
    }
    assert!(write_all(&dir).wait().expect("run").success());
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".toolstorm-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
