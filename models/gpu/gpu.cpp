#include "models/gpu/gpu.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/error.h"
#include "sim/simulator.h"

namespace t3sim {

GpuConfig read_gpu_config(ConfigNode gpu, ConfigNode memory) {
  GpuConfig cfg;
  cfg.num_cus = static_cast<std::uint32_t>(gpu.get_uint("num_cus", cfg.num_cus, 1, 4096));
  cfg.kernel_launch_latency = gpu.get_time("kernel_launch_latency", cfg.kernel_launch_latency, Tick::zero(), Tick::ms(10));
  cfg.wg_dispatch_latency = gpu.get_time("wg_dispatch_latency", cfg.wg_dispatch_latency, Tick::zero(), Tick::ms(1));
  cfg.cluster_group_cus =
      static_cast<std::uint32_t>(gpu.get_uint("cluster_group_cus", cfg.cluster_group_cus, 0, kTraceMaxCluster));
  if (cfg.cluster_group_cus != 0 && cfg.num_cus % cfg.cluster_group_cus != 0)
    gpu.fail("cluster_group_cus", fmt::format("expected a divisor of num_cus ({}): the CUs split into groups of it",
                                              cfg.num_cus));
  cfg.cluster_group_block =
      static_cast<std::uint32_t>(gpu.get_uint("cluster_group_block", cfg.cluster_group_block, 0, 4096));
  if (cfg.cluster_group_block != 0 && cfg.cluster_group_cus == 0)
    gpu.fail("cluster_group_block", "needs gpu.cluster_group_cus (the groups it orders)");
  if (gpu.has("local_copy_kernel")) {
    ConfigNode copy = gpu.child("local_copy_kernel");
    GpuConfig::LocalCopyKernel k;
    k.threads = static_cast<std::uint32_t>(copy.get_uint("threads", k.threads, 32, 1024));
    k.regs_per_thread = static_cast<std::uint32_t>(copy.get_uint("regs_per_thread", k.regs_per_thread, 1, 255));
    k.unroll = static_cast<std::uint32_t>(copy.get_uint("unroll", k.unroll, 1, 16));
    copy.finish();
    cfg.local_copy_kernel = k;
  }
  cfg.cu = read_cu_config(gpu.child("cu"));
  ConfigNode gemm = gpu.child("gemm");
  cfg.gemm.flops_per_cycle = cfg.cu.flops_per_cycle;
  cfg.gemm.lds_bytes_per_cycle = cfg.cu.lds_bytes_per_cycle;
  cfg.gemm = read_gemm_kernel_keys(gemm, cfg.gemm);
  ConfigNode by_output = gemm.child("by_output");
  for (const std::string& shape : by_output.keys()) {
    GpuConfig::KernelForOutput k;
    unsigned long long m = 0, n = 0;
    char x = 0, rest = 0;
    if (std::sscanf(shape.c_str(), "%llu%c%llu%c", &m, &x, &n, &rest) != 3 || x != 'x' || m == 0 || n == 0)
      by_output.fail(shape, "expected an output shape 'MxN' (e.g. 2048x18432) with the kernel keys of gpu.gemm");
    k.m = m;
    k.n = n;
    k.kernel = read_gemm_kernel(by_output.child(shape), cfg.gemm);
    cfg.gemm_by_output.push_back(std::move(k));
  }
  cfg.gemm_k_alignment = static_cast<std::uint32_t>(gemm.get_uint("k_alignment", 0, 0, 1u << 16));
  if (gemm.has("unaligned")) {
    cfg.gemm_unaligned = read_gemm_kernel(gemm.child("unaligned"), cfg.gemm);
    if (cfg.gemm_k_alignment == 0)
      gemm.fail("unaligned", "expected gpu.gemm.k_alignment (the K multiple below which this kernel runs) beside it");
  }
  gemm.finish();
  ConfigNode collective = gpu.child("collective");
  cfg.collective_channels = static_cast<std::uint32_t>(collective.get_uint("channels", 0, 0, 4096));
  cfg.collective_ll128 = collective.get_bool("ll128", false);
  cfg.collective_ll_max_gbps =
      static_cast<double>(collective.get_bandwidth("ll_max_bw", Bandwidth(0), Bandwidth(0)).bytes_per_second()) / 1e9;
  cfg.collective_ll128_max_gbps_per_channel =
      static_cast<double>(
          collective.get_bandwidth("ll128_max_bw_per_channel", Bandwidth(0), Bandwidth(0)).bytes_per_second()) /
      1e9;
  cfg.collective_lds_per_wg = collective.get_bytes("lds_per_wg", 0, 0, 1ULL << 30);
  cfg.collective_registers_per_wg = collective.get_uint("registers_per_wg", 0, 0, 1ULL << 24);
  collective.finish();
  gpu.finish();
  cfg.memory = read_gpu_memory_config(memory);
  return cfg;
}

CopyKernelParams local_copy_params(const GpuConfig& gpu, std::uint64_t bytes) {
  if (!gpu.local_copy_kernel) throw std::logic_error("local_copy_params: the GPU has no gpu.local_copy_kernel");
  const GpuConfig::LocalCopyKernel& k = *gpu.local_copy_kernel;
  CopyKernelParams p;
  p.threads = k.threads;
  p.regs_per_thread = k.regs_per_thread;
  p.unroll = k.unroll;
  p.bytes = bytes;
  const std::uint64_t block = std::uint64_t{k.threads} * k.unroll * p.element_bytes;
  p.ctas = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, (bytes + block - 1) / block));
  return p;
}

GemmParams read_gemm_kernel(ConfigNode node, GemmParams base) {
  GemmParams p = read_gemm_kernel_keys(node, std::move(base));
  node.finish();
  return p;
}

GemmParams with_kernel(GemmParams problem, const GemmParams& kernel) {
  GemmParams& p = problem;
  p.tile_m = kernel.tile_m;
  p.tile_n = kernel.tile_n;
  p.k_step = kernel.k_step;
  p.stages = kernel.stages;
  p.tma = kernel.tma;
  p.issue_cycles = kernel.issue_cycles;
  p.epilogue_smem_passes = kernel.epilogue_smem_passes;
  p.mma_flops_per_cycle = kernel.mma_flops_per_cycle;
  p.load_issue_bytes_per_cycle = kernel.load_issue_bytes_per_cycle;
  p.boost_clock = kernel.boost_clock;
  p.cluster_m = kernel.cluster_m;
  p.persistent_wgs = kernel.persistent_wgs;
  p.persistent_static_tiles = kernel.persistent_static_tiles;
  p.wfs_per_wg = kernel.wfs_per_wg;
  p.wave_size = kernel.wave_size;
  p.regs_per_thread = kernel.regs_per_thread;
  p.order = kernel.order;
  p.group_size = kernel.group_size;
  return p;
}

// Keep in step with with_kernel (above): the same fields.
GemmParams read_gemm_kernel_keys(ConfigNode& node, GemmParams p) {
  p.tile_m = static_cast<std::uint32_t>(node.get_uint("tile_m", p.tile_m, 1, 4096));
  p.tile_n = static_cast<std::uint32_t>(node.get_uint("tile_n", p.tile_n, 1, 4096));
  p.k_step = static_cast<std::uint32_t>(node.get_uint("k_step", p.k_step, 1, 4096));
  p.stages = static_cast<std::uint32_t>(node.get_uint("stages", p.stages, 1, kTraceMaxStages));
  p.tma = node.get_bool("tma", p.tma);
  p.issue_cycles = static_cast<std::uint32_t>(node.get_uint("issue_cycles", p.issue_cycles, 0, 1u << 20));
  p.epilogue_smem_passes =
      static_cast<std::uint32_t>(node.get_uint("epilogue_smem_passes", p.epilogue_smem_passes, 0, 16));
  p.mma_flops_per_cycle =
      static_cast<std::uint32_t>(node.get_uint("mma_flops_per_cycle", p.mma_flops_per_cycle, 0, 1u << 24));
  p.load_issue_bytes_per_cycle = static_cast<std::uint32_t>(
      node.get_uint("load_issue_bytes_per_cycle", p.load_issue_bytes_per_cycle, 0, 1u << 20));
  p.boost_clock = node.get_bool("boost_clock", p.boost_clock);
  p.cluster_m = static_cast<std::uint32_t>(node.get_uint("cluster_m", p.cluster_m, 1, 16));
  p.persistent_wgs = static_cast<std::uint32_t>(node.get_uint("persistent_wgs", p.persistent_wgs, 0, 1u << 20));
  p.persistent_static_tiles = static_cast<std::uint32_t>(
      node.get_uint("persistent_static_tiles", p.persistent_static_tiles, 0, kTraceMaxPersistentStatic));
  p.wfs_per_wg = static_cast<std::uint32_t>(node.get_uint("wfs_per_wg", p.wfs_per_wg, 1, 64));
  p.wave_size = static_cast<std::uint32_t>(node.get_uint("wave_size", p.wave_size, 1, 1024));
  p.regs_per_thread = static_cast<std::uint32_t>(node.get_uint("regs_per_thread", p.regs_per_thread, 0, 1u << 16));
  const std::string order = node.get_enum("order", std::string(to_string(p.order)), kTileOrderNames);
  p.order = parse_tile_order(order);
  p.group_size = static_cast<std::uint32_t>(node.get_uint("group_size", p.group_size, 1, 1u << 20));
  return p;
}

// A CU with its WG slots and WF state: 19 KiB of host memory (peak RSS of `t3sim
// validate` while system.gpu.num_cus grows; rounded up).
void estimate_host_memory(const GpuConfig& cfg, std::uint32_t gpus, HostMemoryEstimate& out) {
  out.add("system.gpu.num_cus", fmt::format("compute units of {} GPU{}", gpus, gpus == 1 ? "" : "s"),
          std::uint64_t{gpus} * cfg.num_cus, 24 * 1024);
  // Their statistics as the run ends and writes them (stats.csv, results.json): 64 KiB
  // per CU and per memory channel; heaptrack of a GEMM alone on h200.yaml (132 CUs,
  // 192 channels): 14.1 MB of output text and 6.2 MB of histograms as JSON at the peak
  // (issue 45).
  const std::uint64_t channels = cfg.memory.model == MemoryModel::kHbm ? cfg.memory.hbm.channels : 0;
  out.add("system.gpu.num_cus",
          fmt::format("statistics of {} GPU{} and their output", gpus, gpus == 1 ? "" : "s"),
          std::uint64_t{gpus} * (cfg.num_cus + channels), 64 * 1024);
  estimate_host_memory(cfg.memory, gpus, "system.memory", out);
}

Gpu::Gpu(Component& parent, std::string_view name, const GpuConfig& cfg) : Component(parent, name), cfg_(cfg) {
  build();
}

Gpu::Gpu(Simulator& sim, std::string_view name, const GpuConfig& cfg) : Component(sim, std::string(name)), cfg_(cfg) {
  build();
}

void Gpu::note_link_traffic() {
  if (sm_clock_) sm_clock_->note_link_traffic(now());
}

void Gpu::land_flag(std::uint64_t flag, std::uint64_t value) {
  if (cfg_.cu.flag_latency == Tick::zero()) {
    flags_.set(flag, value);
    return;
  }
  sim().events().schedule_callback(now() + cfg_.cu.flag_latency, [this, flag, value] { flags_.set(flag, value); });
}

void Gpu::build() {
  memory_ = std::make_unique<GpuMemory>(*this, "mem", cfg_.memory);
  // One SM clock for all CUs, when the GPU has a power cap (models/cu/sm_clock.h).
  if (cfg_.cu.compute_clock_hz != 0 && cfg_.cu.compute_clock_hz != cfg_.cu.clock_hz)
    sm_clock_ = std::make_unique<SmClock>(cfg_.cu.clock_hz, cfg_.cu.compute_clock_hz, cfg_.cu.power_cap_hold,
                                          cfg_.cu.link_busy_compute_clock_hz);
  for (std::uint32_t i = 0; i < cfg_.num_cus; ++i) {
    cus_.push_back(std::make_unique<ComputeUnit>(*this, fmt::format("cu{}", i), cfg_.cu, *memory_, flags_));
    if (sm_clock_) cus_.back()->share_sm_clock(*sm_clock_);
    cus_.back()->set_on_wg_done([this, i](const WgLaunch& wg) { on_wg_done(i, wg); });
    // Free slots go to waiting WGs; deferred to an event so a CU is not re-entered
    // from inside its own completion.
    cus_.back()->set_on_slot_free([this, i](const WgLaunch& wg) { on_slot_free(i, wg); });
  }
  if (cfg_.cluster_group_cus != 0) {
    group_cus_.assign(cfg_.num_cus / cfg_.cluster_group_cus, {});
    for (std::uint32_t c = 0; c < cfg_.num_cus; ++c) group_cus_[cfg_.cluster_group_of(c)].push_back(c);
  }
  // Timeline tracks exist before the run (a partitioned run cannot add any).
  Timeline& tl = sim().timeline();
  if (tl.enabled())
    for (const auto& cu : cus_) cu_tracks_.push_back(tl.track(cu->name()));
}

Gpu::~Gpu() = default;

void Gpu::connect(RemoteAccess& remote) {
  for (auto& cu : cus_) cu->set_remote(&remote);
}

std::uint32_t Gpu::launch(KernelLaunch kernel) {
  const KernelTrace& trace = *kernel.trace;
  if (kernel.cus.empty()) {
    for (std::uint32_t i = 0; i < num_cus(); ++i) kernel.cus.push_back(i);
  }
  Kernel k;
  k.stats.launched = sim().reported_now();
  ++epoch_;
  k.stats.wgs = trace.num_wgs();
  for (std::uint32_t c : kernel.cus) {
    T3SIM_CHECK(c < num_cus(), fmt::format("CU {} of {}", c, num_cus()));
    k.stats.concurrent_slots += cus_[c]->capacity_for(trace.resources);
  }
  if (trace.resources.persistent_wgs != 0)
    k.stats.concurrent_slots = std::min(k.stats.concurrent_slots, trace.resources.persistent_wgs);
  // The readers check this at the edge (validate catches it); a kernel built in code
  // gets the same clear error.
  if (k.stats.concurrent_slots == 0 && k.stats.wgs > 0)
    throw WgDoesNotFit(fmt::format("kernel {} cannot run: {}", trace.name, why_a_wg_does_not_fit(cfg_.cu, trace.resources)));
  k.wg_start.assign(trace.num_wgs(), Tick());
  if (const TraceResources& r = trace.resources; r.persistent_wgs != 0) {
    k.slot_of_wg.assign(trace.num_wgs(), 0);
    if (r.persistent_static != 0) {
      // The programs the WGs own come first in WG id order; the rest go in order after them.
      k.static_taken.assign(r.persistent_wgs, 0);
      k.next_in_order = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(k.stats.wgs, std::uint64_t{r.persistent_static} * r.persistent_wgs));
    }
  }
  k.allowed.assign(num_cus(), false);
  for (std::uint32_t c : kernel.cus) k.allowed[c] = true;
  k.launch = std::move(kernel);
  kernels_.push_back(std::move(k));
  const auto id = static_cast<std::uint32_t>(kernels_.size() - 1);
  auto begin = [this, id] {
    Kernel& started = kernels_[id];
    started.dispatchable = true;
    if (started.stats.wgs == 0) {
      started.stats.done = sim().reported_now();
      ++epoch_;
      if (started.launch.on_done) started.launch.on_done();
      return;
    }
    dispatch();
  };
  if (cfg_.kernel_launch_latency > Tick::zero()) {
    sim().events().schedule_callback(now() + cfg_.kernel_launch_latency, begin);
  } else {
    begin();
  }
  return id;
}

// Place waiting WGs, highest priority first, each on the next CU (round-robin) of
// its mask that has room.
void Gpu::dispatch() {
  if (dispatching_) return;  // a WG ending inside launch() re-enters: the loop below covers it
  dispatching_ = true;
  std::vector<std::uint32_t> order(kernels_.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return kernels_[a].launch.priority > kernels_[b].launch.priority;
  });
  // Persistent WGs that finished a program take their kernel's next one where they are.
  for (std::size_t i = 0; i < continuations_.size(); ++i) {
    const Continuation c = continuations_[i];
    Kernel& k = kernels_[c.kernel];
    if (has_program(k, c.slot)) {
      T3SIM_CHECK(cus_[c.cu]->can_host(k.launch.trace->resources), "a persistent WG's CU was taken");
      place(c.kernel, c.cu, c.slot);
    }
  }
  continuations_.clear();
  for (std::uint32_t id : order) {
    Kernel& k = kernels_[id];
    if (!k.dispatchable) continue;  // still in its launch latency
    const TraceResources& r = k.launch.trace->resources;
    // A persistent kernel places its WG slots in order, each while it has a program
    // (slot s owns programs from s on: when s has none, no later slot has); a cluster's
    // slots together, on CUs of one group (GpuConfig::cluster_group_cus).
    if (r.persistent_wgs != 0 && r.cluster > 1 && cfg_.cluster_group_cus >= r.cluster) {
      place_clusters(id);
      continue;
    }
    while (r.persistent_wgs == 0 ? k.next_in_order < k.stats.wgs
                                 : k.persistent_placed < r.persistent_wgs && has_program(k, k.persistent_placed)) {
      std::optional<std::uint32_t> target;
      for (std::size_t n = 0; n < num_cus() && !target; ++n) {
        const std::uint32_t c = (next_cu_ + static_cast<std::uint32_t>(n)) % num_cus();
        if (k.allowed[c] && cus_[c]->can_host(r)) target = c;
      }
      if (!target) break;
      next_cu_ = (*target + 1) % num_cus();
      place(id, *target, k.persistent_placed++);
    }
  }
  dispatching_ = false;
}

void Gpu::place_clusters(std::uint32_t id) {
  Kernel& k = kernels_[id];
  const TraceResources& r = k.launch.trace->resources;
  const auto groups = static_cast<std::uint32_t>(group_cus_.size());
  std::vector<std::uint32_t> free_cus;
  while (k.persistent_placed < r.persistent_wgs && has_program(k, k.persistent_placed)) {
    bool placed = false;
    for (std::uint32_t n = 0; n < groups && !placed; ++n) {
      const std::uint32_t g = (next_group_ + n) % groups;
      free_cus.clear();
      for (std::uint32_t c : group_cus_[g])
        if (free_cus.size() < r.cluster && k.allowed[c] && cus_[c]->can_host(r)) free_cus.push_back(c);
      if (free_cus.size() < r.cluster) continue;
      // The cluster's slots that have a program (its last ones may have none left).
      const std::uint32_t first = k.persistent_placed;
      for (std::uint32_t i = 0; i < r.cluster && has_program(k, first + i); ++i) place(id, free_cus[i], first + i);
      k.persistent_placed = first + r.cluster;
      next_group_ = (g + 1) % groups;
      placed = true;
    }
    if (!placed) return;  // no group has room for a whole cluster: it waits
  }
}

std::optional<std::uint32_t> Gpu::next_owned(const Kernel& k, std::uint32_t slot) const {
  const TraceResources& r = k.launch.trace->resources;
  if (k.static_taken.empty() || k.static_taken[slot] == r.persistent_static) return std::nullopt;
  const std::uint64_t program = slot + std::uint64_t{k.static_taken[slot]} * r.persistent_wgs;
  if (program >= k.stats.wgs) return std::nullopt;
  return static_cast<std::uint32_t>(program);
}

bool Gpu::has_program(const Kernel& k, std::uint32_t slot) const {
  return next_owned(k, slot).has_value() || k.next_in_order < k.stats.wgs;
}

void Gpu::place(std::uint32_t id, std::uint32_t cu, std::uint32_t slot) {
  Kernel& k = kernels_[id];
  if (k.next_wg == 0) {
    k.stats.first_dispatch = sim().reported_now();
    ++epoch_;  // its first WG placed: a kernel that waited for slots now runs beside the others
  }
  std::uint32_t program;
  if (const std::optional<std::uint32_t> owned = next_owned(k, slot)) {
    program = *owned;
    ++k.static_taken[slot];
  } else {
    T3SIM_CHECK(k.next_in_order < k.stats.wgs, "a WG placed with no program left");
    program = k.next_in_order++;
  }
  ++k.next_wg;
  const std::uint32_t wg = (program + k.launch.first_wg) % k.stats.wgs;
  k.wg_start[wg] = now();
  if (!k.slot_of_wg.empty()) k.slot_of_wg[wg] = slot;
  cus_[cu]->launch(WgLaunch{k.launch.trace, wg, k.launch.stream, id, k.launch.value_granule, k.launch.routing},
                   now() + cfg_.wg_dispatch_latency);
}

void Gpu::on_slot_free(std::uint32_t cu, const WgLaunch& wg) {
  // A persistent kernel's WG keeps its CU for the kernel's next program (dispatch()
  // places it there first); otherwise it has left, and anything may take the room.
  const Kernel& k = kernels_[wg.kernel];
  if (k.launch.trace->resources.persistent_wgs != 0) {
    const std::uint32_t slot = k.slot_of_wg[wg.wg];
    if (has_program(k, slot)) continuations_.push_back(Continuation{cu, wg.kernel, slot});
  }
  sim().events().schedule_callback(now(), [this] { dispatch(); });
}

void Gpu::on_wg_done(std::uint32_t cu, const WgLaunch& wg) {
  Kernel& k = kernels_[wg.kernel];
  ++k.done;
  Timeline& tl = sim().timeline();
  if (tl.enabled()) {
    if (cu_tracks_.empty()) {
      for (std::uint32_t i = 0; i < num_cus(); ++i) cu_tracks_.push_back(tl.track(cus_[i]->name()));
    }
    tl.slice(cu_tracks_[cu], fmt::format("{} WG {}", k.launch.trace->name, wg.wg), k.wg_start[wg.wg], now());
  }
  if (k.done == k.stats.wgs) {
    k.stats.done = sim().reported_now();
    ++epoch_;
    log().debug("kernel {} done: {} WGs in {}", k.launch.trace->name, k.stats.wgs,
                to_string(k.stats.done - k.stats.launched));
    if (k.launch.on_done) k.launch.on_done();
    if (sampler_) start_work_probe();  // work left beside no kernel is probed by time
    return;
  }
  if (sampler_ && k.launch.sampleable && k.done % k.stats.concurrent_slots == 0) on_stage_boundary(wg.kernel);
}

void Gpu::enable_sampling(const SamplingConfig& cfg) {
  if (sim().partitions() > 1)
    throw std::logic_error("sampling needs a simulator of one partition (one simulated GPU)");
  sampler_ = std::make_unique<StageSampler>(cfg);
  probe_event_ = std::make_unique<CallbackEvent>(event_source(), name() + ".work_probe", [this] { probe_work(); });
}

void Gpu::add_skippable(SkippableWork& work) {
  skippable_.push_back(&work);
  work.set_activity_listener([this] {
    if (sampler_) start_work_probe();
  });
}

bool Gpu::kernel_in_flight() const {
  for (const Kernel& k : kernels_)
    if (k.done < k.stats.wgs) return true;
  return false;
}

std::vector<SkippableWork::State> Gpu::work_states() const {
  std::vector<SkippableWork::State> work;
  for (const SkippableWork* w : skippable_) work.push_back(w->sampling_state());
  return work;
}

GpuTraffic Gpu::traffic() const {
  GpuTraffic t;
  for (Stream s : {Stream::kCompute, Stream::kCommunication}) {
    t[index(s)].dram = memory_->stream_totals(s);
    t[index(s)].l2 = memory_->l2_stream_totals(s);
  }
  return t;
}

void Gpu::apply_skip(const StageSampler::Skip& skip) {
  for (std::size_t i = 0; i < skip.work_bytes.size(); ++i)
    if (skip.work_bytes[i] > 0) skippable_[i]->skip_work(skip.work_bytes[i]);
  sim().skip_ahead(skip.time);
  for (Stream s : {Stream::kCompute, Stream::kCommunication})
    memory_->add_skipped_traffic(s, skip.traffic[index(s)].dram, skip.traffic[index(s)].l2);
  ++sampling_report_.skips;
  sampling_report_.skipped_time += skip.time;
}

void Gpu::start_work_probe() {
  if (probe_event_->scheduled() || kernel_in_flight()) return;
  sim().schedule(*probe_event_, now() + sampler_->config().period);
}

// Skippable work beside no kernel (a DMA collective alone, or the copies that outlast
// the GEMM they ran beside): every period is a "stage" for the sampler.
void Gpu::probe_work() {
  if (kernel_in_flight()) return;  // stage boundaries take over; the kernel's end restarts the probe
  const std::vector<SkippableWork::State> work = work_states();
  if (std::none_of(work.begin(), work.end(), [](const SkippableWork::State& w) { return w.remaining > 0; }))
    return;  // nothing left to skip; new work restarts the probe
  if (log().should_log(spdlog::level::debug)) {
    std::uint64_t progress = 0, remaining = 0;
    for (const SkippableWork::State& w : work) {
      progress += w.progress;
      remaining += w.remaining;
    }
    log().debug("work probe at {}: {} B delivered, {} B left", to_string(sim().reported_now()), progress, remaining);
  }
  const StageSampler::Skip skip = sampler_->on_probe(epoch_, sim().reported_now(), traffic(), work);
  if (skip.stages > 0) {
    apply_skip(skip);
    sampling_report_.skipped_periods += skip.stages;
    log().info("sampling: work beside no kernel skipped {} periods ({}) at {}", skip.stages, to_string(skip.time),
               to_string(sim().reported_now()));
  }
  sim().schedule(*probe_event_, now() + sampler_->config().period);
}

void Gpu::on_stage_boundary(std::uint32_t id) {
  Kernel& k = kernels_[id];
  // Alone: every other kernel has ended or has no WG placed yet. One launched behind
  // this kernel waits for slots while this one's WGs keep taking them (c3 gemm-first,
  // seed 003's c3_base); its first WG placed moves the epoch, so no window spans that.
  bool alone = true;
  for (std::size_t i = 0; i < kernels_.size(); ++i) {
    const Kernel& other = kernels_[i];
    if (i != id && other.done < other.stats.wgs && other.next_wg > 0) alone = false;
  }
  const std::uint64_t slots = k.stats.concurrent_slots;
  // Whole stages not yet dispatched, of the programs handed out in order (a persistent
  // WG's own programs are never skipped: they may be the ones that run last).
  const std::uint64_t skippable = (k.stats.wgs - k.next_in_order) / slots;
  const StageSampler::Skip skip =
      sampler_->on_stage_boundary(id, epoch_, sim().reported_now(), traffic(), alone, skippable, work_states());
  if (skip.stages == 0) return;
  // Those stages' WGs are never dispatched: the dispatcher moves past them, they count
  // as done, and their time and traffic are the window's mean.
  const auto wgs = static_cast<std::uint32_t>(skip.stages * slots);
  k.next_wg += wgs;
  k.next_in_order += wgs;
  k.done += wgs;
  k.stats.skipped_wgs += wgs;
  apply_skip(skip);
  sampling_report_.skipped_stages += skip.stages;
  sampling_report_.skipped_wgs += wgs;
  log().info("sampling: kernel {} skipped {} stages ({} WGs, {}) at {}", k.launch.trace->name, skip.stages, wgs,
             to_string(skip.time), to_string(sim().reported_now()));
}

void Gpu::report_in_flight(std::vector<std::string>& out) const {
  for (std::size_t i = 0; i < kernels_.size(); ++i) {
    const Kernel& k = kernels_[i];
    if (k.done == k.stats.wgs) continue;
    out.push_back(fmt::format("{}: kernel {} ({}): {} of {} WGs dispatched, {} done{}", name(), i,
                              k.launch.trace->name, k.next_wg, k.stats.wgs, k.done,
                              k.dispatchable ? "" : " (in its launch latency)"));
  }
}

}  // namespace t3sim
