#include "models/system/sublayer_system.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/error.h"

namespace t3sim {

SublayerOptions read_sublayer_options(ConfigNode c) {
  SublayerOptions o;
  o.channels = static_cast<std::uint32_t>(c.get_uint("channels", o.channels, 0, 4096));
  o.slice_bytes = c.get_bytes("slice_size", o.slice_bytes, 1, 1ULL << 30);
  o.functional = c.get_enum("functional", o.functional, {"auto", "values", "off"});
  o.values_limit = c.get_bytes("values_limit", o.values_limit, 0, 1ULL << 40);
  o.t3_all_gather = c.get_enum("t3_all_gather", o.t3_all_gather, {"cu", "dma"});
  c.finish();
  return o;
}

namespace {
PhaseTraffic dram_totals(GpuMemory& mem, Stream s) {
  const McStreamStats st = mem.stream_totals(s);
  return PhaseTraffic{st.bytes[index(MemOp::kRead)], st.bytes[index(MemOp::kWrite)],
                      st.bytes[index(MemOp::kUpdate)]};
}
PhaseTraffic minus(const PhaseTraffic& a, const PhaseTraffic& b) {
  return PhaseTraffic{a.read - b.read, a.write - b.write, a.update - b.update};
}
double ms(Tick t) { return static_cast<double>(t.ps()) * 1e-9; }
double mb(std::uint64_t b) { return static_cast<double>(b) / 1e6; }
}  // namespace

IsolatedRs run_isolated_rs_nmc(const NodeConfig& cfg, const GemmWorkload& gemm, std::uint64_t seed) {
  if (!gemm.params) throw std::invalid_argument("an isolated RS needs a generated GEMM's geometry");
  Simulator sim(seed);
  Node node(sim, cfg);
  GemmParams p = *gemm.params;
  p.store_uncached = true;
  p.store_update = true;
  const KernelTrace trace = make_gemm_trace(p);  // only its output geometry is used
  T3CollectiveParams f;
  f.with_producer = false;
  f.seed = seed;
  T3Collective rs(node, trace, f);
  for (std::uint32_t g = 0; g < node.simulated_gpus(); ++g) {
    Simulator::InPartition in(sim, node.partition(g));
    rs.start(g);
  }
  sim.run();
  IsolatedRs r;
  for (std::uint32_t g = 0; g < node.simulated_gpus(); ++g) {
    if (!rs.done(g)) throw SimulationError(fmt::format("the isolated RS with NMC did not finish on GPU {}", g));
    r.time = std::max(r.time, rs.finished(g));
  }
  rs.finish();
  r.traffic = dram_totals(node.gpu(0).memory(), Stream::kCommunication);
  r.events = sim.dispatched();
  return r;
}

void make_ideal_result(SublayerResult& r, std::string_view configuration, const IsolatedRs* nmc) {
  Tick rs = r.rs;
  if (nmc != nullptr) {
    rs = nmc->time;
    r.traffic[1] = nmc->traffic;
  }
  r.json["isolated"] = {{"gemm_ps", r.gemm.ps()}, {"rs_ps", rs.ps()}, {"ag_ps", r.ag.ps()},
                        {"rs", nmc != nullptr ? "ring RS with NMC (tracker + DMA updates)" : "sequential's CU ring RS"}};
  r.rs = rs > r.gemm ? rs - r.gemm : Tick::zero();
  r.total = std::max(r.gemm, rs) + r.ag;
  r.json["configuration"] = configuration;
  r.json["time_ps"] = r.total.ps();
}

SublayerSystem::SublayerSystem(Simulator& sim, const NodeConfig& node, GemmWorkload gemm,
                               const SublayerOptions& opt, std::string configuration, std::uint64_t seed)
    : sim_(sim), gemm_(std::move(gemm)), opt_(opt), configuration_(std::move(configuration)) {
  if (!gemm_.params) throw std::invalid_argument("a sub-layer needs a generated GEMM (preset or m/n/k)");
  if (configuration_ != "sequential" && configuration_ != "t3" && configuration_ != "t3-mca")
    throw UserError(fmt::format("configuration '{}' is not a GEMM + collective sub-layer configuration "
                                "(sequential, t3, t3-mca, ideal-overlap, ideal-rs-nmc)",
                                configuration_));
  t3_ = configuration_ != "sequential";
  NodeConfig node_cfg = node;
  if (configuration_ == "t3") {
    node_cfg.gpu.memory.mc.arbiter = ArbiterConfig{};
    node_cfg.gpu.memory.mc.arbiter.type = "round-robin";  // T3's baseline arbitration (§4.5)
  } else if (configuration_ == "t3-mca" && node_cfg.gpu.memory.mc.arbiter.type != "mca") {
    node_cfg.gpu.memory.mc.arbiter = ArbiterConfig{};
    node_cfg.gpu.memory.mc.arbiter.type = "mca";
    node_cfg.gpu.memory.mc.arbiter.dynamic = true;  // threshold from the GEMM's profiled occupancy
  }
  node_ = std::make_unique<Node>(sim, node_cfg);
  const GemmParams& p = *gemm_.params;
  const GemmAddresses addr = gemm_addresses(p);
  array_bytes_ = p.m * p.n * p.dtype_bytes;
  values_ = opt.functional == "values" || (opt.functional == "auto" && array_bytes_ <= opt.values_limit);
  const std::uint32_t granule = node.gpu.memory.hbm.value_granule;
  if (values_ && array_bytes_ % (std::uint64_t{node.num_gpus} * granule) != 0) {
    if (opt.functional == "values")
      throw UserError(fmt::format("collective.functional: values needs the {} B output to split into {} "
                                  "equal chunks of whole {}-byte granules",
                                  array_bytes_, node.num_gpus, granule));
    values_ = false;
  }

  NodeCollectiveParams c;
  c.kind = CollectiveKind::kRingReduceScatter;
  c.array_bytes = array_bytes_;
  c.element_bytes = p.dtype_bytes;
  c.channels = opt.channels;
  c.slice_bytes = opt.slice_bytes;
  c.data_base = addr.c;
  c.values = values_;
  c.seed = seed;
  c.flag_base = 1ULL << 32;
  if (!t3_) {
    rs_ = std::make_unique<NodeCollective>(*node_, c);
    // The GEMM's stores carry no values, so the input pattern written here survives
    // them and is what the reduce-scatter reduces.
    rs_->preload();
  } else {
    // T3 §4.3: the output is allocated uncached and the GEMM's stores update memory.
    GemmParams t3p = p;
    t3p.store_uncached = true;
    t3p.store_update = true;
    t3_trace_ = make_gemm_trace(t3p);
    if (t3_trace_.num_wgs() % node_cfg.num_gpus != 0)
      throw UserError(fmt::format("system.num_gpus: t3 cuts the GEMM's {} output tiles (WGs) into one chunk per GPU, "
                                  "and {} is not a multiple of {} (change the GPU count or workload.tile_m / tile_n)",
                                  t3_trace_.num_wgs(), t3_trace_.num_wgs(), node_cfg.num_gpus));
    T3CollectiveParams f;
    f.algorithm = node_cfg.net.topology == "fully-connected" ? FusedAlgorithm::kDirect : FusedAlgorithm::kRing;
    f.values = values_;
    f.seed = seed;
    fused_ = std::make_unique<T3Collective>(*node_, t3_trace_, f);
    fused_->preload();
    c.data_uncached = true;  // the all-gather reads the uncached output
    // The CU ring all-gather moves flat chunks. When T3's chunks are not flat (the
    // TP=32 tilings) it moves the same bytes between the same GPUs, but other ranges:
    // right for timing, not for values, so it runs timing-only there and only the
    // RS's result is checked.
    cu_ag_checked_ = opt.t3_all_gather == "cu" && fused_->chunks_are_flat(addr.c, array_bytes_);
    if (opt.t3_all_gather == "cu" && !cu_ag_checked_) c.values = false;
    if (opt.t3_all_gather == "dma") {
      T3CollectiveParams a = f;
      a.kind = T3CollectiveKind::kAllGather;
      a.with_producer = false;
      a.gathers = fused_.get();
      t3_ag_ = std::make_unique<T3Collective>(*node_, t3_trace_, a);
    }
  }
  c.kind = CollectiveKind::kRingAllGather;
  c.flag_base = 1ULL << 33;
  ag_ = std::make_unique<NodeCollective>(*node_, c);

  const std::uint32_t n = node_->simulated_gpus();
  phase_end_.resize(n);
  traffic_at_end_.resize(n);
  gemm_kernel_.resize(n);
  t3_parts_done_.assign(n, 0);
  rs_notices_.assign(n, 0);
  ag_start_.assign(n, Tick::zero());
  gpu_done_.assign(n, 0);
}

SublayerSystem::~SublayerSystem() = default;

void SublayerSystem::on_phase_end(std::uint32_t g, Phase phase) {
  phase_end_[g][phase] = node_->gpu(g).now();
  traffic_at_end_[g][phase] = dram_totals(node_->gpu(g).memory(), Stream::kCommunication);
  switch (phase) {
    case kGemm:
      node_->gpu(g).memory().kernel_end();
      if (t3_) {
        // The fused RS's traffic started with the GEMM: RS = the communication
        // stream from the start until the RS ends.
        traffic_at_end_[g][kGemm] = PhaseTraffic{};
        on_t3_part_done(g);
        break;
      }
      // Kernel boundary: the GEMM's output leaves the L2 for DRAM (write-backs in the
      // compute stream, overlapping the reduce-scatter), so the breakdown counts it
      // as GEMM writes, as T3 Figure 18 does.
      node_->gpu(g).memory().l2().write_back_dirty_lines();
      rs_->start(g, [this](std::uint32_t gpu) { on_phase_end(gpu, kRs); });
      break;
    case kRs:
      ag_start_[g] = node_->gpu(g).now();
      ag_->start(g, [this](std::uint32_t gpu) { on_phase_end(gpu, kAg); });
      break;
    case kAg:
      gpu_done_[g] = 1;  // per GPU: GPUs may run on different host threads
      break;
    case kPhases:
      break;
  }
}

// T3: the all-gather starts on a GPU once its GEMM ended and its fused RS is done.
// T3's own (DMA) all-gather reprograms every GPU's tracker, replacing the RS's
// program, so it starts on a GPU only once every GPU's RS is done: each GPU tells
// every GPU (itself included) with a small message over the network's path (like an
// acknowledgment: its latency, no bandwidth), and a GPU starts when it has all N.
void SublayerSystem::on_t3_part_done(std::uint32_t g) {
  if (++t3_parts_done_[g] < 2) return;
  phase_end_[g][kRs] = std::max(phase_end_[g][kGemm], fused_->finished(g));
  traffic_at_end_[g][kRs] = dram_totals(node_->gpu(g).memory(), Stream::kCommunication);
  if (!t3_ag_) {
    ag_start_[g] = node_->gpu(g).now();
    ag_->start(g, [this](std::uint32_t gpu) { on_phase_end(gpu, kAg); });
    return;
  }
  const Network& net = node_->network();
  const Tick now = node_->gpu(g).now();
  if (node_->config().mode == NetMode::kFull) {
    for (std::uint32_t h = 0; h < node_->num_gpus(); ++h)
      sim_.post(node_->partition(h), now + net.path_latency(g, h), [this, h] { on_rs_notice(h); });
  } else {
    // Homogeneous: GPU 0 stands for every GPU, each done when it is; GPU d's notice
    // arrives after the path from d.
    for (std::uint32_t d = 0; d < node_->num_gpus(); ++d)
      sim_.post(0, now + net.path_latency(d, 0), [this] { on_rs_notice(0); });
  }
}

void SublayerSystem::on_rs_notice(std::uint32_t g) {
  if (++rs_notices_[g] < node_->num_gpus()) return;
  ag_start_[g] = node_->gpu(g).now();
  t3_ag_->start(g, [this](std::uint32_t h) { on_phase_end(h, kAg); });
}

SublayerResult SublayerSystem::run(Tick max_time) {
  const std::uint32_t n = node_->simulated_gpus();
  for (std::uint32_t g = 0; g < n; ++g) {
    // What starts GPU g schedules into its partition.
    Simulator::InPartition in(sim_, node_->partition(g));
    KernelLaunch k;
    k.trace = &gemm_.trace;
    if (t3_) {
      k.trace = &t3_trace_;
      k.first_wg = fused_->first_wg(g);  // staggered (T3 §4.4)
      k.routing = fused_->routing(g);
      k.value_granule = values_ ? node_->config().gpu.memory.hbm.value_granule : 0;
      fused_->start(g, [this](std::uint32_t gpu) { on_t3_part_done(gpu); });
    }
    for (std::uint32_t i = 0; i < gemm_.cus; ++i) k.cus.push_back(i);
    k.on_done = [this, g] { on_phase_end(g, kGemm); };
    node_->gpu(g).memory().kernel_begin();
    gemm_kernel_[g] = node_->gpu(g).launch(std::move(k));
  }
  const Simulator::StopReason stop = sim_.run(max_time);
  if (std::count(gpu_done_.begin(), gpu_done_.end(), 1) < static_cast<std::ptrdiff_t>(n)) {
    if (stop == Simulator::StopReason::kTimeLimit)
      throw SimulationError(fmt::format("run.max_time ({}) reached before the sub-layer finished",
                                        to_string(max_time)));
    throw SimulationError("the sub-layer did not finish although nothing was left to simulate");
  }

  SublayerResult r;
  Tick end[kPhases];
  for (int ph = 0; ph < kPhases; ++ph) {
    end[ph] = Tick::zero();
    for (std::uint32_t g = 0; g < n; ++g) end[ph] = std::max(end[ph], phase_end_[g][ph]);
  }
  r.gemm = end[kGemm];
  r.rs = end[kRs] - end[kGemm];
  r.ag = end[kAg] - end[kRs];
  r.total = end[kAg];
  for (std::uint32_t g = 0; g < n; ++g) {
    // GEMM: its compute-stream traffic, write-backs included; RS and AG: the
    // communication stream between phase ends.
    const PhaseTraffic per[kPhases] = {dram_totals(node_->gpu(g).memory(), Stream::kCompute),
                                       minus(traffic_at_end_[g][kRs], traffic_at_end_[g][kGemm]),
                                       minus(traffic_at_end_[g][kAg], traffic_at_end_[g][kRs])};
    for (int ph = 0; ph < kPhases; ++ph) {
      r.traffic[ph].read += per[ph].read / n;
      r.traffic[ph].write += per[ph].write / n;
      r.traffic[ph].update += per[ph].update / n;
    }
  }

  if (t3_) {
    // After the all-gather every chunk of every GPU holds the RS's sums (T3's own AG,
    // or the CU one when it moved T3's chunks); otherwise GPU g's chunk g.
    if (values_) {
      if (t3_ag_) {
        words_checked_ += t3_ag_->verify(check_error_);
      } else if (cu_ag_checked_) {
        words_checked_ += fused_->verify_gathered(check_error_);
      } else {
        words_checked_ += fused_->verify(check_error_);
      }
    }
    fused_->finish();
    if (t3_ag_) t3_ag_->finish();
  } else if (values_) {
    // The all-gather leaves every chunk of every GPU holding the sum over GPUs: the
    // reduce-scatter's result, gathered (an all-reduce in two kernels).
    NodeCollectiveParams ar = rs_->params();
    ar.kind = CollectiveKind::kRingAllReduce;
    NodeCollective expect(*node_, ar);
    words_checked_ += expect.verify(check_error_);
  }
  r.values_checked = values_;
  r.words_checked = words_checked_;
  if (!check_error_.empty())
    throw SimulationError("functional check of the reduce-scatter + all-gather failed: " + check_error_);

  nlohmann::json phases = nlohmann::json::array();
  const char* names[kPhases] = {"gemm", "reduce_scatter", "all_gather"};
  const Tick times[kPhases] = {r.gemm, r.rs, r.ag};
  for (int ph = 0; ph < kPhases; ++ph) {
    phases.push_back({{"phase", names[ph]},
                      {"time_ps", times[ph].ps()},
                      {"dram_read_bytes", r.traffic[ph].read},
                      {"dram_write_bytes", r.traffic[ph].write},
                      {"dram_update_bytes", r.traffic[ph].update}});
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (std::uint32_t g = 0; g < n; ++g) {
    gpus.push_back({{"gpu", g},
                    {"gemm_end_ps", phase_end_[g][kGemm].ps()},
                    {"rs_end_ps", phase_end_[g][kRs].ps()},
                    {"ag_start_ps", ag_start_[g].ps()},
                    {"ag_end_ps", phase_end_[g][kAg].ps()}});
  }
  const KernelStats& ks = node_->gpu(0).kernel_stats(gemm_kernel_[0]);
  r.json = {{"workload", "sublayer"},
            {"configuration", configuration_},
            {"mode", to_string(node_->config().mode)},
            {"num_gpus", node_->num_gpus()},
            {"simulated_gpus", n},
            {"gemm", gemm_.description},
            {"gemm_stages", ks.stages()},
            {"array_bytes", array_bytes_},
            {"collective_channels", ag_->channels()},
            {"time_ps", r.total.ps()},
            {"phases", phases},
            {"gpus", gpus},
            {"links", node_->network().link_results(r.total)},
            {"functional_check", values_ ? "passed" : "not run"},
            {"arbiter", node_->config().gpu.memory.mc.arbiter.type},
            {"words_checked", r.words_checked}};
  if (t3_) {
    Tracker& t = node_->gpu(0).memory().tracker();
    r.json["t3"] = {{"tracker_size_bytes", t.size_bytes()},
                    {"gpu0_regions_completed", t.regions_completed()},
                    {"gpu0_regions_overflowed", t.overflows()},
                    {"gpu0_dma_commands", fused_->dma_commands(0)},
                    {"stagger_first_wg_gpu0", fused_->first_wg(0)}};
  }
  return r;
}

std::string SublayerSystem::rs_label() const {
  if (!t3_) return fmt::format("ring, {} CU channels", ag_->channels());
  return fmt::format("fused {}: tracker + DMA + NMC, {}; exposed part",
                     to_string(fused_->algorithm()),
                     node_->config().gpu.memory.mc.arbiter.type);
}

std::string SublayerSystem::summary(const SublayerResult& r, std::string_view label) const {
  const NodeConfig& c = node_->config();
  std::string s = fmt::format(
      "sub-layer {} on {} GPUs ({} topology, {} mode), configuration {}\n"
      "  total              {:.4f} ms\n"
      "  GEMM               {:.4f} ms\n"
      "  reduce-scatter     {:.4f} ms ({})\n"
      "  all-gather         {:.4f} ms{}\n"
      "  DRAM per GPU (MB)  {:>8} {:>8} {:>8}\n",
      gemm_.description, c.num_gpus, c.net.topology, to_string(c.mode), label.empty() ? configuration_ : label,
      ms(r.total), ms(r.gemm), ms(r.rs), rs_label(), ms(r.ag),
      t3_ag_ ? fmt::format(" (T3: tracker + DMA, {})", to_string(t3_ag_->algorithm())) : std::string(),
      "read", "write", "update");
  const char* names[kPhases] = {"GEMM", "RS", "AG"};
  for (int ph = 0; ph < kPhases; ++ph)
    s += fmt::format("    {:<16} {:>8.1f} {:>8.1f} {:>8.1f}\n", names[ph], mb(r.traffic[ph].read),
                     mb(r.traffic[ph].write), mb(r.traffic[ph].update));
  s += fmt::format("  functional check   {}\n",
                   r.values_checked ? fmt::format("passed ({} words)", r.words_checked)
                                    : std::string("not run (output above collective.values_limit)"));
  return s;
}

}  // namespace t3sim
