//! `inspect` and `check`: validate incident files (a cassette, a run file, a comparison) with
//! the reference's semantics, output and exit codes; errors add the file, JSON path and reason.

use std::path::PathBuf;

use clap::Args;

use super::{Io, PyInt, py_int};
use crate::cassette;
use crate::{document, exit};

/// Flags of `inspect`.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// A cassette, report, run file or comparison
    path: PathBuf,
    /// Print a JSON summary
    #[arg(long)]
    json: bool,
}

/// Flags of `check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// A cassette, report, run file or comparison
    path: PathBuf,
    /// Call budget to check against (calls plus refused calls) [default: an MCP recording's
    /// own budget, else 100]
    #[arg(long, value_parser = py_int, allow_hyphen_values = true)]
    max_calls: Option<PyInt>,
    /// Print the contract as JSON
    #[arg(long)]
    json: bool,
    /// Name the calls behind every verdict and the numbers that decided it (text: under each
    /// check, every reason; JSON: a "reasons" list per check). On a terminal the text shows a
    /// few per check without it
    #[arg(long)]
    why: bool,
    /// Also write the verdict as JUnit XML to FILE (one test case per check, the reason and
    /// the calls behind each failure in its message), for CI systems
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

/// Reasons a check shows on a terminal without `--why`.
const TERMINAL_REASONS: usize = 5;

/// The reason lines under one check: at most `most`, then how many more `--why` would show.
fn reason_lines(
    explainer: &document::explain::Explainer<'_>,
    check: &crate::contract::Check,
    most: usize,
) -> Vec<String> {
    let reasons = explainer.reasons(check);
    let mut lines: Vec<String> = reasons
        .iter()
        .take(most)
        .map(|r| format!("↳ {}", r.text))
        .collect();
    if reasons.len() > most {
        lines.push(format!(
            "↳ … and {} more (--why lists every one)",
            reasons.len() - most
        ));
    }
    lines
}

/// One run's contract object; with `why`, each check also carries its `reasons` (the
/// sentence and the call ids it names), a field the reference's readers ignore.
fn contract_json(
    checks: &[crate::contract::Check],
    report: &crate::report::Report,
    session: Option<&crate::mcp::session::McpSession>,
    why: bool,
) -> crate::json::Value {
    use crate::json::Value;
    let mut v = crate::contract::checks_to_value(checks);
    if !why {
        return v;
    }
    let explainer = document::explain::Explainer::new(report, session);
    if let Some(Value::Array(items)) = v.as_object_mut().and_then(|o| o.get_mut("checks")) {
        for (item, check) in items.iter_mut().zip(checks) {
            let reasons = explainer
                .reasons(check)
                .into_iter()
                .map(|r| {
                    let calls: Vec<Value> = r.calls.into_iter().map(Value::from).collect();
                    crate::obj! {"text" => r.text, "calls" => Value::Array(calls)}
                })
                .collect();
            if let Some(o) = item.as_object_mut() {
                o.push("reasons", Value::Array(reasons));
            }
        }
    }
    v
}

/// One contract as it is, several under `runs` (as the reference prints them).
fn single_or_runs(mut items: Vec<crate::json::Value>) -> crate::json::Value {
    if items.len() == 1 {
        items.pop().unwrap_or(crate::json::Value::Null)
    } else {
        crate::obj! {"runs" => crate::json::Value::Array(items)}
    }
}

/// Runs `inspect`.
pub fn inspect(a: &InspectArgs, io: &mut Io<'_>) -> i32 {
    let trace = match document::open_trace(&a.path) {
        Ok(t) => t,
        Err(e) => return io.fail(e),
    };
    recovery_note(&trace, io);
    if a.json {
        match (&trace.mcp, trace.cassettes.as_slice()) {
            // An MCP recording: the reference's object, and under `mcp` what the text says of
            // the session (the reference never wrote one, so its files read as before).
            (Some(m), [c]) => {
                let text = cassette::inspect_json(&trace.cassettes);
                match crate::json::parse(text.trim_end()) {
                    Ok(mut v) => {
                        if let Some(o) = v.as_object_mut() {
                            let mut mv = mcp_inspect_value(&c.report, m, trace.live);
                            // The messages of its wire log, when it has one (null: none).
                            let wire = crate::mcp::wirelog::read::read(
                                &crate::mcp::wirelog::wire_path(&a.path),
                            );
                            if let Some(mo) = mv.as_object_mut() {
                                let count = |exchange: bool| {
                                    wire.as_ref().map_or(crate::json::Value::Null, |w| {
                                        crate::json::Value::from(
                                            w.entries
                                                .iter()
                                                .filter(|e| e.exchange.is_some() == exchange)
                                                .count(),
                                        )
                                    })
                                };
                                mo.push("wire_messages", count(false));
                                mo.push("wire_http_exchanges", count(true));
                            }
                            o.push("mcp", mv);
                        }
                        io.emit(&(crate::json::one_line(&v) + "\n"));
                    }
                    Err(_) => io.emit(&text),
                }
            }
            _ => io.emit(&cassette::inspect_json(&trace.cassettes)),
        }
    } else if io.people && trace.cassettes.len() > 1 {
        for (i, c) in trace.cassettes.iter().enumerate() {
            let line = cassette::inspect_text(std::slice::from_ref(c));
            io.println(&format!("{}: {}", run_label(&trace, i), line.trim_end()));
        }
    } else {
        io.print(&cassette::inspect_text(&trace.cassettes));
        // An `ask` record: its rounds, calls per round and tokens.
        if trace.kind == document::DocKind::RunFile
            && crate::ask::record::looks_like_record(&a.path)
            && let Ok(r) = crate::ask::record::read(&a.path)
        {
            io.println(&r.summary_line());
        }
        if let Some(m) = &trace.mcp {
            let name = crate::mcp::session::McpSession::peer_name;
            io.println(&format!(
                "MCP session: protocol {}, client {}, server {}, {} recorded call(s) with what the client received",
                m.protocol_version.as_deref().unwrap_or("unknown"),
                name(&m.client_info),
                name(&m.server_info),
                m.calls.len()
            ));
            if let Some(t) = &m.transport {
                let mut line = format!("transport: {} client, {} server", t.client, t.server);
                if let Some(u) = &t.url {
                    line.push_str(&format!(" at {u}"));
                }
                if let Some(l) = &t.listen {
                    line.push_str(&format!("; the proxy listened on {l}"));
                }
                if !t.added_headers.is_empty() {
                    let names: Vec<&str> =
                        t.added_headers.iter().map(|(n, _)| n.as_str()).collect();
                    line.push_str(&format!(
                        "; the proxy added {} to each request",
                        names.join(", ")
                    ));
                }
                io.println(&crate::printable::line(&line));
            }
            if let Some(a) = &m.agent {
                io.println(&format!(
                    "agent (R in the explorer starts it again): {} (in {})",
                    a.command, a.cwd
                ));
            }
            if let [c] = trace.cassettes.as_slice() {
                for line in mcp_inspect_lines(&c.report, m, trace.live) {
                    io.println(&line);
                }
            }
        }
    }
    // A command ends here: the operating system takes the memory back faster than freeing
    // a 10,000-call trace piece by piece would.
    std::mem::forget(trace);
    exit::OK
}

/// Runs `check`.
pub fn check(a: &CheckArgs, io: &mut Io<'_>) -> i32 {
    let trace = match document::open_trace(&a.path) {
        Ok(t) => t,
        Err(e) => return io.fail(e),
    };
    recovery_note(&trace, io);
    let max_calls = a.max_calls.map(|m| m.0.unwrap_or(i64::MAX));
    match document::judge(&trace, max_calls) {
        Ok(summary) => {
            // The reasons behind each verdict: on a terminal (a few per check), or every one
            // with --why. Piped without --why, the output is the reference's, byte for byte.
            let why = if a.why {
                Some(usize::MAX)
            } else {
                io.people.then_some(TERMINAL_REASONS)
            };
            let session = trace.mcp.as_ref();
            if a.json {
                let contracts: Vec<crate::json::Value> = summary
                    .runs
                    .iter()
                    .zip(&trace.cassettes)
                    .map(|(checks, c)| contract_json(checks, &c.report, session, a.why))
                    .collect();
                match (session, trace.cassettes.as_slice(), contracts.as_slice()) {
                    (Some(session), [c], [contract]) => {
                        io.emit(&mcp_json(contract.clone(), &trace, &c.report, session))
                    }
                    _ => io.emit(&(crate::json::one_line(&single_or_runs(contracts)) + "\n")),
                }
            } else {
                let several = io.people && trace.cassettes.len() > 1;
                let indent = if several { "  " } else { "" };
                for (i, (checks, c)) in summary.runs.iter().zip(&trace.cassettes).enumerate() {
                    let explainer = document::explain::Explainer::new(&c.report, session);
                    if several {
                        io.println(&run_label(&trace, i));
                    }
                    let verdict = crate::contract::verdict(checks);
                    io.println_verdict(&format!(
                        "{indent}{}",
                        if verdict { "PASS" } else { "FAIL" }
                    ));
                    for check in checks {
                        let mark = if check.passed { '✓' } else { '✗' };
                        io.println_verdict(&format!(
                            "{indent}{mark} {}: {}",
                            check.name, check.detail
                        ));
                        if let Some(most) = why {
                            for line in reason_lines(&explainer, check, most) {
                                io.println(&format!("{indent}    {line}"));
                            }
                        }
                    }
                }
                if let (Some(session), [c]) = (session, trace.cassettes.as_slice()) {
                    for line in mcp_lines(&c.report, session, why.is_none()) {
                        io.println(&line);
                    }
                }
            }
            if io.people && !a.json {
                for line in recorded_notes(&trace, &summary, max_calls) {
                    let _ = writeln!(io.err, "{}", crate::printable::line(&line));
                }
            }
            if let Some(file) = &a.junit {
                let xml = crate::junit::to_xml(&junit_suites(&a.path, &trace, &summary));
                let ours = crate::junit::is_junit;
                if let Err(e) = crate::atomic::refuse_foreign(file, ours, "a JUnit report")
                    .and_then(|()| crate::atomic::write(file, xml.as_bytes()))
                {
                    return io.fail(document::Error::io(file, e));
                }
            }
            let mut code = summary.exit_code();
            if !a.json
                && let Some((passed, lines)) = ask_scenario_checks(&a.path, &trace)
            {
                for line in lines {
                    io.println_verdict(&line);
                }
                if !passed && code == exit::OK {
                    code = exit::CONTRACT_FAILED;
                }
            }
            std::mem::forget(trace);
            code
        }
        Err(e) => io.fail(format!("ConfigurationError: {}", e.message)),
    }
}

/// For an `ask` record whose tools came through our proxy: the scenario's checks on the
/// proxy's recording kept beside it (`RUN.mcp.json`, named from the record's own file name,
/// never from its contents), as `ask` printed them — the evidence of what the server committed,
/// which the model's view of its calls cannot show (a lost acknowledgement's call failed for
/// the model, yet its shipment exists). `None` for any other file or when there is no such
/// recording.
fn ask_scenario_checks(
    path: &std::path::Path,
    trace: &document::Trace,
) -> Option<(bool, Vec<String>)> {
    if trace.kind != document::DocKind::RunFile || !crate::ask::record::looks_like_record(path) {
        return None;
    }
    let record = crate::ask::record::read(path).ok()?;
    if record.header.world != "mcp" {
        return None;
    }
    let beside = path.with_extension("mcp.json");
    if !beside.exists() {
        return None;
    }
    let shown = crate::printable::line(&beside.display().to_string()).into_owned();
    let mut lines = vec![String::new()];
    let proxy = match document::open_trace(&beside) {
        Ok(t) => t,
        Err(e) => {
            lines.push(format!(
                "scenario checks: FAIL (the proxy's recording {shown} cannot be read: {})",
                crate::printable::line(&e.to_string())
            ));
            return Some((false, lines));
        }
    };
    let checks: Vec<crate::contract::Check> = match document::judge(&proxy, None) {
        Ok(summary) => summary.runs.into_iter().flatten().collect(),
        Err(e) => {
            lines.push(format!(
                "scenario checks: FAIL ({shown}: {})",
                crate::printable::line(e.message)
            ));
            return Some((false, lines));
        }
    };
    let passed = crate::contract::verdict(&checks);
    lines.push(format!(
        "scenario checks on the proxy's recording {shown}: {}",
        if passed { "PASS" } else { "FAIL" }
    ));
    for check in &checks {
        let mark = if check.passed { '✓' } else { '✗' };
        lines.push(format!(
            "{mark} {}: {}",
            check.name,
            crate::printable::line(&check.detail)
        ));
    }
    std::mem::forget(proxy);
    Some((passed, lines))
}

/// The verdict as JUnit suites: one per run of the file, one case per check; a failed
/// check's message is its detail and its text the calls behind it (every reason).
fn junit_suites(
    path: &std::path::Path,
    trace: &document::Trace,
    summary: &crate::cassette::CheckSummary,
) -> Vec<crate::junit::Suite> {
    let file = path.display().to_string();
    summary
        .runs
        .iter()
        .zip(&trace.cassettes)
        .enumerate()
        .map(|(i, (checks, c))| {
            let explainer = document::explain::Explainer::new(&c.report, trace.mcp.as_ref());
            let name = if trace.cassettes.len() > 1 {
                format!("{file} · {}", run_label(trace, i))
            } else {
                file.clone()
            };
            crate::junit::Suite {
                name: name.clone(),
                properties: vec![
                    ("recording".into(), file.clone()),
                    ("seed".into(), c.report.seed.to_decimal()),
                ],
                cases: checks
                    .iter()
                    .map(|check| crate::junit::Case {
                        name: check.name.clone(),
                        classname: format!("toolstorm.check.{name}"),
                        failure: (!check.passed).then(|| crate::junit::Failure {
                            message: format!("{}: {}", check.name, check.detail),
                            kind: check.name.clone(),
                            text: reason_lines(&explainer, check, usize::MAX).join("\n"),
                        }),
                        ..crate::junit::Case::default()
                    })
                    .collect(),
            }
        })
        .collect()
}

/// An MCP recording read through its journal says so, in one line on standard error.
fn recovery_note(trace: &document::Trace, io: &mut Io<'_>) {
    if let Some(n) = &trace.recovered {
        let _ = writeln!(io.err, "note: {}", crate::printable::line(n));
    }
}

/// Where a run file recorded the lab's own verdict and it differs from `check`'s (another
/// contract, another budget), a note saying so, for people at a terminal.
fn recorded_notes(
    trace: &document::Trace,
    summary: &cassette::CheckSummary,
    max_calls: Option<i64>,
) -> Vec<String> {
    let budget = max_calls.unwrap_or(document::DEFAULT_MAX_CALLS);
    let mut notes = Vec::new();
    for (i, checks) in summary.runs.iter().enumerate() {
        let Some(Some(r)) = trace.recorded.get(i) else {
            continue;
        };
        let lab = crate::contract::verdict(&r.checks);
        let ours = crate::contract::verdict(checks);
        if lab != ours {
            let word = |v: bool| if v { "PASS" } else { "FAIL" };
            let their_budget = r
                .max_calls
                .map_or_else(String::new, |b| format!(", budget {b}"));
            notes.push(format!(
                "note: {} is {} by the lab contract recorded in the file{their_budget}; check \
                 judges only faults, duplicates and the call budget ({budget}; --max-calls N \
                 to change it): {}",
                run_label(trace, i),
                word(lab),
                word(ours)
            ));
        }
    }
    notes
}

/// `run 2: retry (Unchecked retries)`: a run of a comparison, named as the explorer and the
/// demo name it.
fn run_label(trace: &document::Trace, i: usize) -> String {
    let name = trace.labels.get(i).cloned().flatten();
    match name.as_deref().and_then(crate::lab::Policy::parse) {
        Some(p) => format!("run {}: {} ({})", i + 1, p.as_str(), p.title()),
        None => match name {
            Some(n) => format!("run {}: {n}", i + 1),
            None => format!("run {}", i + 1),
        },
    }
}

/// One duplicate commit of an MCP recording, next to the first commit of the same effect.
struct Duplicate {
    name: String,
    key: String,
    call: u64,
    evidence: &'static str,
    first_call: u64,
    first_evidence: &'static str,
}

/// For an MCP recording: each duplicate commit, the call that made it and the evidence.
fn duplicates(
    report: &crate::report::Report,
    session: &crate::mcp::session::McpSession,
) -> Vec<Duplicate> {
    let evidence = |i: usize| {
        session
            .evidence_of(report, i)
            .map_or("unknown", |ev| ev.as_str())
    };
    let mut first: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (i, e) in report.effects.iter().enumerate() {
        match first.get(&e.identity) {
            None => {
                first.insert(e.identity, i);
            }
            Some(&f) => out.push(Duplicate {
                name: e.name.to_lossy(),
                key: e.key.to_lossy(),
                call: e.call_id,
                evidence: evidence(i),
                first_call: report.effects[f].call_id,
                first_evidence: evidence(f),
            }),
        }
    }
    out
}

/// The lines `check` adds for an MCP recording: each duplicate commit with its evidence, and
/// each possible duplicate the annotations alone suggest (a warning, not a failure).
fn mcp_lines(
    report: &crate::report::Report,
    session: &crate::mcp::session::McpSession,
    duplicate_lines: bool,
) -> Vec<String> {
    let mut lines: Vec<String> = duplicates(report, session)
        .into_iter()
        .filter(|_| duplicate_lines)
        .map(|d| {
            format!(
                "duplicate commit: {} {} by call #{} ({} evidence), first committed by call #{} ({} evidence)",
                d.name, d.key, d.call, d.evidence, d.first_call, d.first_evidence
            )
        })
        .collect();
    if duplicate_lines {
        for (call, first, name, key) in session.declared_duplicates() {
            lines.push(format!(
                "duplicate commit (annotations): {}; or say \"annotations\": \"warn\" in the \
                 scenario to only warn",
                document::declared_duplicate_text(call, first, &name, &key)
            ));
        }
    }
    for (call, first, name, key) in session.warned_duplicates() {
        lines.push(format!(
            "warning: possible duplicate (annotations only): call #{call} repeats call #{first} ({name} {key}); \
             the server's annotations are the only evidence — name the tool in the scenario's \
             \"effects\", or say \"annotations\": \"commit\" to judge such repeats as duplicates"
        ));
    }
    lines
}

/// What `inspect` says of an MCP recording beyond the trace: each injected fault and what the
/// client got, each duplicate and possible duplicate with its evidence, calls in flight, and
/// whether the session finished.
fn mcp_inspect_lines(
    report: &crate::report::Report,
    session: &crate::mcp::session::McpSession,
    live: bool,
) -> Vec<String> {
    let mut lines = Vec::new();
    for c in report.calls.iter().filter(|c| c.injected) {
        let got = session
            .call(c.id)
            .map_or_else(|| "no record".to_owned(), |r| r.delivered.describe());
        lines.push(format!(
            "fault: call #{} {} — {} ({}); the client got {got}",
            c.id,
            crate::printable::quoted(&c.tool.to_lossy()),
            c.fault.as_ref().map_or_else(String::new, |f| f.to_lossy()),
            c.kind.map_or("", |k| k.as_str()),
        ));
    }
    // What the server answered when the client never got it: what really committed.
    for r in &session.calls {
        let parts = r.server_answered();
        if !parts.is_empty() {
            let shown: Vec<String> = parts.iter().map(|(k, v)| format!("{k} {v}")).collect();
            lines.push(
                crate::printable::line(&format!(
                    "lost answer: call #{} — the server answered {}; the client never got it",
                    r.call,
                    shown.join(" · ")
                ))
                .into_owned(),
            );
        }
    }
    lines.extend(mcp_lines(report, session, true));
    for r in &session.calls {
        if let Some(u) = &r.unknown {
            lines.push(format!(
                "outcome unknown: call #{} — {} (the server may have committed it or not)",
                r.call,
                crate::printable::line(&u.why)
            ));
        }
    }
    for r in session.unknown_repeats(&report.effects) {
        lines.push(r.line());
    }
    for c in report
        .calls
        .iter()
        .filter(|c| c.status == crate::report::Status::Running)
    {
        lines.push(format!(
            "in flight: call #{} {} (running, no answer on record: the server may have committed it)",
            c.id,
            crate::printable::quoted(&c.tool.to_lossy())
        ));
    }
    lines.push(match session.finished {
        _ if live => "session: running (its proxy holds the recording)".to_owned(),
        Some(true) => format!("session: finished ({})", document::how_it_ended(session)),
        _ => format!(
            "session: not finished ({})",
            document::how_it_ended(session)
        ),
    });
    lines
}

/// Duplicate commits with their evidence, as `check --json` and `inspect --json` give them.
fn duplicates_json(
    report: &crate::report::Report,
    session: &crate::mcp::session::McpSession,
) -> Vec<crate::json::Value> {
    duplicates(report, session)
        .into_iter()
        .map(|d| {
            crate::obj! {
                "name" => d.name, "key" => d.key, "call" => d.call, "evidence" => d.evidence,
                "first_call" => d.first_call, "first_evidence" => d.first_evidence,
            }
        })
        .collect()
}

/// The calls whose outcome nobody saw, as `check --json` and `inspect --json` give them: the
/// call, why, and each other call that committed one of its effects (a later one, else one
/// before it).
fn unknown_json(
    report: &crate::report::Report,
    session: &crate::mcp::session::McpSession,
) -> Vec<crate::json::Value> {
    use crate::json::Value;
    let repeats = session.unknown_repeats(&report.effects);
    session
        .calls
        .iter()
        .filter_map(|r| Some((r.call, r.unknown.as_ref()?)))
        .map(|(call, u)| {
            let again = repeats
                .iter()
                .filter(|x| x.unknown == call)
                .map(|x| crate::obj! {"call" => x.call, "name" => x.name.as_str(), "key" => x.key.as_str(), "also_unknown" => x.also_unknown})
                .collect();
            crate::obj! {"call" => call, "why" => u.why.as_str(), "again" => Value::Array(again)}
        })
        .collect()
}

/// The ids of calls left running (no answer on record).
fn in_flight_json(report: &crate::report::Report) -> Vec<crate::json::Value> {
    report
        .calls
        .iter()
        .filter(|c| c.status == crate::report::Status::Running)
        .map(|c| crate::json::Value::from(c.id))
        .collect()
}

/// What `inspect` says of an MCP session, as JSON: the peers and protocol, each injected
/// fault with what the client got and what the server answered, every answer the client never
/// got (`lost_answers`), duplicate commits with their evidence, calls in flight,
/// how the session ended, the transport and the agent (when the recording names one).
fn mcp_inspect_value(
    report: &crate::report::Report,
    session: &crate::mcp::session::McpSession,
    live: bool,
) -> crate::json::Value {
    use crate::json::Value;
    use crate::obj;
    let name = crate::mcp::session::McpSession::peer_name;
    // A dropped answer (`{"result": ...}`) as its result: what the client would have got.
    let answered = |d: &Value| {
        d.as_object()
            .and_then(|o| o.get("result"))
            .cloned()
            .unwrap_or_else(|| d.clone())
    };
    let faults = report
        .calls
        .iter()
        .filter(|c| c.injected)
        .map(|c| {
            obj! {
                "call" => c.id,
                "tool" => c.tool.to_lossy(),
                "rule" => c.fault.as_ref().map(|f| f.to_lossy()),
                "kind" => c.kind.map(|k| k.as_str()),
                "client_got" => session.call(c.id).map(|r| r.delivered.describe()),
                "server_answered" => session.call(c.id).and_then(|r| r.dropped.as_ref()).map_or(Value::Null, answered),
            }
        })
        .collect();
    let lost = session
        .calls
        .iter()
        .filter_map(|r| Some((r, r.dropped.as_ref()?)))
        .map(|(r, d)| {
            obj! {
                "call" => r.call,
                "client_got" => r.delivered.describe(),
                "server_answered" => answered(d),
            }
        })
        .collect();
    let dups = duplicates_json(report, session);
    let in_flight = in_flight_json(report);
    obj! {
        "protocol_version" => session.protocol_version.as_deref(),
        "client" => name(&session.client_info),
        "server" => name(&session.server_info),
        "recorded_calls" => session.calls.len(),
        "faults" => Value::Array(faults),
        "duplicates" => Value::Array(dups),
        "lost_answers" => Value::Array(lost),
        "in_flight" => Value::Array(in_flight),
        "unknown_outcomes" => Value::Array(unknown_json(report, session)),
        "finished" => session.finished,
        "live" => live,
        "ended" => document::how_it_ended(session),
        "transport" => session.transport.as_ref().map_or(Value::Null, |t| obj! {
            "client" => t.client.as_str(),
            "server" => t.server.as_str(),
            "url" => t.url.as_deref(),
            "listen" => t.listen.as_deref(),
            "added_headers" => Value::Array(t.added_headers.iter().map(|(n, _)| Value::from(n.as_str())).collect()),
        }),
        "agent" => session.agent.as_ref().map_or(Value::Null, |a| obj! {
            "command" => a.command.as_str(),
            "cwd" => a.cwd.as_str(),
        }),
    }
}

/// `check --json` for an MCP recording: the contract object `v`, and under `mcp` the details the text
/// gives (duplicates with their evidence, possible duplicates, calls in flight, a recovery).
fn mcp_json(
    mut v: crate::json::Value,
    trace: &document::Trace,
    report: &crate::report::Report,
    session: &crate::mcp::session::McpSession,
) -> String {
    use crate::json::Value;
    use crate::obj;
    let dups = duplicates_json(report, session);
    let listed = |found: Vec<(u64, u64, String, String)>| {
        found
            .into_iter()
            .map(|(call, first, name, key)| {
                obj! {"name" => name, "key" => key, "call" => call, "first_call" => first, "evidence" => "annotations"}
            })
            .collect()
    };
    let possible = listed(session.warned_duplicates());
    let declared = listed(session.declared_duplicates());
    let in_flight = in_flight_json(report);
    if let Value::Object(o) = &mut v {
        o.push(
            "mcp",
            obj! {
                "duplicates" => Value::Array(dups),
                "possible_duplicates" => Value::Array(possible),
                "declared_duplicates" => Value::Array(declared),
                "in_flight" => Value::Array(in_flight),
                "unknown_outcomes" => Value::Array(unknown_json(report, session)),
                "finished" => session.finished,
                "live" => trace.live,
                "recovered" => trace.recovered.as_deref(),
            },
        );
    }
    crate::json::one_line(&v) + "\n"
}
