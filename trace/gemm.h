#pragma once
// Tiled-GEMM trace generator (a library call, so sweeps need no files on disk; the
// t3sim-tracegen tool writes the same trace to a file) and the GEMMs of the T3
// paper's Table 2 sub-layers as named presets.
//
// C[M x N] = A[M x K] * B[K x N]. Each WG computes one macro tile of C (tile_m x
// tile_n; edge tiles are partial): it loops over K in steps of k_step, loading an A
// tile and a B tile and computing 2*tm*tn*ks flops (cycles = ceil(flops /
// flops_per_cycle)), then each of its WFs stores its own sub-tile of the output.
// One program per distinct tile shape (at most four: interior, right edge, bottom
// edge, corner); each WG gives its tile's base addresses a, b, c.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace t3sim {

// kHeuristic: CUTLASS's sm90 tile scheduler raster heuristic (RasterOrderOptions::
// Heuristic): along M (column-major) when there are more tile columns than rows, else
// along N (row-major), so the operand with fewer tiles stays in the L2.
enum class TileOrder { kRowMajor, kColumnMajor, kGrouped, kHeuristic };
inline const std::vector<std::string> kTileOrderNames = {"row-major", "column-major", "grouped", "heuristic"};
enum class MatrixLayout { kRowMajor, kColumnMajor };

std::string_view to_string(TileOrder order);
std::string_view to_string(MatrixLayout layout);
// "row-major" | "column-major" | "grouped" (and "row" / "col" / "column"); UserError otherwise.
TileOrder parse_tile_order(std::string_view text);
MatrixLayout parse_matrix_layout(std::string_view text);

struct GemmParams {
  std::string name;  // kernel name; empty: "gemm_MxNxK"
  std::uint64_t m = 0;
  std::uint64_t n = 0;
  std::uint64_t k = 0;
  std::uint32_t dtype_bytes = 2;  // FP16

  std::uint32_t tile_m = 256;  // macro tile (output rows x columns per WG)
  std::uint32_t tile_n = 128;
  std::uint32_t k_step = 32;   // K per loop iteration (the last one may be partial)
  std::uint32_t stages = 2;    // K-step tile buffers (TraceResources::stages): 2 = double buffering
  bool tma = false;            // tiles loaded by Hopper's TMA (TraceResources::tma)
  // The WG's cycles per K step without matrix work (barrier, waits, the first LDS
  // reads before its first MMA): each compute op's `issue` (see traces/FORMAT.md).
  std::uint32_t issue_cycles = 0;
  // The epilogue's passes of the C tile through shared memory (0: none): CUTLASS's
  // sm90 TMA epilogues write the accumulators into shared memory and the TMA store
  // reads them out (2 passes), over the LDS port (lds_bytes_per_cycle below), while the
  // tile's WG does no matrix work. Added to the last K step's issue cycles.
  std::uint32_t epilogue_smem_passes = 0;
  // The matrix instructions' rate when it is not the CU's `flops_per_cycle` (FP16 FLOPs
  // per CU cycle): a kernel built on an older instruction (the Ampere mma.sync that
  // cuBLAS's align2 fallback runs on Hopper instead of wgmma). 0: flops_per_cycle.
  std::uint32_t mma_flops_per_cycle = 0;
  // A kernel whose own threads copy its tiles into shared memory (Ampere's cp.async,
  // not TMA) spends issue cycles on it in every K step, with no matrix work meanwhile:
  // the K step's A and B tile bytes / this rate are added to its issue cycles. 0: the
  // copies cost the WG no cycles of its own (TMA, or copies that overlap the math).
  // Simplification: only the threads' time is serialized so; the loads' memory side
  // still runs through the CU's load path, overlapped by the stages as any load.
  std::uint32_t load_issue_bytes_per_cycle = 0;
  // The kernel's matrix steps run at the CU's boost clock (TraceResources::boost_clock):
  // it draws too little power to reach the GPU's cap.
  bool boost_clock = false;
  // Hopper thread-block clusters along M (CUTLASS ClusterShape M): the cluster_m tiles
  // down a column share their B tiles, and TMA multicast lets each CTA fetch only its
  // share of each K step's B tile (split along K) while receiving the whole. 1: none.
  // A persistent kernel's clusters are placed whole (TraceResources::cluster, on a GPU
  // with gpu.cluster_group_cus). Simplification: a CTA's K step waits for its own share
  // only (the cluster's CTAs are taken to run in step), and the shares the others fetch
  // cost this SM nothing.
  std::uint32_t cluster_m = 1;
  // A persistent kernel of this many WGs looping over the tiles, each taking the next
  // tile in order when it finishes one (TraceResources::persistent_wgs; cuBLAS's and
  // CUTLASS's Hopper GEMMs, whose grid is about one CTA per SM); 0: one WG per tile.
  std::uint32_t persistent_wgs = 0;
  // Of a persistent GEMM: the tiles each WG owns before it asks for the next in order
  // (TraceResources::persistent_static; cuBLAS's Hopper GEMM: 2). 0: all in order.
  std::uint32_t persistent_static_tiles = 0;

  std::uint32_t wfs_per_wg = 4;
  // How the WFs split the output tile for their stores (wf_grid_m x wf_grid_n =
  // wfs_per_wg). 0, 0: along the rows of the output layout (row-major C: each WF
  // stores tile_m / wfs full rows; column-major: tile_n / wfs full columns).
  std::uint32_t wf_grid_m = 0;
  std::uint32_t wf_grid_n = 0;

  TileOrder order = TileOrder::kRowMajor;  // WG-to-tile order (WG id = dispatch order)
  std::uint32_t group_size = 8;            // kGrouped: tile rows per group (column-major inside)
  // Rotate the WG order by this many WGs (T3's staggered scheduling: GPU g starts
  // its output at stage offset g, i.e. stagger_wgs = g * concurrent WGs).
  std::uint64_t stagger_wgs = 0;

  MatrixLayout a_layout = MatrixLayout::kRowMajor;  // A stored M x K (row-major) or K x M
  MatrixLayout b_layout = MatrixLayout::kRowMajor;  // B stored K x N (row-major) or N x K
  MatrixLayout c_layout = MatrixLayout::kRowMajor;  // output layout

  // Base addresses; unset: A at 0, B and C each after the previous matrix rounded
  // up to 2 MiB (non-overlapping).
  std::optional<std::uint64_t> a_base;
  std::optional<std::uint64_t> b_base;
  std::optional<std::uint64_t> c_base;

  // Output stores: cached (default) or uncached, optionally updates (op-and-store at
  // memory), optionally remote to a peer GPU.
  bool store_uncached = false;
  bool store_update = false;
  std::optional<std::uint32_t> store_peer;

  std::uint32_t flops_per_cycle = 1024;  // per CU (T3 Table 1 CU: ~1024 FP16 flops/cycle)
  std::uint32_t lds_bytes_per_cycle = 0;  // the CU's LDS port (epilogue_smem_passes); 0: unbounded

  // Occupancy needs per WG.
  std::uint32_t wave_size = 64;          // threads per WF
  std::uint32_t regs_per_thread = 128;
  std::uint64_t lds_bytes = 0;           // 0: the A and B tiles of every stage, stages*(tile_m+tile_n)*k_step*dtype
};

struct GemmAddresses {
  std::uint64_t a = 0, b = 0, c = 0;
};

// Throws UserError naming the bad field.
void validate_gemm(const GemmParams& p);
GemmAddresses gemm_addresses(const GemmParams& p);
std::uint64_t gemm_tiles_m(const GemmParams& p);
std::uint64_t gemm_tiles_n(const GemmParams& p);
// The tile (row_index * tiles_n + column_index) each WG computes, in WG id order:
// the tile order, then rotated by stagger_wgs.
std::vector<std::uint64_t> gemm_tile_order(const GemmParams& p);
// A split of a tile among a WG's WFs: m x n parts.
struct WfGrid {
  std::uint32_t m, n;
};

// How the WG's matrix work splits its tm x tn tile among its MMA units (WFs; for TMA
// kernels, Hopper's warpgroups of 4 warps, which issue WGMMA from shared memory): the
// split of least LDS traffic. Each unit reads its rows of A and its columns of B from
// the LDS every K step: kc x dtype x (tm x grid.n + tn x grid.m) bytes in all.
WfGrid mma_grid(const GemmParams& p, std::uint64_t tm, std::uint64_t tn);
std::uint64_t lds_read_bytes(const GemmParams& p, std::uint64_t tm, std::uint64_t tn, std::uint64_t kc);
// One line "m=512 n=512 k=512 dtype=2 tile=256x128 ..." (recorded as an attr).
std::string describe(const GemmParams& p);

KernelTrace make_gemm_trace(const GemmParams& p);
// A GEMM WG's occupancy needs (LDS: lds_bytes, or the A and B tiles of every stage).
TraceResources gemm_resources(const GemmParams& p);

// A matrix's base address in a program: a parameter slot plus a constant, or a
// constant alone.
struct TileBase {
  std::int64_t constant = 0;
  std::optional<std::uint32_t> var;
};
// Appends the K loop of a tm x tn tile to `prog` (whose first `num_params` variable
// slots are parameters; its loop variable takes the next free slot): per K step an A
// and a B tile load (from a_base / b_base, the tile's first element) and the step's
// compute, then the partial last step. `rank` of `cluster` (1: no cluster) picks the
// share of each K step's B tile this WG fetches: with TMA multicast the cluster's
// CTAs each fetch a slice of the shared B tile (split along K) and receive the
// others' slices. make_gemm_trace's tiles and fused kernels (trace/fused_gemm.h)
// share it.
// Cycles of a tm x tn tile's epilogue pass through shared memory (0 without one).
std::uint64_t gemm_epilogue_cycles(const GemmParams& p, std::uint64_t tm, std::uint64_t tn);

void append_tile_mainloop(TraceProgram& prog, const GemmParams& p, std::uint64_t tm, std::uint64_t tn,
                          TileBase a_base, TileBase b_base, std::uint32_t num_params, std::uint32_t rank = 0,
                          std::uint32_t cluster = 1);

// ---------------------------------------------------------------------------
// Table 2 sub-layers. Output T x H (T = SL x B tokens); K = H/TP (op: attention
// output projection, forward), 4H/TP (fc2: FC-2 forward), 4H/TP (fc1: FC-1
// backward, input gradient), 3H/TP (ip: input projection backward, input
// gradient). FP16. Forward GEMMs read the weight transposed (B stored N x K),
// backward ones not (B stored K x N), as in T3 Section 5.2.

struct GemmPreset {
  std::string name;   // "tnlg.fc2.tp8"
  std::string model;  // "T-NLG"
  std::string layer;  // "FC-2 fwd"
  std::uint64_t hidden = 0;
  std::uint64_t tokens = 0;
  std::uint32_t tp = 0;
  std::uint64_t m = 0, n = 0, k = 0;
  bool forward = false;
};

const std::vector<GemmPreset>& gemm_presets();
std::vector<std::string> gemm_preset_names();
// UserError for an unknown name, with a did-you-mean.
const GemmPreset& find_gemm_preset(std::string_view name);
// `base` (the kernel shape: tile, stages, WFs...) with the preset's M, N, K, layouts and name.
GemmParams gemm_preset_params(std::string_view name, GemmParams base = {});

}  // namespace t3sim
