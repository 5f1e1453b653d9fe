#pragma once
// Arbitration between the compute and communication streams at a memory controller
// (T3 §4.5). Each memory cycle the controller asks its arbiter which stream's oldest
// waiting request may enter the DRAM queues (the read and write queues the FR-FCFS
// command scheduler works from). Policies are chosen by name in YAML
// (`arbiter: {type: mca, threshold: 10}`); see impl/ for each one.
//
// An arbiter only sees an ArbiterView, a plain value, so a policy is unit-tested by
// handing it hand-built queue states and asserting its choice (tests/test_arbiter.cpp).

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/mem/mem_request.h"
#include "sim/component.h"
#include "sim/registry.h"
#include "sim/time.h"

namespace t3sim {

class ConfigNode;

// One stream's side of the controller, as the arbiter sees it.
struct StreamQueueState {
  std::uint32_t waiting = 0;     // requests in this stream's ingress queue
  bool head_fits = false;        // the oldest one's DRAM queue (read or write) has room
  Cycles head_arrival;           // when the oldest one reached the controller
  std::uint32_t in_dram_queue = 0;  // this stream's requests in the DRAM queues
  // head_fits is false because the controller's admission observer holds the head
  // (i_admission_observer.h), not for want of DRAM-queue room.
  bool head_observer_blocked = false;
};

struct ArbiterView {
  Cycles now;
  std::array<StreamQueueState, kNumStreams> streams{};
  std::uint32_t occupancy = 0;  // requests in the DRAM read + write queues
  std::uint32_t capacity = 0;   // read + write queue capacity

  const StreamQueueState& operator[](Stream s) const { return streams[index(s)]; }
  StreamQueueState& operator[](Stream s) { return streams[index(s)]; }
  bool eligible(Stream s) const { return (*this)[s].waiting > 0 && (*this)[s].head_fits; }
};

// Every policy's parameters; each reader accepts only the keys its policy uses.
struct ArbiterConfig {
  std::string type = "fr-fcfs";  // fr-fcfs | round-robin | compute-first | mca
  // mca: communication enters only while occupancy < threshold (kUnlimited: always).
  static constexpr std::uint32_t kUnlimited = UINT32_MAX;
  std::uint32_t threshold = 10;
  // mca: cycles since the last communication admission after which one is forced.
  std::uint64_t starvation_limit = 2000;
  // mca dynamic mode: threshold picked from `thresholds` by the occupancy observed
  // while only compute traffic runs, over at most `profile_cycles` from kernel start.
  bool dynamic = false;
  std::vector<std::uint32_t> thresholds = {5, 10, 30, kUnlimited};
  std::uint64_t profile_cycles = 5000;
};

class Arbiter : public Component {
 public:
  Arbiter(Component& parent, std::string_view name) : Component(parent, name) {}

  // Contract: the stream whose oldest request enters the DRAM queues at view.now, or
  // nullopt to admit nothing this cycle. Only returns a stream with
  // view.eligible(stream). No side effects: the controller reports the admission it
  // makes through on_admit().
  virtual std::optional<Stream> choose(const ArbiterView& view) const = 0;

  // Contract: called when the controller admitted the oldest request of `s`.
  virtual void on_admit(Stream s, const ArbiterView& view) = 0;

  // Contract: called whenever the DRAM-queue occupancy or the waiting requests
  // change (after the change), for policies that watch occupancy over time.
  virtual void observe(const ArbiterView& /*view*/) {}
  // Contract: false if observe() never does anything, for the whole run; the
  // controller then does not build views only to observe them.
  virtual bool observes() const { return true; }

  // Contract: the earliest cycle after view.now at which choose() may answer
  // differently although nothing else changed (a starvation timer), so a sleeping
  // controller knows when to look again; nullopt if there is none.
  virtual std::optional<Cycles> next_change(const ArbiterView& /*view*/) const { return std::nullopt; }

  // Contract: the local compute kernel started / ended (T3 §4.5: MCA profiles the
  // kernel running alone, and drains communication at the kernel boundary).
  virtual void on_kernel_begin(Cycles /*now*/) {}
  virtual void on_kernel_end(Cycles /*now*/) {}
};

// The policies by name (the `type:` value); each registers itself in its impl/ file.
using ArbiterPolicies = Registry<Arbiter, Component&, const ArbiterConfig&>;
ArbiterPolicies& arbiter_policies();
// Their names and one-line descriptions, sorted by name.
std::vector<RegistryEntry> arbiter_types();
// Reads `arbiter:` (a mapping with `type:` and that policy's keys).
ArbiterConfig read_arbiter_config(ConfigNode node);
// The arbiter cfg.type names (a UserError if none is registered by that name), named
// "<parent>.arbiter".
std::unique_ptr<Arbiter> make_arbiter(Component& parent, const ArbiterConfig& cfg);

}  // namespace t3sim
