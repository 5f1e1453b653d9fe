#pragma once
// What a GPU's CUs and DMA engines see of the other GPUs' memories: a MemTarget per
// peer for remote stores and updates, and remote flag sets (SPEC "CU + dispatcher":
// remote stores to a peer GPU, waits on and sets flags). The node's network
// implements it (models/net/network.h); a CU or DMA engine only knows this interface,
// so neither includes the network.

#include <cstdint>

#include "models/mem/mem_request.h"

namespace t3sim {

class RemoteAccess {
 public:
  virtual ~RemoteAccess() = default;
  // Contract: a MemTarget carrying kWrite / kUpdate requests (any rows, with or
  // without data) from this GPU into `peer`'s memory. Reads are an internal error.
  // The client gets exactly one on_mem_response() (with the request, data emptied)
  // once all of it has been applied at the peer; refusals follow the MemTarget
  // retry protocol. peer != this GPU, peer < num_gpus.
  virtual MemTarget& peer_memory(std::uint32_t peer) = 0;
  // Contract: sets `flag` on `peer` to max(current, value) when the message
  // arrives; it travels behind every packet this GPU sent to `peer` before (same
  // path, FIFO), but does not wait for their acknowledgments (a release needs the
  // sender to wait for those first). Never refused (flags are tiny; they queue).
  virtual void set_peer_flag(std::uint32_t peer, std::uint64_t flag, std::uint64_t value) = 0;
};

}  // namespace t3sim
