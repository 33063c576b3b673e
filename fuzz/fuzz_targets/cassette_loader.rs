//! Fuzz target: any bytes through the cassette loader (UTF-8, parse, full validation). It must
//! return an error or a cassette whose re-saved bytes load again identically — never panic.
//! Where the typed-skeleton reader takes the text, its verdict must be the general way's
//! (parse into a tree, then validate): the same cassette and bytes, or the same message; and
//! read a part at a time, as a file is, it must say what it says of the text in memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolstorm::cassette::{Cassette, json_error};
use toolstorm::json::{canonical, parse};

fuzz_target!(|data: &[u8]| {
    let streamed = Cassette::read_stream(data, data.len()).expect("memory reads");
    let Ok(text) = std::str::from_utf8(data) else {
        assert!(streamed.is_none(), "bytes that are not UTF-8 read as a trace");
        return;
    };
    let owned = Cassette::read_owned(text.to_owned()).ok();
    assert_eq!(
        format!("{owned:?}"),
        format!("{streamed:?}"),
        "read whole and read in parts"
    );
    if let Some(typed) = owned {
        let general = parse(text)
            .map_err(|e| json_error(&e))
            .and_then(|tree| Cassette::from_value(&tree));
        match (&typed, &general) {
            (Ok(t), Ok(g)) => {
                assert_eq!(t, g);
                assert_eq!(t.dumps(), g.dumps());
                let mut tree = parse(text).expect("parsed");
                tree.sort_keys().expect("unique keys");
                assert_eq!(t.dumps(), format!("{}\n", canonical(&tree)));
            }
            (Err(t), Err(g)) => assert_eq!(t.to_string(), g.to_string()),
            _ => panic!("typed {typed:?} but general {general:?}"),
        }
    }
    if let Ok(c) = Cassette::loads(text) {
        let saved = c.dumps();
        let again = Cassette::loads(&saved).expect("a saved cassette loads");
        assert_eq!(again.dumps(), saved);
        let _ = toolstorm::timeline::Timeline::new(c.report);
    }
});
