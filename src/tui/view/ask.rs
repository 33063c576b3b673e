//! What an `ask` record adds to the panes ([`crate::document::ask`]): for the selected call
//! (Details) its round and what the model said in it, the `function_call` as the model sent
//! it and the output fed back for its `call_id`; for the whole run (Summary) the rounds,
//! tokens, cost, how it ended and the model's final answer. Everything here came from a file:
//! each line is escaped ([`crate::printable::printable`]) and cut.

use ratatui::text::{Line, Span};

use super::super::app::App;
use super::super::theme::Theme;
use crate::document::ask::{AskCall, AskEnd, AskRound, AskView};
use crate::json::pretty;
use crate::printable::printable;

/// How an ask record's run ended: `answered`, `stopped at max_rounds` (`short`: `stopped`),
/// `ended by an error`; an unfinished record is `running` once the explorer saw it grow,
/// else `unfinished` (its run may be going on, or was killed).
pub fn ask_end(app: &App, ask: &AskView, short: bool) -> &'static str {
    match ask.end {
        AskEnd::Unfinished if app.ask_growing => "running",
        _ => ask.end.describe(short),
    }
}

/// The most lines of one text (the model's words, an output) shown.
const MAX_LINES: usize = 200;
/// The most characters of one of its lines.
const MAX_CHARS: usize = 2000;

/// `text`'s lines, each escaped and cut, indented by `indent`; a note when lines were left
/// out.
fn text_lines(text: &str, indent: &str, style: ratatui::style::Style) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = text
        .split('\n')
        .take(MAX_LINES)
        .map(|l| Line::styled(format!("{indent}{}", printable(l, MAX_CHARS)), style))
        .collect();
    let total = text.split('\n').count();
    if total > MAX_LINES {
        out.push(Line::styled(
            format!("{indent}… ({} more lines)", total - MAX_LINES),
            style,
        ));
    }
    out
}

/// The round's heading and what the model said in it.
fn round_lines(ask: &AskView, round: &AskRound, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = vec![Line::from(vec![
        Span::styled(
            format!("Round {} of at most {}", round.number, ask.max_rounds),
            theme.title,
        ),
        Span::styled(
            format!(
                " · {} · tokens in/out {}/{}",
                crate::printable::count(round.calls.len(), "call", "calls"),
                round.tokens.0,
                round.tokens.1
            ),
            theme.dim,
        ),
    ])];
    match (&round.text, &round.unreadable) {
        (_, Some(why)) => out.push(Line::styled(
            format!("  its answer cannot be read: {}", printable(why, MAX_CHARS)),
            theme.failed,
        )),
        (Some(text), None) => {
            out.push(Line::styled("  the model said:", theme.dim));
            out.extend(text_lines(text, "    ", theme.text));
        }
        (None, None) => out.push(Line::styled(
            "  the model said nothing beside its calls",
            theme.dim,
        )),
    }
    out
}

/// The `function_call` as the model sent it: name, `call_id`, the arguments string exactly.
fn function_call_lines(call: &AskCall, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = vec![Line::from(vec![
        Span::styled("function_call ", theme.title),
        Span::raw(format!(
            "{} · call_id {}",
            printable(&call.name, 200),
            printable(&call.call_id, 200)
        )),
    ])];
    let json = crate::json::parse(&call.arguments).is_ok();
    out.push(Line::from(vec![
        Span::styled("  arguments ", theme.dim),
        Span::raw(printable(&call.arguments, MAX_CHARS).into_owned()),
    ]));
    if !json {
        out.push(Line::styled(
            "  (not JSON: the executor answers bad_args without running the tool)",
            theme.failed,
        ));
    }
    out
}

/// The output fed back to the model for the call (pretty when it is JSON).
fn output_lines(call: &AskCall, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = vec![Line::styled(
        format!(
            "Output fed back to the model for {}",
            printable(&call.call_id, 200)
        ),
        theme.title,
    )];
    match &call.output {
        Some(text) => {
            let shown = crate::json::parse(text).map_or_else(|_| text.clone(), |v| pretty(&v));
            out.extend(text_lines(&shown, "  ", theme.text));
        }
        None => out.push(Line::styled("  (none in the record yet)", theme.dim)),
    }
    out
}

/// For the call in lane `lane` of batch `batch` of an ask record: its round, the model's
/// words, the `function_call` as sent and the output fed back; empty for other runs.
pub fn call_lines(app: &App, batch: usize, lane: usize, theme: &Theme) -> Vec<Line<'static>> {
    let Some(ask) = app.tab().ask.as_deref() else {
        return Vec::new();
    };
    let Some((round, call)) = ask.call(batch, lane) else {
        return Vec::new();
    };
    let mut out = round_lines(ask, round, theme);
    out.extend(function_call_lines(call, theme));
    out.extend(output_lines(call, theme));
    out
}

/// The round of batch `batch` of an ask record, for a heading (`(round 3)`), or nothing.
pub fn round_note(app: &App, batch: usize) -> String {
    app.tab()
        .ask
        .as_deref()
        .and_then(|a| a.round_of_batch(batch))
        .map_or_else(String::new, |r| format!(" (round {})", r.number))
}

/// The summary's lines for an ask record: the model and question, rounds, tokens, cost and
/// end, and the final answer; empty for other runs.
pub fn summary_lines(app: &App, theme: &Theme) -> Vec<Line<'static>> {
    let Some(ask) = app.tab().ask.as_deref() else {
        return Vec::new();
    };
    let mut out = vec![
        Line::from(vec![
            Span::styled(ask.headline(), theme.title),
            Span::styled(format!(" · {}", ask_end(app, ask, false)), theme.title),
        ]),
        Line::styled(
            format!(
                "model {} over {} · at most {} rounds",
                printable(&ask.model, 200),
                ask.api.as_str(),
                ask.max_rounds
            ),
            theme.dim,
        ),
        Line::styled(
            format!("question: {}", printable(&ask.question, MAX_CHARS)),
            theme.dim,
        ),
    ];
    if let AskEnd::Failed(why) = &ask.end {
        out.push(Line::styled(
            format!("error: {}", printable(why, MAX_CHARS)),
            theme.failed,
        ));
    }
    match &ask.answer {
        Some(answer) => {
            out.push(Line::styled("The model's final answer:", theme.title));
            out.extend(text_lines(answer, "  ", theme.text));
        }
        None => out.push(Line::styled(
            format!("no final answer ({})", ask_end(app, ask, false)),
            theme.dim,
        )),
    }
    out
}
