// `ideal-overlap`: the collective hidden entirely behind the compute or the other way
// round, from sequential's kernels each run alone: the bound any overlap can reach.
//   sub-layer  T3 §5.3's Ideal-GEMM-RS-Overlap: the GEMM and the RS overlap perfectly,
//              without dependencies or contention: max(isolated GEMM, isolated RS) + AG
//   overlap    max(isolated compute, isolated collective)
// (each the critical path over the kind's declared tasks, ScenarioRun::critical_path)
// (Kind c3's bound of the same kind is `ideal`, seed 003's name.)

#include <fmt/format.h>

#include "models/system/configuration.h"
#include "models/system/configurations/ideal.h"
#include "models/system/overlap/overlap_system.h"

namespace t3sim {

void make_ideal_result(const SublayerSystem& s, SublayerResult& r, const IsolatedRs* nmc) {
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
  r.total = s.critical_path(r.gemm, rs, r.ag);
  r.json["configuration"] = s.configuration();
  r.json["time_ps"] = r.total.ps();
}

namespace {

class IdealOverlapConfiguration final : public SublayerConfiguration {
 public:
  SequentialRunUse sequential_run() const override { return SequentialRunUse::kTake; }
  void complete(SublayerSystem& s, SublayerResult& r) override { make_ideal_result(s, r, nullptr); }
};

class OverlapIdealOverlap final : public OverlapConfiguration {
 public:
  bool fused() const override { return false; }
  Tick time(const OverlapResult& r) const override { return r.ideal; }
  std::string describe(const OverlapOp&) const override { return "max(isolated compute, isolated collective)"; }
};

}  // namespace

T3SIM_REGISTER(configurations, "ideal-overlap",
               "max(isolated GEMM, isolated CU ring RS) + AG: overlap without dependencies or contention "
               "(sub-layers, T3 §5.3); max(isolated compute, isolated CU collective) (overlap kinds)",
               [] {
                 return std::make_unique<Configuration>(Configuration{
                     .sublayer = [] { return std::make_unique<IdealOverlapConfiguration>(); },
                     .overlap = [] { return std::make_unique<OverlapIdealOverlap>(); },
                 });
               })

}  // namespace t3sim
