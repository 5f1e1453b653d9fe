// CU collective traces (collective/collective.h): structure, byte and op accounting, and a
// functional interpreter that runs the N GPUs' traces together and checks the
// collective's result.

#include "collective/collective.h"
#include "collective/i_collective_algorithm.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "trace/trace.h"

namespace t3sim {
namespace {

using ::testing::HasSubstr;

// Every registered algorithm (made at the first call: after static initialization).
std::vector<CollectiveKind> all_kinds() {
  std::vector<CollectiveKind> out;
  for (const std::string& name : collective_algorithms().names()) out.push_back(CollectiveKind::named(name));
  return out;
}

CollectiveTraceParams params(CollectiveKind kind, std::uint32_t n, std::uint64_t array, std::uint32_t channels,
                             std::uint64_t slice) {
  CollectiveTraceParams p;
  p.kind = kind;
  p.num_gpus = n;
  p.array_bytes = array;
  p.channels = channels;
  p.slice_bytes = slice;
  return p;
}

CollectiveTraceParams on_gpu(CollectiveTraceParams p, std::uint32_t g) {
  p.gpu = g;
  return p;
}

std::uint32_t wrap(std::int64_t a, std::uint32_t n) {
  const std::int64_t m = a % n;
  return static_cast<std::uint32_t>(m < 0 ? m + n : m);
}

// ---------------------------------------------------------------------------
// Functional interpreter: every GPU's kernels, WGs stepped by WgExpander, memory as
// one 64-bit value per granule. A load reads its granules (an unwritten granule is
// an error: someone read before the data arrived), a compute closes the load group
// (its value is the element-wise sum of the group's loads), a store writes the last
// compute's value locally or on the peer, set/wait use per-GPU flag tables. A GPU
// starts its next kernel when all WGs of the current one ended (stream order).

struct Schedule {
  std::uint32_t burst = 1;  // ops per WG per turn (large: run until blocked)
  bool reverse = false;     // visit GPUs and WGs in descending order
};

class Interpreter {
 public:
  Interpreter(std::uint32_t n, std::uint64_t granule) : granule_(granule), mem_(n), flags_(n), gpus_(n) {}

  std::map<std::uint64_t, std::uint64_t>& memory(std::uint32_t g) { return mem_[g]; }
  void add_kernels(std::uint32_t g, std::vector<KernelTrace> kernels) { gpus_[g].kernels = std::move(kernels); }

  // Runs to completion; "" on success, else what went wrong (deadlock, bad op).
  std::string run(const Schedule& s) {
    const auto n = static_cast<std::uint32_t>(gpus_.size());
    for (std::uint32_t g = 0; g < n; ++g) start_next(g);
    for (;;) {
      bool progress = false, all_done = true;
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t g = s.reverse ? n - 1 - i : i;
        Gpu& gpu = gpus_[g];
        if (gpu.kernel >= gpu.kernels.size()) continue;
        all_done = false;
        bool kernel_done = true;
        const auto wgs = static_cast<std::uint32_t>(gpu.wgs.size());
        for (std::uint32_t j = 0; j < wgs; ++j) {
          const std::uint32_t w = s.reverse ? wgs - 1 - j : j;
          for (std::uint32_t k = 0; k < s.burst && !gpu.wgs[w].done; ++k) {
            if (!step(g, w)) break;
            progress = true;
          }
          if (!error_.empty()) return error_;
          kernel_done = kernel_done && gpu.wgs[w].done;
        }
        if (kernel_done) {
          ++gpu.kernel;
          start_next(g);
          progress = true;
        }
      }
      if (all_done) return "";
      if (!progress) return deadlock_report();
    }
  }

 private:
  struct Wg {
    WgExpander x;
    WgOp op;
    bool has_op = false;
    bool done = false;
    std::vector<std::uint64_t> group;  // sum of the loads since the last compute
    bool group_open = false;
    std::vector<std::uint64_t> value;  // the last compute's value
    bool has_value = false;
  };
  struct Gpu {
    std::vector<KernelTrace> kernels;
    std::size_t kernel = 0;
    std::vector<Wg> wgs;
  };

  void start_next(std::uint32_t g) {
    Gpu& gpu = gpus_[g];
    gpu.wgs.clear();
    if (gpu.kernel >= gpu.kernels.size()) return;
    const KernelTrace& t = gpu.kernels[gpu.kernel];
    gpu.wgs.resize(t.num_wgs());
    for (std::uint32_t w = 0; w < t.num_wgs(); ++w) gpu.wgs[w].x.reset(t, w);
  }

  void fail(std::uint32_t g, std::uint32_t w, const std::string& what) {
    if (error_.empty()) {
      error_ = fmt::format("GPU {} kernel {} WG {} op {} ({}): {}", g, gpus_[g].kernels[gpus_[g].kernel].name, w,
                           gpus_[g].wgs[w].op.op_index, to_string(gpus_[g].wgs[w].op.kind), what);
    }
  }

  // Executes the WG's next op; false if it is blocked, done or failed.
  bool step(std::uint32_t g, std::uint32_t w) {
    Wg& wg = gpus_[g].wgs[w];
    if (!wg.has_op) {
      if (!wg.x.next(wg.op)) {
        wg.done = true;
        return true;
      }
      wg.has_op = true;
    }
    const WgOp& op = wg.op;
    switch (op.kind) {
      case TraceOpKind::kLoad: {
        if (op.addr() % granule_ != 0 || op.bytes() % granule_ != 0 || op.rows() != 1 || op.bytes() == 0) {
          fail(g, w, "load not a whole number of granules in one row");
          return false;
        }
        std::vector<std::uint64_t> words;
        for (std::uint64_t a = op.addr(); a < op.addr() + op.bytes(); a += granule_) {
          const auto it = mem_[g].find(a / granule_);
          if (it == mem_[g].end()) {
            fail(g, w, fmt::format("reads unwritten address {:#x}", a));
            return false;
          }
          words.push_back(it->second);
        }
        if (!wg.group_open) {
          wg.group = words;
          wg.group_open = true;
        } else if (wg.group.size() != words.size()) {
          fail(g, w, "loads of one group differ in size");
          return false;
        } else {
          for (std::size_t i = 0; i < words.size(); ++i) wg.group[i] += words[i];
        }
        break;
      }
      case TraceOpKind::kCompute:
        if (!wg.group_open) {
          fail(g, w, "a compute without loads");
          return false;
        }
        wg.value = std::move(wg.group);
        wg.group.clear();
        wg.group_open = false;
        wg.has_value = true;
        break;
      case TraceOpKind::kStore: {
        if (wg.group_open || !wg.has_value) {
          fail(g, w, "a store not directly after its compute (loads pending or no compute)");
          return false;
        }
        if (op.addr() % granule_ != 0 || op.rows() != 1 || op.bytes() != wg.value.size() * granule_) {
          fail(g, w, "store size differs from its compute's loads");
          return false;
        }
        if (op.remote() && (op.peer < 0 || static_cast<std::size_t>(op.peer) >= mem_.size() ||
                            static_cast<std::uint32_t>(op.peer) == g)) {
          fail(g, w, "bad peer");
          return false;
        }
        auto& target = mem_[op.remote() ? static_cast<std::uint32_t>(op.peer) : g];
        for (std::size_t i = 0; i < wg.value.size(); ++i) target[op.addr() / granule_ + i] = wg.value[i];
        break;
      }
      case TraceOpKind::kSet: {
        if (!op.remote()) {
          fail(g, w, "collective sets are remote");
          return false;
        }
        std::uint64_t& f = flags_[static_cast<std::uint32_t>(op.peer)][op.flag()];
        f = std::max(f, op.value());
        break;
      }
      case TraceOpKind::kWait: {
        const auto it = flags_[g].find(op.flag());
        if ((it == flags_[g].end() ? 0 : it->second) < op.value()) return false;
        break;
      }
      default: break;
    }
    wg.has_op = false;
    return true;
  }

  std::string deadlock_report() const {
    std::string r = "deadlock:";
    for (std::size_t g = 0; g < gpus_.size(); ++g) {
      for (std::size_t w = 0; w < gpus_[g].wgs.size(); ++w) {
        const Wg& wg = gpus_[g].wgs[w];
        if (!wg.done && wg.has_op && wg.op.kind == TraceOpKind::kWait) {
          r += fmt::format(" [GPU {} WG {} waits flag {} >= {}]", g, w, wg.op.flag(), wg.op.value());
        }
      }
    }
    return r;
  }

  std::uint64_t granule_;
  std::vector<std::map<std::uint64_t, std::uint64_t>> mem_;    // granule index -> value
  std::vector<std::map<std::uint64_t, std::uint64_t>> flags_;  // flag id -> value
  std::vector<Gpu> gpus_;
  std::string error_;
};

std::uint64_t initial(std::uint32_t g, std::uint64_t granule_index) {
  return (g + 1) * 0x9E3779B97F4A7C15ull ^ (granule_index * 0xBF58476D1CE4E5B9ull + 12345);
}

// Runs the collective on all GPUs with `traces_of(g)`, then checks the result the
// header documents. Returns "" or what went wrong.
std::string run_and_check(const CollectiveTraceParams& p, const Schedule& s,
                          const std::function<std::vector<KernelTrace>(std::uint32_t)>& traces_of) {
  const std::uint32_t n = p.num_gpus;
  const std::uint64_t gr = p.granule;
  Interpreter m(n, gr);
  const std::uint64_t first = p.data_base / gr, count = p.array_bytes / gr;
  for (std::uint32_t g = 0; g < n; ++g) {
    for (std::uint64_t k = 0; k < count; ++k) m.memory(g)[first + k] = initial(g, k);
    m.add_kernels(g, traces_of(g));
  }
  const std::string error = m.run(s);
  if (!error.empty()) return error;

  auto sum = [&](std::uint64_t k) {
    std::uint64_t v = 0;
    for (std::uint32_t g = 0; g < n; ++g) v += initial(g, k);
    return v;
  };
  auto chunk_of = [&](std::uint64_t k) {
    for (std::uint32_t c = 0; c < n; ++c) {
      const ByteRange r = collective_chunk(p, c);
      if (k * gr >= r.first && k * gr < r.first + r.bytes) return c;
    }
    return n;
  };
  const std::uint64_t out = collective_out_base(p) / gr;
  for (std::uint32_t g = 0; g < n; ++g) {
    auto& mem = m.memory(g);
    auto word = [&](std::uint64_t index) -> std::optional<std::uint64_t> {
      const auto it = mem.find(index);
      if (it == mem.end()) return std::nullopt;
      return it->second;
    };
    for (std::uint64_t k = 0; k < count; ++k) {
      const std::uint32_t c = chunk_of(k);
      std::uint64_t want = initial(g, k);  // unchanged unless below
      switch (p.kind.op()) {
        case CollectiveOp::kReduceScatter:
          if (c == g) want = sum(k);
          break;
        case CollectiveOp::kAllGather: want = initial(c, k); break;
        case CollectiveOp::kAllReduce: want = sum(k); break;
        case CollectiveOp::kAllToAll: break;
      }
      if (word(first + k) != want) return fmt::format("GPU {} data granule {} (chunk {}) wrong", g, k, c);
    }
    if (p.kind == CollectiveKind::named("all-to-all")) {
      // out block c (chunk g's size) holds GPU c's chunk g.
      const ByteRange mine = collective_chunk(p, g);
      for (std::uint32_t c = 0; c < n; ++c) {
        const ByteRange block = collective_a2a_block(p, g, c);
        for (std::uint64_t i = 0; i < block.bytes / gr; ++i) {
          if (word(out + block.first / gr + i) != initial(c, mine.first / gr + i)) {
            return fmt::format("GPU {} out block {} granule {} wrong", g, c, i);
          }
        }
      }
    }
  }
  return "";
}

std::vector<KernelTrace> traces_for(const CollectiveTraceParams& p, std::uint32_t g) {
  return make_collective_traces(on_gpu(p, g));
}

// ---------------------------------------------------------------------------
// Expected totals, from the chunk/share helpers.

bool ring(const CollectiveTraceParams& p) { return p.kind.uses_rings(); }

// The sizes of chunk `chunk`'s load/compute/store groups over all channels (ring:
// the piece cut, each slice in copy-loop iterations of collective_copy_bytes; direct:
// slice_bytes pieces).
std::vector<std::uint64_t> slice_sizes(const CollectiveTraceParams& p, std::uint32_t chunk) {
  std::vector<std::uint64_t> out;
  for (std::uint32_t k = 0; k < p.channels; ++k) {
    if (ring(p)) {
      std::uint64_t next = collective_share(p, chunk, k).first;
      for (const ByteRange& r : collective_ring_slices(p, chunk, k)) {
        EXPECT_EQ(r.first, next) << "slices tile the share in order";
        EXPECT_LE(r.bytes, collective_fifo_slot_bytes(p)) << "a slice fits its FIFO slot";
        next = r.first + r.bytes;
        for (std::uint64_t left = r.bytes; left > 0;) {
          out.push_back(std::min(left, collective_copy_bytes(p)));
          left -= out.back();
        }
      }
      EXPECT_EQ(next, collective_share(p, chunk, k).first + collective_share(p, chunk, k).bytes);
    } else {
      for (std::uint64_t left = collective_share(p, chunk, k).bytes; left > 0;) {
        out.push_back(std::min(left, p.slice_bytes));
        left -= out.back();
      }
    }
  }
  return out;
}

std::uint64_t slices(const CollectiveTraceParams& p, std::uint32_t chunk) { return slice_sizes(p, chunk).size(); }

// Compute cycles of reducing `operands` copies of chunk `chunk`, slice by slice.
std::uint64_t add_cycles(const CollectiveTraceParams& p, std::uint32_t chunk, std::uint32_t operands) {
  std::uint64_t cycles = 0;
  for (const std::uint64_t bytes : slice_sizes(p, chunk)) {
    const std::uint64_t adds = (operands - 1) * (bytes / p.element_bytes);
    cycles += (adds + p.adds_per_cycle - 1) / p.adds_per_cycle;
  }
  return cycles;
}

struct Expected {
  std::uint64_t loads = 0, remote_bytes = 0, local_store_bytes = 0, cycles = 0;
};

Expected expected_totals(const CollectiveTraceParams& p, CollectiveKind kind) {
  const std::uint32_t n = p.num_gpus, g = p.gpu;
  auto chunk = [&](std::int64_t offset) { return wrap(static_cast<std::int64_t>(g) + offset, n); };
  auto bytes = [&](std::uint32_t c) { return collective_chunk(p, c).bytes; };
  Expected e;
  if (kind == CollectiveKind::named("ring-rs")) {
    e.loads = slices(p, chunk(-1));
    for (std::uint32_t s = 1; s < n; ++s) {
      e.loads += 2 * slices(p, chunk(-static_cast<std::int64_t>(s) - 1));
      e.cycles += add_cycles(p, chunk(-static_cast<std::int64_t>(s) - 1), 2);
    }
    e.remote_bytes = p.array_bytes - bytes(g);
    e.local_store_bytes = bytes(g);
  } else if (kind == CollectiveKind::named("ring-ag")) {
    // Step 0 loads the own chunk; steps 1..N-1 load the received chunks g-s from the
    // FIFO and store them in place; the chunk g+1 arrives last and goes no further.
    for (std::uint32_t c = 0; c < n; ++c) e.loads += slices(p, c);
    e.remote_bytes = p.array_bytes - bytes(chunk(1));
    e.local_store_bytes = p.array_bytes - bytes(g);
  } else if (kind == CollectiveKind::named("ring-ar")) {
    // One kernel: the RS steps (the last one also sends the sum), then the AG's
    // receive / store / send steps over every chunk but g.
    e = expected_totals(p, CollectiveKind::named("ring-rs"));
    for (std::uint32_t c = 0; c < n; ++c) e.loads += c == g ? 0 : slices(p, c);
    e.remote_bytes += p.array_bytes - bytes(chunk(1));
    e.local_store_bytes = p.array_bytes;
  } else if (kind == CollectiveKind::named("direct-rs")) {
    for (std::uint32_t d = 0; d < n; ++d) e.loads += d == g ? n * slices(p, d) : slices(p, d);
    e.cycles = add_cycles(p, g, n);
    e.remote_bytes = p.array_bytes - bytes(g);
    e.local_store_bytes = bytes(g);
  } else if (kind == CollectiveKind::named("direct-ag")) {
    e.loads = slices(p, g);
    e.remote_bytes = (n - 1) * bytes(g);
  } else if (kind == CollectiveKind::named("all-to-all")) {
    for (std::uint32_t d = 0; d < n; ++d) e.loads += slices(p, d);
    e.remote_bytes = p.array_bytes - bytes(g);
    e.local_store_bytes = bytes(g);
  } else if (kind == CollectiveKind::named("rhd-ar")) {
    // Reduce-scatter step k sends the partner's half (N >> (k+1) chunks), each chunk
    // summed as it leaves: its data and the k copies received before, k+1 loads; chunk
    // g sums its data and L copies. All-gather step j sends the aligned block of 2^j
    // chunks holding g: chunk g straight from the sum, the others loaded once more.
    const std::uint32_t steps = static_cast<std::uint32_t>(std::countr_zero(n));
    auto block = [](std::uint32_t c, std::uint32_t size) { return c - c % size; };
    for (std::uint32_t k = 0; k < steps; ++k) {
      const std::uint32_t half = n >> (k + 1), first = block(g ^ half, half);
      for (std::uint32_t c = first; c < first + half; ++c) {
        e.loads += (k + 1) * slices(p, c);
        e.cycles += add_cycles(p, c, k + 1);
        e.remote_bytes += bytes(c);
      }
    }
    e.loads += (steps + 1) * slices(p, g);
    e.cycles += add_cycles(p, g, steps + 1);
    e.local_store_bytes = bytes(g);
    for (std::uint32_t j = 0; j < steps; ++j) {
      const std::uint32_t size = 1u << j, first = block(g, size);
      for (std::uint32_t c = first; c < first + size; ++c) {
        e.remote_bytes += bytes(c);
        if (c != g) e.loads += slices(p, c);
      }
    }
  } else {
    ADD_FAILURE() << "no expected totals for " << to_string(kind);
  }
  return e;
}

// Whether the algorithm builds a kernel for n GPUs (recursive halving-doubling: a
// power of two).
bool runs_on(CollectiveKind kind, std::uint32_t n) {
  CollectiveTraceParams p;
  p.kind = kind;
  p.num_gpus = n;
  p.array_bytes = n * 32;
  p.channels = 1;
  p.slice_bytes = 32;
  try {
    validate_collective(p);
    return true;
  } catch (const CollectiveParamError& e) {
    return e.field() != "num_gpus";
  }
}

TraceTotals totals_of(const std::vector<KernelTrace>& kernels) {
  TraceTotals t;
  for (const KernelTrace& k : kernels) t += trace_totals(k);
  return t;
}

// ---------------------------------------------------------------------------

TEST(CollectiveTrace, KindNames) {
  for (const CollectiveKind k : all_kinds()) EXPECT_EQ(parse_collective_kind(to_string(k)), k);
  EXPECT_EQ(parse_collective_kind("reduce_scatter"), CollectiveKind::named("ring-rs"));
  EXPECT_EQ(parse_collective_kind("all_gather"), CollectiveKind::named("ring-ag"));
  EXPECT_EQ(parse_collective_kind("all_reduce"), CollectiveKind::named("ring-ar"));
  try {
    parse_collective_kind("ring-rss");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("did you mean 'ring-rs'"));
  }
}

TEST(CollectiveTrace, ChunksAndSharesTileTheArray) {
  for (const std::uint32_t n : {2u, 3u, 8u, 16u}) {
    for (const std::uint64_t granules : {1ull, 5ull, 17ull, 1000ull}) {
      CollectiveTraceParams p = params(CollectiveKind::named("ring-rs"), n, granules * 32, 3, 64);
      std::uint64_t next = 0, largest = 0;
      for (std::uint32_t c = 0; c < n; ++c) {
        const ByteRange r = collective_chunk(p, c);
        EXPECT_EQ(r.first, next);
        EXPECT_EQ(r.bytes % 32, 0u);
        if (c > 0) {
          EXPECT_LE(r.bytes, collective_chunk(p, c - 1).bytes);  // earlier chunks are the larger ones
        }
        EXPECT_LE(collective_chunk(p, 0).bytes - r.bytes, 32u);
        largest = std::max(largest, r.bytes);
        std::uint64_t share_next = r.first;
        for (std::uint32_t k = 0; k < p.channels; ++k) {
          const ByteRange s = collective_share(p, c, k);
          EXPECT_EQ(s.first, share_next);
          EXPECT_EQ(s.bytes % 32, 0u);
          share_next += s.bytes;
          EXPECT_EQ(collective_slices(p, c, k), (s.bytes + 63) / 64);
        }
        EXPECT_EQ(share_next, r.first + r.bytes);
        next += r.bytes;
      }
      EXPECT_EQ(next, p.array_bytes);
      EXPECT_EQ(collective_recv_slot_bytes(p), largest);
    }
  }
}

TEST(CollectiveTrace, DefaultBuffersFollowTheDataTwoMiBAligned) {
  CollectiveTraceParams p = params(CollectiveKind::named("direct-rs"), 4, 3 << 20, 2, 1024);
  p.data_base = 1 << 20;
  EXPECT_EQ(collective_recv_base(p), 4u << 20);                // 1 MiB + 3 MiB, already aligned
  EXPECT_EQ(collective_recv_bytes(p), 3u * (768u << 10));      // N-1 slots of a chunk
  EXPECT_EQ(collective_out_base(p), (4u << 20) + (4u << 20));  // 3 slots of 768 KiB, rounded up
  // Ring kernels: a FIFO per channel of fifo_slices slots of a slice and a granule.
  p.kind = CollectiveKind::named("ring-rs");
  EXPECT_EQ(collective_recv_bytes(p), 2u * 4 * (1024 + 32));
  EXPECT_EQ(collective_fifo_slot(p, 1, 2), (4u << 20) + (1 * 4 + 2) * (1024 + 32));
  EXPECT_EQ(collective_out_base(p), (4u << 20) + (2u << 20));
  // All-to-all has no recv area: its output follows the data.
  p.kind = CollectiveKind::named("all-to-all");
  EXPECT_EQ(collective_out_base(p), 4u << 20);
  p.kind = CollectiveKind::named("direct-rs");
  p.recv_base_set = true;
  p.recv_base = 64u << 20;
  EXPECT_EQ(collective_out_base(p), (64u << 20) + (4u << 20));
  p.out_base_set = true;
  p.out_base = 128u << 20;
  EXPECT_EQ(collective_out_base(p), 128u << 20);
}

// Every kind, a range of N, sizes and channel counts: the traces validate, run to
// completion on the interpreter under two schedules, and produce the collective's
// result; totals match the formulas.
TEST(CollectiveTrace, FunctionalAllKinds) {
  struct Shape {
    const char* what;
    std::uint64_t granules_per_gpu;  // array = this x N + extra granules
    std::uint64_t extra;
    std::uint32_t channels;
    std::uint64_t slice_granules;
    std::uint32_t fifo_slices = 4, chunk_slices = 2;
    std::uint32_t copy_threads = 0;  // > 0: a WG of that many threads (copy loop: 64 B each)
  };
  const Shape shapes[] = {
      {"tiny: empty shares", 1, 1, 3, 1},
      {"uneven chunks, partial slices", 13, 5, 4, 3},
      {"even, several slices", 24, 0, 2, 4},
      {"many pieces: the piece loop, a FIFO one slice deeper than a piece", 201, 7, 2, 2, 4, 3},
      {"pieces of one slice, a FIFO of two", 40, 3, 1, 3, 2, 1},
      {"slices copied in loops of 2 granules and a rest", 97, 5, 2, 7, 4, 2, 1},
  };
  for (const CollectiveKind kind : all_kinds()) {
    for (const std::uint32_t n : {2u, 3u, 4u, 8u, 16u}) {
      if (!runs_on(kind, n)) continue;
      for (const Shape& shape : shapes) {
        CollectiveTraceParams p =
            params(kind, n, (shape.granules_per_gpu * n + shape.extra) * 32, shape.channels, shape.slice_granules * 32);
        p.fifo_slices = shape.fifo_slices;
        p.chunk_slices = shape.chunk_slices;
        if (shape.copy_threads > 0) {
          p.wfs_per_wg = 1;
          p.wave_size = shape.copy_threads;
        }
        p.data_uncached = n % 2 == 1;
        p.flag_base = 1000;
        SCOPED_TRACE(fmt::format("{} N={} {}", to_string(kind), n, shape.what));
        std::vector<std::vector<KernelTrace>> all(n);
        for (std::uint32_t g = 0; g < n; ++g) {
          all[g] = traces_for(p, g);
          ASSERT_EQ(all[g].size(), 1u);  // all-reduce too: one kernel
          for (const KernelTrace& t : all[g]) {
            ASSERT_NO_THROW(validate_trace(t));
            EXPECT_EQ(t.num_wgs(), p.channels);
          }
          const TraceTotals tot = totals_of(all[g]);
          const Expected e = expected_totals(on_gpu(p, g), kind);
          EXPECT_EQ(tot.loads, e.loads);
          EXPECT_EQ(tot.store_bytes_remote, e.remote_bytes);
          EXPECT_EQ(tot.store_bytes - tot.store_bytes_remote, e.local_store_bytes);
          EXPECT_EQ(tot.compute_cycles, e.cycles);
        }
        for (const Schedule& s : {Schedule{1, false}, Schedule{1u << 30, true}, Schedule{3, true}}) {
          EXPECT_EQ(run_and_check(p, s, [&](std::uint32_t g) { return all[g]; }), "")
              << "burst " << s.burst << (s.reverse ? " reversed" : "");
        }
      }
    }
  }
}

TEST(CollectiveTrace, RemoteBytesAreNMinusOneOverNOfTheArray) {
  const std::uint32_t n = 8;
  for (const CollectiveKind kind : all_kinds()) {
    const CollectiveTraceParams p = params(kind, n, n * 4096, 4, 256);
    for (std::uint32_t g = 0; g < n; ++g) {
      const TraceTotals t = totals_of(traces_for(p, g));
      const std::uint64_t one = (n - 1) * p.array_bytes / n;
      EXPECT_EQ(t.store_bytes_remote, kind.op() == CollectiveOp::kAllReduce ? 2 * one : one) << to_string(kind);
    }
  }
}

// An out-of-place all-gather (CollectiveTraceParams::in_place false, as torch's
// all_gather_into_tensor) also copies the GPU's own chunk into the output at step 0:
// one more store of that chunk per GPU (its load is the one the send makes anyway),
// nothing more sent; the gathered values are the same.
TEST(CollectiveTrace, OutOfPlaceAllGatherAlsoStoresItsOwnChunk) {
  const std::uint32_t n = 4;
  CollectiveTraceParams in = params(CollectiveKind::named("ring-ag"), n, n * 4096, 4, 256);
  CollectiveTraceParams out = in;
  out.in_place = false;
  for (std::uint32_t g = 0; g < n; ++g) {
    const TraceTotals a = totals_of(traces_for(in, g)), b = totals_of(traces_for(out, g));
    const std::uint64_t own = collective_chunk(on_gpu(in, g), g).bytes;
    EXPECT_EQ(b.store_bytes - b.store_bytes_remote, a.store_bytes - a.store_bytes_remote + own) << g;
    EXPECT_EQ(b.store_bytes_remote, a.store_bytes_remote);
    EXPECT_EQ(b.load_bytes, a.load_bytes);
  }
  EXPECT_EQ(run_and_check(out, Schedule{3, true}, [&](std::uint32_t g) { return traces_for(out, g); }), "");
}

// 64 GPUs (issue 20, item 5): every kind generates, and the direct kinds' loops by peer
// share one variable, so no program nears the trace's 32 variables.
TEST(CollectiveTrace, SixtyFourGpusFitTheTracesVariables) {
  const std::uint32_t n = 64;
  for (const CollectiveKind kind : all_kinds()) {
    const CollectiveTraceParams p = params(kind, n, std::uint64_t{n} * 8 * 4096, 2, 4096);
    const std::vector<KernelTrace> traces = traces_for(p, 5);
    ASSERT_FALSE(traces.empty()) << to_string(kind);
    for (const KernelTrace& t : traces) {
      for (const TraceProgram& prog : t.programs) EXPECT_LE(prog.loop_vars.size(), 4u) << to_string(kind);
    }
    const std::uint64_t one = (n - 1) * p.array_bytes / n;
    EXPECT_EQ(totals_of(traces).store_bytes_remote, kind.op() == CollectiveOp::kAllReduce ? 2 * one : one)
        << to_string(kind);
  }
}

TEST(CollectiveTrace, RingReduceScatterOpsPerSlice) {
  // N=4, 2 channels, chunk = 512 B, share = 256 B = one piece of 2 slices of 128 B;
  // a FIFO of 4 slices; compute = 64 elements / 128 adds per cycle = 1 cycle.
  const CollectiveTraceParams p = params(CollectiveKind::named("ring-rs"), 4, 2048, 2, 128);
  const KernelTrace t = traces_for(p, 1).at(0);
  std::vector<WgOp> ops;
  WgExpander x(t, 0);
  for (WgOp op; x.next(op);) ops.push_back(op);
  const std::uint64_t slot = collective_fifo_slot_bytes(p), fifo = collective_recv_base(p);
  EXPECT_EQ(slot, 128u + 32);
  // Channel 0 sends slices 0..5 (3 steps x 2) and receives 0..5 (steps 1-3).
  // Step 0: 2 x (load, compute 0, store remote, set tail): slices 0, 1 need no room.
  // Step 1: 2 x (wait tail, load, load slot, add, store remote, set tail, set head):
  //   sends 2, 3, still no room to wait for.
  // Step 2: 2 x (the same with a head wait after the tail wait): sends 4, 5 wait for
  //   heads 1, 2.
  // Step 3: 2 x (wait tail, load, load slot, add, store local, set head).
  // (A slice is below the copy loop's 16 KiB: one iteration, no loop.)
  ASSERT_EQ(ops.size(), 2u * 4 + 2 * 7 + 2 * 8 + 2 * 6);
  EXPECT_EQ(ops[0].kind, TraceOpKind::kLoad);
  EXPECT_EQ(ops[0].addr(), 0u);  // chunk g-1 = 0, channel 0's share starts it
  EXPECT_EQ(ops[1].kind, TraceOpKind::kCompute);
  EXPECT_EQ(ops[1].cycles(), 0u);
  EXPECT_EQ(ops[2].kind, TraceOpKind::kStore);
  EXPECT_TRUE(ops[2].remote());
  EXPECT_TRUE(ops[2].uncached());
  EXPECT_EQ(ops[2].peer, 2);
  EXPECT_EQ(ops[2].addr(), fifo);  // slot 0 of channel 0
  EXPECT_EQ(ops[3].kind, TraceOpKind::kSet);
  EXPECT_EQ(ops[3].peer, 2);
  EXPECT_EQ(ops[3].flag(), collective_flag(p, 0, 0));  // the next GPU's tail
  EXPECT_EQ(ops[3].value(), 1u);
  EXPECT_EQ(ops[6].addr(), fifo + slot);
  EXPECT_EQ(ops[7].value(), 2u);
  // Step 1, second slice: the wait for prev's slice 1, then the local load.
  const WgOp* s1 = &ops[8 + 7];
  EXPECT_EQ(s1[0].kind, TraceOpKind::kWait);
  EXPECT_EQ(s1[0].flag(), collective_flag(p, 0, 0));
  EXPECT_EQ(s1[0].value(), 2u);
  EXPECT_EQ(s1[1].kind, TraceOpKind::kLoad);
  EXPECT_FALSE(s1[1].uncached());
  EXPECT_EQ(s1[2].kind, TraceOpKind::kLoad);
  EXPECT_TRUE(s1[2].uncached());
  EXPECT_EQ(s1[2].addr(), fifo + slot);  // received slice 1: slot 1
  EXPECT_EQ(s1[3].cycles(), 1u);
  EXPECT_EQ(s1[3].flops(), 64u);
  EXPECT_EQ(s1[4].kind, TraceOpKind::kStore);
  EXPECT_EQ(s1[4].addr(), fifo + 3 * slot);  // sent slice 3: slot 3
  EXPECT_EQ(s1[5].value(), 4u);              // the next GPU's tail
  EXPECT_EQ(s1[6].kind, TraceOpKind::kSet);  // prev's head: slice 1 consumed
  EXPECT_EQ(s1[6].peer, 0);
  EXPECT_EQ(s1[6].flag(), collective_flag(p, 0, 1));
  EXPECT_EQ(s1[6].value(), 2u);
  // Step 2, first slice: slice 4 goes to slot 0 once the next GPU consumed slice 0.
  const WgOp* s2 = &ops[8 + 14];
  EXPECT_EQ(s2[1].kind, TraceOpKind::kWait);
  EXPECT_EQ(s2[1].flag(), collective_flag(p, 0, 1));
  EXPECT_EQ(s2[1].value(), 1u);
  EXPECT_EQ(s2[5].kind, TraceOpKind::kStore);
  EXPECT_EQ(s2[5].addr(), fifo);
  // The end: the local store of the reduced chunk 1, then prev's head = 6.
  EXPECT_EQ(ops[ops.size() - 2].kind, TraceOpKind::kStore);
  EXPECT_FALSE(ops[ops.size() - 2].remote());
  EXPECT_EQ(ops[ops.size() - 2].addr(), collective_chunk(p, 1).first + 128);
  EXPECT_EQ(ops.back().kind, TraceOpKind::kSet);
  EXPECT_EQ(ops.back().value(), 6u);

  EXPECT_EQ(*t.attr("kind"), "ring-rs");
  EXPECT_EQ(*t.attr("num_gpus"), "4");
  EXPECT_EQ(*t.attr("gpu"), "1");
  EXPECT_EQ(*t.attr("array_bytes"), "2048");
  EXPECT_EQ(*t.attr("channels"), "2");
  EXPECT_EQ(*t.attr("slice_bytes"), "128");
  EXPECT_EQ(*t.attr("fifo_slices"), "4");
  EXPECT_EQ(*t.attr("chunk_slices"), "2");
  EXPECT_EQ(t.resources, (TraceResources{4, 256, 32, 0}));
}

// The FIFO bound: with no slice consumed (every head at 0) a channel sends exactly
// fifo_slices slices before it must wait for the receiver, whatever the kind, depth
// or piece size; each send goes to slot k mod fifo_slices.
TEST(CollectiveTrace, ASenderRunsAtMostTheFifoAhead) {
  for (const CollectiveKind kind :
       {CollectiveKind::named("ring-rs"), CollectiveKind::named("ring-ag"), CollectiveKind::named("ring-ar")}) {
    for (const auto& [fifo, chunk] : {std::pair{4u, 2u}, std::pair{3u, 2u}, std::pair{8u, 1u}, std::pair{2u, 1u}}) {
      CollectiveTraceParams p = params(kind, 4, 4 * 64 * 1024, 2, 1024);
      p.fifo_slices = fifo;
      p.chunk_slices = chunk;
      SCOPED_TRACE(fmt::format("{} fifo {} chunk {}", to_string(kind), fifo, chunk));
      const KernelTrace t = traces_for(p, 2).at(0);
      WgExpander x(t, 1);
      std::uint64_t sent = 0;
      bool blocked = false;
      for (WgOp op; x.next(op);) {
        if (op.kind == TraceOpKind::kWait && op.flag() == collective_flag(p, 1, 1)) {
          EXPECT_EQ(op.value(), sent + 1 - fifo) << "a send waits for the slice fifo_slices back";
          if (!blocked) {
            EXPECT_EQ(sent, fifo) << "the first head wait comes after a full FIFO";
          }
          blocked = true;
        }
        if (op.kind == TraceOpKind::kStore && op.remote()) {
          EXPECT_EQ(op.addr(), collective_fifo_slot(p, 1, static_cast<std::uint32_t>(sent % fifo)));
          ++sent;
        }
      }
      EXPECT_TRUE(blocked);
      EXPECT_GT(sent, 4u * fifo);
    }
  }
}

// A partial piece is cut as NCCL's genericOp cuts it: chunk_slices slices, none below
// slice_bytes / 32; whole pieces come first.
TEST(CollectiveTrace, RingSlicesOfAShare) {
  CollectiveTraceParams p = params(CollectiveKind::named("ring-rs"), 2, 2 * 2 * 5000 * 32, 2, 1024 * 32);
  // Share = 5000 granules = 2 pieces of 2 x 1024 + 904 left: two slices of 452.
  const auto cut = collective_ring_slices(p, 1, 1);
  ASSERT_EQ(cut.size(), 6u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(cut[i].bytes, 1024u * 32);
  EXPECT_EQ(cut[4].bytes, 452u * 32);
  EXPECT_EQ(cut[5].bytes, 452u * 32);
  EXPECT_EQ(cut[0].first, collective_share(p, 1, 1).first);
  // 40 granules left: slices of at least 1024 / 32 = 32 granules, so 32 + 8.
  p.array_bytes = 2 * 2 * (2 * 1024 + 40) * 32;
  const auto small = collective_ring_slices(p, 0, 0);
  ASSERT_EQ(small.size(), 4u);
  EXPECT_EQ(small[2].bytes, 32u * 32);
  EXPECT_EQ(small[3].bytes, 8u * 32);
}

TEST(CollectiveTrace, CachingFlags) {
  for (const bool uncached : {false, true}) {
    for (const CollectiveKind kind : all_kinds()) {
      CollectiveTraceParams p = params(kind, 4, 4096, 2, 256);
      p.data_uncached = uncached;
      const std::uint64_t recv = collective_recv_base(p);
      for (const KernelTrace& t : traces_for(p, 0)) {
        for (std::uint32_t w = 0; w < t.num_wgs(); ++w) {
          WgExpander x(t, w);
          for (WgOp op; x.next(op);) {
            if (op.kind != TraceOpKind::kLoad && op.kind != TraceOpKind::kStore) continue;
            SCOPED_TRACE(fmt::format("{} uncached={} {} {:#x}", t.name, uncached, to_string(op.kind), op.addr()));
            if (op.addr() >= recv) {
              EXPECT_TRUE(op.uncached());  // recv and out: a peer's remote stores fill them
            } else {
              EXPECT_EQ(op.uncached(), uncached);
            }
          }
        }
      }
    }
  }
}

TEST(CollectiveTrace, FlagsStayInTheirRange) {
  for (const CollectiveKind kind : all_kinds()) {
    CollectiveTraceParams p = params(kind, 8, 8 * 2048, 3, 256);
    p.flag_base = 5000;
    const std::uint64_t used = collective_flags_used(p);
    EXPECT_EQ(used, 3u * 8);
    const auto kernels = traces_for(p, 3);
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      const KernelTrace& t = kernels[k];
      const std::uint64_t lo = p.flag_base, hi = lo + 24;
      for (std::uint32_t w = 0; w < t.num_wgs(); ++w) {
        WgExpander x(t, w);
        for (WgOp op; x.next(op);) {
          if (op.kind != TraceOpKind::kSet && op.kind != TraceOpKind::kWait) continue;
          EXPECT_GE(op.flag(), lo);
          EXPECT_LT(op.flag(), hi);
          EXPECT_EQ((op.flag() - lo) / 8, w) << "channel w's flags";
        }
      }
    }
  }
}

TEST(CollectiveTrace, TextRoundTrip) {
  for (const CollectiveKind kind : all_kinds()) {
    if (!runs_on(kind, 5)) continue;
    CollectiveTraceParams p = params(kind, 5, 5 * 1000 * 32 + 64, 3, 512);
    p.data_base = 4096;
    for (const KernelTrace& t : traces_for(p, 2)) {
      const KernelTrace back = parse_trace(trace_to_string(t), "round.trace");
      EXPECT_TRUE(back == t) << t.name;
    }
  }
  // 32 GPUs: one loop per step stays within a program's 32 loop variables.
  for (const CollectiveKind kind : all_kinds()) {
    const CollectiveTraceParams p = params(kind, 32, 32 * 64 * 32, 2, 64);
    for (const KernelTrace& t : traces_for(p, 31)) EXPECT_NO_THROW(parse_trace(trace_to_string(t), "n32.trace"));
  }
}

// T3's largest RS (Figure 14: 192 MB, 8 GPUs), as an all-reduce: generated in
// milliseconds, a few hundred ops per channel (the piece loop), not one op per slice.
TEST(CollectiveTrace, LargeArrayStaysSmall) {
  const auto start = std::chrono::steady_clock::now();
  CollectiveTraceParams p = params(CollectiveKind::named("ring-ar"), 8, 192ull << 20, 16, 16 * 1024);
  const auto traces = traces_for(p, 5);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 200.0);
  std::size_t ops = 0;
  for (const KernelTrace& t : traces) {
    for (const TraceProgram& prog : t.programs) ops += prog.ops.size();
  }
  // A channel: 48 pieces of 2 slices; 14 sends a piece fill the FIFO of 4 whole, so
  // one piece peeled, then a loop of one: 2 x 15 steps x 2 slices x at most 8 ops.
  EXPECT_LE(ops, 16u * 2 * 15 * 2 * 8 + 16 * 2);
  ASSERT_EQ(traces.size(), 1u);
  const TraceTotals ar = trace_totals(traces[0]);
  EXPECT_EQ(ar.store_bytes_remote, 2 * 7 * (p.array_bytes / 8));
  const std::uint64_t slices_per_chunk = (24ull << 20) / (16 * 1024);
  EXPECT_EQ(ar.loads, (1 + 2 * 7 + 7) * slices_per_chunk);
  EXPECT_EQ(ar.compute_cycles, 7 * (24ull << 20) / 2 / 128);
}

// The interpreter catches what it is there to catch.
TEST(CollectiveTrace, InterpreterDetectsMissingWaitsAndDeadlocks) {
  const CollectiveTraceParams p = params(CollectiveKind::named("ring-rs"), 4, 4 * 1024, 2, 128);
  // GPU 1 ignores its flags (waits for >= 0): run first, it reads recv slots no one wrote yet.
  auto no_waits = [&](std::uint32_t g) {
    auto traces = traces_for(p, g);
    if (g == 1) {
      for (TraceProgram& prog : traces[0].programs) {
        for (TraceOp& op : prog.ops) {
          if (op.kind == TraceOpKind::kWait) op.arg[1] = TraceExpr{};
        }
      }
    }
    return traces;
  };
  EXPECT_THAT(run_and_check(p, Schedule{1u << 30, true}, no_waits), HasSubstr("reads unwritten"));
  // GPU 0 never sets its flags: its neighbour waits forever.
  auto no_sets = [&](std::uint32_t g) {
    auto traces = traces_for(p, g);
    if (g == 0) {
      for (TraceProgram& prog : traces[0].programs) {
        for (TraceOp& op : prog.ops) {
          if (op.kind == TraceOpKind::kSet) op.arg[1] = TraceExpr{};
        }
      }
    }
    return traces;
  };
  EXPECT_THAT(run_and_check(p, Schedule{1, false}, no_sets), HasSubstr("deadlock"));
}

TEST(CollectiveTrace, BadParamsNameTheField) {
  struct Case {
    const char* field;
    std::function<void(CollectiveTraceParams&)> change;
  };
  const std::vector<Case> cases = {
      {"num_gpus", [](CollectiveTraceParams& p) { p.num_gpus = 1; }},
      {"num_gpus", [](CollectiveTraceParams& p) { p.num_gpus = 65; }},
      {"gpu", [](CollectiveTraceParams& p) { p.gpu = 8; }},
      {"element_bytes", [](CollectiveTraceParams& p) { p.element_bytes = 0; }},
      {"granule", [](CollectiveTraceParams& p) { p.granule = 33; }},
      {"array_bytes", [](CollectiveTraceParams& p) { p.array_bytes = 0; }},
      {"array_bytes", [](CollectiveTraceParams& p) { p.array_bytes = 1000; }},
      {"channels", [](CollectiveTraceParams& p) { p.channels = 0; }},
      {"fifo_slices", [](CollectiveTraceParams& p) { p.fifo_slices = 2; }},  // not above a piece of 2
      {"chunk_slices", [](CollectiveTraceParams& p) {  // programs too large to hold
         p.channels = 8;
         p.chunk_slices = 63;
         p.fifo_slices = 64;
       }},
      {"channels", [](CollectiveTraceParams& p) {  // too large even at one slice per piece
         p.channels = 4096;
         p.chunk_slices = 63;
         p.fifo_slices = 64;
       }},
      {"slice_bytes", [](CollectiveTraceParams& p) { p.slice_bytes = 100; }},
      {"slice_bytes", [](CollectiveTraceParams& p) { p.slice_bytes = 0; }},
      {"wfs_per_wg", [](CollectiveTraceParams& p) { p.wfs_per_wg = 0; }},
      {"wave_size", [](CollectiveTraceParams& p) { p.wave_size = 0; }},
      {"adds_per_cycle", [](CollectiveTraceParams& p) { p.adds_per_cycle = 0; }},
      {"data_base", [](CollectiveTraceParams& p) { p.data_base = 3; }},
      {"recv_base",
       [](CollectiveTraceParams& p) {
         p.recv_base_set = true;
         p.recv_base = 1024;  // inside the data
       }},
      {"out_base",
       [](CollectiveTraceParams& p) {
         p.kind = CollectiveKind::named("all-to-all");
         p.out_base_set = true;
         p.out_base = 0;
       }},
  };
  for (const Case& c : cases) {
    CollectiveTraceParams p = params(CollectiveKind::named("ring-rs"), 8, 8 * 4096, 4, 1024);
    c.change(p);
    try {
      make_collective_traces(p);
      ADD_FAILURE() << "expected a UserError for " << c.field;
    } catch (const UserError& e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string("collective: ") + c.field + ":"));
      EXPECT_THAT(e.what(), HasSubstr("expected"));
    }
  }
}

}  // namespace
}  // namespace t3sim
