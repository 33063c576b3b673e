"""Case `pydantic`: pydantic-ai 2.x on its defaults (keep_alive, retries on a tool error),
through the entry `--print-config` prints, loaded with `load_mcp_toolsets`.

The lost-acknowledgement scenario loses `create_shipment`'s first answer; pydantic-ai retries
it and the order ships twice. The recording must show exactly that, and its session must read
as finished: pydantic-ai ends its server when its process exits, after the last answer, and
nothing was in flight.
"""

import json
import os
import subprocess
import sys

from interop import CASE_DIR, Failures, alive, pgrep, recorded, run_bin, say, wait_until

SERVER = os.environ["SHIPPING_SERVER"]
SCENARIO = os.path.abspath(os.path.join(os.environ["INTEROP_HERE"], "..", "..", "scenarios", "mcp-lost-ack.json"))
CASSETTE = CASE_DIR / "pydantic.json"
CONFIG = CASE_DIR / "mcp.json"

f = Failures()

if __name__ == "__main__":
    printed = run_bin("mcp", "--print-config", "shipping", SCENARIO, "--record", str(CASSETTE), "--", SERVER, join=False)
    f.check(printed.returncode == 0, f"--print-config exited {printed.returncode}: {printed.stderr}")
    CONFIG.write_text(printed.stdout)
    agent = subprocess.run(
        [sys.executable, os.path.join(os.environ["INTEROP_HERE"], "pydantic_agent.py"), str(CONFIG)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
    )
    say(f"agent: exit {agent.returncode}\n{agent.stdout}{agent.stderr[-800:]}")
    f.check(agent.returncode == 0, f"the agent exited {agent.returncode}: {agent.stderr.strip()[-300:]}")
    f.check(agent.stdout.count("tool-call shipping_create_shipment") == 2, "pydantic-ai did not retry create_shipment once")
    # The proxy finishes just after the agent's process is gone: wait for it, as a harness would.
    if not wait_until(lambda: not [p for p in pgrep(str(CASSETTE)) if alive(p)], 10):
        f.check(False, "the proxy outlived the agent by 10 s")
    calls, effects, _ = recorded(CASSETTE)
    f.check(len(calls) == 3, f"the recording holds {len(calls)} calls, not check_inventory and two create_shipment")
    check = run_bin("check", "--json", str(CASSETTE), join=False)
    try:
        verdicts = {c["name"]: c for c in json.loads(check.stdout).get("checks", [])}
    except (ValueError, KeyError, TypeError):
        verdicts = {}
    say(f"check: exit {check.returncode}: {check.stdout.strip()[:600]}")
    f.check(check.returncode == 1, f"check exited {check.returncode}, not 1 for the double shipment")
    f.check(verdicts.get("No duplicate side effects", {}).get("passed") is False, "the double shipment was not judged a duplicate")
    f.check(verdicts.get("Fault exercised: lost-receipt", {}).get("passed") is True, "the lost acknowledgement was not exercised")
    f.check(verdicts.get("Session finished", {}).get("passed") is True, f"Session finished failed: {verdicts.get('Session finished')}")
    f.done()
