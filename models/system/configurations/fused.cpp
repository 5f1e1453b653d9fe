// `fused`: the workload's fused form. For the overlap kinds, the op's own (ops.h):
// seed 000's persistent kernels that push their output to its owners with remote
// stores and flags, or seed 001's copy-engine chunks with signals beside a persistent
// GEMM waiting on them. For sub-layers, below.
//
// Sub-layers (../shared/seeds/000 §III-B, applied to T3's sub-layers): software fusion of
// the GEMM and its reduce-scatter, beside T3's hardware (the T3 paper argues it, never
// measures it). One persistent kernel per GPU (trace/fused_gemm.h): its WGs compute
// the output tiles, remote-tile-first by default (`collective.fused_order:
// comm-aware | oblivious`), send each finished tile's rows to the GPU that owns them
// with remote stores into a staging slot and a release flag, and then reduce the own
// chunk's segments on those flags; then the CU ring all-gather, as in `sequential`.
//
// The reduction is the owner's, on staged partials (seed 000's GEMV + all-reduce
// uses the same two-phase scheme with temporary buffers), so no hardware atomics
// are assumed. `collective.fused_reduction: atomic` is the other way: every partial
// segment is atomically added into its owner's chunk (a remote or local update applied
// at the owner's memory: the memory controllers' op-and-store stands for the
// destination's atomic units), and the owner only waits for the flags.
//
// Phases: GEMM = until the fused kernel ends (its reduce-scatter included: the RS
// phase is empty); AG. Traffic: the GEMM phase holds the compute stream's (the
// kernel's loads and stores, the partials it receives included, are the compute
// stream's). Functional check: after the all-gather every chunk of every GPU holds
// the sum over GPUs of their partial outputs (synthetic values, shift-invariant per
// GPU so homogeneous mode mirrors them).

#include <fmt/format.h>

#include "collective/collective.h"
#include "models/common/payload.h"
#include "models/system/configuration.h"
#include "models/system/sublayer_system.h"
#include "sim/error.h"
#include "sim/host_memory.h"
#include "sim/int_math.h"
#include "models/system/fused_routing.h"
#include "trace/fused_gemm.h"

namespace t3sim {
namespace {

// Host bytes of the persistent kernel per output tile and GPU: its ops (104 B each)
// and their expression terms: 1,306 B measured on T-NLG FC-2 TP8 (13,328 ops and
// 2,176 terms for 1,088 tiles), with room for the vectors' slack.
constexpr std::uint64_t kFusedBytesPerTile = 2048;

class FusedConfiguration final : public SublayerProcedure {
 public:
  void build(SublayerSystem& s) override {
    Node& node = s.node();
    const GpuConfig& gpu = node.config().gpu;
    ag_ = s.make_ring_collective(CollectiveKind::named("ring-ag"), /*uncached=*/false, s.values());
    const std::uint64_t staging = align_up(collective_out_base(ag_->trace_params(0)) + s.array_bytes(), kBufferAlign);
    FusedGemmRsParams p;
    p.gemm = *s.gemm().params;
    p.num_gpus = node.num_gpus();
    p.comm_aware = s.options().fused_order == "comm-aware";
    p.atomic = s.options().fused_reduction == "atomic";
    p.staging_base = staging;
    p.flag_base = kFusedKernelFlagBase;
    const std::uint32_t cus = s.gemm().cus > 0 ? s.gemm().cus : gpu.num_cus;
    p.grid = cus * wgs_per_cu(gpu.cu, s.gemm().trace.resources);
    if (p.gemm.m % p.num_gpus != 0)
      throw UserError(fmt::format("system.num_gpus: fused gives each of the {} GPUs M / {} whole rows of the "
                                  "GEMM's output, and M = {} is not a multiple of {}",
                                  p.num_gpus, p.num_gpus, p.gemm.m, p.num_gpus));
    layout_ = fused_rs_layout(p);
    // Guard: unlike a GEMM's trace (one program per tile shape), the persistent kernel
    // spells out every tile's ops, about 12 of them with their terms (~2 KiB) per tile
    // and simulated GPU: refuse what the host cannot hold before building it.
    const std::uint64_t tiles = gemm_tiles_m(p.gemm) * gemm_tiles_n(p.gemm);
    const std::uint64_t bytes = tiles * node.simulated_gpus() * kFusedBytesPerTile;
    if (const std::uint64_t available = host_memory_available(); bytes > available / 2)
      throw UserError(fmt::format("workload.m: fused's persistent kernels spell out every one of the GEMM's {} "
                                  "tiles on {} simulated GPUs, about {} of host memory, more than half of the {} "
                                  "available; a smaller GEMM, or --mode homogeneous",
                                  tiles, node.simulated_gpus(), format_host_bytes(bytes),
                                  format_host_bytes(available)));
    // Homogeneous mode stands GPU 0 in for every GPU, its peers' traffic mirrored from
    // its own: right only for a schedule that is GPU 0's shifted by g chunks.
    if (node.config().mode == NetMode::kHomogeneous && !p.comm_aware)
      throw UserError("homogeneous mode mirrors GPU 0's schedule onto its peers, but in the oblivious tile order "
                      "every GPU computes the same chunk first (not GPU 0's order shifted); use --mode full or "
                      "fused_order: comm-aware");
    if (node.config().mode == NetMode::kHomogeneous && !layout_.same_segments)
      throw UserError(fmt::format("homogeneous mode mirrors the fused reduce-scatter chunk by chunk, but the {} "
                                  "output rows per GPU cut the {}-row tiles differently from chunk to chunk; use "
                                  "--mode full",
                                  layout_.chunk_rows, p.gemm.tile_m));
    const std::uint32_t granule = gpu.memory.hbm.value_granule;
    if (s.values() && (layout_.chunk_bytes % granule != 0 || (p.gemm.n * p.gemm.dtype_bytes) % granule != 0 ||
                       (p.gemm.tile_n * p.gemm.dtype_bytes) % granule != 0))
      throw UserError(fmt::format("functional values need the output's rows and tiles in whole {} B value granules",
                                  granule));
    for (std::uint32_t g = 0; g < node.simulated_gpus(); ++g) {
      p.gpu = g;
      traces_.push_back(make_fused_gemm_rs_trace(p));
      routing_.push_back(
          std::make_unique<FusedRouting>(layout_, staging, g, p.num_gpus, granule, s.seed(), s.values()));
    }
    grid_ = traces_.front().num_wgs();
  }

  void start(SublayerSystem& s, std::uint32_t g) override {
    KernelLaunch k;
    k.trace = &traces_[g];
    k.routing = routing_[g].get();
    k.value_granule = s.values() ? s.node().config().gpu.memory.hbm.value_granule : 0;
    s.launch_gemm(g, std::move(k));
  }

  bool rs_overlaps_gemm() const override { return true; }

  void on_gemm_end(SublayerSystem& s, std::uint32_t g) override {
    // The kernel ended once its own chunk was reduced: the reduce-scatter is done.
    // Kernel boundary: the output leaves the L2 for DRAM, as in `sequential`.
    s.node().gpu(g).memory().l2().write_back_dirty_lines();
    s.rs_ended(g, s.node().gpu(g).now());
    s.start_all_gather(g, *ag_);
  }

  std::uint64_t verify(SublayerSystem& s, std::string& error) override {
    if (!s.values()) return 0;
    Node& node = s.node();
    const std::uint32_t granule = node.config().gpu.memory.hbm.value_granule;
    const FusedRouting& f = *routing_.front();
    std::uint64_t checked = 0;
    const std::uint64_t row_bytes = s.gemm().params->n * s.gemm().params->dtype_bytes;
    for (std::uint32_t g = 0; g < node.simulated_gpus(); ++g) {
      for (std::uint64_t row = 0; row < layout_.array_bytes / row_bytes; ++row) {
        const std::uint64_t a = layout_.c_base + row * row_bytes;
        const Payload got = node.gpu(g).memory().peek(a, static_cast<std::uint32_t>(row_bytes));
        for (std::uint64_t i = 0; i < got.words.size(); ++i) {
          const std::uint64_t element = row * row_bytes + i * granule;
          std::uint64_t want = 0;
          for (std::uint32_t src = 0; src < node.num_gpus(); ++src) want += f.partial(src, element);
          ++checked;
          if (got.words[i] != want && error.empty())
            error = fmt::format("gpu{} {:#x}: got {:#x}, expected {:#x} (the sum of the GPUs' partials)", g,
                                a + i * granule, got.words[i], want);
        }
      }
    }
    return checked;
  }

  void complete(SublayerSystem& s, SublayerResult& r) override {
    r.json["fused"] = {{"persistent_wgs", grid_},
                       {"order", s.options().fused_order},
                       {"reduction", s.options().fused_reduction},
                       {"chunk_rows", layout_.chunk_rows},
                       {"segments_per_chunk", layout_.segments_per_chunk}};
  }

  std::string rs_label(const SublayerSystem& s) const override {
    return fmt::format("fused into the GEMM: {} persistent WGs, {} tile order, {}", grid_, s.options().fused_order,
                       s.options().fused_reduction == "atomic" ? "atomic adds into the owners' chunks + flags"
                                                               : "remote stores + flags, owner reduces");
  }

 private:
  std::vector<KernelTrace> traces_;                     // per simulated GPU
  std::vector<std::unique_ptr<FusedRouting>> routing_;  // per simulated GPU
  std::unique_ptr<NodeCollective> ag_;
  FusedRsLayout layout_;
  std::uint32_t grid_ = 0;
};

// Its forms: the sub-layer's persistent kernel above; an overlap op's fused form (the
// op's own, OverlapOp::start_fused).
class Fused final : public Configuration {
 public:
  Procedure procedure() const override { return Procedure::kOwn; }
  std::unique_ptr<SublayerConfiguration> sublayer() const override { return std::make_unique<FusedConfiguration>(); }
  bool runs_fused_form() const override { return true; }
};

}  // namespace

T3SIM_REGISTER(configurations, "fused",
               "the compute and its collective in one persistent kernel: WGs send finished tiles to their owners "
               "with remote stores and flags, owners reduce, then the AG (sub-layers, seed 000 §III-B); the op's "
               "fused form: such kernels (seed 000), or copy-engine chunks with signals beside a persistent GEMM "
               "(seed 001)",
               [] { return std::make_unique<Fused>(); })

}  // namespace t3sim
