"""A naive shipping agent on the official Python SDK's Streamable HTTP client.

    python http_client.py URL [TOKEN]

Initializes, lists the tools, calls create_shipment(order_id="A1") and, when that answers isError
or raises McpError (a JSON-RPC error or the 10 s timeout), calls it once more, as a naive agent
does; then list_shipments. Prints one JSON line to stdout and exits 0, whatever the server did:
{"sdk", "server", "protocol", "session_id", "tools", "attempts": [{"isError", "text",
"structured"} or {"error", "code"}], "shipments", "fatal"}. `fatal` names what stopped the run
early (e.g. "HTTP 401 Unauthorized" for a missing token), or is null. TOKEN is sent as
`Authorization: Bearer TOKEN`. Exits 2 on bad usage only.
"""

import json
from datetime import timedelta
from importlib.metadata import version

import httpx

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import McpError

from naive_agent import run

CALL_TIMEOUT = timedelta(seconds=10)


def attempt_of(result) -> dict:
    text = " ".join(getattr(b, "text", "") for b in result.content)
    return {"isError": bool(result.isError), "text": text, "structured": result.structuredContent}


def structured(result) -> dict:
    """The result's structuredContent, else its text parsed as JSON, else {}."""
    if result.structuredContent is not None:
        return result.structuredContent
    try:
        return json.loads(attempt_of(result)["text"])
    except ValueError:
        return {}


async def agent(url: str, token: str | None, out: dict) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, session_id):
            async with ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT) as session:
                init = await session.initialize()
                out["server"] = f"{init.serverInfo.name} {init.serverInfo.version}"
                out["protocol"] = init.protocolVersion
                out["session_id"] = session_id()
                out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)

                for _ in range(2):  # the first try, and one retry after an error
                    try:
                        r = await session.call_tool("create_shipment", {"order_id": "A1"},
                                                    read_timeout_seconds=CALL_TIMEOUT)
                        out["attempts"].append(attempt_of(r))
                        if not r.isError:
                            break
                    except McpError as e:
                        out["attempts"].append({"error": e.error.message, "code": e.error.code})

                listed = await session.call_tool("list_shipments", {})
                out["shipments"] = structured(listed).get("shipments")
                if listed.isError:
                    out["fatal"] = "list_shipments: " + attempt_of(listed)["text"]


def main() -> None:
    out = {"sdk": f"python mcp {version('mcp')}", "server": None, "protocol": None, "session_id": None,
           "tools": None, "attempts": [], "shipments": None, "fatal": None}
    run(__doc__, out, agent, httpx.HTTPStatusError)


if __name__ == "__main__":
    main()
