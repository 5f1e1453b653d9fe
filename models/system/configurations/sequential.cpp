// `sequential`: every kernel alone, one after the other, in the order of the
// dependency (each paper's baseline):
//   sub-layer  the sub-layer's tasks chained (sublayer_system.h): the GEMM on all
//              CUs, then a CU ring reduce-scatter, then a ring all-gather (T3 §5.3)
//   c3         the GEMM on every CU, then the CU collective; its time is the sum of
//              the two isolated times (seed 003)
//   overlap    the compute kernel, then the library's CU collective (seeds 000, 001)

#include "models/system/c3/c3_system.h"
#include "models/system/configuration.h"
#include "models/system/overlap/overlap_system.h"
#include "models/system/sublayer_configuration.h"

namespace t3sim {
namespace {

// The sub-layer's tasks chained, as SublayerConfiguration runs them; its run is the one
// the ideal bounds complete (kept for them in a sweep's isolated-run store).
class SublayerSequential final : public SublayerConfiguration {
 public:
  SequentialRunUse sequential_run() const override { return SequentialRunUse::kKeep; }
};

class C3Sequential final : public C3Configuration {
 public:
  bool concurrent() const override { return false; }
  Tick time(const C3Result& r) const override { return r.isolated_gemm + r.isolated_collective; }
  std::string describe(const C3Spec&) const override { return "GEMM, then the CU collective, each alone"; }
};

class OverlapSequential final : public OverlapConfiguration {
 public:
  bool fused() const override { return false; }
  Tick time(const OverlapResult& r) const override { return r.sequential; }
  std::string describe(const OverlapOp&) const override { return "the kernels one after the other"; }
};

}  // namespace

T3SIM_REGISTER(configurations, "sequential",
               "each kernel alone, one after the other: the GEMM, then a CU ring RS, then a ring AG (sub-layers, "
               "T3 §5.3's baseline); the GEMM, then the CU collective (c3, seed 003's); the compute kernel, then "
               "the CU collective (seeds 000, 001)",
               [] {
                 return std::make_unique<Configuration>(Configuration{
                     // No procedure of its own: the sub-layer's tasks, chained.
                     .sublayer = [] { return std::make_unique<SublayerSequential>(); },
                     .c3 = [] { return std::make_unique<C3Sequential>(); },
                     .overlap = [] { return std::make_unique<OverlapSequential>(); },
                 });
               })

}  // namespace t3sim
