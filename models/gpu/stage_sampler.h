#pragma once
// Steady-state sampling of long kernels (`run.sampling`, opt-in; issue 20 item 4).
//
// A GEMM larger than the GPU runs in stages (waves of WGs, models/gpu/README.md). Once
// its stages repeat, simulating more of them tells nothing new: the sampler watches
// each sampleable kernel's stage boundaries (every `concurrent_slots`-th WG to end) and,
// when the last two windows of `window` stages agree within `tolerance` on their time
// and on each stream's DRAM traffic, and nothing else runs beside the kernel, it tells
// the GPU to skip the kernel's remaining stages but the last `tail` (and those in
// flight):
//
//   stage:    1      2 .. 5    6 .. 9    10      11 ... 40    41  42
//             ramp   window    window    in      skip: 30     tail
//                    [ time, traffic  ]  flight  stages at    detailed
//                    [ agree          ]          their mean
//
// The GPU then drops those stages' WGs before they are dispatched, moves the
// simulator's reported time on by their mean time (Simulator::skip_ahead) and adds
// their mean traffic to the memory system's totals. The WGs in flight and the tail run
// in detail, so the kernel's end (its last wave's drain) is simulated, not estimated.
//
// "Nothing else runs" is checked, not assumed: no other kernel with a WG placed on the
// GPU for the whole window (an epoch counter moves at every kernel launch, first WG
// placed and end; a kernel launched behind this one whose WGs wait for its slots does
// not run beside it, so it does not prevent skipping), and no
// communication-stream traffic at the L2 or the controllers during it (a collective,
// a DMA engine's copy or a peer's stores would show there). A skip is instantaneous and
// happens only at a stage boundary, so nothing can start "during" it; what is launched
// later (a kernel chained on this one's end) starts at the reported time. A model that
// schedules work at a fixed future time beside a sampled kernel would see that time
// compressed by the skip: the workload kinds that allow sampling (gemm, c3) do not.
//
// Work beside no kernel at all (a DMA collective alone, or after the GEMM it ran beside
// ended) has no stages: a GPU with skippable work and no kernel in flight probes it
// every `period` instead (on_probe), and the same rule applies to those periods: two
// windows of `window` periods that agree on each work's progress and each stream's
// DRAM traffic, and the work goes on at that rate over the skipped time, keeping half
// a window's worth, at least, for after the skip so its end is simulated.
//
// Simplifications (stated in results and models/gpu/README.md): values are not
// computed for skipped WGs (a sampled kernel carries none: KernelLaunch::sampleable);
// histograms, time-weighted statistics and the timeline cover the simulated stretches
// only; a kernel of fewer than 2 x window + tail + 3 stages is never skipped.

#include <array>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/cache/l2_cache.h"
#include "models/common/skippable_work.h"
#include "models/mc/memory_controller.h"
#include "models/mem/mem_request.h"
#include "sim/time.h"

namespace t3sim {

struct SamplingConfig {
  bool enabled = false;
  // Stages per window: two consecutive windows (after the first stage, the ramp) must
  // agree on their time and DRAM traffic before the stages after them are skipped.
  std::uint32_t window = 4;
  // |first - second| / their mean, for the windows' time and each stream's DRAM bytes.
  double tolerance = 0.02;
  // Stages always simulated at a kernel's end (its last waves drain unevenly).
  std::uint32_t tail = 2;
  // The probe of skippable work while no kernel runs: one "stage" per period.
  Tick period = Tick::us(5);
};

// One stream's traffic at one GPU: at the controllers and at the L2.
struct StreamTraffic {
  McStreamStats dram;  // counts only (latency, occupancy null)
  L2Cache::StreamTotals l2;
};
using GpuTraffic = std::array<StreamTraffic, kNumStreams>;

// What a sampled GPU skipped, for the results.
struct SamplingReport {
  std::uint32_t skips = 0;           // fast-forwards
  std::uint64_t skipped_stages = 0;  // stages of WGs not simulated
  std::uint64_t skipped_wgs = 0;
  std::uint64_t skipped_periods = 0;  // probe periods of work beside no kernel not simulated
  Tick skipped_time;                 // reported time they account for (stages and periods)
};

// results.json's "sampling": the settings, what was skipped, and that skipped WGs
// carry no values.
nlohmann::json sampling_json(const SamplingConfig& cfg, const SamplingReport& report);

class StageSampler {
 public:
  explicit StageSampler(SamplingConfig cfg);

  // What to skip now: `stages` whole stages taking `time`, with `traffic` (per stream),
  // and `work_bytes[i]` of the i-th work beside the kernel.
  struct Skip {
    std::uint64_t stages = 0;
    Tick time;
    GpuTraffic traffic{};
    std::vector<std::uint64_t> work_bytes;
  };
  // A sampleable kernel reached a stage boundary at reported time `t`, with the GPU's
  // traffic totals `traffic` then. `epoch`: the GPU's kernel launch/end count; `alone`:
  // no other kernel in flight; `skippable`: its stages not yet dispatched; `work`: the
  // state of the work beside it (SkippableWork, in a fixed order).
  Skip on_stage_boundary(std::uint32_t kernel, std::uint64_t epoch, Tick t, const GpuTraffic& traffic, bool alone,
                         std::uint64_t skippable, const std::vector<SkippableWork::State>& work = {});

  // The GPU's work probe fired (no kernel in flight): one period ended at reported time
  // `t`. `skip.stages` are then whole periods.
  Skip on_probe(std::uint64_t epoch, Tick t, const GpuTraffic& traffic,
                const std::vector<SkippableWork::State>& work);

  const SamplingConfig& config() const { return cfg_; }

 private:
  struct Boundary {
    Tick t;
    GpuTraffic traffic;
    std::vector<SkippableWork::State> work;
  };
  struct History {
    std::uint64_t epoch = ~std::uint64_t{0};
    std::vector<Boundary> boundaries;  // since the last epoch change or skip, oldest first
  };
  bool steady(const History& h) const;
  // Records a boundary in `h` and decides the skip (at most `skippable` stages).
  Skip consider(History& h, std::uint64_t epoch, Tick t, const GpuTraffic& traffic, bool alone,
                std::uint64_t skippable, const std::vector<SkippableWork::State>& work);

  SamplingConfig cfg_;
  std::vector<History> kernels_;  // by kernel id
  History probe_;                 // the work probe's periods
  std::uint64_t probe_progress_ = 0;  // the work's total progress at the last probe
};

}  // namespace t3sim
