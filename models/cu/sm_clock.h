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
// NVLink traffic draws from the same budget: with the GPU at the cap, any traffic on its
// NVLink port, sent or received, from its L2 or its DRAM, at 50 to 372 GB/s alike, holds
// the SM clock ~3 % lower (results/h200-measurements/ce_read_source_sweep.csv, README
// point 27). So the cap's clock has a second value, `link_busy`, used while the port has
// carried traffic within `hold` (note_link_traffic); the GPU's network endpoint notes
// each packet it sends or receives. Simplification: the lower clock does not depend on
// the rate (the measurement's finding), and the port's activity holds it as long as
// matrix work holds the cap (the controller's same `hold`).
//
// No events: the state is a function of time and of the capping steps and link traffic
// noted so far (whose ends are known when they start). "Just after" makes the answer at
// the tick a step starts the same whichever same-time event asks first.
#pragma once

#include <algorithm>

#include "sim/clock.h"
#include "sim/time.h"

namespace t3sim {

class SmClock {
 public:
  // link_busy_hz: the cap's clock while the NVLink port carries traffic (0: capped_hz).
  SmClock(std::uint64_t boost_hz, std::uint64_t capped_hz, Tick hold, std::uint64_t link_busy_hz = 0)
      : boost_(boost_hz), capped_(capped_hz), link_busy_(link_busy_hz != 0 ? link_busy_hz : capped_hz), hold_(hold) {}

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
  // The NVLink port sends or receives a packet now (`now`: the current time).
  void note_link_traffic(Tick now) {
    if (now >= link_end_) link_start_ = now;
    link_end_ = now + hold_;
  }
  bool capped(Tick t) const { return cap_start_ < t && t < cap_end_; }
  bool link_busy(Tick t) const { return link_start_ < t && t < link_end_; }
  // The cap's clock at t: what capping matrix steps that start at t run at.
  const ClockDomain& cap_clock(Tick t) const { return link_busy(t) ? link_busy_ : capped_; }
  // The clock SM work that starts at t runs at.
  const ClockDomain& at(Tick t) const { return capped(t) ? cap_clock(t) : boost_; }

 private:
  ClockDomain boost_;
  ClockDomain capped_;
  ClockDomain link_busy_;
  Tick hold_;
  Tick cap_start_;
  Tick cap_end_;
  Tick link_start_;
  Tick link_end_;
};

}  // namespace t3sim
