// kind: c3 — a GEMM and an independent collective on every GPU of a node, under a
// registered C3 configuration (models/system/c3/c3_system.h; seed 003).
//
//   kind: c3
//   preset: mb1_896M          # seed 003 Table II: the GEMM tag and the collective size
//   gemm: {tag: cb1}          # or preset (T3 Table 2) or m, n, k; plus kind gemm's kernel keys
//   collective: {collective: all_gather, size: 896MiB, channels: 64}
//   order: gemm-first         # c3: gemm-first (c3_base) | comm-first (c3_sp)
//   comm_cus: 0               # CUs reserved for the communication stream
//   scale: 1                  # divide M and the collective's size by this
//   isolated: true            # false: the concurrent run alone (no isolated runs, so no
//                             # slowdowns, ideal or speedups)

#include <optional>

#include <fmt/format.h>

#include "collective/i_collective_algorithm.h"
#include "models/system/configuration.h"
#include "models/system/c3/c3_presets.h"
#include "models/system/c3/c3_system.h"
#include "models/system/experiment.h"
#include "models/system/result_store.h"
#include "models/system/sublayer_system.h"  // read_channel_pipeline
#include "sim/config.h"
#include "sim/error.h"

namespace t3sim {
namespace {

// `scale: auto` keeps at least this many waves of GEMM WGs (seed 003's GEMMs fill an
// MI300X 3.4 (cb1) to 88 (mb2) times over; a GEMM that no longer fills the GPU would
// leave CUs to the collective that the full one does not).
constexpr double kC3AutoScaleWaves = 8.0;

C3Spec read_c3_spec(ConfigNode workload, const NodeConfig& node, std::uint64_t seed) {
  C3Spec spec;
  const GpuConfig& gpu = node.gpu;
  ConfigNode gemm = workload.child("gemm");
  ConfigNode coll = workload.child("collective");

  std::optional<C3Case> preset;
  if (workload.has("preset")) {
    try {
      preset = find_c3_case(workload.get_string("preset", ""));
    } catch (const UserError& e) {
      workload.fail("preset", e.what());
    }
    spec.preset = preset->name;
    spec.paper_taxonomy = preset->taxonomy;
    for (const char* key : {"tag", "m", "n", "k"}) {
      if (gemm.has(key))
        gemm.fail(key, fmt::format("the GEMM comes from preset {} ({}): give either the preset or the GEMM",
                                   preset->name, preset->gemm));
    }
    if (coll.has("size"))
      coll.fail("size", fmt::format("the size comes from preset {}: give either the preset or the size", preset->name));
  }
  if (gemm.has("trace"))
    gemm.fail("trace", "a C3 GEMM is generated: give tag (seed 003 Table I: cb1..cb5, mb1, mb2), preset (T3 Table 2) "
                       "or m, n, k");
  if (preset && gemm.has("preset"))
    gemm.fail("preset", fmt::format("the GEMM comes from preset {} ({}): give either the preset or the GEMM",
                                    preset->name, preset->gemm));
  if (gemm.has("cus"))
    gemm.fail("cus", "the GEMM's CUs follow the configuration: comm_cus reserves CUs for the collective");

  // scale: N, or auto (the largest power of two that leaves the GEMM kC3AutoScaleWaves
  // waves of WGs on this GPU and divides M and the collective's size).
  bool auto_scale = false;
  if (const ConfigValue* v = workload.has("scale") ? workload.raw("scale") : nullptr;
      v != nullptr && v->kind == ConfigValue::Kind::kScalar && v->scalar == "auto") {
    auto_scale = true;
  } else {
    spec.scale = static_cast<std::uint32_t>(workload.get_uint("scale", 1, 1, 1u << 20));
  }
  // The GEMM: a Table I tag (the case's, or gemm.tag) gives its size; otherwise kind
  // gemm's reader takes gemm.preset (a T3 Table 2 sub-layer's GEMM; its TP degree is
  // not the node's) or m, n, k.
  std::string tag;
  if (preset) {
    tag = preset->gemm;
  } else if (gemm.has("tag")) {
    tag = gemm.get_string("tag", "");
    try {
      (void)find_c3_gemm(tag);
    } catch (const UserError& e) {
      gemm.fail("tag", e.what());
    }
  }
  std::optional<GemmShape> tagged;
  if (!tag.empty()) {
    const C3Gemm& g = find_c3_gemm(tag);
    tagged = GemmShape{g.m, g.n, g.k};
  } else if (gemm.has("preset")) {
    for (const char* key : {"m", "n", "k"}) {
      if (gemm.has(key)) gemm.fail(key, "the GEMM comes from gemm.preset: give either the preset or the GEMM's size");
    }
    tag = gemm.get_string("preset", "");
  }
  std::uint64_t size = 0;
  bool size_is_output = false;
  if (preset) {
    size = preset->collective_bytes;
  } else {
    if (!coll.has("size"))
      coll.fail("size", "required key missing (the collective's per-GPU array, e.g. 896MiB, or gemm_output)");
    // gemm_output: the GEMM's M x N output (T3's sub-layers: the collective of that size).
    if (const ConfigValue* v = coll.raw("size"); v->kind == ConfigValue::Kind::kScalar && v->scalar == "gemm_output")
      size_is_output = true;
    else
      size = coll.get_bytes("size", 0, 1, 1ULL << 40);
  }
  spec.gemm = read_gemm_workload(gemm, gpu, tagged ? &*tagged : nullptr);  // unscaled: its kernel decides auto
  GemmShape shape{spec.gemm.params->m, spec.gemm.params->n, spec.gemm.params->k};
  if (size_is_output) size = shape.m * shape.n * spec.gemm.params->dtype_bytes;
  const std::uint32_t granule = gpu.memory.hbm.value_granule;
  if (auto_scale) {
    const GemmParams& g = *spec.gemm.params;
    const std::uint64_t slots = std::uint64_t{gpu.num_cus} * wgs_per_cu(gpu.cu, spec.gemm.trace.resources);
    auto waves = [&](std::uint64_t m) {
      return static_cast<double>((m + g.tile_m - 1) / g.tile_m * ((g.n + g.tile_n - 1) / g.tile_n)) /
             static_cast<double>(slots);
    };
    const std::uint64_t unit = std::uint64_t{node.num_gpus} * granule;  // equal chunks of whole granules
    while (shape.m % (2 * spec.scale) == 0 && size % (2 * spec.scale * unit) == 0 &&
           waves(shape.m / (2 * spec.scale)) >= kC3AutoScaleWaves)
      spec.scale *= 2;
  }
  if (shape.m % spec.scale != 0)
    workload.fail("scale", fmt::format("{} does not divide the GEMM's M ({})", spec.scale, shape.m));
  if (spec.scale > 1) {
    GemmParams g = *spec.gemm.params;
    g.m /= spec.scale;
    spec.gemm.trace = make_gemm_trace(g);
    spec.gemm.params = g;
    shape.m = g.m;
  }
  spec.gemm_label = fmt::format("{}{} x {} x {}", tag.empty() ? "" : tag + ": ", shape.m, shape.n, shape.k);

  // The collective: CU-based by the library's channel count; conccl derives its DMA one.
  NodeCollectiveParams& p = spec.collective;
  const std::string kind = coll.get_enum("collective", "all_gather", collective_kind_names());
  p.kind = parse_collective_kind(kind);
  if (size % spec.scale != 0)
    workload.fail("scale", fmt::format("{} does not divide the collective's size ({} B)", spec.scale, size));
  p.array_bytes = size / spec.scale;
  if (p.array_bytes % granule != 0)
    (preset ? workload : coll)
        .fail(preset ? "scale" : "size",
              fmt::format("{} B is not a whole number of {}-byte value granules{}", p.array_bytes, granule,
                          spec.scale > 1 ? fmt::format(" (the size divided by scale {})", spec.scale) : ""));
  p.element_bytes = spec.gemm.params->dtype_bytes;
  // The library's channel count even when the stream's CUs are reserved: RCCL launches
  // its channels whatever the CU mask (the dispatcher then fits them on the CUs given).
  p.channels = static_cast<std::uint32_t>(coll.get_uint("channels", gpu.collective_channels, 0, 4096));
  p.pipeline = read_channel_pipeline(coll, gpu.memory.hbm.value_granule);
  check_protocol_applies(coll, p.pipeline, p.kind);
  const std::string functional = coll.get_enum("functional", "auto", {"auto", "values", "off"});
  const std::uint64_t values_limit = coll.get_bytes("values_limit", 16ULL << 20, 0, 1ULL << 40);
  p.values = functional == "values" || (functional == "auto" && p.array_bytes <= values_limit);
  if (!p.values)
    spec.values_off = functional == "off" ? "collective.functional is off" : "collective above collective.values_limit";
  const std::uint64_t chunk_unit = std::uint64_t{node.num_gpus} * gpu.memory.hbm.value_granule;
  if (p.values && p.array_bytes % chunk_unit != 0) {
    if (functional == "values")
      coll.fail("functional", fmt::format("values needs the {} B array to split into {} equal chunks of whole "
                                          "{}-byte granules",
                                          p.array_bytes, node.num_gpus, gpu.memory.hbm.value_granule));
    p.values = false;
    spec.values_off = fmt::format("the {} B collective does not split into {} equal chunks of whole {}-byte granules",
                                  p.array_bytes, node.num_gpus, gpu.memory.hbm.value_granule);
  }
  p.seed = seed;
  coll.finish();

  spec.comm_first = workload.get_enum("order", "gemm-first", {"gemm-first", "comm-first"}) == "comm-first";
  spec.comm_cus = static_cast<std::uint32_t>(workload.get_uint("comm_cus", 0, 0, gpu.num_cus - 1));
  spec.isolated = workload.get_bool("isolated", true);
  workload.finish();
  return spec;
}

class C3Experiment final : public Experiment {
 public:
  C3Experiment(Simulator& sim, ConfigNode system, ConfigNode workload, const RunOptions& run)
      : configuration_(run.configuration.empty() ? "c3" : run.configuration) {
    const std::vector<std::string> names = configuration_names(ConfigurationFamily::kC3);
    if (std::find(names.begin(), names.end(), configuration_) == names.end())
      run.reject_configuration(fmt::format("kind c3 takes one of the C3 configurations ({}), not '{}'",
                                           fmt::join(names, ", "), configuration_));
    node_ = read_node_config(system, run.mode);
    if (node_.gpu.memory.model == MemoryModel::kIdeal)
      system.child("memory").fail("model", "C3's interference is the memory system's (L2, controllers): it needs "
                                           "model: hbm, not ideal");
    node_.partitioned = true;  // full mode: a partition per GPU
    C3Spec spec = read_c3_spec(workload, node_, run.seed);
    // What the configuration is (concurrent, on DMA engines) decides which keys make sense.
    const auto configuration = make_configuration(configuration_, ConfigurationFamily::kC3);
    if (!spec.isolated && configuration->procedure() != Procedure::kOverlapped)
      workload.fail("isolated", fmt::format("false keeps only a concurrent run (c3, conccl); configuration {} is "
                                            "made of the isolated runs",
                                            configuration_));
    if (run.sampling.enabled && node_.mode != NetMode::kHomogeneous)
      run.reject_sampling("C3 samples in homogeneous mode only (one simulated GPU, its peers mirrored; in full mode "
                          "each GPU would skip on its own): set run.mode: homogeneous");
    spec.sampling = run.sampling;
    sampling_ = run.sampling.enabled;
    HostMemoryEstimate need;
    const std::uint32_t simulated = node_.simulated_gpus();
    estimate_host_memory(node_.gpu, simulated, need);
    if (spec.collective.values)
      need.add("workload.collective.size",
               fmt::format("the values checked on {} GPU{}", simulated, simulated == 1 ? "" : "s"),
               std::uint64_t{simulated} * 3 * (spec.collective.array_bytes / node_.gpu.memory.hbm.value_granule), 8);
    run.check_host_memory(need);
    // The DMA collective copies only: say so at the key, before anything is built.
    if (const std::optional<std::uint32_t> reserved = configuration->launch().reserved_cus;
        reserved && *reserved >= node_.gpu.num_cus)
      run.reject_configuration(fmt::format("{} reserves {} CUs for the collective, and the GPU has {} "
                                           "(system.gpu.num_cus): the GEMM would have none",
                                           configuration_, *reserved, node_.gpu.num_cus));
    const bool dma = configuration->launch().collective_on_dma;
    const CollectiveKind k = spec.collective.kind;
    if (dma && !k.algorithm().has_copy_engine_form())
      workload.child("collective")
          .fail("collective", fmt::format("{} runs the collective on DMA engines, which copy and do not reduce: "
                                          "all_gather or all_to_all, not {}",
                                          configuration_, to_string(k)));
    std::string cache_key;
    if (run.isolated_store && spec.isolated) {
      // Everything the isolated run depends on; order and comm_cus only shape the
      // concurrent run (the isolated collective runs on any CU).
      const SamplingConfig& sc = spec.sampling;
      cache_key = chained_run_key("c3 isolated v1", to_string(node_.mode), run.seed,
                                  {fmt::format("dma {}", dma), fmt::format("sampling {} {} {} {} {}", sc.enabled,
                                                                           sc.window, sc.tolerance, sc.tail,
                                                                           sc.period.ps())},
                                  system, workload, {"order", "comm_cus"});
    }
    try {
      model_.emplace(sim, node_, std::move(spec), configuration_, run.seed);
      if (!cache_key.empty()) {
        store_ = run.isolated_store;  // kept for as long as the model
        model_->set_isolated_store(store_.get(), cache_key);
      }
    } catch (const ConfigError&) {
      throw;
    } catch (const WgDoesNotFit&) {
      throw;  // names the system key itself
    } catch (const CollectiveParamError& e) {
      ConfigNode section = workload.child("collective");
      section.fail(collective_workload_key(e, section, "collective"), e.what());
    } catch (const UserError& e) {
      workload.child("collective").fail("collective", e.what());  // a collective the node cannot run
    }
  }

  std::string validated() const override {
    const C3Spec& s = model_->spec();
    return fmt::format("ok: C3 {} with a {} of {} B per GPU on {} GPUs ({} mode), configuration {}\n", s.gemm_label,
                       to_string(s.collective.kind), s.collective.array_bytes, node_.num_gpus, to_string(node_.mode),
                       configuration_);
  }

  // The GEMM and the collective on every simulated GPU, once concurrently and once
  // alone each (the isolated runs, unless workload.isolated is off or run.isolated_cache
  // holds them).
  WorkEstimate work() const override {
    const C3Spec& s = model_->spec();
    const std::uint32_t simulated = node_.simulated_gpus();
    WorkEstimate w;
    w.kernel_bytes = trace_access_bytes(s.gemm.trace) * simulated;
    w.communication_bytes = collective_work_bytes(s.collective.kind, s.collective.array_bytes, simulated);
    if (s.isolated) w = w.scaled(2.0);
    if (sampling_) w.caveat = "an upper bound: run.sampling skips the steady stages";
    return w;
  }

  ExperimentResult run(Tick max_time) override {
    const C3Result r = model_->run(max_time);
    ExperimentResult out;
    out.label = configuration_;
    out.json = r.json;
    out.summary = model_->summary(r);
    out.extra_events = r.extra_events;
    const C3Spec& s = model_->spec();
    // Without isolated runs the columns that need them stay empty.
    auto iso = [&](std::string v) { return r.isolated ? v : std::string(); };
    out.metrics = {
        {"configuration", configuration_},
        {"preset", s.preset},
        {"gemm", s.gemm_label},
        {"collective", std::string(to_string(s.collective.kind))},
        {"collective_bytes", std::to_string(s.collective.array_bytes)},
        {"order", s.comm_first ? "comm-first" : "gemm-first"},
        {"comm_cus", std::to_string(s.comm_cus)},
        {"scale", std::to_string(s.scale)},
        {"mode", to_string(node_.mode)},
        {"num_gpus", std::to_string(node_.num_gpus)},
        {"time_ps", std::to_string(r.time.ps())},
        {"isolated_gemm_ps", iso(std::to_string(r.isolated_gemm.ps()))},
        {"isolated_collective_ps", iso(std::to_string(r.isolated_collective.ps()))},
        {"isolated_dma_collective_ps",
         iso(std::to_string(r.isolated_dma_collective ? r.isolated_dma_collective->ps() : 0))},
        {"gemm_ps", std::to_string(r.gemm.time().ps())},
        {"collective_ps", std::to_string(r.collective.time().ps())},
        {"gemm_slowdown", iso(fmt::format("{:.6f}", r.gemm_slowdown))},
        {"collective_slowdown", iso(fmt::format("{:.6f}", r.collective_slowdown))},
        {"ideal_speedup", iso(fmt::format("{:.6f}", r.ideal_speedup))},
        {"speedup", iso(fmt::format("{:.6f}", r.speedup))},
        {"fraction_of_ideal", iso(fmt::format("{:.6f}", r.fraction_of_ideal))},
        {"taxonomy", r.taxonomy},
        {"paper_taxonomy", s.paper_taxonomy},
        {"gemm_dram_read_bytes", std::to_string(r.gemm.dram_read)},
        {"gemm_dram_write_bytes", std::to_string(r.gemm.dram_write)},
        {"gemm_l2_bytes", std::to_string(r.gemm.l2_read + r.gemm.l2_write)},
        {"collective_dram_read_bytes", std::to_string(r.collective.dram_read)},
        {"collective_dram_write_bytes", std::to_string(r.collective.dram_write)},
        {"collective_l2_bytes", std::to_string(r.collective.l2_read + r.collective.l2_write)},
        {"functional_check", r.values_checked ? "passed" : "not run"},
    };
    if (sampling_) {
      out.metrics.emplace_back("sampled_stages",
                               std::to_string(r.isolated_sampling.skipped_stages + r.run_sampling.skipped_stages));
      out.metrics.emplace_back("sampled_ps",
                               std::to_string((r.isolated_sampling.skipped_time + r.run_sampling.skipped_time).ps()));
      out.metrics.emplace_back("sampled_periods",
                               std::to_string(r.isolated_sampling.skipped_periods + r.run_sampling.skipped_periods));
      out.summary += fmt::format("  sampling           skipped: {} GEMM stages and {} periods of DMA copies alone ({}), "
                                 "{} and {} in the run ({}); values not computed for them\n",
                                 r.isolated_sampling.skipped_stages, r.isolated_sampling.skipped_periods,
                                 to_string(r.isolated_sampling.skipped_time), r.run_sampling.skipped_stages,
                                 r.run_sampling.skipped_periods, to_string(r.run_sampling.skipped_time));
    }
    return out;
  }
  bool samples() const override { return true; }

 private:
  std::string configuration_;
  NodeConfig node_;
  std::shared_ptr<ResultStore> store_;  // before model_: it outlives the model
  std::optional<C3System> model_;
  bool sampling_ = false;
};

}  // namespace

std::unique_ptr<Experiment> make_c3_experiment(Simulator& sim, ConfigNode system, ConfigNode workload,
                                               const RunOptions& run) {
  return std::make_unique<C3Experiment>(sim, system, workload, run);
}

T3SIM_REGISTER(workload_kinds, "c3",
               "a GEMM and an independent collective on every GPU of a node, sequential, concurrent (c3), on DMA "
               "engines (conccl) or ideal (seed 003)",
               make_c3_experiment)

}  // namespace t3sim
