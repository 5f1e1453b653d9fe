// All-to-all, registered as all-to-all (aliases a2a, all_to_all): GPU g sends chunk d
// of its array to GPU d, which files it as block g of its output (direct by nature).
//
// Direct kernels and all-to-all (no FIFO: a slot per peer of the whole chunk; flags
// count slices of slice_bytes): flag ids are flag_base + channel x N + j, j the ring
// distance (receiver - sender) mod N (1..N-1).
// GPU g: for each j (rotated order), d = g+j: load data[chunk d]; copy; store remote ->
// d.out[block g]; set. Then its own chunk g: load; copy; store out[block g] (local).
// End: wait the N-1 flags. Block c of GPU d's out holds what GPU c sent it: it is chunk
// d's size, at out_base + c x chunk_bytes(d) (collective_a2a_block). Result: out[block
// c] of GPU g holds GPU c's chunk g.
//
// Its copy-engine form: one copy per destination, its own block locally first.

#include "collective/channel_program.h"
#include "collective/i_collective_algorithm.h"

namespace t3sim {

namespace {

struct AllToAllBuilder : CollectiveGeometry {
  using CollectiveGeometry::CollectiveGeometry;

  void build(ChannelProgram& b, std::uint32_t channel) const {
    send_chunks_to_peers(b, channel,
                         [&](std::uint32_t, std::uint32_t d) { return out + collective_a2a_block(p, d, g).first; });
    const ByteRange own = collective_a2a_block(p, g, g);
    b.for_slices(g, "own", [&](const Slices& x, std::int64_t off) {
      b.load(b.at(x, data, off), x.bytes, unc);
      b.compute(x.bytes, 1);
      b.store(b.at(x, out + own.first, off - chunk_first(g)), x.bytes, true, std::nullopt);
    });
    // Every sender sends us its chunk g.
    wait_for_senders(b, channel, [&](std::uint32_t) { return g; });
  }
};

class AllToAll final : public CollectiveAlgorithm {
 public:
  CollectiveOp op() const override { return CollectiveOp::kAllToAll; }
  std::vector<std::string_view> aliases() const override { return {"a2a", "all_to_all"}; }
  // N blocks of the largest chunk.
  std::uint64_t out_bytes(const CollectiveTraceParams& p) const override {
    return p.num_gpus * collective_recv_slot_bytes(p);
  }
  void build_channel(ChannelProgram& b, const CollectiveTraceParams& p, std::uint32_t channel) const override {
    AllToAllBuilder(p).build(b, channel);
  }
  double link_seconds(const LinkBoundInput& in) const override { return direct_link_seconds(in); }
  bool has_copy_engine_form() const override { return true; }
  std::vector<CollectiveCopy> copy_engine_copies(const CollectiveTraceParams& p) const override {
    std::vector<CollectiveCopy> copies;
    const std::uint64_t out = collective_out_base(p);
    for (std::uint32_t i = 0; i < p.num_gpus; ++i) {
      const std::uint32_t d = (p.gpu + i) % p.num_gpus;
      const ByteRange src = collective_chunk(p, d);
      copies.push_back(CollectiveCopy{d, p.data_base + src.first, out + collective_a2a_block(p, d, p.gpu).first,
                                      src.bytes});
    }
    return copies;
  }
};

}  // namespace

T3SIM_REGISTER(collective_algorithms, "all-to-all",
               "all-to-all: chunk d of every GPU to GPU d, straight over its own link",
               [] { return std::make_unique<AllToAll>(); })

}  // namespace t3sim
