//! The canonical text of a report written straight from its typed form: the same bytes as
//! `canonical(&report.to_value())` (sorted keys, Python's float and escape rules), without
//! building and sorting a value tree first. A run's digest is the SHA-256 of this text, and
//! campaigns take one per run, so this is on the hot path.

use super::{Call, Coverage, Effect, ErrorRecord, Report, SCHEMA_VERSION};
use crate::json::{Text, write_canonical, write_int, write_py_repr, write_text};

/// Writes `"key":` (keys here are plain ASCII), as one piece of text.
macro_rules! key {
    ($out:expr, $name:literal) => {
        $out.push_str(concat!("\"", $name, "\":"))
    };
}

/// Writes `,"key":`, the next member's start, as one piece of text (a call's entry has
/// sixteen members, and it is written twice per call).
macro_rules! next_key {
    ($out:expr, $name:literal) => {
        $out.push_str(concat!(",\"", $name, "\":"))
    };
}

fn bool_text(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

fn opt_text(t: Option<&Text>, out: &mut String) {
    match t {
        Some(t) => write_text(t, out),
        None => out.push_str("null"),
    }
}

impl ErrorRecord {
    fn write_canonical(&self, out: &mut String) {
        out.push('{');
        key!(out, "known");
        out.push_str(bool_text(self.known));
        if let Some(r) = self.retry_after {
            next_key!(out, "retry_after");
            write_py_repr(r, out);
        }
        next_key!(out, "type");
        write_text(&self.type_name, out);
        out.push('}');
    }
}

impl Call {
    /// Appends the canonical text of [`Call::to_value`] to `out`.
    pub fn write_canonical(&self, out: &mut String) {
        self.write_members(true, true, out);
    }

    /// Appends the canonical text of [`Call::to_value`] to `out`, without the `arguments`
    /// member (the first) unless `arguments`, and without `output` unless `output`: what a
    /// journal's end line holds, when its begin line has the arguments and the answer's
    /// record has the output. Gives the bytes the `arguments` member took, with its comma.
    pub fn write_members(&self, arguments: bool, output: bool, out: &mut String) -> usize {
        self.write_members_executed(arguments, output, self.executed, out)
    }

    /// [`Call::write_members`] with `executed` as given: a journal's begin line writes a call
    /// that is about to run as executed, before its request leaves (write-ahead).
    pub fn write_members_executed(
        &self,
        arguments: bool,
        output: bool,
        executed: bool,
        out: &mut String,
    ) -> usize {
        out.push('{');
        let start = out.len();
        if arguments {
            key!(out, "arguments");
            write_canonical(&self.arguments, out);
            out.push(',');
        }
        let taken = out.len() - start;
        key!(out, "capture_error");
        out.push_str(bool_text(self.capture_error));
        next_key!(out, "elapsed");
        write_py_repr(self.elapsed, out);
        next_key!(out, "error");
        match &self.error {
            Some(e) => e.write_canonical(out),
            None => out.push_str("null"),
        }
        next_key!(out, "executed");
        out.push_str(bool_text(executed));
        next_key!(out, "fault");
        opt_text(self.fault.as_ref(), out);
        next_key!(out, "id");
        write_int(self.id, out);
        next_key!(out, "injected");
        out.push_str(bool_text(self.injected));
        next_key!(out, "key");
        write_text(&self.key, out);
        next_key!(out, "kind");
        match self.kind {
            Some(k) => {
                out.push('"');
                out.push_str(k.as_str());
                out.push('"');
            }
            None => out.push_str("null"),
        }
        next_key!(out, "ordinal");
        write_int(self.ordinal, out);
        out.push(',');
        if output {
            key!(out, "output");
            write_canonical(&self.output, out);
            out.push(',');
        }
        key!(out, "parent_id");
        match self.parent_id {
            Some(p) => write_int(p, out),
            None => out.push_str("null"),
        }
        next_key!(out, "started");
        write_py_repr(self.started, out);
        next_key!(out, "status");
        out.push('"');
        out.push_str(self.status.as_str());
        out.push('"');
        next_key!(out, "tool");
        write_text(&self.tool, out);
        out.push('}');
        taken
    }
}

impl Effect {
    /// Appends the canonical text of [`Effect::to_value`] to `out`.
    pub fn write_canonical(&self, out: &mut String) {
        out.push('{');
        key!(out, "at");
        write_py_repr(self.at, out);
        next_key!(out, "call_id");
        write_int(self.call_id, out);
        next_key!(out, "identity");
        write_int(self.identity, out);
        next_key!(out, "key");
        write_text(&self.key, out);
        next_key!(out, "name");
        write_text(&self.name, out);
        next_key!(out, "redacted");
        out.push_str(bool_text(self.redacted));
        out.push('}');
    }
}

impl Coverage {
    /// Appends the canonical text of [`Coverage::to_value`] to `out`.
    pub fn write_canonical(&self, out: &mut String) {
        out.push('{');
        key!(out, "eligible");
        write_int(self.eligible, out);
        next_key!(out, "selected");
        write_int(self.selected, out);
        next_key!(out, "triggered");
        write_int(self.triggered, out);
        out.push('}');
    }
}

impl Report {
    /// The canonical text of [`Report::to_value`] (the digest's input).
    pub fn canonical(&self) -> String {
        // About 600 bytes a call: one allocation for most reports.
        let mut out = String::with_capacity(256 + 640 * self.calls.len());
        self.write_canonical(&mut out);
        out
    }

    /// Appends the canonical text to `out`.
    pub fn write_canonical(&self, out: &mut String) {
        out.push('{');
        key!(out, "budget_rejections");
        write_int(self.budget_rejections, out);
        next_key!(out, "calls");
        out.push('[');
        for (i, c) in self.calls.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            c.write_canonical(out);
        }
        out.push(']');
        next_key!(out, "capture");
        out.push_str(bool_text(self.capture));
        next_key!(out, "clock");
        write_text(&Text::from(self.clock.as_str()), out);
        next_key!(out, "coverage");
        out.push('{');
        let mut names: Vec<&(Text, Coverage)> = self.coverage.iter().collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (i, (name, c)) in names.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_text(name, out);
            out.push(':');
            c.write_canonical(out);
        }
        out.push('}');
        next_key!(out, "effects");
        out.push('[');
        for (i, e) in self.effects.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            e.write_canonical(out);
        }
        out.push(']');
        next_key!(out, "rules");
        out.push('[');
        for (i, r) in self.rules.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_canonical(r, out);
        }
        out.push(']');
        next_key!(out, "schema_version");
        write_int(SCHEMA_VERSION, out);
        next_key!(out, "seed");
        match &self.seed {
            crate::json::Int::Small(v) => write_int(*v, out),
            crate::json::Int::Big(s) => out.push_str(s),
        }
        out.push('}');
    }
}
