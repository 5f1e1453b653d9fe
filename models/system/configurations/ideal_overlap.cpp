// `ideal-overlap` (T3 §5.3, Ideal-GEMM-RS-Overlap): the GEMM and the RS overlap
// perfectly, without dependencies or contention: max(isolated GEMM, isolated RS) + AG,
// from sequential's kernels each run alone.

#include <fmt/format.h>

#include "models/system/configurations/ideal.h"

namespace t3sim {

void make_ideal_result(SublayerResult& r, std::string_view configuration, const IsolatedRs* nmc) {
  Tick rs = r.rs;
  if (nmc != nullptr) {
    rs = nmc->time;
    r.traffic[1] = nmc->traffic;
  }
  r.json["isolated"] = {{"gemm_ps", r.gemm.ps()}, {"rs_ps", rs.ps()}, {"ag_ps", r.ag.ps()},
                        {"rs", nmc != nullptr ? "ring RS with NMC (tracker + DMA updates)" : "sequential's CU ring RS"}};
  r.note = fmt::format("  (from isolated runs: GEMM {:.4f} ms, RS {:.4f} ms, AG {:.4f} ms; RS above = exposed)\n",
                       static_cast<double>(r.gemm.ps()) * 1e-9, static_cast<double>(rs.ps()) * 1e-9,
                       static_cast<double>(r.ag.ps()) * 1e-9);
  r.rs = rs > r.gemm ? rs - r.gemm : Tick::zero();
  r.total = std::max(r.gemm, rs) + r.ag;
  r.json["configuration"] = configuration;
  r.json["time_ps"] = r.total.ps();
}

namespace {

class IdealOverlapConfiguration final : public SequentialConfiguration {
 public:
  void complete(SublayerSystem& s, SublayerResult& r) override { make_ideal_result(r, s.configuration(), nullptr); }
};

}  // namespace

T3SIM_REGISTER(sublayer_configurations, "ideal-overlap",
               "max(isolated GEMM, isolated CU ring RS) + AG: overlap without dependencies or contention "
               "(T3 §5.3)",
               [] { return std::make_unique<IdealOverlapConfiguration>(); })

}  // namespace t3sim
