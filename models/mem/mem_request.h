#pragma once
// What travels through a GPU's memory system (L2, memory controllers, HBM), and the
// two interfaces every memory-side unit speaks: MemTarget (accepts requests, with
// back-pressure) and MemClient (is told of completions and of freed space).
//
// Back-pressure follows gem5's retry protocol: a requester asks can_accept() first;
// when refused it registers with wait_for_space() and gets one on_mem_retry() when
// the target may have room again. A target never calls into a requester's state
// other than through these two callbacks.

#include <cstdint>

#include "models/common/payload.h"
#include "sim/time.h"

namespace t3sim {

enum class MemOp : std::uint8_t {
  kRead,
  kWrite,
  kUpdate,  // op-and-store near the DRAM banks (T3 §4.3): adds the operand to memory
};
inline constexpr int kNumMemOps = 3;

// Which kernel a request serves (T3 §4.5): the producer kernel (compute) or the
// collective (communication). Memory controllers arbitrate between the two.
enum class Stream : std::uint8_t { kCompute, kCommunication };
inline constexpr int kNumStreams = 2;

// The port a request enters the GPU's memory system by. The SMs reach the L2 slices
// through the crossbar; the copy engines and the NVLink ports sit on the hub, which
// has ports of its own (Milic et al., MICRO'17, Fig. 3: peer traffic enters between
// the SMs and the memory partitions). An L2 with `hub_transactions` gives the hub's
// port its own transaction room, so SM traffic that fills the L2 does not refuse it.
enum class Ingress : std::uint8_t { kSm, kHub };

constexpr const char* to_string(MemOp op) {
  switch (op) {
    case MemOp::kRead: return "read";
    case MemOp::kWrite: return "write";
    case MemOp::kUpdate: return "update";
  }
  return "?";
}
constexpr const char* to_string(Stream s) {
  return s == Stream::kCompute ? "compute" : "communication";
}
constexpr int index(MemOp op) { return static_cast<int>(op); }
constexpr int index(Stream s) { return static_cast<int>(s); }

class MemClient;

// T3 tracker metadata (T3 §4.2.1): the WG and WF whose output a write or update
// carries. Declared here once: every carrier of the bytes (a request's header, so the
// L2's pieces, NetPacket and the homogeneous mirror; DmaCommand) and the tracker's
// entries hold one and copy it whole.
struct TrackerTag {
  static constexpr std::uint32_t kNoWg = UINT32_MAX;  // untracked
  std::uint32_t wg = kNoWg;
  std::uint8_t wf = 0;
  bool tracked() const { return wg != kNoWg; }
  bool operator==(const TrackerTag&) const = default;
};

// Everything a request says but its data: a MemRequest is a header and a payload.
// Declared apart so that what forwards a request's bytes in pieces copies the header
// whole, in one assignment, and sets only what differs (the network's packets carry
// one from the sender's request to the destination's memory, models/net/README.md).
struct RequestHeader {
  MemOp op = MemOp::kRead;
  Stream stream = Stream::kCompute;
  // Bypass the L2 (T3 §4.3: the GEMM output is allocated uncached so its updates
  // aggregate in DRAM). Updates always bypass; the flag matters for reads and writes.
  bool uncached = false;
  // A read or write of a copy within one GPU by its copy engine (DmaEngine: a command
  // whose destination is the engine's own memory). An L2 with `local_copy_priority:
  // sm_first` serves these only at banks that have nothing else to do
  // (models/cache/README.md, "Local copies yield to the SMs").
  bool local_copy = false;
  // Who sent it into the memory system (see Ingress): CUs and the traffic generator
  // kSm, the DMA engines and the network's arrivals kHub.
  Ingress ingress = Ingress::kSm;
  // A remote write's bytes on the wire per payload byte, as wire_num / wire_den: a
  // collective protocol that carries its flags inside the data (NCCL LL: 8 B of data
  // per 16 B line, 2/1; LL128: 120 B per 128 B line, 16/15). Only the network reads it.
  // (Here, in the padding before `address`.)
  std::uint8_t wire_num = 1;
  std::uint8_t wire_den = 1;
  // A request is `rows` rows of `bytes` bytes each, row r at address + r * row_stride:
  // a 2D tile (e.g. a GEMM tile load of 256 rows x 64 B with a 4256 B stride) issued
  // as one transaction. rows = 1 (the default) is a plain contiguous request and
  // ignores row_stride. With rows > 1 the rows must not overlap: row_stride >= bytes.
  // Only the L2 (the requesters' side of the memory system) takes rows > 1; it splits
  // tiles into line pieces, and everything it sends to the memory side has rows = 1.
  std::uint64_t address = 0;
  std::uint32_t bytes = 0;         // of ONE row
  std::uint32_t rows = 1;
  std::uint64_t row_stride = 0;    // bytes from one row's start to the next's (rows > 1)
  std::uint64_t tag = 0;           // the requester's, returned untouched
  MemClient* client = nullptr;     // receives on_mem_response(); must outlive the request
  Tick created;                    // when the requester issued it (end-to-end latency)
  // T3 tracker metadata (T3 §4.2.1): the WG and WF whose output this write or update
  // carries. Set by the CU on stores and kept by everything that forwards the bytes
  // (L2 pieces, network packets, DMA commands); the tracker at the destination's
  // memory controllers counts it against (track.wg, track.wf). Untracked by default.
  TrackerTag track;

  // Bytes moved: all rows (the gaps between rows excluded).
  std::uint64_t total_bytes() const { return std::uint64_t{bytes} * rows; }
};

struct MemRequest : RequestHeader {
  // Functional data (SPEC "Functional check"): one 64-bit word per value granule of
  // the memory system (see HbmConfig::value_granule), covering the rows in order,
  // row-major: rows * bytes / value_granule words, row r's words starting at index
  // r * bytes / value_granule (the gaps between rows carry none). Write/update: the
  // operand. Read completion: the stored words. Empty = timing-only traffic, which
  // neither changes stored values nor gets them back.
  Payload data;
};

class MemClient {
 public:
  virtual ~MemClient() = default;
  // Contract: called exactly once per accepted request, when it completes: a read's
  // data is available (in req.data), a write or update has been applied.
  virtual void on_mem_response(MemRequest&& req) = 0;
  // Contract: called once per wait_for_space() registration, when the target may
  // have room again (the client must re-check can_accept()).
  virtual void on_mem_retry() {}
};

class MemTarget {
 public:
  virtual ~MemTarget() = default;
  // Contract: true iff accept(req) would succeed now. No side effects.
  virtual bool can_accept(const MemRequest& req) const = 0;
  // Contract: precondition can_accept(req). Takes the request; its client later gets
  // exactly one on_mem_response().
  virtual void accept(MemRequest&& req) = 0;
  // Contract: `client` gets one on_mem_retry() the next time space frees. Registering
  // twice before the retry is the same as once.
  virtual void wait_for_space(MemClient* client) = 0;
  // The target's independent input queues: a request refused by one does not wait for
  // the others (a GPU's memory side: one controller per channel). A requester that
  // queues what was refused keeps one FIFO per queue, so a full channel holds back
  // only its own requests. Requests to one address always go to one queue.
  virtual std::uint32_t num_queues() const { return 1; }
  virtual std::uint32_t queue_of(const MemRequest& /*req*/) const { return 0; }
  // As wait_for_space, for room in one queue only (the client is retried when that
  // queue frees, not when any does).
  virtual void wait_for_queue_space(MemClient* client, std::uint32_t /*queue*/) { wait_for_space(client); }
};

}  // namespace t3sim
