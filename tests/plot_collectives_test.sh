#!/usr/bin/env bash
# tools/plot_collectives.py on small synthetic sweep CSVs (a size sweep and a channel
# sweep of three collectives, one failed point): the PNGs and the table exist, the
# x axis is picked from the CSV, and bad input exits 2 with one line.
# Usage: plot_collectives_test.sh SOURCE_DIR
set -euo pipefail

src=${1:?usage: plot_collectives_test.sh SOURCE_DIR}
script="$src/tools/plot_collectives.py"

source "$(dirname "$0")/python_with_matplotlib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { grep -qF -- "$2" "$1" || fail "$(basename "$1") lacks '$2'"; }

metrics="collective,num_gpus,array_bytes,time_ps,analytical_ps,time_vs_analytical,algbw_GBps,busbw_GBps,functional_check,events,wall_s"
# Sizes: time 10 us per MiB; busbw = size / time * 3/4 (4 GPUs, RS and AG).
{
  echo "point,workload.collective,workload.size,status,error,$metrics"
  n=0
  for c in ring-rs ring-ag ring-ar; do
    for mib in 1 4 16; do
      bytes=$((mib * 1048576)); ps=$((mib * 10000000))
      echo "$n,$c,${mib}MiB,ok,,$c,4,$bytes,$ps,$ps,1.0,104.8576,78.6432,not run,100,0.1"
      n=$((n + 1))
    done
  done
  echo "$n,ring-ar,64MiB,sim_error,deadlock,,,,,,,,,,,"
} > "$tmp/sizes.csv"

out="$tmp/plots"
"$python" "$script" "$tmp/sizes.csv" -o "$out" > "$tmp/stdout" 2> "$tmp/stderr" || { cat "$tmp/stderr" >&2; fail "sizes plot failed"; }
for f in sizes_time.png sizes_busbw.png; do
  [ -s "$out/$f" ] || fail "$f missing or empty"
  head -c 8 "$out/$f" | grep -q PNG || fail "$f is not a PNG"
done
expect "$out/sizes.md" "| size | collective | time (us) | busbw (GB/s) |"
expect "$out/sizes.md" "| 16 MiB | ring-ag | 160.0 | 78.6 |"
expect "$tmp/stdout" "| 1 MiB | ring-rs | 10.0 | 78.6 |"
expect "$tmp/stderr" "1 row(s) not ok"

# Channels: picked as the x axis because workload.channels varies.
{
  echo "point,workload.collective,workload.channels,status,error,$metrics"
  n=0
  for c in ring-rs ring-ag; do
    for ch in 1 2 4; do
      ps=$((1000000000 / ch))
      echo "$n,$c,$ch,ok,,$c,4,100663296,$ps,$ps,1.0,1,2,not run,100,0.1"
      n=$((n + 1))
    done
  done
} > "$tmp/channels.csv"
"$python" "$script" "$tmp/channels.csv" -o "$out" > /dev/null 2>&1 || fail "channels plot failed"
for f in channels_time.png channels_busbw.png; do
  [ -s "$out/$f" ] || fail "$f missing or empty"
done
expect "$out/channels.md" "| 4 | ring-rs | 250.0 | 2.0 |"

# Calibration points beside the model (--measured, NCCL's op names): matched by
# collective and channels; a model point without one shows "-".
{
  echo "op,array_MiB,channels,t_med_us,busbw_GBps"
  echo "reduce_scatter,96,1,500.0,1.5"
  echo "all_gather,96,2,1000.0,0.5"
} > "$tmp/measured.csv"
"$python" "$script" "$tmp/channels.csv" -o "$out" --measured "$tmp/measured.csv" > /dev/null 2>&1 || fail "measured plot failed"
expect "$out/channels.md" "| channels | collective | time (us) | measured (us) | model / measured | busbw (GB/s) | measured |"
expect "$out/channels.md" "| 1 | ring-rs | 1000.0 | 500.0 | 2.00 | 2.0 | 1.5 |"
expect "$out/channels.md" "| 2 | ring-ag | 500.0 | 1000.0 | 0.50 | 2.0 | 0.5 |"
expect "$out/channels.md" "| 4 | ring-ag | 250.0 | - | - | 2.0 | - |"
echo "op,channels" > "$tmp/bad_measured.csv"
rc=0
"$python" "$script" "$tmp/channels.csv" -o "$out" --measured "$tmp/bad_measured.csv" > /dev/null 2> "$tmp/bad_stderr" || rc=$?
[ "$rc" -eq 2 ] || fail "bad --measured: exit $rc, expected 2"
expect "$tmp/bad_stderr" "no 'array_MiB' column"

# A measured size curve (tools/h200/nccl_sizes.py's CSV, a comment line first): its
# kernel time is matched by collective, GPU count and size; another GPU count's row
# matches nothing.
{
  echo "# NVIDIA H200, ..."
  echo "op,gpus,array_bytes,iters,t_med_us,graph_med_us,kernel_med_us,kernel_min_us"
  echo "reduce_scatter,4,4194304,10,99.0,50.0,30.0,20.0"
  echo "all_gather,2,4194304,10,99.0,50.0,30.0,10.0"
  echo "all_reduce,4,4194304,10,99.0,50.0,70.0,60.0"
} > "$tmp/nccl_sizes.csv"
"$python" "$script" "$tmp/sizes.csv" -o "$out" --measured "$tmp/nccl_sizes.csv" > /dev/null 2> "$tmp/stderr" \
  || { cat "$tmp/stderr" >&2; fail "measured size plot failed"; }
expect "$out/sizes.md" "| 4 MiB | ring-rs | 40.0 | 20.0 | 2.00 | 78.6 | 157.3 |"
expect "$out/sizes.md" "| 4 MiB | ring-ag | 40.0 | - | - | 78.6 | - |"
expect "$out/sizes.md" "| 4 MiB | ring-ar | 40.0 | - | - | 78.6 | - |"
expect "$tmp/stderr" "1 measured row(s) left out"
rc=0
"$python" "$script" "$tmp/channels.csv" -o "$out" --measured "$tmp/nccl_sizes.csv" > /dev/null 2> "$tmp/bad_stderr" || rc=$?
[ "$rc" -eq 2 ] || fail "size curve against channels: exit $rc, expected 2"
expect "$tmp/bad_stderr" "needs a sweep against size"

# Bad input: exit 2 and one line on stderr.
bad_exit() {  # bad_exit CSV TEXT
  local rc=0
  "$python" "$script" "$1" -o "$tmp/bad" 2> "$tmp/bad_stderr" > /dev/null || rc=$?
  [ "$rc" -eq 2 ] || fail "$(basename "$1"): exit $rc, expected 2"
  [ "$(wc -l < "$tmp/bad_stderr")" -eq 1 ] || fail "$(basename "$1"): stderr is not one line"
  expect "$tmp/bad_stderr" "$2"
}
bad_exit "$tmp/missing.csv" "cannot read"
cut -d, -f1-8,10- "$tmp/sizes.csv" > "$tmp/no_time.csv"   # drops time_ps (column 9)
bad_exit "$tmp/no_time.csv" "time_ps"
head -1 "$tmp/sizes.csv" > "$tmp/no_ok.csv"; tail -1 "$tmp/sizes.csv" >> "$tmp/no_ok.csv"
bad_exit "$tmp/no_ok.csv" "no ok rows"

echo "plot_collectives_test: all checks passed"
