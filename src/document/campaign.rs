//! Where a campaign's files are, named from the campaign file: its runs' folders, each
//! run's recording, its scenario and the folder it ran in (relative to the file's folder, so
//! a campaign's folder can move as a whole), and reading the file itself (it has a size limit
//! of its own). Running the agent is [`crate::agent`]'s.

use std::path::{Path, PathBuf};

use super::Error;
use crate::campaign::{CampaignFile, RunRecord};

/// `campaign.json` → `campaign.runs` beside it: where the runs' folders go.
pub fn runs_dir(out: &Path) -> PathBuf {
    let stem = out
        .file_stem()
        .map_or_else(|| "campaign".into(), |s| s.to_string_lossy().into_owned());
    out.with_file_name(format!("{stem}.runs"))
}

/// `path` relative to the folder `base` (both absolute): `../scenarios/x.json`; `path` itself
/// when they share no root.
pub fn relative_to(path: &Path, base: &Path) -> PathBuf {
    use std::path::Component;
    let (path, base) = (&normal(path), &normal(base));
    if path == base {
        return PathBuf::from(".");
    }
    let p: Vec<Component> = path.components().collect();
    let b: Vec<Component> = base.components().collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == 0 || !path.is_absolute() || !base.is_absolute() {
        return path.to_path_buf();
    }
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c.as_os_str());
    }
    out
}

/// `path` with `.` and `..` worked out by the letters alone (`/a/b/../c` → `/a/c`).
fn normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A path a campaign file names (`cwd`, `scenario`): a relative name is the file's folder's.
pub fn named_path(out: &Path, named: &str) -> PathBuf {
    let p = PathBuf::from(named);
    if p.is_relative() {
        base_of(out).join(p)
    } else {
        p
    }
}

/// The scenario a campaign file names, as a path (relative names are the file's folder's).
pub fn scenario_of(out: &Path, file: &CampaignFile) -> PathBuf {
    named_path(out, &file.scenario)
}

/// Reads a campaign file (to [`crate::campaign::file::MAX_FILE_BYTES`], its own limit).
pub fn read_file(path: &Path) -> Result<CampaignFile, Error> {
    use crate::campaign::file::MAX_FILE_BYTES;
    let bytes = crate::fsread::read_document_within(path, MAX_FILE_BYTES)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(Error::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a campaign file may hold at most {MAX_FILE_BYTES} bytes"),
            ),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        Error::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the file is not UTF-8 text",
            ),
        )
    })?;
    CampaignFile::from_text(&text).map_err(|e| Error::invalid(Some(path), e))
}

/// The campaign file's folder (recordings are named relative to it).
pub fn base_of(out: &Path) -> PathBuf {
    out.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The recording of a run, as the file names it, made a path.
pub fn recording_path(out: &Path, record: &RunRecord) -> PathBuf {
    base_of(out).join(&record.recording)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_named_relative_to_the_campaign_folder() {
        let base = Path::new("/work/repo/cassettes");
        assert_eq!(
            relative_to(Path::new("/work/repo/scenarios/s.json"), base),
            PathBuf::from("../scenarios/s.json")
        );
        assert_eq!(
            relative_to(Path::new("/work/repo/cassettes/s.json"), base),
            PathBuf::from("s.json")
        );
        assert_eq!(
            relative_to(Path::new("rel/s.json"), base),
            PathBuf::from("rel/s.json")
        );
        // `..` in the campaign's folder is worked out first.
        assert_eq!(
            relative_to(Path::new("/w/proj/s.json"), Path::new("/w/proj/../")),
            PathBuf::from("proj/s.json")
        );
        assert_eq!(
            relative_to(Path::new("/w/a"), Path::new("/w/a/")),
            PathBuf::from(".")
        );
        assert_eq!(
            runs_dir(Path::new("/x/lost-ack.campaign.json")),
            PathBuf::from("/x/lost-ack.campaign.runs")
        );
    }
}
