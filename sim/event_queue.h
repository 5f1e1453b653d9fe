#pragma once
// The event queue: events run in order of (time, priority, insertion sequence), so
// two runs with the same inputs dispatch the same events in the same order.
//
// Events are objects owned by the component that schedules them (gem5 style: a
// component keeps e.g. a `tick_event_` member and re-schedules it), or one-shot
// callbacks drawn from a pool the queue owns (`schedule_callback`). Nothing is
// allocated per schedule in steady state.
//
// Descheduling is lazy: the queued entry stays and is skipped when reached, because
// the event's sequence number no longer matches. An Event must therefore outlive
// the queue's last run (components live as long as their Simulator).
//
// Structure: a 4-ary heap ordered by (time, priority, sequence). An entry is one
// event, or a bucket: a FIFO of events sharing a (time, priority), in scheduling (=
// sequence) order, keyed by its first event. A clocked system schedules most of its
// events at a few edges (every memory controller ticks at the same one): the first
// event of a (time, priority) gets an entry of its own, the next ones start and then
// join a bucket, so a schedule is usually an append and a dispatch a read from the
// front bucket, with heap work per bucket rather than per event; events at scattered
// times cost what a plain heap costs. A bucket takes appends while it is the newest
// one of its (time, priority) that the queue remembers (`recent_`); when it forgets,
// a new bucket starts, which the heap places after the old one. Either way the
// dispatch order is exactly (time, priority, sequence).

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sim/time.h"

namespace t3sim {

// Lower runs first among events at the same tick.
enum class EventPriority : std::int8_t {
  kFirst = -100,
  kDelivery = -10,  // messages arrive before the components that consume them tick
  kDefault = 0,
  kTick = 10,       // clocked components tick after same-tick deliveries
  kLast = 100,      // watchdogs, samplers
};

class Event {
 public:
  explicit Event(EventPriority priority = EventPriority::kDefault) : priority_(priority) {}
  virtual ~Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Contract: runs at when(); may schedule any event, including itself.
  virtual void process() = 0;
  // For deadlock reports and traces.
  virtual std::string description() const { return "event"; }
  // Contract: no effect but host-cache prefetches of the state process() will read.
  // The queue calls it on the event that runs next, while the current one runs: with
  // hundreds of components ticking at one clock edge, each one's state has left the
  // host's caches since its last tick.
  virtual void prefetch() const {}

  bool scheduled() const { return seq_ != 0; }
  Tick when() const { return when_; }
  EventPriority priority() const { return priority_; }

 private:
  friend class EventQueue;
  Tick when_;
  std::uint64_t seq_ = 0;  // 0: not scheduled; else the sequence number of its live heap entry
  EventPriority priority_;
};

// An event that calls a function; the usual member of a component.
class CallbackEvent final : public Event {
 public:
  CallbackEvent(std::string name, std::function<void()> fn,
                EventPriority priority = EventPriority::kDefault)
      : Event(priority), name_(std::move(name)), fn_(std::move(fn)) {}
  void process() override { fn_(); }
  std::string description() const override { return name_; }

 private:
  std::string name_;
  std::function<void()> fn_;
};

class EventQueue {
 public:
  EventQueue() = default;
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  Tick now() const { return now_; }

  // Contract: when >= now(). Re-scheduling a scheduled event moves it.
  void schedule(Event& ev, Tick when);
  // Contract: no effect if the event is not scheduled.
  void deschedule(Event& ev);
  // One-shot callback from the pool. Keep captures small (std::function stores up
  // to two pointers without allocating).
  void schedule_callback(Tick when, std::function<void()> fn,
                         EventPriority priority = EventPriority::kDefault);

  // Live (scheduled, not cancelled) events.
  std::size_t pending() const { return live_; }
  bool empty() const { return live_ == 0; }
  // Time of the next live event, or Tick::max() when empty.
  Tick next_time();

  // Run the next live event. Returns false when the queue is empty.
  bool step();
  // Run until the queue is empty or the next event is later than `until`
  // (events at `until` run). Returns the number of events dispatched.
  std::uint64_t run(Tick until = Tick::max());

  std::uint64_t dispatched() const { return dispatched_; }
  // Contract: t >= now() and no live event is earlier than t. Moves the clock without
  // dispatching (a partitioned run ends every partition at the same time).
  void advance_to(Tick t);

 private:
  // A heap entry: one event, or one bucket.
  struct Entry {
    // One 128-bit key: time (high 64 bits), then priority (next 8, biased), then
    // sequence (low 56) of the event or of the bucket's first event. A single integer
    // compare orders entries, which the compiler turns into branch-free code: with
    // random event times the heap's comparisons are unpredictable, and mispredicted
    // branches dominated pop_top.
    uint128 key;
    std::uintptr_t ref;  // an Event* (aligned, low bit 0) or (bucket index << 1) | 1
    Tick::rep when() const { return static_cast<Tick::rep>(key >> 64); }
    std::uint64_t seq() const { return static_cast<std::uint64_t>(key) & kSeqMask; }
    bool before(const Entry& o) const { return key < o.key; }
    bool is_bucket() const { return (ref & 1) != 0; }
    Event* event() const { return reinterpret_cast<Event*>(ref); }
    std::uint32_t bucket() const { return static_cast<std::uint32_t>(ref >> 1); }
  };
  struct Item {
    Event* ev;
    std::uint64_t seq;  // the event's sequence number when this item was queued
  };
  struct Bucket {
    std::vector<Item> items;  // in sequence order; capacity kept across uses
    std::size_t head = 0;     // items before head are dispatched or stale
    std::uint32_t generation = 0;  // bumped when the bucket is recycled
  };
  // The last (time, priority) scheduled in one slot of a small direct-mapped table,
  // and its newest bucket, if it has one.
  static constexpr std::uint32_t kNoBucket = ~std::uint32_t{0};
  struct Recent {
    Tick::rep when = 0;
    std::uint32_t bucket = kNoBucket;
    std::uint32_t generation = 0;
    std::uint8_t prio = 0;  // biased priorities are 28..228: 0 matches nothing
  };
  // A one-shot callback event recycled through free_pool_.
  class PooledEvent final : public Event {
   public:
    explicit PooledEvent(EventQueue& q) : queue_(q) {}
    void process() override;
    std::string description() const override { return "callback"; }
    std::function<void()> fn;

   private:
    EventQueue& queue_;
  };

  static constexpr unsigned kArity = 4;  // a 4-ary heap halves the depth of a binary one
  static constexpr std::uint64_t kSeqMask = (std::uint64_t{1} << 56) - 1;
  // A power of two. 256 (6 KiB) rather than 16: with a GEMM's per-request L2
  // completions and CU landings spread over many near-future edges, 16 slots forgot
  // edges still in use; 256 put 13 % fewer entries on the heap (1024x2048x2128 GEMM).
  static constexpr std::size_t kRecent = 256;

  // Key and reference in registers (an Entry built in memory and reloaded whole stalls
  // store-to-load forwarding).
  void push(uint128 key, std::uintptr_t ref);
  Entry pop_top();
  // The next event to run, or nullptr when none is scheduled; drops stale entries,
  // stale items and exhausted buckets on the way. `bucket` is its bucket (it is that
  // bucket's head item), or nullptr if it has the heap's top entry to itself.
  Event* front(Bucket*& bucket);
  // Runs `ev`, the event front() returned with `bucket`.
  void dispatch(Event* ev, Bucket* bucket);
  static bool live(const Item& it) { return it.ev->seq_ == it.seq; }

  std::vector<Entry> heap_;
  std::vector<Bucket> buckets_;              // by index; a heap entry names one
  std::vector<std::uint32_t> free_buckets_;  // recycled, their item capacity kept
  std::array<Recent, kRecent> recent_{};
  Tick now_;
  std::uint64_t next_seq_ = 1;
  std::size_t live_ = 0;
  std::uint64_t dispatched_ = 0;

  std::deque<PooledEvent> pool_;        // stable addresses
  std::vector<PooledEvent*> free_pool_;  // reusable pooled events
};

}  // namespace t3sim
