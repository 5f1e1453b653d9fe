#include "models/system/memory_system.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/error.h"

namespace t3sim {

namespace {

double gbps(double bytes_per_second) { return bytes_per_second / 1e9; }

// Percentile of the union of several histograms with equal buckets.
double merged_percentile(const std::vector<const Histogram*>& hs, double p) {
  std::vector<std::uint64_t> buckets;
  std::uint64_t total = 0, width = 1, max = 0;
  for (const Histogram* h : hs) {
    if (buckets.size() < h->buckets().size()) buckets.resize(h->buckets().size(), 0);
    for (std::size_t i = 0; i < h->buckets().size(); ++i) buckets[i] += h->buckets()[i];
    total += h->count();
    width = h->bucket_width();
    max = std::max(max, h->max());
  }
  if (total == 0) return 0;
  const auto rank = static_cast<std::uint64_t>(p * static_cast<double>(total - 1)) + 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i + 1 < buckets.size(); ++i) {
    seen += buckets[i];
    if (seen >= rank) return static_cast<double>(std::min<std::uint64_t>((i + 1) * width, max));
  }
  return static_cast<double>(max);
}

}  // namespace

MemoryWorkload read_memory_workload(ConfigNode workload, std::uint32_t value_granule) {
  MemoryWorkload wl;
  wl.generators = read_traffic_configs(workload, value_granule);
  wl.check_values = workload.get_bool("check_values", wl.check_values);
  workload.finish();
  return wl;
}

MemorySystem::MemorySystem(Simulator& sim, const GpuMemoryConfig& memory, const MemoryWorkload& workload)
    : sim_(sim),
      workload_(workload),
      gpu_(sim, "gpu0"),
      memory_(std::make_unique<GpuMemory>(gpu_, "mem", memory)),
      reference_(memory.hbm.value_granule) {
  for (const TrafficConfig& cfg : workload.generators) {
    generators_.push_back(std::make_unique<TrafficGenerator>(gpu_, cfg, sim.seed(), *memory_,
                                                             memory.hbm.value_granule));
    TrafficGenerator& g = *generators_.back();
    if (cfg.values && workload.check_values) g.set_value_reference(&reference_);
    if (cfg.kernel) {
      ++kernels_running_;
      // The last compute kernel to finish is the kernel boundary (T3 §4.5).
      g.set_on_finished([this] {
        if (--kernels_running_ == 0) memory_->kernel_end();
      });
    }
  }
}

MemorySystem::~MemorySystem() = default;

MemoryResult MemorySystem::run(Tick max_time) {
  if (kernels_running_ > 0) memory_->kernel_begin();
  for (auto& g : generators_) g->start();
  if (sim_.run(max_time) == Simulator::StopReason::kTimeLimit) {
    throw SimulationError(fmt::format("run.max_time ({}) reached before the generators finished",
                                      to_string(max_time)));
  }
  for (const auto& g : generators_) {
    if (!g->finished()) throw SimulationError(fmt::format("{} did not finish", g->name()));
  }

  MemoryResult r;
  // The run ends when the memory system has drained: the generators' last response, or
  // the last DRAM response after it (an L2 write-back of a line a generator dirtied).
  // Not sim_.now(): the watchdog's periodic check may run later.
  r.simulated = memory_->last_response();
  for (const auto& g : generators_) r.simulated = std::max(r.simulated, g->last_response());
  const HbmConfig& hbm = memory_->config().hbm;
  r.peak_bandwidth = static_cast<double>(hbm.peak_bandwidth().bytes_per_second());
  const double seconds = static_cast<double>(r.simulated.ps()) * 1e-12;

  std::uint64_t dram_bytes = 0, hits = 0, accesses = 0;
  nlohmann::json streams = nlohmann::json::object();
  for (int s = 0; s < kNumStreams; ++s) {
    const Stream stream = static_cast<Stream>(s);
    StreamMemoryStats& st = r.streams[s];
    const McStreamStats total = memory_->stream_totals(stream);
    for (int o = 0; o < kNumMemOps; ++o) {
      st.requests[o] = total.requests[o];
      st.bytes[o] = total.bytes[o];
    }
    st.row_hits = total.row_hits;
    st.row_misses = total.row_misses;
    st.row_conflicts = total.row_conflicts;
    // Latency and occupancy are per controller: merged here.
    std::vector<const Histogram*> latencies;
    double latency_sum = 0;
    std::uint64_t latency_count = 0;
    for (std::uint32_t c = 0; c < memory_->channels(); ++c) {
      const McStreamStats m = memory_->mc(c).stream_stats(stream);
      latencies.push_back(m.latency);
      latency_sum += m.latency->mean() * static_cast<double>(m.latency->count());
      latency_count += m.latency->count();
      st.dram_queue_occupancy_mean += m.dram_queue_occupancy->mean(r.simulated);
    }
    st.latency_mean_ns = latency_count ? latency_sum / static_cast<double>(latency_count) : 0;
    st.latency_p99_ns = merged_percentile(latencies, 0.99);
    for (int o = 0; o < kNumMemOps; ++o) dram_bytes += st.bytes[o];
    hits += st.row_hits;
    accesses += st.row_hits + st.row_misses + st.row_conflicts;

    nlohmann::json j;
    for (int o = 0; o < kNumMemOps; ++o) {
      j["requests"][to_string(static_cast<MemOp>(o))] = st.requests[o];
      j["bytes"][to_string(static_cast<MemOp>(o))] = st.bytes[o];
    }
    j["row_hits"] = st.row_hits;
    j["row_misses"] = st.row_misses;
    j["row_conflicts"] = st.row_conflicts;
    j["mc_latency_mean_ns"] = st.latency_mean_ns;
    j["mc_latency_p99_ns"] = st.latency_p99_ns;
    j["dram_queue_occupancy_mean"] = st.dram_queue_occupancy_mean;
    streams[to_string(stream)] = j;
  }
  r.dram_bandwidth = seconds > 0 ? static_cast<double>(dram_bytes) / seconds : 0;
  r.row_hit_rate = accesses ? static_cast<double>(hits) / static_cast<double>(accesses) : 0;

  nlohmann::json gens = nlohmann::json::array();
  for (const auto& g : generators_) {
    const TrafficConfig& c = g->config();
    gens.push_back({{"name", c.name},
                    {"stream", to_string(c.stream)},
                    {"op", to_string(c.op)},
                    {"pattern", to_string(c.pattern)},
                    {"requests", g->completed()},
                    {"bytes", g->bytes()},
                    {"bandwidth_GBps", gbps(g->achieved_bandwidth())},
                    {"first_issue_ps", g->first_issue().ps()},
                    {"last_response_ps", g->last_response().ps()},
                    {"latency_mean_ns", g->latency().mean()},
                    {"latency_p50_ns", g->latency().percentile(0.5)},
                    {"latency_p99_ns", g->latency().percentile(0.99)},
                    {"latency_max_ns", g->latency().max()}});
  }

  if (workload_.check_values && reference_.tracked() > 0) {
    r.values_checked = true;
    r.values = reference_.check([this](std::uint64_t a, std::uint32_t b) { return memory_->peek(a, b); });
  }

  nlohmann::json& j = r.json;
  j["workload"] = "memory";
  j["simulated_time_ps"] = r.simulated.ps();
  j["memory"] = {{"standard", hbm.standard},
                 {"channels", hbm.channels},
                 {"peak_bandwidth_GBps", gbps(r.peak_bandwidth)},
                 {"dram_bandwidth_GBps", gbps(r.dram_bandwidth)},
                 {"dram_utilization", r.peak_bandwidth > 0 ? r.dram_bandwidth / r.peak_bandwidth : 0},
                 {"row_hit_rate", r.row_hit_rate},
                 {"arbiter", memory_->config().mc.arbiter.type},
                 {"streams", streams}};
  j["generators"] = gens;
  if (r.values_checked) {
    j["values"] = {{"checked", r.values.checked},
                   {"mismatches", r.values.mismatches},
                   {"ambiguous", r.values.ambiguous},
                   {"messages", r.values.messages}};
  }
  return r;
}

std::string MemorySystem::summary(const MemoryResult& r) const {
  const GpuMemoryConfig& m = memory_->config();
  std::string arbiter = m.mc.arbiter.type;
  if (arbiter == "mca") {
    arbiter += m.mc.arbiter.dynamic ? " (dynamic threshold)"
               : m.mc.arbiter.threshold == ArbiterConfig::kUnlimited
                   ? " (threshold unlimited)"
                   : fmt::format(" (threshold {})", m.mc.arbiter.threshold);
  }
  std::string out = fmt::format(
      "memory-only run: {} x {} channels, peak {:.1f} GB/s, L2 {} MiB, arbiter {}\n"
      "simulated {}; DRAM {:.1f} GB/s ({:.1f}% of peak), row-buffer hit rate {:.1f}%\n",
      m.hbm.standard, m.hbm.channels, gbps(r.peak_bandwidth), m.l2.size_bytes >> 20, arbiter,
      to_string(r.simulated), gbps(r.dram_bandwidth), 100.0 * r.dram_bandwidth / r.peak_bandwidth,
      100.0 * r.row_hit_rate);
  out += fmt::format("{:<14} {:<13} {:<7} {:>10} {:>9} {:>10} {:>10}\n", "generator", "stream", "op", "requests",
                     "GB/s", "lat mean", "p99 (ns)");
  for (const auto& g : generators_) {
    const TrafficConfig& c = g->config();
    out += fmt::format("{:<14} {:<13} {:<7} {:>10} {:>9.1f} {:>10.1f} {:>10.0f}\n", c.name, to_string(c.stream),
                       to_string(c.op), g->completed(), gbps(g->achieved_bandwidth()), g->latency().mean(),
                       g->latency().percentile(0.99));
  }
  for (int s = 0; s < kNumStreams; ++s) {
    const StreamMemoryStats& st = r.streams[s];
    std::uint64_t n = 0;
    for (int o = 0; o < kNumMemOps; ++o) n += st.requests[o];
    if (n == 0) continue;
    out += fmt::format("MC {:<13}: {} reads, {} writes, {} updates; latency mean {:.1f} ns, p99 {:.0f} ns; "
                       "mean DRAM-queue occupancy {:.1f}\n",
                       to_string(static_cast<Stream>(s)), st.requests[0], st.requests[1], st.requests[2],
                       st.latency_mean_ns, st.latency_p99_ns, st.dram_queue_occupancy_mean);
  }
  if (r.values_checked) {
    out += r.values.ok() ? fmt::format("values: {} granules checked, all match ({} ambiguous skipped)\n",
                                       r.values.checked, r.values.ambiguous)
                         : fmt::format("values: {} MISMATCHES of {} checked; first: {}\n", r.values.mismatches,
                                       r.values.checked,
                                       r.values.messages.empty() ? "" : r.values.messages.front());
  }
  return out;
}

}  // namespace t3sim
