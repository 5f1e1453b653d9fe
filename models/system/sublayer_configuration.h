#pragma once
// A configuration's form for the transformer sub-layer (SPEC "Configurations";
// configuration.h): the same GEMM and the same reduce-scatter + all-gather of its
// output on the same node, one flag apart. The sub-layer driver (SublayerSystem) owns
// the node, the GEMM and the bookkeeping of phases and traffic; a configuration decides
// what it changes in the node, what it builds, how each GPU starts and what follows its
// GEMM, and what it verifies. The configurations with a sub-layer form (one file each
// under models/system/configurations/, registered in configurations()):
//
//   sequential      GEMM, then a CU ring RS, then a CU ring AG (T3 §5.3's baseline)
//   t3, t3-mca      the GEMM fused with the RS through tracker + DMA + NMC (T3 §4),
//                   round-robin or MCA arbitration (T3 §4.5), then the AG
//   ideal-overlap   max(isolated GEMM, isolated RS) + AG (T3 §5.3)
//   ideal-rs-nmc    max(isolated GEMM, isolated RS with NMC) + AG (T3 §5.3)
//   fused           the GEMM and the RS in one persistent kernel: remote stores of
//                   finished tiles + flags, the owner reduces; then the AG (seed 000)
//
// See CONTRIBUTING.md for adding one.

#include <cstdint>
#include <memory>
#include <string>


namespace t3sim {

class SublayerSystem;
struct SublayerResult;
struct NodeConfig;

class SublayerConfiguration {
 public:
  virtual ~SublayerConfiguration() = default;

  // What it changes in the node's configuration before the node is built (T3: the
  // memory controllers' arbitration).
  virtual void configure_node(NodeConfig& node) const { (void)node; }
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
  // After the run and the check: completes the result (the ideal configurations
  // replace times with isolated runs; extra JSON). Simulations it runs besides the
  // main one add their events to r.extra_events.
  virtual void complete(SublayerSystem& s, SublayerResult& r) {
    (void)s;
    (void)r;
  }
  // The summary's description of its reduce-scatter and (if not the CU ring's) its
  // all-gather.
  virtual std::string rs_label(const SublayerSystem& s) const = 0;
  virtual std::string ag_label() const { return {}; }
};


}  // namespace t3sim
