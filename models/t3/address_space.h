#pragma once
// T3's producer-output address-space configuration (T3 §4.4, Figures 11-12), one per
// GPU: which parts of the GEMM's output its stores send to a peer (remote_map), which
// are written locally, tracked, and DMA'd to a peer once complete (dma_map), and
// which are the collective's final local result (track_map). It programs the GPU's
// tracker (TrackerProgram) and routes the kernel's stores (StoreRouting).
//
// Ranges are given as ranges of the producer's WGs (its output tiles): a chunk of a
// collective is a run of WG ids. When chunks are whole tile rows of a row-major output
// (every Mega-GPT-2 / T-NLG case) a WG range is exactly the address range T3's
// remote_map/dma_map calls take; for other tilings (the TP=32 models) it is the same
// set of tiles, not contiguous in memory, which WF-based tracking handles alike
// (T3 §4.2.1: "a producer's stage may not update contiguous memory regions").
//
// The regions each (WG, WF) writes come from the producer's trace (OutputRegions):
// the driver knows the kernel's tiling (T3: wf_tile_size from the output size and
// the WF count); here the trace's store ops are that knowledge.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/cu/store_routing.h"
#include "models/mem/mem_request.h"
#include "trace/trace.h"

namespace t3sim {

// One WF's output sub-tile: `rows` rows of `row_bytes`, row r at start + r x stride.
struct WfRegion {
  std::uint64_t start = 0;
  std::uint32_t row_bytes = 0;
  std::uint32_t rows = 0;
  std::uint64_t stride = 0;
  std::uint64_t bytes() const { return std::uint64_t{row_bytes} * rows; }
};

// Every (WG, WF)'s store region of a producer kernel, read from its trace: each WF
// stores one 2D region (a GEMM tile's WF part, T3 §4.2.1); UserError otherwise.
class OutputRegions {
 public:
  explicit OutputRegions(const KernelTrace& producer);
  std::uint32_t num_wgs() const { return num_wgs_; }
  std::uint32_t wfs_per_wg() const { return wfs_; }
  // nullptr: that WF stores nothing.
  const WfRegion* region(std::uint32_t wg, std::uint32_t wf) const;

 private:
  std::uint32_t num_wgs_ = 0, wfs_ = 0;
  std::vector<WfRegion> regions_;  // wg * wfs + wf; rows == 0: none
};

struct WgRange {
  std::uint32_t first = 0, end = 0;  // [first, end)
};

enum class MapKind : std::uint8_t {
  kLocal,   // written locally, not tracked (the default)
  kRemote,  // remote_map: the producer's stores go to `peer`
  kDma,     // dma_map: tracked here; once complete, DMA'd to `peer` with `op`
  kFinal,   // track_map: tracked here; complete = this GPU's result is ready
};
std::string_view to_string(MapKind kind);

struct ChunkMapping {
  WgRange wgs;
  MapKind kind = MapKind::kLocal;
  std::uint32_t peer = 0;                 // kRemote, kDma (the first of `peers`)
  std::vector<std::uint32_t> peers = {};  // kDma: every destination (direct all-gather: all peers)
  MemOp op = MemOp::kUpdate;              // kDma: store (kWrite) or update
  std::uint32_t updates_per_element = 1;  // kDma, kFinal: writes expected per element here
  std::uint32_t wf_tiles_per_dma = 1;     // kDma granularity (T3 Figure 9c): 1 = one DMA per WF
};

class AddressSpace final : public StoreRouting {
 public:
  AddressSpace(const OutputRegions& regions, std::uint32_t gpu);

  // T3 Figure 12's calls. UserError if a range overlaps an earlier mapping or leaves
  // the producer's WGs.
  void remote_map(WgRange wgs, std::uint32_t peer);
  void dma_map(WgRange wgs, std::uint32_t peer, MemOp op, std::uint32_t updates_per_element,
               std::uint32_t wf_tiles_per_dma = 1);
  // One DMA per destination once a region is complete (direct all-gather, T3 §7.1).
  void dma_map(WgRange wgs, std::vector<std::uint32_t> peers, MemOp op, std::uint32_t updates_per_element,
               std::uint32_t wf_tiles_per_dma = 1);
  void track_map(WgRange wgs, std::uint32_t updates_per_element);

  const std::vector<ChunkMapping>& mappings() const { return mappings_; }
  // The mapping of a WG (kLocal default).
  const ChunkMapping& mapping_of(std::uint32_t wg) const;
  const OutputRegions& regions() const { return regions_; }
  std::uint32_t gpu() const { return gpu_; }

  // Bytes the region of (wg, wf) expects here before it is complete (0: untracked).
  std::uint64_t expected_bytes(std::uint32_t wg, std::uint32_t wf) const;

  // Functional runs: the producer's stores carry value_fn(address) (set before the run).
  void set_store_values(std::function<std::uint64_t(std::uint64_t)> value_fn) { value_fn_ = std::move(value_fn); }

  // StoreRouting (a WG's whole output is in one mapping)
  int remote_peer(std::uint32_t wg, std::uint64_t address) const override;
  bool has_values() const override { return static_cast<bool>(value_fn_); }
  std::uint64_t store_value(std::uint64_t address) const override { return value_fn_(address); }

 private:
  void add(ChunkMapping m);

  const OutputRegions& regions_;
  std::uint32_t gpu_;
  std::vector<ChunkMapping> mappings_;
  std::vector<std::int32_t> wg_mapping_;  // per WG: index in mappings_, -1 local
  ChunkMapping local_;
  std::function<std::uint64_t(std::uint64_t)> value_fn_;
};

// Ring reduce-scatter fused with its producer (T3 §4.1, Figures 7 and 11): N chunks
// of the producer's WGs (chunk c = WGs [c W/N, (c+1) W/N)); GPU g produces chunk
// (g + k + 1) mod N at stage k, sends to GPU g-1:
//   k = 0          remote_map to g-1 (the producer's updates go straight there)
//   k = 1..N-2     dma_map to g-1, update, 2 updates per element (local + incoming)
//   k = N-1        chunk g: track_map, 2 updates per element (its reduced result)
// with_producer = false (T3's Ideal-RS+NMC: the data are in memory already): the
// first chunk is dma_map'ped too (its DMAs start at once) and every tracked region
// expects one update per element (the incoming one).
void configure_ring_reduce_scatter(AddressSpace& as, std::uint32_t num_gpus, bool with_producer = true);
// Direct reduce-scatter on a fully-connected node (T3 §7.1): chunk c != g is
// remote-mapped to GPU c (the producer's updates reduce there), chunk g is final with
// N updates per element. No DMA, so no collective DRAM reads.
void configure_direct_reduce_scatter(AddressSpace& as, std::uint32_t num_gpus);
// All-gather (T3 §7.1: "reuses ring-RS's configuration and setup, except the GEMMs
// and DMA transfers do not update memory locations"), on data already in memory
// (each GPU's own chunk g, e.g. the reduce-scatter's result): stores, one write per
// element expected.
//  ring:   chunk c travels c -> c-1 -> ... -> c+1 (the RS's direction); on GPU g,
//          chunk g is dma_map'ped to g-1 (sent at start), every chunk but g and g-1
//          is dma_map'ped to g-1 (forwarded once it has arrived), chunk g-1 (the
//          last to arrive, N-1 hops) is final.
//  direct: chunk g is dma_map'ped to every peer; every other chunk is final.
void configure_ring_all_gather(AddressSpace& as, std::uint32_t num_gpus);
void configure_direct_all_gather(AddressSpace& as, std::uint32_t num_gpus);
// The WGs of chunk c of N.
WgRange chunk_wgs(std::uint32_t num_wgs, std::uint32_t num_gpus, std::uint32_t chunk);
// Staggered scheduling (T3 §4.4): the WG GPU g dispatches first under the ring RS
// (the start of chunk g + 1).
std::uint32_t ring_first_wg(std::uint32_t num_wgs, std::uint32_t num_gpus, std::uint32_t gpu);

}  // namespace t3sim
