#pragma once
// Statistics. A component declares each stat once, next to its state, with a unit
// and a description; it keeps the returned reference (a handle) and updates it in
// hot code without any name look-up:
//
//   Counter& bytes_sent_ = stats.counter(name() + ".bytes_sent", "B", "bytes put on the wire");
//   bytes_sent_ += msg.bytes;
//
// The registry owns every stat (stable addresses) and dumps them all, sorted by
// name, as JSON and CSV.

#include <cstdint>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/time.h"

namespace t3sim {

class Stat {
 public:
  Stat(std::string name, std::string unit, std::string description);
  virtual ~Stat() = default;
  Stat(const Stat&) = delete;
  Stat& operator=(const Stat&) = delete;

  const std::string& name() const { return name_; }
  const std::string& unit() const { return unit_; }
  const std::string& description() const { return description_; }
  virtual const char* kind() const = 0;

  // Contract: `end` is the simulated time at which the dump happens (time-weighted
  // stats close their last interval there).
  virtual nlohmann::json to_json(Tick end) const = 0;
  // Flat (field, value) pairs for stats.csv: a counter has one ("value"), a
  // histogram has count/mean/max/p50/p90/p99/bucket_width and one per bucket.
  virtual std::vector<std::pair<std::string, double>> flat(Tick end) const = 0;

 private:
  std::string name_, unit_, description_;
};

// A monotonically increasing count (bytes, requests, events).
class Counter final : public Stat {
 public:
  using Stat::Stat;
  const char* kind() const override { return "counter"; }
  Counter& operator+=(std::uint64_t n) { value_ += n; return *this; }
  Counter& operator++() { ++value_; return *this; }
  std::uint64_t value() const { return source_ != nullptr ? *source_ : value_; }
  nlohmann::json to_json(Tick end) const override;
  std::vector<std::pair<std::string, double>> flat(Tick end) const override;

  // The count lives in its owner's state instead, packed with what the owner's hot
  // path touches anyway (one separately allocated Counter per increment is a host
  // cache miss per event in large systems): value() reads *source, and += / ++ must
  // not be used. Contract: the owner calls unbind() (which keeps the final count)
  // before *source goes away.
  void bind(const std::uint64_t* source) { source_ = source; }
  void unbind() {
    if (source_ != nullptr) value_ = *source_;
    source_ = nullptr;
  }

 private:
  std::uint64_t value_ = 0;
  const std::uint64_t* source_ = nullptr;
};

// A value computed once, typically at the end (utilization, algorithm bandwidth).
class Scalar final : public Stat {
 public:
  using Stat::Stat;
  const char* kind() const override { return "scalar"; }
  void set(double v) { value_ = v; }
  double value() const { return value_; }
  nlohmann::json to_json(Tick end) const override;
  std::vector<std::pair<std::string, double>> flat(Tick end) const override;

 private:
  double value_ = 0;
};

// Mean, min and max of samples (latencies, sizes).
class Average final : public Stat {
 public:
  using Stat::Stat;
  const char* kind() const override { return "average"; }
  void sample(double v) {
    ++count_;
    sum_ += v;
    if (v < min_) min_ = v;
    if (v > max_) max_ = v;
  }
  std::uint64_t count() const { return count_; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
  double min() const { return count_ ? min_ : 0.0; }
  double max() const { return count_ ? max_ : 0.0; }
  nlohmann::json to_json(Tick end) const override;
  std::vector<std::pair<std::string, double>> flat(Tick end) const override;

 private:
  std::uint64_t count_ = 0;
  double sum_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
};

// Linear buckets [0, w), [w, 2w), ... plus an overflow bucket; percentiles are
// estimated from the buckets (reported as the bucket's upper edge).
class Histogram final : public Stat {
 public:
  Histogram(std::string name, std::string unit, std::string description,
            std::uint64_t bucket_width, std::size_t num_buckets);
  const char* kind() const override { return "histogram"; }
  void sample(std::uint64_t v, std::uint64_t weight = 1);
  std::uint64_t count() const { return count_; }
  double mean() const;
  std::uint64_t max() const { return max_; }
  // p in [0, 1].
  double percentile(double p) const;
  const std::vector<std::uint64_t>& buckets() const { return buckets_; }  // last = overflow
  std::uint64_t bucket_width() const { return width_; }
  nlohmann::json to_json(Tick end) const override;
  std::vector<std::pair<std::string, double>> flat(Tick end) const override;

 private:
  std::uint64_t width_;
  std::vector<std::uint64_t> buckets_;
  std::uint64_t count_ = 0;
  double sum_ = 0;
  std::uint64_t max_ = 0;
};

// A level held over time (queue occupancy, link busy): the mean is weighted by how
// long each value was held, and a histogram of time spent at each level is kept.
// Updates cost O(1) and schedule no events.
class TimeWeighted final : public Stat {
 public:
  TimeWeighted(std::string name, std::string unit, std::string description,
               std::uint64_t bucket_width = 1, std::size_t num_buckets = 64);
  const char* kind() const override { return "time_weighted"; }
  // Contract: calls come with non-decreasing `now`. Inline: memory controllers set
  // several per request.
  void set(Tick now, std::int64_t level) {
    if (level < 0 || now < since_) [[unlikely]] bad_set(now, level);
    // An interval of zero length adds nothing (level x 0 to the area, 0 to a bucket).
    if (now != since_) close_interval(now);
    level_ = level;
    if (level_ > max_) max_ = level_;
  }
  void add(Tick now, std::int64_t delta) { set(now, level_ + delta); }
  std::int64_t level() const { return level_; }
  std::int64_t max() const { return max_; }
  double mean(Tick end) const;
  nlohmann::json to_json(Tick end) const override;
  std::vector<std::pair<std::string, double>> flat(Tick end) const override;

 private:
  [[noreturn]] void bad_set(Tick now, std::int64_t level) const;
  void close_interval(Tick now) {
    const Tick::rep duration = (now - since_).ps();
    const auto level = static_cast<std::uint64_t>(level_);
    std::uint64_t term = 0, sum = 0;
    if (exact_area_ && !__builtin_mul_overflow(level, duration, &term) &&
        !__builtin_add_overflow(term, area_int_, &sum)) [[likely]] {
      area_int_ = sum;
    } else {
      add_inexact(duration);
    }
    const std::size_t overflow = time_at_level_.size() - 1;
    const std::uint64_t index = width_ == 1 ? level : level / width_;
    time_at_level_[index < overflow ? static_cast<std::size_t>(index) : overflow] += duration;
    since_ = now;
  }
  // The area's term level x duration when the exact integer sum would reach 2^64 (from
  // then on the sum is the long double it would have been).
  void add_inexact(Tick::rep duration);
  // Share of [0, end) spent in each level bucket, the open interval included.
  std::vector<double> time_fractions(Tick end) const;
  std::uint64_t width_;
  std::vector<Tick::rep> time_at_level_;  // ps spent per bucket of levels; last = overflow
  std::int64_t level_ = 0;
  std::int64_t max_ = 0;
  Tick since_;
  // The area (level x ps) is a long double sum. While every partial sum and term is
  // below 2^64 that sum is exact, so it is kept as an integer until a term would take
  // it to 2^64 or beyond; from there on it is the long double it would have been.
  long double area() const { return exact_area_ ? static_cast<long double>(area_int_) : area_; }
  std::uint64_t area_int_ = 0;
  bool exact_area_ = true;
  long double area_ = 0;
};

class StatsRegistry {
 public:
  StatsRegistry() = default;
  StatsRegistry(const StatsRegistry&) = delete;
  StatsRegistry& operator=(const StatsRegistry&) = delete;

  // Contract: names are unique (a duplicate is a logic_error); use hierarchical
  // names "gpu3.mc7.read_bytes". The returned reference stays valid for the
  // registry's lifetime.
  Counter& counter(std::string name, std::string unit, std::string description);
  Scalar& scalar(std::string name, std::string unit, std::string description);
  Average& average(std::string name, std::string unit, std::string description);
  Histogram& histogram(std::string name, std::string unit, std::string description,
                       std::uint64_t bucket_width, std::size_t num_buckets);
  TimeWeighted& time_weighted(std::string name, std::string unit, std::string description,
                              std::uint64_t bucket_width = 1, std::size_t num_buckets = 64);

  const Stat* find(const std::string& name) const;
  std::size_t size() const { return stats_.size(); }

  // {"gpu0.link.bytes": {"kind": "counter", "unit": "B", "description": ..., "value": ...}, ...}
  nlohmann::json to_json(Tick end) const;
  // Header "name,kind,unit,field,value,description"; one row per flat field.
  void write_csv(std::ostream& out, Tick end) const;

 private:
  template <class T, class... Args>
  T& add(Args&&... args);
  // The slot of by_name_ that holds `name`'s stat, or the empty slot where it belongs.
  std::size_t slot_of(std::string_view name, std::size_t hash) const;
  std::vector<std::unique_ptr<Stat>> stats_;
  // Duplicate check and find(): an open-addressing hash table (linear probing, a power
  // of two in size, at most half full) of 1 + the stat's index in stats_ (0: empty),
  // with each stat's name hash in hashes_. A large model registers tens of thousands
  // of stats; a node-based map allocated a node and a key per stat.
  std::vector<std::uint32_t> by_name_;
  std::vector<std::size_t> hashes_;  // per stat, in stats_ order
};

}  // namespace t3sim
