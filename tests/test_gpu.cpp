// CUs + dispatcher + memory system replaying tiled-GEMM traces: stages, roofline
// bounds, scaling with CUs, L2 size and CU masks, concurrent kernels, determinism.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "models/system/gemm_system.h"
#include "sim/config.h"

namespace t3sim {
namespace {

GpuConfig system_gpu(const std::string& file) {
  ConfigTree tree = ConfigTree::load_file(std::string(T3SIM_SOURCE_DIR) + "/configs/systems/" + file);
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  return read_gpu_config(root.child("gpu"), root.child("memory"));
}

GpuConfig table1_gpu() {
  ConfigTree tree = ConfigTree::load_file(std::string(T3SIM_SOURCE_DIR) + "/configs/systems/table1.yaml");
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  return read_gpu_config(root.child("gpu"), root.child("memory"));
}

GemmWorkload gemm(std::uint64_t m, std::uint64_t n, std::uint64_t k, const GpuConfig& gpu, std::uint32_t cus = 0) {
  GemmParams p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.flops_per_cycle = gpu.cu.flops_per_cycle;
  GemmWorkload wl;
  wl.trace = make_gemm_trace(p);
  wl.description = "test";
  wl.cus = cus;
  return wl;
}

GemmResult run(const GpuConfig& gpu, GemmWorkload wl, std::uint64_t* events = nullptr) {
  Simulator sim(1);
  GemmSystem sys(sim, gpu, std::move(wl));
  GemmResult r = sys.run();
  if (events != nullptr) *events = sim.events().dispatched();
  return r;
}

double seconds(const GemmResult& r) { return static_cast<double>(r.time.ps()) * 1e-12; }

TEST(Gpu, StagesAreWgsOverConcurrentSlots) {
  const GpuConfig gpu = table1_gpu();
  // 2048 x 2048 output in 256 x 128 tiles = 8 x 16 = 128 WGs; one WG per CU fits
  // (double-buffered A and B tiles: 48 KiB of the 64 KiB LDS): 80 at once, 2 stages.
  const GemmResult r = run(gpu, gemm(2048, 2048, 256, gpu));
  EXPECT_EQ(r.wgs, 128u);
  EXPECT_EQ(r.concurrent_wgs, 80u);
  EXPECT_EQ(r.stages, 2u);
  // Restricted to 16 CUs: ceil(128 / 16) = 8 stages.
  EXPECT_EQ(run(gpu, gemm(2048, 2048, 256, gpu, 16)).stages, 8u);
}

// Posted stores (CuConfig::posted_stores): a WG whose stores bypass the L2 gives its
// slot back while they travel to DRAM, so the next WG starts sooner; the kernel still
// ends only once every store is acknowledged (all bytes reached DRAM). The round trip
// is made long (5,000 memory cycles on the response, ~5 us) so that it is a WG's main
// cost: at Table 1's own latency it is a few hundred ns against WGs of microseconds,
// and the two runs differ by less than the order of same-time events moves them
// (+-0.2 % on 4096 x 4096 x 64, stop 40).
TEST(Gpu, PostedStoresFreeSlotsBeforeTheirAcknowledgments) {
  GpuConfig gpu = table1_gpu();
  gpu.memory.mc.response_latency = 5000;
  GemmWorkload wl = gemm(1024, 1024, 64, gpu, 8);  // 32 short WGs on 8 CUs: 4 waves
  GemmParams p;
  p.m = 1024;
  p.n = 1024;
  p.k = 64;
  p.flops_per_cycle = gpu.cu.flops_per_cycle;
  p.store_uncached = true;  // T3's producer stores go to DRAM
  wl.trace = make_gemm_trace(p);
  const GemmResult posted = run(gpu, wl);
  gpu.cu.posted_stores = false;
  const GemmResult held = run(gpu, wl);
  EXPECT_EQ(posted.wgs, held.wgs);
  EXPECT_EQ(posted.dram_write_bytes, held.dram_write_bytes);
  EXPECT_EQ(posted.dram_write_bytes, 1024u * 1024 * 2);  // every store landed before the end
  // Measured: 49.5 us posted, 62.9 us held.
  EXPECT_LT(static_cast<double>(posted.time.ps()), 0.9 * static_cast<double>(held.time.ps()));
}

TEST(Gpu, TimeWithinAFactorOfTheRoofline) {
  const GpuConfig gpu = table1_gpu();
  for (auto [m, n, k] : {std::tuple{2560, 2048, 1024}, std::tuple{4096, 4096, 128}, std::tuple{1024, 1024, 4096}}) {
    const GemmResult r = run(gpu, gemm(m, n, k, gpu));
    const double compute = static_cast<double>(r.flops) / (r.peak_tflops * 1e12);
    const double memory = static_cast<double>(r.dram_read_bytes + r.dram_write_bytes) / (r.peak_dram_GBps * 1e9);
    const double bound = std::max(compute, memory);
    EXPECT_GE(seconds(r), bound) << m << "x" << n << "x" << k;
    // Stated factor: within 3x of the roofline (partial stages, the K loop's first
    // loads and the L2 latency are not overlapped in small GEMMs).
    EXPECT_LE(seconds(r), 3.0 * bound) << m << "x" << n << "x" << k;
  }
}

TEST(Gpu, TwiceTheCusHelpsComputeBoundGemmsMuchMoreThanMemoryBoundOnes) {
  const GpuConfig gpu = table1_gpu();
  GpuConfig gpu2x = gpu;
  gpu2x.num_cus = 160;  // T3 §7.5 GPU-2X-CU
  // Compute-bound: long K. Memory-bound: K = 32 (each output element costs 64 flops
  // against 2 bytes written). A WG of the K = 32 GEMM has a single K step, so its
  // loads are not overlapped with compute: each stage pays the CU's load path
  // (in-flight bytes, return port) once, and halving the stages with twice the CUs
  // saves part of that too (about 1.37x: DRAM is 56 % busy on 80 CUs, 76 % on 160).
  const double compute_speedup = seconds(run(gpu, gemm(2560, 2048, 2048, gpu))) /
                                 seconds(run(gpu2x, gemm(2560, 2048, 2048, gpu2x)));
  const double memory_speedup = seconds(run(gpu, gemm(5120, 4096, 32, gpu))) /
                                seconds(run(gpu2x, gemm(5120, 4096, 32, gpu2x)));
  RecordProperty("compute_speedup", std::to_string(compute_speedup));
  RecordProperty("memory_speedup", std::to_string(memory_speedup));
  EXPECT_GT(compute_speedup, 1.6);
  EXPECT_LT(memory_speedup, 1.45);
  EXPECT_GT(compute_speedup, memory_speedup + 0.3);
}

TEST(Gpu, ALargerL2ReadsLessDramWhenTheInputsDoNotFit) {
  GpuConfig small = table1_gpu();
  small.memory.l2.size_bytes = 4ULL << 20;
  GpuConfig large = small;
  large.memory.l2.size_bytes = 64ULL << 20;
  // Inputs: A 4096 x 1024 and B 1024 x 4096 FP16 = 8 MiB each, 16 MiB together.
  const GemmResult s = run(small, gemm(4096, 4096, 1024, small));
  const GemmResult l = run(large, gemm(4096, 4096, 1024, large));
  EXPECT_LT(static_cast<double>(l.dram_read_bytes), 0.8 * static_cast<double>(s.dram_read_bytes));
  EXPECT_GT(l.l2_hit_rate, s.l2_hit_rate);
  // Never less than reading each input once.
  EXPECT_GE(l.dram_read_bytes, 2ull * 4096 * 1024 * 2);
}

TEST(Gpu, CuMaskSlowsAComputeBoundGemmInProportion) {
  const GpuConfig gpu = table1_gpu();
  const double all = seconds(run(gpu, gemm(2560, 2048, 1024, gpu)));
  const double half = seconds(run(gpu, gemm(2560, 2048, 1024, gpu, 40)));
  EXPECT_NEAR(half / all, 2.0, 0.25);
}

// T3 Figure 6 (§3.2.1): T-NLG FC-2 TP8's GEMM (8192 x 4256 x 2128) given 64 of the 80
// CUs (the other 16 left to a concurrent all-reduce) runs about 21 % slower; a purely
// compute-bound GEMM would lose 25 %. Here: 1.391 -> 1.683 ms, +21 %: the last of its
// 1088 tiles' waves is a partial one either way (1088 / 80 = 13.6, / 64 = 17).
// (The figure's other half, the all-reduce given 8 or 16 CUs, does not carry over:
// see NodeTiming.ReduceScatterTimeAgainstCusGiven.)
TEST(T3Figure6, GemmOn64Of80CusIsAbout21PercentSlower) {
  const GpuConfig gpu = table1_gpu();
  const double all = seconds(run(gpu, gemm(8192, 4256, 2128, gpu)));
  const double fewer = seconds(run(gpu, gemm(8192, 4256, 2128, gpu, 64)));
  EXPECT_NEAR(fewer / all, 1.21, 0.04) << all << " s on 80 CUs, " << fewer << " s on 64";
}

TEST(Gpu, TwoKernelsShareTheCusAsConfigured) {
  const GpuConfig cfg = table1_gpu();
  auto a = gemm(2560, 2048, 512, cfg).trace;
  auto b = gemm(2560, 2048, 512, cfg).trace;
  // Alone on 40 CUs each vs together on disjoint halves: together takes about as
  // long as one alone (they overlap), far less than both in sequence.
  auto time_of = [&](bool both, int priority_b, std::vector<std::uint32_t> mask_a, std::vector<std::uint32_t> mask_b,
                     Tick* a_done, Tick* b_done) {
    Simulator sim(1);
    Gpu gpu(sim, "gpu0", cfg);
    gpu.launch(KernelLaunch{&a, mask_a, 0, Stream::kCompute, [&] { *a_done = sim.now(); }});
    if (both) gpu.launch(KernelLaunch{&b, mask_b, priority_b, Stream::kCompute, [&] { *b_done = sim.now(); }});
    sim.run();
    return sim.now();
  };
  std::vector<std::uint32_t> low, high, all;
  for (std::uint32_t i = 0; i < 80; ++i) (i < 40 ? low : high).push_back(i), all.push_back(i);
  Tick a1, b1, a2, b2, a3, b3;
  time_of(false, 0, low, {}, &a1, &b1);
  time_of(true, 0, low, high, &a2, &b2);
  EXPECT_LT(std::max(a2, b2).ps(), 1.3 * static_cast<double>(a1.ps()));
  // Sharing all CUs, the higher-priority kernel (b) gets its WGs placed first and ends first.
  time_of(true, 1, all, all, &a3, &b3);
  EXPECT_LT(b3, a3);
}

TEST(Gpu, Deterministic) {
  const GpuConfig gpu = table1_gpu();
  std::uint64_t e1 = 0, e2 = 0;
  const GemmResult r1 = run(gpu, gemm(2048, 1024, 512, gpu), &e1);
  const GemmResult r2 = run(gpu, gemm(2048, 1024, 512, gpu), &e2);
  EXPECT_EQ(r1.time, r2.time);
  EXPECT_EQ(r1.dram_read_bytes, r2.dram_read_bytes);
  EXPECT_EQ(e1, e2);
}

TEST(Gpu, FlagsOrderWgs) {
  // WG 1 waits for a flag WG 0 sets after its compute: WG 1 cannot end first.
  const char* text =
      "t3trace 1\nkernel flags\nresources wfs=1 threads=64\nparams f\n"
      "program setter\n  compute 1000\n  set 7 1\nend\n"
      "program waiter\n  wait 7 1\n  compute 10\nend\n"
      "wgs 2\nwg 0 setter 0\nwg 1 waiter 0\n";
  KernelTrace t = parse_trace(text, "flags.trace");
  Simulator sim(1);
  Gpu gpu(sim, "gpu0", table1_gpu());
  Tick done;
  gpu.launch(KernelLaunch{&t, {}, 0, Stream::kCompute, [&] { done = sim.now(); }});
  sim.run();
  // The launch latency, 1000 cycles of WG 0, then WG 1's 10 (each rounded down to
  // whole ps at 1.4 GHz).
  EXPECT_EQ(done.ps(), gpu.config().kernel_launch_latency.ps() + 714'285 + 7'142);
  EXPECT_EQ(gpu.flags().get(7), 1u);
}

// A persistent kernel (TraceResources::persistent_wgs, issue 41: cuBLAS's Hopper GEMMs
// run 132 CTAs that loop over the tiles) places at most that many WGs, and a WG that
// ends its program takes the next one on the same CU before any waiting kernel gets
// the room: a kernel launched beside it waits for the persistent kernel's last
// programs, and packs onto the first CU that frees (as a copy kernel beside a cuBLAS
// GEMM runs on 6-8 SMs, results/h200-measurements/README.md).
TEST(Gpu, APersistentKernelKeepsItsCusAndAWaitingKernelPacksOntoTheFirstFreed) {
  GpuConfig cfg = table1_gpu();
  cfg.num_cus = 4;
  cfg.kernel_launch_latency = Tick::zero();
  cfg.wg_dispatch_latency = Tick::zero();
  // 12 programs of one CU each (2048 threads); the last four end at different times.
  auto persistent = [](std::uint32_t grid) {
    std::string text = "t3trace 1\nkernel tiles\nresources wfs=32 threads=2048 persistent=" + std::to_string(grid) +
                       "\nparams n\nprogram tile\n  compute n\nend\nwgs 12\n";
    for (int w = 0; w < 12; ++w) text += fmt::format("wg {} tile {}\n", w, w < 8 ? 1000 : 1000 * (w - 7));
    return parse_trace(text, "persistent.trace");
  };
  const KernelTrace small = parse_trace(
      "t3trace 1\nkernel copy\nresources wfs=8 threads=512\nprogram p\n  compute 10\nend\nwgs 4\n"
      "wg 0 p\nwg 1 p\nwg 2 p\nwg 3 p\n",
      "small.trace");
  auto run_case = [&](std::uint32_t grid, bool with_small, std::vector<std::uint64_t>* completed, Tick* p_done,
                      Tick* s_done) {
    const KernelTrace p = persistent(grid);
    Simulator sim(1);
    Gpu gpu(sim, "gpu0", cfg);
    gpu.launch(KernelLaunch{&p, {}, 0, Stream::kCompute, [&] { *p_done = sim.now(); }});
    if (with_small) gpu.launch(KernelLaunch{&small, {}, 0, Stream::kCompute, [&] { *s_done = sim.now(); }});
    sim.run();
    for (std::uint32_t c = 0; c < 4; ++c) completed->push_back(gpu.cu(c).wgs_completed());
  };
  const double cycle_ps = 1e12 / static_cast<double>(cfg.cu.clock_hz);
  std::vector<std::uint64_t> done;
  Tick p_done, s_done;
  // Beside it, the four small WGs wait for the first CU the persistent kernel leaves
  // (CU 0 at 3000 cycles: its programs 0, 4 and 8), and all four go there.
  run_case(4, true, &done, &p_done, &s_done);
  EXPECT_THAT(done, ::testing::ElementsAre(3u + 4u, 3u, 3u, 3u));
  EXPECT_GE(static_cast<double>(s_done.ps()), 3010 * cycle_ps - 2);  // placed at 3000, 10 cycles (or 4 x 10 on one CU)
  EXPECT_LE(static_cast<double>(s_done.ps()), 3041 * cycle_ps);
  EXPECT_NEAR(static_cast<double>(p_done.ps()), 6000 * cycle_ps, 2 * cycle_ps);
  // A grid of two: two CUs run all twelve programs, the others none.
  done.clear();
  run_case(2, false, &done, &p_done, &s_done);
  EXPECT_EQ(done[0] + done[1], 12u);
  EXPECT_EQ(done[2] + done[3], 0u);
}

// A persistent WG owns its first programs (TraceResources::persistent_static, issue 41:
// cuBLAS's Hopper GEMM, results/h200-measurements/tile_order.csv): a WG slot that cannot
// be placed because another kernel holds its CU keeps them, and they run after every
// other program. 4 slots of one CU each, a CU held for the whole kernel, 12 programs of
// 1000 cycles: in order, three slots run 4 rounds (4000 cycles) and the fourth is never
// placed; owning 2 each, slot 3's programs 3 and 7 wait for a CU the others leave at
// 3000 and end at 5000.
TEST(Gpu, APersistentWgThatWaitsForACuKeepsTheProgramsItOwns) {
  GpuConfig cfg = table1_gpu();
  cfg.num_cus = 4;
  cfg.kernel_launch_latency = Tick::zero();
  cfg.wg_dispatch_latency = Tick::zero();
  const KernelTrace blocker = parse_trace(
      "t3trace 1\nkernel blocker\nresources wfs=32 threads=2048\nprogram p\n  compute 8000\nend\nwgs 1\nwg 0 p\n",
      "blocker.trace");
  auto run_case = [&](std::uint32_t owned, std::vector<std::uint64_t>* order) {
    std::string text = "t3trace 1\nkernel tiles\nresources wfs=32 threads=2048 persistent=4" +
                       (owned ? fmt::format(" persistent_static={}", owned) : std::string()) +
                       "\nparams n\nprogram tile\n  compute 1000\nend\nwgs 12\n";
    for (int w = 0; w < 12; ++w) text += fmt::format("wg {} tile {}\n", w, w);
    const KernelTrace p = parse_trace(text, "persistent.trace");
    Simulator sim(1);
    Gpu gpu(sim, "gpu0", cfg);
    gpu.launch(KernelLaunch{&blocker, {}, 0, Stream::kCompute, [] {}});
    Tick done;
    gpu.launch(KernelLaunch{&p, {}, 0, Stream::kCompute, [&] { done = sim.now(); }});
    sim.run();
    EXPECT_EQ(gpu.cu(0).wgs_completed(), 1u) << "the held CU runs the blocker only";
    EXPECT_EQ(gpu.cu(1).wgs_completed() + gpu.cu(2).wgs_completed() + gpu.cu(3).wgs_completed(), 12u);
    if (order) *order = {gpu.cu(1).wgs_completed(), gpu.cu(2).wgs_completed(), gpu.cu(3).wgs_completed()};
    return done;
  };
  const double cycle_ps = 1e12 / static_cast<double>(cfg.cu.clock_hz);
  EXPECT_NEAR(static_cast<double>(run_case(0, nullptr).ps()), 4000 * cycle_ps, 4 * cycle_ps);
  std::vector<std::uint64_t> per_cu;
  EXPECT_NEAR(static_cast<double>(run_case(2, &per_cu).ps()), 5000 * cycle_ps, 4 * cycle_ps);
  // Slot 0 runs 0, 4, 8, 11; slots 1 and 2 run 1, 5, 9 and 2, 6, 10 and leave at 3000;
  // slot 3 runs 3 and 7 on one of their CUs.
  EXPECT_EQ(per_cu[0], 4u);
  EXPECT_EQ(per_cu[1] + per_cu[2], 8u);
  // Owning more programs than a slot has (12 programs, 4 slots x 4) is owning them all.
  EXPECT_NEAR(static_cast<double>(run_case(4, nullptr).ps()), 6000 * cycle_ps, 4 * cycle_ps);
}

TEST(Gpu, EverySystemRunsAGemmBelowItsPeaks) {
  for (const char* file : {"table1.yaml", "table1_2xcu.yaml", "mi300x.yaml", "h200.yaml"}) {
    const GpuConfig gpu = system_gpu(file);
    const GemmResult r = run(gpu, gemm(2048, 2048, 1024, gpu));
    EXPECT_GT(r.tflops, 0.2 * r.peak_tflops) << file;
    EXPECT_LE(r.tflops, r.peak_tflops) << file;
    EXPECT_EQ(r.flops, 2ull * 2048 * 2048 * 1024) << file;
  }
  EXPECT_EQ(system_gpu("table1_2xcu.yaml").num_cus, 160u);
  EXPECT_EQ(system_gpu("mi300x.yaml").memory.hbm.peak_bandwidth().bytes_per_second(), 5'324'800'000'000ULL);
}

// ---------------------------------------------------------------------------
// Bad input: file, line, key, what was expected.

std::string gpu_error(const std::string& yaml) {
  try {
    ConfigTree tree = ConfigTree::parse(yaml, "sys.yaml");
    ResolvedConfig resolved;
    ConfigNode root(&tree.root(), "", &resolved);
    read_gpu_config(root.child("gpu"), root.child("memory"));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

// A kernel's launch latency delays its first WG and so its end by exactly that much;
// nothing else changes.
// Issue 17: a GEMM's efficiency falls when the DRAM latency rises only where its
// memory-level parallelism no longer covers the bandwidth-delay product. A K step of
// the Table 1 GEMM (256 x 128 x 32 tiles, one WG per CU) loads 24 KiB and computes
// 2048 cycles (1.46 us); with 16 KiB of load MSHRs per CU and two stages it has about
// 1.46 us for two rounds of loads, so an added latency of 300 ns is hidden and 2 us is
// not. With unbounded MSHRs and four stages the same 2 us is hidden too.
TEST(Gpu, DramLatencyHurtsAGemmOnlyBeyondItsMemoryLevelParallelism) {
  auto time_at = [](std::uint32_t response_cycles, bool more_mlp) {
    GpuConfig gpu = table1_gpu();
    gpu.memory.mc.response_latency = response_cycles;  // memory cycles (1 GHz): an injected latency
    GemmParams p;
    p.m = 2560;
    p.n = 2048;
    p.k = 4096;  // 128 K steps: each stage's first load (the pipeline fill) is a small part
    p.flops_per_cycle = gpu.cu.flops_per_cycle;
    if (more_mlp) {
      gpu.cu.max_inflight_load_bytes = 0;
      gpu.cu.lds_bytes = 128 * 1024;
      p.stages = 4;
    }
    GemmWorkload wl;
    wl.trace = make_gemm_trace(p);
    wl.description = "latency";
    return seconds(run(gpu, std::move(wl)));
  };
  const double base = time_at(10, false);
  EXPECT_LT(time_at(300, false), base * 1.03);
  EXPECT_GT(time_at(2000, false), base * 1.15);
  const double base_mlp = time_at(10, true);
  EXPECT_LT(time_at(2000, true), base_mlp * 1.05);
}

// Calibration (issue 46: a parameter fitted to a microbenchmark): a pointer chase (one
// WG, one stage: each 128 B load waits for the previous one's data, as MT4G's p-chase
// does) of L2 misses on the H200 system takes the measured DRAM latency, 834 SM cycles
// (MT4G, caps-tum/mt4g sample_results/NVIDIA H100 80GB HBM3, the p-chase's p50). The
// fitted value is the MCs' response_latency (configs/systems/h200.yaml, 377 memory
// cycles: the crossbar / memory-partition part of it).
TEST(Calibration, H200DramLatencyFittedToThePointerChase) {
  const GpuConfig gpu = system_gpu("h200.yaml");
  const std::uint64_t loads = 2000;
  GemmWorkload wl;
  wl.trace = parse_trace(fmt::format("t3trace 1\nkernel chase\nresources wfs=1 threads=32 stages=1\nprogram p\n"
                                     "  loop i {}\n    load 7342208*i 128\n    compute 1\n  end\nend\nwgs 1\nwg 0 p\n",
                                     loads),
                         "chase.trace");
  wl.description = "chase";
  const GemmResult r = run(gpu, std::move(wl));
  const double per_load_cycles =
      (seconds(r) - static_cast<double>(gpu.kernel_launch_latency.ps()) * 1e-12) / loads * gpu.cu.clock_hz;
  EXPECT_NEAR(per_load_cycles, 834.0, 834.0 * 0.03) << per_load_cycles;
}

// gpu.local_copy_kernel (tests/test_node.cpp NodeLocalCopy): its keys are checked,
// each error naming the file, line and key.
TEST(Gpu, LocalCopyKernelKeysAreNamedInTheirErrors) {
  EXPECT_THAT(gpu_error("gpu:\n  local_copy_kernel: {threads: 2048}\n"),
              ::testing::HasSubstr("sys.yaml:2: gpu.local_copy_kernel.threads:"));
  EXPECT_THAT(gpu_error("gpu:\n  local_copy_kernel:\n    regs_per_thread: 0\n"),
              ::testing::HasSubstr("sys.yaml:3: gpu.local_copy_kernel.regs_per_thread:"));
  EXPECT_THAT(gpu_error("gpu:\n  local_copy_kernel: {thread: 512}\n"),
              ::testing::HasSubstr("did you mean 'threads'"));
}

TEST(Gpu, KernelLaunchLatencyDelaysTheFirstDispatch) {
  GpuConfig gpu = table1_gpu();
  gpu.kernel_launch_latency = Tick();
  const GemmResult none = run(gpu, gemm(1024, 1024, 256, gpu));
  gpu.kernel_launch_latency = Tick::us(5);
  const GemmResult late = run(gpu, gemm(1024, 1024, 256, gpu));
  EXPECT_EQ(late.time, none.time + Tick::us(5));
  EXPECT_EQ(late.dram_read_bytes, none.dram_read_bytes);
  EXPECT_THAT(gpu_error("gpu:\n  kernel_launch_latency: soon\n"),
              ::testing::HasSubstr("sys.yaml:2: gpu.kernel_launch_latency:"));
}

// gpu.wg_dispatch_latency: a WG holds its slot from its placement and runs its first
// op that much later, so each wave of WGs pays it. 32 WGs of 256 x 128 on 80 CUs are
// one wave: +2 us exactly; on 8 CUs, 4 waves of 8: about 4 x 2 us.
TEST(Gpu, WgDispatchLatencyIsPaidOncePerWaveOfWgs) {
  GpuConfig gpu = table1_gpu();
  gpu.kernel_launch_latency = Tick();
  const GemmResult none = run(gpu, gemm(1024, 1024, 256, gpu));
  gpu.wg_dispatch_latency = Tick::us(2);
  const GemmResult late = run(gpu, gemm(1024, 1024, 256, gpu));
  EXPECT_EQ(late.time, none.time + Tick::us(2));
  gpu.wg_dispatch_latency = Tick();
  const double few = seconds(run(gpu, gemm(1024, 1024, 256, gpu, 8)));
  gpu.wg_dispatch_latency = Tick::us(2);
  const double few_late = seconds(run(gpu, gemm(1024, 1024, 256, gpu, 8)));
  EXPECT_NEAR(few_late - few, 4 * 2e-6, 0.5e-6) << few << " " << few_late;
  EXPECT_THAT(gpu_error("gpu:\n  wg_dispatch_latency: 5 apples\n"),
              ::testing::HasSubstr("sys.yaml:2: gpu.wg_dispatch_latency:"));
}

// gpu.collective.channels: the library's channel count (H200: NCCL's 24), read and
// checked like every key.
TEST(GpuCollective, TheLibrarysChannelCountIsReadAndChecked) {
  EXPECT_EQ(system_gpu("h200.yaml").collective_channels, 24u);
  EXPECT_EQ(table1_gpu().collective_channels, 0u);
  // gpu.collective.ll128: NCCL enables LL128 on Hopper over NVLink; Table 1 leaves it off.
  EXPECT_TRUE(system_gpu("h200.yaml").collective_ll128);
  EXPECT_FALSE(table1_gpu().collective_ll128);
  EXPECT_THAT(gpu_error("gpu:\n  collective:\n    ll128: maybe\n"),
              ::testing::HasSubstr("sys.yaml:3: gpu.collective.ll128:"));
  EXPECT_THAT(gpu_error("gpu:\n  collective:\n    chanels: 4\n"), ::testing::HasSubstr("did you mean 'channels'"));
  EXPECT_THAT(gpu_error("gpu:\n  collective:\n    channels: 5000\n"),
              ::testing::HasSubstr("sys.yaml:3: gpu.collective.channels:"));
}

// gpu.gemm: the GEMM kernel of the system (e.g. Hopper's 128x256x64 with 4 stages) is
// every generated GEMM's default; a workload key overrides it.
TEST(GpuGemmKernel, TheSystemsKernelIsTheDefaultAndAWorkloadOverridesIt) {
  ConfigTree sys = ConfigTree::parse(
      "gpu:\n  gemm:\n    tile_m: 128\n    tile_n: 256\n    k_step: 64\n    stages: 4\n    wfs_per_wg: 8\n"
      "    wave_size: 32\n    order: grouped\n    group_size: 4\n    issue_cycles: 12\n    cluster_m: 2\n"
      "  cu:\n    lds_size: 228KiB\n",
      "sys.yaml");
  ResolvedConfig resolved;
  ConfigNode root(&sys.root(), "", &resolved);
  const GpuConfig gpu = read_gpu_config(root.child("gpu"), root.child("memory"));
  EXPECT_EQ(gpu.gemm.tile_m, 128u);
  EXPECT_EQ(gpu.gemm.stages, 4u);
  EXPECT_EQ(gpu.gemm.order, TileOrder::kGrouped);
  EXPECT_EQ(gpu.gemm.issue_cycles, 12u);
  EXPECT_EQ(gpu.gemm.cluster_m, 2u);
  auto workload = [&](const std::string& yaml) {
    ConfigTree wl = ConfigTree::parse(yaml, "wl.yaml");
    ConfigNode w(&wl.root(), "", &resolved);
    return read_gemm_workload(w.child("workload"), gpu);
  };
  const GemmWorkload preset = workload("workload:\n  preset: tnlg.fc2.tp8\n");
  EXPECT_EQ(preset.params->tile_n, 256u);
  EXPECT_EQ(preset.params->k_step, 64u);
  EXPECT_EQ(preset.params->m, 8192u);
  EXPECT_EQ(preset.trace.resources.stages, 4u);
  EXPECT_EQ(preset.trace.resources.threads_per_wg, 8u * 32);
  EXPECT_EQ(preset.trace.resources.lds_bytes, 4u * (128 + 256) * 64 * 2);
  const GemmWorkload mine = workload("workload:\n  m: 512\n  n: 512\n  k: 512\n  tile_n: 128\n  stages: 2\n");
  EXPECT_EQ(mine.params->tile_m, 128u);
  EXPECT_EQ(mine.params->tile_n, 128u);
  EXPECT_EQ(mine.trace.resources.stages, 2u);
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    stages: 0\n"), ::testing::HasSubstr("sys.yaml:3: gpu.gemm.stages:"));
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    cluster_m: 0\n"), ::testing::HasSubstr("sys.yaml:3: gpu.gemm.cluster_m:"));
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    issue_cycles: -2\n"), ::testing::HasSubstr("sys.yaml:3: gpu.gemm.issue_cycles:"));
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    tile: 128\n"), ::testing::HasSubstr("sys.yaml:3: gpu.gemm.tile: unknown key"));
}

// The GEMM kernel a `workload:` YAML text gets on `gpu` (read_gemm_workload's params).
GemmParams gemm_workload_params(const GpuConfig& gpu, const std::string& yaml) {
  ResolvedConfig resolved;
  ConfigTree wl = ConfigTree::parse(yaml, "wl.yaml");
  ConfigNode w(&wl.root(), "", &resolved);
  return *read_gemm_workload(w.child("workload"), gpu).params;
}

// Issue 42 item 4: the H200 system runs, per Table 2 output shape, the tile cuBLAS 13
// picks (../shared/calibration/h200/cublas_kernels.csv, fp16 rows; nvjet's AxB is
// cuBLAS's m x n = torch's N x M), whatever K, and a workload key still overrides it.
TEST(GpuGemmKernel, TheH200RunsCublassTilePerOutputShape) {
  const GpuConfig gpu = system_gpu("h200.yaml");
  auto workload = [&](const std::string& yaml) { return gemm_workload_params(gpu, yaml); };
  struct Row {
    const char* preset;  // Table 2 shape
    std::uint32_t tile_m, tile_n, stages;
    const char* kernel;  // the csv's kernel for that shape
  };
  const Row rows[] = {
      {"megagpt2.op.tp8", 128, 256, 4, "Mega-GPT-2_TP8_OP_fwd: nvjet_sm90_hsh_256x128_64x4_1x2"},
      {"megagpt2.fc1.tp16", 128, 256, 4, "Mega-GPT-2_TP16_FC1_bwd_dgrad: nvjet_sm90_hsh_256x128_64x4_1x2"},
      {"gpt3.op.tp32", 128, 256, 4, "GPT-3_TP32_OP_fwd: nvjet_sm90_hsh_256x128_64x4_1x2"},
      {"gpt3.ip.tp32", 128, 256, 4, "GPT-3_TP32_IP_bwd_dgrad: nvjet_sm90_hsh_256x128_64x4_1x2"},
      {"palm.op.tp32", 192, 192, 4, "PALM_TP32_OP_fwd: nvjet_sm90_hsh_192x192_64x4_2x1"},
      {"palm.fc2.tp32", 192, 192, 4, "PALM_TP32_FC2_fwd: nvjet_sm90_hsh_192x192_64x4_2x1"},
      {"mtnlg.op.tp32", 128, 320, 3, "MT-NLG_TP32_OP_fwd: nvjet_sm90_hsh_320x128_64x3_1x2"},
      {"mtnlg.fc1.tp32", 128, 320, 3, "MT-NLG_TP32_FC1_bwd_dgrad: nvjet_sm90_hsh_320x128_64x3_1x2"},
      {"tnlg.fc2.tp8", 256, 160, 4, "T-NLG_TP8_FC2_fwd: nvjet_sm90_hsh_160x256_64x4_2x1"},
      {"tnlg.fc2.tp16", 256, 160, 4, "T-NLG_TP16_FC2_fwd: nvjet_sm90_hsh_160x256_64x4_2x1"},
  };
  for (const Row& r : rows) {
    const GemmParams p = workload(fmt::format("workload:\n  preset: {}\n", r.preset));
    EXPECT_EQ(p.tile_m, r.tile_m) << r.preset << " (" << r.kernel << ")";
    EXPECT_EQ(p.tile_n, r.tile_n) << r.preset << " (" << r.kernel << ")";
    EXPECT_EQ(p.stages, r.stages) << r.preset << " (" << r.kernel << ")";
    EXPECT_EQ(p.persistent_wgs, 132u) << r.preset;  // the entries keep gpu.gemm's other keys
  }
  // square_8192: nvjet_sm90_hsh_320x128_64x3_1x2, given by m, n, k.
  const GemmParams square = workload("workload:\n  m: 8192\n  n: 8192\n  k: 8192\n");
  EXPECT_EQ(square.tile_n, 320u);
  EXPECT_EQ(square.stages, 3u);
  // A workload's own key wins over the entry; another output shape runs gpu.gemm.
  EXPECT_EQ(workload("workload:\n  preset: palm.fc2.tp32\n  tile_n: 128\n").tile_n, 128u);
  EXPECT_EQ(workload("workload:\n  m: 4096\n  n: 4096\n  k: 512\n").tile_n, 256u);
  // A malformed shape or kernel key is named at its key.
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    by_output:\n      2048by512: {tile_m: 64}\n"),
              ::testing::HasSubstr("sys.yaml:4: gpu.gemm.by_output.2048by512: expected an output shape 'MxN'"));
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    by_output:\n      2048x512: {tile: 64}\n"),
              ::testing::HasSubstr("gpu.gemm.by_output.2048x512.tile: unknown key"));
}

// K not a multiple of 8 (issue 42 item 4): cuBLAS falls back to CUTLASS's Ampere
// align2 kernel whatever the output shape (cublas_kernels.csv: T-NLG_TP8_OP_fwd,
// K = 532; its aligned neighbour K = 528 runs the shape's nvjet kernel, measured in
// results/h200-measurements/gemm_k_sweep_random_points.csv): no TMA, 3 stages, a CTA
// per tile, no cluster, 230 registers.
TEST(GpuGemmKernel, AKNotAMultipleOfEightRunsTheAlign2Fallback) {
  const GpuConfig gpu = system_gpu("h200.yaml");
  auto workload = [&](const std::string& yaml) { return gemm_workload_params(gpu, yaml); };
  for (const char* preset : {"tnlg.op.tp8", "tnlg.op.tp16", "tnlg.ip.tp8", "tnlg.ip.tp16"}) {
    const GemmParams p = workload(fmt::format("workload:\n  preset: {}\n", preset));
    SCOPED_TRACE(fmt::format("{}: K = {}", preset, p.k));
    ASSERT_NE(p.k % 8, 0u);
    EXPECT_FALSE(p.tma);
    EXPECT_EQ(p.stages, 3u);
    EXPECT_EQ(p.persistent_wgs, 0u);
    EXPECT_EQ(p.cluster_m, 1u);
    EXPECT_EQ(p.regs_per_thread, 230u);
    EXPECT_EQ(p.tile_m, 128u);
    EXPECT_EQ(p.tile_n, 256u);
    // Ampere's mma.sync, its threads' 4-byte cp.async copies, the boost clock
    // (results/h200-measurements/align2_mainloop.csv).
    EXPECT_EQ(p.mma_flops_per_cycle, 2665u);
    EXPECT_EQ(p.load_issue_bytes_per_cycle, 32u);
    EXPECT_TRUE(p.boost_clock);
  }
  const GemmParams aligned = workload("workload:\n  m: 8192\n  n: 4256\n  k: 528\n");
  EXPECT_EQ(aligned.mma_flops_per_cycle, 0u);
  EXPECT_EQ(aligned.load_issue_bytes_per_cycle, 0u);
  EXPECT_FALSE(aligned.boost_clock);
  EXPECT_TRUE(aligned.tma);
  EXPECT_EQ(aligned.tile_n, 160u);  // by_output's 8192x4256 entry
  EXPECT_EQ(aligned.persistent_wgs, 132u);
  // The fallback needs its alignment.
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    unaligned: {tma: false}\n"),
              ::testing::HasSubstr("gpu.gemm.unaligned: expected gpu.gemm.k_alignment"));
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    k_alignment: 8\n    unaligned: {tme: false}\n"),
              ::testing::HasSubstr("gpu.gemm.unaligned.tme: unknown key"));
}

TEST(GpuConfigErrors, NameFileLineAndKey) {
  EXPECT_THAT(gpu_error("gpu:\n  num_cus: 0\n"), ::testing::HasSubstr("sys.yaml:2: gpu.num_cus:"));
  EXPECT_THAT(gpu_error("gpu:\n  cu:\n    max_wg: 4\n"),
              ::testing::HasSubstr("sys.yaml:3: gpu.cu.max_wg: unknown key (did you mean 'max_wgs'?)"));
  EXPECT_THAT(gpu_error("gpu:\n  cu:\n    clock: fast\n"), ::testing::HasSubstr("sys.yaml:3: gpu.cu.clock:"));
  EXPECT_THAT(gpu_error("gpu:\n  collective:\n    ll_max_bw: 87.7\n"),
              ::testing::HasSubstr("sys.yaml:3: gpu.collective.ll_max_bw:"));
  EXPECT_THAT(gpu_error("gpu:\n  collective:\n    ll128_max_bw_per_chanel: 36.7GB/s\n"),
              ::testing::HasSubstr("did you mean 'll128_max_bw_per_channel'?"));
  EXPECT_THAT(gpu_error("memory:\n  address_map:\n    channel_hash: xxor\n"),
              ::testing::HasSubstr("sys.yaml:3: memory.address_map.channel_hash: expected one of xor, none"));
  // The persistent grid (issue 41): a count, named at its key.
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    persistent_wgs: many\n"),
              ::testing::HasSubstr("sys.yaml:3: gpu.gemm.persistent_wgs:"));
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    persistant_wgs: 132\n"),
              ::testing::HasSubstr("sys.yaml:3: gpu.gemm.persistant_wgs: unknown key (did you mean 'persistent_wgs'?)"));
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    persistent_static_tiles: 65\n"),
              ::testing::HasSubstr("sys.yaml:3: gpu.gemm.persistent_static_tiles:"));
  // Cluster groups (issue 41): a divisor of the CUs; their order needs them.
  EXPECT_THAT(gpu_error("gpu:\n  num_cus: 132\n  cluster_group_cus: 5\n"),
              ::testing::HasSubstr("sys.yaml:3: gpu.cluster_group_cus: expected a divisor of num_cus (132)"));
  EXPECT_THAT(gpu_error("gpu:\n  cluster_group_block: 12\n"),
              ::testing::HasSubstr("sys.yaml:2: gpu.cluster_group_block: needs gpu.cluster_group_cus"));
  // An older kernel's keys (issue 42): counts and a boolean, named at their keys.
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    mma_flops_per_cycle: fast\n"),
              ::testing::HasSubstr("sys.yaml:3: gpu.gemm.mma_flops_per_cycle:"));
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    load_issue_bytes_per_cycle: -1\n"),
              ::testing::HasSubstr("sys.yaml:3: gpu.gemm.load_issue_bytes_per_cycle:"));
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    k_alignment: 8\n    unaligned: {boost_clock: maybe}\n"),
              ::testing::HasSubstr("gpu.gemm.unaligned.boost_clock:"));
  EXPECT_THAT(gpu_error("gpu:\n  gemm:\n    boost_clok: true\n"),
              ::testing::HasSubstr("did you mean 'boost_clock'?"));
}

std::string gemm_error(const std::string& yaml) {
  try {
    ConfigTree tree = ConfigTree::parse(yaml, "wl.yaml");
    ResolvedConfig resolved;
    ConfigNode root(&tree.root(), "", &resolved);
    read_gemm_workload(root.child("workload"), table1_gpu());
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(GemmWorkloadErrors, NameFileLineAndKey) {
  EXPECT_THAT(gemm_error("workload:\n  m: 512\n  n: 512\n"), ::testing::HasSubstr("wl.yaml:1: workload.k:"));
  EXPECT_THAT(gemm_error("workload:\n  preset: tnlg.fc2.tp8\n  store: uncahced\n"),
              ::testing::HasSubstr("wl.yaml:3: workload.store: expected one of cached, uncached, uncached-update"));
  EXPECT_THAT(gemm_error("workload:\n  preset: tnlg.fc2.tp8\n  cus: 81\n"), ::testing::HasSubstr("wl.yaml:3: workload.cus:"));
  EXPECT_THAT(gemm_error("workload:\n  preset: tnlg.fc2.tp8\n  tile: 256\n"),
              ::testing::HasSubstr("wl.yaml:3: workload.tile: unknown key"));
}

}  // namespace
}  // namespace t3sim
