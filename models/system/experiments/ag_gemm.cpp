// kind: ag_gemm — the consumer all-gather + GEMM of seed 001 on every GPU of a node,
// under a registered configuration (models/system/ag_gemm/ag_gemm_system.h).
//
//   kind: ag_gemm
//   gemm: {m: 8192, n: 11008, k: 4096}  # A: M x K gathered; N split over the GPUs; plus kind gemm's kernel keys
//   chunk_rows: 256                     # rows per copy and signal
//   streams: 0                          # copy-engine streams (0: one per GPU)
//   order: comm-aware                   # fused GEMM's rows: comm-aware (own first, as copies land) | oblivious
//   launch_order: copies-first          # host: copies-first (the library's) | gemm-first
//   grid: 0                             # persistent WGs (0: one per CU)
//   collective: {channels: 0, functional: auto, values_limit: 16MiB}  # the CU all-gather (sequential)

#include <optional>

#include <fmt/format.h>

#include "models/system/ag_gemm/ag_gemm_system.h"
#include "models/system/experiment.h"
#include "models/system/gemm_system.h"
#include "models/system/sublayer_system.h"  // read_channel_pipeline
#include "sim/config.h"
#include "sim/error.h"

namespace t3sim {
namespace {

AgGemmSpec read_ag_gemm_spec(ConfigNode workload, const NodeConfig& node, std::uint64_t seed) {
  AgGemmSpec spec;
  const GpuConfig& gpu = node.gpu;
  ConfigNode gemm = workload.child("gemm");
  ConfigNode coll = workload.child("collective");
  for (const char* key : {"trace", "preset", "cus"}) {
    if (gemm.has(key))
      gemm.fail(key, "the all-gather + GEMM's GEMM is generated from m, n, k (n: all GPUs' columns), on every CU");
  }
  const std::uint64_t m = gemm.get_uint("m", 1, 1ULL << 32, Required{});
  const std::uint64_t n = gemm.get_uint("n", 1, 1ULL << 32, Required{});
  const std::uint64_t k = gemm.get_uint("k", 1, 1ULL << 32, Required{});
  if (n % node.num_gpus != 0)
    gemm.fail("n", fmt::format("each of the {} GPUs computes N / {} columns (seed 001's local_N), and {} is not a "
                               "multiple of {}",
                               node.num_gpus, node.num_gpus, n, node.num_gpus));
  if (m % node.num_gpus != 0)
    gemm.fail("m", fmt::format("each of the {} GPUs holds M / {} rows of A, and {} is not a multiple of {}",
                               node.num_gpus, node.num_gpus, m, node.num_gpus));
  const GemmShape shape{m, n / node.num_gpus, k};
  GemmWorkload wl = read_gemm_workload(gemm, gpu, &shape);
  spec.gemm = *wl.params;
  // The weight is [local_N, K] (the tutorial's weight, used transposed): B stored N x K.
  spec.gemm.b_layout = MatrixLayout::kColumnMajor;
  spec.gemm_label = fmt::format("{} x {} x {}", m, n / node.num_gpus, k);

  spec.chunk_rows = workload.get_uint("chunk_rows", 256, 1, 1ULL << 32);
  spec.streams = static_cast<std::uint32_t>(workload.get_uint("streams", 0, 0, 1024));
  spec.swizzle = workload.get_enum("order", "comm-aware", {"comm-aware", "oblivious"}) == "comm-aware";
  spec.copies_first =
      workload.get_enum("launch_order", "copies-first", {"copies-first", "gemm-first"}) == "copies-first";
  spec.grid = static_cast<std::uint32_t>(workload.get_uint("grid", 0, 0, 65535));
  ConsumerGemmParams check;
  check.gemm = spec.gemm;
  check.num_gpus = node.num_gpus;
  check.grid = 1;
  check.chunk_rows = spec.chunk_rows;
  try {
    validate_consumer_gemm(check);
  } catch (const UserError& e) {
    workload.fail("chunk_rows", e.what());
  }

  NodeCollectiveParams& p = spec.ag;
  p.kind = CollectiveKind::kRingAllGather;
  p.element_bytes = spec.gemm.dtype_bytes;
  p.array_bytes = m * k * spec.gemm.dtype_bytes;
  p.channels = static_cast<std::uint32_t>(coll.get_uint("channels", gpu.collective_channels, 0, 4096));
  p.pipeline = read_channel_pipeline(coll, gpu.memory.hbm.value_granule);
  const std::string functional = coll.get_enum("functional", "auto", {"auto", "values", "off"});
  const std::uint64_t values_limit = coll.get_bytes("values_limit", 16ULL << 20, 0, 1ULL << 40);
  p.values = functional == "values" || (functional == "auto" && p.array_bytes <= values_limit);
  const std::uint64_t unit = std::uint64_t{node.num_gpus} * gpu.memory.hbm.value_granule;
  const std::uint64_t chunk_bytes = spec.chunk_rows * k * spec.gemm.dtype_bytes;
  if (p.values && (p.array_bytes % unit != 0 || chunk_bytes % gpu.memory.hbm.value_granule != 0)) {
    if (functional == "values")
      coll.fail("functional", fmt::format("values needs A's rows and chunks in whole {}-byte granules",
                                          gpu.memory.hbm.value_granule));
    p.values = false;
  }
  p.seed = seed;
  coll.finish();
  workload.finish();
  return spec;
}

class AgGemmExperiment final : public Experiment {
 public:
  AgGemmExperiment(Simulator& sim, ConfigNode system, ConfigNode workload, const RunOptions& run)
      : configuration_(run.configuration.empty() ? "fused" : run.configuration) {
    if (ag_gemm_configurations().find(configuration_) == nullptr)
      run.reject_configuration(fmt::format("kind ag_gemm takes one of {}, not '{}'",
                                           fmt::join(ag_gemm_configurations().names(), ", "), configuration_));
    node_ = read_node_config(system, run.mode);
    node_.partitioned = true;
    AgGemmSpec spec = read_ag_gemm_spec(workload, node_, run.seed);
    HostMemoryEstimate need;
    const std::uint32_t simulated = node_.mode == NetMode::kFull ? node_.num_gpus : 1;
    estimate_host_memory(node_.gpu, simulated, need);
    if (spec.ag.values)
      need.add("workload.collective.values_limit",
               fmt::format("the values checked on {} GPU{}", simulated, simulated == 1 ? "" : "s"),
               std::uint64_t{simulated} * 3 * (spec.ag.array_bytes / node_.gpu.memory.hbm.value_granule), 8);
    run.check_host_memory(need);
    try {
      model_.emplace(sim, node_, std::move(spec), configuration_, run.seed);
    } catch (const ConfigError&) {
      throw;
    } catch (const WgDoesNotFit&) {
      throw;
    } catch (const UserError& e) {
      workload.child("collective").fail("channels", e.what());  // an all-gather the node cannot run
    }
  }

  std::string validated() const override {
    const AgGemmSpec& s = model_->spec();
    return fmt::format("ok: all-gather + GEMM {} on {} GPUs ({} mode), configuration {}\n", s.gemm_label,
                       node_.num_gpus, to_string(node_.mode), configuration_);
  }

  ExperimentResult run(Tick max_time) override {
    const AgGemmResult r = model_->run(max_time);
    ExperimentResult out;
    out.label = configuration_;
    out.json = r.json;
    out.summary = model_->summary(r);
    out.extra_events = r.extra_events;
    const AgGemmSpec& s = model_->spec();
    out.metrics = {
        {"configuration", configuration_},
        {"gemm", s.gemm_label},
        {"chunk_rows", std::to_string(s.chunk_rows)},
        {"mode", to_string(node_.mode)},
        {"num_gpus", std::to_string(node_.num_gpus)},
        {"time_ps", std::to_string(r.time.ps())},
        {"sequential_ps", std::to_string(r.sequential.ps())},
        {"isolated_all_gather_ps", std::to_string(r.isolated_ag.ps())},
        {"isolated_gemm_ps", std::to_string(r.isolated_gemm.ps())},
        {"ideal_ps", std::to_string(r.ideal.ps())},
        {"speedup", fmt::format("{:.6f}", r.speedup)},
        {"ideal_speedup", fmt::format("{:.6f}", r.ideal_speedup)},
        {"fraction_of_ideal", fmt::format("{:.6f}", r.fraction_of_ideal)},
        {"fused_gemm_launch_ps", std::to_string(r.fused_gemm_launch.ps())},
        {"fused_copies_end_ps", std::to_string(r.fused_copies_end.ps())},
        {"flag_waits", std::to_string(r.flag_waits)},
        {"functional_check", r.values_checked ? "passed" : "not run"},
    };
    return out;
  }

 private:
  std::string configuration_;
  NodeConfig node_;
  std::optional<AgGemmSystem> model_;
};

}  // namespace

T3SIM_REGISTER(workload_kinds, "ag_gemm",
               "the consumer all-gather + GEMM on every GPU of a node: sequential, fused (copy-engine chunks with "
               "signals beside a persistent GEMM) or ideal-overlap (seed 001)",
               [](Simulator& sim, ConfigNode system, ConfigNode workload, const RunOptions& run)
                   -> std::unique_ptr<Experiment> {
                 return std::make_unique<AgGemmExperiment>(sim, system, workload, run);
               })

}  // namespace t3sim
