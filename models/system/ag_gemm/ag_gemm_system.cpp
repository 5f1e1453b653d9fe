#include "models/system/ag_gemm/ag_gemm_system.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/error.h"

namespace t3sim {

namespace {

constexpr std::uint64_t kAlign = 2ULL << 20;
std::uint64_t align_up(std::uint64_t a) { return (a + kAlign - 1) / kAlign * kAlign; }
// The consumer's chunk signals, apart from the CU collective's flags (1 << 32).
constexpr std::uint64_t kConsumerFlagBase = 1ULL << 35;
double ms(Tick t) { return static_cast<double>(t.ps()) * 1e-9; }
Tick max_of(const std::vector<Tick>& v) { return v.empty() ? Tick() : *std::max_element(v.begin(), v.end()); }

}  // namespace

AgGemmConfigurations& ag_gemm_configurations() {
  static AgGemmConfigurations registry;
  return registry;
}

// ---------------------------------------------------------------------------- AgGemmRun

AgGemmRun::AgGemmRun(Simulator& sim, const NodeConfig& node, const AgGemmSpec& spec) : sim_(sim), spec_(spec) {
  node_ = std::make_unique<Node>(sim, node);
  // A (the gathered input) is the all-gather's array, at 0; B and C follow the
  // collective's buffers.
  GemmParams& g = spec_.gemm;
  g.a_base = 0;
  NodeCollectiveParams p = spec_.ag;
  p.engine = CollectiveEngine::kCu;
  p.kind = CollectiveKind::kRingAllGather;
  p.data_base = 0;
  p.array_bytes = g.m * g.k * g.dtype_bytes;
  ag_ = std::make_unique<NodeCollective>(*node_, p);
  g.b_base = align_up(collective_out_base(ag_->trace_params(0)) + p.array_bytes);
  g.c_base = align_up(*g.b_base + g.k * g.n * g.dtype_bytes);
  library_gemm_ = make_gemm_trace(g);
  const std::uint32_t n = node_->simulated_gpus();
  for (std::uint32_t gpu = 0; gpu < n; ++gpu) {
    ConsumerGemmParams c;
    c.gemm = g;
    c.num_gpus = node_->num_gpus();
    c.gpu = gpu;
    c.grid = spec_.grid > 0 ? spec_.grid : node.gpu.num_cus;
    c.chunk_rows = spec_.chunk_rows;
    c.swizzle = spec_.swizzle;
    c.flag_base = kConsumerFlagBase;
    validate_consumer_gemm(c);
    consumer_.push_back(c);
  }
  for (auto* v : {&ag_end_, &gemm_launch_, &gemm_end_, &copies_end_}) v->assign(n, Tick());
  copies_left_.assign(n, 0);
  ag_->preload();
}

AgGemmRun::~AgGemmRun() = default;

void AgGemmRun::launch_gemm(std::uint32_t g, const KernelTrace& trace) {
  Gpu& gpu = node_->gpu(g);
  KernelLaunch k;
  k.trace = &trace;
  k.stream = Stream::kCompute;
  k.on_done = [this, g] {
    gemm_end_[g] = node_->gpu(g).now();
    node_->gpu(g).memory().kernel_end();
  };
  gemm_launch_[g] = gpu.now();
  gpu.memory().kernel_begin();
  gpu.launch(std::move(k));
}

void AgGemmRun::start_sequential(std::uint32_t g) {
  ag_->start(g, [this](std::uint32_t h) {
    ag_end_[h] = node_->gpu(h).now();
    launch_gemm(h, library_gemm_);
  });
}

// Seed 001's producer: per peer in rank order from g + 1, per chunk of g's rows, the
// chunk's copy and then its signal on the peer's stream, every call one host
// submission; the GEMM's launch before or after them.
void AgGemmRun::start_fused(std::uint32_t g) {
  if (consumer_traces_.empty()) {
    // Every GPU's trace before any launch: the kernels keep pointers into the vector.
    for (const ConsumerGemmParams& c : consumer_) consumer_traces_.push_back(make_consumer_gemm_trace(c));
  }
  const std::uint32_t n = node_->num_gpus();
  const GemmParams& gp = spec_.gemm;
  const ConsumerGemmParams& me = consumer_[g];
  const std::uint64_t chunks = consumer_chunks_per_gpu(me);
  const std::uint64_t chunk_bytes = spec_.chunk_rows * gp.k * gp.dtype_bytes;
  const std::uint64_t own = std::uint64_t{g} * (gp.m / n) * gp.k * gp.dtype_bytes;
  const std::uint32_t streams = spec_.streams > 0 ? spec_.streams : n;
  const std::uint32_t engines = node_->dma_engines();
  const std::uint32_t granule = spec_.ag.values ? node_->config().gpu.memory.hbm.value_granule : 0;
  std::uint64_t submitted = 0;
  Tick host_step;  // what one submission costs the host thread
  if (!spec_.copies_first) {
    launch_gemm(g, consumer_traces_[g]);
  }
  for (std::uint32_t idx = 1; idx < n; ++idx) {
    const std::uint32_t peer = (g + idx) % n;
    DmaEngine& engine = node_->dma(g, (idx % streams) % engines);
    host_step = engine.config().launch_latency;
    ConsumerGemmParams at_peer = me;
    at_peer.gpu = peer;
    for (std::uint64_t c = 0; c < chunks; ++c) {
      DmaCommand copy;
      copy.src = own + c * chunk_bytes;
      copy.dst = copy.src;
      copy.bytes = chunk_bytes;
      copy.op = MemOp::kWrite;
      copy.destination = &node_->dma_destination(g, peer);
      copy.value_granule = granule;
      engine.launch(std::move(copy), host_step * submitted++);
      DmaCommand signal;
      signal.signal = DmaCommand::Signal{peer, consumer_chunk_flag(at_peer, g, c), 1};
      signal.on_done = [this, g, host = engine.config().completion_latency] {
        // The host hears of it completion_latency after the engine set the flag.
        copies_end_[g] = std::max(copies_end_[g], node_->gpu(g).now() - host);
        --copies_left_[g];
      };
      ++copies_left_[g];
      engine.launch(std::move(signal), host_step * submitted++);
    }
  }
  if (spec_.copies_first) {
    // The host thread reaches the launch after its submissions.
    sim_.events().schedule_callback(node_->gpu(g).now() + host_step * submitted, [this, g] { launch_gemm(g, consumer_traces_[g]); });
  }
}

void AgGemmRun::run(Tick max_time) {
  const Simulator::StopReason stop = sim_.run(max_time);
  for (std::uint32_t g = 0; g < gemm_end_.size(); ++g) {
    if (gemm_end_[g] > Tick() && copies_left_[g] == 0) continue;
    std::string what = stop == Simulator::StopReason::kTimeLimit
                           ? fmt::format("run.max_time ({}) reached before GPU {}'s all-gather + GEMM finished",
                                         to_string(max_time), g)
                           : fmt::format("GPU {}'s all-gather + GEMM did not finish although nothing was left to "
                                         "simulate",
                                         g);
    what += "; in flight:";
    for (const std::string& line : sim_.in_flight_report()) what += "\n  " + line;
    throw SimulationError(what);
  }
  std::string error;
  words_checked_ += ag_->verify(error);
  if (!error.empty()) throw SimulationError("functional check of the gathered A failed: " + error);
}

Tick AgGemmRun::end() const { return max_of(gemm_end_); }
Tick AgGemmRun::ag_end() const { return max_of(ag_end_); }
Tick AgGemmRun::gemm_launch() const { return max_of(gemm_launch_); }
Tick AgGemmRun::copies_end() const { return max_of(copies_end_); }
std::uint64_t AgGemmRun::events() const { return sim_.dispatched(); }

std::uint64_t AgGemmRun::flag_waits() const {
  std::uint64_t waits = 0;
  Gpu& gpu = node_->gpu(0);
  for (std::uint32_t cu = 0; cu < gpu.num_cus(); ++cu) waits += gpu.cu(cu).flag_waits();
  return waits;
}

// ---------------------------------------------------------------------------- AgGemmSystem

AgGemmSystem::AgGemmSystem(Simulator& sim, const NodeConfig& node, AgGemmSpec spec, std::string configuration,
                           std::uint64_t seed)
    : sim_(sim), node_(node), spec_(std::move(spec)), configuration_(std::move(configuration)) {
  config_ = ag_gemm_configurations().get(configuration_, "all-gather + GEMM configuration").make();
  // The sequential run is built now (so `t3sim validate` meets what cannot be built);
  // fused runs it on a simulator of its own and builds its own run once that one is
  // gone (one node in memory at a time).
  if (config_->fused()) own_sim_ = std::make_unique<Simulator>(seed);
  seq_ = std::make_unique<AgGemmRun>(own_sim_ ? *own_sim_ : sim_, node_, spec_);
}

AgGemmSystem::~AgGemmSystem() = default;

AgGemmResult AgGemmSystem::run(Tick max_time) {
  if (!seq_) internal_error(Tick(), "ag_gemm", "run() called twice", __FILE__, __LINE__);
  AgGemmResult r;
  {
    Simulator& seq_sim = own_sim_ ? *own_sim_ : sim_;
    for (std::uint32_t g = 0; g < seq_->node().simulated_gpus(); ++g) {
      Simulator::InPartition in(seq_sim, seq_->node().partition(g));
      seq_->start_sequential(g);
    }
    seq_->run(max_time);
    r.sequential = seq_->end();
    r.isolated_ag = seq_->ag_end();
    r.isolated_gemm = seq_->end() - seq_->gemm_launch();
    r.words_checked = seq_->words_checked();
    if (config_->fused()) r.extra_events = seq_->events();
    seq_.reset();
    own_sim_.reset();
  }
  if (config_->fused()) {
    fused_ = std::make_unique<AgGemmRun>(sim_, node_, spec_);
    for (std::uint32_t g = 0; g < fused_->node().simulated_gpus(); ++g) {
      Simulator::InPartition in(sim_, fused_->node().partition(g));
      fused_->start_fused(g);
    }
    fused_->run(max_time);
    r.fused_gemm_launch = fused_->gemm_launch();
    r.fused_gemm_end = fused_->end();
    r.fused_copies_end = fused_->copies_end();
    r.flag_waits = fused_->flag_waits();
    r.words_checked += fused_->words_checked();
  }
  r.values_checked = spec_.ag.values;
  r.ideal = std::max(r.isolated_ag, r.isolated_gemm);
  r.time = config_->time(r);
  auto ratio = [](Tick a, Tick b) { return b.ps() ? static_cast<double>(a.ps()) / static_cast<double>(b.ps()) : 0.0; };
  r.speedup = ratio(r.sequential, r.time);
  r.ideal_speedup = ratio(r.sequential, r.ideal);
  r.fraction_of_ideal = r.ideal_speedup > 1.0 ? (r.speedup - 1.0) / (r.ideal_speedup - 1.0) : 0.0;
  r.json = {{"workload", "ag_gemm"},
            {"configuration", configuration_},
            {"describe", config_->describe(spec_)},
            {"mode", to_string(node_.mode)},
            {"num_gpus", node_.num_gpus},
            {"gemm", spec_.gemm_label},
            {"chunk_rows", spec_.chunk_rows},
            {"time_ps", r.time.ps()},
            {"sequential_ps", r.sequential.ps()},
            {"isolated_all_gather_ps", r.isolated_ag.ps()},
            {"isolated_gemm_ps", r.isolated_gemm.ps()},
            {"ideal_ps", r.ideal.ps()},
            {"speedup", r.speedup},
            {"ideal_speedup", r.ideal_speedup},
            {"fraction_of_ideal", r.fraction_of_ideal},
            {"functional_check", r.values_checked ? "passed" : "not run"},
            {"words_checked", r.words_checked}};
  if (config_->fused())
    r.json["fused"] = {{"gemm_launch_ps", r.fused_gemm_launch.ps()},
                       {"gemm_end_ps", r.fused_gemm_end.ps()},
                       {"copies_end_ps", r.fused_copies_end.ps()},
                       {"flag_waits_gpu0", r.flag_waits},
                       {"streams", spec_.streams > 0 ? spec_.streams : node_.num_gpus},
                       {"launch_order", spec_.copies_first ? "copies-first" : "gemm-first"},
                       {"order", spec_.swizzle ? "comm-aware" : "oblivious"}};
  return r;
}

std::string AgGemmSystem::summary(const AgGemmResult& r) const {
  std::string s = fmt::format(
      "all-gather + GEMM {} on {} GPUs ({} mode), configuration {}: {}\n"
      "  time               {:.4f} ms\n"
      "  sequential         {:.4f} ms (CU all-gather {:.4f} ms, then GEMM {:.4f} ms)\n"
      "  speedup            {:.3f}x of an ideal {:.3f}x: {:.1f}% of the ideal realized\n",
      spec_.gemm_label, node_.num_gpus, to_string(node_.mode), configuration_, config_->describe(spec_), ms(r.time),
      ms(r.sequential), ms(r.isolated_ag), ms(r.isolated_gemm), r.speedup, r.ideal_speedup,
      r.fraction_of_ideal * 100.0);
  if (config_->fused())
    s += fmt::format("  fused              GEMM launched at {:.4f} ms (after the host's copy submissions), ended "
                     "{:.4f} ms; last copy signalled {:.4f} ms; {} blocking waits on GPU 0\n",
                     ms(r.fused_gemm_launch), ms(r.fused_gemm_end), ms(r.fused_copies_end), r.flag_waits);
  s += fmt::format("  functional check   {}\n", r.values_checked ? fmt::format("passed ({} words)", r.words_checked)
                                                               : std::string("not run (A above values_limit)"));
  return s;
}

}  // namespace t3sim
