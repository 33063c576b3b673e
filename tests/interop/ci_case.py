"""Case `ci`: the campaign examples for CI, run as written — examples/ci/github-campaign.yml
(a 4-way GitHub Actions matrix, then a merge job) and examples/ci/k8s-campaign-job.yaml (a
Kubernetes Indexed Job of four pods, then a merge Job).

Both files are read with a YAML parser and their commands run here, unchanged: each matrix
job's `run:` steps in a checkout of its own (the four at once, as separate processes), the
artifacts uploaded and downloaded as actions/upload-artifact and actions/download-artifact
lay them out, the merge job's steps in a fresh checkout; each pod's shell command with
JOB_COMPLETION_INDEX set as the Job controller sets it and the shared volume a local folder.
Only what needs a CI machine is stood in for: `cargo build` (the binaries under test are
linked where the build would put them) and the marketplace actions (checkout, toolchain,
the JUnit publisher — whose input, the JUnit file, is read here by junitparser instead).

What must hold: every seed of the plan ran exactly once across the shards; the merge gate
fails below MIN_PASS (the example agent retries naively, so it does) and passes at 0; the
JUnit report has one case per run, the failed ones naming the calls behind the failure.
"""

import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import yaml
from junitparser import Failure, JUnitXml

from interop import BIN, CASE_DIR, HERE, Failures, say

f = Failures()
ROOT = (HERE / ".." / "..").resolve()
SERVER = Path(os.environ["SHIPPING_SERVER"])
AGENT = Path(os.environ.get("MCP_AGENT") or SERVER.with_name("mcp_agent"))
SCENARIO = ROOT / "scenarios" / "mcp-lost-ack.json"


def checkout(where: Path) -> Path:
    """A checkout as the build step leaves it: the scenario, and the binaries under test where
    `cargo build --release` puts them."""
    (where / "scenarios").mkdir(parents=True)
    shutil.copy(SCENARIO, where / "scenarios" / SCENARIO.name)
    release = where / "target" / "release"
    (release / "examples").mkdir(parents=True)
    (release / "toolstorm-tui").symlink_to(BIN)
    (release / "examples" / "mcp_agent").symlink_to(AGENT)
    (release / "examples" / "mcp_shipping_server").symlink_to(SERVER)
    return where


def bash(script: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)


def expand(text: str, matrix: dict) -> str:
    """`${{ matrix.X }}` replaced; any other expression left is a failure of this runner."""
    text = re.sub(r"\$\{\{\s*matrix\.(\w+)\s*\}\}", lambda m: str(matrix[m.group(1)]), text)
    f.check("${{" not in text, f"an expression this runner does not know: {text!r}")
    return text


def run_job(job: dict, root: Path, env: dict, matrix: dict, artifacts: Path, results: dict, key) -> None:
    """The job's steps, in order, in the checkout `root`; results[key] gets each run step's
    (name, exit code, output)."""
    done = []
    for step in job["steps"]:
        uses = step.get("uses", "")
        name = expand(step.get("name", uses), matrix)
        if uses.startswith("actions/upload-artifact"):
            into = artifacts / expand(step["with"]["name"], matrix)
            for p in step["with"]["path"].split():
                src = root / p
                if src.is_dir():
                    shutil.copytree(src, into / p, symlinks=True, dirs_exist_ok=True)
                elif src.exists():
                    into.mkdir(parents=True, exist_ok=True)
                    shutil.copy(src, into / p)
        elif uses.startswith("actions/download-artifact"):
            pattern = step["with"]["pattern"].replace("*", ".*")
            into = root / step["with"]["path"]
            for a in artifacts.iterdir():
                if re.fullmatch(pattern, a.name):
                    shutil.copytree(a, into / a.name, symlinks=True, dirs_exist_ok=True)
        elif "run" in step and name != "Build":
            p = bash(expand(step["run"], matrix), root, env)
            done.append((name, p.returncode, p.stdout + p.stderr))
            if p.returncode != 0 and key != "merge":
                break
    results[key] = done


def junit_report(path: Path, runs: int, failing: int) -> None:
    if not f.check(path.is_file(), f"no JUnit file at {path}"):
        return
    xml = JUnitXml.fromfile(str(path))
    cases = [c for s in xml for c in s]
    failed = [c for c in cases if any(isinstance(r, Failure) for r in c.result)]
    f.check(len(cases) == runs, f"{path.name}: {len(cases)} cases, expected one per run ({runs})")
    f.check(len(failed) == failing, f"{path.name}: {len(failed)} failed cases, the campaign has {failing}")
    for c in failed:
        (failure,) = [r for r in c.result if isinstance(r, Failure)]
        f.check("committed shipment o-1 again" in (failure.text or ""), f"{c.name}: {failure.text!r}")


def summary(campaign: Path, cwd: Path) -> dict:
    p = subprocess.run([BIN, "campaign", str(campaign), "--json", "--min-pass", "0"], cwd=cwd,
                       capture_output=True, text=True)
    f.check(p.returncode == 0, f"campaign {campaign} --json exited {p.returncode}: {p.stderr[-300:]}")
    return json.loads(p.stdout or "{}")


# ----- GitHub Actions -----
wf = yaml.safe_load((ROOT / "examples" / "ci" / "github-campaign.yml").read_text())
shard_job, merge_job = wf["jobs"]["shard"], wf["jobs"]["merge"]
shards = shard_job["strategy"]["matrix"]["shard"]
f.check(shards == [1, 2, 3, 4] and merge_job["needs"] == "shard", f"matrix {shards}, needs {merge_job.get('needs')}")
env = {**os.environ, **{k: str(v) for k, v in wf["env"].items()}}
gh = CASE_DIR / "github"
artifacts = gh / "artifacts"
artifacts.mkdir(parents=True)
results: dict = {}
threads = [threading.Thread(target=run_job, args=(shard_job, checkout(gh / f"shard-{i}"), env, {"shard": i}, artifacts, results, i))
           for i in shards]
for t in threads:
    t.start()
for t in threads:
    t.join()
for i in shards:
    for name, code, out in results.get(i, []):
        say(f"shard {i}: {name}: exit {code}")
        f.check(code == 0, f"shard {i}'s step {name!r} exited {code}: {out[-400:]}")
seen = []
for i in shards:
    shard_file = artifacts / f"campaign-shard-{i}" / "shard.campaign.json"
    if f.check(shard_file.is_file(), f"shard {i} uploaded no shard.campaign.json"):
        doc = json.loads(shard_file.read_text())
        f.check(doc.get("shard") == {"index": i, "total": 4}, f"shard {i}'s file names {doc.get('shard')}")
        seen += [r["seed"] for r in doc["runs"]]
f.check(sorted(seen) == list(range(1, 41)), f"the shards ran seeds {sorted(seen)}, not 1..40 once each")

merge_root = checkout(gh / "merge")
for min_pass, expect in (("0.9", 1), ("0", 0)):
    results.clear()
    run_job(merge_job, merge_root, {**env, "MIN_PASS": min_pass}, {}, artifacts, results, "merge")
    (name, code, out), = results["merge"]
    say(f"merge at MIN_PASS={min_pass}: exit {code}")
    f.check(code == expect, f"merge at MIN_PASS={min_pass} exited {code}, expected {expect}: {out[-400:]}")
    shutil.rmtree(merge_root / "shards")
merged = summary(merge_root / "campaign.json", merge_root)
failing = len(merged.get("failing_seeds", []))
f.check(merged.get("runs") == 40 and merged.get("missing_seeds") == [] and 0 < failing < 40,
        f"merged: {merged.get('runs')} runs, missing {merged.get('missing_seeds')}, {failing} failing")
f.check(all((merge_root / "campaign.runs" / f"run-{n:03}" / "recording.json").is_file() for n in range(1, 41)),
        "--copy-runs did not bring every run's folder")
junit_report(merge_root / "campaign.junit.xml", 40, failing)
# The artifacts left the shards' checkouts behind: the merged file names the merge's own.
doc = json.loads((merge_root / "campaign.json").read_text())
f.check(doc.get("scenario") == "scenarios/mcp-lost-ack.json" and doc.get("cwd") == ".",
        f"the merged file names scenario {doc.get('scenario')!r}, cwd {doc.get('cwd')!r}")
# --rerun on the merged file runs a failing seed again, in the merge's checkout.
if merged.get("failing_seeds"):
    seed = merged["failing_seeds"][0]
    p = subprocess.run([BIN, "campaign", "campaign.json", "--rerun", str(seed)], cwd=merge_root,
                       capture_output=True, text=True, timeout=60)
    f.check(p.returncode == 1 and "same faults" in p.stdout, f"--rerun {seed} exited {p.returncode}: {p.stdout[-300:]}{p.stderr[-300:]}")

# ----- Kubernetes Indexed Job -----
docs = [d for d in yaml.safe_load_all((ROOT / "examples" / "ci" / "k8s-campaign-job.yaml").read_text()) if d]
jobs = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "Job"}
indexed = next((j for j in jobs.values() if j["spec"].get("completionMode") == "Indexed"), None)
merge_k8s = next((j for j in jobs.values() if j is not indexed), None)
if f.check(indexed is not None and merge_k8s is not None, f"Jobs in the manifest: {list(jobs)}"):
    k8s = CASE_DIR / "k8s"
    volume = k8s / "results"
    volume.mkdir(parents=True)
    path_dir = k8s / "bin"
    path_dir.mkdir()
    (path_dir / "toolstorm-tui").symlink_to(BIN)
    pod_env = {**os.environ, "PATH": f"{path_dir}:{os.environ['PATH']}"}

    def pod_script(job: dict) -> tuple[str, Path]:
        c = job["spec"]["template"]["spec"]["containers"][0]
        f.check(c["command"] == ["/bin/sh", "-c"], f"container command {c['command']}")
        mount = c["volumeMounts"][0]["mountPath"]
        work = checkout(k8s / f"work-{job['metadata']['name']}")
        f.check(c["workingDir"] == "/work", f"workingDir {c['workingDir']}")
        return c["args"][0].replace(mount, str(volume)), work

    n = indexed["spec"]["completions"]
    f.check(n == 4 and indexed["spec"]["parallelism"] == 4, f"completions {n}, parallelism {indexed['spec'].get('parallelism')}")
    script, work = pod_script(indexed)
    pods = [subprocess.Popen(["/bin/sh", "-c", script], cwd=work, env={**pod_env, "JOB_COMPLETION_INDEX": str(i)},
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for i in range(n)]
    for i, p in enumerate(pods):
        out, _ = p.communicate(timeout=120)
        f.check(p.returncode == 0, f"pod {i} exited {p.returncode}: {out[-400:]}")
    f.check(sorted(q.name for q in volume.glob("*.campaign.json")) == [f"shard-{i}.campaign.json" for i in range(n)],
            f"the volume holds {sorted(q.name for q in volume.iterdir())}")
    script, work = pod_script(merge_k8s)
    p = bash(script, work, pod_env)
    say(f"k8s merge: exit {p.returncode}")
    f.check(p.returncode == 1, f"the merge Job exited {p.returncode}, expected 1 (below --min-pass): {p.stdout[-300:]}{p.stderr[-300:]}")
    merged = summary(volume / "campaign.json", work)
    failing = len(merged.get("failing_seeds", []))
    f.check(merged.get("runs") == 40 and merged.get("missing_seeds") == [], f"k8s merged: {merged.get('runs')} runs")
    junit_report(volume / "campaign.junit.xml", 40, failing)
f.done()
