#include "models/mc/impl/mca.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace t3sim {

namespace {
double as_number(std::uint32_t threshold) {
  return threshold == ArbiterConfig::kUnlimited ? -1.0 : static_cast<double>(threshold);
}
}  // namespace

McaArbiter::McaArbiter(Component& parent, const ArbiterConfig& cfg)
    : Arbiter(parent, "arbiter"),
      cfg_(cfg),
      threshold_(cfg.threshold),
      profiling_(cfg.dynamic),
      forced_admissions_(counter("forced_admissions", "requests",
                                 "communication requests forced in by the starvation limit")),
      threshold_admissions_(counter("threshold_admissions", "requests",
                                    "communication requests admitted below the occupancy threshold")),
      kernel_drains_(counter("kernel_drains", "events",
                             "compute-kernel boundaries at which communication drained unlimited")),
      threshold_stat_(scalar("threshold", "requests",
                             "occupancy threshold in force at the end (-1: unlimited)")),
      profiled_occupancy_(scalar("profiled_occupancy", "requests",
                                 "mean DRAM-queue occupancy of the compute kernel running alone "
                                 "(dynamic mode)")) {
  threshold_stat_.set(as_number(threshold_));
}

Cycles McaArbiter::starvation_deadline(const ArbiterView& v) const {
  Cycles since = v[Stream::kCommunication].head_arrival;
  if (last_comm_admit_ && *last_comm_admit_ > since) since = *last_comm_admit_;
  return since + Cycles(cfg_.starvation_limit);
}

bool McaArbiter::starved(const ArbiterView& v) const {
  return v[Stream::kCommunication].waiting > 0 && v.now >= starvation_deadline(v);
}

std::optional<Stream> McaArbiter::choose(const ArbiterView& v) const {
  const bool compute = v.eligible(Stream::kCompute);
  const bool comm = v.eligible(Stream::kCommunication);
  if (!kernel_running_) {  // kernel boundary: communication drains with no limit
    if (compute) return Stream::kCompute;
    return comm ? std::optional(Stream::kCommunication) : std::nullopt;
  }
  if (comm && starved(v)) return Stream::kCommunication;
  if (compute) return Stream::kCompute;
  if (comm && (threshold_ == ArbiterConfig::kUnlimited || v.occupancy < threshold_))
    return Stream::kCommunication;
  return std::nullopt;
}

void McaArbiter::on_admit(Stream s, const ArbiterView& v) {
  if (s != Stream::kCommunication) return;
  if (kernel_running_) {
    if (starved(v)) {
      ++forced_admissions_;
    } else if (!v.eligible(Stream::kCompute)) {
      ++threshold_admissions_;
    }
  }
  last_comm_admit_ = v.now;
}

void McaArbiter::observe(const ArbiterView& v) {
  if (!profiling_) return;
  if (v.now > last_observed_) {
    occupancy_area_ += static_cast<double>(last_occupancy_) * static_cast<double>((v.now - last_observed_).count());
    last_observed_ = v.now;
  }
  last_occupancy_ = v.occupancy;
  // The profile is of the kernel alone: it ends when communication shows up.
  const bool comm_present = v[Stream::kCommunication].waiting > 0 || v[Stream::kCommunication].in_dram_queue > 0;
  if (comm_present || v.now >= profile_start_ + Cycles(cfg_.profile_cycles)) decide(v);
}

void McaArbiter::decide(const ArbiterView& v) {
  profiling_ = false;
  const std::uint64_t elapsed = (v.now - profile_start_).count();
  if (elapsed == 0) return;  // nothing observed: keep the configured threshold
  const double mean = occupancy_area_ / static_cast<double>(elapsed);
  threshold_ = pick_threshold(cfg_.thresholds, mean, v.capacity);
  profiled_occupancy_.set(mean);
  threshold_stat_.set(as_number(threshold_));
  log().debug("profiled compute occupancy {:.2f} of {} over {} cycles: threshold {}", mean, v.capacity,
              elapsed, threshold_ == ArbiterConfig::kUnlimited ? std::string("unlimited")
                                                               : std::to_string(threshold_));
}

std::uint32_t McaArbiter::pick_threshold(const std::vector<std::uint32_t>& thresholds,
                                         double compute_occupancy, std::uint32_t capacity) {
  const double headroom = static_cast<double>(capacity) - compute_occupancy;
  std::optional<std::uint32_t> best;
  std::uint32_t smallest = ArbiterConfig::kUnlimited;
  for (std::uint32_t t : thresholds) {
    smallest = std::min(smallest, t);
    const double room_needed = t == ArbiterConfig::kUnlimited ? capacity : t;
    if (room_needed <= headroom && (!best || t > *best)) best = t;
  }
  return best.value_or(smallest);
}

std::optional<Cycles> McaArbiter::next_change(const ArbiterView& v) const {
  std::optional<Cycles> at;
  if (kernel_running_ && v[Stream::kCommunication].waiting > 0) {
    const Cycles deadline = starvation_deadline(v);
    if (deadline > v.now) at = deadline;
  }
  if (profiling_) {
    const Cycles end = profile_start_ + Cycles(cfg_.profile_cycles);
    if (end > v.now && (!at || end < *at)) at = end;
  }
  return at;
}

void McaArbiter::on_kernel_begin(Cycles now) {
  kernel_running_ = true;
  if (cfg_.dynamic) {
    profiling_ = true;
    profile_start_ = last_observed_ = now;
    occupancy_area_ = 0;
  }
}

void McaArbiter::on_kernel_end(Cycles) {
  kernel_running_ = false;
  ++kernel_drains_;
}


T3SIM_REGISTER(arbiter_policies, "mca",
               "T3-MCA (T3 §4.5): compute first, communication below a DRAM-queue occupancy threshold",
               [](Component& mc, const ArbiterConfig& cfg) { return std::make_unique<McaArbiter>(mc, cfg); })

}  // namespace t3sim
