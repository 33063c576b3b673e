//! Writes `scenarios/*.json` from the built-in catalog (run after changing the catalog).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    for name in toolstorm::lab::scenario::names() {
        if let Some(file) = toolstorm::lab::scenario_file::ScenarioFile::bundled(name) {
            let path = std::path::Path::new("scenarios").join(format!("{name}.json"));
            toolstorm::atomic::write(&path, file.to_text().as_bytes())?;
            println!("wrote {}", path.display());
        }
    }
    Ok(())
}
