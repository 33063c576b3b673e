#!/usr/bin/env bash
# Checks, in a real terminal (tmux), that the explorer always gives the terminal back: after
# quit, after an input error, after a panic and after every signal that ends a program
# (SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1: exit status 128 + n), raw mode is off (icanon,
# echo), the alternate screen is left and the cursor is shown. Ctrl-Z and SIGTSTP give the
# terminal back while stopped, and SIGCONT takes it again.
# Usage: tests/terminal/restore.sh [BINARY]   (default: target/debug/toolstorm-tui)
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:-target/debug/toolstorm-tui}")
file=$(realpath cassettes/incident.json)
out=$(mktemp -d)
fail=0
passed=0

restored() { # case-name -> 0 when the terminal is back to normal
  local name=$1 state modes
  state=$(tmux display -p -t restore '#{alternate_on} #{cursor_flag}')
  modes=$(stty -a -F "$(tmux display -p -t restore '#{pane_tty}')" 2>/dev/null | tr '\n' ' ')
  [ -f "$out/stty" ] && modes=$(cat "$out/stty")
  if [ "$state" != "0 1" ]; then echo "FAIL $name: alternate_on/cursor_flag = $state (want 0 1)"; return 1; fi
  case " $modes " in
    *" -icanon "*|*" -echo "*|"  ") echo "FAIL $name: terminal left raw: $modes"; return 1 ;;
  esac
  return 0
}

check() { # case-name [want-exit-code]
  local name=$1 want=${2:-} i
  # Wait (up to 8 s) for the program to end and the shell to record the terminal's state.
  for i in $(seq 80); do [ -f "$out/stty" ] && break; sleep 0.1; done
  sleep 0.3
  restored "$name" || { fail=1; return; }
  if [ -n "$want" ]; then
    local got; got=$(cat "$out/code" 2>/dev/null)
    if [ "$got" != "$want" ]; then echo "FAIL $name: exit status $got (want $want)"; fail=1; return; fi
  fi
  echo "ok   $name"; passed=$((passed + 1))
}

start() { # env...
  tmux kill-session -t restore 2>/dev/null
  rm -f "$out/stty" "$out/code"
  tmux new -d -s restore -x 100 -y 30 "env $* $bin $file; echo \$? > $out/code; stty -a | tr '\n' ' ' > $out/stty; sleep 30"
  sleep 1.5
}

explorer_pid() { pgrep -P "$(tmux display -p -t restore '#{pane_pid}')" -f "$bin"; }

start ""; tmux send-keys -t restore q; check quit 0
tmux kill-session -t restore 2>/dev/null; rm -f "$out/stty" "$out/code"
tmux new -d -s restore -x 100 -y 30 "$bin /no/such/file.json; echo \$? > $out/code; stty -a | tr '\n' ' ' > $out/stty; sleep 30"
check error 2
start TOOLSTORM_TUI_TEST_PANIC=1; tmux send-keys -t restore j; check panic
for sig in TERM:15 HUP:1 INT:2 QUIT:3 USR1:10; do
  start ""; kill -"${sig%%:*}" "$(explorer_pid)"; check "sig${sig%%:*}" $((128 + ${sig##*:}))
done

# Suspend and resume: by signal, then by Ctrl-Z (a key in raw mode).
for how in signal key; do
  start ""
  pid=$(explorer_pid)
  if [ "$how" = signal ]; then kill -TSTP "$pid"; else tmux send-keys -t restore C-z; fi
  sleep 1
  if [ "$(ps -o stat= -p "$pid" | cut -c1)" != "T" ]; then echo "FAIL suspend-$how: not stopped"; fail=1; continue; fi
  restored "suspend-$how (stopped)" || { fail=1; kill -CONT "$pid"; continue; }
  kill -CONT "$pid"; sleep 1
  if [ "$(tmux display -p -t restore '#{alternate_on}')" != "1" ]; then echo "FAIL suspend-$how: not back on the alternate screen"; fail=1; continue; fi
  tmux send-keys -t restore q; check "suspend-$how then quit" 0
done
tmux kill-session -t restore 2>/dev/null
rm -rf "$out"
if [ $fail -eq 0 ]; then echo "$passed passed, 0 failed"; else echo "terminal restore: failures above"; fi
exit $fail
