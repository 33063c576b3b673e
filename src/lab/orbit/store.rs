//! The Orbit world on a real database, for live runs: the issues in a SQLite file built from
//! the bundled data and opened **read-only** (`mode=ro`), as the lesson's `_rows` does. A
//! database that is busy or locked (`SQLITE_BUSY`, `SQLITE_LOCKED`: a writer holds it) is a
//! transient failure the executor may retry; any other SQL failure is permanent. Nothing
//! waits for a lock: the busy timeout is zero, so the failure reaches the executor at once
//! and its seeded pause decides when to try again. The other tools are the bundled world's.

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
/// `get_issue` reads the SQLite store; the other tools (docs, the tracker's JSON-lines file)
/// are the bundled world's, one body at a time.
pub struct RealOrbit {
    registry: Registry,
    store: IssueStore,
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
        Ok(RealOrbit {
            registry: orbit.registry().clone(),
            store: IssueStore::open(&path)?,
            world: Mutex::new(orbit),
        })
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
        self.with(|w| w.run(tool, args, commit))
    }
}
