#pragma once
// A collective algorithm (SPEC "Collectives"): how one operation's bytes travel
// between the GPUs, as a class chosen by name (Ramulator 2's registration, in spirit).
// Each algorithm is one file under collective/algorithms/ that registers itself with
// one T3SIM_REGISTER line; everything else asks it:
//
//   the trace generator   its CU kernel, channel by channel (build_channel), the
//                         receive and output areas it needs, its own parameter checks;
//   the node              whether homogeneous mode may run it (shift_invariant), its
//                         copy-engine form (copy_engine_copies), its link-bound time
//                         and bus-bandwidth factor (NCCL's busBw);
//   the readers           its name and aliases (`collective: ring-rs`).
//
// The algorithms are stateless: one instance of each, made when a name is first
// looked up (CollectiveKind::named), serves every run and thread.
//
// See CONTRIBUTING.md ("Add a collective algorithm") and collective/algorithms/
// halving_doubling.cpp, the worked example.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collective/collective.h"
#include "sim/registry.h"

namespace t3sim {

class ChannelProgram;

// What the link-bound time of a collective depends on: the node's GPU count, the
// per-GPU array, one link's bandwidth and latency, and how many distinct rings the
// channels run (ring algorithms; each ring its own links).
struct LinkBoundInput {
  double num_gpus = 0;
  double array_bytes = 0;
  double link_bytes_per_second = 0;
  double link_latency_seconds = 0;
  double rings_in_use = 1;
};

// One host-launched copy of a collective's copy-engine form, from the GPU the params
// name: `bytes` at `src` (its memory) to `dst` in GPU `to`'s memory (to == gpu: a
// local copy).
struct CollectiveCopy {
  std::uint32_t to = 0;
  std::uint64_t src = 0, dst = 0, bytes = 0;
};

class CollectiveAlgorithm {
 public:
  virtual ~CollectiveAlgorithm() = default;

  // What it computes.
  virtual CollectiveOp op() const = 0;
  // Other names readers accept for it (NCCL's operation names for the default
  // algorithm: "reduce_scatter" is the ring).
  virtual std::vector<std::string_view> aliases() const { return {}; }

  // Runs the channel pipeline of rings (algorithms/ring.cpp: FIFOs, slices, pieces):
  // ring strides, the protocols (Simple, LL, LL128) and NCCL's protocol tuner apply.
  virtual bool uses_rings() const { return false; }
  // GPU g's kernel is GPU 0's with every GPU index shifted by g (mod N): what lets
  // homogeneous mode run GPU 0 alone and mirror its traffic as its peers'. Pairings by
  // XOR (recursive halving / doubling) are not.
  virtual bool shift_invariant() const { return true; }

  // Bytes of the receive area (after the data) and of the output area (after that)
  // a kernel of these params uses; 0: none. The output area's blocks are mirrored
  // by chunk in homogeneous mode (all-to-all).
  virtual std::uint64_t recv_bytes(const CollectiveTraceParams& p) const {
    (void)p;
    return 0;
  }
  virtual std::uint64_t out_bytes(const CollectiveTraceParams& p) const {
    (void)p;
    return 0;
  }
  // Its own parameter checks, after the common ones (validate_collective); throws
  // CollectiveParamError naming the field.
  virtual void validate(const CollectiveTraceParams& p) const { (void)p; }
  // The program of WG `channel` of GPU p.gpu's kernel, into `b`.
  virtual void build_channel(ChannelProgram& b, const CollectiveTraceParams& p, std::uint32_t channel) const = 0;

  // The link-bound lower bound, in seconds: the bytes the busiest link of a GPU must
  // carry at the link's bandwidth, plus a link latency per dependent step.
  virtual double link_seconds(const LinkBoundInput& in) const = 0;
  // NCCL's bus-bandwidth factor (busBw = algBw x factor): (N-1)/N for reduce-scatter,
  // all-gather and all-to-all, 2(N-1)/N for all-reduce (nccl-tests' PERFORMANCE.md).
  virtual double bus_bandwidth_factor(std::uint32_t num_gpus) const;

  // Its copy-engine form (ConCCL-like: host-launched DMA commands), if it has one:
  // the copies GPU p.gpu submits, in submission order. Copy engines copy; they do
  // not reduce, so only gathers and exchanges have one.
  virtual bool has_copy_engine_form() const { return false; }
  virtual std::vector<CollectiveCopy> copy_engine_copies(const CollectiveTraceParams& p) const {
    (void)p;
    return {};
  }
};

using CollectiveAlgorithms = Registry<CollectiveAlgorithm>;
CollectiveAlgorithms& collective_algorithms();

// A direct algorithm's link bound: S/N to each peer on its own link at once, one
// latency.
inline double direct_link_seconds(const LinkBoundInput& in) {
  return in.array_bytes / in.num_gpus / in.link_bytes_per_second + in.link_latency_seconds;
}

// The copy-engine form of an all-gather (collective/algorithms/direct_all_gather.cpp):
// GPU p.gpu's own chunk to each peer, the next GPU first.
std::vector<CollectiveCopy> direct_all_gather_copies(const CollectiveTraceParams& p);

// The registered algorithms' names, then their aliases, for readers' enum checks.
std::vector<std::string> collective_kind_names();

}  // namespace t3sim
