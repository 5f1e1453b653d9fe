#pragma once
// A GPU's flags (`set` / `wait` trace ops: NCCL's head and tail counters), shared by
// its CUs and set by peers through the network. Not a CU's state: the GPU owns one
// table and hands it to each CU.

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

namespace t3sim {

// GPU-wide flags for `set` / `wait` ops (counters a WG waits on until >= value).
class FlagTable {
 public:
  std::uint64_t get(std::uint64_t flag) const;
  // Sets the flag to max(current, value) and wakes waiters whose value is reached.
  void set(std::uint64_t flag, std::uint64_t value);
  // Calls `wake` once when flag >= value (at once if it already is).
  void wait(std::uint64_t flag, std::uint64_t value, std::function<void()> wake);
  std::size_t waiters() const { return num_waiters_; }

 private:
  struct Waiter {
    std::uint64_t value;
    std::function<void()> wake;
  };
  struct Entry {
    std::uint64_t value = 0;
    std::vector<Waiter> waiters;  // in the order they started waiting
  };
  // A collective has channels x GPUs flags per GPU, each waited on: hashed.
  std::unordered_map<std::uint64_t, Entry> flags_;
  std::size_t num_waiters_ = 0;
  std::vector<std::function<void()>> woken_;  // scratch for set() (not re-entered while in use)
  bool waking_ = false;
};

}  // namespace t3sim
