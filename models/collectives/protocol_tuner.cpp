#include "models/collectives/protocol_tuner.h"

#include <algorithm>

namespace t3sim {

ChannelPipeline ChannelPipelineSpec::resolve(CollectiveProtocol p) const {
  ChannelPipeline c = ChannelPipeline::for_protocol(p);
  if (step_bytes) c.step_bytes = *step_bytes;
  if (fifo_depth) c.fifo_depth = *fifo_depth;
  if (slice_steps) c.slice_steps = *slice_steps;
  if (chunk_steps) c.chunk_steps = *chunk_steps;
  return c;
}

namespace {
// NVIDIA/nccl src/graph/tuning.cc (commit b647562), ring row, {LL, LL128, Simple}:
// baseLat and hwLat[NVLink]. (Commit 01afd20's, used before: {3.6, 10.0, 8.4} and
// {0.47, 1.9, 3.4}, with LL128 capped per collective at 18.3 / 15.2 / 16.7 GB/s per
// channel and LL uncapped; with those the tuner picked LL128 on H200 where NCCL 2.28
// never does for RS / AG.)
constexpr double kBaseLatUs[3] = {6.6, 14.0, 8.4};
constexpr double kNvlinkHwLatUs[3] = {0.6, 1.9, 3.4};
}  // namespace

std::vector<ProtocolEstimate> estimate_protocols(const ProtocolTunerInput& in) {
  const double n = in.num_gpus;
  const bool all_reduce = in.kind.op() == CollectiveOp::kAllReduce;
  const double nsteps = all_reduce ? 2 * (n - 1) : n - 1;
  const double ring_gbps = in.link_bytes_per_second / 1e9;
  std::vector<ProtocolEstimate> out;
  for (const CollectiveProtocol p : {CollectiveProtocol::kSimple, CollectiveProtocol::kLl, CollectiveProtocol::kLl128}) {
    const int i = p == CollectiveProtocol::kLl ? 0 : p == CollectiveProtocol::kLl128 ? 1 : 2;
    ProtocolEstimate e;
    e.protocol = p;
    e.enabled = p != CollectiveProtocol::kLl128 || in.ll128;
    // No cap (0): the bus bandwidth's share alone.
    auto capped = [](double gbps, double cap) { return cap > 0 ? std::min(gbps, cap) : gbps; };
    e.bus_gbps = p == CollectiveProtocol::kSimple ? ring_gbps
                 : p == CollectiveProtocol::kLl   ? capped(ring_gbps / (all_reduce ? 4.0 : 3.0), in.ll_max_gbps)
                                                  : capped(ring_gbps * 0.92, in.ll128_max_gbps_per_channel * in.channels);
    e.latency_us = kBaseLatUs[i] + nsteps * kNvlinkHwLatUs[i];
    const double alg_gbps = e.bus_gbps * n / nsteps;
    e.time_us = alg_gbps > 0 ? e.latency_us + static_cast<double>(in.array_bytes) / (1000.0 * alg_gbps) : 1e300;
    out.push_back(e);
  }
  return out;
}

CollectiveProtocol choose_protocol(const ProtocolTunerInput& in) {
  if (!in.kind.uses_rings() || in.num_gpus < 2) return CollectiveProtocol::kSimple;
  CollectiveProtocol best = CollectiveProtocol::kSimple;
  double best_time = 0;
  bool first = true;
  for (const ProtocolEstimate& e : estimate_protocols(in)) {
    if (!e.enabled) continue;
    if (first || e.time_us < best_time) best = e.protocol, best_time = e.time_us;
    first = false;
  }
  return best;
}

}  // namespace t3sim
