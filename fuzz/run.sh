#!/usr/bin/env bash
# Runs each fuzz target for SECONDS (default 1800), seeded with the reference files. Any input
# that takes longer than 5 s is a finding (libFuzzer's -timeout), as a crash is.
# Usage: fuzz/run.sh [SECONDS] [TARGET...]   (needs cargo-fuzz: cargo install cargo-fuzz)
# cargo-fuzz needs nightly features; RUSTC_BOOTSTRAP lets the stable toolchain provide them.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-1800}; shift || true
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(cassette_loader document canonical glob)
export RUSTC_BOOTSTRAP=1
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  case $t in
    document) cp ../scenarios/*.json "corpus/$t/"
      find ../tests/fixtures/reference -name '*.json' -size -200k -exec cp {} "corpus/$t/" \; ;;
    glob) printf '\003*a?b[!c]x' > "corpus/$t/seed1"; printf '\005[a-c]*zzz' > "corpus/$t/seed2" ;;
    *) find ../tests/fixtures/reference -name '*.json' -size -200k -exec cp {} "corpus/$t/" \; ;;
  esac
  if ! cargo fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -max_len=200000 -rss_limit_mb=2048 -timeout=5 > "fuzz-$t.log" 2>&1; then
    echo "$t: a crash or a slow input (over 5 s) was found; see fuzz/artifacts/$t and fuzz/fuzz-$t.log"
  fi
  tail -n 3 "fuzz-$t.log"
done
