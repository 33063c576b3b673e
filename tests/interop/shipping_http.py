"""What the HTTP shipping cases (`http`, `http_ts`, `http_upstream`) share.

The server is http_shipping_server.py (FastMCP on Streamable HTTP, a bearer token required), the
scenario scenarios/mcp-lost-ack.json (create_shipment's first answer is lost after the INSERT
committed, and the agent sees an isError result), so a naive agent's retry ships order A1 twice.
Each case checks the same outcome: two rows for A1 in the server's database, a recording that
`toolstorm-tui check` fails on the duplicate shipment, and the token written nowhere.
"""

import os
import secrets
import sqlite3
import ssl
import sys
import urllib.error
import urllib.request
from contextlib import closing
from pathlib import Path

from interop import CASE_DIR, HERE, Failures, files_holding, free_port, port_open, recorded, run_bin, say, start, wait_until

SCENARIO = (HERE / ".." / ".." / "scenarios" / "mcp-lost-ack.json").resolve()
DB = CASE_DIR / "ship.db"
# The test authority and the certificate it signed for localhost (tests/fixtures/tls).
TLS = (HERE / ".." / "fixtures" / "tls").resolve()
AUTHORITY = TLS / "authority.pem"


def new_token() -> str:
    """A bearer token for this run only, so finding it anywhere means it leaked."""
    return "tok" + secrets.token_hex(16)


def start_server(f: Failures, token: str, script: str = "http_shipping_server.py", extra_env: dict | None = None,
                 tls: bool = False):
    """Starts the shipping server (`script`, in tests/interop, run by this Python) on a free
    port, over https:// with the test certificate when `tls`; (process, its /mcp URL), or
    (process, None) when it did not come up."""
    port = free_port()
    env = {**os.environ, "SHIPPING_DB": str(DB), "HTTP_TOKEN": token, **(extra_env or {})}
    if tls:
        env |= {"HTTP_TLS_CERT": str(TLS / "localhost.pem"), "HTTP_TLS_KEY": str(TLS / "localhost.key")}
    server = start([sys.executable, str(HERE / script), str(port)], "server", env)
    up = wait_until(lambda: port_open(port) or server.poll() is not None, 30) and server.poll() is None
    if not f.check(up, f"the shipping server did not listen on port {port} (see server.err)"):
        return server, None
    url = f"https://localhost:{port}/mcp" if tls else f"http://127.0.0.1:{port}/mcp"
    # The token matters: without it the server refuses, so a working client proves it travelled.
    if token:
        f.check(status_without_token(url) == 401, "the shipping server took a request without the bearer token")
    return server, url


def status_without_token(url: str) -> int:
    req = urllib.request.Request(url, method="POST", data=b"{}", headers={"Content-Type": "application/json"})
    context = ssl.create_default_context(cafile=str(AUTHORITY)) if url.startswith("https:") else None
    try:
        with urllib.request.urlopen(req, timeout=5, context=context) as res:
            return res.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def rows_for(order_id: str) -> int:
    with closing(sqlite3.connect(DB)) as db:
        return db.execute("SELECT COUNT(*) FROM shipments WHERE order_id = ?", (order_id,)).fetchone()[0]


def assert_duplicate(f: Failures, cassette: Path) -> list[str]:
    """Two rows for A1, two create_shipment calls recorded (the first the injected lost ack),
    `check` exiting 1 on the duplicate, `inspect` reading the recording. The tools' outputs."""
    rows = rows_for("A1")
    f.check(rows == 2, f"the database holds {rows} row(s) for order A1, expected 2 (the retry shipped it again)")

    calls, _, side = recorded(cassette)
    creates = [c for c in calls if c.get("tool") == "create_shipment"]
    if f.check(len(creates) == 2, f"{len(creates)} create_shipment call(s) recorded, expected 2 (tools: {[c.get('tool') for c in calls]})"):
        first, second = creates
        f.check(first.get("injected") is True and first.get("status") == "error" and first.get("executed") is True
                and first.get("kind") == "response_lost",
                "the first create_shipment is not recorded as an executed, injected response_lost error: "
                + str({k: first.get(k) for k in ("injected", "status", "executed", "kind")}))
        f.check(second.get("status") == "ok" and second.get("injected") is False,
                "the retried create_shipment is not recorded as an ok call: "
                + str({k: second.get(k) for k in ("injected", "status")}))
    f.check(len(side) == len(calls), f"the sidecar holds {len(side)} call(s), the cassette {len(calls)}")

    check = run_bin("check", str(cassette))
    say("check: " + check.stdout.strip().replace("\n", " | "))
    f.check(check.returncode == 1, f"`toolstorm-tui check` exited {check.returncode}, expected 1")
    f.check("duplicate commit: shipment A1" in check.stdout,
            "`toolstorm-tui check` does not name the duplicate shipment A1: " + check.stdout.strip()[-300:])
    inspect = run_bin("inspect", str(cassette))
    say("inspect: " + inspect.stdout.strip().replace("\n", " | ")[:400])
    f.check(inspect.returncode == 0, f"`toolstorm-tui inspect` exited {inspect.returncode}: {inspect.stdout.strip()[-300:]}")
    return [check.stdout, inspect.stdout]


def assert_secret_kept(f: Failures, token: str, outputs: list[str]) -> None:
    """The token is in no file of the case (recording, sidecar, journal, logs, the proxy's
    output) and in no output of the tools."""
    leaked = files_holding(token, CASE_DIR)
    f.check(not leaked, f"the bearer token is written in {leaked}")
    f.check(not any(token in o for o in outputs), "the bearer token is in the output of check or inspect")
    say(f"files searched for the token: {sorted(str(p.relative_to(CASE_DIR)) for p in CASE_DIR.rglob('*') if p.is_file())}")
