#pragma once
// The consumer side of an all-gather + GEMM (../shared/seeds/001, Triton-distributed's
// AMD tutorial "Overlapping AllGather GEMM"): a persistent GEMM whose tiles wait for
// the all-gather's chunks they read.
//
// C[M x N] = A[M x K] x B: A is all-gathered, GPU r holding rows [r x M/N_gpus,
// (r + 1) x M/N_gpus) and receiving the others' in chunks of `chunk_rows` rows, each
// chunk followed by a signal (a flag). Per GPU g:
//
//   - a grid of persistent WGs (seed 001: one per CU) takes the output tiles
//     round-robin (WG w: tiles w, w + grid, ...) in the GEMM's own tile order, with
//     the tile rows swizzled (`swizzle`, the tutorial's default) so that they go chunk
//     0 of every GPU, starting with g's own, then chunk 1 of every GPU, ...: the order
//     the copy engines deliver them in, own rows first (nothing to wait for);
//   - before a tile whose rows another GPU sent, the WG waits for that chunk's flag
//     (acquire), then runs the GEMM's K loop and stores its tile.
//
// Flags: flag_base + d x chunks_per_gpu + c for chunk c of the GPU at ring distance
// d = (source - g) mod N_gpus, so every GPU waits on the same ids (homogeneous mode
// mirrors the signals).
//
// Simplifications: a tile's store is the whole WG's (the GEMM's per-WF stores are not
// kept); a WG waiting on a flag holds its slot.

#include <cstdint>
#include <vector>

#include "trace/gemm.h"
#include "trace/trace.h"

namespace t3sim {

struct ConsumerGemmParams {
  GemmParams gemm;               // M: all GPUs' rows; row-major A (the gathered buffer)
  std::uint32_t num_gpus = 0;
  std::uint32_t gpu = 0;
  std::uint32_t grid = 0;        // persistent WGs
  std::uint64_t chunk_rows = 256;  // rows per signalled chunk (a multiple of tile_m)
  bool swizzle = true;           // rows in delivery order, own first; false: the GEMM's order
  std::uint64_t flag_base = 0;
};

// Throws UserError for shapes the consumer cannot cut (A not row-major, M not a
// multiple of the GPU count, a GPU's rows not whole chunks, chunks not whole tiles).
void validate_consumer_gemm(const ConsumerGemmParams& p);
std::uint64_t consumer_chunks_per_gpu(const ConsumerGemmParams& p);
// The flag GPU p.gpu waits on for chunk c of GPU `source` (the id a signal sets).
std::uint64_t consumer_chunk_flag(const ConsumerGemmParams& p, std::uint32_t source, std::uint64_t chunk);
// The output tiles (gemm_tile_order numbering) in the order the persistent WGs take them.
std::vector<std::uint64_t> consumer_tile_order(const ConsumerGemmParams& p);
KernelTrace make_consumer_gemm_trace(const ConsumerGemmParams& p);

}  // namespace t3sim
