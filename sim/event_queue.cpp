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
  const auto prio = static_cast<std::uint8_t>(static_cast<int>(ev.priority_) + 128);
  ev.seq_ = seq;
  ev.when_ = when;
  ++live_;
  // A second event at a (time, priority) starts a bucket, later ones join it while it
  // is remembered and queued: every item in it has a smaller sequence number, and any
  // later bucket of the same (time, priority) would be the one remembered, so the FIFO
  // keeps the order.
  const Tick::rep t = when.ps();
  const uint128 key = (static_cast<uint128>(t) << 64) | (static_cast<uint128>(prio) << 56) | seq;
  Recent& r = recent_[(t ^ (t >> 10) ^ prio) & (kRecent - 1)];
  if (r.when == t && r.prio == prio) {
    if (r.bucket != kNoBucket && buckets_[r.bucket].generation == r.generation) {
      buckets_[r.bucket].items.push_back(Item{&ev, seq});
      return;
    }
    std::uint32_t b;
    if (!free_buckets_.empty()) {
      b = free_buckets_.back();
      free_buckets_.pop_back();
    } else {
      b = static_cast<std::uint32_t>(buckets_.size());
      buckets_.emplace_back();
    }
    Bucket& bucket = buckets_[b];
    bucket.items.push_back(Item{&ev, seq});
    r.bucket = b;
    r.generation = bucket.generation;
    push(key, (static_cast<std::uintptr_t>(b) << 1) | 1);
    return;
  }
  r = Recent{t, kNoBucket, 0, prio};
  push(key, reinterpret_cast<std::uintptr_t>(&ev));
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

void EventQueue::push(uint128 key, std::uintptr_t ref) {
  std::size_t i = heap_.size();
  heap_.emplace_back();
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!(key < heap_[parent].key)) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i].key = key;
  heap_[i].ref = ref;
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

Event* EventQueue::front(Bucket*& bucket) {
  while (!heap_.empty()) {
    const Entry& top = heap_.front();
    if (!top.is_bucket()) {
      Event* ev = top.event();
      if (ev->seq_ == top.seq()) {
        bucket = nullptr;
        return ev;
      }
      pop_top();  // stale: the event was moved or cancelled
      continue;
    }
    Bucket& b = buckets_[top.bucket()];
    while (b.head < b.items.size() && !live(b.items[b.head])) ++b.head;
    if (b.head < b.items.size()) {
      bucket = &b;
      return b.items[b.head].ev;
    }
    // Exhausted: recycle it (the generation tells recent_ it is gone).
    const std::uint32_t index = top.bucket();
    pop_top();
    b.items.clear();
    b.head = 0;
    ++b.generation;
    free_buckets_.push_back(index);
  }
  return nullptr;
}

Tick EventQueue::next_time() {
  Bucket* b;
  return front(b) == nullptr ? Tick::max() : Tick(heap_.front().when());
}

void EventQueue::advance_to(Tick t) {
  if (t < now_ || next_time() < t)
    throw std::logic_error(fmt::format("advance_to({} ps): now {} ps, next event at {} ps", t.ps(), now_.ps(),
                                       next_time().ps()));
  now_ = t;
}

bool EventQueue::step() {
  Bucket* b;
  Event* ev = front(b);
  if (ev == nullptr) return false;
  dispatch(ev, b);
  return true;
}

void EventQueue::dispatch(Event* ev, Bucket* b) {
  now_ = Tick(heap_.front().when());
  if (b == nullptr) {
    pop_top();
  } else {
    ++b->head;  // the bucket stays queued until found exhausted
    // The bucket says what runs next: the event after next has its object fetched,
    // the next one (fetched a dispatch ago) its owner's state (Event::prefetch). A
    // stale item's event is still a valid object (events outlive the queue's runs).
    const std::size_t n = b->items.size();
    if (b->head + 1 < n) {
      const char* after_next = reinterpret_cast<const char*>(b->items[b->head + 1].ev);
      __builtin_prefetch(after_next);
      __builtin_prefetch(after_next + 64);
    }
    if (b->head < n) b->items[b->head].ev->prefetch();
  }
  ev->seq_ = 0;
  --live_;
  ++dispatched_;
  ev->process();
}

std::uint64_t EventQueue::run(Tick until) {
  const std::uint64_t start = dispatched_;
  for (;;) {
    Bucket* b;
    Event* ev = front(b);
    if (ev == nullptr || heap_.front().when() > until.ps()) break;
    dispatch(ev, b);
  }
  return dispatched_ - start;
}

}  // namespace t3sim
