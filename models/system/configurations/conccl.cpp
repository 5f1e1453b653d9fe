// `conccl` (seed 003 §VI): the collective offloaded to the DMA engines while the GEMM
// has the CUs. The DMA collective is host-launched, direct: one transfer per peer
// spread over the engines, each paying the command launch and the completion-sync
// latency (dma.launch_latency, dma.completion_latency), its reads going to the memory
// controllers past the L2 (models/dma). `comm_cus: N` keeps N CUs from the GEMM
// (§VI-F: fewer CUs can help a memory-bound GEMM).

#include <fmt/format.h>

#include "models/system/configuration.h"

namespace t3sim {
namespace {

class Conccl final : public Configuration {
 public:
  Procedure procedure() const override { return Procedure::kOverlapped; }
  // The host launches the GEMM, then the DMA transfers, whatever the workload's order.
  ConcurrentLaunch launch() const override {
    ConcurrentLaunch l;
    l.collective_first = false;
    l.collective_on_dma = true;
    return l;
  }
  std::string describe(const LaunchRequest& r) const override {
    return r.reserved_cus > 0
               ? fmt::format("collective on the DMA engines, the GEMM on all but {} CUs", r.reserved_cus)
               : std::string("collective on the DMA engines, the GEMM on every CU");
  }
};

}  // namespace

T3SIM_REGISTER(configurations, "conccl",
               "GEMM on the CUs, the collective on the DMA engines (direct, host-launched: ConCCL, seed 003 §VI)",
               [] { return std::make_unique<Conccl>(); })

}  // namespace t3sim
