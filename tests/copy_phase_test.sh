#!/usr/bin/env bash
# tools/h200/copy_phase.py on a synthetic copy_phase.cu output: six GEMMs and six copies
# with known ends (one packed copy ending at 0.92 of a GEMM, followed by a spread one; one
# ending at 0.5, followed by a wait; one ending between GEMMs), the rate over the copies
# beside the GEMMs computed by hand, and a model row beside it.
# Usage: copy_phase_test.sh SOURCE_DIR
set -euo pipefail

src=${1:?usage: copy_phase_test.sh SOURCE_DIR}
script="$src/tools/h200/copy_phase.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "$(basename "$1") lacks '$2'"; }; }

m="$tmp/copy_phase.csv"
{
  echo "# a comment line, as measure_program.sh writes"
  echo "gemm,size_mib,kind,index,start_ns,end_ns,sms,cta_first_start_ns,cta_last_end_ns"
  # GEMM i runs [1000 + 100000 i, 98000 + 100000 i): 97 us each, 3 us apart.
  for i in 0 1 2 3 4 5 6 7; do
    echo "g.x,64,gemm,$i,$((1000 + 100000 * i)),$((98000 + 100000 * i)),,,"
  done
  echo "g.x,64,copy,0,500,150000,6,500,150000"          # starts before the GEMMs: not beside them
  echo "g.x,64,copy,1,160000,190000,6,160000,190000"    # ends at 0.918 of GEMM 1
  echo "g.x,64,copy,2,191600,250000,24,191600,250000"   # spread
  echo "g.x,64,copy,3,280000,350000,6,280000,350000"    # ends at 0.505 of GEMM 3
  echo "g.x,64,copy,4,395000,599000,6,395000,599000"    # ends between GEMMs 5 and 6
  echo "g.x,64,copy,5,700000,750000,6,700000,750000"    # the last: no next copy
} > "$m"
model="$tmp/model.csv"
{
  echo "point,workload.gemm.preset,workload.copy_bytes,status,error,copy_GBps_during"
  echo "0,g.x,64MiB,ok,,400.0"
} > "$model"

python3 "$script" "$m" --model "$model" -o "$tmp/out.md"
# Copies 1-4 ran beside the GEMMs with a next one: 4 x 64 MiB over copy 1's start to copy 5's.
rate=$(python3 -c "print(f'{4 * 64 * 2**20 / (700000 - 160000):.1f}')")
expect "$tmp/out.md" "| g.x | 64 | 97.0 | 4 | 1 | $rate | 400.0 |"
expect "$tmp/out.md" "| g.x | 1 | $rate | 400.0 |"
expect "$tmp/out.md" "| 0.9-1.0 | 1 | 1 | 1.6 |"
expect "$tmp/out.md" "| 0.5-0.7 | 1 | 0 | 45.0 |"
expect "$tmp/out.md" "| between GEMMs | 1 | 0 | 101.0 |"
# A missing file is an error, not an empty table.
if python3 "$script" "$tmp/none.csv" > /dev/null 2>&1; then fail "a missing file was accepted"; fi
echo "copy_phase_test: ok"
