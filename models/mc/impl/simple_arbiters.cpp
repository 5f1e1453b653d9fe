// The stream-unaware and the simple stream-aware policies. Each is a few lines; MCA,
// the one with state worth reading, has its own file (mca.cpp).

#include "models/mc/impl/simple_arbiters.h"

namespace t3sim {

// fr-fcfs: stream-blind. The older waiting request enters first, whichever stream it
// belongs to; row-hit-first reordering then happens in the DRAM queues.
std::optional<Stream> FrFcfsArbiter::choose(const ArbiterView& v) const {
  const bool c = v.eligible(Stream::kCompute), m = v.eligible(Stream::kCommunication);
  if (c && m) {
    return v[Stream::kCommunication].head_arrival < v[Stream::kCompute].head_arrival
               ? Stream::kCommunication
               : Stream::kCompute;
  }
  if (c) return Stream::kCompute;
  if (m) return Stream::kCommunication;
  return std::nullopt;
}

// round-robin: T3's baseline (§4.5, §6.1.2): alternate streams, fall back to the
// other when the preferred one has nothing that fits.
std::optional<Stream> RoundRobinArbiter::choose(const ArbiterView& v) const {
  const Stream preferred = last_ == Stream::kCompute ? Stream::kCommunication : Stream::kCompute;
  if (v.eligible(preferred)) return preferred;
  if (v.eligible(last_)) return last_;
  return std::nullopt;
}

void RoundRobinArbiter::on_admit(Stream s, const ArbiterView&) { last_ = s; }

// compute-first: compute whenever it has a request that fits, else communication.
// Prioritizing compute "as accesses appear" (T3 §4.5) does not protect it from
// communication requests already in the DRAM queues; MCA adds the occupancy limit.
std::optional<Stream> ComputeFirstArbiter::choose(const ArbiterView& v) const {
  if (v.eligible(Stream::kCompute)) return Stream::kCompute;
  if (v.eligible(Stream::kCommunication)) return Stream::kCommunication;
  return std::nullopt;
}


T3SIM_REGISTER(arbiter_policies, "fr-fcfs", "stream-blind: the older ingress head enters first",
               [](Component& mc, const ArbiterConfig&) { return std::make_unique<FrFcfsArbiter>(mc); })
T3SIM_REGISTER(arbiter_policies, "round-robin",
               "T3's baseline: alternate between the streams, falling back to the other one",
               [](Component& mc, const ArbiterConfig&) { return std::make_unique<RoundRobinArbiter>(mc); })
T3SIM_REGISTER(arbiter_policies, "compute-first", "compute whenever it fits, communication otherwise",
               [](Component& mc, const ArbiterConfig&) { return std::make_unique<ComputeFirstArbiter>(mc); })

}  // namespace t3sim
