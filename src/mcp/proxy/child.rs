//! The server as a child process: started in a process group of its own, stopped as a group,
//! and never left behind.
//!
//! Servers are often started through a launcher (`sh -c`, `npx`, `uvx`): the process we start
//! is not the one doing the work, so every signal goes to the whole group. Stopping is gentle
//! first: the server's input is closed (most servers exit on end of input), then after a grace
//! the group gets SIGTERM, and a moment later SIGKILL.
//!
//! When the proxy itself is killed (a client that SIGKILLs its server at exit kills us), a
//! watchdog stops the group: a small process of our own binary (`mcp --watch-group PGID`)
//! whose standard input is a pipe only the proxy holds. The kernel closes that pipe however
//! the proxy dies, the watchdog reads the end of its input, and stops the group as above. A
//! parent-death signal would reach only the direct child (not a launcher's children) and must
//! be set between `fork` and `exec`, which std allows only through unsafe code; the pipe needs
//! neither.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long the group has between SIGTERM and SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_secs(1);

/// The running server.
#[derive(Debug)]
pub struct Server {
    child: Child,
    /// The watchdog, when one runs: it stops the group if we die.
    watchdog: Option<Child>,
    status: Option<ExitStatus>,
}

/// The server's three streams.
#[derive(Debug)]
pub struct Streams {
    /// Its input (our requests).
    pub stdin: Option<ChildStdin>,
    /// Its output (protocol messages).
    pub stdout: Option<ChildStdout>,
    /// Its log.
    pub stderr: Option<ChildStderr>,
}

impl Server {
    /// Starts `command` (program and arguments) in `dir`, in its own process group, with a
    /// watchdog from `watchdog` (our binary) when given.
    pub fn spawn(
        command: &[OsString],
        dir: Option<&Path>,
        watchdog: Option<&PathBuf>,
    ) -> std::io::Result<(Server, Streams)> {
        let Some((program, args)) = command.split_first() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "no command",
            ));
        };
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = dir {
            cmd.current_dir(dir);
        }
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn()?;
        let streams = Streams {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
        };
        let watchdog = watchdog.and_then(|bin| spawn_watchdog(bin, child.id()));
        Ok((
            Server {
                child,
                watchdog,
                status: None,
            },
            streams,
        ))
    }

    /// The process id (the group's id too).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The exit status, if the server has exited (without waiting).
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Waits up to `limit` for the server to exit.
    pub fn wait_for(&mut self, limit: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + limit;
        loop {
            if let Some(s) = self.try_status() {
                return Some(s);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops the server's group: SIGTERM, [`TERM_GRACE`], SIGKILL — whatever is still running
    /// of it (the server itself may have exited while a launcher's child lives on). Its input
    /// should be closed, and the grace given, before this.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        // The leader is our child: it is reaped as we wait, so a leader that has exited does
        // not look alive to the group check (a zombie still counts as a member).
        let id = self.id();
        stop_group_with(id, &mut || {
            self.try_status();
        });
        let status = match self.try_status() {
            Some(s) => Some(s),
            None => {
                let _ = self.child.kill();
                self.child.wait().ok()
            }
        };
        self.status = status;
        if let Some(mut w) = self.watchdog.take() {
            // Its input closes: it finds the group gone and exits.
            drop(w.stdin.take());
            let _ = w.wait();
        }
        status
    }
}

/// Starts a watchdog (`bin mcp --watch-group PGID`, `bin` being this program) for the group
/// `pgid`: it stops the group when its input closes — when the returned child's stdin is
/// dropped, or when we die, however we die. It runs in a group of its own, so a signal to
/// ours (Ctrl-C, a client killing our group) does not take it too.
pub fn spawn_watchdog(bin: &Path, pgid: u32) -> Option<Child> {
    let mut w = Command::new(bin);
    w.arg("mcp")
        .arg("--watch-group")
        .arg(pgid.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut w, 0);
    w.spawn().ok()
}

/// SIGTERM to the group `pgid`, then SIGKILL to what is left after [`TERM_GRACE`].
pub fn stop_group(pgid: u32) {
    stop_group_with(pgid, &mut || {});
}

/// [`stop_group`], calling `reap` while it waits (the leader's parent reaps it there).
fn stop_group_with(pgid: u32, reap: &mut dyn FnMut()) {
    #[cfg(unix)]
    {
        use nix::sys::signal::{Signal, killpg};
        use nix::unistd::Pid;
        let Ok(raw) = i32::try_from(pgid) else {
            return;
        };
        let group = Pid::from_raw(raw);
        if killpg(group, Signal::SIGTERM).is_err() {
            return; // nothing left of it
        }
        let until = Instant::now() + TERM_GRACE;
        while Instant::now() < until {
            reap();
            if killpg(group, None).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = killpg(group, Signal::SIGKILL);
    }
    #[cfg(not(unix))]
    {
        let _ = pgid;
        reap();
    }
}

/// The watchdog's work (`mcp --watch-group PGID`): wait for the end of standard input — the
/// proxy closed it, or died — then stop the group. Returns the exit code.
pub fn watch_group(pgid: u32, mut input: impl Read) -> i32 {
    let mut sink = [0u8; 256];
    loop {
        match input.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    stop_group(pgid);
    0
}
