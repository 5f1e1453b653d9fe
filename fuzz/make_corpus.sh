#!/usr/bin/env bash
# Assemble the fuzz targets' seed corpora from the shipped configs/ and traces/
# (fuzz/README.md). Nothing here is committed: the corpora are rebuilt by the fuzz
# build (target fuzz_corpus) and by tools/fuzz-smoke.sh.
#
#   fuzz/make_corpus.sh SOURCE_DIR OUT_DIR [T3SIM_TRACEGEN]
#
# Writes OUT_DIR/{config,trace,sweep,validate}/ (replacing them). Inputs are text
# cut into sections by lines starting with "#@@" (see each fuzz_<target>.cpp).
# With the tracegen binary, small generated GEMM and collective traces are added.
set -euo pipefail

src=${1:?usage: make_corpus.sh SOURCE_DIR OUT_DIR [T3SIM_TRACEGEN]}
out=${2:?usage: make_corpus.sh SOURCE_DIR OUT_DIR [T3SIM_TRACEGEN]}
tracegen=${3:-}
cfg=$src/configs

for t in config trace sweep validate; do
  rm -rf "${out:?}/$t"
  mkdir -p "$out/$t"
done

# seed TARGET: stdin becomes one seed file of TARGET's corpus, named by its SHA-1
# as libFuzzer names inputs (identical seeds collapse). Runs in pipelines: no state.
seed() {
  local tmp
  tmp=$(mktemp "$out/$1/.seed.XXXXXX")
  cat > "$tmp"
  mv "$tmp" "$out/$1/$(sha1sum < "$tmp" | cut -c1-40)"
}
sep() { printf '#@@\n'; }

# --- config: a file as configs/systems/fuzz.yaml [#@@ base] [#@@ inc/] [#@@ --sets]
for f in "$cfg"/systems/*.yaml "$cfg"/workloads/*.yaml "$cfg"/workloads/*/*.yaml "$cfg"/examples/*.yaml \
         "$cfg"/sweeps/*.yaml "$src"/tests/data/config/*.yaml "$src"/tests/data/config/inherit/*.yaml \
         "$src"/tests/data/config/inherit/sub/*.yaml; do
  seed config < "$f"
done
# Memory presets, pulled into a section as the systems do.
for f in "$cfg"/memory/*.yaml; do
  printf 'memory:\n  hbm:\n    base: ../memory/%s\n    refresh: false\n' "$(basename "$f")" | seed config
  { printf 'memory:\n  hbm:\n    base: fuzz_base.yaml\n'; sep; cat "$f"; } | seed config
done
# A base chain through all three files, then a cycle, then overrides.
{ printf 'base: fuzz_base.yaml\nnum_gpus: 4\n'; sep; printf 'base: inc/fuzz_inc.yaml\nnet: {bandwidth: 100GB/s}\n';
  sep; printf 'base: ../table1.yaml\ngpu:\n  num_cus: 40\n'; } | seed config
{ printf 'base: fuzz_base.yaml\n'; sep; printf 'base: inc/fuzz_inc.yaml\n'; sep; printf 'base: ../fuzz.yaml\n'; } | seed config
{ printf 'base: [fuzz_base.yaml, inc/fuzz_inc.yaml]\nnum_gpus: 2\n'; sep; printf 'a: {b: 1}\n'; sep;
  printf 'a: {c: 2}\nlist: [1, 2]\n'; } | seed config
{ cat "$cfg"/systems/table1.yaml; sep; sep; sep;
  printf 'system.num_gpus=16\nsystem.net.bandwidth=100GB/s\nsystem.memory.l2.size=[1MiB,2MiB]\n'
  printf 'system.gpu.cu.clock=1.5GHz\nsystem.memory.hbm.tRCD=14\nsystem.new.key={a: 1, b: [x, y]}\n'; } | seed config
{ printf 'times: [500ns, 1.5us, 2ms, 100ps, 1s, 0.5ns]\nfreq: [1.4GHz, 800MHz, 1000]\n'
  printf 'bw: [75GB/s, 1TB/s, 900MiB/s, 100Gb/s, 100Gbps]\nsizes: [16MiB, 4KB, 192MB, 64, 1TiB]\n'
  printf 'flags: {a: true, b: false}\nint: -5\ndouble: 0.25\nempty:\nquoted: "x: y"\n'; } | seed config

# --- trace: the shipped traces, and small generated ones
for f in "$src"/traces/*.trace; do seed trace < "$f"; done
if [ -n "$tracegen" ] && [ -x "$tracegen" ]; then
  tg() { "$tracegen" "$@" -o - 2>/dev/null | seed trace || true; }
  tg --m 300 --n 200 --k 100 --tile 128x128 --k-step 64 --order grouped --group 2
  tg --m 256 --n 256 --k 64 --store uncached,update --peer 1 --stagger 1 --wf-grid 2x2
  tg --m 128 --n 384 --k 96 --a-layout column-major --b-layout column-major --c-layout column-major
  for kind in ring-rs ring-ag direct-rs direct-ag all-to-all; do
    tg --collective "$kind" --gpus 4 --gpu 1 --array-bytes 64KiB --channels 2 --step-bytes 2KiB
  done
  tg --collective ring-ar --gpus 4 --gpu 0 --array-bytes 64KiB --channels 2 --step-bytes 2KiB --data-uncached
fi
printf 't3trace 1\nkernel edge\nresources wfs=2 threads=128\nparams a n\nprogram p\n  loop i n\n    loop j i+1\n      load a+64*i+8*j 8 rows=2 stride=0x40 wf=j-j\n    end\n  end\n  set 3 1 peer=1 wf=1\n  wait 3 n\nend\nwgs 2\nwg 0 p 0 3\nwg 1 p 4096 0\n' | seed trace

# --- sweep: a sweep file as configs/sweeps/fuzz.yaml [#@@ base] [#@@ --sets] [#@@ CSV] [#@@ shard]
for f in "$cfg"/sweeps/*.yaml; do seed sweep < "$f"; done
csv='point,system.num_gpus,workload.size,status,error,time_us,bus_bw
0,2,1MiB,ok,,12.5,70.1
1,2,16MiB,user_error,"system.x: unknown key, ""quoted""",,
2,4,"[1, 2]",sim_error,"multi
line",,
3,4,16MiB,ok,,20,71
4,8,1MiB,o'
{ cat "$cfg"/sweeps/ring_scaling.yaml; sep; sep; printf 'system.num_gpus=[2,4]\nworkload.size=16MiB\nrun.seed=[1,2,3]\n';
  sep; printf '%s' "$csv"; printf '\n'; sep; printf '1/4\n'; } | seed sweep
{ printf 'base: fuzz_base.yaml\nparameters:\n  system.num_gpus: [2, 4]\n'; sep; cat "$cfg"/sweeps/rs_sizes.yaml; } | seed sweep
{ sep; sep; printf 'system.num_gpus=[2,4,8]\nworkload.size=["1MiB", "a, b", "x: y", "#c", {k: v}, [1, 2], ~]\n'
  printf 'run.config=[sequential, t3]\nrun.mode=homogeneous\n'; } | seed sweep
{ printf 'system: ../systems/ring8.yaml\nworkload: ../workloads/ring_rs.yaml\nparameters:\n'
  printf '  workload.size: [1MiB, 2MiB]\n  run.seed: [1, 2]\nset: [system.net.latency=1us, run.config=t3]\n'; } | seed sweep

# --- validate: [#! system=NAME workload=NAME] system #@@ workload [#@@ trace] [#@@ --sets]
# Building a whole node under ASan takes 0.3 s (Table 1) to 5 s (MI300X) a run, so
# each shipped system is a seed once, verbatim, and every workload runs on a shrunk
# Table 1 or MI300X (4 GPUs of 8 CUs, a 1 MiB L2: 20-50 runs/s); mutations grow them.
cat "$cfg"/systems/ring8.yaml | { cat; sep; cat "$cfg"/workloads/ring_rs.yaml; } | seed validate
cat "$cfg"/systems/ring16.yaml | { cat; sep; cat "$cfg"/workloads/ring_ar.yaml; } | seed validate
cat "$cfg"/systems/table1.yaml | { cat; sep; cat "$cfg"/workloads/gemm/small.yaml; } | seed validate
cat "$cfg"/systems/table1_2xcu.yaml | { cat; sep; cat "$cfg"/workloads/memory/stream_read.yaml; } | seed validate
cat "$cfg"/systems/mi300x.yaml | { cat; sep; cat "$cfg"/workloads/collectives/dma_all_gather.yaml; } | seed validate
cat "$cfg"/systems/h200.yaml | { cat; sep; cat "$cfg"/workloads/collectives/ring_rs.yaml; } | seed validate
small='num_gpus: 4
gpu: {num_cus: 8}
memory: {l2: {size: 1MiB, banks: 8}, hbm: {channels: 8}}'
for w in "$cfg"/workloads/*.yaml "$cfg"/workloads/*/*.yaml; do
  name=${w#"$cfg"/workloads/}
  name=${name%.yaml}
  delta=''
  case $name in ring_* | collectives/*) delta='size: 1MB' ;; esac
  for s in table1 mi300x; do
    { printf '#! system=%s workload=%s\n%s\n' "$s" "$name" "$small"; sep; printf '%s\n' "$delta"; } | seed validate
  done
  { printf '#! system=h200\n%s\n' "$small"; sep; cat "$w"; sep; sep; printf 'run.mode=homogeneous\n'; } | seed validate
done
{ printf '#! system=table1 workload=gemm/small\n'; printf 'gpu:\n  num_cus: 8\n'; sep; printf 'm: 256\nn: 512\n'; } | seed validate
{ printf '#! system=table1 workload=gemm/tnlg_fc2_tp8\n'; printf 'num_gpus: 4\n'; sep; printf 'preset: tnlg.op.tp8\n'; sep; sep;
  printf 'run.config=t3\nrun.mode=homogeneous\n'; } | seed validate
{ printf '#! system=mi300x workload=collectives/ring_rs\n'; printf 'net: {topology: switch}\n'; sep; printf 'size: 1MB\n'; } | seed validate
{ printf '#! system=h200 workload=memory/contention\n'; sep; printf 'generators:\n  - {name: g, stream: compute, op: write, request_size: 128B, footprint: 1MiB, requests: 100}\n'; } | seed validate
{ printf '#! system=ring16 workload=ring_ar\n'; printf 'num_gpus: 3\n'; sep; printf 'size: 96KiB\n'; sep; sep;
  printf 'workload.functional=values\nsystem.net.latency=1us\n'; } | seed validate
for t in "$src"/traces/*.trace; do
  { printf '#! system=table1\n'; sep; printf 'kind: gemm\ntrace: $SCRATCH/fuzz.trace\n'; sep; cat "$t"; } | seed validate
done
{ cat "$cfg"/systems/table1.yaml; sep; printf 'kind: gemm\ntrace: $SCRATCH/traces/gemm_512x512x512.trace\ncus: 4\n'; } | seed validate
for c in sequential t3 t3-mca ideal-overlap ideal-rs-nmc; do
  { printf '#! system=table1_2xcu workload=gemm/small\n'; sep; sep; sep; printf 'run.config=%s\nsystem.num_gpus=4\n' "$c"; } | seed validate
done

for t in config trace sweep validate; do
  echo "make_corpus: $t: $(find "$out/$t" -type f | wc -l) seeds" >&2
done
