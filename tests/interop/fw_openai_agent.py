"""The agent of case `fw_openai`: the OpenAI Agents SDK on its defaults (MCPServerStreamableHttp,
its 5 s per-call session timeout, Runner.run and the SDK's own tool-failure handling), its model
a scripted Model (the SDK's `Model` interface, no API key, tracing off) playing an LLM that calls
create_shipment and calls it again when the tool's output shows no shipment id. Command line and
output: fw_common.py."""

import json

from agents import Agent, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.mcp import MCPServerStreamableHttp
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from fw_common import Run, parse_args, run_agent

url, order, tries, timeout = parse_args()
run = Run("openai-agents")


def tool_outputs(items) -> list[str]:
    """The outputs the Runner gave back for the tool calls so far, in order."""
    if isinstance(items, str):
        return []
    out = []
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else getattr(item, "type", None)
        if kind == "function_call_output":
            output = item.get("output") if isinstance(item, dict) else getattr(item, "output", None)
            if isinstance(output, list):  # content blocks: their text
                output = " ".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in output)
            out.append(output if isinstance(output, str) else json.dumps(output))
    return out


class ScriptedModel(Model):
    """Calls create_shipment; after each tool output, calls it again unless it shows a
    shipment id (and tries are left); then answers in text."""

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema,
                           handoffs, tracing, **kwargs) -> ModelResponse:
        outputs = tool_outputs(input)
        if outputs:
            last = outputs[-1]
            run.attempt("result" if "shipment_id" in last else "tool_error", last)
        n = len(outputs)
        if n == 0 or ("shipment_id" not in outputs[-1] and n < tries):
            call = ResponseFunctionToolCall(type="function_call", call_id=f"call_{n + 1}", id=f"fc_{n + 1}",
                                            name="create_shipment", arguments=json.dumps({"order_id": order}),
                                            status="completed")
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text="done", annotations=[])
        message = ResponseOutputMessage(type="message", id="msg_1", role="assistant", status="completed",
                                        content=[text])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the scripted model does not stream")


async def main() -> None:
    options = {} if timeout is None else {"client_session_timeout_seconds": timeout}
    async with MCPServerStreamableHttp(params={"url": url}, name="shipping", **options) as server:
        agent = Agent(name="shipper", instructions="Ship the order.", model=ScriptedModel(),
                      mcp_servers=[server])
        await Runner.run(agent, f"ship order {order}")


set_tracing_disabled(True)
run_agent(run, main)
