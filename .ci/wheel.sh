#!/usr/bin/env bash
# The Python wheel, end to end: build it with maturin (from PyPI, in a throwaway virtual
# environment), install it into a second, fresh one, and run the installed toolstorm-tui:
# --version, `check` on the bundled incident, and one record-only MCP session against the
# example server. Needs python3 with venv, and PyPI for maturin: without them it fails, it
# never skips. Prints how long the wheel build took and how big the wheel is.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

now() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
since() { python3 -c 'import sys, time; print(f"{time.time() - float(sys.argv[1]):.1f}")' "$1"; }
fail() {
  echo "wheel.sh: FAIL: $*" >&2
  exit 1
}

script_start=$(now)
work=$(mktemp -d "${TMPDIR:-/tmp}/toolstorm-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[[ -n "$version" ]] || fail "no version in Cargo.toml"

# 1. maturin, from PyPI, in a virtual environment of its own.
python3 -m venv "$work/build" || fail "python3 -m venv does not work (install python3-venv)"
"$work/build/bin/python" -m pip install --quiet --retries 2 --timeout 30 'maturin>=1.9,<2' ||
  fail "could not install maturin from PyPI (is PyPI reachable?)"
echo "wheel.sh: $("$work/build/bin/maturin" --version)"

# 2. The wheel. Plain `maturin build`: pyproject.toml selects the `dist` profile (stripped, no
# debug info); `--release` would replace it with the release profile.
build_start=$(now)
"$work/build/bin/maturin" build --quiet --out "$work/wheels" ||
  fail "maturin build"
build_seconds=$(since "$build_start")
shopt -s nullglob
wheels=("$work"/wheels/toolstorm_tui-*.whl)
shopt -u nullglob
[[ ${#wheels[@]} -eq 1 ]] || fail "expected one toolstorm_tui wheel, found: $(ls "$work/wheels")"
wheel=${wheels[0]}
wheel_bytes=$(wc -c <"$wheel" | tr -d ' ')

# The wheel's metadata: name, version from Cargo.toml, license, README as description.
python3 - "$wheel" "$version" <<'PY' || fail "wheel metadata"
import sys, zipfile
wheel, version = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    scripts = [n for n in names if n.endswith(".data/scripts/toolstorm-tui")]
head = meta.split("\n\n", 1)[0].splitlines()
for want in ("Name: toolstorm-tui", f"Version: {version}", "License-Expression: MIT"):
    assert want in head, f"{want!r} missing from METADATA:\n" + "\n".join(head)
assert any(l.startswith("Keywords:") and "mcp" in l for l in head), "no keywords"
assert any(l.startswith("Description-Content-Type: text/markdown") for l in head), "no README"
assert "# toolstorm-tui" in meta, "README text missing from METADATA"
assert len(scripts) == 1, f"the binary is not in the wheel: {names}"
PY

# 3. Install it where nothing else is: a fresh virtual environment, no index.
python3 -m venv "$work/run"
"$work/run/bin/python" -m pip install --quiet --no-index --no-deps "$wheel" ||
  fail "pip install of the wheel"
bin="$work/run/bin/toolstorm-tui"
[[ -x "$bin" ]] || fail "the wheel installed no $bin"
binary_bytes=$(wc -c <"$bin" | tr -d ' ')

# 4. The installed program.
got=$("$bin" --version)
[[ "$got" == "toolstorm-tui $version" ]] || fail "--version printed '$got'"

set +e
check_out=$("$bin" check cassettes/incident.json 2>&1)
check_code=$?
set -e
[[ $check_code -eq 1 ]] || fail "check cassettes/incident.json exited $check_code, not 1:
$check_out"
grep -qF "No duplicate side effects: 1 duplicate effect(s) across 2 commits" <<<"$check_out" ||
  fail "check did not name the duplicate:
$check_out"

# One record-only MCP session through the installed binary, with raw JSON-RPC lines: each
# request waits for its answer before the next is sent.
cargo build --quiet --example mcp_shipping_server
server="$PWD/target/debug/examples/mcp_shipping_server"
[[ -x "$server" ]] || fail "no example server at $server"
cat >"$work/drive.py" <<'PY'
import json, queue, subprocess, sys, threading

proxy, server, record, log = sys.argv[1:5]
with open(log, "wb") as err:
    p = subprocess.Popen(
        [proxy, "mcp", "--record", record, "--", server],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
    )
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in p.stdout], daemon=True).start()

    def send(message):
        p.stdin.write(json.dumps(message).encode() + b"\n")
        p.stdin.flush()

    def answer(id_):
        while True:
            try:
                line = lines.get(timeout=30)
            except queue.Empty:
                sys.exit(f"no answer to request {id_} within 30 s")
            message = json.loads(line)
            if message.get("id") == id_:
                if "error" in message:
                    sys.exit(f"request {id_} failed: {line!r}")
                return message["result"]

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "wheel.sh", "version": "0"}}})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    tools = [t["name"] for t in answer(2)["tools"]]
    assert "create_shipment" in tools, tools
    send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "create_shipment", "arguments": {"order_id": "o-1"}}})
    result = answer(3)
    assert not result.get("isError"), result
    p.stdin.close()
    code = p.wait(timeout=30)
sys.exit(f"the proxy exited {code}" if code != 0 else 0)
PY
record="$work/session.json"
python3 "$work/drive.py" "$bin" "$server" "$record" "$work/proxy.log" ||
  fail "MCP session through the installed binary; its stderr:
$(cat "$work/proxy.log")"
python3 - "$record" "${record%.json}.mcp.json" <<'PY' || fail "the recording"
import json, sys
cassette = json.load(open(sys.argv[1]))
calls = cassette["calls"]
assert len(calls) == 1, f"{len(calls)} calls recorded"
assert calls[0]["tool"] == "create_shipment", calls[0]
assert calls[0]["status"] == "ok", calls[0]
sidecar = json.load(open(sys.argv[2]))
assert sidecar.get("protocol_version") == "2025-06-18", sidecar.get("protocol_version")
PY

echo "wheel.sh: OK $(basename "$wheel")"
echo "wheel.sh: wheel ${wheel_bytes} bytes (binary inside ${binary_bytes} bytes)"
echo "wheel.sh: wheel build ${build_seconds} s; whole script $(since "$script_start") s"
