#pragma once
// One HBM channel: per-bank state machines and every timing constraint between DRAM
// commands, plus the near-bank ALUs of T3 §4.3 and the channel's functional store.
//
// This is the device, not the controller: it decides *when* a command is legal and
// records what each command does; the memory controller (models/mc) decides *which*
// command to issue. It schedules no events of its own, so it is unit-tested by
// handing it command sequences cycle by cycle.

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/common/payload.h"
#include "models/hbm/hbm_config.h"
#include "models/mem/mem_request.h"
#include "models/mem/word_store.h"
#include "sim/component.h"

namespace t3sim {

enum class DramCommand : std::uint8_t {
  kActivate,
  kPrecharge,
  kRead,
  kWrite,
  kUpdate,   // near-memory op-and-store: a column access with write data in, no read data out
  kRefresh,  // all-bank refresh; needs every bank precharged
};
inline constexpr int kNumDramCommands = 6;
const char* to_string(DramCommand c);
inline bool is_column(DramCommand c) {
  return c == DramCommand::kRead || c == DramCommand::kWrite || c == DramCommand::kUpdate;
}

// Where a command goes inside the channel. `column` is in access_bytes units.
struct BankAddress {
  std::uint32_t bank_group = 0;
  std::uint32_t bank = 0;  // within the group
  std::uint32_t row = 0;
  std::uint32_t column = 0;
};

class HbmChannel final : public Component {
 public:
  HbmChannel(Component& parent, std::string_view name, const HbmConfig& cfg);
  ~HbmChannel() override;

  const HbmConfig& config() const { return cfg_; }

  // ---- bank state
  bool is_open(std::uint32_t bank_group, std::uint32_t bank) const;
  // Contract: precondition is_open().
  std::uint32_t open_row(std::uint32_t bank_group, std::uint32_t bank) const;
  bool all_banks_closed() const;
  // The row in bank `bank_index` (bank_group * banks_per_group + bank), or -1 if the
  // bank is closed. Unchecked and inline: the controller's per-cycle scans call it for
  // every queued request (addresses come from the address map, always in range).
  std::int64_t row_in_buffer(std::uint32_t bank_index) const {
    const std::uint32_t r = open_row_[bank_index];
    return r == kClosedRow ? -1 : static_cast<std::int64_t>(r);
  }
  // The same as an unsigned row, kClosedRow (no row index) for a closed bank: one
  // compare tells whether a request's row is open.
  static constexpr std::uint32_t kClosedRow = ~std::uint32_t{0};
  std::uint32_t open_row_or_closed(std::uint32_t bank_index) const { return open_row_[bank_index]; }

  // Contract: true iff the bank state admits `cmd` at all: ACT needs the bank
  // closed; RD/WR/UPD need `at.row` open; PRE needs the bank open; REF needs every
  // bank closed. Says nothing about timing.
  bool state_allows(DramCommand cmd, const BankAddress& at) const;

  // Contract: the earliest cycle >= now at which `cmd` to `at` meets every timing
  // constraint given the commands issued so far (bank, bank group, tFAW window, bus
  // turnaround, refresh). Assumes state_allows(cmd, at).
  Cycles earliest(DramCommand cmd, const BankAddress& at, Cycles now) const;
  // earliest() for a command other than kRefresh to the bank with index `bank_index`
  // (bank_group * banks_per_group + bank) in `bank_group`, unchecked and inline: the
  // controller's per-cycle scans call it for every queued request.
  Cycles earliest_in_bank(DramCommand cmd, std::uint32_t bank_index, std::uint32_t bank_group,
                          Cycles now) const {
    const Bank& b = banks_[bank_index];
    const Group& g = groups_[bank_group];
    // Channel-wide bounds first (one command per cycle, bus, tFAW, other groups'
    // column spacing: folded into one value per command class at each issue).
    Cycle c = now.count();
    switch (cmd) {
      case DramCommand::kActivate: c = std::max({c, chan_act_, b.next_act, g.next_act}); break;
      case DramCommand::kPrecharge: c = std::max({c, next_cmd_, b.next_pre}); break;
      case DramCommand::kRead: c = std::max({c, chan_rd_, b.next_col, g.next_rd}); break;
      case DramCommand::kWrite:
      case DramCommand::kUpdate: c = std::max({c, chan_wr_, b.next_col, g.next_wr}); break;
      case DramCommand::kRefresh: c = std::max(c, next_cmd_); break;
    }
    return Cycles(c);
  }

  // Contract: precondition state_allows(cmd, at) && earliest(cmd, at, now) == now, and
  // `now` is not before the last issued command (one command per cycle). Applies the
  // command. Returns the cycle at which the command's work ends: for RD the last read
  // data beat, for WR/UPD the last write data beat, for ACT/PRE/REF `now`.
  Cycles issue(DramCommand cmd, const BankAddress& at, Cycles now);

  // The first lines of the state a controller's cycle reads (for host-cache
  // prefetches; stable for the channel's lifetime).
  std::array<const void*, 3> hot_lines() const {
    return {&refresh_due_, reinterpret_cast<const char*>(&refresh_due_) + 64, open_row_.data()};
  }

  // ---- refresh (tREFI cadence). When now >= refresh_due(), the controller must close
  // every bank and issue kRefresh; refresh_due() then advances by tREFI.
  Cycles refresh_due() const { return refresh_due_; }
  // Refreshes that fell due before `now` while the controller slept (an idle
  // controller schedules nothing) are taken as done in the background, each as soon
  // as it was due: they are counted, close every bank, and the last one still blocks
  // activates until its tRFC ends. Returns how many. Contract: called by a controller
  // waking from idle, with no request in flight.
  std::uint64_t catch_up_refreshes(Cycles now);

  // ---- functional store (values, T3 §4.3): applied by the controller when a
  // request's last column command issues, so memory order = command order and
  // concurrent updates are atomic. Read: fills data with the stored words (zeros where
  // nothing was written). Write: stores data. Update: adds data word by word (mod
  // 2^64) near the bank. Empty data = timing-only, no effect. Contract: address and
  // bytes are multiples of value_granule, data.words.size() == bytes / value_granule.
  void apply(MemOp op, std::uint64_t address, std::uint32_t bytes, Payload& data);
  // Outside simulated time (initial data, final checks).
  void preload(std::uint64_t address, const Payload& data);
  Payload peek(std::uint64_t address, std::uint32_t bytes) const;

 private:
  // Implementation state. Every constraint is kept as the first cycle at which a
  // command class becomes legal at some scope (bank, bank group, channel); issue()
  // raises these, earliest() takes a handful of max()es over them.
  using Cycle = std::uint64_t;
  static constexpr Cycle kNever = ~Cycle{0};

  // Whether a bank is open, and which row, is in open_row_.
  struct Bank {
    Cycle next_col = 0;  // tRCD after ACT
    Cycle next_act = 0;  // tRC after ACT, tRP after PRE
    Cycle next_pre = 0;  // tRAS after ACT, tRTP after RD, tWL + tBL + tWR after WR/UPD
  };
  struct Group {
    Cycle next_act = 0;  // tRRDL (same group) / tRRDS (other groups)
    // Column spacing: tCCDL/S, tCCDWL, tWL + tBL + tWTRL/S before RD; tCCDL/S,
    // tCCDWL, tRTW before WR/UPD. With split_columns_ only the bound a command sets
    // for its own group is kept here, the one for the other groups in col_rd_any_ /
    // col_wr_any_ (see issue()).
    Cycle next_rd = 0;
    Cycle next_wr = 0;
  };

  std::uint32_t bank_index(const BankAddress& at) const {
    if (at.bank_group >= cfg_.bank_groups || at.bank >= cfg_.banks_per_group) bad_bank(at);
    return at.bank_group * cfg_.banks_per_group + at.bank;
  }
  [[noreturn]] void bad_bank(const BankAddress& at) const;
  void raise_groups(Cycle Group::*field, std::uint32_t group, Cycle same, Cycle other);

  const HbmConfig cfg_;
  // The state the controller's per-cycle scans read, together.
  Cycles refresh_due_;
  Cycle next_cmd_ = 0;      // one command per cycle: last issued + 1
  Cycle bus_free_ = 0;      // end of the last data burst (read or write)
  Cycle next_act_ = 0;      // channel-wide ACT block (tRFC after REF)
  Cycle faw_ready_ = 0;     // oldest of the last four ACTs + tFAW
  Cycle t_cl_ = 0, t_wl_ = 0;  // cfg_.timing.tCL, tWL
  // A column command raises the column bounds of its own bank group to `same` and of
  // every other group to `other`, with other <= same whenever tCCDS <= tCCDL, tCCDWL
  // and tWTRS <= tWTRL (split_columns_; the configuration checks ask for the first
  // two). Then max(a group's own-command bound, every command's `other` bound) is
  // each group's bound, and a column command updates two values instead of every
  // group. Otherwise every group is raised and these stay 0.
  bool split_columns_ = false;
  Cycle col_rd_any_ = 0, col_wr_any_ = 0;
  // The channel-wide part of earliest() per command class, refreshed by every
  // command (all of them move next_cmd_): max of next_cmd_, the bus (a burst starts
  // tCL / tWL after its command and waits for the previous one), col_*_any_, and for
  // ACT next_act_ and faw_ready_.
  Cycle chan_rd_ = 0, chan_wr_ = 0, chan_act_ = 0;
  void update_channel_bounds() {
    chan_rd_ = std::max({next_cmd_, col_rd_any_, bus_free_ > t_cl_ ? bus_free_ - t_cl_ : 0});
    chan_wr_ = std::max({next_cmd_, col_wr_any_, bus_free_ > t_wl_ ? bus_free_ - t_wl_ : 0});
    chan_act_ = std::max({next_cmd_, next_act_, faw_ready_});
  }
  std::uint32_t open_banks_ = 0;
  std::vector<std::uint32_t> open_row_;  // per bank: its open row, kClosedRow if closed
  std::vector<Bank> banks_;
  std::vector<Group> groups_;

  Cycle next_ref_ = 0;      // tRP after the last PRE, tRFC after the last REF
  Cycle faw_[4] = {0, 0, 0, 0};  // the last four ACT cycles, oldest at faw_head_
  std::uint32_t faw_head_ = 0;
  std::uint32_t acts_ = 0;  // ACTs issued so far, saturating at 4 (tFAW needs four)

  std::uint32_t granule_shift_ = 0;
  WordStore values_{1};  // the functional contents, one word per value granule

  // The counts behind the counters (Counter::bind), here with the channel's state.
  std::array<std::uint64_t, kNumDramCommands> command_counts_{};
  std::uint64_t bus_busy_cycles_ = 0, refresh_busy_cycles_ = 0;
  std::array<Counter*, kNumDramCommands> commands_{};
  Counter& bus_busy_;
  Counter& refresh_busy_;
};

}  // namespace t3sim
