// kind: embedding_a2a — seed 000's embedding-bag pooling + all-to-all (DLRM) on every GPU
// of a node (models/system/overlap/ops/embedding_a2a.cpp), under sequential, fused or
// ideal-overlap. Cases are named {global batch | tables per GPU} as in the paper.
//
//   kind: embedding_a2a
//   batch: 1024          # global batch B (a multiple of the GPUs)
//   tables: 256          # tables per GPU
//   dim: 256             # embedding dimension (FP32 elements)
//   rows: 100000         # rows per table
//   pooling_max: 10      # rows per bag: max(1, round(u x pooling_max)), DLRM's random generator
//   order: comm-aware    # fused bags: comm-aware (other GPUs' samples first) | oblivious
//   grid: 0              # persistent WGs (0: 7/8 of CUs x the bulk kernel's occupancy, seed 000 §III-D)
//   flops_per_cycle: 128 # vector ALU adds per CU cycle
//   collective: {channels: 0, functional: auto, values_limit: 16MiB}  # the CU all-to-all (sequential)

#include <fmt/format.h>

#include "models/system/experiment.h"
#include "models/system/overlap/ops.h"
#include "sim/config.h"
#include "sim/error.h"
#include "trace/trace.h"

namespace t3sim {
namespace {

EmbeddingA2aSpec read_embedding_a2a_spec(ConfigNode workload, const NodeConfig& node, std::uint64_t seed) {
  EmbeddingA2aSpec spec;
  EmbeddingParams& e = spec.embedding;
  e.num_gpus = node.num_gpus;
  e.batch = workload.get_uint("batch", 1, 1ULL << 32, Required{});
  e.tables = static_cast<std::uint32_t>(workload.get_uint("tables", 1, 1u << 20, Required{}));
  // DLRM's embedding dimension in seed 000's scale-up runs (§IV-A: "embedding dim=256").
  e.dim = static_cast<std::uint32_t>(workload.get_uint("dim", 256, 1, 1u << 16));
  e.rows = workload.get_uint("rows", 100000, 1, 1ULL << 32);
  // DLRM's random input generator (dlrm_data_pytorch.py, --num-indices-per-lookup 10,
  // not fixed): max(1, round(u x 10)) indices per lookup, u uniform in [0, 1).
  // A bag's rows are its WG's parameters (trace/embedding.cpp: r0, r1, ... and offsets,
  // indices, out), and a trace program has at most kTraceMaxVars variables: 29 rows.
  // Larger was accepted and failed to build its trace, naming no key (issue 45, D5).
  constexpr std::uint64_t kMaxPooling = kTraceMaxVars - 3;
  const std::uint64_t pooling = workload.get_uint("pooling_max", 10, 1, 1ULL << 32);
  if (pooling > kMaxPooling)
    workload.fail("pooling_max", fmt::format("{} rows per bag: at most {} (each row of a bag is one of its trace "
                                             "program's {} variables)",
                                             pooling, kMaxPooling, kTraceMaxVars));
  e.pooling_max = static_cast<std::uint32_t>(pooling);
  // FP32 adds on the vector ALUs: 64 lanes x 2 per CU cycle (CDNA 2, MI210's 22.6
  // TFLOP/s FP32 vector peak = 104 CUs x 1.7 GHz x 128).
  e.flops_per_cycle = static_cast<std::uint32_t>(workload.get_uint("flops_per_cycle", 128, 1, 1u << 20));
  e.comm_aware = workload.get_enum("order", "comm-aware", {"comm-aware", "oblivious"}) == "comm-aware";
  e.grid = static_cast<std::uint32_t>(workload.get_uint("grid", 0, 0, 65535));
  try {
    validate_embedding(e);
  } catch (const UserError& err) {
    workload.fail("batch", err.what());
  }
  if (node.mode == NetMode::kHomogeneous && !e.comm_aware)
    workload.fail("order", "homogeneous mode mirrors GPU 0's schedule onto its peers, but in the oblivious order every "
                           "GPU pools the same samples first (not GPU 0's order shifted); use --mode full or order: "
                           "comm-aware");
  const std::uint32_t granule = node.gpu.memory.hbm.value_granule;
  const std::uint64_t v = embedding_vector_bytes(e);
  const std::uint64_t tables_bytes = std::uint64_t{e.tables} * e.rows * v;
  ConfigNode coll = workload.child("collective");
  // Values preload the tables too: auto takes them when tables and output fit the limit.
  const std::uint64_t output = e.batch * e.tables * v;
  spec.a2a = read_overlap_collective(coll, node, CollectiveKind::named("all-to-all"), output, e.elem_bytes,
                                     v % granule == 0 && output % (std::uint64_t{e.num_gpus} * granule) == 0,
                                     "the embedding vectors and chunks", seed, tables_bytes + output);
  workload.finish();
  return spec;
}

std::unique_ptr<Experiment> make_embedding_a2a_experiment(Simulator& sim, ConfigNode system, ConfigNode workload,
                                                          const RunOptions& run) {
  const std::string configuration = overlap_configuration(run, "embedding_a2a");
  NodeConfig node = read_node_config(system, run.mode);
  // Its kernels write their L2's dirty lines back at kernel boundaries (the fused
  // kernel's, the sequential baseline's): the ideal memory has no L2 (issue 45, D1).
  if (node.gpu.memory.model == MemoryModel::kIdeal)
    system.child("memory").fail("model", "kind embedding_a2a runs on the memory hierarchy (its kernels write back the L2 "
                                         "at their ends): it needs model: hbm, not ideal");
  node.partitioned = true;
  const EmbeddingA2aSpec spec = read_embedding_a2a_spec(workload, node, run.seed);
  const EmbeddingParams& e = spec.embedding;
  HostMemoryEstimate need;
  const std::uint32_t simulated = node.simulated_gpus();
  estimate_host_memory(node.gpu, simulated, need);
  // Both kernels spell out every bag: the bulk one its WG parameters, the fused one its
  // ops (~8 of ~110 B with their terms per bag).
  need.add("workload.batch", "the kernels' bags", e.batch * e.tables * simulated,
           8 * (e.pooling_max + 2) + 8 * 110);
  if (spec.a2a.values)
    need.add("workload.rows", "the tables' values", std::uint64_t{e.tables} * e.rows * simulated *
                                                        (embedding_vector_bytes(e) / node.gpu.memory.hbm.value_granule), 8);
  run.check_host_memory(need);
  // The kernels' bytes: a GPU's bags (their rows read, GPU 0's mean pooling) and its
  // pooled output.
  return make_overlap_experiment(
      sim, node, embedding_a2a_op(spec), configuration, run, system, workload,
      static_cast<double>(e.batch) * e.tables * embedding_vector_bytes(e) * (embedding_mean_pooling(e) + 1.0), spec.a2a);
}

}  // namespace

T3SIM_REGISTER(workload_kinds, "embedding_a2a",
               "DLRM's embedding-bag pooling and the all-to-all of its output: sequential, fused (pooled vectors "
               "stored straight into their owners by the pooling WGs) or ideal-overlap (seed 000)",
               make_embedding_a2a_experiment)

}  // namespace t3sim
