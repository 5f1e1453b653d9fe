// ag_gemm (../shared/seeds/001, Triton-distributed's AMD "Overlapping AllGather GEMM"):
// on every GPU, A[M x K] (GPU r holds rows r x M/N ..) is all-gathered and multiplied
// by the GPU's own B[K x N] (its share of the columns; stored N x K, the tutorial's
// weight).
//
//   sequential  the CU all-gather (the library's, at its channel count), then the
//               library GEMM
//   fused       seed 001's producer: one host thread submits, for each peer in rank
//               order from g + 1 and each chunk of g's rows, a copy of the chunk into
//               the peer's gathered A and a copy of a flag into the peer's signals, on
//               stream (peer index mod streams) (Triton-distributed's
//               cp_engine_producer_all_gather_full_mesh_push_multi_stream); every
//               submission costs the host thread dma.launch_latency (models/dma: the
//               k-th reaches its engine (k + 1) launch latencies after the start). Then
//               (copies_first, the library's ag_gemm_intra_node_op) it launches the
//               consumer GEMM (trace/consumer_gemm.h), or launches it first. Streams map
//               to engines round robin (HIP keeps a stream on one SDMA engine and gives
//               concurrent streams different free engines: ROCm clr rocblit.cpp).
//
// Values: the all-gather's pattern. Its CU collective preloads every GPU's A and
// checks every GPU's gathered rows after either procedure (the GEMM's output is
// synthetic).

#include <algorithm>

#include <fmt/format.h>

#include "models/system/overlap/ops.h"
#include "sim/error.h"
#include "sim/int_math.h"
#include "trace/consumer_gemm.h"

namespace t3sim {
namespace {

// The consumer's chunk signals, apart from the CU collective's flags (1 << 32).
constexpr std::uint64_t kConsumerFlagBase = 1ULL << 35;

ConsumerGemmParams consumer_params(const AgGemmSpec& s, std::uint32_t num_gpus, std::uint32_t gpu,
                                   std::uint32_t cus) {
  ConsumerGemmParams c;
  c.gemm = s.gemm;
  c.num_gpus = num_gpus;
  c.gpu = gpu;
  c.grid = s.grid > 0 ? s.grid : cus;
  c.chunk_rows = s.chunk_rows;
  c.swizzle = s.swizzle;
  c.flag_base = kConsumerFlagBase;
  return c;
}

class AgGemmOp final : public OverlapOp {
 public:
  explicit AgGemmOp(const AgGemmSpec& spec) : spec_(spec) {}

  std::string label() const override {
    return fmt::format("all-gather + GEMM {} x {} x {}", spec_.gemm.m, spec_.gemm.n, spec_.gemm.k);
  }
  std::string describe_fused() const override {
    return fmt::format("copy-engine all-gather in {}-row chunks with signals, {} streams, beside a persistent GEMM "
                       "waiting on them ({}, launched {} the copies)",
                       spec_.chunk_rows, spec_.streams > 0 ? fmt::to_string(spec_.streams) : std::string("one per GPU"),
                       spec_.swizzle ? "own rows first" : "the GEMM's own order",
                       spec_.copies_first ? "after" : "before");
  }
  bool values() const override { return spec_.ag.values; }

  void build(OverlapRun& run) override {
    Node& node = run.node();
    // A (the gathered input) is the all-gather's array, at 0; B and C follow the
    // collective's buffers.
    GemmParams& g = spec_.gemm;
    g.a_base = 0;
    NodeCollectiveParams p = spec_.ag;
    p.engine = CollectiveEngine::kCu;
    p.kind = CollectiveKind::named("ring-ag");
    p.data_base = 0;
    p.array_bytes = g.m * g.k * g.dtype_bytes;
    ag_ = std::make_unique<NodeCollective>(node, p);
    g.b_base = align_up(collective_out_base(ag_->trace_params(0)) + p.array_bytes, kBufferAlign);
    g.c_base = align_up(*g.b_base + g.k * g.n * g.dtype_bytes, kBufferAlign);
    library_gemm_ = make_gemm_trace(g);
    ag_->preload();
    gemm_launch_.assign(node.simulated_gpus(), Tick());
    copies_end_.assign(node.simulated_gpus(), Tick());
  }

  void chain_sequential(OverlapRun& run) override {
    // The library's all-gather, then the GEMM on the gathered A.
    run.chain_phase(OverlapRun::kCollective, {}, [this, &run](std::uint32_t g) { run.start_collective_phase(g, *ag_); });
    run.chain_phase(OverlapRun::kCompute, {OverlapRun::kCollective},
                    [this, &run](std::uint32_t g) { run.launch_compute(g, library_gemm_); });
  }

  void start_fused(OverlapRun& run, std::uint32_t g) override {
    Node& node = run.node();
    const std::uint32_t n = node.num_gpus();
    if (consumer_traces_.empty()) {
      // Every GPU's trace before any launch: the kernels keep pointers into the vector.
      for (std::uint32_t h = 0; h < node.simulated_gpus(); ++h)
        consumer_traces_.push_back(make_consumer_gemm_trace(consumer_params(spec_, n, h, node.config().gpu.num_cus)));
    }
    const GemmParams& gp = spec_.gemm;
    const ConsumerGemmParams me = consumer_params(spec_, n, g, node.config().gpu.num_cus);
    const std::uint64_t chunks = consumer_chunks_per_gpu(me);
    const std::uint64_t chunk_bytes = spec_.chunk_rows * gp.k * gp.dtype_bytes;
    const std::uint64_t own = std::uint64_t{g} * (gp.m / n) * gp.k * gp.dtype_bytes;
    const std::uint32_t streams = spec_.streams > 0 ? spec_.streams : n;
    const std::uint32_t granule = spec_.ag.values ? node.config().gpu.memory.hbm.value_granule : 0;
    const Tick host_step = node.config().dma.launch_latency;  // one submission of the host thread
    std::uint64_t submitted = 0;
    if (!spec_.copies_first) run.launch_kernel(g, consumer_traces_[g]);
    for (std::uint32_t idx = 1; idx < n; ++idx) {
      const std::uint32_t peer = (g + idx) % n;
      DmaEngine& engine = node.dma(g, (idx % streams) % node.dma_engines());
      ConsumerGemmParams at_peer = me;
      at_peer.gpu = peer;
      for (std::uint64_t c = 0; c < chunks; ++c) {
        DmaCommand copy;
        copy.src = own + c * chunk_bytes;
        copy.dst = copy.src;
        copy.bytes = chunk_bytes;
        copy.op = MemOp::kWrite;
        copy.destination = &node.dma_destination(g, peer);
        copy.value_granule = granule;
        engine.launch(std::move(copy), host_step * submitted++);
        DmaCommand signal;
        signal.signal = DmaCommand::Signal{peer, consumer_chunk_flag(at_peer, g, c), 1};
        signal.on_done = [this, &run, &node, g, host = node.config().dma.completion_latency] {
          // The host hears of it completion_latency after the engine set the flag.
          const Tick set = node.gpu(g).now() - host;
          copies_end_[g] = std::max(copies_end_[g], set);
          run.work_ends(g, set);
        };
        run.work_begins(g);
        engine.launch(std::move(signal), host_step * submitted++);
      }
    }
    if (spec_.copies_first) {
      // The host thread reaches the launch after its submissions.
      gemm_launch_[g] = node.gpu(g).now() + host_step * submitted;
      run.sim().events().schedule_callback(gemm_launch_[g], [this, &run, g] { run.launch_kernel(g, consumer_traces_[g]); });
    }
  }

  std::uint64_t verify(OverlapRun&, std::string& error) override { return ag_->verify(error); }

  std::vector<std::string> fused_keys() const override { return {"gemm_launch_ps", "copies_end_ps"}; }

  nlohmann::json fused_json(OverlapRun&) override {
    auto max_of = [](const std::vector<Tick>& v) { return *std::max_element(v.begin(), v.end()); };
    return {{"gemm_launch_ps", max_of(gemm_launch_).ps()},
            {"copies_end_ps", max_of(copies_end_).ps()},
            {"chunk_rows", spec_.chunk_rows},
            {"launch_order", spec_.copies_first ? "copies-first" : "gemm-first"},
            {"order", spec_.swizzle ? "comm-aware" : "oblivious"}};
  }

 private:
  AgGemmSpec spec_;
  std::unique_ptr<NodeCollective> ag_;
  KernelTrace library_gemm_;
  std::vector<KernelTrace> consumer_traces_;  // per simulated GPU (built by start_fused)
  // Per simulated GPU (partitions may run on different threads): the fused GEMM's
  // launch and the last signal the GPU's engines set.
  std::vector<Tick> gemm_launch_, copies_end_;
};

}  // namespace

void validate_ag_gemm(const AgGemmSpec& spec, std::uint32_t num_gpus) {
  validate_consumer_gemm(consumer_params(spec, num_gpus, 0, 1));
}

OverlapOpFactory ag_gemm_op(const AgGemmSpec& spec) {
  return [spec] { return std::make_unique<AgGemmOp>(spec); };
}

}  // namespace t3sim
