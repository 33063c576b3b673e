//! The selected invocation: what ran, what it returned or raised, which rules were eligible
//! and why one was selected (the draw against the probability, a reached limit, shadowing),
//! the effects it committed (duplicates point at the earlier commit), and its payloads. For
//! an `ask` record, the call's round, the model's words and the `function_call` as sent
//! come first ([`super::ask`]).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::super::app::{App, Focus};
use super::super::theme::{DUPLICATE, FAIL, PASS, Theme};
use super::text::{highlight, wrap};
use super::{fit, pane, secs};
use crate::json::{Value, float::py_repr, pretty};
use crate::printable::{printable, shown};
use crate::report::Status;
use crate::timeline::RuleOutcome;

fn kv<'a>(key: &str, value: String, theme: &Theme) -> Line<'a> {
    Line::from(vec![
        Span::styled(format!("{key:<8} "), theme.dim),
        Span::raw(value),
    ])
}

/// The draw as a fraction of 1 against the probability: `draw 0.033516 < p 1.0`.
fn draw_text(draw: &Option<crate::decision::Draw>, p: f64) -> String {
    match draw {
        Some(d) => format!(
            "draw {:.6} {} p {}",
            d.fraction(),
            if d.hits(p) { "<" } else { "≥" },
            py_repr(p)
        ),
        None => "draw not recomputable (redacted key or seed outside 64 bits)".into(),
    }
}

/// The detail lines for the selected call (also used by tests), then, for an executor run,
/// the calls that never ran.
pub fn lines(app: &App, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = call_lines(app, theme);
    // Calls that never ran have no row: say so at the top, whichever call is selected.
    let notice = not_run_notice(app);
    if !notice.is_empty() {
        out.insert(1.min(out.len()), Line::styled(notice, theme.fault));
    }
    for batch in &app.tab().batches {
        out.extend(never_ran(app, batch, theme));
    }
    out
}

/// `2 calls never ran (no timeline row): call_2 add_label denied, call_3 post_comment denied
/// · their answers are at the end of Details`, or nothing.
pub fn not_run_notice(app: &App) -> String {
    let lanes: Vec<String> = app
        .tab()
        .batches
        .iter()
        .flat_map(|b| b.lanes.iter().filter(|l| l.attempts.is_empty()))
        .map(|l| {
            format!(
                "{} {} {}",
                printable(&l.call_id, 40),
                printable(&l.name, 40),
                l.kind
            )
        })
        .collect();
    if lanes.is_empty() {
        return String::new();
    }
    format!(
        "{} never ran (no timeline row): {} · their answers are at the end of Details",
        crate::printable::count(lanes.len(), "call", "calls"),
        lanes.join(", ")
    )
}

fn call_lines(app: &App, theme: &Theme) -> Vec<Line<'static>> {
    let t = app.timeline();
    let Some((index, c)) = app.cursor.and_then(|i| Some((i, t.report().calls.get(i)?))) else {
        return vec![Line::styled("No call selected.", theme.dim)];
    };
    let mut out = vec![Line::from(vec![
        Span::styled(format!("#{} {}", c.id, shown(&c.tool)), theme.title),
        Span::styled(
            format!("  ordinal {} · key {}", c.ordinal, shown(&c.key)),
            theme.dim,
        ),
    ])];
    if let Some(p) = c.parent_id {
        out.push(kv("parent", format!("#{p}"), theme));
    }
    let status = match &c.error {
        Some(e) => format!(
            "{} · {}{}{}",
            c.status.as_str(),
            shown(&e.type_name),
            if e.known { " (portable)" } else { "" },
            e.retry_after
                .map_or(String::new(), |r| format!(" · retry after {}", secs(r)))
        ),
        None => c.status.as_str().to_owned(),
    };
    out.push(Line::from(vec![
        Span::styled(format!("{:<9}", "status"), theme.dim),
        Span::styled(status, if c.failed() { theme.failed } else { theme.ok }),
    ]));
    // A call in flight (a live recording, or one killed mid-call) has no end yet.
    let in_flight = c.status == Status::Running;
    out.push(kv(
        "time",
        if in_flight {
            format!("{} → (no answer yet)", secs(c.started))
        } else {
            format!(
                "{} → {} ({})",
                secs(c.started),
                secs(c.started + c.elapsed),
                secs(c.elapsed)
            )
        },
        theme,
    ));
    out.push(kv(
        "executed",
        match (in_flight, c.executed) {
            (true, _) => "in flight: the tool has it, no answer yet",
            (false, true) => "yes: the tool ran",
            (false, false) => "no: the tool did not run",
        }
        .into(),
        theme,
    ));
    if let (Some(f), Some(k)) = (&c.fault, c.kind) {
        out.push(Line::from(vec![
            Span::styled(format!("{:<9}", "fault"), theme.dim),
            Span::styled(
                format!(
                    "{} · {}{} · {}",
                    shown(f),
                    k,
                    // A latency fault's phase is its kind: say it once.
                    if k.phase() == k.as_str() {
                        String::new()
                    } else {
                        format!(" · {}", k.phase())
                    },
                    match (c.injected, in_flight) {
                        (true, _) => "injected",
                        (false, true) => "selected, not injected yet (the call is in flight)",
                        (false, false) => "selected, not injected (the tool raised first)",
                    }
                ),
                theme.fault,
            ),
        ]));
    }
    // An ask record: the round, what the model said, the call as sent, what it got back.
    let lane = app.tab().batches.iter().find_map(|b| {
        b.lanes
            .iter()
            .find(|l| l.attempts.iter().any(|a| a.report_call == Some(c.id)))
            .map(|l| (b, l))
    });
    let asked = lane.map_or_else(Vec::new, |(b, l)| {
        super::ask::call_lines(app, b.batch, l.index, theme)
    });
    let ask = !asked.is_empty();
    out.extend(asked);
    // The verdicts that name this call (the selected one, or every failed one), and why.
    let blamed: Vec<Line<'static>> = app
        .named
        .reasons
        .iter()
        .filter(|(_, r)| r.calls.contains(&c.id))
        .filter_map(|(k, r)| {
            let check = app.tab().checks.get(*k)?;
            Some(Line::from(vec![
                Span::styled(format!("{:<8} ", "verdict"), theme.dim),
                Span::styled(
                    format!(
                        "{} {}: ",
                        if check.passed { PASS } else { FAIL },
                        check.name
                    ),
                    if check.passed { theme.ok } else { theme.failed },
                ),
                Span::raw(r.text.clone()),
            ]))
        })
        .collect();
    out.extend(blamed);
    let decisions = t.decisions(index);
    if !decisions.is_empty() {
        out.push(Line::styled(
            format!("Decision (seed {})", t.report().seed.to_decimal()),
            theme.title,
        ));
        for d in decisions {
            let rule = &t.rules()[d.rule];
            let name = shown(&rule.name);
            let (mark, text, style) = match &d.outcome {
                RuleOutcome::NotEligible => continue,
                RuleOutcome::Selected { draw }
                    if draw.is_some_and(|d| !d.hits(rule.probability)) =>
                {
                    (
                        "→",
                        format!(
                            "selected in the recording, but the seed gives {}: the recorded decision \
                         differs from what the seed gives (a hand-made or edited file?)",
                            draw_text(draw, rule.probability)
                        ),
                        theme.failed,
                    )
                }
                RuleOutcome::Selected { draw } => (
                    "→",
                    format!("selected: {}", draw_text(draw, rule.probability)),
                    theme.fault,
                ),
                RuleOutcome::Missed { draw } if draw.is_some_and(|d| d.hits(rule.probability)) => (
                    "·",
                    format!(
                        "not selected in the recording, but the seed gives {}: the recorded \
                         decision differs from what the seed gives",
                        draw_text(draw, rule.probability)
                    ),
                    theme.failed,
                ),
                RuleOutcome::Missed { draw } => (
                    "·",
                    format!("missed: {}", draw_text(draw, rule.probability)),
                    theme.text,
                ),
                RuleOutcome::LimitReached { limit } => (
                    "·",
                    format!("limit of {limit} selection(s) reached"),
                    theme.text,
                ),
                RuleOutcome::Shadowed => {
                    ("·", "shadowed: an earlier rule won".to_owned(), theme.dim)
                }
            };
            out.push(Line::styled(
                format!("  {mark} {name} ({}): {text}", rule.kind),
                style,
            ));
        }
        if t.decisions(index)
            .iter()
            .all(|d| d.outcome == RuleOutcome::NotEligible)
        {
            out.push(Line::styled(
                "  no rule is eligible for this call",
                theme.dim,
            ));
        }
    }
    let effects = t.effects_of(index);
    if !effects.is_empty() {
        out.push(Line::styled("Effects committed", theme.title));
        for &e in effects {
            let fx = &t.report().effects[e];
            let mut spans = vec![Span::raw(format!(
                "  {} {} @{} · identity {}",
                shown(&fx.name),
                shown(&fx.key),
                secs(fx.at),
                fx.identity
            ))];
            if let Some(ev) = app.session().and_then(|m| m.evidence_of(t.report(), e)) {
                spans.push(Span::styled(
                    format!("  evidence: {}", ev.as_str()),
                    theme.dim,
                ));
            }
            if let Some(first) = t.duplicate_of(e) {
                let earlier = &t.report().effects[first];
                spans.push(Span::styled(
                    format!(
                        "  {DUPLICATE} duplicate of the commit by call #{} @{}",
                        earlier.call_id,
                        secs(earlier.at)
                    ),
                    theme.duplicate,
                ));
            }
            out.push(Line::from(spans));
        }
    }
    // MCP recordings: what the client actually received, and how the call ended.
    if let Some(record) = app.session().and_then(|m| m.call(c.id)) {
        out.push(Line::styled(
            format!("MCP request {}", crate::json::one_line(&record.request_id)),
            theme.title,
        ));
        out.push(kv(
            "client",
            format!("got {}", record.delivered.describe()),
            theme,
        ));
        // The HTTP request that carried it, as the recording keeps its headers.
        if !record.request_headers.is_empty() {
            let shown: Vec<String> = record
                .request_headers
                .iter()
                .map(|(n, v)| format!("{n}: {v}"))
                .collect();
            out.push(kv(
                "headers",
                printable(&shown.join(" · "), 400).into_owned(),
                theme,
            ));
        }
        // Exactly what it received: the text the model sees, the error it may hide.
        for (k, v) in record.delivered.received() {
            out.push(kv(
                &format!("  {k}"),
                printable(&v, 400).into_owned(),
                theme,
            ));
        }
        // What the server really answered, when that never reached the client: what committed.
        let answered = record.server_answered();
        if !answered.is_empty() {
            out.push(Line::from(vec![
                Span::styled(format!("{:<8} ", "server"), theme.dim),
                Span::styled("answered, never delivered:", theme.fault),
            ]));
            for (k, v) in answered {
                out.push(kv(
                    &format!("  {k}"),
                    printable(&v, 400).into_owned(),
                    theme,
                ));
            }
        }
        let mut kinds: Vec<_> = record.effects.clone();
        kinds.dedup();
        for ev in kinds {
            out.push(kv(
                "evidence",
                format!("{}: {}", ev.as_str(), ev.explain()),
                theme,
            ));
        }
        // A retry the server's own annotations make a duplicate is judged as one.
        let declared = match (record.possible.is_empty(), app.session()) {
            (false, Some(m)) => m.declared_duplicates(),
            _ => Vec::new(),
        };
        for (name, key) in &record.possible {
            let repeated = declared
                .iter()
                .find(|d| d.0 == c.id && d.2 == *name && d.3 == *key);
            let how = match repeated {
                Some(d) => format!(
                    "a retry of call #{} after its answer was lost: the server declares this \
                     tool non-idempotent, judged a duplicate",
                    d.1
                ),
                None => "annotations only: a hint, not judged as a commit".to_owned(),
            };
            out.push(kv(
                "possible",
                printable(&format!("{name} {key} ({how})"), 400).into_owned(),
                theme,
            ));
        }
        if let Some(first) = record.replay_of {
            out.push(kv(
                "replay",
                format!(
                    "same commit id as call #{first}: an idempotent replay, nothing new committed"
                ),
                theme,
            ));
        }
        if let Some(note) = &record.note {
            out.push(kv("note", printable(note, 400).into_owned(), theme));
        }
    }
    if app.session().is_some_and(|m| m.call(c.id).is_none())
        && c.status == crate::report::Status::Running
    {
        out.push(kv(
            "client",
            "nothing on record yet: the call was in flight when the recording stopped (the \
             server may have committed it)"
                .to_owned(),
            theme,
        ));
    }
    // Executor runs: the envelope the model got for the function call this attempt served
    // (an ask record showed it above, as the text fed back).
    if let Some((_, lane)) = lane.filter(|_| ask)
        && let Some((question, approved)) = &lane.approval
    {
        let verdict = if *approved { "approved" } else { "denied" };
        out.push(kv(
            "approval",
            format!("{verdict} · {}", printable(question, 400)),
            theme,
        ));
    }
    if let Some((batch, lane)) = lane.filter(|_| !ask) {
        out.push(Line::styled(
            format!(
                "Envelope for {} (answered at {} ms)",
                lane.call_id, lane.answered_ms
            ),
            theme.title,
        ));
        if let Some((question, approved)) = &lane.approval {
            let verdict = if *approved { "approved" } else { "denied" };
            out.push(Line::raw(format!("  approval: {verdict} · {question}")));
        }
        if let Some(envelope) = batch.envelopes.get(lane.index) {
            out.extend(
                pretty(&envelope.to_value())
                    .lines()
                    .map(|l| Line::raw(format!("  {l}"))),
            );
        }
    }
    let lost_answer = app
        .session()
        .and_then(|m| m.call(c.id))
        .is_some_and(|r| !r.server_answered().is_empty());
    for (title, value) in [("Arguments", &c.arguments), ("Output", &c.output)] {
        out.push(Line::styled(title, theme.title));
        let text = match value {
            Value::Null if title == "Output" && c.capture_error => {
                "(not captured: the output could not be recorded)".to_owned()
            }
            Value::Null if title == "Output" && c.failed() && lost_answer => {
                "(none reached the client: the call failed; the server's own answer is under \
                 \"server\" above)"
                    .to_owned()
            }
            Value::Null if title == "Output" && c.failed() => "(none: the call failed)".to_owned(),
            v => pretty(v),
        };
        out.extend(payload_lines(&text));
    }
    out
}

/// The calls of `batch` that never ran (denied, unknown tool, bad arguments): they have no row
/// in the timeline, so their arguments and answers are listed under every call.
fn never_ran(
    app: &App,
    batch: &crate::executor::batch::BatchResult,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let asked = app
        .doc
        .orbit
        .as_ref()
        .and_then(|o| o.batches.get(batch.batch.saturating_sub(1)));
    for lane in batch.lanes.iter().filter(|l| l.attempts.is_empty()) {
        out.push(Line::styled(
            format!(
                "Not run in batch {}{}: {} {} ({})",
                batch.batch,
                super::ask::round_note(app, batch.batch),
                printable(&lane.call_id, 80),
                printable(&lane.name, 80),
                lane.kind
            ),
            theme.title,
        ));
        if let Some((question, approved)) = &lane.approval {
            let verdict = if *approved { "approved" } else { "denied" };
            out.push(Line::raw(format!(
                "  approval: {verdict} · {}",
                printable(question, 400)
            )));
        }
        if let Some(call) = asked.and_then(|calls| calls.get(lane.index)) {
            out.push(Line::raw("  arguments as asked:"));
            let text = crate::json::parse(&call.arguments)
                .map(|v| pretty(&v))
                .unwrap_or_else(|_| call.arguments.clone());
            out.extend(payload_lines(&text).into_iter().map(|l| {
                let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
                Line::raw(format!("  {text}"))
            }));
        }
        // An ask record: the round, the call as sent and the output fed back.
        let asked = super::ask::call_lines(app, batch.batch, lane.index, theme);
        let ask = !asked.is_empty();
        out.extend(asked.into_iter().map(indented));
        if let Some(envelope) = batch.envelopes.get(lane.index).filter(|_| !ask) {
            out.push(Line::raw("  answer:"));
            out.extend(
                pretty(&envelope.to_value())
                    .lines()
                    .map(|l| Line::raw(format!("    {}", printable(l, MAX_LINE_SHOWN)))),
            );
        }
    }
    out
}

/// `line` two columns further in.
fn indented(mut line: Line<'static>) -> Line<'static> {
    line.spans.insert(0, Span::raw("  "));
    line
}

/// The most lines of one payload the pane shows (a payload can be megabytes).
const MAX_PAYLOAD_LINES: usize = 400;

/// A payload's lines, indented, each escaped and cut, with a note when lines were left out.
fn payload_lines(text: &str) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = text
        .lines()
        .take(MAX_PAYLOAD_LINES)
        .map(|l| Line::raw(format!("  {}", printable(l, MAX_LINE_SHOWN))))
        .collect();
    let total = text.lines().count();
    if total > MAX_PAYLOAD_LINES {
        out.push(Line::raw(format!(
            "  … ({} more lines)",
            total - MAX_PAYLOAD_LINES
        )));
    }
    out
}

/// The most characters of one payload line the pane shows.
const MAX_LINE_SHOWN: usize = 2000;

/// The detail lines fitted to `width` columns: search matches highlighted, long lines
/// wrapped with their continuation indented.
pub fn wrapped(app: &App, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = lines(app, theme);
    if let Some(term) = &app.search {
        out = out
            .into_iter()
            .map(|l| highlight(l, term, theme.matched))
            .collect();
    }
    wrap(out, width)
}

/// The first wrapped line (of a pane `width` wide) holding the search term, if any.
pub fn match_line(app: &App, width: usize, theme: &Theme) -> Option<usize> {
    let term = app.search.as_deref()?.to_lowercase();
    if term.is_empty() {
        return None;
    }
    wrapped(app, width, theme).iter().position(|l| {
        let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
        text.to_lowercase().contains(&term)
    })
}

/// Draws the details pane; the title says which lines show when they do not all fit.
pub fn render(app: &App, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let width = area.width.saturating_sub(2) as usize;
    let height = area.height.saturating_sub(2) as usize;
    let lines = wrapped(app, width, theme);
    let title = if lines.len() > height && height > 0 {
        let first = app.scroll[0] as usize + 1;
        let last = (app.scroll[0] as usize + height).min(lines.len());
        format!(
            " Details · lines {first}–{last} of {} · J/K scroll ",
            lines.len()
        )
    } else {
        " Details ".to_owned()
    };
    let block = pane(fit(title, area), app.focus == Focus::Details, theme);
    Paragraph::new(lines)
        .block(block)
        .scroll((app.scroll[0], 0))
        .render(area, buf);
}
