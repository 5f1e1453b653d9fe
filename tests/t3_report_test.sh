#!/usr/bin/env bash
# tools/t3_report.py on a synthetic sweep CSV: 2 cases x 5 configurations with known
# numbers (speedups, geomeans, DRAM reductions computed by hand below), one failed point,
# the two figures, and the bad-input exits. Usage: t3_report_test.sh SOURCE_DIR
set -euo pipefail

src=${1:?usage: t3_report_test.sh SOURCE_DIR}
script="$src/tools/t3_report.py"

source "$(dirname "$0")/python_with_matplotlib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect FILE TEXT: FILE contains TEXT (fixed string)
  grep -qF -- "$2" "$1" || fail "$(basename "$1") lacks '$2'"
}

header="point,workload.preset,run.config,run.mode,status,error,configuration,mode,num_gpus,time_ps,gemm_ps,rs_ps,ag_ps"
header+=",gemm_dram_read_bytes,gemm_dram_write_bytes,gemm_dram_update_bytes"
header+=",rs_dram_read_bytes,rs_dram_write_bytes,rs_dram_update_bytes"
header+=",ag_dram_read_bytes,ag_dram_write_bytes,ag_dram_update_bytes,functional_check,events,wall_s"

MB=000000      # append to a number of MB to get bytes
US=000000      # append to a number of microseconds to get picoseconds
n=0
row() {  # row CASE CONFIG GPUS TIME_US GEMM_US RS_US AG_US GR GW GU RR RW RU AR AW AU (MB)
  local c=$1 cfg=$2 g=$3
  shift 3
  local t=$1$US ge=$2$US rs=$3$US ag=$4$US
  shift 4
  local bytes="" b
  for b in "$@"; do bytes+=",$b$MB"; done
  echo "$n,$c,$cfg,homogeneous,ok,,$cfg,homogeneous,$g,$t,$ge,$rs,$ag$bytes,not run,1000,0.5"
  n=$((n + 1))
}

# Case 1, megagpt2.fc2.tp8: sequential 3.0 ms (GEMM 1.5, RS 0.8, AG 0.7), 1000 MB of DRAM.
#   ideal-overlap 2.0 ms -> 1.50x (+50%); ideal-rs-nmc 1.875 -> 1.60x (+60%)
#   t3 2.5 -> 1.20x (+20%); t3-mca 2.4 -> 1.25x (+25%), exposed 2.4 - 1.5 = 0.9000 ms,
#   share of ideal 0.25 / 0.5 = 50%; t3-mca DRAM 880 MB (12.0%), RS reads 200/80 = 2.50x
# Case 2, tnlg.op.tp16: sequential 4.0 ms (GEMM 2.0), 1000 MB.
#   ideal-overlap 2.5 -> 1.60x; ideal-rs-nmc 2.0 -> 2.00x (+100%); t3 3.2 -> 1.25x;
#   t3-mca 3.125 -> 1.28x (+28%); t3-mca DRAM 900 MB (10.0%), RS reads 200/100 = 2.00x
# Geomeans: ideal-overlap sqrt(1.5*1.6) = 1.55x (+55%), t3 sqrt(1.5) = 1.22x (+22%),
#   t3-mca sqrt(1.6) = 1.26x (+26%, 30% target -> -3.5 pp); mean DRAM reduction 11.0%
#   (max 12.0%); RS reads geomean sqrt(5) = 2.24x.
{
  echo "$header"
  seq_bytes=(400 100 0 200 100 0 100 100 0)
  row megagpt2.fc2.tp8 sequential    8 3000 1500 800 700 "${seq_bytes[@]}"
  row megagpt2.fc2.tp8 ideal-overlap 8 2000 1500 0 500 "${seq_bytes[@]}"
  row megagpt2.fc2.tp8 ideal-rs-nmc  8 1875 1500 0 375 "${seq_bytes[@]}"
  row megagpt2.fc2.tp8 t3            8 2500 2000 0 500 400 0 100 80 0 100 100 100 0
  row megagpt2.fc2.tp8 t3-mca        8 2400 1900 0 500 400 0 100 80 0 100 100 100 0
  row tnlg.op.tp16 sequential    16 4000 2000 1000 1000 "${seq_bytes[@]}"
  row tnlg.op.tp16 ideal-overlap 16 2500 2000 0 500 "${seq_bytes[@]}"
  row tnlg.op.tp16 ideal-rs-nmc  16 2000 2000 0 0 "${seq_bytes[@]}"
  row tnlg.op.tp16 t3            16 3200 2200 0 1000 400 0 100 100 0 100 100 100 0
  row tnlg.op.tp16 t3-mca        16 3125 2125 0 1000 400 0 100 100 0 100 100 100 0
  echo "$n,gpt3.fc1.tp32,sequential,homogeneous,sim_error,deadlock at 1.2 ms$(printf ',%.0s' {1..19})"
} > "$tmp/sweep.csv"

out="$tmp/report"
"$python" "$script" "$tmp/sweep.csv" -o "$out" 2>"$tmp/stderr" || { cat "$tmp/stderr" >&2; fail "report failed"; }

md="$out/t3_results.md"
for text in "1.50x (+50%)" "1.60x (+60%)" "1.20x (+20%)" "1.25x (+25%)" \
            "2.00x (+100%)" "1.28x (+28%)" "| 0.9000 |" "| 50% |" "880.0 (12.0%)" "900.0 (10.0%)" \
            "| 2.50x |" "| 2.00x |" \
            "| geomean speedup | 1.55x (+55%) | 1.79x (+79%) | 1.22x (+22%) | 1.26x (+26%) |" \
            "| mean DRAM reduction | 0.0% | 0.0% | 11.0% | 11.0% |" "geomean 2.24x" \
            "## Paper targets (T3 §6)" "| 30% | 26.5% | -3.5 pp |" "| 22% | 11.0% | -11.0 pp |" \
            "| geomean speedup t3-mca (TP=32) | 29% | n/a | n/a |" \
            "deadlock at 1.2 ms" "case gpt3.fc1.tp32 skipped: no ok sequential row"; do
  expect "$md" "$text"
done

csv="$out/t3_summary.csv"
expect "$csv" "kind,case,num_gpus,sequential_ms,"
expect "$csv" "case,megagpt2.fc2.tp8,8,3.000000,1.500000,0.800000,0.700000,2.000000,1.5000,"
expect "$csv" "mean,megagpt2-tnlg,"
[ "$(grep -c '^case,' "$csv")" -eq 2 ] || fail "t3_summary.csv should have 2 case rows"

for png in fig16_speedup.png fig18_dram.png; do
  [ -s "$out/$png" ] || fail "$png missing or empty"
  head -c 8 "$out/$png" | grep -q PNG || fail "$png is not a PNG"
done

# A sweep without ideal-rs-nmc must still report (n/a), not crash.
grep -v ideal-rs-nmc "$tmp/sweep.csv" > "$tmp/no_nmc.csv"
"$python" "$script" "$tmp/no_nmc.csv" -o "$tmp/no_nmc" 2>/dev/null || fail "sweep without ideal-rs-nmc failed"
expect "$tmp/no_nmc/t3_results.md" "n/a"

# Bad input: exit 2, one line naming the problem, nothing written.
bad_exit() {  # bad_exit CSV TEXT
  local rc=0
  "$python" "$script" "$1" -o "$tmp/bad" 2>"$tmp/bad_stderr" || rc=$?
  [ "$rc" -eq 2 ] || fail "$(basename "$1"): exit $rc, expected 2"
  [ "$(wc -l < "$tmp/bad_stderr")" -eq 1 ] || fail "$(basename "$1"): stderr is not one line"
  expect "$tmp/bad_stderr" "$2"
  [ ! -e "$tmp/bad" ] || fail "$(basename "$1"): OUTDIR was written"
}
cut -d, -f1-9,11- "$tmp/sweep.csv" > "$tmp/no_time.csv"   # drops time_ps (column 10)
head -1 "$tmp/no_time.csv" | grep -q ',gemm_ps,' || fail "no_time.csv built wrong"
bad_exit "$tmp/no_time.csv" "time_ps"
bad_exit "$tmp/missing.csv" "cannot read"
{ echo "$header"; tail -1 "$tmp/sweep.csv"; } > "$tmp/no_ok.csv"
bad_exit "$tmp/no_ok.csv" "no ok rows"

echo "t3_report_test: all checks passed"
