#pragma once
// A compute unit replaying workgroup traces (SPEC "CU + dispatcher").
//
// A CU hosts WGs up to its occupancy limits (threads, registers, LDS, WG slots). Each
// WG steps through its trace ops in order:
//  - load: split into requests of at most `load_request_bytes` (one wave-wide load
//    instruction; a 2D tile's rows are grouped, a long row is cut), each one L2
//    transaction, so the L2's batched look-ups stay; it joins the current *load
//    group*, the loads a compute op waits for (the K loop's barrier: a K step's
//    matrix work starts only when every load of its step has landed);
//  - the CU's load path (issue 17): at most `max_inflight_load_bytes` of load
//    requests in flight per CU (the L1's miss-status holding registers; a request
//    waits for room, oldest first), and every response crosses the CU's return port
//    at `load_bytes_per_cycle` and its pipeline in `load_latency` cycles before its
//    data count as landed; the room it held frees then;
//  - compute: queued in order; one runs at a time per WG once its load group has
//    landed, reserving the CU's matrix core for its cycles (WGs on a CU share it);
//  - prefetch stages (T3 §2.5 GEMM K loop): with the kernel's `stages` = P tile
//    buffers (TraceResources::stages), the loads of group g may issue once compute
//    g-P is done, so the loads of the next P-1 K steps overlap the current compute
//    (2: double buffering; Hopper GEMMs run 3-5);
//  - store: waits until every earlier compute is done (its data exist), then issues;
//  - set: waits until earlier computes finished and earlier requests were answered
//    (release), then sets a GPU flag; wait: blocks until the flag reaches a value;
//  - a WG keeps at most wfs x max_outstanding_per_wf memory requests in flight;
//  - remote stores and remote flag sets go through the GPU's RemoteAccess (the
//    network): a remote store counts as in flight until the peer acknowledges it;
//  - posted stores (`posted_stores`, default): a WG whose ops are done and whose only
//    requests in flight are stores gives its slot back at once (as a GPU wave ends
//    with stores in flight); it is reported done when the last store is
//    acknowledged, so a kernel still ends only once all its stores are. Without it a
//    WG holds its slot for its stores' round trip (a remote store: the link latency
//    twice), which slows producers whose stores bypass the L2 (T3's NMC updates).
// Functional values (kernels launched with a value granule, e.g. collectives): a
// load brings back its words, and a store carries the element-wise sum of the loads
// of its group (the loads feeding the compute before it). That is what a reduction
// (local + received) or a copy (one load) computes on the CU's vector ALUs. A compute
// marked `carry` adds its group's sum into the next group's when it completes: a
// running sum over groups (an embedding bag that loads and adds one row at a time).
// A WG ends when its ops are done, its computes finished and its requests answered
// (its slot frees earlier with posted stores, see above).
//
// Events: one per compute completion and one per memory response; nothing while the
// CU waits.

#include <cstdint>
#include <optional>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/cu/cu_config.h"
#include "models/cu/flag_table.h"
#include "models/cu/load_path.h"
#include "models/cu/store_routing.h"
#include "models/mem/mem_request.h"
#include "models/cu/sm_clock.h"
#include "models/mem/remote_access.h"
#include "sim/error.h"
#include "sim/clock.h"
#include "sim/component.h"
#include "sim/event_queue.h"
#include "sim/stats.h"
#include "trace/trace.h"

namespace t3sim {

// Which kernel a WG belongs to, as the CU reports back to the dispatcher.
struct WgLaunch {
  const KernelTrace* trace = nullptr;
  std::uint32_t wg = 0;
  Stream stream = Stream::kCompute;
  std::uint32_t kernel = 0;  // dispatcher's id
  std::uint32_t value_granule = 0;  // bytes per functional word; 0: timing only
  const StoreRouting* routing = nullptr;  // T3 remote_map / synthetic store values; null: none
};

class ComputeUnit final : public Component, public MemClient {
 public:
  ComputeUnit(Component& parent, std::string_view name, const CuConfig& cfg, MemTarget& memory, FlagTable& flags);

  // Occupancy: WGs of this shape an empty CU holds (0: it never fits).
  std::uint32_t capacity_for(const TraceResources& r) const { return wgs_per_cu(cfg_, r); }
  // Contract: true iff launch(r...) is possible now.
  bool can_host(const TraceResources& r) const;
  // Contract: precondition can_host. The WG takes its slot and resources now and runs
  // its first op at `start` (now if earlier: the dispatch latency is the caller's).
  // on_wg_done(launch) is called when the WG ends.
  void launch(const WgLaunch& wg, Tick start = Tick());
  void set_on_wg_done(std::function<void(const WgLaunch&)> fn) { on_wg_done_ = std::move(fn); }
  // Contract: called whenever a WG gives its slot back (after on_wg_done when it ends
  // then; earlier with posted stores in flight), with that WG: the CU may host another.
  void set_on_slot_free(std::function<void(const WgLaunch&)> fn) { on_slot_free_ = std::move(fn); }
  // Where remote stores and flag sets go (nullptr: a single GPU; remote ops are then
  // an internal error).
  void set_remote(RemoteAccess* remote) { remote_ = remote; }
  // The GPU's SM clock, shared by its CUs, when it has a power cap (without one, the CU's
  // non-matrix work stays at its clock_hz).
  void share_sm_clock(SmClock& clock) { sm_clock_ = &clock; }

  std::uint32_t wgs_running() const { return running_; }
  std::uint64_t wgs_completed() const { return wgs_done_.value(); }
  // Waits on a flag that blocked (the `flag_waits` stat).
  std::uint64_t flag_waits() const { return flag_waits_.value(); }

  // MemClient
  void on_mem_response(MemRequest&& req) override;
  void on_mem_retry() override;

  void report_in_flight(std::vector<std::string>& out) const override;

 private:
  // A WG from launch until done: its slot while it runs (or -1 once it gave the
  // slot back) and its stores in flight. Store responses find their WG here.
  struct WgRecord {
    WgLaunch launch;
    std::int32_t slot = -1;
    std::uint32_t stores_in_flight = 0;
  };
  // A store waiting for its compute: it needs `computes` computes done and carries
  // the sum of group `value_group` (the group that compute closed).
  // A store waiting for its compute or for earlier stores, or an unfenced set
  // (op.kind == kSet) waiting for the stores before it to be issued.
  struct PendingStore {
    WgOp op;
    std::uint64_t computes = 0;
    std::uint64_t value_group = 0;
  };
  // A K step's compute op waiting for its loads: matrix-core cycles, the LDS bytes
  // its matrix work reads, the WG's non-matrix (issue) cycles.
  // `carry` (kTraceCarry): its group's values go into the next group's when it is done.
  struct QueuedCompute {
    std::uint64_t cycles = 0, lds_bytes = 0, issue_cycles = 0;
    bool carry = false;
  };
  struct Slot {
    bool busy = false;
    std::uint32_t record = 0;  // in records_
    WgLaunch launch;
    WgExpander ops;
    WgOp op;                        // the op being processed
    bool has_op = false;
    bool waiting_flag = false;
    bool starting = false;  // placed; its first op waits for its start time
    bool waiting_port = false;  // a store waits for the data port (store_bytes_per_cycle)
    bool waiting_tma = false;   // a TMA load waits for the SM's TMA unit (tma_free_)
    bool waiting_fence = false;      // a fenced set waits out fence_latency
    bool stored_since_fence = false;  // a write or update issued since the last fenced set
    Tick fence_done;                 // when the fence of the set being processed ends (or zero)
    bool tma_issuing = false;   // the TMA unit took the load op being split (next_piece)
    std::uint32_t outstanding = 0;  // memory requests in flight
    std::uint32_t budget = 0;       // wfs x max_outstanding_per_wf
    std::uint64_t next_piece = 0;   // of the load op being split into requests
    std::uint64_t group = 0;        // load group being formed (= computes queued so far)
    std::uint32_t group_ring = 0;   // ring(*this, group), kept: its 64-bit division per load showed in land_load's profile
    std::uint64_t computes_done = 0;
    bool compute_running = false;   // compute `computes_done` holds the matrix core
    std::uint32_t stages = 2;       // the kernel's tile buffers (TraceResources::stages)
    // TraceResources::tma, kept here: every load asks, and the trace's resources are
    // far from the slot in the host's caches.
    bool tma = false;
    // Rings of stages + 1 entries indexed by group: loads in flight, the
    // queued compute and (values) the element-wise sum of the group's loads.
    std::vector<std::uint32_t> group_loads;
    std::vector<QueuedCompute> group_compute;
    std::vector<Payload> group_sum;
    // Stores whose compute has not finished, in program order: the front end goes on
    // to the next ops (the WG's other warps keep loading) and these go out, in order,
    // once their compute is done.
    std::deque<PendingStore> pending_stores;
  };
  // A load's landing (its data through the return port and load pipeline): an event
  // of its own, scheduled like a pooled callback (same order) without the callback's
  // std::function and pool.
  class LandingEvent final : public Event {
   public:
    LandingEvent(ComputeUnit& cu, std::uint32_t index) : Event(cu.event_source()), index_(index), cu_(cu) {}
    void process() override { cu_.land_load(index_); }
    std::string description() const override { return cu_.name() + " load landing"; }

   private:
    std::uint32_t index_;  // first: it fits in Event's tail padding
    ComputeUnit& cu_;
  };
  // One load request in flight: whose it is and where its words go in its op's sum.
  // What its response and landing read sits in the first 64 B (a host cache line:
  // with 80 CUs the record has left the caches by then); values in the second.
  struct alignas(64) LoadInFlight {
    LoadInFlight(ComputeUnit& cu, std::uint32_t index) : landing(cu, index) {}
    LandingEvent landing;
    std::uint16_t slot = 0;        // max_wgs <= 1024
    std::uint8_t ring = 0;         // its group's place on the slot's rings (ring(slot, group)); stages <= 16
    bool has_data = false;         // carries values (functional runs): `data`, `first_word`
    std::uint64_t mshr_bytes = 0;  // of the CU's in-flight load bytes it holds (0: a TMA copy)
    Tick issued;
    // Second line.
    std::uint64_t first_word = 0;  // of the piece within its op's words
    Payload data;                  // the response's words while crossing the return path
  };
  // A load op's piece: `rows` rows of `bytes` starting at row `row`, byte `offset`.
  struct LoadPiece {
    std::uint64_t row = 0, offset = 0, rows = 1, bytes = 0;
  };

  void advance(std::uint32_t s);
  // Issues the current load op's next pieces; true once every piece is issued.
  bool issue_load_pieces(std::uint32_t s);
  LoadPiece load_piece(const WgOp& op, std::uint64_t index) const;
  std::uint64_t load_pieces(const WgOp& op) const;
  void land_load(std::uint32_t index);
  static std::size_t ring(const Slot& w, std::uint64_t group) { return group % (w.stages + 1); }
  bool try_compute_start(std::uint32_t s);
  void on_compute_done(std::uint32_t s);
  void finish_if_done(std::uint32_t s);
  void wg_done(std::uint32_t record);
  // A request of `op` (the slot's current op for loads); a store carries the sum of
  // group `value_group`.
  // Bytes per functional word a load of this kernel carries: the launch's granule, or
  // 0 (none) under a routing with synthetic values that says the load carries none.
  std::uint32_t load_granule(const Slot& w, const WgOp& op) const;
  bool issue_memory(std::uint32_t s, const WgOp& op, MemOp mem_op, const LoadPiece& piece,
                    std::uint64_t value_group = 0);
  // Issues the slot's pending stores whose computes are done, in order; true when
  // none is left.
  // Sets a flag here or at a peer (a set op whose conditions hold).
  void issue_set(const WgOp& op);
  // The queue's first store (sets skipped): the oldest value group it still carries.
  static const PendingStore* oldest_pending_store(const Slot& w);
  bool drain_stores(std::uint32_t s);
  // Slot s waits until `at` for a unit it shares (the data port, the TMA unit): sets
  // its `waiting` flag and schedules one wake-up that clears it and advances the slot.
  void wake_at(std::uint32_t s, bool Slot::*waiting, Tick at);
  // With store_bytes_per_cycle: true while the data port is busy, and then slot s's
  // front end is woken when it frees (once per wait).
  bool store_port_busy(std::uint32_t s);
  // The clock SM work that starts now runs at (the cap's while the GPU is at it).
  const ClockDomain& sm_clock() const { return sm_clock_ != nullptr ? sm_clock_->at(now()) : clock_; }
  // What capping matrix steps run at now: the cap's clock (lower while the GPU's NVLink
  // port carries traffic, sm_clock.h), or compute_clock_ without a shared SM clock.
  const ClockDomain& cap_clock() const { return sm_clock_ != nullptr ? sm_clock_->cap_clock(now()) : compute_clock_; }
  void wake_load_waiters();
  // Advances every slot in `waiting` (which it empties; slots refused again re-register
  // into it), through `scratch`; `busy` marks a call in progress.
  void advance_all(std::vector<std::uint32_t>& waiting, std::vector<std::uint32_t>& scratch, bool& busy);

  CuConfig cfg_;
  MemTarget& memory_;
  FlagTable& flags_;
  RemoteAccess* remote_ = nullptr;
  ClockDomain clock_;
  ClockDomain compute_clock_;  // compute steps (CuConfig::compute_clock_hz)
  SmClock* sm_clock_ = nullptr;  // the GPU's, when it has a power cap (share_sm_clock)
  std::vector<Slot> slots_;
  std::uint32_t running_ = 0;
  std::uint32_t threads_used_ = 0, registers_used_ = 0;
  std::uint64_t lds_used_ = 0;
  Tick matrix_free_;  // the CU's matrix core is reserved until then
  std::vector<std::uint32_t> blocked_on_memory_;  // slots refused by the memory
  std::vector<std::uint32_t> retry_scratch_;      // on_mem_retry's copy of it
  bool retrying_ = false;
  std::function<void(const WgLaunch&)> on_wg_done_;
  std::function<void(const WgLaunch&)> on_slot_free_;
  std::vector<WgRecord> records_;
  std::vector<std::uint32_t> free_records_;
  std::deque<LoadInFlight> loads_;              // load requests in flight (tag = index); stable addresses
  std::vector<std::uint32_t> free_loads_;
  std::vector<std::uint32_t> wake_scratch_;           // wake_load_waiters' copy of load_room_'s waiters
  bool waking_ = false;
  WireRatio store_wire_[2][3];  // store_wire_ratio by [remote][protocol], computed once
  DataPort data_port_;                          // loads back, stores out (load_path.h)
  Tick tma_free_;                               // the TMA unit takes its next bulk load then

  Counter& wgs_done_;
  Counter& load_bytes_;
  Counter& store_bytes_;
  Counter& matrix_busy_;
  Counter& lds_bound_cycles_;
  Counter& issue_cycles_;
  Counter& memory_refusals_;
  Counter& load_requests_;
  Counter& load_room_stalls_;
  Counter& load_room_stall_cycles_;
  Average& load_latency_;
  TimeWeighted& inflight_load_bytes_stat_;
  Counter& flag_waits_;
  Counter* store_port_waits_ = nullptr;  // registered with store_bytes_per_cycle only
  TimeWeighted& flag_waiting_wgs_;
  LoadRoom load_room_;  // the L1's MSHRs (load_path.h); after the stats it keeps
};

}  // namespace t3sim
