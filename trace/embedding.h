#pragma once
// Embedding-bag pooling (DLRM's sparse features; ../shared/seeds/000 §III-A, Figure 8)
// and its fused all-to-all.
//
// Each of N GPUs holds T tables (model parallel) of R rows of D FP32 elements. For a
// global batch of B samples, every (sample b, table t) is a *bag*: the sum of
// `pool(b, t)` rows of table t (DLRM's random input generator: max(1, round(u x
// pooling_max)) rows, u uniform; rows uniform), one pooled vector of D elements. The
// all-to-all then gives GPU j the pooled vectors of its samples [j x B/N, (j+1) x B/N)
// from every GPU's tables (model to data parallelism).
//
// Bulk kernel (the baseline's EmbeddingBag, PyTorch's
// EmbeddingBag_updateOutputKernel_sum_mean): one WG of 4 wavefronts per bag (64 of the
// D = 256 features each), WG id = b x T + t. It reads the bag's offsets, then one row
// at a time its index and that row, adding it into a running sum on the vector ALUs
// (a dependent chain: trace/embedding.cpp), and stores the pooled vector into the
// local output [B][T][D] (chunk j = GPU j's samples, the CU all-to-all's layout). The
// input is DLRM's per-table CSR: offsets [T][B + 1], then the indices (int64) at
// index_base.
//
// Fused kernel (seed 000's scale-up zero-copy operator): a persistent grid of WGs takes
// the bags round-robin, bags of other GPUs' samples first (comm_aware: interleaved over
// the other GPUs, sample k of g + 1, of g + 2, ..., so every link is busy from the start;
// its own last; oblivious: sample order), and stores each pooled vector
// straight into its owner's receive buffer (remote store): slot d - 1 (sender at ring
// distance d) of chunk bytes, [b_local][t][D]; its own samples' into its local slot (the
// output's chunk g). At its end a WG sets, at each peer, its flag (released: after its
// stores there are acknowledged), then waits for the flags of the same-numbered WG of
// every peer: when every WG has ended, every GPU has all its samples.
//
// Indices are a hash of (table, sample shifted by g x B/N, position), so every GPU's
// bags are GPU 0's shifted by its chunk (homogeneous mode mirrors them exactly).

#include <cstdint>
#include <vector>

#include "trace/trace.h"

namespace t3sim {

struct EmbeddingParams {
  std::uint32_t num_gpus = 0;
  std::uint32_t gpu = 0;
  std::uint64_t batch = 0;         // global batch B (a multiple of num_gpus)
  std::uint32_t tables = 0;        // T per GPU
  std::uint32_t dim = 256;         // D elements per vector
  std::uint32_t elem_bytes = 4;    // FP32
  std::uint64_t rows = 100000;     // R per table
  std::uint32_t pooling_max = 10;  // rows per bag: max(1, round(u x pooling_max))
  std::uint64_t seed = 1;
  std::uint64_t table_base = 0;    // T tables of R x D, one after the other
  std::uint64_t index_base = 0;    // offsets [T][B + 1], then the indices (embedding_index_bytes)
  std::uint64_t out_base = 0;      // bulk: [B][T][D]; fused: own slot at out + g x chunk
  std::uint64_t recv_base = 0;     // fused: N - 1 slots of one chunk (slot d - 1: from distance d)
  std::uint32_t flops_per_cycle = 128;  // vector ALU adds per CU cycle
  // Fused only.
  std::uint32_t grid = 0;
  bool comm_aware = true;
  std::uint64_t flag_base = 0;     // flag_base + d x grid + w: WG w of the GPU at distance d ended
};

// Throws UserError for a batch or shape it cannot cut.
void validate_embedding(const EmbeddingParams& p);
std::uint64_t embedding_vector_bytes(const EmbeddingParams& p);
// Bytes of the offsets and indices at index_base.
std::uint64_t embedding_index_bytes(const EmbeddingParams& p);
// Bytes of one GPU's chunk of the output (B/N samples x T vectors).
std::uint64_t embedding_chunk_bytes(const EmbeddingParams& p);
// The rows of bag (b, t) on GPU p.gpu.
std::vector<std::uint64_t> embedding_bag_rows(const EmbeddingParams& p, std::uint32_t table, std::uint64_t sample);
KernelTrace make_embedding_trace(const EmbeddingParams& p);
KernelTrace make_fused_embedding_a2a_trace(const EmbeddingParams& p);
// Mean rows per bag on GPU p.gpu (the pooling factor the indices give).
double embedding_mean_pooling(const EmbeddingParams& p);

}  // namespace t3sim
