#pragma once
// A compute unit's parameters (system.gpu.cu, read at the edge), the rules that follow
// from them alone: how many WGs of a shape a CU holds (the hardware block scheduler's
// occupancy: threads, registers, LDS, WG slots) and what a store's bytes cost on the
// wire. The CU model itself is compute_unit.h.

#include <cstdint>
#include <optional>
#include <string>

#include "sim/error.h"
#include "sim/time.h"
#include "trace/trace.h"

namespace t3sim {

class ConfigNode;

struct CuConfig {
  std::uint64_t clock_hz = 1'400'000'000;    // T3 Table 1: 1.4 GHz
  // The SM clock at the power cap (0: clock_hz, no cap). A GPU whose dense matrix work
  // holds it at its power cap runs its matrix steps (compute ops whose operands come from
  // the LDS: a GEMM's K steps, with their issue cycles) at this clock (H200:
  // configs/systems/h200.yaml), and while such steps run on any of its CUs, and for
  // power_cap_hold after, all other SM work too (models/cu/sm_clock.h): the SMs have
  // one clock.
  std::uint64_t compute_clock_hz = 0;
  // How long the GPU stays at the cap's clock after its last capping matrix step.
  Tick power_cap_hold = Tick::zero();
  // The cap's clock while the GPU's NVLink port carries traffic (0: compute_clock_hz):
  // the links draw from the same power budget (models/cu/sm_clock.h).
  std::uint64_t link_busy_compute_clock_hz = 0;
  std::uint32_t max_threads = 2048;          // T3 Table 1: 2K threads per CU
  std::uint32_t registers = 65536;           // 256 KB register file / 4 B
  std::uint64_t lds_bytes = 64 * 1024;       // LDS part of the 128 KB unified LDS + L1
  std::uint32_t max_wgs = 16;                // WG slots
  std::uint32_t max_outstanding_per_wf = 16;  // memory requests in flight per WF
  // The load path (see the file comment). 0 turns each part off: a load op is one
  // request, nothing bounds the bytes in flight, the return is free.
  std::uint32_t load_request_bytes = 0;       // bytes of one load request (wave instruction)
  std::uint64_t max_inflight_load_bytes = 0;  // load bytes in flight per CU (L1 MSHRs)
  std::uint32_t load_bytes_per_cycle = 0;     // return port, bytes per CU cycle
  // Store data cross the same port on their way out, at this many bytes per CU cycle (a
  // WG's store waits until the port is free, then holds it for its bytes); 0: stores
  // do not use it. TMA kernels' stores (a Hopper GEMM's epilogue) go through the TMA
  // unit instead and do not.
  std::uint32_t store_bytes_per_cycle = 0;
  std::uint32_t load_latency = 0;             // CU cycles from the L2's response to landed data
  // The LDS port that feeds the matrix cores their operands (a compute op's `lds`
  // bytes), bytes per CU cycle; 0: unbounded.
  std::uint32_t lds_bytes_per_cycle = 0;
  // Matrix-core throughput (FP16 FLOPs per CU cycle): what trace generators turn
  // FLOPs into compute cycles with. T3 Table 1 CU: ~1024 (115 TFLOP/s at 80 CUs).
  std::uint32_t flops_per_cycle = 1024;
  // A WG frees its slot once only its stores are in flight (see the file comment).
  bool posted_stores = true;
  // Flags (`set` / `wait`, NCCL's head and tail): a flag's value reaches a WG waiting on
  // it this long after the set (local) or its arrival (remote): the flag's store into
  // the L2 and the waiting warp's poll reading it there. 0: at once.
  Tick flag_latency = Tick::zero();
  // A fenced `set` (release: NCCL Simple's fence.acq_rel.sys before its tail flag) costs
  // this much beyond waiting for the WG's earlier stores, when the WG has stored since
  // its last fenced set (NCCL fences only after data: prims_simple.h postPeer's
  // dataStored). 0: nothing beyond the wait.
  Tick fence_latency = Tick::zero();
  // Bytes on the wire per payload byte of a CU's remote store (its write packets'
  // headers), as num / den, beside its protocol's own (LL, LL128: MemRequest::wire_num).
  // A copy engine's transfers do not pay it (net.bandwidth is theirs). 1/1: none.
  std::uint8_t remote_store_wire_num = 1;
  std::uint8_t remote_store_wire_den = 1;
};

CuConfig read_cu_config(ConfigNode node);

// A store's bytes on the wire per payload byte, as MemRequest::wire_num / wire_den.
struct WireRatio {
  std::uint8_t num = 1;
  std::uint8_t den = 1;
};
// Of a store whose protocol's lines are `protocol` (0: plain, 1: NCCL LL, 2: LL128), to
// another GPU (`remote`: times cfg's remote_store_wire_num / den) or not, reduced; none
// if it does not fit 8 bits (read_cu_config refuses such a ratio).
std::optional<WireRatio> store_wire_ratio(const CuConfig& cfg, int protocol, bool remote);

// How many WGs needing `r` one CU of `cfg` holds at once (threads, registers, LDS
// and WG slots); 0 if one does not fit.
std::uint32_t wgs_per_cu(const CuConfig& cfg, const TraceResources& r);
// Empty if a WG needing `r` fits a CU of `cfg`; else why not, naming the system key
// that is too small ("a WG needs 64 KiB of LDS and a CU has 0 B (system.gpu.cu.lds_size)").
std::string why_a_wg_does_not_fit(const CuConfig& cfg, const TraceResources& r);
// A kernel none of whose WGs fits a CU: bad input (the system's CUs or the trace).
class WgDoesNotFit : public UserError {
 public:
  using UserError::UserError;
};

}  // namespace t3sim
