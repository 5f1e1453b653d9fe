// Direct all-gather (fully-connected; T3 §7.1's direct variant), registered as
// direct-ag: every GPU stores its own chunk straight into every peer's array.
//
// Direct kernels and all-to-all (no FIFO: a slot per peer of the whole chunk; flags
// count slices of slice_bytes): flag ids are flag_base + channel x N + j, j the ring
// distance (receiver - sender) mod N (1..N-1).
// GPU g: per slice of chunk g: load data[chunk g] once; copy; store remote ->
// (g+j).data[chunk g] for every j (rotated order); set every peer's flag. End: wait the
// N-1 flags >= the slices of the senders' chunks. Result: as ring all-gather.
//
// Its copy-engine form (ConCCL's all-gather, seed 003 §VI-B): one copy of the own
// chunk per peer, starting with the next GPU so peers do not all target the same one
// at once.

#include "collective/channel_program.h"
#include "collective/i_collective_algorithm.h"

namespace t3sim {

namespace {

struct DirectAllGatherBuilder : CollectiveGeometry {
  using CollectiveGeometry::CollectiveGeometry;

  void build(ChannelProgram& b, std::uint32_t channel) const {
    const std::vector<std::uint32_t> order = distances(channel);
    b.for_slices(g, "p", [&](const Slices& x, std::int64_t off) {
      b.load(b.at(x, data, off), x.bytes, unc);  // once: every peer gets the same slice
      b.compute(x.bytes, 1);
      for (const std::uint32_t j : order) b.store(b.at(x, data, off), x.bytes, unc, gpu_at(j));
      // All stores before the sets: a set waits for every earlier store's ack.
      for (const std::uint32_t j : order) b.set(gpu_at(j), j, b.done(x));
    });
    wait_for_senders(b, channel, [&](std::uint32_t j) { return gpu_at(-static_cast<std::int64_t>(j)); });
  }
};

class DirectAllGather final : public CollectiveAlgorithm {
 public:
  CollectiveOp op() const override { return CollectiveOp::kAllGather; }
  void build_channel(ChannelProgram& b, const CollectiveTraceParams& p, std::uint32_t channel) const override {
    DirectAllGatherBuilder(p).build(b, channel);
  }
  double link_seconds(const LinkBoundInput& in) const override { return direct_link_seconds(in); }
  bool has_copy_engine_form() const override { return true; }
  std::vector<CollectiveCopy> copy_engine_copies(const CollectiveTraceParams& p) const override {
    return direct_all_gather_copies(p);
  }
};

}  // namespace

std::vector<CollectiveCopy> direct_all_gather_copies(const CollectiveTraceParams& p) {
  std::vector<CollectiveCopy> copies;
  const ByteRange own = collective_chunk(p, p.gpu);
  for (std::uint32_t i = 1; i < p.num_gpus; ++i) {
    const std::uint32_t d = (p.gpu + i) % p.num_gpus;
    copies.push_back(CollectiveCopy{d, p.data_base + own.first, p.data_base + own.first, own.bytes});
  }
  return copies;
}

T3SIM_REGISTER(collective_algorithms, "direct-ag",
               "direct all-gather: each GPU stores its chunk into every peer at once, a link each (T3 §7.1)",
               [] { return std::make_unique<DirectAllGather>(); })

}  // namespace t3sim
