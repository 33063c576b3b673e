"""A naive shipping agent on the MCP Python SDK 2.x's `Client` over Streamable HTTP, on its
defaults (mode="auto": `server/discover`, then 2026-07-28 when the server offers it).

    python http_client_2026.py URL [TOKEN]

Connects, lists the tools, calls create_shipment(order_id="A1") and, when that answers isError
or raises MCPError, calls it once more, as a naive agent does; then list_shipments. The SDK
never re-issues a request by itself: when a POST's SSE stream ends without the answer after an
event with an id, its transport resumes with GET + Last-Event-ID, again each time such a GET
ends empty (mcp/client/streamable_http.py, `_handle_sse_response` and `_handle_reconnection`,
the attempt counter reset to 0), so without a read timeout (`Client`'s default is none) the
call waits forever. CALL_TIMEOUT makes that an MCPError (REQUEST_TIMEOUT) and the retry here
is the agent's, with a new request id. Prints one JSON line to stdout and exits 0 whatever
happened: {"sdk", "protocol", "server", "tools", "attempts": [{"isError", "text",
"structured"} or {"error", "code", "seconds"}], "shipments", "fatal"}. Exits 2 on bad usage.
"""

import time
from importlib.metadata import version

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from naive_agent import run

CALL_TIMEOUT = 5.0


def attempt_of(result) -> dict:
    text = " ".join(getattr(b, "text", "") for b in result.content)
    return {"isError": bool(result.is_error), "text": text, "structured": result.structured_content}


async def agent(url: str, token: str | None, out: dict) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as http:
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=CALL_TIMEOUT) as client:
            out["protocol"] = client.protocol_version
            info = client.server_info
            out["server"] = f"{info.name} {info.version}" if info else None
            out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)

            for _ in range(2):  # the first try, and one retry after an error
                t0 = time.monotonic()
                try:
                    r = await client.call_tool("create_shipment", {"order_id": "A1"})
                    out["attempts"].append(attempt_of(r))
                    if not r.is_error:
                        break
                except MCPError as e:
                    out["attempts"].append({"error": e.error.message, "code": e.error.code,
                                            "seconds": round(time.monotonic() - t0, 1)})

            listed = await client.call_tool("list_shipments", {})
            out["shipments"] = (listed.structured_content or {}).get("shipments")
            if listed.is_error:
                out["fatal"] = "list_shipments: " + attempt_of(listed)["text"]


def main() -> None:
    out = {"sdk": f"python mcp {version('mcp')}", "protocol": None, "server": None, "tools": None,
           "attempts": [], "shipments": None, "fatal": None}
    run(__doc__, out, agent, httpx2.HTTPStatusError)


if __name__ == "__main__":
    main()
