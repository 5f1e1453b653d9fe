#include "models/system/configuration.h"
#include "models/system/overlap/overlap_system.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/collectives/node_collective.h"
#include "models/system/experiment.h"
#include "models/system/sublayer_system.h"  // read_channel_pipeline
#include "sim/config.h"
#include "sim/error.h"
#include "sim/host_memory.h"

namespace t3sim {

namespace {
}  // namespace

std::string overlap_configuration(const RunOptions& run, const char* kind) {
  const std::string name = run.configuration.empty() ? "fused" : run.configuration;
  const std::vector<std::string> names = configuration_names(ConfigurationFamily::kOverlap);
  if (std::find(names.begin(), names.end(), name) == names.end())
    run.reject_configuration(fmt::format("kind {} takes one of {}, not '{}'", kind, fmt::join(names, ", "), name));
  return name;
}

void check_overlap_host_memory(const RunOptions& run, const NodeConfig& node, const NodeCollectiveParams& collective,
                               std::uint32_t value_copies, const std::string& tiles_key, const std::string& tiles_what,
                               std::uint64_t tiles) {
  HostMemoryEstimate need;
  const std::uint32_t simulated = node.simulated_gpus();
  estimate_host_memory(node.gpu, simulated, need);
  if (collective.values && value_copies > 0)
    need.add("workload.collective.values_limit",
             fmt::format("the values checked on {} GPU{}", simulated, simulated == 1 ? "" : "s"),
             std::uint64_t{simulated} * value_copies * (collective.array_bytes / node.gpu.memory.hbm.value_granule), 8);
  need.add(tiles_key, tiles_what, tiles * simulated, 2048);
  run.check_host_memory(need);
}

NodeCollectiveParams read_overlap_collective(ConfigNode coll, const NodeConfig& node, CollectiveKind kind,
                                             std::uint64_t array_bytes, std::uint32_t element_bytes, bool whole,
                                             const std::string& what, std::uint64_t seed,
                                             std::uint64_t values_bytes) {
  const GpuConfig& gpu = node.gpu;
  NodeCollectiveParams p;
  p.kind = kind;
  p.element_bytes = element_bytes;
  p.array_bytes = array_bytes;
  p.channels = static_cast<std::uint32_t>(coll.get_uint("channels", gpu.collective_channels, 0, 4096));
  p.pipeline = read_channel_pipeline(coll, gpu.memory.hbm.value_granule);
  const std::string functional = coll.get_enum("functional", "auto", {"auto", "values", "off"});
  const std::uint64_t values_limit = coll.get_bytes("values_limit", 16ULL << 20, 0, 1ULL << 40);
  p.values = functional == "values" ||
             (functional == "auto" && (values_bytes > 0 ? values_bytes : p.array_bytes) <= values_limit);
  if (p.values && !whole) {
    if (functional == "values")
      coll.fail("functional", fmt::format("values need {} in whole {}-byte granules", what,
                                          gpu.memory.hbm.value_granule));
    p.values = false;
  }
  p.seed = seed;
  coll.finish();
  return p;
}

// ---------------------------------------------------------------------------- OverlapRun

OverlapRun::OverlapRun(Simulator& sim, const NodeConfig& node, std::unique_ptr<OverlapOp> op, Procedure procedure)
    : ScenarioRun(sim, node, "the op"), op_(std::move(op)), procedure_(procedure) {
  // The sequential procedure's phases are its tasks; the fused form's work is its own
  // (kernels and transfers, counted as work).
  if (procedure_ == Procedure::kSequential) {
    add_task("compute");
    add_task("collective");
  }
  op_->build(*this);
  if (procedure_ == Procedure::kSequential) op_->chain_sequential(*this);
}

OverlapRun::~OverlapRun() = default;

ScenarioRun::Task OverlapRun::task(Phase p) const {
  if (procedure_ != Procedure::kSequential)
    internal_error(Tick(), "overlap", "a fused form reported a sequential phase", __FILE__, __LINE__);
  return static_cast<Task>(p);
}

void OverlapRun::chain_phase(Phase p, const std::vector<Phase>& ordered_after, TaskStart start) {
  std::vector<Dependency> after;
  for (const Phase a : ordered_after) after.push_back(ScenarioRun::only_after(task(a)));
  chain_task(task(p), std::move(after), std::move(start));
}

namespace {
KernelLaunch compute_stream_launch(const KernelTrace& trace, const StoreRouting* routing,
                                   std::uint32_t value_granule) {
  KernelLaunch k;
  k.trace = &trace;
  k.stream = Stream::kCompute;
  k.routing = routing;
  k.value_granule = value_granule;
  return k;
}
}  // namespace

void OverlapRun::launch_compute(std::uint32_t g, const KernelTrace& trace, std::function<void()> then) {
  ScenarioRun::launch_kernel(g, task(kCompute), compute_stream_launch(trace, nullptr, 0), std::move(then));
}

void OverlapRun::launch_kernel(std::uint32_t g, const KernelTrace& trace, const StoreRouting* routing,
                               std::uint32_t value_granule, std::function<void()> then) {
  ScenarioRun::launch_kernel(g, std::nullopt, compute_stream_launch(trace, routing, value_granule), std::move(then));
}

Tick OverlapRun::ideal(Tick compute, Tick collective) const {
  std::vector<Tick> alone(kPhases);
  alone[task(kCompute)] = compute;
  alone[task(kCollective)] = collective;
  return critical_path(alone);
}

void OverlapRun::run(Tick max_time) {
  simulate(max_time);
  std::string error;
  words_checked_ += op_->verify(*this, error);
  if (!error.empty()) throw SimulationError("functional check failed: " + error);
}

std::uint64_t OverlapRun::flag_waits() {
  std::uint64_t waits = 0;
  Gpu& gpu = node().gpu(0);
  for (std::uint32_t cu = 0; cu < gpu.num_cus(); ++cu) waits += gpu.cu(cu).flag_waits();
  return waits;
}

// ---------------------------------------------------------------------------- OverlapSystem

OverlapSystem::OverlapSystem(Simulator& sim, const NodeConfig& node, OverlapOpFactory make_op,
                             std::string configuration, std::uint64_t seed)
    : node_(node), make_op_(std::move(make_op)), configuration_(std::move(configuration)) {
  config_ = make_configuration(configuration_, ConfigurationFamily::kOverlap);
  describer_ = make_op_();
  // The driver builds the sequential run now (so `t3sim validate` meets what cannot be
  // built); fused runs it on a simulator of its own and builds its own run once that one
  // is gone (one node in memory at a time).
  driver_ = std::make_unique<ScenarioDriver<OverlapSequential>>(sim, *this, config_->procedure(), seed);
}

OverlapSystem::~OverlapSystem() = default;

void OverlapSystem::build_chained(Simulator& sim) {
  seq_ = std::make_unique<OverlapRun>(sim, node_, make_op_(), OverlapRun::Procedure::kSequential);
}

void OverlapSystem::build_own(Simulator& sim) {
  fused_ = std::make_unique<OverlapRun>(sim, node_, make_op_(), OverlapRun::Procedure::kFused);
}

OverlapSequential OverlapSystem::simulate_chained(Tick max_time) {
  OverlapRun& seq = *seq_;
  for (std::uint32_t g = 0; g < seq.simulated_gpus(); ++g) {
    Simulator::InPartition in(seq.sim(), seq.node().partition(g));
    seq.start(g);
  }
  seq.run(max_time);
  OverlapSequential r;
  r.end = seq.end();
  r.compute = seq.phase_time(OverlapRun::kCompute);
  r.collective = seq.phase_time(OverlapRun::kCollective);
  r.ideal = seq.ideal(r.compute, r.collective);
  r.words_checked = seq.words_checked();
  return r;
}

nlohmann::json OverlapSystem::chained_entry(const OverlapSequential& r) const {
  return {{"end_ps", r.end.ps()},
          {"compute_ps", r.compute.ps()},
          {"collective_ps", r.collective.ps()},
          {"words_checked", r.words_checked}};
}

OverlapSequential OverlapSystem::chained_from_entry(const nlohmann::json& j) const {
  OverlapSequential r;
  r.end = cached_time(j, "end_ps");
  r.compute = cached_time(j, "compute_ps");
  r.collective = cached_time(j, "collective_ps");
  if (r.compute > r.end || r.collective > r.end) throw BadCacheEntry{"a phase is longer than the run"};
  r.words_checked = cached_count(j, "words_checked");
  r.ideal = seq_->ideal(r.compute, r.collective);  // built at construction, not simulated
  return r;
}

void OverlapSystem::simulate_own(Tick max_time) {
  OverlapRun& fused = *fused_;
  for (std::uint32_t g = 0; g < fused.node().simulated_gpus(); ++g) {
    Simulator::InPartition in(fused.sim(), fused.node().partition(g));
    fused.start(g);
  }
  fused.run(max_time);
  Fused& f = fused_result_;
  f.end = fused.end();
  f.skew = fused.skew();
  f.flag_waits = fused.flag_waits();
  f.words_checked = fused.words_checked();
  f.json = fused.op().fused_json(fused);
  f.json["end_ps"] = f.end.ps();
  f.json["flag_waits_gpu0"] = f.flag_waits;
  f.json["skew"] = f.skew;
}

Tick OverlapSystem::configuration_time(const OverlapResult& r) const {
  switch (config_->procedure()) {
    case Procedure::kChained: return r.sequential;
    case Procedure::kCriticalPath: return r.ideal;
    case Procedure::kOwn: return r.fused;
    case Procedure::kOverlapped: break;
  }
  internal_error(Tick(), "overlap", "an overlapped configuration ran an overlap kind", __FILE__, __LINE__);
}

std::string OverlapSystem::describe() const {
  switch (config_->procedure()) {
    case Procedure::kChained: return "the kernels one after the other";
    case Procedure::kCriticalPath: return "max(isolated compute, isolated collective)";
    case Procedure::kOwn: return describer_->describe_fused();
    case Procedure::kOverlapped: break;
  }
  return {};
}

OverlapResult OverlapSystem::run(Tick max_time) {
  OverlapResult r;
  const ScenarioRuns<OverlapSequential> runs = driver_->run(max_time);
  seq_.reset();  // the sequential run's node is gone with its results, whichever the procedure
  const OverlapSequential& seq = *runs.chained;
  r.sequential = seq.end;
  r.isolated_compute = seq.compute;
  r.isolated_collective = seq.collective;
  r.ideal = seq.ideal;
  r.words_checked = seq.words_checked;
  r.extra_events = runs.extra_events;
  if (runs.own_ran) {
    r.fused = fused_result_.end;
    r.skew = fused_result_.skew;
    r.flag_waits = fused_result_.flag_waits;
    r.words_checked += fused_result_.words_checked;
    fused_.reset();
  }
  r.values_checked = describer_->values();
  r.time = configuration_time(r);
  auto ratio = [](Tick a, Tick b) { return b.ps() ? static_cast<double>(a.ps()) / static_cast<double>(b.ps()) : 0.0; };
  r.speedup = ratio(r.sequential, r.time);
  r.ideal_speedup = ratio(r.sequential, r.ideal);
  r.fraction_of_ideal = r.ideal_speedup > 1.0 ? (r.speedup - 1.0) / (r.ideal_speedup - 1.0) : 0.0;
  r.json = {{"workload", describer_->label()},
            {"configuration", configuration_},
            {"describe", describe()},
            {"mode", to_string(node_.mode)},
            {"num_gpus", node_.num_gpus},
            {"time_ps", r.time.ps()},
            {"sequential_ps", r.sequential.ps()},
            {"isolated_compute_ps", r.isolated_compute.ps()},
            {"isolated_collective_ps", r.isolated_collective.ps()},
            {"ideal_ps", r.ideal.ps()},
            {"speedup", r.speedup},
            {"ideal_speedup", r.ideal_speedup},
            {"fraction_of_ideal", r.fraction_of_ideal},
            {"functional_check", r.values_checked ? "passed" : "not run"},
            {"words_checked", r.words_checked}};
  if (runs.own_ran) r.json["fused"] = fused_result_.json;
  // Where the main simulator ran nothing (ideal-overlap's run taken), said where the
  // result is read: its stats and timeline are empty; the events are the kept run's.
  if (runs.chained_taken && !runs.own_ran) r.json["sequential_run"] = "taken from the isolated-run cache";
  return r;
}

std::string OverlapSystem::summary(const OverlapResult& r) const {
  std::string s = fmt::format(
      "{} on {} GPUs ({} mode), configuration {}: {}\n"
      "  time               {:.4f} ms\n"
      "  sequential         {:.4f} ms (compute {:.4f} ms, collective {:.4f} ms)\n"
      "  speedup            {:.3f}x of an ideal {:.3f}x: {:.1f}% of the ideal realized\n",
      describer_->label(), node_.num_gpus, to_string(node_.mode), configuration_, describe(),
      r.time.ms(), r.sequential.ms(), r.isolated_compute.ms(), r.isolated_collective.ms(), r.speedup, r.ideal_speedup,
      r.fraction_of_ideal * 100.0);
  if (fused())
    s += fmt::format("  fused              ended {:.4f} ms; {} blocking flag waits on GPU 0; GPU end skew {:.2f}%\n",
                     r.fused.ms(), r.flag_waits, 100.0 * r.skew);
  s += fmt::format("  functional check   {}\n", r.values_checked ? fmt::format("passed ({} words)", r.words_checked)
                                                               : std::string("not run (collective.functional off, the arrays above collective.values_limit, or not in whole value granules)"));
  return s;
}

// ---------------------------------------------------------------------------- experiment

namespace {

class OverlapExperiment final : public Experiment {
 public:
  OverlapExperiment(Simulator& sim, const NodeConfig& node, OverlapOpFactory op, const std::string& configuration,
                    std::uint64_t seed, const WorkEstimate& one_run)
      : model_(sim, node, std::move(op), configuration, seed), one_run_(one_run) {}

  WorkEstimate work() const override { return one_run_.scaled(model_.simulations()); }

  // The sequential run kept in (and taken from) `store`, which this experiment keeps alive.
  void share_sequential_run(std::shared_ptr<ResultStore> store, std::string key) {
    store_ = std::move(store);
    model_.share_sequential_run(store_.get(), std::move(key));
  }

  std::string validated() const override {
    return fmt::format("ok: {} on {} GPUs ({} mode), configuration {}\n", model_.op().label(), model_.node().num_gpus,
                       to_string(model_.node().mode), model_.configuration());
  }

  ExperimentResult run(Tick max_time) override {
    const OverlapResult r = model_.run(max_time);
    ExperimentResult out;
    out.label = model_.configuration();
    out.json = r.json;
    out.summary = model_.summary(r);
    out.extra_events = r.extra_events;
    out.metrics = {
        {"configuration", model_.configuration()},
        {"workload", model_.op().label()},
        {"mode", to_string(model_.node().mode)},
        {"num_gpus", std::to_string(model_.node().num_gpus)},
        {"time_ps", std::to_string(r.time.ps())},
        {"sequential_ps", std::to_string(r.sequential.ps())},
        {"isolated_compute_ps", std::to_string(r.isolated_compute.ps())},
        {"isolated_collective_ps", std::to_string(r.isolated_collective.ps())},
        {"ideal_ps", std::to_string(r.ideal.ps())},
        {"speedup", fmt::format("{:.6f}", r.speedup)},
        {"ideal_speedup", fmt::format("{:.6f}", r.ideal_speedup)},
        {"fraction_of_ideal", fmt::format("{:.6f}", r.fraction_of_ideal)},
        {"fused_ps", std::to_string(r.fused.ps())},
        {"flag_waits", std::to_string(r.flag_waits)},
        {"skew", fmt::format("{:.6f}", r.skew)},
    };
    const nlohmann::json fused = r.json.contains("fused") ? r.json["fused"] : nlohmann::json::object();
    for (const std::string& key : model_.op().fused_keys()) {
      std::string value = "0";
      if (fused.contains(key)) value = fused[key].is_string() ? fused[key].get<std::string>() : fused[key].dump();
      out.metrics.emplace_back("fused_" + key, value);
    }
    out.metrics.emplace_back("functional_check", r.values_checked ? "passed" : "not run");
    return out;
  }

 private:
  std::shared_ptr<ResultStore> store_;  // before model_: it outlives the model
  OverlapSystem model_;
  WorkEstimate one_run_;
};

}  // namespace

std::unique_ptr<Experiment> make_overlap_experiment(Simulator& sim, const NodeConfig& node, OverlapOpFactory op,
                                                    const std::string& configuration, const RunOptions& run,
                                                    ConfigNode system, ConfigNode workload,
                                                    double kernel_bytes_per_gpu,
                                                    const NodeCollectiveParams& library_collective) {
  ConfigNode collective = workload.child("collective");
  WorkEstimate one_run;
  one_run.kernel_bytes = kernel_bytes_per_gpu * node.simulated_gpus();
  one_run.communication_bytes =
      collective_work_bytes(library_collective.kind, library_collective.array_bytes, node.simulated_gpus());
  try {
    std::unique_ptr<OverlapExperiment> e =
        std::make_unique<OverlapExperiment>(sim, node, std::move(op), configuration, run.seed, one_run);
    if (run.isolated_store)
      e->share_sequential_run(run.isolated_store, chained_run_key("overlap sequential v1", to_string(node.mode),
                                                                   run.seed, {}, system, workload));
    return e;
  } catch (const ConfigError&) {
    throw;
  } catch (const WgDoesNotFit&) {
    throw;  // names the system key itself
  } catch (const CollectiveParamError& e) {
    collective.fail(collective_workload_key(e, collective, "channels"), e.what());
  } catch (const UserError& e) {
    collective.fail("channels", e.what());  // a collective the node cannot run
  }
}

}  // namespace t3sim
