//! # toolstorm — fault injection at the tool boundary, judged by what really committed
//!
//! An agent calls a tool (create a shipment); the shipment commits; the acknowledgement is
//! lost; the agent retries and now there are two shipments. Checks on responses miss this.
//! This crate wraps tool calls in a [`Storm`], injects declarative faults ([`rule`]) with
//! deterministic, keyed decisions ([`decision`]), records the side effects that really
//! committed, and judges the run with a [`contract::Contract`]. Its files, decisions, digests
//! and verdicts are interchangeable with ToolStorm 0.2.0's (the Python library).
//!
//! ## The lost acknowledgement, and its fix
//! ```
//! use toolstorm::contract::Contract;
//! use toolstorm::rule::{FaultKind, RuleSpec};
//! use toolstorm::{Error, Storm, Value, obj};
//!
//! // Lose the acknowledgement of the first create_shipment call.
//! let lost = || RuleSpec::new("lost-receipt", "create_shipment", FaultKind::ResponseLost).calls([1]).build();
//!
//! // A shipping tool that commits a `shipment` effect, honouring an optional idempotency key.
//! fn ship(storm: &Storm, stored: &std::cell::RefCell<Option<Value>>, key: Option<&str>) -> Result<Value, Error> {
//!     storm.call("create_shipment", obj! {"order_id" => "o-1", "idempotency_key" => key}, || {
//!         if let (Some(_), Some(receipt)) = (key, stored.borrow().clone()) {
//!             return Ok(receipt); // same key: no second commit
//!         }
//!         storm.effect("shipment", "o-1")?;
//!         let receipt = obj! {"shipment_id" => "SHP-0001"};
//!         *stored.borrow_mut() = Some(receipt.clone());
//!         Ok(receipt)
//!     })
//! }
//!
//! // The bug: retry without a key after ResponseLost.
//! let storm = Storm::builder().rule(lost()?).seed(42).build()?;
//! let stored = Default::default();
//! let first = ship(&storm, &stored, None);
//! assert!(matches!(first, Err(Error::ResponseLost(_))));
//! ship(&storm, &stored, None)?;
//! let report = storm.report();
//! let verdict = Contract::new(&report).require_triggered(&[]).no_duplicate_effects();
//! assert!(!verdict.passed()); // "1 duplicate effect(s) across 2 commits"
//!
//! // The fix: retry with a stable idempotency key.
//! let storm = Storm::builder().rule(lost()?).seed(42).build()?;
//! let stored = Default::default();
//! let _ = ship(&storm, &stored, Some("o-1"));
//! ship(&storm, &stored, Some("o-1"))?;
//! let report = storm.report();
//! Contract::new(&report).require_triggered(&[]).no_duplicate_effects().assert_valid()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Async tools
//! Tools that return futures are wrapped the same way, from a [`Scope`]: the top level
//! ([`Storm::scope`]) or the inside of a running call, which its body receives — nested calls
//! and effects go through it, so each effect belongs to the call that made it however many are
//! in flight. No runtime is needed; on a real clock, give the run your runtime's sleep
//! ([`storm::StormBuilder::sleeper`]). The lost acknowledgement again, on tokio:
//! ```
//! use std::sync::Mutex;
//! use toolstorm::contract::Contract;
//! use toolstorm::rule::{FaultKind, RuleSpec};
//! use toolstorm::{Error, Scope, Storm, Value, obj};
//!
//! async fn ship(top: &Scope<'_>, stored: &Mutex<Option<Value>>, key: Option<&str>) -> Result<Value, Error> {
//!     let args = obj! {"order_id" => "o-1", "idempotency_key" => key};
//!     top.call("create_shipment", args, |call| async move {
//!         call.sleep(0.12).await?; // 120 ms of work on the run's clock
//!         let earlier = stored.lock().map_err(|_| Error::raised("PoisonError", ""))?.clone();
//!         if let (Some(_), Some(receipt)) = (key, earlier) {
//!             return Ok(receipt); // same key: no second commit
//!         }
//!         call.effect("shipment", "o-1")?; // this call's commit
//!         let receipt = obj! {"shipment_id" => "SHP-0001"};
//!         *stored.lock().map_err(|_| Error::raised("PoisonError", ""))? = Some(receipt.clone());
//!         Ok(receipt)
//!     })
//!     .await
//! }
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let lost = || RuleSpec::new("lost-receipt", "create_shipment", FaultKind::ResponseLost).calls([1]).build();
//!     for (key, duplicates) in [(None, 1), (Some("o-1"), 0)] {
//!         let storm = Storm::builder().rule(lost()?).seed(42).build()?;
//!         let stored = Mutex::new(None);
//!         let top = storm.scope();
//!         let first = ship(&top, &stored, key).await;
//!         assert!(matches!(first, Err(Error::ResponseLost(_))));
//!         ship(&top, &stored, key).await?; // the retry
//!         let report = storm.report();
//!         assert_eq!(report.duplicate_effects(), duplicates);
//!         assert_eq!(report.calls[1].started, 0.12); // virtual time, as the reference records it
//!         let verdict = Contract::new(&report).no_duplicate_effects();
//!         assert_eq!(verdict.passed(), key.is_some());
//!     }
//!     Ok(())
//! }
//! ```
//!
//! ## Map
//! - [`json`]: the value model, strict parsing, canonical bytes and digests.
//! - [`rule`], [`decision`]: what faults exist and when they fire.
//! - [`storm`], [`clock`], [`redact`]: a run — calls, coverage, budget, effects, capture.
//! - [`report`], [`contract`]: the trace (schema v1) and its verdicts.
//! - [`lab`]: the bundled shipping world, recovery policies, scenarios and campaigns; the Orbit
//!   world the executor runs in.
//! - [`executor`]: the robust tool executor — parallel, time-boxed, classified, permissioned.
//! - [`model`]: a real model behind an OpenAI-compatible server (Responses or Chat
//!   Completions): the wire formats and an HTTP client with timeouts and retries.
//! - [`ask`]: the tool loop — a model's function calls run as executor batches until it
//!   answers or a round limit stops it.
//! - [`mcp`]: the MCP boundary — a proxy that injects faults between any agent and its MCP
//!   server, records the session as a cassette with evidence, and replays it strictly.
//! - [`document`]: one way in — open any file (cassette, run file, comparison, scenario of any
//!   world), validate it, run it; one typed error with one message.
//! - [`atomic`], [`fsread`], [`exit`]: crash-safe writes, bounded reads, exit codes.
//!
//! The engine reads no wall clock and no OS randomness: time comes from a [`clock::Clock`],
//! decisions from a seed. The `tui` feature (on by default) adds the command line and the
//! terminal UI; `--no-default-features` builds the engine alone.

pub mod agent;
pub mod ask;
pub mod atomic;
pub mod campaign;
pub mod cassette;
#[cfg(feature = "tui")]
pub mod cli;
pub mod clock;
pub mod contract;
pub mod decision;
pub mod document;
pub mod error;
pub mod executor;
pub mod exit;
pub mod fsread;
pub mod hashing;
pub mod http_route;
pub mod json;
pub mod junit;
pub mod lab;
pub mod mcp;
pub mod model;
pub mod printable;
pub mod redact;
pub mod report;
pub mod rule;
pub mod scenario_fields;
pub mod storm;
pub mod summary;
pub mod timeline;
#[cfg(feature = "tui")]
pub mod tui;

pub use error::{ConfigError, Error, Result};
pub use json::Value;
pub use storm::{RequireTriggered, Scope, Sleeper, Storm};
