// `ideal-overlap`: the all-gather hidden entirely behind the GEMM or the other way
// round, max(isolated all-gather, isolated GEMM), both from the sequential run: the
// bound any overlap of the two (seed 001's included) can reach.

#include "models/system/ag_gemm/ag_gemm_system.h"

namespace t3sim {
namespace {

class IdealOverlap final : public AgGemmConfiguration {
 public:
  bool fused() const override { return false; }
  Tick time(const AgGemmResult& r) const override { return r.ideal; }
  std::string describe(const AgGemmSpec&) const override { return "max(isolated all-gather, isolated GEMM)"; }
};

}  // namespace

T3SIM_REGISTER(ag_gemm_configurations, "ideal-overlap", "max(isolated CU all-gather, isolated GEMM)",
               [] { return std::make_unique<IdealOverlap>(); })

}  // namespace t3sim
