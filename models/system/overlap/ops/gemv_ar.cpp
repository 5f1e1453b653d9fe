// gemv_ar (../shared/seeds/000 §III-B, Figure 7 and 9: GEMV + AllReduce, tensor-parallel
// decode): on every GPU a partial GEMV y = A x over its share of K, then the all-reduce
// that sums the partial vectors.
//
//   sequential  the library GEMV (output-stationary: tile_m rows of y per WG), then the
//               CU all-reduce of y (RCCL's, at the library's channel count)
//   fused       one persistent kernel (trace/fused_gemm.h with reduce and all_gather):
//               the two-phase direct all-reduce of seed 000 Figure 7. Each GPU computes
//               every tile of y; tiles another GPU owns (y cut into one chunk per GPU)
//               go to its temporary buffer with remote stores and a flag, remote owners
//               first; the owner sums its chunk's N partials on the flags, stores the
//               sum into every peer's y with a flag there, and every GPU waits for the
//               others' sums
//
// Values: sequential checks the all-reduce (its pattern preloaded into y; the GEMV runs
// timing-only), fused every GPU's y against the sum of the GPUs' partial outputs.

#include <fmt/format.h>

#include "models/system/overlap/ops/fused_kernel_op.h"

namespace t3sim {
namespace {

FusedGemmRsParams fused_ar(const GemvArSpec& spec) {
  FusedGemmRsParams p;
  p.comm_aware = spec.comm_aware;
  p.grid = spec.grid;
  p.reduce = true;
  p.all_gather = true;
  return p;
}

class GemvArOp final : public FusedKernelOp {
 public:
  explicit GemvArOp(const GemvArSpec& spec) : FusedKernelOp(spec.gemv, spec.ar, fused_ar(spec)), spec_(spec) {}

  std::string label() const override { return fmt::format("GEMV + all-reduce {} x {}", spec_.gemv.m, spec_.gemv.k); }
  std::string describe_fused() const override {
    return fmt::format("one persistent kernel: tiles {}, partials to their owners' buffers, owners reduce and "
                       "store the sums into every GPU (two-phase direct all-reduce, remote stores + flags)",
                       spec_.comm_aware ? "remote-owner first" : "in the GEMV's order");
  }

 protected:
  // Every GPU's y is the sum over GPUs of their partial outputs.
  std::vector<Region> regions(std::uint32_t) const override {
    return {{layout().c_base, layout().array_bytes, 0}};
  }
  std::uint64_t element(std::uint32_t, const Region&, std::uint64_t offset) const override { return offset; }
  std::uint64_t expected(const FusedRouting& f, const Region&, std::uint64_t element) const override {
    std::uint64_t sum = 0;
    for (std::uint32_t src = 0; src < num_gpus(); ++src) sum += f.partial(src, element);
    return sum;
  }

 private:
  GemvArSpec spec_;
};

}  // namespace

GemmParams gemv_params(std::uint64_t m, std::uint64_t k, std::uint32_t tile_m, std::uint32_t k_step,
                       std::uint32_t flops_per_cycle, std::uint32_t wave_size) {
  GemmParams g;
  g.name = fmt::format("gemv_{}x{}", m, k);
  g.m = m;
  g.n = 1;
  g.k = k;
  g.tile_m = tile_m;
  g.tile_n = 1;
  g.k_step = k_step;
  g.b_layout = MatrixLayout::kColumnMajor;  // x: K contiguous elements
  g.flops_per_cycle = flops_per_cycle;
  g.wave_size = wave_size;
  g.wfs_per_wg = 4;
  g.regs_per_thread = 64;
  return g;
}

void validate_gemv_ar(const GemvArSpec& spec, std::uint32_t num_gpus) {
  validate_gemm(spec.gemv);
  FusedGemmRsParams p;
  p.gemm = spec.gemv;
  p.num_gpus = num_gpus;
  (void)fused_rs_layout(p);  // throws for a y it cannot cut into one chunk per GPU
}

OverlapOpFactory gemv_ar_op(const GemvArSpec& spec) {
  return [spec] { return std::make_unique<GemvArOp>(spec); };
}

}  // namespace t3sim
