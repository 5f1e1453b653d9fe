#pragma once
// An idealized memory (`memory.model: ideal`): one FIFO data path that moves every
// request's bytes at `bandwidth`, each request completing `latency` after its
// transfer ends. No cache, banks, rows or queues, and no back-pressure: the
// requesters (CUs, DMA engines, the network) bound their own requests in flight.
// It stands where the L2 + memory controllers + HBM stand (models/memsys), behind
// the same MemTarget port, for studies where memory must not be the bottleneck
// (the analytical-agreement runs of configs/systems/ring8.yaml).
//
// It is functional like the HBM: one 64-bit word per value granule; reads return the
// stored words (zeros where nothing was written), writes store, updates add
// (op-and-store). Values are applied when a request completes, so they change in
// completion order, which is issue order.

#include <array>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "models/common/payload.h"
#include "models/mem/mem_request.h"
#include "models/mem/word_store.h"
#include "sim/component.h"

namespace t3sim {

struct IdealMemoryConfig {
  Tick latency = Tick::ns(100);
  Bandwidth bandwidth = Bandwidth(1'000'000'000'000ULL);  // 1 TB/s
  std::uint32_t value_granule = 32;  // bytes per functional word (a power of two)
};

class IdealMemory final : public Component, public MemTarget {
 public:
  IdealMemory(Component& parent, std::string_view name, const IdealMemoryConfig& cfg);

  // MemTarget: every request is taken at once.
  bool can_accept(const MemRequest&) const override { return true; }
  void accept(MemRequest&& req) override;
  void wait_for_space(MemClient*) override {}  // never refuses, so never calls back

  // Requests and bytes completed, per stream and operation.
  std::uint64_t requests(Stream s, MemOp op) const { return requests_[index(s)][index(op)]; }
  std::uint64_t bytes(Stream s, MemOp op) const { return bytes_[index(s)][index(op)]; }
  // When the latest request completed.
  Tick last_response() const { return last_response_; }

  // Functional state outside simulated time (initial data, final checks). Contract:
  // address and bytes are multiples of the value granule.
  void preload(std::uint64_t address, const Payload& data);
  Payload peek(std::uint64_t address, std::uint32_t bytes) const;

  void report_in_flight(std::vector<std::string>& out) const override;

 private:
  struct Pending {
    Tick done;
    MemRequest req;
  };
  void complete();
  void apply(MemRequest& req);
  static constexpr std::uint64_t kPageWords = 4096;

  IdealMemoryConfig cfg_;
  std::uint32_t granule_shift_;
  Tick server_free_;
  Tick last_response_;
  std::deque<Pending> pending_;
  WordStore values_{kPageWords};  // one word per value granule
  std::array<std::array<std::uint64_t, kNumMemOps>, kNumStreams> requests_{}, bytes_{};
  CallbackEvent complete_event_;
  Counter& read_bytes_;
  Counter& write_bytes_;
  Counter& update_bytes_;
  Counter& busy_time_;
};

}  // namespace t3sim
