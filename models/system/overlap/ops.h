#pragma once
// The overlap ops (overlap_system.h), one file each under ops/, each with the kind
// that reads it under models/system/experiments/:
//
//   ag_gemm   seed 001: A all-gathered, then each GPU's GEMM on its share of N
//   gemm_a2a  seed 000 Figure 10 (MoE combine): each GPU's GEMM output rows go back to
//             the GPUs their tokens came from (an all-to-all)
//   gemv_ar   seed 000 Figure 9: each GPU's partial GEMV y = A x (its share of K),
//             all-reduced (tensor-parallel decode)
//   embedding_a2a  seed 000 Figure 8: each GPU's embedding-bag pooling of its tables for
//             the whole batch, then the all-to-all to the samples' GPUs (DLRM)

#include <cstdint>
#include <string>

#include "models/collectives/node_collective.h"
#include "models/system/overlap/overlap_system.h"
#include "trace/embedding.h"
#include "trace/gemm.h"

namespace t3sim {

// ---- ag_gemm (seed 001)
struct AgGemmSpec {
  GemmParams gemm;                 // M: all GPUs' rows of A; N: this GPU's columns
  NodeCollectiveParams ag;         // the library's CU all-gather of A (sequential): channels, pipeline, values
  std::uint64_t chunk_rows = 256;  // rows per copy-engine copy and signal
  std::uint32_t streams = 0;       // copy-engine streams; 0: one per GPU (seed 001)
  bool swizzle = true;             // the consumer's tiles in delivery order, own rows first
  bool copies_first = true;        // the host submits the copies, then launches the GEMM
  std::uint32_t grid = 0;          // persistent WGs; 0: one per CU (seed 001)
};
// Throws UserError for a shape the consumer GEMM cannot cut.
void validate_ag_gemm(const AgGemmSpec& spec, std::uint32_t num_gpus);
OverlapOpFactory ag_gemm_op(const AgGemmSpec& spec);

// ---- gemm_a2a (seed 000 Figure 10)
struct GemmA2aSpec {
  GemmParams gemm;                 // M tokens x N hidden on every GPU; row block j goes to GPU j
  NodeCollectiveParams a2a;        // the library's CU all-to-all of the output (sequential)
  bool comm_aware = true;          // fused: remote tiles first (seed 000 §III)
  std::uint32_t grid = 0;          // persistent WGs; 0: CUs x occupancy
};
void validate_gemm_a2a(const GemmA2aSpec& spec, std::uint32_t num_gpus);
OverlapOpFactory gemm_a2a_op(const GemmA2aSpec& spec);

// ---- gemv_ar (seed 000 Figure 9)
struct GemvArSpec {
  // y[M] = A[M x K] x[K] as a GEMM of N = 1 (A row-major, x one column stored
  // contiguously, y contiguous): tile_m rows of y per WG, k_step of K per step, the
  // vector ALUs' flops_per_cycle.
  GemmParams gemv;
  NodeCollectiveParams ar;         // the library's CU all-reduce of y (sequential)
  bool comm_aware = true;          // fused: tiles other GPUs reduce first
  std::uint32_t grid = 0;          // persistent WGs; 0: CUs x occupancy
};
// GEMV parameters from its size and kernel shape (N = 1, x column-major).
GemmParams gemv_params(std::uint64_t m, std::uint64_t k, std::uint32_t tile_m, std::uint32_t k_step,
                       std::uint32_t flops_per_cycle, std::uint32_t wave_size);
void validate_gemv_ar(const GemvArSpec& spec, std::uint32_t num_gpus);
OverlapOpFactory gemv_ar_op(const GemvArSpec& spec);

// ---- embedding_a2a (seed 000 Figure 8)
struct EmbeddingA2aSpec {
  EmbeddingParams embedding;       // batch, tables, dim, rows, pooling_max, flops; comm_aware, grid (0: CUs x occupancy)
  NodeCollectiveParams a2a;        // the library's CU all-to-all of the pooled output (sequential)
};
OverlapOpFactory embedding_a2a_op(const EmbeddingA2aSpec& spec);

}  // namespace t3sim
