//! A shard's runs, checked before they are merged: a shard file is a stranger's word (a CI
//! artifact), so it names nothing outside its own run folders and its verdicts are not
//! taken on trust. Each run's recording must be `<shard>.runs/<run folder>/<file>` beside
//! the shard file — relative, no `..`, and, resolved, no link out of the shard's run
//! folder — and each run's verdict is worked out again from that recording the way a
//! campaign works it out when the run ends ([`super::super::run::conclude`]). Copying a run
//! (`--copy-runs`) copies the files a run writes, by name, never a folder a name points at.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use crate::campaign::RunRecord;
use crate::document::campaign::runs_dir;

use super::super::run::{RUN_FILES, conclude};

/// A run a shard file names that a merge refuses.
#[derive(Debug)]
pub enum RunRefused {
    /// A recording named outside the shard's run folder.
    Outside {
        /// The shard file.
        part: PathBuf,
        /// The field, `runs[0].recording`.
        field: String,
        /// What the field says.
        named: String,
        /// Why it is refused, in words.
        why: String,
    },
    /// A run whose verdict is not its recording's.
    Verdict {
        /// The shard file.
        part: PathBuf,
        /// The field, `runs[0].passed`.
        field: String,
        /// The run's number.
        run: u64,
        /// The run's seed.
        seed: i64,
        /// What the shard says (passed or not).
        says: bool,
        /// The recording the verdict was worked out from.
        recording: PathBuf,
        /// Why the recording says otherwise: the failed check, or why it cannot be read.
        why: String,
    },
}

fn word(passed: bool) -> &'static str {
    if passed { "passed" } else { "failed" }
}

impl fmt::Display for RunRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunRefused::Outside {
                part,
                field,
                named,
                why,
            } => write!(
                f,
                "{}: {field} is {named:?}, {why}: a shard names each run's recording in the \
                 run's own folder in the shard's run folder, as {}/run-NNN/recording.json",
                part.display(),
                runs_name(part)
            ),
            RunRefused::Verdict {
                part,
                field,
                run,
                seed,
                says,
                recording,
                why,
            } => write!(
                f,
                "{}: run {run} (seed {seed}) says {} ({field}), but its recording {} says {}: \
                 {why}",
                part.display(),
                word(*says),
                recording.display(),
                word(!*says)
            ),
        }
    }
}

impl std::error::Error for RunRefused {}

/// The name of the shard's run folder, beside it.
fn runs_name(part: &Path) -> String {
    runs_dir(part)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Checks run `i` of the shard file at `part`: its recording is named inside the shard's run
/// folder, and its verdict is what the recording says. Returns the run's folder.
pub fn checked(part: &Path, i: usize, r: &RunRecord) -> Result<PathBuf, RunRefused> {
    let recording = inside(part, i, r)?;
    let mut again = RunRecord {
        checks: Vec::new(),
        ..r.clone()
    };
    conclude(&recording, &mut again);
    if again.passed != r.passed {
        let there = |p: &Path| std::fs::symlink_metadata(p).is_ok();
        let gone = !there(&recording) && !there(&crate::mcp::session::journal_path(&recording));
        let note = if gone {
            Some("there is no such file (did the artifact leave the run's folder out?)".into())
        } else {
            again.note.clone()
        };
        let why = note.unwrap_or_else(|| {
            again
                .checks
                .iter()
                .find(|c| !c.passed)
                .map_or_else(|| "every check passed".into(), |c| c.name.clone())
        });
        return Err(RunRefused::Verdict {
            part: part.to_path_buf(),
            field: format!("runs[{i}].passed"),
            run: r.run,
            seed: r.seed,
            says: r.passed,
            recording,
            why,
        });
    }
    Ok(recording
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default())
}

/// Run `i`'s recording, when it is named `<shard>.runs/<folder>/<file>` and neither the
/// folder nor a file the run writes there is a link out of the shard's run folder.
fn inside(part: &Path, i: usize, r: &RunRecord) -> Result<PathBuf, RunRefused> {
    let refuse = |why: &str| RunRefused::Outside {
        part: part.to_path_buf(),
        field: format!("runs[{i}].recording"),
        named: r.recording.clone(),
        why: why.to_owned(),
    };
    let named = Path::new(&r.recording);
    if named.has_root()
        || named
            .components()
            .any(|c| matches!(c, Component::Prefix(_)))
    {
        return Err(refuse("an absolute path"));
    }
    if named.components().any(|c| c == Component::ParentDir) {
        return Err(refuse("a path with `..`"));
    }
    let names: Vec<_> = named
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let runs = runs_dir(part);
    let [top, folder, file] = names.as_slice() else {
        return Err(refuse("not a file in a run's folder"));
    };
    if Some(*top) != runs.file_name() {
        return Err(refuse("not in the shard's run folder"));
    }
    let folder = runs.join(folder);
    let recording = folder.join(file);
    // Resolved, the run's folder and each file the run writes stay in the shard's run folder.
    if std::fs::symlink_metadata(&folder).is_ok() {
        let real_runs = std::fs::canonicalize(&runs).map_err(|e| refuse(&e.to_string()))?;
        let real_folder = std::fs::canonicalize(&folder).map_err(|e| refuse(&e.to_string()))?;
        if real_folder.parent() != Some(real_runs.as_path()) {
            return Err(refuse("a link out of the shard's run folder"));
        }
        for f in run_files(&recording) {
            let at = folder.join(&f);
            if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink())
                && std::fs::canonicalize(&at)
                    .map_or(true, |real| real.parent() != Some(real_folder.as_path()))
            {
                return Err(refuse("a link out of the run's folder"));
            }
        }
    }
    Ok(recording)
}

/// The names of the files a run writes in its folder: its recording, the recording's sidecar
/// and journal, the `mcpServers` file and the logs.
fn run_files(recording: &Path) -> Vec<std::ffi::OsString> {
    let sidecar = crate::mcp::session::sidecar_path(recording);
    let journal = crate::mcp::session::journal_path(recording);
    [recording, &sidecar, &journal]
        .iter()
        .filter_map(|p| p.file_name().map(std::ffi::OsStr::to_os_string))
        .chain(RUN_FILES.iter().map(std::ffi::OsString::from))
        .collect()
}

/// Copies the files run folder `from` holds of those a run writes (regular files only, by
/// name) into a run folder `to` (replacing what is there): into a fresh folder beside `to`,
/// renamed over it when whole, so an interrupted copy leaves no half folder under the run's
/// name.
pub fn copy_run(from: &Path, recording_name: &Path, to: &Path) -> std::io::Result<()> {
    let parent = to.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let name = to
        .file_name()
        .map_or_else(|| "run".into(), |n| n.to_string_lossy().into_owned());
    let staging = parent.join(format!(".{name}.merging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    if let Err(e) = copy_files(from, recording_name, &staging) {
        // Nothing half-copied stays behind.
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    std::fs::rename(&staging, to)
}

fn copy_files(from: &Path, recording_name: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for f in run_files(&from.join(recording_name)) {
        let at = from.join(&f);
        // Not followed: a link is not the run's file.
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_file()) {
            std::fs::copy(&at, to.join(&f))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::Outcome;

    fn named(recording: &str) -> Result<PathBuf, String> {
        let r = RunRecord::new(1, 1, Outcome::Finished, recording.into());
        inside(Path::new("/nowhere/shards/a.campaign.json"), 0, &r).map_err(|e| e.to_string())
    }

    #[test]
    fn a_recording_is_named_in_a_run_folder_of_the_shards_own_run_folder() {
        assert_eq!(
            named("a.campaign.runs/run-001/recording.json"),
            Ok(PathBuf::from(
                "/nowhere/shards/a.campaign.runs/run-001/recording.json"
            ))
        );
        for (recording, why) in [
            ("/etc/hostname", "an absolute path"),
            ("a.campaign.runs/../../x/recording.json", "a path with `..`"),
            (
                "a.campaign.runs/recording.json",
                "not a file in a run's folder",
            ),
            (
                "a.campaign.runs/run-001/deeper/recording.json",
                "not a file in a run's folder",
            ),
            (
                "b.campaign.runs/run-001/recording.json",
                "not in the shard's run folder",
            ),
        ] {
            let e = named(recording).expect_err(recording);
            assert!(
                e.starts_with(&format!(
                    "/nowhere/shards/a.campaign.json: runs[0].recording is {recording:?}, {why}:"
                )) && e.ends_with("as a.campaign.runs/run-NNN/recording.json"),
                "{e}"
            );
        }
    }
}
