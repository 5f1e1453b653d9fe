#!/usr/bin/env bash
# tools/plot_overlap.py on a small synthetic ag_gemm sweep CSV: the PNG and the table
# exist, the table's ratios follow from the rows (non-fused and failed rows skipped),
# and bad input exits 2 with one line.
# Usage: plot_overlap_test.sh SOURCE_DIR
set -euo pipefail

src=${1:?usage: plot_overlap_test.sh SOURCE_DIR}
script="$src/tools/plot_overlap.py"
source "$(dirname "$0")/python_with_matplotlib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { grep -qF -- "$2" "$1" || fail "$(basename "$1") lacks '$2'"; }

cols="point,workload.launch_order,status,error,configuration,num_gpus,time_ps,sequential_ps,isolated_compute_ps,isolated_collective_ps,ideal_ps,fused_gemm_launch_ps,fused_copies_end_ps"
{
  echo "$cols"
  # sequential 1 ms (compute 0.6 + collective 0.4), fused 0.8 ms, ideal 0.6 ms: speedup 1.25 of 1.667: 37.5 %.
  echo "0,copies-first,ok,,fused,8,800000000,1000000000,600000000,400000000,600000000,100000000,500000000"
  echo "1,gemm-first,sim_error,boom,fused,8,,,,,,,"
  echo "2,gemm-first,ok,,sequential,8,1000000000,1000000000,400000000,600000000,600000000,0,0"
} > "$tmp/mi300x.csv"
"$python" "$script" "$tmp/mi300x.csv" -o "$tmp/out" > /dev/null 2> "$tmp/err" || { cat "$tmp/err" >&2; fail "plot failed"; }
head -c 8 "$tmp/out/overlap.png" | grep -q PNG || fail "no PNG"
expect "$tmp/out/overlap.md" "| mi300x 8 GPUs, launch_order=copies-first | 1.0000 (0.6000 + 0.4000) | 0.8000 | 0.6000 | 0.800 | 0.600 | 1.250 | 37.5% | 0.00% | 0.1000 | 0.5000 |"
expect "$tmp/err" "2 rows skipped"
[ "$(grep -c '^| mi300x' "$tmp/out/overlap.md")" = 1 ] || fail "skipped rows in the table"

# Bad input: exit 2, one line, no PNG.
rm -rf "$tmp/bad"
echo "point,status" > "$tmp/nocols.csv"
set +e
"$python" "$script" "$tmp/nocols.csv" -o "$tmp/bad" > /dev/null 2> "$tmp/err2"; code=$?
"$python" "$script" "$tmp/missing.csv" -o "$tmp/bad" > /dev/null 2> "$tmp/err3"; code3=$?
set -e
[ "$code" = 2 ] && [ "$code3" = 2 ] || fail "bad input exit codes $code $code3"
expect "$tmp/err2" "missing columns"
[ "$(wc -l < "$tmp/err2")" = 1 ] || fail "more than one line on stderr"
[ ! -e "$tmp/bad/overlap.png" ] || fail "a PNG for bad input"
echo ok
