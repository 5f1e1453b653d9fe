#include "trace/collective.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/int_math.h"

namespace t3sim {

namespace {

struct KindName {
  CollectiveKind kind;
  const char* name;
};
constexpr KindName kKindNames[] = {
    {CollectiveKind::kRingReduceScatter, "ring-rs"}, {CollectiveKind::kRingAllGather, "ring-ag"},
    {CollectiveKind::kRingAllReduce, "ring-ar"},     {CollectiveKind::kDirectReduceScatter, "direct-rs"},
    {CollectiveKind::kDirectAllGather, "direct-ag"}, {CollectiveKind::kAllToAll, "all-to-all"},
};

}  // namespace

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kAllToAll: return "all_to_all";
  }
  return "?";
}

const char* to_string(CollectiveAlgorithm algorithm) {
  return algorithm == CollectiveAlgorithm::kDirect ? "direct" : "ring";
}

const char* to_string(CollectiveEngine engine) {
  switch (engine) {
    case CollectiveEngine::kCu: return "cu";
    case CollectiveEngine::kDma: return "dma";
    case CollectiveEngine::kT3: return "t3";
  }
  return "?";
}

std::string_view to_string(CollectiveKind kind) {
  for (const KindName& k : kKindNames) {
    if (k.kind == kind) return k.name;
  }
  return "?";
}

CollectiveKind parse_collective_kind(std::string_view text) {
  for (const KindName& k : kKindNames) {
    if (text == k.name) return k.kind;
  }
  if (text == "reduce_scatter" || text == "reduce-scatter") return CollectiveKind::kRingReduceScatter;
  if (text == "all_gather" || text == "all-gather") return CollectiveKind::kRingAllGather;
  if (text == "all_reduce" || text == "all-reduce") return CollectiveKind::kRingAllReduce;
  if (text == "a2a" || text == "all_to_all") return CollectiveKind::kAllToAll;
  std::vector<std::string> names;
  for (const KindName& k : kKindNames) names.emplace_back(k.name);
  const std::string best = closest_match(text, names);
  throw UserError(
      fmt::format("unknown collective '{}'{} (expected one of ring-rs, ring-ag, ring-ar, direct-rs, "
                  "direct-ag, all-to-all)",
                  text, best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best)));
}

namespace {

constexpr std::uint64_t kMaxBytes = 1ull << 50;  // array, slice
constexpr std::uint64_t kMaxBase = 1ull << 56;   // base addresses: room for the buffers after them
constexpr std::uint64_t kMaxRingOps = 4'000'000;  // ops of one GPU's ring kernel (about 0.25 GB)

// (a mod n) for a possibly negative a.
std::uint32_t wrap(std::int64_t a, std::uint32_t n) {
  const std::int64_t m = a % static_cast<std::int64_t>(n);
  return static_cast<std::uint32_t>(m < 0 ? m + n : m);
}

// Part `i` of `total` units cut into `parts` as equal as possible, the first
// total % parts parts one unit larger: {first unit, units}.
std::pair<std::uint64_t, std::uint64_t> split(std::uint64_t total, std::uint64_t parts, std::uint64_t i) {
  const std::uint64_t base = total / parts, extra = total % parts;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

[[noreturn]] void bad(std::string_view field, const std::string& message) {
  throw CollectiveParamError(std::string(field), message);
}

bool uses_recv(CollectiveKind k) { return k.is_ring() || k == CollectiveKind::kDirectReduceScatter; }

}  // namespace

ByteRange collective_chunk(const CollectiveTraceParams& p, std::uint32_t chunk) {
  const auto [first, granules] = split(p.array_bytes / p.granule, p.num_gpus, chunk);
  return {first * p.granule, granules * p.granule};
}

ByteRange collective_share(const CollectiveTraceParams& p, std::uint32_t chunk, std::uint32_t channel) {
  const ByteRange c = collective_chunk(p, chunk);
  const auto [first, granules] = split(c.bytes / p.granule, p.channels, channel);
  return {c.first + first * p.granule, granules * p.granule};
}

namespace {

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
  return p.kind == CollectiveKind::kRingAllReduce ? 2 * std::uint64_t{p.num_gpus} - 1 : p.num_gpus;
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

std::uint64_t collective_slices(const CollectiveTraceParams& p, std::uint32_t chunk, std::uint32_t channel) {
  return ceil_div(collective_share(p, chunk, channel).bytes, p.slice_bytes);
}

ByteRange collective_a2a_block(const CollectiveTraceParams& p, std::uint32_t receiver, std::uint32_t sender) {
  const std::uint64_t bytes = collective_chunk(p, receiver).bytes;
  return {sender * bytes, bytes};
}

std::uint64_t collective_recv_slot_bytes(const CollectiveTraceParams& p) {
  return ceil_div(p.array_bytes / p.granule, p.num_gpus) * p.granule;
}

std::string_view to_string(CollectiveProtocol p) {
  switch (p) {
    case CollectiveProtocol::kSimple: return "simple";
    case CollectiveProtocol::kLl: return "ll";
    case CollectiveProtocol::kLl128: return "ll128";
  }
  return "?";
}

std::optional<CollectiveProtocol> parse_collective_protocol(std::string_view text) {
  for (const CollectiveProtocol p : {CollectiveProtocol::kSimple, CollectiveProtocol::kLl, CollectiveProtocol::kLl128})
    if (text == to_string(p)) return p;
  return std::nullopt;
}

ChannelPipeline ChannelPipeline::for_protocol(CollectiveProtocol protocol) {
  ChannelPipeline c;
  c.protocol = protocol;
  switch (protocol) {
    case CollectiveProtocol::kSimple: break;
    case CollectiveProtocol::kLl:
      c.step_bytes = 8 * 512 * 8;
      c.slice_steps = c.chunk_steps = 1;
      break;
    case CollectiveProtocol::kLl128:
      c.step_bytes = 120 * 640 * 8 / 128 * 120;
      c.slice_steps = c.chunk_steps = 1;
      break;
  }
  return c;
}

std::uint64_t collective_fifo_slot_bytes(const CollectiveTraceParams& p) { return p.slice_bytes + p.granule; }

std::uint64_t collective_copy_bytes(const CollectiveTraceParams& p) {
  return align_up(std::uint64_t{p.wfs_per_wg} * p.wave_size * 64, p.granule);
}

std::uint64_t collective_recv_bytes(const CollectiveTraceParams& p) {
  if (p.kind.is_ring()) return std::uint64_t{p.channels} * p.fifo_slices * collective_fifo_slot_bytes(p);
  if (p.kind == CollectiveKind::kDirectReduceScatter) return (p.num_gpus - 1) * collective_recv_slot_bytes(p);
  return 0;
}

std::uint64_t collective_fifo_slot(const CollectiveTraceParams& p, std::uint32_t channel, std::uint32_t slot) {
  return collective_recv_base(p) + (std::uint64_t{channel} * p.fifo_slices + slot) * collective_fifo_slot_bytes(p);
}

std::uint64_t collective_recv_base(const CollectiveTraceParams& p) {
  return p.recv_base_set ? p.recv_base : align_up(p.data_base + p.array_bytes, kBufferAlign);
}

std::uint64_t collective_out_base(const CollectiveTraceParams& p) {
  if (p.out_base_set) return p.out_base;
  return align_up(collective_recv_base(p) + collective_recv_bytes(p), kBufferAlign);
}

std::vector<std::uint32_t> coprime_ring_strides(std::uint32_t num_gpus) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t k = 1; 2 * k <= num_gpus; ++k) {
    if (std::gcd(k, num_gpus) != 1) continue;
    out.push_back(k);
    if (num_gpus - k != k) out.push_back(num_gpus - k);
  }
  return out;
}

std::uint64_t collective_flags_used(const CollectiveTraceParams& p) { return std::uint64_t{p.channels} * p.num_gpus; }

std::uint64_t collective_flag(const CollectiveTraceParams& p, std::uint32_t channel, std::uint32_t index) {
  return p.flag_base + std::uint64_t{channel} * p.num_gpus + index;
}

std::string describe(const CollectiveTraceParams& p) {
  return fmt::format(
      "kind={} num_gpus={} gpu={} array_bytes={} element_bytes={} granule={} channels={} slice_bytes={} "
      "fifo_slices={} chunk_slices={} adds_per_cycle={} data_base={:#x} recv_base={:#x} out_base={:#x} "
      "flag_base={} flags={} data={}",
      to_string(p.kind), p.num_gpus, p.gpu, p.array_bytes, p.element_bytes, p.granule, p.channels, p.slice_bytes,
      p.fifo_slices, p.chunk_slices, p.adds_per_cycle, p.data_base, collective_recv_base(p), collective_out_base(p), p.flag_base,
      collective_flags_used(p), p.data_uncached ? "uncached" : "cached") +
         (p.protocol == CollectiveProtocol::kSimple ? std::string() : fmt::format(" protocol={}", to_string(p.protocol))) +
         (p.ring_strides.empty() ? std::string() : fmt::format(" ring_strides={}", fmt::join(p.ring_strides, ",")));
}

void validate_collective(const CollectiveTraceParams& p) {
  if (p.num_gpus < 2 || p.num_gpus > kCollectiveMaxGpus) {
    bad("num_gpus", fmt::format("{} out of range (expected 2..{})", p.num_gpus, kCollectiveMaxGpus));
  }
  if (p.gpu >= p.num_gpus) bad("gpu", fmt::format("{} out of range (expected 0..{})", p.gpu, p.num_gpus - 1));
  if (p.element_bytes == 0 || p.element_bytes > 16) {
    bad("element_bytes", fmt::format("{} out of range (expected 1..16)", p.element_bytes));
  }
  if (p.granule == 0 || p.granule % p.element_bytes != 0) {
    bad("granule", fmt::format("{} is not a whole number of {}-byte elements (expected a positive multiple of "
                               "element_bytes)",
                               p.granule, p.element_bytes));
  }
  if (p.array_bytes == 0 || p.array_bytes % p.granule != 0 || p.array_bytes > kMaxBytes) {
    bad("array_bytes", fmt::format("{} is not a whole number of {}-byte granules (expected a positive multiple of "
                                   "the granule, at most 2^50)",
                                   p.array_bytes, p.granule));
  }
  if (p.channels == 0 || p.channels > 4096)
    bad("channels", fmt::format("{} out of range (expected 1..4096)", p.channels));
  if (p.slice_bytes == 0 || p.slice_bytes % p.granule != 0 || p.slice_bytes > kMaxBytes) {
    bad("slice_bytes", fmt::format("{} is not a multiple of the {}-byte granule (expected a positive multiple)",
                                   p.slice_bytes, p.granule));
  }
  if (p.slice_bytes > UINT32_MAX) bad("slice_bytes", fmt::format("{} too large (expected below 4 GiB)", p.slice_bytes));
  if (p.fifo_slices == 0 || p.fifo_slices > 64)
    bad("fifo_slices", fmt::format("{} out of range (expected 1..64)", p.fifo_slices));
  if (p.chunk_slices == 0 || p.chunk_slices > 64)
    bad("chunk_slices", fmt::format("{} out of range (expected 1..64)", p.chunk_slices));
  // A ring program holds at most 3 x unroll + 1 piece bodies (peeled, the loop's
  // unrolled body, the ones left, the partial piece) of steps x chunk_slices slices
  // of at most 16 ops (waits, sets, a copy loop and its rest): refuse sizes whose
  // programs would not fit in memory.
  if (p.kind.is_ring() && p.fifo_slices > 0 && p.chunk_slices > 0 && p.channels > 0 && p.num_gpus >= 2 &&
      p.num_gpus <= kCollectiveMaxGpus) {
    const std::uint64_t ops = std::uint64_t{p.channels} * (3 * ring_piece_unroll(p) + 1) * ring_step_count(p) *
                              p.chunk_slices * 16;
    // The channels are at fault when they alone, at one slice per piece, are too many
    // (issue 45, D6: 4,096 channels blamed the size).
    const bool channels_alone = ops / p.chunk_slices > kMaxRingOps;
    if (ops > kMaxRingOps)
      bad(channels_alone ? "channels" : "chunk_slices",
          fmt::format("{} channels of {} slices per piece and a FIFO of {} make programs of up to "
                      "{} ops (expected at most {}: fewer {})",
                      p.channels, p.chunk_slices, p.fifo_slices, ops, kMaxRingOps,
                      channels_alone ? "channels" : "channels, or chunk or FIFO slices"));
  }
  // Every GPU sends a whole piece's first step before it receives: a FIFO that holds
  // no more than that deadlocks the ring (NCCL: 8 steps against chunks of 4).
  for (const std::uint32_t k : p.ring_strides) {
    if (k == 0 || k >= p.num_gpus || std::gcd(k, p.num_gpus) != 1)
      bad("ring_strides", fmt::format("{} is no ring of {} GPUs (expected 1..N-1, coprime with N)", k, p.num_gpus));
  }
  if (p.kind.is_ring() && p.fifo_slices <= p.chunk_slices)
    bad("fifo_slices", fmt::format("{} slices in flight do not exceed the {} of a piece (expected more, or the "
                                   "ring deadlocks)",
                                   p.fifo_slices, p.chunk_slices));
  if (p.wfs_per_wg == 0 || p.wfs_per_wg > 1024) {
    bad("wfs_per_wg", fmt::format("{} out of range (expected 1..1024)", p.wfs_per_wg));
  }
  if (p.wave_size == 0 || p.wave_size > 1024)
    bad("wave_size", fmt::format("{} out of range (expected 1..1024)", p.wave_size));
  if (p.adds_per_cycle == 0) bad("adds_per_cycle", "0 (expected at least 1)");
  struct Base {
    const char* field;
    std::uint64_t value;
  };
  for (const Base& b : {Base{"data_base", p.data_base}, Base{"recv_base", collective_recv_base(p)},
                        Base{"out_base", collective_out_base(p)}}) {
    if (b.value % p.granule != 0 || b.value > kMaxBase) {
      bad(b.field,
          fmt::format("{:#x} is not granule-aligned below 2^56 (expected a multiple of {})", b.value, p.granule));
    }
  }
  // The buffers a kind uses must not overlap: a remote store into recv/out would
  // clobber the peer's input.
  const std::uint64_t slot = collective_recv_slot_bytes(p);
  const std::uint64_t data_end = p.data_base + p.array_bytes;
  const std::uint64_t recv = collective_recv_base(p), recv_end = recv + collective_recv_bytes(p);
  const std::uint64_t out = collective_out_base(p), out_end = out + p.num_gpus * slot;
  auto overlap = [](std::uint64_t a, std::uint64_t a_end, std::uint64_t b, std::uint64_t b_end) {
    return a < b_end && b < a_end;
  };
  if (uses_recv(p.kind) && overlap(recv, recv_end, p.data_base, data_end)) {
    bad("recv_base", fmt::format("receive buffer [{:#x}, {:#x}) overlaps the data [{:#x}, {:#x}) (expected disjoint)",
                                 recv, recv_end, p.data_base, data_end));
  }
  if (p.kind == CollectiveKind::kAllToAll && overlap(out, out_end, p.data_base, data_end)) {
    bad("out_base", fmt::format("output [{:#x}, {:#x}) overlaps the data [{:#x}, {:#x}) (expected disjoint)", out,
                                out_end, p.data_base, data_end));
  }
  if (p.flag_base > (1ull << 62)) bad("flag_base", fmt::format("{} too large (expected below 2^62)", p.flag_base));
}

namespace {

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

// What each kind does on one channel (the header describes the algorithms).
struct Builder {
  const CollectiveTraceParams& p;
  std::uint32_t N, g;
  std::uint64_t data, recv, out, slot;
  bool unc;  // data_uncached

  explicit Builder(const CollectiveTraceParams& params)
      : p(params),
        N(params.num_gpus),
        g(params.gpu),
        data(params.data_base),
        recv(collective_recv_base(params)),
        out(collective_out_base(params)),
        slot(collective_recv_slot_bytes(params)),
        unc(params.data_uncached) {}

  std::uint32_t gpu_at(std::int64_t offset) const { return wrap(static_cast<std::int64_t>(g) + offset, N); }
  std::uint64_t slot_base(std::uint32_t s) const { return recv + s * slot; }
  std::int64_t chunk_first(std::uint32_t c) const { return static_cast<std::int64_t>(collective_chunk(p, c).first); }
  // Direct kernels: the distances 1..N-1, starting at channel mod (N-1) + 1 so the
  // channels' first sends go to different peers (all links busy from the start).
  std::vector<std::uint32_t> distances(std::uint32_t channel) const {
    std::vector<std::uint32_t> order;
    for (std::uint32_t k = 0; k + 1 < N; ++k) order.push_back(1 + (channel + k) % (N - 1));
    return order;
  }

  // --- Ring kernels: the channel pipeline (see the header) ---

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
    if (p.kind == CollectiveKind::kRingReduceScatter) {
      r.load_local = true;
      r.store_local = s == last;
    } else if (p.kind == CollectiveKind::kRingAllGather) {
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
    const std::int64_t shift = p.kind == CollectiveKind::kRingAllGather ? 0 : 1;
    return wrap(static_cast<std::int64_t>(gpu) - (static_cast<std::int64_t>(s) + shift) * k, N);
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

  void direct_reduce_scatter(ChannelProgram& b, std::uint32_t channel) const {
    for (const std::uint32_t j : distances(channel)) {
      const std::uint32_t d = gpu_at(j);
      b.for_slices(d, "p", [&](const Slices& x, std::int64_t off) {
        b.load(b.at(x, data, off), x.bytes, unc);
        b.compute(x.bytes, 1);
        b.store(b.at(x, slot_base(j - 1), off - chunk_first(d)), x.bytes, true, d);
        b.set(d, j, b.done(x));
      });
    }
    b.for_slices(g, "r", [&](const Slices& x, std::int64_t off) {
      b.load(b.at(x, data, off), x.bytes, unc);
      for (std::uint32_t j = 1; j < N; ++j) b.wait(j, b.done(x));
      for (std::uint32_t j = 1; j < N; ++j) b.load(b.at(x, slot_base(j - 1), off - chunk_first(g)), x.bytes, true);
      b.compute(x.bytes, N);
      b.store(b.at(x, data, off), x.bytes, unc, std::nullopt);
    });
  }

  void direct_all_gather(ChannelProgram& b, std::uint32_t channel) const {
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

  void all_to_all(ChannelProgram& b, std::uint32_t channel) const {
    for (const std::uint32_t j : distances(channel)) {
      const std::uint32_t d = gpu_at(j);
      const ByteRange block = collective_a2a_block(p, d, g);
      b.for_slices(d, "p", [&](const Slices& x, std::int64_t off) {
        b.load(b.at(x, data, off), x.bytes, unc);
        b.compute(x.bytes, 1);
        b.store(b.at(x, out + block.first, off - chunk_first(d)), x.bytes, true, d);
        b.set(d, j, b.done(x));
      });
    }
    const ByteRange own = collective_a2a_block(p, g, g);
    b.for_slices(g, "own", [&](const Slices& x, std::int64_t off) {
      b.load(b.at(x, data, off), x.bytes, unc);
      b.compute(x.bytes, 1);
      b.store(b.at(x, out + own.first, off - chunk_first(g)), x.bytes, true, std::nullopt);
    });
    // Every sender sends us its chunk g.
    wait_for_senders(b, channel, [&](std::uint32_t) { return g; });
  }

  // Direct kernels end once the N-1 senders' slices of this channel arrived;
  // chunk_of(j) = the chunk the sender at distance j sends us.
  template <class ChunkOf>
  void wait_for_senders(ChannelProgram& b, std::uint32_t channel, ChunkOf chunk_of) const {
    for (std::uint32_t j = 1; j < N; ++j) {
      const std::uint64_t n = collective_slices(p, chunk_of(j), channel);
      if (n > 0) b.wait(j, b.constant(n));
    }
  }
};

KernelTrace make_kernel(const CollectiveTraceParams& p, std::string name) {
  KernelTrace t;
  t.name = std::move(name);
  t.attrs.emplace_back("generator", "t3sim CU collective");
  t.attrs.emplace_back("kind", std::string(to_string(p.kind)));
  t.attrs.emplace_back("num_gpus", fmt::format("{}", p.num_gpus));
  t.attrs.emplace_back("gpu", fmt::format("{}", p.gpu));
  t.attrs.emplace_back("array_bytes", fmt::format("{}", p.array_bytes));
  t.attrs.emplace_back("channels", fmt::format("{}", p.channels));
  t.attrs.emplace_back("slice_bytes", fmt::format("{}", p.slice_bytes));
  t.attrs.emplace_back("fifo_slices", fmt::format("{}", p.fifo_slices));
  t.attrs.emplace_back("chunk_slices", fmt::format("{}", p.chunk_slices));
  t.attrs.emplace_back("flag_base", fmt::format("{}", p.flag_base));
  t.attrs.emplace_back("collective", describe(p));
  t.resources.wfs_per_wg = p.wfs_per_wg;
  t.resources.threads_per_wg = p.wfs_per_wg * p.wave_size;
  t.resources.regs_per_thread = p.regs_per_thread;
  t.resources.lds_bytes = p.lds_bytes;

  const Builder b(p);
  for (std::uint32_t ch = 0; ch < p.channels; ++ch) {
    ChannelProgram prog(p, ch);
    if (p.kind.is_ring()) b.ring(prog, ch);
    else if (p.kind == CollectiveKind::kDirectReduceScatter) b.direct_reduce_scatter(prog, ch);
    else if (p.kind == CollectiveKind::kDirectAllGather) b.direct_all_gather(prog, ch);
    else if (p.kind == CollectiveKind::kAllToAll) b.all_to_all(prog, ch);
    t.programs.push_back(prog.take());
    t.add_wg(static_cast<std::uint16_t>(ch), {});
  }
  return t;
}

}  // namespace

std::vector<KernelTrace> make_collective_traces(const CollectiveTraceParams& p) {
  validate_collective(p);
  std::vector<KernelTrace> out;
  out.push_back(make_kernel(p, fmt::format("{}.gpu{}", to_string(p.kind), p.gpu)));
  return out;
}

}  // namespace t3sim
