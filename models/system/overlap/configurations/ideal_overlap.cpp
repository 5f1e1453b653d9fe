// `ideal-overlap`: the collective hidden entirely behind the compute or the other way
// round, max(isolated compute, isolated collective), both from the sequential run: the
// bound any overlap of the two can reach.

#include "models/system/overlap/overlap_system.h"

namespace t3sim {
namespace {

class IdealOverlap final : public OverlapConfiguration {
 public:
  bool fused() const override { return false; }
  Tick time(const OverlapResult& r) const override { return r.ideal; }
  std::string describe(const OverlapOp&) const override { return "max(isolated compute, isolated collective)"; }
};

}  // namespace

T3SIM_REGISTER(overlap_configurations, "ideal-overlap", "max(isolated compute, isolated CU collective)",
               [] { return std::make_unique<IdealOverlap>(); })

}  // namespace t3sim
