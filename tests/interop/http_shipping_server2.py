"""The shipping server of http_shipping_server.py on the MCP Python SDK 2.x (MCPServer, which
mcp 2 renamed FastMCP to), over Streamable HTTP: it serves 2026-07-28 (stateless POSTs,
`server/discover`) beside the handshake revisions.

    SHIPPING_DB=ship.db [HTTP_TOKEN=secret] [HTTP_LOG_HEADERS=1] python http_shipping_server2.py PORT

Serves http://127.0.0.1:PORT/mcp with `create_shipment(order_id)` (inserts a row, returns
{"shipment_id": id}) and `list_shipments()` (returns {"shipments": [{"id", "order_id"}, ...]})
over a SQLite database created when missing. HTTP_TOKEN: every request without
`Authorization: Bearer $HTTP_TOKEN` gets 401. HTTP_LOG_HEADERS=1: one stderr line per request
let in, `http: METHOD PATH {headers}` with its MCP headers (MCP-Protocol-Version, Mcp-Method,
Mcp-Name, Mcp-Session-Id, Last-Event-ID), and `refused: METHOD PATH` for one without the token.
The SDK's defaults are kept otherwise (SSE answers, DNS rebinding protection).
"""

import os
import sqlite3
import sys
from contextlib import closing

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse

DB = os.environ["SHIPPING_DB"]
TOKEN = os.environ.get("HTTP_TOKEN", "")
LOG_HEADERS = os.environ.get("HTTP_LOG_HEADERS") == "1"

mcp = MCPServer("http-shipping-2")


def connect() -> sqlite3.Connection:
    db = sqlite3.connect(DB)
    db.execute("CREATE TABLE IF NOT EXISTS shipments (id INTEGER PRIMARY KEY AUTOINCREMENT, order_id TEXT NOT NULL)")
    return db


@mcp.tool()
def create_shipment(order_id: str) -> dict[str, int]:
    """Create a shipment for an order; returns its id."""
    with closing(connect()) as db, db:
        shipment_id = db.execute("INSERT INTO shipments (order_id) VALUES (?)", (order_id,)).lastrowid
    return {"shipment_id": shipment_id}


@mcp.tool()
def list_shipments() -> dict[str, list[dict[str, int | str]]]:
    """List every shipment."""
    with closing(connect()) as db:
        rows = db.execute("SELECT id, order_id FROM shipments ORDER BY id").fetchall()
    return {"shipments": [{"id": i, "order_id": o} for i, o in rows]}


class BearerGate:
    """ASGI middleware: 401 for HTTP requests without the bearer token (when one is set)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            if TOKEN and headers.get("authorization") != f"Bearer {TOKEN}":
                if LOG_HEADERS:
                    print(f"refused: {scope['method']} {scope['path']} (no bearer token)", file=sys.stderr, flush=True)
                deny = PlainTextResponse("missing or wrong bearer token", status_code=401,
                                         headers={"WWW-Authenticate": "Bearer"})
                await deny(scope, receive, send)
                return
            if LOG_HEADERS:
                shown = {k: headers.get(k) for k in ("accept", "mcp-session-id", "mcp-protocol-version",
                         "mcp-method", "mcp-name", "last-event-id") if k in headers}
                print(f"http: {scope['method']} {scope['path']} {shown}", file=sys.stderr, flush=True)
        await self.app(scope, receive, send)


if __name__ == "__main__":
    port = int(sys.argv[1])
    uvicorn.run(BearerGate(mcp.streamable_http_app(host="127.0.0.1")), host="127.0.0.1", port=port,
                log_level="warning")
