#include "sim/component.h"

namespace t3sim {

namespace {

// "<component>.<stat>", built with one allocation (a large model registers tens of
// thousands of stats).
std::string stat_name(const std::string& component, std::string_view stat) {
  std::string name;
  name.reserve(component.size() + 1 + stat.size());
  name += component;
  name += '.';
  name += stat;
  return name;
}

}  // namespace

Component::Component(Simulator& sim, std::string name)
    : sim_(sim), name_(std::move(name)), source_(sim.new_event_source()) {
  sim_.add_component(this);
}

Component::Component(Component& parent, std::string_view child_name)
    : Component(parent.sim(), parent.name() + "." + std::string(child_name)) {}

Component::~Component() { sim_.remove_component(this); }

spdlog::logger& Component::log() const {
  if (!log_) log_ = make_logger(name_);
  return *log_;
}

Counter& Component::counter(std::string_view stat, std::string unit, std::string description) {
  return sim_.stats().counter(stat_name(name_, stat), std::move(unit), std::move(description));
}
Scalar& Component::scalar(std::string_view stat, std::string unit, std::string description) {
  return sim_.stats().scalar(stat_name(name_, stat), std::move(unit), std::move(description));
}
Average& Component::average(std::string_view stat, std::string unit, std::string description) {
  return sim_.stats().average(stat_name(name_, stat), std::move(unit), std::move(description));
}
Histogram& Component::histogram(std::string_view stat, std::string unit, std::string description,
                                std::uint64_t bucket_width, std::size_t num_buckets) {
  return sim_.stats().histogram(stat_name(name_, stat), std::move(unit),
                                std::move(description), bucket_width, num_buckets);
}
TimeWeighted& Component::time_weighted(std::string_view stat, std::string unit,
                                       std::string description, std::uint64_t bucket_width,
                                       std::size_t num_buckets) {
  return sim_.stats().time_weighted(stat_name(name_, stat), std::move(unit),
                                    std::move(description), bucket_width, num_buckets);
}

}  // namespace t3sim
