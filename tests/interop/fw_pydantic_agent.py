"""The agent of case `fw_pydantic`: pydantic-ai 2.x on its defaults (MCPToolset on a URL, which
picks Streamable HTTP; a tool error raised as ModelRetry and the model asked again), its model a
FunctionModel playing an LLM that calls create_shipment and calls it again after an error.
Command line and output: fw_common.py."""


from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from fw_common import Run, parse_args, run_agent

url, order, tries, timeout = parse_args()
run = Run("pydantic-ai")


def model(messages, info: AgentInfo) -> ModelResponse:
    """Reads what the last tool call gave, then calls create_shipment again or stops."""
    for part in getattr(messages[-1], "parts", []):
        # pydantic-ai 2.x gives a retried tool error as a ToolReturnPart with outcome "retried".
        if isinstance(part, ToolReturnPart) and getattr(part, "outcome", "success") == "success":
            run.attempt("result", str(part.content))
        elif isinstance(part, (ToolReturnPart, RetryPromptPart)):
            run.attempt("tool_error", str(part.content))
    last = run.out["attempts"][-1]["kind"] if run.out["attempts"] else None
    if len(run.out["attempts"]) < tries and last in (None, "tool_error"):
        return ModelResponse(parts=[ToolCallPart("create_shipment", {"order_id": order})])
    return ModelResponse(parts=[TextPart("done")])


async def main() -> None:
    options = {} if timeout is None else {"read_timeout": timeout}
    server = MCPToolset(url, max_retries=max(tries - 1, 0), **options)
    agent = Agent(FunctionModel(model), toolsets=[server])
    async with agent:
        await agent.run(f"ship order {order}")


run_agent(run, main)
