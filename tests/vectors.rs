//! The reference's vector sets: canonical encoding, digests, decisions, globs, redaction.

mod common;

use common::{fixture, fixture_json, fixture_path, get, get_array, get_str};
use toolstorm::decision::{Draw, hits};
use toolstorm::json::{Text, Value, canonical, fingerprint, parse, sha256_hex};
use toolstorm::redact::Redactor;
use toolstorm::rule::{FaultKind, Glob, RuleSpec};
use toolstorm::{Error, Storm, obj};

#[test]
fn canonical_vectors() {
    let doc = fixture_json("canonical_vectors.json");
    let vectors = get_array(&doc, "vectors");
    assert!(vectors.len() >= 29);
    for v in vectors {
        let value = get(v, "value_as_json");
        let want = get_str(v, "canonical");
        assert_eq!(canonical(value), want, "{}", get_str(v, "python_repr"));
        assert_eq!(fingerprint(value), get_str(v, "sha256_hex"));
        // Round trip: parsing the canonical text gives the same canonical text.
        let again = parse(want).expect("canonical text parses");
        assert_eq!(canonical(&again), want);
    }
}

#[test]
fn canonical_rejections_depth() {
    // depth 33 is refused, 32 nested lists around a string is accepted.
    let ok = format!("{}\"s\"{}", "[".repeat(32), "]".repeat(32));
    assert!(parse(&ok).is_ok());
    let bad = format!("{}\"s\"{}", "[".repeat(33), "]".repeat(33));
    assert!(parse(&bad).is_err());
}

#[test]
fn digest_vectors() {
    let doc = fixture_json("digest_vectors.json");
    let mut checked = 0;
    for v in get_array(&doc, "vectors") {
        let obj = v.as_object().expect("object");
        if let Some(report) = obj.get("report_to_dict") {
            assert_eq!(canonical(report), get_str(v, "canonical"));
            assert_eq!(fingerprint(report), get_str(v, "digest"));
            let file = format!("{}\n", get_str(v, "canonical"));
            assert_eq!(
                sha256_hex(file.as_bytes()),
                get_str(v, "cassette_file_sha256")
            );
            checked += 1;
            continue;
        }
        let rel = get_str(v, "cassette_file");
        if !fixture_path(rel).exists() {
            continue; // held back
        }
        let text = fixture(rel);
        let value = parse(&text).expect("parses");
        assert_eq!(fingerprint(&value), get_str(v, "digest"), "{rel}");
        if let Some(sha) = obj.get("cassette_file_sha256").and_then(Value::as_str) {
            assert_eq!(sha256_hex(text.as_bytes()), sha, "{rel}");
            assert_eq!(canonical(&value) + "\n", text, "{rel} is canonical");
        }
        if let Some(dumps) = obj.get("dumps").and_then(Value::as_str) {
            assert_eq!(canonical(&value) + "\n", dumps, "{rel}");
        }
        checked += 1;
    }
    assert!(checked >= 19, "only {checked} digest vectors checked");
}

/// The digest vector "tiny", rebuilt through the Rust API.
#[test]
fn tiny_report_through_the_api() {
    let rule = RuleSpec::new("r", "t", FaultKind::Timeout)
        .calls([1])
        .build()
        .expect("rule");
    let storm = Storm::builder().rule(rule).seed(1).build().expect("storm");
    let t =
        |a: i64, b: i64| storm.call("t", obj! {"a" => a, "b" => b}, || Ok(obj! {"sum" => a + b}));
    assert!(matches!(t(1, 2), Err(Error::Timeout(_))));
    assert_eq!(t(1, 3), Ok(obj! {"sum" => 4}));
    let doc = fixture_json("digest_vectors.json");
    let tiny = &get_array(&doc, "vectors")[0];
    assert_eq!(
        canonical(&storm.report().to_value()),
        get_str(tiny, "canonical")
    );
    assert_eq!(storm.report().digest(), get_str(tiny, "digest"));
}

#[test]
fn decision_vectors() {
    let doc = fixture_json("decision_vectors.json");
    let mut checks = 0;
    for v in get_array(&doc, "vectors") {
        let seed = get(v, "seed").as_i64().expect("seed");
        let text = |k: &str| get(v, k).as_text().expect("text").clone();
        let draw = Draw::new(seed, &text("rule"), &text("tool"), &text("key"));
        let input = Draw::input(seed, &text("rule"), &text("tool"), &text("key"));
        assert_eq!(input, get_str(v, "canonical_json"));
        assert_eq!(draw.value.to_string(), get_str(v, "u64_decimal"));
        for c in get_array(v, "checks") {
            let p = get(c, "probability").as_number_f64().expect("p");
            let want = get(c, "selected").as_bool().expect("bool");
            assert_eq!(draw.hits(p), want, "{input} p={p}");
            assert_eq!(hits(draw.value, p), want);
            checks += 1;
        }
    }
    assert!(checks >= 24 * 15);
}

#[test]
fn glob_vectors() {
    let doc = fixture_json("glob_vectors.json");
    let vectors = get_array(&doc, "vectors");
    assert!(vectors.len() >= 900);
    let mut failures = Vec::new();
    for v in vectors {
        let pattern = get(v, "pattern").as_text().expect("pattern");
        let name = get(v, "name").as_text().expect("name");
        let want = get(v, "match").as_bool().expect("bool");
        if Glob::new(pattern).matches(name) != want {
            failures.push(format!("{pattern:?} vs {name:?}: want {want}"));
        }
        // The same vector made long (a literal prefix on both sides changes nothing) takes
        // the linear segment scan instead of the backtracking loop.
        let pad = "Q".repeat(3000);
        let long_pattern = Text::from(format!("{pad}{}", pattern.to_lossy()).as_str());
        let long_name = Text::from(format!("{pad}{}", name.to_lossy()).as_str());
        if pattern.as_str().is_some()
            && name.as_str().is_some()
            && Glob::new(&long_pattern).matches(&long_name) != want
        {
            failures.push(format!("padded {pattern:?} vs {name:?}: want {want}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} glob mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|s| s.as_str().expect("string").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn redaction_vectors() {
    let doc = fixture_json("redaction_vectors.json");
    for v in get_array(&doc, "vectors") {
        let case = get_str(v, "case");
        let obj = v.as_object().expect("object");
        let config = get(v, "redactor").as_object().expect("redactor");
        let redactor = Redactor::new(strings(config.get("keys")), strings(config.get("secrets")));
        let redactor = match (redactor, obj.get("message")) {
            (Err(e), Some(m)) if obj.get("input").is_none() => {
                assert_eq!(Some(e.message), m.as_str(), "{case}");
                continue;
            }
            (Ok(r), _) => r,
            (Err(e), _) => panic!("{case}: {e}"),
        };
        let mut input = get(v, "input").clone();
        // {"repeat": s, "times": n} stands for the string s repeated n times.
        if let Some(o) = input.as_object()
            && let (Some(s), Some(n)) = (
                o.get("repeat").and_then(Value::as_str),
                o.get("times").and_then(Value::as_i64),
            )
        {
            input = Value::from(s.repeat(n as usize));
        }
        let got = redactor.scrub(&input);
        match obj.get("message") {
            Some(m) => assert_eq!(got.err().map(|e| e.message), m.as_str(), "{case}"),
            None if obj
                .get("input")
                .and_then(|i| i.as_object())
                .is_some_and(|o| o.contains_key("repeat")) =>
            {
                assert!(got.is_ok(), "{case}");
            }
            None => assert_eq!(
                got.map(|g| canonical(&g)),
                Ok(canonical(get(v, "result"))),
                "{case}"
            ),
        }
    }
}

#[test]
fn redaction_keeps_lone_surrogates() {
    let v = parse(r#"{"token":"\ud800","k":"a\udc00b"}"#).expect("json");
    let r = Redactor::new(Vec::<String>::new(), ["b"]).expect("redactor");
    let out = r.scrub(&v).expect("scrub");
    assert_eq!(
        canonical(&out),
        r#"{"k":"a\udc00[REDACTED]","token":"[REDACTED]"}"#
    );
    let t: Text = Text::from("x");
    assert_eq!(r.replace_secrets(&t), t);
}
