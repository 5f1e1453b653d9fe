#include "models/gpu/stage_sampler.h"

#include <algorithm>

namespace t3sim {

namespace {

// Field-by-field b - a (counters only grow).
StreamTraffic minus(const StreamTraffic& b, const StreamTraffic& a) {
  StreamTraffic d;
  for (int o = 0; o < kNumMemOps; ++o) {
    d.dram.requests[o] = b.dram.requests[o] - a.dram.requests[o];
    d.dram.bytes[o] = b.dram.bytes[o] - a.dram.bytes[o];
    d.l2.bytes[o] = b.l2.bytes[o] - a.l2.bytes[o];
  }
  d.dram.row_hits = b.dram.row_hits - a.dram.row_hits;
  d.dram.row_misses = b.dram.row_misses - a.dram.row_misses;
  d.dram.row_conflicts = b.dram.row_conflicts - a.dram.row_conflicts;
  d.l2.hits = b.l2.hits - a.l2.hits;
  d.l2.misses = b.l2.misses - a.l2.misses;
  return d;
}

// x * num / den, in 128 bits (a window's total scaled to the skipped stages).
__extension__ using Uint128 = unsigned __int128;
std::uint64_t scale(std::uint64_t x, std::uint64_t num, std::uint64_t den) {
  return static_cast<std::uint64_t>(static_cast<Uint128>(x) * num / den);
}

StreamTraffic scaled(const StreamTraffic& t, std::uint64_t num, std::uint64_t den) {
  StreamTraffic s;
  for (int o = 0; o < kNumMemOps; ++o) {
    s.dram.requests[o] = scale(t.dram.requests[o], num, den);
    s.dram.bytes[o] = scale(t.dram.bytes[o], num, den);
    s.l2.bytes[o] = scale(t.l2.bytes[o], num, den);
  }
  s.dram.row_hits = scale(t.dram.row_hits, num, den);
  s.dram.row_misses = scale(t.dram.row_misses, num, den);
  s.dram.row_conflicts = scale(t.dram.row_conflicts, num, den);
  s.l2.hits = scale(t.l2.hits, num, den);
  s.l2.misses = scale(t.l2.misses, num, den);
  return s;
}

std::uint64_t dram_bytes(const StreamTraffic& t) {
  std::uint64_t b = 0;
  for (int o = 0; o < kNumMemOps; ++o) b += t.dram.bytes[o];
  return b;
}

std::uint64_t l2_bytes(const StreamTraffic& t) {
  std::uint64_t b = 0;
  for (int o = 0; o < kNumMemOps; ++o) b += t.l2.bytes[o];
  return b;
}

// |a - b| within tolerance x their mean (both zero agree).
bool agree(std::uint64_t a, std::uint64_t b, double tolerance) {
  const double hi = static_cast<double>(std::max(a, b)), lo = static_cast<double>(std::min(a, b));
  return hi - lo <= tolerance * (hi + lo) / 2;
}

}  // namespace

nlohmann::json sampling_json(const SamplingConfig& cfg, const SamplingReport& report) {
  return {{"enabled", cfg.enabled},
          {"window_stages", cfg.window},
          {"tolerance", cfg.tolerance},
          {"tail_stages", cfg.tail},
          {"probe_period_ps", cfg.period.ps()},
          {"skips", report.skips},
          {"skipped_stages", report.skipped_stages},
          {"skipped_wgs", report.skipped_wgs},
          {"skipped_probe_periods", report.skipped_periods},
          {"skipped_time_ps", report.skipped_time.ps()},
          {"values", "not computed for skipped WGs"}};
}

StageSampler::StageSampler(SamplingConfig cfg) : cfg_(cfg) {}

// Two consecutive windows of `window` stages agree on their total time and on each
// stream's DRAM bytes, and neither saw communication traffic. Whole windows, not single
// stages: a GEMM's stages alternate (a wave of tiles may or may not share its rows of A
// with the previous one; T-NLG-like shapes swing 4 % in time and 20 % in traffic from
// one stage to the next) while their means over a few stages settle.
bool StageSampler::steady(const History& h) const {
  const std::size_t n = h.boundaries.size(), w = cfg_.window;
  if (n < 2 * w + 1) return false;
  const Boundary& a = h.boundaries[n - 1 - 2 * w];
  const Boundary& m = h.boundaries[n - 1 - w];
  const Boundary& b = h.boundaries[n - 1];
  auto window_agree = [&](auto measure) { return agree(measure(a, m), measure(m, b), cfg_.tolerance); };
  const int compute = index(Stream::kCompute), comm = index(Stream::kCommunication);
  if (!window_agree([](const Boundary& x, const Boundary& y) { return static_cast<std::uint64_t>((y.t - x.t).ps()); }))
    return false;
  if (!window_agree([&](const Boundary& x, const Boundary& y) {
        return dram_bytes(minus(y.traffic[compute], x.traffic[compute]));
      }))
    return false;
  const StreamTraffic comm_traffic = minus(b.traffic[comm], a.traffic[comm]);
  if (dram_bytes(comm_traffic) == 0 && l2_bytes(comm_traffic) == 0) return true;
  // Communication traffic: only work the sampler can skip too may cause it (a CU
  // collective is a kernel, and the GPU is then not alone), and that work must be
  // steady itself, as must the stream's DRAM traffic.
  std::uint64_t work_progress = 0;
  for (std::size_t i = 0; i < b.work.size(); ++i) {
    if (!b.work[i].skippable) return false;
    if (!agree(m.work[i].progress - a.work[i].progress, b.work[i].progress - m.work[i].progress, cfg_.tolerance))
      return false;
    work_progress += b.work[i].progress - a.work[i].progress;
  }
  if (work_progress == 0) return false;  // traffic from something the sampler cannot skip
  return window_agree([&](const Boundary& x, const Boundary& y) {
    return dram_bytes(minus(y.traffic[comm], x.traffic[comm]));
  });
}

StageSampler::Skip StageSampler::on_stage_boundary(std::uint32_t kernel, std::uint64_t epoch, Tick t,
                                                   const GpuTraffic& traffic, bool alone, std::uint64_t skippable,
                                                   const std::vector<SkippableWork::State>& work) {
  if (kernels_.size() <= kernel) kernels_.resize(kernel + 1);
  return consider(kernels_[kernel], epoch, t, traffic, alone, skippable, work);
}

StageSampler::Skip StageSampler::on_probe(std::uint64_t epoch, Tick t, const GpuTraffic& traffic,
                                          const std::vector<SkippableWork::State>& work) {
  // Work beside no kernel has no end of stages to sample up to, and its rate may change
  // slowly (a DMA all-gather alone issues reads 4 % faster than its links deliver for
  // its first ~180 us on MI300X, until its posted writes fill the network's queues):
  // each skip covers at most kProbeSkipSpans x the span it measured, then the rate is
  // measured again, so a change costs one skip's extrapolation at most. The skip is
  // bounded by the work too (consider() keeps `tail` of the stages it is offered).
  constexpr std::uint64_t kProbeSkipSpans = 4;
  const std::uint64_t cap = kProbeSkipSpans * 2 * cfg_.window;
  std::uint64_t progress = 0;
  for (const SkippableWork::State& w : work) progress += w.progress;
  const bool moved = progress != probe_progress_;
  probe_progress_ = progress;
  Skip skip = consider(probe_, epoch, t, traffic, /*alone=*/true, cap + cfg_.tail, work);
  // Periods in which nothing moved are not skipped (the GPU stops probing then).
  if (!moved) skip = Skip{};
  return skip;
}

StageSampler::Skip StageSampler::consider(History& h, std::uint64_t epoch, Tick t, const GpuTraffic& traffic,
                                          bool alone, std::uint64_t skippable,
                                          const std::vector<SkippableWork::State>& work) {
  if (h.epoch != epoch) {  // a kernel launched or ended since: measure afresh
    h.epoch = epoch;
    h.boundaries.clear();
  }
  h.boundaries.push_back(Boundary{t, traffic, work});
  Skip skip;
  if (!alone || skippable <= cfg_.tail || !steady(h)) return skip;
  std::uint64_t stages = skippable - cfg_.tail;
  const std::uint64_t measured = 2 * std::uint64_t{cfg_.window};
  const Boundary& first = h.boundaries[h.boundaries.size() - 1 - measured];
  const Boundary& last = h.boundaries.back();
  // The work beside the kernel goes on at its measured rate over the skipped time, and
  // must not run out inside it (its end is a change of environment, simulated in
  // detail): a window's worth of it is left for after the skip.
  for (std::size_t i = 0; i < work.size(); ++i) {
    const std::uint64_t progress = last.work[i].progress - first.work[i].progress;
    if (progress == 0) continue;
    const std::uint64_t keep = progress / 2;
    const std::uint64_t remaining = work[i].remaining;
    stages = remaining <= keep ? 0 : std::min(stages, scale(remaining - keep, measured, progress));
  }
  if (stages == 0) return skip;
  skip.stages = stages;
  for (std::size_t i = 0; i < work.size(); ++i)
    skip.work_bytes.push_back(scale(last.work[i].progress - first.work[i].progress, stages, measured));
  skip.time = Tick(static_cast<std::int64_t>(
      scale(static_cast<std::uint64_t>((last.t - first.t).ps()), skip.stages, measured)));
  for (int s = 0; s < kNumStreams; ++s)
    skip.traffic[s] = scaled(minus(last.traffic[s], first.traffic[s]), skip.stages, measured);
  h.boundaries.clear();  // what follows the skip is measured afresh
  return skip;
}

}  // namespace t3sim
