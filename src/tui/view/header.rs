//! The header line (file, kind, run, seed, virtual clock, verdict, short digest) and the
//! status line (messages, filter prompt, key hints).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::super::app::{App, Mode, Purpose, Question, StatusKind};
use super::super::theme::Theme;
use super::ask::ask_end;
use super::{secs, text};
use crate::contract::verdict;
use crate::document::ask::AskView;
use crate::printable;

/// Draws the header.
pub fn render(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let name = printable::quoted(&app.doc.name()).into_owned();
    let base = name.rsplit('/').next().unwrap_or(&name).to_owned();
    // The file name is worth more than the run's long title and the clock's kind: those go
    // first when the name would not fit (at 120 columns a lab run's title took its place).
    let mut spans = Vec::new();
    // An ask record's header has three more steps, taken only while the header itself does
    // not fit (its rounds, tokens, cost and end are worth more than the file name): its end
    // in a word and no clock, then no contract name, then the tokens and cost in short.
    let steps = if app.tab().ask.is_some() { 6 } else { 3 };
    for brief in 0..steps {
        spans = head_spans(app, theme, brief);
        let used: usize = spans.iter().map(|s| s.width()).sum();
        let width = area.width as usize;
        if used + 3 + base.chars().count() <= width || (brief >= 3 && used <= width) {
            break;
        }
    }
    // The file name last, cut with `…` to what is left of the line.
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let room = (area.width as usize).saturating_sub(used + 3);
    let shown = if name.chars().count() <= room {
        Some(name)
    } else if base.chars().count() <= room || room >= 8 {
        Some(clip_start(&base, room))
    } else {
        None
    };
    if let Some(shown) = shown {
        spans.push(Span::styled(format!(" · {shown}"), theme.text));
    }
    Line::from(cut_to(spans, area.width as usize, theme)).render(area, buf);
}

/// `spans` as they fit in `width` columns: when even the briefest header is wider, it is cut
/// one column short and ends in `…`, so a cut (`seed 4` of seed 42) never reads as the whole.
fn cut_to<'a>(spans: Vec<Span<'a>>, width: usize, theme: &Theme) -> Vec<Span<'a>> {
    let used: usize = spans.iter().map(|s| s.width()).sum();
    if used <= width || width == 0 {
        return spans;
    }
    let mut room = width - 1;
    let mut out = Vec::new();
    for span in spans {
        let w = span.width();
        if w <= room {
            room -= w;
            out.push(span);
            continue;
        }
        let mut kept = String::new();
        let mut cols = 0;
        for c in span.content.chars() {
            let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if cols + cw > room {
                break;
            }
            cols += cw;
            kept.push(c);
        }
        out.push(Span::styled(kept, span.style));
        break;
    }
    out.push(Span::styled("…", theme.dim));
    out
}

/// The header's spans before the file name: the verdict, the run, its seed and clock, the
/// document's kind and digest, the runner's settings. `brief` 1 names the run by its label
/// alone and the clock by its time alone; 2 also leaves out the document's kind and digest
/// (`inspect` says them). The verdict names its contract, but in an ask record's header
/// from `brief` 4 (an ask record is always judged by `check`): there, the run is the ask's
/// rounds, tokens, cost and end (no seed: a model's run has none), the clock going at 3 and
/// the end said in a word, and at 5 `in/out 5081/234 tokens · ≈$0.0150`.
fn head_spans<'a>(app: &App, theme: &Theme, brief: u8) -> Vec<Span<'a>> {
    let tab = app.tab();
    let report = tab.timeline.report();
    let passed = verdict(&tab.checks);
    let runs = app.doc.runs.len();
    let name = if brief > 0 {
        tab.label.clone()
    } else {
        tab.name()
    };
    let run = if runs > 1 {
        format!(" · run {}/{runs} {name}", app.run + 1)
    } else {
        format!(" · {name}")
    };
    // Most important first: a narrow terminal cuts the file name, not the verdict.
    let clock = tab.timeline.clock_at(app.cursor);
    let clock = if brief > 0 {
        secs(clock)
    } else {
        format!("{} {}", report.clock, secs(clock))
    };
    // A session still running has no verdict yet, only verdicts so far (the panel's).
    // (Only the recording's own run is live: a re-run beside it has ended.)
    let (word, style) = match (app.doc.live && app.run == 0, passed) {
        (true, _) => ("LIVE", theme.fault),
        (false, true) => ("PASS", theme.ok),
        (false, false) => ("FAIL", theme.failed),
    };
    let middle = match tab.ask.as_deref() {
        Some(ask) => {
            let end = ask_end(app, ask, brief >= 3);
            let clock = if brief >= 3 {
                String::new()
            } else {
                format!(" · {clock}")
            };
            let headline = if brief >= 5 {
                ask_compact(ask)
            } else {
                ask.headline()
            };
            format!(" · {headline} · {end}{clock}")
        }
        None => format!("{run} · seed {} · {clock}", report.seed.to_decimal()),
    };
    let contract = if tab.ask.is_some() && brief >= 4 {
        String::new()
    } else {
        format!(" ({})", contract_name(&tab.contract))
    };
    let mut spans = vec![
        Span::styled(" toolstorm ", theme.title),
        Span::styled(word, style),
        Span::styled(contract, theme.dim),
        Span::styled(middle, theme.dim),
        Span::styled(
            if brief > 1 {
                String::new()
            } else {
                format!(
                    " · {} {}",
                    app.doc.kind.label(),
                    &tab.digest[..tab.digest.len().min(8)]
                )
            },
            theme.dim,
        ),
    ];
    // Follow mode, next to the verdict: the cursor goes to each call as it arrives.
    if app.follow {
        spans.insert(3, Span::styled(" · following", theme.ok));
    }
    // The runner's settings (before the file name, which a narrow terminal cuts first).
    if let Some(e) = &app.editor {
        if e.dirty() {
            spans.insert(3, Span::styled(" ● unsaved", theme.fault));
        }
        spans.push(Span::styled(
            format!(" · {}", super::editor::settings_tail(app)),
            theme.dim,
        ));
    }
    if report.budget_rejections > 0 {
        spans.push(Span::styled(
            format!(" · {} refused", report.budget_rejections),
            theme.failed,
        ));
    }
    spans
}

/// `ask · 5 rounds · in/out 5081/234 tokens · ≈$0.0150`: [`AskView::headline`] in short.
fn ask_compact(ask: &AskView) -> String {
    let n = ask.rounds.len();
    let (i, o) = ask.tokens();
    let cost = ask.cost().map_or_else(String::new, |c| {
        format!(" · ≈${}", crate::json::float::py_fixed(c, 4))
    });
    format!(
        "ask · {n} round{} · in/out {i}/{o} tokens{cost}",
        if n == 1 { "" } else { "s" }
    )
}

/// The end of `s` in `width` characters, the cut marked with `…` (a path keeps its file name).
fn clip_start(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_owned();
    }
    let keep = width.saturating_sub(1);
    std::iter::once('…')
        .chain(s.chars().skip(n - keep))
        .collect()
}

/// The contract a verdict comes from, in a word or two (the Verdicts pane names it in full).
fn contract_name(contract: &str) -> &'static str {
    if contract.starts_with("check") {
        "check"
    } else if contract.contains("recorded in the file") {
        "recorded lab contract"
    } else {
        "lab contract"
    }
}

/// Key hints shown when the status line has no message.
fn hints(app: &App) -> &'static str {
    use super::super::app::Screen;
    // Each view says its own keys: the same key can mean something else in another view.
    match (&app.mode, app.editor.is_some()) {
        (Mode::Help, _) => "j/k scroll · Esc or ? close · q quit",
        (Mode::Edit, _) => "↑↓ field · ←→ rule · Enter edit · a add · D delete · u undo · i close",
        (Mode::Show(..), _) => "any key closes",
        (Mode::Summary(_), _) => {
            "j/k row · ←→ sort · r reverse · Enter filter · Esc close · q quit"
        }
        (Mode::Runs(_), _) => {
            "j/k row · g/G first/last · Enter open · c compare · Esc close · q quit"
        }
        (Mode::PinFault(_), _) => "j/k pick a fault · Enter re-run the agent with it · Esc cancel",
        (Mode::PickKind(_), _) => "j/k pick a kind · Enter choose · Esc cancel",
        _ if app.agent_run.is_some() => "Esc stops the agent's re-run · q quit",
        // A file still being written: following its newest call is what one wants first.
        _ if (app.doc.live || app.ask_growing) && !app.follow && app.screen == Screen::Explore => {
            "A follow new calls · ? keys · q quit · j/k step · / search · f fault · e effect"
        }
        _ if app.follow => "following the newest call · any move or A stops · ? keys · q quit",
        _ if app.screen == Screen::Compare => {
            "c or Esc back to the run · j/k step · R re-run · q quit"
        }
        _ if app.screen == Screen::Policies => "v or Esc back to the run · j/k step · q quit",
        (_, true) => "? keys · q quit · j/k step · / search · i rules · R rerun · W write",
        (_, false) if app.session().is_some() || app.doc.campaign.is_some() => {
            "? keys · q quit · j/k step · / search · R re-run the agent · p what if · i rules"
        }
        (_, false) => {
            "? keys · q quit · j/k step · / search · : jump · z zoom · f fault · e effect"
        }
    }
}

/// Draws the status line.
pub fn render_status(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let width = area.width as usize;
    let line = match &app.mode {
        Mode::Typing(purpose, field) => {
            let prompt = match purpose {
                Purpose::Field => format!("edit {}: ", app.edit_field().key()),
                other => other.prompt().to_owned(),
            };
            let tail = match purpose {
                Purpose::Filter => "  Enter keep · Esc clear".to_owned(),
                Purpose::Search | Purpose::WireSearch => "  Enter search · Esc cancel".to_owned(),
                Purpose::Jump => "  Enter go · Esc cancel".to_owned(),
                Purpose::Field => "  Enter apply · Esc cancel".to_owned(),
                // What was wrong with the path typed shows beside it, at once.
                Purpose::Write(_)
                    if app.status_kind == StatusKind::Error && !app.status.is_empty() =>
                {
                    format!("  ✗ {} · Esc cancel", printable::line(&app.status))
                }
                Purpose::Write(_) => "  Enter write · Esc cancel".to_owned(),
            };
            let room = width
                .saturating_sub(prompt.chars().count())
                .saturating_sub(tail.chars().count())
                .max(8);
            let mut spans = vec![Span::styled(prompt, theme.title)];
            spans.extend(text::field_spans(field, room, theme.selected));
            spans.push(Span::styled(tail, theme.dim));
            Line::from(spans)
        }
        Mode::PickKind(_) => Line::styled(
            "pick the fault kind: ↑↓ choose · Enter apply · Esc cancel",
            theme.title,
        ),
        Mode::PinFault(_) => Line::styled(
            "what if: pick the fault for the selected call · ↑↓ choose · Enter re-runs the agent · Esc cancel",
            theme.title,
        ),
        Mode::Confirm(q) => {
            let text = match q {
                Question::Overwrite(_, path) => format!(
                    "{} exists. Overwrite it? y yes · n no",
                    printable::quoted(&path.display().to_string())
                ),
                Question::Quit => "Unsaved edits. Quit and lose them? y quit · n stay".into(),
                Question::Conflict if app.reload_asked => "Reload, and you have unsaved edits: \
                     d take the file on disk · m keep mine (the other stays one undo step back)"
                    .into(),
                Question::Conflict => "The file changed on disk and you have unsaved edits: \
                     d keep disk · m keep mine (the other stays one undo step back)"
                    .into(),
                Question::RunAgent(_) => {
                    format!("Start the command shown? {}", super::super::confirm::KEYS)
                }
            };
            Line::styled(text, theme.failed)
        }
        _ => {
            let style = if app.status_kind == StatusKind::Error {
                theme.failed
            } else {
                theme.dim
            };
            let mut spans = Vec::new();
            if let Some(f) = &app.filter {
                spans.push(Span::styled(
                    format!("[filter: {}] ", printable::line(f)),
                    theme.fault,
                ));
            }
            if let Some(s) = &app.search {
                spans.push(Span::styled(
                    format!("[search: {} · n/N] ", printable::line(s)),
                    theme.matched,
                ));
            }
            if app.zoom {
                spans.push(Span::styled("[zoom · z] ", theme.title));
            }
            // While an agent re-runs, its progress is the status (an error still shows).
            let progress = app
                .agent_run
                .as_ref()
                .filter(|_| app.status_kind != StatusKind::Error)
                .map(|r| r.progress());
            if app.status.is_empty() && progress.is_none() {
                spans.push(Span::styled(hints(app), theme.dim));
            } else {
                let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
                let text = printable::line(progress.as_deref().unwrap_or(&app.status)).into_owned();
                // A message longer than the line ends in "… (m)" rather than being cut silently:
                // the status line is never the only place to read it.
                let room = width.saturating_sub(used);
                let text = if text.chars().count() > room && room > 8 {
                    let keep: String = text.chars().take(room - 6).collect();
                    format!("{keep} … (m)")
                } else {
                    text
                };
                spans.push(Span::styled(text, style));
            }
            Line::from(spans)
        }
    };
    line.render(area, buf);
}
