#pragma once
// CU-based collective kernels as workgroup traces, like RCCL/NCCL's (SPEC
// "Collectives"; T3 §2.3, Figure 3; direct and all-to-all variants T3 §7.1): one
// trace per GPU, built in code, replayed on the real CU and memory models. Every GPU
// uses the same addresses (data, receive buffer, output), so a trace's remote stores
// land at the same address on the peer.
//
// Layout (per GPU, every GPU the same):
//   data  [data_base, + array_bytes)        the input; RS results in place, AG in place
//   recv  [recv_base, + recv bytes)         ring kernels: each channel's receive FIFO,
//                                           fifo_slices slots of collective_fifo_slot_bytes; direct RS:
//                                           N-1 slots of the largest chunk (default:
//                                           after data, rounded up to 2 MiB)
//   out   [out_base,  + N x slot)           all-to-all output (default: after recv, 2 MiB)
//
// Chunks: the array is G = array_bytes / granule granules; chunk c (0..N-1) gets
// G / N granules, one more for the first G % N chunks (earlier chunks are at most
// one granule larger; collective_chunk). Shares: the same rule cuts each chunk among
// the `channels` WGs (channel k owns share k of every chunk; collective_share), so
// a tiny chunk leaves some channels an empty share.
//
// Ring kernels: the channel pipeline (NCCL / RCCL's Simple protocol, prims_simple.h).
// Each channel has one connection to the next GPU: a FIFO of fifo_slices slots of
// slice_bytes in the next GPU's recv area, with two flags that count slices:
//   tail  (flag index 0, on the receiver, set by the sender): slices written so far;
//   head  (flag index 1, on the sender, set by the receiver): slices consumed so far.
// The sender writes its k-th slice (k counts from 0 over the whole kernel) into slot
// k mod fifo_slices once head >= k + 1 - fifo_slices (the slot is free), then sets
// the receiver's tail to k + 1; the receiver waits for tail >= k + 1, reads the
// slot, and sets the sender's head to k + 1. So a sender runs up to fifo_slices
// slices ahead of its receiver and pays the flag round trip only when the FIFO is
// full or empty. The FIFO must hold more than a piece's slices (fifo_slices >
// chunk_slices): every GPU sends a piece's first step before it receives anything. Sets release (the CU sets a flag only once the WG's earlier stores
// are acknowledged and its computes done): the per-slice fence of the Simple protocol.
// A channel walks its share of each chunk in pieces of chunk_slices x slice_bytes
// (NCCL's chunk): piece p goes through every ring step before piece p+1 starts
// (NCCL's runRing loop). A full piece is chunk_slices slices of slice_bytes; the
// last, partial piece of a share is cut as NCCL's genericOp cuts it: slices of
// max(piece / chunk_slices, slice_bytes / 32) (granule multiples), at most
// chunk_slices of them. Sender and receiver derive the same cut from the same chunk.
// Per slice a WG does, in order (each part only where its step has it):
//   wait tail (the slice arrived); wait head (the next GPU's slot is free)
//   the copy loop, in iterations of collective_copy_bytes (NCCL's reduceCopy: 16 B
//   per thread unrolled 4 times), each:
//     load data (the local operand); load the FIFO slot
//     compute (add the operands, or a 0-cycle copy)
//     store data (local); store the next GPU's slot
//   set the next GPU's tail; set the previous GPU's head (the slot is consumed)
// The CU queues a store until its compute is done and goes on loading, so the
// iterations stream (the CTA's warps overlap them); the sets release, so a slice's
// flags go out once its stores are acknowledged.
// Steps of one piece, GPU g (c = the chunk, prev / next = g -/+ 1 mod N):
//   reduce-scatter  s = 0..N-1, c = g-s-1: s = 0 load + send; 0 < s < N-1 load,
//                   receive, add, send; s = N-1 (c = g) load, receive, add, store.
//   all-gather      s = 0..N-1, c = g-s: s = 0 load + send (in place: no store);
//                   0 < s < N-1 receive, store, send; s = N-1 receive, store.
//   all-reduce      one kernel, s = 0..2N-2, c = g-s-1: the reduce-scatter's steps,
//                   its step N-1 also sending the sum (the all-gather's step 0),
//                   then the all-gather's receive/store/send steps: 2(N-1) sends.
//   Results: RS: chunk g of `data` on GPU g holds the sum over GPUs of chunk g (the
//   other chunks unchanged); AG: chunk c of `data` on every GPU holds GPU c's chunk
//   c; AR: every chunk on every GPU holds the sum.
// Compute rule: every store follows exactly one compute whose load group (the loads
// since the previous compute, ComputeUnit) holds exactly the operands the store
// carries the element-wise sum of:
//   reduction of K operands: cycles = ceil((K-1) x elements / adds_per_cycle),
//                            flops = (K-1) x elements;
//   copy (one operand):      a 0-cycle compute (no flops): it only closes the load
//                            group, so the CU orders the store after its load.
// Counters in loops stay affine: a loop over full pieces is unrolled so that one
// iteration sends a multiple of fifo_slices slices (each slot is then a constant),
// and its first pieces are peeled so a head wait never asks for a value below 1.
//
// Direct kernels and all-to-all (no FIFO: a slot per peer of the whole chunk; flags
// count slices of slice_bytes): flag ids are flag_base + channel x N + j, j the ring
// distance (receiver - sender) mod N (1..N-1).
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
// Flags are monotonic counters (FlagTable::set keeps the maximum): a second run of
// a kernel with the same flag_base sees them already set, so give every collective
// invocation its own flag range (or reset the flags between runs).
//
// Caching: loads/stores of `data` are uncached iff data_uncached. Everything in recv
// and out is uncached: the remote stores that fill them arrive at the peer's memory
// controller, past its L2.
//
// Kernels: one per GPU, named "<kind>.gpu<g>"; attrs generator, kind, num_gpus, gpu,
// array_bytes, channels, slice_bytes, fifo_slices, chunk_slices, flag_base, and
// collective (describe()). Resources: wfs_per_wg WFs of wave_size threads,
// regs_per_thread, no LDS. WG k = channel k, running program "channel_k" (no WG
// parameters). Loops are named by what they walk: pieces (ring), p<distance>
// (direct sends), r (direct reduce), own (all-to-all local copy).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/error.h"
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
// A collective the trace generator cannot build, naming the parameter at fault: a
// CollectiveTraceParams field ("channels", "chunk_slices", "fifo_slices", "slice_bytes",
// "array_bytes", ...), which a workload reader maps to its own key
// (collective_workload_key, models/system/sublayer_system.h). Its text is
// "collective: FIELD: what was wrong".
class CollectiveParamError : public UserError {
 public:
  CollectiveParamError(std::string field, const std::string& message)
      : UserError("collective: " + field + ": " + message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

struct CollectiveKind {
  CollectiveOp op = CollectiveOp::kReduceScatter;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;

  static const CollectiveKind kRingReduceScatter, kRingAllGather, kRingAllReduce, kDirectReduceScatter,
      kDirectAllGather, kAllToAll;
  // A ring algorithm: steps to the next GPU through its receive FIFO (one definition for
  // the generator and the node's link bound).
  constexpr bool is_ring() const { return algorithm == CollectiveAlgorithm::kRing; }
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

// The most GPUs a collective kernel is generated for: what the tests cover (64-GPU
// sub-layers in homogeneous mode, issue 20). Its loops by peer share one variable, so
// the trace's 32 loop variables do not bound it.
inline constexpr std::uint32_t kCollectiveMaxGpus = 64;

// How a ring channel's slices travel and synchronize (NCCL's protocols; src/device/
// prims_simple.h, prims_ll.h, prims_ll128.h):
//   simple  bulk slices; the sender's flag (tail) follows a fence, so it leaves only
//           once the slice's stores are acknowledged: a round trip per slice;
//   ll      8 B of data and 8 B of flags per 16 B line: the receiver sees the data
//           with its flags, no fence, half the wire efficiency;
//   ll128   120 B of data and an 8 B flag per 128 B line (NVLink orders the line's
//           stores): no fence, 15/16 of the wire.
// In the traces an LL / LL128 slice's remote stores carry `ll` / `ll128` (the link
// serializes the lines) and its flag sets are `unfenced` (they follow the data on
// the same path instead of its acknowledgments). The receive buffer holds data bytes
// only: the receiver's reads of its lines' flag bytes are not modelled.
enum class CollectiveProtocol : std::uint8_t { kSimple, kLl, kLl128 };
std::string_view to_string(CollectiveProtocol p);  // "simple" | "ll" | "ll128"
// The protocol named by to_string(); nullopt for any other text (callers check the
// name against their own list first: a config enum, a CLI option).
std::optional<CollectiveProtocol> parse_collective_protocol(std::string_view text);

// A channel pipeline's sizes as the workload gives them (NCCL's terms), and as the
// trace takes them: slices of slice_steps steps, fifo_depth / slice_steps of them in
// flight, chunk_steps / slice_steps per piece. Defaults per protocol: for_protocol().
struct ChannelPipeline {
  CollectiveProtocol protocol = CollectiveProtocol::kSimple;
  std::uint64_t step_bytes = 512 * 1024;
  std::uint32_t fifo_depth = 8;   // steps
  std::uint32_t slice_steps = 2;
  std::uint32_t chunk_steps = 4;
  std::uint64_t slice_bytes() const { return step_bytes * slice_steps; }
  std::uint32_t fifo_slices() const { return fifo_depth / slice_steps; }
  std::uint32_t chunk_slices() const { return chunk_steps / slice_steps; }
  // NCCL 2.x's defaults (NCCL_STEPS = 8 steps per connection buffer):
  //   simple  NCCL_BUFFSIZE 4 MiB / 8 = 512 KiB steps; ring SLICESTEPS 2, CHUNKSTEPS 4
  //           (src/include/collectives.h);
  //   ll      NCCL_LL_LINES_PER_THREAD 8 x NCCL_LL_MAX_NTHREADS 512 lines of 16 B per
  //           step, 8 B of data each: 32 KiB of data; a slice and a chunk are a step;
  //   ll128   NCCL_LL128_ELEMS_PER_THREAD 120 x NCCL_LL128_MAX_NTHREADS 640 x 8 B per
  //           step, 120 of each 128 B data: 576,000 B; a slice and a chunk are a step
  //   (src/include/device.h; runRing's chunkSize, src/device/*.h).
  static ChannelPipeline for_protocol(CollectiveProtocol protocol);
};

struct CollectiveTraceParams {
  CollectiveKind kind = CollectiveKind::kRingReduceScatter;
  std::uint32_t num_gpus = 8;            // N, 2..kCollectiveMaxGpus
  std::uint32_t gpu = 0;                 // the GPU this trace runs on
  std::uint64_t array_bytes = 0;         // per GPU, a multiple of the granule
  std::uint32_t element_bytes = 2;       // FP16
  std::uint32_t granule = 32;            // chunk and share boundaries align to this (value granule)
  std::uint32_t channels = 16;           // WGs
  // The channel pipeline (ring kernels), with NCCL's Simple-protocol defaults
  // (NCCL 2.x: NCCL_BUFFSIZE 4 MiB in NCCL_STEPS = 8 steps of 512 KiB; ring RS / AG /
  // AR: SLICESTEPS 2, CHUNKSTEPS 4). Direct kernels walk their shares in slices of
  // slice_bytes (a slice per flag).
  std::uint64_t slice_bytes = 1 << 20;   // a flag-synchronized slice (2 steps of 512 KiB), a granule multiple
  std::uint32_t fifo_slices = 4;         // slices in flight per channel connection (8 steps / 2)
  std::uint32_t chunk_slices = 2;        // slices per piece walked through the ring (4 steps / 2)
  CollectiveProtocol protocol = CollectiveProtocol::kSimple;  // ring kernels (direct ones: simple)
  // Ring kernels: channel c runs the ring of stride ring_strides[c mod size] (GPU g
  // sends to g + k and receives from g - k; k coprime with N, so the ring visits
  // every GPU). Empty: {1}, the ring 0 -> 1 -> ... -> N-1 -> 0. Different strides use
  // different links of a fully-connected node (as RCCL's channels use different ring
  // orders); the rings stay shift-invariant, so homogeneous mode mirrors them.
  std::vector<std::uint32_t> ring_strides;
  std::uint32_t ring_stride(std::uint32_t channel) const {
    return ring_strides.empty() ? 1 : ring_strides[channel % ring_strides.size()];
  }
  void set_pipeline(const ChannelPipeline& c) {
    protocol = c.protocol;
    slice_bytes = c.slice_bytes();
    fifo_slices = c.fifo_slices();
    chunk_slices = c.chunk_slices();
  }
  std::uint32_t wfs_per_wg = 4;
  std::uint32_t wave_size = 64;
  std::uint32_t regs_per_thread = 32;
  std::uint64_t lds_bytes = 0;           // per WG (the library kernel's shared memory)
  std::uint32_t adds_per_cycle = 128;    // element adds per CU cycle (vector ALUs, FP16)
  std::uint64_t data_base = 0;           // the array (input; RS result in place; AG in place)
  std::uint64_t recv_base = 0;           // channels' FIFOs (ring) or N-1 chunk slots (direct RS); unset = after data
  std::uint64_t out_base = 0;            // all-to-all output; unset = after recv
  bool recv_base_set = false, out_base_set = false;
  std::uint64_t flag_base = 0;           // flag ids used: flag_base .. flag_base + collective_flags_used() - 1
  bool data_uncached = false;            // loads/stores of data bypass the L2
  // Ring all-gather: true, in place (a GPU's own chunk is already where the output
  // wants it: step 0 only sends it). false, out of place (torch's
  // all_gather_into_tensor, nccl-tests' default): step 0 also stores the own chunk
  // into the output. Simplification: the model keeps one array, so that copy reads the
  // output's own chunk and writes it back in place: its load, its store (through the
  // SM's data port, the L2 and DRAM) are charged, at the output's addresses.
  bool in_place = true;
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
// Ring kernels: the slices channel `channel` cuts its share of chunk c into (whole
// pieces, then the partial one; see the header), relative to the array.
std::vector<ByteRange> collective_ring_slices(const CollectiveTraceParams& p, std::uint32_t chunk,
                                              std::uint32_t channel);
// Direct kernels: slices of that share, ceil(share / slice_bytes).
std::uint64_t collective_slices(const CollectiveTraceParams& p, std::uint32_t chunk, std::uint32_t channel);
// All-to-all: where GPU `sender`'s block lands in GPU `receiver`'s out buffer
// (relative to out_base): chunk `receiver`'s size, at sender x that size.
ByteRange collective_a2a_block(const CollectiveTraceParams& p, std::uint32_t receiver, std::uint32_t sender);
// The receive-buffer / output addresses the traces use.
std::uint64_t collective_recv_base(const CollectiveTraceParams& p);
std::uint64_t collective_out_base(const CollectiveTraceParams& p);
std::uint64_t collective_recv_slot_bytes(const CollectiveTraceParams& p);  // = largest chunk
// Bytes of the recv area: ring kernels channels x fifo_slices x slice_bytes, direct
// reduce-scatter (N-1) x the largest chunk, others 0.
std::uint64_t collective_recv_bytes(const CollectiveTraceParams& p);
// Ring kernels: a FIFO slot's size (slice_bytes and a granule: a partial piece's
// slice may be a granule longer) and channel `channel`'s slot `slot` (an address).
std::uint64_t collective_fifo_slot_bytes(const CollectiveTraceParams& p);
// Ring kernels: the bytes one iteration of a WG's copy loop moves (NCCL's reduceCopy:
// 16 B per thread, unrolled 4 times; COLL_UNROLL), granule-aligned.
std::uint64_t collective_copy_bytes(const CollectiveTraceParams& p);
std::uint64_t collective_fifo_slot(const CollectiveTraceParams& p, std::uint32_t channel, std::uint32_t slot);
// The strides whose rings are edge-disjoint Hamiltonian cycles of N fully-connected
// GPUs: every k in 1..N-1 coprime with N, in the order 1, N-1, 3, N-3, ... (a ring
// and its reverse first), so the first channels spread over the most links.
std::vector<std::uint32_t> coprime_ring_strides(std::uint32_t num_gpus);
// Flag ids a kernel of these params uses (count), starting at flag_base.
std::uint64_t collective_flags_used(const CollectiveTraceParams& p);
// flag_base + channel x N + index (index: 0 tail, 1 head for ring kernels; the direct distance).
std::uint64_t collective_flag(const CollectiveTraceParams& p, std::uint32_t channel, std::uint32_t index);
// One line "kind=ring-rs num_gpus=8 gpu=0 array_bytes=..." (recorded as an attr).
std::string describe(const CollectiveTraceParams& p);

// Throws UserError "collective: FIELD: what was wrong (expected ...)" for num_gpus
// outside 2..32, gpu >= num_gpus, element_bytes 0, a granule that is not a whole
// number of elements, an array that is not a whole number of granules, channels 0,
// a slice that is not a granule multiple, unaligned or overlapping bases...
void validate_collective(const CollectiveTraceParams& p);

// The collective's kernels (one: all-reduce is one kernel too).
std::vector<KernelTrace> make_collective_traces(const CollectiveTraceParams& p);

}  // namespace t3sim
