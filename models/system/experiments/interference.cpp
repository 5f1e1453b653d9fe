// kind: interference — a GEMM series on GPU 0 beside a stream of copies, as the H200
// interference microbenchmark runs them (models/system/interference/; issue 41;
// ../shared/calibration/h200/interfere.py).
//
//   kind: interference
//   gemm: {preset: tnlg.fc2.tp8}   # or m, n, k; plus kind gemm's kernel keys
//   gemms: 4                       # back to back on GPU 0, at least
//   window_copies: 6               # more GEMMs if needed for the window to hold this many copies
//   interferer: sm_local           # none | ce_local | ce_peer_out | ce_peer_in | ce_peer_both | sm_local | sm_push
//   order: comm-first              # comm-first | gemm-first
//   copy_bytes: 64MiB              # per copy
//   ctas: 24                       # sm_*: the copy kernel's CTAs, threads and registers per thread
//   threads: 512
//   regs_per_thread: 32

#include <fmt/format.h>

#include "models/system/experiment.h"
#include "models/system/interference/interference_system.h"
#include "sim/config.h"
#include "sim/error.h"

namespace t3sim {
namespace {

class InterferenceExperiment final : public Experiment {
 public:
  InterferenceExperiment(Simulator& sim, ConfigNode system, ConfigNode workload, const RunOptions& run)
      : node_(read_node_config(system, run.mode)) {
    if (node_.mode != NetMode::kFull)
      throw ConfigError(run.locate("run.mode"), "run.mode",
                        "interference runs GPU 0 and its peer apart (a copy into the peer is not one out of it): "
                        "full, not homogeneous");
    if (node_.gpu.memory.model == MemoryModel::kIdeal)
      system.child("memory").fail("model", "interference is the memory system's (L2, controllers): it needs model: "
                                           "hbm, not ideal");
    InterferenceSpec spec;
    spec.gemm = read_gemm_workload(workload.child("gemm"), node_.gpu);
    if (!spec.gemm.params)
      workload.child("gemm").fail("trace", "the GEMM is generated here: give preset or m, n, k");
    const GemmParams& g = *spec.gemm.params;
    spec.gemm_label = fmt::format("{} x {} x {}", g.m, g.n, g.k);
    spec.gemms = static_cast<std::uint32_t>(workload.get_uint("gemms", 4, 1, 100000));
    spec.window_copies = static_cast<std::uint32_t>(workload.get_uint("window_copies", 6, 2, 10000));
    const std::string interferer = workload.get_enum("interferer", "none", interferer_names());
    for (std::size_t i = 0; i < interferer_names().size(); ++i)
      if (interferer_names()[i] == interferer) spec.interferer = static_cast<Interferer>(i);
    spec.comm_first = workload.get_enum("order", "comm-first", {"comm-first", "gemm-first"}) == "comm-first";
    spec.copy_bytes = workload.get_bytes("copy_bytes", 64ULL << 20, 16, 1ULL << 36);
    if (spec.copy_bytes % 16 != 0)
      workload.fail("copy_bytes", fmt::format("{} B is not a whole number of the copy's 16 B elements", spec.copy_bytes));
    CopyKernelParams& k = spec.copy_kernel;
    k.ctas = static_cast<std::uint32_t>(workload.get_uint("ctas", 24, 1, 4096));
    k.threads = static_cast<std::uint32_t>(workload.get_uint("threads", 512, 1, 1024));
    // A grid-stride int4 copy needs few registers (32 by default). Whatever the count, its
    // CTA cannot share an SM with a cuBLAS Hopper GEMM CTA, whose 384 threads x 168
    // registers leave 1,024 of 65,536 (calibration/h200/cublas_kernels.csv).
    k.regs_per_thread = static_cast<std::uint32_t>(workload.get_uint("regs_per_thread", 32, 1, 255));
    k.wave_size = node_.gpu.gemm.wave_size;
    if (k.threads % k.wave_size != 0)
      workload.fail("threads", fmt::format("{} threads are not whole warps of {}", k.threads, k.wave_size));
    workload.finish();
    HostMemoryEstimate need;
    estimate_host_memory(node_.gpu, 2, need);
    run.check_host_memory(need);
    try {
      model_ = std::make_unique<InterferenceSystem>(sim, node_, std::move(spec), run.seed);
    } catch (const ConfigError&) {
      throw;
    } catch (const UserError& e) {
      workload.fail("interferer", e.what());
    }
  }

  std::string validated() const override {
    const InterferenceSpec& s = model_->spec();
    return fmt::format("ok: {}+ GEMMs of {} beside {} ({}) on 2 GPUs\n", s.gemms, s.gemm_label, to_string(s.interferer),
                       s.comm_first ? "comm-first" : "gemm-first");
  }

  // The GEMM series alone and beside the copies; the copies alone, then queued for
  // copy_window GEMM windows of at least window_copies (three times that for a copy
  // kernel, see InterferenceSpec), on each copying stream. The series grows where the
  // window needs more GEMMs: an estimate.
  WorkEstimate work() const override {
    const InterferenceSpec& s = model_->spec();
    WorkEstimate w;
    w.kernel_bytes = trace_access_bytes(s.gemm.trace) * s.gemms * 2.0;
    if (s.interferer != Interferer::kNone) {
      const bool kernel = s.interferer == Interferer::kSmLocal || s.interferer == Interferer::kSmPush;
      const double streams = s.interferer == Interferer::kCePeerBoth ? 2.0 : 1.0;
      const double copies = s.alone_copies + s.copy_window * s.window_copies * (kernel ? 3.0 : 1.0) * streams;
      w.communication_bytes = 2.0 * static_cast<double>(s.copy_bytes) * copies;
    }
    return w;
  }

  ExperimentResult run(Tick max_time) override {
    const InterferenceResult r = model_->run(max_time);
    ExperimentResult out;
    out.label = "interference";
    out.json = r.json;
    out.summary = model_->summary(r);
    out.extra_events = r.events;
    const InterferenceSpec& s = model_->spec();
    auto opt = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : std::string(); };
    std::string after;
    for (const double a : r.copy_after_GBps) after += fmt::format("{}{:.2f}", after.empty() ? "" : ";", a);
    out.metrics = {
        {"gemm", s.gemm_label},
        {"interferer", std::string(to_string(s.interferer))},
        {"order", s.comm_first ? "comm_first" : "gemm_first"},
        {"gemms", std::to_string(r.gemms)},
        {"gemm_alone_ps", std::to_string(r.gemm_alone.ps())},
        {"gemm_ps", std::to_string(r.gemm.ps())},
        {"gemm_slowdown", fmt::format("{:.4f}", r.slowdown)},
        {"copies", std::to_string(r.copies)},
        {"copy_alone_GBps", fmt::format("{:.2f}", r.copy_alone_GBps)},
        {"copy_GBps_during", opt(r.copy_during_GBps)},
        {"copy_GBps_after", after},
        {"gemm_dram_bytes", std::to_string(r.gemm_dram_bytes)},
        {"copy_dram_bytes", std::to_string(r.copy_dram_bytes)},
    };
    return out;
  }

 private:
  NodeConfig node_;
  std::unique_ptr<InterferenceSystem> model_;
};

}  // namespace

T3SIM_REGISTER(workload_kinds, "interference",
               "a GEMM series on GPU 0 beside a stream of copy-engine or copy-kernel copies, local or to / from its "
               "peer (the H200 interference microbenchmark, issue 41)",
               [](Simulator& sim, ConfigNode system, ConfigNode workload,
                  const RunOptions& run) -> std::unique_ptr<Experiment> {
                 if (!run.configuration.empty())
                   run.reject_configuration("kind interference takes no configuration");
                 return std::make_unique<InterferenceExperiment>(sim, system, workload, run);
               })

}  // namespace t3sim
