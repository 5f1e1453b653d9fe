#include "models/mem/ideal_memory.h"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "sim/error.h"

namespace t3sim {

IdealMemory::IdealMemory(Component& parent, std::string_view name, const IdealMemoryConfig& cfg)
    : Component(parent, name),
      cfg_(cfg),
      granule_shift_(static_cast<std::uint32_t>(std::countr_zero(cfg.value_granule))),
      complete_event_(event_source(), this->name() + ".complete", [this] { complete(); }, EventPriority::kDelivery),
      read_bytes_(counter("read_bytes", "B", "bytes read")),
      write_bytes_(counter("write_bytes", "B", "bytes written")),
      update_bytes_(counter("update_bytes", "B", "bytes updated in place (op-and-store)")),
      busy_time_(counter("busy_time", "ps", "time the data path was busy")) {
  if (!std::has_single_bit(cfg.value_granule))
    throw std::invalid_argument("the ideal memory's value granule must be a power of two");
}

void IdealMemory::accept(MemRequest&& req) {
  const std::uint64_t bytes = req.total_bytes();
  const Tick start = std::max(server_free_, now());
  const Tick transfer = cfg_.bandwidth.transfer_time(bytes);
  server_free_ = start + transfer;
  busy_time_ += transfer.ps();
  switch (req.op) {
    case MemOp::kRead: read_bytes_ += bytes; break;
    case MemOp::kWrite: write_bytes_ += bytes; break;
    case MemOp::kUpdate: update_bytes_ += bytes; break;
  }
  ++requests_[index(req.stream)][index(req.op)];
  bytes_[index(req.stream)][index(req.op)] += bytes;
  // One server and one latency: completions come in issue order, so one event serves
  // them all.
  pending_.push_back(Pending{server_free_ + cfg_.latency, std::move(req)});
  if (!complete_event_.scheduled()) sim().schedule(complete_event_, pending_.front().done);
}

void IdealMemory::complete() {
  while (!pending_.empty() && pending_.front().done <= now()) {
    MemRequest req = std::move(pending_.front().req);
    pending_.pop_front();
    apply(req);
    last_response_ = now();
    sim().note_progress();
    MemClient* client = req.client;
    client->on_mem_response(std::move(req));
  }
  if (!pending_.empty() && !complete_event_.scheduled()) sim().schedule(complete_event_, pending_.front().done);
}

void IdealMemory::apply(MemRequest& req) {
  // Timing-only traffic may be any size; only traffic carrying values must be whole words.
  if (req.data.empty()) return;
  const std::uint64_t mask = cfg_.value_granule - 1;
  T3SIM_CHECK((req.address & mask) == 0 && (req.bytes & mask) == 0 && (req.rows == 1 || (req.row_stride & mask) == 0),
              fmt::format("{} of {} x {} B at {:#x} is not aligned to the {} B value granule", to_string(req.op),
                          req.rows, req.bytes, req.address, cfg_.value_granule));
  const std::size_t row_words = req.bytes >> granule_shift_;
  T3SIM_CHECK(req.data.words.size() == row_words * req.rows,
              fmt::format("{} of {} x {} B carries {} words, expected {}", to_string(req.op), req.rows, req.bytes,
                          req.data.words.size(), row_words * req.rows));
  for (std::uint32_t r = 0; r < req.rows; ++r) {
    const std::uint64_t first = (req.address + std::uint64_t{r} * req.row_stride) >> granule_shift_;
    std::uint64_t* words = req.data.words.data() + std::size_t{r} * row_words;
    switch (req.op) {
      case MemOp::kRead: values_.read(first, words, row_words); break;
      case MemOp::kWrite: values_.write(first, words, row_words); break;
      case MemOp::kUpdate: values_.add(first, words, row_words); break;
    }
  }
}

void IdealMemory::preload(std::uint64_t address, const Payload& data) {
  T3SIM_CHECK((address & (cfg_.value_granule - 1)) == 0,
              fmt::format("preload at {:#x} is not aligned to the {} B value granule", address, cfg_.value_granule));
  values_.write(address >> granule_shift_, data.words.data(), data.words.size());
}

Payload IdealMemory::peek(std::uint64_t address, std::uint32_t bytes) const {
  const std::uint64_t mask = cfg_.value_granule - 1;
  T3SIM_CHECK((address & mask) == 0 && (bytes & mask) == 0,
              fmt::format("peek of {} B at {:#x} is not aligned to the {} B value granule", bytes, address,
                          cfg_.value_granule));
  Payload out;
  out.words.assign(bytes >> granule_shift_, 0);
  values_.read(address >> granule_shift_, out.words.data(), out.words.size());
  return out;
}

void IdealMemory::report_in_flight(std::vector<std::string>& out) const {
  if (!pending_.empty())
    out.push_back(fmt::format("{} requests in flight, next completes at {} ps", pending_.size(),
                              pending_.front().done.ps()));
}

}  // namespace t3sim
