//! Shaping text for panes: the one escaping every pane's text goes through ([`escaped`]:
//! what came from a file never acts on the terminal), wrapping that keeps continuation lines
//! indented under their first line (so wrapped details stay readable), search highlights
//! inside styled lines, and a text field with its cursor.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use super::super::prompt::TextField;

/// The lines with every character that could act on a terminal shown escaped, as the
/// timeline shows them (`\x1b`, `\u202e`: [`crate::printable::printable`]), whatever pane
/// they are for: ratatui would drop a control character silently, hiding what a file holds.
/// Text escaped already comes back as it is.
pub fn escaped(lines: Vec<Line<'static>>) -> Vec<Line<'static>> {
    lines
        .into_iter()
        .map(|mut line| {
            for span in &mut line.spans {
                if let std::borrow::Cow::Owned(e) =
                    crate::printable::printable(&span.content, usize::MAX)
                {
                    span.content = e.into();
                }
            }
            line
        })
        .collect()
}

/// Wraps each line to `width` columns, breaking at spaces where it can; a continuation starts
/// under the first line's text, two columns further in. The lines are [`escaped`] first.
pub fn wrap(lines: Vec<Line<'static>>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(8);
    let mut out = Vec::with_capacity(lines.len());
    for line in escaped(lines) {
        if line.width() <= width {
            out.push(line);
            continue;
        }
        let cells: Vec<(char, Style)> = line
            .spans
            .iter()
            .flat_map(|s| {
                let style = line.style.patch(s.style);
                s.content.chars().map(move |c| (c, style))
            })
            .collect();
        let lead = cells.iter().take_while(|(c, _)| *c == ' ').count();
        let indent = (lead + 2).min(width / 2);
        let mut start = 0;
        let mut first = true;
        while start < cells.len() {
            let room = if first { width } else { width - indent };
            // The longest piece that fits, ending after a space when possible.
            let mut used = 0;
            let mut end = start;
            let mut last_space = None;
            while end < cells.len() {
                let w = cells[end].0.width().unwrap_or(0);
                if used + w > room {
                    break;
                }
                used += w;
                if cells[end].0 == ' ' {
                    last_space = Some(end + 1);
                }
                end += 1;
            }
            if end < cells.len()
                && let Some(s) = last_space.filter(|s| *s > start + room / 3)
            {
                end = s;
            }
            if end == start {
                end = start + 1; // a character wider than the room: show it anyway
            }
            let mut spans: Vec<Span<'static>> = Vec::new();
            if !first {
                spans.push(Span::raw(" ".repeat(indent)));
            }
            let mut piece = String::new();
            let mut style = cells[start].1;
            for &(c, s) in &cells[start..end] {
                if s != style && !piece.is_empty() {
                    spans.push(Span::styled(std::mem::take(&mut piece), style));
                }
                style = s;
                piece.push(c);
            }
            if !piece.is_empty() {
                spans.push(Span::styled(piece, style));
            }
            out.push(Line::from(spans));
            start = end;
            first = false;
        }
    }
    out
}

/// `line` with every case-insensitive occurrence of `term` patched with `mark`.
pub fn highlight(line: Line<'static>, term: &str, mark: Style) -> Line<'static> {
    if term.is_empty() {
        return line;
    }
    let needle: Vec<char> = term.to_lowercase().chars().collect();
    let mut spans = Vec::new();
    for span in line.spans {
        let chars: Vec<char> = span.content.chars().collect();
        let lower: Vec<char> = chars
            .iter()
            .map(|c| c.to_lowercase().next().unwrap_or(*c))
            .collect();
        let mut i = 0;
        let mut piece_start = 0;
        while i + needle.len() <= lower.len() {
            if lower[i..i + needle.len()] == needle[..] {
                if piece_start < i {
                    spans.push(Span::styled(
                        chars[piece_start..i].iter().collect::<String>(),
                        span.style,
                    ));
                }
                spans.push(Span::styled(
                    chars[i..i + needle.len()].iter().collect::<String>(),
                    span.style.patch(mark),
                ));
                i += needle.len();
                piece_start = i;
            } else {
                i += 1;
            }
        }
        if piece_start < chars.len() {
            spans.push(Span::styled(
                chars[piece_start..].iter().collect::<String>(),
                span.style,
            ));
        }
    }
    Line::from(spans).style(line.style)
}

/// A text field as spans fitted to `width` columns: the visible part of the text with the
/// cursor's cell reversed.
pub fn field_spans(field: &TextField, width: usize, cursor: Style) -> Vec<Span<'static>> {
    let width = width.max(2);
    let scroll = field.scroll(width.saturating_sub(1));
    let chars: Vec<char> = field.value().chars().collect();
    let at = field.cursor().saturating_sub(scroll);
    let shown: Vec<char> = chars.iter().copied().skip(scroll).collect();
    let before: String = shown.iter().take(at).collect();
    let under: String = shown
        .get(at)
        .map_or_else(|| " ".to_owned(), |c| c.to_string());
    let after: String = shown.iter().skip(at + 1).collect();
    vec![
        Span::raw(before),
        Span::styled(under, cursor),
        Span::raw(after),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_lines_keep_an_indent() {
        let line = Line::raw("  note     the server answered; its answer was dropped (injected)");
        let out = wrap(vec![line], 30);
        assert!(out.len() > 1);
        for l in &out[1..] {
            let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            assert!(text.starts_with("    "), "{text:?}");
        }
        assert!(out.iter().all(|l| l.width() <= 30));
    }

    #[test]
    fn highlights_every_match() {
        let l = highlight(
            Line::raw("order-1729 and ORDER-1729"),
            "order-1729",
            Style::new().bold(),
        );
        assert_eq!(l.spans.len(), 3);
        assert_eq!(l.spans[2].content, "ORDER-1729");
    }
}
