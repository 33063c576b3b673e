#!/usr/bin/env bash
# Runs each fuzz target for SECONDS (default 1800), seeded with the reference files.
# Usage: fuzz/run.sh [SECONDS] [TARGET...]   (needs cargo-fuzz: cargo install cargo-fuzz)
# cargo-fuzz needs nightly features; RUSTC_BOOTSTRAP lets the stable toolchain provide them.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-1800}; shift || true
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(cassette_loader scenario_parser canonical)
export RUSTC_BOOTSTRAP=1
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  case $t in
    scenario_parser) cp ../scenarios/*.json "corpus/$t/" ;;
    *) find ../tests/fixtures/reference -name '*.json' -size -200k -exec cp {} "corpus/$t/" \; ;;
  esac
  if ! cargo fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -max_len=200000 -rss_limit_mb=2048 > "fuzz-$t.log" 2>&1; then
    echo "$t: a crash was found; see fuzz/artifacts/$t and fuzz/fuzz-$t.log"
  fi
  tail -n 3 "fuzz-$t.log"
done
