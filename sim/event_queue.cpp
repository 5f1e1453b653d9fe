#include "sim/event_queue.h"

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

std::uint32_t EventQueue::next_seq(std::uint32_t source) {
  if (source >= source_seq_.size()) source_seq_.resize(std::size_t{source} + 1, 0);
  std::uint32_t& seq = source_seq_[source];
  // 2^32 schedules by one component in one run: far beyond any run so far (the longest,
  // 7 G events in all, has under 0.2 G per component), but never wrap silently.
  if (seq == ~std::uint32_t{0})
    throw std::logic_error(fmt::format("event source {} scheduled 2^32 events: its sequence number would wrap", source));
  return ++seq;
}

void EventQueue::schedule(Event& ev, Tick when) {
  schedule_stamped(ev, when, Stamp{ev.source_, next_seq(ev.source_)});
}

void EventQueue::schedule_stamped(Event& ev, Tick when, Stamp stamp) {
  if (when < now_)
    throw std::logic_error(fmt::format("event '{}' scheduled in the past ({} ps < now {} ps)",
                                       ev.description(), when.ps(), now_.ps()));
  if (ev.stamp_ == 0) ++live_;  // else the old entry becomes stale
  const std::uint64_t prio = ev.biased_priority_;
  const std::uint64_t low = (std::uint64_t{stamp.source} << 32) | stamp.seq;
  ev.stamp_ = low;
  ev.when_ = when;
  const uint128 key = (static_cast<uint128>(static_cast<std::uint64_t>(when.ps())) << 64) | (prio << 56) | low;
  if (shuffle_state_ != 0) {
    staged_.push_back(Entry{key, &ev});
    return;
  }
  push(key, &ev);
}

void EventQueue::deschedule(Event& ev) {
  if (ev.stamp_ == 0) return;
  ev.stamp_ = 0;
  --live_;
}

EventQueue::PooledEvent& EventQueue::pooled(std::function<void()> fn, EventPriority priority) {
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
  ev->biased_priority_ = Event::bias(priority);
  return *ev;
}

void EventQueue::schedule_callback(Tick when, std::function<void()> fn, EventPriority priority) {
  schedule_callback(when, std::move(fn), priority, take_stamp());
}

void EventQueue::schedule_callback(Tick when, std::function<void()> fn, EventPriority priority, Stamp stamp) {
  PooledEvent& ev = pooled(std::move(fn), priority);
  // A pooled callback belongs to the source that scheduled it: what it schedules in
  // turn is that source's too.
  ev.source_ = stamp.source & EventSource::kMax;
  schedule_stamped(ev, when, stamp);
}

void EventQueue::set_shuffle_ties(std::uint64_t seed) {
  flush_staged();
  shuffle_state_ = seed;
}

// Inserts the staged schedules in a random order (a seeded xorshift: the debug run is
// itself reproducible).
void EventQueue::flush_staged() {
  for (std::size_t n = staged_.size(); n > 1; --n) {
    shuffle_state_ ^= shuffle_state_ << 13;
    shuffle_state_ ^= shuffle_state_ >> 7;
    shuffle_state_ ^= shuffle_state_ << 17;
    std::swap(staged_[n - 1], staged_[shuffle_state_ % n]);
  }
  for (const Entry& e : staged_) push(e.key, e.ev);
  staged_.clear();
}

void EventQueue::push(uint128 key, Event* ev) {
  std::size_t i = heap_.size();
  heap_.emplace_back();
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!(key < heap_[parent].key)) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i].key = key;
  heap_[i].ev = ev;
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

Event* EventQueue::front() {
  if (!staged_.empty()) flush_staged();
  while (!heap_.empty()) {
    const Entry& top = heap_.front();
    if (top.ev->stamp_ == top.stamp()) return top.ev;
    pop_top();  // stale: the event was moved or cancelled
  }
  return nullptr;
}

Tick EventQueue::next_time() { return front() == nullptr ? Tick::max() : Tick(heap_.front().when()); }

void EventQueue::advance_to(Tick t) {
  if (t < now_ || next_time() < t)
    throw std::logic_error(fmt::format("advance_to({} ps): now {} ps, next event at {} ps", t.ps(), now_.ps(),
                                       next_time().ps()));
  now_ = t;
}

bool EventQueue::step() {
  Event* ev = front();
  if (ev == nullptr) return false;
  dispatch(ev);
  return true;
}

void EventQueue::dispatch(Event* ev) {
  now_ = Tick(heap_.front().when());
  pop_top();
  // The heap says what runs next: its owner's state is fetched while this one runs
  // (Event::prefetch). A stale entry's event is still a valid object (events outlive
  // the queue's runs).
  if (!heap_.empty()) heap_.front().ev->prefetch();
  ev->stamp_ = 0;
  --live_;
  ++dispatched_;
  const std::uint32_t outer = current_source_;
  current_source_ = ev->source_;
  ev->process();
  current_source_ = outer;
}

std::uint64_t EventQueue::run(Tick until) {
  const std::uint64_t start = dispatched_;
  for (;;) {
    Event* ev = front();
    if (ev == nullptr || heap_.front().when() > until.ps()) break;
    dispatch(ev);
  }
  return dispatched_ - start;
}

}  // namespace t3sim
