#!/usr/bin/env bash
# The benchmarks find configs/ by flag, environment or the binary's location, not only
# through the source path compiled in (issue 20, item 6); without one they exit 2 with
# what they tried, never abort.
# Usage: bench_configs_test.sh BENCH_MEMORY_BINARY SOURCE_DIR
set -euo pipefail
bench=${1:?usage: bench_configs_test.sh BENCH_MEMORY_BINARY SOURCE_DIR}
src=${2:?usage: bench_configs_test.sh BENCH_MEMORY_BINARY SOURCE_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

set +e
"$bench" --configs "$tmp/none" --benchmark_filter=Streaming > "$tmp/out" 2> "$tmp/err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "missing configs exited $rc, expected 2"
grep -qF "$tmp/none (--configs)" "$tmp/err" || fail "the message does not say what was tried"

# A copy of the binary elsewhere, its configs given by the environment: one short run.
cp "$bench" "$tmp/bench_memory"
T3SIM_CONFIGS="$src/configs" "$tmp/bench_memory" --benchmark_filter=Streaming --benchmark_min_time=0.001 \
  > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err" >&2; fail "the copy did not run with T3SIM_CONFIGS"; }
grep -q "BM_StreamingReads" "$tmp/out" || fail "no result line"
# ... and by the flag.
"$tmp/bench_memory" --configs "$src/configs" --benchmark_filter=Streaming --benchmark_min_time=0.001 \
  > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err" >&2; fail "the copy did not run with --configs"; }
echo "bench_configs_test: ok"
