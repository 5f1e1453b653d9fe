#include "sim/event_queue.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/error.h"

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
  // A time that wrapped past 2^64 ps lands far behind now: the run outgrew what Tick
  // holds (issue 45: a bandwidth of 1 B/s). Bad input, not a broken invariant.
  if (when < now_ && now_.ps() - when.ps() > (Tick::rep{1} << 63))
    throw UserError(fmt::format(
        "the simulated time passed the simulator's limit of 2^64 ps ({:.0f} days) at t={}, when '{}' was "
        "scheduled: a rate or a size this far from the hardware's (a bandwidth of a few B/s?) makes a run "
        "the simulator cannot represent",
        static_cast<double>(Tick::max().ps()) * 1e-12 / 86400, to_string(now_), ev.description()));
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
    staged_.push_back(Entry{key, reinterpret_cast<std::uintptr_t>(&ev)});
    return;
  }
  insert(key, &ev);
}

std::uint32_t EventQueue::new_edge() {
  std::uint32_t e;
  if (!free_edges_.empty()) {
    e = free_edges_.back();
    free_edges_.pop_back();
  } else {
    e = static_cast<std::uint32_t>(edges_.size());
    edges_.emplace_back();
  }
  return e;
}

void EventQueue::recycle(std::uint32_t e) {
  Edge& edge = edges_[e];
  edge.items.clear();
  edge.head = 0;
  ++edge.generation;  // tells recent_ it is gone
  free_edges_.push_back(e);
}

void EventQueue::insert(uint128 key, Event* ev) {
  const uint128 edge_key = key >> 56;
  const std::uint64_t low = static_cast<std::uint64_t>(key) & kStampMask;
  if (prepared_ != kNoEdge && edge_key == prepared_key_) {
    // Into the edge being dispatched, in order: its items from head are sorted, and an
    // event ordered before the head item (scheduled "in the past" of the key order by
    // a later source) runs next, as a heap would run it.
    Edge& e = edges_[prepared_];
    const Item item{low, ev};
    if (e.items.size() == e.head || !(item < e.items.back())) {
      e.items.push_back(item);
    } else {
      e.items.insert(std::upper_bound(e.items.begin() + static_cast<std::ptrdiff_t>(e.head), e.items.end(), item),
                     item);
    }
    return;
  }
  const Tick::rep t = static_cast<Tick::rep>(key >> 64);
  const auto prio = static_cast<std::uint8_t>(edge_key);
  Recent& r = recent_[(t ^ (t >> 10) ^ prio) & (kRecent - 1)];
  if (r.when == t && r.prio == prio) {
    if (r.edge != kNoEdge && edges_[r.edge].generation == r.generation) {
      edges_[r.edge].items.push_back(Item{low, ev});
      return;
    }
    const std::uint32_t e = new_edge();
    edges_[e].items.push_back(Item{low, ev});
    r.edge = e;
    r.generation = edges_[e].generation;
    push((edge_key << 56) | (next_edge_serial_++ & kStampMask), (static_cast<std::uintptr_t>(e) << 1) | 1);
    return;
  }
  r = Recent{t, kNoEdge, 0, prio};
  push(key, reinterpret_cast<std::uintptr_t>(ev));
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
  for (const Entry& e : staged_) insert(e.key, e.event());
  staged_.clear();
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

bool EventQueue::top_shares_its_edge() const {
  const uint128 edge_key = heap_.front().edge_key();
  const std::size_t last = std::min<std::size_t>(heap_.size(), kArity + 1);
  for (std::size_t c = 1; c < last; ++c)
    if (heap_[c].edge_key() == edge_key) return true;
  return false;
}

Event* EventQueue::front(bool& from_edge) {
  if (!staged_.empty()) flush_staged();
  while (!heap_.empty()) {
    const Entry top = heap_.front();
    if (top.is_edge() && top.edge() == prepared_) {
      Edge& e = edges_[prepared_];
      while (e.head < e.items.size() && e.items[e.head].ev->stamp_ != e.items[e.head].stamp) ++e.head;
      if (e.head < e.items.size()) {
        from_edge = true;
        return e.items[e.head].ev;
      }
      pop_top();  // exhausted
      recycle(prepared_);
      prepared_ = kNoEdge;
      continue;
    }
    if (!top.is_edge() && top.event()->stamp_ != top.low()) {
      pop_top();  // stale: the event was moved or cancelled
      continue;
    }
    const bool shared = top_shares_its_edge();
    if (!top.is_edge()) {
      Event* ev = top.event();
      if (!shared) {
        from_edge = false;
        return ev;
      }
    } else if (!shared) {
      // The usual case: the edge is its (time, priority)'s only entry. Sorted in place.
      Edge& edge = edges_[top.edge()];
      const auto first = edge.items.begin() + static_cast<std::ptrdiff_t>(edge.head);
      if (!std::is_sorted(first, edge.items.end())) std::sort(first, edge.items.end());
      prepared_ = top.edge();
      prepared_key_ = top.edge_key();
      continue;
    }
    // Prepare the top's (time, priority): one edge holding every entry of it, sorted.
    const uint128 edge_key = top.edge_key();
    pop_top();
    std::uint32_t e;
    if (top.is_edge()) {
      e = top.edge();
    } else {
      e = new_edge();
      edges_[e].items.push_back(Item{top.low(), top.event()});
    }
    while (!heap_.empty() && heap_.front().edge_key() == edge_key) {
      const Entry other = pop_top();
      std::vector<Item>& items = edges_[e].items;
      if (other.is_edge()) {
        const Edge& o = edges_[other.edge()];
        items.insert(items.end(), o.items.begin() + static_cast<std::ptrdiff_t>(o.head), o.items.end());
        recycle(other.edge());
      } else {
        items.push_back(Item{other.low(), other.event()});
      }
    }
    Edge& edge = edges_[e];
    if (!std::is_sorted(edge.items.begin() + static_cast<std::ptrdiff_t>(edge.head), edge.items.end()))
      std::sort(edge.items.begin() + static_cast<std::ptrdiff_t>(edge.head), edge.items.end());
    prepared_ = e;
    prepared_key_ = edge_key;
    // Back on the heap as its (time, priority)'s only entry; recent_ may still name it,
    // but insert() checks the prepared edge first.
    push((edge_key << 56) | (next_edge_serial_++ & kStampMask), (static_cast<std::uintptr_t>(e) << 1) | 1);
  }
  return nullptr;
}

Tick EventQueue::next_time() {
  bool from_edge;
  return front(from_edge) == nullptr ? Tick::max() : Tick(heap_.front().when());
}

void EventQueue::advance_to(Tick t) {
  if (t < now_ || next_time() < t)
    throw std::logic_error(fmt::format("advance_to({} ps): now {} ps, next event at {} ps", t.ps(), now_.ps(),
                                       next_time().ps()));
  now_ = t;
}

bool EventQueue::step() {
  bool from_edge;
  Event* ev = front(from_edge);
  if (ev == nullptr) return false;
  dispatch(ev, from_edge);
  return true;
}

void EventQueue::dispatch(Event* ev, bool from_edge) {
  now_ = Tick(heap_.front().when());
  if (from_edge) {
    Edge& e = edges_[prepared_];
    ++e.head;  // the edge stays on the heap until found exhausted
    // The edge says what runs next: the event after next has its object fetched, the
    // next one (fetched a dispatch ago) its owner's state (Event::prefetch). A stale
    // item's event is still a valid object (events outlive the queue's runs).
    const std::size_t n = e.items.size();
    if (e.head + 1 < n) {
      const char* after_next = reinterpret_cast<const char*>(e.items[e.head + 1].ev);
      __builtin_prefetch(after_next);
      __builtin_prefetch(after_next + 64);
    }
    if (e.head < n) e.items[e.head].ev->prefetch();
  } else {
    pop_top();
  }
  ev->stamp_ = 0;
  --live_;
  ++dispatched_;
  const std::uint32_t place = (ev->biased_priority_ << EventSource::kBits) | ev->source_;
  if (now_ != furthest_time_) {
    furthest_time_ = now_;
    furthest_place_ = place;
  } else {
    furthest_place_ = std::max(furthest_place_, place);
  }
  const std::uint32_t outer = current_source_;
  const bool outer_running = running_;
  current_source_ = ev->source_;
  running_ = true;
  ev->process();
  current_source_ = outer;
  running_ = outer_running;
}

bool EventQueue::running_after(Tick when, EventPriority priority, EventSource source) const {
  if (now_ != when) return now_ > when;
  if (!running_ || furthest_time_ != now_) return true;  // outside any event: every event at now has run
  // An event that would have been queued at (when, priority, source) has run once an
  // event at or after its place has: the queue dispatches in key order, but an event
  // scheduled at the current time ahead of the furthest one (by an earlier source)
  // still runs after it.
  return furthest_place_ >= ((Event::bias(priority) << EventSource::kBits) | (source.id & EventSource::kMax));
}

std::uint64_t EventQueue::run(Tick until) {
  const std::uint64_t start = dispatched_;
  for (;;) {
    bool from_edge;
    Event* ev = front(from_edge);
    if (ev == nullptr || heap_.front().when() > until.ps()) break;
    dispatch(ev, from_edge);
  }
  return dispatched_ - start;
}

}  // namespace t3sim
