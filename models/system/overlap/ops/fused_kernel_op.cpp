#include "models/system/overlap/ops/fused_kernel_op.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/error.h"
#include "sim/int_math.h"

namespace t3sim {

namespace {
}  // namespace

void FusedKernelOp::build(OverlapRun& run) {
  Node& node = run.node();
  const GemmParams& g = library_params_;
  library_ = make_gemm_trace(g);
  NodeCollectiveParams p = collective_;
  p.engine = CollectiveEngine::kCu;
  p.data_base = gemm_addresses(g).c;
  p.array_bytes = g.m * g.n * g.dtype_bytes;
  // Also registers C's chunks with homogeneous mode's mirror (the fused all-reduce's
  // sums land in the peers' C).
  collective_run_ = std::make_unique<NodeCollective>(node, p);
  collective_run_->preload();
  params_.gemm = g;
  params_.num_gpus = node.num_gpus();
  params_.staging_base = align_up(collective_out_base(collective_run_->trace_params(0)) + p.array_bytes, kBufferAlign);
  params_.flag_base = kFusedKernelFlagBase;
  const GpuConfig& gpu = node.config().gpu;
  if (params_.grid == 0) params_.grid = gpu.num_cus * wgs_per_cu(gpu.cu, gemm_resources(g));
  layout_ = fused_rs_layout(params_);
  granule_ = gpu.memory.hbm.value_granule;
}

void FusedKernelOp::chain_sequential(OverlapRun& run) {
  run.chain_phase(OverlapRun::kCompute, {}, [this, &run](std::uint32_t g) {
    run.launch_compute(g, library_, [&run, g] {
      // Kernel boundary: the output leaves the L2 for DRAM before the collective reads it.
      run.node().gpu(g).memory().l2().write_back_dirty_lines();
    });
  });
  run.chain_phase(OverlapRun::kCollective, {OverlapRun::kCompute},
                  [this, &run](std::uint32_t g) { run.start_collective_phase(g, *collective_run_); });
}

void FusedKernelOp::start_fused(OverlapRun& run, std::uint32_t g) {
  Node& node = run.node();
  if (traces_.empty()) {
    if (node.config().mode == NetMode::kHomogeneous && (!params_.comm_aware || !layout_.same_segments))
      throw UserError("homogeneous mode mirrors GPU 0's schedule onto its peers: the fused kernel needs order: "
                      "comm-aware and chunks cut alike by the tiles; use --mode full");
    // Every GPU's kernel and routing before any launch (the kernels keep pointers).
    for (std::uint32_t h = 0; h < node.simulated_gpus(); ++h) {
      FusedGemmRsParams p = params_;
      p.gpu = h;
      traces_.push_back(make_fused_gemm_rs_trace(p));
      routing_.push_back(std::make_unique<FusedRouting>(layout_, params_.staging_base, h, params_.num_gpus, granule_,
                                                        run.seed(), values()));
    }
  }
  run.launch_kernel(g, traces_[g], routing_[g].get(), values() ? granule_ : 0,
                    [&run, g] { run.node().gpu(g).memory().l2().write_back_dirty_lines(); });
}

std::uint64_t FusedKernelOp::verify(OverlapRun& run, std::string& error) {
  if (!values()) return 0;
  if (traces_.empty()) return collective_run_->verify(error);  // the sequential run
  Node& node = run.node();
  const FusedRouting& f = *routing_.front();
  std::uint64_t checked = 0;
  constexpr std::uint64_t kPiece = 1 << 20;
  for (std::uint32_t j = 0; j < node.simulated_gpus(); ++j) {
    for (const Region& r : regions(j)) {
      for (std::uint64_t off = 0; off < r.bytes; off += kPiece) {
        const auto bytes = static_cast<std::uint32_t>(std::min(kPiece, r.bytes - off));
        const Payload got = node.gpu(j).memory().peek(r.base + off, bytes);
        for (std::uint64_t i = 0; i < got.words.size(); ++i) {
          const std::uint64_t want = expected(f, r, element(j, r, off + i * granule_));
          ++checked;
          if (got.words[i] != want && error.empty())
            error = fmt::format("gpu{} {:#x}: got {:#x}, expected {:#x}", j, r.base + off + i * granule_,
                                got.words[i], want);
        }
      }
    }
  }
  return checked;
}

}  // namespace t3sim
