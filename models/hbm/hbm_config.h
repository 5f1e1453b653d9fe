#pragma once
// Parameters of one GPU's HBM: organization and DRAM timing constraints, all timings
// in memory-clock cycles. Presets live in configs/memory/*.yaml with their sources.

#include <cstdint>
#include <string>

#include "sim/time.h"

namespace t3sim {

class ConfigNode;

struct HbmTimings {
  // Names follow JEDEC / Ramulator. All in memory-clock cycles (Cycles of clock_hz).
  std::uint32_t tRCD = 12;   // ACT -> RD/WR/UPD, same bank
  std::uint32_t tRP = 12;    // PRE -> ACT, same bank
  std::uint32_t tRAS = 28;   // ACT -> PRE, same bank
  std::uint32_t tRC = 40;    // ACT -> ACT, same bank
  std::uint32_t tCL = 12;    // RD -> first read data
  std::uint32_t tWL = 2;     // WR/UPD -> first write data
  std::uint32_t tBL = 1;     // cycles one burst occupies the data bus (burst length / 2 for DDR)
  std::uint32_t tCCDS = 1;   // column -> column, different bank group
  std::uint32_t tCCDL = 2;   // column -> column, same bank group
  std::uint32_t tCCDWL = 4;  // UPD -> next column command, same bank group (T3 Table 1: 2 x tCCDL)
  std::uint32_t tRRDS = 3;   // ACT -> ACT, different bank group
  std::uint32_t tRRDL = 3;   // ACT -> ACT, same bank group
  std::uint32_t tFAW = 16;   // window holding at most four ACTs
  std::uint32_t tWTRS = 3;   // end of write data -> RD, different bank group
  std::uint32_t tWTRL = 5;   // end of write data -> RD, same bank group
  std::uint32_t tRTW = 14;   // RD -> WR/UPD (bus turnaround), any bank
  std::uint32_t tRTP = 3;    // RD -> PRE, same bank
  std::uint32_t tWR = 10;    // end of write data -> PRE, same bank
  std::uint32_t tREFI = 3900;  // average refresh interval
  std::uint32_t tRFC = 260;    // REF -> ACT (all banks busy)
};

struct HbmConfig {
  std::string standard = "HBM2";
  std::uint64_t clock_hz = 1'000'000'000;  // command clock; data moves on both edges
  std::uint32_t channels = 32;             // per GPU: stacks x channels (or pseudo-channels)
  std::uint32_t bank_groups = 4;           // per channel
  std::uint32_t banks_per_group = 4;
  std::uint32_t rows = 16384;              // per bank
  std::uint32_t row_bytes = 2048;          // row buffer (page) size of one channel
  std::uint32_t access_bytes = 32;         // bytes one column command moves (bus width x burst length)
  // Functional store: one 64-bit word (a value, or the linear checksum of the values
  // it covers) per value_granule bytes. Requests with data must be granule-aligned.
  std::uint32_t value_granule = 32;
  bool refresh = true;                     // model tREFI/tRFC refresh
  HbmTimings timing;

  std::uint32_t banks() const { return bank_groups * banks_per_group; }
  std::uint32_t columns() const { return row_bytes / access_bytes; }  // column accesses per row
  // Peak data rate of all channels: access_bytes per tBL cycles each.
  Bandwidth peak_bandwidth() const;
  // Bytes of one channel's address space.
  std::uint64_t channel_bytes() const;
};

// Reads a `hbm:` section (typically `base: ../memory/hbm2.yaml` plus overrides).
// Checks consistency (powers of two where the address map needs them, tRC >= tRAS +
// tRP, tCCDL >= tCCDS, ...) and reports violations as ConfigErrors at the key.
HbmConfig read_hbm_config(ConfigNode node);

}  // namespace t3sim
