#include "models/collectives/node_collective.h"

#include <algorithm>

#include <fmt/format.h>

#include "collective/i_collective_algorithm.h"
#include "models/common/payload.h"
#include "models/net/i_topology.h"
#include "sim/error.h"

namespace t3sim {

namespace {
// Where a collective WG's occupancy needs come from, for a kernel that does not fit.
std::string collective_resource_hint(const GpuConfig& gpu) {
  std::string hint;
  if (gpu.collective_lds_per_wg > 0) hint += "; its LDS per WG is system.gpu.collective.lds_per_wg";
  if (gpu.collective_registers_per_wg > 0) hint += "; its registers per WG are system.gpu.collective.registers_per_wg";
  return hint;
}
}  // namespace


NodeCollective::NodeCollective(Node& node, const NodeCollectiveParams& p)
    : node_(node), p_(p), granule_(node.config().gpu.memory.hbm.value_granule) {
  const std::uint32_t n = node.num_gpus();
  const std::uint32_t sim_gpus = node.simulated_gpus();
  const std::uint32_t num_cus = node.config().gpu.num_cus;
  const CollectiveAlgorithm& algorithm = p.kind.algorithm();
  if (p.engine == CollectiveEngine::kDma && !algorithm.has_copy_engine_form())
    throw UserError(fmt::format("a DMA-based {} is not supported: DMA engines copy, they do not reduce "
                                "(DMA-based collectives: all-gather, all-to-all)",
                                to_string(p.kind)));
  if (node.config().mode == NetMode::kHomogeneous && !algorithm.shift_invariant())
    throw UserError(fmt::format("homogeneous mode cannot run {}: its GPUs' kernels are not GPU 0's shifted (run it "
                                "in full mode, run.mode: full)",
                                to_string(p.kind)));
  const std::uint32_t cus = p.cus == 0 ? num_cus : p.cus;
  if (cus > num_cus) throw UserError(fmt::format("collective given {} CUs but the GPU has {}", cus, num_cus));
  for (std::uint32_t c = num_cus - cus; c < num_cus; ++c) cu_mask_.push_back(c);
  // Unset: the library's choice on this system (gpu.collective.channels), at most
  // one per CU given; else one per CU given.
  const std::uint32_t library = node.config().gpu.collective_channels;
  channels_ = p.channels != 0 ? p.channels : library != 0 ? std::min(library, cus) : cus;
  // On a node whose GPUs each have a link to every other (fully connected), the
  // channels' rings take different links, as RCCL's channels run different ring
  // orders: the edge-disjoint rings of coprime strides, channel c on the
  // (c mod count)-th. A ring or switch keeps one ring (T3's ring baseline uses one
  // direction).
  if (has_direct_links(node.config().net, n) && algorithm.uses_rings())
    ring_strides_ = coprime_ring_strides(n);
  // Ring kernels run the workload's protocol, or NCCL's tuner's choice (auto); the
  // direct ones have only Simple's bulk slices.
  if (algorithm.uses_rings()) {
    protocol_ = p.pipeline.protocol
                    ? *p.pipeline.protocol
                    : choose_protocol(ProtocolTunerInput{
                          p.kind, p.array_bytes, n, channels_,
                          static_cast<double>(node.config().net.link.bandwidth.bytes_per_second()) * rings_in_use(),
                          node.config().gpu.collective_ll128, node.config().gpu.collective_ll_max_gbps,
                          node.config().gpu.collective_ll128_max_gbps_per_channel});
  }
  const ChannelPipeline pipeline = p.pipeline.resolve(protocol_);

  for (std::uint32_t g = 0; g < sim_gpus; ++g) {
    CollectiveTraceParams t;
    t.kind = p.kind;
    t.num_gpus = n;
    t.gpu = g;
    t.array_bytes = p.array_bytes;
    t.element_bytes = p.element_bytes;
    t.granule = granule_;
    t.channels = channels_;
    t.set_pipeline(pipeline);
    t.ring_strides = ring_strides_;
    t.lds_bytes = node.config().gpu.collective_lds_per_wg;
    // The library's register footprint, held by the simulated WG's threads (its waves
    // stay the generator's: only occupancy changes).
    if (const std::uint64_t regs = node.config().gpu.collective_registers_per_wg; regs > 0) {
      const std::uint64_t threads = std::uint64_t{t.wfs_per_wg} * t.wave_size;
      t.regs_per_thread = static_cast<std::uint32_t>((regs + threads - 1) / threads);
    }
    t.data_base = p.data_base;
    t.data_uncached = p.data_uncached;
    t.in_place = p.in_place;
    t.flag_base = p.flag_base;
    validate_collective(t);
    trace_params_.push_back(t);
    if (p.engine == CollectiveEngine::kCu) {
      traces_.push_back(make_collective_traces(t));
      for (const KernelTrace& k : traces_.back()) {
        if (const std::string why = why_a_wg_does_not_fit(node.config().gpu.cu, k.resources); !why.empty())
          throw WgDoesNotFit(fmt::format("the {} kernel cannot run: {}{}", to_string(p.kind), why,
                                         collective_resource_hint(node.config().gpu)));
      }
    }
  }
  if (node.config().mode == NetMode::kHomogeneous && p.values &&
      p.array_bytes % (std::uint64_t{n} * granule_) != 0)
    throw UserError(fmt::format("homogeneous mode checks values only with equal chunks: {} B is not a multiple of "
                                "{} GPUs x {} B",
                                p.array_bytes, n, granule_));

  if (node.config().mode == NetMode::kHomogeneous && p.array_bytes % (std::uint64_t{n} * granule_) == 0) {
    // The mirror must deliver what peer -d stores into *its* chunk (all-gather) or
    // out block (all-to-all): a block index shifted by -d. With unequal chunks the
    // blocks would not line up; such runs keep GPU 0's addresses (timing only).
    const std::uint64_t chunk = p.array_bytes / n;
    node.network().add_mirror_blocks(p.data_base, chunk);
    if (collective_out_bytes(trace_params_[0]) > 0)
      node.network().add_mirror_blocks(collective_out_base(trace_params_[0]), chunk);
  }

  done_.assign(sim_gpus, 0);
  started_.assign(sim_gpus, Tick());
  finished_.assign(sim_gpus, Tick());
  dma_left_.assign(sim_gpus, 0);
  on_done_.resize(sim_gpus);
}

bool NodeCollective::all_done() const {
  return std::all_of(done_.begin(), done_.end(), [](std::uint8_t d) { return d != 0; });
}

std::uint64_t NodeCollective::pattern(std::uint32_t gpu, std::uint64_t word) const {
  if (node_.config().mode == NetMode::kFull) return InputPattern(p_.seed, gpu).value(word);
  // Homogeneous: one pattern repeated per chunk (equal chunks, checked above).
  const std::uint64_t chunk_words = p_.array_bytes / node_.num_gpus() / granule_;
  return InputPattern(p_.seed, 0).value(word % chunk_words);
}

void NodeCollective::preload() {
  if (!p_.values) return;
  const std::uint64_t words = p_.array_bytes / granule_;
  constexpr std::uint64_t kPiece = 1 << 16;
  for (std::uint32_t g = 0; g < node_.simulated_gpus(); ++g) {
    for (std::uint64_t w = 0; w < words; w += kPiece) {
      Payload data;
      const std::uint64_t count = std::min(kPiece, words - w);
      data.words.reserve(count);
      for (std::uint64_t i = 0; i < count; ++i) data.words.push_back(pattern(g, w + i));
      node_.gpu(g).memory().preload(p_.data_base + w * granule_, data);
    }
  }
}

void NodeCollective::start_all(std::function<void(std::uint32_t)> on_done) {
  for (std::uint32_t g = 0; g < node_.simulated_gpus(); ++g) {
    Simulator::InPartition in(node_.gpu(g).sim(), node_.partition(g));
    start(g, on_done);
  }
}

void NodeCollective::start(std::uint32_t g, std::function<void(std::uint32_t)> on_done) {
  if (g >= node_.simulated_gpus() || done_[g])
    internal_error(node_.gpu(g < node_.simulated_gpus() ? g : 0).now(), "collective", fmt::format("start on GPU {} twice or out of range", g),
                   __FILE__, __LINE__);
  started_[g] = node_.gpu(g).sim().reported_now();  // with what sampling skipped (zero in exact runs)
  on_done_[g] = std::move(on_done);
  if (p_.engine == CollectiveEngine::kCu) {
    launch_kernel(g, 0);
  } else {
    start_dma(g);
  }
}

void NodeCollective::launch_kernel(std::uint32_t g, std::size_t index) {
  KernelLaunch k;
  k.trace = &traces_[g][index];
  k.cus = cu_mask_;
  k.priority = p_.priority;
  k.stream = Stream::kCommunication;
  k.value_granule = p_.values ? granule_ : 0;
  k.on_done = [this, g, index] {
    if (index + 1 < traces_[g].size()) {
      launch_kernel(g, index + 1);  // all-reduce: the all-gather follows the reduce-scatter
    } else {
      finish(g);
    }
  };
  node_.gpu(g).launch(std::move(k));
}

// The algorithm's copy-engine form: one host-launched command per copy, spread
// round-robin over the GPU's engines. One host thread submits them one after another
// (ConCCL, seed 003 §VI-B: a hsa_amd_memory_async_copy_on_engine call each), so the
// k-th reaches its engine (k + 1) launch latencies after the start.
void NodeCollective::start_dma(std::uint32_t g) {
  std::uint32_t engine = 0;
  for (const CollectiveCopy& copy : p_.kind.algorithm().copy_engine_copies(trace_params_[g])) {
    DmaCommand cmd;
    cmd.src = copy.src;
    cmd.dst = copy.dst;
    cmd.bytes = copy.bytes;
    cmd.op = MemOp::kWrite;
    cmd.destination = &node_.dma_destination(g, copy.to);
    cmd.value_granule = p_.values ? granule_ : 0;
    cmd.on_done = [this, g] {
      if (--dma_left_[g] == 0) finish(g);
    };
    if (cmd.bytes == 0) continue;
    DmaEngine& dma = node_.dma(g, engine);
    dma.launch(std::move(cmd), dma.config().launch_latency * dma_left_[g]);
    ++dma_left_[g];
    engine = (engine + 1) % node_.dma_engines();
  }
  if (dma_left_[g] == 0) finish(g);
}

void NodeCollective::finish(std::uint32_t g) {
  done_[g] = 1;
  finished_[g] = node_.gpu(g).sim().reported_now();
  if (on_done_[g]) on_done_[g](g);
}

std::uint64_t NodeCollective::verify(std::string& first_error) const {
  if (!p_.values) return 0;
  const std::uint32_t n = node_.num_gpus();
  std::uint64_t checked = 0;
  // Compare [first_word, first_word + count) of GPU g at `base` with expect(word offset).
  auto check = [&](std::uint32_t g, std::uint64_t base, std::uint64_t first_word, std::uint64_t count,
                   const auto& expect) {
    constexpr std::uint64_t kPiece = 1 << 16;
    for (std::uint64_t w = 0; w < count; w += kPiece) {
      const std::uint64_t len = std::min(kPiece, count - w);
      const Payload got = node_.gpu(g).memory().peek(base + (first_word + w) * granule_,
                                                     static_cast<std::uint32_t>(len * granule_));
      for (std::uint64_t i = 0; i < len; ++i) {
        ++checked;
        const std::uint64_t want = expect(w + i);
        if (got.words[i] != want && first_error.empty())
          first_error = fmt::format("gpu{} word {:#x}: got {:#x}, expected {:#x}", g,
                                    base + (first_word + w + i) * granule_, got.words[i], want);
      }
    }
  };
  auto sum_over_gpus = [&](std::uint64_t word) {
    std::uint64_t s = 0;
    for (std::uint32_t h = 0; h < n; ++h) s += pattern(h, word);
    return s;
  };
  const CollectiveTraceParams& t = trace_params_[0];
  for (std::uint32_t g = 0; g < node_.simulated_gpus(); ++g) {
    for (std::uint32_t c = 0; c < n; ++c) {
      const ByteRange r = collective_chunk(t, c);
      const std::uint64_t first = r.first / granule_, words = r.bytes / granule_;
      switch (p_.kind.op()) {
        case CollectiveOp::kReduceScatter:
          if (c != g) break;  // only a GPU's own chunk is defined after a reduce-scatter
          check(g, p_.data_base, first, words, [&](std::uint64_t i) { return sum_over_gpus(first + i); });
          break;
        case CollectiveOp::kAllReduce:
          check(g, p_.data_base, first, words, [&](std::uint64_t i) { return sum_over_gpus(first + i); });
          break;
        case CollectiveOp::kAllGather:
          check(g, p_.data_base, first, words, [&](std::uint64_t i) { return pattern(c, first + i); });
          break;
        case CollectiveOp::kAllToAll: {
          // GPU c's block in GPU g's out buffer is GPU c's chunk g.
          const ByteRange block = collective_a2a_block(t, g, c);
          const std::uint64_t src_first = collective_chunk(t, g).first / granule_;
          check(g, collective_out_base(t), block.first / granule_, block.bytes / granule_,
                [&](std::uint64_t i) { return pattern(c, src_first + i); });
          break;
        }
      }
    }
  }
  return checked;
}

Tick NodeCollective::link_bound() const {
  const NodeConfig& cfg = node_.config();
  LinkBoundInput in;
  in.num_gpus = cfg.num_gpus;
  in.array_bytes = static_cast<double>(p_.array_bytes);
  in.link_bytes_per_second = static_cast<double>(cfg.net.link.bandwidth.bytes_per_second());
  in.link_latency_seconds = static_cast<double>(cfg.net.link.latency.ps()) * 1e-12;
  in.rings_in_use = rings_in_use();
  const double seconds = p_.kind.algorithm().link_seconds(in);
  return Tick(static_cast<std::uint64_t>(seconds * 1e12));
}

double NodeCollective::bus_bandwidth_factor() const {
  return p_.kind.algorithm().bus_bandwidth_factor(node_.config().num_gpus);
}

nlohmann::json NodeCollective::results(std::uint64_t words_checked) const {
  const NodeConfig& cfg = node_.config();
  const std::uint32_t sim_gpus = node_.simulated_gpus();
  Tick end = Tick::zero();
  nlohmann::json gpus = nlohmann::json::array();
  std::uint64_t dram[kNumMemOps] = {0, 0, 0};
  for (std::uint32_t g = 0; g < sim_gpus; ++g) {
    end = std::max(end, finished_[g]);
    gpus.push_back({{"gpu", g}, {"finished_ps", finished_[g].ps()}});
    for (Stream st : {Stream::kCompute, Stream::kCommunication}) {
      const McStreamStats t = node_.gpu(g).memory().stream_totals(st);
      for (int op = 0; op < kNumMemOps; ++op) dram[op] += t.bytes[op];
    }
  }
  const double time_s = static_cast<double>(end.ps()) * 1e-12;
  const double algbw = time_s > 0 ? static_cast<double>(p_.array_bytes) / time_s / 1e9 : 0;
  return {{"workload", "collective"},
          {"collective", to_string(p_.kind)},
          {"implementation", to_string(p_.engine)},
          {"mode", to_string(cfg.mode)},
          {"num_gpus", cfg.num_gpus},
          {"simulated_gpus", sim_gpus},
          {"topology", cfg.net.topology},
          {"array_bytes", p_.array_bytes},
          {"channels", channels_},
          {"protocol", to_string(protocol_)},
          {"ring_strides", ring_strides_.empty() && p_.kind.uses_rings() ? std::vector<std::uint32_t>{1} : ring_strides_},
          {"time_ps", end.ps()},
          {"analytical_ps", link_bound().ps()},
          {"algbw_GBps", algbw},
          {"busbw_GBps", algbw * bus_bandwidth_factor()},
          {"dram_read_bytes_per_gpu", dram[index(MemOp::kRead)] / sim_gpus},
          {"dram_write_bytes_per_gpu", dram[index(MemOp::kWrite)] / sim_gpus},
          {"dram_update_bytes_per_gpu", dram[index(MemOp::kUpdate)] / sim_gpus},
          {"gpus", gpus},
          {"links", node_.network().link_results(end)},
          {"functional_check", p_.values ? "passed" : "not run"},
          {"words_checked", words_checked}};
}

}  // namespace t3sim
