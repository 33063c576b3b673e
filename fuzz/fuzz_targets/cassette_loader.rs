//! Fuzz target: any bytes through the cassette loader (UTF-8, parse, full validation). It must
//! return an error or a cassette whose re-saved bytes load again identically — never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolstorm::cassette::Cassette;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(c) = Cassette::loads(text) {
        let saved = c.dumps();
        let again = Cassette::loads(&saved).expect("a saved cassette loads");
        assert_eq!(again.dumps(), saved);
        let _ = toolstorm::timeline::Timeline::new(c.report);
    }
});
