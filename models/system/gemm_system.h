#pragma once
// An isolated GEMM on one GPU (issue 4 item 5): a tiled-GEMM trace (a Table 2 preset,
// explicit sizes, or a trace file) replayed by the CUs against the memory system.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "models/gpu/gpu.h"
#include "sim/simulator.h"
#include "trace/gemm.h"
#include "trace/trace.h"

namespace t3sim {

class ConfigNode;

struct GemmWorkload {
  KernelTrace trace;
  std::string description;  // "tnlg.fc2.tp8: 8192 x 4256 x 2128" or the trace file
  std::uint32_t cus = 0;    // CUs it may use (the first N; 0 = all)
  // The generator's parameters (preset or m/n/k; unset for a trace file): where the
  // output lives, for the collective that follows it.
  std::optional<GemmParams> params;
  std::uint32_t tp = 0;     // the preset's tensor-parallel degree (0: not a preset)
};

// A GEMM's size decided by its caller (e.g. a C3 preset, scaled).
struct GemmShape {
  std::uint64_t m = 0, n = 0, k = 0;
};

// Reads `kind: gemm`: `preset` or `m`, `n`, `k`, or `trace` (a file), plus tiling
// and store options. The GPU's matrix-core rate turns FLOPs into compute cycles.
// With `shape`, the size is that and none of preset, m, n, k or trace is read (the
// caller read them, or finish() rejects them).
GemmWorkload read_gemm_workload(ConfigNode workload, const GpuConfig& gpu, const GemmShape* shape = nullptr);

struct GemmResult {
  Tick time;                  // launch to last WG done
  double tflops = 0;
  std::uint64_t flops = 0;
  std::uint64_t dram_read_bytes = 0, dram_write_bytes = 0, dram_update_bytes = 0;
  double l2_hit_rate = 0;
  std::uint32_t wgs = 0, stages = 0, concurrent_wgs = 0;
  SamplingReport sampling;  // what sampling skipped (nothing unless enabled)
  double peak_tflops = 0, peak_dram_GBps = 0;
  nlohmann::json json;
};

class GemmSystem {
 public:
  // With sampling enabled, the GEMM's steady stages may be skipped (stage_sampler.h).
  GemmSystem(Simulator& sim, const GpuConfig& gpu, GemmWorkload workload, const SamplingConfig& sampling = {});
  GemmResult run(Tick max_time = Tick::max());
  std::string summary(const GemmResult& r) const;
  Gpu& gpu() { return *gpu_; }
  // WGs completed over the kernel's WGs (skipped ones, with sampling, count as not done).
  double progress();

 private:
  Simulator& sim_;
  GemmWorkload workload_;
  std::unique_ptr<Gpu> gpu_;
  SamplingConfig sampling_;
};

}  // namespace t3sim
