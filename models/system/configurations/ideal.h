#pragma once
// T3 §5.3's ideal configurations come from isolated runs: they run the sub-layer's
// tasks chained, as `sequential` does (its GEMM, RS and AG each alone), and replace its
// total by the critical path over the tasks' data dependencies
// (SublayerSystem::critical_path: the RS only ordered after the GEMM, the AG needing
// both), each task weighing its time alone:
//   ideal-overlap  max(GEMM, RS) + AG: no dependency and no contention between GEMM and RS
//   ideal-rs-nmc   max(GEMM, RS with NMC) + AG, the RS with near-memory updates run alone

#include "models/system/sublayer_configuration.h"
#include "models/system/sublayer_system.h"

namespace t3sim {

// An isolated reduce-scatter: its time (the last GPU done) and GPU 0's
// communication-stream traffic.
struct IsolatedRs {
  Tick time;
  PhaseTraffic traffic;
  std::uint64_t events = 0;
};

// Turns s's sequential result `r` into the ideal one: total = the critical path,
// r.rs = the part of the RS a GEMM of sequential's length leaves exposed. `nmc`: the
// isolated RS with NMC (its time the RS's weight, its traffic the RS traffic), or null
// (sequential's RS). Records the isolated times in r.json["isolated"] and a line for
// the summary.
void make_ideal_result(const SublayerSystem& s, SublayerResult& r, const IsolatedRs* nmc);

}  // namespace t3sim
