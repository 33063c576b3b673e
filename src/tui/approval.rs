//! The interactive approver as a modal: when an executor scenario asks a person before a
//! side-effecting call, the explorer shows the question (`Approve add_label(issue_id=92,
//! label='severity:S1')? [y/N]`) and waits for one key. Only `y` approves; any other key, a
//! termination signal or a closed input answers no — the safe default. Keys typed before a
//! question was on screen are thrown away: an answer needs a key pressed while it is shown.
//! The modal is drawn over the explorer, so the run it belongs to stays in view; when the file
//! runs again (a change on disk, `r`), answers already given for the identical call are kept
//! ([`Remembering`]) and only new questions are asked.

use std::sync::mpsc::Receiver;

use crossterm::event::{Event as TermEvent, KeyCode, KeyEventKind};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Widget, Wrap};

use super::app::App;
use super::event::Event;
use super::theme::Theme;
use super::view::pane;
use crate::executor::approval::{Prompt, approves};

/// Asks questions in the terminal, one at a time.
pub struct TerminalPrompt<'a, B: Backend> {
    terminal: &'a mut Terminal<B>,
    events: &'a Receiver<Event>,
    theme: Theme,
    asked: usize,
    shown: Option<Box<dyn FnMut(usize) + 'a>>,
    behind: Option<&'a App>,
}

impl<'a, B: Backend> TerminalPrompt<'a, B> {
    /// A prompt drawing on `terminal` and reading keys from `events`.
    pub fn new(terminal: &'a mut Terminal<B>, events: &'a Receiver<Event>, theme: Theme) -> Self {
        TerminalPrompt {
            terminal,
            events,
            theme,
            asked: 0,
            shown: None,
            behind: None,
        }
    }

    /// Draws `app` behind the modal.
    pub fn behind(mut self, app: &'a App) -> Self {
        self.behind = Some(app);
        self
    }

    /// Calls `f` with the question's number each time a question is first on screen and the
    /// keys typed before it were discarded (tests answer from here).
    pub fn on_shown(mut self, f: impl FnMut(usize) + 'a) -> Self {
        self.shown = Some(Box::new(f));
        self
    }
}

/// Draws the modal for `question` (the `n`-th question of the run).
pub fn render(question: &str, n: usize, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let w = 72.min(area.width);
    let h = 7.min(area.height);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    Clear.render(r, buf);
    let lines = vec![
        Line::styled("A tool with side effects wants to run:", theme.dim),
        Line::raw(question.to_owned()),
        Line::raw(""),
        Line::styled("y approves · any other key denies (the default)", theme.dim),
    ];
    Paragraph::new(super::view::text::escaped(lines))
        .wrap(Wrap { trim: false })
        .block(pane(format!(" Approval {n} "), true, theme))
        .render(r, buf);
}

impl<B: Backend> Prompt for TerminalPrompt<'_, B> {
    fn ask(&mut self, question: &str) -> Option<String> {
        self.asked += 1;
        let n = self.asked;
        let theme = self.theme;
        let behind = self.behind;
        let mut first = true;
        loop {
            let drawn = self.terminal.draw(|f| {
                if let Some(app) = behind {
                    app.render_with(f.area(), f.buffer_mut(), &theme);
                    // The app's status line would be stale under a new question: it says
                    // what is asked instead.
                    let area = f.area();
                    if area.height > 0 {
                        let row = Rect::new(area.x, area.y + area.height - 1, area.width, 1);
                        Clear.render(row, f.buffer_mut());
                        Line::styled(
                            format!("approval question {n} · y approves · any other key denies"),
                            theme.title,
                        )
                        .render(row, f.buffer_mut());
                    }
                }
                render(question, n, f.area(), f.buffer_mut(), &theme)
            });
            if drawn.is_err() {
                return Some("n".into());
            }
            if first {
                first = false;
                // Typeahead: whatever was typed before this question was visible is not an
                // answer to it.
                while let Ok(event) = self.events.try_recv() {
                    if matches!(event, Event::Terminate(_)) {
                        return Some("n".into());
                    }
                }
                if let Some(f) = self.shown.as_mut() {
                    f(n);
                }
            }
            match self.events.recv() {
                Ok(Event::Terminal(TermEvent::Key(k))) if k.kind != KeyEventKind::Release => {
                    let yes = matches!(k.code, KeyCode::Char('y' | 'Y'));
                    return Some(if yes { "y" } else { "n" }.into());
                }
                Ok(Event::Terminate(_)) | Err(_) => return Some("n".into()),
                Ok(_) => continue, // resizes and file changes: redraw and keep asking
            }
        }
    }
}

/// A prompt that answers a question asked before (the identical text: the same tool and
/// arguments) as it was answered then, and asks `inner` only new ones.
pub struct Remembering<P: Prompt> {
    inner: P,
    /// Every answer, earlier ones first (question, approved).
    pub answers: Vec<(String, bool)>,
    /// Questions asked this time.
    pub asked: usize,
    /// Questions answered from earlier answers.
    pub reused: usize,
}

impl<P: Prompt> Remembering<P> {
    /// A prompt that remembers `answers` and asks `inner` the rest.
    pub fn new(inner: P, answers: Vec<(String, bool)>) -> Self {
        Remembering {
            inner,
            answers,
            asked: 0,
            reused: 0,
        }
    }
}

impl<P: Prompt> Prompt for Remembering<P> {
    fn ask(&mut self, question: &str) -> Option<String> {
        if let Some((_, yes)) = self.answers.iter().find(|(q, _)| q == question) {
            self.reused += 1;
            return Some(if *yes { "y" } else { "n" }.into());
        }
        self.asked += 1;
        let answer = self.inner.ask(question)?;
        self.answers.push((question.to_owned(), approves(&answer)));
        Some(answer)
    }
}
