#pragma once
// Where a kernel's local stores go, and (functional runs) what they carry: T3's
// output address-space configuration (T3 §4.4, Figure 12) seen from the CU. The
// producer kernel is unmodified: its stores to a `remote_map`ped range leave for the
// peer GPU instead of local memory (fine-grained remote writes/updates, T3 stage 1).

#include <cstdint>

namespace t3sim {

class StoreRouting {
 public:
  virtual ~StoreRouting() = default;
  // Contract: the peer GPU a local store of WG `wg` starting at `address` goes to
  // (remote_map), or -1 for local memory.
  virtual int remote_peer(std::uint32_t wg, std::uint64_t address) const = 0;
  // Contract: whether stores carry synthetic values (store_value) in functional runs.
  virtual bool has_values() const = 0;
  // Contract: the value a store writes at granule-aligned `address` (the producer's
  // output element, a function of this GPU and the address). Used for a store whose
  // group loaded no values (see loads_values).
  virtual std::uint64_t store_value(std::uint64_t address) const = 0;
  // Contract: whether a load at `address` brings back the words it reads (a fused
  // kernel's reduction of partial outputs) rather than none (a GEMM's operands, whose
  // arithmetic is not modelled). A store whose group loaded words carries their sum,
  // as in a collective. Default: none.
  virtual bool loads_values(std::uint64_t address) const {
    (void)address;
    return false;
  }
};

}  // namespace t3sim
