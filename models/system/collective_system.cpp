#include "models/system/collective_system.h"

#include <fmt/format.h>

#include "sim/error.h"

namespace t3sim {

CollectiveSystemConfig read_collective_system(ConfigNode system) {
  CollectiveSystemConfig cfg;
  cfg.num_gpus = static_cast<std::uint32_t>(system.get_uint("num_gpus", cfg.num_gpus, 2, 1024));
  cfg.net = read_net_config(system.child("net"));

  ConfigNode mem = system.child("memory");
  mem.get_enum("model", "ideal", {"ideal"});
  cfg.memory.latency = mem.get_time("latency", cfg.memory.latency, Tick::zero(), Tick::ms(1));
  cfg.memory.bandwidth = mem.get_bandwidth("bandwidth", cfg.memory.bandwidth);
  mem.finish();

  ConfigNode engine = system.child("collective_engine");
  cfg.engine.max_outstanding_reads = static_cast<std::uint32_t>(
      engine.get_uint("max_outstanding_reads", cfg.engine.max_outstanding_reads, 1, 1u << 16));
  engine.finish();
  system.finish();
  return cfg;
}

CollectiveWorkload read_collective_workload(ConfigNode wl) {
  CollectiveWorkload w;
  const std::string op = wl.get_enum("collective", "reduce_scatter",
                                     {"reduce_scatter", "all_gather", "all_reduce"});
  w.op = op == "all_gather"   ? CollectiveOp::kAllGather
         : op == "all_reduce" ? CollectiveOp::kAllReduce
                              : CollectiveOp::kReduceScatter;
  w.array_bytes = wl.get_bytes("size", 0, 1, 1ULL << 40);
  if (!wl.has("size")) wl.fail("size", "required key missing (per-GPU array size, e.g. 192MiB)");
  w.element_bytes = static_cast<std::uint32_t>(wl.get_bytes("element_size", w.element_bytes, 1, 64));
  w.functional = wl.get_enum("functional", w.functional, {"auto", "values", "checksum"});
  w.values_limit = wl.get_bytes("values_limit", w.values_limit, 0, 1ULL << 30);
  if (w.array_bytes % w.element_bytes != 0)
    wl.fail("size", fmt::format("{} B is not a whole number of {}-byte elements", w.array_bytes,
                                w.element_bytes));
  wl.finish();
  return w;
}

namespace {
FunctionalMode choose_mode(const CollectiveWorkload& wl) {
  if (wl.functional == "values") return FunctionalMode::kValues;
  if (wl.functional == "checksum") return FunctionalMode::kChecksum;
  return wl.array_bytes <= wl.values_limit ? FunctionalMode::kValues : FunctionalMode::kChecksum;
}
}  // namespace

void CollectiveSystem::estimate_host_memory(const CollectiveSystemConfig& sys, const CollectiveWorkload& wl,
                                            HostMemoryEstimate& out) {
  const std::uint64_t blocks = (wl.array_bytes + sys.net.packet_bytes - 1) / sys.net.packet_bytes;
  const std::string of = fmt::format(" of {} GPUs", sys.num_gpus);
  out.add("workload.size", "block checksums" + of, std::uint64_t{sys.num_gpus} * blocks, 128);
  if (choose_mode(wl) == FunctionalMode::kValues)
    out.add("workload.size", "the values checked" + of, std::uint64_t{sys.num_gpus} * (wl.array_bytes / wl.element_bytes),
            10);
}

CollectiveSystem::CollectiveSystem(Simulator& sim, const CollectiveSystemConfig& sys,
                                   const CollectiveWorkload& wl)
    : sim_(sim),
      sys_(sys),
      wl_(wl),
      mode_(choose_mode(wl)),
      layout_(wl.array_bytes, wl.element_bytes, sys.net.packet_bytes, sys.num_gpus) {
  std::vector<Component*> gpus;
  for (std::uint32_t g = 0; g < sys.num_gpus; ++g) {
    gpus_.push_back(std::make_unique<Component>(sim, fmt::format("gpu{}", g)));
    gpus.push_back(gpus_.back().get());
    memories_.push_back(std::make_unique<IdealMemory>(*gpus_.back(), "mem", sys.memory));
  }
  net_ = std::make_unique<RingNetwork>(gpus, sys.net);
  for (std::uint32_t g = 0; g < sys.num_gpus; ++g) {
    engines_.push_back(std::make_unique<RingCollectiveEngine>(
        *gpus_[g], "ccl", sys.engine, wl.op, layout_, mode_, g, *memories_[g], net_->to_next(g),
        net_->from_prev(g)));
  }
  preload();
}

CollectiveSystem::~CollectiveSystem() = default;

void CollectiveSystem::preload() {
  for (std::uint32_t g = 0; g < sys_.num_gpus; ++g) {
    const InputPattern input(sim_.seed(), g);
    for (std::uint32_t c = 0; c < layout_.num_chunks(); ++c)
      for (std::uint64_t b = 0; b < layout_.blocks_in_chunk(c); ++b) {
        const auto blk = layout_.block(c, b);
        memories_[g]->preload(layout_.address_of(blk),
                              input.payload(mode_, blk.first_element, blk.elements));
      }
  }
}

std::uint64_t CollectiveSystem::verify(std::string& first_error) const {
  std::vector<InputPattern> inputs;
  for (std::uint32_t g = 0; g < sys_.num_gpus; ++g) inputs.emplace_back(sim_.seed(), g);
  const bool reduced = wl_.op != CollectiveOp::kAllGather;
  std::uint64_t checked = 0;
  for (std::uint32_t g = 0; g < sys_.num_gpus; ++g) {
    for (std::uint32_t c = 0; c < layout_.num_chunks(); ++c) {
      // RS leaves only chunk g complete; AG and AR leave every chunk complete.
      if (wl_.op == CollectiveOp::kReduceScatter && c != g) continue;
      for (std::uint64_t b = 0; b < layout_.blocks_in_chunk(c); ++b) {
        const auto blk = layout_.block(c, b);
        Payload expected = inputs[reduced ? 0 : c].payload(mode_, blk.first_element, blk.elements);
        if (reduced)
          for (std::uint32_t h = 1; h < sys_.num_gpus; ++h)
            expected.add(inputs[h].payload(mode_, blk.first_element, blk.elements));
        const Payload* got = memories_[g]->peek(layout_.address_of(blk));
        ++checked;
        if (got == nullptr || *got != expected) {
          if (first_error.empty())
            first_error = fmt::format("gpu{} chunk {} block {} (address 0x{:x}): {}", g, c, b,
                                      layout_.address_of(blk),
                                      got ? "wrong value" : "never written");
        }
      }
    }
  }
  return checked;
}

CollectiveResult CollectiveSystem::run(Tick max_time) {
  for (auto& e : engines_) e->start();
  if (sim_.run(max_time) == Simulator::StopReason::kTimeLimit) {
    std::string msg = fmt::format("time limit of {} reached before the collective finished; in flight:",
                                  to_string(max_time));
    for (const auto& line : sim_.in_flight_report()) msg += "\n  " + line;
    throw SimulationError(msg);
  }
  for (auto& e : engines_)
    if (!e->done()) throw SimulationError(e->name() + ": collective did not finish");

  CollectiveResult r;
  r.mode = mode_;
  for (auto& e : engines_) r.time = std::max(r.time, e->finish_time());

  const std::uint32_t n = sys_.num_gpus;
  const std::uint32_t passes = wl_.op == CollectiveOp::kAllReduce ? 2 : 1;
  const double s = static_cast<double>(wl_.array_bytes);
  const Tick per_pass = sys_.net.link.bandwidth.transfer_time(
                            wl_.array_bytes * (n - 1) / n) +
                        sys_.net.link.latency * (n - 1);
  r.analytical = per_pass * passes;
  r.algbw_gbps = r.time.ps() ? s / r.time.seconds() / 1e9 : 0.0;
  r.busbw_gbps = r.algbw_gbps * passes * (n - 1) / n;

  std::string first_error;
  r.blocks_checked = verify(first_error);
  r.functional_ok = first_error.empty();

  nlohmann::json gpus = nlohmann::json::array();
  for (std::uint32_t g = 0; g < n; ++g)
    gpus.push_back({{"gpu", g}, {"finish_ps", engines_[g]->finish_time().ps()}});
  nlohmann::json links = nlohmann::json::array();
  for (const auto* l : net_->links()) {
    const double util = r.time.ps() ? static_cast<double>(l->busy_time().ps()) /
                                          static_cast<double>(r.time.ps())
                                    : 0.0;
    links.push_back({{"link", l->name()},
                     {"bytes_sent", l->bytes_sent()},
                     {"bytes_received", l->bytes_received()},
                     {"utilization", util}});
  }
  r.json = {{"collective", to_string(wl_.op)},
            {"num_gpus", n},
            {"array_bytes", wl_.array_bytes},
            {"time_ps", r.time.ps()},
            {"analytical_time_ps", r.analytical.ps()},
            {"algbw_GBps", r.algbw_gbps},
            {"busbw_GBps", r.busbw_gbps},
            {"functional_check",
             {{"mode", mode_ == FunctionalMode::kValues ? "values" : "checksum"},
              {"blocks_checked", r.blocks_checked},
              {"passed", r.functional_ok}}},
            {"gpus", gpus},
            {"links", links}};
  if (!r.functional_ok) throw SimulationError("functional check failed: " + first_error);
  return r;
}

}  // namespace t3sim
