"""The agent of case `fw_langchain`: LangChain's MCP adapters on their defaults
(MultiServerMCPClient with a `streamable_http` connection, a new session per tool call, an
isError result given back as a ToolMessage with status "error"), each tool called as LangGraph's
ToolNode calls it (`ainvoke` with the model's tool call) and called again after an error, as the
model would. No model is needed: the calls are the model's. Command line and output:
fw_common.py."""

from datetime import timedelta

from langchain_mcp_adapters.client import MultiServerMCPClient

from fw_common import Run, parse_args, run_agent

url, order, tries, timeout = parse_args()
run = Run("langchain-mcp-adapters")


async def main() -> None:
    connection = {"transport": "streamable_http", "url": url}
    if timeout is not None:
        connection["session_kwargs"] = {"read_timeout_seconds": timedelta(seconds=timeout)}
    client = MultiServerMCPClient({"shipping": connection})
    tools = {t.name: t for t in await client.get_tools()}
    for n in range(tries):
        call = {"type": "tool_call", "name": "create_shipment", "args": {"order_id": order}, "id": f"call_{n + 1}"}
        message = await tools["create_shipment"].ainvoke(call)
        blocks = message.content if isinstance(message.content, list) else [message.content]
        text = " ".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in blocks)
        ok = getattr(message, "status", "success") != "error"
        run.attempt("result" if ok else "tool_error", text)
        if ok:
            break


run_agent(run, main)
