// The HBM channel: every DRAM timing rule on hand-built command sequences, the
// near-bank functional store, and the presets / config checks.
#include <cstdint>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "models/hbm/hbm_channel.h"
#include "models/hbm/hbm_config.h"
#include "sim/component.h"
#include "sim/config.h"
#include "sim/error.h"
#include "sim/simulator.h"

namespace t3sim {
namespace {

using Cmd = DramCommand;

// Distinct values, so that no rule hides behind another in the tests below.
HbmConfig test_config() {
  HbmConfig cfg;
  cfg.channels = 1;
  cfg.bank_groups = 4;
  cfg.banks_per_group = 4;
  cfg.rows = 1024;
  cfg.row_bytes = 1024;
  cfg.access_bytes = 32;
  cfg.value_granule = 32;
  cfg.refresh = true;
  HbmTimings& t = cfg.timing;
  t.tRCD = 7;
  t.tRP = 5;
  t.tRAS = 17;
  t.tRC = 23;  // > tRAS + tRP, so tRC shows up on its own
  t.tCL = 9;
  t.tWL = 3;
  t.tBL = 2;
  t.tCCDS = 2;
  t.tCCDL = 3;
  t.tCCDWL = 6;
  t.tRRDS = 4;
  t.tRRDL = 6;
  t.tFAW = 29;
  t.tWTRS = 4;
  t.tWTRL = 8;
  t.tRTW = 13;
  t.tRTP = 4;
  t.tWR = 11;
  t.tREFI = 1000;
  t.tRFC = 50;
  return cfg;
}

BankAddress at(std::uint32_t bg, std::uint32_t bank, std::uint32_t row = 1, std::uint32_t col = 0) {
  return BankAddress{bg, bank, row, col};
}

class Hbm : public ::testing::Test {
 protected:
  explicit Hbm(HbmConfig cfg = test_config()) : gpu_(sim_, "gpu0"), ch_(gpu_, "hbm0", cfg) {}

  std::uint64_t earliest(Cmd c, const BankAddress& a, std::uint64_t now = 0) const {
    return ch_.earliest(c, a, Cycles(now)).count();
  }
  // Issues `c` at the earliest cycle not before `now` and returns that cycle.
  std::uint64_t issue_asap(Cmd c, const BankAddress& a, std::uint64_t now = 0) {
    const Cycles when = ch_.earliest(c, a, Cycles(now));
    ch_.issue(c, a, when);
    return when.count();
  }
  // The rule under test: `c` becomes legal exactly at `expected`, not a cycle before.
  void expect_exactly(Cmd c, const BankAddress& a, std::uint64_t expected) const {
    ASSERT_GT(expected, 0u);
    EXPECT_EQ(earliest(c, a, 0), expected) << to_string(c);
    EXPECT_EQ(earliest(c, a, expected - 1), expected) << to_string(c) << " one cycle early";
    EXPECT_EQ(earliest(c, a, expected), expected) << to_string(c);
    EXPECT_EQ(earliest(c, a, expected + 5), expected + 5) << to_string(c);
  }
  const HbmTimings& t() const { return ch_.config().timing; }
  std::uint64_t stat(const std::string& name) {
    const auto* c = dynamic_cast<const Counter*>(sim_.stats().find("gpu0.hbm0." + name));
    return c != nullptr ? c->value() : ~0ULL;
  }

  Simulator sim_;
  Component gpu_;
  HbmChannel ch_;
};

// ---------------------------------------------------------------------------
// Bank state

TEST_F(Hbm, StateAllowsRules) {
  const BankAddress a = at(1, 2, 5);
  EXPECT_TRUE(ch_.all_banks_closed());
  EXPECT_TRUE(ch_.state_allows(Cmd::kActivate, a));
  EXPECT_FALSE(ch_.state_allows(Cmd::kPrecharge, a));
  EXPECT_FALSE(ch_.state_allows(Cmd::kRead, a));
  EXPECT_FALSE(ch_.state_allows(Cmd::kWrite, a));
  EXPECT_FALSE(ch_.state_allows(Cmd::kUpdate, a));
  EXPECT_TRUE(ch_.state_allows(Cmd::kRefresh, a));

  ch_.issue(Cmd::kActivate, a, Cycles(0));
  EXPECT_TRUE(ch_.is_open(1, 2));
  EXPECT_FALSE(ch_.is_open(1, 1));
  EXPECT_EQ(ch_.open_row(1, 2), 5u);
  EXPECT_FALSE(ch_.all_banks_closed());
  EXPECT_FALSE(ch_.state_allows(Cmd::kActivate, a));
  EXPECT_TRUE(ch_.state_allows(Cmd::kPrecharge, a));
  EXPECT_TRUE(ch_.state_allows(Cmd::kRead, a));
  EXPECT_TRUE(ch_.state_allows(Cmd::kWrite, a));
  EXPECT_TRUE(ch_.state_allows(Cmd::kUpdate, a));
  EXPECT_FALSE(ch_.state_allows(Cmd::kRead, at(1, 2, 6)));  // another row: a conflict
  EXPECT_FALSE(ch_.state_allows(Cmd::kRefresh, a));        // a bank is open
  EXPECT_TRUE(ch_.state_allows(Cmd::kActivate, at(1, 3)));  // other banks are independent

  issue_asap(Cmd::kPrecharge, a);
  EXPECT_FALSE(ch_.is_open(1, 2));
  EXPECT_TRUE(ch_.all_banks_closed());
  EXPECT_TRUE(ch_.state_allows(Cmd::kRefresh, a));
}

// ---------------------------------------------------------------------------
// Bank timings

TEST_F(Hbm, TRcdActToColumn) {
  ch_.issue(Cmd::kActivate, at(0, 0), Cycles(10));
  expect_exactly(Cmd::kRead, at(0, 0), 10 + t().tRCD);
  expect_exactly(Cmd::kWrite, at(0, 0), 10 + t().tRCD);
  expect_exactly(Cmd::kUpdate, at(0, 0), 10 + t().tRCD);
}

TEST_F(Hbm, TRasActToPre) {
  ch_.issue(Cmd::kActivate, at(0, 0), Cycles(10));
  expect_exactly(Cmd::kPrecharge, at(0, 0), 10 + t().tRAS);
}

TEST_F(Hbm, TRpPreToAct) {
  ch_.issue(Cmd::kActivate, at(0, 0), Cycles(0));
  ch_.issue(Cmd::kPrecharge, at(0, 0), Cycles(40));  // long after tRAS and tRC
  expect_exactly(Cmd::kActivate, at(0, 0, 2), 40 + t().tRP);
}

TEST_F(Hbm, TRcActToActSameBank) {
  ch_.issue(Cmd::kActivate, at(0, 0), Cycles(0));
  ch_.issue(Cmd::kPrecharge, at(0, 0), Cycles(t().tRAS));  // tRAS + tRP = 22 < tRC = 23
  expect_exactly(Cmd::kActivate, at(0, 0, 2), t().tRC);
}

TEST_F(Hbm, TRtpReadToPre) {
  ch_.issue(Cmd::kActivate, at(0, 0), Cycles(0));
  ch_.issue(Cmd::kRead, at(0, 0), Cycles(20));  // after tRAS, so tRTP decides
  expect_exactly(Cmd::kPrecharge, at(0, 0), 20 + t().tRTP);
}

TEST_F(Hbm, TWrWriteAndUpdateToPre) {
  ch_.issue(Cmd::kActivate, at(0, 0), Cycles(0));
  ch_.issue(Cmd::kWrite, at(0, 0), Cycles(20));
  expect_exactly(Cmd::kPrecharge, at(0, 0), 20 + t().tWL + t().tBL + t().tWR);
  ch_.issue(Cmd::kUpdate, at(0, 0), Cycles(40));
  expect_exactly(Cmd::kPrecharge, at(0, 0), 40 + t().tWL + t().tBL + t().tWR);
}

// ---------------------------------------------------------------------------
// Activation rate

TEST_F(Hbm, TRrdsAndTRrdl) {
  ch_.issue(Cmd::kActivate, at(0, 0), Cycles(10));
  expect_exactly(Cmd::kActivate, at(1, 0), 10 + t().tRRDS);  // other bank group
  expect_exactly(Cmd::kActivate, at(3, 2), 10 + t().tRRDS);
  expect_exactly(Cmd::kActivate, at(0, 1), 10 + t().tRRDL);  // same bank group
}

TEST_F(Hbm, TFawFifthActivate) {
  // Four ACTs to four bank groups, tRRDS apart: 0, 4, 8, 12.
  for (std::uint32_t g = 0; g < 4; ++g) ch_.issue(Cmd::kActivate, at(g, 0), Cycles(g * t().tRRDS));
  // The fifth waits for the window opened by the first (tRRD alone would allow 16).
  expect_exactly(Cmd::kActivate, at(0, 1), t().tFAW);
  expect_exactly(Cmd::kActivate, at(2, 1), t().tFAW);
}

TEST_F(Hbm, TFawWindowSlides) {
  ch_.issue(Cmd::kActivate, at(0, 0), Cycles(0));
  ch_.issue(Cmd::kActivate, at(1, 0), Cycles(10));
  ch_.issue(Cmd::kActivate, at(2, 0), Cycles(14));
  ch_.issue(Cmd::kActivate, at(3, 0), Cycles(18));
  expect_exactly(Cmd::kActivate, at(0, 1), 0 + t().tFAW);  // window of the ACT at 0
  ch_.issue(Cmd::kActivate, at(0, 1), Cycles(t().tFAW));
  expect_exactly(Cmd::kActivate, at(1, 1), 10 + t().tFAW);  // now the window of the ACT at 10
}

// ---------------------------------------------------------------------------
// Column to column

class HbmColumns : public Hbm {
 protected:
  // Opens (bg0, b0), (bg0, b1), (bg1, b0); returns the first cycle all may take columns.
  std::uint64_t open_three() {
    issue_asap(Cmd::kActivate, at(0, 0));
    issue_asap(Cmd::kActivate, at(1, 0));
    const std::uint64_t last = issue_asap(Cmd::kActivate, at(0, 1));
    return last + t().tRCD + 20;
  }
};

TEST_F(HbmColumns, TCcdsAndTCcdl) {
  const std::uint64_t t0 = open_three();
  ch_.issue(Cmd::kRead, at(0, 0), Cycles(t0));
  expect_exactly(Cmd::kRead, at(1, 0), t0 + t().tCCDS);  // other bank group
  expect_exactly(Cmd::kRead, at(0, 1), t0 + t().tCCDL);  // same bank group, other bank
  expect_exactly(Cmd::kRead, at(0, 0), t0 + t().tCCDL);  // same bank
}

TEST_F(HbmColumns, WriteToWriteUsesTCcd) {
  const std::uint64_t t0 = open_three();
  ch_.issue(Cmd::kWrite, at(0, 0), Cycles(t0));
  expect_exactly(Cmd::kWrite, at(1, 0), t0 + t().tCCDS);
  expect_exactly(Cmd::kWrite, at(0, 1), t0 + t().tCCDL);
  expect_exactly(Cmd::kUpdate, at(0, 1), t0 + t().tCCDL);  // WR -> UPD: still tCCDL
}

TEST_F(HbmColumns, TWtrsAndTWtrl) {
  const std::uint64_t t0 = open_three();
  ch_.issue(Cmd::kWrite, at(0, 0), Cycles(t0));
  const std::uint64_t data_end = t0 + t().tWL + t().tBL;
  expect_exactly(Cmd::kRead, at(1, 0), data_end + t().tWTRS);
  expect_exactly(Cmd::kRead, at(0, 1), data_end + t().tWTRL);
  expect_exactly(Cmd::kRead, at(0, 0), data_end + t().tWTRL);
}

TEST_F(HbmColumns, UpdateTurnsAroundLikeAWrite) {
  const std::uint64_t t0 = open_three();
  ch_.issue(Cmd::kUpdate, at(0, 0), Cycles(t0));
  const std::uint64_t data_end = t0 + t().tWL + t().tBL;
  expect_exactly(Cmd::kRead, at(1, 0), data_end + t().tWTRS);
  expect_exactly(Cmd::kRead, at(0, 1), data_end + t().tWTRL);
}

TEST_F(HbmColumns, TRtwReadToWriteAnyBank) {
  const std::uint64_t t0 = open_three();
  ch_.issue(Cmd::kRead, at(0, 0), Cycles(t0));
  expect_exactly(Cmd::kWrite, at(1, 0), t0 + t().tRTW);
  expect_exactly(Cmd::kWrite, at(0, 1), t0 + t().tRTW);
  expect_exactly(Cmd::kUpdate, at(0, 0), t0 + t().tRTW);
}

TEST_F(HbmColumns, DataEndCycles) {
  const std::uint64_t t0 = open_three();
  EXPECT_EQ(ch_.issue(Cmd::kRead, at(0, 0), Cycles(t0)).count(), t0 + t().tCL + t().tBL);
  const std::uint64_t w = earliest(Cmd::kWrite, at(1, 0), t0);
  EXPECT_EQ(ch_.issue(Cmd::kWrite, at(1, 0), Cycles(w)).count(), w + t().tWL + t().tBL);
  const std::uint64_t u = earliest(Cmd::kUpdate, at(0, 1), w);
  EXPECT_EQ(ch_.issue(Cmd::kUpdate, at(0, 1), Cycles(u)).count(), u + t().tWL + t().tBL);
  const std::uint64_t p = earliest(Cmd::kPrecharge, at(0, 0), u);
  EXPECT_EQ(ch_.issue(Cmd::kPrecharge, at(0, 0), Cycles(p)).count(), p);
  const std::uint64_t a = earliest(Cmd::kActivate, at(2, 0), p);
  EXPECT_EQ(ch_.issue(Cmd::kActivate, at(2, 0), Cycles(a)).count(), a);
}

TEST_F(HbmColumns, OneCommandPerCycle) {
  const std::uint64_t t0 = open_three();
  ch_.issue(Cmd::kPrecharge, at(1, 0), Cycles(t0));
  // (bg0, b0) has long met tRAS: only the command bus holds its PRE back.
  EXPECT_EQ(earliest(Cmd::kPrecharge, at(0, 0), t0), t0 + 1);
  EXPECT_EQ(earliest(Cmd::kPrecharge, at(0, 0), 0), t0 + 1);
}

// tCCDWL (T3 Table 1): after an UPD the next column command to the same bank group
// waits tCCDWL; other bank groups still wait tCCDS. Write-to-read turnaround is made
// short here so that tCCDWL is what a read sees.
HbmConfig tccdwl_config() {
  HbmConfig cfg = test_config();
  cfg.timing.tWL = 0;
  cfg.timing.tBL = 1;
  cfg.timing.tWTRS = 0;
  cfg.timing.tWTRL = 0;
  return cfg;
}
class HbmTccdwl : public Hbm {
 protected:
  HbmTccdwl() : Hbm(tccdwl_config()) {}
};

TEST_F(HbmTccdwl, UpdateThenColumnSameGroupWaitsTCcdwl) {
  issue_asap(Cmd::kActivate, at(0, 0));
  issue_asap(Cmd::kActivate, at(1, 0));
  const std::uint64_t t0 = issue_asap(Cmd::kActivate, at(0, 1)) + 40;
  ch_.issue(Cmd::kUpdate, at(0, 0), Cycles(t0));
  for (Cmd c : {Cmd::kRead, Cmd::kWrite, Cmd::kUpdate}) {
    expect_exactly(c, at(0, 1), t0 + t().tCCDWL);  // same bank group, other bank
    expect_exactly(c, at(0, 0), t0 + t().tCCDWL);  // same bank
    expect_exactly(c, at(1, 0), t0 + t().tCCDS);   // other bank group
  }
  // A WR does not impose tCCDWL: the next column to its group waits tCCDL.
  ch_.issue(Cmd::kWrite, at(1, 0), Cycles(t0 + t().tCCDS));
  expect_exactly(Cmd::kWrite, at(1, 0), t0 + t().tCCDS + t().tCCDL);
}

// The data bus: bursts never overlap, even where the command rules would allow it.
HbmConfig bus_config() {
  HbmConfig cfg = test_config();
  cfg.timing.tBL = 4;
  cfg.timing.tCCDS = 1;  // shorter than a burst (the config reader rejects this)
  cfg.timing.tCCDL = 1;
  cfg.timing.tRTW = 0;
  cfg.timing.tWTRS = 0;
  cfg.timing.tWTRL = 0;
  return cfg;
}
class HbmBus : public Hbm {
 protected:
  HbmBus() : Hbm(bus_config()) {}
};

TEST_F(HbmBus, BurstsNeverOverlap) {
  issue_asap(Cmd::kActivate, at(0, 0));
  const std::uint64_t t0 = issue_asap(Cmd::kActivate, at(1, 0)) + 40;
  const std::uint64_t end = ch_.issue(Cmd::kRead, at(0, 0), Cycles(t0)).count();
  EXPECT_EQ(end, t0 + t().tCL + t().tBL);
  // Next read burst starts when this one ends: tCL later than the command.
  expect_exactly(Cmd::kRead, at(1, 0), end - t().tCL);
  // A write burst starts tWL after its command.
  expect_exactly(Cmd::kWrite, at(1, 0), end - t().tWL);
  const std::uint64_t w = end - t().tWL;
  const std::uint64_t wend = ch_.issue(Cmd::kWrite, at(1, 0), Cycles(w)).count();
  EXPECT_EQ(wend, end + t().tBL);
  expect_exactly(Cmd::kUpdate, at(0, 0), wend - t().tWL);
  EXPECT_EQ(stat("data_bus_busy"), 2u * t().tBL);
}

// ---------------------------------------------------------------------------
// Refresh

TEST_F(Hbm, RefreshNeedsTRpAfterLastPreAndBlocksActForTRfc) {
  ch_.issue(Cmd::kActivate, at(0, 0), Cycles(0));
  ch_.issue(Cmd::kActivate, at(1, 0), Cycles(t().tRRDS));
  ch_.issue(Cmd::kPrecharge, at(0, 0), Cycles(30));
  ch_.issue(Cmd::kPrecharge, at(1, 0), Cycles(35));
  ASSERT_TRUE(ch_.state_allows(Cmd::kRefresh, {}));
  expect_exactly(Cmd::kRefresh, {}, 35 + t().tRP);
  const std::uint64_t r = 35 + t().tRP;
  EXPECT_EQ(ch_.issue(Cmd::kRefresh, {}, Cycles(r)).count(), r);
  expect_exactly(Cmd::kActivate, at(0, 0), r + t().tRFC);
  expect_exactly(Cmd::kActivate, at(3, 3), r + t().tRFC);
  expect_exactly(Cmd::kRefresh, {}, r + t().tRFC);
  EXPECT_EQ(stat("refreshes"), 1u);
  EXPECT_EQ(stat("refresh_busy"), t().tRFC);
}

TEST_F(Hbm, RefreshDueCadence) {
  EXPECT_EQ(ch_.refresh_due(), Cycles(t().tREFI));
  ch_.issue(Cmd::kRefresh, {}, Cycles(t().tREFI));
  EXPECT_EQ(ch_.refresh_due(), Cycles(2ULL * t().tREFI));
  // Late refreshes do not shift the schedule: it advances by tREFI per REF.
  ch_.issue(Cmd::kRefresh, {}, Cycles(2ULL * t().tREFI + 300));
  EXPECT_EQ(ch_.refresh_due(), Cycles(3ULL * t().tREFI));
}

TEST(HbmRefreshOff, DueIsNever) {
  Simulator sim;
  Component gpu(sim, "gpu0");
  HbmConfig cfg = test_config();
  cfg.refresh = false;
  HbmChannel ch(gpu, "hbm0", cfg);
  EXPECT_EQ(ch.refresh_due(), Cycles(UINT64_MAX));
}

// ---------------------------------------------------------------------------
// Stats

TEST_F(Hbm, CommandCounters) {
  issue_asap(Cmd::kActivate, at(0, 0));
  issue_asap(Cmd::kRead, at(0, 0));
  issue_asap(Cmd::kWrite, at(0, 0));
  issue_asap(Cmd::kUpdate, at(0, 0));
  issue_asap(Cmd::kUpdate, at(0, 0));
  issue_asap(Cmd::kPrecharge, at(0, 0));
  issue_asap(Cmd::kRefresh, {});
  EXPECT_EQ(stat("activates"), 1u);
  EXPECT_EQ(stat("reads"), 1u);
  EXPECT_EQ(stat("writes"), 1u);
  EXPECT_EQ(stat("updates"), 2u);
  EXPECT_EQ(stat("precharges"), 1u);
  EXPECT_EQ(stat("refreshes"), 1u);
  EXPECT_EQ(stat("data_bus_busy"), 4u * t().tBL);
  const Stat* s = sim_.stats().find("gpu0.hbm0.activates");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->unit(), "commands");
  EXPECT_FALSE(s->description().empty());
}

// ---------------------------------------------------------------------------
// Contract violations are internal errors: exceptions the simulator reports, never aborts

using HbmInternalError = Hbm;

TEST_F(HbmInternalError, IssueBeforeEarliestThrows) {
  ch_.issue(Cmd::kActivate, at(0, 0), Cycles(0));
  EXPECT_THAT([&] { ch_.issue(Cmd::kRead, at(0, 0), Cycles(t().tRCD - 1)); }, testing::ThrowsMessage<InternalError>(testing::HasSubstr("violates timing")));
}

TEST_F(HbmInternalError, IssueAgainstBankStateThrows) {
  EXPECT_THAT([&] { ch_.issue(Cmd::kRead, at(0, 0), Cycles(0)); }, testing::ThrowsMessage<InternalError>(testing::HasSubstr("bank state does not allow")));
}

TEST_F(HbmInternalError, TwoCommandsInOneCycleThrow) {
  ch_.issue(Cmd::kActivate, at(0, 0), Cycles(10));
  EXPECT_THAT([&] { ch_.issue(Cmd::kActivate, at(1, 0), Cycles(10)); }, testing::ThrowsMessage<InternalError>(testing::HasSubstr("one command per cycle")));
  EXPECT_THAT([&] { ch_.issue(Cmd::kActivate, at(1, 0), Cycles(5)); }, testing::ThrowsMessage<InternalError>(testing::HasSubstr("one command per cycle")));
}

TEST_F(HbmInternalError, MisalignedApplyThrows) {
  Payload p;
  p.words = {1};
  EXPECT_THAT([&] { ch_.apply(MemOp::kWrite, 16, 32, p); }, testing::ThrowsMessage<InternalError>(testing::HasSubstr("not aligned")));
  EXPECT_THAT([&] { ch_.apply(MemOp::kWrite, 0, 64, p); }, testing::ThrowsMessage<InternalError>(testing::HasSubstr("carries 1 words, expected 2")));
}

// ---------------------------------------------------------------------------
// Functional store

Payload words(std::initializer_list<std::uint64_t> w) {
  Payload p;
  p.words = w;
  return p;
}

TEST_F(Hbm, WriteThenReadReturnsTheData) {
  Payload w = words({1, 2, 3, 4});
  ch_.apply(MemOp::kWrite, 4096, 128, w);
  Payload r;
  r.words.resize(4);
  ch_.apply(MemOp::kRead, 4096, 128, r);
  EXPECT_EQ(r, words({1, 2, 3, 4}));
  Payload part;
  part.words.resize(2);
  ch_.apply(MemOp::kRead, 4096 + 32, 64, part);
  EXPECT_EQ(part, words({2, 3}));
}

TEST_F(Hbm, UpdatesAdd) {
  Payload a = words({10, 20});
  Payload b = words({1, UINT64_MAX});
  ch_.apply(MemOp::kWrite, 0, 64, a);
  ch_.apply(MemOp::kUpdate, 0, 64, b);
  ch_.apply(MemOp::kUpdate, 0, 64, b);
  EXPECT_EQ(ch_.peek(0, 64), words({12, 18}));  // wraps modulo 2^64
}

TEST_F(Hbm, UpdateOfUnwrittenMemoryAddsToZero) {
  Payload u = words({5, 6, 7});
  ch_.apply(MemOp::kUpdate, 1 << 20, 96, u);
  EXPECT_EQ(ch_.peek(1 << 20, 96), words({5, 6, 7}));
  EXPECT_EQ(u, words({5, 6, 7}));  // the operand is not consumed
}

TEST_F(Hbm, UnwrittenMemoryReadsZero) {
  Payload r = words({9, 9});
  ch_.apply(MemOp::kRead, 1ULL << 40, 64, r);
  EXPECT_EQ(r, words({0, 0}));
  EXPECT_EQ(ch_.peek(1ULL << 40, 64), words({0, 0}));
}

TEST_F(Hbm, EmptyPayloadIsTimingOnly) {
  ch_.preload(0, words({7, 8}));
  Payload empty;
  ch_.apply(MemOp::kWrite, 0, 64, empty);
  ch_.apply(MemOp::kUpdate, 0, 64, empty);
  EXPECT_EQ(ch_.peek(0, 64), words({7, 8}));
  ch_.apply(MemOp::kRead, 0, 64, empty);
  EXPECT_TRUE(empty.empty());
}

TEST_F(Hbm, PreloadAndPeek) {
  ch_.preload(256, words({1, 2, 3}));
  EXPECT_EQ(ch_.peek(256, 96), words({1, 2, 3}));
  EXPECT_EQ(ch_.peek(224, 160), words({0, 1, 2, 3, 0}));
  EXPECT_EQ(ch_.peek(0, 0), Payload{});
  ch_.preload(288, words({20}));
  EXPECT_EQ(ch_.peek(256, 96), words({1, 20, 3}));
}

TEST_F(Hbm, AccessesAcrossPageBoundaries) {
  const std::uint64_t page = 64 * 1024;
  // Four words straddling the first page boundary, then a read spanning three pages.
  Payload w = words({1, 2, 3, 4});
  ch_.apply(MemOp::kWrite, page - 64, 128, w);
  Payload u = words({100, 200});
  ch_.apply(MemOp::kUpdate, 2 * page - 32, 64, u);
  Payload r;
  r.words.resize((page + 128) / 32);
  ch_.apply(MemOp::kRead, page - 64, static_cast<std::uint32_t>(page + 128), r);
  EXPECT_EQ(r.words[0], 1u);
  EXPECT_EQ(r.words[1], 2u);
  EXPECT_EQ(r.words[2], 3u);
  EXPECT_EQ(r.words[3], 4u);
  EXPECT_EQ(r.words[4], 0u);
  const std::size_t second_boundary = (page + 64) / 32;  // word index of 2 * page
  EXPECT_EQ(r.words[second_boundary - 1], 100u);
  EXPECT_EQ(r.words[second_boundary], 200u);
  EXPECT_EQ(r.words[second_boundary + 1], 0u);
  std::uint64_t sum = 0;
  for (std::uint64_t v : r.words) sum += v;
  EXPECT_EQ(sum, 1u + 2 + 3 + 4 + 100 + 200);
  // The same data seen from peek, and a huge page-aligned address works too.
  EXPECT_EQ(ch_.peek(page - 32, 64), words({2, 3}));
  ch_.preload((1ULL << 50) - 32, words({42, 43}));
  EXPECT_EQ(ch_.peek((1ULL << 50) - 32, 64), words({42, 43}));
}

// ---------------------------------------------------------------------------
// Configuration

const std::string kSourceDir = T3SIM_SOURCE_DIR;

HbmConfig load_preset(const std::string& file) {
  const ConfigTree tree = ConfigTree::load_file(kSourceDir + "/configs/memory/" + file);
  ResolvedConfig resolved;
  return read_hbm_config(ConfigNode(&tree.root(), "hbm", &resolved));
}

TEST(HbmConfigTest, Hbm2PresetIsT3Table1) {
  const HbmConfig cfg = load_preset("hbm2.yaml");
  EXPECT_EQ(cfg.standard, "HBM2");
  EXPECT_EQ(cfg.clock_hz, 1'000'000'000u);
  EXPECT_EQ(cfg.peak_bandwidth(), Bandwidth(1'024'000'000'000ULL));  // 1.024 TB/s
  EXPECT_EQ(cfg.bank_groups, 4u);
  EXPECT_EQ(cfg.timing.tCCDWL, 2 * cfg.timing.tCCDL);
  EXPECT_EQ(cfg.timing.tCCDWL, 4u);
  EXPECT_EQ(cfg.timing.tRCD, 12u);
  EXPECT_EQ(cfg.timing.tRAS, 28u);
  EXPECT_EQ(cfg.timing.tRC, 40u);
  EXPECT_EQ(cfg.channel_bytes(), 512ULL << 20);
  EXPECT_EQ(cfg.channel_bytes() * cfg.channels, 16ULL << 30);  // V100's 16 GB
  EXPECT_TRUE(cfg.refresh);
}

TEST(HbmConfigTest, Hbm3PresetIsMi300xLike) {
  const HbmConfig cfg = load_preset("hbm3.yaml");
  EXPECT_EQ(cfg.standard, "HBM3");
  EXPECT_EQ(cfg.peak_bandwidth(), Bandwidth(5'324'800'000'000ULL));
  const double tbps = static_cast<double>(cfg.peak_bandwidth().bytes_per_second()) / 1e12;
  EXPECT_NEAR(tbps, 5.3, 0.05);
  EXPECT_EQ(cfg.timing.tCCDWL, 2 * cfg.timing.tCCDL);
  EXPECT_GE(cfg.timing.tRC, cfg.timing.tRAS + cfg.timing.tRP);
}

// Streams column commands round-robin over `groups` bank groups of a preset (one open
// bank each) and returns the data bus utilization over the stream.
double stream_utilization(const std::string& preset, DramCommand cmd, std::uint32_t groups) {
  HbmConfig cfg = load_preset(preset);
  cfg.refresh = false;
  Simulator sim;
  Component gpu(sim, "gpu0");
  HbmChannel ch(gpu, "hbm0", cfg);
  Cycles now(0);
  for (std::uint32_t g = 0; g < groups; ++g) {
    now = ch.earliest(DramCommand::kActivate, at(g, 0), now);
    ch.issue(DramCommand::kActivate, at(g, 0), now);
  }
  constexpr std::uint32_t kBursts = 1000;
  Cycles first, end;
  for (std::uint32_t i = 0; i < kBursts; ++i) {
    now = ch.earliest(cmd, at(i % groups, 0), now);
    if (i == 0) first = now;
    end = ch.issue(cmd, at(i % groups, 0), now);
  }
  const std::uint64_t latency = cmd == DramCommand::kRead ? cfg.timing.tCL : cfg.timing.tWL;
  return static_cast<double>(kBursts * cfg.timing.tBL) /
         static_cast<double>((end - first).count() - latency);
}

TEST(HbmConfigTest, PresetsReachPeakAcrossBankGroups) {
  for (const char* preset : {"hbm2.yaml", "hbm3.yaml"}) {
    SCOPED_TRACE(preset);
    EXPECT_NEAR(stream_utilization(preset, DramCommand::kRead, 4), 1.0, 0.01);
    EXPECT_NEAR(stream_utilization(preset, DramCommand::kWrite, 4), 1.0, 0.01);
    // tCCDWL = 2 x tCCDL: four bank groups still hide it, two halve update bandwidth
    // against writes (T3 4.3's reason to spread updates over bank groups).
    EXPECT_NEAR(stream_utilization(preset, DramCommand::kUpdate, 4), 1.0, 0.01);
    const double wr2 = stream_utilization(preset, DramCommand::kWrite, 2);
    const double upd2 = stream_utilization(preset, DramCommand::kUpdate, 2);
    EXPECT_NEAR(wr2, 1.0, 0.01);  // tCCDL = 2 x tBL in both presets
    EXPECT_NEAR(upd2, wr2 / 2, 0.01);
  }
}

TEST(HbmConfigTest, PresetAsNestedBaseWithOverride) {
  const std::string yaml =
      "memory:\n"
      "  hbm:\n"
      "    base: ../memory/hbm2.yaml\n"
      "    refresh: false\n"
      "    tCL: 14\n";
  const ConfigTree tree = ConfigTree::parse(yaml, kSourceDir + "/configs/systems/inline.yaml");
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  const HbmConfig cfg = read_hbm_config(root.child("memory").child("hbm"));
  EXPECT_FALSE(cfg.refresh);
  EXPECT_EQ(cfg.timing.tCL, 14u);
  EXPECT_EQ(cfg.timing.tRCD, 12u);  // from the preset
  EXPECT_EQ(cfg.channels, 32u);
  EXPECT_EQ(resolved.json()["memory"]["hbm"]["row_size"], "2KiB");
  EXPECT_EQ(resolved.json()["memory"]["hbm"]["clock"], "1GHz");
}

TEST(HbmConfigTest, DefaultsWithoutASection) {
  ResolvedConfig resolved;
  const HbmConfig cfg = read_hbm_config(ConfigNode(nullptr, "hbm", &resolved));
  EXPECT_EQ(cfg.peak_bandwidth(), HbmConfig{}.peak_bandwidth());
  EXPECT_EQ(cfg.timing.tCCDWL, HbmTimings{}.tCCDWL);
}

// The "file:line: key: message" a bad `hbm:` section gives.
std::string config_error(const std::string& body) {
  const ConfigTree tree = ConfigTree::parse("hbm:\n" + body, "sys.yaml");
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  try {
    read_hbm_config(root.child("hbm"));
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError for:\n" << body;
  return "";
}

TEST(HbmConfigTest, PowersOfTwo) {
  const char* pow2 = "must be a power of two (the address map slices bits), got ";
  // (channels need not be: a count like 192 is interleaved round-robin, see test_mc.)
  EXPECT_EQ(config_error("  bank_groups: 3\n"), std::string("sys.yaml:2: hbm.bank_groups: ") + pow2 + "3");
  EXPECT_EQ(config_error("  banks_per_group: 6\n"),
            std::string("sys.yaml:2: hbm.banks_per_group: ") + pow2 + "6");
  EXPECT_EQ(config_error("  rows: 10000\n"), std::string("sys.yaml:2: hbm.rows: ") + pow2 + "10000");
  EXPECT_EQ(config_error("  row_size: 2KB\n"), std::string("sys.yaml:2: hbm.row_size: ") + pow2 + "2000");
  EXPECT_EQ(config_error("  access_size: 48\n"), std::string("sys.yaml:2: hbm.access_size: ") + pow2 + "48");
  EXPECT_EQ(config_error("  value_granule: 24\n"),
            std::string("sys.yaml:2: hbm.value_granule: ") + pow2 + "24");
}

TEST(HbmConfigTest, ConsistencyChecks) {
  EXPECT_EQ(config_error("  row_size: 1KiB\n  access_size: 2KiB\n"),
            "sys.yaml:3: hbm.access_size: must divide row_size: 2048 B does not divide 1024 B");
  EXPECT_EQ(config_error("  tRAS: 30\n  tRP: 12\n  tRC: 41\n"),
            "sys.yaml:4: hbm.tRC: must be at least tRAS + tRP: 41 < 30 + 12");
  EXPECT_EQ(config_error("  tCCDS: 3\n  tCCDL: 2\n"),
            "sys.yaml:3: hbm.tCCDL: must be at least tCCDS: 2 < 3");
  EXPECT_EQ(config_error("  tBL: 2\n  tCCDS: 1\n"),
            "sys.yaml:3: hbm.tCCDS: must be at least tBL (back-to-back bursts would overlap on the "
            "data bus): 1 < 2");
  EXPECT_EQ(config_error("  tCCDL: 3\n  tCCDWL: 2\n"),
            "sys.yaml:3: hbm.tCCDWL: must be at least tCCDL: 2 < 3");
  EXPECT_EQ(config_error("  tREFI: 200\n  tRFC: 260\n"),
            "sys.yaml:2: hbm.tREFI: must exceed tRFC when refresh is on (the channel would do "
            "nothing but refresh): 200 <= 260");
  // tFAW below 4 x tRRDS is legal (JEDEC has no such rule), and refresh off lifts tREFI.
  EXPECT_NO_THROW({
    const ConfigTree tree = ConfigTree::parse(
        "hbm:\n  tFAW: 4\n  tRRDS: 3\n  refresh: false\n  tREFI: 1\n", "sys.yaml");
    ResolvedConfig resolved;
    ConfigNode root(&tree.root(), "", &resolved);
    read_hbm_config(root.child("hbm"));
  });
}

TEST(HbmConfigTest, BadValuesAndUnknownKeys) {
  EXPECT_EQ(config_error("  bank_group: 4\n"),
            "sys.yaml:2: hbm.bank_group: unknown key (did you mean 'bank_groups'?)");
  EXPECT_EQ(config_error("  standard: DDR4\n"),
            "sys.yaml:2: hbm.standard: expected one of HBM2, HBM2E, HBM3, HBM3E; got 'DDR4'");
  EXPECT_EQ(config_error("  tBL: 0\n").rfind("sys.yaml:2: hbm.tBL: ", 0), 0u);
  EXPECT_EQ(config_error("  clock: 1GB\n").rfind("sys.yaml:2: hbm.clock: ", 0), 0u);
}

}  // namespace
}  // namespace t3sim

namespace t3sim {
namespace {

TEST(HbmRefreshCatchUp, RefreshesDueWhileIdleAreCountedAndCloseBanks) {
  Simulator sim(1);
  Component root(sim, "gpu0");
  HbmConfig cfg;
  cfg.channels = 1;
  HbmChannel ch(root, "hbm0", cfg);
  const HbmTimings& t = cfg.timing;
  ch.issue(DramCommand::kActivate, BankAddress{1, 2, 3, 0}, Cycles(0));
  EXPECT_EQ(ch.catch_up_refreshes(Cycles(t.tREFI)), 0u);  // due now, not before: the controller's job
  // Asleep until 3.5 intervals: refreshes at 1, 2 and 3 x tREFI happened meanwhile.
  const Cycles wake(t.tREFI * 3 + t.tREFI / 2);
  EXPECT_EQ(ch.catch_up_refreshes(wake), 3u);
  EXPECT_EQ(ch.refresh_due(), Cycles(t.tREFI * 4));
  EXPECT_TRUE(ch.all_banks_closed());
  const Stat* refreshes = sim.stats().find("gpu0.hbm0.refreshes");
  ASSERT_NE(refreshes, nullptr);
  EXPECT_EQ(refreshes->flat(Tick::zero()).front().second, 3);
  // Woken right after a refresh was due: it is still running, and blocks ACT until its tRFC ends.
  const Cycles soon(t.tREFI * 4 + 10);
  EXPECT_EQ(ch.catch_up_refreshes(soon), 1u);
  EXPECT_EQ(ch.earliest(DramCommand::kActivate, BankAddress{0, 0, 1, 0}, soon), Cycles(t.tREFI * 4 + t.tRFC));
}

}  // namespace
}  // namespace t3sim

namespace t3sim {
namespace {

TEST(HbmPresets, Hbm3eOfTheH200LikeGpu) {
  ConfigTree tree = ConfigTree::load_file(std::string(T3SIM_SOURCE_DIR) + "/configs/memory/hbm3e.yaml");
  ResolvedConfig resolved;
  const HbmConfig cfg = read_hbm_config(ConfigNode(&tree.root(), "hbm", &resolved));
  EXPECT_EQ(cfg.standard, "HBM3E");
  EXPECT_EQ(cfg.channels, 192u);
  EXPECT_EQ(cfg.peak_bandwidth().bytes_per_second(), 4'800'000'000'000ULL);  // H200: 4.8 TB/s
  EXPECT_EQ(cfg.timing.tCCDWL, 2 * cfg.timing.tCCDL);
}

}  // namespace
}  // namespace t3sim
