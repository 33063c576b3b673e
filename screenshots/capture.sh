#!/usr/bin/env bash
# Captures the running explorer under tmux and renders the screens as SVG for the README.
# Usage: screenshots/capture.sh   (from the repository root; needs tmux and python3)
#        BIN=target/debug/toolstorm-tui screenshots/capture.sh   (use an already built binary)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then cargo build -q --release; fi
bin=${BIN:-target/release/toolstorm-tui}
shot() { # name cols rows file keys...
  local name=$1 cols=$2 rows=$3 file=$4; shift 4
  tmux kill-session -t shot 2>/dev/null || true
  tmux new -d -s shot -x "$cols" -y "$rows" "$bin $file"
  sleep 1
  for k in "$@"; do tmux send-keys -t shot "$k"; sleep 0.3; done
  sleep "${SETTLE:-0.5}"
  tmux capture-pane -e -p -t shot > "/tmp/$name.ansi"
  tmux kill-session -t shot
  python3 screenshots/ansi2svg.py "/tmp/$name.ansi" "screenshots/$name.svg" "$cols"
}
shot incident-duplicate 120 36 cassettes/incident.json G
shot incident-lost-ack 120 36 cassettes/incident.json j
# A comparison opens on the run that shows its story (retry); l goes to resilient.
shot comparison 120 36 cassettes/lost-ack-comparison.json l G
shot rate-limit-help 100 30 scenarios/rate_limit.json '?'
# Search a payload value; the match is highlighted in Details.
shot search 120 36 cassettes/incident.json / order-1729 Enter
# The scenario's story (t).
shot story 100 30 scenarios/lost_ack.json t
# The runner: edit the lost-ack rule's ordinals (1 → 3) on the retry run, then compare.
shot runner-editor 120 36 scenarios/lost_ack.json j i j j j Enter C-u 3
shot runner-compare 120 36 scenarios/lost_ack.json j i j j j Enter C-u 3 Enter Escape c
shot runner-policies 120 36 scenarios/lost_ack.json i j j j Enter C-u 3 Enter Escape v
# The executor: the parallel batch as lanes.
shot orbit-lanes 120 36 scenarios/orbit-parallel.json
# MCP recordings: the retried write after a lost acknowledgement, with its evidence; and an
# agent that retried a rate-limited write before the advertised wait.
shot mcp-incident 120 36 cassettes/mcp-incident.json / shp-0001 Enter
shot retry-storm 120 36 cassettes/rate-limit-retry-storm.json f
# A real model's run (ask): its second create_shipment after the lost acknowledgement, with
# the round's words, the call as the model sent it and the output fed back.
shot ask-lost-ack 120 36 cassettes/ask-mcp-lost-ack-qwen.json j
# From a verdict to its calls: > selects the failed verdict, its reasons show, » marks the
# calls it names.
shot verdict-calls 120 36 cassettes/rate-limit-retry-storm.json '>'
# The shape of a real-sized run: the summary (T), sorted by duplicate commits.
shot summary 120 36 tests/fixtures/reference/api/large_public_10000.cassette.json T l l l l l
# A campaign: its runs as a list, with pass^k (the naive agent, 10 seeds at probability 0.5).
shot campaign-runs 120 36 cassettes/lost-ack-campaign.json j j
# What if, at this call (p), and the agent's re-run beside its first run: a campaign of the
# example agent through the example server (prebuilt: cargo build --examples), in a fresh
# folder, since the re-run writes files beside its campaign.
full=$(realpath "$bin")
examples=$(dirname "$full")/examples
if [ -x "$examples/mcp_agent" ] && [ -x "$examples/mcp_shipping_server" ]; then
  ws=$(mktemp -d /tmp/toolstorm-shots.XXXXXX)
  python3 - "$examples/mcp_shipping_server" "$ws/mcp-lost-ack.json" <<'PY'
import json, sys
s = json.load(open("scenarios/mcp-lost-ack.json"))
s["server"] = {"command": sys.argv[1], "args": []}
json.dump(s, open(sys.argv[2], "w"), indent=2)
PY
  (cd "$ws" && "$full" campaign mcp-lost-ack.json --seeds 43..44 --probability 0.5 --min-pass 0 \
     -- "$examples/mcp_agent" --mcp-config '{mcp_config}' > /dev/null)
  # The wire view (M): every message of a recorded lost-ack session, the server's real
  # answer (never delivered) selected.
  (cd "$ws" && { printf '%s\n' \
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}' \
      '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
      '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
      '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_shipment","arguments":{"order_id":"o-1"}}}'
    sleep 1
    printf '%s\n' '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"create_shipment","arguments":{"order_id":"o-1"}}}'
    sleep 1; } | "$full" mcp mcp-lost-ack.json --record wire.json > /dev/null 2>&1)
  shot wire 120 36 "$ws/wire.json" M / 'not delivered' Enter
  shot whatif-picker 120 36 "$ws/mcp-lost-ack.campaign.json" Enter p j j j
  # A command from a file starts only once shown and confirmed (y).
  shot rerun-confirm 120 36 "$ws/mcp-lost-ack.campaign.json" Enter p j j j Enter
  SETTLE=3 shot whatif-compare 120 36 "$ws/mcp-lost-ack.campaign.json" Enter p j j j Enter y
  rm -rf "$ws"
else
  echo "skipped whatif-*: build the examples first (cargo build --examples)" >&2
fi
echo "wrote screenshots/*.svg"
