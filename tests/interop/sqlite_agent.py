"""Case `sqlite`: the official Python SDK's stdio client -> toolstorm-tui mcp -> mcp-server-sqlite.

A naive agent creates a table and INSERTs one row; the scenario loses the acknowledgement of the
first write_query after the server executed it, so the agent sees an isError result and retries
the same INSERT once. The real database then holds two rows, and the recording must show it:
two write_query calls (the first an injected, executed error), a duplicate `row` effect keyed by
the query, and `toolstorm-tui check` exiting 1 and naming the duplicate.
"""

import asyncio
import os
import sqlite3

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from interop import BIN, CASE_DIR, HERE, Failures, proxy_args, recorded, run_bin, say, sidecar_path

SERVER = os.environ["SQLITE_SERVER"]  # the venv's mcp-server-sqlite
DB = CASE_DIR / "shop.db"
CASSETTE = CASE_DIR / "sqlite.json"
SCENARIO = HERE / "sqlite-lost-ack.json"

CREATE = "CREATE TABLE orders (id INTEGER PRIMARY KEY AUTOINCREMENT, sku TEXT NOT NULL, qty INTEGER NOT NULL)"
INSERT = "INSERT INTO orders (sku, qty) VALUES ('widget-7', 3)"
COUNT = "SELECT COUNT(*) AS n FROM orders"
SQL_TOOLS = {"create_table", "write_query", "read_query", "list_tables", "describe_table"}

f = Failures()


def text_of(result) -> str:
    return " ".join(getattr(b, "text", "") for b in result.content)


async def agent() -> None:
    params = StdioServerParameters(
        command=BIN,
        args=proxy_args(CASSETTE, [SERVER, "--db-path", str(DB)], SCENARIO),
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            say(f"server {init.serverInfo.name} {init.serverInfo.version}, protocol {init.protocolVersion}")
            names = {t.name for t in (await session.list_tools()).tools}
            f.check(SQL_TOOLS <= names, f"tools/list lacks {sorted(SQL_TOOLS - names)} (has {sorted(names)})")

            r = await session.call_tool("create_table", {"query": CREATE})
            f.check(not r.isError, f"create_table failed: {text_of(r)}")

            # The naive agent: an error means "it did not happen", so it tries once more.
            first = await session.call_tool("write_query", {"query": INSERT})
            say(f"write_query #1: isError={first.isError} {text_of(first)[:100]!r}")
            f.check(first.isError is True, "the first write_query was not answered with isError (no lost ack?)")
            if first.isError:
                second = await session.call_tool("write_query", {"query": INSERT})
                say(f"write_query #2: isError={second.isError} {text_of(second)[:100]!r}")
                f.check(not second.isError, f"the retried write_query failed: {text_of(second)}")

            seen = await session.call_tool("read_query", {"query": COUNT})
            say(f"read_query: {text_of(seen)[:100]!r}")
            f.check(not seen.isError, f"read_query failed: {text_of(seen)}")


def assert_recording() -> None:
    with sqlite3.connect(DB) as db:
        rows = db.execute("SELECT COUNT(*) FROM orders WHERE sku = 'widget-7'").fetchone()[0]
    f.check(rows == 2, f"the database holds {rows} row(s) for the INSERT, expected 2 (one per commit)")

    calls, effects, side = recorded(CASSETTE)
    f.check(bool(calls), f"no calls in the cassette {CASSETTE}")
    tools = [c.get("tool") for c in calls]
    f.check(
        tools == ["create_table", "write_query", "write_query", "read_query"],
        f"cassette calls are {tools}, expected create_table, write_query x2, read_query",
    )
    writes = [c for c in calls if c.get("tool") == "write_query"]
    if f.check(len(writes) == 2, f"{len(writes)} write_query call(s) in the cassette, expected 2"):
        a, b = writes
        f.check(
            a.get("status") == "error" and a.get("injected") is True and a.get("executed") is True
            and a.get("fault") == "lost-insert-ack" and a.get("kind") == "response_lost",
            "the first write_query is not recorded as an executed, injected response_lost error: "
            + str({k: a.get(k) for k in ("status", "injected", "executed", "fault", "kind")}),
        )
        f.check(
            b.get("status") == "ok" and b.get("injected") is False and b.get("executed") is True,
            "the retried write_query is not recorded as an executed ok call: "
            + str({k: b.get(k) for k in ("status", "injected", "executed")}),
        )
        f.check(
            all((c.get("arguments") or {}).get("query") == INSERT for c in writes),
            "the write_query calls do not carry the INSERT as their arguments",
        )
    rows_fx = [e for e in effects if e.get("name") == "row" and e.get("key") == INSERT]
    f.check(len(rows_fx) == 2, f"{len(rows_fx)} `row` effect(s) keyed by the INSERT, expected 2 (a duplicate)")
    f.check(len(side) == len(calls), f"the sidecar {sidecar_path(CASSETTE).name} has {len(side)} call(s), the cassette {len(calls)}")
    if side:
        got = side[1].get("response", {}).get("result", {}) if len(side) > 1 else {}
        f.check(got.get("isError") is True, "the sidecar does not show the isError the client received for the lost ack")

    check = run_bin("check", str(CASSETTE))
    say("check: " + check.stdout.strip().replace("\n", " | "))
    f.check(check.returncode == 1, f"`toolstorm-tui check` exited {check.returncode}, expected 1")
    f.check(
        "duplicate commit: row" in check.stdout and "INSERT INTO orders" in check.stdout,
        "`toolstorm-tui check` does not name the duplicate row commit: " + check.stdout.strip()[-300:],
    )


if __name__ == "__main__":
    asyncio.run(agent())
    assert_recording()
    f.done()
