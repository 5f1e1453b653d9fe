#pragma once
// T3's collectives on a node: the reduce-scatter fused with its producer (T3 §4,
// Figures 7-9), and the all-gather through the same mechanism (T3 §7.1).
//
// Reduce-scatter: the producer GEMM's
// output address space is configured per GPU (AddressSpace), each GPU's tracker is
// programmed with it and its DMA engines are pre-queued with one command per
// dma_map'ped WF region (T3 §4.2.2: "the DMA commands are pre-queued during the
// setup process"). While the GEMM runs (with uncached update stores and staggered
// WG scheduling), its stores and the peers' DMA updates reduce in DRAM (near-memory
// updates, T3 §4.3); each WF region the tracker sees complete fires its DMA, and the
// reduce-scatter is done on a GPU once its own chunk is complete and its DMA
// commands are acknowledged.
//
// Without a producer (`with_producer = false`) it is the stand-alone RS with NMC of
// T3's Ideal-RS+NMC: the data are in memory already, the first chunk's DMAs start at
// once and every later region expects one (incoming) update per element.
//
// All-gather (kind = kAllGather; stand-alone only: each GPU's own chunk is in memory,
// e.g. the reduce-scatter's result): the own chunk's DMA stores start at once; ring:
// each region that arrives is forwarded once the tracker saw it complete, N-1 hops;
// direct: the own chunk goes to every peer. Done once every chunk has arrived and the
// GPU's DMAs are acknowledged.
//
// Homogeneous mode: a mirror translator moves a packet GPU 0 sends to d for tile t
// to tile t - d W/N (and its tracker tag with it), which is what GPU -d sends GPU 0.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/collectives/i_collective.h"
#include "models/node/node.h"
#include "models/t3/address_space.h"
#include "models/tracker/tracker.h"
#include "trace/trace.h"

namespace t3sim {


// How T3's DMA commands route a chunk: around the ring, a hop at a time (T3 §4), or
// straight to its owner over its own link (fully-connected, T3 §7.1).
enum class T3Route { kRing, kDirect };
inline const char* to_string(T3Route route) { return route == T3Route::kDirect ? "direct" : "ring"; }

struct T3CollectiveParams {
  CollectiveOp op = CollectiveOp::kReduceScatter;  // reduce-scatter or all-gather
  T3Route algorithm = T3Route::kRing;
  bool with_producer = true;
  bool values = false;       // synthetic producer values, checked by verify()
  std::uint64_t seed = 1;
  // All-gather of this reduce-scatter's result (already in memory): preload() writes
  // nothing and verify() expects its sums in every chunk.
  const class T3Collective* gathers = nullptr;
};

class T3Collective final : public Collective {
 public:
  // `producer`: the GEMM trace every GPU runs (its WG ids are the tiles; chunks are
  // runs of W/N WGs). UserError if it cannot be chunked or tracked.
  T3Collective(Node& node, const KernelTrace& producer, const T3CollectiveParams& p);
  ~T3Collective();

  // For the producer's launch on GPU g: its store routing and first WG (staggered).
  const StoreRouting* routing(std::uint32_t g) const;
  std::uint32_t first_wg(std::uint32_t g) const;

  // Functional runs: zero the output (updates accumulate into it; with_producer =
  // false: the input pattern instead; all-gather: each GPU's own chunk holds its
  // pattern, the others zero).
  void preload() override;
  // Arms GPU g (programs its tracker): call before the producer launches there.
  // on_done(g) once GPU g's chunk is reduced and its DMAs are acknowledged.
  void start(std::uint32_t g, std::function<void(std::uint32_t)> on_done = {}) override;
  bool done(std::uint32_t g) const override;
  Tick finished(std::uint32_t g) const override;
  // Unprograms the trackers (after the run).
  void finish();

  // Checks GPU g's chunk g (every simulated GPU): the sum over GPUs of the producer's
  // values; all-gather: every chunk c of every GPU holds GPU c's pattern. Returns
  // words checked; first mismatch in first_error.
  std::uint64_t verify(std::string& first_error) const override;
  // After an all-gather of this reduce-scatter's result (any implementation): every
  // chunk of every GPU holds the sums. Returns words checked.
  std::uint64_t verify_gathered(std::string& first_error) const;
  // True iff chunk c (W/N consecutive WGs) is exactly bytes [c S/N, (c+1) S/N) of the
  // S-byte output at `base`: the flat chunks a CU ring all-gather moves (whole tile
  // rows of a row-major output; not so for the TP=32 models' tilings).
  bool chunks_are_flat(std::uint64_t base, std::uint64_t array_bytes) const;

  std::uint64_t dma_commands(std::uint32_t g) const;
  CollectiveOp op() const override { return p_.op; }
  std::string_view algorithm() const override { return to_string(p_.algorithm); }
  CollectiveEngine engine() const override { return CollectiveEngine::kT3; }

 private:
  class GpuState;
  std::uint64_t value(std::uint32_t gpu, std::uint64_t address) const;
  // What the word at `address` (of WG wg, WF wf) must hold after the run, on any GPU
  // that checks it (homogeneous: GPU 0, the others being it rotated).
  std::uint64_t expected(std::uint32_t wg, std::uint8_t wf, std::uint64_t address) const;
  // Checks every chunk of every GPU, or GPU g's chunk g only.
  std::uint64_t check(bool every_chunk, std::string& first_error) const;
  // Homogeneous mode: the WG and address of (wg, address) shifted by `chunks` chunks.
  bool shift(std::uint32_t& wg, std::uint8_t wf, std::uint64_t& address, std::uint32_t chunks) const;

  Node& node_;
  T3CollectiveParams p_;
  std::unique_ptr<OutputRegions> regions_;
  std::uint64_t out_lo_ = ~std::uint64_t{0}, out_hi_ = 0;  // bounding range of the output
  std::uint32_t granule_ = 32;
  std::vector<std::unique_ptr<GpuState>> gpus_;  // simulated GPUs
};

}  // namespace t3sim
