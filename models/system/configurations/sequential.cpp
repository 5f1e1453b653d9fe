// `sequential`: every kernel alone, one after the other, in the order of the
// dependency (each paper's baseline):
//   sub-layer  the GEMM on all CUs, then a CU ring reduce-scatter, then a ring
//              all-gather (T3 §5.3; sequential.h)
//   c3         the GEMM on every CU, then the CU collective; its time is the sum of
//              the two isolated times (seed 003)
//   overlap    the compute kernel, then the library's CU collective (seeds 000, 001)

#include "models/system/configurations/sequential.h"

#include <fmt/format.h>

#include "models/system/c3/c3_system.h"
#include "models/system/configuration.h"
#include "models/system/overlap/overlap_system.h"
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

namespace {

class C3Sequential final : public C3Configuration {
 public:
  bool concurrent() const override { return false; }
  Tick time(const C3Result& r) const override { return r.isolated_gemm + r.isolated_collective; }
  std::string describe(const C3Spec&) const override { return "GEMM, then the CU collective, each alone"; }
};

class OverlapSequential final : public OverlapConfiguration {
 public:
  bool fused() const override { return false; }
  Tick time(const OverlapResult& r) const override { return r.sequential; }
  std::string describe(const OverlapOp&) const override { return "the kernels one after the other"; }
};

}  // namespace

T3SIM_REGISTER(configurations, "sequential",
               "each kernel alone, one after the other: the GEMM, then a CU ring RS, then a ring AG (sub-layers, "
               "T3 §5.3's baseline); the GEMM, then the CU collective (c3, seed 003's); the compute kernel, then "
               "the CU collective (seeds 000, 001)",
               [] {
                 return std::make_unique<Configuration>(Configuration{
                     .sublayer = [] { return std::make_unique<SequentialConfiguration>(); },
                     .c3 = [] { return std::make_unique<C3Sequential>(); },
                     .overlap = [] { return std::make_unique<OverlapSequential>(); },
                 });
               })

}  // namespace t3sim
