//! The MCP boundary: real agents call their tools through MCP servers, so this is where a
//! lost acknowledgement becomes reproducible for any agent and any server.
//!
//! - [`proxy`]: a transparent stdio proxy in front of a server that injects the engine's seeded
//!   faults into `tools/call`, keeps evidence of what committed ([`evidence`]) and records the
//!   session live, write-ahead ([`journal`], compacted by [`recorder`]) as a ToolStorm cassette
//!   plus a sidecar of session facts ([`session`]).
//! - [`client`]: a stdio MCP client, and [`tools`]: a server's tools run through the live
//!   executor ([`crate::executor::live`]).
//! - [`replay`]: serves a recording as an MCP server, offline and strictly.
//! - [`scenario`]: scenario files of world `mcp` (rules, how failures reach the client, commit
//!   evidence, the server command).
//! - [`summary`]: what stands in for arguments too large to record, and how replay checks it.
//! - [`wire`]: what a JSON-RPC line is, and the answers the proxy makes.
//!
//! A server can say what a call committed by listing it in the result's `_meta` under
//! [`wire::EFFECTS_META_KEY`] — `{"dev.toolstorm/effects": [{"name": "shipment", "key":
//! "o-1"}]}` — the MCP twin of [`crate::Storm::effect`], and the most trusted evidence.

pub mod address;
pub mod client;
pub mod evidence;
pub mod http;
pub mod journal;
pub mod proxy;
pub mod recorder;
pub mod replay;
pub mod scenario;
pub mod session;
pub mod stdio;
pub mod summary;
pub mod tools;
pub mod transport;
pub mod wire;
pub mod wirelog;
