//! Fuzz target: any bytes through the document layer (`document::read_bytes`): a trace is
//! validated and laid out on a timeline; a scenario of any world is validated and run, and a
//! valid shipping scenario prints back to a file that reads the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use toolstorm::document::{self, Contents, Scenario, Settings};
use toolstorm::executor::approval::NoTerminal;
use toolstorm::lab::scenario_file::ScenarioFile;

fuzz_target!(|data: &[u8]| {
    match document::read_bytes(Path::new("fuzz.json"), data) {
        Ok(Contents::Trace(t)) => {
            for c in t.cassettes {
                let _ = toolstorm::timeline::Timeline::new(c.report);
            }
        }
        Ok(Contents::Scenario(s)) => {
            if let Scenario::Shipping(file) = &s {
                let again = ScenarioFile::from_text(&file.to_text()).expect("a written scenario parses");
                assert_eq!(again.to_text(), file.to_text());
            }
            let _ = s.run(None, &Settings::default(), &mut NoTerminal);
        }
        Err(e) => {
            // Every refusal prints as one line, whatever the file held.
            let line = toolstorm::printable::line(&e.to_string()).into_owned();
            assert!(!line.contains('\n') && !line.contains('\u{1b}'), "{line}");
        }
    }
});
