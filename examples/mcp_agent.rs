//! A small agent on the official Rust SDK (`rmcp`), for campaigns: it reads an `mcpServers`
//! file (as agent frameworks do), starts the first server in it, and ships order `o-1` with
//! `create_shipment`, retrying once when the call fails — naively (the same call again), or
//! with `--idempotent` (an idempotency key the server honours, so the retry is safe).
//!
//! ```sh
//! cargo build --example mcp_agent --example mcp_shipping_server
//! toolstorm-tui campaign scenarios/mcp-lost-ack.json --runs 20 --probability 0.5 -- \
//!     target/debug/examples/mcp_agent --mcp-config {mcp_config}
//! ```

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::object;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let config = args
        .iter()
        .position(|a| a == "--mcp-config")
        .and_then(|i| args.get(i + 1))
        .ok_or("usage: mcp_agent --mcp-config FILE [--idempotent]")?;
    let idempotent = args.iter().any(|a| a == "--idempotent");
    let text = std::fs::read_to_string(config)?;
    let doc: serde_json::Value = serde_json::from_str(&text)?;
    let (name, entry) = doc
        .get("mcpServers")
        .and_then(|s| s.as_object())
        .and_then(|s| s.iter().next())
        .ok_or("the file has no mcpServers entry")?;
    let command = entry
        .get("command")
        .and_then(|c| c.as_str())
        .ok_or("the entry has no command")?;
    let argv: Vec<String> = entry
        .get("args")
        .and_then(|a| a.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let cmd = tokio::process::Command::new(command).configure(|c| {
        c.args(&argv);
    });
    let client = ().serve(TokioChildProcess::new(cmd)?).await?;
    let call = || {
        let arguments = if idempotent {
            object!({"order_id": "o-1", "idempotency_key": "ship-o-1"})
        } else {
            object!({"order_id": "o-1"})
        };
        CallToolRequestParams::new("create_shipment").with_arguments(arguments)
    };
    let mut outcome = "failed";
    for attempt in 1..=2 {
        match client.call_tool(call()).await {
            Ok(r) if r.is_error != Some(true) => {
                outcome = "shipped";
                eprintln!("agent: {name}: attempt {attempt} shipped o-1");
                break;
            }
            Ok(_) => eprintln!("agent: {name}: attempt {attempt} failed (isError)"),
            Err(e) => eprintln!("agent: {name}: attempt {attempt} failed ({e})"),
        }
    }
    client.cancel().await?;
    println!("{outcome}");
    Ok(())
}
