"""Case `http_upstream`: the official Python SDK's stdio client -> toolstorm-tui mcp -> FastMCP
over Streamable HTTP, on https:// (uvicorn's TLS, the test certificate of tests/fixtures/tls).

The proxy's upstream is a URL (`-- https://localhost:PORT/mcp`), verified against the test
authority that SSL_CERT_FILE names; without it the same server's certificate is refused, in
words (so the proxy does verify). The server's bearer token reaches it only through `--header 'Authorization: $SHIP_AUTH'`, read from the proxy's environment. With
scenarios/mcp-lost-ack.json the naive agent sees create_shipment fail and retries it: two rows
for A1, `check` exits 1 naming the duplicate, the token is written nowhere, and the proxy is gone
once the client closed the session.
"""

import asyncio
import os
import subprocess

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from interop import BIN, CASE_DIR, Failures, alive, children, exe_of, say, stop, wait_until
from shipping_http import AUTHORITY, SCENARIO, assert_duplicate, assert_secret_kept, new_token, start_server

CASSETTE = CASE_DIR / "upstream.json"
f = Failures()
proxies: list[int] = []


def text_of(result) -> str:
    return " ".join(getattr(b, "text", "") for b in result.content)


async def agent(url: str, token: str) -> None:
    params = StdioServerParameters(
        command=BIN,
        args=["mcp", str(SCENARIO), "--record", str(CASSETTE), "--header", "Authorization: $SHIP_AUTH", "--", url],
        env={**os.environ, "SHIP_AUTH": f"Bearer {token}", "SSL_CERT_FILE": str(AUTHORITY)},
    )
    with open(CASE_DIR / "proxy.err", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            want = os.path.realpath(BIN)
            proxies.extend(p for p in children(os.getpid()) if os.path.realpath(exe_of(p)) == want)
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                say(f"server {init.serverInfo.name}, protocol {init.protocolVersion}")
                names = {t.name for t in (await session.list_tools()).tools}
                f.check({"create_shipment", "list_shipments"} <= names, f"tools/list through the proxy gave {sorted(names)}")
                for n in (1, 2):  # the naive agent: an error means "it did not happen"
                    r = await session.call_tool("create_shipment", {"order_id": "A1"})
                    say(f"create_shipment #{n}: isError={r.isError} {text_of(r)[:120]!r}")
                    f.check(r.isError is (n == 1), f"create_shipment #{n} answered isError={r.isError}: {text_of(r)[:200]}")
                    if not r.isError:
                        break
                listed = await session.call_tool("list_shipments", {})
                f.check(not listed.isError, f"list_shipments failed: {text_of(listed)[:200]}")


def refused_without_the_authority(url: str) -> None:
    """The same server, the proxy not told of the test authority: initialize is refused."""
    env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    init = ('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
            '"capabilities":{},"clientInfo":{"name":"interop","version":"1"}}}\n')
    out = subprocess.run([BIN, "mcp", "--", url], input=init, capture_output=True, text=True, timeout=30, env=env)
    first = out.stdout.splitlines()[0] if out.stdout else ""
    f.check("not signed by an authority trusted here" in first,
            f"without SSL_CERT_FILE the proxy did not refuse the test certificate: {first[:300]!r}")


def main() -> None:
    token = new_token()
    server = None
    outputs: list[str] = []
    try:
        server, url = start_server(f, token, tls=True)
        if url:
            try:
                asyncio.run(asyncio.wait_for(agent(url, token), 60))
            except Exception as e:  # noqa: BLE001 - a failed session is a finding, not a crash
                f.check(False, f"the stdio session through the proxy failed: {type(e).__name__}: {e}"[:400])
            left = [p for p in proxies if not wait_until(lambda p=p: not alive(p), 10)]
            f.check(not left, f"the proxy {left} still ran 10 s after its client closed the session")
            outputs = assert_duplicate(f, CASSETTE)
            refused_without_the_authority(url)
    finally:
        for pid in proxies:
            if alive(pid):
                os.kill(pid, 9)
        if server is not None:
            stop(server)
    assert_secret_kept(f, token, outputs)
    f.done()


if __name__ == "__main__":
    main()
