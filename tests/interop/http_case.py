"""Cases `http` and `http_ts`: a Streamable HTTP client -> toolstorm-tui mcp --listen -> FastMCP.

    python http_case.py python|node

The shipping server (http_shipping_server.py, a bearer token required) listens on a free port;
the proxy listens on another (`--listen 127.0.0.1:0`) with scenarios/mcp-lost-ack.json, and the
naive agent (http_client.py on the official Python SDK's streamable_http_client, or
http_client.mjs on the TypeScript SDK's StreamableHTTPClientTransport, from HTTP_CLIENT_MJS)
talks to the proxy with the token in its Authorization header. The lost acknowledgement makes it
retry: two rows for A1, `check` exits 1 naming the duplicate, and the token is written nowhere.
Then `mcp --replay --listen` serves the recording to the same client offline: the same answers.
The proxy runs until SIGTERM; every process started here is ended, whatever happens.
"""

import json
import os
import subprocess
import sys

from interop import BIN, CASE_DIR, HERE, Failures, listen_url, say, start, stop
from shipping_http import SCENARIO, assert_duplicate, assert_secret_kept, new_token, start_server

CASSETTE = CASE_DIR / "http.json"
f = Failures()


def client_cmd(kind: str, url: str, token: str) -> list[str]:
    if kind == "python":
        return [sys.executable, str(HERE / "http_client.py"), url, token]
    return ["node", os.environ["HTTP_CLIENT_MJS"], url, token]


def run_agent(kind: str, url: str, token: str, name: str = "client") -> dict | None:
    done = subprocess.run(client_cmd(kind, url, token), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=70)
    (CASE_DIR / f"{name}.out").write_text(done.stdout)
    (CASE_DIR / f"{name}.err").write_text(done.stderr)
    try:
        out = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        f.check(False, f"the {kind} client printed no result (exit {done.returncode}): {done.stderr.strip()[-300:]}")
        return None
    say(f"{name}: {done.stdout.strip()[:600]}")
    f.check(out.get("fatal") is None, f"the {kind} client stopped early: {out.get('fatal')}")
    tries = out.get("attempts") or []
    f.check([a.get("isError") for a in tries] == [True, False],
            f"the agent's create_shipment attempts were {tries}, expected an isError (the lost ack) then a success")
    a1 = [s for s in out.get("shipments") or [] if s.get("order_id") == "A1"]
    f.check(len(a1) == 2, f"list_shipments through the proxy showed {len(a1)} shipment(s) for A1, expected 2")
    return out


def replay_over_http(kind: str, token: str, live: dict) -> None:
    """`mcp --replay --listen` serves the recording to the same client, offline: the same
    answers (attempts and shipments), every recorded call matched."""
    report = CASE_DIR / "replay-report.json"
    replay = start([BIN, "mcp", "--replay", str(CASSETTE), "--replay-report", str(report),
                    "--listen", "127.0.0.1:0"], "replay")
    try:
        url = listen_url(replay, "replay")
        if not f.check(url is not None, f"the replay printed no `listening on` line (exit {replay.poll()})"):
            return
        again = run_agent(kind, url, token, "replayed")
        if again is None:
            return
        for key in ("attempts", "shipments", "tools"):
            f.check(again.get(key) == live.get(key),
                    f"replay over HTTP gave other {key}: {again.get(key)} (live: {live.get(key)})")
        verdict = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
        f.check(verdict.get("reproduced") is True and verdict.get("mismatched") == 0,
                f"the replay's report: {verdict}")
        # `passed` is the replay's and the recording's own checks' together.
        f.check(verdict.get("passed") is (not verdict.get("recording_failed")),
                f"the replay's report: {verdict}")
    finally:
        stop(replay)


def assert_headers_per_call(f) -> None:
    """Each recorded call keeps the headers of the request that carried it: the client's
    Authorization by name only, its session and protocol version as sent."""
    side = json.loads(CASSETTE.with_name(CASSETTE.stem + ".mcp.json").read_text())
    for c in side.get("calls", []):
        h = c.get("request_headers") or {}
        f.check(h.get("authorization") == "[REDACTED]",
                f"call {c.get('call')} does not keep its Authorization by name only: {sorted(h)}")
        f.check("mcp-protocol-version" in h,
                f"call {c.get('call')} does not keep its MCP-Protocol-Version: {sorted(h)}")
    say(f"headers of call 1: {sorted((side.get('calls') or [{}])[0].get('request_headers') or {})}")


def main(kind: str) -> None:
    token = new_token()
    server = proxy = None
    outputs: list[str] = []
    try:
        server, upstream = start_server(f, token)
        if upstream:
            proxy = start([BIN, "mcp", str(SCENARIO), "--record", str(CASSETTE),
                           "--listen", "127.0.0.1:0", "--", upstream], "proxy")
            url = listen_url(proxy, "proxy")
            live = None
            if f.check(url is not None, f"the proxy printed no `listening on` line (exit {proxy.poll()})"):
                live = run_agent(kind, url, token)
            code = stop(proxy, grace=10)
            f.check(code is not None, "the proxy did not exit within 10 s of SIGTERM")
            say(f"proxy exit code after SIGTERM: {code}")
            outputs = assert_duplicate(f, CASSETTE)
            assert_headers_per_call(f)
            if live is not None:
                replay_over_http(kind, token, live)
    finally:
        for p in (proxy, server):
            if p is not None:
                stop(p)
    assert_secret_kept(f, token, outputs)
    f.done()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("python", "node"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
