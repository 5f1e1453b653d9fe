#pragma once
// A GEMM fused with the reduce-scatter of its output in one persistent kernel, as a
// software alternative to T3 (../shared/seeds/000 §III-B's zero-copy fused kernels,
// applied to T3's sub-layers): the kernel's own WGs send their finished output to the
// GPU that owns it with remote stores, and the owner's WGs reduce it on flags.
//
// The output C (M x N, row-major) is cut into one chunk of M / N_gpus whole rows per
// GPU (the flat chunks the CU ring all-gather then moves): chunk j belongs to GPU j.
// A *segment* is a tile's rows inside one chunk (the whole tile unless a chunk has
// fewer rows than a tile). Per GPU g:
//
//   - a grid of persistent WGs (CUs x WGs per CU, all resident at once) takes the
//     output tiles round-robin (WG w: tiles w, w + grid, ...): the tile order is
//     communication-aware (tiles owned by GPU g + 1 first, then g + 2, ..., its own
//     last: seed 000 §III, "logical WGs computing remote slices first") or the GEMM's
//     own order (oblivious);
//   - for each tile: its K loop (the GEMM's), then per segment a store, to the owner's
//     staging slot (a remote store; slot d - 1 of the owner for ring distance d =
//     owner - g mod N) or, for its own chunk, to C; then a release `set` of the
//     segment's flag at the owner (the store is acknowledged first);
//   - then the reduction of its share of the own chunk's segments (taken round-robin,
//     continuing the tile count): wait for the segment's N flags, load its local
//     partial from C and the N - 1 received ones from the staging slots, add them on
//     the vector ALUs, store the sum into C. Without reduction (`reduce: false`, the
//     all-to-all) it only waits for the segment's N - 1 received slices.
//
// Flags: flag_base + d x segments_per_chunk + s for segment s of the chunk and ring
// distance d (0: the local partial), so every GPU's are the same ids: homogeneous
// mode mirrors them when every chunk has the same segments.
//
// Simplifications: a segment's store is the whole WG's (the GEMM's per-WF stores are
// not kept); the reduction's loads and adds are ordinary WG ops, and a WG waiting on a
// flag holds its slot.

#include <cstdint>
#include <vector>

#include "trace/gemm.h"
#include "trace/trace.h"

namespace t3sim {

struct FusedGemmRsParams {
  GemmParams gemm;               // row-major C; its tile order is the oblivious order
  std::uint32_t num_gpus = 0;
  std::uint32_t gpu = 0;
  std::uint32_t grid = 0;        // persistent WGs (at most what the GPU holds at once)
  bool comm_aware = true;        // remote tiles first (seed 000 §III); false: the GEMM's order
  std::uint64_t staging_base = 0;  // N - 1 slots of one chunk each (slot d - 1: from ring distance d)
  std::uint64_t flag_base = 0;
  std::uint32_t adds_per_cycle = 128;  // element adds per CU cycle (the collectives' rate)
  // true: the reduce-scatter (the owner sums its chunk's partials). false: the
  // all-to-all (seed 000's GEMM + All-to-All, MoE combine): chunk j of every GPU's
  // output goes to GPU j and stays there, in the staging slot of its sender's ring
  // distance; the own chunk's phase only waits for the N - 1 slices to land.
  bool reduce = true;
  // With reduce: the all-reduce (seed 000's GEMV + AllReduce, two-phase direct): each
  // reduced segment is then stored into every peer's C with a flag there (flag ids
  // flag_base + (N + d) x segments_per_chunk + index for the owner at ring distance d
  // from the receiver), and every GPU waits for the other chunks' sums.
  bool all_gather = false;
  // With reduce, instead of staging: every segment, the own one included, is added into
  // its owner's C with an atomic add (a remote or local update: applied at the owner's
  // memory), then flagged; the owner only waits for its chunk's N flags. C starts at
  // zero. (The "atomically added into the owner GPU's chunk".)
  bool atomic = false;
};

// The chunks and segments of a fused GEMM + RS (the same on every GPU).
struct FusedRsLayout {
  std::uint64_t c_base = 0;
  std::uint64_t chunk_rows = 0, chunk_bytes = 0, array_bytes = 0;
  std::uint64_t segments_per_chunk = 0;  // the most any chunk has (flag ids per distance)
  bool same_segments = false;            // every chunk's segments are chunk 0's, shifted
};

// Throws UserError for a GEMM it cannot fuse (C not row-major, M not a multiple of
// the GPU count, a single GPU).
FusedRsLayout fused_rs_layout(const FusedGemmRsParams& p);
// Flag ids used: flag_base .. flag_base + fused_rs_flags_used(p) - 1.
std::uint64_t fused_rs_flags_used(const FusedGemmRsParams& p);
// Bytes of the staging slots at staging_base.
std::uint64_t fused_rs_staging_bytes(const FusedGemmRsParams& p);
// The output tiles (gemm_tile_order numbering) in the order the persistent WGs take them.
std::vector<std::uint64_t> fused_rs_tile_order(const FusedGemmRsParams& p);
// GPU p.gpu's kernel: p.grid WGs (fewer if there are fewer tasks), one program each.
KernelTrace make_fused_gemm_rs_trace(const FusedGemmRsParams& p);

}  // namespace t3sim
