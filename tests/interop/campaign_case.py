"""Case `campaign`: `toolstorm-tui campaign` runs an agent on the official Python SDK eight times
in front of mcp-server-sqlite, the acknowledgement of the first INSERT lost with probability 0.5.
`--before` makes a fresh database for each run and `--verify` counts its rows (exactly one is a
pass): the real world's oracle beside our checks. The naive agent must fail on exactly the seeds
whose decision fires (asked of `toolstorm-tui decide`, not of the runs), with the oracle agreeing;
the careful agent, which reads before it retries, passes every run.
"""

import json
import os
import sys

from interop import BIN, CASE_DIR, HERE, Failures, run_bin, say

SERVER = os.environ["SQLITE_SERVER"]
PY = sys.executable
DB = CASE_DIR / "orders.db"

scenario = json.loads((HERE / "sqlite-lost-ack.json").read_text(encoding="utf-8"))
scenario["server"] = {"command": SERVER, "args": ["--db-path", str(DB)]}
path = CASE_DIR / "campaign-sqlite.json"
path.write_text(json.dumps(scenario, indent=2), encoding="utf-8")

fresh = (f"{PY} -c \"import os,sqlite3; p='{DB}'; os.path.exists(p) and os.remove(p); "
         f"c=sqlite3.connect(p); c.execute('CREATE TABLE orders (id INTEGER PRIMARY KEY, sku TEXT)'); c.commit()\"")
one_row = f"{PY} -c \"import sys,sqlite3; sys.exit(sqlite3.connect('{DB}').execute('select count(*) from orders').fetchone()[0] != 1)\""

f = Failures()
seeds = list(range(scenario["seed"] + 1, scenario["seed"] + 9))
predicted = []
for s in seeds:
    d = run_bin("decide", "--seed", str(s), "--rule", "lost-insert-ack", "--tool", "write_query",
                "--key", "#1", "--probability", "0.5", "--json", join=False)
    if json.loads(d.stdout)["selected"]:
        predicted.append(s)
say(f"predicted failing seeds: {predicted}")
f.check(0 < len(predicted) < len(seeds), f"the seeds give no mixed sample: {predicted}")

for name, extra, want in [("naive", [], predicted), ("careful", ["--careful"], [])]:
    out = CASE_DIR / f"{name}.campaign.json"
    done = run_bin("campaign", str(path), "--runs", "8", "--probability", "0.5", "--out", str(out),
                   "--before", fresh, "--verify", one_row, "--json",
                   "--", PY, str(HERE / "campaign_agent.py"), "--mcp-config", "{mcp_config}", *extra,
                   timeout=300, join=False)
    say(f"{name}: exit {done.returncode}; {done.stderr.strip()[:300]}")
    try:
        summary = json.loads(done.stdout)
    except ValueError:
        f.check(False, f"{name}: no JSON summary: {done.stdout[:300]!r} {done.stderr[:300]!r}")
        continue
    # As a test runner: 1 when a run failed (the naive agent), 0 when none did.
    expected = 1 if want else 0
    f.check(done.returncode == expected, f"{name}: campaign exited {done.returncode}, expected {expected}")
    f.check(summary.get("runs") == 8, f"{name}: {summary.get('runs')} runs, expected 8")
    f.check(summary.get("failing_seeds") == want,
            f"{name}: failing seeds {summary.get('failing_seeds')}, expected {want}")
    f.check(summary.get("oracle_disagrees") == [],
            f"{name}: the oracle disagrees with our checks on {summary.get('oracle_disagrees')}")
    say(f"{name}: {summary.get('passed')}/{summary.get('runs')} passed, by check {summary.get('by_check')}")
f.done()
