// Direct reduce-scatter (fully-connected; T3 §7.1's direct variant), registered as
// direct-rs: every GPU sends each peer its chunk at once, over its own link, and the
// owner adds the N-1 received copies to its own.
//
// Direct kernels and all-to-all (no FIFO: a slot per peer of the whole chunk; flags
// count slices of slice_bytes): flag ids are flag_base + channel x N + j, j the ring
// distance (receiver - sender) mod N (1..N-1).
// GPU g, channel k: for each distance j in the channel's rotated order (k mod (N-1) + 1,
// then +1 ... wrapping within 1..N-1, so the channels start on different links): load
// data[chunk g+j]; copy; store remote -> (g+j).recv[slot j-1]; set. Then per slice of
// chunk g: load data[chunk g]; wait the N-1 flags (j = 1..N-1); load recv[slot
// 0..N-2]; add N operands; store data[chunk g]. Result: as ring reduce-scatter.

#include "collective/channel_program.h"
#include "collective/i_collective_algorithm.h"

namespace t3sim {

namespace {

struct DirectReduceScatterBuilder : CollectiveGeometry {
  using CollectiveGeometry::CollectiveGeometry;

  void build(ChannelProgram& b, std::uint32_t channel) const {
    send_chunks_to_peers(b, channel, [&](std::uint32_t j, std::uint32_t) { return slot_base(j - 1); });
    b.for_slices(g, "r", [&](const Slices& x, std::int64_t off) {
      b.load(b.at(x, data, off), x.bytes, unc);
      for (std::uint32_t j = 1; j < N; ++j) b.wait(j, b.done(x));
      for (std::uint32_t j = 1; j < N; ++j) b.load(b.at(x, slot_base(j - 1), off - chunk_first(g)), x.bytes, true);
      b.compute(x.bytes, N);
      b.store(b.at(x, data, off), x.bytes, unc, std::nullopt);
    });
  }
};

class DirectReduceScatter final : public CollectiveAlgorithm {
 public:
  CollectiveOp op() const override { return CollectiveOp::kReduceScatter; }
  // N-1 slots of the largest chunk, one per sender.
  std::uint64_t recv_bytes(const CollectiveTraceParams& p) const override {
    return (p.num_gpus - 1) * collective_recv_slot_bytes(p);
  }
  void build_channel(ChannelProgram& b, const CollectiveTraceParams& p, std::uint32_t channel) const override {
    DirectReduceScatterBuilder(p).build(b, channel);
  }
  double link_seconds(const LinkBoundInput& in) const override { return direct_link_seconds(in); }
};

}  // namespace

T3SIM_REGISTER(collective_algorithms, "direct-rs",
               "direct reduce-scatter: each chunk straight to its owner over its own link, the owner adds (T3 §7.1)",
               [] { return std::make_unique<DirectReduceScatter>(); })

}  // namespace t3sim
