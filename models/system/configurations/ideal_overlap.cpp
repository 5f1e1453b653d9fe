// `ideal-overlap`: the collective hidden entirely behind the compute or the other way
// round, from sequential's tasks each run alone: the bound any overlap can reach
// (Procedure::kCriticalPath: the critical path over the kind's declared tasks,
// ScenarioRun::critical_path, each weighing its time in the chained run):
//   sub-layer  T3 §5.3's Ideal-GEMM-RS-Overlap: the GEMM and the RS overlap perfectly,
//              without dependencies or contention: max(isolated GEMM, isolated RS) + AG
//   overlap    max(isolated compute, isolated collective)
// (Kind c3's bound of the same kind is `ideal`, seed 003's name.)

#include "models/system/configuration.h"

namespace t3sim {
namespace {

class IdealOverlap final : public Configuration {
 public:
  Procedure procedure() const override { return Procedure::kCriticalPath; }
  bool runs(ConfigurationFamily family) const override { return family != ConfigurationFamily::kC3; }
};

}  // namespace

T3SIM_REGISTER(configurations, "ideal-overlap",
               "max(isolated GEMM, isolated CU ring RS) + AG: overlap without dependencies or contention "
               "(sub-layers, T3 §5.3); max(isolated compute, isolated CU collective) (overlap kinds)",
               [] { return std::make_unique<IdealOverlap>(); })

}  // namespace t3sim
