//! Redaction of command lines: the agent, `--before` and `--verify` a campaign keeps, and the
//! server command a recording names. An argument `NAME=value`, `--name=value`, or an option
//! `--name` followed by its value, has the value replaced by `[REDACTED]` when the name holds
//! a secret word: it is a secret key, or one of its `_`-separated parts (after lower-casing and
//! reading `-` as `_`) begins, ends or is a run of parts that is one (`GITHUB_TOKEN`,
//! `--db-password`, `AWS_SECRET_ACCESS_KEY`, `X_API_KEY`).

use super::{MARKER, Redactor};
use crate::json::Text;

impl Redactor {
    /// Whether a command-line name (`--api-key`, `GITHUB_TOKEN`) names a secret.
    pub fn is_secret_name(&self, name: &str) -> bool {
        let name = name.trim_start_matches('-');
        if name.is_empty() {
            return false;
        }
        let parts: Vec<String> = super::normalise_key(name)
            .split('_')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect();
        // Every run of consecutive parts: `aws_secret_access_key` holds `secret`, and
        // `x_api_key` holds `api_key`.
        (0..parts.len()).any(|from| {
            (from + 1..=parts.len())
                .any(|to| self.is_secret_key(&Text::from(parts[from..to].join("_"))))
        })
    }

    /// An argument vector with the value of every secret-named option replaced.
    pub fn redact_argv(&self, argv: &[String]) -> Vec<String> {
        let mut out = Vec::with_capacity(argv.len());
        let mut next_is_secret = false;
        for arg in argv {
            if std::mem::take(&mut next_is_secret) && !arg.starts_with('-') {
                out.push(MARKER.to_owned());
                continue;
            }
            match arg.split_once('=') {
                Some((name, _)) if self.is_secret_name(name) => {
                    out.push(format!("{name}={MARKER}"));
                }
                None if arg.starts_with('-') && self.is_secret_name(arg) => {
                    out.push(arg.clone());
                    next_is_secret = true;
                }
                _ => out.push(arg.clone()),
            }
        }
        out
    }

    /// A shell command line with the same rule applied to its words (split at spaces, a
    /// value in quotes taken to its closing quote); the spacing between words is kept.
    pub fn redact_command_line(&self, line: &str) -> String {
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        let mut next_is_secret = false;
        while !rest.is_empty() {
            let space = rest.len() - rest.trim_start().len();
            out.push_str(&rest[..space]);
            rest = &rest[space..];
            if rest.is_empty() {
                break;
            }
            let end = word_end(rest);
            let word = &rest[..end];
            rest = &rest[end..];
            if std::mem::take(&mut next_is_secret) && !word.starts_with('-') {
                out.push_str(MARKER);
                continue;
            }
            match word.split_once('=') {
                Some((name, _)) if self.is_secret_name(name.trim_start_matches(['"', '\''])) => {
                    out.push_str(name);
                    out.push('=');
                    out.push_str(MARKER);
                }
                None if word.starts_with('-') && self.is_secret_name(word) => {
                    out.push_str(word);
                    next_is_secret = true;
                }
                _ => out.push_str(word),
            }
        }
        out
    }
}

/// Where the shell word at the start of `s` ends: at a space outside quotes.
fn word_end(s: &str) -> usize {
    let mut quote = None;
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => return i,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (Some('\''), _) => {}
            (_, '\\') => {
                chars.next();
            }
            _ => {}
        }
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        let w: Vec<String> = words.iter().map(|s| (*s).to_owned()).collect();
        Redactor::builtin().redact_argv(&w)
    }

    #[test]
    fn names_that_hold_a_secret_word_are_secret() {
        let r = Redactor::builtin();
        for name in [
            "--api-key",
            "GITHUB_TOKEN",
            "--db-password",
            "AWS_SECRET_ACCESS_KEY",
            "X_API_KEY",
            "-token",
            "Session-Token",
        ] {
            assert!(r.is_secret_name(name), "{name}");
        }
        for name in [
            "--verbose",
            "PATH",
            "--tokenizer",
            "--record",
            "--",
            "KEYBOARD",
        ] {
            assert!(!r.is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn values_of_secret_options_are_replaced_in_argv_and_command_lines() {
        assert_eq!(
            argv(&[
                "env",
                "GITHUB_TOKEN=ghp_1",
                "srv",
                "--api-key",
                "k1",
                "--token=t1",
                "--x",
                "y"
            ]),
            [
                "env",
                "GITHUB_TOKEN=[REDACTED]",
                "srv",
                "--api-key",
                "[REDACTED]",
                "--token=[REDACTED]",
                "--x",
                "y"
            ]
        );
        // A secret option followed by another option has no value to hide.
        assert_eq!(argv(&["--token", "--verbose"]), ["--token", "--verbose"]);
        let r = Redactor::builtin();
        assert_eq!(
            r.redact_command_line(
                r#"PASSWORD=hunter2 check  --api-key "a b c" --token 't 1' && test -f "{record}""#
            ),
            r#"PASSWORD=[REDACTED] check  --api-key [REDACTED] --token [REDACTED] && test -f "{record}""#
        );
        assert_eq!(
            r.redact_command_line("curl --api-key=abc"),
            "curl --api-key=[REDACTED]"
        );
        assert_eq!(r.redact_command_line(""), "");
        assert_eq!(r.redact_command_line("  a  "), "  a  ");
    }
}
