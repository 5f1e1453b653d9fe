#include "models/cu/cu_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/error.h"
#include "sim/simulator.h"

namespace t3sim {

CuConfig read_cu_config(ConfigNode node) {
  CuConfig cfg;
  cfg.clock_hz = node.get_frequency_hz("clock", cfg.clock_hz);
  if (node.has("compute_clock")) cfg.compute_clock_hz = node.get_frequency_hz("compute_clock", cfg.clock_hz);
  if (cfg.compute_clock_hz > cfg.clock_hz)
    node.fail("compute_clock", fmt::format("expected at most `clock` ({} Hz): the compute steps' clock under "
                                           "load, not above the boost; got {} Hz",
                                           cfg.clock_hz, cfg.compute_clock_hz));
  cfg.power_cap_hold = node.get_time("power_cap_hold", cfg.power_cap_hold, Tick::zero(), Tick::ms(10000));
  if (node.has("link_busy_compute_clock")) {
    cfg.link_busy_compute_clock_hz = node.get_frequency_hz("link_busy_compute_clock", cfg.clock_hz);
    const std::uint64_t cap = cfg.compute_clock_hz != 0 ? cfg.compute_clock_hz : cfg.clock_hz;
    if (cfg.link_busy_compute_clock_hz > cap)
      node.fail("link_busy_compute_clock",
                fmt::format("expected at most `compute_clock` ({} Hz): the cap's clock with the links' power taken "
                            "from its budget; got {} Hz",
                            cap, cfg.link_busy_compute_clock_hz));
  }
  cfg.max_threads = static_cast<std::uint32_t>(node.get_uint("max_threads", cfg.max_threads, 1, 1u << 20));
  cfg.registers = static_cast<std::uint32_t>(node.get_uint("registers", cfg.registers, 1, 1u << 30));
  cfg.lds_bytes = node.get_bytes("lds_size", cfg.lds_bytes, 0, 1ULL << 32);
  cfg.max_wgs = static_cast<std::uint32_t>(node.get_uint("max_wgs", cfg.max_wgs, 1, 1024));
  cfg.max_outstanding_per_wf =
      static_cast<std::uint32_t>(node.get_uint("max_outstanding_per_wf", cfg.max_outstanding_per_wf, 1, 1u << 16));
  cfg.flops_per_cycle = static_cast<std::uint32_t>(node.get_uint("flops_per_cycle", cfg.flops_per_cycle, 1, 1u << 24));
  cfg.load_request_bytes =
      static_cast<std::uint32_t>(node.get_bytes("load_request_bytes", cfg.load_request_bytes, 0, 1ULL << 30));
  cfg.max_inflight_load_bytes = node.get_bytes("max_inflight_load_bytes", cfg.max_inflight_load_bytes, 0, 1ULL << 40);
  cfg.load_bytes_per_cycle =
      static_cast<std::uint32_t>(node.get_uint("load_bytes_per_cycle", cfg.load_bytes_per_cycle, 0, 1u << 20));
  cfg.load_latency = static_cast<std::uint32_t>(node.get_uint("load_latency", cfg.load_latency, 0, 1u << 20));
  cfg.store_bytes_per_cycle =
      static_cast<std::uint32_t>(node.get_uint("store_bytes_per_cycle", cfg.store_bytes_per_cycle, 0, 1u << 20));
  cfg.lds_bytes_per_cycle =
      static_cast<std::uint32_t>(node.get_uint("lds_bytes_per_cycle", cfg.lds_bytes_per_cycle, 0, 1u << 20));
  cfg.posted_stores = node.get_bool("posted_stores", cfg.posted_stores);
  cfg.flag_latency = node.get_time("flag_latency", cfg.flag_latency, Tick::zero(), Tick::ms(1));
  cfg.fence_latency = node.get_time("fence_latency", cfg.fence_latency, Tick::zero(), Tick::ms(1));
  // A ratio in twentieths (1.2: 6/5), reduced: with LL's 2/1 or LL128's 16/15 it stays a
  // small fraction (MemRequest's 8-bit wire_num / wire_den).
  const double wire = node.get_double("remote_store_wire_ratio", 1.0, 1.0, 4.0);
  const auto twentieths = static_cast<std::uint32_t>(std::lround(wire * 20));
  if (std::abs(wire * 20 - twentieths) > 1e-9)
    node.fail("remote_store_wire_ratio", fmt::format("expected a multiple of 0.05, got {}", wire));
  const std::uint32_t g = std::gcd(twentieths, 20u);
  if (twentieths / g > 255)
    node.fail("remote_store_wire_ratio", fmt::format("expected at most 4, got {}", wire));
  cfg.remote_store_wire_num = static_cast<std::uint8_t>(twentieths / g);
  cfg.remote_store_wire_den = static_cast<std::uint8_t>(20 / g);
  for (int protocol : {1, 2})
    if (!store_wire_ratio(cfg, protocol, true))
      node.fail("remote_store_wire_ratio",
                fmt::format("{} with {}'s lines does not fit a request's 8-bit wire ratio (try a multiple of 0.25)",
                            wire, protocol == 1 ? "LL" : "LL128"));
  node.finish();
  return cfg;
}

std::optional<WireRatio> store_wire_ratio(const CuConfig& cfg, int protocol, bool remote) {
  // NCCL LL: a 16 B line holds 8 B of data and two 4 B flags; LL128: a 128 B line holds
  // 120 B of data and an 8 B flag.
  std::uint32_t num = protocol == 1 ? 2 : protocol == 2 ? 16 : 1;
  std::uint32_t den = protocol == 2 ? 15 : 1;
  if (remote) {  // the write packets' own overhead on the link, on top of the lines
    num *= cfg.remote_store_wire_num;
    den *= cfg.remote_store_wire_den;
  }
  const std::uint32_t g = std::gcd(num, den);
  if (num / g > 255 || den / g > 255) return std::nullopt;
  return WireRatio{static_cast<std::uint8_t>(num / g), static_cast<std::uint8_t>(den / g)};
}

std::uint32_t wgs_per_cu(const CuConfig& cfg, const TraceResources& r) {
  std::uint64_t n = cfg.max_wgs;
  n = std::min<std::uint64_t>(n, cfg.max_threads / std::max<std::uint32_t>(r.threads_per_wg, 1));
  const std::uint64_t regs = std::uint64_t{r.threads_per_wg} * r.regs_per_thread;
  if (regs > 0) n = std::min<std::uint64_t>(n, cfg.registers / regs);
  if (r.lds_bytes > 0) n = std::min<std::uint64_t>(n, cfg.lds_bytes / r.lds_bytes);
  return static_cast<std::uint32_t>(n);
}

std::string why_a_wg_does_not_fit(const CuConfig& cfg, const TraceResources& r) {
  const std::uint64_t regs = std::uint64_t{r.threads_per_wg} * r.regs_per_thread;
  if (r.threads_per_wg > cfg.max_threads)
    return fmt::format("a WG has {} threads and a CU holds {} (system.gpu.cu.max_threads)", r.threads_per_wg,
                       cfg.max_threads);
  if (regs > cfg.registers)
    return fmt::format("a WG needs {} registers and a CU has {} (system.gpu.cu.registers)", regs, cfg.registers);
  if (r.lds_bytes > cfg.lds_bytes)
    return fmt::format("a WG needs {} B of LDS and a CU has {} B (system.gpu.cu.lds_size)", r.lds_bytes,
                       cfg.lds_bytes);
  if (wgs_per_cu(cfg, r) == 0) return fmt::format("a CU has no WG slot (system.gpu.cu.max_wgs)");
  return {};
}

}  // namespace t3sim
