// kind: collective — one collective on a node of full GPU models, CU- or DMA-based
// (models/collectives/node_collective.h). A system without `gpu:` has the default
// GPU (T3 Table 1); `memory.model: ideal` (configs/systems/ring8.yaml) gives it a
// memory that never bounds the links, for agreement with the link-bound formula.

#include <optional>

#include <fmt/format.h>

#include "collective/i_collective_algorithm.h"
#include "models/collectives/node_collective.h"
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

class CollectiveExperiment final : public Experiment {
 public:
  CollectiveExperiment(Simulator& sim, ConfigNode system, ConfigNode workload, const RunOptions& run)
      : sim_(sim), cfg_(read_node_config(system, run.mode)) {
    cfg_.partitioned = true;  // full mode: a partition per GPU
    NodeCollectiveParams p;
    const std::string kind = workload.get_enum("collective", "reduce_scatter", collective_kind_names());
    p.kind = parse_collective_kind(kind);
    if (!workload.has("size")) workload.fail("size", "required key missing (per-GPU array size, e.g. 64MiB)");
    p.array_bytes = workload.get_bytes("size", 0, 1, 1ULL << 40);
    p.element_bytes = static_cast<std::uint32_t>(workload.get_bytes("element_size", p.element_bytes, 1, 64));
    p.engine = workload.get_enum("implementation", "cu", {"cu", "dma"}) == "cu" ? CollectiveEngine::kCu
                                                                              : CollectiveEngine::kDma;
    p.cus = static_cast<std::uint32_t>(workload.get_uint("cus", 0, 0, cfg_.gpu.num_cus));
    p.channels = static_cast<std::uint32_t>(workload.get_uint("channels", 0, 0, 4096));
    p.pipeline = read_channel_pipeline(workload, cfg_.gpu.memory.hbm.value_granule);
    check_protocol_applies(workload, p.pipeline, p.kind);
    // Out of place, an all-gather also copies its own chunk into the output (the ring
    // kernels model it); a reduce-scatter or an all-reduce reads its input and writes
    // its result either way (nothing changes), and an all-to-all always writes its own
    // output. An all-gather without the ring pipeline (direct) and the copy-engine ones do
    // not model the copy.
    p.in_place = workload.get_bool("in_place", true);
    const bool gather_without_ring = p.kind.op() == CollectiveOp::kAllGather && !p.kind.uses_rings();
    if (!p.in_place && (gather_without_ring || p.engine == CollectiveEngine::kDma))
      workload.fail("in_place", fmt::format("expected true for the {} {}: out of place (false) is modelled for the "
                                            "ring kernels only",
                                            to_string(p.engine), kind));
    const std::string functional = workload.get_enum("functional", "auto", {"auto", "values", "off"});
    const std::uint64_t values_limit = workload.get_bytes("values_limit", 16ULL << 20, 0, 1ULL << 40);
    p.values = functional == "values" || (functional == "auto" && p.array_bytes <= values_limit);
    values_off_ = functional == "off" ? "workload.functional is off" : "array above workload.values_limit";
    p.seed = run.seed;
    workload.finish();
    // run.sampling (models/gpu/stage_sampler.h): a DMA collective's copies are probed by
    // time and skipped once steady. A CU collective is a kernel of persistent WGs whose
    // progress lives in its trace loops and peer flags: nothing of it can be skipped.
    if (run.sampling.enabled) {
      if (cfg_.mode != NetMode::kHomogeneous)
        run.reject_sampling("collectives sample in homogeneous mode only (one simulated GPU, its peers mirrored)");
      if (p.engine != CollectiveEngine::kDma)
        run.reject_sampling("a CU collective cannot be sampled (its persistent WGs' progress lives in trace loops "
                            "and peer flags); DMA collectives (workload.implementation: dma) can");
      if (p.values)
        run.reject_sampling("skipped copies carry no values: set workload.functional: off (or a size above "
                            "workload.values_limit)");
      sampling_ = run.sampling;
    }

    const std::uint32_t simulated = cfg_.simulated_gpus();
    HostMemoryEstimate need;
    estimate_host_memory(cfg_.gpu, simulated, need);
    // Values checked: a word per value granule in the input, the output and in flight.
    if (p.values)
      need.add("workload.size", fmt::format("the values checked on {} GPU{}", simulated, simulated == 1 ? "" : "s"),
               std::uint64_t{simulated} * 3 * (p.array_bytes / cfg_.gpu.memory.hbm.value_granule), 8);
    run.check_host_memory(need);
    node_.emplace(sim, cfg_);
    if (sampling_.enabled) node_->gpu(0).enable_sampling(sampling_);
    try {
      coll_.emplace(*node_, p);
    } catch (const ConfigError&) {
      throw;
    } catch (const WgDoesNotFit&) {
      throw;  // names the system key itself
    } catch (const CollectiveParamError& e) {
      workload.fail(collective_workload_key(e, workload, "size"), e.what());
    } catch (const UserError& e) {
      workload.fail("size", e.what());
    }
  }

  std::string validated() const override {
    const NodeCollectiveParams& p = coll_->params();
    return fmt::format("ok: {} ({}) of {} B per GPU on {} GPUs ({} mode)\n", to_string(p.kind), to_string(p.engine),
                       p.array_bytes, cfg_.num_gpus, to_string(cfg_.mode));
  }

  WorkEstimate work() const override {
    const NodeCollectiveParams& p = coll_->params();
    WorkEstimate w;
    const double bytes = collective_work_bytes(p.kind, p.array_bytes, cfg_.simulated_gpus());
    if (cfg_.gpu.memory.model == MemoryModel::kIdeal)
      w.ideal_memory_packets = bytes / static_cast<double>(cfg_.net.packet_bytes);
    else
      w.communication_bytes = bytes;
    if (sampling_.enabled) w.caveat = "an upper bound: run.sampling skips steady periods of copies";
    return w;
  }

  ExperimentResult run(Tick max_time) override {
    coll_->preload();
    coll_->start_all();
    const Simulator::StopReason stop = sim_.run(max_time);
    if (!coll_->all_done()) {
      if (stop == Simulator::StopReason::kTimeLimit) {
        std::string what =
            fmt::format("run.max_time ({}) reached before the collective finished; in flight:", to_string(max_time));
        for (const std::string& line : sim_.in_flight_report()) what += "\n  " + line;
        throw SimulationError(what);
      }
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
        p.engine == CollectiveEngine::kCu && p.kind.uses_rings() ? fmt::format(", protocol {}", to_string(coll_->protocol()))
                                                             : std::string(),
        to_string(end), to_string(bound),
        (static_cast<double>(end.ps()) / static_cast<double>(bound.ps()) - 1.0) * 100.0, algbw, busbw,
        out.json["dram_read_bytes_per_gpu"].get<double>() / 1e6,
        (out.json["dram_write_bytes_per_gpu"].get<double>() + out.json["dram_update_bytes_per_gpu"].get<double>()) /
            1e6,
        p.values ? fmt::format("passed ({} words)", checked) : fmt::format("not run ({})", values_off_));
    out.metrics = {
        {"collective", std::string(to_string(p.kind))},
        {"implementation", to_string(p.engine)},
        {"protocol", std::string(to_string(coll_->protocol()))},
        {"num_gpus", std::to_string(cfg_.num_gpus)},
        {"array_bytes", std::to_string(p.array_bytes)},
        {"time_ps", std::to_string(end.ps())},
        {"analytical_ps", std::to_string(bound.ps())},
        {"time_vs_analytical",
         fmt::format("{:.6f}", bound.ps() ? static_cast<double>(end.ps()) / static_cast<double>(bound.ps()) : 0.0)},
        {"algbw_GBps", fmt::format("{:.4f}", algbw)},
        {"busbw_GBps", fmt::format("{:.4f}", busbw)},
        {"functional_check", p.values ? "passed" : "not run"},
    };
    if (sampling_.enabled) {
      const SamplingReport& r = node_->gpu(0).sampling_report();
      out.json["sampling"] = sampling_json(sampling_, r);
      out.metrics.emplace_back("sampled_periods", std::to_string(r.skipped_periods));
      out.metrics.emplace_back("sampled_ps", std::to_string(r.skipped_time.ps()));
      out.summary += fmt::format("  sampling           {} periods of copies skipped ({}); values not computed\n",
                                 r.skipped_periods, to_string(r.skipped_time));
    }
    return out;
  }
  bool samples() const override { return true; }

 private:
  Simulator& sim_;
  NodeConfig cfg_;
  SamplingConfig sampling_;  // off unless run.sampling (DMA collectives in homogeneous mode)
  std::string values_off_;   // why the functional check does not run (the summary line)
  std::optional<Node> node_;
  std::optional<NodeCollective> coll_;
};

}  // namespace

T3SIM_REGISTER(workload_kinds, "collective",
               "one collective on a node: a registered algorithm's CU kernels (ring / direct RS, AG, AR, "
               "halving-doubling AR, all-to-all), or DMA-based all-gather / all-to-all",
               [](Simulator& sim, ConfigNode system, ConfigNode workload,
                  const RunOptions& run) -> std::unique_ptr<Experiment> {
                 reject_configurations(run);
                 return std::make_unique<CollectiveExperiment>(sim, system, workload, run);
               })

}  // namespace t3sim
