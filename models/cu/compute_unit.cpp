#include "models/cu/compute_unit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/error.h"
#include "sim/simulator.h"

namespace t3sim {

// ---------------------------------------------------------------------------
// ComputeUnit

namespace {
// Memory request tags: a load's entry in loads_; a store's WG record (it may
// outlive the slot, posted stores).
constexpr std::uint64_t kLoadBit = std::uint64_t{1} << 39;
std::uint64_t load_tag(std::uint32_t index) { return kLoadBit | index; }
std::uint32_t load_index(std::uint64_t tag) { return static_cast<std::uint32_t>(tag & (kLoadBit - 1)); }
std::uint64_t store_tag(std::uint32_t record) { return std::uint64_t{record} << 40; }
}  // namespace

ComputeUnit::ComputeUnit(Component& parent, std::string_view name, const CuConfig& cfg, MemTarget& memory,
                         FlagTable& flags)
    : Component(parent, name),
      cfg_(cfg),
      memory_(memory),
      flags_(flags),
      clock_(cfg.clock_hz),
      compute_clock_(cfg.compute_clock_hz != 0 ? cfg.compute_clock_hz : cfg.clock_hz),
      slots_(cfg.max_wgs),
      wgs_done_(counter("wgs_completed", "WGs", "workgroups that ran to completion")),
      load_bytes_(counter("load_bytes", "bytes", "bytes requested by loads")),
      store_bytes_(counter("store_bytes", "bytes", "bytes requested by stores (writes and updates)")),
      matrix_busy_(counter("matrix_busy_cycles", "cycles", "CU cycles the matrix core was reserved")),
      lds_bound_cycles_(counter("lds_bound_cycles", "cycles",
                                "CU cycles computes took beyond their matrix cycles, waiting for LDS operands")),
      issue_cycles_(counter("issue_cycles", "cycles", "non-matrix (issue) cycles of the WGs' K steps")),
      memory_refusals_(counter("memory_refusals", "requests", "memory requests refused (back-pressure)")),
      load_requests_(counter("load_requests", "requests", "load requests issued (a load op splits into load_request_bytes pieces)")),
      load_room_stalls_(counter("load_room_stalls", "requests",
                                "load requests that waited for room in the CU's in-flight load bytes (MSHRs full)")),
      load_room_stall_cycles_(counter("load_room_stall_cycles", "cycles",
                                      "CU cycles during which some WG waited for in-flight load room (MSHRs full)")),
      load_latency_(average("load_latency", "ns", "load request issue to its data landing in the CU")),
      inflight_load_bytes_stat_(time_weighted("inflight_load_bytes", "bytes", "load bytes in flight from this CU",
                                              4096, 64)),
      flag_waits_(counter("flag_waits", "ops", "wait ops that found their flag below the value and blocked")),
      flag_waiting_wgs_(time_weighted("flag_waiting_wgs", "WGs", "WGs holding their slot while they wait on a flag")),
      load_room_(cfg_.max_inflight_load_bytes, inflight_load_bytes_stat_, load_room_stalls_, load_room_stall_cycles_) {
  if (cfg_.store_bytes_per_cycle > 0)
    store_port_waits_ = &counter("store_port_waits", "stores", "stores that waited for the data port (store_bytes_per_cycle)");
  for (const bool remote : {false, true})
    for (int protocol = 0; protocol < 3; ++protocol) {
      const std::optional<WireRatio> wire = store_wire_ratio(cfg_, protocol, remote);
      T3SIM_CHECK(wire.has_value(), "a store's wire ratio does not fit 8 bits (read_cu_config refuses such a ratio)");
      store_wire_[remote][protocol] = *wire;
    }
}

bool ComputeUnit::can_host(const TraceResources& r) const {
  const std::uint64_t regs = std::uint64_t{r.threads_per_wg} * r.regs_per_thread;
  return running_ < cfg_.max_wgs && threads_used_ + r.threads_per_wg <= cfg_.max_threads &&
         registers_used_ + regs <= cfg_.registers && lds_used_ + r.lds_bytes <= cfg_.lds_bytes;
}

void ComputeUnit::launch(const WgLaunch& wg, Tick start) {
  const TraceResources& r = wg.trace->resources;
  T3SIM_CHECK(can_host(r), "launch() without room (call can_host first)");
  std::uint32_t s = 0;
  while (slots_[s].busy) ++s;
  Slot& w = slots_[s];
  w.busy = true;
  w.launch = wg;
  w.has_op = false;
  w.waiting_flag = false;
  w.starting = false;
  w.waiting_tma = false;
  w.waiting_fence = false;
  w.stored_since_fence = false;
  w.fence_done = Tick::zero();
  w.tma_issuing = false;
  w.outstanding = 0;
  w.next_piece = 0;
  w.group = 0;
  w.group_ring = 0;
  w.computes_done = 0;
  w.compute_running = false;
  w.pending_stores.clear();
  w.stages = std::max<std::uint32_t>(r.stages, 1);
  w.tma = r.tma;
  w.group_loads.assign(w.stages + 1, 0);  // reallocates only when the kernel's stages grow
  w.group_compute.resize(w.stages + 1);
  w.group_sum.resize(w.stages + 1);
  for (Payload& sum : w.group_sum) sum.words.clear();
  if (free_records_.empty()) {
    free_records_.push_back(static_cast<std::uint32_t>(records_.size()));
    records_.emplace_back();
  }
  w.record = free_records_.back();
  free_records_.pop_back();
  records_[w.record] = WgRecord{wg, static_cast<std::int32_t>(s), 0};
  w.ops.reset(*wg.trace, wg.wg);
  w.budget = std::max<std::uint32_t>(r.wfs_per_wg, 1) * cfg_.max_outstanding_per_wf;
  ++running_;
  threads_used_ += r.threads_per_wg;
  registers_used_ += static_cast<std::uint32_t>(std::uint64_t{r.threads_per_wg} * r.regs_per_thread);
  lds_used_ += r.lds_bytes;
  if (start > now()) {
    w.starting = true;
    sim().events().schedule_callback(start, [this, s] {
      slots_[s].starting = false;
      advance(s);
    });
    return;
  }
  advance(s);
}

// The WG's front end: process ops in order until one has to wait.
void ComputeUnit::advance(std::uint32_t s) {
  Slot& w = slots_[s];
  drain_stores(s);
  while (w.busy && !w.waiting_flag && !w.starting) {
    if (!w.has_op) {
      if (!w.ops.next(w.op)) break;
      w.has_op = true;
    }
    const WgOp& op = w.op;
    switch (op.kind) {
      case TraceOpKind::kLoad:
        // P tile buffers: group g reuses group g-P's, free once compute g-P is done.
        if (w.computes_done + w.stages - 1 < w.group) return;
        if (!issue_load_pieces(s)) return;
        break;
      case TraceOpKind::kCompute: {
        // Its group closes; the next one needs a free buffer too (as its loads would).
        if (w.computes_done + w.stages - 1 < w.group) return;
        // ...and no queued store may still carry the sum that buffer held.
        if (const PendingStore* oldest = oldest_pending_store(w);
            oldest != nullptr && ring(w, oldest->value_group) == ring(w, w.group + 1))
          return;
        w.group_compute[w.group_ring] = QueuedCompute{op.cycles(), op.lds_bytes(), op.issue_cycles(), op.carry()};
        ++w.group;  // later loads feed the next compute
        w.group_ring = w.group_ring == w.stages ? 0 : w.group_ring + 1;
        // Its ring entry last held group - P - 1, whose compute is done and whose
        // store (earlier in program order) was issued.
        T3SIM_CHECK(w.group_ring == ring(w, w.group) && w.group_loads[w.group_ring] == 0,
                    "a load group's buffer reused while its loads are in flight");
        w.group_sum[w.group_ring].words.clear();
        try_compute_start(s);
        break;
      }
      case TraceOpKind::kStore: {
        // Its data are the last compute's (the group before the open one). Until that
        // compute is done, or while earlier stores wait, it queues and the front end
        // goes on: one warp waits for its operands, the WG's others keep loading.
        const std::uint64_t value_group = w.group + w.stages;  // = group - 1 on the ring
        if (w.pending_stores.empty() && w.computes_done >= w.group && w.outstanding < w.budget) {
          if (store_port_busy(s)) return;
          if (!issue_memory(s, op, op.update() ? MemOp::kUpdate : MemOp::kWrite,
                            LoadPiece{0, 0, op.rows(), op.row_bytes()}, value_group))
            return;
        } else {
          w.pending_stores.push_back(PendingStore{op, w.group, value_group});
        }
        break;
      }
      case TraceOpKind::kSet:
        if (op.unfenced()) {
          // LL / LL128: the flag is part of the data's lines. It leaves right behind
          // the WG's earlier stores (once issued it follows them on the same path, so
          // it cannot arrive first), and the front end goes on meanwhile: no fence.
          if (w.computes_done < w.group || !w.pending_stores.empty()) {
            w.pending_stores.push_back(PendingStore{op, w.group, 0});
          } else {
            issue_set(op);
          }
          break;
        }
        // Release: the flag says "done" only after the WG's earlier computes finished
        // and its earlier stores were acknowledged, and then its fence's own time
        // (fence_latency) if it stored since the last one.
        if (w.computes_done < w.group || w.outstanding > 0 || !w.pending_stores.empty()) return;
        if (cfg_.fence_latency > Tick::zero() && w.stored_since_fence) {
          if (w.fence_done == Tick::zero()) {
            w.fence_done = now() + cfg_.fence_latency;
            wake_at(s, &Slot::waiting_fence, w.fence_done);
            return;
          }
          if (now() < w.fence_done) return;
        }
        w.fence_done = Tick::zero();
        w.stored_since_fence = false;
        issue_set(op);
        break;
      case TraceOpKind::kWait:
        if (flags_.get(op.flag()) < op.value()) {
          w.waiting_flag = true;
          w.has_op = false;  // the wait is satisfied when woken
          ++flag_waits_;
          flag_waiting_wgs_.add(now(), 1);
          flags_.wait(op.flag(), op.value(), [this, s] {
            slots_[s].waiting_flag = false;
            flag_waiting_wgs_.add(now(), -1);
            advance(s);
          });
          return;
        }
        break;
      case TraceOpKind::kLoop:
      case TraceOpKind::kEnd:
        break;  // never yielded by the expander
    }
    w.has_op = false;
  }
  finish_if_done(s);
}

std::uint64_t ComputeUnit::load_pieces(const WgOp& op) const {
  const std::uint64_t piece = cfg_.load_request_bytes;
  if (piece == 0) return 1;
  if (op.row_bytes() >= piece) return op.rows() * ((op.row_bytes() + piece - 1) / piece);
  const std::uint64_t rows_per_piece = piece / op.row_bytes();
  return (op.rows() + rows_per_piece - 1) / rows_per_piece;
}

// Piece `index` of a load op: whole rows grouped up to load_request_bytes, or a long
// row cut into load_request_bytes parts (a wave-wide instruction reads at most that).
ComputeUnit::LoadPiece ComputeUnit::load_piece(const WgOp& op, std::uint64_t index) const {
  const std::uint64_t piece = cfg_.load_request_bytes;
  if (piece == 0) return LoadPiece{0, 0, op.rows(), op.row_bytes()};
  if (op.row_bytes() >= piece) {
    const std::uint64_t per_row = (op.row_bytes() + piece - 1) / piece;
    const std::uint64_t offset = (index % per_row) * piece;
    return LoadPiece{index / per_row, offset, 1, std::min(piece, op.row_bytes() - offset)};
  }
  const std::uint64_t rows_per_piece = piece / op.row_bytes();
  const std::uint64_t row = index * rows_per_piece;
  return LoadPiece{row, 0, std::min(rows_per_piece, op.rows() - row), op.row_bytes()};
}

std::uint32_t ComputeUnit::load_granule(const Slot& w, const WgOp& op) const {
  const StoreRouting* routing = w.launch.routing;
  if (routing != nullptr && routing->has_values() && !routing->loads_values(op.addr())) return 0;
  return w.launch.value_granule;
}

bool ComputeUnit::issue_load_pieces(std::uint32_t s) {
  Slot& w = slots_[s];
  const std::uint64_t pieces = load_pieces(w.op);
  const std::uint32_t granule = load_granule(w, w.op);
  if (w.next_piece == 0 && granule > 0) {
    // Values: the group's sum covers the op's words; every load of a group has the
    // same size (local + received chunk), each piece adds its words in place.
    const std::uint64_t words = w.op.rows() * w.op.row_bytes() / granule;
    Payload& sum = w.group_sum[ring(w, w.group)];
    if (sum.words.empty()) sum.words.assign(words, 0);
    T3SIM_CHECK(sum.words.size() == words,
                fmt::format("{}: WG {}: loads of one group differ in size ({} vs {} words)", name(), w.launch.wg,
                            sum.words.size(), words));
  }
  if (w.tma && !w.tma_issuing && cfg_.lds_bytes_per_cycle > 0) {
    // The SM's TMA unit sends a bulk load's requests no faster than their data can
    // land in shared memory (lds_bytes_per_cycle), one load after another: the SMs'
    // tile loads reach the L2 interleaved, not as one burst per SM. (Sent at once,
    // the first SM's whole prefetch went ahead of every other SM's first K step.)
    if (tma_free_ > now()) {
      wake_at(s, &Slot::waiting_tma, tma_free_);
      return false;
    }
    const std::uint64_t bytes = w.op.rows() * w.op.row_bytes();
    tma_free_ = now() + sm_clock().duration(Cycles((bytes + cfg_.lds_bytes_per_cycle - 1) / cfg_.lds_bytes_per_cycle));
    w.tma_issuing = true;
  }
  while (w.next_piece < pieces) {
    // A WG's loads in flight are bounded by its warps' (wfs x max_outstanding_per_wf);
    // a TMA kernel's by its stages alone (the TMA unit is not a warp: copy_contention
    // .csv's bulk readers go from 6.0 to 8.6 TB/s with 2 -> 4 stages of 32 KiB per SM).
    if (!w.tma && w.outstanding >= w.budget) return false;
    const LoadPiece piece = load_piece(w.op, w.next_piece);
    const std::uint64_t bytes = piece.rows * piece.bytes;
    // The CU's in-flight load bytes (its MSHRs); a piece larger than all of them
    // still goes alone, so nothing waits forever. TMA copies (Hopper GEMMs) do not
    // hold MSHRs: their stages bound them.
    if (!w.tma && load_room_.must_wait(bytes)) {
      load_room_.wait(s, now());
      return false;
    }
    if (!issue_memory(s, w.op, MemOp::kRead, piece)) return false;
    ++w.group_loads[w.group_ring];
    ++w.next_piece;
  }
  w.next_piece = 0;
  w.tma_issuing = false;
  return true;
}

void ComputeUnit::issue_set(const WgOp& op) {
  if (op.remote()) {
    // The destination GPU adds the flag's store-and-poll time when it lands (Gpu::land_flag).
    T3SIM_CHECK(remote_ != nullptr, "a remote flag set needs the multi-GPU system");
    remote_->set_peer_flag(static_cast<std::uint32_t>(op.peer), op.flag(), op.value());
  } else if (cfg_.flag_latency > Tick::zero()) {
    sim().events().schedule_callback(now() + cfg_.flag_latency,
                                     [this, flag = op.flag(), value = op.value()] { flags_.set(flag, value); });
  } else {
    flags_.set(op.flag(), op.value());
  }
}

const ComputeUnit::PendingStore* ComputeUnit::oldest_pending_store(const Slot& w) {
  for (const PendingStore& p : w.pending_stores)
    if (p.op.kind == TraceOpKind::kStore) return &p;
  return nullptr;
}

bool ComputeUnit::store_port_busy(std::uint32_t s) {
  Slot& w = slots_[s];
  if (cfg_.store_bytes_per_cycle == 0 || w.tma || !data_port_.busy(now())) return false;
  if (!w.waiting_port) ++*store_port_waits_;
  wake_at(s, &Slot::waiting_port, data_port_.free_at());
  return true;
}

void ComputeUnit::wake_at(std::uint32_t s, bool Slot::*waiting, Tick at) {
  Slot& w = slots_[s];
  if (w.*waiting) return;  // its wake-up is already scheduled
  w.*waiting = true;
  sim().events().schedule_callback(at, [this, s, waiting] {
    slots_[s].*waiting = false;
    advance(s);
  });
}

bool ComputeUnit::drain_stores(std::uint32_t s) {
  Slot& w = slots_[s];
  while (!w.pending_stores.empty()) {
    const PendingStore& p = w.pending_stores.front();
    if (p.op.kind == TraceOpKind::kSet) {
      if (w.computes_done < p.computes) return false;
      issue_set(p.op);
      w.pending_stores.pop_front();
      continue;
    }
    if (w.computes_done < p.computes || w.outstanding >= w.budget) return false;
    if (store_port_busy(s)) return false;
    if (!issue_memory(s, p.op, p.op.update() ? MemOp::kUpdate : MemOp::kWrite,
                      LoadPiece{0, 0, p.op.rows(), p.op.row_bytes()}, p.value_group))
      return false;
    w.pending_stores.pop_front();
  }
  return true;
}

bool ComputeUnit::issue_memory(std::uint32_t s, const WgOp& op, MemOp mem_op, const LoadPiece& piece,
                               std::uint64_t value_group) {
  Slot& w = slots_[s];
  MemTarget* target = &memory_;
  const StoreRouting* routing = w.launch.routing;
  if (op.remote()) {
    T3SIM_CHECK(remote_ != nullptr && mem_op != MemOp::kRead, "a remote store needs the multi-GPU system");
    target = &remote_->peer_memory(static_cast<std::uint32_t>(op.peer));
  } else if (routing != nullptr && mem_op != MemOp::kRead) {
    // T3 remote_map (§4.4): the unmodified kernel's store leaves for the peer.
    const int peer = routing->remote_peer(w.launch.wg, op.addr());
    if (peer >= 0) {
      T3SIM_CHECK(remote_ != nullptr, "a remote-mapped store needs the multi-GPU system");
      target = &remote_->peer_memory(static_cast<std::uint32_t>(peer));
    }
  }
  // Synthetic producer values (functional T3 and fused runs): loads carry none unless
  // the routing says so, and a store whose group loaded none carries the routing's
  // values instead of a reduction of loaded words.
  std::uint32_t granule = w.launch.value_granule;
  bool synthetic = false;
  if (routing != nullptr && routing->has_values()) {
    if (mem_op == MemOp::kRead) {
      granule = load_granule(w, op);
    } else if (w.group_sum[ring(w, value_group)].words.empty()) {
      granule = 0;
      synthetic = true;
    }
  }
  MemRequest r;
  r.op = mem_op;
  r.stream = w.launch.stream;
  r.uncached = op.uncached();
  r.address = op.addr() + piece.row * op.stride() + piece.offset;
  r.bytes = static_cast<std::uint32_t>(piece.bytes);
  r.rows = static_cast<std::uint32_t>(piece.rows);
  r.row_stride = op.stride();
  r.client = this;
  r.created = now();
  const WireRatio& wire =
      store_wire_[target != &memory_][(op.flags & kTraceLl) ? 1 : (op.flags & kTraceLl128) ? 2 : 0];
  r.wire_num = wire.num;
  r.wire_den = wire.den;
  if (mem_op != MemOp::kRead && routing != nullptr) {
    // T3 tracker metadata (§4.2.1) of a mapped producer's stores.
    r.track = TrackerTag{w.launch.wg, static_cast<std::uint8_t>(op.wf >= 0 ? op.wf : 0)};
  }
  const std::uint64_t words = granule > 0 ? r.total_bytes() / granule : 0;
  if (granule > 0 && mem_op != MemOp::kRead) {
    const Payload& sum = w.group_sum[ring(w, value_group)];  // the store's compute's group
    T3SIM_CHECK(sum.words.size() == words,
                fmt::format("{}: WG {} store of {} B carries values of {} loaded words (a store must "
                            "match its group's loads)",
                            name(), w.launch.wg, r.total_bytes(), sum.words.size()));
  }
  // Targets judge by room, not by the data: the values are attached only once the
  // request is accepted, so a refused (and later retried) request copies nothing.
  if (!target->can_accept(r)) {
    if (std::find(blocked_on_memory_.begin(), blocked_on_memory_.end(), s) == blocked_on_memory_.end())
      blocked_on_memory_.push_back(s);
    ++memory_refusals_;
    target->wait_for_space(this);
    return false;
  }
  if (mem_op == MemOp::kRead) {
    if (free_loads_.empty()) {
      const auto fresh = static_cast<std::uint32_t>(loads_.size());
      free_loads_.push_back(fresh);
      loads_.emplace_back(*this, fresh);
    }
    const std::uint32_t index = free_loads_.back();
    free_loads_.pop_back();
    LoadInFlight& load = loads_[index];
    load.slot = static_cast<std::uint16_t>(s);
    load.ring = static_cast<std::uint8_t>(w.group_ring);
    load.has_data = granule > 0;
    if (granule > 0) load.first_word = (piece.row * op.row_bytes() + piece.offset) / granule;
    load.issued = now();
    r.tag = load_tag(index);
    load.mshr_bytes = w.tma ? 0 : r.total_bytes();
    load_room_.hold(load.mshr_bytes, now());
    ++load_requests_;
  } else {
    r.tag = store_tag(w.record);
    if (cfg_.store_bytes_per_cycle > 0 && !w.tma) {
      // The store's data leave through the data port (store_port_busy saw it free).
      const std::uint64_t cycles = (r.total_bytes() + cfg_.store_bytes_per_cycle - 1) / cfg_.store_bytes_per_cycle;
      data_port_.transfer(now(), sm_clock().duration(Cycles(cycles)));
    }
  }
  if (granule > 0) {
    if (mem_op == MemOp::kRead) {
      r.data.words.assign(words, 0);
    } else {
      r.data = w.group_sum[ring(w, value_group)];
    }
  } else if (synthetic && w.launch.value_granule > 0) {
    const std::uint32_t g = w.launch.value_granule;
    r.data.words.reserve(r.total_bytes() / g);
    for (std::uint32_t row = 0; row < r.rows; ++row)
      for (std::uint32_t b = 0; b < r.bytes; b += g)
        r.data.words.push_back(routing->store_value(r.address + row * r.row_stride + b));
  }
  (mem_op == MemOp::kRead ? load_bytes_ : store_bytes_) += r.total_bytes();
  target->accept(std::move(r));
  ++w.outstanding;
  if (mem_op != MemOp::kRead) {
    ++records_[w.record].stores_in_flight;
    w.stored_since_fence = true;
  }
  return true;
}

bool ComputeUnit::try_compute_start(std::uint32_t s) {
  Slot& w = slots_[s];
  if (w.compute_running || w.computes_done == w.group) return false;  // busy, or nothing queued
  const std::size_t head = ring(w, w.computes_done);
  if (w.group_loads[head] > 0) return false;  // the K-step barrier: its loads have not all landed
  const QueuedCompute& step = w.group_compute[head];
  // The matrix cores take the step's operands from the LDS as they go: the step holds
  // them for its matrix cycles or the LDS port's time for its operands, whichever is
  // longer. Then the WG spends its issue cycles (barrier, waits, the next step's first
  // LDS reads) with no matrix work, and the matrix cores are free for another WG.
  std::uint64_t held = step.cycles;
  if (cfg_.lds_bytes_per_cycle > 0) {
    const std::uint64_t lds_cycles = (step.lds_bytes + cfg_.lds_bytes_per_cycle - 1) / cfg_.lds_bytes_per_cycle;
    if (lds_cycles > held) {
      lds_bound_cycles_ += lds_cycles - held;
      held = lds_cycles;
    }
  }
  // Matrix steps (their operands read from the LDS: a GEMM's K steps) run at the
  // compute clock, the power cap's, and hold the GPU at the cap (sm_clock.h); other
  // compute (a collective's reduce, an embedding bag's adds) at the SM clock of the
  // moment. A kernel marked boost_clock draws too little power to reach the cap
  // (TraceResources).
  const bool capping = step.lds_bytes > 0 && !w.launch.trace->resources.boost_clock;
  const ClockDomain& clock = capping ? cap_clock() : sm_clock();
  // A step of no cycles (a copy's: its stores wait for its loads, nothing more) needs
  // no pipe and waits for no other WG's work.
  const Tick start = held == 0 ? now() : std::max(now(), matrix_free_);
  if (held > 0) matrix_free_ = start + clock.duration(Cycles(held));
  const Tick end = start + clock.duration(Cycles(held)) + clock.duration(Cycles(step.issue_cycles));
  if (capping && sm_clock_ != nullptr) sm_clock_->note_capping_work(start, end);
  matrix_busy_ += held;
  issue_cycles_ += step.issue_cycles;
  w.compute_running = true;
  sim().events().schedule_callback(end, [this, s] { on_compute_done(s); });
  return true;
}

void ComputeUnit::on_compute_done(std::uint32_t s) {
  Slot& w = slots_[s];
  w.compute_running = false;
  if (w.group_compute[ring(w, w.computes_done)].carry) {
    // The running sum moves on to the next group (open or closed; its ring entry was
    // cleared when this compute was queued, and its loads add in place).
    Payload& done = w.group_sum[ring(w, w.computes_done)];
    Payload& next = w.group_sum[ring(w, w.computes_done + 1)];
    if (next.words.empty()) {
      next.words = done.words;
    } else if (!done.words.empty()) {
      T3SIM_CHECK(next.words.size() == done.words.size(),
                  fmt::format("{}: WG {}: a carried sum of {} words into a group of {}", name(), w.launch.wg,
                              done.words.size(), next.words.size()));
      next.add(done);
    }
  }
  ++w.computes_done;
  sim().note_progress();
  try_compute_start(s);  // the next queued compute, if its loads have landed
  advance(s);
}

void ComputeUnit::on_mem_response(MemRequest&& req) {
  sim().note_progress();
  if (!(req.tag & kLoadBit)) {
    const auto rec = static_cast<std::uint32_t>(req.tag >> 40);
    WgRecord& r = records_[rec];
    T3SIM_CHECK(r.stores_in_flight > 0, "store response for a WG with none in flight");
    --r.stores_in_flight;
    if (r.slot < 0) {  // the WG gave its slot back: done with its last store
      if (r.stores_in_flight == 0) wg_done(rec);
      return;
    }
    const auto s = static_cast<std::uint32_t>(r.slot);
    T3SIM_CHECK(slots_[s].busy && slots_[s].outstanding > 0, "response for an idle slot");
    --slots_[s].outstanding;
    advance(s);
    return;
  }
  // A load's data cross the CU's return port (load_bytes_per_cycle, shared by its
  // WGs, first come first served) and its load pipeline (load_latency).
  const std::uint32_t index = load_index(req.tag);
  T3SIM_CHECK(index < loads_.size(), "load response with an unknown tag");
  LoadInFlight& load = loads_[index];
  if (load.has_data) load.data = std::move(req.data);
  Tick landed = now();
  if (cfg_.load_bytes_per_cycle > 0) {
    // A TMA copy (a Hopper GEMM's tile loads) lands in shared memory at its bandwidth
    // (lds_bytes_per_cycle, when set), not at the data port's load rate. It still takes
    // its turn on the CU's one port timeline (a simplification: on H200 a GEMM CTA fills
    // its SM, so no other kernel's loads or stores share that SM with it).
    const std::uint32_t rate = slots_[load.slot].tma && cfg_.lds_bytes_per_cycle > 0 ? cfg_.lds_bytes_per_cycle
                                                                                      : cfg_.load_bytes_per_cycle;
    const std::uint64_t cycles = (req.total_bytes() + rate - 1) / rate;
    landed = data_port_.transfer(landed, sm_clock().duration(Cycles(cycles)));
  }
  if (cfg_.load_latency > 0) landed += sm_clock().duration(Cycles(cfg_.load_latency));
  if (landed == now()) {
    land_load(index);
  } else {
    sim().schedule(load.landing, landed);
  }
}

void ComputeUnit::land_load(std::uint32_t index) {
  LoadInFlight& load = loads_[index];
  const std::uint32_t s = load.slot;
  Slot& w = slots_[s];
  T3SIM_CHECK(w.busy && w.outstanding > 0, "response for an idle slot");
  --w.outstanding;
  --w.group_loads[load.ring];
  if (load.has_data) {
    Payload& sum = w.group_sum[load.ring];
    T3SIM_CHECK(load.first_word + load.data.words.size() <= sum.words.size(),
                fmt::format("{}: WG {}: a load piece's words fall outside its group's sum", name(), w.launch.wg));
    for (std::size_t i = 0; i < load.data.words.size(); ++i) sum.words[load.first_word + i] += load.data.words[i];
    load.data.words.clear();
  }
  load_room_.release(load.mshr_bytes, now());
  load_latency_.sample(static_cast<double>((now() - load.issued).ps()) * 1e-3);
  free_loads_.push_back(index);
  try_compute_start(s);
  advance(s);
  wake_load_waiters();
}

// Room freed in the in-flight load bytes: the slots that wait for it try again,
// oldest first; each one refused again re-registers.
void ComputeUnit::wake_load_waiters() {
  if (std::vector<std::uint32_t>* waiting = load_room_.freed(now(), clock_))
    advance_all(*waiting, wake_scratch_, waking_);
}

// Slots refused again re-register into blocked_on_memory_.
void ComputeUnit::on_mem_retry() { advance_all(blocked_on_memory_, retry_scratch_, retrying_); }

// Runs once per landing or retry while WGs wait: the list trades places with a
// scratch buffer, so none is reallocated; a nested call (an advance that wakes
// again) uses a buffer of its own.
void ComputeUnit::advance_all(std::vector<std::uint32_t>& waiting, std::vector<std::uint32_t>& scratch, bool& busy) {
  if (busy) {
    std::vector<std::uint32_t> nested;
    nested.swap(waiting);
    for (std::uint32_t s : nested) advance(s);
    return;
  }
  busy = true;
  scratch.clear();
  scratch.swap(waiting);
  for (std::uint32_t s : scratch) advance(s);
  busy = false;
}

void ComputeUnit::finish_if_done(std::uint32_t s) {
  Slot& w = slots_[s];
  if (!w.busy || w.has_op || !w.ops.done() || w.computes_done < w.group || w.compute_running || w.waiting_flag ||
      !w.pending_stores.empty())
    return;
  const std::uint32_t stores = records_[w.record].stores_in_flight;
  // Everything answered, or (posted stores) only stores still in flight.
  if (w.outstanding > (cfg_.posted_stores ? stores : 0)) return;
  const TraceResources& r = w.launch.trace->resources;
  const WgLaunch freed = w.launch;
  w.busy = false;
  --running_;
  threads_used_ -= r.threads_per_wg;
  registers_used_ -= static_cast<std::uint32_t>(std::uint64_t{r.threads_per_wg} * r.regs_per_thread);
  lds_used_ -= r.lds_bytes;
  if (stores == 0) {
    wg_done(w.record);
  } else {
    records_[w.record].slot = -1;  // its store responses now go to the record alone
  }
  if (on_slot_free_) on_slot_free_(freed);
}

void ComputeUnit::wg_done(std::uint32_t record) {
  WgRecord& r = records_[record];
  r.slot = -1;
  const WgLaunch done = r.launch;
  free_records_.push_back(record);
  ++wgs_done_;
  if (on_wg_done_) on_wg_done_(done);
}

void ComputeUnit::report_in_flight(std::vector<std::string>& out) const {
  for (const WgRecord& r : records_) {
    if (r.slot < 0 && r.stores_in_flight > 0)
      out.push_back(fmt::format("{}: WG {} of kernel {} ended, {} stores unacknowledged", name(), r.launch.wg,
                                r.launch.kernel, r.stores_in_flight));
  }
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const Slot& w = slots_[s];
    if (!w.busy) continue;
    const bool waits_for_room = load_room_.waiting(static_cast<std::uint32_t>(s));
    out.push_back(fmt::format("{}: WG {} of kernel {}: {} requests in flight, group {}, {} computes done, {} "
                              "stores queued{}{}{}{}",
                              name(), w.launch.wg, w.launch.kernel, w.outstanding, w.group, w.computes_done,
                              w.pending_stores.size(),
                              w.compute_running ? ", computing" : "",
                              !w.compute_running && w.computes_done < w.group ? ", compute waits for its loads" : "",
                              w.waiting_flag ? ", waiting on a flag" : "",
                              waits_for_room ? ", waiting for in-flight load room" : ""));
  }
  if (load_room_.held() > 0)
    out.push_back(fmt::format("{}: {} load bytes in flight, {} WGs waiting for room", name(), load_room_.held(),
                              load_room_.waiters()));
}

}  // namespace t3sim
