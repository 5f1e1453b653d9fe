#pragma once
// Homogeneous mode's mirror (NetMode::kHomogeneous): only GPU 0 is simulated, and on a
// node the GPUs' shift g -> g + 1 mod N maps onto itself (Topology::shift_symmetric),
// GPU r does what GPU 0 does with everything shifted by r. So what GPU 0 sends to
// GPU d stands for what GPU -d mod N sends GPU 0, and is delivered into GPU 0's memory
// as that: at the address (and with the tracker tag) GPU -d would have written. This
// class holds the rules that say where, registered by the collectives that need them:
//
//   block regions  [base, base + N x block_bytes), one block per GPU (a chunked array
//                  that an all-gather fills, an all-to-all output): GPU 0's write to d
//                  for block c arrives as GPU -d's for block c - d (mod N), at the
//                  same offset;
//   translators    custom rules for layouts blocks do not describe (T3's fused RS:
//                  the GEMM output chunked by tiles, the tracker tag moving with the
//                  address), consulted first, in registration order.
//
// A write no rule covers arrives as sent (data whose place does not depend on the
// sender, a flag's target).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/mem/mem_request.h"

namespace t3sim {

class Component;

// A write as it arrives at GPU 0, for the mirror's rules to rewrite: the header of the
// request its memory gets (a packet's header, NetPacket).
using MirroredWrite = RequestHeader;
// Contract: returns false if the write is not its business (left unchanged); true
// after rewriting it as GPU -d would have sent it. Rules rewrite the address and the
// tracker tag only.
using MirrorTranslator = std::function<bool(MirroredWrite& write, std::uint32_t d)>;

class HomogeneousMirror {
 public:
  // `owner`: the network (time and name of an internal error).
  HomogeneousMirror(const Component& owner, std::uint32_t num_gpus) : owner_(owner), n_(num_gpus) {}

  // A region of N blocks. Registering a region twice is a no-op; overlapping a
  // different region is an internal error.
  void add_blocks(std::uint64_t base, std::uint64_t block_bytes);
  void add_translator(MirrorTranslator translate) { translators_.push_back(std::move(translate)); }
  // Rewrites `w`, which GPU 0 sent to GPU `d`, as GPU -d mod N would have sent it to
  // GPU 0: the first translator that takes it, else the block region holding it (a
  // write must not straddle two blocks: internal error), else unchanged.
  void apply(MirroredWrite& w, std::uint32_t d) const;

 private:
  struct Blocks {
    std::uint64_t base, block_bytes;
  };
  const Component& owner_;
  std::uint32_t n_;
  std::vector<Blocks> blocks_;
  std::vector<MirrorTranslator> translators_;
};

}  // namespace t3sim
