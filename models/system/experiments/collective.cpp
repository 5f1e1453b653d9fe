// kind: collective — one collective on a node: CU- or DMA-based on full GPU models
// (models/collectives/node_collective.h), or, on a system without `gpu:`, the
// first slice's ring engine on idealized memories (collective_system.h).

#include <optional>

#include <fmt/format.h>

#include "models/collectives/node_collective.h"
#include "models/system/collective_system.h"
#include "models/system/experiment.h"
#include "models/system/sublayer_system.h"
#include "sim/error.h"

namespace t3sim {
namespace {

void reject_configurations(const RunOptions& run) {
  if (!run.configuration.empty())
    run.reject_configuration(fmt::format("a collective alone has no configuration '{}' (configurations apply to "
                                         "GEMM + collective sub-layers)",
                                         run.configuration));
}

// CU- or DMA-based collectives on the full GPU model.
class NodeCollectiveExperiment final : public Experiment {
 public:
  NodeCollectiveExperiment(Simulator& sim, ConfigNode system, ConfigNode workload, const RunOptions& run)
      : sim_(sim), cfg_(read_node_config(system, run.mode)) {
    cfg_.partitioned = true;  // full mode: a partition per GPU
    NodeCollectiveParams p;
    const std::string kind = workload.get_enum(
        "collective", "reduce_scatter",
        {"reduce_scatter", "all_gather", "all_reduce", "ring-rs", "ring-ag", "ring-ar", "direct-rs", "direct-ag",
         "all-to-all"});
    p.kind = parse_collective_kind(kind);
    if (!workload.has("size")) workload.fail("size", "required key missing (per-GPU array size, e.g. 64MiB)");
    p.array_bytes = workload.get_bytes("size", 0, 1, 1ULL << 40);
    p.element_bytes = static_cast<std::uint32_t>(workload.get_bytes("element_size", p.element_bytes, 1, 64));
    p.engine = workload.get_enum("implementation", "cu", {"cu", "dma"}) == "cu" ? CollectiveEngine::kCu
                                                                              : CollectiveEngine::kDma;
    p.cus = static_cast<std::uint32_t>(workload.get_uint("cus", 0, 0, cfg_.gpu.num_cus));
    p.channels = static_cast<std::uint32_t>(workload.get_uint("channels", 0, 0, 4096));
    p.pipeline = read_channel_pipeline(workload, cfg_.gpu.memory.hbm.value_granule);
    const std::string functional = workload.get_enum("functional", "auto", {"auto", "values", "checksum", "off"});
    const std::uint64_t values_limit = workload.get_bytes("values_limit", 16ULL << 20, 0, 1ULL << 40);
    p.values = functional == "values" ||
               ((functional == "auto" || functional == "checksum") && p.array_bytes <= values_limit);
    p.seed = run.seed;
    workload.finish();

    const std::uint32_t simulated = cfg_.mode == NetMode::kFull ? cfg_.num_gpus : 1;
    HostMemoryEstimate need;
    estimate_host_memory(cfg_.gpu, simulated, need);
    // Values checked: a word per value granule in the input, the output and in flight.
    if (p.values)
      need.add("workload.size", fmt::format("the values checked on {} GPU{}", simulated, simulated == 1 ? "" : "s"),
               std::uint64_t{simulated} * 3 * (p.array_bytes / cfg_.gpu.memory.hbm.value_granule), 8);
    run.check_host_memory(need);
    node_.emplace(sim, cfg_);
    try {
      coll_.emplace(*node_, p);
    } catch (const ConfigError&) {
      throw;
    } catch (const WgDoesNotFit&) {
      throw;  // names the system key itself
    } catch (const UserError& e) {
      workload.fail("size", e.what());
    }
  }

  std::string validated() const override {
    const NodeCollectiveParams& p = coll_->params();
    return fmt::format("ok: {} ({}) of {} B per GPU on {} GPUs ({} mode)\n", to_string(p.kind), to_string(p.engine),
                       p.array_bytes, cfg_.num_gpus, to_string(cfg_.mode));
  }

  ExperimentResult run(Tick max_time) override {
    coll_->preload();
    coll_->start_all();
    const Simulator::StopReason stop = sim_.run(max_time);
    if (!coll_->all_done()) {
      if (stop == Simulator::StopReason::kTimeLimit)
        throw SimulationError(
            fmt::format("run.max_time ({}) reached before the collective finished", to_string(max_time)));
      throw SimulationError("the collective did not finish although nothing was left to simulate");
    }
    std::string error;
    const std::uint64_t checked = coll_->verify(error);
    if (!error.empty()) throw SimulationError("functional check failed: " + error);

    const NodeCollectiveParams& p = coll_->params();
    ExperimentResult out;
    out.label = "collective";
    out.json = coll_->results(checked);
    const Tick end(out.json["time_ps"].get<std::uint64_t>());
    const Tick bound = coll_->link_bound();
    const double algbw = out.json["algbw_GBps"].get<double>();
    const double busbw = out.json["busbw_GBps"].get<double>();
    out.summary = fmt::format(
        "{} ({}-based) of {} B per GPU on {} GPUs ({}, {:.1f} GB/s per direction, {} latency; {} mode)\n"
        "  channels           {}{}\n"
        "  time               {}\n"
        "  link bound         {}  (simulated {:+.2f}%)\n"
        "  algorithm bw       {:.2f} GB/s\n"
        "  bus bw             {:.2f} GB/s\n"
        "  DRAM per GPU       {:.1f} MB read, {:.1f} MB written\n"
        "  functional check   {}\n",
        to_string(p.kind), to_string(p.engine), p.array_bytes, cfg_.num_gpus, cfg_.net.topology,
        static_cast<double>(cfg_.net.link.bandwidth.bytes_per_second()) / 1e9, to_string(cfg_.net.link.latency),
        to_string(cfg_.mode), coll_->channels(),
        p.engine == CollectiveEngine::kCu && p.kind.algorithm == CollectiveAlgorithm::kRing ? fmt::format(", protocol {}", to_string(coll_->protocol()))
                                                             : std::string(),
        to_string(end), to_string(bound),
        (static_cast<double>(end.ps()) / static_cast<double>(bound.ps()) - 1.0) * 100.0, algbw, busbw,
        out.json["dram_read_bytes_per_gpu"].get<double>() / 1e6,
        (out.json["dram_write_bytes_per_gpu"].get<double>() + out.json["dram_update_bytes_per_gpu"].get<double>()) /
            1e6,
        p.values ? fmt::format("passed ({} words)", checked) : std::string("not run (array above values_limit)"));
    out.metrics = {
        {"collective", std::string(to_string(p.kind))},
        {"implementation", to_string(p.engine)},
        {"protocol", std::string(to_string(coll_->protocol()))},
        {"num_gpus", std::to_string(cfg_.num_gpus)},
        {"array_bytes", std::to_string(p.array_bytes)},
        {"time_ps", std::to_string(end.ps())},
        {"analytical_ps", std::to_string(bound.ps())},
        {"algbw_GBps", fmt::format("{:.4f}", algbw)},
        {"busbw_GBps", fmt::format("{:.4f}", busbw)},
        {"functional_check", p.values ? "passed" : "not run"},
    };
    return out;
  }

 private:
  Simulator& sim_;
  NodeConfig cfg_;
  std::optional<Node> node_;
  std::optional<NodeCollective> coll_;
};

// The first slice's ring engine on idealized memories (systems without `gpu:`).
class IdealRingExperiment final : public Experiment {
 public:
  IdealRingExperiment(Simulator& sim, ConfigNode system, ConfigNode workload, const RunOptions& run)
      : sys_(read_collective_system(system)), wl_(read_collective_workload(workload)) {
    HostMemoryEstimate need;
    CollectiveSystem::estimate_host_memory(sys_, wl_, need);
    run.check_host_memory(need);
    model_.emplace(sim, sys_, wl_);
  }

  std::string validated() const override {
    return fmt::format("ok: {} GPUs, {} of {} per GPU\n", sys_.num_gpus, to_string(wl_.op), wl_.array_bytes);
  }

  ExperimentResult run(Tick max_time) override {
    const CollectiveResult r = model_->run(max_time);
    ExperimentResult out;
    out.label = "collective";
    out.json = r.json;
    const double dev = r.analytical.ps() ? (static_cast<double>(r.time.ps()) / static_cast<double>(r.analytical.ps()) - 1.0) * 100.0
                                         : 0.0;
    out.summary = fmt::format(
        "ring {} of {} per GPU on {} GPUs ({} per direction, {} latency)\n"
        "  time               {}\n"
        "  analytical         {}  ((N-1)/N*S/B + (N-1)*latency; simulated {:+.2f}%)\n"
        "  algorithm bw       {:.2f} GB/s\n"
        "  bus bw             {:.2f} GB/s\n"
        "  functional check   passed ({} blocks, {})\n",
        to_string(wl_.op), wl_.array_bytes, sys_.num_gpus,
        fmt::format("{:.1f} GB/s", static_cast<double>(sys_.net.link.bandwidth.bytes_per_second()) / 1e9),
        to_string(sys_.net.link.latency), to_string(r.time), to_string(r.analytical), dev, r.algbw_gbps,
        r.busbw_gbps, r.blocks_checked, r.mode == FunctionalMode::kValues ? "element values" : "block checksums");
    out.metrics = {
        {"collective", to_string(wl_.op)},
        {"num_gpus", std::to_string(sys_.num_gpus)},
        {"array_bytes", std::to_string(wl_.array_bytes)},
        {"time_ps", std::to_string(r.time.ps())},
        {"analytical_ps", std::to_string(r.analytical.ps())},
        {"time_vs_analytical",
         fmt::format("{:.6f}", r.analytical.ps() ? static_cast<double>(r.time.ps()) / static_cast<double>(r.analytical.ps())
                                                 : 0.0)},
        {"algbw_GBps", fmt::format("{:.4f}", r.algbw_gbps)},
        {"busbw_GBps", fmt::format("{:.4f}", r.busbw_gbps)},
        {"functional_check", r.functional_ok ? "passed" : "failed"},
    };
    return out;
  }

 private:
  CollectiveSystemConfig sys_;
  CollectiveWorkload wl_;
  std::optional<CollectiveSystem> model_;
};

}  // namespace

T3SIM_REGISTER(workload_kinds, "collective",
               "one collective on a node: CU-based ring / direct RS, AG, AR and all-to-all, or DMA-based "
               "all-gather / all-to-all",
               [](Simulator& sim, ConfigNode system, ConfigNode workload,
                  const RunOptions& run) -> std::unique_ptr<Experiment> {
                 reject_configurations(run);
                 if (system.has("gpu")) return std::make_unique<NodeCollectiveExperiment>(sim, system, workload, run);
                 return std::make_unique<IdealRingExperiment>(sim, system, workload, run);
               })

}  // namespace t3sim
