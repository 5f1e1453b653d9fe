#include "sim/stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace t3sim {

namespace {

using json = nlohmann::json;
using FlatFields = std::vector<std::pair<std::string, double>>;

json header_json(const Stat& s) {
  return json{{"kind", s.kind()}, {"unit", s.unit()}, {"description", s.description()}};
}

// Field-name suffix of bucket i of a linear-bucket stat: "0_10", ..., "overflow".
std::string bucket_label(std::size_t i, std::size_t num_regular, std::uint64_t width) {
  if (i == num_regular) return "overflow";
  return fmt::format("{}_{}", i * width, (i + 1) * width);
}

// Integral values print without decimals ("42", not "4.2e+01"); everything else in
// fmt's shortest round-trip form, which is deterministic.
std::string format_number(double v) {
  if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 9.0e18) {
    return fmt::format("{}", static_cast<std::int64_t>(v));
  }
  return fmt::format("{}", v);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

}  // namespace

Stat::Stat(std::string name, std::string unit, std::string description)
    : name_(std::move(name)), unit_(std::move(unit)), description_(std::move(description)) {}

// ---- Counter / Scalar / Average ---------------------------------------------------

json Counter::to_json(Tick) const {
  json j = header_json(*this);
  j["value"] = value();
  return j;
}

FlatFields Counter::flat(Tick) const { return {{"value", static_cast<double>(value())}}; }

json Scalar::to_json(Tick) const {
  json j = header_json(*this);
  j["value"] = value_;
  return j;
}

FlatFields Scalar::flat(Tick) const { return {{"value", value_}}; }

json Average::to_json(Tick) const {
  json j = header_json(*this);
  j["count"] = count_;
  j["mean"] = mean();
  j["min"] = min();
  j["max"] = max();
  return j;
}

FlatFields Average::flat(Tick) const {
  return {{"count", static_cast<double>(count_)}, {"mean", mean()}, {"min", min()}, {"max", max()}};
}

// ---- Histogram ----------------------------------------------------------------------

Histogram::Histogram(std::string name, std::string unit, std::string description,
                     std::uint64_t bucket_width, std::size_t num_buckets)
    : Stat(std::move(name), std::move(unit), std::move(description)),
      width_(bucket_width),
      buckets_(num_buckets + 1, 0) {
  if (width_ == 0) throw std::logic_error("histogram '" + this->name() + "': bucket_width must be > 0");
}

void Histogram::sample(std::uint64_t v, std::uint64_t weight) {
  const std::size_t overflow = buckets_.size() - 1;
  const std::uint64_t index = v / width_;
  buckets_[index < overflow ? static_cast<std::size_t>(index) : overflow] += weight;
  count_ += weight;
  sum_ += static_cast<double>(v) * static_cast<double>(weight);
  if (weight > 0 && v > max_) max_ = v;
}

double Histogram::mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }

double Histogram::percentile(double p) const {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw std::logic_error(fmt::format("histogram '{}': percentile {} outside [0, 1]", name(), p));
  }
  if (count_ == 0) return 0.0;
  // The number of samples that must lie at or below the answer; the small slack keeps
  // p*count from landing one past an exact integer through rounding (0.07*100 is 7.000000000000001).
  const double needed = std::max(1.0, std::ceil(p * static_cast<double>(count_) - 1e-9));
  const std::size_t overflow = buckets_.size() - 1;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < overflow; ++i) {
    cumulative += buckets_[i];
    if (static_cast<double>(cumulative) >= needed) {
      return static_cast<double>((i + 1) * width_);
    }
  }
  return static_cast<double>(max_);
}

json Histogram::to_json(Tick) const {
  json j = header_json(*this);
  j["count"] = count_;
  j["mean"] = mean();
  j["max"] = max_;
  j["p50"] = percentile(0.50);
  j["p90"] = percentile(0.90);
  j["p99"] = percentile(0.99);
  j["bucket_width"] = width_;
  j["buckets"] = buckets_;
  return j;
}

FlatFields Histogram::flat(Tick) const {
  FlatFields f = {{"count", static_cast<double>(count_)},
                  {"mean", mean()},
                  {"max", static_cast<double>(max_)},
                  {"p50", percentile(0.50)},
                  {"p90", percentile(0.90)},
                  {"p99", percentile(0.99)},
                  {"bucket_width", static_cast<double>(width_)}};
  // Only non-empty buckets: a latency histogram has hundreds, mostly empty, and a
  // GPU has dozens of them (results.json keeps the full arrays).
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    if (buckets_[i] == 0) continue;
    f.emplace_back("bucket_" + bucket_label(i, buckets_.size() - 1, width_),
                   static_cast<double>(buckets_[i]));
  }
  return f;
}

// ---- TimeWeighted -------------------------------------------------------------------

TimeWeighted::TimeWeighted(std::string name, std::string unit, std::string description,
                           std::uint64_t bucket_width, std::size_t num_buckets)
    : Stat(std::move(name), std::move(unit), std::move(description)),
      width_(bucket_width),
      time_at_level_(num_buckets + 1, 0) {
  if (width_ == 0) {
    throw std::logic_error("time-weighted stat '" + this->name() + "': bucket_width must be > 0");
  }
}

void TimeWeighted::bad_set(Tick now, std::int64_t level) const {
  if (level < 0) {
    throw std::logic_error(fmt::format("time-weighted stat '{}': negative level {}", name(), level));
  }
  throw std::logic_error(fmt::format("time-weighted stat '{}': time went backwards ({} ps < {} ps)",
                                     name(), now.ps(), since_.ps()));
}

void TimeWeighted::add_inexact(Tick::rep duration) {
  if (exact_area_) {
    exact_area_ = false;
    area_ = static_cast<long double>(area_int_);
  }
  area_ += static_cast<long double>(level_) * static_cast<long double>(duration);
}

double TimeWeighted::mean(Tick end) const {
  if (end < since_) {
    throw std::logic_error(fmt::format("time-weighted stat '{}': dumped at {} ps, before its last update at {} ps",
                                       name(), end.ps(), since_.ps()));
  }
  if (end.ps() == 0) return 0.0;
  const long double open = static_cast<long double>(level_) * static_cast<long double>((end - since_).ps());
  return static_cast<double>((area() + open) / static_cast<long double>(end.ps()));
}

// Contract: end >= since_ (callers run mean(end) first, which checks it).
std::vector<double> TimeWeighted::time_fractions(Tick end) const {
  std::vector<double> fractions(time_at_level_.size(), 0.0);
  if (end.ps() == 0) return fractions;
  // The interval still open at `end` counts toward the current level's bucket.
  const std::size_t overflow = time_at_level_.size() - 1;
  const std::uint64_t current = static_cast<std::uint64_t>(level_) / width_;
  const std::size_t open_bucket = current < overflow ? static_cast<std::size_t>(current) : overflow;
  for (std::size_t i = 0; i < fractions.size(); ++i) {
    Tick::rep time = time_at_level_[i];
    if (i == open_bucket) time += (end - since_).ps();
    fractions[i] = static_cast<double>(time) / static_cast<double>(end.ps());
  }
  return fractions;
}

json TimeWeighted::to_json(Tick end) const {
  json j = header_json(*this);
  j["mean"] = mean(end);
  j["max"] = max_;
  j["level"] = level_;
  j["bucket_width"] = width_;
  j["time_fraction"] = time_fractions(end);
  return j;
}

FlatFields TimeWeighted::flat(Tick end) const {
  FlatFields f = {{"mean", mean(end)},
                  {"max", static_cast<double>(max_)},
                  {"level", static_cast<double>(level_)},
                  {"bucket_width", static_cast<double>(width_)}};
  const std::vector<double> fractions = time_fractions(end);
  for (std::size_t i = 0; i < fractions.size(); ++i) {
    if (fractions[i] == 0.0) continue;  // levels never held (as for histogram buckets)
    f.emplace_back("time_fraction_" + bucket_label(i, fractions.size() - 1, width_), fractions[i]);
  }
  return f;
}

// ---- StatsRegistry ------------------------------------------------------------------

std::size_t StatsRegistry::slot_of(std::string_view name, std::size_t hash) const {
  const std::size_t mask = by_name_.size() - 1;
  for (std::size_t slot = hash & mask;; slot = (slot + 1) & mask) {
    const std::uint32_t entry = by_name_[slot];
    if (entry == 0 || (hashes_[entry - 1] == hash && stats_[entry - 1]->name() == name)) return slot;
  }
}

template <class T, class... Args>
T& StatsRegistry::add(Args&&... args) {
  auto stat = std::make_unique<T>(std::forward<Args>(args)...);
  T& ref = *stat;
  if ((stats_.size() + 1) * 2 > by_name_.size()) {  // keep the table at most half full
    by_name_.assign(std::max<std::size_t>(64, by_name_.size() * 2), 0);
    for (std::size_t i = 0; i < stats_.size(); ++i)
      by_name_[slot_of(stats_[i]->name(), hashes_[i])] = static_cast<std::uint32_t>(i + 1);
  }
  const std::size_t hash = std::hash<std::string_view>{}(ref.name());
  const std::size_t slot = slot_of(ref.name(), hash);
  if (by_name_[slot] != 0) throw std::logic_error("duplicate stat name '" + ref.name() + "'");
  if (stats_.size() >= UINT32_MAX) throw std::length_error("more than 2^32 - 1 stats");
  stats_.push_back(std::move(stat));
  hashes_.push_back(hash);
  by_name_[slot] = static_cast<std::uint32_t>(stats_.size());
  return ref;
}

Counter& StatsRegistry::counter(std::string name, std::string unit, std::string description) {
  return add<Counter>(std::move(name), std::move(unit), std::move(description));
}

Scalar& StatsRegistry::scalar(std::string name, std::string unit, std::string description) {
  return add<Scalar>(std::move(name), std::move(unit), std::move(description));
}

Average& StatsRegistry::average(std::string name, std::string unit, std::string description) {
  return add<Average>(std::move(name), std::move(unit), std::move(description));
}

Histogram& StatsRegistry::histogram(std::string name, std::string unit, std::string description,
                                    std::uint64_t bucket_width, std::size_t num_buckets) {
  return add<Histogram>(std::move(name), std::move(unit), std::move(description), bucket_width,
                        num_buckets);
}

TimeWeighted& StatsRegistry::time_weighted(std::string name, std::string unit,
                                           std::string description, std::uint64_t bucket_width,
                                           std::size_t num_buckets) {
  return add<TimeWeighted>(std::move(name), std::move(unit), std::move(description), bucket_width,
                           num_buckets);
}

const Stat* StatsRegistry::find(const std::string& name) const {
  if (by_name_.empty()) return nullptr;
  const std::uint32_t entry = by_name_[slot_of(name, std::hash<std::string_view>{}(name))];
  return entry == 0 ? nullptr : stats_[entry - 1].get();
}

json StatsRegistry::to_json(Tick end) const {
  json j = json::object();  // keys are kept sorted
  for (const auto& stat : stats_) j[stat->name()] = stat->to_json(end);
  return j;
}

void StatsRegistry::write_csv(std::ostream& out, Tick end) const {
  std::vector<const Stat*> sorted;
  sorted.reserve(stats_.size());
  for (const auto& stat : stats_) sorted.push_back(stat.get());
  std::sort(sorted.begin(), sorted.end(),
            [](const Stat* a, const Stat* b) { return a->name() < b->name(); });

  out << "name,kind,unit,field,value,description\n";
  for (const Stat* stat : sorted) {
    const std::string name = csv_field(stat->name());
    const std::string unit = csv_field(stat->unit());
    const std::string description = csv_field(stat->description());
    for (const auto& [field, value] : stat->flat(end)) {
      out << name << ',' << stat->kind() << ',' << unit << ',' << csv_field(field) << ','
          << format_number(value) << ',' << description << '\n';
    }
  }
}

}  // namespace t3sim
