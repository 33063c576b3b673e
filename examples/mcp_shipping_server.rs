//! A small MCP shipping server over stdio, built with the official Rust SDK (`rmcp`), for the
//! proxy's end-to-end tests and for trying `toolstorm-tui mcp` by hand:
//!
//! ```sh
//! cargo build --example mcp_shipping_server
//! toolstorm-tui mcp scenarios/mcp-lost-ack.json --record incident.json -- \
//!     target/debug/examples/mcp_shipping_server
//! ```
//!
//! Two tools: `check_inventory` (annotated read-only) and `create_shipment`, which commits a
//! shipment and returns its id — the same id again when the call repeats an idempotency key
//! the server has seen. Environment switches for tests:
//! - `SHIPPING_EFFECTS_META=1`: list each new commit in the result's `_meta` under
//!   `dev.toolstorm/effects` (the MCP twin of `storm.effect`); an empty list for a replay.
//! - `SHIPPING_DELAY_MS=N`: `create_shipment` takes N ms.
//! - `SHIPPING_CRASH_ON=N`: the process dies (exit 3) on the N-th `create_shipment`, after
//!   committing it and before answering.
//! - `SHIPPING_PROGRESS=1`: `create_shipment` sends a `notifications/progress` for the call's
//!   `progressToken` (when it has one) before it answers, as long-running tools do.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, MetaObject, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServiceExt, schemars, tool, tool_router, transport::stdio};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Mutex;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct InventoryArgs {
    /// The item's stock-keeping unit.
    sku: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ShipmentArgs {
    /// The order to ship.
    order_id: String,
    /// Optional: the same key again returns the first shipment instead of a new one.
    #[serde(default)]
    idempotency_key: Option<String>,
}

#[derive(Clone, Default)]
struct Shipping {
    /// idempotency key → shipment id.
    by_key: Arc<Mutex<HashMap<String, String>>>,
    /// Shipments created so far.
    created: Arc<AtomicU64>,
    /// `create_shipment` calls so far.
    calls: Arc<AtomicU64>,
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[tool_router(server_handler)]
impl Shipping {
    #[tool(
        description = "How many units of a SKU are in stock",
        annotations(
            title = "Check inventory",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn check_inventory(
        &self,
        Parameters(args): Parameters<InventoryArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::structured(
            json!({"sku": args.sku, "available": 42}),
        ))
    }

    #[tool(
        description = "Create a shipment for an order; pass an idempotency key to make retries safe",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false
        )
    )]
    async fn create_shipment(
        &self,
        Parameters(args): Parameters<ShipmentArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let nth = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if std::env::var_os("SHIPPING_PROGRESS").is_some()
            && let Some(token) = context.meta.get_progress_token()
        {
            let _ = context
                .peer
                .notify_progress(ProgressNotificationParam::new(token, 1.0))
                .await;
        }
        if let Some(ms) = env_number("SHIPPING_DELAY_MS") {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
        let mut by_key = self.by_key.lock().await;
        let known = args
            .idempotency_key
            .as_ref()
            .and_then(|k| by_key.get(k).cloned());
        let (shipment_id, new) = match known {
            Some(id) => (id, false),
            None => {
                let n = self.created.fetch_add(1, Ordering::SeqCst) + 1;
                let id = format!("SHP-{n:04}");
                if let Some(k) = &args.idempotency_key {
                    by_key.insert(k.clone(), id.clone());
                }
                (id, true)
            }
        };
        if env_number("SHIPPING_CRASH_ON") == Some(nth) {
            eprintln!(
                "shipping server: crashing on create_shipment #{nth} after committing {shipment_id}"
            );
            std::process::exit(3);
        }
        let mut result = CallToolResult::structured(json!({
            "shipment_id": shipment_id,
            "order_id": args.order_id,
        }));
        if std::env::var_os("SHIPPING_EFFECTS_META").is_some() {
            let committed = if new {
                vec![json!({"name": "shipment", "key": args.order_id})]
            } else {
                Vec::new()
            };
            let mut meta = MetaObject::new();
            meta.insert("dev.toolstorm/effects".into(), json!(committed));
            result = result.with_meta(Some(meta));
        }
        Ok(result)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // stdout carries the protocol only; notes go to stderr.
    let service = Shipping::default().serve(stdio()).await?;
    service.waiting().await?;
    Ok(())
}
