#pragma once
// A configuration's form for the transformer sub-layer (SPEC "Configurations";
// configuration.h): the same GEMM and the same reduce-scatter + all-gather of its
// output on the same node, one flag apart. The sub-layer driver (SublayerSystem) owns
// the node, the GEMM, the sub-layer's own tasks and the bookkeeping of phases and
// traffic. Its tasks are the GEMM, a CU ring RS of its output after it and a CU ring
// AG after the RS; run chained (ScenarioRun::start_chained: each task on a GPU when
// the one it depends on ended there), they are the sequential procedure.
//
// A configuration's sub-layer form is either a policy over those tasks (a
// SublayerConfiguration: what it changes in the node, how it completes the result), or
// a procedure of its own (a SublayerProcedure: what it builds, how each GPU starts and
// what follows its GEMM, what it verifies). The driver gives the generic procedures
// their forms (sublayer_form, below: sequential's tasks chained, ideal-overlap's
// critical path); a configuration gives its own (Configuration::sublayer):
//
//   sequential      (the driver's chained form) the tasks chained: GEMM, then the CU
//                   ring RS, then the CU ring AG (T3 §5.3's baseline)
//   ideal-overlap   (the driver's critical-path form) max(isolated GEMM, isolated RS) +
//                   AG (T3 §5.3), from sequential's run
//   ideal-rs-nmc    max(isolated GEMM, isolated RS with NMC) + AG (T3 §5.3)
//   t3, t3-mca      procedures: the GEMM fused with the RS through tracker + DMA + NMC
//                   (T3 §4), round-robin or MCA arbitration (T3 §4.5), then the AG
//   fused           a procedure: the GEMM and the RS in one persistent kernel: remote
//                   stores of finished tiles + flags, the owner reduces; then the AG
//                   (seed 000)
//
// See CONTRIBUTING.md for adding one.

#include <cstdint>
#include <memory>
#include <string>

#include "models/system/configuration.h"


namespace t3sim {

class SublayerSystem;
class SublayerProcedure;
struct SublayerResult;
struct NodeConfig;

// As it is, the sub-layer's tasks chained; a subclass may change the node and complete
// the result (the ideal bounds), or run a procedure of its own.
class SublayerConfiguration {
 public:
  virtual ~SublayerConfiguration() = default;

  // What it changes in the node's configuration before the node is built (T3: the
  // memory controllers' arbitration).
  virtual void configure_node(NodeConfig& node) const { (void)node; }
  // Its procedure of its own, or none: the sub-layer's tasks chained.
  virtual SublayerProcedure* procedure() { return nullptr; }
  // After the run and the check: completes the result (the ideal configurations
  // replace times with isolated runs; extra JSON). Simulations it runs besides the
  // main one add their events to r.extra_events.
  virtual void complete(SublayerSystem& s, SublayerResult& r) {
    (void)s;
    (void)r;
  }
};

// A configuration that runs the sub-layer its own way instead of the chained tasks
// (fused, t3): its own kernels and collectives, reporting the driver's phases (the
// GEMM through s.launch_gemm, the RS through s.rs_ended, the AG through
// s.start_all_gather).
class SublayerProcedure : public SublayerConfiguration {
 public:
  SublayerProcedure* procedure() final { return this; }
  // Builds its kernels and collectives on the built node; reads the sub-layer's
  // GEMM, options and functional mode from `s`. UserError for a GEMM it cannot run.
  virtual void build(SublayerSystem& s) = 0;
  // Starts GPU g at time zero (the caller is in GPU g's partition): launches the
  // GEMM through s.launch_gemm() and arms what runs beside it.
  virtual void start(SublayerSystem& s, std::uint32_t g) = 0;
  // True if the RS runs during the GEMM: its communication traffic then counts from
  // the start, not from the GEMM's end.
  virtual bool rs_overlaps_gemm() const { return false; }
  // GPU g's GEMM kernel ended (s has recorded its end): start what follows, and
  // report s.rs_ended(), then the all-gather through s.start_all_gather().
  virtual void on_gemm_end(SublayerSystem& s, std::uint32_t g) = 0;
  // After the run: checks the values (words checked; the first mismatch in `error`).
  virtual std::uint64_t verify(SublayerSystem& s, std::string& error) = 0;
  // The summary's description of its reduce-scatter and (if not the CU ring's) its
  // all-gather.
  virtual std::string rs_label(const SublayerSystem& s) const = 0;
  virtual std::string ag_label() const { return {}; }
};

// The sub-layer driver's form of a generic procedure (sublayer_system.cpp): kChained,
// the tasks chained (sequential's run, kept in the isolated-run store); kCriticalPath,
// that run taken or simulated, completed with the critical path
// (SublayerSystem::make_ideal_result). Contract: procedure is one of the two.
std::unique_ptr<SublayerConfiguration> sublayer_form(Procedure procedure);

}  // namespace t3sim
