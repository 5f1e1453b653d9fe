#include "models/cache/memory_side_queues.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/component.h"
#include "sim/error.h"
#include "sim/stats.h"

namespace t3sim {

MemorySideQueues::MemorySideQueues(const Component& owner, MemTarget& memory_side, std::uint32_t line_shift,
                                   Counter& queued)
    : owner_(owner),
      memory_(memory_side), line_shift_(line_shift), queued_(queued) {
  fifos_.resize(std::max<std::uint32_t>(memory_.num_queues(), 1));
  retry_.resize(fifos_.size());
  for (std::uint32_t q = 0; q < retry_.size(); ++q) {
    retry_[q].queues = this;
    retry_[q].queue = q;
  }
}

void MemorySideQueues::send(MemRequest&& r) {
  const int s = index(r.stream);
  const std::uint64_t line = r.address >> line_shift_;
  // Same-address requests must reach the memory controller in order: a request waits
  // for the last earlier one to its line still queued in the other stream's FIFO (of
  // the same memory-side queue: a line has one channel).
  std::uint64_t after = 0;
  const auto& other = lines_[1 - s];
  if (!other.empty()) {
    const auto it = other.find(line);
    if (it != other.end()) after = it->second.newest_seq;
  }
  const std::uint32_t queue = memory_.queue_of(r);
  T3SIM_CHECK_FOR(owner_, queue < fifos_.size(), fmt::format("memory-side queue {} of {}", queue, fifos_.size()));
  OutFifos& fifos = fifos_[queue];
  if (fifos[static_cast<std::size_t>(s)].empty() && after == 0 && memory_.can_accept(r)) {
    memory_.accept(std::move(r));
    return;
  }
  ++queued_;
  QueuedLine& ql = lines_[s][line];
  ql.newest_seq = ++seq_;
  ++ql.count;
  fifos[static_cast<std::size_t>(s)].push_back(Outbound{std::move(r), seq_, after});
  QueueRetry& retry = retry_[queue];
  if (!retry.registered) {
    retry.registered = true;
    memory_.wait_for_queue_space(&retry, queue);
  }
}

bool MemorySideQueues::may_send(const OutFifos& fifos, const Outbound& o) const {
  if (o.after == 0) return true;
  const auto& other = fifos[static_cast<std::size_t>(1 - index(o.req.stream))];
  return other.empty() || other.front().seq > o.after;  // FIFOs send in order
}

void MemorySideQueues::drain(std::uint32_t queue) {
  OutFifos& fifos = fifos_[queue];
  bool progress = true;
  while (progress) {  // a send may unblock the other stream's FIFO (`after`)
    progress = false;
    for (std::size_t s = 0; s < fifos.size(); ++s) {
      auto& q = fifos[s];
      while (!q.empty() && may_send(fifos, q.front()) && memory_.can_accept(q.front().req)) {
        memory_.accept(std::move(q.front().req));
        pop(queue, static_cast<int>(s));
        progress = true;
      }
    }
  }
  QueueRetry& retry = retry_[queue];
  if (!retry.registered && (!fifos[0].empty() || !fifos[1].empty())) {
    retry.registered = true;
    memory_.wait_for_queue_space(&retry, queue);
  }
}

void MemorySideQueues::QueueRetry::on_mem_retry() {
  registered = false;
  queues->drain(queue);
}

void MemorySideQueues::pop(std::uint32_t queue, int s) {
  auto& q = fifos_[queue][static_cast<std::size_t>(s)];
  const std::uint64_t line = q.front().req.address >> line_shift_;
  auto it = lines_[static_cast<std::size_t>(s)].find(line);
  if (--it->second.count == 0) lines_[static_cast<std::size_t>(s)].erase(it);
  q.pop_front();
}

void MemorySideQueues::report_in_flight(std::vector<std::string>& out) const {
  for (std::uint32_t queue = 0; queue < fifos_.size(); ++queue)
    for (const auto& q : fifos_[queue]) {
      if (q.empty()) continue;
      out.push_back(fmt::format(
          "{} {} requests refused by memory-side queue {}, waiting for its retry (first: {} of 0x{:x})", q.size(),
          to_string(q.front().req.stream), queue, to_string(q.front().req.op), q.front().req.address));
    }
}

}  // namespace t3sim
