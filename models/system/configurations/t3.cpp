// `t3` and `t3-mca` (T3 §4): the GEMM's output is allocated uncached and its stores
// are near-memory updates; it is fused with the reduce-scatter through the tracker
// and pre-queued DMA updates (T3Collective: ring, or direct where every GPU pair has
// its own link, T3 §7.1), with staggered WG scheduling; then the all-gather: the CU
// ring one (the paper's "followed by sequential all-gather", T3 §6) or T3's own
// through tracker + DMA (collective.t3_all_gather: dma, T3 §7.1).
//
// Arbitration at the memory controllers (T3 §4.5): `t3` round-robins between the
// compute and communication streams (T3's baseline); `t3-mca` uses MCA: the system's
// `mca` arbiter if it names one (a threshold sweep), else dynamic MCA.
//
// Phases: GEMM = until the GEMM kernel ends; RS = the exposed rest of the fused RS;
// AG. Traffic: GEMM = the compute stream (reads and the output's local updates), RS =
// the communication stream until the RS ends (DMA reads, arriving updates), AG =
// after. Functional check: every chunk of every GPU after the all-gather (T3's own, or
// the CU one where T3's chunks are flat ranges of the output), else GPU g's chunk
// after the RS.

#include <fmt/format.h>

#include "models/system/configuration.h"
#include "models/system/sublayer_system.h"
#include "models/t3/t3_collective.h"
#include "sim/error.h"

namespace t3sim {
namespace {

class T3Configuration final : public SublayerProcedure {
 public:
  explicit T3Configuration(bool mca) : mca_(mca) {}

  void configure_node(NodeConfig& node) const override {
    ArbiterConfig& arbiter = node.gpu.memory.mc.arbiter;
    if (!mca_) {
      arbiter = ArbiterConfig{};
      arbiter.type = "round-robin";  // T3's baseline arbitration (§4.5)
    } else if (arbiter.type != "mca") {
      arbiter = ArbiterConfig{};
      arbiter.type = "mca";
      arbiter.dynamic = true;  // threshold from the GEMM's profiled occupancy
    }
  }

  void build(SublayerSystem& s) override {
    Node& node = s.node();
    // T3 §4.3: the output is allocated uncached and the GEMM's stores update memory.
    GemmParams p = *s.gemm().params;
    p.store_uncached = true;
    p.store_update = true;
    trace_ = make_gemm_trace(p);
    if (trace_.num_wgs() % node.num_gpus() != 0)
      throw UserError(fmt::format("system.num_gpus: t3 cuts the GEMM's {} output tiles (WGs) into one chunk per GPU, "
                                  "and {} is not a multiple of {} (change the GPU count or workload.tile_m / tile_n)",
                                  trace_.num_wgs(), trace_.num_wgs(), node.num_gpus()));
    T3CollectiveParams f;
    // Direct where every GPU pair has its own link (T3 §7.1), else ring.
    f.algorithm = node.network().topology().direct_links() ? T3Route::kDirect
                                                            : T3Route::kRing;
    f.values = s.values();
    f.seed = s.seed();
    fused_ = std::make_unique<T3Collective>(node, trace_, f);
    fused_->preload();
    // The CU ring all-gather moves flat chunks. When T3's chunks are not flat (the
    // TP=32 tilings) it moves the same bytes between the same GPUs, but other ranges:
    // right for timing, not for values, so it runs timing-only there and only the
    // RS's result is checked.
    const bool dma_all_gather = s.options().t3_all_gather == "dma";
    cu_ag_checked_ = !dma_all_gather && fused_->chunks_are_flat(s.output_base(), s.array_bytes());
    if (dma_all_gather) {
      T3CollectiveParams a = f;
      a.op = CollectiveOp::kAllGather;
      a.with_producer = false;
      a.gathers = fused_.get();
      t3_ag_ = std::make_unique<T3Collective>(node, trace_, a);
    }
    const bool ag_values = s.values() && (dma_all_gather || cu_ag_checked_);
    ag_ = s.make_ring_collective(CollectiveKind::named("ring-ag"), /*uncached=*/true, ag_values);
    parts_done_.assign(node.simulated_gpus(), 0);
    rs_notices_.assign(node.simulated_gpus(), 0);
  }

  void start(SublayerSystem& s, std::uint32_t g) override {
    KernelLaunch k;
    k.trace = &trace_;
    k.first_wg = fused_->first_wg(g);  // staggered (T3 §4.4)
    k.routing = fused_->routing(g);
    k.value_granule = s.values() ? s.node().config().gpu.memory.hbm.value_granule : 0;
    fused_->start(g, [this, &s](std::uint32_t gpu) { on_part_done(s, gpu); });
    s.launch_gemm(g, std::move(k));
  }

  bool rs_overlaps_gemm() const override { return true; }
  void on_gemm_end(SublayerSystem& s, std::uint32_t g) override { on_part_done(s, g); }

  std::uint64_t verify(SublayerSystem& s, std::string& error) override {
    std::uint64_t words = 0;
    // After the all-gather every chunk of every GPU holds the RS's sums (T3's own AG,
    // or the CU one when it moved T3's chunks); otherwise GPU g's chunk g.
    if (s.values()) {
      if (t3_ag_) {
        words = t3_ag_->verify(error);
      } else if (cu_ag_checked_) {
        words = fused_->verify_gathered(error);
      } else {
        words = fused_->verify(error);
      }
    }
    fused_->finish();
    if (t3_ag_) t3_ag_->finish();
    return words;
  }

  void complete(SublayerSystem& s, SublayerResult& r) override {
    Tracker& t = s.node().gpu(0).memory().tracker();
    r.json["t3"] = {{"tracker_size_bytes", t.size_bytes()},
                    {"gpu0_regions_completed", t.regions_completed()},
                    {"gpu0_regions_overflowed", t.overflows()},
                    {"gpu0_dma_commands", fused_->dma_commands(0)},
                    {"stagger_first_wg_gpu0", fused_->first_wg(0)}};
  }

  std::string rs_label(const SublayerSystem& s) const override {
    return fmt::format("fused {}: tracker + DMA + NMC, {}; exposed part", fused_->algorithm(),
                       s.node().config().gpu.memory.mc.arbiter.type);
  }
  std::string ag_label() const override {
    return t3_ag_ ? fmt::format("T3: tracker + DMA, {}", t3_ag_->algorithm()) : std::string();
  }

 private:
  // The all-gather starts on a GPU once its GEMM ended and its fused RS is done.
  // T3's own (DMA) all-gather reprograms every GPU's tracker, replacing the RS's
  // program, so it starts on a GPU only once every GPU's RS is done: each GPU tells
  // every GPU (itself included) with a small message over the network's path (like an
  // acknowledgment: its latency, no bandwidth), and a GPU starts when it has all N.
  void on_part_done(SublayerSystem& s, std::uint32_t g) {
    if (++parts_done_[g] < 2) return;
    s.rs_ended(g, std::max(s.gemm_end(g), fused_->finished(g)));
    if (!t3_ag_) {
      s.start_all_gather(g, *ag_);
      return;
    }
    Node& node = s.node();
    const Network& net = node.network();
    const Tick now = node.gpu(g).now();
    if (node.config().mode == NetMode::kFull) {
      for (std::uint32_t h = 0; h < node.num_gpus(); ++h)
        s.simulator().post(node.partition(h), now + net.path_latency(g, h), [this, &s, h] { on_rs_notice(s, h); });
    } else {
      // Homogeneous: GPU 0 stands for every GPU, each done when it is; GPU d's notice
      // arrives after the path from d.
      for (std::uint32_t d = 0; d < node.num_gpus(); ++d)
        s.simulator().post(0, now + net.path_latency(d, 0), [this, &s] { on_rs_notice(s, 0); });
    }
  }

  void on_rs_notice(SublayerSystem& s, std::uint32_t g) {
    if (++rs_notices_[g] < s.node().num_gpus()) return;
    s.start_all_gather(g, *t3_ag_);
  }

  bool mca_;
  KernelTrace trace_;                          // the GEMM with uncached update stores
  std::unique_ptr<T3Collective> fused_;        // the RS fused with the GEMM
  std::unique_ptr<T3Collective> t3_ag_;        // t3_all_gather: dma
  std::unique_ptr<NodeCollective> ag_;         // t3_all_gather: cu
  bool cu_ag_checked_ = false;                 // the CU AG moves T3's chunks (values checked)
  std::vector<std::uint8_t> parts_done_;       // per GPU: GEMM done + RS done (2 = both)
  std::vector<std::uint32_t> rs_notices_;      // per GPU: GPUs whose RS it knows done (T3's DMA AG)
};

// T3's procedure: the sub-layer's only.
class TrackAndTrigger final : public Configuration {
 public:
  explicit TrackAndTrigger(bool mca) : mca_(mca) {}
  Procedure procedure() const override { return Procedure::kOwn; }
  std::unique_ptr<SublayerConfiguration> sublayer() const override { return std::make_unique<T3Configuration>(mca_); }

 private:
  bool mca_;
};

}  // namespace

T3SIM_REGISTER(configurations, "t3",
               "the GEMM fused with the RS through tracker + DMA + near-memory updates, round-robin MC "
               "arbitration, then the AG (sub-layers, T3 §4)",
               [] { return std::make_unique<TrackAndTrigger>(/*mca=*/false); })
T3SIM_REGISTER(configurations, "t3-mca", "t3 with communication-aware MC arbitration (sub-layers, MCA, T3 §4.5)",
               [] { return std::make_unique<TrackAndTrigger>(/*mca=*/true); })

}  // namespace t3sim
