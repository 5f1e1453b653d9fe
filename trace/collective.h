#pragma once
// CU-based collective kernels as workgroup traces, like RCCL/NCCL's (SPEC
// "Collectives"; T3 §2.3, Figure 3; direct and all-to-all variants T3 §7.1): one
// trace per GPU, built in code, replayed on the real CU and memory models. Every GPU
// uses the same addresses (data, receive buffer, output), so a trace's remote stores
// land at the same address on the peer.
//
// Layout (per GPU, every GPU the same):
//   data  [data_base, + array_bytes)        the input; RS results in place, AG in place
//   recv  [recv_base, + (N-1) x slot)       RS receive slots, slot = the largest chunk
//                                           (default: after data, rounded up to 2 MiB)
//   out   [out_base,  + N x slot)           all-to-all output (default: after recv, 2 MiB)
//
// Chunks: the array is G = array_bytes / granule granules; chunk c (0..N-1) gets
// G / N granules, one more for the first G % N chunks (earlier chunks are at most
// one granule larger; collective_chunk). Shares: the same rule cuts each chunk among
// the `channels` WGs (channel k owns share k of every chunk; collective_share), so
// a tiny chunk leaves some channels an empty share. A channel walks its share in
// slices of at most `slice_bytes` (a granule multiple): full slices in a loop, the
// last partial one peeled. A channel with an empty share of a chunk emits nothing
// for it, neither on the sender nor on the receiver (both derive it from the same
// (chunk, channel)), so nobody waits for a flag that is never set.
//
// Per slice a WG: loads every operand (one WG-wide load per operand, the whole
// slice), computes, stores (remote with the peer, or local), and sets the
// receiver's flag (a remote set). Compute rule: every store follows exactly one
// compute whose load group (the loads since the previous compute, ComputeUnit)
// holds exactly the operands the store carries the element-wise sum of:
//   reduction of K operands: cycles = ceil((K-1) x elements / adds_per_cycle),
//                            flops = (K-1) x elements;
//   copy (one operand):      a 0-cycle compute (no flops): it only closes the load
//                            group, so the CU orders the store after its load.
// The set releases (the CU sets it only once the WG's earlier stores are
// acknowledged), so the receiver may load a slice once the flag says it is there.
//
// Flags: flag ids of a kernel are flag_base + channel x N + index (collective_flag),
// collective_flags_used() = channels x N of them (x 2 for all-reduce: the AG kernel's
// flag_base is the RS kernel's flag_base + channels x N). The value is the number of
// slices of that (sender, step) done so far: slice i sets i+1, and the receiver waits
// for >= i+1 before loading slice i. index:
//   ring kernels:   the sender's step s (0..N-2), set on the next GPU;
//   direct kernels: the ring distance j = (receiver - sender) mod N (1..N-1).
// Flags are monotonic counters (FlagTable::set keeps the maximum): a second run of
// a kernel with the same flag_base sees them already set, so give every collective
// invocation its own flag range (or reset the flags between runs).
//
// Ring reduce-scatter, GPU g, next = g+1, prev = g-1 (mod N), per channel:
//   step 0        load data[chunk g-1]; copy; store remote -> next.recv[slot 0]
//   step s<N-1    load data[chunk g-s-1]; wait own flag (s-1); load recv[slot s-1];
//                 add; store remote -> next.recv[slot s]
//   step N-1      load data[chunk g]; wait own flag (N-2); load recv[slot N-2];
//                 add; store data[chunk g] (local)
//   (the local operand is loaded before the wait so its latency overlaps the wait)
//   Result: chunk g of `data` on GPU g holds the sum over GPUs of chunk g; the other
//   chunks of `data` are unchanged.
// Ring all-gather, GPU g:
//   step s<N-1    (s>0: wait own flag (s-1)); load data[chunk g-s]; copy;
//                 store remote -> next.data[chunk g-s]
//   end           wait own flag (N-2) >= the slices of chunk g+1 (the last one arrived)
//   Result: chunk c of `data` on every GPU holds GPU c's chunk c.
// All-reduce = reduce-scatter then all-gather: two kernels (make_collective_traces
//   returns both; the AG must start on a GPU only after that GPU's RS kernel ended).
//   Result: every chunk of `data` on every GPU holds the sum over GPUs.
// Direct reduce-scatter (fully-connected), GPU g, channel k: for each distance j in
//   the channel's rotated order (k mod (N-1) + 1, then +1 ... wrapping within 1..N-1,
//   so the channels start on different links): load data[chunk g+j]; copy; store
//   remote -> (g+j).recv[slot j-1]; set. Then per slice of chunk g: load data[chunk
//   g]; wait the N-1 flags (j = 1..N-1); load recv[slot 0..N-2]; add N operands;
//   store data[chunk g]. Result: as ring reduce-scatter.
// Direct all-gather, GPU g: per slice of chunk g: load data[chunk g] once; copy;
//   store remote -> (g+j).data[chunk g] for every j (rotated order); set every
//   peer's flag. End: wait the N-1 flags >= the slices of the senders' chunks.
//   Result: as ring all-gather.
// All-to-all, GPU g: for each j (rotated order), d = g+j: load data[chunk d]; copy;
//   store remote -> d.out[block g]; set. Then its own chunk g: load; copy; store
//   out[block g] (local). End: wait the N-1 flags. Block c of GPU d's out holds what
//   GPU c sent it: it is chunk d's size, at out_base + c x chunk_bytes(d)
//   (collective_a2a_block). Result: out[block c] of GPU g holds GPU c's chunk g.
//
// Caching: loads/stores of `data` are uncached iff data_uncached, except loads of
// data a peer wrote during the kernel (ring AG steps >= 1), which are uncached (the
// remote stores went to memory, past this GPU's L2). Everything in recv and out is
// uncached: the remote stores that fill them arrive at the peer's memory controller.
//
// Kernels: named "<kind>.gpu<g>" ("ring-ar.rs.gpu<g>" and "ring-ar.ag.gpu<g>" for
// all-reduce); attrs generator, kind, part (all-reduce only: reduce-scatter or
// all-gather), num_gpus, gpu, array_bytes, channels, slice_bytes, flag_base, and
// collective (describe()). Resources: wfs_per_wg WFs of wave_size threads,
// regs_per_thread, no LDS. WG k = channel k, running program "channel_k" (no WG
// parameters). Loops are named by
// what they walk: s<step> (ring), p<distance> (direct sends), r (direct reduce),
// own (all-to-all local copy).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace t3sim {

// The one vocabulary of collectives (SPEC "Collectives"): what a collective computes
// (its operation), how its bytes travel between the GPUs (its algorithm) and what
// moves them (its engine). Every collective in the simulator is described by these.
enum class CollectiveOp { kReduceScatter, kAllGather, kAllReduce, kAllToAll };
enum class CollectiveAlgorithm {
  kRing,    // N-1 steps to the next GPU (T3 Figure 3)
  kDirect,  // every peer at once over its own link (fully-connected, T3 §7.1)
};
enum class CollectiveEngine {
  kCu,   // kernels on the CUs (RCCL / NCCL-like)
  kDma,  // host-launched DMA commands (ConCCL-like)
  kT3,   // tracker-triggered DMA with near-memory updates (T3 §4)
};
// "reduce_scatter" | "all_gather" | "all_reduce" | "all_to_all"
const char* to_string(CollectiveOp op);
// "ring" | "direct"
const char* to_string(CollectiveAlgorithm algorithm);
// "cu" | "dma" | "t3"
const char* to_string(CollectiveEngine engine);

// An operation with its algorithm, as workloads name it ("ring-rs"). All-to-all is
// direct by nature; all-reduce is ring only.
struct CollectiveKind {
  CollectiveOp op = CollectiveOp::kReduceScatter;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;

  static const CollectiveKind kRingReduceScatter, kRingAllGather, kRingAllReduce, kDirectReduceScatter,
      kDirectAllGather, kAllToAll;
  friend constexpr bool operator==(const CollectiveKind&, const CollectiveKind&) = default;
};
inline constexpr CollectiveKind CollectiveKind::kRingReduceScatter{CollectiveOp::kReduceScatter,
                                                                   CollectiveAlgorithm::kRing};
inline constexpr CollectiveKind CollectiveKind::kRingAllGather{CollectiveOp::kAllGather, CollectiveAlgorithm::kRing};
inline constexpr CollectiveKind CollectiveKind::kRingAllReduce{CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing};
inline constexpr CollectiveKind CollectiveKind::kDirectReduceScatter{CollectiveOp::kReduceScatter,
                                                                     CollectiveAlgorithm::kDirect};
inline constexpr CollectiveKind CollectiveKind::kDirectAllGather{CollectiveOp::kAllGather,
                                                                 CollectiveAlgorithm::kDirect};
inline constexpr CollectiveKind CollectiveKind::kAllToAll{CollectiveOp::kAllToAll, CollectiveAlgorithm::kDirect};
// "ring-rs" | "ring-ag" | "ring-ar" | "direct-rs" | "direct-ag" | "all-to-all"
std::string_view to_string(CollectiveKind kind);
// "ring-rs" | "ring-ag" | "ring-ar" | "direct-rs" | "direct-ag" | "all-to-all"
// (also "reduce_scatter", "all_gather", "all_reduce" = the ring ones, and "a2a");
// UserError otherwise, with a did-you-mean.
CollectiveKind parse_collective_kind(std::string_view text);

inline constexpr std::uint32_t kCollectiveMaxGpus = 32;  // one loop per step: the 32 loop variables of a program

struct CollectiveTraceParams {
  CollectiveKind kind = CollectiveKind::kRingReduceScatter;
  std::uint32_t num_gpus = 8;            // N, 2..kCollectiveMaxGpus
  std::uint32_t gpu = 0;                 // the GPU this trace runs on
  std::uint64_t array_bytes = 0;         // per GPU, a multiple of the granule
  std::uint32_t element_bytes = 2;       // FP16
  std::uint32_t granule = 32;            // chunk and share boundaries align to this (value granule)
  std::uint32_t channels = 16;           // WGs
  std::uint64_t slice_bytes = 16 * 1024; // per WG per iteration, a granule multiple (last one may be smaller)
  std::uint32_t wfs_per_wg = 4;
  std::uint32_t wave_size = 64;
  std::uint32_t regs_per_thread = 32;
  std::uint32_t adds_per_cycle = 128;    // element adds per CU cycle (vector ALUs, FP16)
  std::uint64_t data_base = 0;           // the array (input; RS result in place; AG in place)
  std::uint64_t recv_base = 0;           // N-1 slots of max-chunk size (RS); unset = after data
  std::uint64_t out_base = 0;            // all-to-all output; unset = after recv
  bool recv_base_set = false, out_base_set = false;
  std::uint64_t flag_base = 0;           // flag ids used: flag_base .. flag_base + collective_flags_used() - 1
  bool data_uncached = false;            // loads/stores of data bypass the L2
};

// A byte range [first, first + bytes) relative to the start of the array (or of the
// out buffer for collective_a2a_block).
struct ByteRange {
  std::uint64_t first = 0, bytes = 0;
  bool operator==(const ByteRange&) const = default;
};
// Chunk c of the array (earlier chunks may be one granule larger).
ByteRange collective_chunk(const CollectiveTraceParams& p, std::uint32_t chunk);
// Channel `channel`'s share of chunk c (relative to the array; may be empty).
ByteRange collective_share(const CollectiveTraceParams& p, std::uint32_t chunk, std::uint32_t channel);
// Slices of that share: ceil(share / slice_bytes).
std::uint64_t collective_slices(const CollectiveTraceParams& p, std::uint32_t chunk, std::uint32_t channel);
// All-to-all: where GPU `sender`'s block lands in GPU `receiver`'s out buffer
// (relative to out_base): chunk `receiver`'s size, at sender x that size.
ByteRange collective_a2a_block(const CollectiveTraceParams& p, std::uint32_t receiver, std::uint32_t sender);
// The receive-buffer / output addresses the traces use.
std::uint64_t collective_recv_base(const CollectiveTraceParams& p);
std::uint64_t collective_out_base(const CollectiveTraceParams& p);
std::uint64_t collective_recv_slot_bytes(const CollectiveTraceParams& p);  // = largest chunk
// Flag ids a kernel of these params uses (count), starting at flag_base (both
// kernels of an all-reduce).
std::uint64_t collective_flags_used(const CollectiveTraceParams& p);
// flag_base + channel x N + index (index: the ring step or the direct distance).
std::uint64_t collective_flag(const CollectiveTraceParams& p, std::uint32_t channel, std::uint32_t index);
// One line "kind=ring-rs num_gpus=8 gpu=0 array_bytes=..." (recorded as an attr).
std::string describe(const CollectiveTraceParams& p);

// Throws UserError "collective: FIELD: what was wrong (expected ...)" for num_gpus
// outside 2..32, gpu >= num_gpus, element_bytes 0, a granule that is not a whole
// number of elements, an array that is not a whole number of granules, channels 0,
// a slice that is not a granule multiple, unaligned or overlapping bases...
void validate_collective(const CollectiveTraceParams& p);

// One kernel (two for all-reduce: RS then AG, the AG's flag_base after the RS's).
std::vector<KernelTrace> make_collective_traces(const CollectiveTraceParams& p);

}  // namespace t3sim
