// kind: gemm_a2a — seed 000's GEMM + all-to-all (MoE combine) on every GPU of a node
// (models/system/overlap/ops/gemm_a2a.cpp), under sequential, fused or ideal-overlap.
//
//   kind: gemm_a2a
//   gemm: {m: 8192, n: 4096, k: 14336}  # an expert's tokens x hidden x FFN; row block j returns to GPU j
//   order: comm-aware                   # fused tiles: comm-aware (remote owners first) | oblivious
//   grid: 0                             # persistent WGs (0: CUs x occupancy)
//   collective: {channels: 0, functional: auto, values_limit: 16MiB}  # the CU all-to-all (sequential)

#include <fmt/format.h>

#include "models/system/experiment.h"
#include "models/system/gemm_system.h"
#include "models/system/overlap/ops.h"
#include "models/system/sublayer_system.h"  // read_channel_pipeline
#include "sim/config.h"
#include "sim/error.h"

namespace t3sim {
namespace {

GemmA2aSpec read_gemm_a2a_spec(ConfigNode workload, const NodeConfig& node, std::uint64_t seed) {
  GemmA2aSpec spec;
  const GpuConfig& gpu = node.gpu;
  ConfigNode gemm = workload.child("gemm");
  ConfigNode coll = workload.child("collective");
  for (const char* key : {"trace", "preset", "cus"}) {
    if (gemm.has(key)) gemm.fail(key, "the GEMM + all-to-all's GEMM is generated from m, n, k, on every CU");
  }
  const GemmShape shape{gemm.get_uint("m", 1, 1ULL << 32, Required{}), gemm.get_uint("n", 1, 1ULL << 32, Required{}),
                        gemm.get_uint("k", 1, 1ULL << 32, Required{})};
  if (shape.m % node.num_gpus != 0)
    gemm.fail("m", fmt::format("the all-to-all returns M / {} rows to each of the {} GPUs, and {} is not a multiple "
                               "of {}",
                               node.num_gpus, node.num_gpus, shape.m, node.num_gpus));
  spec.gemm = *read_gemm_workload(gemm, gpu, &shape).params;
  spec.comm_aware = workload.get_enum("order", "comm-aware", {"comm-aware", "oblivious"}) == "comm-aware";
  spec.grid = static_cast<std::uint32_t>(workload.get_uint("grid", 0, 0, 65535));
  try {
    validate_gemm_a2a(spec, node.num_gpus);
  } catch (const UserError& e) {
    gemm.fail("m", e.what());
  }
  if (node.mode == NetMode::kHomogeneous && !spec.comm_aware)
    workload.fail("order", "homogeneous mode mirrors GPU 0's schedule onto its peers, but in the oblivious order every "
                           "GPU computes the same rows first (not GPU 0's order shifted); use --mode full or order: "
                           "comm-aware");
  if (node.mode == NetMode::kHomogeneous && (shape.m / node.num_gpus) % spec.gemm.tile_m != 0)
    gemm.fail("m", fmt::format("homogeneous mode mirrors the all-to-all chunk by chunk, but the {} rows per GPU cut "
                               "the {}-row tiles differently from chunk to chunk; use --mode full",
                               shape.m / node.num_gpus, spec.gemm.tile_m));

  const std::uint32_t granule = gpu.memory.hbm.value_granule;
  // The all-to-all moves the output itself: it must be whole value granules (issue 45,
  // D6: a tiny output was blamed on collective.size, a key this kind does not have).
  if (shape.m * shape.n * spec.gemm.dtype_bytes % granule != 0)
    gemm.fail("n", fmt::format("the all-to-all moves the {} x {} output of {} B, not a whole number of {}-byte value "
                               "granules (system.memory.hbm.value_granule)",
                               shape.m, shape.n, shape.m * shape.n * spec.gemm.dtype_bytes, granule));
  spec.a2a = read_overlap_collective(coll, node, CollectiveKind::named("all-to-all"), shape.m * shape.n * spec.gemm.dtype_bytes, spec.gemm.dtype_bytes,
                                       shape.m * shape.n * spec.gemm.dtype_bytes % (std::uint64_t{node.num_gpus} * granule) == 0 &&
                                           (shape.n * spec.gemm.dtype_bytes) % granule == 0 &&
                                           (std::uint64_t{spec.gemm.tile_n} * spec.gemm.dtype_bytes) % granule == 0,
                                       "the output's rows, tiles and chunks", seed);
  workload.finish();
  return spec;
}

std::unique_ptr<Experiment> make_gemm_a2a_experiment(Simulator& sim, ConfigNode system, ConfigNode workload,
                                                     const RunOptions& run) {
  const std::string configuration = overlap_configuration(run, "gemm_a2a");
  NodeConfig node = read_node_config(system, run.mode);
  // Its kernels write their L2's dirty lines back at kernel boundaries (the fused
  // kernel's, the sequential baseline's): the ideal memory has no L2 (issue 45, D1).
  if (node.gpu.memory.model == MemoryModel::kIdeal)
    system.child("memory").fail("model", "kind gemm_a2a runs on the memory hierarchy (its kernels write back the L2 "
                                         "at their ends): it needs model: hbm, not ideal");
  node.partitioned = true;
  const GemmA2aSpec spec = read_gemm_a2a_spec(workload, node, run.seed);
  check_overlap_host_memory(run, node, spec.a2a, /*value_copies=*/4, "workload.gemm.m", "the fused kernel's tiles",
                            gemm_tiles_m(spec.gemm) * gemm_tiles_n(spec.gemm));
  return make_overlap_experiment(sim, node, gemm_a2a_op(spec), configuration, run, system, workload,
                                 gemm_access_bytes(spec.gemm), spec.a2a);
}

}  // namespace

T3SIM_REGISTER(workload_kinds, "gemm_a2a",
               "a GEMM whose output rows return to their GPUs with an all-to-all (MoE combine): sequential, fused "
               "(remote stores + flags from the GEMM's WGs) or ideal-overlap (seed 000)",
               make_gemm_a2a_experiment)

}  // namespace t3sim
