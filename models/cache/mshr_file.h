#pragma once
// The L2's MSHR stage: the miss status holding registers, shared by all banks. Each
// one holds a line being filled (its way), whether the fill asks for values, when it
// was sent, and the line pieces waiting for it, in arrival order (secondary misses
// merge here instead of reading the line again). Allocated by the L2's first accept(),
// like the directory's arrays.

#include <cstdint>
#include <vector>

#include "sim/clock.h"
#include "sim/time.h"

namespace t3sim {

class MshrFile {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  // A line piece of a transaction waiting for a fill, with the bank slot it reserved.
  struct Waiter {
    std::uint32_t txn;
    std::uint32_t piece;
    Cycles bank_slot;
  };
  struct Mshr {
    std::uint32_t slot = kNone;  // the directory slot (way) being filled; kNone: free
    bool functional = false;     // the fill read asks for values
    Tick issued;
    std::vector<Waiter> waiters;  // in arrival order; capacity kept across uses
  };

  void allocate(std::uint32_t count) {
    mshrs_.resize(count);
    for (std::uint32_t m = count; m-- > 0;) free_.push_back(m);
  }
  bool allocated() const { return !mshrs_.empty(); }
  bool exhausted() const { return free_.empty(); }
  std::size_t in_use() const { return mshrs_.size() - free_.size(); }
  // A free MSHR (contract: !exhausted()), lowest-numbered first at the start, then the
  // most recently released.
  std::uint32_t take() {
    const std::uint32_t m = free_.back();
    free_.pop_back();
    return m;
  }
  void release(std::uint32_t m) {
    Mshr& ms = mshrs_[m];
    ms.slot = kNone;
    ms.waiters.clear();
    free_.push_back(m);
  }
  Mshr& operator[](std::uint32_t m) { return mshrs_[m]; }
  const Mshr& operator[](std::uint32_t m) const { return mshrs_[m]; }
  // The in-use MSHR sent first (nullptr when none is in use), for the in-flight report.
  const Mshr* oldest() const {
    const Mshr* oldest = nullptr;
    for (const Mshr& ms : mshrs_)
      if (ms.slot != kNone && (oldest == nullptr || ms.issued < oldest->issued)) oldest = &ms;
    return oldest;
  }

 private:
  std::vector<Mshr> mshrs_;
  std::vector<std::uint32_t> free_;
};

}  // namespace t3sim
