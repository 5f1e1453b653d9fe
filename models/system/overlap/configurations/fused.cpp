// `fused`: the op's fused form (ops.h): seed 000's persistent kernels that push their
// output to its owners with remote stores and flags, or seed 001's copy-engine chunks
// with signals beside a persistent GEMM waiting on them.

#include "models/system/overlap/overlap_system.h"

namespace t3sim {
namespace {

class Fused final : public OverlapConfiguration {
 public:
  bool fused() const override { return true; }
  Tick time(const OverlapResult& r) const override { return r.fused; }
  std::string describe(const OverlapOp& op) const override { return op.describe_fused(); }
};

}  // namespace

T3SIM_REGISTER(overlap_configurations, "fused",
               "the op's fused form: persistent kernels with remote stores and flags (seed 000), or copy-engine "
               "chunks with signals beside a persistent GEMM (seed 001)",
               [] { return std::make_unique<Fused>(); })

}  // namespace t3sim
