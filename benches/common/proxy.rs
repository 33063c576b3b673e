//! Starting the proxy in a benchmark: `toolstorm-tui mcp ... --listen 127.0.0.1:0`, waiting for
//! the line that says where it listens.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStderr, Command, Stdio};

/// Starts `cmd` (a listening proxy) with its output dropped and its stderr piped: the child,
/// the URL it listens on, and the rest of its stderr (the caller keeps the pipe drained).
pub fn listening(mut cmd: Command) -> (Child, String, BufReader<ChildStderr>) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the proxy starts");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut first = String::new();
    err.read_line(&mut first).expect("the proxy's first line");
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the proxy's first stderr line: {first:?}"))
        .to_owned();
    (child, url, err)
}
