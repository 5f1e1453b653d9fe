#include "cli/run.h"

#include <chrono>
#include <thread>
#include <optional>

#include <fmt/format.h>

#include "models/collectives/node_collective.h"
#include "models/system/collective_system.h"
#include "models/system/sublayer_system.h"
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
  NetMode mode = NetMode::kFull;
  unsigned threads = 1;  // host threads of a partitioned (full-mode node) run
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
  meta.events = sim.dispatched();
  meta.partitions = sim.partitions();
  meta.threads = sim.threads();
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
  const std::uint64_t events = sim.dispatched();
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
  (void)read_sublayer_options(workload.child("collective"));  // checked; used with --config
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
  const std::uint64_t events = sim.dispatched();
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


// A partitioned run also says how it ran: "..., 8 partitions on 2 threads".
std::string simulation_line(std::uint64_t events, double wall, const Simulator& sim) {
  const std::string parallel =
      sim.partitions() > 1 ? fmt::format(", {} partitions on {} threads", sim.partitions(), sim.threads()) : "";
  return fmt::format("  simulation         {} events in {:.3f} s ({:.2f} M events/s{})\n", events, wall,
                     wall > 0 ? static_cast<double>(events) / wall / 1e6 : 0.0, parallel);
}

// kind: gemm with --config: the GEMM and its collective on a node (SublayerSystem).
RunOutcome run_sublayer(const RunContext& ctx, ConfigNode system, ConfigNode workload,
                        const std::string& configuration) {
  const RunRequest& req = ctx.req;
  NodeConfig node = read_node_config(system, ctx.mode);
  const SublayerOptions opt = read_sublayer_options(workload.child("collective"));
  const bool from_trace = workload.has("trace");
  GemmWorkload wl = read_gemm_workload(workload, node.gpu);
  if (from_trace)
    workload.fail("trace", "a GEMM + collective sub-layer needs a generated GEMM (preset or m/n/k): the "
                           "collective's array is the GEMM's output");
  // The tensor-parallel group is the node: a Table 2 preset's TP degree sets the GPU count.
  if (wl.tp > 0) node.num_gpus = wl.tp;

  // T3 §5.3's ideal configurations come from isolated runs: sequential's GEMM, RS and
  // AG (each alone), and for ideal-rs-nmc the RS with near-memory updates alone.
  const bool ideal = configuration == "ideal-overlap" || configuration == "ideal-rs-nmc";
  const GemmWorkload wl_for_ideal = configuration == "ideal-rs-nmc" ? wl : GemmWorkload{};

  node.partitioned = true;  // full mode: a partition per GPU
  Simulator sim(ctx.seed, ctx.watchdog);
  sim.set_threads(ctx.threads);
  if (req.output_dir && req.timeline && ctx.timeline_max > 0) sim.timeline().enable(ctx.timeline_max);
  SublayerSystem model(sim, node, std::move(wl), opt, ideal ? "sequential" : configuration, ctx.seed);
  RunOutcome out;
  if (req.validate_only) {
    out.summary = fmt::format("ok: sub-layer on {} GPUs ({} mode), configuration {}\n", node.num_gpus,
                              to_string(node.mode), configuration);
    return out;
  }
  const auto wall_start = std::chrono::steady_clock::now();
  SublayerResult r = model.run(ctx.max_time);
  std::uint64_t events = sim.dispatched();
  std::string note;
  if (ideal) {
    std::optional<IsolatedRs> nmc;
    if (configuration == "ideal-rs-nmc") {
      nmc = run_isolated_rs_nmc(node, wl_for_ideal, ctx.seed);
      events += nmc->events;
    }
    make_ideal_result(r, configuration, nmc ? &*nmc : nullptr);
    const nlohmann::json& iso = r.json["isolated"];
    note = fmt::format("  (from isolated runs: GEMM {:.4f} ms, RS {:.4f} ms, AG {:.4f} ms; RS above = exposed)\n",
                       iso["gemm_ps"].get<double>() * 1e-9, iso["rs_ps"].get<double>() * 1e-9,
                       iso["ag_ps"].get<double>() * 1e-9);
  }
  const double wall = seconds_since(wall_start);
  write_outputs(ctx, configuration, r.json, sim, wall);
  out.summary = fmt::format("t3sim {} ({})\n", kVersion, kGitRevision) + model.summary(r, configuration) + note +
                simulation_line(events, wall, sim);
  if (req.output_dir) out.summary += fmt::format("  outputs            {}\n", req.output_dir->string());
  out.metrics = {
      {"configuration", configuration},
      {"mode", to_string(node.mode)},
      {"num_gpus", std::to_string(node.num_gpus)},
      {"time_ps", std::to_string(r.total.ps())},
      {"gemm_ps", std::to_string(r.gemm.ps())},
      {"rs_ps", std::to_string(r.rs.ps())},
      {"ag_ps", std::to_string(r.ag.ps())},
  };
  const char* phase[3] = {"gemm", "rs", "ag"};
  for (int ph = 0; ph < 3; ++ph) {
    out.metrics.emplace_back(fmt::format("{}_dram_read_bytes", phase[ph]), std::to_string(r.traffic[ph].read));
    out.metrics.emplace_back(fmt::format("{}_dram_write_bytes", phase[ph]), std::to_string(r.traffic[ph].write));
    out.metrics.emplace_back(fmt::format("{}_dram_update_bytes", phase[ph]), std::to_string(r.traffic[ph].update));
  }
  out.metrics.emplace_back("functional_check", r.values_checked ? "passed" : "not run");
  out.metrics.emplace_back("events", std::to_string(events));
  out.metrics.emplace_back("wall_s", fmt::format("{:.3f}", wall));
  return out;
}

// kind: collective on a system with GPUs: CU- or DMA-based collectives on the full
// GPU model (the idealized-memory ring engine handles systems without a `gpu:`).
RunOutcome run_node_collective(const RunContext& ctx, ConfigNode system, ConfigNode workload) {
  const RunRequest& req = ctx.req;
  NodeConfig node_cfg = read_node_config(system, ctx.mode);
  node_cfg.partitioned = true;  // full mode: a partition per GPU
  NodeCollectiveParams p;
  const std::string kind = workload.get_enum(
      "collective", "reduce_scatter",
      {"reduce_scatter", "all_gather", "all_reduce", "ring-rs", "ring-ag", "ring-ar", "direct-rs", "direct-ag",
       "all-to-all"});
  p.kind = parse_collective_kind(kind);
  if (!workload.has("size")) workload.fail("size", "required key missing (per-GPU array size, e.g. 64MiB)");
  p.array_bytes = workload.get_bytes("size", 0, 1, 1ULL << 40);
  p.element_bytes = static_cast<std::uint32_t>(workload.get_bytes("element_size", p.element_bytes, 1, 64));
  p.impl = workload.get_enum("implementation", "cu", {"cu", "dma"}) == "cu" ? CollectiveImpl::kCu
                                                                            : CollectiveImpl::kDma;
  p.cus = static_cast<std::uint32_t>(workload.get_uint("cus", 0, 0, node_cfg.gpu.num_cus));
  p.channels = static_cast<std::uint32_t>(workload.get_uint("channels", 0, 0, 4096));
  p.slice_bytes = workload.get_bytes("slice_size", p.slice_bytes, 1, 1ULL << 30);
  const std::string functional = workload.get_enum("functional", "auto", {"auto", "values", "checksum", "off"});
  const std::uint64_t values_limit = workload.get_bytes("values_limit", 16ULL << 20, 0, 1ULL << 40);
  p.values = functional == "values" || ((functional == "auto" || functional == "checksum") && p.array_bytes <= values_limit);
  p.seed = ctx.seed;
  workload.finish();

  Simulator sim(ctx.seed, ctx.watchdog);
  sim.set_threads(ctx.threads);
  if (req.output_dir && req.timeline && ctx.timeline_max > 0) sim.timeline().enable(ctx.timeline_max);
  Node node(sim, node_cfg);
  std::optional<NodeCollective> coll;
  try {
    coll.emplace(node, p);
  } catch (const ConfigError&) {
    throw;
  } catch (const UserError& e) {
    workload.fail("size", e.what());
  }
  RunOutcome out;
  if (req.validate_only) {
    out.summary = fmt::format("ok: {} ({}) of {} B per GPU on {} GPUs ({} mode)\n", to_string(p.kind),
                              to_string(p.impl), p.array_bytes, node_cfg.num_gpus, to_string(node_cfg.mode));
    return out;
  }
  coll->preload();
  coll->start_all();
  const auto wall_start = std::chrono::steady_clock::now();
  const Simulator::StopReason stop = sim.run(ctx.max_time);
  const double wall = seconds_since(wall_start);
  if (!coll->all_done()) {
    if (stop == Simulator::StopReason::kTimeLimit)
      throw SimulationError(fmt::format("run.max_time ({}) reached before the collective finished",
                                        to_string(ctx.max_time)));
    throw SimulationError("the collective did not finish although nothing was left to simulate");
  }
  std::string error;
  const std::uint64_t checked = coll->verify(error);
  if (!error.empty()) throw SimulationError("functional check failed: " + error);

  Tick end = Tick::zero();
  for (std::uint32_t g = 0; g < node.simulated_gpus(); ++g) end = std::max(end, coll->finished(g));
  const std::uint32_t n = node_cfg.num_gpus;
  const double s = static_cast<double>(p.array_bytes);
  const double bw = static_cast<double>(node_cfg.net.link.bandwidth.bytes_per_second());
  // Link-bound lower bounds: a ring moves (N-1)/N of the array over each link per
  // pass, plus a latency per step; a direct algorithm sends S/N to each peer on its
  // own link at once.
  const bool ring = p.kind == CollectiveKind::kRingReduceScatter || p.kind == CollectiveKind::kRingAllGather ||
                    p.kind == CollectiveKind::kRingAllReduce;
  const double passes = p.kind == CollectiveKind::kRingAllReduce ? 2.0 : 1.0;
  const double lat_s = static_cast<double>(node_cfg.net.link.latency.ps()) * 1e-12;
  const double analytical_s =
      ring ? passes * ((n - 1.0) / n * s / bw + (n - 1.0) * lat_s) : s / n / bw + lat_s;
  const double time_s = static_cast<double>(end.ps()) * 1e-12;
  const double algbw = time_s > 0 ? s / time_s / 1e9 : 0;
  const double busbw = algbw * passes * (n - 1.0) / n;

  nlohmann::json gpus = nlohmann::json::array();
  std::uint64_t dram[kNumMemOps] = {0, 0, 0};
  for (std::uint32_t g = 0; g < node.simulated_gpus(); ++g) {
    nlohmann::json gj = {{"gpu", g}, {"finished_ps", coll->finished(g).ps()}};
    for (Stream st : {Stream::kCompute, Stream::kCommunication}) {
      const McStreamStats t = node.gpu(g).memory().stream_totals(st);
      for (int op = 0; op < kNumMemOps; ++op) dram[op] += t.bytes[op];
    }
    gpus.push_back(gj);
  }
  const std::uint32_t sim_gpus = node.simulated_gpus();
  nlohmann::json results = {
      {"workload", "collective"},
      {"collective", to_string(p.kind)},
      {"implementation", to_string(p.impl)},
      {"mode", to_string(node_cfg.mode)},
      {"num_gpus", n},
      {"simulated_gpus", sim_gpus},
      {"topology", node_cfg.net.topology},
      {"array_bytes", p.array_bytes},
      {"channels", coll->channels()},
      {"time_ps", end.ps()},
      {"analytical_ps", static_cast<std::uint64_t>(analytical_s * 1e12)},
      {"algbw_GBps", algbw},
      {"busbw_GBps", busbw},
      {"dram_read_bytes_per_gpu", dram[index(MemOp::kRead)] / sim_gpus},
      {"dram_write_bytes_per_gpu", dram[index(MemOp::kWrite)] / sim_gpus},
      {"dram_update_bytes_per_gpu", dram[index(MemOp::kUpdate)] / sim_gpus},
      {"gpus", gpus},
      {"links", node.network().link_results(end)},
      {"functional_check", p.values ? "passed" : "not run"},
      {"words_checked", checked}};
  const std::uint64_t events = sim.dispatched();
  write_outputs(ctx, "collective", results, sim, wall);
  out.summary = fmt::format(
      "t3sim {} ({})\n"
      "{} ({}-based) of {} B per GPU on {} GPUs ({}, {:.1f} GB/s per direction, {} latency; {} mode)\n"
      "  time               {}\n"
      "  link bound         {}  (simulated {:+.2f}%)\n"
      "  algorithm bw       {:.2f} GB/s\n"
      "  bus bw             {:.2f} GB/s\n"
      "  DRAM per GPU       {:.1f} MB read, {:.1f} MB written\n"
      "  functional check   {}\n",
      kVersion, kGitRevision, to_string(p.kind), to_string(p.impl), p.array_bytes, n, node_cfg.net.topology, bw / 1e9,
      to_string(node_cfg.net.link.latency), to_string(node_cfg.mode), to_string(end),
      to_string(Tick(static_cast<std::uint64_t>(analytical_s * 1e12))), (time_s / analytical_s - 1.0) * 100.0, algbw,
      busbw, static_cast<double>(dram[index(MemOp::kRead)]) / sim_gpus / 1e6,
      static_cast<double>(dram[index(MemOp::kWrite)] + dram[index(MemOp::kUpdate)]) / sim_gpus / 1e6,
      p.values ? fmt::format("passed ({} words)", checked) : std::string("not run (array above values_limit)"));
  out.summary += simulation_line(events, wall, sim);
  if (req.output_dir) out.summary += fmt::format("  outputs            {}\n", req.output_dir->string());
  out.metrics = {
      {"collective", std::string(to_string(p.kind))},
      {"implementation", to_string(p.impl)},
      {"num_gpus", std::to_string(n)},
      {"array_bytes", std::to_string(p.array_bytes)},
      {"time_ps", std::to_string(end.ps())},
      {"analytical_ps", std::to_string(static_cast<std::uint64_t>(analytical_s * 1e12))},
      {"algbw_GBps", fmt::format("{:.4f}", algbw)},
      {"busbw_GBps", fmt::format("{:.4f}", busbw)},
      {"functional_check", p.values ? "passed" : "not run"},
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
  // full: every GPU simulated; homogeneous: GPU 0 only, its peers mirrored (T3 §5.1.1).
  const NetMode mode = parse_net_mode(run.get_enum("mode", "full", {"full", "homogeneous"}));
  // Host threads for a full-mode node run, whose GPUs are simulated in partitions of
  // their own; results do not depend on it. 0: one per core.
  const auto threads_key = static_cast<unsigned>(run.get_uint("threads", 0, 0, 1024));
  const unsigned threads = req.threads > 0     ? req.threads
                           : threads_key > 0 ? threads_key
                                             : std::max(1u, std::thread::hardware_concurrency());
  run.finish();

  ConfigNode system = top.child("system");
  top.finish();

  const RunContext ctx{req, resolved, seed, watchdog, max_time, timeline_max, mode, threads};
  if (kind == "gemm") {
    if (configuration_given) return run_sublayer(ctx, system, workload, configuration);
    return run_gemm(ctx, system, workload);
  }
  if (kind == "collective" && system.has("gpu")) {
    if (configuration_given && configuration != "sequential")
      run.fail("config", fmt::format("a collective alone has no configuration '{}' (configurations apply to "
                                     "GEMM + collective sub-layers)",
                                     configuration));
    return run_node_collective(ctx, system, workload);
  }
  if (kind == "memory") {
    if (configuration_given) {
      run.fail("config", "a memory workload has no configurations: its arbitration policy is "
                         "system.memory.mc.arbiter");
    }
    return run_memory(ctx, system, workload);
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
  const std::uint64_t events = sim.dispatched();

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
