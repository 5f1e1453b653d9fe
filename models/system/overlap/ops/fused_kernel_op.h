#pragma once
// What seed 000's scale-up ops share (gemm_a2a, gemv_ar): sequential runs the library
// kernel, a kernel boundary (the output leaves the L2) and the CU collective over its
// output; fused runs one persistent kernel per GPU from trace/fused_gemm.h (the kernel's
// WGs push finished tiles to their owners with remote stores and flags). An op says
// which collective and which fused variant, and what every GPU holds after the fused
// kernel (expected()).

#include <memory>
#include <string>
#include <vector>

#include "models/system/fused_routing.h"
#include "models/system/overlap/ops.h"
#include "trace/fused_gemm.h"

namespace t3sim {

class FusedKernelOp : public OverlapOp {
 public:
  // `library`: the compute kernel (its output C is the collective's array);
  // `collective`: the sequential CU collective (data_base and array set here);
  // `fused`: the variant (reduce, all_gather, comm_aware, grid; 0: CUs x occupancy).
  FusedKernelOp(const GemmParams& library, const NodeCollectiveParams& collective, const FusedGemmRsParams& fused)
      : library_params_(library), collective_(collective), params_(fused) {}

  bool values() const override { return collective_.values; }
  void build(OverlapRun& run) override;
  void chain_sequential(OverlapRun& run) override;
  void start_fused(OverlapRun& run, std::uint32_t g) override;
  std::uint64_t verify(OverlapRun& run, std::string& error) override;

 protected:
  // After the fused kernel: GPU j's word at byte `offset` of the region that starts at
  // `base` (C's chunk j, or staging slot d - 1) should hold this.
  struct Region {
    std::uint64_t base, bytes;
    std::uint32_t source;  // whose partial (all_reduce: unused)
  };
  // The regions of GPU j the check reads, and the value expected of the word at element
  // `element` (byte offset in C) of `r`.
  virtual std::vector<Region> regions(std::uint32_t j) const = 0;
  virtual std::uint64_t expected(const FusedRouting& f, const Region& r, std::uint64_t element) const = 0;
  // The element (byte offset in C) that byte `offset` of region `r` of GPU j holds.
  virtual std::uint64_t element(std::uint32_t j, const Region& r, std::uint64_t offset) const = 0;

  const FusedRsLayout& layout() const { return layout_; }
  const FusedGemmRsParams& params() const { return params_; }
  std::uint32_t num_gpus() const { return params_.num_gpus; }

 private:
  GemmParams library_params_;
  NodeCollectiveParams collective_;
  FusedGemmRsParams params_;
  KernelTrace library_;
  std::unique_ptr<NodeCollective> collective_run_;
  FusedRsLayout layout_;
  std::uint32_t granule_ = 0;
  std::vector<KernelTrace> traces_;                     // fused: per simulated GPU
  std::vector<std::unique_ptr<FusedRouting>> routing_;  // fused: per simulated GPU
};

}  // namespace t3sim
