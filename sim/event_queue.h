#pragma once
// The event queue: events run in the canonical order (time, priority, source,
// sequence), so two runs with the same inputs dispatch the same events in the same
// order, however the events were inserted, batched or partitioned.
//
// Canonical order (issue 43). Same-time, same-priority events are ordered by their
// *source* (the component they belong to, numbered in construction order) and then by
// the source's own sequence number (how many events that source had scheduled in this
// queue before). Insertion order is an accident of the implementation (which edge a
// component happened to be woken from, whether an idle tick was skipped, how a model
// was split into partitions), not a property of the hardware; the canonical order
// is the one parallel discrete-event engines (SST's, among others) rely on. An event
// owned by a component (a member, gem5 style: `tick_event_`) carries its component's
// source; a one-shot pooled callback (`schedule_callback`) takes the source of the
// event that is running when it is scheduled (source 0, "the environment", outside
// any event: building, tests).
//
// Events are objects owned by the component that schedules them (a component keeps
// e.g. a `tick_event_` member and re-schedules it), or one-shot callbacks drawn from a
// pool the queue owns (`schedule_callback`). Nothing is allocated per schedule in
// steady state.
//
// Descheduling is lazy: the queued entry stays and is skipped when reached, because
// the event's stamp (source and sequence) no longer matches. An Event must therefore
// outlive the queue's last run (components live as long as their Simulator).
//
// Structure: a 4-ary heap of 128-bit keys (time, priority, source, sequence). A clocked
// system schedules most of its events at a few edges (every memory controller ticks at
// the same one), so the events of one (time, priority) gather in an *edge*, one heap
// entry for them all: the first event of a (time, priority) gets an entry of its own,
// the next ones start and then join an edge (a schedule is usually an append). When an
// edge reaches the heap's top it is *prepared*: every other entry of its (time,
// priority) is merged in and its events are sorted by (source, sequence); events
// scheduled at its (time, priority) meanwhile are inserted in order. So the dispatch
// order is exactly the canonical key order, whatever the insertion order. A debug
// option (set_shuffle_ties) stages every schedule and inserts them in a seeded random
// order: a run gives byte-identical results with it (tests/test_golden.cpp).

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

// What an event belongs to, for the canonical order of same-time events: a
// component's number (Simulator::new_event_source, construction order), or 0 for the
// environment (the simulator itself, code outside any event).
struct EventSource {
  static constexpr std::uint32_t kBits = 24;
  static constexpr std::uint32_t kMax = (std::uint32_t{1} << kBits) - 1;
  std::uint32_t id = 0;
};

class Event {
 public:
  explicit Event(EventSource source, EventPriority priority = EventPriority::kDefault)
      : source_(source.id & EventSource::kMax), biased_priority_(bias(priority)) {}
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

  bool scheduled() const { return stamp_ != 0; }
  Tick when() const { return when_; }
  EventPriority priority() const { return static_cast<EventPriority>(static_cast<int>(biased_priority_) - 128); }
  EventSource source() const { return EventSource{source_}; }

 private:
  friend class EventQueue;
  Tick when_;
  // 0: not scheduled; else (source << 32 | the source's sequence number) of its live
  // heap entry: the low 56 bits of the entry's key.
  std::uint64_t stamp_ = 0;
  // Packed in one word, so a subclass's first small member still fits in the tail
  // padding (ComputeUnit's LandingEvent).
  std::uint32_t source_ : EventSource::kBits;
  std::uint32_t biased_priority_ : 8;  // priority + 128, as the key holds it
  static std::uint32_t bias(EventPriority p) { return static_cast<std::uint32_t>(static_cast<int>(p) + 128); }
};

// An event that calls a function; the usual member of a component.
class CallbackEvent final : public Event {
 public:
  CallbackEvent(EventSource source, std::string name, std::function<void()> fn,
                EventPriority priority = EventPriority::kDefault)
      : Event(source, priority), name_(std::move(name)), fn_(std::move(fn)) {}
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
  // One-shot callback from the pool, of the running event's source. Keep captures
  // small (std::function stores up to two pointers without allocating).
  void schedule_callback(Tick when, std::function<void()> fn,
                         EventPriority priority = EventPriority::kDefault);

  // A callback's place in the canonical order, taken in one queue and used in another:
  // a partitioned run's post into another partition keeps the posting event's source
  // and sequence, so it sorts where it would have in one queue.
  struct Stamp {
    std::uint32_t source = 0;
    std::uint32_t seq = 0;
  };
  // The next stamp of the running event's source (advances its sequence).
  Stamp take_stamp() { return Stamp{current_source_, next_seq(current_source_)}; }
  void schedule_callback(Tick when, std::function<void()> fn, EventPriority priority, Stamp stamp);

  // Debug: stage every schedule and insert the staged ones in a random order (seeded;
  // 0 turns it off) before each dispatch. The canonical order makes this invisible in
  // the results; a test holds it to that.
  void set_shuffle_ties(std::uint64_t seed);

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
  // Whether an event of `source` at (when, priority), had it been queued, would have
  // run before the code running now: now() is later, or an event at or after its place
  // in the canonical order has run at now() (an event scheduled at now() ahead of the
  // ones that ran, by a later source, still runs after them), or no event is running
  // (a run ends after every event at its end time). A component that decided not to
  // schedule an event which would have done nothing (MemoryController's skipped memory
  // cycles) asks it, to act as if that event had run. An event of `source` itself at
  // that (time, priority) counts as later: the caller is that event's only user.
  bool running_after(Tick when, EventPriority priority, EventSource source) const;
  // Contract: t >= now() and no live event is earlier than t. Moves the clock without
  // dispatching (a partitioned run ends every partition at the same time).
  void advance_to(Tick t);

 private:
  // A heap entry: one event, or an edge (every event of one (time, priority), in a
  // vector). Key: time (high 64 bits), then priority (next 8, biased), then 56 low
  // bits: an event's stamp (source 24, sequence 32), or an edge's serial number. A
  // single integer compare orders entries, which the compiler turns into branch-free
  // code: with random event times the heap's comparisons are unpredictable, and
  // mispredicted branches dominated pop_top.
  struct Entry {
    uint128 key;
    std::uintptr_t ref;  // an Event* (aligned, low bit 0) or (edge index << 1) | 1
    Tick::rep when() const { return static_cast<Tick::rep>(key >> 64); }
    uint128 edge_key() const { return key >> 56; }  // (time, priority)
    std::uint64_t low() const { return static_cast<std::uint64_t>(key) & kStampMask; }
    bool before(const Entry& o) const { return key < o.key; }
    bool is_edge() const { return (ref & 1) != 0; }
    Event* event() const { return reinterpret_cast<Event*>(ref); }
    std::uint32_t edge() const { return static_cast<std::uint32_t>(ref >> 1); }
  };
  // An event of an edge and its stamp when it was queued (stale once the event moved).
  struct Item {
    std::uint64_t stamp;
    Event* ev;
    bool operator<(const Item& o) const { return stamp < o.stamp; }
  };
  // The events of one (time, priority), in canonical order from `head` once the edge is
  // prepared (it reached the heap's top: every other entry of its (time, priority)
  // merged in, then sorted). Unprepared, in the order they came.
  struct Edge {
    std::vector<Item> items;   // capacity kept across uses
    std::size_t head = 0;      // items before head are dispatched or stale
    std::uint32_t generation = 0;  // bumped when the edge is recycled
  };
  // The last (time, priority) scheduled in one slot of a small direct-mapped table,
  // and its edge, if it has one: a second event there starts an edge, later ones join
  // it. A forgotten slot only costs a second edge, merged when they reach the top.
  static constexpr std::uint32_t kNoEdge = ~std::uint32_t{0};
  struct Recent {
    Tick::rep when = 0;
    std::uint32_t edge = kNoEdge;
    std::uint32_t generation = 0;
    std::uint8_t prio = 0;  // biased priorities are 28..228: 0 matches nothing
  };
  // A one-shot callback event recycled through free_pool_.
  class PooledEvent final : public Event {
   public:
    explicit PooledEvent(EventQueue& q) : Event(EventSource{}), queue_(q) {}
    void process() override;
    std::string description() const override { return "callback"; }
    std::function<void()> fn;

   private:
    friend class EventQueue;
    EventQueue& queue_;
  };

  static constexpr unsigned kArity = 4;  // a 4-ary heap halves the depth of a binary one
  static constexpr std::uint64_t kStampMask = (std::uint64_t{1} << 56) - 1;
  // A power of two (6 KiB): a GEMM's per-request completions and CU landings spread
  // over many near-future edges, and 16 slots forgot edges still in use.
  static constexpr std::size_t kRecent = 256;

  std::uint32_t next_seq(std::uint32_t source);
  void schedule_stamped(Event& ev, Tick when, Stamp stamp);
  PooledEvent& pooled(std::function<void()> fn, EventPriority priority);
  // Queues an event under its key: into the prepared edge of its (time, priority), in
  // order; else into the remembered edge; else as an entry of its own.
  void insert(uint128 key, Event* ev);
  std::uint32_t new_edge();
  void recycle(std::uint32_t edge);
  // Key and reference in registers (an Entry built in memory and reloaded whole stalls
  // store-to-load forwarding).
  void push(uint128 key, std::uintptr_t ref);
  Entry pop_top();
  // Whether a child of the root shares the root's (time, priority): the only place a
  // second entry of it can be.
  bool top_shares_its_edge() const;
  // The next live event, or nullptr; drops stale entries and items on the way and
  // prepares the top's edge when more than one event shares its (time, priority).
  // `from_edge`: it is the prepared edge's head item (else the heap's top entry).
  Event* front(bool& from_edge);
  void dispatch(Event* ev, bool from_edge);
  void flush_staged();

  std::vector<Entry> heap_;
  std::vector<Edge> edges_;                // by index; a heap entry names one
  std::vector<std::uint32_t> free_edges_;  // recycled, their item capacity kept
  std::array<Recent, kRecent> recent_{};
  std::uint64_t next_edge_serial_ = 0;
  // The prepared edge (in the heap, the only entry of its (time, priority)), or kNoEdge.
  std::uint32_t prepared_ = kNoEdge;
  uint128 prepared_key_ = 0;  // its (time, priority)
  // Each source's last sequence number in this queue, by source id (grown on demand).
  std::vector<std::uint32_t> source_seq_;
  std::uint32_t current_source_ = 0;  // of the event running now; 0 outside one
  bool running_ = false;                // inside an event's process()
  // The furthest (priority << 24 | source) dispatched at furthest_time_ (running_after).
  Tick furthest_time_ = Tick::max();
  std::uint32_t furthest_place_ = 0;
  Tick now_;
  std::size_t live_ = 0;
  std::uint64_t dispatched_ = 0;

  std::uint64_t shuffle_state_ = 0;  // 0: off
  std::vector<Entry> staged_;

  std::deque<PooledEvent> pool_;        // stable addresses
  std::vector<PooledEvent*> free_pool_;  // reusable pooled events
};

}  // namespace t3sim
