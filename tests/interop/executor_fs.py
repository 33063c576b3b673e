"""Case `executor`: the robust executor on a real third-party MCP server's tools.

`toolstorm-tui run BATCH --live --mcp -- SERVER` runs one model response's batch against
@modelcontextprotocol/server-filesystem (npm, on its defaults): the registry comes from its
tools/list, its inputSchema catches a missing argument before the call goes out, its
annotations decide what needs approval (write_file is approved, move_file is not), and its
isError answers are classified. Every outcome is asserted, and the world is looked at: the
approved write happened, the denied move did not.
"""

import json
import os

from interop import CASE_DIR, Failures, run_bin, say

FS_SERVER = os.environ["FS_SERVER"]
ROOT = (CASE_DIR / "root").resolve()
ROOT.mkdir(parents=True, exist_ok=True)
(ROOT / "notes.txt").write_text("hello\n", encoding="utf-8")

CALLS = [
    ("call_read", "read_text_file", {"path": str(ROOT / "notes.txt")}, "ok"),
    ("call_missing", "read_text_file", {"path": str(ROOT / "missing.txt")}, "permanent"),
    ("call_outside", "read_text_file", {"path": "/etc/hostname"}, "permanent"),
    ("call_noargs", "read_text_file", {}, "bad_args"),
    ("call_write", "write_file", {"path": str(ROOT / "out.txt"), "content": "written"}, "ok"),
    ("call_move", "move_file",
     {"source": str(ROOT / "notes.txt"), "destination": str(ROOT / "moved.txt")}, "denied"),
    ("call_delete", "delete_file", {"path": str(ROOT / "notes.txt")}, "unknown_tool"),
]
scenario = {
    "schema_version": 1, "world": "orbit", "name": "fs-batch",
    "title": "A batch against the filesystem server", "seed": 3,
    "approver": {"allow": ["write_file"]}, "rules": [],
    "batches": [[{"type": "function_call", "name": tool, "arguments": json.dumps(args),
                  "call_id": cid} for cid, tool, args, _ in CALLS]],
}
path = CASE_DIR / "fs-batch.json"
path.write_text(json.dumps(scenario, indent=2), encoding="utf-8")

f = Failures()
done = run_bin("run", str(path), "--live", "--json", "--mcp", "--", "node", FS_SERVER, str(ROOT),
               timeout=60, join=False)
say(done.stderr.strip()[:500])
f.check(done.returncode == 0, f"run exited {done.returncode}: {done.stderr.strip()[:300]}")
try:
    result = json.loads(done.stdout)
except ValueError:
    result = {}
    f.check(False, f"run --json printed no JSON: {done.stdout[:300]!r}")

batch = (result.get("batches") or [{}])[0]
outputs = batch.get("outputs") or []
f.check([o.get("call_id") for o in outputs] == [c[0] for c in CALLS],
        f"outputs not in request order: {[o.get('call_id') for o in outputs]}")
for o, (cid, tool, _, want) in zip(outputs, CALLS):
    envelope = json.loads(o.get("output") or "{}")
    kind = "ok" if envelope.get("ok") else (envelope.get("error") or {}).get("kind")
    f.check(kind == want, f"{cid} ({tool}) was {kind}, expected {want}: {o.get('output', '')[:200]}")
    say(f"{cid}: {kind}")
f.check("secure-filesystem-server" in (result.get("tools_from") or ""),
        f"tools_from does not name the server: {result.get('tools_from')!r}")
f.check((ROOT / "out.txt").read_text(encoding="utf-8") == "written"
        if (ROOT / "out.txt").exists() else False, "the approved write_file did not write")
f.check((ROOT / "notes.txt").exists() and not (ROOT / "moved.txt").exists(),
        "the denied move_file moved the file")
effects = (result.get("report") or {}).get("effects") or []
f.check(len(effects) == 1 and effects[0].get("name") == "write_file"
        and "out.txt" in str(effects[0].get("key")),
        f"expected one write_file effect keyed by its path, got {effects}")
f.done()
