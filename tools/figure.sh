#!/usr/bin/env bash
# One command per figure of the seed papers: runs the figure's sweep(s) into OUTDIR
# (resumable: a rerun skips finished points) and plots them there (CSV, PNG, table).
#
#   tools/figure.sh FIGURE OUTDIR [t3sim sweep options, e.g. -j 2 or --set key=value]
#   tools/figure.sh --list
#
# Extra options go to every `t3sim sweep` of the figure (a `--set` fixes or overrides
# a key in each point). T3SIM names the binary (default build/t3sim).
# Exit codes: 0 done; 2 unknown figure or bad usage; otherwise the failing step's.
set -euo pipefail
cd "$(dirname "$0")/.."

# name | sweeps (space-separated, configs/sweeps/NAME.yaml) | plot | what it is
figures=(
  "seed000-fig8|embedding_a2a_mi210|overlap|seed 000 Fig. 8: embedding-bag pooling + all-to-all, 4 x MI210"
  "seed000-fig9|gemv_ar_mi210|overlap|seed 000 Fig. 9: GEMV + all-reduce, 4 x MI210"
  "seed000-fig10|gemm_a2a_mi210|overlap|seed 000 Fig. 10: GEMM + all-to-all (MoE), 4 x MI210"
  "seed000-fig13|embedding_a2a_occupancy_mi210|overlap|seed 000 Fig. 13: fused embedding time against occupancy"
  "seed000-fig14|gemm_a2a_order_mi210|overlap|seed 000 Fig. 14: communication-aware vs oblivious order (skew)"
  "seed001|ag_gemm_seed001 ag_gemm_seed001_h200|overlap|seed 001: all-gather + GEMM, MI300X- and H200-like nodes"
  "t3-fig16|t3_reproduction|t3|T3 Fig. 16 and 18 with the fused bar (tools/reproduce_t3.sh)"
  "seed003-fig5|c3_fig5_gemm c3_fig5_collectives|c3-fig5|seed 003 Fig. 5: GEMM and collective slowdown against CUs"
  "seed003-fig8|c3_table2 c3_table2_partition c3_table2_conccl c3_table2_conccl_rp|c3-table2|seed 003 Fig. 8, 10 and the fraction-of-ideal table"
  "seed003-fig9|c3_fig9|c3-fig9|seed 003 Fig. 9: DMA vs CU all-gather / all-to-all by size"
  "seed003-h200|c3_h200 c3_h200_copy_engine|c3-table2|issue 18: C3 of the Table 2 sub-layers on the H200-like node"
  "h200-collectives|collectives_h200_channels collectives_h200_sizes|collectives|issue 42: H200 ring RS / AG / AR against channels (4 GPUs, NCCL's points) and size (2 and 4 GPUs, NCCL's 2-GPU kernels)"
)

usage() { echo "usage: tools/figure.sh FIGURE OUTDIR [t3sim sweep options] | --list" >&2; exit 2; }

if [ "${1:-}" = "--list" ]; then
  for f in "${figures[@]}"; do
    IFS='|' read -r name sweeps _ what <<< "$f"
    printf '%-14s %s (sweeps: %s)\n' "$name" "$what" "$sweeps"
  done
  exit 0
fi
[ $# -ge 2 ] || usage
figure=$1 out=$2
shift 2

entry=""
for f in "${figures[@]}"; do
  [ "${f%%|*}" = "$figure" ] && entry=$f
done
if [ -z "$entry" ]; then
  echo "figure.sh: unknown figure '$figure' (tools/figure.sh --list names them)" >&2
  exit 2
fi
IFS='|' read -r name sweeps plot _ <<< "$entry"

t3sim="${T3SIM:-build/t3sim}"
py=/usr/bin/python3  # Debian's python3 has matplotlib (python3-matplotlib)
[ -x "$py" ] || py=python3
mkdir -p "$out"

if [ "$plot" = t3 ]; then
  T3SIM="$t3sim" tools/reproduce_t3.sh "$out" "$@"
  exit 0
fi

csvs=()
for s in $sweeps; do
  start=$(date +%s)
  "$t3sim" sweep "configs/sweeps/$s.yaml" -o "$out/$s.csv" "$@"
  echo "figure.sh: $s.csv ($(( $(date +%s) - start )) s)" >&2
  csvs+=("$out/$s.csv")
done

case "$plot" in
  collectives)
    # NCCL's channel curve beside the model's, where the calibration data is at hand
    # (T3SIM_CALIBRATION, default ../shared/calibration).
    measured="${T3SIM_CALIBRATION:-../shared/calibration}/h200/nccl_ring_channels_4gpu.csv"
    if [ -f "$measured" ]; then
      "$py" tools/plot_collectives.py "${csvs[0]}" -o "$out" --title "4 x H200, 96 MiB per GPU" --measured "$measured"
    else
      echo "figure.sh: no $measured: the channel curve without NCCL's points" >&2
      "$py" tools/plot_collectives.py "${csvs[0]}" -o "$out" --title "4 x H200, 96 MiB per GPU"
    fi
    # NCCL's own kernel times on two H200s (measured, in this repository: point 30).
    "$py" tools/plot_collectives.py "${csvs[1]}" -o "$out" --title "2 and 4 x H200 by size (NCCL's 2-GPU kernels as squares)" \
      --measured results/h200-measurements/nccl_sizes_2gpu.csv ;;
  overlap) "$py" tools/plot_overlap.py "${csvs[@]}" -o "$out" --name "$name" ;;
  c3-fig5) "$py" tools/plot_c3.py fig5 --gemm "${csvs[0]}" --collective "${csvs[1]}" -o "$out" ;;
  c3-fig9) "$py" tools/plot_c3.py fig9 "${csvs[0]}" -o "$out" ;;
  c3-table2)
    "$py" tools/plot_c3.py table2 "${csvs[@]}" -o "$out"
    # What CU sharing and the GEMM's waves explain of each c3 row (explain.md): the
    # GPU's CUs, its GEMM tile and the CUs the CU collective holds, per system.
    case "$figure" in
      seed003-fig8) "$py" tools/plot_c3.py explain "${csvs[@]}" -o "$out" --cus 304 --tile 256x256 --collective-cus 64 ;;
      seed003-h200) "$py" tools/plot_c3.py explain "${csvs[@]}" -o "$out" --cus 132 --tile 128x256 --collective-cus 24 ;;
    esac ;;
esac
echo "figure.sh: $figure in $out" >&2
