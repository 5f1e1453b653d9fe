#pragma once
// A Component is one named unit of the simulated system. Names are hierarchical and
// double as stat prefix, logger name and timeline track: a child named "mc7" of
// "gpu3" is "gpu3.mc7", its stats are "gpu3.mc7.*".
//
// Components talk only through ports/links (sim/link.h), never by reaching into
// each other's state, and schedule events only when they have work: an idle
// component costs nothing.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/log.h"
#include "sim/simulator.h"

namespace t3sim {

class Component {
 public:
  Component(Simulator& sim, std::string name);
  Component(Component& parent, std::string_view child_name);
  virtual ~Component();
  Component(const Component&) = delete;
  Component& operator=(const Component&) = delete;

  const std::string& name() const { return name_; }
  // This component's place among same-time events (sim/event_queue.h, canonical
  // order): its member events carry it.
  EventSource event_source() const { return source_; }
  Simulator& sim() const { return sim_; }
  Tick now() const { return sim_.now(); }

  // Contract: appends one human-readable line per piece of work this component has
  // accepted and not finished; appends nothing when idle. Used by the watchdog's
  // deadlock report, so say what is waiting for what.
  virtual void report_in_flight(std::vector<std::string>& /*out*/) const {}

 protected:
  spdlog::logger& log() const;

  // Stats under this component's name: counter("bytes_sent", ...) is "<name>.bytes_sent".
  Counter& counter(std::string_view stat, std::string unit, std::string description);
  Scalar& scalar(std::string_view stat, std::string unit, std::string description);
  Average& average(std::string_view stat, std::string unit, std::string description);
  Histogram& histogram(std::string_view stat, std::string unit, std::string description,
                       std::uint64_t bucket_width, std::size_t num_buckets);
  TimeWeighted& time_weighted(std::string_view stat, std::string unit, std::string description,
                              std::uint64_t bucket_width = 1, std::size_t num_buckets = 64);

 private:
  Simulator& sim_;
  std::string name_;
  EventSource source_;
  mutable std::shared_ptr<spdlog::logger> log_;  // made on first use
};

}  // namespace t3sim
