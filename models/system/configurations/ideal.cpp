// `ideal` (seed 003 §IV-B3): the shorter kernel entirely in the shadow of the longer,
// without interference: max(isolated GEMM, isolated collective) (Procedure::kCriticalPath
// over kind c3's tasks; `ideal-overlap` is the same bound under T3's name for the other
// kinds).

#include "models/system/configuration.h"

namespace t3sim {
namespace {

class C3Ideal final : public Configuration {
 public:
  Procedure procedure() const override { return Procedure::kCriticalPath; }
  bool runs(ConfigurationFamily family) const override { return family == ConfigurationFamily::kC3; }
};

}  // namespace

T3SIM_REGISTER(configurations, "ideal",
               "max(isolated GEMM, isolated CU collective): the overlap without interference (seed 003 §IV-B3)",
               [] { return std::make_unique<C3Ideal>(); })

}  // namespace t3sim
