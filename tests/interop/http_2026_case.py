"""Case `http_2026`: the MCP Python SDK 2.x on both sides, speaking 2026-07-28 over Streamable
HTTP on their defaults, through `toolstorm-tui mcp --listen` with the answer's stream cut.

Run by the pydantic venv's Python (mcp 2.3). The server is http_shipping_server2.py (MCPServer,
mcp 2's FastMCP, writing to SQLite, a bearer token required), the proxy listens with
http-stream-cut.json (create_*'s first answer lost with delivery `stream_cut`: the POST's SSE
stream ends without the answer; under 2026-07-28 the proxy's streams carry no event ids, as the
revision's streams are not resumable), and the agent is http_client_2026.py (`mcp.Client` on
mode="auto": `server/discover`, no initialize, no session). What the SDK does with the cut
stream: it does NOT re-issue the request itself; it fails the call at once with MCPError
-32000 ("SSE stream ended without a response"), and the retry, with a new request id, is the
agent's. (Given an event id, mcp 2.3 resumes with GET + Last-Event-ID once a second, forever,
until a read timeout: the proxy therefore sends none under 2026-07-28, and refuses to resume a
cut stream with 404 on the older revisions.) Asserts: the client and the sidecar say 2026-07-28; the server saw
MCP-Protocol-Version 2026-07-28, Mcp-Method and Mcp-Name on both create_shipment POSTs (relayed
by the proxy) and never an initialize or a session; two create_shipment calls recorded under
different request ids, the first the injected, executed response_lost; `check` exits 1 naming
`duplicate commit: shipment A1`; two rows for A1; the token written nowhere; no process left.
"""

import ast
import json
import subprocess
import sys

from interop import (BIN, CASE_DIR, HERE, Failures, alive, listen_url, load_json, pgrep, say,
                     sidecar_path, start, stop)
from shipping_http import assert_duplicate, assert_secret_kept, new_token, start_server

SCENARIO = HERE / "http-stream-cut.json"
CASSETTE = CASE_DIR / "http2026.json"
VERSION = "2026-07-28"
f = Failures()


def run_agent(url: str, token: str) -> None:
    done = subprocess.run([sys.executable, str(HERE / "http_client_2026.py"), url, token],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=70)
    (CASE_DIR / "client.out").write_text(done.stdout)
    (CASE_DIR / "client.err").write_text(done.stderr)
    try:
        out = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        f.check(False, f"the 2026 client printed no result (exit {done.returncode}): {done.stderr.strip()[-300:]}")
        return
    say(f"client: {done.stdout.strip()[:700]}")
    f.check(out.get("fatal") is None, f"the 2026 client stopped early: {out.get('fatal')}")
    f.check(out.get("protocol") == VERSION, f"the client negotiated {out.get('protocol')}, expected {VERSION}")
    tries = out.get("attempts") or []
    # -32000 (CONNECTION_CLOSED): the stream ended without an answer and without an id to
    # resume from, and the SDK gave up on it at once.
    f.check(len(tries) == 2 and tries[0].get("code") == -32000 and tries[1].get("isError") is False,
            f"the agent's create_shipment attempts were {tries}, expected an MCPError (-32000: the "
            "stream ended without a response) then a success")
    if tries:
        say(f"first attempt: {tries[0]}")
    a1 = [s for s in out.get("shipments") or [] if s.get("order_id") == "A1"]
    f.check(len(a1) == 2, f"list_shipments through the proxy showed {len(a1)} shipment(s) for A1, expected 2")


def server_requests() -> list[tuple[str, dict]]:
    """(method, MCP headers) of each request the server logged (HTTP_LOG_HEADERS=1)."""
    seen = []
    for line in (CASE_DIR / "server.err").read_text(errors="replace").splitlines():
        if line.startswith("http: "):
            method, _, rest = line[len("http: "):].partition(" ")
            try:
                seen.append((method, ast.literal_eval(rest.partition(" ")[2])))
            except (ValueError, SyntaxError):
                pass
    return seen


def assert_2026_wire() -> None:
    seen = server_requests()
    say(f"server saw: {seen}")
    methods = [h.get("mcp-method") for _, h in seen]
    f.check("initialize" not in methods and methods[:1] == ["server/discover"],
            f"the server's Mcp-Method headers were {methods}, expected server/discover first and no initialize")
    f.check(all(h.get("mcp-protocol-version") == VERSION for _, h in seen),
            f"a request reached the server without MCP-Protocol-Version {VERSION}: {seen}")
    f.check(not any("mcp-session-id" in h for _, h in seen), "a request carried Mcp-Session-Id at 2026-07-28")
    creates = [h for _, h in seen if h.get("mcp-name") == "create_shipment"]
    f.check(len(creates) == 2 and all(h.get("mcp-method") == "tools/call" for h in creates),
            f"{len(creates)} create_shipment POST(s) reached the server with Mcp-Method tools/call and "
            f"Mcp-Name create_shipment, expected 2")

    side = load_json(sidecar_path(CASSETTE)) or {}
    f.check(side.get("protocol_version") == VERSION,
            f"the sidecar's protocol_version is {side.get('protocol_version')}, expected {VERSION}")
    ids = [c.get("request_id") for c in side.get("calls") or []][:2]
    f.check(len(ids) == 2 and ids[0] != ids[1], f"the two create_shipment calls' request ids were {ids}: not re-issued with a new id")
    say(f"sidecar: protocol_version {side.get('protocol_version')}, calls "
        f"{[(c.get('call'), c.get('request_id'), c.get('delivered')) for c in side.get('calls') or []]}")


def main() -> None:
    token = new_token()
    server = proxy = None
    outputs: list[str] = []
    started: list[int] = []
    try:
        server, upstream = start_server(f, token, "http_shipping_server2.py", {"HTTP_LOG_HEADERS": "1"})
        started.append(server.pid)
        if upstream:
            proxy = start([BIN, "mcp", str(SCENARIO), "--record", str(CASSETTE),
                           "--listen", "127.0.0.1:0", "--", upstream], "proxy")
            started.append(proxy.pid)
            url = listen_url(proxy, "proxy")
            if f.check(url is not None, f"the proxy printed no `listening on` line (exit {proxy.poll()})"):
                run_agent(url, token)
            code = stop(proxy, grace=10)
            f.check(code is not None, "the proxy did not exit within 10 s of SIGTERM")
            say(f"proxy exit code after SIGTERM: {code}")
            outputs = assert_duplicate(f, CASSETTE)
            assert_2026_wire()
    finally:
        for p in (proxy, server):
            if p is not None:
                stop(p)
    left = [p for p in started if alive(p)] + pgrep(str(CASE_DIR))
    f.check(not left, f"processes left running: {left}")
    assert_secret_kept(f, token, outputs)
    f.done()


if __name__ == "__main__":
    main()
