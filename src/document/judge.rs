//! The verdicts of a trace, as `check` gives them: every rule fired, no duplicate effects,
//! the call budget — and for an MCP recording its own: duplicates the server's annotations
//! declare, commits after an outcome nobody saw, whether the session finished with nothing
//! left with the server, and whether the recording holds every call.

use super::{DEFAULT_MAX_CALLS, Trace};
use crate::cassette::{self, CheckSummary};
use crate::contract::Check;
use crate::error::ConfigError;
use crate::mcp::scenario::McpCheck;
use crate::mcp::session::McpSession;

/// `check`'s verdicts for a trace: every rule fired, no duplicate effects, the call budget
/// (`max_calls`, else an MCP recording's own budget, else 100) — plus an MCP scenario's own
/// checks.
pub fn judge(trace: &Trace, max_calls: Option<i64>) -> Result<CheckSummary, ConfigError> {
    let budget = max_calls
        .or(trace.mcp.as_ref().map(|m| m.max_calls))
        .unwrap_or(DEFAULT_MAX_CALLS);
    let mut summary = cassette::check(&trace.cassettes, budget)?;
    if let Some(m) = &trace.mcp {
        for (checks, c) in summary.runs.iter_mut().zip(&trace.cassettes) {
            unknown_outcomes(checks, m, &c.report);
            for check in &m.checks {
                match check {
                    McpCheck::RetryAfterRespected => {
                        let n = crate::lab::retry_after_violations(&c.report);
                        checks.push(Check {
                            name: "Retry-after respected".into(),
                            passed: n == 0,
                            detail: format!("{n} retry(s) occurred before the advertised delay"),
                        });
                    }
                }
            }
            declared_duplicates(m, checks);
            checks.push(session_finished(m, &c.report, trace.live));
            let short = trace.recovered.as_deref().filter(|_| trace.short);
            checks.push(recording_complete(m, short));
        }
    }
    Ok(summary)
}

/// The sentence `check` gives a retry the server's annotations make a duplicate.
pub fn declared_duplicate_text(call: u64, first: u64, name: &str, key: &str) -> String {
    format!(
        "call #{call} repeated call #{first} of {} with the same arguments ({}) after its answer \
         was lost: the server declares this tool non-idempotent; add an `effects` entry to \
         judge by what committed",
        crate::printable::quoted(name),
        crate::printable::line(key)
    )
}

/// Fails `No duplicate side effects` of an MCP recording for each retry the server's own
/// annotations make a duplicate ([`McpSession::declared_duplicates`]).
fn declared_duplicates(m: &McpSession, checks: &mut [Check]) {
    let found = m.declared_duplicates();
    let Some((call, first, name, key)) = found.first() else {
        return;
    };
    let Some(check) = checks
        .iter_mut()
        .find(|c| c.name == "No duplicate side effects")
    else {
        return;
    };
    check.passed = false;
    check.detail = format!(
        "{}; {} declared non-idempotent: {}{}",
        check.detail,
        crate::printable::count(found.len(), "retry", "retries"),
        declared_duplicate_text(*call, *first, name, key),
        match found.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        }
    );
}

/// `No duplicate side effects` with the calls whose outcome nobody saw: when a call's outcome
/// is unknown (its answer never reached the client whole) and a later call commits one of its
/// effects again — or its outcome is unknown too — or an earlier call committed it before, the
/// server may hold two commits
/// ([`McpSession::unknown_repeats`]). Only effect evidence that the later call committed
/// nothing new (a commit id seen before, the server's own `_meta` list without it) clears it.
fn unknown_outcomes(checks: &mut [Check], m: &McpSession, report: &crate::report::Report) {
    let found: Vec<String> = m
        .unknown_repeats(&report.effects)
        .iter()
        .map(|r| r.line())
        .collect();
    if found.is_empty() {
        return;
    }
    if let Some(c) = checks
        .iter_mut()
        .find(|c| c.name == "No duplicate side effects")
    {
        c.passed = false;
        c.detail = format!("{}; {}", c.detail, found.join("; "));
    }
}

/// The `Session finished` check of an MCP recording: no call was left in flight without an
/// answer on record. How the session ended is said, but only a call in flight fails it: a
/// client that kills the proxy after its last answer (pydantic-ai does, always), or that kills
/// it while the server takes its time to exit (the Python SDK after 4 s), lost nothing and
/// left nothing unknown. A session that never started fails it too: the server answered
/// `initialize` with an error (unreachable, a web page at the URL, a refused credential) and
/// no call was made — the agent was never tested, whatever the other checks say.
fn session_finished(m: &McpSession, report: &crate::report::Report, live: bool) -> Check {
    if let (false, true, Some(why)) = (live, report.calls.is_empty(), refused_handshake(m)) {
        return Check {
            name: "Session finished".into(),
            passed: false,
            detail: format!(
                "the session never started: the server answered initialize with an error \
                 ({why}); no call was made"
            ),
        };
    }
    let in_flight: Vec<String> = report
        .calls
        .iter()
        .filter(|c| c.status == crate::report::Status::Running)
        .map(|c| format!("#{} {}", c.id, crate::printable::quoted(&c.tool.to_lossy())))
        .collect();
    // Calls the proxy gave up on while the server held them: whatever ended the session
    // (a signal, the client leaving, the server exiting), their outcome is unknown.
    let held: Vec<String> = m
        .calls
        .iter()
        .filter(|r| r.unknown.as_ref().is_some_and(|u| u.at_end))
        .map(|r| {
            let tool = report
                .calls
                .iter()
                .find(|c| c.id == r.call)
                .map(|c| crate::printable::quoted(&c.tool.to_lossy()).into_owned())
                .unwrap_or_default();
            format!("#{} {tool}", r.call)
        })
        .collect();
    let detail = if live {
        format!(
            "the session is still running (its proxy holds the recording): {} call(s) in flight \
             so far{}",
            in_flight.len(),
            if in_flight.is_empty() {
                String::new()
            } else {
                format!(" ({})", in_flight.join(", "))
            }
        )
    } else if in_flight.is_empty() && held.is_empty() {
        format!("{}; no call was left in flight", how_it_ended(m))
    } else if in_flight.is_empty() {
        format!(
            "{}, with {} call(s) still with the server ({}): nobody saw their outcome; the \
             server may have committed them",
            how_it_ended(m),
            held.len(),
            held.join(", ")
        )
    } else {
        format!(
            "the session did not end: {} call(s) in flight with no answer on record ({}); the \
             server may have committed them",
            in_flight.len(),
            in_flight.join(", ")
        )
    };
    Check {
        name: "Session finished".into(),
        passed: in_flight.is_empty() && (live || held.is_empty()),
        detail,
    }
}

/// The error the server answered `initialize` with, when no `initialize` of the recording
/// was answered with a result.
fn refused_handshake(m: &McpSession) -> Option<String> {
    let answers = || {
        m.exchanges
            .iter()
            .filter(|x| x.method == "initialize")
            .filter_map(|x| x.response.as_object())
    };
    if answers().any(|r| r.get("result").is_some()) {
        return None;
    }
    let error = answers().find_map(|r| r.get("error"))?.as_object()?;
    let text = error
        .get("message")
        .and_then(crate::json::Value::as_str)
        .unwrap_or("no message");
    let code = error
        .get("code")
        .map(|c| format!("JSON-RPC error {}: ", crate::json::canonical(c)))
        .unwrap_or_default();
    Some(format!("{code}{}", crate::printable::line(text)))
}

/// How an MCP session ended, as its files tell it.
pub fn how_it_ended(m: &McpSession) -> &'static str {
    match (m.finished, m.client_closed) {
        (Some(true), _) => "the proxy finished the session",
        (None, _) => "the recording was made before sessions said how they ended",
        (Some(false), Some(true)) => {
            "the client closed the session; the proxy had not written its end (it was stopped \
             while the server exited, or is finishing now)"
        }
        (Some(false), _) => {
            "the session was not closed: the proxy was killed after its last answer, or is \
             still running"
        }
    }
}

/// The `Recording complete` check of an MCP recording: the recording took every
/// `tools/call` of the session (it never stopped for being full or for a journal it could not
/// write; then the proxy answered the rest with an error, and the recording says so), and its
/// files hold every call its journal does (`short`: why they do not).
fn recording_complete(m: &McpSession, short: Option<&str>) -> Check {
    let mut check = stopped_check(m);
    if let Some(why) = short {
        let was = std::mem::take(&mut check.detail);
        check.detail = if check.passed {
            format!("{why}: the calls past them are not in the recording")
        } else {
            format!("{why}; {was}")
        };
        check.passed = false;
    }
    check
}

/// The `Recording complete` check as the sidecar's `recording_stopped` says it.
fn stopped_check(m: &McpSession) -> Check {
    let (passed, detail) = match &m.recording_stopped {
        None => (
            true,
            "the recording took every tools/call the client sent".to_owned(),
        ),
        Some(st) => (
            false,
            format!(
                "the recording stopped after {} call(s): {}; {}{} later tools/call request(s) \
                 were answered with an error by the proxy and never reached the server",
                st.after_calls,
                st.reason,
                // Counted as the recording last wrote it: a session whose end was never
                // written (its disk full, its proxy killed) refused more than that.
                if m.finished == Some(true) {
                    ""
                } else {
                    "at least "
                },
                st.refused
            ),
        ),
    };
    Check {
        name: "Recording complete".into(),
        passed,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{Value, parse};
    use crate::mcp::session::Exchange;

    fn init(response: &str) -> Exchange {
        Exchange {
            method: "initialize".into(),
            params: Value::Null,
            response: parse(response).expect("JSON"),
        }
    }

    #[test]
    fn a_handshake_is_refused_only_when_no_initialize_got_a_result() {
        let refused = init(r#"{"error":{"code":-32000,"message":"cannot reach it"}}"#);
        let agreed = init(r#"{"result":{"protocolVersion":"2025-11-25"}}"#);
        let mut m = McpSession::default();
        assert_eq!(refused_handshake(&m), None, "no initialize: not said");
        m.exchanges = vec![refused.clone()];
        assert_eq!(
            refused_handshake(&m).as_deref(),
            Some("JSON-RPC error -32000: cannot reach it")
        );
        // A session continued (--append) after a refused one, or a client that tried again.
        m.exchanges = vec![refused, agreed];
        assert_eq!(refused_handshake(&m), None);
        let report = crate::report::Report {
            seed: crate::json::Int::parse_decimal("1").expect("an integer"),
            clock: "RealClock".into(),
            calls: Vec::new(),
            effects: Vec::new(),
            rules: Vec::new(),
            coverage: Vec::new(),
            budget_rejections: 0,
            capture: true,
        };
        m.exchanges = vec![init(r#"{"error":{"code":-32001,"message":"401"}}"#)];
        let check = session_finished(&m, &report, false);
        assert!(!check.passed);
        assert!(check.detail.contains("never started"), "{}", check.detail);
        // While the proxy still runs, the session is not judged yet.
        assert!(session_finished(&m, &report, true).passed);
    }

    #[test]
    fn files_that_hold_fewer_calls_than_the_journal_are_not_a_complete_recording() {
        let m = McpSession::default();
        assert!(recording_complete(&m, None).passed);
        let short = "the journal holds 48 call(s), more than a recording can (the cassette \
                     would hold 11535063 bytes; a document may have at most 8,000,000); the \
                     files hold the 0 that fit";
        let check = recording_complete(&m, Some(short));
        assert!(!check.passed);
        assert_eq!(
            check.detail,
            format!("{short}: the calls past them are not in the recording")
        );
        // A recording that stopped says both.
        let stopped = McpSession {
            recording_stopped: Some(crate::mcp::session::Stopped {
                reason: "the recording is full".into(),
                after_calls: 3,
                refused: 1,
            }),
            finished: Some(true),
            ..McpSession::default()
        };
        let check = recording_complete(&stopped, Some(short));
        assert!(!check.passed);
        assert!(
            check.detail.starts_with(short)
                && check
                    .detail
                    .contains("the recording stopped after 3 call(s)"),
            "{}",
            check.detail
        );
    }
}
