#include "models/system/interference/interference_system.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/error.h"
#include "sim/int_math.h"

namespace t3sim {

namespace {

// (completions - 1) x bytes over the span of their times, GB/s; none with fewer than `least`.
std::optional<double> rate(const std::vector<Tick>& done, std::uint64_t bytes, std::size_t least) {
  if (done.size() < least || done.size() < 2 || done.back() <= done.front()) return std::nullopt;
  return static_cast<double>((done.size() - 1) * bytes) / static_cast<double>((done.back() - done.front()).ps()) *
         1e3;
}

// The copy kernel an interferer runs on its GPU (size set, addresses not), or nothing
// when a copy engine copies: sm_* run the spec's kernel; ce_local a same-GPU
// cudaMemcpyAsync, the driver's copy kernel where the GPU has one (gpu.local_copy_kernel:
// H200), else a copy engine's copy; ce_peer_* copy engines.
std::optional<CopyKernelParams> copy_kernel_of(Interferer i, const InterferenceSpec& spec, const GpuConfig& gpu) {
  if (i == Interferer::kSmLocal || i == Interferer::kSmPush) {
    CopyKernelParams p = spec.copy_kernel;
    p.bytes = spec.copy_bytes;
    return p;
  }
  if (i == Interferer::kCeLocal && gpu.local_copy_kernel) return local_copy_params(gpu, spec.copy_bytes);
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& interferer_names() {
  static const std::vector<std::string> kNames = {"none",        "ce_local", "ce_peer_out", "ce_peer_in",
                                                  "ce_peer_both", "sm_local", "sm_push"};
  return kNames;
}
std::string_view to_string(Interferer i) { return interferer_names()[static_cast<std::size_t>(i)]; }

// One simulation: the node of two GPUs, GPU 0's GEMM series and the copying streams.
struct InterferenceSystem::Run {
  // A stream of copies: a copy engine's (`engine` of GPU `gpu`, into `to`) or a copy
  // kernel's on GPU `gpu`.
  struct CopyStream {
    std::uint32_t gpu = 0, to = 0;
    bool engine = false;
    std::uint32_t count = 0;     // copies in all
    std::uint32_t left = 0;      // kernels: copies not yet complete (the next is launched at each completion)
    std::vector<Tick> done;      // completion times
    KernelTrace kernel;          // the copy kernel (engine: unused)
  };
  // GPU 0's kernels in launch order: "gemm" or "copy", and the GPU's kernel id.
  std::vector<std::pair<const char*, std::uint32_t>> gpu0_kernels;

  Run(Simulator& s, const NodeConfig& cfg, const InterferenceSpec& what, bool with_gemms, Interferer copies,
      std::uint32_t copy_count)
      : sim(s), spec(what), node(s, cfg) {
    const GemmParams& gp = *spec.gemm.params;
    const std::uint64_t src = align_up(gemm_addresses(gp).c + gp.m * gp.n * gp.dtype_bytes, kBufferAlign);
    const std::uint64_t region = align_up(spec.copy_bytes, kBufferAlign);
    // dst_from[g]: where GPU g's copies land (on the destination GPU); src on every GPU.
    const std::uint64_t dst_from[2] = {src + region, src + 2 * region};
    const std::optional<CopyKernelParams> kernel = copy_kernel_of(copies, spec, cfg.gpu);
    auto add = [&](std::uint32_t from, std::uint32_t to) {
      CopyStream c;
      c.gpu = from;
      c.to = to;
      c.engine = !kernel;
      c.count = copy_count;
      c.left = copy_count;
      if (kernel) {
        CopyKernelParams p = *kernel;
        p.src = src;
        p.dst = dst_from[from];
        p.peer = to == from ? std::nullopt : std::optional<std::uint32_t>(to);
        c.kernel = make_copy_trace(p);
      }
      streams.push_back(std::move(c));
      dst.push_back(dst_from[from]);
    };
    switch (copies) {
      case Interferer::kNone: break;
      case Interferer::kCeLocal:
      case Interferer::kSmLocal: add(0, 0); break;
      case Interferer::kCePeerOut:
      case Interferer::kSmPush: add(0, 1); break;
      case Interferer::kCePeerIn: add(1, 0); break;
      case Interferer::kCePeerBoth: add(0, 1), add(1, 0); break;
    }
    src_ = src;
    gemms_left = with_gemms ? spec.gemms : 0;
  }

  void launch_gemm() {
    KernelLaunch k;
    k.trace = &spec.gemm.trace;
    k.stream = Stream::kCompute;
    k.on_done = [this] {
      if (first_gemm_end == Tick()) first_gemm_end = sim.now();
      if (--gemms_left > 0) {
        launch_gemm();
      } else {
        gemm_end = sim.now();
      }
    };
    gpu0_kernels.emplace_back("gemm", node.gpu(0).launch(std::move(k)));
  }

  void launch_copy_kernel(CopyStream& c) {
    KernelLaunch k;
    k.trace = &c.kernel;
    k.stream = Stream::kCommunication;
    k.on_done = [this, &c] {
      c.done.push_back(sim.now());
      if (--c.left > 0) launch_copy_kernel(c);
    };
    const std::uint32_t id = node.gpu(c.gpu).launch(std::move(k));
    if (c.gpu == 0) gpu0_kernels.emplace_back("copy", id);
  }

  void start_copies() {
    for (std::size_t i = 0; i < streams.size(); ++i) {
      CopyStream& c = streams[i];
      if (c.count == 0) continue;
      Simulator::InPartition in(sim, node.partition(c.gpu));
      if (!c.engine) {
        launch_copy_kernel(c);
        continue;
      }
      // Every copy enqueued now, one host enqueue after another (interfere.py queues
      // them all before it synchronizes).
      DmaEngine& engine = node.dma(c.gpu, 0);
      for (std::uint32_t k = 0; k < c.count; ++k) {
        DmaCommand cmd;
        cmd.src = src_;
        cmd.dst = dst[i];
        cmd.bytes = spec.copy_bytes;
        cmd.destination = &node.dma_destination(c.gpu, c.to);
        cmd.on_done = [this, &c] { c.done.push_back(sim.now()); };
        engine.launch(std::move(cmd), engine.config().launch_latency * k);
      }
    }
  }

  void start(bool comm_first) {
    if (comm_first) start_copies();
    if (gemms_left > 0) {
      Simulator::InPartition in(sim, node.partition(0));
      gemm_start = sim.now();
      launch_gemm();
    }
    if (!comm_first) start_copies();
  }

  void run(Tick max_time) {
    const Simulator::StopReason stop = sim.run(max_time);
    bool finished = gemms_left == 0;
    for (const CopyStream& c : streams) finished = finished && c.done.size() == c.count;
    if (finished) return;
    std::string what = stop == Simulator::StopReason::kTimeLimit
                           ? fmt::format("run.max_time ({}) reached before the GEMMs and copies finished", to_string(max_time))
                           : std::string("the GEMMs and copies did not finish although nothing was left to simulate");
    what += fmt::format(" ({} GEMMs left", gemms_left);
    for (const CopyStream& c : streams) what += fmt::format(", GPU {}'s copies {} of {} done", c.gpu, c.done.size(), c.count);
    what += ")";
    throw SimulationError(what);
  }

  Simulator& sim;
  const InterferenceSpec& spec;
  Node node;
  std::vector<CopyStream> streams;
  std::vector<std::uint64_t> dst;  // per stream
  std::uint64_t src_ = 0;
  std::uint32_t gemms_left = 0;
  Tick gemm_start, gemm_end;
  Tick first_gemm_end;  // the series' first GEMM's end

  // Mean time per GEMM of a series of n, from the second on (interference_system.h).
  Tick per_gemm(std::uint32_t n) const {
    if (n < 2) return gemm_end - gemm_start;
    return Tick((gemm_end - first_gemm_end).ps() / static_cast<Tick::rep>(n - 1));
  }
};

InterferenceSystem::InterferenceSystem(Simulator& sim, const NodeConfig& node, InterferenceSpec spec,
                                       std::uint64_t seed)
    : sim_(sim), node_(node), spec_(std::move(spec)), seed_(seed) {
  if (!spec_.gemm.params) throw std::invalid_argument("interference needs a generated GEMM");
  if (node_.num_gpus < 2) throw std::invalid_argument("interference needs two GPUs");
  node_.num_gpus = 2;  // interfere.py's machine: GPU 0 and its one peer
  node_.mode = NetMode::kFull;
  node_.partitioned = false;
  // Built now, so that `t3sim validate` sees a copy kernel that cannot be built.
  if (const std::optional<CopyKernelParams> p = copy_kernel_of(spec_.interferer, spec_, node_.gpu))
    (void)make_copy_trace(*p);
}

InterferenceSystem::~InterferenceSystem() = default;

InterferenceResult InterferenceSystem::run(Tick max_time) {
  InterferenceResult r;
  // 1. The copies alone: one copy's time sizes the window and the queue (interfere.py
  //    times one copy alone).
  if (spec_.interferer != Interferer::kNone) {
    Simulator own(seed_);
    Run alone(own, node_, spec_, /*with_gemms=*/false, spec_.interferer, spec_.alone_copies);
    alone.start(true);
    alone.run(max_time);
    const std::vector<Tick>& done = alone.streams.front().done;
    r.copy_alone = Tick((done.back() - done.front()).ps() / static_cast<std::int64_t>(done.size() - 1));
    r.copy_alone_GBps = rate(done, spec_.copy_bytes, 2).value_or(0);
    r.events += own.dispatched();
  }
  // 2. The GEMMs alone (interfere.py's baseline(), right before each row): spec.gemms
  //    of them give the time of one; the series beside the copies is long enough for
  //    window_copies copies.
  {
    Simulator own(seed_);
    Run alone(own, node_, spec_, /*with_gemms=*/true, Interferer::kNone, 0);
    alone.start(false);
    alone.run(max_time);
    r.gemm_alone = alone.per_gemm(spec_.gemms);
    r.events += own.dispatched();
  }
  std::uint32_t n = spec_.gemms;
  if (spec_.interferer != Interferer::kNone) {
    const double per_gemm = static_cast<double>(std::max<Tick::rep>(r.gemm_alone.ps(), 1));
    // A copy kernel beside a GEMM moves a fraction of its alone rate (the measurement:
    // 12-40 %), so its window is sized for 3x the copies at the alone rate; a copy
    // engine's keeps most of its rate.
    const double slower = spec_.interferer == Interferer::kSmLocal || spec_.interferer == Interferer::kSmPush ? 3.0 : 1.0;
    n = std::max<std::uint32_t>(n, static_cast<std::uint32_t>(std::ceil(
                                       slower * spec_.window_copies * static_cast<double>(r.copy_alone.ps()) / per_gemm)));
    r.copies = static_cast<std::uint32_t>(spec_.copy_window * static_cast<double>(n) * per_gemm /
                                          static_cast<double>(std::max<Tick::rep>(r.copy_alone.ps(), 1))) +
               4;
  }
  r.gemms = n;
  // 3. Both, on the main simulator.
  InterferenceSpec concurrent = spec_;
  concurrent.gemms = n;
  Run both(sim_, node_, concurrent, /*with_gemms=*/true, spec_.interferer, r.copies);
  both.start(spec_.comm_first);
  both.run(max_time);
  r.gemm = both.per_gemm(n);
  r.slowdown = static_cast<double>(r.gemm.ps()) / static_cast<double>(r.gemm_alone.ps());
  for (const Run::CopyStream& c : both.streams) {
    std::vector<Tick> during, after;
    for (const Tick t : c.done) {
      if (t >= both.gemm_start && t <= both.gemm_end) during.push_back(t);
      if (t > both.gemm_end) after.push_back(t);
    }
    if (c.gpu == 0 && !r.copy_during_GBps) r.copy_during_GBps = rate(during, spec_.copy_bytes, 2);
    if (const std::optional<double> a = rate(after, spec_.copy_bytes, 3)) r.copy_after_GBps.push_back(*a);
  }
  Gpu& g0 = both.node.gpu(0);
  const McStreamStats gd = g0.memory().stream_totals(Stream::kCompute), cd = g0.memory().stream_totals(Stream::kCommunication);
  const L2Cache::StreamTotals gl = g0.memory().l2_stream_totals(Stream::kCompute),
                              cl = g0.memory().l2_stream_totals(Stream::kCommunication);
  auto sum = [](const auto& bytes) {
    std::uint64_t s = 0;
    for (const std::uint64_t b : bytes) s += b;
    return s;
  };
  r.gemm_dram_bytes = sum(gd.bytes);
  r.copy_dram_bytes = sum(cd.bytes);
  r.gemm_l2_bytes = sum(gl.bytes);
  r.copy_l2_bytes = sum(cl.bytes);

  nlohmann::json& j = r.json;
  j["gemm"] = spec_.gemm_label;
  j["gemms"] = n;
  j["window_copies"] = spec_.window_copies;
  j["interferer"] = std::string(to_string(spec_.interferer));
  j["order"] = spec_.comm_first ? "comm_first" : "gemm_first";
  j["copy_bytes"] = spec_.copy_bytes;
  j["gemm_alone_ps"] = r.gemm_alone.ps();
  j["gemm_ps"] = r.gemm.ps();
  j["gemm_slowdown"] = r.slowdown;
  j["copies"] = r.copies;
  j["copy_alone_ps"] = r.copy_alone.ps();
  j["copy_alone_GBps"] = r.copy_alone_GBps;
  j["copy_during_GBps"] = r.copy_during_GBps ? nlohmann::json(*r.copy_during_GBps) : nlohmann::json();
  j["copy_after_GBps"] = r.copy_after_GBps;
  // Each kernel of GPU 0 beside the other stream's (what results/h200-measurements/
  // copy_gaps.csv measures): when it was launched, placed its first WG and ended.
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& [kind, id] : both.gpu0_kernels) {
    const KernelStats& ks = g0.kernel_stats(id);
    kernels.push_back({{"kind", kind},
                       {"launched_ps", ks.launched.ps()},
                       {"first_dispatch_ps", ks.first_dispatch.ps()},
                       {"done_ps", ks.done.ps()}});
  }
  j["gpu0_kernels"] = std::move(kernels);
  j["gpu0"] = {{"gemm_dram_bytes", r.gemm_dram_bytes},
               {"copy_dram_bytes", r.copy_dram_bytes},
               {"gemm_l2_bytes", r.gemm_l2_bytes},
               {"copy_l2_bytes", r.copy_l2_bytes}};
  return r;
}

std::string InterferenceSystem::summary(const InterferenceResult& r) const {
  std::string s = fmt::format("interference: {} x {} on GPU 0 beside {} ({}), 2 GPUs\n", r.gemms,
                              spec_.gemm_label, to_string(spec_.interferer),
                              spec_.comm_first ? "comm-first" : "gemm-first");
  s += fmt::format("  GEMM alone         {:.3f} us\n", r.gemm_alone.us());
  s += fmt::format("  GEMM beside        {:.3f} us  (slowdown {:.4f})\n", r.gemm.us(), r.slowdown);
  if (spec_.interferer != Interferer::kNone) {
    s += fmt::format("  copy alone         {:.1f} GB/s ({} B in {:.3f} us); {} queued\n", r.copy_alone_GBps,
                     spec_.copy_bytes, r.copy_alone.us(), r.copies);
    s += fmt::format("  copy during        {}\n",
                     r.copy_during_GBps ? fmt::format("{:.1f} GB/s", *r.copy_during_GBps) : std::string("-"));
    std::string after;
    for (const double a : r.copy_after_GBps) after += fmt::format("{}{:.1f}", after.empty() ? "" : "; ", a);
    s += fmt::format("  copy after         {}\n", after.empty() ? std::string("-") : after + " GB/s");
    s += fmt::format("  GPU 0 DRAM         GEMMs {:.1f} MB, copies {:.1f} MB\n", static_cast<double>(r.gemm_dram_bytes) / 1e6,
                     static_cast<double>(r.copy_dram_bytes) / 1e6);
  }
  return s;
}

}  // namespace t3sim
