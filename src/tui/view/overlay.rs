//! Boxes drawn over the screen: the scenario's story (`t`: title, code, what happens and what
//! to learn) and a shown text (`y`: the copied call or command, so it can be read and copied by
//! hand when the terminal has no clipboard).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Widget, Wrap};

use super::super::app::App;
use super::super::theme::Theme;
use super::{fit, pane};
use crate::printable;
use crate::scenario_fields::Story;

/// The story of what is open: (title, lines).
fn story_text(app: &App) -> (String, Vec<(String, String)>) {
    let told = |story: &Story| {
        (
            story.title.clone(),
            vec![
                (
                    "incident".to_owned(),
                    format!("{} · {}", story.code, story.category),
                ),
                ("what happens".to_owned(), story.description.clone()),
                ("the lesson".to_owned(), story.lesson.clone()),
            ],
        )
    };
    if let Some(e) = &app.editor {
        return told(e.story());
    }
    if let Some(s) = &app.doc.orbit {
        return told(&s.story);
    }
    if let Some(m) = app.session() {
        let name = crate::mcp::session::McpSession::peer_name;
        return (
            "An MCP session".to_owned(),
            vec![
                ("client".to_owned(), name(&m.client_info)),
                ("server".to_owned(), name(&m.server_info)),
                ("command".to_owned(), m.server_command.join(" ")),
                (
                    "scenario".to_owned(),
                    m.scenario
                        .clone()
                        .unwrap_or_else(|| "none (no faults injected)".into()),
                ),
                (
                    "the lesson".to_owned(),
                    "what the agent received is in Details; what committed is in Effects"
                        .to_owned(),
                ),
            ],
        );
    }
    (
        "A recording".to_owned(),
        vec![(
            "story".to_owned(),
            "this file holds calls, not a scenario: its story is in the timeline".to_owned(),
        )],
    )
}

/// The text box in the middle of `area`, `w`×`h` at most.
fn boxed(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

fn draw(title: String, lines: Vec<Line<'static>>, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let width = area.width.saturating_sub(4).clamp(20, 100);
    let inner = width.saturating_sub(2) as usize;
    let wrapped = super::text::wrap(lines, inner);
    let r = boxed(area, width, wrapped.len() as u16 + 2);
    Clear.render(r, buf);
    Paragraph::new(wrapped)
        .wrap(Wrap { trim: false })
        .block(pane(fit(title, r), true, theme))
        .render(r, buf);
}

/// Draws the scenario's story (`t` toggles it).
pub fn story(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let (title, rows) = story_text(app);
    let mut lines = Vec::new();
    for (k, v) in rows {
        lines.push(Line::styled(format!(" {k}"), theme.title));
        lines.push(Line::raw(format!("   {}", printable::line(&v))));
    }
    lines.push(Line::styled(" t or Esc closes this", theme.dim));
    draw(
        format!(" {} ", printable::line(&title)),
        lines,
        area,
        buf,
        theme,
    );
}

/// Draws a shown text with its title until a key is pressed.
pub fn show(title: &str, text: &str, area: Rect, buf: &mut Buffer, theme: &Theme) {
    show_with(title, text, "any key closes this", area, buf, theme);
}

/// [`show`] with another last line (what the keys do).
pub fn show_with(
    title: &str,
    text: &str,
    footer: &str,
    area: Rect,
    buf: &mut Buffer,
    theme: &Theme,
) {
    let mut lines: Vec<Line<'static>> = text
        .lines()
        .map(|l| Line::raw(format!(" {}", printable::line(l))))
        .collect();
    lines.push(Line::styled(format!(" {footer}"), theme.dim));
    draw(format!(" {title} "), lines, area, buf, theme);
}
