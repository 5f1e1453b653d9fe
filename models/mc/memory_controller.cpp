#include "models/mc/memory_controller.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "models/mc/impl/fr_fcfs.h"
#include "sim/config.h"
#include "sim/error.h"
#include "sim/simulator.h"
#include "sim/timeline.h"

namespace t3sim {

namespace {

constexpr Cycles kNever{std::numeric_limits<Cycles::rep>::max()};

template <class E>
bool overlaps(const E& a, const E& b) {
  return a.address < b.address + b.bytes && b.address < a.address + a.bytes;
}
// Two requests must stay in order if they touch the same bytes and one of them
// changes them (read-after-write, write-after-read, write/update-after-write/update).
template <class E>
bool ordered(const E& a, const E& b) {
  return (a.op != MemOp::kRead || b.op != MemOp::kRead) && overlaps(a, b);
}

}  // namespace

McConfig read_mc_config(ConfigNode node) {
  McConfig cfg;
  cfg.ingress_queue_size = static_cast<std::uint32_t>(node.get_uint("ingress_queue_size", cfg.ingress_queue_size, 1, 1u << 20));
  cfg.read_queue_size = static_cast<std::uint32_t>(node.get_uint("read_queue_size", cfg.read_queue_size, 1, 1u << 16));
  cfg.write_queue_size = static_cast<std::uint32_t>(node.get_uint("write_queue_size", cfg.write_queue_size, 1, 1u << 16));
  cfg.write_high_watermark = static_cast<std::uint32_t>(
      node.get_uint("write_high_watermark", std::min(cfg.write_high_watermark, cfg.write_queue_size), 1, cfg.write_queue_size));
  cfg.write_low_watermark = static_cast<std::uint32_t>(
      node.get_uint("write_low_watermark", std::min(cfg.write_low_watermark, cfg.write_high_watermark - 1), 0,
                    cfg.write_queue_size));
  if (cfg.write_low_watermark >= cfg.write_high_watermark) {
    node.fail("write_low_watermark", fmt::format("expected less than write_high_watermark ({}), got {}",
                                                 cfg.write_high_watermark, cfg.write_low_watermark));
  }
  cfg.write_drain_timeout = static_cast<std::uint32_t>(
      node.get_uint("write_drain_timeout", cfg.write_drain_timeout, 1, 1u << 30));
  cfg.write_timeout_action = node.get_enum("write_timeout_action", cfg.write_timeout_action, {"drain", "oldest-first"});
  cfg.row_hit_cap = static_cast<std::uint32_t>(node.get_uint("row_hit_cap", cfg.row_hit_cap, 1, 1u << 20));
  cfg.scheduler = node.get_enum("scheduler", cfg.scheduler, dram_schedulers().names());
  cfg.response_latency = static_cast<std::uint32_t>(node.get_uint("response_latency", cfg.response_latency, 0, 1u << 20));
  cfg.arbiter = read_arbiter_config(node.child("arbiter"));
  node.finish();
  return cfg;
}

MemoryController::MemoryController(Component& parent, std::string_view name, const McConfig& cfg,
                                   HbmChannel& dram, const AddressMap& map, std::uint32_t channel_index)
    : Component(parent, name),
      cfg_(cfg),
      dram_(dram),
      clock_(dram.config().clock_hz),
      map_(map),
      channel_(channel_index),
      arbiter_(make_arbiter(*this, cfg.arbiter)),
      scheduler_(make_scheduler(cfg.scheduler, SchedulerParams{dram, cfg.read_queue_size, cfg.write_queue_size,
                                                               cfg.row_hit_cap})),
      fr_fcfs_(dynamic_cast<FrFcfsScheduler*>(scheduler_.get())),
      oldest_first_(cfg.write_timeout_action == "oldest-first"
                        ? make_scheduler("fcfs", SchedulerParams{dram, cfg.read_queue_size, cfg.write_queue_size,
                                                                 cfg.row_hit_cap})
                        : nullptr),
      tick_event_(*this),
      occupancy_stat_(time_weighted("dram_queue_occupancy", "requests",
                                    "requests in the DRAM read + write queues", 1,
                                    cfg.read_queue_size + cfg.write_queue_size + 1)),
      write_drains_(counter("write_drains", "events", "times the write queue was drained (watermarks)")),
      hazard_waits_(counter("hazard_waits", "requests",
                            "requests admitted behind an older request to overlapping bytes")) {
  const std::uint32_t dram_capacity = cfg.read_queue_size + cfg.write_queue_size;
  for (int s = 0; s < kNumStreams; ++s) {
    const std::string stream = to_string(static_cast<Stream>(s));
    for (int o = 0; o < kNumMemOps; ++o) {
      const std::string op = to_string(static_cast<MemOp>(o));
      requests_[s][o] = &counter(fmt::format("{}.{}_requests", stream, op), "requests",
                                 fmt::format("{} {} requests completed", stream, op));
      bytes_[s][o] = &counter(fmt::format("{}.{}_bytes", stream, op), "bytes",
                              fmt::format("bytes of {} {} requests completed", stream, op));
    }
    row_hits_[s] = &counter(stream + ".row_hits", "requests", "first column access found its row open");
    row_misses_[s] = &counter(stream + ".row_misses", "requests", "needed an ACT to a closed bank");
    row_conflicts_[s] = &counter(stream + ".row_conflicts", "requests",
                                 "needed a PRE of another row, then an ACT");
    latency_ns_[s] = &histogram(stream + ".latency", "ns",
                                "arrival at the controller to response (10 ns buckets)", 10, 1000);
    dram_queue_occupancy_[s] = &time_weighted(stream + ".dram_queue_occupancy", "requests",
                                              "this stream's requests in the DRAM queues", 1, dram_capacity + 1);
    ingress_occupancy_[s] = &time_weighted(stream + ".ingress_occupancy", "requests",
                                           "requests waiting for arbitration", 1, cfg.ingress_queue_size + 1);
    admissions_[s] = &counter(stream + ".admissions", "requests", "requests the arbiter let into the DRAM queues");
  }
  if (dram.config().banks() > 64) {
    throw std::invalid_argument(fmt::format("{}: at most 64 banks per channel are supported, got {}",
                                            this->name(), dram.config().banks()));
  }
  if (dram.config().bank_groups > 256) {
    throw std::invalid_argument(fmt::format("{}: at most 256 bank groups per channel are supported, got {}",
                                            this->name(), dram.config().bank_groups));
  }
  arbiter_observes_ = arbiter_->observes();
  for (int s = 0; s < kNumStreams; ++s) {
    for (int o = 0; o < kNumMemOps; ++o) {
      requests_[s][o]->bind(&counts_.requests[s][o]);
      bytes_[s][o]->bind(&counts_.bytes[s][o]);
    }
    row_hits_[s]->bind(&counts_.row_hits[s]);
    row_misses_[s]->bind(&counts_.row_misses[s]);
    row_conflicts_[s]->bind(&counts_.row_conflicts[s]);
    admissions_[s]->bind(&counts_.admissions[s]);
  }
  write_drains_.bind(&counts_.write_drains);
  hazard_waits_.bind(&counts_.hazard_waits);
  read_capacity_ = cfg.read_queue_size;
  write_capacity_ = cfg.write_queue_size;
  ingress_capacity_ = cfg.ingress_queue_size;
  for (DramQueue* q : {&read_q_, &write_q_}) q->set_banks(dram.config().banks(), dram.config().banks_per_group);
  // What a tick reads first (TickEvent::prefetch): the configuration copy, the block of
  // per-tick state, both queues' first banks, the channel's timing state. The queues'
  // bank arrays never reallocate (sized above).
  const auto dram_lines = dram.hot_lines();
  // Timeline tracks exist before the run (a partitioned run cannot add any).
  if (sim().timeline().enabled()) timeline_track_ = sim().timeline().track(this->name());
  tick_event_.lines = {&cfg_,
                       &read_capacity_,
                       reinterpret_cast<const char*>(&read_capacity_) + 64,
                       read_q_.banks.data(),
                       write_q_.banks.data(),
                       dram_lines[0],
                       dram_lines[1],
                       dram_lines[2]};
}

MemoryController::~MemoryController() {
  for (int s = 0; s < kNumStreams; ++s) {
    for (int o = 0; o < kNumMemOps; ++o) {
      requests_[s][o]->unbind();
      bytes_[s][o]->unbind();
    }
    row_hits_[s]->unbind();
    row_misses_[s]->unbind();
    row_conflicts_[s]->unbind();
    admissions_[s]->unbind();
  }
  write_drains_.unbind();
  hazard_waits_.unbind();
}

// ---------------------------------------------------------------------------
// MemTarget

bool MemoryController::can_accept(const MemRequest& req) const {
  return ingress_size(index(req.stream)) < ingress_capacity_;
}

void MemoryController::accept(MemRequest&& req) {
  T3SIM_CHECK(can_accept(req), "accept() without room (call can_accept first)");
  // 2D tiles (MemRequest::rows > 1) are the L2's to split: it sends 1D line pieces.
  T3SIM_CHECK(req.rows == 1, fmt::format("2D request ({} rows of {} B) at {:#x}: memory controllers take 1D requests",
                                         req.rows, req.bytes, req.address));
  const std::uint64_t unit = map_.interleave_bytes();
  T3SIM_CHECK(req.bytes > 0 && req.address / unit == (req.address + req.bytes - 1) / unit,
              fmt::format("request [{:#x}, +{}) crosses an interleave unit of {} B", req.address, req.bytes, unit));
  const DecodedAddress d = map_.decode(req.address);
  T3SIM_CHECK(d.channel == channel_,
              fmt::format("request {:#x} belongs to channel {}, not {}", req.address, d.channel, channel_));
  Entry e;
  const std::uint32_t access = dram_.config().access_bytes;
  e.at = d.bank;
  e.bank = d.bank.bank_group * dram_.config().banks_per_group + d.bank.bank;
  e.bursts_left = (static_cast<std::uint32_t>(req.address % access) + req.bytes + access - 1) / access;
  e.arrival = cycle_now();
  e.op = req.op;
  e.stream = req.stream;
  e.address = req.address;
  e.bytes = req.bytes;
  e.has_data = !req.data.empty();
  std::uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(reqs_.size());
    reqs_.push_back(std::move(req));
    entries_.emplace_back();
    response_events_.emplace_back(*this, slot);
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    reqs_[slot] = std::move(req);
  }
  e.response_event = &response_events_[slot];
  const int s = index(e.stream);
  entries_[slot] = e;
  has_plan_ = false;  // the next tick admits it first: its scan may choose otherwise
  ingress_[s].push_back(slot);
  ++ingress_count_[s];
  ingress_occupancy_[s]->set(now(), static_cast<std::int64_t>(ingress_count_[s]));
  if (!in_tick_) wake_at(cycle_now());
}

void MemoryController::wait_for_space(MemClient* client) {
  if (std::find(waiting_clients_.begin(), waiting_clients_.end(), client) == waiting_clients_.end())
    waiting_clients_.push_back(client);
  // A client may wait with the ingress empty (the L2 keeps same-line requests in order
  // behind the other stream's): the next tick, even one with nothing to issue, tells
  // it. If that tick was skipped and is still ahead, it runs after all.
  if (skipped_tick_ahead()) wake_at(skipped_cycle_);
}

bool MemoryController::skipped_tick_ahead() const {
  return skipped_cycle_ > last_evaluated_ &&
         !sim().events().running_after(clock_.edge(skipped_cycle_), EventPriority::kTick, event_source());
}

void MemoryController::set_admission_observer(AdmissionObserver* observer) {
  observer_ = observer;
  for (int o = 0; o < kNumMemOps; ++o) observed_[o] = observer != nullptr && observer->watches(static_cast<MemOp>(o));
}

void MemoryController::kernel_begin() {
  arbiter_->on_kernel_begin(cycle_now());
  if (!idle()) wake_at(cycle_now());
}

void MemoryController::kernel_end() {
  arbiter_->on_kernel_end(cycle_now());
  if (!idle()) wake_at(cycle_now());
}

McStreamStats MemoryController::stream_stats(Stream stream) const {
  const int s = index(stream);
  McStreamStats st;
  for (int o = 0; o < kNumMemOps; ++o) {
    st.requests[o] = requests_[s][o]->value();
    st.bytes[o] = bytes_[s][o]->value();
  }
  st.row_hits = row_hits_[s]->value();
  st.row_misses = row_misses_[s]->value();
  st.row_conflicts = row_conflicts_[s]->value();
  st.latency = latency_ns_[s];
  st.dram_queue_occupancy = dram_queue_occupancy_[s];
  return st;
}

std::uint32_t MemoryController::occupancy() const {
  return static_cast<std::uint32_t>(read_q_.size() + write_q_.size());
}

bool MemoryController::idle() const {
  return ingress_size(0) == 0 && ingress_size(1) == 0 && read_q_.empty() && write_q_.empty();
}

// ---------------------------------------------------------------------------
// The cycle loop

void MemoryController::on_admission_room() {
  observer_waiting_ = false;
  wake_at(cycle_now());
}

void MemoryController::wake_at(Cycles c) {
  // One evaluation per memory cycle: a wake-up for a cycle already evaluated moves on.
  // A skipped cycle (next_cycle_with_work) counts as evaluated once its tick would have
  // run: the run is then the one in which that tick ran and did nothing.
  Cycles evaluated = last_evaluated_;
  if (skipped_cycle_ > evaluated && !skipped_tick_ahead()) evaluated = skipped_cycle_;
  if (c <= evaluated && evaluated_once_) c = evaluated + Cycles(1);
  const Tick when = clock_.edge(c);
  if (tick_event_.scheduled() && tick_event_.when() <= when) return;
  tick_cycle_ = c;
  sim().schedule(tick_event_, when);
}

void MemoryController::tick() {
  // The cycle wake_at scheduled: its edge is now (edges are at least 1 ps apart, so the
  // edge maps back to the cycle; no division).
  const Cycles now_c = tick_cycle_;
  last_evaluated_ = now_c;
  evaluated_once_ = true;
  in_tick_ = true;
  if (asleep_) {
    // Refresh went on while nothing was queued; account for it now.
    if (dram_.catch_up_refreshes(now_c) > 0) invalidate_commands(kAllBanks);  // closed every bank
    asleep_ = false;
  }
  Cycles next = kNever;
  bool progress = (ingress_size(0) > 0 || ingress_size(1) > 0) && admit(now_c);
  bool issued;
  if (!refresh_pending_ && dram_.refresh_due() > now_c) {  // refresh(), when none is due
    next = dram_.refresh_due();
    issued = false;
  } else {
    issued = refresh(now_c, next);
  }
  // An admission already makes this cycle progress, so the next tick is the next cycle
  // and the scheduler's wake-up time would go unused: it is not computed.
  const bool refreshed = issued;
  if (!issued && !refresh_pending_) {
    if (has_plan_ && plan_cycle_ == now_c && !progress) {
      issued = issue_scheduled(fr_fcfs_->choose(plan_), now_c);  // next_cycle_with_work's scan of this cycle
    } else {
      issued = schedule_command(now_c, next, /*want_next=*/!progress);
    }
  }
  has_plan_ = false;
  // Refresh is upkeep, not progress: a controller whose requests can never issue (a
  // held head) keeps refreshing, and that must not hide the stall from the watchdog.
  if (progress || (issued && !refreshed)) sim().note_progress();
  progress = progress || issued;
  in_tick_ = false;

  if (!waiting_clients_.empty() && (ingress_size(0) < ingress_capacity_ || ingress_size(1) < ingress_capacity_)) {
    retry_scratch_.swap(waiting_clients_);
    for (MemClient* c : retry_scratch_) c->on_mem_retry();  // may accept() again: that wakes us
    retry_scratch_.clear();
  }

  if (idle()) {  // nothing queued: sleep until accept()
    asleep_ = true;
    return;
  }
  if (progress) {
    // The next cycle, unless its tick would find nothing to do (issue 43: a third of
    // an H200 GEMM's events were such ticks).
    const Cycles following = now_c + Cycles(1);
    const Cycles wake = next_cycle_with_work(following);
    if (wake != following) skipped_cycle_ = following;
    wake_at(wake);
    return;
  }
  if (ingress_size(0) > 0 || ingress_size(1) > 0) {
    if (auto change = arbiter_->next_change(view(now_c))) next = std::min(next, *change);
  }
  if (next != kNever) wake_at(next);
  // else: everything waits on an event that will wake us (a response cannot unblock
  // the controller; only the arbiter's timer, DRAM timing or new requests can).
  T3SIM_CHECK(next != kNever, "requests queued but nothing can ever issue");
}

inline ArbiterView MemoryController::view(Cycles now_c) const {
  ArbiterView v;
  v.now = now_c;
  v.occupancy = occupancy();
  v.capacity = read_capacity_ + write_capacity_;
  for (int s = 0; s < kNumStreams; ++s) {
    StreamQueueState& st = v.streams[s];
    st.waiting = ingress_size(s);
    st.in_dram_queue = in_dram_queue_[s];
    if (st.waiting > 0) {
      const std::uint32_t slot = ingress_[s].front();
      const Entry& head = entries_[slot];
      st.head_arrival = head.arrival;
      st.head_fits = head.op == MemOp::kRead ? read_q_.size() < read_capacity_ : write_q_.size() < write_capacity_;
      if (st.head_fits && observed_[index(head.op)] && !observer_->can_admit(reqs_[slot])) {
        st.head_fits = false;
        st.head_observer_blocked = true;
      }
    }
  }
  return v;
}

bool MemoryController::admit(Cycles now_c) {
  if (ingress_size(0) == 0 && ingress_size(1) == 0) return false;
  ArbiterView v = view(now_c);
  if (arbiter_observes_) arbiter_->observe(v);
  const std::optional<Stream> s = arbiter_->choose(v);
  if (!observer_waiting_ && (v.streams[0].head_observer_blocked || v.streams[1].head_observer_blocked)) {
    observer_waiting_ = true;  // woken by on_admission_room()
    observer_->wait_for_room(this);
  }
  if (!s) return false;
  T3SIM_CHECK(v.eligible(*s), fmt::format("arbiter chose {} which cannot enter", to_string(*s)));
  arbiter_->on_admit(*s, v);

  const int si = index(*s);
  auto& in = ingress_[si];
  const std::uint32_t slot = in.front();
  in.pop_front();
  --ingress_count_[si];
  Entry& e = entries_[slot];
  e.seq = next_seq_++;
  e.admitted = now_c;
  QueuedRequest h;
  h.seq = e.seq;
  h.slot = slot;
  h.row = e.at.row;
  h.bank = static_cast<std::uint8_t>(e.bank);
  h.op = e.op;
  // Two reads are never ordered, and read_q_ holds only reads: a read checks write_q_.
  // Requests to overlapping bytes share their interleave unit (accept() keeps each in
  // one), and with it their bank and row: only the bank's requests to the row can be.
  for (const DramQueue* q : {&read_q_, &write_q_}) {
    if (q == &read_q_ && e.op == MemOp::kRead) continue;
    for (const QueuedRequest& older : q->banks[e.bank].requests)
      h.hazards += older.row == h.row && ordered(entry(older), e) ? 1 : 0;
  }
  if (h.hazards > 0) {
    ++counts_.hazard_waits;
    ++hazard_entries_;
  }
  DramQueue& q = e.op == MemOp::kRead ? read_q_ : write_q_;
  q.push(h);
  if (&q == &write_q_ && write_q_.size() == 1) write_front_admitted_ = now_c;
  if (observed_[index(e.op)]) observer_->on_admit(reqs_[slot]);
  ++in_dram_queue_[si];
  ++counts_.admissions[si];
  ingress_occupancy_[si]->set(now(), static_cast<std::int64_t>(ingress_count_[si]));
  set_occupancy_stats();
  if (arbiter_observes_) arbiter_->observe(view(now_c));
  return true;
}

void MemoryController::set_occupancy_stats() {
  occupancy_stat_.set(now(), occupancy());
  for (int s = 0; s < kNumStreams; ++s) dram_queue_occupancy_[s]->set(now(), in_dram_queue_[s]);
  // Timeline counters (SPEC "Outputs"), sampled at most every kTimelineSample so a
  // busy channel does not fill the trace; the stats above keep the exact history.
  constexpr Tick kTimelineSample = Tick::ns(50);
  Timeline& tl = sim().timeline();
  if (tl.enabled() && (!timeline_sampled_ || now() >= last_timeline_sample_ + kTimelineSample)) {
    if (!timeline_sampled_) timeline_track_ = tl.track(name());
    timeline_sampled_ = true;
    last_timeline_sample_ = now();
    tl.counter(timeline_track_, "compute queue", now(), in_dram_queue_[index(Stream::kCompute)]);
    tl.counter(timeline_track_, "communication queue", now(), in_dram_queue_[index(Stream::kCommunication)]);
    // Reads vs writes + updates waiting: a GEMM stage's read phase, then its bursty
    // write phase (T3 Figure 17a).
    tl.counter(timeline_track_, "read queue", now(), static_cast<double>(read_q_.size()));
    tl.counter(timeline_track_, "write queue", now(), static_cast<double>(write_q_.size()));
  }
}

// All-bank refresh: once due, no new row is opened; open banks are closed as their
// timing allows, then REF issues.
bool MemoryController::refresh(Cycles now_c, Cycles& next) {
  if (!refresh_pending_) {
    if (dram_.refresh_due() > now_c) {
      next = std::min(next, dram_.refresh_due());
      return false;
    }
    refresh_pending_ = true;
  }
  const HbmConfig& hc = dram_.config();
  if (dram_.all_banks_closed()) {
    const Cycles t = dram_.earliest(DramCommand::kRefresh, BankAddress{}, now_c);
    if (t == now_c) {
      dram_.issue(DramCommand::kRefresh, BankAddress{}, now_c);
      refresh_pending_ = false;
      return true;
    }
    next = std::min(next, t);
    return false;
  }
  for (std::uint32_t g = 0; g < hc.bank_groups; ++g) {
    for (std::uint32_t b = 0; b < hc.banks_per_group; ++b) {
      if (!dram_.is_open(g, b)) continue;
      const BankAddress at{g, b, dram_.open_row(g, b), 0};
      const Cycles t = dram_.earliest(DramCommand::kPrecharge, at, now_c);
      if (t == now_c) {
        dram_.issue(DramCommand::kPrecharge, at, now_c);
        invalidate_commands(g * hc.banks_per_group + b);
        return true;
      }
      next = std::min(next, t);
    }
  }
  return false;
}

bool MemoryController::write_waited_too_long(Cycles now_c) const {
  return !write_q_.empty() && now_c >= write_front_admitted_ + Cycles(cfg_.write_drain_timeout);
}

// Writes drain between the watermarks (or when no read waits, or, with the "drain"
// timeout action, after the timeout). With oldest-first, a write past the timeout does
// not start a drain (schedule_command).
bool MemoryController::drains_at(Cycles now_c) const {
  const bool timeout_drains = oldest_first_ == nullptr && write_waited_too_long(now_c);
  if (!draining_writes_)
    return write_q_.size() >= cfg_.write_high_watermark || timeout_drains || (read_q_.empty() && !write_q_.empty());
  return !(write_q_.empty() ||
           (write_q_.size() <= cfg_.write_low_watermark && !read_q_.empty() && !timeout_drains));
}

// The drain mode decides the active queue; the scheduler picks the command within it.
// With "oldest-first" a write past the timeout goes first.
bool MemoryController::schedule_command(Cycles now_c, Cycles& next, bool want_next) {
  const bool drain = drains_at(now_c);
  const bool stays_undrained = !drain && !draining_writes_;
  if (drain && !draining_writes_) ++counts_.write_drains;
  draining_writes_ = drain;
  if (stays_undrained && !write_q_.empty()) {
    // oldest-first: below the watermarks, a write that waited write_drain_timeout
    // cycles (the oldest, in arrival order) issues its next command as soon as timing
    // allows, and the reads go on around it. (The drain instead serves every row hit of
    // the write queue first and holds the reads for as long: on the H200 a GEMM after
    // another, whose write-backs it meets, took 1.10x its first, where the machine
    // takes 0.99x; models/mc/README.md.)
    if (oldest_first_ != nullptr && write_waited_too_long(now_c)) {
      const ScheduledCommand c = oldest_first_->schedule(write_q_, read_q_, now_c, next, want_next);
      if (c.queue != nullptr) return issue_scheduled(c, now_c);
    } else {
      next = std::min(next, write_front_admitted_ + Cycles(cfg_.write_drain_timeout));
    }
  }
  DramQueue* chosen = draining_writes_ ? &write_q_ : &read_q_;
  if (chosen->free == 0) {
    // Everything here waits on older requests in the other queue (a read behind a
    // write to the same bytes, or the reverse): serve that queue this cycle.
    chosen = chosen == &write_q_ ? &read_q_ : &write_q_;
    if (chosen->free == 0) return false;
  }
  DramQueue& other = chosen == &write_q_ ? read_q_ : write_q_;
  // FR-FCFS (the default) directly, so its scan inlines here; others through the interface.
  const ScheduledCommand c = fr_fcfs_ != nullptr ? fr_fcfs_->scan(*chosen, other, now_c, next, want_next)
                                                 : scheduler_->schedule(*chosen, other, now_c, next, want_next);
  if (c.queue == nullptr) return false;
  return issue_scheduled(c, now_c);
}

// The tick after a progress tick, at `c`, would find nothing to do when nothing can
// reach the controller before it (no request waits at the ingress, no client waits
// for room), the drain mode would not change, no refresh is due and the scheduler has
// no command for c: it would only compute when to wake, which this does instead, as
// that tick would (same state, same scan: the scan's cached bounds come out the same).
// Otherwise, and for schedulers other than FR-FCFS (no side-effect-free scan), c.
// Anything that reaches the controller meanwhile wakes it (wake_at) as it would have.
Cycles MemoryController::next_cycle_with_work(Cycles c) {
  if (fr_fcfs_ == nullptr || ingress_size(0) > 0 || ingress_size(1) > 0 || !waiting_clients_.empty() ||
      refresh_pending_ || dram_.refresh_due() <= c)
    return c;
  const bool drain = drains_at(c);
  if (drain != draining_writes_) return c;
  Cycles next = dram_.refresh_due();
  if (!drain && !write_q_.empty()) {
    if (oldest_first_ != nullptr && write_waited_too_long(c)) return c;
    next = std::min(next, write_front_admitted_ + Cycles(cfg_.write_drain_timeout));
  }
  DramQueue* chosen = drain ? &write_q_ : &read_q_;
  if (chosen->free == 0) return c;  // the other queue's turn: left to the tick
  DramQueue& other = chosen == &write_q_ ? read_q_ : write_q_;
  const ScheduledCommand planned = fr_fcfs_->look(*chosen, other, c, next);
  if (planned.queue != nullptr) {
    // The tick at c issues this unless a request arrives first (accept() drops it): the
    // scan is not made twice.
    plan_ = planned;
    plan_cycle_ = c;
    has_plan_ = true;
    return c;
  }
  if (next == kNever) return c;
  return std::max(next, c + Cycles(1));
}

bool MemoryController::issue_scheduled(const ScheduledCommand& c, Cycles now_c) {
  if (is_column(c.command)) {
    issue_column(c, now_c);
    return true;
  }
  Entry& e = entry(c.queue->banks[c.bank].requests[c.index]);
  dram_.issue(c.command, e.at, now_c);
  invalidate_commands(e.bank);  // a row opened or closed
  if (c.command == DramCommand::kActivate) {
    e.activated = true;
  } else {
    e.precharged = true;
  }
  return true;
}

void MemoryController::invalidate_commands(std::uint32_t bank) {
  for (DramQueue* q : {&read_q_, &write_q_}) {
    if (bank != kAllBanks) {
      q->bank_changed(bank);
      continue;
    }
    for (std::uint32_t b = 0; b < q->banks.size(); ++b) q->bank_changed(b);
  }
}


void MemoryController::issue_column(const ScheduledCommand& c, Cycles now_c) {
  const QueuedRequest& h = c.queue->banks[c.bank].requests[c.index];
  Entry& e = entry(h);
  const int s = index(e.stream);
  if (!e.started) {
    e.started = true;
    if (e.precharged) {
      ++counts_.row_conflicts[s];
    } else if (e.activated) {
      ++counts_.row_misses[s];
    } else {
      ++counts_.row_hits[s];
    }
  }
  const Cycles data_done = dram_.issue(c.command, e.at, now_c);
  ++e.at.column;
  // The request's next column command retires it and schedules its response event,
  // which with many controllers has left the host's caches: fetch it meanwhile.
  if (e.bursts_left == 2) __builtin_prefetch(e.response_event);
  if (--e.bursts_left == 0) {
    // The request's last column command: the near-bank ALUs apply it now, so stored
    // values follow command order (T3 §4.3: atomicity from MC queue order).
    // A timing-only request has nothing to apply: its slot stays untouched (a host cache
    // miss with many controllers). The channel stores values at channel-local addresses.
    if (e.has_data) dram_.apply(e.op, map_.channel_local(e.address), e.bytes, reqs_[h.slot].data);
    retire(*c.queue, c.bank, c.index, data_done);
  }
}

void MemoryController::retire(DramQueue& q, std::uint32_t bank, std::uint32_t i, Cycles data_done) {
  // The entry stays in place (its slot is freed by respond()).
  const std::uint32_t slot = q.banks[bank].requests[i].slot;
  const Entry& e = entries_[slot];
  const bool was_oldest = q.is_oldest(bank, i);
  q.erase(bank, i);
  // The drain timeout runs from the oldest write's admission: kept at hand, as the
  // scheduler reads it every cycle.
  if (&q == &write_q_ && was_oldest && !write_q_.empty()) write_front_admitted_ = entry(write_q_.oldest()).admitted;
  // Only an entry with hazards can be ordered behind e (it counted e when admitted),
  // only one of e's bank (admit()), and a read only behind a write (read_q_ holds only
  // reads).
  if (hazard_entries_ > 0) {
    for (DramQueue* other : {&read_q_, &write_q_}) {
      if (other == &read_q_ && e.op == MemOp::kRead) continue;
      std::vector<QueuedRequest>& same_bank = other->banks[bank].requests;
      for (std::uint32_t j = 0; j < same_bank.size(); ++j) {
        QueuedRequest& younger = same_bank[j];
        if (younger.hazards == 0 || younger.row != e.at.row) continue;
        const Entry& y = entry(younger);
        if (y.seq > e.seq && ordered(e, y)) {
          if (--younger.hazards == 0) {
            --hazard_entries_;
            other->hazards_cleared(bank, j);
          }
        }
      }
    }
  }
  const int s = index(e.stream), o = index(e.op);
  --in_dram_queue_[s];
  ++counts_.requests[s][o];
  counts_.bytes[s][o] += e.bytes;
  set_occupancy_stats();

  const Tick respond_at = clock_.edge(data_done + Cycles(cfg_.response_latency));
  const Tick arrived = clock_.edge(e.arrival);
  latency_ns_[s]->sample((respond_at - arrived).ps() / 1000);

  __builtin_prefetch(&reqs_[slot]);  // respond() moves it out response_latency cycles from now
  ++in_response_;
  last_response_ = std::max(last_response_, respond_at);
  sim().schedule(response_events_[slot], respond_at);
}

void MemoryController::respond(std::uint32_t slot) {
  MemRequest r = std::move(reqs_[slot]);
  free_slots_.push_back(slot);
  --in_response_;
  if (r.client != nullptr) r.client->on_mem_response(std::move(r));
}

void MemoryController::report_in_flight(std::vector<std::string>& out) const {
  if (idle() && in_response_ == 0) return;
  out.push_back(fmt::format("{}: ingress compute {} communication {}, read queue {}, write queue {}{}, "
                            "{} responses pending{}",
                            name(), ingress_size(0), ingress_size(1), read_q_.size(), write_q_.size(),
                            draining_writes_ ? " (draining)" : "", in_response_,
                            refresh_pending_ ? ", refresh pending" : ""));
  if (observer_waiting_) out.push_back("  an ingress head is held by the admission observer (waiting for its room)");
  auto describe = [&](const char* where, const DramQueue& q) {
    std::vector<QueuedRequest> in_order;  // admission order, over the banks
    for (const BankQueue& bank : q.banks) in_order.insert(in_order.end(), bank.requests.begin(), bank.requests.end());
    std::sort(in_order.begin(), in_order.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
    for (const QueuedRequest& r : in_order) {
      const Entry& e = entry(r);
      out.push_back(fmt::format("  {} {} {} {:#x} +{} (bg {} bank {} row {}), {} bursts left, {} hazards, since cycle {}",
                                where, to_string(e.stream), to_string(e.op), e.address, e.bytes, e.at.bank_group,
                                e.at.bank, e.at.row, e.bursts_left, r.hazards, e.arrival.count()));
    }
  };
  describe("read queue:", read_q_);
  describe("write queue:", write_q_);
}

}  // namespace t3sim
