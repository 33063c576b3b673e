//! Fuzz target: any bytes through both scenario-file parsers (shipping lab and executor). A
//! valid shipping scenario must also run and print back to a file that parses the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolstorm::executor::scenario::ExecutorScenario;
use toolstorm::lab::scenario_file::ScenarioFile;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(file) = ScenarioFile::from_text(text) {
        let again = ScenarioFile::from_text(&file.to_text()).expect("a written scenario parses");
        assert_eq!(again.to_text(), file.to_text());
        for policy in file.policy.policies() {
            let _ = toolstorm::lab::run(&file.scenario, policy, &file.config);
        }
    }
    let _ = ExecutorScenario::from_text(text);
});
