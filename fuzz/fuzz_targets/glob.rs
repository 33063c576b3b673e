//! Fuzz target: tool-name globs. The first byte splits the input into a pattern and a name;
//! matching must answer the same for the pair as for both with a long literal prefix (which
//! takes the linear segment scan instead of the backtracking loop), and never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolstorm::json::Text;
use toolstorm::rule::Glob;

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let at = (split as usize).min(text.len());
    if !text.is_char_boundary(at) {
        return;
    }
    let (pattern, name) = text.split_at(at);
    let short = Glob::new(&Text::from(pattern)).matches(&Text::from(name));
    let pad = "Q".repeat(5000);
    let long = Glob::new(&Text::from(format!("{pad}{pattern}").as_str()))
        .matches(&Text::from(format!("{pad}{name}").as_str()));
    assert_eq!(short, long, "{pattern:?} vs {name:?}");
});
