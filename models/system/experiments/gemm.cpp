// kind: gemm — one GEMM kernel on one GPU (CUs + memory system,
// models/system/gemm_system.h); with a configuration, the GEMM and the collective
// that consumes its output on a node (the sub-layer, models/system/sublayer_system.h).

#include <fmt/format.h>

#include "models/system/configuration.h"
#include "models/system/experiment.h"
#include "models/system/gemm_system.h"
#include "models/system/sublayer_system.h"

namespace t3sim {
namespace {

class GemmExperiment final : public Experiment {
 public:
  GemmExperiment(Simulator& sim, ConfigNode system, ConfigNode workload, const RunOptions& run)
      : gpu_(read_gpu_config(system.child("gpu"), system.child("memory"))) {
    for (const std::string& key : system.keys()) {
      if (key != "memory" && key != "gpu") (void)system.raw(key);  // the node around it is not simulated
    }
    system.finish();
    if (gpu_.memory.model == MemoryModel::kIdeal)
      system.child("memory").fail("model", "a GEMM's results are its L2's and DRAM's: it needs model: hbm, not ideal");
    (void)read_sublayer_options(workload.child("collective"),
                                gpu_.memory.hbm.value_granule);  // checked; used with --config
    GemmWorkload wl = read_gemm_workload(workload, gpu_);
    // One GPU has no peers: a trace's remote stores and flag sets (peer=) need a node
    // (issue 21, C05).
    for (const TraceProgram& program : wl.trace.programs) {
      for (const TraceOp& op : program.ops) {
        if ((op.flags & kTraceRemote) != 0)
          workload.fail("trace", fmt::format("program '{}' sends to a peer GPU (peer=), but a GEMM alone runs on one "
                                             "GPU",
                                             program.name));
      }
    }
    HostMemoryEstimate need;
    estimate_host_memory(gpu_, 1, need);
    run.check_host_memory(need);
    sampling_ = run.sampling;
    work_.kernel_bytes = trace_access_bytes(wl.trace);
    if (sampling_.enabled) work_.caveat = "an upper bound: run.sampling skips the steady stages";
    model_ = std::make_unique<GemmSystem>(sim, gpu_, std::move(wl), sampling_);
  }

  std::string validated() const override { return fmt::format("ok: GEMM on {} CUs\n", gpu_.num_cus); }
  double progress() override { return model_->progress(); }
  WorkEstimate work() const override { return work_; }

  ExperimentResult run(Tick max_time) override {
    const GemmResult r = model_->run(max_time);
    ExperimentResult out;
    out.label = "gemm";
    out.json = r.json;
    out.summary = model_->summary(r);
    out.metrics = {
        {"time_ps", std::to_string(r.time.ps())},
        {"tflops", fmt::format("{:.4f}", r.tflops)},
        {"peak_tflops", fmt::format("{:.4f}", r.peak_tflops)},
        {"stages", std::to_string(r.stages)},
        {"wgs", std::to_string(r.wgs)},
        {"dram_read_bytes", std::to_string(r.dram_read_bytes)},
        {"dram_write_bytes", std::to_string(r.dram_write_bytes)},
        {"dram_update_bytes", std::to_string(r.dram_update_bytes)},
        {"l2_hit_rate", fmt::format("{:.6f}", r.l2_hit_rate)},
    };
    if (sampling_.enabled) {
      out.metrics.emplace_back("sampled_stages", std::to_string(r.sampling.skipped_stages));
      out.metrics.emplace_back("sampled_ps", std::to_string(r.sampling.skipped_time.ps()));
      out.summary += fmt::format("  sampling           {} of {} stages skipped ({} of the time; values not computed "
                                 "for them)\n",
                                 r.sampling.skipped_stages, r.stages, to_string(r.sampling.skipped_time));
    }
    return out;
  }
  bool samples() const override { return true; }

 private:
  GpuConfig gpu_;
  std::unique_ptr<GemmSystem> model_;
  SamplingConfig sampling_;
  WorkEstimate work_;
};

}  // namespace

T3SIM_REGISTER(workload_kinds, "gemm",
               "a tiled GEMM on one GPU; with --config, the GEMM and its reduce-scatter + all-gather on a "
               "node (a transformer sub-layer, T3 §5)",
               [](Simulator& sim, ConfigNode system, ConfigNode workload,
                  const RunOptions& run) -> std::unique_ptr<Experiment> {
                 if (!run.configuration.empty()) {
                   const std::vector<std::string> names = configuration_names(ConfigurationFamily::kSublayer);
                   if (std::find(names.begin(), names.end(), run.configuration) == names.end())
                     run.reject_configuration(fmt::format(
                         "kind gemm takes one of the sub-layer configurations ({}), not '{}'",
                         fmt::join(names, ", "), run.configuration));
                   return make_sublayer_experiment(sim, system, workload, run);
                 }
                 return std::make_unique<GemmExperiment>(sim, system, workload, run);
               })

}  // namespace t3sim
