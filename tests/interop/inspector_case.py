"""Case `inspector`: the MCP Inspector's CLI on the entry `--print-config` prints.

The Inspector (`--cli --config FILE --server NAME --method ...`) splices the entry's `args`
into its own command line, so a `--` among them ends its options and it fails with "Method is
required". The entry we print must work there as printed: list the tools, then call one
through the lost-acknowledgement scenario; the recording must hold the call and its fault.
"""

import json
import os
import subprocess

from interop import BIN, CASE_DIR, Failures, run_bin, say

INSPECTOR = os.environ["INSPECTOR"]
SERVER = os.environ["SHIPPING_SERVER"]
SCENARIO = os.path.join(os.environ["INTEROP_HERE"], "..", "..", "scenarios", "mcp-lost-ack.json")
CASSETTE = CASE_DIR / "inspector.json"
CONFIG = CASE_DIR / "mcp.json"

f = Failures()


def inspector(*method: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [INSPECTOR, "--cli", "--config", str(CONFIG), "--server", "shipping", *method],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
    )


if __name__ == "__main__":
    printed = run_bin("mcp", "--print-config", "shipping", os.path.abspath(SCENARIO), "--record", str(CASSETTE), "--", SERVER, join=False)
    f.check(printed.returncode == 0, f"--print-config exited {printed.returncode}: {printed.stderr}")
    CONFIG.write_text(printed.stdout)
    args = json.loads(printed.stdout)["mcpServers"]["shipping"]["args"]
    say(f"entry args: {args}")
    listed = inspector("--method", "tools/list")
    say(f"tools/list: exit {listed.returncode}: {listed.stdout.strip()[:200]} {listed.stderr.strip()[:200]}")
    f.check(listed.returncode == 0 and "create_shipment" in listed.stdout, f"tools/list through the entry failed: {listed.stderr.strip()[:300]}")
    called = inspector("--method", "tools/call", "--tool-name", "create_shipment", "--tool-arg", "order_id=o-1")
    say(f"tools/call: exit {called.returncode}: {called.stdout.strip()[:300]} {called.stderr.strip()[:200]}")
    f.check("ResponseLost" in called.stdout, f"the call did not meet the lost acknowledgement: {called.stdout.strip()[:300]}")
    check = run_bin("check", "--json", str(CASSETTE), join=False)
    try:
        verdicts = {c["name"]: c for c in json.loads(check.stdout).get("checks", [])}
    except (ValueError, KeyError, TypeError):
        verdicts = {}
    say(f"check: exit {check.returncode}: {check.stdout.strip()[:400]}")
    f.check(verdicts.get("Fault exercised: lost-receipt", {}).get("passed") is True, f"the recording does not hold the fault: {verdicts}")
    f.check(verdicts.get("Session finished", {}).get("passed") is True, f"Session finished failed: {verdicts.get('Session finished')}")
    f.done()
