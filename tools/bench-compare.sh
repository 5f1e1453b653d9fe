#!/usr/bin/env bash
# Side-by-side wall time of one benchmark in two builds (bench/README.md).
#
#   tools/bench-compare.sh BEFORE_BUILD AFTER_BUILD BENCH FILTER [REPS]
#   tools/bench-compare.sh /tmp/old/build build bench_gemm Tnlg 5
#
# Runs BENCH (e.g. bench_gemm) of each build alternately, REPS times (default 5),
# with --benchmark_filter=FILTER, and prints each benchmark's minimum wall time per
# build and the ratio after / before. The minimum, because on a shared machine the
# noise only ever adds time (identical runs here differ by 10 % and more). Each build
# runs against its own source tree's configs (the benchmarks read them from the
# source directory they were built from).
#
# PAUSE_PID=<pid>: stop that process (e.g. a long fuzzing run on the other core) around
# each run with SIGSTOP / SIGCONT. Keep runs short (well under a libFuzzer -timeout).
set -euo pipefail

before=${1:?usage: tools/bench-compare.sh BEFORE_BUILD AFTER_BUILD BENCH FILTER [REPS]}
after=${2:?}
bench=${3:?}
filter=${4:?}
reps=${5:-5}

declare -A best
names=()
run_one() {  # build label
  local bin="$1/bench/$bench" label=$2
  [ -x "$bin" ] || { echo "bench-compare: no $bin" >&2; exit 2; }
  if [ -n "${PAUSE_PID:-}" ]; then kill -STOP "$PAUSE_PID"; fi
  local out
  out=$("$bin" --benchmark_filter="$filter" --benchmark_format=csv 2>/dev/null) || true
  if [ -n "${PAUSE_PID:-}" ]; then kill -CONT "$PAUSE_PID"; fi
  # CSV rows: name,iterations,real_time,cpu_time,time_unit,...
  while IFS=, read -r name _ real _ unit _; do
    name=${name//\"/}
    local key="$label|$name|$unit"
    if [ -z "${best[$key]:-}" ]; then
      best[$key]=$real
      if [ "$label" = before ]; then names+=("$name|$unit"); fi
    elif awk -v a="$real" -v b="${best[$key]}" 'BEGIN { exit !(a < b) }'; then
      best[$key]=$real
    fi
  done < <(printf '%s\n' "$out" | grep '^"BM_' || true)
  return 0
}

for _ in $(seq "$reps"); do
  run_one "$before" before
  run_one "$after" after
done

printf '%-60s %14s %14s %8s\n' "benchmark (min of $reps)" before after ratio
for n in "${names[@]}"; do
  name=${n%|*}
  unit=${n#*|}
  b=${best[before|$n]}
  a=${best[after|$n]:-}
  [ -n "$a" ] || continue
  printf '%-60s %11.4g %-2s %11.4g %-2s %7.2fx\n' "$name" "$b" "$unit" "$a" "$unit" "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')"
done
