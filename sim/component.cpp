#include "sim/component.h"

namespace t3sim {

Component::Component(Simulator& sim, std::string name) : sim_(sim), name_(std::move(name)) {
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
  return sim_.stats().counter(name_ + "." + std::string(stat), std::move(unit), std::move(description));
}
Scalar& Component::scalar(std::string_view stat, std::string unit, std::string description) {
  return sim_.stats().scalar(name_ + "." + std::string(stat), std::move(unit), std::move(description));
}
Average& Component::average(std::string_view stat, std::string unit, std::string description) {
  return sim_.stats().average(name_ + "." + std::string(stat), std::move(unit), std::move(description));
}
Histogram& Component::histogram(std::string_view stat, std::string unit, std::string description,
                                std::uint64_t bucket_width, std::size_t num_buckets) {
  return sim_.stats().histogram(name_ + "." + std::string(stat), std::move(unit),
                                std::move(description), bucket_width, num_buckets);
}
TimeWeighted& Component::time_weighted(std::string_view stat, std::string unit,
                                       std::string description, std::uint64_t bucket_width,
                                       std::size_t num_buckets) {
  return sim_.stats().time_weighted(name_ + "." + std::string(stat), std::move(unit),
                                    std::move(description), bucket_width, num_buckets);
}

}  // namespace t3sim
