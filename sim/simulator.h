#pragma once
// The Simulator owns the event queue (one per partition when the model is split for
// parallel simulation; see "Partitions" below), the stats registry, the timeline and
// the list of components, and runs the event loop with a watchdog:
//
//  * deadlock: the queue drained but some component still reports work in flight;
//  * livelock: events keep firing but no component has reported progress for
//    `stall_limit` of simulated time.
//
// Either stops the run with a SimulationError whose message lists every component's
// in-flight work, instead of hanging or ending silently with a wrong answer.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/event_queue.h"
#include "sim/stats.h"
#include "sim/timeline.h"

namespace t3sim {

class Component;

struct WatchdogConfig {
  // How often the livelock check runs (only while other events are pending).
  Tick interval = Tick::us(10);
  // Events firing for this long without progress is a livelock. Zero disables.
  Tick stall_limit = Tick::ms(10);
};

// Told during run() how far the simulation got, about every watchdog interval of
// simulated time (a single partition: at the watchdog's check; partitioned: between
// windows): the time reached and the events dispatched. A progress display's source
// (cli/run.cpp); it must not touch the model, and it rate-limits itself by wall time.
class ProgressObserver {
 public:
  virtual ~ProgressObserver() = default;
  virtual void on_progress(Tick reached, std::uint64_t events) = 0;
};

class Simulator {
  struct Partition;

 public:
  explicit Simulator(std::uint64_t seed = 1, WatchdogConfig watchdog = {});
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // The time of the partition the caller runs in (see "Partitions" below); outside a
  // run, of the partition selected by InPartition (0 by default). After a run, every
  // partition is at the time the run ended.
  Tick now() const { return current().events.now(); }
  std::uint64_t seed() const { return seed_; }
  // Simulated time skipped so far by a model's steady-state sampling (run.sampling):
  // stages it did not simulate but accounted for analytically. A sampled run reports
  // its times as now() + skipped(); an exact run never skips (zero).
  Tick skipped() const { return skipped_; }
  Tick reported_now() const { return now() + skipped_; }
  // Contract: only in a run of one partition (every later time moves by `by`).
  void skip_ahead(Tick by);
  // The caller's partition's queue (as now()).
  EventQueue& events() { return current().events; }
  EventQueue& events(std::uint32_t partition) { return parts_.at(partition)->events; }
  StatsRegistry& stats() { return stats_; }
  Timeline& timeline() { return timeline_; }

  void schedule(Event& ev, Tick when) { current().events.schedule(ev, when); }

  // A new component's event source: numbered in construction order (1, 2, ...; 0 is
  // the environment), so the canonical order of same-time events is the same in every
  // run of the same model. Contract: not inside a partitioned run's window.
  EventSource new_event_source();
  // Debug: every partition's queue inserts same-time schedules in a seeded random
  // order (EventQueue::set_shuffle_ties); results must not change. 0: off.
  void set_shuffle_ties(std::uint64_t seed);
  // The same for every Simulator constructed from now on, in this process (a run builds
  // several: c3's isolated runs, a fused overlap's own); `t3sim run --debug-shuffle-ties`.
  static void set_shuffle_ties_default(std::uint64_t seed);
  // The ProgressObserver of every Simulator constructed from now on (nullptr: none);
  // `t3sim run` sets it for the simulators its kind builds. Not for concurrent use
  // (sweeps leave it unset).
  static void set_progress_observer_default(ProgressObserver* observer);
  void schedule_in(Event& ev, Tick delay) { schedule(ev, now() + delay); }

  // Components call this when they complete a unit of work (a message delivered, a
  // request served). It is one increment; the watchdog reads it.
  void note_progress() { ++current().progress; }
  std::uint64_t progress() const;
  // Events dispatched so far, all partitions.
  std::uint64_t dispatched() const;

  enum class StopReason { kDrained, kTimeLimit };
  // Run until the queue drains or time passes `until`. Throws SimulationError on
  // deadlock (drained with work in flight) or livelock.
  StopReason run(Tick until = Tick::max());

  // ---- Partitions: conservative parallel simulation (Chandy-Misra-Bryant style
  // lookahead, synchronised in windows as in SST's and gem5's parallel modes).
  //
  // A partitioned model is split into parts (e.g. one per GPU) that interact only
  // through interactions taking at least `lookahead` of simulated time (a link's
  // latency). Each partition has its own event queue. The run proceeds in windows
  // [t, t + lookahead), t being the earliest pending event: every partition runs its
  // events of the window independently (on `threads` host threads), then, with all
  // stopped, the interactions they initiated are handed over (exchange hooks, then
  // posts, in a fixed order). Nothing a partition does in a window can affect another
  // within it, so the result is exact for the model as written, and it is the same
  // for any number of threads: the partitioning, not the host, decides the order.
  //
  // Contract: before anything is scheduled; count >= 1; lookahead > 0 if count > 1.
  void set_partitions(std::uint32_t count, Tick lookahead);
  std::uint32_t partitions() const { return static_cast<std::uint32_t>(parts_.size()); }
  Tick lookahead() const { return lookahead_; }
  // Host threads for a partitioned run. Results do not depend on it.
  void set_threads(unsigned threads) { threads_ = threads == 0 ? 1 : threads; }
  // The threads a run uses: at most one per partition.
  unsigned threads() const { return std::min<unsigned>(threads_, partitions()); }
  // The partition the caller runs in (0 in an unpartitioned model).
  std::uint32_t current_partition() const { return current().index; }

  // While alive, code outside the event loop (building, kernel launches before run())
  // acts in `partition`: what it schedules goes to that partition's queue.
  class InPartition {
   public:
    InPartition(Simulator& sim, std::uint32_t partition);
    ~InPartition();
    InPartition(const InPartition&) = delete;
    InPartition& operator=(const InPartition&) = delete;

   private:
    Simulator& sim_;
    struct Partition* previous_;
  };

  // Run `fn` in `partition` at `when`. Into another partition during a run: `when`
  // must be at least the lookahead after now() (an internal error otherwise); the
  // callback is queued at the end of the window, after the exchange hooks, in the
  // order of (posting partition, posting order). Otherwise it is scheduled at once.
  void post(std::uint32_t partition, Tick when, std::function<void()> fn,
            EventPriority priority = EventPriority::kDefault);
  // Runs at the end of every window of a partitioned run, all partitions stopped, in
  // the order added: where a link hands what crossed it to the other side
  // (scheduling into events(partition) explicitly).
  void add_exchange(std::function<void()> hook);
  // Inside an exchange hook: the earliest time a handed-over interaction may take
  // effect (the window's end); an interaction that would land earlier broke the
  // lookahead (an internal error).
  Tick window_end() const { return window_end_; }

  // One line per in-flight item of every component ("gpu0.link.next: 3 messages in flight ...").
  std::vector<std::string> in_flight_report() const;

  // The live components, in construction order.
  std::vector<Component*> components() const;
  Component* find(const std::string& name) const;

 private:
  friend class Component;
  struct Posted {
    Tick when;
    EventPriority priority;
    std::uint32_t partition;
    std::function<void()> fn;
    EventQueue::Stamp stamp;  // the posting event's, in the posting partition
  };
  struct Partition {
    EventQueue events;
    std::uint64_t progress = 0;
    std::uint32_t index = 0;
    std::vector<Posted> outbox;  // posts into other partitions during the current window
    Tick window_end;             // while it runs a window: the window's end
  };
  // The partition running on this host thread (a partitioned run's window), or null.
  static thread_local Partition* running_;
  Partition& current() const { return running_ != nullptr ? *running_ : *selected_; }

  void add_component(Component* c);
  void remove_component(Component* c);
  void watchdog_check();
  // The livelock test at a check at `at`, `events` dispatched so far (the watchdog's own
  // left out): true when events fired but nothing progressed for the stall limit.
  bool stalled(Tick at, std::uint64_t events);
  std::string livelock_message(Tick at) const;
  [[noreturn]] void fail(const std::string& what) const;
  // `what` + "; in flight:" and every component's report (or that none reports any).
  std::string with_in_flight_report(std::string what) const;
  // Inside a catch block of a run: an internal error (a failed check, or any exception
  // a model let escape, out of host memory included) becomes an InternalError with the
  // in-flight report; the simulated system's own failures and user errors pass as they are.
  [[noreturn]] void rethrow_with_report() const;
  StopReason run_partitioned(Tick until);
  void exchange();
  void run_partition_window(std::size_t index);
  void end_run_at(Tick t);

  // Declared first: destroyed after everything that holds events.
  std::vector<std::unique_ptr<Partition>> parts_;
  Partition* selected_ = nullptr;
  Tick lookahead_;
  unsigned threads_ = 1;
  Tick window_end_;
  std::vector<std::function<void()>> exchange_hooks_;
  StatsRegistry stats_;
  Timeline timeline_;
  std::uint64_t seed_;
  Tick skipped_;
  WatchdogConfig watchdog_;
  std::uint32_t last_event_source_ = 0;
  std::uint64_t shuffle_ties_ = 0;
  static std::atomic<std::uint64_t> shuffle_ties_default_;
  static std::atomic<ProgressObserver*> progress_default_;
  ProgressObserver* progress_ = nullptr;
  std::uint64_t progress_at_check_ = 0;
  std::uint64_t events_at_check_ = 0;        // events dispatched at the last check (the watchdog's left out)
  std::uint64_t events_since_progress_ = 0;  // for the livelock message
  std::uint64_t watchdog_checks_ = 0;        // the watchdog's own dispatches
  Tick last_progress_time_;
  CallbackEvent watchdog_event_;
  std::vector<Component*> components_;  // in construction order; null: removed
  std::size_t removed_components_ = 0;    // nulls in components_
  std::unordered_map<std::string, std::size_t> by_name_;  // index in components_
};

}  // namespace t3sim
