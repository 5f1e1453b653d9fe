#pragma once
// The Simulator owns the event queue, the stats registry, the timeline and the list
// of components, and runs the event loop with a watchdog:
//
//  * deadlock: the queue drained but some component still reports work in flight;
//  * livelock: events keep firing but no component has reported progress for
//    `stall_limit` of simulated time.
//
// Either stops the run with a SimulationError whose message lists every component's
// in-flight work, instead of hanging or ending silently with a wrong answer.

#include <cstdint>
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

class Simulator {
 public:
  explicit Simulator(std::uint64_t seed = 1, WatchdogConfig watchdog = {});
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  Tick now() const { return events_.now(); }
  std::uint64_t seed() const { return seed_; }
  EventQueue& events() { return events_; }
  StatsRegistry& stats() { return stats_; }
  Timeline& timeline() { return timeline_; }

  void schedule(Event& ev, Tick when) { events_.schedule(ev, when); }
  void schedule_in(Event& ev, Tick delay) { events_.schedule(ev, now() + delay); }

  // Components call this when they complete a unit of work (a message delivered, a
  // request served). It is one increment; the watchdog reads it.
  void note_progress() { ++progress_; }
  std::uint64_t progress() const { return progress_; }

  enum class StopReason { kDrained, kTimeLimit };
  // Run until the queue drains or time passes `until`. Throws SimulationError on
  // deadlock (drained with work in flight) or livelock.
  StopReason run(Tick until = Tick::max());

  // One line per in-flight item of every component ("gpu0.link.next: 3 messages in flight ...").
  std::vector<std::string> in_flight_report() const;

  const std::vector<Component*>& components() const { return components_; }
  Component* find(const std::string& name) const;

 private:
  friend class Component;
  void add_component(Component* c);
  void remove_component(Component* c);
  void watchdog_check();
  [[noreturn]] void fail(const std::string& what) const;

  EventQueue events_;  // declared first: destroyed after everything that holds events
  StatsRegistry stats_;
  Timeline timeline_;
  std::uint64_t seed_;
  WatchdogConfig watchdog_;
  std::uint64_t progress_ = 0;
  std::uint64_t progress_at_check_ = 0;
  Tick last_progress_time_;
  CallbackEvent watchdog_event_;
  std::vector<Component*> components_;
  std::unordered_map<std::string, Component*> by_name_;
};

}  // namespace t3sim
