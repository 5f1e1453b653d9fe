#pragma once
// The DRAM command scheduler of a memory controller: each memory cycle, which queued
// request's next DRAM command issues (T3 §4.5's controllers schedule FR-FCFS). Chosen
// by name (`memory.mc.scheduler: fr-fcfs | fcfs`); implementations in impl/, one
// registry row each in scheduler_factory.cpp.
//
//   ingress --arbiter--> DRAM queues (read | write) --scheduler (1 command / cycle)--> HBM
//
// The controller keeps the queues, decides which one is active this cycle (reads, or
// writes while it drains them between the watermarks) and issues what the scheduler
// returns; the scheduler only chooses. It is called once per evaluated memory cycle
// (one virtual call) and reads the queues itself. Each queue is kept per bank, and
// each bank caches its oldest row hit and oldest row miss with no hazards (BankQueue),
// so a decision looks at two requests per bank, not at every queued one.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "models/hbm/hbm_channel.h"
#include "models/mem/mem_request.h"
#include "sim/registry.h"
#include "sim/time.h"

namespace t3sim {

// A request in a DRAM queue, as the per-cycle scans read it (24 bytes; the rest of the
// request stays in the controller, at `slot`).
struct QueuedRequest {
  std::uint64_t seq = 0;      // admission order (over both queues and every bank)
  std::uint32_t row = 0;      // of the request's column accesses
  std::uint32_t hazards = 0;  // older queued requests to overlapping bytes (it must wait for them)
  std::uint32_t slot = 0;     // the controller's record of the request
  std::uint8_t bank = 0;      // bank index in the channel (bank_group * banks_per_group + bank)
  MemOp op = MemOp::kRead;

  // Its column command, once its row is open.
  DramCommand column_command() const {
    switch (op) {
      case MemOp::kRead: return DramCommand::kRead;
      case MemOp::kWrite: return DramCommand::kWrite;
      case MemOp::kUpdate: return DramCommand::kUpdate;
    }
    return DramCommand::kRead;
  }
};
static_assert(sizeof(QueuedRequest) == 24);

// One bank's requests in a DRAM queue, oldest first, and the two of them a scheduler
// asks for, cached with what it needs to decide on them in one cache line.
//
// Every command a request with no hazards can need is its bank's: the column command
// if its row is open (a row hit), else PRE (another row open) or ACT (none). So of a
// bank's requests with no hazards only the oldest row hit and the oldest row miss
// matter to FR-FCFS and FCFS: the others wait for the same command, whose timing
// depends on command, bank and bank group alone (HbmChannel::earliest_in_bank; a
// queue's column commands are all reads, or all writes and updates, which share their
// timing), so they issue no sooner. Both are cached (by admission number), and so is
// a lower bound of the cycle each one's command may issue: its constraints only grow
// while the bank's open row stays (issuing raises them with max), so a bound above the
// current cycle proves the command cannot issue yet without reading DRAM state.
struct alignas(64) BankQueue {
  static constexpr std::uint64_t kNone = ~std::uint64_t{0};  // no such request
  enum class Known : std::uint8_t {
    kNothing,   // the bank opened or closed: everything below is to be found again
    kCommands,  // open_row, miss_command and the bounds are current, oldest_* are not
    kOldest,    // all of it is current
  };
  std::uint64_t oldest_hit = kNone;   // seq of the oldest request with no hazards to the open row
  std::uint64_t oldest_miss = kNone;  // seq of the oldest request with no hazards to another row (any, if closed)
  std::uint64_t hit_ready = 0;        // lower bound of the cycle the column command of a hit may issue
  std::uint64_t miss_ready = 0;       // the same for miss_command
  std::uint32_t open_row = HbmChannel::kClosedRow;
  DramCommand hit_command = DramCommand::kRead;       // oldest_hit's column command
  DramCommand miss_command = DramCommand::kActivate;  // kActivate (bank closed) or kPrecharge
  Known known = Known::kNothing;
  std::uint8_t group = 0;               // the bank's bank group
  std::vector<QueuedRequest> requests;  // oldest first

  // The oldest request with no hazards (kNone if every one has some).
  std::uint64_t oldest_free() const { return std::min(oldest_hit, oldest_miss); }
  // Contract: the request with admission number `seq` is queued here. Its index.
  std::uint32_t index_of(std::uint64_t seq) const {
    std::uint32_t i = 0;
    while (requests[i].seq != seq) ++i;
    return i;
  }
  // Finds oldest_hit and oldest_miss (and, after the bank opened or closed, its open
  // row, its miss command and fresh bounds).
  void find(const HbmChannel& dram, std::uint32_t bank) {
    if (known == Known::kNothing) {
      open_row = dram.open_row_or_closed(bank);
      miss_command = open_row == HbmChannel::kClosedRow ? DramCommand::kActivate : DramCommand::kPrecharge;
      hit_ready = miss_ready = 0;
    }
    known = Known::kOldest;
    oldest_hit = oldest_miss = kNone;
    for (const QueuedRequest& r : requests) {
      note_free(r);
      if (oldest_hit != kNone && oldest_miss != kNone) break;
    }
  }
  // Request `r` of this bank has no hazards (any more): it may be the oldest of its kind.
  void note_free(const QueuedRequest& r) {
    if (known != Known::kOldest || r.hazards > 0) return;
    if (r.row == open_row) {
      if (r.seq < oldest_hit) {
        oldest_hit = r.seq;
        hit_command = r.column_command();
      }
    } else if (r.seq < oldest_miss) {
      oldest_miss = r.seq;
    }
  }
};
static_assert(sizeof(BankQueue) == 64);

// A DRAM queue: a BankQueue per bank, each in admission order (QueuedRequest::seq
// orders requests of different banks).
struct DramQueue {
  std::vector<BankQueue> banks;
  std::uint64_t occupied_banks = 0;  // bit b: banks[b] holds requests (at most 64 banks, checked by the controller)
  std::uint32_t count = 0;           // requests
  std::uint32_t free = 0;            // requests with no hazards
  std::size_t size() const { return count; }
  bool empty() const { return count == 0; }

  // Contract: called once, before any push; bank b is in group b / banks_per_group.
  void set_banks(std::uint32_t num_banks, std::uint32_t banks_per_group) {
    banks.resize(num_banks);
    for (std::uint32_t b = 0; b < num_banks; ++b) banks[b].group = static_cast<std::uint8_t>(b / banks_per_group);
  }
  // Bank b's queue with oldest_hit and oldest_miss current.
  BankQueue& found(std::uint32_t b, const HbmChannel& dram) {
    BankQueue& q = banks[b];
    if (q.known != BankQueue::Known::kOldest) q.find(dram, b);
    return q;
  }
  void push(const QueuedRequest& r) {
    BankQueue& q = banks[r.bank];
    q.requests.push_back(r);
    occupied_banks |= std::uint64_t{1} << r.bank;
    if (count++ == 0) oldest_bank_ = r.bank;
    if (r.hazards == 0) {
      ++free;
      note_free(r);
    }
    q.note_free(r);
  }
  // Whether request i of bank b is the oldest of the queue.
  bool is_oldest(std::uint32_t b, std::uint32_t i) const { return b == oldest_bank_ && i == 0; }
  // Contract: request i of bank b has no hazards (it issued).
  void erase(std::uint32_t b, std::uint32_t i) {
    BankQueue& q = banks[b];
    const std::uint64_t seq = q.requests[i].seq;
    const bool was_oldest = is_oldest(b, i);
    q.requests.erase(q.requests.begin() + static_cast<std::ptrdiff_t>(i));
    --count;
    --free;
    if (q.requests.empty()) occupied_banks &= ~(std::uint64_t{1} << b);
    if (q.known == BankQueue::Known::kOldest && (seq == q.oldest_hit || seq == q.oldest_miss))
      q.known = BankQueue::Known::kCommands;
    if (seq == oldest_free_seq_) oldest_free_known_ = false;
    if (was_oldest && count > 0) {
      // The new oldest is a bank's oldest.
      std::uint64_t oldest_seq = BankQueue::kNone;
      for (std::uint64_t m = occupied_banks; m != 0; m &= m - 1) {
        const auto bank = static_cast<std::uint32_t>(std::countr_zero(m));
        if (banks[bank].requests.front().seq < oldest_seq) {
          oldest_seq = banks[bank].requests.front().seq;
          oldest_bank_ = bank;
        }
      }
    }
  }
  // Request i of bank b waits on nothing any more.
  void hazards_cleared(std::uint32_t b, std::uint32_t i) {
    ++free;
    note_free(banks[b].requests[i]);
    banks[b].note_free(banks[b].requests[i]);
  }
  // Bank b opened or closed: its requests' commands change.
  void bank_changed(std::uint32_t b) { banks[b].known = BankQueue::Known::kNothing; }
  // The oldest request (contract: not empty).
  const QueuedRequest& oldest() const { return banks[oldest_bank_].requests.front(); }
  // The bank of the oldest request with no hazards (FCFS's), and that request's seq
  // (BankQueue::kNone if every request has hazards).
  std::pair<std::uint32_t, std::uint64_t> oldest_free(const HbmChannel& dram) {
    if (!oldest_free_known_) {
      oldest_free_seq_ = BankQueue::kNone;
      for (std::uint64_t m = occupied_banks; m != 0; m &= m - 1) {
        const auto b = static_cast<std::uint32_t>(std::countr_zero(m));
        if (found(b, dram).oldest_free() < oldest_free_seq_) {
          oldest_free_seq_ = banks[b].oldest_free();
          oldest_free_bank_ = b;
        }
      }
      oldest_free_known_ = true;
    }
    return {oldest_free_bank_, oldest_free_seq_};
  }

 private:
  void note_free(const QueuedRequest& r) {
    if (oldest_free_known_ && r.seq < oldest_free_seq_) {
      oldest_free_seq_ = r.seq;
      oldest_free_bank_ = r.bank;
    }
  }
  std::uint32_t oldest_bank_ = 0;  // the bank of the oldest request (if any): only a bank's oldest can be
  // The oldest request with no hazards, cached (which one it is does not depend on the
  // banks' state; it changes when it leaves or an older one's hazards clear).
  bool oldest_free_known_ = true;
  std::uint32_t oldest_free_bank_ = 0;
  std::uint64_t oldest_free_seq_ = BankQueue::kNone;
};

// What a scheduler decided: request `index` of bank `bank` of `queue` issues
// `command`; none if queue is nullptr.
struct ScheduledCommand {
  DramQueue* queue = nullptr;
  std::uint32_t bank = 0;
  std::uint32_t index = 0;
  DramCommand command = DramCommand::kRead;
};

class DramScheduler {
 public:
  virtual ~DramScheduler() = default;
  // Contract: the request whose next command issues at `now`, and that command (its
  // column command if its row is open, else its bank's BankQueue::miss_command), from
  // `active` (the queue the controller serves this cycle; it holds a request with no
  // hazards) or, if the policy allows, `other`; or none.
  // Never a request with hazards > 0, never a command whose timing does not allow
  // `now`. The controller issues what it returns, at `now`, so the scheduler updates
  // its own state on returning. When it returns none and want_next, it lowers `next`
  // to the earliest cycle at which one of these requests may issue if nothing else
  // changes (otherwise `next` is left as it may be).
  virtual ScheduledCommand schedule(DramQueue& active, DramQueue& other, Cycles now, Cycles& next,
                                    bool want_next) = 0;
};

// What a scheduler is built from.
struct SchedulerParams {
  const HbmChannel& dram;  // read only: open rows and timing
  std::uint32_t read_queue_size = 0;
  std::uint32_t write_queue_size = 0;
  // Column commands to an open row after which a waiting older request to another row
  // of that bank may close it (fr-fcfs: bounds its unfairness).
  std::uint32_t row_hit_cap = 0;
};

// The schedulers by name (the `scheduler:` value); each registers itself in its impl/ file.
using DramSchedulers = Registry<DramScheduler, const SchedulerParams&>;
DramSchedulers& dram_schedulers();
// Their names and one-line descriptions, sorted by name.
std::vector<RegistryEntry> scheduler_types();
// The scheduler `name` names (a UserError if none is registered by that name).
std::unique_ptr<DramScheduler> make_scheduler(std::string_view name, const SchedulerParams& params);

}  // namespace t3sim
