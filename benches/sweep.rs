//! Benchmark: the full lab grid — 6 scenarios × 3 policies × 6 seeds × 5 probabilities ×
//! 6 budgets = 3,240 runs, each producing its report and digest — on every core.
//! Target: under 50 ms wall (≥ 65,000 runs/s). Run with `cargo bench --bench sweep`.

use std::time::Instant;

use toolstorm::lab::campaign::{Grid, execute};
use toolstorm::lab::{Policy, scenario};

fn grid() -> Grid {
    Grid::cartesian(
        scenario::all(),
        &Policy::ALL,
        &[-17, 0, 7, 42, 99, 1000],
        &[0.0, 0.25, 0.5, 0.75, 1.0],
        &[1, 2, 4, 8, 12, 20],
    )
}

fn main() {
    let grid = grid();
    let n = grid.len();
    // Warm up once, then take the best and median of several rounds.
    let _ = execute(&grid, None);
    let mut times = Vec::new();
    for _ in 0..15 {
        let start = Instant::now();
        let out = execute(&grid, None).expect("grid runs");
        let t = start.elapsed().as_secs_f64();
        assert_eq!(out.len(), n);
        times.push(t);
    }
    times.sort_by(f64::total_cmp);
    let best = times[0];
    let median = times[times.len() / 2];
    println!("sweep grid: {n} runs");
    println!(
        "  best   {:.2} ms  ({:.0} runs/s)",
        best * 1e3,
        n as f64 / best
    );
    println!(
        "  median {:.2} ms  ({:.0} runs/s)",
        median * 1e3,
        n as f64 / median
    );
    println!(
        "  target < 50 ms ({})",
        if median < 0.05 { "met" } else { "NOT met" }
    );
}
