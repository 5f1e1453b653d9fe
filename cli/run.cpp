#include "cli/run.h"

#include <chrono>

#include <fmt/format.h>

#include "models/system/collective_system.h"
#include "models/system/gemm_system.h"
#include "models/system/memory_system.h"
#include "sim/config.h"
#include "sim/error.h"
#include "sim/output.h"
#include "sim/simulator.h"
#include "sim/version.h"

namespace t3sim {

namespace {

// What every workload kind shares once the configuration is read.
struct RunContext {
  const RunRequest& req;
  ResolvedConfig& resolved;
  std::uint64_t seed;
  WatchdogConfig watchdog;
  Tick max_time;
  std::uint64_t timeline_max;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// results.json, stats.csv, timeline.json and run_info.json, if an output directory was given.
void write_outputs(const RunContext& ctx, const std::string& configuration, const nlohmann::json& results,
                   Simulator& sim, double wall) {
  if (!ctx.req.output_dir) return;
  RunMetadata meta;
  meta.configuration = configuration;
  meta.seed = ctx.seed;
  meta.resolved_config = ctx.resolved.json();
  meta.wall_seconds = wall;
  meta.events = sim.events().dispatched();
  meta.simulated_time = sim.now();
  meta.command_line = fmt::format("system={} workload={}", ctx.req.system.string(), ctx.req.workload.string());
  write_run_outputs(*ctx.req.output_dir, meta, results, sim.stats(), sim.timeline(), sim.now());
}

// kind: memory — traffic generators against one GPU's memory system.
RunOutcome run_memory(const RunContext& ctx, ConfigNode system, ConfigNode workload) {
  const RunRequest& req = ctx.req;
  const GpuMemoryConfig mem_cfg = read_gpu_memory_config(system.child("memory"));
  // A memory-only run uses the GPU's memory; the rest of the system file (GPU count,
  // network, engines) describes the node and is accepted but not simulated.
  for (const std::string& key : system.keys()) {
    if (key != "memory") (void)system.raw(key);
  }
  system.finish();
  const MemoryWorkload wl = read_memory_workload(workload, mem_cfg.hbm.value_granule);

  Simulator sim(ctx.seed, ctx.watchdog);
  if (req.output_dir && req.timeline && ctx.timeline_max > 0) sim.timeline().enable(ctx.timeline_max);
  MemorySystem model(sim, mem_cfg, wl);
  RunOutcome out;
  if (req.validate_only) {
    out.summary = fmt::format("ok: memory-only workload, {} generators, {} x {} channels, arbiter {}\n",
                              wl.generators.size(), mem_cfg.hbm.standard, mem_cfg.hbm.channels,
                              mem_cfg.mc.arbiter.type);
    return out;
  }
  const auto wall_start = std::chrono::steady_clock::now();
  const MemoryResult r = model.run(ctx.max_time);
  const double wall = seconds_since(wall_start);
  const std::uint64_t events = sim.events().dispatched();
  if (r.values_checked && !r.values.ok()) {
    throw SimulationError(fmt::format("functional check failed: {} of {} granules differ; first: {}",
                                      r.values.mismatches, r.values.checked,
                                      r.values.messages.empty() ? "" : r.values.messages.front()));
  }
  write_outputs(ctx, "memory", r.json, sim, wall);
  out.summary = fmt::format("t3sim {} ({})\n", kVersion, kGitRevision) + model.summary(r) +
                fmt::format("simulation: {} events in {:.3f} s ({:.2f} M events/s)\n", events, wall,
                            wall > 0 ? static_cast<double>(events) / wall / 1e6 : 0.0);
  if (req.output_dir) out.summary += fmt::format("outputs: {}\n", req.output_dir->string());

  out.metrics = {
      {"time_ps", std::to_string(r.simulated.ps())},
      {"dram_bandwidth_GBps", fmt::format("{:.4f}", r.dram_bandwidth / 1e9)},
      {"dram_utilization", fmt::format("{:.6f}", r.dram_bandwidth / r.peak_bandwidth)},
      {"row_hit_rate", fmt::format("{:.6f}", r.row_hit_rate)},
  };
  for (int s = 0; s < kNumStreams; ++s) {
    const std::string name = to_string(static_cast<Stream>(s));
    out.metrics.emplace_back(name + "_mc_latency_mean_ns", fmt::format("{:.3f}", r.streams[s].latency_mean_ns));
    out.metrics.emplace_back(name + "_mc_latency_p99_ns", fmt::format("{:.1f}", r.streams[s].latency_p99_ns));
  }
  for (std::size_t i = 0; i < wl.generators.size(); ++i) {
    const auto& g = r.json["generators"][i];
    const std::string name = wl.generators[i].name;
    out.metrics.emplace_back(name + "_GBps", fmt::format("{:.4f}", g["bandwidth_GBps"].get<double>()));
    out.metrics.emplace_back(name + "_latency_mean_ns", fmt::format("{:.3f}", g["latency_mean_ns"].get<double>()));
    out.metrics.emplace_back(name + "_latency_p99_ns", fmt::format("{:.1f}", g["latency_p99_ns"].get<double>()));
  }
  out.metrics.emplace_back("functional_check", r.values_checked ? "passed" : "not run");
  out.metrics.emplace_back("events", std::to_string(events));
  return out;
}

// kind: gemm — one GEMM kernel on one GPU (CUs + memory system).
RunOutcome run_gemm(const RunContext& ctx, ConfigNode system, ConfigNode workload) {
  const RunRequest& req = ctx.req;
  const GpuConfig gpu_cfg = read_gpu_config(system.child("gpu"), system.child("memory"));
  for (const std::string& key : system.keys()) {
    if (key != "memory" && key != "gpu") (void)system.raw(key);  // the node around it is not simulated
  }
  system.finish();
  GemmWorkload wl = read_gemm_workload(workload, gpu_cfg);

  Simulator sim(ctx.seed, ctx.watchdog);
  if (req.output_dir && req.timeline && ctx.timeline_max > 0) sim.timeline().enable(ctx.timeline_max);
  GemmSystem model(sim, gpu_cfg, std::move(wl));
  RunOutcome out;
  if (req.validate_only) {
    out.summary = fmt::format("ok: GEMM on {} CUs\n", gpu_cfg.num_cus);
    return out;
  }
  const auto wall_start = std::chrono::steady_clock::now();
  const GemmResult r = model.run(ctx.max_time);
  const double wall = seconds_since(wall_start);
  const std::uint64_t events = sim.events().dispatched();
  write_outputs(ctx, "gemm", r.json, sim, wall);
  out.summary = fmt::format("t3sim {} ({})\n", kVersion, kGitRevision) + model.summary(r) +
                fmt::format("  simulation         {} events in {:.3f} s ({:.2f} M events/s)\n", events, wall,
                            wall > 0 ? static_cast<double>(events) / wall / 1e6 : 0.0);
  if (req.output_dir) out.summary += fmt::format("  outputs            {}\n", req.output_dir->string());
  out.metrics = {
      {"time_ps", std::to_string(r.time.ps())},
      {"tflops", fmt::format("{:.4f}", r.tflops)},
      {"stages", std::to_string(r.stages)},
      {"wgs", std::to_string(r.wgs)},
      {"dram_read_bytes", std::to_string(r.dram_read_bytes)},
      {"dram_write_bytes", std::to_string(r.dram_write_bytes)},
      {"dram_update_bytes", std::to_string(r.dram_update_bytes)},
      {"l2_hit_rate", fmt::format("{:.6f}", r.l2_hit_rate)},
      {"events", std::to_string(events)},
  };
  return out;
}

}  // namespace

RunOutcome run_simulation(const RunRequest& req) {
  // ---- configuration: system and workload files under their sections, then overrides
  ConfigTree tree;
  tree.set_section("system", ConfigTree::load_file(req.system));
  tree.set_section("workload", ConfigTree::load_file(req.workload));
  if (!req.configuration.empty())
    tree.set("run.config", req.configuration, SourceLocation{"--config", 0, 0});
  for (const auto& o : req.overrides) tree.apply_override(o);

  ResolvedConfig resolved;
  ConfigNode top(&tree.root(), "", &resolved);
  ConfigNode run = top.child("run");
  ConfigNode workload = top.child("workload");
  const std::string kind = workload.get_enum("kind", "collective", {"collective", "memory", "gemm"});
  const bool configuration_given = run.has("config");
  const std::string configuration = run.get_enum(
      "config", "sequential",  // every configuration of SPEC's table; the slice implements one
      {"sequential", "t3", "t3-mca", "ideal-overlap", "ideal-rs-nmc", "fused", "c3", "conccl"});
  const std::uint64_t seed = run.get_uint("seed", req.seed);
  WatchdogConfig watchdog;
  watchdog.stall_limit = run.get_time("watchdog_stall_limit", watchdog.stall_limit);
  const Tick max_time = run.get_time("max_time", Tick::max(), Tick(1));
  const std::uint64_t timeline_max = run.get_uint("timeline_max_events", 1'000'000, 0);
  run.finish();

  ConfigNode system = top.child("system");
  top.finish();

  if (kind == "gemm") {
    if (configuration_given) {
      run.fail("config", "an isolated GEMM has no configurations (they apply to GEMM + collective workloads)");
    }
    return run_gemm(RunContext{req, resolved, seed, watchdog, max_time, timeline_max}, system, workload);
  }
  if (kind == "memory") {
    if (configuration_given) {
      run.fail("config", "a memory workload has no configurations: its arbitration policy is "
                         "system.memory.mc.arbiter");
    }
    return run_memory(RunContext{req, resolved, seed, watchdog, max_time, timeline_max}, system, workload);
  }

  if (configuration != "sequential")
    run.fail("config", fmt::format("configuration '{}' is not implemented yet for a '{}' workload "
                                   "(implemented: sequential)",
                                   configuration, kind));

  const CollectiveSystemConfig sys_cfg = read_collective_system(system);
  const CollectiveWorkload wl = read_collective_workload(workload);

  // ---- build and run
  Simulator sim(seed, watchdog);
  if (req.output_dir && req.timeline && timeline_max > 0) sim.timeline().enable(timeline_max);
  CollectiveSystem system_model(sim, sys_cfg, wl);
  RunOutcome out;
  if (req.validate_only) {
    out.summary = fmt::format("ok: {} GPUs, {} of {} per GPU, configuration {}\n", sys_cfg.num_gpus,
                              to_string(wl.op), wl.array_bytes, configuration);
    return out;
  }

  const auto wall_start = std::chrono::steady_clock::now();
  const CollectiveResult r = system_model.run(max_time);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const std::uint64_t events = sim.events().dispatched();

  nlohmann::json results = r.json;
  results["configuration"] = configuration;

  if (req.output_dir) {
    RunMetadata meta;
    meta.configuration = configuration;
    meta.seed = seed;
    meta.resolved_config = resolved.json();
    meta.wall_seconds = wall;
    meta.events = events;
    meta.simulated_time = sim.now();
    meta.command_line = fmt::format("system={} workload={}", req.system.string(), req.workload.string());
    write_run_outputs(*req.output_dir, meta, results, sim.stats(), sim.timeline(), sim.now());
  }

  const double dev = r.analytical.ps()
                         ? (static_cast<double>(r.time.ps()) / static_cast<double>(r.analytical.ps()) - 1.0) * 100.0
                         : 0.0;
  out.summary = fmt::format(
      "t3sim {} ({})\n"
      "ring {} of {} per GPU on {} GPUs ({} per direction, {} latency), configuration {}\n"
      "  time               {}\n"
      "  analytical         {}  ((N-1)/N*S/B + (N-1)*latency; simulated {:+.2f}%)\n"
      "  algorithm bw       {:.2f} GB/s\n"
      "  bus bw             {:.2f} GB/s\n"
      "  functional check   passed ({} blocks, {})\n"
      "  simulation         {} events in {:.3f} s ({:.2f} M events/s)\n",
      kVersion, kGitRevision, to_string(wl.op), wl.array_bytes, sys_cfg.num_gpus,
      fmt::format("{:.1f} GB/s", static_cast<double>(sys_cfg.net.link.bandwidth.bytes_per_second()) / 1e9),
      to_string(sys_cfg.net.link.latency), configuration, to_string(r.time), to_string(r.analytical), dev,
      r.algbw_gbps, r.busbw_gbps, r.blocks_checked,
      r.mode == FunctionalMode::kValues ? "element values" : "block checksums", events, wall,
      wall > 0 ? static_cast<double>(events) / wall / 1e6 : 0.0);
  if (req.output_dir) out.summary += fmt::format("  outputs            {}\n", req.output_dir->string());

  out.metrics = {
      {"collective", to_string(wl.op)},
      {"num_gpus", std::to_string(sys_cfg.num_gpus)},
      {"array_bytes", std::to_string(wl.array_bytes)},
      {"time_ps", std::to_string(r.time.ps())},
      {"analytical_ps", std::to_string(r.analytical.ps())},
      {"time_vs_analytical", fmt::format("{:.6f}", r.analytical.ps() ? static_cast<double>(r.time.ps()) / static_cast<double>(r.analytical.ps()) : 0.0)},
      {"algbw_GBps", fmt::format("{:.4f}", r.algbw_gbps)},
      {"busbw_GBps", fmt::format("{:.4f}", r.busbw_gbps)},
      {"functional_check", r.functional_ok ? "passed" : "failed"},
      {"events", std::to_string(events)},
  };
  return out;
}

}  // namespace t3sim
