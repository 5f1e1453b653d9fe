#!/usr/bin/env bash
# Build the fuzz preset and run every libFuzzer target for a while (fuzz/README.md).
#
#   tools/fuzz-smoke.sh [SECONDS]        default 60 per target (or FUZZ_SECONDS)
#   FUZZ_TARGETS="config trace" tools/fuzz-smoke.sh 600
#   FUZZ_NO_BUILD=1 ...                  skip the build (build-fuzz must be current)
#
# Targets run one after the other (one core each). Each starts from its seed corpus
# (build-fuzz/fuzz/corpus/<target>, from configs/ and traces/), the corpus kept in the
# repository (fuzz/corpus/<target>: what earlier long runs found, merged) and what runs
# on this checkout found (build-fuzz/fuzz/work/<target>, where new inputs go); a crash,
# leak, timeout or out-of-memory is
# saved under build-fuzz/fuzz/artifacts/<target>/ and fails the run. Prints the
# executions per target; exits nonzero on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-${FUZZ_SECONDS:-60}}
targets=${FUZZ_TARGETS:-config trace sweep validate}
build=build-fuzz
rss_limit_mb=${FUZZ_RSS_LIMIT_MB:-2048}
timeout_s=${FUZZ_TIMEOUT:-10}
max_len=${FUZZ_MAX_LEN:-16384}

if [ -z "${FUZZ_NO_BUILD:-}" ]; then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz
fi

# UBSan and ASan findings are fatal with a stack; leaks are findings (libFuzzer's
# -detect_leaks, on by default with ASan).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Symbolized stacks: Debian names the symbolizer llvm-symbolizer-14 unless `llvm` is in.
if ! command -v llvm-symbolizer >/dev/null && [ -x /usr/lib/llvm-14/bin/llvm-symbolizer ]; then
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
fi

status=0
summary=()
for t in $targets; do
  bin=$build/fuzz/fuzz_$t
  seeds=$build/fuzz/corpus/$t
  kept=fuzz/corpus/$t  # the inputs earlier runs found, committed (fuzz/README.md); read only
  work=$build/fuzz/work/$t
  artifacts=$build/fuzz/artifacts/$t
  log=$build/fuzz/logs/$t.log
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  echo "fuzz-smoke: $t for ${seconds}s (log $log)" >&2
  rc=0
  # A validate builds a whole node: 0.05 s (a small one) to 5 s (MI300X) under ASan.
  unit_timeout=$timeout_s
  [ "$t" = validate ] && unit_timeout=${FUZZ_VALIDATE_TIMEOUT:-30}
  "$bin" -max_total_time="$seconds" -rss_limit_mb="$rss_limit_mb" -timeout="$unit_timeout" -max_len="$max_len" \
    -dict="fuzz/$t.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
    "$work" "$seeds" $( [ -d "$kept" ] && echo "$kept" ) >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  if [ "$rc" -ne 0 ] || [ -z "$execs" ]; then
    status=1
    summary+=("$(printf '%-9s FAILED (exit %s) after %s executions; see %s' "$t" "$rc" "${execs:-?}" "$log")")
    grep -E '^==[0-9]+==ERROR|^SUMMARY|t3sim fuzz finding|Test unit written|runtime error' "$log" | head -20 >&2 || true
  else
    summary+=("$(printf '%-9s %10s executions (%s/s), %s corpus inputs, no finding' "$t" "$execs" "$rate" \
      "$(find "$work" -type f | wc -l)")")
  fi
done

echo "fuzz-smoke: ${seconds}s per target" >&2
printf '  %s\n' "${summary[@]}" >&2
exit $status
