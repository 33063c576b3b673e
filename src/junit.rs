//! JUnit XML, as CI systems read it (GitHub Actions reporters, GitLab, Jenkins, Buildkite):
//! `<testsuites>` of `<testsuite>`s of `<testcase>`s, a failed case holding a `<failure>`
//! whose `message` is the reason and whose text is the detail (the calls behind it), and
//! `<properties>` for what a run was (its seed, its recording). Text is escaped for XML 1.0,
//! whose characters exclude most control characters: those are written as `\u{..}`.

use std::fmt::Write;

/// A named group of cases (one recording, one campaign).
#[derive(Debug, Clone, Default)]
pub struct Suite {
    /// The suite's name.
    pub name: String,
    /// Properties of the whole suite.
    pub properties: Vec<(String, String)>,
    /// Its cases, in order.
    pub cases: Vec<Case>,
}

/// One test case: a check, or a run.
#[derive(Debug, Clone, Default)]
pub struct Case {
    /// The case's name.
    pub name: String,
    /// Its class (the group CI systems show it under).
    pub classname: String,
    /// Seconds it took.
    pub time: f64,
    /// Properties of this case (its seed, its recording).
    pub properties: Vec<(String, String)>,
    /// Why it failed, when it did.
    pub failure: Option<Failure>,
    /// Why it was not run, when it was not (a missing seed).
    pub skipped: Option<String>,
}

/// A failed case's reason and detail.
#[derive(Debug, Clone, Default)]
pub struct Failure {
    /// One line: the reason.
    pub message: String,
    /// The failure's type (the check's name, or the run's outcome).
    pub kind: String,
    /// Lines of detail: the calls behind the failure.
    pub text: String,
}

/// `text` escaped for an XML attribute or text node.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

fn properties(out: &mut String, indent: &str, props: &[(String, String)]) {
    if props.is_empty() {
        return;
    }
    let _ = writeln!(out, "{indent}<properties>");
    for (k, v) in props {
        let _ = writeln!(
            out,
            "{indent}  <property name=\"{}\" value=\"{}\"/>",
            escape(k),
            escape(v)
        );
    }
    let _ = writeln!(out, "{indent}</properties>");
}

/// Whether `head` (a file's first bytes) is a JUnit report: an XML document of test suites.
pub fn is_junit(head: &[u8]) -> bool {
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map_or(&head[..0], |i| &head[i..]);
    let start = start.strip_prefix("\u{feff}".as_bytes()).unwrap_or(start);
    (start.starts_with(b"<?xml") || start.starts_with(b"<testsuite"))
        && memchr::memmem::find(head, b"<testsuite").is_some()
}

/// The document for `suites`.
pub fn to_xml(suites: &[Suite]) -> String {
    let count = |f: fn(&Case) -> bool| -> usize {
        suites
            .iter()
            .flat_map(|s| &s.cases)
            .filter(|c| f(c))
            .count()
    };
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"toolstorm\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">",
        count(|_| true),
        count(|c| c.failure.is_some()),
        count(|c| c.skipped.is_some())
    );
    for s in suites {
        let failures = s.cases.iter().filter(|c| c.failure.is_some()).count();
        let skipped = s.cases.iter().filter(|c| c.skipped.is_some()).count();
        let time: f64 = s.cases.iter().map(|c| c.time).sum();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.3}\">",
            escape(&s.name),
            s.cases.len()
        );
        properties(&mut out, "    ", &s.properties);
        for c in &s.cases {
            let _ = write!(
                out,
                "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
                escape(&c.name),
                escape(&c.classname),
                c.time
            );
            if c.failure.is_none() && c.skipped.is_none() && c.properties.is_empty() {
                out.push_str("/>\n");
                continue;
            }
            out.push_str(">\n");
            properties(&mut out, "      ", &c.properties);
            if let Some(f) = &c.failure {
                let _ = writeln!(
                    out,
                    "      <failure message=\"{}\" type=\"{}\">{}</failure>",
                    escape(&f.message),
                    escape(&f.kind),
                    escape(&f.text)
                );
            }
            if let Some(why) = &c.skipped {
                let _ = writeln!(out, "      <skipped message=\"{}\"/>", escape(why));
            }
            out.push_str("    </testcase>\n");
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_counts_and_escapes() {
        let suites = vec![Suite {
            name: "incident.json".into(),
            properties: vec![("seed".into(), "42".into())],
            cases: vec![
                Case {
                    name: "Call budget".into(),
                    classname: "toolstorm.check".into(),
                    ..Case::default()
                },
                Case {
                    name: "No duplicate side effects".into(),
                    classname: "toolstorm.check".into(),
                    failure: Some(Failure {
                        message: "1 duplicate <effect> & \"more\"".into(),
                        kind: "No duplicate side effects".into(),
                        text: "call #2 committed o-1 again\x1b[31m".into(),
                    }),
                    ..Case::default()
                },
            ],
        }];
        let xml = to_xml(&suites);
        assert!(xml.contains("tests=\"2\" failures=\"1\""), "{xml}");
        assert!(
            xml.contains("1 duplicate &lt;effect&gt; &amp; &quot;more&quot;"),
            "{xml}"
        );
        assert!(xml.contains("again\\u{1b}[31m</failure>"), "{xml}");
        assert!(
            xml.contains("<property name=\"seed\" value=\"42\"/>"),
            "{xml}"
        );
        assert!(!xml.contains('\x1b'));
    }
}
