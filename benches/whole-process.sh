#!/usr/bin/env bash
# The performance table as a user sees it: the release binary as a whole process, output to
# /dev/null, median of several runs (wall time and peak memory of that process).
# Usage: benches/whole-process.sh            (builds the release binary first)
#        BIN=path/to/toolstorm-tui RUNS=9 benches/whole-process.sh
#        BIG=1 benches/whole-process.sh      (also the 1.8-million-run sweep; takes minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then cargo build -q --release; fi
export BIN=${BIN:-target/release/toolstorm-tui} RUNS=${RUNS:-7} BIG=${BIG:-0}
python3 - <<'PY'
import json, os, statistics, subprocess, sys, tempfile, time, shutil

BIN, RUNS, BIG = os.environ["BIN"], int(os.environ["RUNS"]), os.environ["BIG"] == "1"
LARGE = "tests/fixtures/reference/api/large_public_10000.cassette.json"

def peak_mb(args, env=None):
    """Peak RSS (MB) of `args` through GNU time, which forks a small C process: the kernel
    counts a child's pages from before its exec too, so a fork of this Python process (or a
    vfork sharing it) would report Python's memory, not ours."""
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *args], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, text=True)
    return int(p.stderr.strip().splitlines()[-1]) / 1024

def measure(args, runs=RUNS, env=None):
    """Median wall seconds and median peak RSS (MB) of `args` as a whole process."""
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL, env=env)
        code = p.wait()
        walls.append(time.perf_counter() - start)
        if code not in (0, 1):
            sys.exit(f"{' '.join(args)} exited {code}")
    rss = [peak_mb(args, env) for _ in range(3)] if os.path.exists("/usr/bin/time") else [0]
    return statistics.median(walls), statistics.median(rss)

def first_frame(path, runs=RUNS):
    """Seconds from starting the explorer in a 200x60 tmux pane to its first frame."""
    if not shutil.which("tmux"):
        return None
    times = []
    for _ in range(runs):
        subprocess.run(["tmux", "kill-session", "-t", "wp"], stderr=subprocess.DEVNULL)
        start = time.perf_counter()
        subprocess.run(["tmux", "new", "-d", "-s", "wp", "-x", "200", "-y", "60",
                        f"{BIN} {path}; sleep 5"], check=True)
        while True:
            out = subprocess.run(["tmux", "capture-pane", "-p", "-t", "wp"],
                                 capture_output=True, text=True).stdout
            if "Timeline" in out:
                break
            if time.perf_counter() - start > 30:
                return float("nan")
            time.sleep(0.002)
        times.append(time.perf_counter() - start)
        subprocess.run(["tmux", "kill-session", "-t", "wp"], stderr=subprocess.DEVNULL)
    return statistics.median(times)

def synthetic(path):
    """A 10,000-call trace of our own shape next to the reference's: four tools, nested
    notifications, payloads of a few fields, one effect per shipment (no rules, so every
    check is about the calls and effects themselves)."""
    tools = ["get_inventory", "create_shipment", "notify", "refund"]
    calls, effects, ordinals, t = [], [], {}, 0.0
    for i in range(1, 10_001):
        tool = tools[i % 4]
        ordinals[tool] = ordinals.get(tool, 0) + 1
        parent = i - 1 if tool == "notify" and i > 1 and tools[(i - 1) % 4] == "create_shipment" else None
        started = round(t, 6) if parent is None else calls[parent - 1]["started"]
        calls.append({"arguments": {"order_id": f"o-{i}", "qty": i % 7, "region": "eu"},
                      "capture_error": False, "elapsed": 0.0, "error": None,
                      "executed": True, "fault": None, "id": i, "injected": False,
                      "key": f"#{ordinals[tool]}", "kind": None, "ordinal": ordinals[tool],
                      "output": {"ok": True, "ref": f"R-{i:05d}", "tags": ["a", "b"]},
                      "parent_id": parent, "started": started, "status": "ok", "tool": tool})
        if tool == "create_shipment":
            effects.append({"at": started, "call_id": i, "identity": len(effects) + 1,
                            "key": f"o-{i}", "name": "shipment", "redacted": False})
        t += 0.001
    doc = {"budget_rejections": 0, "calls": calls, "capture": True, "clock": "VirtualClock",
           "coverage": {}, "effects": effects, "rules": [], "schema_version": 1, "seed": 7}
    with open(path, "w") as f:
        json.dump(doc, f, sort_keys=True, separators=(",", ":"))
        f.write("\n")
    subprocess.run([BIN, "inspect", path], check=True, stdout=subprocess.DEVNULL)
    return path

SYNTHETIC = synthetic(os.path.join(tempfile.mkdtemp(), "synthetic_10000.json"))

grid = ["sweep", "--scenarios", "all", "--policies", "all", "--seeds", "-17,0,7,42,99,1000",
        "--probabilities", "0,0.25,0.5,0.75,1", "--max-calls", "1,2,4,8,12,20"]
rows = [
    ("sweep 3,240 runs --jsonl", [BIN, *grid, "--jsonl"]),
    ("sweep 3,240 runs (table)", [BIN, *grid]),
    ("check large_public_10000 (3.9 MB)", [BIN, "check", LARGE]),
    ("inspect large_public_10000", [BIN, "inspect", LARGE]),
    ("check synthetic 10,000 calls", [BIN, "check", SYNTHETIC]),
    ("sweep 18,000 runs --jsonl", [BIN, "sweep", "--seed-range", "0..999", "--jsonl"]),
]
print(f"{BIN}, median of {RUNS} runs, output to /dev/null")
print(f"{'work':40} {'wall ms':>9} {'peak MB':>8}")
for name, args in rows:
    wall, rss = measure(args)
    print(f"{name:40} {wall*1e3:9.1f} {rss:8.1f}")
for threads in ("1", "2"):
    wall, rss = measure([BIN, *grid, "--jsonl", "--threads", threads])
    print(f"{'sweep 3,240 --jsonl, ' + threads + ' thread(s)':40} {wall*1e3:9.1f} {rss:8.1f}")
ff = first_frame(LARGE)
if ff is not None:
    print(f"{'explorer: first frame, 10,000 calls':40} {ff*1e3:9.1f} {'':>8}")
if BIG:
    wall, rss = measure([BIN, "sweep", "--seed-range", "0..100000", "--jsonl"], runs=1)
    print(f"{'sweep 1.8 million runs --jsonl':40} {wall*1e3:9.1f} {rss:8.1f}")
PY
