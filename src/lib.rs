//! ToolStorm engine (work in progress).
pub mod cassette;
pub mod clock;
pub mod contract;
pub mod decision;
pub mod error;
pub mod json;
pub mod lab;
pub mod redact;
pub mod report;
pub mod rule;
pub mod storm;

pub use error::{ConfigError, Error, Result};
pub use storm::Storm;
