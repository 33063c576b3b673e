//! The canonical text of a report written straight from its typed form: the same bytes as
//! `canonical(&report.to_value())` (sorted keys, Python's float and escape rules), without
//! building and sorting a value tree first. A run's digest is the SHA-256 of this text, and
//! campaigns take one per run, so this is on the hot path.

use super::{Call, Coverage, Effect, ErrorRecord, Report, SCHEMA_VERSION};
use crate::json::{Text, write_canonical, write_int, write_py_repr, write_text};

/// Writes `"key":` (keys here are plain ASCII).
fn key(name: &str, out: &mut String) {
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
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
        key("known", out);
        out.push_str(bool_text(self.known));
        if let Some(r) = self.retry_after {
            out.push(',');
            key("retry_after", out);
            write_py_repr(r, out);
        }
        out.push(',');
        key("type", out);
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
        out.push('{');
        let start = out.len();
        if arguments {
            key("arguments", out);
            write_canonical(&self.arguments, out);
            out.push(',');
        }
        let taken = out.len() - start;
        key("capture_error", out);
        out.push_str(bool_text(self.capture_error));
        out.push(',');
        key("elapsed", out);
        write_py_repr(self.elapsed, out);
        out.push(',');
        key("error", out);
        match &self.error {
            Some(e) => e.write_canonical(out),
            None => out.push_str("null"),
        }
        out.push(',');
        key("executed", out);
        out.push_str(bool_text(self.executed));
        out.push(',');
        key("fault", out);
        opt_text(self.fault.as_ref(), out);
        out.push(',');
        key("id", out);
        write_int(self.id, out);
        out.push(',');
        key("injected", out);
        out.push_str(bool_text(self.injected));
        out.push(',');
        key("key", out);
        write_text(&self.key, out);
        out.push(',');
        key("kind", out);
        match self.kind {
            Some(k) => {
                out.push('"');
                out.push_str(k.as_str());
                out.push('"');
            }
            None => out.push_str("null"),
        }
        out.push(',');
        key("ordinal", out);
        write_int(self.ordinal, out);
        out.push(',');
        if output {
            key("output", out);
            write_canonical(&self.output, out);
            out.push(',');
        }
        key("parent_id", out);
        match self.parent_id {
            Some(p) => write_int(p, out),
            None => out.push_str("null"),
        }
        out.push(',');
        key("started", out);
        write_py_repr(self.started, out);
        out.push(',');
        key("status", out);
        out.push('"');
        out.push_str(self.status.as_str());
        out.push('"');
        out.push(',');
        key("tool", out);
        write_text(&self.tool, out);
        out.push('}');
        taken
    }
}

impl Effect {
    /// Appends the canonical text of [`Effect::to_value`] to `out`.
    pub fn write_canonical(&self, out: &mut String) {
        out.push('{');
        key("at", out);
        write_py_repr(self.at, out);
        out.push(',');
        key("call_id", out);
        write_int(self.call_id, out);
        out.push(',');
        key("identity", out);
        write_int(self.identity, out);
        out.push(',');
        key("key", out);
        write_text(&self.key, out);
        out.push(',');
        key("name", out);
        write_text(&self.name, out);
        out.push(',');
        key("redacted", out);
        out.push_str(bool_text(self.redacted));
        out.push('}');
    }
}

impl Coverage {
    /// Appends the canonical text of [`Coverage::to_value`] to `out`.
    pub fn write_canonical(&self, out: &mut String) {
        out.push('{');
        key("eligible", out);
        write_int(self.eligible, out);
        out.push(',');
        key("selected", out);
        write_int(self.selected, out);
        out.push(',');
        key("triggered", out);
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
        key("budget_rejections", out);
        write_int(self.budget_rejections, out);
        out.push(',');
        key("calls", out);
        out.push('[');
        for (i, c) in self.calls.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            c.write_canonical(out);
        }
        out.push(']');
        out.push(',');
        key("capture", out);
        out.push_str(bool_text(self.capture));
        out.push(',');
        key("clock", out);
        write_text(&Text::from(self.clock.as_str()), out);
        out.push(',');
        key("coverage", out);
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
        out.push(',');
        key("effects", out);
        out.push('[');
        for (i, e) in self.effects.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            e.write_canonical(out);
        }
        out.push(']');
        out.push(',');
        key("rules", out);
        out.push('[');
        for (i, r) in self.rules.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_canonical(r, out);
        }
        out.push(']');
        out.push(',');
        key("schema_version", out);
        write_int(SCHEMA_VERSION, out);
        out.push(',');
        key("seed", out);
        match &self.seed {
            crate::json::Int::Small(v) => write_int(*v, out),
            crate::json::Int::Big(s) => out.push_str(s),
        }
        out.push('}');
    }
}
