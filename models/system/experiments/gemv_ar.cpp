// kind: gemv_ar — seed 000's GEMV + all-reduce (tensor-parallel decode) on every GPU of a
// node (models/system/overlap/ops/gemv_ar.cpp), under sequential, fused or
// ideal-overlap.
//
//   kind: gemv_ar
//   gemv: {m: 8192, k: 8192}   # y[M] = A[M x K] x, K this GPU's share; plus its kernel:
//                              # tile_m (rows of y per WG), k_step, flops_per_cycle (vector ALUs)
//   order: comm-aware          # fused tiles: comm-aware (other GPUs' chunks first) | oblivious
//   grid: 0                    # persistent WGs (0: CUs x occupancy)
//   collective: {channels: 0, functional: auto, values_limit: 16MiB}  # the CU all-reduce (sequential)

#include <fmt/format.h>

#include "models/system/experiment.h"
#include "models/system/gemm_system.h"
#include "models/system/overlap/ops.h"
#include "models/system/sublayer_system.h"  // read_channel_pipeline
#include "sim/config.h"
#include "sim/error.h"

namespace t3sim {
namespace {

GemvArSpec read_gemv_ar_spec(ConfigNode workload, const NodeConfig& node, std::uint64_t seed) {
  GemvArSpec spec;
  const GpuConfig& gpu = node.gpu;
  ConfigNode gemv = workload.child("gemv");
  ConfigNode coll = workload.child("collective");
  const std::uint64_t m = gemv.get_uint("m", 1, 1ULL << 32, Required{});
  const std::uint64_t k = gemv.get_uint("k", 1, 1ULL << 32, Required{});
  // A GEMV WG: 16 rows of y (one 32-byte store), K in steps of 512 (1 KiB of each row).
  const auto tile_m = static_cast<std::uint32_t>(gemv.get_uint("tile_m", 16, 1, 4096));
  const auto k_step = static_cast<std::uint32_t>(gemv.get_uint("k_step", 512, 1, 1u << 20));
  // FP32-accumulated FMAs on the vector ALUs: 64 lanes x 2 flops per CU cycle (CDNA 2:
  // 4 SIMD16 units; MI210's 22.6 TFLOP/s FP32 vector peak = 104 CUs x 1.7 GHz x 128).
  const auto flops = static_cast<std::uint32_t>(gemv.get_uint("flops_per_cycle", 128, 1, 1u << 20));
  gemv.finish();
  if (m % node.num_gpus != 0)
    gemv.fail("m", fmt::format("the all-reduce gives each of the {} GPUs M / {} elements of y to reduce, and {} is "
                               "not a multiple of {}",
                               node.num_gpus, node.num_gpus, m, node.num_gpus));
  spec.gemv = gemv_params(m, k, tile_m, k_step, flops, gpu.gemm.wave_size);
  try {
    validate_gemv_ar(spec, node.num_gpus);
  } catch (const UserError& e) {
    gemv.fail("tile_m", e.what());
  }
  spec.comm_aware = workload.get_enum("order", "comm-aware", {"comm-aware", "oblivious"}) == "comm-aware";
  spec.grid = static_cast<std::uint32_t>(workload.get_uint("grid", 0, 0, 65535));
  if (node.mode == NetMode::kHomogeneous && !spec.comm_aware)
    workload.fail("order", "homogeneous mode mirrors GPU 0's schedule onto its peers, but in the oblivious order every "
                           "GPU computes the same tiles first (not GPU 0's order shifted); use --mode full or order: "
                           "comm-aware");
  if (node.mode == NetMode::kHomogeneous && (m / node.num_gpus) % tile_m != 0)
    gemv.fail("tile_m", fmt::format("homogeneous mode mirrors the all-reduce chunk by chunk, but the {} elements per "
                                    "GPU cut the {}-row tiles differently from chunk to chunk; use --mode full",
                                    m / node.num_gpus, tile_m));

  const std::uint32_t granule = gpu.memory.hbm.value_granule;
  spec.ar = read_overlap_collective(coll, node, CollectiveKind::named("ring-ar"), m * spec.gemv.dtype_bytes, spec.gemv.dtype_bytes,
                                       m * spec.gemv.dtype_bytes % (std::uint64_t{node.num_gpus} * granule) == 0 &&
                                           (std::uint64_t{tile_m} * spec.gemv.dtype_bytes) % granule == 0,
                                       "y's chunks and tiles", seed);
  workload.finish();
  return spec;
}

std::unique_ptr<Experiment> make_gemv_ar_experiment(Simulator& sim, ConfigNode system, ConfigNode workload,
                                                    const RunOptions& run) {
  const std::string configuration = overlap_configuration(run, "gemv_ar");
  NodeConfig node = read_node_config(system, run.mode);
  // Its kernels write their L2's dirty lines back at kernel boundaries (the fused
  // kernel's, the sequential baseline's): the ideal memory has no L2 (issue 45, D1).
  if (node.gpu.memory.model == MemoryModel::kIdeal)
    system.child("memory").fail("model", "kind gemv_ar runs on the memory hierarchy (its kernels write back the L2 "
                                         "at their ends): it needs model: hbm, not ideal");
  node.partitioned = true;
  const GemvArSpec spec = read_gemv_ar_spec(workload, node, run.seed);
  // The all-reduced vector's values are not counted: m words, next to the tiles' 2 KiB each.
  check_overlap_host_memory(run, node, spec.ar, /*value_copies=*/0, "workload.gemv.m", "the fused kernel's tiles",
                            gemm_tiles_m(spec.gemv));
  return make_overlap_experiment(sim, node, gemv_ar_op(spec), configuration, run, system, workload,
                                 gemm_access_bytes(spec.gemv), spec.ar);
}

}  // namespace

T3SIM_REGISTER(workload_kinds, "gemv_ar",
               "a tensor-parallel GEMV whose partial vectors are all-reduced: sequential, fused (two-phase direct "
               "all-reduce by the GEMV's WGs with remote stores + flags) or ideal-overlap (seed 000)",
               make_gemv_ar_experiment)

}  // namespace t3sim
