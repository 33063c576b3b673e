//! The typed-skeleton reader against the general way: for every text it reads, the same
//! verdict — the same cassette (typed view, bytes, digest) or the same error — as parsing the
//! text into a tree and validating that; and the same bytes and digest as the canonical text
//! of that tree, which is how cassettes were written before the reader existed.

mod common;

use std::path::{Path, PathBuf};

use toolstorm::cassette::{Cassette, document_cassettes, json_error, validate_report};
use toolstorm::json::{canonical, fingerprint, parse};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The general way: parse into a tree, then the document rules for a bare trace.
fn general(text: &str) -> Result<Cassette, String> {
    let tree = parse(text).map_err(|e| json_error(&e).to_string())?;
    match document_cassettes(Path::new("t.json"), tree) {
        Ok(mut cassettes) if cassettes.len() == 1 => Ok(cassettes.remove(0)),
        Ok(cassettes) => Err(format!("{} runs", cassettes.len())),
        Err(e) => Err(e
            .config_error()
            .map_or_else(|| e.to_string(), ToString::to_string)),
    }
}

/// `Cassette::loads` as it was before the skeleton reader: parse, then build from the tree.
fn bare(text: &str) -> Result<Cassette, String> {
    let tree = parse(text).map_err(|e| json_error(&e).to_string())?;
    Cassette::from_value(&tree).map_err(|e| e.to_string())
}

/// What the skeleton reader made of `text`: `None` when it left the text to the general way.
/// Read from memory and read as a file is, a part at a time, it makes the same.
fn typed(text: &str) -> Option<Result<Cassette, String>> {
    let owned = Cassette::read_owned(text.to_owned())
        .ok()
        .map(|verdict| verdict.map_err(|e| e.to_string()));
    let streamed = Cassette::read_stream(text.as_bytes(), text.len())
        .expect("memory reads")
        .map(|verdict| verdict.map_err(|e| e.to_string()));
    assert_eq!(owned, streamed, "read whole and read in parts");
    owned
}

/// Asserts both ways agree on `text`; returns whether the skeleton reader read it.
fn agree(name: &str, text: &str) -> bool {
    let slow = general(text);
    let Some(fast) = typed(text) else {
        return false;
    };
    match (&fast, &slow) {
        (Ok(f), Ok(s)) => {
            assert_eq!(f, s, "{name}: cassettes differ");
            assert_eq!(f.dumps(), s.dumps(), "{name}: bytes differ");
            assert_eq!(f.digest(), s.digest(), "{name}: digests differ");
            // And both say what the canonical text of the parsed tree says.
            let mut tree = parse(text).expect("parsed once already");
            tree.sort_keys().expect("unique keys");
            assert_eq!(f.dumps(), format!("{}\n", canonical(&tree)), "{name}");
            assert_eq!(f.digest(), fingerprint(&tree), "{name}");
            assert_eq!(f.to_value(), tree, "{name}: document differs");
            assert_eq!(
                Some(&f.report),
                validate_report(&tree).ok().as_ref(),
                "{name}: typed view differs"
            );
        }
        (Err(f), Err(s)) => assert_eq!(f, s, "{name}: messages differ"),
        _ => panic!("{name}: the skeleton says {fast:?}, the general way {slow:?}"),
    }
    true
}

/// Every trace file the repository holds (reference fixtures, examples).
fn trace_files() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for dir in ["tests/fixtures/reference/api", "cassettes"] {
        let mut paths: Vec<_> = std::fs::read_dir(root().join(dir))
            .expect(dir)
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        for p in paths {
            let text = std::fs::read_to_string(&p).expect("read");
            out.push((p.display().to_string(), text));
        }
    }
    out
}

#[test]
fn every_trace_file_reads_the_same_both_ways() {
    let mut read = 0;
    for (name, text) in trace_files() {
        if agree(&name, &text) {
            read += 1;
        }
    }
    // The reference's own traces are all shaped like bare traces.
    assert!(read >= 17, "only {read} files took the typed reader");
}

#[test]
fn the_large_reference_trace_takes_the_typed_reader() {
    let path = root().join("tests/fixtures/reference/api/large_public_10000.cassette.json");
    let text = std::fs::read_to_string(path).expect("read");
    let c = typed(&text).expect("shaped like a trace").expect("valid");
    assert_eq!(c.report.calls.len(), 10_000);
    assert!(agree("large", &text));
}

/// The small valid trace the variations start from (one error call, one ok call, one effect).
const BASE: &str = r##"{"budget_rejections":0,"calls":[{"arguments":{"a":1,"b":2},"capture_error":false,"elapsed":0.0,"error":{"known":true,"type":"ToolTimeout"},"executed":false,"fault":"r","id":1,"injected":true,"key":"#1","kind":"timeout","ordinal":1,"output":null,"parent_id":null,"started":0.0,"status":"error","tool":"t"},{"arguments":{"b":3,"a":1},"capture_error":false,"elapsed":0.5,"error":null,"executed":true,"fault":null,"id":2,"injected":false,"key":"#2","kind":null,"ordinal":2,"output":{"sum":4,"tags":["x",{"z":1,"y":2}]},"parent_id":null,"started":0.0,"status":"ok","tool":"t"}],"capture":true,"clock":"VirtualClock","coverage":{"r":{"eligible":1,"selected":1,"triggered":1}},"effects":[{"at":0.25,"call_id":2,"identity":1,"key":"k","name":"charge","redacted":false}],"rules":[{"calls":[1],"delay":0.0,"kind":"timeout","limit":null,"name":"r","probability":1.0,"replacement":null,"tool":"t"}],"schema_version":1,"seed":1}"##;

fn variant(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from}");
    BASE.replacen(from, to, 1)
}

#[test]
fn the_base_trace_is_valid_and_read_typed() {
    assert!(agree("base", BASE));
    assert!(matches!(typed(BASE), Some(Ok(_))));
}

#[test]
fn documents_the_typed_view_cannot_rebuild_keep_their_bytes() {
    for (from, to, kept) in [
        (
            r#""started":0.0,"status":"ok""#,
            r#""started":0,"status":"ok""#,
            r#""started":0,"#,
        ),
        (r#""elapsed":0.5"#, r#""elapsed":1"#, r#""elapsed":1,"#),
        (r#""at":0.25"#, r#""at":0"#, r#""at":0,"#),
        (
            r#""budget_rejections":0"#,
            r#""budget_rejections":123456789012345678901234567890"#,
            "123456789012345678901234567890",
        ),
        (
            r#""clock":"VirtualClock""#,
            r#""clock":"\ud800""#,
            r#""\ud800""#,
        ),
        (
            r#""error":null,"executed":true"#,
            r#""error":{"anything":[1]},"executed":true"#,
            r#"{"anything":[1]}"#,
        ),
    ] {
        // A running call may record any error; an ok call may not.
        let text = variant(from, to).replacen(r#""status":"ok""#, r#""status":"running""#, 1);
        // The typed reader lets each record go as it reads it: a document whose bytes only
        // its tree keeps is the general way's, and `loads` gives that way's cassette.
        assert_eq!(typed(&text), None, "{to}: left to the general way");
        assert_eq!(
            Cassette::loads(&text).map_err(|e| e.to_string()),
            bare(&text),
            "{to}"
        );
        let c = Cassette::loads(&text).expect(to);
        assert!(c.dumps().contains(kept), "{to}: {}", c.dumps());
    }
}

#[test]
fn layout_and_key_order_do_not_matter() {
    let spaced = BASE
        .replace(",\"", " ,\n  \"")
        .replace(":", " : ")
        .replace('{', "{ ");
    assert!(agree("spaced", &spaced));
    assert!(matches!(typed(&spaced), Some(Ok(_))));
    // Keys in writing order rather than sorted order, at the top and in records.
    let shuffled = variant(
        r#"{"budget_rejections":0,"calls":"#,
        r#"{"seed":1,"budget_rejections":0,"calls":"#,
    )
    .replacen(r#","seed":1}"#, "}", 1)
    .replacen(r#""id":1,"#, "", 1)
    .replacen(
        r#"{"arguments":{"a":1,"b":2}"#,
        r#"{"id":1,"arguments":{"a":1,"b":2}"#,
        1,
    );
    assert!(agree("shuffled", &shuffled));
    assert!(matches!(typed(&shuffled), Some(Ok(_))));
}

#[test]
fn what_the_skeleton_does_not_read_goes_the_general_way() {
    let escaped = variant(r#""id":1,"#, r#""\u0069d":1,"#);
    assert!(typed(&escaped).is_none());
    assert_eq!(
        Cassette::loads(&escaped).map_err(|e| e.to_string()),
        bare(&escaped)
    );
    assert!(general(&escaped).is_ok());
    for (from, to) in [
        (r#""id":1,"#, r#""id":1,"id":1,"#),
        (r#""id":1,"#, r#""id":1,"extra":true,"#),
        (r#""id":1,"#, ""),
        (r#""seed":1}"#, r#""seed":1,"report":{}}"#),
        (r#""seed":1}"#, r#""seed":1} x"#),
        (r#"{"at":0.25"#, "[{\"at\":0.25"),
    ] {
        let text = variant(from, to);
        assert!(typed(&text).is_none(), "{to}: read typed");
        let verdict = Cassette::loads(&text).map_err(|e| e.to_string());
        assert_eq!(verdict, bare(&text), "{to}");
        assert!(verdict.is_err(), "{to}");
    }
    assert!(typed(&format!("\u{feff}{BASE}")).is_none());
}

#[test]
fn invalid_traces_get_the_general_ways_message() {
    let cases = [
        (r#""probability":1.0"#, r#""probability":0.0"#),
        (r#""eligible":1"#, r#""eligible":2"#),
        (
            r#""kind":"timeout","ordinal""#,
            r#""kind":"latency","ordinal""#,
        ),
        (r#""id":2"#, r#""id":3"#),
        (
            r#""started":0.0,"status":"ok""#,
            r#""started":-1.0,"status":"ok""#,
        ),
        (r#""at":0.25"#, r#""at":9.0"#),
        (r#""identity":1"#, r#""identity":2"#),
        (r#""schema_version":1"#, r#""schema_version":2"#),
        (r#""capture":true"#, r#""capture":1"#),
        (r#""rules":[{"#, r#""rules":[7,{"#),
        (r#""arguments":{"a":1,"b":2}"#, r#""arguments":[1]"#),
        (r#""tags":["x""#, r#""tags":[NaN"#),
        (r#""sum":4"#, r#""sum":4,"sum":5"#),
    ];
    for (from, to) in cases {
        let text = variant(from, to);
        let verdict = general(&text);
        assert!(verdict.is_err(), "{to}: valid");
        if typed(&text).is_some() {
            assert!(agree(to, &text));
        }
        assert_eq!(
            Cassette::loads(&text).map_err(|e| e.to_string()),
            bare(&text),
            "{to}"
        );
    }
}

#[test]
fn capture_given_after_the_calls_is_still_judged_first() {
    // The calls come before `capture` in a key-sorted file; with capture on, a call whose
    // arguments are not an object fails, at that call's last check.
    let bare1 = (r#""arguments":{"a":1,"b":2}"#, r#""arguments":[1]"#);
    let bare2 = (r#""arguments":{"b":3,"a":1}"#, r#""arguments":"text""#);
    let late_effect = (r#""at":0.25"#, r#""at":9.0"#);
    let cases: [(&[(&str, &str)], &str); 7] = [
        (&[bare2], "calls[1].arguments"),
        (&[bare2, late_effect], "calls[1].arguments"),
        (&[bare1, (r#""id":2"#, r#""id":3"#)], "calls[0].arguments"),
        (&[bare2, (r#""id":2"#, r#""id":3"#)], "calls[1].id"),
        (&[bare2, (r#""id":1"#, r#""id":5"#)], "calls[0].id"),
        (&[bare2, (r#""capture":true"#, r#""capture":1"#)], "capture"),
        (
            &[late_effect, (r#""capture":true"#, r#""capture":false"#)],
            "effects[0].at",
        ),
    ];
    for (changes, path) in cases {
        let text = changes.iter().fold(BASE.to_owned(), |t, (from, to)| {
            assert!(t.contains(from), "{from}");
            t.replacen(from, to, 1)
        });
        assert!(agree(path, &text), "{path}: read typed");
        let message = general(&text).expect_err(path);
        assert!(message.contains(path), "{path}: {message}");
    }
    // With capture off, arguments may be anything.
    let text =
        BASE.replacen(bare2.0, bare2.1, 1)
            .replacen(r#""capture":true"#, r#""capture":false"#, 1);
    assert!(agree("capture off", &text));
    assert!(matches!(typed(&text), Some(Ok(_))));
}

#[test]
fn too_many_calls_and_too_deep_payloads_are_refused_alike() {
    let deep = format!("{}1{}", "[".repeat(40), "]".repeat(40));
    let text = variant(r#""sum":4"#, &format!(r#""sum":{deep}"#));
    assert_eq!(typed(&text), None);
    assert!(general(&text).is_err());
    let text = common::worst::ok_calls(10_001);
    assert_eq!(typed(&text), None);
    let message = general(&text).expect_err("too many calls");
    assert!(message.starts_with("Invalid trace call list"), "{message}");
    assert!(agree("10000", &common::worst::ok_calls(10_000)));
}

#[test]
fn a_document_over_the_canonical_limit_is_measured_exactly() {
    // 2 bytes of UTF-8 become 6 in canonical text: 1.5 MB of text, 4.5 MB of canonical text
    // (under the limit), then 3 MB of text over it.
    for (chars, fits) in [(750_000, true), (1_500_000, false)] {
        let text = variant(
            r#""a":1,"b":2"#,
            &format!(r#""a":"{}","b":2"#, "é".repeat(chars)),
        );
        // Past the bound on its canonical size only the tree can measure it exactly: the
        // general way's.
        assert_eq!(agree(&format!("{chars} chars"), &text), fits, "{chars}");
        assert_eq!(
            Cassette::loads(&text).map_err(|e| e.to_string()),
            bare(&text),
            "{chars}"
        );
        let verdict = general(&text);
        assert_eq!(verdict.is_ok(), fits, "{chars}");
        if !fits {
            assert!(
                verdict
                    .expect_err("too large")
                    .starts_with("Cassette exceeds 8 MB limit"),
                "{chars}"
            );
        }
    }
}
