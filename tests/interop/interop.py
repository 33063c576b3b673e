"""Helpers shared by the Python cases of the MCP interop suite (tests/interop/run.sh).

Every case is a script that exits 0 when its assertions hold; each failed assertion is printed
as a `why: ...` line, which run.sh turns into `FAIL case: why`. The environment run.sh sets:
TOOLSTORM_BIN (the proxy binary), INTEROP_CASE_DIR (an empty folder for this case's files),
INTEROP_HERE (tests/interop) and, where a case needs them, the servers' commands.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

BIN = os.environ.get("TOOLSTORM_BIN", "")
CASE_DIR = Path(os.environ.get("INTEROP_CASE_DIR", "."))
HERE = Path(os.environ.get("INTEROP_HERE", Path(__file__).resolve().parent))


class Failures:
    """Collects failed assertions; `done()` prints them and exits."""

    def __init__(self) -> None:
        self.why: list[str] = []

    def check(self, ok: bool, why: str) -> bool:
        if not ok:
            self.why.append(why)
        return ok

    def done(self) -> None:
        for w in self.why:
            print(f"why: {w}", flush=True)
        sys.exit(1 if self.why else 0)


def say(text: str) -> None:
    """A progress line for the case's log (stderr, so it never mixes with the verdict)."""
    print(f"  {text}", file=sys.stderr, flush=True)


def sidecar_path(cassette: Path) -> Path:
    """`incident.json` -> `incident.mcp.json`, as the README describes."""
    return cassette.with_name(cassette.stem + ".mcp.json")


def load_json(path: Path):
    """The document at `path`, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def recorded(cassette: Path) -> tuple[list, list, list]:
    """(cassette calls, cassette effects, sidecar calls); empty lists for a missing file."""
    doc = load_json(cassette) or {}
    side = load_json(sidecar_path(cassette)) or {}
    return doc.get("calls") or [], doc.get("effects") or [], side.get("calls") or []


def run_bin(*args: str, timeout: float = 30, join: bool = True) -> subprocess.CompletedProcess:
    """Runs the toolstorm-tui binary; output as text, stdout and stderr joined unless `join`
    is false (machine output on stdout, notes on stderr)."""
    return subprocess.run(
        [BIN, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if join else subprocess.PIPE,
        text=True,
        timeout=timeout,
    )


def proxy_args(cassette: Path, server: list[str], scenario: Path | None = None) -> list[str]:
    """The proxy's arguments, as an `mcpServers` entry would carry them."""
    head = ["mcp"] + ([str(scenario)] if scenario else [])
    return head + ["--record", str(cassette), "--", *server]


def children(of: int) -> list[int]:
    """The pids whose parent is `of`, read from /proc (no psutil)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: the fields after it count.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == of:
            found.append(int(entry))
    return found


def exe_of(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2 :].split()[0] != "Z"


def pgrep(pattern: str) -> list[int]:
    """`pgrep -f pattern`, without this process."""
    out = subprocess.run(["pgrep", "-f", pattern], stdout=subprocess.PIPE, text=True).stdout
    return [int(p) for p in out.split() if int(p) != os.getpid()]


def reap_leftovers(pattern: str) -> list[int]:
    """Ends (by pid) the processes this case started that still run; returns their pids."""
    left = [p for p in pgrep(pattern) if alive(p)]
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return left


def wait_until(cond, timeout: float, step: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


# ----- helpers for the HTTP cases: ports, started processes, secrets -----

def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (port 0 bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:port."""
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start(cmd: list[str], name: str, env: dict | None = None) -> subprocess.Popen:
    """Starts `cmd` in a process group of its own (so `stop` ends its children too), its
    standard output in CASE_DIR/NAME.out and its standard error in CASE_DIR/NAME.err."""
    say(f"starting {name}: {' '.join(cmd)}")
    with open(CASE_DIR / f"{name}.out", "wb") as out, open(CASE_DIR / f"{name}.err", "wb") as err:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                env=env, start_new_session=True)


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Sends `sig` to the process group led by `pid` (gone already: nothing)."""
    try:
        os.killpg(pid, sig)
    except OSError:
        pass


def stop(proc: subprocess.Popen, grace: float = 5) -> int | None:
    """Ends a process `start` started: SIGTERM to its group, SIGKILL after `grace` seconds,
    then SIGKILL to whatever is left of the group. Its exit code, or None when it had to be
    killed. Safe to call twice."""
    killed = False
    if proc.poll() is None:
        kill_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            killed = True
            kill_group(proc.pid)
            proc.wait(5)
    kill_group(proc.pid)
    return None if killed else proc.returncode


def listen_url(proxy: subprocess.Popen, name: str, timeout: float = 20) -> str | None:
    """The URL a `--listen` proxy started as NAME prints first on its standard error."""
    err = CASE_DIR / f"{name}.err"
    found: list[str] = []

    def printed() -> bool:
        first = err.read_text(errors="replace").partition("\n")
        if first[1] and first[0].startswith("listening on http://"):
            found.append(first[0].split()[-1])
        return bool(found) or proxy.poll() is not None

    wait_until(printed, timeout)
    return found[0] if found else None


def files_holding(secret: str, root: Path) -> list[str]:
    """The files under `root` whose bytes contain `secret`."""
    needle = secret.encode()
    return [str(p.relative_to(root)) for p in sorted(root.rglob("*"))
            if p.is_file() and needle in p.read_bytes()]
