//! The interactive approver as a modal: when an executor scenario asks a person before a
//! side-effecting call, the explorer shows the question (`Approve add_label(issue_id=92,
//! label='severity:S1')? [y/N]`) and waits for one key. Only `y` approves; any other key, a
//! termination signal or a closed input answers no — the safe default. Keys typed before a
//! question was on screen are thrown away: an answer needs a key pressed while it is shown.

use std::sync::mpsc::Receiver;

use crossterm::event::{Event as TermEvent, KeyCode, KeyEventKind};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Widget, Wrap};

use super::runtime::Event;
use super::theme::Theme;
use super::view::pane;
use crate::executor::approval::Prompt;

/// Asks questions in the terminal, one at a time.
pub struct TerminalPrompt<'a, B: Backend> {
    terminal: &'a mut Terminal<B>,
    events: &'a Receiver<Event>,
    theme: Theme,
    asked: usize,
    shown: Option<Box<dyn FnMut(usize) + 'a>>,
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
        }
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
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(pane(format!(" Approval {n} "), true, theme))
        .render(r, buf);
}

impl<B: Backend> Prompt for TerminalPrompt<'_, B> {
    fn ask(&mut self, question: &str) -> Option<String> {
        self.asked += 1;
        let n = self.asked;
        let theme = self.theme;
        let mut first = true;
        loop {
            let drawn = self
                .terminal
                .draw(|f| render(question, n, f.area(), f.buffer_mut(), &theme));
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
