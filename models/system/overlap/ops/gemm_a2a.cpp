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

#include "models/system/overlap/ops/fused_kernel_op.h"

namespace t3sim {
namespace {

FusedGemmRsParams fused_a2a(const GemmA2aSpec& spec) {
  FusedGemmRsParams p;
  p.comm_aware = spec.comm_aware;
  p.grid = spec.grid;
  p.reduce = false;
  return p;
}

class GemmA2aOp final : public FusedKernelOp {
 public:
  explicit GemmA2aOp(const GemmA2aSpec& spec) : FusedKernelOp(spec.gemm, spec.a2a, fused_a2a(spec)), spec_(spec) {}

  std::string label() const override {
    return fmt::format("GEMM + all-to-all {} x {} x {}", spec_.gemm.m, spec_.gemm.n, spec_.gemm.k);
  }
  std::string describe_fused() const override {
    return fmt::format("one persistent kernel: tiles {}, each stored straight into its owner's buffer with remote "
                       "stores and a flag; then the slices it receives are waited for",
                       spec_.comm_aware ? "remote-owner first" : "in the GEMM's order");
  }

 protected:
  // GPU j holds its own rows of C and, in slot d - 1, GPU j - d's rows j.
  std::vector<Region> regions(std::uint32_t j) const override {
    std::vector<Region> out;
    const std::uint32_t n = num_gpus();
    const std::uint64_t chunk = layout().chunk_bytes;
    for (std::uint32_t d = 0; d < n; ++d)
      out.push_back({d == 0 ? layout().c_base + j * chunk : params().staging_base + (d - 1) * chunk, chunk,
                     (j + n - d) % n});
    return out;
  }
  std::uint64_t element(std::uint32_t j, const Region&, std::uint64_t offset) const override {
    return j * layout().chunk_bytes + offset;
  }
  std::uint64_t expected(const FusedRouting& f, const Region& r, std::uint64_t element) const override {
    return f.partial(r.source, element);
  }

 private:
  GemmA2aSpec spec_;
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
