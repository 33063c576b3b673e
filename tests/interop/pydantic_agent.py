"""The agent of case `pydantic`: pydantic-ai on its defaults, no API key (its TestModel calls
every tool), its MCP toolsets loaded from the `mcpServers` file given as argv[1], run once with
`run_sync`, then the process exits as a script does."""

import sys

from pydantic_ai import Agent
from pydantic_ai.mcp import load_mcp_toolsets
from pydantic_ai.models.test import TestModel

agent = Agent(TestModel(), toolsets=load_mcp_toolsets(sys.argv[1]))
result = agent.run_sync("ship order o-1")
for message in result.all_messages():
    for part in getattr(message, "parts", []):
        kind = getattr(part, "part_kind", "")
        if kind in ("tool-call", "tool-return"):
            print(kind, getattr(part, "tool_name", ""), str(getattr(part, "content", getattr(part, "args", "")))[:200], flush=True)
