// Ring algorithms: reduce-scatter, all-gather and all-reduce as NCCL / RCCL's ring
// kernels run them (T3 §2.3, Figure 3; NCCL's runRing), each channel a pipeline of
// slices through a FIFO to the next GPU of its ring. Registered as ring-rs, ring-ag
// and ring-ar (NCCL's reduce_scatter, all_gather and all_reduce by default).
//
// Ring kernels: the channel pipeline (NCCL / RCCL's Simple protocol, prims_simple.h).
// Each channel has one connection to the next GPU: a FIFO of fifo_slices slots of
// slice_bytes in the next GPU's recv area, with two flags that count slices:
//   tail  (flag index 0, on the receiver, set by the sender): slices written so far;
//   head  (flag index 1, on the sender, set by the receiver): slices consumed so far.
// The sender writes its k-th slice (k counts from 0 over the whole kernel) into slot
// k mod fifo_slices once head >= k + 1 - fifo_slices (the slot is free), then sets
// the receiver's tail to k + 1; the receiver waits for tail >= k + 1, reads the
// slot, and sets the sender's head to k + 1. So a sender runs up to fifo_slices
// slices ahead of its receiver and pays the flag round trip only when the FIFO is
// full or empty. The FIFO must hold more than a piece's slices (fifo_slices >
// chunk_slices): every GPU sends a piece's first step before it receives anything. Sets release (the CU sets a flag only once the WG's earlier stores
// are acknowledged and its computes done): the per-slice fence of the Simple protocol.
// A channel walks its share of each chunk in pieces of chunk_slices x slice_bytes
// (NCCL's chunk): piece p goes through every ring step before piece p+1 starts
// (NCCL's runRing loop). A full piece is chunk_slices slices of slice_bytes; the
// last, partial piece of a share is cut as NCCL's genericOp cuts it: slices of
// max(piece / chunk_slices, slice_bytes / 32) (granule multiples), at most
// chunk_slices of them. Sender and receiver derive the same cut from the same chunk.
// Per slice a WG does, in order (each part only where its step has it):
//   wait tail (the slice arrived); wait head (the next GPU's slot is free)
//   the copy loop, in iterations of collective_copy_bytes (NCCL's reduceCopy: 16 B
//   per thread unrolled 4 times), each:
//     load data (the local operand); load the FIFO slot
//     compute (add the operands, or a 0-cycle copy)
//     store data (local); store the next GPU's slot
//   set the next GPU's tail; set the previous GPU's head (the slot is consumed)
// The CU queues a store until its compute is done and goes on loading, so the
// iterations stream (the CTA's warps overlap them); the sets release, so a slice's
// flags go out once its stores are acknowledged.
// Steps of one piece, GPU g (c = the chunk, prev / next = g -/+ 1 mod N):
//   reduce-scatter  s = 0..N-1, c = g-s-1: s = 0 load + send; 0 < s < N-1 load,
//                   receive, add, send; s = N-1 (c = g) load, receive, add, store.
//   all-gather      s = 0..N-1, c = g-s: s = 0 load + send (in place: no store);
//                   0 < s < N-1 receive, store, send; s = N-1 receive, store.
//   all-reduce      one kernel, s = 0..2N-2, c = g-s-1: the reduce-scatter's steps,
//                   its step N-1 also sending the sum (the all-gather's step 0),
//                   then the all-gather's receive/store/send steps: 2(N-1) sends.
//   Results: RS: chunk g of `data` on GPU g holds the sum over GPUs of chunk g (the
//   other chunks unchanged); AG: chunk c of `data` on every GPU holds GPU c's chunk
//   c; AR: every chunk on every GPU holds the sum.
// Counters in loops stay affine: a loop over full pieces is unrolled so that one
// iteration sends a multiple of fifo_slices slices (each slot is then a constant),
// and its first pieces are peeled so a head wait never asks for a value below 1.
//

#include <algorithm>
#include <numeric>

#include "collective/channel_program.h"
#include "collective/i_collective_algorithm.h"

namespace t3sim {

namespace {

constexpr std::uint64_t kMaxRingOps = 4'000'000;  // ops of one GPU's ring kernel (about 0.25 GB)

// The slices of a partial piece of `bytes` (NCCL genericOp: chunk_slices slices,
// none below slice_bytes / 32): {offset, bytes} each. At most chunk_slices of them
// (the FIFO's slack depends on it), so one may be up to a granule above slice_bytes
// when a share is a granule longer than whole pieces (its slot holds that).
std::vector<ByteRange> ring_partial_piece(const CollectiveTraceParams& p, std::uint64_t bytes) {
  std::vector<ByteRange> cut;
  if (bytes == 0) return cut;
  const std::uint64_t floor_bytes = align_up(std::max<std::uint64_t>(p.slice_bytes / 32, 1), p.granule);
  std::uint64_t slice = align_up(ceil_div(bytes, p.chunk_slices), p.granule);
  slice = std::max(slice, floor_bytes);
  for (std::uint64_t off = 0; off < bytes; off += slice) cut.push_back({off, std::min(slice, bytes - off)});
  return cut;
}

// Ring steps of a piece: N (reduce-scatter, all-gather), 2N-1 (all-reduce); every
// step but the last sends.
std::uint64_t ring_step_count(const CollectiveTraceParams& p) {
  return p.kind.op() == CollectiveOp::kAllReduce ? 2 * std::uint64_t{p.num_gpus} - 1 : p.num_gpus;
}

// Slices a channel sends per piece, and the pieces one iteration of the piece loop
// holds so it sends a multiple of the FIFO's slots (each slot is then a constant).
std::uint64_t ring_sent_per_piece(const CollectiveTraceParams& p) {
  return (ring_step_count(p) - 1) * p.chunk_slices;
}
std::uint64_t ring_piece_unroll(const CollectiveTraceParams& p) {
  return p.fifo_slices / std::gcd(ring_sent_per_piece(p), std::uint64_t{p.fifo_slices});
}

// Whole pieces every chunk's share of `channel` has (the ring kernels' piece loop).
std::uint64_t ring_full_pieces(const CollectiveTraceParams& p, std::uint32_t channel) {
  const std::uint64_t piece = std::uint64_t{p.chunk_slices} * p.slice_bytes;
  std::uint64_t full = UINT64_MAX;
  for (std::uint32_t c = 0; c < p.num_gpus; ++c) full = std::min(full, collective_share(p, c, channel).bytes / piece);
  return full;
}

// One channel's ring kernel (the comment at the top of this file).
struct RingBuilder : CollectiveGeometry {
  using CollectiveGeometry::CollectiveGeometry;

  static constexpr std::uint32_t kTail = 0, kHead = 1;  // flag indices of a channel

  // What a GPU does at ring step s (the same on every GPU).
  struct RingRole {
    bool load_local = false, recv = false, store_local = false, send = false;
  };
  std::uint32_t ring_steps() const { return static_cast<std::uint32_t>(ring_step_count(p)); }
  RingRole ring_role(std::uint32_t s) const {
    const std::uint32_t last = ring_steps() - 1;
    RingRole r;
    r.recv = s > 0;
    r.send = s < last;
    if (p.kind.op() == CollectiveOp::kReduceScatter) {
      r.load_local = true;
      r.store_local = s == last;
    } else if (p.kind.op() == CollectiveOp::kAllGather) {
      r.load_local = s == 0;
      r.store_local = s > 0 || !p.in_place;
    } else {  // all-reduce: RS steps 0..N-1 (N-1 also sends the sum), AG steps N..2N-2
      r.load_local = s < N;
      r.store_local = s >= N - 1;
    }
    return r;
  }
  // The chunk GPU `gpu` works on at step s of a ring of stride k (the receiver,
  // gpu + k, works on the same one at s+1): the chunk of the GPU s + shift hops back.
  std::uint32_t ring_chunk(std::uint32_t gpu, std::uint32_t s, std::uint32_t k) const {
    const std::int64_t shift = p.kind.op() == CollectiveOp::kAllGather ? 0 : 1;
    return wrap_gpu(static_cast<std::int64_t>(gpu) - (static_cast<std::int64_t>(s) + shift) * k, N);
  }
  std::vector<ByteRange> partial_piece(std::uint64_t bytes) const { return ring_partial_piece(p, bytes); }

  void ring(ChannelProgram& b, std::uint32_t channel) const {
    const std::uint32_t steps = ring_steps();
    const std::uint32_t stride = p.ring_stride(channel);
    const std::uint32_t prev = gpu_at(-static_cast<std::int64_t>(stride)), next = gpu_at(stride);
    const std::uint64_t piece = std::uint64_t{p.chunk_slices} * p.slice_bytes;
    const std::uint64_t fifo = p.fifo_slices;
    const std::uint64_t full_pieces = ring_full_pieces(p, channel);
    const std::uint64_t sent_per_piece = ring_sent_per_piece(p);
    const std::uint64_t unroll = ring_piece_unroll(p);

    // One slice of a step. Counters are affine in the piece loop's variable.
    struct Counter {
      std::int64_t c;  // at the first iteration
      std::int64_t coef;
    };
    const auto copy = static_cast<std::int64_t>(collective_copy_bytes(p));
    // LL / LL128: the slot's lines carry their flags (wire bytes), and the flag sets
    // follow the data instead of a fence (see CollectiveProtocol).
    const std::uint8_t line_flags = p.protocol == CollectiveProtocol::kLl      ? kTraceLl
                                    : p.protocol == CollectiveProtocol::kLl128 ? kTraceLl128
                                                                               : 0;
    const bool unfenced = p.protocol != CollectiveProtocol::kSimple;
    const auto emit_slice = [&](std::uint32_t s, std::int64_t offset, std::int64_t coef_offset,
                                std::int64_t bytes, Counter ks, Counter kr, std::optional<std::uint32_t> var) {
      const RingRole r = ring_role(s);
      // Wait for the slice to arrive and for a free slot at the next GPU (NCCL's
      // waitPeer), then copy it in iterations of `copy` bytes (the CTA's unrolled
      // loop), then post both flags (postPeer: the sets release, Simple's fence).
      if (r.recv) b.wait(kTail, b.affine(kr.c + 1, kr.coef, var));
      if (r.send && ks.c + 1 - static_cast<std::int64_t>(fifo) >= 1)
        b.wait(kHead, b.affine(ks.c + 1 - static_cast<std::int64_t>(fifo), ks.coef, var));
      const auto in_slot = static_cast<std::int64_t>(
          collective_fifo_slot(p, channel, static_cast<std::uint32_t>(static_cast<std::uint64_t>(kr.c) % fifo)));
      const auto out_slot = static_cast<std::int64_t>(
          collective_fifo_slot(p, channel, static_cast<std::uint32_t>(static_cast<std::uint64_t>(ks.c) % fifo)));
      const auto iteration = [&](std::int64_t first, std::int64_t n, std::optional<std::uint32_t> u) {
        const TraceExpr at_data =
            b.affine2(static_cast<std::int64_t>(data) + offset + first, coef_offset, var, copy, u);
        if (r.load_local) b.load(at_data, n, unc);
        if (r.recv) b.load(b.affine(in_slot + first, copy, u), n, true);
        b.compute(n, (r.load_local ? 1 : 0) + (r.recv ? 1 : 0));
        if (r.store_local) b.store(at_data, n, unc, std::nullopt);
        if (r.send) b.store(b.affine(out_slot + first, copy, u), n, true, next, line_flags);
      };
      const std::int64_t full = bytes / copy, rest = bytes % copy;
      if (full == 1) {
        iteration(0, copy, std::nullopt);
      } else if (full > 1) {
        b.loop("u", static_cast<std::uint64_t>(full), [&](std::uint32_t u) { iteration(0, copy, u); });
      }
      if (rest > 0) iteration(full * copy, rest, std::nullopt);
      if (r.send) b.set(next, kTail, b.affine(ks.c + 1, ks.coef, var), unfenced);
      if (r.recv) b.set(prev, kHead, b.affine(kr.c + 1, kr.coef, var), unfenced);
    };

    // A full piece `index` (+ iterations x unroll when in the loop).
    const auto emit_full_piece = [&](std::uint64_t index, std::optional<std::uint32_t> var) {
      const auto idx = static_cast<std::int64_t>(index);
      const auto slice = static_cast<std::int64_t>(p.slice_bytes);
      const std::int64_t step_coef = var ? static_cast<std::int64_t>(unroll * sent_per_piece) : 0;
      const std::int64_t off_coef = var ? static_cast<std::int64_t>(unroll * piece) : 0;
      std::int64_t sent = idx * static_cast<std::int64_t>(sent_per_piece), received = sent;
      for (std::uint32_t s = 0; s < steps; ++s) {
        const RingRole r = ring_role(s);
        const std::uint32_t c = ring_chunk(g, s, stride);
        const ByteRange share = collective_share(p, c, channel);
        for (std::uint32_t j = 0; j < p.chunk_slices; ++j) {
          const std::int64_t off = static_cast<std::int64_t>(share.first + index * piece) + j * slice;
          emit_slice(s, off, off_coef, slice, {sent + j, step_coef}, {received + j, step_coef}, var);
        }
        if (r.send) sent += p.chunk_slices;
        if (r.recv) received += p.chunk_slices;
      }
    };

    // Full pieces: the first `unroll` (at most) peeled, then a loop of whole unrolls,
    // then the ones left.
    const std::uint64_t peeled = std::min(full_pieces, unroll);
    for (std::uint64_t i = 0; i < peeled; ++i) emit_full_piece(i, std::nullopt);
    const std::uint64_t iterations = (full_pieces - peeled) / unroll;
    if (iterations == 1) {
      for (std::uint64_t i = 0; i < unroll; ++i) emit_full_piece(peeled + i, std::nullopt);
    } else if (iterations > 1) {
      b.loop("pieces", iterations, [&](std::uint32_t var) {
        for (std::uint64_t i = 0; i < unroll; ++i) emit_full_piece(peeled + i, var);
      });
    }
    for (std::uint64_t i = peeled + iterations * unroll; i < full_pieces; ++i) emit_full_piece(i, std::nullopt);

    // The partial piece: the rest of each share (cut per chunk; may be empty).
    std::int64_t sent = static_cast<std::int64_t>(full_pieces * sent_per_piece), received = sent;
    for (std::uint32_t s = 0; s < steps; ++s) {
      const RingRole r = ring_role(s);
      const std::uint32_t c = ring_chunk(g, s, stride);
      const ByteRange share = collective_share(p, c, channel);
      const std::uint64_t start = full_pieces * piece;
      const std::vector<ByteRange> slices = partial_piece(share.bytes - start);
      for (std::size_t j = 0; j < slices.size(); ++j) {
        const auto off = static_cast<std::int64_t>(share.first + start + slices[j].first);
        const auto k = static_cast<std::int64_t>(j);
        emit_slice(s, off, 0, static_cast<std::int64_t>(slices[j].bytes), {sent + k, 0}, {received + k, 0},
                   std::nullopt);
      }
      // The receiver at s+1 gets as many as this step sends: the same chunk.
      if (r.send) sent += static_cast<std::int64_t>(slices.size());
      if (r.recv) received += static_cast<std::int64_t>(slices.size());
    }
  }
};

class RingAlgorithm final : public CollectiveAlgorithm {
 public:
  RingAlgorithm(CollectiveOp op, std::vector<std::string_view> aliases) : op_(op), aliases_(std::move(aliases)) {}

  CollectiveOp op() const override { return op_; }
  std::vector<std::string_view> aliases() const override { return aliases_; }
  bool uses_rings() const override { return true; }

  // Each channel's FIFO: fifo_slices slots of a slice and a granule.
  std::uint64_t recv_bytes(const CollectiveTraceParams& p) const override {
    return std::uint64_t{p.channels} * p.fifo_slices * collective_fifo_slot_bytes(p);
  }

  void validate(const CollectiveTraceParams& p) const override {
    // A ring program holds at most 3 x unroll + 1 piece bodies (peeled, the loop's
    // unrolled body, the ones left, the partial piece) of steps x chunk_slices slices
    // of at most 16 ops (waits, sets, a copy loop and its rest): refuse sizes whose
    // programs would not fit in memory.
    const std::uint64_t ops = std::uint64_t{p.channels} * (3 * ring_piece_unroll(p) + 1) * ring_step_count(p) *
                              p.chunk_slices * 16;
    // The channels are at fault when they alone, at one slice per piece, are too many
    // (issue 45, D6: 4,096 channels blamed the size).
    const bool channels_alone = ops / p.chunk_slices > kMaxRingOps;
    if (ops > kMaxRingOps)
      throw CollectiveParamError(channels_alone ? "channels" : "chunk_slices",
                                 fmt::format("{} channels of {} slices per piece and a FIFO of {} make programs of up "
                                             "to {} ops (expected at most {}: fewer {})",
                                             p.channels, p.chunk_slices, p.fifo_slices, ops, kMaxRingOps,
                                             channels_alone ? "channels" : "channels, or chunk or FIFO slices"));
    // Every GPU sends a whole piece's first step before it receives: a FIFO that holds
    // no more than that deadlocks the ring (NCCL: 8 steps against chunks of 4).
    if (p.fifo_slices <= p.chunk_slices)
      throw CollectiveParamError("fifo_slices",
                                 fmt::format("{} slices in flight do not exceed the {} of a piece (expected more, or "
                                             "the ring deadlocks)",
                                             p.fifo_slices, p.chunk_slices));
  }

  void build_channel(ChannelProgram& b, const CollectiveTraceParams& p, std::uint32_t channel) const override {
    RingBuilder(p).ring(b, channel);
  }

  // Each GPU sends (N-1)/N of the array per pass (two for all-reduce), over as many
  // links as the channels' distinct rings use, and a step waits a link latency.
  double link_seconds(const LinkBoundInput& in) const override {
    const double n = in.num_gpus, s = in.array_bytes, bw = in.link_bytes_per_second;
    const double passes = op_ == CollectiveOp::kAllReduce ? 2.0 : 1.0;
    return passes * ((n - 1.0) / n * s / (in.rings_in_use * bw) + (n - 1.0) * in.link_latency_seconds);
  }

  // A ring all-gather on copy engines sends the own chunk straight to every peer: the
  // engines have no FIFO to relay through (ConCCL's all-gather).
  bool has_copy_engine_form() const override { return op_ == CollectiveOp::kAllGather; }
  std::vector<CollectiveCopy> copy_engine_copies(const CollectiveTraceParams& p) const override {
    return direct_all_gather_copies(p);
  }

 private:
  CollectiveOp op_;
  std::vector<std::string_view> aliases_;
};

}  // namespace

std::vector<ByteRange> collective_ring_slices(const CollectiveTraceParams& p, std::uint32_t chunk,
                                              std::uint32_t channel) {
  const ByteRange share = collective_share(p, chunk, channel);
  const std::uint64_t full = ring_full_pieces(p, channel);
  std::vector<ByteRange> out;
  for (std::uint64_t i = 0; i < full * p.chunk_slices; ++i) out.push_back({share.first + i * p.slice_bytes, p.slice_bytes});
  const std::uint64_t start = full * p.chunk_slices * p.slice_bytes;
  for (const ByteRange& r : ring_partial_piece(p, share.bytes - start))
    out.push_back({share.first + start + r.first, r.bytes});
  return out;
}

T3SIM_REGISTER(collective_algorithms, "ring-rs", "ring reduce-scatter: N-1 steps to the next GPU, channels pipelined through FIFOs (NCCL's)",
               [] { return std::make_unique<RingAlgorithm>(CollectiveOp::kReduceScatter, std::vector<std::string_view>{"reduce_scatter", "reduce-scatter"}); })
T3SIM_REGISTER(collective_algorithms, "ring-ag", "ring all-gather: N-1 steps to the next GPU, channels pipelined through FIFOs (NCCL's)",
               [] { return std::make_unique<RingAlgorithm>(CollectiveOp::kAllGather, std::vector<std::string_view>{"all_gather", "all-gather"}); })
T3SIM_REGISTER(collective_algorithms, "ring-ar", "ring all-reduce: the reduce-scatter's steps then the all-gather's, one kernel (NCCL's)",
               [] { return std::make_unique<RingAlgorithm>(CollectiveOp::kAllReduce, std::vector<std::string_view>{"all_reduce", "all-reduce"}); })

}  // namespace t3sim
