"""Compares two runs of the MCP conformance suite: straight to a server, and through the proxy.

    python conformance_compare.py DIR_DIRECT DIR_PROXY

Each DIR is the `-o` folder of `conformance server --url URL -o DIR`, which holds one folder per
scenario, `server-SCENARIO-TIMESTAMP/checks.json`, a list of checks with `id` and `status`
(SUCCESS, FAILURE, WARNING, ...). When a folder holds several runs of a scenario, the newest
counts. Every check that is SUCCESS direct must be SUCCESS through the proxy: each one that is
not is printed as a `why: ...` line and the script exits 1. Checks that pass only through the
proxy are printed as notes. Exits 0 when nothing regressed, 2 when a folder holds no results.
"""

import json
import re
import sys
from pathlib import Path

# `server-ping-2026-12-03T07-38-33-410Z` -> `server-ping`
STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")


def load_run(folder: Path) -> dict[str, dict[str, dict]]:
    """{scenario: {check id: check}} from the newest run of each scenario in `folder`."""
    newest: dict[str, Path] = {}
    for checks in sorted(folder.glob("*/checks.json")):  # timestamps sort, so the last wins
        newest[STAMP.sub("", checks.parent.name)] = checks
    run = {}
    for scenario, checks in newest.items():
        by_id: dict[str, dict] = {}
        for n, check in enumerate(json.loads(checks.read_text(encoding="utf-8"))):
            key = check.get("id") or f"#{n}"
            by_id[key if key not in by_id else f"{key}#{n}"] = check
        run[scenario] = by_id
    return run


def tally(run: dict) -> str:
    checks = [c for by_id in run.values() for c in by_id.values()]
    ok = sum(c.get("status") == "SUCCESS" for c in checks)
    return f"{ok}/{len(checks)} checks SUCCESS in {len(run)} scenarios"


def main() -> None:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    direct, proxy = (load_run(Path(a)) for a in sys.argv[1:])
    for name, run in (("direct", direct), ("proxy", proxy)):
        if not run:
            print(f"conformance_compare: no */checks.json under the {name} folder", file=sys.stderr)
            sys.exit(2)

    lost, gained = [], []
    for scenario, checks in sorted(direct.items()):
        through = proxy.get(scenario)
        for cid, check in sorted(checks.items()):
            if check.get("status") != "SUCCESS":
                continue
            if through is None:
                lost.append(f"{scenario}/{cid}: SUCCESS direct, scenario missing through the proxy")
            elif cid not in through:
                lost.append(f"{scenario}/{cid}: SUCCESS direct, check missing through the proxy")
            elif through[cid].get("status") != "SUCCESS":
                got = through[cid]
                message = (got.get("errorMessage") or "").strip()[:200]
                lost.append(f"{scenario}/{cid}: SUCCESS direct, {got.get('status')} through the proxy"
                            + (f" ({message})" if message else ""))
    for scenario, checks in sorted(proxy.items()):
        for cid, check in sorted(checks.items()):
            before = direct.get(scenario, {}).get(cid, {}).get("status")
            if check.get("status") == "SUCCESS" and before != "SUCCESS":
                gained.append(f"{scenario}/{cid}: {before or 'absent'} direct, SUCCESS through the proxy")

    print(f"direct: {tally(direct)}; proxy: {tally(proxy)}")
    for g in gained:
        print(f"note: {g}")
    for w in lost:
        print(f"why: {w}")
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
