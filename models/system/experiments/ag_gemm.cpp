// kind: ag_gemm — the consumer all-gather + GEMM of seed 001 on every GPU of a node
// (models/system/overlap/ops/ag_gemm.cpp), under sequential, fused or ideal-overlap.
//
//   kind: ag_gemm
//   gemm: {m: 8192, n: 11008, k: 4096}  # A: M x K gathered; N split over the GPUs; plus kind gemm's kernel keys
//   chunk_rows: 256                     # rows per copy and signal
//   streams: 0                          # copy-engine streams (0: one per GPU)
//   order: comm-aware                   # fused GEMM's rows: comm-aware (own first, as copies land) | oblivious
//   launch_order: copies-first          # host: copies-first (the library's) | gemm-first
//   grid: 0                             # persistent WGs (0: one per CU)
//   collective: {channels: 0, functional: auto, values_limit: 16MiB}  # the CU all-gather (sequential)

#include <fmt/format.h>

#include "models/system/experiment.h"
#include "models/system/gemm_system.h"
#include "models/system/overlap/ops.h"
#include "models/system/sublayer_system.h"  // read_channel_pipeline
#include "sim/config.h"
#include "sim/error.h"

namespace t3sim {
namespace {

AgGemmSpec read_ag_gemm_spec(ConfigNode workload, const NodeConfig& node, std::uint64_t seed) {
  AgGemmSpec spec;
  const GpuConfig& gpu = node.gpu;
  ConfigNode gemm = workload.child("gemm");
  ConfigNode coll = workload.child("collective");
  for (const char* key : {"trace", "preset", "cus"}) {
    if (gemm.has(key))
      gemm.fail(key, "the all-gather + GEMM's GEMM is generated from m, n, k (n: all GPUs' columns), on every CU");
  }
  const std::uint64_t m = gemm.get_uint("m", 1, 1ULL << 32, Required{});
  const std::uint64_t n = gemm.get_uint("n", 1, 1ULL << 32, Required{});
  const std::uint64_t k = gemm.get_uint("k", 1, 1ULL << 32, Required{});
  if (n % node.num_gpus != 0)
    gemm.fail("n", fmt::format("each of the {} GPUs computes N / {} columns (seed 001's local_N), and {} is not a "
                               "multiple of {}",
                               node.num_gpus, node.num_gpus, n, node.num_gpus));
  if (m % node.num_gpus != 0)
    gemm.fail("m", fmt::format("each of the {} GPUs holds M / {} rows of A, and {} is not a multiple of {}",
                               node.num_gpus, node.num_gpus, m, node.num_gpus));
  const GemmShape shape{m, n / node.num_gpus, k};
  GemmWorkload wl = read_gemm_workload(gemm, gpu, &shape);
  spec.gemm = *wl.params;
  // The weight is [local_N, K] (the tutorial's weight, used transposed): B stored N x K.
  spec.gemm.b_layout = MatrixLayout::kColumnMajor;

  spec.chunk_rows = workload.get_uint("chunk_rows", 256, 1, 1ULL << 32);
  spec.streams = static_cast<std::uint32_t>(workload.get_uint("streams", 0, 0, 1024));
  spec.swizzle = workload.get_enum("order", "comm-aware", {"comm-aware", "oblivious"}) == "comm-aware";
  spec.copies_first =
      workload.get_enum("launch_order", "copies-first", {"copies-first", "gemm-first"}) == "copies-first";
  spec.grid = static_cast<std::uint32_t>(workload.get_uint("grid", 0, 0, 65535));
  try {
    validate_ag_gemm(spec, node.num_gpus);
  } catch (const UserError& e) {
    workload.fail("chunk_rows", e.what());
  }

  const std::uint32_t granule = gpu.memory.hbm.value_granule;
  spec.ag = read_overlap_collective(coll, node, CollectiveKind::named("ring-ag"), m * k * spec.gemm.dtype_bytes, spec.gemm.dtype_bytes,
                                       m * k * spec.gemm.dtype_bytes % (std::uint64_t{node.num_gpus} * granule) == 0 &&
                                           spec.chunk_rows * k * spec.gemm.dtype_bytes % granule == 0,
                                       "A's rows and chunks", seed);
  workload.finish();
  return spec;
}

std::unique_ptr<Experiment> make_ag_gemm_experiment(Simulator& sim, ConfigNode system, ConfigNode workload,
                                                    const RunOptions& run) {
  const std::string configuration = overlap_configuration(run, "ag_gemm");
  NodeConfig node = read_node_config(system, run.mode);
  node.partitioned = true;
  const AgGemmSpec spec = read_ag_gemm_spec(workload, node, run.seed);
  check_overlap_host_memory(run, node, spec.ag, /*value_copies=*/3, "workload.gemm.m", "the consumer GEMM's tiles",
                            gemm_tiles_m(spec.gemm) * gemm_tiles_n(spec.gemm));
  return make_overlap_experiment(sim, node, ag_gemm_op(spec), configuration, run, system, workload,
                                 gemm_access_bytes(spec.gemm), spec.ag);
}

}  // namespace

T3SIM_REGISTER(workload_kinds, "ag_gemm",
               "the consumer all-gather + GEMM on every GPU of a node: sequential, fused (copy-engine chunks with "
               "signals beside a persistent GEMM) or ideal-overlap (seed 001)",
               make_ag_gemm_experiment)

}  // namespace t3sim
