//! How the program ends: the exit codes and the name both faces (the command line and the
//! explorer) use in their messages, named in one place.

/// The program's name, the prefix of every error line (`toolstorm-tui: ...`).
pub const PROGRAM: &str = "toolstorm-tui";

/// Success: the command did its work, and every contract it was asked to enforce passed.
pub const OK: i32 = 0;
/// A contract failed (`check`, `replay`, `run --fail-on-contract`).
pub const CONTRACT_FAILED: i32 = 1;
/// Bad input or usage: a file that cannot be used, a flag out of range, no terminal.
pub const USAGE: i32 = 2;
