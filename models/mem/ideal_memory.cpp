#include "models/mem/ideal_memory.h"

#include <fmt/format.h>

#include "sim/error.h"

namespace t3sim {

IdealMemory::IdealMemory(Component& parent, std::string_view name, const IdealMemoryConfig& cfg)
    : Component(parent, name),
      cfg_(cfg),
      complete_event_(this->name() + ".complete", [this] { complete(); }, EventPriority::kDelivery),
      read_bytes_(counter("read_bytes", "B", "bytes read")),
      write_bytes_(counter("write_bytes", "B", "bytes written")),
      update_bytes_(counter("update_bytes", "B", "bytes updated in place (op-and-store)")),
      busy_time_(counter("busy_time", "ps", "time the data path was busy")) {}

void IdealMemory::access(MemAccess a) {
  const Tick start = server_free_ > now() ? server_free_ : now();
  const Tick transfer = cfg_.bandwidth.transfer_time(a.bytes);
  server_free_ = start + transfer;
  busy_time_ += transfer.ps();
  switch (a.op) {
    case MemOp::kRead: read_bytes_ += a.bytes; break;
    case MemOp::kWrite: write_bytes_ += a.bytes; break;
    case MemOp::kUpdate: update_bytes_ += a.bytes; break;
  }
  // Completions are in order (one server, one latency), so one event serves them all.
  pending_.push_back(Pending{server_free_ + cfg_.latency, std::move(a)});
  if (!complete_event_.scheduled()) sim().schedule(complete_event_, pending_.front().done);
}

void IdealMemory::apply(MemAccess& a) {
  // The data is read or written when the access completes: that is when the
  // requester learns of it, and accesses complete in issue order.
  switch (a.op) {
    case MemOp::kRead: {
      const Payload* p = peek(a.address);
      T3SIM_CHECK(p != nullptr, fmt::format("read of unwritten block 0x{:x}", a.address));
      a.data = *p;
      break;
    }
    case MemOp::kWrite:
      store_[a.address] = a.data;
      break;
    case MemOp::kUpdate: {
      auto it = store_.find(a.address);
      T3SIM_CHECK(it != store_.end(), fmt::format("update of unwritten block 0x{:x}", a.address));
      T3SIM_CHECK(it->second.words.size() == a.data.words.size(),
                  fmt::format("update of block 0x{:x} with a payload of another size", a.address));
      it->second.add(a.data);
      break;
    }
  }
}

void IdealMemory::complete() {
  while (!pending_.empty() && pending_.front().done <= now()) {
    MemAccess a = std::move(pending_.front().access);
    pending_.pop_front();
    apply(a);
    sim().note_progress();
    if (on_complete_) on_complete_(std::move(a));
  }
  if (!pending_.empty() && !complete_event_.scheduled())
    sim().schedule(complete_event_, pending_.front().done);
}

const Payload* IdealMemory::peek(std::uint64_t address) const {
  auto it = store_.find(address);
  return it == store_.end() ? nullptr : &it->second;
}

void IdealMemory::report_in_flight(std::vector<std::string>& out) const {
  if (!pending_.empty())
    out.push_back(fmt::format("{} accesses in flight, next completes at {} ps", pending_.size(),
                              pending_.front().done.ps()));
}

}  // namespace t3sim
