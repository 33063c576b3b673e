"""Case `http_campaign`: a campaign whose agent speaks Streamable HTTP, against a remote server.

The scenario (mcp-lost-ack.json, probability 0.5) names its server by URL (`{"url": ...}`): the
FastMCP shipping server on HTTP. `campaign --agent-transport http` starts a listening proxy for
each run and gives the agent (http_client.py on the official Python SDK) its URL through
`{mcp_url}`. The runs whose decision loses the first acknowledgement are the ones that fail on a
duplicate, each run's mcpServers entry is the URL entry, and no run leaves its proxy running.
"""

import json
import subprocess
import sys

from interop import BIN, CASE_DIR, HERE, Failures, say, stop
from shipping_http import SCENARIO, start_server

f = Failures()
server = None
try:
    # The server without a token: the campaign's agent reaches it through each run's proxy.
    server, upstream = start_server(f, "")
    if upstream:
        scenario = json.loads(SCENARIO.read_text(encoding="utf-8"))
        scenario["server"] = {"url": upstream}
        path = CASE_DIR / "url-scenario.json"
        path.write_text(json.dumps(scenario, indent=2), encoding="utf-8")
        out = CASE_DIR / "campaign.json"
        done = subprocess.run(
            [BIN, "campaign", str(path), "--runs", "4", "--probability", "0.5", "--agent-transport",
             "http", "--out", str(out), "--json", "--", sys.executable, str(HERE / "http_client.py"),
             "{mcp_url}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            timeout=80)
        say(done.stderr.strip()[-600:])
        f.check(done.returncode in (0, 1), f"campaign exited {done.returncode}: {done.stderr.strip()[-300:]}")
        doc = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
        f.check(doc.get("agent_transport") == "http", "the campaign file does not say the agent used HTTP")
        runs = doc.get("runs") or []
        f.check(len(runs) == 4, f"{len(runs)} runs recorded, expected 4")
        for r in runs:
            run_dir = out.with_suffix(".runs") / f"run-{r['run']:03d}"
            entry = json.loads((run_dir / "mcp.json").read_text(encoding="utf-8"))["mcpServers"]
            (e,) = entry.values()
            f.check(e.get("type") == "http" and str(e.get("url", "")).startswith("http://127.0.0.1:"),
                    f"run {r['run']}'s entry is not a URL entry: {e}")
            faulted = r.get("faults", 0) > 0
            # The naive agent retries a lost acknowledgement: a duplicate exactly when it fired.
            f.check(r.get("duplicates", 0) == (1 if faulted else 0),
                    f"run {r['run']} (seed {r['seed']}): {r.get('faults')} fault(s) but "
                    f"{r.get('duplicates')} duplicate(s)")
            f.check(r.get("passed") is not faulted, f"run {r['run']} passed={r.get('passed')} with faults={r.get('faults')}")
            f.check(r.get("outcome") == "finished", f"run {r['run']} ended {r.get('outcome')}: {r.get('note')}")
        runs_dir = str(out.with_suffix(".runs"))
        leftover = subprocess.run(["pgrep", "-f", f"mcp .*{runs_dir}"], stdout=subprocess.PIPE, text=True).stdout
        f.check(not leftover.strip(), f"a run's listening proxy is still running: {leftover.strip()}")
finally:
    if server is not None:
        stop(server)
f.done()
