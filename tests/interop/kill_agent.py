"""Case `kill`: a client that SIGKILLs its server right after the last answer.

fastmcp-based clients (pydantic-ai's MCPToolset, ...) kill the server process at interpreter
exit, a few milliseconds after the last answer (shared/spec/mcp-boundary.md). Here the official
Python SDK's stdio client starts the proxy (recording only) in front of mcp-server-sqlite, makes
a dozen calls, and SIGKILLs the proxy (its own child, found in /proc) as soon as the last answer
arrives. Whatever the proxy had not written by then is gone: the cassette and its sidecar must
already hold every call the client got an answer to.
"""

import asyncio
import json
import os
import signal
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from interop import (
    BIN, CASE_DIR, Failures, alive, children, exe_of, pgrep, proxy_args, reap_leftovers,
    recorded, run_bin, say, wait_until,
)

SERVER = os.environ["SQLITE_SERVER"]
DB = CASE_DIR / "kill.db"
CASSETTE = CASE_DIR / "kill.json"

f = Failures()
answered: list[str] = []  # the tool of every call the client got an answer to, in order
killed: list[int] = []
# A self-check of this harness, not a mode of the case: with a pause longer than the proxy's
# longest write delay before the kill, today's proxy passes (INTEROP_KILL_DELAY_MS=3000).
KILL_DELAY_MS = int(os.environ.get("INTEROP_KILL_DELAY_MS", "0"))


def the_proxy() -> int | None:
    """The proxy: this process's child running the toolstorm-tui binary."""
    want = os.path.realpath(BIN)
    mine = [p for p in children(os.getpid()) if os.path.realpath(exe_of(p)) == want]
    return mine[0] if len(mine) == 1 else None


async def agent() -> None:
    params = StdioServerParameters(command=BIN, args=proxy_args(CASSETTE, [SERVER, "--db-path", str(DB)]))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            proxy = the_proxy()
            if not f.check(proxy is not None, f"could not find the proxy among this process's children {children(os.getpid())}"):
                return
            plan = [("create_table", {"query": "CREATE TABLE events (id INTEGER PRIMARY KEY, what TEXT)"})]
            plan += [("write_query", {"query": f"INSERT INTO events (what) VALUES ('event {i}')"}) for i in range(8)]
            plan += [
                ("read_query", {"query": "SELECT COUNT(*) AS n FROM events"}),
                ("list_tables", {}),
                ("describe_table", {"table_name": "events"}),
            ]
            for tool, args in plan:
                result = await session.call_tool(tool, args)
                answered.append(tool)
                f.check(not result.isError, f"{tool} failed: {' '.join(getattr(b, 'text', '') for b in result.content)}")
            # The last answer is in: kill the server process the way fastmcp's clients do.
            if KILL_DELAY_MS:
                await asyncio.sleep(KILL_DELAY_MS / 1000)
            os.kill(proxy, signal.SIGKILL)
            killed.append(proxy)
            say(f"SIGKILLed the proxy (pid {proxy}) {KILL_DELAY_MS} ms after answer {len(answered)}")


def assert_recording() -> None:
    if killed:
        f.check(wait_until(lambda: not alive(killed[0]), 5), f"the proxy (pid {killed[0]}) still runs after SIGKILL")
    # The server loses its input with the proxy and should exit by itself; end it if not.
    if not wait_until(lambda: not [p for p in pgrep(str(DB)) if alive(p)], 5):
        left = reap_leftovers(str(DB))
        say(f"ended the orphaned server(s) {left}")

    calls, _, side = recorded(CASSETTE)
    n = len(answered)
    # The tool's own reading of the recording counts (a torn or half-written file reads as none).
    inspect = run_bin("inspect", "--json", str(CASSETTE), join=False)
    try:
        seen = json.loads(inspect.stdout)["calls"] if inspect.returncode == 0 else None
    except (ValueError, KeyError, TypeError):
        seen = None
    say(f"inspect --json: exit {inspect.returncode}: {inspect.stdout.strip()[:200]} {inspect.stderr.strip()[:300]}")
    found = "none (no valid recording)" if seen is None else str(seen)
    # What any reader of the recording sees: the files, or the journal ahead of them (every
    # reader recovers from it and says so).
    f.check(
        seen == n,
        f"expected {n} calls in the recording, found {found}"
        f" (cassette file {len(calls)}, sidecar {len(side)})",
    )
    behind = len(calls) < n or len(side) < n
    f.check(
        not behind or "recovered" in inspect.stderr,
        f"the files hold {len(calls)}/{len(side)} of {n} calls and no reader said it recovered the rest",
    )
    check = run_bin("check", "--json", str(CASSETTE), join=False)
    try:
        mcp = json.loads(check.stdout).get("mcp", {})
    except ValueError:
        mcp = {}
    f.check(mcp.get("finished") is False, f"check --json does not say the killed session did not finish: {check.stdout[:300]}")
    # Killed after its last answer, nothing in flight: nothing was lost, and the verdict says so.
    try:
        verdicts = {c["name"]: c for c in json.loads(check.stdout).get("checks", [])}
    except (ValueError, KeyError, TypeError):
        verdicts = {}
    ended = verdicts.get("Session finished", {})
    f.check(
        ended.get("passed") is True and "killed after its last answer" in ended.get("detail", ""),
        f"Session finished should pass, saying the proxy was killed after its last answer: {ended}",
    )
    tools = [c.get("tool") for c in calls]
    f.check(tools == answered[: len(tools)], f"the cassette's calls {tools} are not the answered calls {answered}")

if __name__ == "__main__":
    t0 = time.monotonic()
    try:
        asyncio.run(agent())
    except BaseException as e:  # the transport may complain about the process it lost
        say(f"the client's exit after the kill raised {type(e).__name__}: {e}")
    f.check(len(answered) == 12, f"the agent got {len(answered)} answer(s) of 12")
    say(f"session took {time.monotonic() - t0:.2f}s")
    assert_recording()
    f.done()
