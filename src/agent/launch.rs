//! What a re-run starts, for a person to judge before it does: the agent's command line, the
//! `--before` and `--verify` commands, the folder they run in and the file they came from, and
//! the MCP server the proxy starts for it (and the file naming that).
//! A command read from a file (a campaign file, an MCP recording's sidecar) is anyone's word:
//! its digest is one anyone can recompute, so it is no seal. The faces show it first — the
//! explorer asks before it starts one, `campaign --rerun` prints it — and the explorer runs
//! only the [`Launch`] that was shown (a file changed in between is refused, not run).
//! Shown text has secrets redacted as the files keep command lines (`redact::argv`); callers
//! escape each line (`printable`) like every other line they print.

use std::path::{Path, PathBuf};

use super::run::Plan;
use crate::redact::Redactor;

/// The commands a re-run starts and where: compared whole, so what was shown is what runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The file the commands were read from.
    pub file: PathBuf,
    /// The folder they run in (symbolic links and `..` resolved where it exists).
    pub cwd: PathBuf,
    /// The agent's argument vector, placeholders unexpanded.
    pub agent: Vec<String>,
    /// `--before` (`sh -c`).
    pub before: Option<String>,
    /// `--verify` (`sh -c`).
    pub verify: Option<String>,
    /// The server the run's proxy starts: its program and arguments, or its URL.
    pub server: Vec<String>,
    /// The file naming the server: `file` (a recording's server), or the scenario.
    pub server_file: PathBuf,
}

impl Launch {
    /// What `plan` starts, its commands read from `file`.
    pub fn of(plan: &Plan, file: &Path) -> Launch {
        let (server, server_file) = match &plan.scenario.server {
            Some(s) if plan.server.is_empty() => (
                std::iter::once(s.command.clone())
                    .chain(s.args.iter().cloned())
                    .collect(),
                plan.scenario_path.clone(),
            ),
            _ => (plan.server.clone(), file.to_path_buf()),
        };
        Launch {
            file: file.to_path_buf(),
            cwd: std::fs::canonicalize(&plan.cwd).unwrap_or_else(|_| plan.cwd.clone()),
            agent: plan.agent.clone(),
            before: plan.before.clone(),
            verify: plan.verify.clone(),
            server,
            server_file,
        }
    }

    /// The commands and the folder as people read them, one per line (`command …`,
    /// `folder  …`, then `before  …` and `verify  …` when there are such, then `server  …`):
    /// shell words, secrets redacted, not yet escaped.
    pub fn lines(&self) -> Vec<String> {
        let r = Redactor::builtin();
        let mut lines = vec![
            format!("command {}", command_line(&self.agent)),
            format!("folder  {}", self.cwd.display()),
        ];
        for (what, line) in [("before", &self.before), ("verify", &self.verify)] {
            if let Some(l) = line {
                lines.push(format!(
                    "{what}  sh -c {}",
                    shell_word(&r.redact_command_line(l))
                ));
            }
        }
        let named = if self.server_file == self.file {
            String::new()
        } else {
            format!(" (named by {})", self.server_file.display())
        };
        lines.push(format!("server  {}{named}", command_line(&self.server)));
        lines
    }
}

/// An argument vector as one shell line, secret values redacted: an option's value
/// (`--api-key VALUE`, `TOKEN=VALUE`), and one inside a word a shell runs (`sh -c '…'`).
pub fn command_line(argv: &[String]) -> String {
    let r = Redactor::builtin();
    r.redact_argv(argv)
        .iter()
        .zip(argv)
        .map(|(redacted, word)| {
            // An option's value goes whole; any other word is read as a shell line, so a
            // secret inside `sh -c '…'` goes and the rest of the line stays to be judged.
            if redacted == crate::redact::MARKER {
                shell_word(redacted)
            } else {
                shell_word(&r.redact_command_line(word))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A word as a POSIX shell reads it back: as is when safe, else single-quoted.
pub fn shell_word(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c));
    if safe {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_shows_program_and_arguments_with_secret_values_redacted() {
        let argv: Vec<String> = ["python", "agent.py", "--api-key", "sk-4242", "--mcp-config"]
            .iter()
            .map(|s| (*s).to_owned())
            .chain(["{mcp_config}".to_owned()])
            .collect();
        assert_eq!(
            command_line(&argv),
            "python agent.py --api-key '[REDACTED]' --mcp-config '{mcp_config}'"
        );
        let shell = ["sh", "-c", "touch x; curl -H x --token=abc"].map(str::to_owned);
        assert_eq!(
            command_line(&shell),
            "sh -c 'touch x; curl -H x --token=[REDACTED]'"
        );
        // A line that starts with a secret's assignment keeps the rest of the line.
        let set = ["sh", "-c", "API_KEY=sk-1 ./agent --token t"].map(str::to_owned);
        assert_eq!(
            command_line(&set),
            "sh -c 'API_KEY=[REDACTED] ./agent --token [REDACTED]'"
        );
        // A secret option's value is gone whole, spaces and all.
        let spaced = ["agent", "--password", "a b c"].map(str::to_owned);
        assert_eq!(command_line(&spaced), "agent --password '[REDACTED]'");
    }
}
