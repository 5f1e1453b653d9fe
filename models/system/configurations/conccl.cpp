// `conccl` (seed 003 §VI): the collective offloaded to the DMA engines while the GEMM
// has the CUs. The DMA collective is host-launched, direct: one transfer per peer
// spread over the engines, each paying the command launch and the completion-sync
// latency (dma.launch_latency, dma.completion_latency), its reads going to the memory
// controllers past the L2 (models/dma). `comm_cus: N` keeps N CUs from the GEMM
// (§VI-F: fewer CUs can help a memory-bound GEMM).

#include <fmt/format.h>

#include "models/system/c3/c3_system.h"
#include "models/system/configuration.h"

namespace t3sim {
namespace {

class C3Conccl final : public C3Configuration {
 public:
  bool concurrent() const override { return true; }
  bool uses_dma() const override { return true; }
  // The host launches the GEMM, then the DMA transfers, whatever the workload's order.
  bool collective_first(const C3Spec&) const override { return false; }
  Tick time(const C3Result& r) const override { return std::max(r.gemm.end, r.collective.end); }
  std::string describe(const C3Spec& s) const override {
    return s.comm_cus > 0 ? fmt::format("collective on the DMA engines, the GEMM on all but {} CUs", s.comm_cus)
                          : std::string("collective on the DMA engines, the GEMM on every CU");
  }
};

}  // namespace

T3SIM_REGISTER(configurations, "conccl",
               "GEMM on the CUs, the collective on the DMA engines (direct, host-launched: ConCCL, seed 003 §VI)",
               [] {
                 return std::make_unique<Configuration>(
                     Configuration{.c3 = [] { return std::make_unique<C3Conccl>(); }});
               })

}  // namespace t3sim
