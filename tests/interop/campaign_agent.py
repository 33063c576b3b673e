"""An agent on the official Python SDK, as campaigns start it: it reads the `mcpServers` file it
is given (`--mcp-config FILE`, the campaign's `{mcp_config}`), starts the first server in it
and INSERTs one order with mcp-server-sqlite's write_query. When the call fails it retries once:
naively (the same INSERT again), or with `--careful` only after a read shows the row is not
there (the first attempt may have committed).
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

INSERT = "INSERT INTO orders (sku) VALUES ('widget-7')"
COUNT = "SELECT COUNT(*) AS n FROM orders"


async def main() -> None:
    config = sys.argv[sys.argv.index("--mcp-config") + 1]
    careful = "--careful" in sys.argv
    entry = next(iter(json.load(open(config, encoding="utf-8"))["mcpServers"].values()))
    params = StdioServerParameters(command=entry["command"], args=entry.get("args", []))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            first = await session.call_tool("write_query", {"query": INSERT})
            if first.isError:
                if careful:
                    seen = await session.call_tool("read_query", {"query": COUNT})
                    text = " ".join(getattr(b, "text", "") for b in seen.content)
                    if "'n': 0" not in text:
                        print("committed already")
                        return
                await session.call_tool("write_query", {"query": INSERT})
            print("inserted")


asyncio.run(main())
