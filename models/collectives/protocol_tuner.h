#pragma once
// The protocol a CU collective's channels use (collective/collective.h CollectiveProtocol),
// as a workload gives it, and `auto`: the choice NCCL's tuner makes.
//
// NCCL's tuner (src/graph/tuning.cc, ncclTopoTuneModel / ncclTopoGetAlgoTime; the
// constants of NVIDIA/nccl commit b647562) predicts each protocol's time for a ring
// collective as
//   time = baseLat[p] + nsteps x hwLat[NVLink][p] + bytes / algBw[p]
//   algBw = busBw[p] x N / nsteps   (nsteps: N-1 for RS / AG, 2(N-1) for AR)
//   busBw: simple = the ring's bandwidth; ll = a third of it (a quarter for AR), at
//          most llMaxBw; ll128 = min(0.92 x it, perChMaxRingLL128Bw x channels)
// and runs the fastest enabled one. The two caps depend on the GPU generation in NCCL
// (llMaxBws, perChMaxRingLL128Bws: NCCL 2.28's Hopper 141 and 36.7 GB/s on one node), so they are
// the system's (gpu.collective.ll_max_bw, ll128_max_bw_per_channel; none when unset).
// LL128 is enabled only where the system says so (gpu.collective.ll128: NCCL enables
// it on NVLink on the GPUs it was tested on). With these the choice on 4 x H200 is
// NCCL 2.28's at every size of ../shared/calibration/h200/README.md's table
// (tests/test_protocol.cpp), and on 2 x H200 at every size of NCCL 2.28.9's own TUNING
// log but 1 MiB (results/h200-measurements point 30: that log's table prints LL at
// 141 GB/s of bus bandwidth and Simple at 360, where this model takes the link's 396).
// Simplifications: the ring's bandwidth is the node's link bandwidth per direction
// (NCCL's is its topology search's per-channel speed x channels); the NVLink
// latencies are used on every system (RCCL's own tables are not modelled).

#include <cstdint>
#include <optional>
#include <vector>

#include "collective/collective.h"

namespace t3sim {

// A workload's channel pipeline: the protocol (nullopt: auto) and the sizes it sets
// explicitly; the others are the protocol's defaults (ChannelPipeline::for_protocol).
struct ChannelPipelineSpec {
  std::optional<CollectiveProtocol> protocol = CollectiveProtocol::kSimple;
  std::optional<std::uint64_t> step_bytes;
  std::optional<std::uint32_t> fifo_depth, slice_steps, chunk_steps;
  ChannelPipeline resolve(CollectiveProtocol p) const;
};

struct ProtocolTunerInput {
  CollectiveKind kind;  // ring-rs unless set
  std::uint64_t array_bytes = 0;  // per GPU (NCCL's nBytes for RS / AG / AR)
  std::uint32_t num_gpus = 2;
  std::uint32_t channels = 1;
  double link_bytes_per_second = 0;
  bool ll128 = false;
  double ll_max_gbps = 0;                 // LL's bus bandwidth cap (0: none)
  double ll128_max_gbps_per_channel = 0;  // LL128's per channel (0: none)
};

struct ProtocolEstimate {
  CollectiveProtocol protocol = CollectiveProtocol::kSimple;
  bool enabled = true;
  double latency_us = 0, bus_gbps = 0, time_us = 0;
};

// Every protocol's predicted time, in the order simple, ll, ll128.
std::vector<ProtocolEstimate> estimate_protocols(const ProtocolTunerInput& in);
// The fastest enabled one (simple for non-ring kinds, which have no other).
CollectiveProtocol choose_protocol(const ProtocolTunerInput& in);

}  // namespace t3sim
