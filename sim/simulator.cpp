#include "sim/simulator.h"

#include <stdexcept>

#include <fmt/format.h>

#include "sim/component.h"
#include "sim/error.h"
#include "sim/huge_pages.h"

namespace t3sim {

Simulator::Simulator(std::uint64_t seed, WatchdogConfig watchdog)
    : seed_(seed),
      watchdog_(watchdog),
      watchdog_event_("watchdog", [this] { watchdog_check(); }, EventPriority::kLast) {}

Simulator::~Simulator() = default;

void Simulator::add_component(Component* c) {
  if (!by_name_.emplace(c->name(), c).second)
    throw std::logic_error("two components named '" + c->name() + "'");
  components_.push_back(c);
}

void Simulator::remove_component(Component* c) {
  by_name_.erase(c->name());
  std::erase(components_, c);
}

Component* Simulator::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> Simulator::in_flight_report() const {
  std::vector<std::string> lines;
  for (const Component* c : components_) {
    std::vector<std::string> mine;
    c->report_in_flight(mine);
    for (auto& m : mine) lines.push_back(c->name() + ": " + m);
  }
  return lines;
}

void Simulator::fail(const std::string& what) const {
  std::string msg = fmt::format("{} at t={} ({} ps)", what, to_string(now()), now().ps());
  const auto lines = in_flight_report();
  if (lines.empty()) {
    msg += "; no component reports work in flight";
  } else {
    msg += "; in flight:";
    for (const auto& l : lines) msg += "\n  " + l;
  }
  throw SimulationError(msg);
}

void Simulator::watchdog_check() {
  if (progress_ != progress_at_check_) {
    progress_at_check_ = progress_;
    last_progress_time_ = now();
  } else if (now() - last_progress_time_ >= watchdog_.stall_limit) {
    fail(fmt::format("livelock: events keep firing but nothing progressed for {}",
                     to_string(now() - last_progress_time_)));
  }
  // Only keep watching while there is something else to watch: the watchdog alone
  // must not keep a drained simulation alive.
  if (!events_.empty()) events_.schedule(watchdog_event_, now() + watchdog_.interval);
}

Simulator::StopReason Simulator::run(Tick until) {
  const bool watch = watchdog_.stall_limit > Tick::zero();
  if (watch && !watchdog_event_.scheduled() && !events_.empty()) {
    progress_at_check_ = progress_;
    last_progress_time_ = now();
    events_.schedule(watchdog_event_, now() + watchdog_.interval);
  }
  back_with_huge_pages();  // the model is built: its state is allocated
  events_.run(until);
  if (!events_.empty()) return StopReason::kTimeLimit;
  if (!in_flight_report().empty()) fail("deadlock: no events left");
  return StopReason::kDrained;
}

}  // namespace t3sim
