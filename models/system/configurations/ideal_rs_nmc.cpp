// `ideal-rs-nmc` (T3 §5.3, Ideal-RS+NMC): as ideal-overlap, with the reduce-scatter
// done by near-memory updates: max(isolated GEMM, isolated RS with NMC) + AG.

#include <fmt/format.h>

#include "models/system/configuration.h"
#include "models/system/sublayer_configuration.h"
#include "models/system/sublayer_system.h"
#include "models/t3/t3_collective.h"
#include "sim/error.h"

namespace t3sim {
namespace {

// The ring RS with near-memory updates on its own, on a node like the sub-layer's:
// T3Collective without a producer (the output is already in memory, each GPU
// DMA-updates its first chunk at once and every later one when the tracker has seen
// the incoming update).
IsolatedRs run_isolated_rs_nmc(const NodeConfig& cfg, const GemmWorkload& gemm, std::uint64_t seed) {
  Simulator sim(seed);
  Node node(sim, cfg);
  GemmParams p = *gemm.params;
  p.store_uncached = true;
  p.store_update = true;
  const KernelTrace trace = make_gemm_trace(p);  // only its output geometry is used
  T3CollectiveParams f;
  f.with_producer = false;
  f.seed = seed;
  T3Collective rs(node, trace, f);
  for (std::uint32_t g = 0; g < node.simulated_gpus(); ++g) {
    Simulator::InPartition in(sim, node.partition(g));
    rs.start(g);
  }
  sim.run();
  IsolatedRs r;
  for (std::uint32_t g = 0; g < node.simulated_gpus(); ++g) {
    if (!rs.done(g)) throw SimulationError(fmt::format("the isolated RS with NMC did not finish on GPU {}", g));
    r.time = std::max(r.time, rs.finished(g));
  }
  rs.finish();
  r.traffic = dram_totals(node.gpu(0).memory(), Stream::kCommunication);
  r.events = sim.dispatched();
  return r;
}

class IdealRsNmcConfiguration final : public SublayerConfiguration {
 public:
  void complete(SublayerSystem& s, SublayerResult& r) override {
    const IsolatedRs nmc = run_isolated_rs_nmc(s.node().config(), s.gemm(), s.seed());
    r.extra_events += nmc.events;
    s.make_ideal_result(r, &nmc);
  }
};

// A critical path over the sub-layer's tasks whose RS weighs another run's time: a
// sub-layer form of its own.
class IdealRsNmc final : public Configuration {
 public:
  Procedure procedure() const override { return Procedure::kCriticalPath; }
  bool runs(ConfigurationFamily family) const override { return family == ConfigurationFamily::kSublayer; }
  std::unique_ptr<SublayerConfiguration> sublayer() const override {
    return std::make_unique<IdealRsNmcConfiguration>();
  }
};

}  // namespace

T3SIM_REGISTER(configurations, "ideal-rs-nmc",
               "max(isolated GEMM, isolated ring RS with near-memory updates) + AG (sub-layers, T3 §5.3)",
               [] { return std::make_unique<IdealRsNmc>(); })

}  // namespace t3sim
