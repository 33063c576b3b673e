//! The Orbit world on a real database, for live runs: the issues in a SQLite file built from
//! the bundled data and opened **read-only** (`mode=ro`), as the lesson's `_rows` does. A
//! database that is busy or locked (`SQLITE_BUSY`, `SQLITE_LOCKED`: a writer holds it) is a
//! transient failure the executor may retry; any other SQL failure is permanent. Nothing
//! waits for a lock: the busy timeout is zero, so the failure reaches the executor at once
//! and its seeded pause decides when to try again.
//!
//! The docs are files too: the bundled Markdown is written into the work folder's `docs/`,
//! and `get_doc_section` reads `docs/<id>.md` for an id on the allow-list — only those names,
//! so a `doc_id` of `../../etc/passwd` reads nothing (it gets the closest ids, as in the
//! simulation). The tracker appends to its JSON-lines file, as the bundled world's does.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::Orbit;
use crate::error::ConfigError;
use crate::executor::live::{Commit, LiveTools};
use crate::executor::{Registry, ToolError, Toolbox};
use crate::json::{Object, Value, parse};

/// The issues table's file name in a work folder.
pub const DATABASE: &str = "orbit-issues.sqlite3";
/// The docs' folder in a work folder.
pub const DOCS_DIR: &str = "docs";

/// A SQLite failure as the executor classifies it: busy or locked is transient, the rest
/// permanent.
fn classify(e: &rusqlite::Error) -> ToolError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => ToolError::Busy {
            message: format!("the issue store is busy: {e}"),
        },
        _ => ToolError::InvalidValue {
            message: format!("the issue store failed: {e}"),
            hint: None,
        },
    }
}

fn setup_error(path: &Path, e: &rusqlite::Error) -> ConfigError {
    ConfigError::new("Cannot build the Orbit database").because(format!("{}: {e}", path.display()))
}

/// The folder a live world's files go in: `work_dir` when given, else a private temporary
/// one, removed when the returned guard is dropped.
pub fn folder(
    work_dir: Option<&Path>,
) -> Result<(PathBuf, Option<tempfile::TempDir>), ConfigError> {
    if let Some(dir) = work_dir {
        return Ok((dir.to_path_buf(), None));
    }
    let scratch = tempfile::tempdir().map_err(|e| {
        ConfigError::new("Cannot build the Orbit database")
            .because(format!("no temporary folder: {e}"))
    })?;
    Ok((scratch.path().to_path_buf(), Some(scratch)))
}

/// Writes the issues of `orbit` into a new SQLite file at `path` (replacing one there).
pub fn build(orbit: &Orbit, path: &Path) -> Result<(), ConfigError> {
    // A crash during an earlier build may have left a rollback journal: it goes too, or
    // SQLite would roll it back into the new file.
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
    let conn = Connection::open(path).map_err(|e| setup_error(path, &e))?;
    let fail = |e: rusqlite::Error| setup_error(path, &e);
    conn.execute_batch(
        "PRAGMA journal_mode = DELETE;
         CREATE TABLE issues (id INTEGER PRIMARY KEY, issue TEXT NOT NULL);",
    )
    .map_err(fail)?;
    let tx = conn.unchecked_transaction().map_err(fail)?;
    {
        let mut insert = tx
            .prepare("INSERT INTO issues (id, issue) VALUES (?1, ?2)")
            .map_err(fail)?;
        for (id, issue) in orbit.issue_values() {
            insert
                .execute((id, crate::json::compact(&issue)))
                .map_err(fail)?;
        }
    }
    tx.commit().map_err(fail)
}

/// Writes the bundled docs into `dir`, one `<id>.md` each (replacing what is there).
fn write_docs(dir: &Path) -> Result<(), ConfigError> {
    let fail = |e: std::io::Error| {
        ConfigError::new("Cannot write the Orbit docs").because(format!("{}: {e}", dir.display()))
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    for (id, text) in super::doc_sources() {
        crate::atomic::write(&dir.join(format!("{id}.md")), text.as_bytes()).map_err(fail)?;
    }
    Ok(())
}

/// The issue store: a read-only connection to the database file.
pub struct IssueStore {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for IssueStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssueStore")
            .field("path", &self.path)
            .finish()
    }
}

impl IssueStore {
    /// Opens the database at `path` read-only; a lock held by a writer fails at once.
    pub fn open(path: &Path) -> Result<IssueStore, ConfigError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| setup_error(path, &e))?;
        conn.busy_timeout(std::time::Duration::ZERO)
            .map_err(|e| setup_error(path, &e))?;
        Ok(IssueStore {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The issue `id` as `get_issue` returns it, `None` when there is none.
    pub fn issue(&self, id: i64) -> Result<Option<Value>, ToolError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let text: Option<String> = conn
            .query_row("SELECT issue FROM issues WHERE id = ?1", [id], |row| {
                row.get(0)
            })
            .optional()
            .map_err(|e| classify(&e))?;
        text.map(|t| {
            parse(&t).map_err(|e| ToolError::InvalidValue {
                message: format!("issue {id} in the store is not JSON: {e}"),
                hint: None,
            })
        })
        .transpose()
    }
}

/// The Orbit world for live runs: each tool takes the time the world declares for it, then
/// `get_issue` reads the SQLite store, `get_doc_section` the doc files; the tracker's tools
/// (its JSON-lines file) are the bundled world's, one body at a time.
pub struct RealOrbit {
    registry: Registry,
    store: IssueStore,
    docs: PathBuf,
    world: Mutex<Orbit>,
}

impl std::fmt::Debug for RealOrbit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealOrbit")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl RealOrbit {
    /// Builds the database in `dir` from `orbit`'s issues and opens it read-only.
    pub fn new(orbit: Orbit, dir: &Path) -> Result<RealOrbit, ConfigError> {
        let path = dir.join(DATABASE);
        build(&orbit, &path)?;
        let docs = dir.join(DOCS_DIR);
        write_docs(&docs)?;
        Ok(RealOrbit {
            registry: orbit.registry().clone(),
            store: IssueStore::open(&path)?,
            docs,
            world: Mutex::new(orbit),
        })
    }

    /// Where the docs are read from.
    pub fn docs_dir(&self) -> &Path {
        &self.docs
    }

    /// `get_doc_section` from the files: an allow-listed id reads `docs/<id>.md`; any other
    /// id is the bundled world's answer (the closest ids).
    fn doc_section(&self, args: &Object) -> Option<Result<Value, ToolError>> {
        let id = args.get("doc_id").and_then(Value::as_str)?;
        if !super::doc_sources().iter().any(|(known, _)| *known == id) {
            return None;
        }
        let path = self.docs.join(format!("{id}.md"));
        let text = match crate::fsread::read_document(&path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Some(Err(ToolError::NotFound {
                    message: format!("the doc {id:?} is missing ({})", path.display()),
                    hint: None,
                }));
            }
            Err(e) => {
                return Some(Err(ToolError::Other {
                    message: format!("cannot read the doc {id:?} ({}): {e}", path.display()),
                }));
            }
        };
        let heading = args.get("heading").and_then(Value::as_str);
        Some(super::Doc::parse(id, &text).answer(heading))
    }

    /// The issue store.
    pub fn store(&self) -> &IssueStore {
        &self.store
    }

    /// Looks at the bundled world (its tracker).
    pub fn with<R>(&self, f: impl FnOnce(&mut Orbit) -> R) -> R {
        let mut world = self.world.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut world)
    }
}

impl LiveTools for RealOrbit {
    fn registry(&self) -> &Registry {
        &self.registry
    }

    fn run(&self, tool: &str, args: &Object, commit: &mut Commit<'_>) -> Result<Value, ToolError> {
        // Each tool still takes the time the world declares for it (its network and disk).
        let seconds = self.with(|w| w.duration(tool, args));
        if seconds.is_finite() && seconds > 0.0 {
            std::thread::sleep(std::time::Duration::from_secs_f64(seconds.min(86_400.0)));
        }
        if tool == "get_issue"
            && let Some(id) = args.get("issue_id").and_then(Value::as_i64)
        {
            // An id the store lacks gets the bundled world's answer (its hint included).
            if let Some(issue) = self.store.issue(id)? {
                return Ok(crate::obj! {"issue" => issue, "untrusted" => super::UNTRUSTED});
            }
        }
        if tool == super::GET_DOC_SECTION
            && let Some(answer) = self.doc_section(args)
        {
            return answer;
        }
        self.with(|w| w.run(tool, args, commit))
    }
}
