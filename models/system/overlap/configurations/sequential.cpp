// `sequential`: the bulk-synchronous kernels one after the other (seed 000's and seed
// 001's baselines): the compute kernel and the library's CU collective, in the order
// of the dependency, each a kernel of its own.

#include "models/system/overlap/overlap_system.h"

namespace t3sim {
namespace {

class Sequential final : public OverlapConfiguration {
 public:
  bool fused() const override { return false; }
  Tick time(const OverlapResult& r) const override { return r.sequential; }
  std::string describe(const OverlapOp&) const override { return "the kernels one after the other"; }
};

}  // namespace

T3SIM_REGISTER(overlap_configurations, "sequential",
               "the compute kernel and the CU collective one after the other (seeds 000, 001: the baseline)",
               [] { return std::make_unique<Sequential>(); })

}  // namespace t3sim
