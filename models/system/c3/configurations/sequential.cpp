// `sequential` (seed 003's baseline): the GEMM on every CU, then the CU collective,
// each alone; its time is the sum of the two isolated times.

#include <fmt/format.h>

#include "models/system/c3/c3_system.h"

namespace t3sim {
namespace {

class C3Sequential final : public C3Configuration {
 public:
  bool concurrent() const override { return false; }
  Tick time(const C3Result& r) const override { return r.isolated_gemm + r.isolated_collective; }
  std::string describe(const C3Spec&) const override { return "GEMM, then the CU collective, each alone"; }
};

}  // namespace

T3SIM_REGISTER(c3_configurations, "sequential",
               "the GEMM on every CU, then the CU collective: each alone, one after the other (seed 003's "
               "baseline)",
               [] { return std::make_unique<C3Sequential>(); })

}  // namespace t3sim
