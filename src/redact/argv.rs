//! Redaction of command lines: the agent, `--before` and `--verify` a campaign keeps, the
//! agent a recording names (`mcp --agent-cmd`) and the server command it ran. Each argument
//! (or shell word) is read on its own, with what the one before it asked:
//! - `NAME=value`, `--name=value`, or an option `--name` followed by its value, has the value
//!   replaced by `[REDACTED]` when the name holds a secret word: it is a secret key, or one of
//!   its `_`-separated parts (after lower-casing and reading `-` as `_`) begins, ends or is a
//!   run of parts that is one (`GITHUB_TOKEN`, `--db-password`, `AWS_SECRET_ACCESS_KEY`,
//!   `X_API_KEY`), or its last part is `pass`, `passphrase`, or `key` after another part
//!   (`--pass`, `--license-key`);
//! - the value of `-u`/`--user` (curl's) when it holds a `:` (`user:password`);
//! - a header `Name: value` (`-H`'s, or an argument of its own) whose name is a credential
//!   (a secret name as above, or one ending in `auth`): `Authorization: [REDACTED]`;
//! - anywhere in an argument, a URL's user part (`https://[REDACTED]@host`) and tokens of a
//!   known shape (`sk-…`, `ghp_…` and GitHub's other prefixes, Slack's `xoxb-…`).
//!
//! A shell line keeps its spacing and its operators (`;`, `&&`, `||`, `|`, redirections): a
//! word ends at them, outside quotes.

use super::{MARKER, Redactor};
use crate::json::Text;

/// The last parts of a name that make it a secret besides the secret keys; `key` only after
/// another part (`--key FILE` is often a path).
const SECRET_ENDINGS: [&str; 2] = ["pass", "passphrase"];

/// What an option asks of the word after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Asked {
    Nothing,
    /// Its value is a secret.
    Secret,
    /// Its value is a secret when it holds a `:` (`-u user:password`).
    UserPassword,
}

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
        let ending = match parts.as_slice() {
            [.., last] if SECRET_ENDINGS.contains(&last.as_str()) => true,
            [_, .., last] => last == "key",
            _ => false,
        };
        // Every run of consecutive parts: `aws_secret_access_key` holds `secret`, and
        // `x_api_key` holds `api_key`.
        ending
            || (0..parts.len()).any(|from| {
                (from + 1..=parts.len())
                    .any(|to| self.is_secret_key(&Text::from(parts[from..to].join("_"))))
            })
    }

    /// An argument vector with every secret in it replaced. An argument that holds spaces or
    /// shell operators and is no option's value nor a header is read as a shell command line
    /// (`sh -c 'export TOKEN=x; agent'`).
    pub fn redact_argv(&self, argv: &[String]) -> Vec<String> {
        let mut asked = Asked::Nothing;
        argv.iter()
            .map(|arg| {
                let script = asked == Asked::Nothing
                    && arg.contains(|c: char| c.is_whitespace() || OPERATORS.contains(&c))
                    && self.header_in(arg).is_none();
                match script {
                    true => self.redact_command_line(arg),
                    false => self.redact_word(arg, &mut asked),
                }
            })
            .collect()
    }

    /// A shell command line with the same rules applied to its words (split at spaces and
    /// operators, a value in quotes taken to its closing quote); what lies between words
    /// (spacing, `;`, `&&`, `|`, newlines) is kept as it was.
    pub fn redact_command_line(&self, line: &str) -> String {
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        let mut asked = Asked::Nothing;
        while !rest.is_empty() {
            let between = rest
                .find(|c: char| !c.is_whitespace() && !OPERATORS.contains(&c))
                .unwrap_or(rest.len());
            if rest[..between].contains(OPERATORS) {
                asked = Asked::Nothing;
            }
            out.push_str(&rest[..between]);
            rest = &rest[between..];
            if rest.is_empty() {
                break;
            }
            let end = word_end(rest);
            out.push_str(&self.redact_word(&rest[..end], &mut asked));
            rest = &rest[end..];
        }
        out
    }

    /// One argument (or shell word, quotes and all) redacted; `asked` is what the word before
    /// asked of it, and becomes what it asks of the next.
    fn redact_word(&self, word: &str, asked: &mut Asked) -> String {
        let option = word.starts_with('-');
        match std::mem::replace(asked, Asked::Nothing) {
            Asked::Secret if !option => return MARKER.to_owned(),
            Asked::UserPassword if !option && word.contains(':') => return MARKER.to_owned(),
            _ => {}
        }
        if let Some((name, value)) = word.split_once('=') {
            let bare = name.trim_start_matches(['"', '\'']);
            if self.is_secret_name(bare) || (is_user_option(bare) && value.contains(':')) {
                return format!("{name}={MARKER}");
            }
        } else if option && self.is_secret_name(word) {
            *asked = Asked::Secret;
            return word.to_owned();
        } else if is_user_option(word) {
            *asked = Asked::UserPassword;
            return word.to_owned();
        }
        match self.header_in(word) {
            Some(header) => header,
            None => super::shapes::redacted(word),
        }
    }

    /// A header argument with a credential's value hidden: `Name: value` (`-H`'s), or an
    /// option's `--header=Name: value`.
    fn header_in(&self, word: &str) -> Option<String> {
        if let Some(header) = self.credential_header(word) {
            return Some(header);
        }
        let (option, value) = word.split_once('=')?;
        let header = self.credential_header(value)?;
        Some(format!("{option}={header}"))
    }

    /// `Name: value` (in quotes or not) with its value redacted, when the name is a
    /// credential's: a secret name, or one ending in `auth` (`X-Upstream-Auth`).
    fn credential_header(&self, text: &str) -> Option<String> {
        let quote = text.chars().next().filter(|c| matches!(c, '"' | '\''));
        let inner = quote.map_or(text, |q| &text[q.len_utf8()..]);
        let (name, _) = inner.split_once(':')?;
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        let lower = name.to_ascii_lowercase();
        let credential = self.is_secret_name(name) || lower.ends_with("auth");
        if !valid || !credential {
            return None;
        }
        let closing = quote.filter(|q| inner.ends_with(*q) && inner.len() > name.len() + 1);
        let mut out = String::new();
        if let Some(q) = quote {
            out.push(q);
        }
        out.push_str(name);
        out.push_str(": ");
        out.push_str(MARKER);
        if let Some(q) = closing {
            out.push(q);
        }
        Some(out)
    }
}

/// What ends a shell word outside quotes besides spacing: the shell's operators.
const OPERATORS: &[char] = &[';', '&', '|', '(', ')', '<', '>'];

/// Whether an option is curl's user (`-u`, `--user`), whose value may be `user:password`.
fn is_user_option(word: &str) -> bool {
    matches!(word, "-u" | "--user")
}

/// Where the shell word at the start of `s` ends: at a space or an operator outside quotes.
fn word_end(s: &str) -> usize {
    let mut quote = None;
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() || OPERATORS.contains(&c) => return i,
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

    #[test]
    fn a_urls_user_part_is_hidden_wherever_it_stands() {
        assert_eq!(
            argv(&[
                "git",
                "clone",
                "https://bob:pw@host/r.git",
                "--url=http://ops@h:8080/mcp",
                "DATABASE_URL=postgres://u:p@db:5432/x",
                "http://h:8080/users/@me",
            ]),
            [
                "git",
                "clone",
                "https://[REDACTED]@host/r.git",
                "--url=http://[REDACTED]@h:8080/mcp",
                "DATABASE_URL=postgres://[REDACTED]@db:5432/x",
                "http://h:8080/users/@me",
            ]
        );
        assert_eq!(
            Redactor::builtin().redact_command_line("curl 'https://bob:pw@host/x' -o out"),
            "curl 'https://[REDACTED]@host/x' -o out"
        );
    }

    #[test]
    fn curls_user_and_password_are_hidden_and_pythons_unbuffered_flag_is_not() {
        assert_eq!(
            argv(&["curl", "-u", "bob:pw", "--user=bob:pw", "https://h"]),
            ["curl", "-u", "[REDACTED]", "--user=[REDACTED]", "https://h"]
        );
        // No `:`, no password: `python -u agent.py`, `curl -u bob` (which asks for it).
        assert_eq!(
            argv(&["python", "-u", "agent.py"]),
            ["python", "-u", "agent.py"]
        );
        assert_eq!(argv(&["curl", "-u", "bob"]), ["curl", "-u", "bob"]);
        assert_eq!(
            Redactor::builtin().redact_command_line("curl -u 'bob:p w' https://h"),
            "curl -u [REDACTED] https://h"
        );
    }

    #[test]
    fn passes_keys_tokens_and_secrets_are_hidden_in_both_forms() {
        assert_eq!(
            argv(&[
                "--pass=p1",
                "--password",
                "p2",
                "--license-key",
                "k1",
                "--x-key=k2",
                "--x-token=t1",
                "--x-token",
                "t2",
                "--x-secret",
                "s1",
                "SSH_PASSPHRASE=s2",
            ]),
            [
                "--pass=[REDACTED]",
                "--password",
                "[REDACTED]",
                "--license-key",
                "[REDACTED]",
                "--x-key=[REDACTED]",
                "--x-token=[REDACTED]",
                "--x-token",
                "[REDACTED]",
                "--x-secret",
                "[REDACTED]",
                "SSH_PASSPHRASE=[REDACTED]",
            ]
        );
        // `--key FILE` alone is most often a path; a name that only holds `pass` is no secret.
        assert_eq!(
            argv(&["--key", "client.pem", "--pass-through", "x"]),
            ["--key", "client.pem", "--pass-through", "x"]
        );
    }

    #[test]
    fn tokens_of_known_shapes_are_hidden_anywhere_in_an_argument() {
        assert_eq!(
            argv(&[
                "OPENAI=sk-proj-Ab12Cd34Ef56Gh78Ij90",
                "--prompt=use sk-ant-api03-AbCdEf0123456789xyz here",
                "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
                "x:xoxb-1234567890-abcdefghij",
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            ]),
            [
                "OPENAI=[REDACTED]",
                "--prompt=use [REDACTED] here",
                "[REDACTED]",
                "x:[REDACTED]",
                "[REDACTED]",
            ]
        );
        // Names, not keys: inside a word, without a digit, or too short.
        for kept in [
            "task-runner-0123456789abcdef",
            "sk-learn-preprocessing-pipeline",
            "sk-1",
            "xoxb-",
        ] {
            assert_eq!(argv(&[kept]), [kept]);
        }
    }

    #[test]
    fn headers_that_carry_credentials_keep_their_name_not_their_value() {
        assert_eq!(
            argv(&[
                "curl",
                "-H",
                "Authorization: Bearer abc",
                "-H",
                "Accept: application/json",
                "--header=X-Api-Key: k",
                "X-Upstream-Auth:t",
            ]),
            [
                "curl",
                "-H",
                "Authorization: [REDACTED]",
                "-H",
                "Accept: application/json",
                "--header=X-Api-Key: [REDACTED]",
                "X-Upstream-Auth: [REDACTED]",
            ]
        );
        assert_eq!(
            Redactor::builtin().redact_command_line(
                r#"curl -H "Authorization: Bearer a b" -H 'Cookie: s=1' -H "X-Trace: 7" https://h"#
            ),
            r#"curl -H "Authorization: [REDACTED]" -H 'Cookie: [REDACTED]' -H "X-Trace: 7" https://h"#
        );
    }

    #[test]
    fn a_script_given_as_one_argument_is_read_as_a_command_line() {
        assert_eq!(
            argv(&[
                "sh",
                "-c",
                "export TOKEN=x; python a.py --api-key k | tee log",
                "--prompt",
                "a b",
            ]),
            [
                "sh",
                "-c",
                "export TOKEN=[REDACTED]; python a.py --api-key [REDACTED] | tee log",
                "--prompt",
                "a b",
            ]
        );
        // An option's value with spaces is still the value: hidden whole.
        assert_eq!(argv(&["--api-key", "a b"]), ["--api-key", "[REDACTED]"]);
    }

    #[test]
    fn shell_operators_between_words_are_kept() {
        let r = Redactor::builtin();
        for (line, kept) in [
            ("export TOKEN=x; cmd", "export TOKEN=[REDACTED]; cmd"),
            ("TOKEN=x&& cmd", "TOKEN=[REDACTED]&& cmd"),
            ("TOKEN=x || cmd", "TOKEN=[REDACTED] || cmd"),
            ("--token t|tee log", "--token [REDACTED]|tee log"),
            ("TOKEN=x\ncmd --v", "TOKEN=[REDACTED]\ncmd --v"),
            ("TOKEN=x;\ncmd", "TOKEN=[REDACTED];\ncmd"),
            ("(TOKEN=x)>out", "(TOKEN=[REDACTED])>out"),
            // An operator ends what an option asked: the next command is not its value.
            ("run --token;cmd", "run --token;cmd"),
            // Quoted, an operator is the value's.
            ("--token 'a;b' c", "--token [REDACTED] c"),
        ] {
            assert_eq!(r.redact_command_line(line), kept, "{line}");
        }
    }
}
