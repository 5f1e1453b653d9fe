// kind: gemm with a configuration — a transformer sub-layer on a node: the GEMM and
// the reduce-scatter + all-gather of its output, under one registered configuration
// (models/system/sublayer_system.h).

#include <optional>

#include <fmt/format.h>

#include "models/system/experiment.h"
#include "models/system/result_store.h"
#include "models/system/sublayer_system.h"
#include "sim/config.h"
#include "sim/error.h"

namespace t3sim {
namespace {

class SublayerExperiment final : public Experiment {
 public:
  SublayerExperiment(Simulator& sim, ConfigNode system, ConfigNode workload, const RunOptions& run)
      : configuration_(run.configuration), seed_(run.seed) {
    node_ = read_node_config(system, run.mode);
    if (node_.gpu.memory.model == MemoryModel::kIdeal)
      system.child("memory").fail("model", "a GEMM + collective sub-layer runs on the memory system (L2, the "
                                           "controllers' arbiters, T3's tracker): it needs model: hbm, not ideal");
    const SublayerOptions opt = read_sublayer_options(workload.child("collective"), node_.gpu.memory.hbm.value_granule);
    const bool from_trace = workload.has("trace");
    GemmWorkload wl = read_gemm_workload(workload, node_.gpu);
    if (from_trace)
      workload.fail("trace", "a GEMM + collective sub-layer needs a generated GEMM (preset or m/n/k): the "
                             "collective's array is the GEMM's output");
    // The tensor-parallel group is the node: a Table 2 preset's TP degree sets the GPU count.
    if (wl.tp > 0) node_.num_gpus = wl.tp;
    node_.partitioned = true;  // full mode: a partition per GPU
    HostMemoryEstimate need;
    estimate_host_memory(node_.gpu, node_.simulated_gpus(), need);
    run.check_host_memory(need);
    // The GEMM on every simulated GPU, then its output reduce-scattered and all-gathered
    // (a configuration's isolated runs, where it makes them, not counted).
    const std::uint32_t simulated = node_.simulated_gpus();
    work_.kernel_bytes = trace_access_bytes(wl.trace) * simulated;
    const std::uint64_t output = wl.params->m * wl.params->n * wl.params->dtype_bytes;
    work_.communication_bytes = collective_work_bytes(CollectiveKind::named("ring-ar"), output, simulated);
    model_.emplace(sim, node_, std::move(wl), opt, configuration_, seed_);
    if (run.isolated_store) {
      // sequential's run, shared with the ideal bounds (scenario_driver.h) under
      // everything it depends on: the build, the mode, the seed, the system and the
      // workload as given (whichever configuration runs; sequential and the ideal bounds
      // change nothing in them).
      store_ = run.isolated_store;
      model_->share_sequential_run(
          store_.get(), chained_run_key("sublayer sequential v1", to_string(node_.mode), seed_, {}, system, workload));
    }
  }

  std::string validated() const override {
    return fmt::format("ok: sub-layer on {} GPUs ({} mode), configuration {}\n", node_.num_gpus,
                       to_string(node_.mode), configuration_);
  }

  WorkEstimate work() const override { return work_; }

  ExperimentResult run(Tick max_time) override {
    const SublayerResult r = model_->run(max_time);
    ExperimentResult out;
    out.label = configuration_;
    out.json = r.json;
    out.summary = model_->summary(r);
    out.extra_events = r.extra_events;
    out.metrics = {
        {"configuration", configuration_},
        {"mode", to_string(node_.mode)},
        {"num_gpus", std::to_string(node_.num_gpus)},
        {"time_ps", std::to_string(r.total.ps())},
        {"gemm_ps", std::to_string(r.gemm.ps())},
        {"rs_ps", std::to_string(r.rs.ps())},
        {"ag_ps", std::to_string(r.ag.ps())},
    };
    const char* phase[3] = {"gemm", "rs", "ag"};
    for (int ph = 0; ph < 3; ++ph) {
      out.metrics.emplace_back(fmt::format("{}_dram_read_bytes", phase[ph]), std::to_string(r.traffic[ph].read));
      out.metrics.emplace_back(fmt::format("{}_dram_write_bytes", phase[ph]), std::to_string(r.traffic[ph].write));
      out.metrics.emplace_back(fmt::format("{}_dram_update_bytes", phase[ph]),
                               std::to_string(r.traffic[ph].update));
    }
    out.metrics.emplace_back("functional_check", r.values_checked ? "passed" : "not run");
    return out;
  }

 private:
  std::string configuration_;
  std::uint64_t seed_;
  NodeConfig node_;
  std::shared_ptr<ResultStore> store_;  // before model_: it outlives the model
  std::optional<SublayerSystem> model_;
  WorkEstimate work_;
};

}  // namespace

std::unique_ptr<Experiment> make_sublayer_experiment(Simulator& sim, ConfigNode system, ConfigNode workload,
                                                     const RunOptions& run) {
  return std::make_unique<SublayerExperiment>(sim, system, workload, run);
}

}  // namespace t3sim
