#include "collective/collective.h"

#include <algorithm>
#include <numeric>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "collective/channel_program.h"
#include "collective/i_collective_algorithm.h"
#include "sim/config.h"
#include "sim/int_math.h"

namespace t3sim {

// The registered algorithms, each made once: a CollectiveKind points at its entry.
struct RegisteredCollective {
  std::string name;
  std::unique_ptr<CollectiveAlgorithm> algorithm;
};

CollectiveAlgorithms& collective_algorithms() {
  static CollectiveAlgorithms registry;
  return registry;
}

namespace {

// Made at the first look-up (after static initialization has registered them all),
// once for the process: thread-safe, as a function-local static.
const std::vector<RegisteredCollective>& registered_collectives() {
  static const std::vector<RegisteredCollective> made = [] {
    std::vector<RegisteredCollective> out;
    for (const CollectiveAlgorithms::Entry& e : collective_algorithms().entries())
      out.push_back(RegisteredCollective{e.name, e.make()});
    return out;
  }();
  return made;
}

}  // namespace

double CollectiveAlgorithm::bus_bandwidth_factor(std::uint32_t num_gpus) const {
  const double n = num_gpus;
  return (op() == CollectiveOp::kAllReduce ? 2.0 : 1.0) * (n - 1.0) / n;
}

std::vector<std::string> collective_kind_names() {
  std::vector<std::string> names;
  for (const RegisteredCollective& r : registered_collectives()) names.push_back(r.name);
  for (const RegisteredCollective& r : registered_collectives())
    for (const std::string_view alias : r.algorithm->aliases()) names.emplace_back(alias);
  return names;
}

CollectiveKind CollectiveKind::named(std::string_view name) {
  for (const RegisteredCollective& r : registered_collectives()) {
    if (r.name == name) return CollectiveKind(&r);
    for (const std::string_view alias : r.algorithm->aliases())
      if (alias == name) return CollectiveKind(&r);
  }
  const std::vector<std::string> names = collective_algorithms().names();
  const std::string best = closest_match(name, collective_kind_names());
  throw UserError(fmt::format("unknown collective '{}'{} (expected one of {})", name,
                              best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best),
                              fmt::join(names, ", ")));
}

const RegisteredCollective* CollectiveKind::entry() const {
  if (entry_ != nullptr) return entry_;
  static const RegisteredCollective* const ring_rs = named("ring-rs").entry_;
  return ring_rs;
}

const CollectiveAlgorithm& CollectiveKind::algorithm() const { return *entry()->algorithm; }
std::string_view CollectiveKind::name() const { return entry()->name; }
CollectiveOp CollectiveKind::op() const { return algorithm().op(); }
bool CollectiveKind::uses_rings() const { return algorithm().uses_rings(); }

std::string_view to_string(CollectiveKind kind) { return kind.name(); }

CollectiveKind parse_collective_kind(std::string_view text) { return CollectiveKind::named(text); }

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kAllToAll: return "all_to_all";
  }
  return "?";
}

const char* to_string(CollectiveEngine engine) {
  switch (engine) {
    case CollectiveEngine::kCu: return "cu";
    case CollectiveEngine::kDma: return "dma";
    case CollectiveEngine::kT3: return "t3";
  }
  return "?";
}

namespace {

constexpr std::uint64_t kMaxBytes = 1ull << 50;  // array, slice
constexpr std::uint64_t kMaxBase = 1ull << 56;   // base addresses: room for the buffers after them

// Part `i` of `total` units cut into `parts` as equal as possible, the first
// total % parts parts one unit larger: {first unit, units}.
std::pair<std::uint64_t, std::uint64_t> split(std::uint64_t total, std::uint64_t parts, std::uint64_t i) {
  const std::uint64_t base = total / parts, extra = total % parts;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

[[noreturn]] void bad(std::string_view field, const std::string& message) {
  throw CollectiveParamError(std::string(field), message);
}

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

std::uint64_t collective_recv_bytes(const CollectiveTraceParams& p) { return p.kind.algorithm().recv_bytes(p); }

std::uint64_t collective_out_bytes(const CollectiveTraceParams& p) { return p.kind.algorithm().out_bytes(p); }

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
  for (const std::uint32_t k : p.ring_strides) {
    if (k == 0 || k >= p.num_gpus || std::gcd(k, p.num_gpus) != 1)
      bad("ring_strides", fmt::format("{} is no ring of {} GPUs (expected 1..N-1, coprime with N)", k, p.num_gpus));
  }
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
  const std::uint64_t data_end = p.data_base + p.array_bytes;
  const std::uint64_t recv = collective_recv_base(p), recv_end = recv + collective_recv_bytes(p);
  const std::uint64_t out = collective_out_base(p), out_end = out + collective_out_bytes(p);
  auto overlap = [](std::uint64_t a, std::uint64_t a_end, std::uint64_t b, std::uint64_t b_end) {
    return a < b_end && b < a_end;
  };
  if (recv_end > recv && overlap(recv, recv_end, p.data_base, data_end)) {
    bad("recv_base", fmt::format("receive buffer [{:#x}, {:#x}) overlaps the data [{:#x}, {:#x}) (expected disjoint)",
                                 recv, recv_end, p.data_base, data_end));
  }
  if (out_end > out && overlap(out, out_end, p.data_base, data_end)) {
    bad("out_base", fmt::format("output [{:#x}, {:#x}) overlaps the data [{:#x}, {:#x}) (expected disjoint)", out,
                                out_end, p.data_base, data_end));
  }
  if (p.flag_base > (1ull << 62)) bad("flag_base", fmt::format("{} too large (expected below 2^62)", p.flag_base));
  p.kind.algorithm().validate(p);
}

std::vector<KernelTrace> make_collective_traces(const CollectiveTraceParams& p) {
  validate_collective(p);
  KernelTrace t;
  t.name = fmt::format("{}.gpu{}", to_string(p.kind), p.gpu);
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
  const CollectiveAlgorithm& algorithm = p.kind.algorithm();
  for (std::uint32_t ch = 0; ch < p.channels; ++ch) {
    ChannelProgram prog(p, ch);
    algorithm.build_channel(prog, p, ch);
    t.programs.push_back(prog.take());
    t.add_wg(static_cast<std::uint16_t>(ch), {});
  }
  std::vector<KernelTrace> out;
  out.push_back(std::move(t));
  return out;
}

}  // namespace t3sim
