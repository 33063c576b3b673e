"""A shipping MCP server on Streamable HTTP, built with the official Python SDK's FastMCP.

    SHIPPING_DB=ship.db [HTTP_TOKEN=secret] python http_shipping_server.py PORT

Serves http://127.0.0.1:PORT/mcp with two tools over a SQLite database (created when missing):
`create_shipment(order_id)` inserts a row and returns {"shipment_id": id}; `list_shipments()`
returns {"shipments": [{"id", "order_id"}, ...]}. Optional environment:

- HTTP_TOKEN: every request without `Authorization: Bearer $HTTP_TOKEN` gets 401.
- SHIPPING_DELAY: seconds create_shipment sleeps after its INSERT committed (a slow ack, for
  clients' timeouts).
- HTTP_LOG_HEADERS=1: one stderr line per request with its method and MCP headers.
- HTTP_TLS_CERT and HTTP_TLS_KEY: serve https:// with that certificate and key (uvicorn's TLS,
  OpenSSL underneath).

FastMCP's defaults are kept: stateful sessions (Mcp-Session-Id), SSE responses to POSTs
(json_response=False), a GET stream, and DNS rebinding protection: with host 127.0.0.1 only
Host headers `127.0.0.1:*`, `localhost:*`, `[::1]:*` are accepted (else 421), and an Origin
header, when sent, must be http:// on one of those hosts (else 403).
"""

import os
import sqlite3
import sys
from contextlib import closing

import anyio
import uvicorn
from mcp.server.fastmcp import FastMCP
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse

DB = os.environ["SHIPPING_DB"]
TOKEN = os.environ.get("HTTP_TOKEN", "")
DELAY = float(os.environ.get("SHIPPING_DELAY", "0"))
LOG_HEADERS = os.environ.get("HTTP_LOG_HEADERS") == "1"

mcp = FastMCP("http-shipping", host="127.0.0.1", streamable_http_path="/mcp")


def connect() -> sqlite3.Connection:
    db = sqlite3.connect(DB)
    db.execute("CREATE TABLE IF NOT EXISTS shipments (id INTEGER PRIMARY KEY AUTOINCREMENT, order_id TEXT NOT NULL)")
    return db


@mcp.tool()
async def create_shipment(order_id: str) -> dict[str, int]:
    """Create a shipment for an order; returns its id."""
    with closing(connect()) as db, db:
        shipment_id = db.execute("INSERT INTO shipments (order_id) VALUES (?)", (order_id,)).lastrowid
    if DELAY:
        await anyio.sleep(DELAY)
    return {"shipment_id": shipment_id}


@mcp.tool()
def list_shipments() -> dict[str, list[dict[str, int | str]]]:
    """List every shipment."""
    with closing(connect()) as db:
        rows = db.execute("SELECT id, order_id FROM shipments ORDER BY id").fetchall()
    return {"shipments": [{"id": i, "order_id": o} for i, o in rows]}


class BearerGate:
    """ASGI middleware: 401 for HTTP requests without the bearer token (when one is set);
    lifespan events pass through, so FastMCP's session manager still starts."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            if LOG_HEADERS:
                shown = {k: headers.get(k) for k in ("host", "origin", "accept", "mcp-session-id",
                         "mcp-protocol-version", "last-event-id", "authorization") if k in headers}
                print(f"http: {scope['method']} {scope['path']} {shown}", file=sys.stderr, flush=True)
            if TOKEN and headers.get("authorization") != f"Bearer {TOKEN}":
                deny = PlainTextResponse("missing or wrong bearer token", status_code=401,
                                         headers={"WWW-Authenticate": "Bearer"})
                await deny(scope, receive, send)
                return
        await self.app(scope, receive, send)


if __name__ == "__main__":
    port = int(sys.argv[1])
    tls = {}
    if os.environ.get("HTTP_TLS_CERT"):
        tls = {"ssl_certfile": os.environ["HTTP_TLS_CERT"], "ssl_keyfile": os.environ["HTTP_TLS_KEY"]}
    uvicorn.run(BearerGate(mcp.streamable_http_app()), host="127.0.0.1", port=port, log_level="warning", **tls)
