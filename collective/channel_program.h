#pragma once
// The toolkit every collective algorithm builds its CU kernel with
// (collective/algorithms/*.cpp): ChannelProgram emits one channel's (one WG's)
// trace program op by op (loads, stores local or remote, the compute between them,
// flag waits and sets, loops with affine counters), and CollectiveGeometry holds the
// addresses and peers a GPU's kernel works with.
//
// Compute rule: every store follows exactly one compute whose load group (the loads
// since the previous compute, ComputeUnit) holds exactly the operands the store
// carries the element-wise sum of:
//   reduction of K operands: cycles = ceil((K-1) x elements / adds_per_cycle),
//                            flops = (K-1) x elements;
//   copy (one operand):      a 0-cycle compute (no flops): it only closes the load
//                            group, so the CU orders the store after its load.
//
// Flags: a channel has N of them (collective_flag: flag_base + channel x N + index);
// a set is remote (to the peer's flag table) and releases: it leaves once the WG's
// earlier stores are acknowledged and its computes done. A wait holds the WG until
// its own flag reaches the value.
//
// Simplification (models/cu/README.md): a load of an address the same WG has just
// stored is not ordered after that store, so a kernel never reads back what it
// stored itself; what it reads after a flag wait (a peer's stores) is ordered.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "collective/collective.h"
#include "sim/int_math.h"
#include "trace/trace.h"

namespace t3sim {

// (a mod n) for a possibly negative a.
inline std::uint32_t wrap_gpu(std::int64_t a, std::uint32_t n) {
  const std::int64_t m = a % static_cast<std::int64_t>(n);
  return static_cast<std::uint32_t>(m < 0 ? m + n : m);
}

// One channel's program, built op by op. No WG parameters: loop variables take
// slots 0, 1, ... (one per loop name: the ring kernels' copy loops, nested in the
// piece loop, all share the name "u").
class ChannelProgram {
 public:
  ChannelProgram(const CollectiveTraceParams& p, std::uint32_t channel) : p_(p), channel_(channel) {
    prog_.name = fmt::format("channel_{}", channel);
  }

  // One block of slices of a share: `count` slices of `bytes` each starting at
  // slice index `first`, walked by loop variable `var` (or a single slice when
  // var is unset).
  struct Slices {
    std::optional<std::uint32_t> var;
    std::int64_t first = 0;
    std::int64_t bytes = 0;
  };

  // Calls body(slices, share offset) for the full slices of channel's share of
  // `chunk` (a loop named `loop` when more than one) and then for the last partial
  // one. Nothing for an empty share.
  template <class Body>
  void for_slices(std::uint32_t chunk, const std::string& loop, Body body) {
    const ByteRange share = collective_share(p_, chunk, channel_);
    const std::uint64_t full = share.bytes / p_.slice_bytes, tail = share.bytes % p_.slice_bytes;
    const auto off = static_cast<std::int64_t>(share.first);
    const auto slice = static_cast<std::int64_t>(p_.slice_bytes);
    if (full == 1) {
      body(Slices{std::nullopt, 0, slice}, off);
    } else if (full > 1) {
      this->loop(loop, full, [&](std::uint32_t var) { body(Slices{var, 0, slice}, off); });
    }
    if (tail > 0) body(Slices{std::nullopt, static_cast<std::int64_t>(full), static_cast<std::int64_t>(tail)}, off);
  }

  // base + offset + slice index x slice_bytes
  TraceExpr at(const Slices& s, std::uint64_t base, std::int64_t offset) {
    const auto slice = static_cast<std::int64_t>(p_.slice_bytes);
    const std::int64_t c = static_cast<std::int64_t>(base) + offset + s.first * slice;
    return s.var ? prog_.expr(c, {{slice, *s.var}}) : prog_.expr(c);
  }
  // The flag value after this slice: slice index + 1.
  TraceExpr done(const Slices& s) { return s.var ? prog_.expr(s.first + 1, {{1, *s.var}}) : prog_.expr(s.first + 1); }

  void load(TraceExpr addr, std::int64_t bytes, bool uncached) {
    TraceOp op = range(TraceOpKind::kLoad, addr, bytes);
    if (uncached) op.flags |= kTraceUncached;
    prog_.ops.push_back(op);
  }
  void store(TraceExpr addr, std::int64_t bytes, bool uncached, std::optional<std::uint32_t> peer,
             std::uint8_t line_flags = 0) {
    TraceOp op = range(TraceOpKind::kStore, addr, bytes);
    if (uncached) op.flags |= kTraceUncached;
    op.flags |= line_flags;
    if (peer) {
      op.flags |= kTraceRemote;
      op.arg[4] = prog_.expr(*peer);
    }
    prog_.ops.push_back(op);
  }
  // The compute over `operands` loaded operands of `bytes` each (see the header:
  // adds for a reduction, 0 cycles for a copy).
  void compute(std::int64_t bytes, std::uint32_t operands) {
    const std::uint64_t adds = std::uint64_t{operands - 1} * (static_cast<std::uint64_t>(bytes) / p_.element_bytes);
    TraceOp op;
    op.kind = TraceOpKind::kCompute;
    op.arg[0] = prog_.expr(static_cast<std::int64_t>(ceil_div(adds, p_.adds_per_cycle)));
    op.arg[1] = prog_.expr(static_cast<std::int64_t>(adds));
    prog_.ops.push_back(op);
  }
  void wait(std::uint32_t index, TraceExpr value) {
    TraceOp op;
    op.kind = TraceOpKind::kWait;
    op.arg[0] = prog_.expr(static_cast<std::int64_t>(collective_flag(p_, channel_, index)));
    op.arg[1] = value;
    prog_.ops.push_back(op);
  }
  void set(std::uint32_t peer, std::uint32_t index, TraceExpr value, bool unfenced = false) {
    TraceOp op;
    op.kind = TraceOpKind::kSet;
    op.flags = kTraceRemote | (unfenced ? kTraceUnfenced : 0);
    op.arg[0] = prog_.expr(static_cast<std::int64_t>(collective_flag(p_, channel_, index)));
    op.arg[1] = value;
    op.arg[4] = prog_.expr(peer);
    prog_.ops.push_back(op);
  }

  TraceExpr constant(std::uint64_t v) { return prog_.expr(static_cast<std::int64_t>(v)); }
  // c + coef x var (just c without a loop variable).
  TraceExpr affine(std::int64_t c, std::int64_t coef, std::optional<std::uint32_t> var) {
    return var && coef != 0 ? prog_.expr(c, {{coef, *var}}) : prog_.expr(c);
  }
  // c + coef x var + coef2 x var2 (each term only with its variable).
  TraceExpr affine2(std::int64_t c, std::int64_t coef, std::optional<std::uint32_t> var, std::int64_t coef2,
                    std::optional<std::uint32_t> var2) {
    std::vector<TraceTerm> terms;
    if (var && coef != 0) terms.push_back(TraceTerm{coef, *var});
    if (var2 && coef2 != 0) terms.push_back(TraceTerm{coef2, *var2});
    return prog_.expr(c, terms);
  }
  // A loop of `count` iterations around what body() emits; body gets its variable.
  // Loops that follow each other under one name share its variable slot.
  template <class Body>
  void loop(const std::string& name, std::uint64_t count, Body body) {
    const auto same = std::find(prog_.loop_vars.begin(), prog_.loop_vars.end(), name);
    const auto var = static_cast<std::uint32_t>(same - prog_.loop_vars.begin());
    if (same == prog_.loop_vars.end()) prog_.loop_vars.push_back(name);
    const auto loop_pc = static_cast<std::uint32_t>(prog_.ops.size());
    TraceOp op;
    op.kind = TraceOpKind::kLoop;
    op.loop_var = static_cast<std::uint8_t>(var);
    op.arg[0] = prog_.expr(static_cast<std::int64_t>(count));
    prog_.ops.push_back(op);
    body(var);
    TraceOp end;
    end.kind = TraceOpKind::kEnd;
    end.jump = loop_pc;
    prog_.ops[loop_pc].jump = static_cast<std::uint32_t>(prog_.ops.size());
    prog_.ops.push_back(end);
  }
  TraceProgram take() { return std::move(prog_); }

 private:
  TraceOp range(TraceOpKind kind, TraceExpr addr, std::int64_t bytes) {
    TraceOp op;
    op.kind = kind;
    op.arg[0] = addr;
    op.arg[1] = prog_.expr(bytes);
    op.arg[2] = prog_.expr(1);
    op.arg[3] = prog_.expr(bytes);
    return op;
  }

  const CollectiveTraceParams& p_;
  std::uint32_t channel_;
  TraceProgram prog_;
};

using Slices = ChannelProgram::Slices;

// Where GPU p.gpu's kernel reads and writes, and who its peers are.
struct CollectiveGeometry {
  const CollectiveTraceParams& p;
  std::uint32_t N, g;
  std::uint64_t data, recv, out, slot;
  bool unc;  // data_uncached

  explicit CollectiveGeometry(const CollectiveTraceParams& params)
      : p(params),
        N(params.num_gpus),
        g(params.gpu),
        data(params.data_base),
        recv(collective_recv_base(params)),
        out(collective_out_base(params)),
        slot(collective_recv_slot_bytes(params)),
        unc(params.data_uncached) {}

  std::uint32_t gpu_at(std::int64_t offset) const { return wrap_gpu(static_cast<std::int64_t>(g) + offset, N); }
  std::uint64_t slot_base(std::uint32_t s) const { return recv + s * slot; }
  std::int64_t chunk_first(std::uint32_t c) const { return static_cast<std::int64_t>(collective_chunk(p, c).first); }
  // Direct kernels: the distances 1..N-1, starting at channel mod (N-1) + 1 so the
  // channels' first sends go to different peers (all links busy from the start).
  std::vector<std::uint32_t> distances(std::uint32_t channel) const {
    std::vector<std::uint32_t> order;
    for (std::uint32_t k = 0; k + 1 < N; ++k) order.push_back(1 + (channel + k) % (N - 1));
    return order;
  }
  // The direct kernels' sends: for each distance j (rotated per channel), chunk g+j of
  // the array to GPU g+j, whose copy begins at dst(j, d) there; each slice copied
  // (load, 0-cycle compute, remote store) and counted on the receiver's flag j.
  template <class Dst>
  void send_chunks_to_peers(ChannelProgram& b, std::uint32_t channel, Dst dst) const {
    for (const std::uint32_t j : distances(channel)) {
      const std::uint32_t d = gpu_at(j);
      const std::uint64_t at = dst(j, d);
      b.for_slices(d, "p", [&](const Slices& x, std::int64_t off) {
        b.load(b.at(x, data, off), x.bytes, unc);
        b.compute(x.bytes, 1);
        b.store(b.at(x, at, off - chunk_first(d)), x.bytes, true, d);
        b.set(d, j, b.done(x));
      });
    }
  }
  // Kernels without a FIFO end once the N-1 senders' slices of this channel arrived
  // (flag index j, the distance); chunk_of(j) = the chunk the sender at distance j
  // sends us.
  template <class ChunkOf>
  void wait_for_senders(ChannelProgram& b, std::uint32_t channel, ChunkOf chunk_of) const {
    for (std::uint32_t j = 1; j < N; ++j) {
      const std::uint64_t n = collective_slices(p, chunk_of(j), channel);
      if (n > 0) b.wait(j, b.constant(n));
    }
  }
};

}  // namespace t3sim
