#pragma once
// The L2's write-buffer stage: what the L2 sends to the memory side (fills, write-backs,
// bypassed and forwarded pieces) and the requests the memory side refused, held until
// their queue has room.
//
// One FIFO per (memory-side queue, stream): a refused channel holds back only its own
// requests (each channel has its controller and its queue from the L2 slices), and a
// refused communication request never holds back compute ones (the controller's
// ingress queues are per stream, and MCA, T3 §4.5, only works if compute reaches it).
// One line always maps to one channel, so same-line order is the FIFO's; across the
// channel's two stream FIFOs it is kept by `after`: a request waits for the newest
// earlier one to its line still queued in the other stream's FIFO.

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/mem/mem_request.h"

namespace t3sim {

class Component;
class Counter;

class MemorySideQueues {
 public:
  // `owner`: the L2 (time and name of an internal error); `queued` counts the requests
  // that had to wait here.
  MemorySideQueues(const Component& owner, MemTarget& memory_side, std::uint32_t line_shift, Counter& queued);
  MemorySideQueues(const MemorySideQueues&) = delete;  // the memory side holds its retries' addresses
  MemorySideQueues& operator=(const MemorySideQueues&) = delete;

  // Hands `r` to the memory side now if it may (its FIFO is empty, no earlier request
  // to its line waits in the other stream's, the memory side accepts), else queues it.
  void send(MemRequest&& r);
  // One line per non-empty FIFO.
  void report_in_flight(std::vector<std::string>& out) const;

 private:
  struct Outbound {
    MemRequest req;
    std::uint64_t seq = 0;
    std::uint64_t after = 0;  // seq of an earlier request to the same line in the other FIFO (0: none)
  };
  using OutFifos = std::array<std::deque<Outbound>, kNumStreams>;
  // Per queue: the client the memory side retries when that queue has room, so a
  // retry drains only the queue that freed (one L2 has ~100 channels' queues).
  struct QueueRetry final : MemClient {
    MemorySideQueues* queues = nullptr;
    std::uint32_t queue = 0;
    bool registered = false;
    void on_mem_response(MemRequest&&) override {}
    void on_mem_retry() override;
  };
  // Per stream: line -> (seq of its newest queued request, how many are queued), so
  // send() finds `after` without scanning a FIFO that may hold thousands (T3's
  // arriving updates and DMA reads waiting for a busy controller).
  struct QueuedLine {
    std::uint64_t newest_seq = 0;
    std::uint32_t count = 0;
  };

  bool may_send(const OutFifos& fifos, const Outbound& o) const;
  // Sends what it can of one queue's FIFOs (its QueueRetry's retry).
  void drain(std::uint32_t queue);
  void pop(std::uint32_t queue, int s);

  const Component& owner_;
  MemTarget& memory_;
  std::uint32_t line_shift_;
  Counter& queued_;
  std::vector<OutFifos> fifos_;  // per memory-side queue (MemTarget::queue_of)
  std::vector<QueueRetry> retry_;
  std::array<std::unordered_map<std::uint64_t, QueuedLine>, kNumStreams> lines_;
  std::uint64_t seq_ = 0;
};

}  // namespace t3sim
