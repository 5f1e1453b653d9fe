// gemm_a2a (../shared/seeds/000 §III, Figure 10: MoE's GEMM + All-to-All combine): on
// every GPU an expert's GEMM, C[M x N] = A[M x K] x B, whose output rows belong to the
// GPUs their tokens came from (uniform routing: rows [j x M/N_gpus, (j + 1) x M/N_gpus)
// go back to GPU j), followed by the all-to-all that returns them.
//
//   sequential  the library GEMM, then the CU all-to-all of C (RCCL's, at the library's
//               channel count; a kernel boundary between them: C leaves the L2)
//   fused       one persistent kernel (trace/fused_gemm.h with reduce: false): its WGs
//               compute the tiles, remote-owner first (comm_aware), store each finished
//               tile's rows straight into the owner's receive slot with remote stores
//               and a release flag (zero-copy, seed 000 §III-B), then wait for the
//               slices the others send it
//
// Values: sequential checks the all-to-all (its pattern, preloaded into C; the GEMM runs
// timing-only); fused checks every GPU's received slices and own rows against the
// senders' partial outputs (models/system/fused_routing.h).

#include <fmt/format.h>

#include "models/system/fused_routing.h"
#include "models/system/overlap/ops.h"
#include "sim/error.h"

namespace t3sim {
namespace {

constexpr std::uint64_t kAlign = 2ULL << 20;
std::uint64_t align_up(std::uint64_t a) { return (a + kAlign - 1) / kAlign * kAlign; }
constexpr std::uint64_t kFusedFlagBase = 1ULL << 34;  // apart from the CU collective's (1 << 32)

class GemmA2aOp final : public OverlapOp {
 public:
  explicit GemmA2aOp(const GemmA2aSpec& spec) : spec_(spec) {}

  std::string label() const override {
    return fmt::format("GEMM + all-to-all {} x {} x {}", spec_.gemm.m, spec_.gemm.n, spec_.gemm.k);
  }
  std::string describe_fused() const override {
    return fmt::format("one persistent kernel: tiles {}, each stored straight into its owner's buffer with remote "
                       "stores and a flag; then the slices it receives are waited for",
                       spec_.comm_aware ? "remote-owner first" : "in the GEMM's order");
  }
  bool values() const override { return spec_.a2a.values; }

  void build(OverlapRun& run) override {
    Node& node = run.node();
    const GemmParams& g = spec_.gemm;
    library_gemm_ = make_gemm_trace(g);
    NodeCollectiveParams p = spec_.a2a;
    p.engine = CollectiveEngine::kCu;
    p.kind = CollectiveKind::kAllToAll;
    p.data_base = gemm_addresses(g).c;
    p.array_bytes = g.m * g.n * g.dtype_bytes;
    a2a_ = std::make_unique<NodeCollective>(node, p);
    a2a_->preload();
    // The fused kernel's receive slots, past the collective's buffers.
    params_.gemm = g;
    params_.num_gpus = node.num_gpus();
    params_.comm_aware = spec_.comm_aware;
    params_.reduce = false;
    params_.staging_base = align_up(collective_out_base(a2a_->trace_params(0)) + p.array_bytes);
    params_.flag_base = kFusedFlagBase;
    const GpuConfig& gpu = node.config().gpu;
    params_.grid = spec_.grid > 0 ? spec_.grid : gpu.num_cus * wgs_per_cu(gpu.cu, gemm_resources(g));
    layout_ = fused_rs_layout(params_);
    granule_ = gpu.memory.hbm.value_granule;
  }

  void start_sequential(OverlapRun& run, std::uint32_t g) override {
    run.phase_started(g, OverlapRun::kCompute);
    run.launch_kernel(g, library_gemm_, nullptr, 0, [this, &run, g] {
      // Kernel boundary: the output leaves the L2 for DRAM before the collective reads it.
      run.node().gpu(g).memory().l2().write_back_dirty_lines();
      run.phase_ended(g, OverlapRun::kCompute);
      run.phase_started(g, OverlapRun::kCollective);
      a2a_->start(g, [&run](std::uint32_t h) { run.phase_ended(h, OverlapRun::kCollective); });
    });
  }

  void start_fused(OverlapRun& run, std::uint32_t g) override {
    Node& node = run.node();
    if (traces_.empty()) {
      if (node.config().mode == NetMode::kHomogeneous && (!spec_.comm_aware || !layout_.same_segments))
        throw UserError("homogeneous mode mirrors GPU 0's schedule onto its peers: the fused all-to-all needs "
                        "order: comm-aware and chunks cut alike by the tiles; use --mode full");
      // Every GPU's kernel and routing before any launch (the kernels keep pointers).
      for (std::uint32_t h = 0; h < node.simulated_gpus(); ++h) {
        FusedGemmRsParams p = params_;
        p.gpu = h;
        traces_.push_back(make_fused_gemm_rs_trace(p));
        routing_.push_back(std::make_unique<FusedRouting>(layout_, params_.staging_base, h, params_.num_gpus,
                                                          granule_, run.seed(), values()));
      }
    }
    run.launch_kernel(g, traces_[g], routing_[g].get(), values() ? granule_ : 0,
                      [&run, g] { run.node().gpu(g).memory().l2().write_back_dirty_lines(); });
  }

  std::uint64_t verify(OverlapRun& run, std::string& error) override {
    if (!values()) return 0;
    if (traces_.empty()) return a2a_->verify(error);  // the sequential run
    // Fused: GPU j holds its own rows of C and, in slot d - 1, GPU j - d's rows j.
    Node& node = run.node();
    const FusedRouting& f = *routing_.front();
    const std::uint32_t n = node.num_gpus();
    std::uint64_t checked = 0;
    for (std::uint32_t j = 0; j < node.simulated_gpus(); ++j) {
      for (std::uint32_t d = 0; d < n; ++d) {
        const std::uint64_t base = d == 0 ? layout_.c_base + j * layout_.chunk_bytes
                                          : params_.staging_base + (d - 1) * layout_.chunk_bytes;
        const std::uint32_t source = (j + n - d) % n;
        constexpr std::uint64_t kPiece = 1 << 20;
        for (std::uint64_t off = 0; off < layout_.chunk_bytes; off += kPiece) {
          const auto bytes = static_cast<std::uint32_t>(std::min(kPiece, layout_.chunk_bytes - off));
          const Payload got = node.gpu(j).memory().peek(base + off, bytes);
          for (std::uint64_t i = 0; i < got.words.size(); ++i) {
            const std::uint64_t element = j * layout_.chunk_bytes + off + i * granule_;
            const std::uint64_t want = f.partial(source, element);
            ++checked;
            if (got.words[i] != want && error.empty())
              error = fmt::format("gpu{} {:#x}: got {:#x}, expected {:#x} (GPU {}'s output rows for it)", j,
                                  base + off + i * granule_, got.words[i], want, source);
          }
        }
      }
    }
    return checked;
  }

 private:
  GemmA2aSpec spec_;
  KernelTrace library_gemm_;
  std::unique_ptr<NodeCollective> a2a_;
  FusedGemmRsParams params_;
  FusedRsLayout layout_;
  std::uint32_t granule_ = 0;
  std::vector<KernelTrace> traces_;                     // fused: per simulated GPU
  std::vector<std::unique_ptr<FusedRouting>> routing_;  // fused: per simulated GPU
};

}  // namespace

void validate_gemm_a2a(const GemmA2aSpec& spec, std::uint32_t num_gpus) {
  FusedGemmRsParams p;
  p.gemm = spec.gemm;
  p.num_gpus = num_gpus;
  p.reduce = false;
  (void)fused_rs_layout(p);  // throws for an output it cannot cut into one chunk per GPU
}

OverlapOpFactory gemm_a2a_op(const GemmA2aSpec& spec) {
  return [spec] { return std::make_unique<GemmA2aOp>(spec); };
}

}  // namespace t3sim
