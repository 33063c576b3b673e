//! Two runs side by side, as text: each aligned call (tool, arguments, the fault each met,
//! what each client got, what each committed), then every check of both. `campaign --rerun`
//! prints a run and its re-run with it, `diff` any two.

use super::Io;
use crate::document::compare::{CallSide, RecordingDiff};

/// Two runs call by call (tool, arguments, fault, what the client got, commits), then
/// every check side by side.
pub(crate) fn print_comparison(
    d: &RecordingDiff,
    title: &str,
    (left, right): (&str, &str),
    io: &mut Io<'_>,
) {
    let mut lines = vec![format!("{title}: {}", d.diff.summary())];
    let (fault, got) = (
        format!("fault: {left} → {right}"),
        format!("client got: {left} → {right} · commits"),
    );
    lines.push(format!(
        "  {:<2}{:<18}{:<28}{fault:<34}{got}",
        "", "tool", "arguments"
    ));
    for row in &d.diff.rows {
        let b = row.before().and_then(|i| d.side(false, i));
        let a = row.after().and_then(|i| d.side(true, i));
        let args = a
            .as_ref()
            .or(b.as_ref())
            .map(|s| s.arguments.clone())
            .unwrap_or_default();
        let args: String = if args.chars().count() > 26 {
            args.chars().take(25).chain(std::iter::once('…')).collect()
        } else {
            args
        };
        let f = |s: &Option<CallSide>, pick: fn(&CallSide) -> String| {
            s.as_ref().map_or_else(|| "(none)".to_owned(), pick)
        };
        lines.push(format!(
            "  {:<2}{:<18}{:<28}{:<34}{} → {} · {} → {}",
            row.marker(),
            d.tool(row),
            args,
            format!(
                "{} → {}",
                f(&b, |s| s.fault.clone()),
                f(&a, |s| s.fault.clone())
            ),
            f(&b, |s| s.got.clone()),
            f(&a, |s| s.got.clone()),
            b.as_ref().map_or(0, |s| s.commits),
            a.as_ref().map_or(0, |s| s.commits),
        ));
    }
    lines.push(format!("  verdicts: {left} → {right}"));
    let names = d.check_names();
    let mark = |checks: &[crate::contract::Check], name: &str| {
        checks
            .iter()
            .find(|c| c.name == name)
            .map_or("-", |c| if c.passed { "✓" } else { "✗" })
    };
    for name in names {
        let detail = d
            .after_checks
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.detail.clone())
            .unwrap_or_default();
        // A campaign judges a run without it: it is the scenario's coverage on that seed.
        let aside = if crate::contract::is_coverage(name) {
            " (coverage, not part of a run's verdict)"
        } else {
            ""
        };
        lines.push(format!(
            "    {} → {}  {name}: {detail}{aside}",
            mark(&d.before_checks, name),
            mark(&d.after_checks, name)
        ));
    }
    for l in lines {
        let _ = writeln!(io.out, "{}", crate::printable::line(&l));
    }
}
