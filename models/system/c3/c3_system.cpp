#include "models/system/configuration.h"
#include "models/system/c3/c3_system.h"
#include "models/system/result_store.h"

#include <algorithm>
#include <optional>


#include <fmt/format.h>

#include "sim/error.h"
#include "sim/hash.h"
#include "sim/int_math.h"

namespace t3sim {

// GPU g's traffic of stream `s` so far: DRAM at the controllers, requests at the L2 (a
// member of C3Run::Snapshots, so not in the anonymous namespace).
struct C3StreamSnapshot {
  McStreamStats dram;
  L2Cache::StreamTotals l2;
};

namespace {

C3StreamSnapshot snapshot(Gpu& gpu, Stream s) {
  return C3StreamSnapshot{gpu.memory().stream_totals(s), gpu.memory().l2_stream_totals(s)};
}
void add_traffic(C3KernelResult& k, const C3StreamSnapshot& to, const C3StreamSnapshot* from) {
  auto d = [](std::uint64_t a, std::uint64_t b) { return a - b; };
  const C3StreamSnapshot zero{};
  const C3StreamSnapshot& f = from != nullptr ? *from : zero;
  k.dram_read = d(to.dram.bytes[index(MemOp::kRead)], f.dram.bytes[index(MemOp::kRead)]);
  k.dram_write = d(to.dram.bytes[index(MemOp::kWrite)], f.dram.bytes[index(MemOp::kWrite)]);
  k.dram_update = d(to.dram.bytes[index(MemOp::kUpdate)], f.dram.bytes[index(MemOp::kUpdate)]);
  k.l2_read = d(to.l2.bytes[index(MemOp::kRead)], f.l2.bytes[index(MemOp::kRead)]);
  k.l2_write = d(to.l2.bytes[index(MemOp::kWrite)] + to.l2.bytes[index(MemOp::kUpdate)],
                 f.l2.bytes[index(MemOp::kWrite)] + f.l2.bytes[index(MemOp::kUpdate)]);
  k.l2_hits = d(to.l2.hits, f.l2.hits);
  k.l2_misses = d(to.l2.misses, f.l2.misses);
}

nlohmann::json kernel_json(const C3KernelResult& k) {
  return {{"start_ps", k.start.ps()},          {"end_ps", k.end.ps()},
          {"time_ps", k.time().ps()},          {"dram_read_bytes", k.dram_read},
          {"dram_write_bytes", k.dram_write},  {"dram_update_bytes", k.dram_update},
          {"l2_read_bytes", k.l2_read},        {"l2_write_bytes", k.l2_write},
          {"l2_line_hits", k.l2_hits},         {"l2_line_misses", k.l2_misses}};
}

nlohmann::json kernel_cache_json(const C3KernelResult& k) {
  return {{"start_ps", k.start.ps()}, {"end_ps", k.end.ps()},      {"dram_read", k.dram_read},
          {"dram_write", k.dram_write}, {"dram_update", k.dram_update}, {"l2_read", k.l2_read},
          {"l2_write", k.l2_write},     {"l2_hits", k.l2_hits},         {"l2_misses", k.l2_misses}};
}
C3KernelResult kernel_from_cache(const nlohmann::json& j) {
  C3KernelResult k;
  k.start = cached_time(j, "start_ps");
  k.end = cached_time(j, "end_ps");
  if (k.end < k.start) throw BadCacheEntry{"a kernel ends before it starts"};
  k.dram_read = cached_count(j, "dram_read");
  k.dram_write = cached_count(j, "dram_write");
  k.dram_update = cached_count(j, "dram_update");
  k.l2_read = cached_count(j, "l2_read");
  k.l2_write = cached_count(j, "l2_write");
  k.l2_hits = cached_count(j, "l2_hits");
  k.l2_misses = cached_count(j, "l2_misses");
  return k;
}
nlohmann::json sampling_cache_json(const SamplingReport& r) {
  return {{"skips", r.skips},
          {"stages", r.skipped_stages},
          {"wgs", r.skipped_wgs},
          {"periods", r.skipped_periods},
          {"ps", r.skipped_time.ps()}};
}
SamplingReport sampling_from_cache(const nlohmann::json& j) {
  SamplingReport r;
  r.skips = static_cast<decltype(r.skips)>(cached_count(j, "skips"));
  r.skipped_stages = static_cast<decltype(r.skipped_stages)>(cached_count(j, "stages"));
  r.skipped_wgs = static_cast<decltype(r.skipped_wgs)>(cached_count(j, "wgs"));
  r.skipped_periods = static_cast<decltype(r.skipped_periods)>(cached_count(j, "periods"));
  r.skipped_time = cached_time(j, "ps");
  return r;
}

}  // namespace

std::string c3_taxonomy(Tick gemm, Tick collective) {
  const Tick longer = std::max(gemm, collective), shorter = std::min(gemm, collective);
  // Within 15 %: longer <= 1.15 x shorter, in integers.
  if (longer.ps() * 100 <= shorter.ps() * 115) return "GC-equal";
  return gemm > collective ? "G-long" : "C-long";
}

// ---------------------------------------------------------------------------- C3Run

struct C3Run::Snapshots {
  C3StreamSnapshot cu_start, cu_end, dma_start, dma_end;
};

C3Spec concurrent_spec(const Configuration& configuration, C3Spec spec) {
  const ConcurrentLaunch launch = configuration.launch();
  if (launch.collective_priority > 0) spec.collective.priority = launch.collective_priority;
  if (launch.reserved_cus) spec.comm_cus = *launch.reserved_cus;
  return spec;
}

bool collective_first(const Configuration& configuration, const C3Spec& spec) {
  return configuration.launch().collective_first.value_or(spec.comm_first);
}

Tick C3System::configuration_time(const C3Result& r) const {
  switch (config_->procedure()) {
    case Procedure::kChained: return r.isolated_gemm + r.isolated_collective;
    case Procedure::kCriticalPath: return r.ideal;
    case Procedure::kOverlapped: return std::max(r.gemm.end, r.collective.end);
    case Procedure::kOwn: break;
  }
  internal_error(Tick(), "c3", "a configuration of its own procedure ran kind c3", __FILE__, __LINE__);
}

std::string C3System::describe() const {
  switch (config_->procedure()) {
    case Procedure::kChained: return "GEMM, then the CU collective, each alone";
    case Procedure::kCriticalPath: return "max of the isolated GEMM and CU collective (no interference)";
    case Procedure::kOverlapped:
    case Procedure::kOwn: break;
  }
  return config_->describe(LaunchRequest{spec_.comm_first, spec_.comm_cus});
}

C3Run::C3Run(Simulator& sim, const NodeConfig& node_config, const C3Spec& spec, bool with_cu, bool with_dma)
    : ScenarioRun(sim, node_config, "the GEMM and the collective"),
      spec_(spec),
      snap_(std::make_unique<Snapshots>()) {
  const GemmParams& gp = *spec_.gemm.params;
  // Memory: the GEMM's A, B, C (trace/gemm.h), then the collective's buffers, then
  // the DMA collective's: independent kernels, so nothing is shared.
  std::uint64_t next = align_up(gemm_addresses(gp).c + gp.m * gp.n * gp.dtype_bytes, kBufferAlign);
  auto make = [&](CollectiveEngine engine) {
    NodeCollectiveParams p = spec_.collective;
    p.engine = engine;
    p.data_base = next;
    if (engine == CollectiveEngine::kCu) p.cus = spec_.comm_cus;
    auto c = std::make_unique<NodeCollective>(node(), p);
    // Past its array, receive FIFOs and (all-to-all) output.
    next = align_up(collective_out_base(c->trace_params(0)) + p.array_bytes, kBufferAlign);
    return c;
  };
  gemm_task_ = add_task("gemm");
  if (with_cu) {
    cu_ = make(CollectiveEngine::kCu);
    cu_task_ = add_task("collective");
  }
  if (with_dma) {
    dma_ = make(CollectiveEngine::kDma);
    dma_task_ = add_task("dma_collective");
  }
  // The isolated procedure (chained): each kernel alone, in this order, only ordered
  // (the kernels are independent), so the concurrent run (overlapped) starts them
  // together.
  chain_task(gemm_task_, {}, [this](std::uint32_t g) { launch_gemm(g); });
  if (cu_) chain_task(cu_task_, {only_after(gemm_task_)}, [this](std::uint32_t g) { start_collective(g, Coll::kCu); });
  if (dma_)
    chain_task(dma_task_, {only_after(cu_ ? cu_task_ : gemm_task_)},
               [this](std::uint32_t g) { start_collective(g, Coll::kDma); });
  gemm_kernel_.assign(simulated_gpus(), 0);
  if (cu_) cu_->preload();
  if (dma_) dma_->preload();
  if (spec_.sampling.enabled)
    for (std::uint32_t g = 0; g < simulated_gpus(); ++g) node().gpu(g).enable_sampling(spec_.sampling);
}

C3Run::~C3Run() = default;

void C3Run::start_together(std::uint32_t g, bool collective_first) {
  std::vector<Task> first;
  if (!collective_first) first.push_back(gemm_task_);
  if (cu_) first.push_back(cu_task_);
  if (dma_) first.push_back(dma_task_);
  if (collective_first) first.push_back(gemm_task_);
  start_overlapped(g, first);
}

void C3Run::launch_gemm(std::uint32_t g) {
  KernelLaunch k;
  k.trace = &spec_.gemm.trace;
  k.cus = gemm_cus();
  k.stream = Stream::kCompute;
  k.sampleable = true;  // timing only: the GEMM's values are not checked
  gemm_kernel_[g] = launch_kernel(g, gemm_task_, std::move(k));
}

void C3Run::start_collective(std::uint32_t g, Coll which) {
  NodeCollective* c = which == Coll::kCu ? cu_.get() : dma_.get();
  if (c == nullptr)
    internal_error(node().gpu(g).now(), "c3", fmt::format("the {} collective was not built for this run",
                                                          which == Coll::kCu ? "CU" : "DMA"),
                   __FILE__, __LINE__);
  if (g == 0) (which == Coll::kCu ? snap_->cu_start : snap_->dma_start) = snapshot(node().gpu(0), Stream::kCommunication);
  ScenarioRun::start_collective(g, task(which), *c, [this, which](std::uint32_t h) {
    if (h == 0) (which == Coll::kCu ? snap_->cu_end : snap_->dma_end) = snapshot(node().gpu(0), Stream::kCommunication);
  });
}

Tick C3Run::ideal(Tick gemm, Tick collective) const {
  std::vector<Tick> alone(task_count());
  alone[gemm_task_] = gemm;
  if (cu_) alone[cu_task_] = collective;
  return critical_path(alone);
}

std::vector<std::uint32_t> C3Run::gemm_cus() const {
  std::vector<std::uint32_t> cus;
  const std::uint32_t all = node().config().gpu.num_cus;
  for (std::uint32_t cu = 0; spec_.comm_cus > 0 && cu < all - spec_.comm_cus; ++cu) cus.push_back(cu);
  return cus;
}

void C3Run::run(Tick max_time) {
  simulate(max_time);
  std::string error;
  for (const NodeCollective* c : {cu_.get(), dma_.get()}) {
    if (c == nullptr) continue;
    words_checked_ += c->verify(error);
    if (!error.empty())
      throw SimulationError(fmt::format("functional check of the {} {} failed: {}", to_string(c->params().engine),
                                        to_string(c->params().kind), error));
  }
}

C3KernelResult C3Run::gemm_result() {
  C3KernelResult k;
  k.start = start(gemm_task_);
  k.end = end(gemm_task_);
  add_traffic(k, snapshot(node().gpu(0), Stream::kCompute), nullptr);
  return k;
}

C3KernelResult C3Run::collective_result(Coll which) {
  C3KernelResult k;
  k.start = start(task(which));
  k.end = end(task(which));
  // Its communication-stream traffic between its start and its end on GPU 0
  // (write-backs of lines it dirtied that drain later count for whatever follows).
  if (which == Coll::kCu)
    add_traffic(k, snap_->cu_end, &snap_->cu_start);
  else
    add_traffic(k, snap_->dma_end, &snap_->dma_start);
  return k;
}

std::uint32_t C3Run::gemm_stages() { return node().gpu(0).kernel_stats(gemm_kernel_[0]).stages(); }

// ---------------------------------------------------------------------------- C3System

C3System::C3System(Simulator& sim, const NodeConfig& node, C3Spec spec, std::string configuration,
                   std::uint64_t seed)
    : sim_(sim), node_(node), spec_(std::move(spec)), configuration_(std::move(configuration)) {
  if (!spec_.gemm.params) throw std::invalid_argument("C3 needs a generated GEMM");
  config_ = make_configuration(configuration_, ConfigurationFamily::kC3);
  // The CUs the concurrent run reserves, as reported (results, sweep rows, the summary):
  // the configuration's where it sets them, else the workload's.
  spec_.comm_cus = concurrent_spec(*config_, spec_).comm_cus;
  if (spec_.comm_cus >= node_.gpu.num_cus)
    throw std::invalid_argument("C3: the CUs reserved for the collective leave the GEMM none");
  if (!spec_.isolated && !concurrent())
    throw std::invalid_argument("C3 without isolated runs needs a concurrent configuration");
  // The driver builds the first run now, so that what cannot be built (a collective the
  // node cannot run) is an error of `t3sim validate` too.
  driver_ = std::make_unique<ScenarioDriver<C3Isolated>>(sim_, *this, config_->procedure(), seed);
}

C3System::~C3System() = default;

bool C3System::runs_chained(Procedure procedure) const {
  (void)procedure;
  return spec_.isolated;  // workload `isolated: off`: the concurrent run alone
}

void C3System::build_chained(Simulator& sim) {
  // Isolated means each kernel alone as the library launches it: the collective on any
  // CU, whatever CUs the configuration reserves for it, so every configuration of a
  // case shares one ideal (seed 003 §IV-B3: "all times from isolated executions").
  C3Spec isolated = spec_;
  isolated.comm_cus = 0;
  seq_ = std::make_unique<C3Run>(sim, node_, isolated, /*with_cu=*/true, uses_dma());
}

void C3System::build_own(Simulator& sim) {
  const bool dma = uses_dma();
  conc_ = std::make_unique<C3Run>(sim, node_, concurrent_spec(*config_, spec_), /*with_cu=*/!dma, dma);
}

C3Isolated C3System::simulate_chained(Tick max_time) {
  C3Run& seq = *seq_;
  for (std::uint32_t g = 0; g < seq.simulated_gpus(); ++g) {
    Simulator::InPartition in(seq.sim(), seq.node().partition(g));
    seq.start_chained(g);
  }
  seq.run(max_time);
  C3Isolated iso;
  iso.gemm = seq.gemm_result();
  iso.cu = seq.collective_result(C3Run::Coll::kCu);
  if (uses_dma()) iso.dma = seq.collective_result(C3Run::Coll::kDma);
  iso.words_checked = seq.words_checked();
  iso.stages = seq.gemm_stages();
  iso.channels = seq.collective_channels();
  iso.sampling = seq.sampling_report();
  iso.ideal = seq.ideal(iso.gemm.time(), iso.cu.time());
  return iso;
}

nlohmann::json C3System::chained_entry(const C3Isolated& iso) const {
  nlohmann::json j = {{"gemm", kernel_cache_json(iso.gemm)},
                      {"collective", kernel_cache_json(iso.cu)},
                      {"words_checked", iso.words_checked},
                      {"stages", iso.stages},
                      {"channels", iso.channels},
                      {"sampling", sampling_cache_json(iso.sampling)}};
  if (iso.dma) j["dma_collective"] = kernel_cache_json(*iso.dma);
  return j;
}

C3Isolated C3System::chained_from_entry(const nlohmann::json& j) const {
  C3Isolated iso;
  iso.gemm = kernel_from_cache(cached_object(j, "gemm"));
  iso.cu = kernel_from_cache(cached_object(j, "collective"));
  if (uses_dma()) iso.dma = kernel_from_cache(cached_object(j, "dma_collective"));
  iso.words_checked = cached_count(j, "words_checked");
  iso.stages = static_cast<std::uint32_t>(cached_count(j, "stages"));
  iso.channels = static_cast<std::uint32_t>(cached_count(j, "channels"));
  iso.sampling = sampling_from_cache(cached_object(j, "sampling"));
  iso.ideal = seq_->ideal(iso.gemm.time(), iso.cu.time());  // built at construction, not simulated
  return iso;
}

Tick C3System::chained_end(const C3Isolated& iso) const {
  Tick end = std::max(iso.gemm.end, iso.cu.end);
  if (iso.dma) end = std::max(end, iso.dma->end);
  return end;
}

void C3System::simulate_own(Tick max_time) {
  C3Run& conc = *conc_;
  for (std::uint32_t g = 0; g < conc.simulated_gpus(); ++g) {
    Simulator::InPartition in(conc.sim(), conc.node().partition(g));
    conc.start_together(g, collective_first(*config_, conc.spec()));
  }
  conc.run(max_time);
  concurrent_.gemm = conc.gemm_result();
  concurrent_.collective = conc.collective_result(uses_dma() ? C3Run::Coll::kDma : C3Run::Coll::kCu);
  concurrent_.words_checked = conc.words_checked();
  concurrent_.stages = conc.gemm_stages();
  concurrent_.channels = conc.collective_channels();
  concurrent_.sampling = conc.sampling_report();
}

C3Result C3System::run(Tick max_time) {
  C3Result r;
  const bool dma = uses_dma();
  r.isolated = spec_.isolated;
  const ScenarioRuns<C3Isolated> runs = driver_->run(max_time);
  // The isolated run's node is gone with its results (whichever the procedure), as the
  // concurrent run's is at the end of the run.
  seq_.reset();
  C3Isolated iso;
  if (runs.chained) {
    iso = *runs.chained;
    r.words_checked = iso.words_checked;
    r.isolated_sampling = iso.sampling;
    r.extra_events = runs.extra_events;
    r.isolated_gemm = iso.gemm.time();
    r.isolated_collective = iso.cu.time();
    if (iso.dma) r.isolated_dma_collective = iso.dma->time();
    r.ideal = iso.ideal;
  }
  std::uint32_t stages = iso.stages, channels = iso.channels;

  if (runs.own_ran) {
    r.gemm = concurrent_.gemm;
    r.collective = concurrent_.collective;
    r.words_checked += concurrent_.words_checked;
    stages = concurrent_.stages;
    if (channels == 0) channels = concurrent_.channels;
    r.run_sampling = concurrent_.sampling;
    conc_.reset();
  } else {
    r.gemm = iso.gemm;
    r.collective = iso.cu;
  }
  r.values_checked = spec_.collective.values;
  r.time = configuration_time(r);
  if (spec_.isolated) {
    auto ratio = [](Tick a, Tick b) {
      return b.ps() ? static_cast<double>(a.ps()) / static_cast<double>(b.ps()) : 0.0;
    };
    const Tick sequential = r.isolated_gemm + r.isolated_collective;
    r.ideal_speedup = ratio(sequential, r.ideal);
    r.speedup = ratio(sequential, r.time);
    r.fraction_of_ideal = r.ideal_speedup > 1.0 ? (r.speedup - 1.0) / (r.ideal_speedup - 1.0) : 0.0;
    r.gemm_slowdown = ratio(r.gemm.time(), r.isolated_gemm);
    r.collective_slowdown = ratio(r.collective.time(), dma ? *r.isolated_dma_collective : r.isolated_collective);
    r.taxonomy = c3_taxonomy(r.isolated_gemm, r.isolated_collective);
  }
  r.json = result_json(r, iso, stages, channels);
  // Where the main simulator ran nothing (ideal's isolated run taken), said where the
  // result is read: its stats and timeline are empty; the events are the kept run's.
  if (runs.chained_taken && !runs.own_ran) r.json["sequential_run"] = "taken from the isolated-run cache";
  return r;
}

nlohmann::json C3System::result_json(const C3Result& r, const C3Isolated& iso, std::uint32_t stages,
                                     std::uint32_t channels) const {
  const NodeCollectiveParams& cp = spec_.collective;
  const Tick sequential = r.isolated_gemm + r.isolated_collective;
  nlohmann::json isolated = {{"gemm", kernel_json(iso.gemm)}, {"collective", kernel_json(iso.cu)}};
  if (iso.dma) isolated["dma_collective"] = kernel_json(*iso.dma);
  if (!spec_.isolated) isolated = "off (workload.isolated): no isolated runs, slowdowns or speedups";
  nlohmann::json j = {{"workload", "c3"},
                      {"configuration", configuration_},
                      {"describe", describe()},
                      {"mode", to_string(node_.mode)},
                      {"num_gpus", node_.num_gpus},
                      {"preset", spec_.preset},
                      {"paper_taxonomy", spec_.paper_taxonomy},
                      {"scale", spec_.scale},
                      {"gemm", spec_.gemm_label},
                      {"gemm_stages", stages},
                      {"collective", to_string(cp.kind)},
                      {"collective_bytes", cp.array_bytes},
                      {"collective_channels", channels},
                      {"order", spec_.comm_first ? "comm-first" : "gemm-first"},
                      {"comm_cus", spec_.comm_cus},
                      {"time_ps", r.time.ps()},
                      {"sequential_ps", sequential.ps()},
                      {"ideal_ps", r.ideal.ps()},
                      {"isolated", isolated},
                      {"run", {{"gemm", kernel_json(r.gemm)}, {"collective", kernel_json(r.collective)}}},
                      {"gemm_slowdown", r.gemm_slowdown},
                      {"collective_slowdown", r.collective_slowdown},
                      {"ideal_speedup", r.ideal_speedup},
                      {"speedup", r.speedup},
                      {"fraction_of_ideal", r.fraction_of_ideal},
                      {"taxonomy", r.taxonomy},
                      {"functional_check", r.values_checked ? "passed" : "not run"},
                      {"words_checked", r.words_checked}};
  if (!spec_.isolated) {
    for (const char* key : {"sequential_ps", "ideal_ps", "gemm_slowdown", "collective_slowdown", "ideal_speedup",
                            "speedup", "fraction_of_ideal", "taxonomy"})
      j.erase(key);
  }
  if (spec_.sampling.enabled)
    j["sampling"] = {{"isolated", sampling_json(spec_.sampling, r.isolated_sampling)},
                     {"run", sampling_json(spec_.sampling, r.run_sampling)}};
  return j;
}

std::string C3System::summary(const C3Result& r) const {
  const NodeCollectiveParams& cp = spec_.collective;
  // A kernel's line; with its isolated time when there is one, for the slowdown.
  auto line = [](const char* what, const C3KernelResult& k, std::optional<Tick> isolated) {
    const std::string alone =
        isolated ? fmt::format(" (alone {:.4f} ms, x{:.3f})", isolated->ms(),
                               isolated->ps() ? static_cast<double>(k.time().ps()) / static_cast<double>(isolated->ps())
                                              : 0.0)
                 : std::string();
    return fmt::format("  {:<18} {:.4f} ms{}; DRAM {:.1f} MB read {:.1f} MB written; L2 {:.1f} MB\n", what,
                       k.time().ms(), alone, megabytes(k.dram_read), megabytes(k.dram_write + k.dram_update),
                       megabytes(k.l2_read + k.l2_write));
  };
  const std::string functional_check =
      r.values_checked ? fmt::format("passed ({} words)", r.words_checked)
                       : fmt::format("not run ({})", spec_.values_off.empty() ? std::string("values off") : spec_.values_off);
  std::string s = fmt::format(
      "C3 {}{} on {} GPUs ({} mode), configuration {}: {}\n"
      "  GEMM               {}\n"
      "  collective         {} of {:.1f} MB per GPU\n"
      "  time               {:.4f} ms\n",
      spec_.preset.empty() ? spec_.gemm_label : spec_.preset,
      spec_.scale > 1 ? fmt::format(" (scaled 1/{})", spec_.scale) : std::string(), node_.num_gpus,
      to_string(node_.mode), configuration_, describe(), spec_.gemm_label,
      to_string(cp.kind), megabytes(cp.array_bytes), r.time.ms());
  if (!r.isolated) {
    s += line("GEMM", r.gemm, std::nullopt);
    s += line("collective", r.collective, std::nullopt);
    s += fmt::format("  isolated runs      off (workload.isolated): no slowdowns, ideal or speedup\n"
                     "  functional check   {}\n",
                     functional_check);
    return s;
  }
  s += line("GEMM", r.gemm, r.isolated_gemm);
  s += line("collective", r.collective,
            r.isolated_dma_collective && uses_dma() ? *r.isolated_dma_collective : r.isolated_collective);
  s += fmt::format(
      "  sequential         {:.4f} ms (GEMM alone + CU collective alone; taxonomy {}{})\n"
      "  speedup            {:.3f}x of an ideal {:.3f}x: {:.1f}% of the ideal realized\n"
      "  functional check   {}\n",
      (r.isolated_gemm + r.isolated_collective).ms(), r.taxonomy,
      spec_.paper_taxonomy.empty() ? std::string() : fmt::format(", paper {}", spec_.paper_taxonomy), r.speedup,
      r.ideal_speedup, r.fraction_of_ideal * 100.0, functional_check);
  return s;
}

}  // namespace t3sim
