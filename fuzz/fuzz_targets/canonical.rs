//! Fuzz target: the parser and the canonical encoder. Whatever parses must encode to text that
//! parses back to the same canonical bytes, with the same length the size check predicts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolstorm::json::{canonical, canonical_len, parse};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(v) = parse(text) {
        let c = canonical(&v);
        assert_eq!(c.len(), canonical_len(&v));
        let again = parse(&c).expect("canonical text parses");
        assert_eq!(canonical(&again), c);
    }
});
