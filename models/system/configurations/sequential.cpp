#include "models/system/configurations/sequential.h"

#include <fmt/format.h>

#include "models/system/sublayer_system.h"

namespace t3sim {

void SequentialConfiguration::build(SublayerSystem& s) {
  rs_ = s.make_ring_collective(CollectiveKind::named("ring-rs"), /*uncached=*/false, s.values());
  // The GEMM's stores carry no values, so the input pattern written here survives
  // them and is what the reduce-scatter reduces.
  rs_->preload();
  ag_ = s.make_ring_collective(CollectiveKind::named("ring-ag"), /*uncached=*/false, s.values());
}

void SequentialConfiguration::start(SublayerSystem& s, std::uint32_t g) { s.launch_gemm(g, KernelLaunch{}); }

void SequentialConfiguration::on_gemm_end(SublayerSystem& s, std::uint32_t g) {
  // Kernel boundary: the GEMM's output leaves the L2 for DRAM (write-backs in the
  // compute stream, overlapping the reduce-scatter), so the breakdown counts it as
  // GEMM writes, as T3 Figure 18 does.
  s.node().gpu(g).memory().l2().write_back_dirty_lines();
  rs_->start(g, [this, &s](std::uint32_t gpu) {
    s.rs_ended(gpu, s.node().gpu(gpu).now());
    s.start_all_gather(gpu, *ag_);
  });
}

std::uint64_t SequentialConfiguration::verify(SublayerSystem& s, std::string& error) {
  if (!s.values()) return 0;
  // The all-gather leaves every chunk of every GPU holding the sum over GPUs: the
  // reduce-scatter's result, gathered (an all-reduce in two kernels).
  NodeCollectiveParams ar = rs_->params();
  ar.kind = CollectiveKind::named("ring-ar");
  const NodeCollective expect(s.node(), ar);
  return expect.verify(error);
}

std::string SequentialConfiguration::rs_label(const SublayerSystem&) const {
  return fmt::format("ring, {} CU channels", ag_->channels());
}

T3SIM_REGISTER(sublayer_configurations, "sequential",
               "GEMM on all CUs, then a CU ring reduce-scatter, then a CU ring all-gather (T3 §5.3's baseline)",
               [] { return std::make_unique<SequentialConfiguration>(); })

}  // namespace t3sim
