"""Cases `fw_pydantic`, `fw_openai`, `fw_langchain`: a real agent framework over Streamable HTTP,
toolstorm-tui's proxy listening in front of a shipping server, and what the client saw live
given back by `mcp --replay --listen` (issue 52, item 14).

    FW_PYTHON=venv/bin/python python frameworks_case.py pydantic|openai|langchain

The framework's agent is fw_<name>_agent.py (fw_common.py says what it does and prints), run by
FW_PYTHON. Five lifecycles, each with its own proxy and order id:

- lost_ack (A1): scenarios/mcp-lost-ack.json in front of the example server (stdio): the
  framework's defaults retry, two rows, `check` exits 1 on the duplicate; replayed, the same
  attempts, every call matched.
- http_status (H1): the same lost acknowledgement delivered as HTTP 502: the client sees the
  status live (a JSON body under a JSON content type), the sidecar records the status, and
  replayed the client sees the same.
- stream_cut (C1): tests/interop/http-stream-cut.json: the answer's stream ends without it;
  replayed, the client sees the same, in about the same time (not held until its timeout).
- sigterm (S1): the proxy SIGTERMed while the server (http_shipping_server.py, a slow
  acknowledgement) holds the call it already committed: `check` fails `Session finished`.
- client_gone (T1, K1): the client's own short timeout, and a SIGKILLed client, before the
  server answers: the sidecar does not say the answer was delivered; replayed, the timed-out
  client sees what it saw live.

Every process started here is ended, whatever happens.
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing

from interop import (
    BIN, CASE_DIR, HERE, Failures, listen_url, load_json, run_bin, say, sidecar_path, start, stop, wait_until,
)
from shipping_http import DB, start_server

FRAMEWORK = sys.argv[1] if len(sys.argv) == 2 else ""
AGENTS = {"pydantic": "fw_pydantic_agent.py", "openai": "fw_openai_agent.py", "langchain": "fw_langchain_agent.py"}
FW_PYTHON = os.environ.get("FW_PYTHON", "")
SERVER = os.environ.get("SHIPPING_SERVER", "")
LOST_ACK = (HERE / ".." / ".." / "scenarios" / "mcp-lost-ack.json").resolve()
STREAM_CUT = HERE / "http-stream-cut.json"
# How long the HTTP server holds create_shipment after its INSERT committed.
SLOW_ACK = 4.0

f = Failures()
started: list[subprocess.Popen] = []  # by `start`, each in a process group of its own
agents: list[subprocess.Popen] = []  # the agents started in the background


def agent_cmd(url: str, order: str, tries: int, timeout: float | None) -> list[str]:
    return [FW_PYTHON, str(HERE / AGENTS[FRAMEWORK]), url, order, str(tries),
            "default" if timeout is None else str(timeout)]


def parsed(out: str, name: str) -> dict | None:
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        f.check(False, f"{name}: the {FRAMEWORK} agent printed no result (see {name}.err)")
        return None


def agent(url: str, order: str, tries: int, timeout: float | None, name: str) -> dict | None:
    """Runs the framework's agent to its end: what it saw."""
    done = subprocess.run(agent_cmd(url, order, tries, timeout), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    (CASE_DIR / f"{name}.out").write_text(done.stdout)
    (CASE_DIR / f"{name}.err").write_text(done.stderr)
    out = parsed(done.stdout, name)
    say(f"{name}: {done.stdout.strip()[:700]}")
    return out


def listening(args: list[str], name: str, server: list[str] = ()) -> tuple[subprocess.Popen, str | None]:
    """`toolstorm-tui mcp ARGS --listen 127.0.0.1:0 [-- SERVER]` started as NAME, and its URL."""
    p = start([BIN, "mcp", *args, "--listen", "127.0.0.1:0", *(["--", *server] if server else [])], name)
    started.append(p)
    url = listen_url(p, name)
    f.check(url is not None, f"{name} printed no `listening on` line (exit {p.poll()}, see {name}.err)")
    return p, url


def record(name: str, scenario=None, upstream: str | None = None):
    """A recording proxy in front of the example server (stdio), or of `upstream` (a URL)."""
    cassette = CASE_DIR / f"{name}.json"
    head = [str(scenario)] if scenario else []
    p, url = listening([*head, "--record", str(cassette)], name, [upstream or SERVER])
    return cassette, p, url


def replayed(cassette, order: str, tries: int, timeout: float | None, name: str):
    """`mcp --replay CASSETTE --listen` and the same agent against it: (what it saw, the
    replay's report)."""
    report = CASE_DIR / f"{name}-report.json"
    p, url = listening(["--replay", str(cassette), "--replay-report", str(report)], name)
    try:
        return (agent(url, order, tries, timeout, f"{name}-agent") if url else None), report
    finally:
        stop(p)


def exchanges(run: dict | None) -> list[dict]:
    """The HTTP exchanges of a run that carry the calls: its POSTs and its resumptions (the
    session's own GET stream opens when the client gets to it, so it is left out), in a fixed
    order: a cancel's 202 and the head of the stream it cancels race each other."""
    kept = [h for h in (run or {}).get("http") or [] if h.get("method") == "POST" or h.get("resume")]
    return sorted(kept, key=lambda h: json.dumps(h, sort_keys=True))


def seen(run: dict | None) -> dict:
    """What a client saw, as two runs of the same session compare it: the attempts, how the
    run ended, and the HTTP answers its client got."""
    if run is None:
        return {}
    fatal = run.get("fatal") or {}
    return {"attempts": run.get("attempts"), "http": exchanges(run),
            "fatal": {k: fatal.get(k) for k in ("type", "text", "http_status", "causes")} if fatal else None}


def head_raced(run: dict | None) -> dict | None:
    """A run whose client left on its own timeout, with the one race it holds taken out: the head
    of the timed-out call's stream arrives before or after the client gives up, depending on when
    the server (live) or the proxy (replayed) gets to it, so a POST cancelled before its head
    counts as the 200 stream it would have opened."""
    if run is None:
        return None
    head = {"status": 200, "type": "text/event-stream"}
    http = [{**{k: v for k, v in h.items() if k != "error"}, **head}
            if h.get("method") == "POST" and h.get("error") == "CancelledError" and "status" not in h
            else h for h in run.get("http") or []]
    return {**run, "http": http}


def same_again(live: dict | None, again: dict | None, report, lifecycle: str, matched: int,
               timed_out: bool = False) -> None:
    if timed_out:
        live, again = head_raced(live), head_raced(again)
    f.check(again is not None and seen(again) == seen(live),
            f"{lifecycle}: replayed, {FRAMEWORK} saw {seen(again)}; live it saw {seen(live)}")
    verdict = load_json(report) or {}
    f.check(verdict.get("matched") == matched and verdict.get("mismatched") == 0,
            f"{lifecycle}: the replay's report: {verdict}")


def records(cassette) -> list[dict]:
    return (load_json(sidecar_path(cassette)) or {}).get("calls") or []


def rows(order: str) -> int:
    try:
        with closing(sqlite3.connect(DB)) as db:
            return db.execute("SELECT COUNT(*) FROM shipments WHERE order_id = ?", (order,)).fetchone()[0]
    except sqlite3.Error:
        return 0


def checked(cassette) -> tuple[int, dict, str]:
    """`check --json`: its exit code, its verdicts by name, and its text."""
    out = run_bin("check", "--json", str(cassette), join=False)
    try:
        verdicts = {c["name"]: c for c in json.loads(out.stdout).get("checks", [])}
    except (ValueError, KeyError, TypeError):
        verdicts = {}
    return out.returncode, verdicts, out.stdout


def lost_ack() -> None:
    cassette, p, url = record("lost_ack", LOST_ACK)
    live = agent(url, "A1", 2, None, "lost_ack-agent") if url else None
    stop(p)
    kinds = [a.get("kind") for a in (live or {}).get("attempts") or []]
    f.check(kinds == ["tool_error", "result"],
            f"lost_ack: {FRAMEWORK} on its defaults saw {kinds}, not the lost ack then its retry's result")
    code, verdicts, text = checked(cassette)
    dup = verdicts.get("No duplicate side effects", {})
    f.check(code == 1 and dup.get("passed") is False, f"lost_ack: check exited {code}: {dup}")
    again, report = replayed(cassette, "A1", 2, None, "lost_ack-replay")
    same_again(live, again, report, "lost_ack", 2)


def http_status() -> None:
    scen = load_json(LOST_ACK)
    scen["delivery"] = {"lost-receipt": "http_status"}
    path = CASE_DIR / "lost-ack-502.json"
    path.write_text(json.dumps(scen))
    cassette, p, url = record("http_status", path)
    live = agent(url, "H1", 2, 10, "http_status-agent") if url else None
    stop(p)
    statuses = [(h.get("status"), h.get("type")) for h in exchanges(live)]
    f.check((502, "application/json") in statuses,
            f"http_status: {FRAMEWORK}'s HTTP client got no 502 with a JSON body live: {statuses}")
    first = next((r for r in records(cassette)), {})
    f.check(first.get("delivered") == "http_status" and (first.get("response") or {}).get("status") == 502,
            f"http_status: the record of what the client got: {first.get('delivered')} {first.get('response')}")
    again, report = replayed(cassette, "H1", 2, 10, "http_status-replay")
    same_again(live, again, report, "http_status", len(records(cassette)))


def stream_cut() -> None:
    timeout = 4.0  # an SDK 1.x client waits for it live too (resuming the cut stream gives nothing)
    cassette, p, url = record("stream_cut", STREAM_CUT)
    live = agent(url, "C1", 2, timeout, "stream_cut-agent") if url else None
    stop(p)
    first = next((r for r in records(cassette)), {})
    f.check(first.get("delivered") == "stream_cut", f"stream_cut: the first call's record says {first.get('delivered')}")
    again, report = replayed(cassette, "C1", 2, timeout, "stream_cut-replay")
    same_again(live, again, report, "stream_cut", len(records(cassette)))
    took, took_again = (r.get("seconds") if r else None for r in (live, again))
    say(f"stream_cut: live {took} s, replayed {took_again} s")
    f.check(took is not None and took_again is not None and took_again <= took + 3,
            f"stream_cut: replayed, the client took {took_again} s (live {took} s): held, not cut")


def sigterm(upstream: str) -> None:
    cassette, p, url = record("sigterm", upstream=upstream)
    if not url:
        return
    client = subprocess.Popen(agent_cmd(url, "S1", 1, 30), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    agents.append(client)
    committed = wait_until(lambda: rows("S1") == 1, 20)
    f.check(committed, "sigterm: the server never committed S1")
    code = stop(p)
    out, err = client.communicate(timeout=40)
    (CASE_DIR / "sigterm-agent.err").write_text(err)
    say(f"sigterm: proxy exit {code}; agent: {out.strip()[:500]}")
    code, verdicts, text = checked(cassette)
    finished = verdicts.get("Session finished", {})
    say(f"sigterm: check exit {code}: {finished}")
    f.check(code != 0 and finished.get("passed") is False,
            f"sigterm: S1 committed and was in flight when the proxy was SIGTERMed, yet check exited {code}: "
            f"Session finished {finished.get('passed')} ({finished.get('detail')})")


def client_gone(upstream: str) -> None:
    # The framework's own timeout, well before the slow acknowledgement.
    cassette, p, url = record("timeout", upstream=upstream)
    live = agent(url, "T1", 1, 1.5, "timeout-agent") if url else None
    wait_until(lambda: False, SLOW_ACK)  # the server answers after the client left
    stop(p)
    delivered = [r.get("delivered") for r in records(cassette)]
    f.check(delivered and "result" not in delivered,
            f"client_gone: the client timed out before the answer, yet the sidecar says delivered {delivered}")
    again, report = replayed(cassette, "T1", 1, 1.5, "timeout-replay")
    same_again(live, again, report, "client_gone (timeout)", len(records(cassette)),
               timed_out=True)

    # SIGKILLed once the server committed, before it answers.
    cassette, p, url = record("killed", upstream=upstream)
    if not url:
        return
    client = subprocess.Popen(agent_cmd(url, "K1", 1, 30), stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    agents.append(client)
    f.check(wait_until(lambda: rows("K1") == 1, 20), "client_gone: the server never committed K1")
    client.send_signal(signal.SIGKILL)
    client.wait(5)
    wait_until(lambda: False, SLOW_ACK)
    stop(p)
    delivered = [r.get("delivered") for r in records(cassette)]
    f.check(delivered and "result" not in delivered,
            f"client_gone: the client was SIGKILLed before the answer, yet the sidecar says delivered {delivered}")


def main() -> None:
    if FRAMEWORK not in AGENTS or not FW_PYTHON:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    server = None
    try:
        for lifecycle in (lost_ack, http_status, stream_cut):
            t0 = time.monotonic()
            lifecycle()
            say(f"{lifecycle.__name__} took {time.monotonic() - t0:.1f} s")
        server, upstream = start_server(f, "", extra_env={"SHIPPING_DELAY": str(SLOW_ACK)})
        if upstream:
            for lifecycle in (sigterm, client_gone):
                t0 = time.monotonic()
                lifecycle(upstream)
                say(f"{lifecycle.__name__} took {time.monotonic() - t0:.1f} s")
    finally:
        for p in agents:
            if p.poll() is None:
                p.kill()
                p.wait(5)
        for p in [*started, *([server] if server else [])]:
            stop(p)
    f.done()


if __name__ == "__main__":
    main()
