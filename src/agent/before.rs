//! The world reset of a single recording (`mcp --before CMD`): the command a campaign runs
//! before each run, run once before the proxy starts the server, so the recording and every
//! re-run of its agent (which runs it again, as a campaign's `--before`) start from the same
//! world. It runs by `sh -c` in the current folder, its placeholders the shell's variables as
//! a campaign's are (`{seed}` → `"$TOOLSTORM_SEED"`, `{record}` → `"$TOOLSTORM_RECORD"`; the
//! run's others are empty here), its output on standard error: standard output is the MCP
//! client's channel.

use std::os::fd::AsFd;
use std::process::{Command, Stdio};

use super::run::{PLACEHOLDERS, expand_for_shell};

/// Runs `command` with the recording's seed and file as its placeholders' values. The error
/// says why it did not run or how it ended.
pub fn reset_world(command: &str, seed: Option<i64>, record: Option<&str>) -> Result<(), String> {
    let values: Vec<(&str, String)> = PLACEHOLDERS
        .iter()
        .map(|p| {
            let value = match *p {
                "seed" => seed.map(|s| s.to_string()).unwrap_or_default(),
                "record" => record.unwrap_or_default().to_owned(),
                _ => String::new(),
            };
            (*p, value)
        })
        .collect();
    let shown = crate::redact::Redactor::builtin().redact_command_line(command);
    let out = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("--before {shown}: no standard error to give it: {e}"))?;
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(expand_for_shell(command, &values))
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::inherit());
    for (name, value) in &values {
        sh.env(format!("TOOLSTORM_{}", name.to_ascii_uppercase()), value);
    }
    match sh.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!(
            "--before {shown} failed ({s}): the world was not reset, so nothing was started"
        )),
        Err(e) => Err(format!("--before {shown} could not run: {e}")),
    }
}
