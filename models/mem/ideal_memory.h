#pragma once
// An idealized per-GPU memory: one FIFO server that moves data at `bandwidth`, each
// access completing `latency` after its transfer. No banks, rows or queues: this is
// the stand-in of the first vertical slice, to be replaced by L2 + memory
// controller + HBM (models/cache, models/mc, models/hbm).
//
// It is functional: it stores the Payload of every block written, returns it on
// reads, and applies updates (op-and-store) by adding. Blocks are addressed by
// their start address and must be accessed whole (the engine keeps them aligned).

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>

#include "models/common/payload.h"
#include "models/mem/mem_request.h"
#include "sim/component.h"

namespace t3sim {

struct IdealMemoryConfig {
  Tick latency = Tick::ns(100);
  Bandwidth bandwidth = Bandwidth(1'000'000'000'000ULL);  // 1 TB/s
};

struct MemAccess {
  MemOp op = MemOp::kRead;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint64_t tag = 0;  // the requester's, returned untouched
  Payload data;           // write/update: the operand; read completion: the data read
};

class IdealMemory final : public Component {
 public:
  IdealMemory(Component& parent, std::string_view name, const IdealMemoryConfig& cfg);

  // Contract: every access completes, in order, through the on_complete callback.
  void access(MemAccess a);
  void set_on_complete(std::function<void(MemAccess&&)> fn) { on_complete_ = std::move(fn); }

  // Functional state, outside simulated time (initial data, final checks).
  void preload(std::uint64_t address, Payload data) { store_[address] = std::move(data); }
  const Payload* peek(std::uint64_t address) const;

  void report_in_flight(std::vector<std::string>& out) const override;

 private:
  struct Pending {
    Tick done;
    MemAccess access;
  };
  void complete();
  void apply(MemAccess& a);

  IdealMemoryConfig cfg_;
  Tick server_free_;
  std::deque<Pending> pending_;
  std::unordered_map<std::uint64_t, Payload> store_;
  std::function<void(MemAccess&&)> on_complete_;
  CallbackEvent complete_event_;
  Counter& read_bytes_;
  Counter& write_bytes_;
  Counter& update_bytes_;
  Counter& busy_time_;
};

}  // namespace t3sim
