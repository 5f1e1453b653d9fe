// `sequential`: every task alone, one after the other, in the order of the dependencies
// (each paper's baseline): Procedure::kChained, which each family's driver runs as its
// tasks chained (ScenarioRun::start_chained):
//   sub-layer  the GEMM on all CUs, then a CU ring reduce-scatter, then a ring
//              all-gather (T3 §5.3)
//   c3         the GEMM on every CU, then the CU collective; its time is the sum of
//              the two isolated times (seed 003)
//   overlap    the compute kernel, then the library's CU collective (seeds 000, 001)

#include "models/system/configuration.h"

namespace t3sim {
namespace {

class Sequential final : public Configuration {
 public:
  Procedure procedure() const override { return Procedure::kChained; }
};

}  // namespace

T3SIM_REGISTER(configurations, "sequential",
               "each kernel alone, one after the other: the GEMM, then a CU ring RS, then a ring AG (sub-layers, "
               "T3 §5.3's baseline); the GEMM, then the CU collective (c3, seed 003's); the compute kernel, then "
               "the CU collective (seeds 000, 001)",
               [] { return std::make_unique<Sequential>(); })

}  // namespace t3sim
