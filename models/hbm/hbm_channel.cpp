#include "models/hbm/hbm_channel.h"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "sim/error.h"

namespace t3sim {

const char* to_string(DramCommand c) {
  switch (c) {
    case DramCommand::kActivate: return "ACT";
    case DramCommand::kPrecharge: return "PRE";
    case DramCommand::kRead: return "RD";
    case DramCommand::kWrite: return "WR";
    case DramCommand::kUpdate: return "UPD";
    case DramCommand::kRefresh: return "REF";
  }
  return "?";
}

namespace {

constexpr std::uint64_t kPageBytes = 64 * 1024;  // functional store page

struct CommandStat {
  const char* name;
  const char* description;
};
constexpr std::array<CommandStat, kNumDramCommands> kCommandStats = {{
    {"activates", "ACT commands issued (row opened)"},
    {"precharges", "PRE commands issued (row closed)"},
    {"reads", "RD column commands issued"},
    {"writes", "WR column commands issued"},
    {"updates", "UPD column commands issued (near-memory add-and-store, T3 4.3)"},
    {"refreshes", "all-bank REF commands issued"},
}};

}  // namespace

HbmChannel::HbmChannel(Component& parent, std::string_view name, const HbmConfig& cfg)
    : Component(parent, name),
      cfg_(cfg),
      refresh_due_(cfg.refresh ? Cycles(cfg.timing.tREFI) : Cycles(kNever)),
      bus_busy_(counter("data_bus_busy", "cycles",
                        "memory cycles the data bus carried read or write/update bursts")),
      refresh_busy_(counter("refresh_busy", "cycles",
                            "memory cycles the channel spent refreshing (tRFC per REF)")) {
  T3SIM_CHECK(cfg_.bank_groups > 0 && cfg_.banks_per_group > 0, "a channel needs banks");
  T3SIM_CHECK(std::has_single_bit(cfg_.value_granule), "value_granule must be a power of two");
  T3SIM_CHECK(cfg_.timing.tBL > 0, "tBL must be positive");
  banks_.resize(cfg_.banks());
  open_row_.assign(cfg_.banks(), kClosedRow);
  t_cl_ = cfg_.timing.tCL;
  t_wl_ = cfg_.timing.tWL;
  groups_.resize(cfg_.bank_groups);
  split_columns_ = cfg_.timing.tCCDS <= cfg_.timing.tCCDL && cfg_.timing.tCCDS <= cfg_.timing.tCCDWL &&
                   cfg_.timing.tWTRS <= cfg_.timing.tWTRL;
  const std::uint64_t page_bytes = std::max<std::uint64_t>(kPageBytes, cfg_.value_granule);
  granule_shift_ = static_cast<std::uint32_t>(std::countr_zero(cfg_.value_granule));
  values_ = WordStore(page_bytes >> granule_shift_);
  for (int c = 0; c < kNumDramCommands; ++c) {
    commands_[static_cast<std::size_t>(c)] =
        &counter(kCommandStats[static_cast<std::size_t>(c)].name, "commands",
                 kCommandStats[static_cast<std::size_t>(c)].description);
    commands_[static_cast<std::size_t>(c)]->bind(&command_counts_[static_cast<std::size_t>(c)]);
  }
  bus_busy_.bind(&bus_busy_cycles_);
  refresh_busy_.bind(&refresh_busy_cycles_);
}

HbmChannel::~HbmChannel() {
  for (Counter* c : commands_) c->unbind();
  bus_busy_.unbind();
  refresh_busy_.unbind();
}

// ---------------------------------------------------------------------------
// Bank state

void HbmChannel::bad_bank(const BankAddress& at) const {
  T3SIM_CHECK(at.bank_group < cfg_.bank_groups && at.bank < cfg_.banks_per_group,
              fmt::format("bank group {} bank {} outside {} x {}", at.bank_group, at.bank,
                          cfg_.bank_groups, cfg_.banks_per_group));
  internal_error(now(), name(), "bad_bank called for a valid bank", __FILE__, __LINE__);
}

bool HbmChannel::is_open(std::uint32_t bank_group, std::uint32_t bank) const {
  return open_row_[bank_index(BankAddress{bank_group, bank, 0, 0})] != kClosedRow;
}

std::uint32_t HbmChannel::open_row(std::uint32_t bank_group, std::uint32_t bank) const {
  const std::uint32_t r = open_row_[bank_index(BankAddress{bank_group, bank, 0, 0})];
  T3SIM_CHECK(r != kClosedRow, fmt::format("open_row of closed bank {}.{}", bank_group, bank));
  return r;
}

bool HbmChannel::all_banks_closed() const { return open_banks_ == 0; }

bool HbmChannel::state_allows(DramCommand cmd, const BankAddress& at) const {
  if (cmd == DramCommand::kRefresh) return open_banks_ == 0;
  const std::uint32_t r = open_row_[bank_index(at)];
  const bool open = r != kClosedRow;
  switch (cmd) {
    case DramCommand::kActivate: return !open;
    case DramCommand::kPrecharge: return open;
    case DramCommand::kRead:
    case DramCommand::kWrite:
    case DramCommand::kUpdate: return open && r == at.row;
    case DramCommand::kRefresh: break;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Timing

Cycles HbmChannel::earliest(DramCommand cmd, const BankAddress& at, Cycles now) const {
  if (cmd == DramCommand::kRefresh) return Cycles(std::max({now.count(), next_cmd_, next_ref_}));
  return earliest_in_bank(cmd, bank_index(at), at.bank_group, now);
}

std::uint64_t HbmChannel::catch_up_refreshes(Cycles now) {
  if (!cfg_.refresh) return 0;
  const HbmTimings& t = cfg_.timing;
  std::uint64_t n = 0;
  while (refresh_due_ < now) {
    const Cycle start = std::max(refresh_due_.count(), next_ref_);
    next_act_ = std::max(next_act_, start + t.tRFC);
    next_ref_ = std::max(next_ref_, start + t.tRFC);
    refresh_busy_cycles_ += t.tRFC;
    ++command_counts_[static_cast<std::size_t>(DramCommand::kRefresh)];
    refresh_due_ = refresh_due_ + Cycles(t.tREFI);
    ++n;
  }
  if (n > 0) {
    open_row_.assign(open_row_.size(), kClosedRow);  // a refresh needs every bank precharged
    open_banks_ = 0;
    update_channel_bounds();
  }
  return n;
}

void HbmChannel::raise_groups(Cycle Group::*field, std::uint32_t group, Cycle same, Cycle other) {
  for (std::uint32_t h = 0; h < groups_.size(); ++h) {
    Cycle& v = groups_[h].*field;
    v = std::max(v, h == group ? same : other);
  }
}

Cycles HbmChannel::issue(DramCommand cmd, const BankAddress& at, Cycles now) {
  const HbmTimings& t = cfg_.timing;
  const Cycle n = now.count();
  T3SIM_CHECK(n >= next_cmd_,
              fmt::format("{} at cycle {}: one command per cycle, in cycle order (last at {})",
                          to_string(cmd), n, next_cmd_ - 1));
  if (cmd == DramCommand::kRefresh) {
    T3SIM_CHECK(open_banks_ == 0, fmt::format("{} to bank group {} bank {} row {}: bank state does not allow it",
                                              to_string(cmd), at.bank_group, at.bank, at.row));
    const Cycle ready = earliest(cmd, at, now).count();
    T3SIM_CHECK(ready == n, fmt::format("{} to bank group {} bank {} at cycle {} violates timing "
                                        "(earliest {})",
                                        to_string(cmd), at.bank_group, at.bank, n, ready));
    next_cmd_ = n + 1;
    ++command_counts_[static_cast<std::size_t>(cmd)];
    next_act_ = std::max(next_act_, n + t.tRFC);
    next_ref_ = std::max(next_ref_, n + t.tRFC);
    refresh_busy_cycles_ += t.tRFC;
    if (cfg_.refresh) refresh_due_ = refresh_due_ + Cycles(t.tREFI);
    update_channel_bounds();
    return now;
  }

  const std::uint32_t i = bank_index(at);
  Bank& b = banks_[i];
  std::uint32_t& open_row = open_row_[i];
  const bool allowed = cmd == DramCommand::kActivate    ? open_row == kClosedRow
                       : cmd == DramCommand::kPrecharge ? open_row != kClosedRow
                                                        : open_row != kClosedRow && open_row == at.row;  // RD, WR, UPD
  T3SIM_CHECK(allowed, fmt::format("{} to bank group {} bank {} row {}: bank state does not allow it",
                                   to_string(cmd), at.bank_group, at.bank, at.row));
  const Cycle ready = earliest_in_bank(cmd, i, at.bank_group, now).count();
  T3SIM_CHECK(ready == n, fmt::format("{} to bank group {} bank {} at cycle {} violates timing "
                                      "(earliest {})",
                                      to_string(cmd), at.bank_group, at.bank, n, ready));
  next_cmd_ = n + 1;
  ++command_counts_[static_cast<std::size_t>(cmd)];

  const std::uint32_t g = at.bank_group;
  // Column commands raise both column constraints of every bank group: `same` for the
  // command's own group, `other` for the rest.
  auto raise_columns = [&](Cycle rd_same, Cycle rd_other, Cycle wr_same, Cycle wr_other) {
    if (split_columns_) {  // other <= same: see split_columns_
      groups_[g].next_rd = std::max(groups_[g].next_rd, rd_same);
      groups_[g].next_wr = std::max(groups_[g].next_wr, wr_same);
      col_rd_any_ = std::max(col_rd_any_, rd_other);
      col_wr_any_ = std::max(col_wr_any_, wr_other);
      return;
    }
    Group* const groups = groups_.data();
    const std::size_t n_groups = groups_.size();
    for (std::size_t h = 0; h < n_groups; ++h) {
      const bool same = h == g;
      groups[h].next_rd = std::max(groups[h].next_rd, same ? rd_same : rd_other);
      groups[h].next_wr = std::max(groups[h].next_wr, same ? wr_same : wr_other);
    }
  };
  switch (cmd) {
    case DramCommand::kActivate: {
      T3SIM_CHECK(at.row != kClosedRow, fmt::format("ACT of row {}: no such row", at.row));
      open_row = at.row;
      ++open_banks_;
      b.next_act = std::max(b.next_act, n + t.tRC);
      b.next_pre = std::max(b.next_pre, n + t.tRAS);
      b.next_col = std::max(b.next_col, n + t.tRCD);
      raise_groups(&Group::next_act, g, n + t.tRRDL, n + t.tRRDS);
      faw_[faw_head_] = n;
      faw_head_ = (faw_head_ + 1) % 4;
      if (acts_ < 4) ++acts_;
      if (acts_ == 4) faw_ready_ = faw_[faw_head_] + t.tFAW;  // oldest of the last four
      update_channel_bounds();
      return now;
    }
    case DramCommand::kPrecharge:
      open_row = kClosedRow;
      --open_banks_;
      b.next_act = std::max(b.next_act, n + t.tRP);
      next_ref_ = std::max(next_ref_, n + t.tRP);
      update_channel_bounds();
      return now;
    case DramCommand::kRead: {
      b.next_pre = std::max(b.next_pre, n + t.tRTP);
      raise_columns(n + t.tCCDL, n + t.tCCDS, n + std::max(t.tRTW, t.tCCDL), n + std::max(t.tRTW, t.tCCDS));
      const Cycle end = n + t.tCL + t.tBL;
      bus_free_ = std::max(bus_free_, end);
      bus_busy_cycles_ += t.tBL;
      update_channel_bounds();
      return Cycles(end);
    }
    case DramCommand::kWrite:
    case DramCommand::kUpdate: {
      const Cycle end = n + t.tWL + t.tBL;
      // After an UPD the same bank group waits tCCDWL (T3 Table 1) instead of tCCDL.
      const Cycle ccd_same = cmd == DramCommand::kUpdate ? t.tCCDWL : t.tCCDL;
      b.next_pre = std::max(b.next_pre, end + t.tWR);
      raise_columns(std::max(n + ccd_same, end + t.tWTRL), std::max(n + t.tCCDS, end + t.tWTRS), n + ccd_same,
                    n + t.tCCDS);
      bus_free_ = std::max(bus_free_, end);
      bus_busy_cycles_ += t.tBL;
      update_channel_bounds();
      return Cycles(end);
    }
    case DramCommand::kRefresh: break;
  }
  return now;
}

// ---------------------------------------------------------------------------
// Functional store

void HbmChannel::apply(MemOp op, std::uint64_t address, std::uint32_t bytes, Payload& data) {
  // Timing-only traffic may be any size: a dirty partial sector written back, a DMA
  // chunk of a few bytes. Only traffic carrying values must be whole words.
  if (data.empty()) return;
  const std::uint64_t mask = cfg_.value_granule - 1;
  T3SIM_CHECK((address & mask) == 0 && (bytes & mask) == 0,
              fmt::format("{} of {} B at {:#x} is not aligned to the {} B value granule",
                          to_string(op), bytes, address, cfg_.value_granule));
  const std::size_t words = bytes >> granule_shift_;
  T3SIM_CHECK(data.words.size() == words,
              fmt::format("{} of {} B carries {} words, expected {}", to_string(op), bytes,
                          data.words.size(), words));
  const std::uint64_t first = address >> granule_shift_;
  switch (op) {
    case MemOp::kRead: values_.read(first, data.words.data(), words); break;
    case MemOp::kWrite: values_.write(first, data.words.data(), words); break;
    case MemOp::kUpdate: values_.add(first, data.words.data(), words); break;
  }
}

void HbmChannel::preload(std::uint64_t address, const Payload& data) {
  T3SIM_CHECK((address & (cfg_.value_granule - 1)) == 0,
              fmt::format("preload at {:#x} is not aligned to the {} B value granule", address,
                          cfg_.value_granule));
  values_.write(address >> granule_shift_, data.words.data(), data.words.size());
}

Payload HbmChannel::peek(std::uint64_t address, std::uint32_t bytes) const {
  const std::uint64_t mask = cfg_.value_granule - 1;
  T3SIM_CHECK((address & mask) == 0 && (bytes & mask) == 0,
              fmt::format("peek of {} B at {:#x} is not aligned to the {} B value granule", bytes,
                          address, cfg_.value_granule));
  Payload out;
  out.words.assign(bytes >> granule_shift_, 0);
  values_.read(address >> granule_shift_, out.words.data(), out.words.size());
  return out;
}

}  // namespace t3sim
