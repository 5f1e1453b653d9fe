#pragma once
// `sequential`, T3 §5.3's baseline: on every GPU, the GEMM on all CUs, then a
// CU-based ring reduce-scatter of its output, then a CU ring all-gather (kernels in
// stream order per GPU; the ring's flags synchronize the GPUs). The ideal
// configurations run it and replace its times with isolated ones.
//
// Functional check (small outputs): the output array starts as a known pattern (the
// GEMM's stores are timing-only and leave values alone) and must end as the sum over
// GPUs everywhere (full mode), or in GPU 0's chunks (homogeneous mode). Caveat: the
// L2 must write back and refetch a line the GEMM wrote timing-only before a
// functional read, which adds the output's size to the reduce-scatter's DRAM writes;
// breakdowns are exact with values off (the default above values_limit, so for
// every Table 2 case).

#include <memory>

#include "models/collectives/node_collective.h"
#include "models/system/sublayer_configuration.h"

namespace t3sim {

class SequentialConfiguration : public SublayerConfiguration {
 public:
  void build(SublayerSystem& s) override;
  void start(SublayerSystem& s, std::uint32_t g) override;
  void on_gemm_end(SublayerSystem& s, std::uint32_t g) override;
  std::uint64_t verify(SublayerSystem& s, std::string& error) override;
  std::string rs_label(const SublayerSystem& s) const override;

 private:
  std::unique_ptr<NodeCollective> rs_, ag_;
};

}  // namespace t3sim
