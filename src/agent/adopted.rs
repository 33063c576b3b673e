//! Processes a run leaves behind when they leave its process group: a `setsid` daemon an
//! agent starts, or a server's child that double-forks. The campaign makes itself a child
//! subreaper (Linux's `PR_SET_CHILD_SUBREAPER`), so such an orphan becomes its child rather
//! than init's; each run's processes carry the run's mark in their environment
//! ([`MARK_VAR`]), so when the run is over the campaign finds the children it adopted that
//! carry that mark, ends them and reaps them. A process that cleared its environment carries
//! no mark; [`end_all_adopted`] ends those once no run is going on.

use std::path::Path;
use std::time::{Duration, Instant};

/// The environment variable that marks a run's processes.
pub const MARK_VAR: &str = "TOOLSTORM_RUN_MARK";

/// Makes this process the subreaper of its descendants (once; later calls do nothing). Where
/// the system cannot, orphans go to init as before.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let _ = nix::sys::prctl::set_child_subreaper(true);
        });
    }
}

/// The mark of run `run` (seed `seed`) of this process: unique among every run it starts,
/// so the end of one never ends another's processes (two re-runs of one seed, a campaign's
/// run beside an explorer's re-run).
pub fn mark_for(run: u64, seed: i64) -> String {
    static STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}-{run}-{seed}", std::process::id())
}

/// Ends and reaps the children this process adopted whose environment holds `mark`, and the
/// ones they leave in turn; how many were ended.
pub fn end_adopted(mark: &str) -> usize {
    let needle = format!("{MARK_VAR}={mark}");
    end_children(|pid| environ_holds(pid, &needle))
}

/// Ends and reaps every child this process adopted (no run may be going on: its agent is a
/// child too).
pub fn end_all_adopted() -> usize {
    end_children(|_| true)
}

fn end_children(mut pick: impl FnMut(i32) -> bool) -> usize {
    let mut ended = 0;
    // An ended process's own children are adopted in their turn: a few rounds take them too.
    for _ in 0..8 {
        let found: Vec<i32> = children_of_self()
            .into_iter()
            .filter(|p| pick(*p))
            .collect();
        if found.is_empty() {
            break;
        }
        for pid in found {
            kill_and_reap(pid);
            ended += 1;
        }
    }
    ended
}

/// The pids whose parent is this process, read from /proc.
fn children_of_self() -> Vec<i32> {
    let me = std::process::id().to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // The name is in parentheses and may hold anything: fields count after it.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .is_some_and(|ppid| ppid == me)
        })
        .collect()
}

fn environ_holds(pid: i32, needle: &str) -> bool {
    std::fs::read(Path::new("/proc").join(pid.to_string()).join("environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
}

#[cfg(unix)]
fn kill_and_reap(pid: i32) {
    use nix::sys::signal::{Signal, kill};
    use nix::sys::wait::{WaitPidFlag, waitpid};
    use nix::unistd::Pid;
    let p = Pid::from_raw(pid);
    let _ = kill(p, Signal::SIGKILL);
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        match waitpid(p, Some(WaitPidFlag::WNOHANG)) {
            Ok(nix::sys::wait::WaitStatus::StillAlive) => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => return,
        }
    }
}

#[cfg(not(unix))]
fn kill_and_reap(_pid: i32) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_runs_of_one_seed_never_share_a_mark() {
        // Two re-runs of seed 42 at once (two explorers' tests, a campaign beside a re-run):
        // the end of one must not end the other's agent.
        let (a, b) = (mark_for(1, 42), mark_for(1, 42));
        assert_ne!(a, b);
        assert!(a.ends_with("-1-42") && b.ends_with("-1-42"), "{a} {b}");
    }
}
