// `sequential` (seed 001's baseline, the tutorial's torch_ag_gemm): the library
// all-gather of A on the CUs (RCCL's), then the library GEMM, each a kernel of its own.

#include <fmt/format.h>

#include "models/system/ag_gemm/ag_gemm_system.h"

namespace t3sim {
namespace {

class Sequential final : public AgGemmConfiguration {
 public:
  bool fused() const override { return false; }
  Tick time(const AgGemmResult& r) const override { return r.sequential; }
  std::string describe(const AgGemmSpec&) const override { return "CU all-gather, then the GEMM"; }
};

}  // namespace

T3SIM_REGISTER(ag_gemm_configurations, "sequential", "the CU all-gather of A, then the GEMM (seed 001's baseline)",
               [] { return std::make_unique<Sequential>(); })

}  // namespace t3sim
