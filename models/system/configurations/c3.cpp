// `c3` (seed 003 §IV-C, §V): the GEMM and the CU collective launched at once on
// separate streams. The dispatcher (models/gpu) places their WGs: with `order:
// gemm-first` (the paper's c3_base) the GEMM's WGs take the free slots first and the
// collective's wait for slots to free; `comm-first` (c3_sp, schedule prioritization)
// launches the collective first so its WGs are placed before the GEMM's. `comm_cus: N`
// reserves the last N CUs for the collective's stream and the others for the GEMM's
// (§V-B, CU masks), whatever the order.

#include "models/system/configuration.h"

namespace t3sim {
namespace {

class C3Concurrent final : public Configuration {
 public:
  Procedure procedure() const override { return Procedure::kOverlapped; }
  std::string describe(const LaunchRequest& r) const override {
    return (r.collective_first ? "collective launched first (c3_sp)" : "GEMM launched first (c3_base)") +
           reserved_cus_note(r.reserved_cus);
  }
};

}  // namespace

T3SIM_REGISTER(configurations, "c3",
               "GEMM and CU collective at once on two streams; order: gemm-first (c3_base) | comm-first (c3_sp); "
               "comm_cus: CUs reserved for the collective (seed 003 §IV-C, §V)",
               [] { return std::make_unique<C3Concurrent>(); })

}  // namespace t3sim
