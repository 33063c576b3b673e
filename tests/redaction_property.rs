//! No literal secret given to the redactor, and no value of a secret key, appears in any file
//! the product writes from a run: the cassette, the verdicts, or a scenario built from the
//! cassette's rules — whatever the payloads, effect labels and invocation keys hold.

use proptest::prelude::*;
use toolstorm::cassette::Cassette;
use toolstorm::contract::Contract;
use toolstorm::json::{Object, Text, Value, pretty};
use toolstorm::lab::RunConfig;
use toolstorm::lab::scenario::Scenario;
use toolstorm::lab::scenario_file::{PolicyChoice, ScenarioFile};
use toolstorm::redact::Redactor;
use toolstorm::rule::{FaultKind, RuleSpec};
use toolstorm::{Storm, obj};

/// Secrets look like nothing else in a trace: lowercase letters with a digit, 8–14 long.
fn secret() -> impl Strategy<Value = String> {
    "[a-z]{6,12}[0-9]{2}"
}

/// A payload that hides `s` in values, keys and nested lists, and puts `v` under secret keys.
fn payload(s: &str, v: &str, shape: u8) -> Value {
    let mut o = Object::new();
    o.push("note", format!("prefix {s} suffix"));
    o.push(Text::from(format!("key-{s}")), 1);
    o.push(
        "list",
        Value::Array(vec![Value::from(s), Value::from(format!("{s}{s}"))]),
    );
    o.push(
        ["password", "API-Key", "Set-Cookie", "customer_email"][usize::from(shape % 4)],
        v,
    );
    o.push(
        "nested",
        obj! {"token" => obj! {"deep" => v}, "ok" => "keep"},
    );
    Value::Object(o)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn secrets_never_reach_written_files(s in secret(), v in secret(), shape in any::<u8>(), fault in 0u8..3) {
        prop_assume!(!s.contains(&v) && !v.contains(&s));
        let redactor = Redactor::new(["customer_email"], [s.as_str()]).expect("redactor");
        let kind = [FaultKind::Replace, FaultKind::ResponseLost, FaultKind::Latency][usize::from(fault)];
        let rule = RuleSpec::new("r", "tool", kind).calls([1]).replacement(payload(&s, &v, shape)).build().expect("rule");
        let storm = Storm::builder().rule(rule).seed(1).redactor(redactor).build().expect("storm");
        for i in 0..3 {
            let args = payload(&s, &v, shape.wrapping_add(i));
            let _ = storm.invocation(&format!("req-{s}-{i}"), || {
                storm.call("tool", args.clone(), || {
                    storm.effect(&format!("write-{s}"), &format!("{v}-{i}"))?;
                    Ok(payload(&s, &v, shape))
                })
            });
        }
        let report = storm.report();
        let cassette = Cassette::from_report(&report).expect("valid").dumps();
        let verdicts = pretty(&Contract::new(&report).require_triggered(&[]).no_duplicate_effects().to_value());
        let scenario = ScenarioFile {
                scenario: Scenario {
                name: "from-cassette".into(),
                story: toolstorm::scenario_fields::Story {
                    title: "From a cassette".into(),
                    ..Default::default()
                },
                rules: report.rules.clone(),
                checks: Vec::new(),
            },
            config: RunConfig::default(),
            policy: PolicyChoice::All,
        }
        .to_text();
        for (name, text) in [("cassette", &cassette), ("verdicts", &verdicts), ("scenario", &scenario)] {
            prop_assert!(!text.contains(&s), "{} leaks the literal secret {}", name, s);
            // Effect keys are not secret-keyed values, so only payload values are checked for v.
            if name != "cassette" {
                prop_assert!(!text.contains(&v), "{} leaks a secret-key value {}", name, v);
            }
        }
        // In the cassette, v may appear only as an effect key (an identifier the caller chose).
        let without_effects: String = cassette.split("\"effects\"").next().unwrap_or("").to_owned();
        prop_assert!(!without_effects.contains(&v), "cassette calls leak a secret-key value {}", v);
        let rules_part: String = cassette.split("\"rules\"").nth(1).unwrap_or("").to_owned();
        prop_assert!(!rules_part.contains(&v), "cassette rules leak a secret-key value {}", v);
    }
}

/// Any JSON value whose keys and strings come from a small pool: plain words, secret keys in
/// several spellings, a word holding the literal secret, and repeats of each other.
fn pooled_value() -> impl Strategy<Value = Value> {
    let words = prop::sample::select(vec![
        "note",
        "order_id",
        "password",
        "API-Key",
        "x-hunter22-y",
        "[REDACTED]",
        "é",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(|i| Value::from(i64::from(i))),
        prop::num::f64::NORMAL.prop_map(Value::Float),
        Just(Value::Float(-0.0)),
        words.clone().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 40, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((words.clone(), inner), 0..6).prop_map(|members| {
                let mut o = Object::new();
                for (k, v) in members {
                    o.push(k, v);
                }
                Value::Object(o)
            }),
        ]
    })
}

proptest! {
    /// Capturing a value given up (or scrubbing one lent) keeps it uncopied only where
    /// redaction would not change it: the result is always what the copying form gives, to
    /// the bit, or the same refusal.
    #[test]
    fn capturing_an_owned_value_is_capturing_a_copy(v in pooled_value(), with_secret in any::<bool>()) {
        let secrets: Vec<&str> = if with_secret { vec!["hunter22"] } else { vec![] };
        let r = Redactor::new(Vec::<String>::new(), secrets).expect("redactor");
        let borrowed = r.capture(&v);
        let owned = r.capture_owned(v.clone());
        match (&borrowed, &owned) {
            (Ok(a), Ok(b)) => prop_assert!(a.identical(b), "{:?} vs {:?}", a, b),
            (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
            _ => prop_assert!(false, "{:?} vs {:?}", borrowed, owned),
        }
        // Against the walk that always copies (`redact`: the whole value withheld as the
        // marker when its keys would collide): lending a value is right only where the walk
        // changes nothing.
        let walked = r.redact(&v);
        match r.scrub_borrowed(&v) {
            Ok(lent) => prop_assert!(lent.identical(&walked), "{:?} vs {:?}", lent, walked),
            Err(e) => prop_assert!(
                walked.as_str() == Some("[REDACTED]"),
                "refused ({}) what the walk takes: {:?}",
                e,
                walked
            ),
        }
    }
}

proptest! {
    /// The tolerant scan of raw text (kept for answers the proxy cannot read) redacts exactly
    /// what the walk of the parsed value does: on any value written compact or pretty, the
    /// scanned text is the redacted value's text.
    #[test]
    fn scanning_raw_text_redacts_what_the_walk_redacts(v in pooled_value()) {
        let r = Redactor::builtin();
        // A value whose keys repeat is withheld whole by the walk; the scan has no such rule.
        prop_assume!(r.scrub_borrowed(&v).is_ok());
        let walked = r.redact(&v);
        prop_assert_eq!(r.redact_raw(&toolstorm::json::compact(&v)), toolstorm::json::compact(&walked));
        let scanned = r.redact_raw(&pretty(&v));
        let parsed = toolstorm::json::parse(&scanned).expect("still JSON");
        prop_assert!(parsed.identical(&walked), "{} vs {:?}", scanned, walked);
    }
}

/// A secret as command lines carry it: letters and digits, 16 long, so that the token shapes
/// (`sk-`, `ghp_`) take it too.
fn command_secret() -> impl Strategy<Value = String> {
    "[a-z]{6}[0-9]{4}[A-Z]{6}"
}

/// A secret `s` in one of the shapes a command line holds it, as a shell text and as the
/// arguments of that text.
fn secret_in_command(s: &str, shape: usize) -> (String, Vec<String>) {
    let (text, words): (String, Vec<String>) = match shape {
        0 => (format!("--api-key {s}"), vec!["--api-key".into(), s.into()]),
        1 => (
            format!("GITHUB_TOKEN={s}"),
            vec![format!("GITHUB_TOKEN={s}")],
        ),
        2 => (format!("--x-token={s}"), vec![format!("--x-token={s}")]),
        3 => (format!("--pass {s}"), vec!["--pass".into(), s.into()]),
        4 => (
            format!("https://bob:{s}@host/mcp"),
            vec![format!("https://bob:{s}@host/mcp")],
        ),
        5 => (format!("-u bob:{s}"), vec!["-u".into(), format!("bob:{s}")]),
        6 => (
            format!("-H 'Authorization: Bearer {s}'"),
            vec!["-H".into(), format!("Authorization: Bearer {s}")],
        ),
        7 => (format!("sk-{s}"), vec![format!("sk-{s}")]),
        _ => (format!("ghp_{s}"), vec![format!("ghp_{s}")]),
    };
    (text, words)
}

proptest! {
    /// Whatever shape a secret has in a command line (an option's value, an assignment, a
    /// URL's user part, curl's `-u`, a credential header, a token of a known shape), neither
    /// the shell text nor the argument vector keeps it, and the shell text keeps the operator
    /// and the command that follow.
    #[test]
    fn command_lines_keep_no_secret_and_every_operator(
        s in command_secret(),
        shape in 0usize..9,
        op in prop::sample::select(vec![";", "; ", " && ", "&&", " | ", "|", " || ", "\n"]),
        next in "[a-z]{1,8}",
    ) {
        let r = Redactor::builtin();
        let (text, words) = secret_in_command(&s, shape);
        let line = format!("agent {text}{op}{next} --verbose");
        let out = r.redact_command_line(&line);
        prop_assert!(!out.contains(&s), "{:?} → {:?}", line, out);
        prop_assert!(out.contains("[REDACTED]"), "{:?} → {:?}", line, out);
        let follows = format!("{op}{next} --verbose");
        prop_assert!(out.ends_with(&follows), "{:?} → {:?}", line, out);
        let argv: Vec<String> = std::iter::once("agent".to_owned()).chain(words).collect();
        let kept = r.redact_argv(&argv);
        prop_assert!(!kept.iter().any(|w| w.contains(&s)), "{:?} → {:?}", argv, kept);
        prop_assert_eq!(kept.len(), argv.len());
    }
}
