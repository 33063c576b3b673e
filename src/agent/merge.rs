//! `campaign merge`'s files: finding the shard files among what was given (files, or folders
//! such as downloaded CI artifacts, searched for `*.campaign.json`), reading them, naming
//! each run's recording from where the merged file will be (or copying the run's folder in,
//! `--copy-runs`), and writing the merged campaign atomically. Whether the parts belong
//! together is [`crate::campaign::merge`]'s; what each run may name, and its verdict worked
//! out again from its recording, is [`runs`]'.

pub mod runs;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::campaign::CampaignFile;
use crate::campaign::merge::{MergeError, Part, merge, seed_list};
use crate::document::Error;
use crate::document::campaign::{base_of, named_path, read_file, relative_to, runs_dir};
use runs::{RunRefused, checked, copy_run};

/// How deep a folder given to merge is searched.
const DEPTH: usize = 8;

/// Why a merge did not happen.
#[derive(Debug)]
pub enum MergeFailure {
    /// A file could not be read, parsed or written, or a run's folder copied.
    File(Error),
    /// A folder given holds no campaign file.
    NoFiles(PathBuf),
    /// The parts are not one campaign's.
    Parts(MergeError),
    /// A part names a recording outside its run folder, or a verdict its recording does not
    /// give.
    Run(RunRefused),
    /// Seeds no part ran (merging anyway needs `--allow-missing`).
    Missing {
        /// The seeds, in plan order.
        seeds: Vec<i64>,
        /// Seeds in the plan.
        planned: usize,
    },
}

impl fmt::Display for MergeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeFailure::File(e) => write!(f, "{e}"),
            MergeFailure::NoFiles(dir) => write!(
                f,
                "ValueError: {} holds no campaign file (*.campaign.json): name the shard files",
                dir.display()
            ),
            MergeFailure::Parts(e) => write!(f, "ValueError: cannot merge: {e}"),
            MergeFailure::Run(e) => write!(f, "ValueError: cannot merge: {e}"),
            MergeFailure::Missing { seeds, planned } => write!(
                f,
                "ValueError: {} of {planned} seeds were run by no shard: {} (a shard is missing \
                 or did not finish; --allow-missing merges anyway and reports them as missing)",
                seeds.len(),
                seed_list(seeds)
            ),
        }
    }
}

/// What a merge wrote.
#[derive(Debug)]
pub struct Merged {
    /// The merged campaign, as written.
    pub file: CampaignFile,
    /// The shard files read, in the order merged.
    pub parts: Vec<PathBuf>,
    /// Runs found in more than one part, saying the same.
    pub repeated: usize,
    /// Run folders copied in (`--copy-runs`).
    pub copied: usize,
}

/// The campaign files among `inputs`: each file as given, each folder's `*.campaign.json`
/// (searched to a few levels; a link to a file counts, links to folders are not followed),
/// sorted; never `out` itself.
pub fn find_parts(inputs: &[PathBuf], out: &Path) -> Result<Vec<PathBuf>, MergeFailure> {
    let out_id = std::fs::canonicalize(out).ok();
    let mut found = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(input).map_err(|e| MergeFailure::File(Error::io(input, e)))?;
        if meta.is_dir() {
            let mut here = Vec::new();
            walk(input, DEPTH, &mut here);
            here.sort();
            if here.is_empty() {
                return Err(MergeFailure::NoFiles(input.clone()));
            }
            found.extend(here);
        } else {
            found.push(input.clone());
        }
    }
    found.retain(|p| out_id.is_none() || std::fs::canonicalize(p).ok() != out_id);
    found.dedup();
    Ok(found)
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        // A link to a file counts as the file (links to folders are not followed: no loops).
        let is_file = kind.is_file()
            || (kind.is_symlink() && std::fs::metadata(&path).is_ok_and(|m| m.is_file()));
        if kind.is_dir() && depth > 0 {
            walk(&path, depth - 1, out);
        } else if is_file
            && path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(".campaign.json"))
        {
            out.push(path);
        }
    }
}

/// Where a part's file names things from: its own folder (shards merged where they ran), or
/// the merged file's (a CI artifact keeps the shard's file but not the checkout it ran in,
/// which is the merge's own). The scenario decides: the folder from which the name finds a
/// file with the scenario's digest (else one that exists), and `cwd` is read from the same.
fn frame(part: &Path, file: &CampaignFile, out: &Path) -> PathBuf {
    let frames = [base_of(part), base_of(out)];
    let scenario = |base: &PathBuf| named_path(&base.join("x"), &file.scenario);
    let digest_of = |p: &Path| {
        crate::fsread::read_document(p)
            .ok()
            .map(|b| crate::json::sha256_hex(&b))
    };
    frames
        .iter()
        .find(|b| digest_of(&scenario(b)).as_deref() == Some(file.scenario_sha256.as_str()))
        .or_else(|| frames.iter().find(|b| scenario(b).exists()))
        .unwrap_or(&frames[0])
        .clone()
}

/// `named` (a path a part names, relative to `frame` when relative) said from `out`'s folder.
fn rebased(frame: &Path, named: &str, out: &Path) -> String {
    let p = named_path(&frame.join("x"), named);
    relative_to(&absolute(&p), &absolute(&base_of(out)))
        .display()
        .to_string()
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Merges the shard files among `inputs` into `out` (written atomically). Refuses a run
/// whose recording is named outside its part's run folder or whose verdict is not its
/// recording's, parts of another campaign, a seed run twice with different outcomes, and —
/// unless `allow_missing` — seeds no part ran. With `copy_runs`, the files each run wrote
/// are copied into a folder beside `out` and named from there; else each recording is named
/// where it is.
pub fn merge_into(
    out: &Path,
    inputs: &[PathBuf],
    allow_missing: bool,
    copy_runs: bool,
) -> Result<Merged, MergeFailure> {
    // What is at `out` is replaced only when it is a campaign (a merge before this one).
    let ours = |h: &[u8]| crate::mcp::wire::is_of_kind(h, crate::campaign::file::KIND);
    crate::atomic::refuse_foreign(out, ours, "a campaign file")
        .map_err(|e| MergeFailure::File(Error::io(out, e)))?;
    let paths = find_parts(inputs, out)?;
    let base = absolute(&base_of(out));
    let mut parts: Vec<Part> = Vec::with_capacity(paths.len());
    let mut read = Vec::with_capacity(paths.len());
    for path in &paths {
        // A campaign file has a size limit of its own (a merged one can be a part again,
        // when its runs were copied into its own run folder).
        let mut file = read_file(path).map_err(MergeFailure::File)?;
        read.push((path, file.clone()));
        let part_base = absolute(&base_of(path));
        for r in &mut file.runs {
            r.recording = relative_to(&part_base.join(&r.recording), &base)
                .display()
                .to_string();
        }
        if file.lab_name().is_none() {
            let from = frame(path, &file, out);
            file.scenario = rebased(&from, &file.scenario, out);
            file.cwd = rebased(&from, &file.cwd, out);
        }
        parts.push((path.display().to_string(), file));
    }
    // Whether the parts are one campaign's is read from what they say; then what each run
    // says is checked against its files.
    let merged = merge(&parts).map_err(MergeFailure::Parts)?;
    // Each run's folder in the first part that has the run (the one merging keeps).
    let mut folders: std::collections::BTreeMap<u64, PathBuf> = std::collections::BTreeMap::new();
    for (path, file) in &read {
        for (i, r) in file.runs.iter().enumerate() {
            let folder = checked(path, i, r).map_err(MergeFailure::Run)?;
            folders.entry(r.run).or_insert(folder);
        }
    }
    let missing = merged.file.missing();
    if !missing.is_empty() && !allow_missing {
        return Err(MergeFailure::Missing {
            seeds: missing,
            planned: merged.file.seeds.len(),
        });
    }
    let mut file = merged.file;
    let mut copied = 0;
    if copy_runs {
        let into = runs_dir(out);
        for r in &mut file.runs {
            let (Some(from), Some(name)) =
                (folders.get(&r.run), Path::new(&r.recording).file_name())
            else {
                continue;
            };
            let to = into.join(format!("run-{:03}", r.run));
            if !same_folder(from, &to) {
                // A run folder the artifact left out is named as the source; any other error
                // names where the copy was going (a full disk is the destination's).
                if let Err(e) = std::fs::metadata(from) {
                    return Err(MergeFailure::File(Error::io(from, e)));
                }
                copy_run(from, Path::new(name), &to)
                    .map_err(|e| MergeFailure::File(Error::io(&to, e)))?;
                copied += 1;
            }
            r.recording = relative_to(&absolute(&to.join(name)), &base)
                .display()
                .to_string();
        }
    }
    crate::atomic::write(out, file.to_text().as_bytes())
        .map_err(|e| MergeFailure::File(Error::io(out, e)))?;
    Ok(Merged {
        file,
        parts: paths,
        repeated: merged.repeated,
        copied,
    })
}

/// Whether `a` and `b` are one folder (a merged file merged into itself): resolved when
/// both exist, else by their absolute names.
fn same_folder(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => absolute(a) == absolute(b),
    }
}
