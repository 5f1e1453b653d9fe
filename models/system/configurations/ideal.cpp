// `ideal` (seed 003 §IV-B3): the shorter kernel entirely in the shadow of the longer,
// without interference: max(isolated GEMM, isolated collective).

#include "models/system/c3/c3_system.h"
#include "models/system/configuration.h"

namespace t3sim {
namespace {

class C3Ideal final : public C3Configuration {
 public:
  bool concurrent() const override { return false; }
  Tick time(const C3Result& r) const override { return r.ideal; }
  std::string describe(const C3Spec&) const override {
    return "max of the isolated GEMM and CU collective (no interference)";
  }
};

}  // namespace

T3SIM_REGISTER(configurations, "ideal",
               "max(isolated GEMM, isolated CU collective): the overlap without interference (seed 003 §IV-B3)",
               [] {
                 return std::make_unique<Configuration>(
                     Configuration{.c3 = [] { return std::make_unique<C3Ideal>(); }});
               })

}  // namespace t3sim
