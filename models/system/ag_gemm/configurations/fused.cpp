// `fused` (seed 001, Triton-distributed's AMD AllGather-GEMM): the all-gather on the
// copy engines in chunks of chunk_rows rows, one stream per peer, each chunk's copy
// followed on its stream by a copy of a signal flag; a persistent GEMM (one WG per CU)
// whose tiles wait for the signal of the chunk they read, rows swizzled so that its
// own rows come first and the others in the order the copies land
// (trace/consumer_gemm.h; the host side in ag_gemm_system.h).

#include <fmt/format.h>

#include "models/system/ag_gemm/ag_gemm_system.h"

namespace t3sim {
namespace {

class Fused final : public AgGemmConfiguration {
 public:
  bool fused() const override { return true; }
  Tick time(const AgGemmResult& r) const override { return r.fused_gemm_end; }
  std::string describe(const AgGemmSpec& s) const override {
    return fmt::format("copy-engine all-gather in {}-row chunks with signals, {} streams, beside a persistent GEMM "
                       "waiting on them ({}, {})",
                       s.chunk_rows, s.streams > 0 ? fmt::to_string(s.streams) : std::string("one per GPU"),
                       s.swizzle ? "own rows first" : "the GEMM's own order",
                       s.copies_first ? "launched after the copies" : "launched before the copies");
  }
};

}  // namespace

T3SIM_REGISTER(ag_gemm_configurations, "fused",
               "copy-engine all-gather in signalled chunks beside a persistent GEMM whose tiles wait on them (seed 001)",
               [] { return std::make_unique<Fused>(); })

}  // namespace t3sim
