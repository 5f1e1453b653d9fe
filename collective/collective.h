#pragma once
// The vocabulary of collectives (SPEC "Collectives"), and their CU kernels as
// workgroup traces, like RCCL/NCCL's (T3 §2.3, Figure 3; direct and all-to-all
// variants T3 §7.1): one trace per GPU, built in code by the algorithm the kind names
// (collective/i_collective_algorithm.h; one file each under collective/algorithms/,
// which describe their kernels), replayed on the real CU and memory models. Every GPU
// uses the same addresses (data, receive buffer, output), so a trace's remote stores
// land at the same address on the peer.
//
// Layout (per GPU, every GPU the same):
//   data  [data_base, + array_bytes)        the input; RS results in place, AG in place
//   recv  [recv_base, + recv bytes)         the algorithm's receive area (ring kernels: each
//                                           channel's FIFO; direct RS: N-1 slots of the
//                                           largest chunk; default: after data, rounded
//                                           up to 2 MiB)
//   out   [out_base,  + out bytes)          the algorithm's output area (all-to-all: N
//                                           blocks; default: after recv, 2 MiB)
//
// Chunks: the array is G = array_bytes / granule granules; chunk c (0..N-1) gets
// G / N granules, one more for the first G % N chunks (earlier chunks are at most
// one granule larger; collective_chunk). Shares: the same rule cuts each chunk among
// the `channels` WGs (channel k owns share k of every chunk; collective_share), so
// a tiny chunk leaves some channels an empty share.
//
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
// (its operation), how its bytes travel between the GPUs (its algorithm, a
// registered CollectiveAlgorithm that a CollectiveKind names) and what moves them
// (its engine). Every collective in the simulator is described by these.
enum class CollectiveOp { kReduceScatter, kAllGather, kAllReduce, kAllToAll };
enum class CollectiveEngine {
  kCu,   // kernels on the CUs (RCCL / NCCL-like)
  kDma,  // host-launched DMA commands (ConCCL-like)
  kT3,   // tracker-triggered DMA with near-memory updates (T3 §4)
};
// "reduce_scatter" | "all_gather" | "all_reduce" | "all_to_all"
const char* to_string(CollectiveOp op);
// "cu" | "dma" | "t3"
const char* to_string(CollectiveEngine engine);

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

class CollectiveAlgorithm;  // collective/i_collective_algorithm.h
struct RegisteredCollective;

// An operation with its algorithm, as workloads name it ("ring-rs"): a handle to one
// registered CollectiveAlgorithm. Default: the ring reduce-scatter (the sub-layer's).
class CollectiveKind {
 public:
  CollectiveKind() = default;
  // The algorithm registered as `name` or under one of its aliases ("reduce_scatter"
  // is ring-rs); UserError otherwise, listing the names, with a did-you-mean.
  static CollectiveKind named(std::string_view name);

  const CollectiveAlgorithm& algorithm() const;
  std::string_view name() const;  // the registered name
  CollectiveOp op() const;
  bool uses_rings() const;  // CollectiveAlgorithm::uses_rings
  friend bool operator==(const CollectiveKind& a, const CollectiveKind& b) { return a.entry() == b.entry(); }

 private:
  explicit CollectiveKind(const RegisteredCollective* entry) : entry_(entry) {}
  const RegisteredCollective* entry() const;
  const RegisteredCollective* entry_ = nullptr;  // nullptr: ring-rs
};
// The registered name ("ring-rs").
std::string_view to_string(CollectiveKind kind);
// CollectiveKind::named.
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
  CollectiveKind kind;                   // ring-rs unless set
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
// pieces, then the partial one; collective/algorithms/ring.cpp), relative to the array.
std::vector<ByteRange> collective_ring_slices(const CollectiveTraceParams& p, std::uint32_t chunk,
                                              std::uint32_t channel);
// Kernels without a FIFO (direct, all-to-all, halving-doubling): slices of that share,
// ceil(share / slice_bytes).
std::uint64_t collective_slices(const CollectiveTraceParams& p, std::uint32_t chunk, std::uint32_t channel);
// All-to-all: where GPU `sender`'s block lands in GPU `receiver`'s out buffer
// (relative to out_base): chunk `receiver`'s size, at sender x that size.
ByteRange collective_a2a_block(const CollectiveTraceParams& p, std::uint32_t receiver, std::uint32_t sender);
// The receive-buffer / output addresses the traces use.
std::uint64_t collective_recv_base(const CollectiveTraceParams& p);
std::uint64_t collective_out_base(const CollectiveTraceParams& p);
std::uint64_t collective_recv_slot_bytes(const CollectiveTraceParams& p);  // = largest chunk
// Bytes of the recv / out area: the algorithm's (CollectiveAlgorithm::recv_bytes,
// out_bytes).
std::uint64_t collective_recv_bytes(const CollectiveTraceParams& p);
std::uint64_t collective_out_bytes(const CollectiveTraceParams& p);
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
// flag_base + channel x N + index: N flags per channel, whose indices the algorithm
// assigns (ring kernels: 0 tail, 1 head; direct ones: the distance).
std::uint64_t collective_flag(const CollectiveTraceParams& p, std::uint32_t channel, std::uint32_t index);
// One line "kind=ring-rs num_gpus=8 gpu=0 array_bytes=..." (recorded as an attr).
std::string describe(const CollectiveTraceParams& p);

// Throws CollectiveParamError "collective: FIELD: what was wrong (expected ...)" for
// num_gpus outside 2..kCollectiveMaxGpus, gpu >= num_gpus, element_bytes 0, a granule
// that is not a whole number of elements, an array that is not a whole number of
// granules, channels 0, a slice that is not a granule multiple, unaligned or
// overlapping bases..., then the algorithm's own checks.
void validate_collective(const CollectiveTraceParams& p);

// The collective's kernels (one: all-reduce is one kernel too), built by its
// algorithm channel by channel.
std::vector<KernelTrace> make_collective_traces(const CollectiveTraceParams& p);

}  // namespace t3sim
