#include "models/system/configuration.h"
#include "models/system/sublayer_system.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/system/result_store.h"
#include "models/system/scenario_driver.h"
#include "models/system/sublayer_configuration.h"
#include "sim/config.h"
#include "sim/error.h"
#include "sim/int_math.h"

namespace t3sim {

SublayerOptions read_sublayer_options(ConfigNode c, std::uint32_t value_granule) {
  SublayerOptions o;
  o.channels = static_cast<std::uint32_t>(c.get_uint("channels", o.channels, 0, 4096));
  o.pipeline = read_channel_pipeline(c, value_granule);
  o.functional = c.get_enum("functional", o.functional, {"auto", "values", "off"});
  o.values_limit = c.get_bytes("values_limit", o.values_limit, 0, 1ULL << 40);
  o.t3_all_gather = c.get_enum("t3_all_gather", o.t3_all_gather, {"cu", "dma"});
  o.fused_order = c.get_enum("fused_order", o.fused_order, {"comm-aware", "oblivious"});
  o.fused_reduction = c.get_enum("fused_reduction", o.fused_reduction, {"staging", "atomic"});
  c.finish();
  return o;
}

const char* collective_workload_key(const CollectiveParamError& e, ConfigNode& section, const char* fallback) {
  const std::string& field = e.field();
  if (field == "channels" || field == "chunk_slices") {
    const bool channels = section.has("channels"), chunks = section.has("chunk_steps");
    if (channels != chunks) return channels ? "channels" : "chunk_steps";
  }
  if (field == "channels") return "channels";
  if (field == "array_bytes") return section.has("size") ? "size" : fallback;  // a derived array: the caller's key
  if (field == "slice_bytes") return "step_size";
  if (field == "fifo_slices") return "fifo_depth";
  if (field == "chunk_slices") return "chunk_steps";
  return fallback;
}

ChannelPipelineSpec read_channel_pipeline(ConfigNode& c, std::uint32_t value_granule) {
  ChannelPipelineSpec spec;
  const std::string protocol = c.get_enum("protocol", "auto", {"auto", "simple", "ll", "ll128"});
  spec.protocol = parse_collective_protocol(protocol);  // auto: nullopt
  if (c.has("step_size")) spec.step_bytes = c.get_bytes("step_size", 0, 1, 1ULL << 30);
  if (c.has("fifo_depth")) spec.fifo_depth = static_cast<std::uint32_t>(c.get_uint("fifo_depth", 0, 1, 512));
  if (c.has("slice_steps")) spec.slice_steps = static_cast<std::uint32_t>(c.get_uint("slice_steps", 0, 1, 64));
  if (c.has("chunk_steps")) spec.chunk_steps = static_cast<std::uint32_t>(c.get_uint("chunk_steps", 0, 1, 512));
  std::vector<CollectiveProtocol> candidates;
  if (spec.protocol) {
    candidates.push_back(*spec.protocol);
  } else {
    candidates = {CollectiveProtocol::kSimple, CollectiveProtocol::kLl, CollectiveProtocol::kLl128};
  }
  for (const CollectiveProtocol candidate : candidates) {
    const ChannelPipeline p = spec.resolve(candidate);
    // Name the key the user gave, or the protocol whose default clashes with it.
    const std::string with =
        spec.protocol ? std::string() : fmt::format(" under protocol {} (auto may choose it)", to_string(candidate));
    if (value_granule > 0 && p.step_bytes % value_granule != 0)
      c.fail("step_size", fmt::format("{} B is not a multiple of the {}-byte value granule "
                                      "(system.memory.hbm.value_granule){}",
                                      p.step_bytes, value_granule, with));
    if (p.slice_bytes() > (1ULL << 31))
      c.fail("step_size", fmt::format("a slice of {} steps of {} B exceeds 2 GiB (expected a smaller step_size){}",
                                      p.slice_steps, p.step_bytes, with));
    if (p.fifo_depth % p.slice_steps != 0 || p.fifo_depth / p.slice_steps > 64)
      c.fail("fifo_depth", fmt::format("{} steps do not hold whole slices of {} steps (expected a multiple of "
                                       "slice_steps, at most 64 slices){}",
                                       p.fifo_depth, p.slice_steps, with));
    if (p.fifo_depth < p.chunk_steps + p.slice_steps)
      c.fail("fifo_depth", fmt::format("{} steps do not exceed a chunk of {} steps by a slice of {} (expected at "
                                       "least {}: every GPU sends a whole chunk before it receives, so a smaller "
                                       "FIFO deadlocks the ring){}",
                                       p.fifo_depth, p.chunk_steps, p.slice_steps, p.chunk_steps + p.slice_steps,
                                       with));
    if (p.chunk_steps % p.slice_steps != 0 || p.chunk_steps / p.slice_steps > 64)
      c.fail("chunk_steps", fmt::format("{} steps are not whole slices of {} steps (expected a multiple of "
                                        "slice_steps, at most 64 slices){}",
                                        p.chunk_steps, p.slice_steps, with));
  }
  return spec;
}

void check_protocol_applies(ConfigNode& c, const ChannelPipelineSpec& spec, CollectiveKind kind) {
  if (kind.uses_rings() || !spec.protocol || *spec.protocol == CollectiveProtocol::kSimple) return;
  c.fail("protocol", fmt::format("{} applies to the ring algorithms only: {} runs Simple's bulk slices (expected "
                                 "simple or auto)",
                                 to_string(*spec.protocol), to_string(kind)));
}

PhaseTraffic dram_totals(GpuMemory& mem, Stream s) {
  const McStreamStats st = mem.stream_totals(s);
  return PhaseTraffic{st.bytes[index(MemOp::kRead)], st.bytes[index(MemOp::kWrite)],
                      st.bytes[index(MemOp::kUpdate)]};
}

namespace {
PhaseTraffic minus(const PhaseTraffic& a, const PhaseTraffic& b) {
  return PhaseTraffic{a.read - b.read, a.write - b.write, a.update - b.update};
}
}  // namespace

SublayerSystem::SublayerSystem(Simulator& sim, const NodeConfig& node, GemmWorkload gemm,
                               const SublayerOptions& opt, std::string configuration, std::uint64_t seed)
    : gemm_(std::move(gemm)), opt_(opt), configuration_(std::move(configuration)), seed_(seed) {
  if (!gemm_.params) throw std::invalid_argument("a sub-layer needs a generated GEMM (preset or m/n/k)");
  config_ = make_sublayer_configuration(configuration_);
  procedure_ = config_->procedure();
  node_ = node;
  config_->configure_node(node_);
  const GemmParams& p = *gemm_.params;
  array_bytes_ = p.m * p.n * p.dtype_bytes;
  values_ = opt.functional == "values" || (opt.functional == "auto" && array_bytes_ <= opt.values_limit);
  const std::uint32_t granule = node.gpu.memory.hbm.value_granule;
  if (values_ && array_bytes_ % (std::uint64_t{node.num_gpus} * granule) != 0) {
    if (opt.functional == "values")
      throw UserError(fmt::format("collective.functional: values needs the {} B output to split into {} "
                                  "equal chunks of whole {}-byte granules",
                                  array_bytes_, node.num_gpus, granule));
    values_ = false;
    values_off_ = fmt::format("the {} B output does not split into {} equal chunks of whole {}-byte granules",
                              array_bytes_, node.num_gpus, granule);
  } else if (!values_) {
    values_off_ = opt.functional == "off" ? "collective.functional is off" : "output above collective.values_limit";
  }
  // The driver builds the one run the configuration makes (sequential's, or its own).
  driver_ = std::make_unique<ScenarioDriver<SublayerResult>>(
      sim, *this, make_configuration(configuration_, ConfigurationFamily::kSublayer)->procedure(), seed_);
}

bool SublayerSystem::runs_chained(Procedure procedure) const {
  return procedure == Procedure::kChained || procedure == Procedure::kCriticalPath;
}

bool SublayerSystem::runs_own(Procedure procedure) const { return procedure == Procedure::kOwn; }

void SublayerSystem::build(Simulator& sim) {
  run_ = std::make_unique<ScenarioRun>(sim, node_, "the sub-layer");
  for (const char* phase : {"gemm", "reduce_scatter", "all_gather"}) run_->add_task(phase);
  if (procedure_ != nullptr)
    procedure_->build(*this);
  else
    chain_tasks();
  const std::uint32_t n = run_->simulated_gpus();
  traffic_at_end_.resize(n);
  gemm_kernel_.resize(n);
}

SublayerSystem::~SublayerSystem() = default;

std::uint64_t SublayerSystem::output_base() const { return gemm_addresses(*gemm_.params).c; }

std::unique_ptr<NodeCollective> SublayerSystem::make_ring_collective(CollectiveKind kind, bool uncached,
                                                                     bool values) {
  NodeCollectiveParams c;
  c.kind = kind;
  c.array_bytes = array_bytes_;
  c.element_bytes = gemm_.params->dtype_bytes;
  c.channels = opt_.channels;
  c.pipeline = opt_.pipeline;
  c.data_base = output_base();
  c.data_uncached = uncached;
  c.values = values;
  c.seed = seed_;
  // The RS's and the AG's flags apart, so an AG never sees the RS's.
  c.flag_base = kind.op() == CollectiveOp::kAllGather ? 2 * kCollectiveFlagBase : kCollectiveFlagBase;
  auto collective = std::make_unique<NodeCollective>(node(), c);
  collective_channels_ = collective->channels();
  return collective;
}

void SublayerSystem::chain_tasks() {
  rs_ = make_ring_collective(CollectiveKind::named("ring-rs"), /*uncached=*/false, values_);
  // The GEMM's stores carry no values, so the input pattern written here survives
  // them and is what the reduce-scatter reduces.
  rs_->preload();
  ag_ = make_ring_collective(CollectiveKind::named("ring-ag"), /*uncached=*/false, values_);
  run_->chain_task(kGemm, {}, [this](std::uint32_t g) { launch_gemm(g, KernelLaunch{}); });
  // The RS reduces the GEMM's output, but tile by tile it could run beside it (T3's
  // point; §5.3's ideal overlaps the two): sequential only orders them.
  run_->chain_task(kRs, {ScenarioRun::only_after(kGemm)}, [this](std::uint32_t g) {
    run_->start_collective(g, kRs, *rs_, [this](std::uint32_t h) {
      traffic_at_end_[h][kRs] = dram_totals(node().gpu(h).memory(), Stream::kCommunication);
    });
  });
  // The AG gathers the RS's reduced chunks (each complete only at the RS's end) over
  // the GEMM's output: it needs both.
  run_->chain_task(kAg, {ScenarioRun::needs(kGemm), ScenarioRun::needs(kRs)},
                   [this](std::uint32_t g) { start_all_gather(g, *ag_); });
}

std::uint64_t SublayerSystem::verify_chained(std::string& error) const {
  if (!values_) return 0;
  // The all-gather leaves every chunk of every GPU holding the sum over GPUs: the
  // reduce-scatter's result, gathered (an all-reduce in two kernels).
  NodeCollectiveParams ar = rs_->params();
  ar.kind = CollectiveKind::named("ring-ar");
  const NodeCollective expect(run_->node(), ar);
  return expect.verify(error);
}

void SublayerSystem::launch_gemm(std::uint32_t g, KernelLaunch k) {
  if (k.trace == nullptr) k.trace = &gemm_.trace;
  for (std::uint32_t i = 0; i < gemm_.cus; ++i) k.cus.push_back(i);
  gemm_kernel_[g] = run_->launch_kernel(g, kGemm, std::move(k), [this, g] { on_gemm_end(g); });
}

const KernelStats& SublayerSystem::gemm_kernel_stats() const { return node().gpu(0).kernel_stats(gemm_kernel_[0]); }

void SublayerSystem::on_gemm_end(std::uint32_t g) {
  // A fused RS's traffic started with the GEMM: RS = the communication stream from
  // the start until the RS ends; otherwise from the GEMM's end.
  if (procedure_ != nullptr && procedure_->rs_overlaps_gemm()) {
    traffic_at_end_[g][kGemm] = PhaseTraffic{};
  } else {
    traffic_at_end_[g][kGemm] = dram_totals(node().gpu(g).memory(), Stream::kCommunication);
  }
  if (procedure_ == nullptr) {
    // The kernel boundary; the chain then starts the RS.
    node().gpu(g).memory().l2().write_back_dirty_lines();
    return;
  }
  if (!procedure_->rs_overlaps_gemm()) run_->task_begins(g, kRs);
  procedure_->on_gemm_end(*this, g);
}

void SublayerSystem::rs_ended(std::uint32_t g, Tick end) {
  run_->task_ends(g, kRs, end);
  traffic_at_end_[g][kRs] = dram_totals(node().gpu(g).memory(), Stream::kCommunication);
}

void SublayerSystem::start_all_gather(std::uint32_t g, Collective& ag) {
  run_->start_collective(g, kAg, ag, [this](std::uint32_t h) {
    traffic_at_end_[h][kAg] = dram_totals(node().gpu(h).memory(), Stream::kCommunication);
  });
}

void SublayerSystem::share_sequential_run(ResultStore* store, std::string key) {
  driver_->share_chained_run(store, std::move(key));
}

SublayerResult SublayerSystem::run(Tick max_time) {
  ScenarioRuns<SublayerResult> runs = driver_->run(max_time);
  SublayerResult r = runs.chained ? std::move(*runs.chained) : std::move(own_result_);
  r.extra_events += runs.extra_events;
  r.json["configuration"] = configuration_;
  config_->complete(*this, r);
  if (runs.chained_taken) {
    // Said where the result is read: this process simulated nothing, so its stats and
    // timeline are empty; the events are the kept run's.
    r.json["sequential_run"] = "taken from the isolated-run cache";
    r.note += "  (sequential's run taken from the isolated-run cache: nothing simulated here)\n";
  }
  return r;
}

namespace {
nlohmann::json traffic_entry(const PhaseTraffic& t) {
  return {{"read", t.read}, {"write", t.write}, {"update", t.update}};
}
PhaseTraffic traffic_from_entry(const nlohmann::json& j) {
  return PhaseTraffic{cached_count(j, "read"), cached_count(j, "write"), cached_count(j, "update")};
}
}  // namespace

nlohmann::json SublayerSystem::chained_entry(const SublayerResult& r) const {
  return {{"total_ps", r.total.ps()},
          {"gemm_ps", r.gemm.ps()},
          {"rs_ps", r.rs.ps()},
          {"ag_ps", r.ag.ps()},
          {"gemm_traffic", traffic_entry(r.traffic[kGemm])},
          {"rs_traffic", traffic_entry(r.traffic[kRs])},
          {"ag_traffic", traffic_entry(r.traffic[kAg])},
          {"values_checked", r.values_checked},
          {"words_checked", r.words_checked},
          {"result", r.json}};
}

SublayerResult SublayerSystem::chained_from_entry(const nlohmann::json& j) const {
  SublayerResult r;
  r.total = cached_time(j, "total_ps");
  r.gemm = cached_time(j, "gemm_ps");
  r.rs = cached_time(j, "rs_ps");
  r.ag = cached_time(j, "ag_ps");
  if (r.gemm.ps() + r.rs.ps() + r.ag.ps() != r.total.ps()) throw BadCacheEntry{"its phases do not add up to its total"};
  r.traffic[kGemm] = traffic_from_entry(cached_object(j, "gemm_traffic"));
  r.traffic[kRs] = traffic_from_entry(cached_object(j, "rs_traffic"));
  r.traffic[kAg] = traffic_from_entry(cached_object(j, "ag_traffic"));
  if (!j.contains("values_checked") || !j.at("values_checked").is_boolean())
    throw BadCacheEntry{"no boolean 'values_checked'"};
  r.values_checked = j.at("values_checked").get<bool>();
  if (r.values_checked != values_) throw BadCacheEntry{"its functional check differs from this run's"};
  r.words_checked = cached_count(j, "words_checked");
  r.json = cached_object(j, "result");
  return r;
}

void SublayerSystem::simulate_own(Tick max_time) { own_result_ = simulate(max_time); }

SublayerResult SublayerSystem::simulate(Tick max_time) {
  const std::uint32_t n = run_->simulated_gpus();
  for (std::uint32_t g = 0; g < n; ++g) {
    // What starts GPU g schedules into its partition.
    Simulator::InPartition in(run_->sim(), node().partition(g));
    if (procedure_ == nullptr) {
      run_->start_chained(g);
      continue;
    }
    if (procedure_->rs_overlaps_gemm()) run_->task_begins(g, kRs);
    procedure_->start(*this, g);
  }
  run_->simulate(max_time);

  SublayerResult r;
  Tick end[kPhases];
  for (int ph = 0; ph < kPhases; ++ph) end[ph] = run_->end(static_cast<ScenarioRun::Task>(ph));
  r.gemm = end[kGemm];
  r.rs = end[kRs] - end[kGemm];
  r.ag = end[kAg] - end[kRs];
  r.total = end[kAg];
  for (std::uint32_t g = 0; g < n; ++g) {
    // GEMM: its compute-stream traffic, write-backs included; RS and AG: the
    // communication stream between phase ends.
    const PhaseTraffic per[kPhases] = {dram_totals(node().gpu(g).memory(), Stream::kCompute),
                                       minus(traffic_at_end_[g][kRs], traffic_at_end_[g][kGemm]),
                                       minus(traffic_at_end_[g][kAg], traffic_at_end_[g][kRs])};
    for (int ph = 0; ph < kPhases; ++ph) {
      r.traffic[ph].read += per[ph].read / n;
      r.traffic[ph].write += per[ph].write / n;
      r.traffic[ph].update += per[ph].update / n;
    }
  }

  std::string check_error;
  r.words_checked = procedure_ != nullptr ? procedure_->verify(*this, check_error) : verify_chained(check_error);
  r.values_checked = values_;
  if (!check_error.empty())
    throw SimulationError("functional check of the reduce-scatter + all-gather failed: " + check_error);

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
                    {"gemm_end_ps", run_->ended(g, kGemm).ps()},
                    {"rs_end_ps", run_->ended(g, kRs).ps()},
                    {"ag_start_ps", run_->started(g, kAg).ps()},
                    {"ag_end_ps", run_->ended(g, kAg).ps()}});
  }
  r.json = {{"workload", "sublayer"},
            {"configuration", configuration_},
            {"mode", to_string(node().config().mode)},
            {"num_gpus", node().num_gpus()},
            {"simulated_gpus", n},
            {"gemm", gemm_.description},
            {"gemm_stages", gemm_kernel_stats().stages()},
            {"array_bytes", array_bytes_},
            {"collective_channels", collective_channels_},
            {"time_ps", r.total.ps()},
            {"phases", phases},
            {"gpus", gpus},
            {"links", node().network().link_results(r.total)},
            {"functional_check", values_ ? "passed" : "not run"},
            {"arbiter", node().config().gpu.memory.mc.arbiter.type},
            {"words_checked", r.words_checked}};
  return r;
}

void SublayerSystem::make_ideal_result(SublayerResult& r, const IsolatedRs* alone) const {
  Tick rs = r.rs;
  if (alone != nullptr) {
    rs = alone->time;
    r.traffic[kRs] = alone->traffic;
  }
  r.json["isolated"] = {{"gemm_ps", r.gemm.ps()}, {"rs_ps", rs.ps()}, {"ag_ps", r.ag.ps()},
                        {"rs", alone != nullptr ? "ring RS with NMC (tracker + DMA updates)" : "sequential's CU ring RS"}};
  r.note = fmt::format("  (from isolated runs: GEMM {:.4f} ms, RS {:.4f} ms, AG {:.4f} ms; RS above = exposed)\n",
                       static_cast<double>(r.gemm.ps()) * 1e-9, static_cast<double>(rs.ps()) * 1e-9,
                       static_cast<double>(r.ag.ps()) * 1e-9);
  r.rs = rs > r.gemm ? rs - r.gemm : Tick::zero();
  r.total = critical_path(r.gemm, rs, r.ag);
  r.json["time_ps"] = r.total.ps();
}

namespace {

// sequential's: the tasks chained; its run is the one the ideal bounds complete (kept
// for them in a sweep's isolated-run store).
class ChainedSublayerForm final : public SublayerConfiguration {};

// ideal-overlap's (T3 §5.3's Ideal-GEMM-RS-Overlap): sequential's run, taken or
// simulated, completed with the critical path: max(GEMM, RS) + AG.
class CriticalPathSublayerForm final : public SublayerConfiguration {
 public:
  void complete(SublayerSystem& s, SublayerResult& r) override { s.make_ideal_result(r, nullptr); }
};

}  // namespace

std::unique_ptr<SublayerConfiguration> sublayer_form(Procedure procedure) {
  switch (procedure) {
    case Procedure::kChained: return std::make_unique<ChainedSublayerForm>();
    case Procedure::kCriticalPath: return std::make_unique<CriticalPathSublayerForm>();
    case Procedure::kOverlapped:
    case Procedure::kOwn: break;
  }
  throw InternalError("sublayer_form: the sub-layer driver has no form of its own for an overlapped or own procedure");
}

std::string SublayerSystem::summary(const SublayerResult& r, std::string_view label) const {
  const NodeConfig& c = node().config();
  const std::string ag_label = procedure_ != nullptr ? procedure_->ag_label() : std::string();
  const std::string rs_label = procedure_ != nullptr ? procedure_->rs_label(*this)
                                                     : fmt::format("ring, {} CU channels", ag_->channels());
  std::string s = fmt::format(
      "sub-layer {} on {} GPUs ({} topology, {} mode), configuration {}\n"
      "  total              {:.4f} ms\n"
      "  GEMM               {:.4f} ms\n"
      "  reduce-scatter     {:.4f} ms ({})\n"
      "  all-gather         {:.4f} ms{}\n"
      "  DRAM per GPU (MB)  {:>8} {:>8} {:>8}\n",
      gemm_.description, c.num_gpus, c.net.topology, to_string(c.mode), label.empty() ? configuration_ : label,
      r.total.ms(), r.gemm.ms(), r.rs.ms(), rs_label, r.ag.ms(),
      ag_label.empty() ? std::string() : fmt::format(" ({})", ag_label), "read", "write", "update");
  const char* names[kPhases] = {"GEMM", "RS", "AG"};
  for (int ph = 0; ph < kPhases; ++ph)
    s += fmt::format("    {:<16} {:>8.1f} {:>8.1f} {:>8.1f}\n", names[ph], megabytes(r.traffic[ph].read),
                     megabytes(r.traffic[ph].write), megabytes(r.traffic[ph].update));
  s += fmt::format("  functional check   {}\n",
                   r.values_checked ? fmt::format("passed ({} words)", r.words_checked)
                                    : fmt::format("not run ({})", values_off_));
  return s + r.note;
}

}  // namespace t3sim
