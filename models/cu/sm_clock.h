// The SM clock one GPU's compute units share, as the power cap sets it.
//
// The SMs of a GPU run on one clock. Dense matrix work on random operands holds an H200
// at its 700 W power cap, and the whole chip's SM clock drops: measured
// (results/h200-measurements/clock_response.csv, tools/h200/clock_response.cu, README
// point 14), the clock falls from 1,980 MHz to ~1,630-1,730 within a millisecond of the
// first GEMM, to ~1,420-1,490 after ~50 ms, and stays at ~1,590-1,710 for 60-80 ms after
// the last GEMM ends before it returns above 1,900. A copy kernel beside the GEMMs runs
// at that clock too (point 8: the packed copy 1.33-1.49x slower than at 1,980 MHz),
// while the L2 and the path to memory keep theirs (point 9).
//
// The model has two levels: the CU's `clock` (boost) and its `compute_clock` (the cap's,
// steady state). A capping matrix step (CuConfig::compute_clock_hz; a kernel marked
// boost_clock draws too little power) puts the GPU at the cap from just after the step
// starts until `power_cap_hold` after it ends; meanwhile every SM-clocked time of every
// CU of the GPU (the data port, load latency, issue cycles, other compute) runs at the
// cap's clock. Simplifications: the fall is immediate (the steady state the compute clock
// already stands for), the clock during the hold is the cap's (measured 100-250 MHz
// higher), and a time already begun keeps the clock it started at.
//
// No events: the state is a function of time and of the capping steps noted so far
// (whose ends are known when they start). "Just after" makes the answer at the tick a
// step starts the same whichever same-time event asks first.
#pragma once

#include <algorithm>

#include "sim/clock.h"
#include "sim/time.h"

namespace t3sim {

class SmClock {
 public:
  SmClock(std::uint64_t boost_hz, std::uint64_t capped_hz, Tick hold)
      : boost_(boost_hz), capped_(capped_hz), hold_(hold) {}

  // A capping matrix step runs on [start, end), start at or after the current time.
  void note_capping_work(Tick start, Tick end) {
    const Tick until = end + hold_;
    if (start < cap_end_) {  // overlaps (or continues) the capped stretch: their hull
      cap_start_ = std::min(cap_start_, start);
      cap_end_ = std::max(cap_end_, until);
    } else {
      cap_start_ = start;
      cap_end_ = until;
    }
  }
  bool capped(Tick t) const { return cap_start_ < t && t < cap_end_; }
  // The clock SM work that starts at t runs at.
  const ClockDomain& at(Tick t) const { return capped(t) ? capped_ : boost_; }

 private:
  ClockDomain boost_;
  ClockDomain capped_;
  Tick hold_;
  Tick cap_start_;
  Tick cap_end_;
};

}  // namespace t3sim
