#include "models/hbm/hbm_config.h"

#include <bit>

#include <fmt/format.h>

#include "sim/config.h"

namespace t3sim {

Bandwidth HbmConfig::peak_bandwidth() const {
  const std::uint32_t burst_cycles = timing.tBL > 0 ? timing.tBL : 1;
  const uint128 bytes_per_s = static_cast<uint128>(channels) * access_bytes * clock_hz / burst_cycles;
  return Bandwidth(static_cast<std::uint64_t>(bytes_per_s));
}

std::uint64_t HbmConfig::channel_bytes() const {
  return static_cast<std::uint64_t>(banks()) * rows * row_bytes;
}

namespace {

constexpr std::uint64_t kMaxTiming = 1'000'000;  // cycles; far beyond any real DRAM timing

std::uint32_t read_power_of_two(ConfigNode& node, std::string_view key, std::uint64_t def,
                                std::uint64_t max, bool bytes) {
  const std::uint64_t v = bytes ? node.get_bytes(key, def, 1, max) : node.get_uint(key, def, 1, max);
  if (!std::has_single_bit(v)) {
    node.fail(key, fmt::format("must be a power of two (the address map slices bits), got {}", v));
  }
  return static_cast<std::uint32_t>(v);
}

std::uint32_t read_timing(ConfigNode& node, std::string_view key, std::uint32_t def,
                          std::uint64_t min = 0, std::uint64_t max = kMaxTiming) {
  return static_cast<std::uint32_t>(node.get_uint(key, def, min, max));
}

}  // namespace

HbmConfig read_hbm_config(ConfigNode node) {
  HbmConfig cfg;
  cfg.standard = node.get_enum("standard", cfg.standard, {"HBM2", "HBM2E", "HBM3", "HBM3E"});
  cfg.clock_hz = node.get_frequency_hz("clock", cfg.clock_hz, 1'000'000, 100'000'000'000ULL);
  // Any count: a non-power-of-two one (six HBM3e stacks) is interleaved round-robin by
  // the address map.
  cfg.channels = static_cast<std::uint32_t>(node.get_uint("channels", cfg.channels, 1, 1u << 16));
  cfg.bank_groups = read_power_of_two(node, "bank_groups", cfg.bank_groups, 64, false);
  cfg.banks_per_group = read_power_of_two(node, "banks_per_group", cfg.banks_per_group, 64, false);
  cfg.rows = read_power_of_two(node, "rows", cfg.rows, 1u << 24, false);
  cfg.row_bytes = read_power_of_two(node, "row_size", cfg.row_bytes, 1u << 20, true);
  cfg.access_bytes = read_power_of_two(node, "access_size", cfg.access_bytes, 1u << 16, true);
  cfg.value_granule = read_power_of_two(node, "value_granule", cfg.value_granule, 1u << 20, true);
  cfg.refresh = node.get_bool("refresh", cfg.refresh);

  HbmTimings& t = cfg.timing;
  t.tRCD = read_timing(node, "tRCD", t.tRCD);
  t.tRP = read_timing(node, "tRP", t.tRP);
  t.tRAS = read_timing(node, "tRAS", t.tRAS);
  t.tRC = read_timing(node, "tRC", t.tRC);
  t.tCL = read_timing(node, "tCL", t.tCL);
  t.tWL = read_timing(node, "tWL", t.tWL);
  t.tBL = read_timing(node, "tBL", t.tBL, 1);
  t.tCCDS = read_timing(node, "tCCDS", t.tCCDS, 1);
  t.tCCDL = read_timing(node, "tCCDL", t.tCCDL, 1);
  t.tCCDWL = read_timing(node, "tCCDWL", t.tCCDWL, 1);
  t.tRRDS = read_timing(node, "tRRDS", t.tRRDS);
  t.tRRDL = read_timing(node, "tRRDL", t.tRRDL);
  t.tFAW = read_timing(node, "tFAW", t.tFAW);
  t.tWTRS = read_timing(node, "tWTRS", t.tWTRS);
  t.tWTRL = read_timing(node, "tWTRL", t.tWTRL);
  t.tRTW = read_timing(node, "tRTW", t.tRTW);
  t.tRTP = read_timing(node, "tRTP", t.tRTP);
  t.tWR = read_timing(node, "tWR", t.tWR);
  t.tREFI = read_timing(node, "tREFI", t.tREFI, 1, 100 * kMaxTiming);
  t.tRFC = read_timing(node, "tRFC", t.tRFC, 1);

  if (cfg.access_bytes > cfg.row_bytes) {
    node.fail("access_size", fmt::format("must divide row_size: {} B does not divide {} B",
                                         cfg.access_bytes, cfg.row_bytes));
  }
  if (t.tRC < t.tRAS + t.tRP) {
    node.fail("tRC", fmt::format("must be at least tRAS + tRP: {} < {} + {}", t.tRC, t.tRAS, t.tRP));
  }
  if (t.tCCDL < t.tCCDS) {
    node.fail("tCCDL", fmt::format("must be at least tCCDS: {} < {}", t.tCCDL, t.tCCDS));
  }
  if (t.tCCDS < t.tBL) {
    node.fail("tCCDS", fmt::format("must be at least tBL (back-to-back bursts would overlap on the "
                                   "data bus): {} < {}",
                                   t.tCCDS, t.tBL));
  }
  if (t.tCCDWL < t.tCCDL) {
    node.fail("tCCDWL", fmt::format("must be at least tCCDL: {} < {}", t.tCCDWL, t.tCCDL));
  }
  if (cfg.refresh && t.tREFI <= t.tRFC) {
    node.fail("tREFI", fmt::format("must exceed tRFC when refresh is on (the channel would do "
                                   "nothing but refresh): {} <= {}",
                                   t.tREFI, t.tRFC));
  }
  node.finish();
  return cfg;
}

}  // namespace t3sim
