#pragma once
// Two stages of a CU's load path (issue 17), kept apart from its WGs as Akita's CU keeps
// its L1's MSHRs and ports (issue 44 item 5). Neither schedules events or reads the
// clock: the CU asks and tells them, at its time.
//
//   LoadRoom   the L1's miss-status holding registers: at most max_inflight_load_bytes
//              of load requests in flight (0: no bound). A request that does not fit
//              waits, its WG's slot registered once, oldest first; one larger than the
//              whole still goes alone when nothing is in flight, so nothing waits
//              forever. Its stats: the bytes in flight (time-weighted), the requests
//              that waited and the CU cycles during which some slot waited.
//   DataPort   the CU's data port: one transfer at a time (loads' data in at
//              load_bytes_per_cycle, a TMA copy at lds_bytes_per_cycle, stores' data out
//              at store_bytes_per_cycle), each starting when the one before it ended.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/clock.h"
#include "sim/stats.h"
#include "sim/time.h"

namespace t3sim {

class LoadRoom {
 public:
  // `max_bytes`: 0 for no bound. The stats are the CU's (registered in its order).
  LoadRoom(std::uint64_t max_bytes, TimeWeighted& in_flight, Counter& stalls, Counter& stall_cycles)
      : max_bytes_(max_bytes), in_flight_(in_flight), stalls_(stalls), stall_cycles_(stall_cycles) {}

  std::uint64_t held() const { return held_; }
  // Whether a request of `bytes` must wait for room.
  bool must_wait(std::uint64_t bytes) const { return max_bytes_ > 0 && held_ > 0 && held_ + bytes > max_bytes_; }
  // Slot s waits for room (registered once, behind the slots already waiting); the first
  // waiter starts a stall.
  void wait(std::uint32_t s, Tick now) {
    if (waiting(s)) return;
    if (waiters_.empty()) stall_since_ = now;
    waiters_.push_back(s);
    ++stalls_;
  }
  bool waiting(std::uint32_t s) const { return std::find(waiters_.begin(), waiters_.end(), s) != waiters_.end(); }
  // A request issued (holding `bytes`) or landed (freeing them).
  void hold(std::uint64_t bytes, Tick now) {
    held_ += bytes;
    in_flight_.set(now, static_cast<std::int64_t>(held_));
  }
  void release(std::uint64_t bytes, Tick now) {
    held_ -= bytes;
    in_flight_.set(now, static_cast<std::int64_t>(held_));
  }
  // Room freed: with slots waiting, counts the stall's cycles of `clock` up to now (a
  // stall then goes on from now) and returns them, oldest first, for the CU to retry
  // (a slot refused again waits again); null when none waits.
  std::vector<std::uint32_t>* freed(Tick now, const ClockDomain& clock) {
    if (waiters_.empty()) return nullptr;
    stall_cycles_ += clock.cycle_at_or_after(now).count() - clock.cycle_at_or_after(stall_since_).count();
    stall_since_ = now;
    return &waiters_;
  }
  std::size_t waiters() const { return waiters_.size(); }

 private:
  std::uint64_t max_bytes_;
  std::uint64_t held_ = 0;
  std::vector<std::uint32_t> waiters_;  // slots, oldest first
  Tick stall_since_;                    // some slot has waited since then
  TimeWeighted& in_flight_;
  Counter& stalls_;
  Counter& stall_cycles_;
};

class DataPort {
 public:
  bool busy(Tick now) const { return free_ > now; }
  // When the transfers taken so far have crossed it.
  Tick free_at() const { return free_; }
  // A transfer of `duration` that reaches the port now: it starts when the port frees
  // (or now) and ends at the returned time.
  Tick transfer(Tick now, Tick duration) {
    free_ = std::max(free_, now) + duration;
    return free_;
  }

 private:
  Tick free_;
};

}  // namespace t3sim
