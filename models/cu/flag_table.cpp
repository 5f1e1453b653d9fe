#include "models/cu/flag_table.h"

#include <algorithm>

namespace t3sim {

std::uint64_t FlagTable::get(std::uint64_t flag) const {
  const auto it = flags_.find(flag);
  return it == flags_.end() ? 0 : it->second.value;
}

void FlagTable::set(std::uint64_t flag, std::uint64_t value) {
  Entry& e = flags_[flag];
  e.value = std::max(e.value, value);
  const std::uint64_t now_value = e.value;
  // Take the satisfied waiters out (in waiting order) before waking any: a wake-up
  // may wait or set again, on this flag too.
  std::vector<std::function<void()>> local;
  std::vector<std::function<void()>>& woken = waking_ ? local : woken_;
  std::size_t keep = 0;
  for (std::size_t i = 0; i < e.waiters.size(); ++i) {
    Waiter& w = e.waiters[i];
    if (now_value >= w.value) {
      woken.push_back(std::move(w.wake));
    } else {
      if (keep != i) e.waiters[keep] = std::move(w);
      ++keep;
    }
  }
  if (woken.empty()) return;
  e.waiters.resize(keep);
  num_waiters_ -= woken.size();
  const bool outer = !waking_;
  waking_ = true;
  for (auto& wake : woken) wake();
  woken.clear();
  if (outer) waking_ = false;
}

void FlagTable::wait(std::uint64_t flag, std::uint64_t value, std::function<void()> wake) {
  Entry& e = flags_[flag];
  if (e.value >= value) {
    wake();
    return;
  }
  e.waiters.push_back(Waiter{value, std::move(wake)});
  ++num_waiters_;
}

}  // namespace t3sim
