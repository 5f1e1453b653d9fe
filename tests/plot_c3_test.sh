#!/usr/bin/env bash
# tools/plot_c3.py on small synthetic sweep CSVs of the C3 sweeps: every figure's PNG
# and table exist, the numbers in the tables follow from the rows (slowdowns against
# the row with the most CUs, DMA / CU ratios, variants named from configuration, order
# and comm_cus, mean fraction of ideal beside the paper's), and bad input exits 2
# with one line.
# Usage: plot_c3_test.sh SOURCE_DIR
set -euo pipefail

src=${1:?usage: plot_c3_test.sh SOURCE_DIR}
script="$src/tools/plot_c3.py"

source "$(dirname "$0")/python_with_matplotlib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { grep -qF -- "$2" "$1" || fail "$(basename "$1") lacks '$2'"; }
png() { [ -s "$1" ] && head -c 8 "$1" | grep -q PNG || fail "$(basename "$1") missing or not a PNG"; }
out="$tmp/plots"

# Figure 5: GEMM time 100 at 304 CUs, 110 at 272 (n=8192); 100 flat for n=57344.
{
  echo "point,workload.n,workload.cus,status,error,time_ps,tflops"
  echo "0,8192,304,ok,,100,1"
  echo "1,8192,272,ok,,110,1"
  echo "2,57344,304,ok,,100,1"
  echo "3,57344,272,ok,,100,1"
} > "$tmp/gemm.csv"
{
  echo "point,workload.collective,workload.cus,status,error,collective,time_ps"
  echo "0,ring-ag,8,ok,,ring-ag,300"
  echo "1,ring-ag,304,ok,,ring-ag,100"
  echo "2,ring-ag,32,sim_error,boom,,"
} > "$tmp/coll.csv"
"$python" "$script" fig5 --gemm "$tmp/gemm.csv" --collective "$tmp/coll.csv" -o "$out" > /dev/null 2> "$tmp/err5" \
  || { cat "$tmp/err5" >&2; fail "fig5 failed"; }
png "$out/fig5.png"
expect "$out/fig5.md" "| GEMM n=8192 | 32 taken | 1.100 |"
expect "$out/fig5.md" "| GEMM n=57344 | 32 taken | 1.000 |"
expect "$out/fig5.md" "| collective all | 8 given | 3.000 |"
expect "$tmp/err5" "1 row(s) not ok"

# Figure 9: DMA 4x the CU time at 1 MiB, half of it at 64 MiB.
{
  echo "point,workload.collective,workload.implementation,workload.size,status,error,collective,implementation,array_bytes,time_ps"
  echo "0,ring-ag,cu,1MiB,ok,,ring-ag,cu,1048576,10000000"
  echo "1,ring-ag,dma,1MiB,ok,,ring-ag,dma,1048576,40000000"
  echo "2,ring-ag,cu,64MiB,ok,,ring-ag,cu,67108864,400000000"
  echo "3,ring-ag,dma,64MiB,ok,,ring-ag,dma,67108864,200000000"
} > "$tmp/fig9.csv"
"$python" "$script" fig9 "$tmp/fig9.csv" -o "$out" > /dev/null 2>&1 || fail "fig9 failed"
png "$out/fig9.png"
expect "$out/fig9.md" "| ring-ag | 1 MiB | 10.0 | 40.0 | 4.00 |"
expect "$out/fig9.md" "| ring-ag | 64 MiB | 400.0 | 200.0 | 0.50 |"

# Table II: two cases, every variant (from three CSVs, as the three sweeps write them);
# c3_rp takes the best of a case's reservations (caseA: 64 CUs, 1.2, over 32, 1.1).
cols="configuration,preset,gemm,collective,collective_bytes,order,comm_cus,scale,mode,num_gpus,time_ps,speedup,ideal_speedup,fraction_of_ideal,taxonomy,paper_taxonomy,gemm_slowdown,collective_slowdown"
row() {  # row POINT CONFIG ORDER COMM_CUS CASE SPEEDUP FRACTION [GEMM_SLOWDOWN COLLECTIVE_SLOWDOWN]
  echo "$1,$5,ring-ag,ok,,$2,$5,g,ring-ag,1,$3,$4,2,homogeneous,8,1,$6,1.5,$7,G-long,G-long,${8:-1},${9:-1}"
}
{
  echo "point,workload.preset,workload.collective.collective,status,error,$cols"
  row 0 c3 gemm-first 0 caseA 1.1 0.2
  row 1 c3 comm-first 0 caseA 1.2 0.4 1.25 1.0
  row 2 c3 gemm-first 0 caseB 1.0 0.0
  row 3 c3 comm-first 0 caseB 1.3 0.6 1.05 1.01
} > "$tmp/t2.csv"
{
  echo "point,workload.preset,workload.collective.collective,status,error,$cols"
  row 0 c3 gemm-first 64 caseA 1.2 0.4
  row 1 c3 gemm-first 64 caseB 1.2 0.4
  row 2 c3 gemm-first 32 caseA 1.1 0.2
} > "$tmp/t2p.csv"
{
  echo "point,workload.preset,workload.collective.collective,status,error,$cols"
  row 0 conccl gemm-first 0 caseA 1.4 0.8
  row 1 conccl gemm-first 0 caseB 1.3 0.6
} > "$tmp/t2c.csv"
"$python" "$script" table2 "$tmp/t2.csv" "$tmp/t2p.csv" "$tmp/t2c.csv" -o "$out" > "$tmp/stdout" 2>&1 \
  || { cat "$tmp/stdout" >&2; fail "table2 failed"; }
png "$out/fig8.png"
png "$out/fig10.png"
expect "$out/table2.md" "| c3_base | 2 | 10.0 | 21 | -11.0 |"
expect "$out/table2.md" "| c3_sp | 2 | 50.0 | 42 | +8.0 |"
expect "$out/table2.md" "| c3_rp | 2 | 40.0 | 42 | -2.0 |"
expect "$out/table2.md" "| conccl | 2 | 70.0 | 66 | +4.0 |"
expect "$out/table2_cases.md" "| caseA | ring-ag | 2 | G-long | G-long | 1.500 | 1.100 (20%) | 1.200 (40%) | 1.200 (40%) | 1.400 (80%) |"
# Per taxonomy: the mean fraction and each kernel's slowdown range over the cases.
expect "$out/table2_taxonomy.md" "| c3_sp | G-long | 2 | 50.0 | 1.050-1.250 | 1.000-1.010 |"
expect "$out/table2_taxonomy.md" "| c3_base | G-long | 2 | 10.0 | 1.000-1.000 | 1.000-1.000 |"
expect "$tmp/stdout" "| conccl | 2 | 70.0 | 66 | +4.0 |"
grep -q "conccl_rp" "$out/table2.md" && fail "conccl_rp shown though no row keeps CUs from the GEMM"

# ConCCL with CUs kept from the GEMM (comm_cus 8): conccl_rp is the best of a case's
# conccl rows, 0 included: caseA's 8-CU row (1.45, 90 %) beats its plain one; caseB has
# none, so its plain row (60 %) stands. conccl itself still counts the plain rows only.
cp "$tmp/t2c.csv" "$tmp/t2c_rp.csv"
row 2 conccl gemm-first 8 caseA 1.45 0.9 >> "$tmp/t2c_rp.csv"
"$python" "$script" table2 "$tmp/t2.csv" "$tmp/t2p.csv" "$tmp/t2c_rp.csv" -o "$out" > "$tmp/stdout" 2>&1 \
  || { cat "$tmp/stdout" >&2; fail "table2 with conccl_rp failed"; }
expect "$out/table2.md" "| conccl | 2 | 70.0 | 66 | +4.0 |"
expect "$out/table2.md" "| conccl_rp | 2 | 75.0 | 72 | +3.0 |"
expect "$out/table2_cases.md" "| caseA | ring-ag | 2 | G-long | G-long | 1.500 | 1.100 (20%) | 1.200 (40%) | 1.200 (40%) | 1.400 (80%) | 1.450 (90%) |"
expect "$out/table2_cases.md" "| caseB | ring-ag | 2 | G-long | G-long | 1.500 | 1.000 (0%) | 1.300 (60%) | 1.200 (40%) | 1.300 (60%) | 1.300 (60%) |"
png "$out/fig10.png"

# A configuration the paper did not run (one added to the simulator, as CONTRIBUTING.md's
# c3-priority) is a variant of its own: its rows do not fold into c3_base, and its
# summary has no paper figure.
cp "$tmp/t2.csv" "$tmp/t2_new.csv"
row 4 c3-priority comm-first 0 caseA 1.35 0.7 >> "$tmp/t2_new.csv"
"$python" "$script" table2 "$tmp/t2_new.csv" -o "$out" > "$tmp/stdout" 2>&1 \
  || { cat "$tmp/stdout" >&2; fail "table2 with a new configuration failed"; }
expect "$out/table2.md" "| c3_base | 2 | 10.0 | 21 | -11.0 |"
expect "$out/table2.md" "| c3-priority | 1 | 70.0 | - | - |"
expect "$out/table2_cases.md" "| caseA | ring-ag | 2 | G-long | G-long | 1.500 | 1.100 (20%) | 1.200 (40%) | 1.350 (70%) |"

# ConCCL against the ideal with the DMA collective: caseA's CU collective (300) is twice
# its DMA one (150) beside a GEMM of 100, so the row (time 150, speedup 400/150) is 500 %
# of the CU ideal (400/300) and 100 % of the DMA one (400/150); caseB (GEMM 300, both
# collectives 100, time 320) is 75 % of both.
{
  echo "point,workload.preset,workload.collective.collective,status,error,$cols,isolated_gemm_ps,isolated_collective_ps,isolated_dma_collective_ps"
  echo "0,caseA,ring-ag,ok,,conccl,caseA,g,ring-ag,1,gemm-first,0,2,homogeneous,8,150,2.666667,1.333333,5.0,C-long,C-long,1,1,100,300,150"
  echo "1,caseB,ring-ag,ok,,conccl,caseB,g,ring-ag,1,gemm-first,0,2,homogeneous,8,320,1.25,1.333333,0.75,G-long,G-long,1,1,300,100,100"
} > "$tmp/t2c_dma.csv"
"$python" "$script" table2 "$tmp/t2.csv" "$tmp/t2c_dma.csv" -o "$out" > "$tmp/stdout" 2>&1 \
  || { cat "$tmp/stdout" >&2; fail "table2 with the DMA ideal failed"; }
expect "$out/table2.md" "| conccl | 2 | 287.5 | 66 | +221.5 |"
expect "$out/table2.md" "| conccl (of the ideal with the DMA collective) | 2 | 87.5 | 66 | +21.5 |"

# What CU sharing and waves explain: 8 one-tile WGs on 4 CUs (tile 1x1), GEMM alone
# 200 us (2 waves of 100), collective alone 150 us on 1 CU. c3_base: the collective
# starts at the last dispatch (100): 250 predicted, 260 simulated (+5 % of the GEMM).
# c3_sp: 3 CUs, the fourth free at 150: tiles at 0, 0, 0, 100, 100, 100, 150, 200:
# 300 (simulated 300). c3_rp with 2 CUs: 4 waves, 400 predicted, 420 simulated (+10 %).
ecols="configuration,preset,gemm,collective,order,comm_cus,isolated_gemm_ps,isolated_collective_ps,gemm_ps,time_ps,gemm_slowdown,collective_slowdown,fraction_of_ideal,gemm_dram_read_bytes,gemm_dram_write_bytes,collective_dram_read_bytes,collective_dram_write_bytes"
{
  echo "point,status,error,$ecols"
  echo "0,ok,,c3,caseA,g: 8 x 1 x 1,ring-ag,gemm-first,0,200000000,150000000,200000000,260000000,1,1.7,0.2,1e6,0,0,0"
  echo "1,ok,,c3,caseA,g: 8 x 1 x 1,ring-ag,comm-first,0,200000000,150000000,300000000,300000000,1.5,1,0.4,1e6,0,0,0"
  echo "2,ok,,c3,caseA,g: 8 x 1 x 1,ring-ag,gemm-first,2,200000000,150000000,420000000,420000000,2.1,1,0.0,1e6,0,0,0"
  echo "3,ok,,conccl,caseA,g: 8 x 1 x 1,ring-ag,gemm-first,0,200000000,150000000,200000000,200000000,1,1,1,1e6,0,0,0"
} > "$tmp/explain.csv"
"$python" "$script" explain "$tmp/explain.csv" -o "$out" --cus 4 --tile 1x1 --collective-cus 1 > /dev/null 2>&1 \
  || fail "explain failed"
expect "$out/explain.md" "| caseA | ring-ag | c3_base | 2.00 | 200 | 150 | 200 | 200 | 250 | 260 | +5.0 |"
expect "$out/explain.md" "| caseA | ring-ag | c3_sp | 2.00 | 200 | 150 | 300 | 300 | 300 | 300 | +0.0 |"
expect "$out/explain.md" "| caseA | ring-ag | c3_rp | 2.00 | 200 | 150 | 400 | 420 | 400 | 420 | +10.0 |"
grep -q "conccl" "$out/explain.md" && fail "explain.md covers the conccl row"
expect "$out/explain_summary.md" "| c3_rp | 1 | +10.0 | 10.0 |"

# Bad input: exit 2 and one line on stderr.
bad_exit() {  # bad_exit TEXT ARGS...
  local text=$1 rc=0
  shift
  "$python" "$script" "$@" -o "$tmp/bad" 2> "$tmp/bad_stderr" > /dev/null || rc=$?
  [ "$rc" -eq 2 ] || fail "$*: exit $rc, expected 2"
  [ "$(wc -l < "$tmp/bad_stderr")" -eq 1 ] || fail "$*: stderr is not one line"
  expect "$tmp/bad_stderr" "$text"
}
bad_exit "cannot read" fig9 "$tmp/missing.csv"
bad_exit "missing column(s) configuration, preset, order" table2 "$tmp/fig9.csv"
head -1 "$tmp/coll.csv" > "$tmp/no_ok.csv"; tail -1 "$tmp/coll.csv" >> "$tmp/no_ok.csv"
bad_exit "no ok rows" fig5 --gemm "$tmp/gemm.csv" --collective "$tmp/no_ok.csv"
bad_exit "--tile: expected MxN" explain "$tmp/explain.csv" --tile 256
{ head -1 "$tmp/explain.csv"; tail -1 "$tmp/explain.csv"; } > "$tmp/conccl_only.csv"
bad_exit "no ok c3 rows" explain "$tmp/conccl_only.csv"

# The scripts' shared module reads the registered names from `t3sim list --json`
# (tools/t3sim_tools.py): the C3 configurations, c3-priority among them; a missing
# binary or an unknown family is one line on stderr and exit 2.
if [ -n "${2:-}" ]; then
  names_of() {  # names_of FAMILY
    "$python" -c "import sys; sys.path.insert(0, '$src/tools'); import t3sim_tools as t; print(','.join(t.configuration_names('$1')))"
  }
  names=$(T3SIM="$2" names_of c3) || fail "configuration_names('c3') failed"
  [ "$names" = "c3,c3-priority,conccl,ideal,sequential" ] || fail "configuration_names('c3') gave '$names'"
  rc=0
  T3SIM="$tmp/no-such-t3sim" names_of c3 > /dev/null 2> "$tmp/bad_stderr" || rc=$?
  [ "$rc" -eq 2 ] || fail "a missing binary: exit $rc, expected 2"
  expect "$tmp/bad_stderr" "no such program"
  rc=0
  T3SIM="$2" names_of c4 > /dev/null 2> "$tmp/bad_stderr" || rc=$?
  [ "$rc" -eq 2 ] || fail "an unknown family: exit $rc, expected 2"
  expect "$tmp/bad_stderr" "t3sim lists no 'c4' configurations"
fi

echo "plot_c3_test: all checks passed"
