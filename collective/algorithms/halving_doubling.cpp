// Recursive halving-doubling all-reduce (Rabenseifner's algorithm; Thakur,
// Rabenseifner and Gropp, "Optimization of Collective Communication Operations in
// MPICH", IJHPCA 2005, §4.4), registered as rhd-ar. N a power of two, L = log2 N. It
// moves what the ring moves, 2(N-1)/N of the array per GPU, in 2L dependent steps
// instead of 2(N-1): fewer link latencies, each step over one link to one partner.
//
//   reduce-scatter by recursive halving: at step k (0..L-1) GPU g holds the aligned
//     block of N >> k chunks that contains chunk g, and exchanges halves with the
//     partner g XOR (N >> (k+1)): it sends the half that holds the partner's chunk and
//     keeps its own. After L steps it holds chunk g, summed over every GPU.
//   all-gather by recursive doubling: at step j (0..L-1) GPU g sends the aligned
//     block of 2^j chunks that contains g to g XOR 2^j, which stores it in place; the
//     blocks double until every GPU holds every sum.
//
// The kernel: one per GPU, every channel (WG) working its share of every chunk
// (collective_share) in slices of slice_bytes; the flags count slices.
//   - Reductions are lazy: a chunk's sum is formed once, when it leaves (sent at step
//     k: its own data plus the k copies received at steps 0..k-1, k+1 operands) or at
//     the end (chunk g: L+1 operands). So no WG reads back what it stored itself (the
//     CU does not order such a load after its own store, models/cu/README.md), and each
//     received copy is read once. The bytes on every link are the textbook's.
//   - Chunk g's sum is stored in place and sent at once to each all-gather partner g
//     XOR 2^j, j = 0..L-1: the same link and bytes as the textbook's step j, sent as
//     soon as the sum exists instead of when the step begins.
//   - All-gather step j then forwards to g XOR 2^j the chunks received at steps
//     0..j-1, each after its flag, in the order they arrived.
// Receive area: reduce-scatter step k's incoming half (N >> (k+1) chunks) has slots of
// its own: N-1 slots of the largest chunk in all. Flags of a channel: reduce-scatter
// step k is index k, all-gather step j index L + j (2L <= N).
//
// Not shift-invariant (partners pair by XOR), so homogeneous mode refuses it; on a
// ring or switch its partners are hops apart and the link bound below (a link per
// partner) is optimistic.

#include <bit>
#include <cmath>

#include "collective/channel_program.h"
#include "collective/i_collective_algorithm.h"

namespace t3sim {

namespace {

struct HalvingDoublingBuilder : CollectiveGeometry {
  using CollectiveGeometry::CollectiveGeometry;

  std::uint32_t steps() const { return static_cast<std::uint32_t>(std::countr_zero(N)); }  // L
  // The first chunk of the aligned block of `size` chunks that holds chunk `c`.
  static std::uint32_t block_first(std::uint32_t c, std::uint32_t size) { return c - c % size; }
  // Reduce-scatter step k: the half GPU g keeps (and receives into) is the block of
  // N >> (k+1) chunks holding g; its partner keeps the other half.
  std::uint32_t half(std::uint32_t k) const { return N >> (k + 1); }
  std::uint32_t rs_partner(std::uint32_t k) const { return g ^ half(k); }
  // Step k's receive slots start after the earlier steps' (N/2 + N/4 + ...).
  std::uint64_t rs_slot(std::uint32_t k, std::uint32_t c) const {
    return slot_base(N - (N >> k) + (c - block_first(c, half(k))));
  }
  std::uint64_t slices(std::uint32_t c, std::uint32_t channel) const { return collective_slices(p, c, channel); }
  // Slices before chunk c in a block walked in ascending order from `first`.
  std::uint64_t slices_before(std::uint32_t first, std::uint32_t c, std::uint32_t channel) const {
    std::uint64_t n = 0;
    for (std::uint32_t x = first; x < c; ++x) n += slices(x, channel);
    return n;
  }
  // The chunks GPU s sends at all-gather step j, in order: its own, then those it
  // received at steps 0..j-1 in the order they arrived (each the sender's own order).
  std::vector<std::uint32_t> ag_order(std::uint32_t s, std::uint32_t j) const {
    std::vector<std::uint32_t> order{s};
    for (std::uint32_t i = 0; i < j; ++i) {
      const std::vector<std::uint32_t> got = ag_order(s ^ (1u << i), i);
      order.insert(order.end(), got.begin(), got.end());
    }
    return order;
  }

  void build(ChannelProgram& b, std::uint32_t channel) const {
    const std::uint32_t L = steps();
    // Waits for slice x of chunk c's copy received at reduce-scatter step k, then loads it.
    const auto load_received = [&](std::uint32_t k, std::uint32_t c, const Slices& x, std::int64_t off) {
      const std::uint64_t before = slices_before(block_first(c, half(k)), c, channel);
      b.wait(k, b.affine(static_cast<std::int64_t>(before) + x.first + 1, 1, x.var));
      b.load(b.at(x, rs_slot(k, c), off - chunk_first(c)), x.bytes, true);
    };

    // Reduce-scatter: at step k send the partner's half, each chunk summed now.
    for (std::uint32_t k = 0; k < L; ++k) {
      const std::uint32_t partner = rs_partner(k);
      const std::uint32_t first = block_first(partner, half(k));
      for (std::uint32_t c = first; c < first + half(k); ++c) {
        const std::uint64_t before = slices_before(first, c, channel);
        b.for_slices(c, "rs", [&](const Slices& x, std::int64_t off) {
          b.load(b.at(x, data, off), x.bytes, unc);
          for (std::uint32_t i = 0; i < k; ++i) load_received(i, c, x, off);
          b.compute(x.bytes, k + 1);
          b.store(b.at(x, rs_slot(k, c), off - chunk_first(c)), x.bytes, true, partner);
          b.set(partner, k, b.affine(static_cast<std::int64_t>(before) + x.first + 1, 1, x.var));
        });
      }
    }

    // Chunk g: its sum, in place and to every all-gather partner.
    b.for_slices(g, "own", [&](const Slices& x, std::int64_t off) {
      b.load(b.at(x, data, off), x.bytes, unc);
      for (std::uint32_t k = 0; k < L; ++k) load_received(k, g, x, off);
      b.compute(x.bytes, L + 1);
      b.store(b.at(x, data, off), x.bytes, unc, std::nullopt);
      for (std::uint32_t j = 0; j < L; ++j) b.store(b.at(x, data, off), x.bytes, unc, g ^ (1u << j));
      for (std::uint32_t j = 0; j < L; ++j) b.set(g ^ (1u << j), L + j, b.done(x));
    });

    // All-gather step j: forward what steps 0..j-1 brought, after its flag.
    for (std::uint32_t j = 1; j < L; ++j) {
      const std::uint32_t to = g ^ (1u << j);
      std::int64_t sent = static_cast<std::int64_t>(slices(g, channel));
      for (std::uint32_t i = 0; i < j; ++i) {
        // Step i brought the sender's order; its flag counts those slices in turn.
        std::int64_t arrived = 0;
        for (const std::uint32_t c : ag_order(g ^ (1u << i), i)) {
          b.for_slices(c, "ag", [&](const Slices& x, std::int64_t off) {
            b.wait(L + i, b.affine(arrived + x.first + 1, 1, x.var));
            b.load(b.at(x, data, off), x.bytes, unc);
            b.compute(x.bytes, 1);
            b.store(b.at(x, data, off), x.bytes, unc, to);
            b.set(to, L + j, b.affine(sent + x.first + 1, 1, x.var));
          });
          arrived += static_cast<std::int64_t>(slices(c, channel));
          sent += static_cast<std::int64_t>(slices(c, channel));
        }
      }
    }

    // The end: the last step's block has arrived (earlier ones were waited for when
    // forwarded).
    std::uint64_t last = 0;
    for (const std::uint32_t c : ag_order(g ^ (1u << (L - 1)), L - 1)) last += slices(c, channel);
    if (last > 0) b.wait(L + L - 1, b.constant(last));
  }
};

class HalvingDoublingAllReduce final : public CollectiveAlgorithm {
 public:
  CollectiveOp op() const override { return CollectiveOp::kAllReduce; }
  bool shift_invariant() const override { return false; }
  // N-1 slots of the largest chunk: N/2 for step 0's half, N/4 for step 1's, ...
  std::uint64_t recv_bytes(const CollectiveTraceParams& p) const override {
    return (p.num_gpus - 1) * collective_recv_slot_bytes(p);
  }
  void validate(const CollectiveTraceParams& p) const override {
    if (!std::has_single_bit(p.num_gpus))
      throw CollectiveParamError("num_gpus", fmt::format("{} GPUs: recursive halving-doubling pairs GPUs by XOR "
                                                         "(expected a power of two)",
                                                         p.num_gpus));
  }
  void build_channel(ChannelProgram& b, const CollectiveTraceParams& p, std::uint32_t channel) const override {
    HalvingDoublingBuilder(p).build(b, channel);
  }
  // A link per partner (fully connected): the link to partner g XOR 2^m carries
  // 2^m chunks each way of the algorithm (reduce-scatter step L-1-m, all-gather step
  // m), so the farthest partner's, m = L-1, carries the whole array; the steps may
  // pipeline across links, and the 2L steps each wait a latency.
  double link_seconds(const LinkBoundInput& in) const override {
    return in.array_bytes / in.link_bytes_per_second + 2.0 * std::log2(in.num_gpus) * in.link_latency_seconds;
  }
};

}  // namespace

T3SIM_REGISTER(collective_algorithms, "rhd-ar",
               "recursive halving-doubling all-reduce: log2 N exchanges with XOR partners each way (Rabenseifner; "
               "N a power of two)",
               [] { return std::make_unique<HalvingDoublingAllReduce>(); })

}  // namespace t3sim
