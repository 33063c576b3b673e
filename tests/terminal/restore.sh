#!/usr/bin/env bash
# Checks, in a real terminal (tmux), that the explorer always gives the terminal back: after
# quit, after an input error, after a panic and after SIGTERM, raw mode is off (icanon, echo),
# the alternate screen is left and the cursor is shown.
# Usage: tests/terminal/restore.sh [BINARY]   (default: target/debug/toolstorm-tui)
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:-target/debug/toolstorm-tui}")
file=$(realpath cassettes/incident.json)
out=$(mktemp -d)
fail=0

check() { # case-name
  local name=$1 state modes
  sleep 1.5
  state=$(tmux display -p -t restore '#{alternate_on} #{cursor_flag}')
  modes=$(cat "$out/stty" 2>/dev/null)
  if [ "$state" != "0 1" ]; then echo "FAIL $name: alternate_on/cursor_flag = $state (want 0 1)"; fail=1; return; fi
  case " $modes " in
    *" -icanon "*|*" -echo "*|"  ") echo "FAIL $name: terminal left raw: $modes"; fail=1; return ;;
  esac
  echo "ok   $name"
}

start() { # env...
  tmux kill-session -t restore 2>/dev/null
  rm -f "$out/stty"
  tmux new -d -s restore -x 100 -y 30 "env $* $bin $file; stty -a | tr '\n' ' ' > $out/stty; sleep 30"
  sleep 1.5
}

start ""; tmux send-keys -t restore q; check quit
tmux kill-session -t restore 2>/dev/null; rm -f "$out/stty"
tmux new -d -s restore -x 100 -y 30 "$bin /no/such/file.json; stty -a | tr '\n' ' ' > $out/stty; sleep 30"
check error
start TOOLSTORM_TUI_TEST_PANIC=1; tmux send-keys -t restore j; check panic
start ""; pane=$(tmux display -p -t restore "#{pane_pid}"); kill -TERM $(pgrep -P "$pane") ; check sigterm
tmux kill-session -t restore 2>/dev/null
rm -rf "$out"
if [ $fail -eq 0 ]; then echo "4 passed, 0 failed"; else echo "terminal restore: failures above"; fi
exit $fail
