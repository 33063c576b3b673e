"""Case `inflight`: the client goes away with calls still in flight.

A bare stdio client (no SDK: it needs to misbehave precisely) starts the proxy, recording only,
in front of the example shipping server with a slow create_shipment (SHIPPING_DELAY_MS), does the
handshake, pipelines three create_shipment calls, and then closes both of its pipes without
reading a single answer, as a client process that exits does. The proxy must exit within a few
seconds, leave no server process behind, and have recorded all three calls.
"""

import json
import os
import subprocess
import time

from interop import BIN, CASE_DIR, Failures, alive, pgrep, reap_leftovers, recorded, say, wait_until

DELAY_MS = 2000
EXIT_WITHIN = 8.0  # seconds: the server's delay plus the proxy's grace for a server that hangs on
CASSETTE = CASE_DIR / "inflight.json"
# A path of this case's own, so `pgrep -f` finds this case's server and nothing else.
SERVER = CASE_DIR / "mcp_shipping_server"

f = Failures()


def line(message: dict) -> bytes:
    return (json.dumps(message) + "\n").encode()


def main() -> None:
    SERVER.symlink_to(os.environ["SHIPPING_SERVER"])
    log = open(CASE_DIR / "proxy.stderr", "wb")
    proxy = subprocess.Popen(
        [BIN, "mcp", "--record", str(CASSETTE), "--", str(SERVER)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        env={**os.environ, "SHIPPING_DELAY_MS": str(DELAY_MS)},
    )
    proxy.stdin.write(line({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "interop-inflight", "version": "1.0.0"}},
    }))
    proxy.stdin.flush()
    answer = json.loads(proxy.stdout.readline() or "{}")
    f.check("result" in answer, f"no answer to initialize: {answer}")
    proxy.stdin.write(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    for i in range(3):
        proxy.stdin.write(line({
            "jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
            "params": {"name": "create_shipment", "arguments": {"order_id": f"o-{i + 1}"}},
        }))
    proxy.stdin.flush()
    time.sleep(0.3)  # the calls are at the server now, each taking DELAY_MS
    server_pids = [p for p in pgrep(str(SERVER)) if p != proxy.pid]
    say(f"proxy pid {proxy.pid}, server pid(s) {server_pids}")
    # The client exits: both pipes close, no answer is read.
    proxy.stdin.close()
    proxy.stdout.close()
    left_at = time.monotonic()
    code = None
    try:
        code = proxy.wait(timeout=EXIT_WITHIN)
        took = time.monotonic() - left_at
        say(f"the proxy exited {code} {took:.2f}s after the client left")
    except subprocess.TimeoutExpired:
        f.check(False, f"the proxy still runs {EXIT_WITHIN:.0f}s after the client left")
        proxy.kill()
        proxy.wait()
    log.close()
    stderr = (CASE_DIR / "proxy.stderr").read_text(errors="replace").strip()
    say("proxy stderr: " + stderr.replace("\n", " | "))
    last_words = stderr.splitlines()[-1] if stderr else "nothing on stderr"

    running = lambda: [p for p in pgrep(str(SERVER)) if alive(p)]  # noqa: E731
    if not wait_until(lambda: not running(), 1.0):
        left = reap_leftovers(str(SERVER))
        f.check(False, f"server process(es) {left} still ran after the proxy exited (pgrep -f {SERVER})")

    calls, _, side = recorded(CASSETTE)
    tools = [c.get("tool") for c in calls]
    f.check(
        tools == ["create_shipment"] * 3,
        f"expected the 3 create_shipment calls in the recording, found {tools}"
        + ("" if len(calls) == 3 else f" (the proxy exited {code}: {last_words})"),
    )
    orders = sorted((c.get("arguments") or {}).get("order_id", "") for c in calls)
    f.check(orders == ["o-1", "o-2", "o-3"] or len(calls) != 3, f"the recorded calls carry orders {orders}")
    f.check(len(side) == 3, f"expected 3 calls in the sidecar, found {len(side)}")
    say("statuses: " + ", ".join(f"{c.get('tool')}={c.get('status')}" for c in calls))


if __name__ == "__main__":
    main()
    f.done()
