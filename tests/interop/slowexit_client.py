"""Case `slowexit`: the official Python SDK's own ending, in front of a server slow to exit.

At exit the SDK's stdio client closes the proxy's input, SIGTERMs it 2 s later and SIGKILLs it
2 s after that. Here the server (the example shipping server behind `sh -c '...; sleep 30'`)
takes longer than that to exit, so the proxy is ended while it gives the server its grace.
The client had its answers and nothing was in flight: `check` must pass `Session finished` and
say the client closed the session, and nothing the case started may outlive it.
"""

import asyncio
import json
import os
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from interop import BIN, CASE_DIR, Failures, alive, pgrep, proxy_args, reap_leftovers, recorded, run_bin, say, wait_until

SERVER = os.environ["SHIPPING_SERVER"]
CASSETTE = CASE_DIR / "slowexit.json"
MARK = f"slowexit-{os.getpid()}"

f = Failures()
answered = 0


async def agent() -> None:
    global answered
    slow = ["sh", "-c", f"{SERVER}; sleep 30; : {MARK}"]
    params = StdioServerParameters(command=BIN, args=proxy_args(CASSETTE, slow))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for order in ("o-1", "o-2"):
                result = await session.call_tool("create_shipment", {"order_id": order})
                f.check(not result.isError, f"create_shipment {order} failed")
                answered += 1


if __name__ == "__main__":
    t0 = time.monotonic()
    asyncio.run(agent())
    took = time.monotonic() - t0
    say(f"the client's session and its close took {took:.2f}s")
    f.check(answered == 2, f"the agent got {answered} answer(s) of 2")
    if not wait_until(lambda: not [p for p in pgrep(MARK) if alive(p)], 10):
        f.check(False, f"the slow server outlived the session: {reap_leftovers(MARK)}")
    calls, _, side = recorded(CASSETTE)
    say(f"cassette {len(calls)} call(s), sidecar {len(side)}")
    check = run_bin("check", "--json", str(CASSETTE), join=False)
    try:
        doc = json.loads(check.stdout)
        verdicts = {c["name"]: c for c in doc.get("checks", [])}
    except (ValueError, KeyError, TypeError):
        doc, verdicts = {}, {}
    say(f"check: exit {check.returncode}: {check.stdout.strip()[:400]} {check.stderr.strip()[:200]}")
    ended = verdicts.get("Session finished", {})
    f.check(ended.get("passed") is True, f"Session finished failed: {ended}")
    f.check(check.returncode == 0, f"check exited {check.returncode}")
    f.check(len(calls) == 2 or "recovered" in check.stderr, f"the recording holds {len(calls)} of 2 calls")
    f.done()
