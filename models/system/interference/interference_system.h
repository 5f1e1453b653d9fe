#pragma once
// Interference between a GEMM and a concurrent copy (issue 41): the microbenchmark of
// ../shared/calibration/h200/interfere.py, run on the model. On GPU 0 a series of
// GEMMs runs back to back on one stream while another stream keeps copying without
// pause:
//
//   ce_local      a device-to-device cudaMemcpyAsync within GPU 0: the driver's copy
//                 kernel where the GPU has one (gpu.local_copy_kernel: H200, whose
//                 same-GPU copies run on the SMs), else a copy engine's copy
//   ce_peer_out   GPU 0's copy engine pushing into GPU 1
//   ce_peer_in    GPU 1's copy engine pushing into GPU 0
//   ce_peer_both  both at once
//   sm_local      a copy kernel of `ctas` CTAs on GPU 0 (trace/copy_kernel.h), local
//   sm_push       the same kernel storing into GPU 1 (remote stores)
//
// as interfere.py does: the copies (64 MiB each) are queued for 1.6 times the GEMMs'
// window at the copy's alone rate, the copies first (comm-first) or the GEMMs first
// (gemm-first), and both run to completion. Reported as the script reports:
//   gemm_alone    mean GEMM time of a series alone (its own run), after its first GEMM
//   gemm          the same beside the copies; slowdown = gemm / gemm_alone
// "After its first GEMM": the mean of the GEMMs from the second on (from the first one's
// end to the last one's, over n - 1). interfere.py times GEMMs in a warm steady state
// (after a second of them) and compares series of equal counts; in the model the first
// GEMM of a series runs on a clean L2 and every later one also writes back its
// predecessor's dirty output (megagpt2 op: 75.6 us, then 92 us each), so a mean over
// the whole series would depend on the series' length, and the two series here differ
// (`gemms` alone, up to 70 beside a copy). With one GEMM, its own time.
//   copy during   (copies completed inside the GEMM window - 1) x bytes over the span
//                 between the first and last of them, GPU 0's streams only
//   copy after    the same over the copies completed after the GEMMs (at least 3)
//
// Simplifications: the node is the system's GPU and network with two GPUs; queued
// kernels of one stream start when the previous one ends plus the GPU's kernel launch
// latency (a stream's next kernel is launched from the previous one's completion);
// the DMA engine's copy commands are all host-launched at once, one after another
// (DmaEngine::launch's host delay), as the script enqueues them.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/node/node.h"
#include "models/system/gemm_system.h"
#include "trace/copy_kernel.h"

namespace t3sim {

enum class Interferer { kNone, kCeLocal, kCePeerOut, kCePeerIn, kCePeerBoth, kSmLocal, kSmPush };
const std::vector<std::string>& interferer_names();  // in enum order: none, ce_local, ...
std::string_view to_string(Interferer i);

struct InterferenceSpec {
  GemmWorkload gemm;          // GPU 0's GEMM (a generated one: params set)
  std::string gemm_label;
  std::uint32_t gemms = 4;    // back to back, at least
  // More GEMMs when needed for the window to hold this many copies at their alone rate
  // (3x as many for a copy kernel, which beside a GEMM moves 12-40 % of it), so the
  // bandwidth during the GEMMs is measured over several completions (the measurement's
  // ~150 ms windows held 10-2,900).
  std::uint32_t window_copies = 6;
  Interferer interferer = Interferer::kNone;
  bool comm_first = true;     // the copies queued before the GEMMs
  std::uint64_t copy_bytes = 64ULL << 20;  // per copy (interfere.py's CH)
  CopyKernelParams copy_kernel;            // sm_*: its CTAs, threads, registers (addresses set per run)
  double copy_window = 1.6;   // copies queued for this many GEMM windows at their alone rate (interfere.py)
  std::uint32_t alone_copies = 4;  // copies of the alone run that sizes the queue
};

struct InterferenceResult {
  std::uint32_t gemms = 0;    // the series' length (spec.gemms, or more for window_copies)
  Tick gemm_alone, gemm;      // per GEMM
  double slowdown = 1;
  std::uint32_t copies = 0;   // queued in the concurrent run (per copying stream)
  Tick copy_alone;            // one copy's time in the alone run (the sizing)
  double copy_alone_GBps = 0;   // (alone copies - 1) x bytes over the span of their completions
  std::optional<double> copy_during_GBps;   // GPU 0's copying stream (none for ce_peer_in)
  std::vector<double> copy_after_GBps;      // each copying stream's, GPU 0's first
  // GPU 0's traffic during the concurrent run, by stream (compute: the GEMMs).
  std::uint64_t gemm_dram_bytes = 0, copy_dram_bytes = 0, gemm_l2_bytes = 0, copy_l2_bytes = 0;
  std::uint64_t events = 0;   // of the runs on their own simulators
  nlohmann::json json;
};

class InterferenceSystem {
 public:
  // Contract: spec.gemm.params is set; node.num_gpus >= 2 (two are simulated).
  InterferenceSystem(Simulator& sim, const NodeConfig& node, InterferenceSpec spec, std::uint64_t seed);
  ~InterferenceSystem();
  InterferenceResult run(Tick max_time);
  std::string summary(const InterferenceResult& r) const;
  const InterferenceSpec& spec() const { return spec_; }

 private:
  struct Run;
  Simulator& sim_;
  NodeConfig node_;
  InterferenceSpec spec_;
  std::uint64_t seed_;
};

}  // namespace t3sim
