#pragma once
// MCA, T3's communication-aware memory-controller arbitration (T3 §4.5, §6.1.3):
//  - compute always first; communication when compute has nothing that fits;
//  - communication only while the DRAM-queue occupancy is below a threshold, which
//    keeps room in the queues for the compute requests still to come;
//  - a communication request waiting `starvation_limit` cycles since the last
//    communication admission is forced in;
//  - dynamic mode: the threshold is picked from a set (5/10/30/unlimited) by the
//    occupancy observed while the compute kernel runs alone: a memory-intensive
//    kernel (high occupancy) gets a small threshold;
//  - at the kernel boundary communication drains with no limit.

#include "models/mc/i_arbiter.h"
#include "sim/stats.h"

namespace t3sim {

class McaArbiter final : public Arbiter {
 public:
  McaArbiter(Component& parent, const ArbiterConfig& cfg);

  std::optional<Stream> choose(const ArbiterView& v) const override;
  void on_admit(Stream s, const ArbiterView& v) override;
  void observe(const ArbiterView& v) override;
  bool observes() const override { return cfg_.dynamic; }  // only the dynamic mode profiles
  std::optional<Cycles> next_change(const ArbiterView& v) const override;
  void on_kernel_begin(Cycles now) override;
  void on_kernel_end(Cycles now) override;

  // The threshold in force (ArbiterConfig::kUnlimited for no limit).
  std::uint32_t threshold() const { return threshold_; }
  bool profiling() const { return profiling_; }
  // The dynamic rule, exposed for tests: the largest threshold that leaves room in
  // the queues for the observed compute occupancy (capacity - occupancy), unlimited
  // counting as the whole capacity; the smallest one if none does.
  static std::uint32_t pick_threshold(const std::vector<std::uint32_t>& thresholds,
                                      double compute_occupancy, std::uint32_t capacity);

 private:
  bool starved(const ArbiterView& v) const;
  Cycles starvation_deadline(const ArbiterView& v) const;
  void decide(const ArbiterView& v);

  ArbiterConfig cfg_;
  std::uint32_t threshold_;
  bool kernel_running_ = true;
  std::optional<Cycles> last_comm_admit_;
  // Dynamic-mode profile of the kernel running alone: time-weighted occupancy.
  bool profiling_ = false;
  Cycles profile_start_, last_observed_;
  std::uint32_t last_occupancy_ = 0;
  double occupancy_area_ = 0;

  Counter& forced_admissions_;
  Counter& threshold_admissions_;
  Counter& kernel_drains_;
  Scalar& threshold_stat_;
  Scalar& profiled_occupancy_;
};

}  // namespace t3sim
