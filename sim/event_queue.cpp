#include "sim/event_queue.h"

#include <cassert>
#include <stdexcept>

#include <fmt/format.h>

namespace t3sim {

void EventQueue::PooledEvent::process() {
  // Release before calling, so the callback may schedule another pooled event
  // (possibly this very object).
  std::function<void()> f = std::move(fn);
  fn = nullptr;
  queue_.free_pool_.push_back(this);
  f();
}

void EventQueue::schedule(Event& ev, Tick when) {
  if (when < now_)
    throw std::logic_error(fmt::format("event '{}' scheduled in the past ({} ps < now {} ps)",
                                       ev.description(), when.ps(), now_.ps()));
  if (ev.seq_ != 0) --live_;  // the old entry becomes stale
  const std::uint64_t seq = next_seq_++;
  const auto prio = static_cast<std::uint64_t>(static_cast<int>(ev.priority_) + 128);
  ev.seq_ = seq;
  ev.when_ = when;
  ++live_;
  push(Entry{(static_cast<uint128>(when.ps()) << 64) | (prio << 56) | seq, &ev});
}

void EventQueue::deschedule(Event& ev) {
  if (ev.seq_ == 0) return;
  ev.seq_ = 0;
  --live_;
}

void EventQueue::schedule_callback(Tick when, std::function<void()> fn, EventPriority priority) {
  PooledEvent* ev;
  if (!free_pool_.empty()) {
    ev = free_pool_.back();
    free_pool_.pop_back();
  } else {
    ev = &pool_.emplace_back(*this);
  }
  ev->fn = std::move(fn);
  // Pooled events take the priority of the call; Event::priority_ is private to the
  // queue, which is the one place allowed to set it.
  ev->priority_ = priority;
  schedule(*ev, when);
}

void EventQueue::push(Entry e) {
  std::size_t i = heap_.size();
  heap_.push_back(e);
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!e.before(heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

EventQueue::Entry EventQueue::pop_top() {
  const Entry top = heap_.front();
  const Entry last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n > 0) {
    std::size_t i = 0;
    for (;;) {
      const std::size_t first = i * kArity + 1;
      if (first >= n) break;
      std::size_t best = first;
      if (first + kArity <= n) {
        // Full set of children: a tournament of conditional moves, no branches.
        const std::size_t a = heap_[first + 1].before(heap_[first]) ? first + 1 : first;
        const std::size_t b = heap_[first + 3].before(heap_[first + 2]) ? first + 3 : first + 2;
        best = heap_[b].before(heap_[a]) ? b : a;
      } else {
        for (std::size_t c = first + 1; c < n; ++c)
          if (heap_[c].before(heap_[best])) best = c;
      }
      if (!heap_[best].before(last)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = last;
  }
  return top;
}

void EventQueue::drop_stale_top() {
  while (!heap_.empty() && !live(heap_.front())) pop_top();
}

Tick EventQueue::next_time() {
  drop_stale_top();
  return heap_.empty() ? Tick::max() : Tick(heap_.front().when());
}

bool EventQueue::step() {
  drop_stale_top();
  if (heap_.empty()) return false;
  const Entry e = pop_top();
  now_ = Tick(e.when());
  e.ev->seq_ = 0;
  --live_;
  ++dispatched_;
  e.ev->process();
  return true;
}

std::uint64_t EventQueue::run(Tick until) {
  const std::uint64_t start = dispatched_;
  for (;;) {
    drop_stale_top();
    if (heap_.empty() || heap_.front().when() > until.ps()) break;
    step();
  }
  return dispatched_ - start;
}

}  // namespace t3sim
