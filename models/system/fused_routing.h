#pragma once
// The values of a fused GEMM + collective kernel (trace/fused_gemm.h): GPU g's partial
// output and where its stores land. A store to C (its own chunk) or to a staging slot
// at the owner (a remote store) carries the partial's element; a load of C or of a
// staging slot (the reduction) carries what memory holds; the GEMM's operand loads
// carry nothing. Shared by the sub-layer's `fused` (reduce-scatter) and the gemm_a2a
// op (all-to-all).

#include <cstdint>

#include "models/common/payload.h"
#include "models/cu/store_routing.h"
#include "trace/fused_gemm.h"

namespace t3sim {

class FusedRouting final : public StoreRouting {
 public:
  FusedRouting(const FusedRsLayout& l, std::uint64_t staging_base, std::uint32_t gpu, std::uint32_t num_gpus,
               std::uint32_t granule, std::uint64_t seed, bool values)
      : l_(l), staging_(staging_base), gpu_(gpu), n_(num_gpus), granule_(granule), pattern_(seed, 0),
        values_(values) {}
  int remote_peer(std::uint32_t, std::uint64_t) const override { return -1; }  // remote stores say so themselves
  bool has_values() const override { return values_; }
  bool loads_values(std::uint64_t address) const override { return address >= l_.c_base; }
  std::uint64_t store_value(std::uint64_t address) const override {
    std::uint64_t element;  // byte offset in C
    if (address >= staging_) {
      const std::uint64_t slot = (address - staging_) / l_.chunk_bytes;
      const std::uint64_t owner = (gpu_ + slot + 1) % n_;
      element = owner * l_.chunk_bytes + (address - staging_) % l_.chunk_bytes;
    } else {
      element = address - l_.c_base;
    }
    return partial(gpu_, element);
  }
  // GPU g's partial output at byte offset `element` of C: one pattern, shifted by g
  // chunks (so every GPU's partials are GPU 0's, mirrored).
  std::uint64_t partial(std::uint32_t g, std::uint64_t element) const {
    const std::uint64_t shifted = (element + l_.array_bytes - std::uint64_t{g} * l_.chunk_bytes) % l_.array_bytes;
    return pattern_.value(shifted / granule_);
  }

 private:
  FusedRsLayout l_;
  std::uint64_t staging_;
  std::uint32_t gpu_, n_, granule_;
  InputPattern pattern_;
  bool values_;
};

}  // namespace t3sim
