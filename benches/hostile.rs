//! Benchmark: the worst valid files we can build (`tests/common/worst.rs`), as a user meets
//! them — the release binary as a whole process running `inspect` and `check` (median of five
//! runs) — and the explorer's first frame at 200×60 in-process (open, lay out, draw; median
//! of five). Target: every figure under 1 s. Run with `cargo bench --bench hostile`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolstorm::document::Document;
use toolstorm::tui::action::Action;
use toolstorm::tui::app::App;
use toolstorm::tui::theme::Theme;

#[path = "../tests/common/worst.rs"]
mod worst;

const BIN: &str = env!("CARGO_BIN_EXE_toolstorm-tui");

fn median(mut runs: Vec<f64>) -> f64 {
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}

fn whole_process(cmd: &str, path: &Path) -> f64 {
    median(
        (0..5)
            .map(|_| {
                let start = Instant::now();
                let status = Command::new(BIN)
                    .arg(cmd)
                    .arg(path)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .expect("runs");
                assert!(status.code().is_some_and(|c| c <= 1), "{cmd} failed");
                start.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn first_frame(path: &Path) -> f64 {
    median(
        (0..5)
            .map(|_| {
                let start = Instant::now();
                let mut app = App::new(Document::open(path).expect("opens"));
                app.update(Action::Resize(200, 60));
                let mut terminal = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
                terminal
                    .draw(|f| app.render_with(f.area(), f.buffer_mut(), &Theme::new(true)))
                    .expect("draw");
                start.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn main() {
    let dir = std::env::temp_dir().join(format!("toolstorm-bench-worst-{}", std::process::id()));
    println!("worst valid files (target: each figure < 1000 ms)");
    println!(
        "{:<32} {:>10} {:>10} {:>13}",
        "file", "inspect", "check", "first frame"
    );
    for (name, path) in worst::write_all(&dir) {
        println!(
            "{name:<32} {:>8.0}ms {:>8.0}ms {:>11.0}ms",
            whole_process("inspect", &path) * 1e3,
            whole_process("check", &path) * 1e3,
            first_frame(&path) * 1e3
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
