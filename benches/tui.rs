//! Benchmark: the explorer on a 10,000-call cassette — opening it to the first frame, drawing
//! a frame at 200×60, and stepping (update + draw) at the last call, on a synthetic file and on
//! the reference's own 10,000-call recording. Targets: first frame under 100 ms, a step under
//! 5 ms. Run with `cargo bench --bench tui`.

use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolstorm::document::Document;
use toolstorm::tui::action::Action;
use toolstorm::tui::app::App;
use toolstorm::tui::theme::Theme;

mod common;

fn main() {
    let synthetic = std::env::temp_dir().join("toolstorm-bench-tui-10000.cassette.json");
    common::big_cassette(&synthetic);
    // The reference's own 10,000-call recording (5 rules, 4 tools, redacted secrets).
    let reference = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reference/api/large_public_10000.cassette.json");
    for (name, path) in [
        ("synthetic", synthetic.as_path()),
        ("reference", reference.as_path()),
    ] {
        println!("{name}: {}", path.display());
        measure(path);
    }
    let _ = std::fs::remove_file(&synthetic);
}

fn measure(path: &std::path::Path) {
    let theme = Theme::new(false);
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).expect("terminal");

    let mut opens = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let mut app = App::new(Document::open(path).expect("opens"));
        app.update(Action::Resize(200, 60));
        terminal
            .draw(|f| app.render_with(f.area(), f.buffer_mut(), &theme))
            .expect("draw");
        opens.push(start.elapsed().as_secs_f64());
    }
    let mut app = App::new(Document::open(path).expect("opens"));
    app.update(Action::Resize(200, 60));
    let mut frames = Vec::new();
    for _ in 0..50 {
        let start = Instant::now();
        terminal
            .draw(|f| app.render_with(f.area(), f.buffer_mut(), &theme))
            .expect("draw");
        frames.push(start.elapsed().as_secs_f64());
    }
    app.update(Action::Last);
    let mut steps = Vec::new();
    for i in 0..50 {
        let start = Instant::now();
        app.update(if i % 2 == 0 {
            Action::Prev
        } else {
            Action::Next
        });
        terminal
            .draw(|f| app.render_with(f.area(), f.buffer_mut(), &theme))
            .expect("draw");
        steps.push(start.elapsed().as_secs_f64());
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2] * 1e3
    };
    println!("explorer on 10,000 calls at 200x60");
    println!(
        "  open to first frame: median {:.1} ms (target < 100 ms)",
        median(&mut opens)
    );
    println!(
        "  frame at the first call: median {:.2} ms (target < 4 ms)",
        median(&mut frames)
    );
    println!(
        "  step + frame at the last call: median {:.2} ms (target < 5 ms)",
        median(&mut steps)
    );
}
