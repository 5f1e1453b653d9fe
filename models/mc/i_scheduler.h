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
// (one virtual call) and scans the queues itself, so its per-entry work inlines:
// QueuedRequest caches each request's next command and a lower bound of the cycle it
// may issue, so most entries are passed over without reading DRAM state.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "models/hbm/hbm_channel.h"
#include "models/mem/mem_request.h"
#include "sim/registry.h"
#include "sim/time.h"

namespace t3sim {

// A request in a DRAM queue, as the per-cycle scans read it (24 bytes, in queue order;
// the rest of the request stays in the controller, at `slot`).
//
// `cmd` caches the request's next DRAM command and `ready` a lower bound of the cycle
// it may issue (the max of its timing constraints when last computed). The command
// changes only when its bank opens or closes (the controller then resets cmd to
// kUnknownCommand), and while it stays the same its constraints only grow (issuing
// raises them with max, time only goes forward), so a bound above the current cycle
// proves the command cannot issue yet without reading any DRAM state.
struct QueuedRequest {
  static constexpr std::uint8_t kUnknownCommand = 0xff;  // cmd not computed
  std::uint64_t ready = 0;    // lower bound of the cycle cmd may issue (valid with cmd)
  std::uint32_t row = 0;      // of the request's column accesses
  std::uint32_t hazards = 0;  // older queued requests to overlapping bytes (it must wait for them)
  std::uint32_t slot = 0;     // the controller's record of the request
  std::uint8_t bank = 0;      // bank index in the channel (bank_group * banks_per_group + bank)
  std::uint8_t group = 0;     // bank group
  MemOp op = MemOp::kRead;
  std::uint8_t cmd = kUnknownCommand;  // the next DramCommand, or kUnknownCommand

  // The next command: ACT to a closed bank, PRE to a bank with another row open, else
  // the column command of `op`.
  DramCommand next_command(const HbmChannel& dram) const {
    const std::uint32_t open = dram.open_row_or_closed(bank);
    if (open == HbmChannel::kClosedRow) return DramCommand::kActivate;
    if (open != row) return DramCommand::kPrecharge;
    switch (op) {
      case MemOp::kRead: return DramCommand::kRead;
      case MemOp::kWrite: return DramCommand::kWrite;
      case MemOp::kUpdate: return DramCommand::kUpdate;
    }
    return DramCommand::kRead;
  }
  // The next command, cached.
  DramCommand command(const HbmChannel& dram) {
    if (cmd == kUnknownCommand) {
      cmd = static_cast<std::uint8_t>(next_command(dram));
      ready = 0;
    }
    return static_cast<DramCommand>(cmd);
  }
  // Contract: precondition command() computed. The exact earliest cycle (>= now) of
  // the command; refreshes the cached bound.
  Cycles exact_earliest(const HbmChannel& dram, Cycles now) {
    ready = dram.earliest_in_bank(static_cast<DramCommand>(cmd), bank, group, Cycles(0)).count();
    return Cycles(std::max(now.count(), ready));
  }
};
static_assert(sizeof(QueuedRequest) == 24);

// A DRAM queue in admission order (oldest first).
struct DramQueue {
  std::vector<QueuedRequest> hot;
  std::uint32_t free = 0;  // entries with no hazards
  std::size_t size() const { return hot.size(); }
  bool empty() const { return hot.empty(); }
  void push(const QueuedRequest& r) {
    hot.push_back(r);
    if (r.hazards == 0) ++free;
  }
  void erase(std::size_t i) {
    if (hot[i].hazards == 0) --free;
    hot.erase(hot.begin() + static_cast<std::ptrdiff_t>(i));
  }
};

// What a scheduler decided: entry `index` of `queue` issues its next command; none
// if queue is nullptr.
struct ScheduledCommand {
  DramQueue* queue = nullptr;
  std::size_t index = 0;
};

class DramScheduler {
 public:
  virtual ~DramScheduler() = default;
  // Contract: the request whose next command (QueuedRequest::command(), computed by
  // then) issues at `now`, from `active` (the queue the controller serves this cycle;
  // it holds a request with no hazards) or, if the policy allows, `other`; or none.
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
