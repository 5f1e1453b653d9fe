// `c3-priority` (seed 003 §V-A's schedule prioritization, as a stream priority instead
// of a launch order): the GEMM and the CU collective at once on two streams, the
// collective's at a higher priority. Launched in the workload's order (gemm-first, the
// default, is the case the priority is for), so the GEMM may fill every free slot
// first; from then on, whenever slots free, the dispatcher places the collective's
// waiting WGs before the GEMM's (models/gpu/gpu.h), as HIP's and CUDA's stream
// priorities order the hardware queues. `comm_cus` reserves CUs as for `c3`.
//
// What it shows beside c3_base and c3_sp: a starved collective waits for the first
// slots to free, not for the GEMM's whole grid to be placed (c3_base), yet the GEMM's
// first wave is not held back (c3_sp).

#include <fmt/format.h>

#include "models/system/configuration.h"

namespace t3sim {
namespace {

class C3Priority final : public Configuration {
 public:
  Procedure procedure() const override { return Procedure::kOverlapped; }
  ConcurrentLaunch launch() const override {
    ConcurrentLaunch l;
    l.collective_priority = 1;
    return l;
  }
  std::string describe(const LaunchRequest& r) const override {
    return fmt::format("{} launched first, the collective's kernel at a higher priority",
                       r.collective_first ? "collective" : "GEMM") +
           reserved_cus_note(r.reserved_cus);
  }
};

}  // namespace

T3SIM_REGISTER(configurations, "c3-priority",
               "as c3, the collective's kernel at a higher priority: placed first whenever WG slots free "
               "(seed 003 §V-A's prioritization as a stream priority)",
               [] { return std::make_unique<C3Priority>(); })

}  // namespace t3sim
