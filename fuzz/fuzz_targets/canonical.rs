//! Fuzz target: the parser and the canonical encoder. Whatever parses must encode to text that
//! parses back to the same canonical bytes, with the length the size checks predict, and
//! sorting keys in place must give exactly what re-parsing the canonical text gives (the
//! cassette loader relies on that instead of re-parsing).
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolstorm::json::{canonical, canonical_fits, canonical_len, parse};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(v) = parse(text) {
        let c = canonical(&v);
        assert_eq!(c.len(), canonical_len(&v));
        assert!(canonical_fits(&v, c.len()));
        assert!(!canonical_fits(&v, c.len() - 1));
        let again = parse(&c).expect("canonical text parses");
        assert_eq!(canonical(&again), c);
        let mut sorted = v.clone();
        sorted.sort_keys().expect("parsed objects have no duplicate keys");
        assert_eq!(sorted, again);
    }
});
