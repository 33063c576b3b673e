//! Copying: `y` puts the selected call on the terminal's clipboard as JSON, `Y` the command
//! line that reproduces what is shown (`run` for a scenario with the current settings, for an
//! MCP run the commands [`super::reproduce`] offers, `check` for a trace). The runtime sends it as OSC 52; the text is also
//! shown, so it can be copied by hand where the terminal ignores OSC 52.

use super::action::Command;
use super::app::{App, Mode};
use crate::document::DocKind;
use crate::json::pretty;

pub use crate::agent::launch::shell_word;

fn command_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

impl App {
    pub(super) fn show_and_copy(&mut self, title: String, text: String) -> Vec<Command> {
        self.info(format!(
            "copied {title} to the clipboard (OSC 52; shown here too, Esc closes)"
        ));
        self.mode = Mode::Show(format!("{title} · copied"), text.clone());
        vec![Command::Copy(text)]
    }

    /// `y`: the selected call as JSON.
    pub(super) fn copy_call(&mut self) -> Vec<Command> {
        let Some(call) = self.selected() else {
            self.info("no call selected".into());
            return Vec::new();
        };
        let title = format!("call #{} as JSON", call.id);
        let text = pretty(&call.to_value());
        self.show_and_copy(title, text)
    }

    /// `Y`: the command that reproduces what is shown.
    pub(super) fn copy_command(&mut self) -> Vec<Command> {
        let file = self.doc.path.as_ref().map_or_else(
            || "cassettes/incident.json".to_owned(),
            |p| p.display().to_string(),
        );
        let program = crate::exit::PROGRAM.to_owned();
        let mut lines = Vec::new();
        if let Some(m) = self.session() {
            // The run's own recording, judged, served and recorded anew beside it.
            lines = self.mcp_commands(m);
        } else if let Some(f) = self.editor.as_ref().and_then(|e| e.lab())
            && (self.doc.kind == DocKind::Scenario || self.save_path.is_some())
        {
            // The shown run's policy: the command reproduces this run.
            let policy = self
                .tab()
                .policy
                .map_or_else(|| f.policy.as_str().to_owned(), |p| p.as_str().to_owned());
            let mut words = vec![
                program,
                "run".into(),
                self.save_path
                    .as_ref()
                    .map_or(file, |p| p.display().to_string()),
                "--policy".into(),
                policy,
                "--seed".into(),
                f.config.seed.to_string(),
                "--max-calls".into(),
                f.config.max_calls.to_string(),
            ];
            if let Some(p) = f.config.probability {
                words.extend(["--probability".into(), crate::json::float::py_repr(p)]);
            }
            lines.push(command_line(&words));
            if self.editor.as_ref().is_some_and(|e| e.dirty()) {
                lines.push("# the rules have unsaved edits: save them first (w)".into());
            }
        } else if self.doc.orbit.is_some() {
            // The approvals given here, in the order they were asked.
            let mut words = vec![program, "run".into(), file];
            let approvals = &self.tab().approvals;
            if !approvals.is_empty() {
                let answers: Vec<&str> = approvals
                    .iter()
                    .map(|(_, a)| if *a == Some(true) { "y" } else { "n" })
                    .collect();
                words.extend(["--answers".into(), answers.join(",")]);
            }
            lines.push(command_line(&words));
        } else {
            let tab = self.tab();
            lines.push(command_line(&[
                program.clone(),
                "check".into(),
                file.clone(),
                "--max-calls".into(),
                tab.max_calls.to_string(),
            ]));
            if let Some(p) = tab.policy {
                let mut words = vec![
                    program,
                    "replay".into(),
                    file,
                    "--policy".into(),
                    p.as_str().into(),
                ];
                if self.doc.runs.len() > 1 {
                    words.extend(["--run".into(), (self.run + 1).to_string()]);
                }
                lines.push(command_line(&words));
            }
        }
        self.show_and_copy("the command that reproduces this".into(), lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_read_back() {
        assert_eq!(
            shell_word("scenarios/lost_ack.json"),
            "scenarios/lost_ack.json"
        );
        assert_eq!(shell_word("my file.json"), "'my file.json'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
