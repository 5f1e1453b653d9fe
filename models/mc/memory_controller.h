#pragma once
// One memory controller per HBM channel (SPEC "Memory controller", T3 §4.5).
//
//   requester --accept()--> ingress queue per stream (compute, communication)
//        --arbiter (one admission per cycle)--> DRAM queues: read | write (+update)
//        --command scheduler (one command per cycle; FR-FCFS by default)--> HbmChannel
//
// The ingress queues give back-pressure to requesters; the arbiter decides which
// stream's oldest request enters the DRAM queues (the "DRAM queue occupancy" MCA
// watches); the controller drains writes between a high and a low watermark, and
// the scheduler (i_scheduler.h) picks the command within the active queue (FR-FCFS:
// row hits first, then the oldest ready command). A request never passes an older
// one to overlapping bytes, so updates to one address apply in arrival order
// (atomicity from queue order, T3 §4.3).
//
// Tick on demand: the controller evaluates one memory cycle at a time while it can
// make progress, and otherwise sleeps until the earliest cycle a DRAM timing
// constraint, a refresh or the arbiter's timer allows something new; with nothing
// queued it schedules nothing.

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "models/hbm/hbm_channel.h"
#include "models/mc/address_map.h"
#include "models/mc/i_admission_observer.h"
#include "models/mc/i_arbiter.h"
#include "models/mc/i_scheduler.h"
#include "models/mem/mem_request.h"
#include "sim/clock.h"
#include "sim/component.h"
#include "sim/event_queue.h"
#include "sim/stats.h"

namespace t3sim {

class FrFcfsScheduler;

class ConfigNode;

struct McConfig {
  std::uint32_t ingress_queue_size = 64;  // per stream, before back-pressure
  std::uint32_t read_queue_size = 32;     // DRAM queues (T3 §4.5's "DRAM queue")
  std::uint32_t write_queue_size = 32;    // writes and updates
  std::uint32_t write_high_watermark = 24;  // start draining writes at this many
  std::uint32_t write_low_watermark = 8;    // stop draining (if reads wait) at this many
  // A write that has waited this many memory cycles below the watermarks is not left
  // starved under a steady read stream; what happens then is write_timeout_action's.
  std::uint32_t write_drain_timeout = 500;
  // "drain": the write queue drains until no write has waited that long (FR-FCFS
  // within it, so its row hits go first and the reads wait for all of them);
  // "oldest-first": the oldest write issues its next command as soon as timing
  // allows, between the reads (measured on the H200: configs/systems/h200.yaml).
  std::string write_timeout_action = "drain";
  // Column commands to an open row after which a waiting older request to another
  // row of that bank may close it (bounds FR-FCFS's unfairness; fr-fcfs only).
  std::uint32_t row_hit_cap = 16;
  std::string scheduler = "fr-fcfs";  // one of scheduler_types() (i_scheduler.h)
  std::uint32_t response_latency = 10;  // memory cycles from data done to the requester
  ArbiterConfig arbiter;
};

McConfig read_mc_config(ConfigNode node);

// One stream's statistics at one controller, for system-level summaries.
struct McStreamStats {
  std::uint64_t requests[kNumMemOps] = {};
  std::uint64_t bytes[kNumMemOps] = {};
  std::uint64_t row_hits = 0, row_misses = 0, row_conflicts = 0;
  const Histogram* latency = nullptr;               // ns, arrival to response
  const TimeWeighted* dram_queue_occupancy = nullptr;
};

class MemoryController final : public Component, public MemTarget, public AdmissionWaiter {
 public:
  // `map` decodes bank group / bank / row / column; every request must belong to
  // `channel_index` and stay inside one interleave unit.
  MemoryController(Component& parent, std::string_view name, const McConfig& cfg,
                   HbmChannel& dram, const AddressMap& map, std::uint32_t channel_index);
  ~MemoryController() override;

  // MemTarget
  bool can_accept(const MemRequest& req) const override;
  void accept(MemRequest&& req) override;
  void wait_for_space(MemClient* client) override;

  // Contract: `observer` (which must outlive the controller) is told of every request
  // entering a DRAM queue, and may hold one at its ingress head (i_admission_observer.h).
  // nullptr (the default): none.
  void set_admission_observer(AdmissionObserver* observer);
  void on_admission_room() override;

  // Kernel boundaries, forwarded to the arbiter (T3 §4.5).
  void kernel_begin();
  void kernel_end();

  const Arbiter& arbiter() const { return *arbiter_; }
  McStreamStats stream_stats(Stream s) const;
  // When the latest response leaves (zero before the first): a run that drains the
  // memory system ends no earlier.
  Tick last_response() const { return last_response_; }
  std::uint32_t occupancy() const;
  bool idle() const;
  void report_in_flight(std::vector<std::string>& out) const override;

 private:
  // A request from acceptance to retirement: what the per-cycle scans read of a
  // queued one is its QueuedRequest (i_scheduler.h, in its bank's queue); the rest
  // is its Entry, kept in entries_ at the request's slot (the slot of reqs_ and
  // response_events_) from accept() on, so admission and retirement move only slot
  // numbers and QueuedRequests.
  struct Entry {
    BankAddress at;               // the next column access
    std::uint32_t bank = 0;       // bank index in the channel
    std::uint32_t bursts_left = 0;
    std::uint32_t bytes = 0;      // of the request (a copy, for the order checks)
    MemOp op = MemOp::kRead;      // of the request
    Stream stream = Stream::kCompute;
    bool activated = false;       // an ACT was issued for it (row miss)
    bool precharged = false;      // a PRE was issued for it (row conflict)
    bool started = false;         // its first column command issued
    bool has_data = false;        // the request carries values (reqs_ is read at the last burst only then)
    const void* response_event = nullptr;  // response_events_[slot], for a prefetch before retiring
    std::uint64_t address = 0;    // of the request
    std::uint64_t seq = 0;        // admission order
    Cycles arrival;               // reached the controller
    Cycles admitted;              // entered the DRAM queues (write-drain timeout)
  };
  Entry& entry(const QueuedRequest& r) { return entries_[r.slot]; }
  const Entry& entry(const QueuedRequest& r) const { return entries_[r.slot]; }

  Cycles cycle_now() const { return clock_.cycle_at_or_after(now()); }
  void wake_at(Cycles c);
  void tick();
  // Built on every admission: inlined into its callers (this TU), as it was before the
  // observer interface made its call virtual.
  [[gnu::always_inline]] inline ArbiterView view(Cycles now) const;
  bool admit(Cycles now);
  bool refresh(Cycles now, Cycles& next);
  // Issues the cycle's command, if any (the scheduler's choice in the active queue).
  // When none issues and want_next, lowers `next` to the earliest cycle one may
  // (otherwise `next` is left as it may be).
  bool schedule_command(Cycles now, Cycles& next, bool want_next);
  bool write_waited_too_long(Cycles now) const;
  // The drain mode schedule_command would set at `now`, from the queues as they are.
  bool drains_at(Cycles now) const;
  // After a progress tick: the cycle of the next tick that can do something, `c` (the
  // following cycle) unless its tick would provably do nothing but sleep.
  Cycles next_cycle_with_work(Cycles c);
  // Whether the tick of skipped_cycle_ was skipped and would not have run yet.
  bool skipped_tick_ahead() const;
  bool issue_scheduled(const ScheduledCommand& c, Cycles now_c);  // schedule_command's choice
  // Bank `bank` (all banks if kAllBanks) opened or closed: its requests' next commands change.
  static constexpr std::uint32_t kAllBanks = ~std::uint32_t{0};
  void invalidate_commands(std::uint32_t bank);
  void issue_column(const ScheduledCommand& c, Cycles now);
  void retire(DramQueue& q, std::uint32_t bank, std::uint32_t i, Cycles data_done);
  void respond(std::uint32_t slot);
  void set_occupancy_stats();
  std::uint32_t ingress_size(int s) const { return ingress_count_[static_cast<std::size_t>(s)]; }

  McConfig cfg_;
  HbmChannel& dram_;
  ClockDomain clock_;
  // ---- state every tick reads, together
  std::uint32_t read_capacity_ = 0, write_capacity_ = 0, ingress_capacity_ = 0;  // cfg_ copies
  std::array<std::uint32_t, kNumStreams> ingress_count_{};  // ingress_[s].size()
  std::array<std::uint32_t, kNumStreams> in_dram_queue_{};
  std::uint32_t hazard_entries_ = 0;  // entries of read_q_ and write_q_ with hazards > 0
  Cycles write_front_admitted_;  // admission of write_q_'s oldest entry (the drain timeout), if any
  bool draining_writes_ = false;
  bool refresh_pending_ = false;
  bool in_tick_ = false;
  bool evaluated_once_ = false;
  bool asleep_ = true;     // nothing queued since the last tick (refresh catch-up on wake)
  Cycles last_evaluated_;  // the last cycle tick() ran (one evaluation per cycle)
  Cycles tick_cycle_;      // the cycle tick_event_ is scheduled for
  Cycles skipped_cycle_;   // the last cycle whose tick next_cycle_with_work found idle and skipped
  // The command next_cycle_with_work found for plan_cycle_, which that cycle's tick
  // issues without scanning again (dropped when a request arrives: it is admitted first).
  bool has_plan_ = false;
  Cycles plan_cycle_;
  ScheduledCommand plan_;
  std::uint64_t next_seq_ = 1;
  DramQueue read_q_, write_q_;
  // The counts behind the counters below (Counter::bind): here, next to the state the
  // controller touches per request anyway, not one heap object per count.
  struct Counts {
    std::array<std::array<std::uint64_t, kNumMemOps>, kNumStreams> requests{}, bytes{};
    std::array<std::uint64_t, kNumStreams> row_hits{}, row_misses{}, row_conflicts{}, admissions{};
    std::uint64_t write_drains = 0, hazard_waits = 0;
  } counts_;

  const AddressMap& map_;
  std::uint32_t channel_;
  std::unique_ptr<Arbiter> arbiter_;
  bool arbiter_observes_ = true;  // arbiter_->observes()
  std::unique_ptr<DramScheduler> scheduler_;
  FrFcfsScheduler* fr_fcfs_ = nullptr;
  std::unique_ptr<DramScheduler> oldest_first_;  // write_timeout_action oldest-first's (else null)  // scheduler_ if it is FR-FCFS: called directly (schedule_command)
  AdmissionObserver* observer_ = nullptr;
  std::array<bool, kNumMemOps> observed_{};  // observer_->watches(op), per op (false without one)
  bool observer_waiting_ = false;  // registered with observer_ for room

  std::array<std::deque<std::uint32_t>, kNumStreams> ingress_;  // slots, oldest first
  std::vector<MemClient*> waiting_clients_;
  std::vector<MemClient*> retry_scratch_;

  // The memory cycle: tick() (an Event of its own rather than a CallbackEvent: no
  // std::function call per cycle).
  class TickEvent final : public Event {
   public:
    explicit TickEvent(MemoryController& mc) : Event(mc.event_source(), EventPriority::kTick), mc_(mc) {}
    void process() override { mc_.tick(); }
    std::string description() const override { return mc_.name() + ".tick"; }
    void prefetch() const override {
      for (const void* p : lines) __builtin_prefetch(p);
    }
    // What a tick reads first, by address (stable after construction: the DRAM queues
    // are reserved to capacity, the channel's arrays never grow), so prefetch() loads
    // nothing from the controller itself.
    std::array<const void*, 8> lines{};

   private:
    MemoryController& mc_;
  };
  // The response of the request in one reqs_ slot (one event per slot, reused).
  class ResponseEvent final : public Event {
   public:
    ResponseEvent(MemoryController& mc, std::uint32_t slot)
        : Event(mc.event_source(), EventPriority::kDelivery), mc_(mc), slot_(slot) {}
    void process() override { mc_.respond(slot_); }
    std::string description() const override { return mc_.name() + ".response"; }

   private:
    MemoryController& mc_;
    std::uint32_t slot_;
  };

  // Every request from acceptance to its response, so none is moved per stage.
  std::vector<MemRequest> reqs_;
  std::vector<Entry> entries_;  // per reqs_ slot
  std::deque<ResponseEvent> response_events_;  // one per reqs_ slot; a deque keeps them in place
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t in_response_ = 0;
  Tick last_response_ = Tick::zero();

  TickEvent tick_event_;
  bool timeline_sampled_ = false;
  Tick last_timeline_sample_;
  std::uint32_t timeline_track_ = 0;

  // Stats
  std::array<std::array<Counter*, kNumMemOps>, kNumStreams> requests_{};
  std::array<std::array<Counter*, kNumMemOps>, kNumStreams> bytes_{};
  std::array<Counter*, kNumStreams> row_hits_{}, row_misses_{}, row_conflicts_{};
  std::array<Histogram*, kNumStreams> latency_ns_{};
  std::array<TimeWeighted*, kNumStreams> dram_queue_occupancy_{}, ingress_occupancy_{};
  std::array<Counter*, kNumStreams> admissions_{};
  TimeWeighted& occupancy_stat_;
  Counter& write_drains_;
  Counter& hazard_waits_;
};

}  // namespace t3sim
