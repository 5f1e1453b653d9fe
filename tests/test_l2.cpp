// The L2 cache (models/cache): tags, replacement, write policy, bypass ordering, MSHRs,
// bank timing, back-pressure and functional values, against a scripted memory side.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>

#include <fmt/format.h>

#include "models/cache/l2_cache.h"
#include "sim/config.h"
#include "sim/error.h"
#include "sim/hash.h"
#include "sim/simulator.h"

namespace t3sim {
namespace {

using ::testing::HasSubstr;

constexpr std::uint32_t kGranule = 32;
constexpr std::uint32_t kLine = 128;

// A memory side that records every request, applies its values at acceptance (so
// memory order = acceptance order, as a memory controller keeps for one address) and
// answers after a fixed latency, or, with `jitter`, a pseudo-random one (answers out
// of order, as a controller reorders different addresses). It can refuse
// (back-pressure) and bound what it holds.
class FakeMemory final : public Component, public MemTarget {
 public:
  struct Record {
    MemOp op;
    Stream stream;
    bool uncached;
    std::uint64_t address;
    std::uint32_t bytes;
    Payload data;  // as sent (a read's words are the zeros the L2 sent)
    Tick at;
  };

  FakeMemory(Component& parent, Tick latency, std::uint32_t queue_count = 1)
      : Component(parent, "mem"), queues(queue_count), latency_(latency) {}

  bool can_accept(const MemRequest& r) const override {
    const std::uint32_t q = queue_of(r);
    return !refuse && pending_.size() < capacity && static_cast<int>(q) != refused_queue &&
           (queues == 1 || in_queue_[q] < queue_capacity);
  }
  // With `queues` > 1, line l goes to queue l % queues, each holding at most
  // queue_capacity (a GPU's channels); `refused_queue` refuses one of them.
  std::uint32_t num_queues() const override { return queues; }
  std::uint32_t queue_of(const MemRequest& r) const override {
    return static_cast<std::uint32_t>((r.address / kLine) % queues);
  }
  void accept(MemRequest&& r) override {
    EXPECT_TRUE(can_accept(r));
    ++in_queue_[queue_of(r)];
    log.push_back(Record{r.op, r.stream, r.uncached, r.address, r.bytes, r.data, now()});
    for (std::size_t j = 0; j < r.data.words.size(); ++j) {
      const std::uint64_t a = r.address + j * kGranule;
      switch (r.op) {
        case MemOp::kRead: r.data.words[j] = word(a); break;
        case MemOp::kWrite: store[a] = r.data.words[j]; break;
        case MemOp::kUpdate: store[a] += r.data.words[j]; break;
      }
    }
    const std::uint64_t id = next_id_++;
    pending_.emplace(id, std::move(r));
    Tick latency = latency_;
    if (jitter) {
      lcg_ = lcg_ * 6364136223846793005ULL + 1442695040888963407ULL;
      latency = Tick::ns(1 + (lcg_ >> 33) % 300);
    }
    sim().events().schedule_callback(now() + latency, [this, id] { deliver(id); });
  }
  void wait_for_space(MemClient* c) override {
    if (std::find(waiters_.begin(), waiters_.end(), c) == waiters_.end()) waiters_.push_back(c);
  }

  // Stop refusing and tell the waiting client.
  void release() {
    refuse = false;
    refused_queue = -1;
    retry();
  }
  std::uint64_t word(std::uint64_t a) const {
    auto it = store.find(a);
    return it == store.end() ? 0 : it->second;
  }
  std::size_t count(MemOp op) const {
    std::size_t n = 0;
    for (const Record& r : log) n += r.op == op;
    return n;
  }
  void report_in_flight(std::vector<std::string>& out) const override {
    if (!pending_.empty()) out.push_back(fmt::format("{} requests pending", pending_.size()));
  }

  bool refuse = false;
  bool jitter = false;
  std::size_t capacity = SIZE_MAX;
  const std::uint32_t queues;
  std::size_t queue_capacity = SIZE_MAX;
  int refused_queue = -1;
  std::vector<Record> log;
  std::map<std::uint64_t, std::uint64_t> store;  // one word per granule address

 private:
  void deliver(std::uint64_t id) {
    auto it = pending_.find(id);
    MemRequest r = std::move(it->second);
    pending_.erase(it);
    --in_queue_[queue_of(r)];
    r.client->on_mem_response(std::move(r));
    retry();
  }
  void retry() {
    if (refuse) return;
    std::vector<MemClient*> waiting;
    waiting.swap(waiters_);
    for (MemClient* c : waiting) c->on_mem_retry();
  }
  Tick latency_;
  std::vector<std::size_t> in_queue_ = std::vector<std::size_t>(queues, 0);  // pending per queue
  std::map<std::uint64_t, MemRequest> pending_;  // by acceptance order
  std::uint64_t next_id_ = 0;
  std::uint64_t lcg_ = 1;
  std::vector<MemClient*> waiters_;
};

struct Client final : MemClient {
  explicit Client(Simulator& s) : sim(s) {}
  void on_mem_response(MemRequest&& r) override {
    at.push_back(sim.now());
    done.push_back(std::move(r));
  }
  void on_mem_retry() override {
    ++retries;
    if (on_retry) on_retry();
  }
  Simulator& sim;
  std::vector<MemRequest> done;
  std::vector<Tick> at;
  int retries = 0;
  std::function<void()> on_retry;
};

// 64 KiB, 8 banks x 16 sets x 4 ways, 1 GHz (1 cycle = 1 ns), 10-cycle hits, 2
// cycles per line and bank.
L2Config small_config() {
  L2Config c;
  c.size_bytes = 64 * 1024;
  c.banks = 8;
  c.line_bytes = kLine;
  c.assoc = 4;
  c.clock_hz = 1'000'000'000;
  c.hit_latency = 10;
  c.bank_bytes_per_cycle = 64;
  c.max_transactions = 64;
  c.max_outstanding_misses = 64;
  c.value_granule = kGranule;
  return c;
}

struct Harness {
  // `channels`: the memory side's queues (FakeMemory::queues), fixed before the L2 is built.
  explicit Harness(const L2Config& c = small_config(), Tick latency = Tick::ns(100), std::uint64_t seed = 1,
                   std::uint32_t channels = 1)
      : sim(seed), top(sim, "gpu0"), mem(top, latency, channels), l2(top, "l2", c, mem), client(sim) {}

  void issue(MemRequest r) {
    r.client = &client;
    r.created = sim.now();
    ASSERT_TRUE(l2.can_accept(r));
    l2.accept(std::move(r));
  }
  // Issue, run to the end, return the response.
  MemRequest run_one(MemRequest r) {
    const std::size_t before = client.done.size();
    issue(std::move(r));
    sim.run();
    EXPECT_EQ(client.done.size(), before + 1);
    return client.done.empty() ? MemRequest{} : client.done.back();
  }
  std::uint64_t stat(const std::string& name) {
    const auto* c = dynamic_cast<const Counter*>(sim.stats().find("gpu0.l2." + name));
    EXPECT_NE(c, nullptr) << name;
    return c != nullptr ? c->value() : 0;
  }

  Simulator sim;
  Component top;
  FakeMemory mem;
  L2Cache l2;
  Client client;
};

MemRequest read(std::uint64_t address, std::uint32_t bytes, bool functional = false,
                Stream stream = Stream::kCompute) {
  MemRequest r;
  r.op = MemOp::kRead;
  r.stream = stream;
  r.address = address;
  r.bytes = bytes;
  if (functional) r.data.words.assign(bytes / kGranule, 0);
  return r;
}
MemRequest write(std::uint64_t address, std::vector<std::uint64_t> words, Stream stream = Stream::kCompute) {
  MemRequest r;
  r.op = MemOp::kWrite;
  r.stream = stream;
  r.address = address;
  r.bytes = static_cast<std::uint32_t>(words.size() * kGranule);
  r.data.words = std::move(words);
  return r;
}
MemRequest timing_write(std::uint64_t address, std::uint32_t bytes) {
  MemRequest r;
  r.op = MemOp::kWrite;
  r.address = address;
  r.bytes = bytes;
  return r;
}
MemRequest update(std::uint64_t address, std::vector<std::uint64_t> words) {
  MemRequest r = write(address, std::move(words));
  r.op = MemOp::kUpdate;
  return r;
}
MemRequest uncached(MemRequest r) {
  r.uncached = true;
  return r;
}
std::vector<std::uint64_t> words_from(std::uint64_t first, std::size_t n) {
  std::vector<std::uint64_t> w(n);
  for (std::size_t i = 0; i < n; ++i) w[i] = first + i;
  return w;
}

// 2D tiles: `rows` rows of `row_bytes`, `stride` apart (MemRequest::rows/row_stride).
MemRequest tile(MemOp op, std::uint64_t address, std::uint32_t rows, std::uint32_t row_bytes, std::uint64_t stride) {
  MemRequest r;
  r.op = op;
  r.address = address;
  r.bytes = row_bytes;
  r.rows = rows;
  r.row_stride = stride;
  return r;
}
MemRequest tile_read(std::uint64_t address, std::uint32_t rows, std::uint32_t row_bytes, std::uint64_t stride,
                     bool functional = false) {
  MemRequest r = tile(MemOp::kRead, address, rows, row_bytes, stride);
  if (functional) r.data.words.assign(std::size_t{rows} * row_bytes / kGranule, 0);
  return r;
}
MemRequest tile_write(std::uint64_t address, std::uint32_t rows, std::uint32_t row_bytes, std::uint64_t stride,
                      std::vector<std::uint64_t> words) {
  MemRequest r = tile(MemOp::kWrite, address, rows, row_bytes, stride);
  r.data.words = std::move(words);
  return r;
}
// The granule addresses of a tile, row-major (the order of its data words).
std::vector<std::uint64_t> tile_granules(std::uint64_t address, std::uint32_t rows, std::uint32_t row_bytes,
                                         std::uint64_t stride) {
  std::vector<std::uint64_t> out;
  for (std::uint32_t r = 0; r < rows; ++r)
    for (std::uint32_t b = 0; b < row_bytes; b += kGranule) out.push_back(address + r * stride + b);
  return out;
}
// A tile's line pieces (address, bytes), row by row: the reference for the L2's split.
std::vector<std::pair<std::uint64_t, std::uint32_t>> tile_pieces(std::uint64_t address, std::uint32_t rows,
                                                                 std::uint32_t row_bytes, std::uint64_t stride) {
  std::vector<std::pair<std::uint64_t, std::uint32_t>> out;
  for (std::uint32_t r = 0; r < rows; ++r) {
    const std::uint64_t start = address + r * stride, end = start + row_bytes;
    for (std::uint64_t a = start; a < end;) {
      const std::uint64_t next = std::min(end, (a / kLine + 1) * kLine);
      out.emplace_back(a, static_cast<std::uint32_t>(next - a));
      a = next;
    }
  }
  return out;
}

// `n` line addresses that share the set of `base` (base first).
std::vector<std::uint64_t> same_set(const L2Cache& l2, std::uint64_t base, std::size_t n) {
  std::vector<std::uint64_t> out{base};
  for (std::uint64_t a = base + kLine; out.size() < n; a += kLine)
    if (l2.set_of(a) == l2.set_of(base)) out.push_back(a);
  return out;
}
std::vector<std::uint64_t> same_bank(const L2Cache& l2, std::uint64_t base, std::size_t n) {
  std::vector<std::uint64_t> out{base};
  for (std::uint64_t a = base + kLine; out.size() < n; a += kLine)
    if (l2.bank_of(a) == l2.bank_of(base)) out.push_back(a);
  return out;
}

// ---------------------------------------------------------------------------
// Hits, misses, transactions

TEST(L2, ColdMissFetchesTheLineThenHits) {
  Harness h;
  h.issue(read(0x1000, kLine));
  h.sim.run();
  ASSERT_EQ(h.mem.log.size(), 1u);
  EXPECT_EQ(h.mem.log[0].op, MemOp::kRead);
  EXPECT_EQ(h.mem.log[0].address, 0x1000u);
  EXPECT_EQ(h.mem.log[0].bytes, kLine);
  EXPECT_EQ(h.mem.log[0].at, Tick::zero());
  // Fill at 100 ns, then the hit path: 10 cycles.
  ASSERT_EQ(h.client.at.size(), 1u);
  EXPECT_EQ(h.client.at[0], Tick::ns(110));
  EXPECT_TRUE(h.l2.contains(0x1000));

  const Tick t0 = h.sim.now();  // (later than 110 ns: the watchdog's last check)
  h.issue(read(0x1000 + 32, 64));  // part of the same line
  h.sim.run();
  EXPECT_EQ(h.mem.log.size(), 1u);  // no new DRAM request
  EXPECT_EQ(h.client.at[1] - t0, Tick::ns(10));
  EXPECT_EQ(h.stat("hits.compute"), 1u);
  EXPECT_EQ(h.stat("misses.compute"), 1u);
  EXPECT_EQ(h.stat("requests.compute.read"), 2u);
  EXPECT_EQ(h.stat("bytes.compute.read"), kLine + 64u);
}

// The tag arrays, MSHRs and transaction slots come with the first request: before
// it, nothing is cached or dirty, nothing is in flight, there is nothing to write back.
TEST(L2, BeforeItsFirstRequestNothingIsCachedOrInFlight) {
  Harness h;
  EXPECT_FALSE(h.l2.contains(0x1000));
  EXPECT_FALSE(h.l2.is_dirty(0x1000));
  EXPECT_EQ(h.l2.outstanding_misses(), 0u);
  EXPECT_EQ(h.l2.transactions_in_flight(), 0u);
  EXPECT_EQ(h.l2.write_back_dirty_lines(), 0u);
  std::vector<std::string> report;
  h.l2.report_in_flight(report);
  EXPECT_TRUE(report.empty());
  h.issue(read(0x1000, kLine));
  h.sim.run();
  EXPECT_TRUE(h.l2.contains(0x1000));
}

TEST(L2, MultiLineTransactionCompletesOnceAndCountsEveryLine) {
  Harness h;
  h.run_one(read(0, 16 * kLine));  // warm lines 0..15
  EXPECT_EQ(h.mem.count(MemOp::kRead), 16u);
  EXPECT_EQ(h.client.done.size(), 1u);

  h.run_one(read(0, 32 * kLine));  // lines 0..15 hit, 16..31 miss
  EXPECT_EQ(h.client.done.size(), 2u);
  EXPECT_EQ(h.mem.count(MemOp::kRead), 32u);
  EXPECT_EQ(h.stat("hits.compute"), 16u);
  EXPECT_EQ(h.stat("misses.compute"), 32u);

  // An all-hit transaction of 32 lines costs exactly one event: its completion.
  // (The queue is run directly: Simulator::run adds its watchdog's checks.)
  const std::uint64_t events = h.sim.events().dispatched();
  const Tick start = h.sim.now();
  h.issue(read(0, 32 * kLine));
  h.sim.events().run();
  ASSERT_EQ(h.client.done.size(), 3u);
  EXPECT_EQ(h.sim.events().dispatched() - events, 1u);
  EXPECT_EQ(h.mem.count(MemOp::kRead), 32u);
  // 32 lines on 8 banks: 4 per bank, the last starting 6 cycles in, + 10.
  EXPECT_EQ(h.client.at.back() - start, Tick::ns(16));
}

TEST(L2, LruEvictsTheLeastRecentlyUsedWayOfTheSet) {
  Harness h;
  const auto a = same_set(h.l2, 0, 6);  // assoc 4
  for (int i = 0; i < 4; ++i) h.run_one(read(a[i], kLine));
  h.run_one(read(a[0], kLine));  // a0 becomes most recent: a1 is now LRU
  h.run_one(read(a[4], kLine));  // evicts a1
  EXPECT_TRUE(h.l2.contains(a[0]));
  EXPECT_FALSE(h.l2.contains(a[1]));
  for (int i : {2, 3, 4}) EXPECT_TRUE(h.l2.contains(a[i])) << i;
  EXPECT_EQ(h.stat("evictions"), 1u);

  const std::size_t reads = h.mem.count(MemOp::kRead);
  h.run_one(read(a[1], kLine));  // misses again, evicting a2 (LRU now)
  EXPECT_EQ(h.mem.count(MemOp::kRead), reads + 1);
  EXPECT_FALSE(h.l2.contains(a[2]));
  EXPECT_EQ(h.stat("evictions"), 2u);
  EXPECT_EQ(h.stat("write_backs"), 0u);  // all clean
}

TEST(L2, RandomReplacementIsDeterministicPerSeed) {
  auto victims = [](std::uint64_t seed) {
    L2Config c = small_config();
    c.replacement = "random";
    Harness h(c, Tick::ns(100), seed);
    const auto a = same_set(h.l2, 0, 24);
    for (std::uint64_t x : a) h.run_one(read(x, kLine));
    std::vector<bool> present;
    for (std::uint64_t x : a) present.push_back(h.l2.contains(x));
    return present;
  };
  EXPECT_EQ(victims(7), victims(7));
  // Not LRU: with 24 lines through 4 ways, some early line survives for some seed.
  bool non_lru = false;
  for (std::uint64_t seed = 1; seed < 8 && !non_lru; ++seed) {
    const auto p = victims(seed);
    for (int i = 0; i < 20; ++i) non_lru |= p[i];
  }
  EXPECT_TRUE(non_lru);
}

// The policies through their interface, on hand-built candidate lists (the
// replaceable ways of a full set, as pick_victim hands them over).

TEST(L2Replacement, RegistryNamesEachPolicyOnceWithADescription) {
  std::vector<std::string> names;
  for (const RegistryEntry& entry : replacement_types()) {
    names.push_back(entry.name);
    EXPECT_FALSE(entry.description.empty()) << entry.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"lru", "random"}));
  EXPECT_THROW(make_replacement("fifo", 1), UserError);
}

TEST(L2Replacement, LruEvictsTheCandidateUsedLongestAgoFirstOnATie) {
  const auto lru = make_replacement("lru", 0);
  // Ways 1 and 3 are being filled (not candidates); way 2 was used longest ago.
  const std::vector<ReplacementCandidate> set = {{0, 40}, {2, 7}, {4, 12}, {5, 90}};
  EXPECT_EQ(lru->victim(set), 1u);
  EXPECT_EQ(lru->victim(set), 1u);  // no state of its own: the same set, the same victim
  const std::vector<ReplacementCandidate> tie = {{0, 40}, {1, 5}, {2, 5}};
  EXPECT_EQ(lru->victim(tie), 1u);
  EXPECT_EQ(lru->victim(std::vector<ReplacementCandidate>{{6, 3}}), 0u);
}

TEST(L2Replacement, RandomIsDeterministicPerSeedAndSpreadsOverTheCandidates) {
  const std::vector<ReplacementCandidate> set = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 8}};
  auto draws = [&](std::uint64_t seed) {
    const auto random = make_replacement("random", seed);
    std::vector<std::size_t> picks;
    for (int i = 0; i < 64; ++i) picks.push_back(random->victim(set));
    return picks;
  };
  const std::vector<std::size_t> a = draws(42);
  EXPECT_EQ(a, draws(42));
  EXPECT_NE(a, draws(43));
  // The splitmix64 stream from the seed (results depend on it staying the same).
  EXPECT_EQ(a[0], splitmix64(42) % set.size());
  EXPECT_EQ(a[1], splitmix64(42 + 0x9E3779B97F4A7C15ULL) % set.size());
  std::set<std::size_t> distinct(a.begin(), a.end());
  EXPECT_EQ(distinct.size(), set.size());  // not the oldest, not one way: every way
}

// ---------------------------------------------------------------------------
// Write policy

TEST(L2, DirtyEvictionWritesBackOnceWithTheDataAndTheDirtiersStream) {
  Harness h;
  const auto a = same_set(h.l2, 0x2000, 5);
  h.run_one(write(a[0], {11, 12, 13, 14}, Stream::kCommunication));
  EXPECT_EQ(h.mem.log.size(), 0u);  // full-line write: allocated without a fetch
  EXPECT_TRUE(h.l2.is_dirty(a[0]));
  for (int i = 1; i <= 4; ++i) h.run_one(read(a[i], kLine));  // a0 is LRU, evicted by a4

  ASSERT_EQ(h.mem.count(MemOp::kWrite), 1u);
  const auto& wb = *std::find_if(h.mem.log.begin(), h.mem.log.end(),
                                 [](const FakeMemory::Record& r) { return r.op == MemOp::kWrite; });
  EXPECT_EQ(wb.address, a[0]);
  EXPECT_EQ(wb.bytes, kLine);
  EXPECT_EQ(wb.stream, Stream::kCommunication);
  EXPECT_EQ(wb.data.words, (std::vector<std::uint64_t>{11, 12, 13, 14}));
  EXPECT_EQ(h.mem.word(a[0] + 96), 14u);
  EXPECT_EQ(h.stat("write_backs"), 1u);
  EXPECT_EQ(h.stat("write_back_bytes"), kLine);
  EXPECT_FALSE(h.l2.contains(a[0]));
}

TEST(L2, FullLineWriteAllocatesWithoutFetchPartialWriteMissIsForwarded) {
  Harness h;
  h.run_one(write(0x4000, {1, 2, 3, 4}));
  EXPECT_TRUE(h.mem.log.empty());
  EXPECT_EQ(h.client.at.back(), Tick::ns(10));  // acknowledged from the L2
  EXPECT_EQ(h.stat("write_allocations"), 1u);

  // Partial write miss: exactly those bytes go to memory; nothing is allocated; the
  // transaction waits for memory's acknowledgement.
  const Tick t0 = h.sim.now();
  h.run_one(write(0x8000 + 32, {7, 8}, Stream::kCommunication));
  ASSERT_EQ(h.mem.log.size(), 1u);
  EXPECT_EQ(h.mem.log[0].op, MemOp::kWrite);
  EXPECT_EQ(h.mem.log[0].address, 0x8000u + 32);
  EXPECT_EQ(h.mem.log[0].bytes, 64u);
  EXPECT_FALSE(h.mem.log[0].uncached);
  EXPECT_EQ(h.mem.log[0].stream, Stream::kCommunication);
  EXPECT_EQ(h.mem.log[0].data.words, (std::vector<std::uint64_t>{7, 8}));
  EXPECT_FALSE(h.l2.contains(0x8000));
  EXPECT_EQ(h.client.at.back() - t0, Tick::ns(100));
  EXPECT_EQ(h.stat("forwarded_writes"), 1u);
  EXPECT_EQ(h.stat("forwarded_write_bytes"), 64u);

  // Partial write hit: updates the cached line only.
  h.run_one(write(0x4000 + 64, {99}));
  EXPECT_EQ(h.mem.log.size(), 1u);
  Payload seen;
  seen.words.assign(4, 0);
  h.l2.overlay(0x4000, kLine, seen);
  EXPECT_EQ(seen.words, (std::vector<std::uint64_t>{1, 2, 99, 4}));
  EXPECT_EQ(h.run_one(read(0x4000, kLine, true)).data.words, (std::vector<std::uint64_t>{1, 2, 99, 4}));
}

// ---------------------------------------------------------------------------
// Bypass (uncached requests, updates)

TEST(L2, UncachedReadOfADirtyLineWritesItBackFirstAndInvalidates) {
  Harness h;
  h.run_one(write(0x1000, {5, 6, 7, 8}));
  const MemRequest r = h.run_one(uncached(read(0x1000, kLine, true, Stream::kCommunication)));
  ASSERT_EQ(h.mem.log.size(), 2u);
  EXPECT_EQ(h.mem.log[0].op, MemOp::kWrite);  // the dirty copy first
  EXPECT_EQ(h.mem.log[0].data.words, (std::vector<std::uint64_t>{5, 6, 7, 8}));
  EXPECT_EQ(h.mem.log[1].op, MemOp::kRead);
  EXPECT_TRUE(h.mem.log[1].uncached);
  EXPECT_EQ(h.mem.log[1].stream, Stream::kCommunication);
  EXPECT_EQ(r.data.words, (std::vector<std::uint64_t>{5, 6, 7, 8}));
  EXPECT_FALSE(h.l2.contains(0x1000));
  EXPECT_EQ(h.stat("invalidations"), 1u);
  EXPECT_EQ(h.stat("bypass_bytes.communication"), kLine);
}

TEST(L2, UpdatesBypassInLinePiecesAfterTheDirtyCopy) {
  Harness h;
  h.run_one(write(0x2080, {1, 1, 1, 1}));  // line 0x2080 cached, dirty
  h.run_one(read(0x2000, kLine));           // line 0x2000 cached, clean
  h.mem.log.clear();
  // 192 B from 0x2040: the upper half of line 0x2000, then all of line 0x2080.
  const Tick t0 = h.sim.now();
  h.run_one(update(0x2040, {10, 20, 30, 40, 50, 60}));
  ASSERT_EQ(h.mem.log.size(), 3u);
  EXPECT_EQ(h.mem.log[0].op, MemOp::kUpdate);
  EXPECT_EQ(h.mem.log[0].address, 0x2040u);
  EXPECT_EQ(h.mem.log[0].bytes, 64u);
  EXPECT_EQ(h.mem.log[0].data.words, (std::vector<std::uint64_t>{10, 20}));
  EXPECT_EQ(h.mem.log[1].op, MemOp::kWrite);  // write-back of the dirty line ...
  EXPECT_EQ(h.mem.log[1].address, 0x2080u);
  EXPECT_EQ(h.mem.log[2].op, MemOp::kUpdate);  // ... before its update
  EXPECT_EQ(h.mem.log[2].address, 0x2080u);
  EXPECT_EQ(h.mem.log[2].data.words, (std::vector<std::uint64_t>{30, 40, 50, 60}));
  EXPECT_EQ(h.mem.word(0x2080), 31u);  // 1 + 30: the update applied to the written-back value
  EXPECT_FALSE(h.l2.contains(0x2000));
  EXPECT_FALSE(h.l2.contains(0x2080));
  EXPECT_EQ(h.client.at.back() - t0, Tick::ns(100));
  EXPECT_EQ(h.stat("invalidations"), 2u);
  EXPECT_EQ(h.stat("bypass_bytes.compute"), 192u);
  EXPECT_EQ(h.stat("requests.compute.update"), 1u);
  // A later cached read refetches and sees the updated values.
  EXPECT_EQ(h.run_one(read(0x2080, kLine, true)).data.words, (std::vector<std::uint64_t>{31, 41, 51, 61}));
}

TEST(L2, UncachedWriteGoesToMemoryAndLeavesNoCopy) {
  Harness h;
  h.run_one(uncached(write(0x3000, {9, 9, 9, 9, 8, 8, 8, 8})));
  ASSERT_EQ(h.mem.log.size(), 2u);
  for (const auto& r : h.mem.log) {
    EXPECT_EQ(r.op, MemOp::kWrite);
    EXPECT_TRUE(r.uncached);
    EXPECT_EQ(r.bytes, kLine);
  }
  EXPECT_EQ(h.mem.word(0x3080), 8u);
  EXPECT_FALSE(h.l2.contains(0x3000));
  EXPECT_EQ(h.stat("hits.compute") + h.stat("misses.compute"), 0u);
}

// A memory-side L2 (NVIDIA; `uncached: cache`) caches uncached traffic: a peer's
// write allocates (full lines, no fetch) and the reader's uncached load hits it;
// updates still go to DRAM (they are the near-memory op).
TEST(L2, MemorySideL2CachesUncachedWritesAndReadsButNotUpdates) {
  L2Config c = small_config();
  c.bypass_uncached = false;
  Harness h(c);
  h.run_one(uncached(write(0x3000, {9, 9, 9, 9, 8, 8, 8, 8})));
  EXPECT_TRUE(h.mem.log.empty()) << "the write stays in the L2 (write-back)";
  EXPECT_TRUE(h.l2.contains(0x3000));
  EXPECT_TRUE(h.l2.is_dirty(0x3080));
  const MemRequest r = h.run_one(uncached(read(0x3000, 2 * kLine, true)));
  EXPECT_EQ(r.data.words, (std::vector<std::uint64_t>{9, 9, 9, 9, 8, 8, 8, 8}));
  EXPECT_TRUE(h.mem.log.empty()) << "the read hit";
  EXPECT_EQ(h.stat("hits.compute"), 2u);
  EXPECT_EQ(h.stat("bypass_bytes.compute"), 0u);
  h.run_one(uncached(update(0x3000, {1, 1, 1, 1})));
  ASSERT_EQ(h.mem.log.size(), 2u) << "the dirty line goes back first, then the update";
  EXPECT_EQ(h.mem.log[1].op, MemOp::kUpdate);
  EXPECT_FALSE(h.l2.contains(0x3000));
}

TEST(L2, BypassOnALineBeingFilledWaitsForTheFillAndKeepsOrder) {
  Harness h;
  h.mem.store[0x5000] = 1;
  h.issue(read(0x5000, kLine, true));                             // miss: fill F1
  h.issue(uncached(write(0x5000, {2, 2, 2, 2})));                  // waits for F1
  h.issue(read(0x5000, kLine, true));                             // after the write
  h.sim.run();
  ASSERT_EQ(h.mem.log.size(), 3u);
  EXPECT_EQ(h.mem.log[0].op, MemOp::kRead);
  EXPECT_EQ(h.mem.log[1].op, MemOp::kWrite);
  EXPECT_EQ(h.mem.log[1].at, Tick::ns(100));  // sent when F1 served the first read
  EXPECT_EQ(h.mem.log[2].op, MemOp::kRead);   // refetch for the later read
  ASSERT_EQ(h.client.done.size(), 3u);
  EXPECT_EQ(h.client.done[0].data.words[0], 1u);  // before the write
  EXPECT_EQ(h.client.done[2].data.words[0], 2u);  // after it
  EXPECT_EQ(h.stat("refetches"), 1u);
  EXPECT_EQ(h.stat("merges.compute"), 1u);
}

// ---------------------------------------------------------------------------
// MSHRs

TEST(L2, SecondaryMissesMergeIntoOneFill) {
  Harness h;
  h.mem.store[0x6020] = 42;
  h.issue(read(0x6000, kLine, true));
  h.issue(read(0x6000, 64, true));
  h.issue(write(0x6040, {7, 7}));  // partial write to the line being filled: applied after the fill
  h.issue(read(0x6000, kLine, true));
  h.sim.run();
  EXPECT_EQ(h.mem.log.size(), 1u);
  EXPECT_EQ(h.stat("merges.compute"), 3u);
  EXPECT_EQ(h.stat("misses.compute"), 1u);
  ASSERT_EQ(h.client.done.size(), 4u);
  EXPECT_EQ(h.client.done[0].data.words, (std::vector<std::uint64_t>{0, 42, 0, 0}));
  EXPECT_EQ(h.client.done[1].data.words, (std::vector<std::uint64_t>{0, 42}));
  EXPECT_EQ(h.client.done[3].data.words, (std::vector<std::uint64_t>{0, 42, 7, 7}));
  for (Tick t : h.client.at) EXPECT_EQ(t, Tick::ns(110));
  EXPECT_TRUE(h.l2.is_dirty(0x6000));
}

TEST(L2, MshrLimitStallsMissesInOrderWhileHitsProceed) {
  L2Config c = small_config();
  c.max_outstanding_misses = 2;
  Harness h(c);
  // A line to hit later, on a bank the misses below do not use.
  std::uint64_t warm = 0x10000;
  auto busy = [&](std::uint64_t a) {
    for (std::uint64_t x : {0ULL, 1ULL * kLine, 2ULL * kLine, 3ULL * kLine, 0x20000ULL})
      if (h.l2.bank_of(a) == h.l2.bank_of(x)) return true;
    return false;
  };
  while (busy(warm)) warm += kLine;
  h.run_one(read(warm, kLine));
  h.mem.log.clear();
  const Tick t0 = h.sim.now();
  h.issue(read(0, 4 * kLine));          // needs 4 MSHRs, has 2
  h.issue(read(0x20000, kLine));        // a later miss waits behind it
  h.issue(read(warm, kLine));           // a hit is not held up
  EXPECT_EQ(h.l2.outstanding_misses(), 2u);
  EXPECT_EQ(h.mem.log.size(), 2u);
  h.sim.run();
  ASSERT_EQ(h.mem.log.size(), 5u);
  EXPECT_EQ(h.mem.log[2].address, 2u * kLine);  // the first transaction's lines first
  EXPECT_EQ(h.mem.log[3].address, 3u * kLine);
  EXPECT_EQ(h.mem.log[4].address, 0x20000u);
  EXPECT_EQ(h.mem.log[2].at - t0, Tick::ns(100));  // when fills freed MSHRs
  EXPECT_EQ(h.mem.log[4].at - t0, Tick::ns(200));
  ASSERT_EQ(h.client.done.size(), 4u);
  EXPECT_EQ(h.client.done[1].address, warm);  // the hit finished first
  EXPECT_EQ(h.client.at[1] - t0, Tick::ns(10));
  EXPECT_EQ(h.client.done[2].address, 0u);
  EXPECT_EQ(h.client.at[2] - t0, Tick::ns(210));
  EXPECT_EQ(h.stat("mshr_stalls"), 2u);
  EXPECT_EQ(h.l2.outstanding_misses(), 0u);
}

TEST(L2, LaterRequestsOnAStalledTransactionsLinesWaitBehindIt) {
  L2Config c = small_config();
  c.max_outstanding_misses = 1;
  Harness h(c);
  h.mem.store[2 * kLine] = 1;
  h.run_one(read(2 * kLine, kLine, true));  // line 2 cached with value 1
  h.issue(read(0, 3 * kLine, true));        // line 0 takes the MSHR, stalls at line 1
  h.issue(write(2 * kLine, {2, 2, 2, 2}));   // would hit line 2 at once: must not
  h.issue(uncached(update(2 * kLine, {10})));  // nor may a bypass overtake it
  EXPECT_EQ(h.stat("order_stalls"), 2u);
  h.sim.run();
  ASSERT_EQ(h.client.done.size(), 4u);
  const auto big = std::find_if(h.client.done.begin(), h.client.done.end(),
                                [](const MemRequest& r) { return r.bytes == 3 * kLine; });
  ASSERT_NE(big, h.client.done.end());
  EXPECT_EQ(big->data.words[8], 1u);  // the read saw line 2 as it was
  EXPECT_EQ(h.mem.word(2 * kLine), 12u);          // write-back (2) then update (+10)
  EXPECT_FALSE(h.l2.contains(2 * kLine));
}

// ---------------------------------------------------------------------------
// Back-pressure

TEST(L2, MaxTransactionsRefusesAndRetriesOnceWhenOneCompletes) {
  L2Config c = small_config();
  c.max_transactions = 2;
  Harness h(c);
  h.issue(read(0, kLine));
  h.issue(read(kLine, kLine));
  EXPECT_FALSE(h.l2.can_accept(read(0, kLine)));
  EXPECT_EQ(h.l2.transactions_in_flight(), 2u);
  h.l2.wait_for_space(&h.client);
  h.l2.wait_for_space(&h.client);  // same as once
  bool could = false;
  h.client.on_retry = [&] { could = h.l2.can_accept(read(0, kLine)); };
  h.sim.run();
  EXPECT_EQ(h.client.retries, 1);
  EXPECT_TRUE(could);
  EXPECT_EQ(h.client.done.size(), 2u);
}

// Issue 41: the hub's port (copy engines, NVLink arrivals) has room of its own when
// hub_transactions is set, so SM traffic that fills max_transactions does not refuse
// it (a copy engine over NVLink keeps its rate beside a GEMM on the H200); without it
// the hub shares the SMs' room, first come first served.
TEST(L2, TheHubsPortHasRoomOfItsOwnBesideTheSms) {
  auto from_hub = [](MemRequest r) {
    r.ingress = Ingress::kHub;
    return r;
  };
  L2Config c = small_config();
  c.max_transactions = 2;
  {
    Harness shared(c);
    shared.issue(read(0, kLine));
    shared.issue(read(kLine, kLine));
    EXPECT_FALSE(shared.l2.can_accept(from_hub(read(2 * kLine, kLine)))) << "hub_transactions 0: one shared room";
  }
  c.hub_transactions = 2;
  Harness h(c);
  h.issue(read(0, kLine));
  h.issue(read(kLine, kLine));
  EXPECT_FALSE(h.l2.can_accept(read(2 * kLine, kLine))) << "the SMs' room is full";
  ASSERT_TRUE(h.l2.can_accept(from_hub(read(2 * kLine, kLine))));
  h.issue(from_hub(read(2 * kLine, kLine)));
  h.issue(from_hub(read(3 * kLine, kLine)));
  EXPECT_FALSE(h.l2.can_accept(from_hub(read(4 * kLine, kLine)))) << "the hub's own room is full too";
  EXPECT_EQ(h.l2.transactions_in_flight(), 4u);
  h.sim.run();
  EXPECT_EQ(h.client.done.size(), 4u);
  EXPECT_TRUE(h.l2.can_accept(read(0, kLine)));
  EXPECT_TRUE(h.l2.can_accept(from_hub(read(0, kLine))));
}

TEST(L2, MemorySideRefusalQueuesRequestsAndResendsThemInOrder) {
  Harness h;
  h.mem.refuse = true;
  h.issue(read(0, 3 * kLine));
  EXPECT_TRUE(h.mem.log.empty());
  std::vector<std::string> report;
  h.l2.report_in_flight(report);
  EXPECT_THAT(fmt::format("{}", fmt::join(report, "\n")), HasSubstr("3 compute requests refused by memory-side queue 0"));
  h.mem.release();
  h.sim.run();
  ASSERT_EQ(h.mem.log.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(h.mem.log[i].address, i * kLine);
  EXPECT_EQ(h.stat("memory_queued"), 3u);
  EXPECT_EQ(h.client.done.size(), 1u);
  report.clear();
  h.l2.report_in_flight(report);
  EXPECT_TRUE(report.empty());
}

// A GPU's memory side has a controller per channel: requests one refuses wait in the
// L2 without holding back those to the others (lines 1 and 3 here), and go in order
// when it takes them again.
TEST(L2, ARefusedChannelHoldsBackOnlyItsOwnRequests) {
  Harness h(small_config(), Tick::ns(100), 1, /*channels=*/2);
  h.mem.refused_queue = 0;
  h.issue(read(0, 4 * kLine));
  ASSERT_EQ(h.mem.log.size(), 2u);
  EXPECT_EQ(h.mem.log[0].address, kLine);
  EXPECT_EQ(h.mem.log[1].address, 3 * kLine);
  std::vector<std::string> report;
  h.l2.report_in_flight(report);
  EXPECT_THAT(fmt::format("{}", fmt::join(report, "\n")), HasSubstr("2 compute requests refused by memory-side queue 0"));
  h.mem.release();
  h.sim.run();
  ASSERT_EQ(h.mem.log.size(), 4u);
  EXPECT_EQ(h.mem.log[2].address, 0u);
  EXPECT_EQ(h.mem.log[3].address, 2 * kLine);
  EXPECT_EQ(h.stat("memory_queued"), 2u);
  EXPECT_EQ(h.client.done.size(), 1u);
}

TEST(L2, MemoryWithBoundedCapacityStillDeliversEverything) {
  Harness h;
  h.mem.capacity = 1;
  h.run_one(read(0, 16 * kLine));
  EXPECT_EQ(h.mem.log.size(), 16u);
  EXPECT_EQ(h.client.at.back(), Tick::ns(16 * 100 + 10));  // one at a time
}

TEST(L2, DeadlockReportNamesTheStuckTransaction) {
  Harness h;
  h.mem.refuse = true;  // never releases
  h.issue(read(0x40, 64));
  try {
    h.sim.run();
    FAIL() << "expected a deadlock";
  } catch (const SimulationError& e) {
    EXPECT_THAT(e.what(), HasSubstr("gpu0.l2"));
    EXPECT_THAT(e.what(), HasSubstr("compute read of 64 B at 0x40"));
    EXPECT_THAT(e.what(), HasSubstr("1 line fills outstanding"));
  }
}

// ---------------------------------------------------------------------------
// Bank timing

TEST(L2, LinesOnOneBankSerializeLinesOnDifferentBanksOverlap) {
  constexpr std::size_t kN = 8;
  Harness h;
  const auto bank0 = same_bank(h.l2, 0x100000, kN);
  for (std::uint64_t a : bank0) h.run_one(read(a, kLine));  // warm
  h.run_one(read(0, kN * kLine));                             // warm 8 consecutive lines
  std::set<std::uint32_t> banks;
  for (std::size_t i = 0; i < kN; ++i) banks.insert(h.l2.bank_of(i * kLine));
  EXPECT_EQ(banks.size(), kN);  // consecutive lines: every bank once
  const std::uint64_t waits0 = h.stat("bank_wait_cycles");

  // Spread: 8 lines on 8 banks all start at once.
  Tick t0 = h.sim.now();
  h.run_one(read(0, kN * kLine));
  const Tick spread = h.client.at.back() - t0;
  EXPECT_EQ(spread, Tick::ns(10));
  EXPECT_EQ(h.stat("bank_wait_cycles"), waits0);

  // Same bank: the i-th line starts 2 i cycles late (one 128 B line per 2 cycles).
  t0 = h.sim.now();
  for (std::uint64_t a : bank0) h.issue(read(a, kLine));
  h.sim.run();
  const Tick serial = h.client.at.back() - t0;
  EXPECT_EQ(serial - spread, Tick::ns(2 * (kN - 1)));
  EXPECT_EQ(h.stat("bank_wait_cycles") - waits0, 2u * (kN - 1) * kN / 2);
  EXPECT_GE(h.stat("bank_conflicts"), kN - 1);
}

TEST(L2, AllHitStreamNeverExceedsBankBandwidthAndApproachesIt) {
  L2Config c = small_config();
  Harness h(c);
  constexpr std::uint32_t kTxnBytes = 4096;
  constexpr std::uint64_t kRegion = 32 * 1024;  // half the cache; fits (2 lines per set)
  h.run_one(read(0, kRegion));
  ASSERT_EQ(h.stat("evictions"), 0u);
  const std::uint64_t misses = h.stat("misses.compute");

  std::uint64_t next = 0, issued = 0;
  constexpr std::uint64_t kTotal = 4000;
  std::function<void()> pump = [&] {
    while (issued < kTotal && h.l2.can_accept(read(0, kTxnBytes))) {
      h.issue(read(next, kTxnBytes));
      next = (next + kTxnBytes) % kRegion;
      ++issued;
    }
    if (issued < kTotal) h.l2.wait_for_space(&h.client);
  };
  h.client.on_retry = pump;
  const Tick t0 = h.sim.now();
  pump();
  h.sim.run();
  EXPECT_EQ(h.stat("misses.compute"), misses);
  const double seconds = (h.client.at.back() - t0).seconds();
  const double rate = static_cast<double>(kTotal * kTxnBytes) / seconds;
  const double peak = c.peak_bytes_per_second();  // 8 banks x 64 B x 1 GHz
  EXPECT_LE(rate, peak * 1.0000001);
  EXPECT_GE(rate, peak * 0.95);
}

// local_copy_priority (results/h200-measurements/README.md point 10): under sm_first a
// local copy's line waits while its bank has anything reserved, so SM requests that
// come while it waits go first; under fair it keeps its place in arrival order.
TEST(L2, UnderSmFirstALocalCopyWaitsUntilItsBankHasNothingReserved) {
  for (const bool sm_first : {false, true}) {
    SCOPED_TRACE(sm_first ? "sm_first" : "fair");
    L2Config c = small_config();
    c.local_copy_sm_first = sm_first;
    Harness h(c);
    const auto lines = same_bank(h.l2, 0x100000, 7);  // one bank: 2 cycles (2 ns) per line
    for (std::uint64_t a : lines) h.run_one(read(a, kLine));  // warm: all hits from here
    const Tick t0 = h.sim.now();
    // t0: 4 SM lines (the bank is busy until t0 + 8 ns) and a local copy's line.
    for (int i = 0; i < 4; ++i) h.issue(read(lines[i], kLine));
    MemRequest copy = read(lines[4], kLine);
    copy.local_copy = true;
    copy.tag = 99;
    h.issue(std::move(copy));
    // t0 + 4 ns: 2 more SM lines, while the copy waits (sm_first) or after its slot (fair).
    h.sim.events().schedule_callback(t0 + Tick::ns(4), [&] {
      for (int i = 5; i < 7; ++i) {
        MemRequest r = read(lines[i], kLine);
        r.tag = 100 + i;
        h.issue(std::move(r));
      }
    });
    h.sim.run();
    auto done_at = [&](std::uint64_t tag) {
      for (std::size_t i = 0; i < h.client.done.size(); ++i)
        if (h.client.done[i].tag == tag) return h.client.at[i] - t0;
      ADD_FAILURE() << "no response with tag " << tag;
      return Tick::zero();
    };
    // Each line is ready hit_latency (10 ns) after its 2 ns bank slot starts.
    if (sm_first) {
      EXPECT_EQ(done_at(105), Tick::ns(8 + 10));   // slots 8, 10: ahead of the copy
      EXPECT_EQ(done_at(106), Tick::ns(10 + 10));
      EXPECT_EQ(done_at(99), Tick::ns(12 + 10));   // the bank's first free slot
      EXPECT_EQ(h.stat("local_copy_waits"), 1u);   // one line waited, from t0 to t0 + 12 ns
      EXPECT_EQ(h.stat("local_copy_wait_cycles"), 12u);
    } else {
      EXPECT_EQ(done_at(99), Tick::ns(8 + 10));    // its arrival-order slot
      EXPECT_EQ(done_at(105), Tick::ns(10 + 10));
      EXPECT_EQ(done_at(106), Tick::ns(12 + 10));
      EXPECT_EQ(h.sim.stats().find("gpu0.l2.local_copy_waits"), nullptr);  // fair: no such stat
    }
  }
}

TEST(L2, AWaitingLocalCopyGoesAheadOfALaterRequestForItsLines) {
  L2Config c = small_config();
  c.local_copy_sm_first = true;
  Harness h(c);
  const auto lines = same_bank(h.l2, 0x100000, 3);
  for (std::uint64_t a : lines) h.run_one(read(a, kLine));
  h.issue(read(lines[0], kLine));  // holds the bank
  h.issue(read(lines[1], kLine));
  MemRequest copy = write(lines[2], words_from(500, kLine / kGranule));
  copy.local_copy = true;
  h.issue(std::move(copy));  // waits for the bank
  // An SM read of the copy's line, accepted after it, sees what it wrote.
  MemRequest r = read(lines[2], kLine, /*functional=*/true);
  r.tag = 7;
  h.issue(std::move(r));
  h.sim.run();
  ASSERT_EQ(h.client.done.size(), 4u + 3u);
  for (const MemRequest& d : h.client.done) {
    if (d.tag == 7) {
      EXPECT_EQ(d.data.words, words_from(500, kLine / kGranule));
    }
  }
  EXPECT_EQ(h.stat("local_copy_promotions"), 1u);
}

// ---------------------------------------------------------------------------
// 2D tiles (MemRequest::rows > 1)

struct TileShape {
  std::uint64_t address;
  std::uint32_t rows;
  std::uint32_t row_bytes;
  std::uint64_t stride;
  std::uint64_t cache_bytes;
};

TEST(L2Tile, ReadIsOneTransactionWithOneFillPerMissedLineAndReReadsAllHit) {
  for (const TileShape& shape : {
           TileShape{0x10000, 8, 256, 1024, 64 * 1024},   // line-aligned stride, 2 lines a row
           TileShape{0x10000, 16, 64, 4256, 64 * 1024},   // GEMM-like: rows drift 32 B a row
           TileShape{0x10040, 5, 224, 4256, 64 * 1024},   // rows of 2 or 3 lines
           TileShape{0x100000, 256, 64, 4256, 1 << 20},   // a whole 256 x 64 B tile
       }) {
    SCOPED_TRACE(fmt::format("{} x {} B stride {} at 0x{:x}", shape.rows, shape.row_bytes, shape.stride, shape.address));
    L2Config c = small_config();
    c.size_bytes = shape.cache_bytes;
    c.max_outstanding_misses = 1024;  // every miss at once
    Harness h(c);
    const auto granules = tile_granules(shape.address, shape.rows, shape.row_bytes, shape.stride);
    for (std::uint64_t a : granules) h.mem.store[a] = a;  // each word is its address
    const auto pieces = tile_pieces(shape.address, shape.rows, shape.row_bytes, shape.stride);
    std::vector<std::uint64_t> lines;
    for (const auto& [a, b] : pieces)
      if (lines.empty() || lines.back() != a / kLine * kLine) lines.push_back(a / kLine * kLine);

    // Cold: one DRAM read per line, in row order; one completion with the words.
    const MemRequest r = h.run_one(tile_read(shape.address, shape.rows, shape.row_bytes, shape.stride, true));
    EXPECT_EQ(r.data.words, granules);
    EXPECT_EQ(r.rows, shape.rows);
    ASSERT_EQ(h.mem.log.size(), lines.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(h.mem.log[i].op, MemOp::kRead);
      EXPECT_EQ(h.mem.log[i].address, lines[i]);
      EXPECT_EQ(h.mem.log[i].bytes, kLine);
    }
    EXPECT_EQ(h.stat("misses.compute"), lines.size());
    EXPECT_EQ(h.stat("hits.compute"), 0u);
    EXPECT_EQ(h.stat("requests.compute.read"), 1u);
    EXPECT_EQ(h.stat("bytes.compute.read"), std::uint64_t{shape.rows} * shape.row_bytes);
    ASSERT_EQ(h.stat("evictions"), 0u);
    EXPECT_EQ(h.client.at.back(), Tick::ns(110));  // every fill at 100 ns, then the hit path

    // Warm: all hits, one event, no DRAM; each piece reserves its bank slot
    // (ceil(bytes / 64) cycles), and the tile is ready 10 cycles after the last.
    std::map<std::uint32_t, std::uint64_t> bank_free;
    std::uint64_t last = 0, waits = 0;
    for (const auto& [a, b] : pieces) {
      std::uint64_t& next = bank_free[h.l2.bank_of(a)];
      last = std::max(last, next);
      waits += next;
      next += (b + 63) / 64;
    }
    const std::uint64_t waits0 = h.stat("bank_wait_cycles");
    const std::uint64_t events = h.sim.events().dispatched();
    const Tick t0 = h.sim.now();
    h.issue(tile_read(shape.address, shape.rows, shape.row_bytes, shape.stride, true));
    h.sim.events().run();
    ASSERT_EQ(h.client.done.size(), 2u);
    EXPECT_EQ(h.sim.events().dispatched() - events, 1u);
    EXPECT_EQ(h.client.done.back().data.words, granules);
    EXPECT_EQ(h.mem.log.size(), lines.size());
    EXPECT_EQ(h.stat("hits.compute"), pieces.size());  // a look-up per piece
    EXPECT_EQ(h.stat("misses.compute"), lines.size());
    EXPECT_EQ(h.client.at.back() - t0, Tick::ns(static_cast<std::int64_t>(last + 10)));
    EXPECT_EQ(h.stat("bank_wait_cycles") - waits0, waits);
  }
}

TEST(L2Tile, UncachedUpdateSendsOnePiecePerRowLineWithItsWords) {
  Harness h;
  // 4 rows x 64 B, stride 4256 (33 lines + 32 B): row offsets 0, 32, 64, 96 within
  // their lines, so the last row straddles two lines.
  constexpr std::uint64_t kBase = 0x20000, kStride = 4256;
  const std::uint64_t row2 = kBase + 2 * kStride;  // 0x22140: the upper half of line 0x22100
  h.run_one(write(row2 - 64, {1, 2, 3, 4}));  // that line cached, dirty
  h.mem.log.clear();
  const Tick t0 = h.sim.now();
  MemRequest u = tile_write(kBase, 4, 64, kStride, words_from(100, 8));
  u.op = MemOp::kUpdate;
  const MemRequest done = h.run_one(std::move(u));
  EXPECT_EQ(done.rows, 4u);
  struct Expect {
    MemOp op;
    std::uint64_t address;
    std::uint32_t bytes;
    std::vector<std::uint64_t> words;
  };
  const std::vector<Expect> expect = {
      {MemOp::kUpdate, kBase, 64, {100, 101}},
      {MemOp::kUpdate, kBase + kStride, 64, {102, 103}},
      {MemOp::kWrite, row2 - 64, kLine, {1, 2, 3, 4}},  // the dirty copy first
      {MemOp::kUpdate, row2, 64, {104, 105}},
      {MemOp::kUpdate, kBase + 3 * kStride, 32, {106}},  // row 3: offset 96, 32 B in each line
      {MemOp::kUpdate, kBase + 3 * kStride + 32, 32, {107}},
  };
  ASSERT_EQ(h.mem.log.size(), expect.size());
  for (std::size_t i = 0; i < expect.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(h.mem.log[i].op, expect[i].op);
    EXPECT_EQ(h.mem.log[i].address, expect[i].address);
    EXPECT_EQ(h.mem.log[i].bytes, expect[i].bytes);
    EXPECT_EQ(h.mem.log[i].data.words, expect[i].words);
    EXPECT_EQ(h.mem.log[i].uncached, expect[i].op == MemOp::kUpdate);
  }
  EXPECT_EQ(h.mem.word(row2), 3u + 104);  // applied to the written-back value
  EXPECT_EQ(h.mem.word(row2 + 32), 4u + 105);
  EXPECT_EQ(h.mem.word(kBase + 3 * kStride + 32), 107u);
  EXPECT_FALSE(h.l2.contains(row2));
  EXPECT_EQ(h.client.at.back() - t0, Tick::ns(100));
  EXPECT_EQ(h.stat("invalidations"), 1u);
  EXPECT_EQ(h.stat("bypass_bytes.compute"), 256u);
  EXPECT_EQ(h.stat("bytes.compute.update"), 256u);
  EXPECT_EQ(h.stat("requests.compute.update"), 1u);

  // An uncached 2D read gets every row's words back in order.
  const MemRequest r = h.run_one(uncached(tile_read(kBase, 4, 64, kStride, true)));
  EXPECT_EQ(r.data.words, (std::vector<std::uint64_t>{100, 101, 102, 103, 107, 109, 106, 107}));
}

TEST(L2Tile, WriteThenRowReadsSeeTheWordsColdAndWarm) {
  Harness h;
  // 6 rows x 96 B, stride 4256: rows 2 and 3 straddle two lines (8 partial pieces).
  constexpr std::uint64_t kBase = 0x30000, kStride = 4256;
  constexpr std::uint32_t kRows = 6, kRowBytes = 96, kWords = kRowBytes / kGranule;
  auto check_rows = [&](std::uint64_t first) {
    for (std::uint32_t r = 0; r < kRows; ++r) {
      SCOPED_TRACE(r);
      EXPECT_EQ(h.run_one(read(kBase + r * kStride, kRowBytes, true)).data.words, words_from(first + r * kWords, kWords));
    }
  };
  // Cold: partial-line write misses are forwarded (nothing allocated) ...
  h.run_one(tile_write(kBase, kRows, kRowBytes, kStride, words_from(1000, kRows * kWords)));
  EXPECT_EQ(h.stat("forwarded_writes"), 8u);
  EXPECT_EQ(h.stat("forwarded_write_bytes"), kRows * kRowBytes);
  EXPECT_EQ(h.mem.count(MemOp::kWrite), 8u);
  EXPECT_EQ(h.stat("bytes.compute.write"), kRows * kRowBytes);
  for (std::size_t i = 0; i < kRows * kWords; ++i) {
    const auto g = tile_granules(kBase, kRows, kRowBytes, kStride);
    EXPECT_EQ(h.mem.word(g[i]), 1000 + i);
  }
  check_rows(1000);  // (fetches the 8 lines)
  // ... warm: write hits, nothing to memory.
  const std::size_t logged = h.mem.log.size();
  const std::uint64_t hits = h.stat("hits.compute");
  h.run_one(tile_write(kBase, kRows, kRowBytes, kStride, words_from(5000, kRows * kWords)));
  EXPECT_EQ(h.mem.log.size(), logged);
  EXPECT_EQ(h.stat("hits.compute") - hits, 8u);
  check_rows(5000);
  EXPECT_EQ(h.run_one(tile_read(kBase, kRows, kRowBytes, kStride, true)).data.words, words_from(5000, kRows * kWords));
  Payload seen;
  seen.words.assign(kWords, 0);
  h.l2.overlay(kBase + 3 * kStride, kRowBytes, seen);
  EXPECT_EQ(seen.words, words_from(5000 + 3 * kWords, kWords));
}

TEST(L2Tile, WriteOfFullLinesAllocatesWithoutFetch) {
  Harness h;
  // 4 rows x 2 full lines, 1 KiB apart: allocated, acknowledged from the L2.
  h.run_one(tile_write(0x40000, 4, 256, 1024, words_from(1, 32)));
  EXPECT_TRUE(h.mem.log.empty());
  EXPECT_EQ(h.stat("write_allocations"), 8u);
  EXPECT_EQ(h.stat("misses.compute"), 8u);
  EXPECT_LT(h.client.at.back(), Tick::ns(20));
  for (std::uint64_t r = 0; r < 4; ++r) {
    EXPECT_TRUE(h.l2.is_dirty(0x40000 + r * 1024));
    EXPECT_TRUE(h.l2.is_dirty(0x40000 + r * 1024 + kLine));
  }
  EXPECT_EQ(h.run_one(read(0x40000 + 3 * 1024, 256, true)).data.words, words_from(25, 8));

  // Rows of 256 B starting half-way into a line: 64 B, a full line, 64 B. The full
  // line is allocated, the partial ones forwarded.
  h.mem.log.clear();
  h.run_one(tile_write(0x50040, 2, 256, 1024, words_from(100, 16)));
  EXPECT_EQ(h.stat("write_allocations"), 8u + 2);
  EXPECT_EQ(h.stat("forwarded_writes"), 4u);
  ASSERT_EQ(h.mem.log.size(), 4u);
  EXPECT_EQ(h.mem.count(MemOp::kRead), 0u);
  EXPECT_EQ(h.mem.log[1].address, 0x50100u);
  EXPECT_EQ(h.mem.log[1].data.words, (std::vector<std::uint64_t>{106, 107}));
  EXPECT_TRUE(h.l2.is_dirty(0x50080));
  EXPECT_TRUE(h.l2.is_dirty(0x50480));
  EXPECT_EQ(h.run_one(tile_read(0x50040, 2, 256, 1024, true)).data.words, words_from(100, 16));
}

TEST(L2Tile, RowsSharingALineMergeIntoOneFill) {
  Harness h;
  // 4 rows of 64 B, 64 B apart: two per line.
  for (std::uint64_t a : tile_granules(0x60000, 4, 64, 64)) h.mem.store[a] = a;
  EXPECT_EQ(h.run_one(tile_read(0x60000, 4, 64, 64, true)).data.words, tile_granules(0x60000, 4, 64, 64));
  EXPECT_EQ(h.mem.count(MemOp::kRead), 2u);
  EXPECT_EQ(h.stat("misses.compute"), 2u);
  EXPECT_EQ(h.stat("merges.compute"), 2u);
  // The same tile uncached and updated: four pieces, two per line.
  h.mem.log.clear();
  MemRequest u = tile_write(0x60000, 4, 64, 64, words_from(1, 8));
  u.op = MemOp::kUpdate;
  h.run_one(std::move(u));
  ASSERT_EQ(h.mem.log.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(h.mem.log[i].address, 0x60000 + i * 64);
  EXPECT_EQ(h.mem.word(0x60000 + 7 * kGranule), 0x60000u + 7 * kGranule + 8);
}

TEST(L2Tile, OrderingAgainstStalledTransactionsHoldsForTiles) {
  L2Config c = small_config();
  c.max_outstanding_misses = 1;
  {
    // A stalled tile: later requests touching its rows not yet looked up wait.
    Harness h(c);
    const std::uint64_t x = 0x60000 + 2 * 1024;  // its row 2
    h.mem.store[x] = 1;
    h.run_one(read(x, kLine, true));
    const std::uint64_t warm = 0x90000;
    h.run_one(read(warm, kLine));
    const Tick t0 = h.sim.now();
    h.issue(tile_read(0x60000, 3, kLine, 1024, true));  // row 0 takes the MSHR, stalls at row 1
    h.issue(write(x, {2, 2, 2, 2}));
    MemRequest u = tile_write(x - 4096, 2, 32, 4096, {5, 10});  // its row 1 is x
    u.op = MemOp::kUpdate;
    h.issue(std::move(u));
    h.issue(tile_read(warm, 1, 64, 0));  // elsewhere: not held
    EXPECT_EQ(h.stat("order_stalls"), 2u);
    h.sim.run();
    ASSERT_EQ(h.client.done.size(), 6u);
    EXPECT_EQ(h.client.done[2].address, warm);  // the hit finished first
    EXPECT_EQ(h.client.at[2] - t0, Tick::ns(10));
    const auto big = std::find_if(h.client.done.begin(), h.client.done.end(),
                                  [](const MemRequest& r) { return r.rows == 3; });
    ASSERT_NE(big, h.client.done.end());
    EXPECT_EQ(big->data.words[8], 1u);  // the tile saw x as it was
    EXPECT_EQ(h.mem.word(x), 12u);                   // write-back (2) then update (+10)
    EXPECT_EQ(h.mem.word(x - 4096), 5u);
  }
  {
    // A stalled 1D request: a later tile with a row on its remaining lines waits.
    Harness h(c);
    h.mem.store[0x70100] = 1;
    h.run_one(read(0x70100, kLine, true));
    h.issue(read(0x70000, 3 * kLine, true));  // line 0x70000 takes the MSHR, stalls at 0x70080
    h.issue(tile_write(0x6FF00, 2, kLine, 0x200, words_from(7, 8)));  // rows 0x6FF00 and 0x70100
    EXPECT_EQ(h.stat("order_stalls"), 1u);
    h.sim.run();
    ASSERT_EQ(h.client.done.size(), 3u);
    const auto big = std::find_if(h.client.done.begin(), h.client.done.end(),
                                  [](const MemRequest& r) { return r.bytes == 3 * kLine; });
    ASSERT_NE(big, h.client.done.end());
    EXPECT_EQ(big->data.words[8], 1u);
    EXPECT_EQ(h.run_one(read(0x70100, kLine, true)).data.words, words_from(11, 4));
  }
}

TEST(L2Tile, DeadlockReportDescribesATile) {
  Harness h;
  h.mem.refuse = true;
  h.issue(tile_read(0x40, 4, 64, 4256));
  try {
    h.sim.run();
    FAIL() << "expected a deadlock";
  } catch (const SimulationError& e) {
    EXPECT_THAT(e.what(), HasSubstr("compute read of 4 rows x 64 B (stride 4256 B) at 0x40"));
  }
}

// ---------------------------------------------------------------------------
// Functional values

TEST(L2, ValuesSurviveWriteEvictAndReadBack) {
  Harness h;
  const auto words = words_from(1000, 32);  // 1 KiB = 8 lines
  h.run_one(write(0x9000, words));
  EXPECT_TRUE(h.mem.store.empty());  // all in the L2
  Payload seen;
  seen.words.assign(32, 0);
  h.l2.overlay(0x9000, 1024, seen);
  EXPECT_EQ(seen.words, words);

  // Evict everything by streaming the whole cache size through it twice.
  h.run_one(read(0x100000, 64 * 1024));
  h.run_one(read(0x200000, 64 * 1024));
  for (std::uint64_t i = 0; i < 8; ++i) EXPECT_FALSE(h.l2.contains(0x9000 + i * kLine));
  EXPECT_EQ(h.stat("write_backs"), 8u);
  for (std::size_t i = 0; i < 32; ++i) EXPECT_EQ(h.mem.word(0x9000 + i * kGranule), words[i]) << i;
  EXPECT_EQ(h.run_one(read(0x9000, 1024, true)).data.words, words);

  // write_back_dirty_lines cleans without evicting.
  h.run_one(write(0x9000, words_from(5, 4)));
  EXPECT_EQ(h.l2.write_back_dirty_lines(), 1u);
  h.sim.run();
  EXPECT_TRUE(h.l2.contains(0x9000));
  EXPECT_FALSE(h.l2.is_dirty(0x9000));
  EXPECT_EQ(h.mem.word(0x9000 + 3 * kGranule), 8u);
}

TEST(L2, TimingOnlyTrafficLeavesValuesAloneAndFunctionalReadsRefetch) {
  Harness h;
  h.mem.store[0xA000] = 77;
  EXPECT_TRUE(h.run_one(read(0xA000, kLine)).data.empty());  // timing-only: no values back
  EXPECT_TRUE(h.l2.contains(0xA000));
  // The line was filled without values; a functional read fetches them.
  EXPECT_EQ(h.run_one(read(0xA000, kLine, true)).data.words[0], 77u);
  EXPECT_EQ(h.mem.count(MemOp::kRead), 2u);
  EXPECT_EQ(h.stat("refetches"), 1u);
  // A timing-only write hit marks the line dirty but keeps its values.
  h.run_one(timing_write(0xA000, kLine));
  EXPECT_TRUE(h.l2.is_dirty(0xA000));
  EXPECT_EQ(h.run_one(read(0xA000, 32, true)).data.words[0], 77u);
  // A timing-only full-line write miss allocates a line without values; its
  // write-back carries no values, so memory keeps its own.
  h.mem.store[0xB000] = 5;
  h.run_one(timing_write(0xB000, kLine));
  h.l2.write_back_dirty_lines();
  h.sim.run();
  EXPECT_EQ(h.mem.word(0xB000), 5u);
  EXPECT_EQ(h.run_one(read(0xB000, kLine, true)).data.words[0], 5u);
}

// Random mixed traffic (cached and uncached reads, writes, updates; functional and
// timing-only) through a tiny cache with few MSHRs and a memory that back-pressures:
// every read returns what a sequential memory would hold when the read was accepted,
// and after a final write-back memory holds exactly the reference.
struct StressOutcome {
  std::vector<Tick> times;
  std::string memory_log;
  std::string stats;
};

// With `tiles`, a third of the requests are 2D (2-5 rows, rows possibly sharing lines).
// With `local_copies`, the L2 serves local copies last (local_copy_sm_first) and a
// third of the requests are a local copy engine's: they wait at busy banks, and the
// requests after them that touch their lines make them go ahead.
StressOutcome run_stress(std::uint64_t seed, const std::string& replacement, bool jitter = false, bool tiles = false,
                         bool local_copies = false, std::uint32_t channels = 1) {
  L2Config c = small_config();
  c.size_bytes = 8 * 1024;  // 8 banks x 2 sets x 4 ways
  c.max_outstanding_misses = 6;
  c.max_transactions = 16;
  c.replacement = replacement;
  c.local_copy_sm_first = local_copies;
  Harness h(c, Tick::ns(100), seed, channels);
  h.mem.capacity = 5;
  h.mem.jitter = jitter;
  if (channels > 1) h.mem.queue_capacity = 2;
  std::mt19937_64 rng(seed);
  std::map<std::uint64_t, std::uint64_t> ref;  // granule address -> value
  auto ref_word = [&](std::uint64_t a) {
    auto it = ref.find(a);
    return it == ref.end() ? 0 : it->second;
  };
  std::map<std::uint64_t, std::vector<std::uint64_t>> expected;  // by tag
  constexpr std::uint64_t kRegion = 64 * 1024;
  constexpr int kTotal = 3000;
  int issued = 0;
  std::function<void()> pump;
  pump = [&] {
    while (issued < kTotal && h.l2.can_accept(read(0, 32))) {
      MemRequest r;
      const std::uint64_t hot = rng() % 4 == 0 ? kRegion : 4096;  // mostly a hot set of lines
      const std::uint32_t granules = 1 + static_cast<std::uint32_t>(rng() % 12);
      r.address = (rng() % (hot / kGranule)) * kGranule;
      r.bytes = granules * kGranule;
      if (tiles && rng() % 3 == 0) {
        r.rows = 2 + static_cast<std::uint32_t>(rng() % 4);
        r.row_stride = r.bytes + (rng() % 8) * kGranule;
      }
      const auto addrs = tile_granules(r.address, r.rows, r.bytes, r.row_stride);
      const auto kind = rng() % 10;
      r.op = kind < 5 ? MemOp::kRead : kind < 9 ? MemOp::kWrite : MemOp::kUpdate;
      r.uncached = rng() % 6 == 0;
      r.stream = rng() % 2 ? Stream::kCompute : Stream::kCommunication;
      if (local_copies) r.local_copy = rng() % 3 == 0;
      const bool functional = rng() % 8 != 0;
      r.tag = static_cast<std::uint64_t>(issued);
      if (functional) {
        r.data.words.assign(addrs.size(), 0);
        if (r.op == MemOp::kRead) {
          auto& e = expected[r.tag];
          for (std::uint64_t a : addrs) e.push_back(ref_word(a));
        } else {
          for (std::size_t j = 0; j < addrs.size(); ++j) {
            const std::uint64_t v = rng();
            r.data.words[j] = v;
            const std::uint64_t a = addrs[j];
            ref[a] = r.op == MemOp::kWrite ? v : ref_word(a) + v;
          }
        }
      }
      h.issue(std::move(r));
      ++issued;
    }
    if (issued < kTotal) {
      h.sim.events().schedule_callback(h.sim.now() + Tick::ns(rng() % 40), [&] { pump(); });
    }
  };
  pump();
  h.sim.run();
  EXPECT_EQ(h.client.done.size(), static_cast<std::size_t>(kTotal));
  for (const MemRequest& r : h.client.done) {
    auto it = expected.find(r.tag);
    if (it != expected.end()) {
      EXPECT_EQ(r.data.words, it->second) << "read " << r.tag << " of " << r.bytes << " B at 0x" << std::hex << r.address;
    } else if (r.op == MemOp::kRead) {
      EXPECT_TRUE(r.data.empty());
    }
  }
  // GPU-visible contents before the final write-back ...
  for (const auto& [a, v] : ref) {
    Payload p;
    p.words = {h.mem.word(a)};
    h.l2.overlay(a, kGranule, p);
    EXPECT_EQ(p.words[0], v) << std::hex << a;
  }
  // ... and memory after it.
  h.l2.write_back_dirty_lines();
  h.sim.run();
  for (const auto& [a, v] : ref) EXPECT_EQ(h.mem.word(a), v) << std::hex << a;
  EXPECT_EQ(h.l2.transactions_in_flight(), 0u);
  EXPECT_EQ(h.l2.outstanding_misses(), 0u);
  EXPECT_GT(h.stat("evictions"), 100u);
  EXPECT_GT(h.stat("mshr_stalls"), 0u);
  EXPECT_GT(h.stat("merges.compute") + h.stat("merges.communication"), 0u);
  EXPECT_GT(h.stat("memory_queued"), 0u);
  EXPECT_GT(h.stat("refetches"), 0u);
  if (local_copies) {
    EXPECT_GT(h.stat("local_copy_waits"), 30u);
    EXPECT_GT(h.stat("local_copy_promotions"), 0u);
  }

  StressOutcome out;
  out.times = h.client.at;
  for (const auto& r : h.mem.log)
    out.memory_log += fmt::format("{} {} {} {:x} {} {}\n", r.at.ps(), to_string(r.op), to_string(r.stream), r.address,
                                  r.bytes, fmt::join(r.data.words, ","));
  out.stats = h.sim.stats().to_json(h.sim.now()).dump();
  return out;
}

TEST(L2, RandomTrafficIsSequentiallyConsistentInAcceptanceOrder) {
  for (std::uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    run_stress(seed, seed == 3 ? "random" : "lru");
  }
  // Memory answering out of order must not matter (only same-address order does).
  run_stress(4, "lru", /*jitter=*/true);
}

// Refused requests wait per channel: same-line order holds (a line has one channel)
// while other channels' requests pass them.
TEST(L2, RandomTrafficThroughChannelQueuesIsSequentiallyConsistentInAcceptanceOrder) {
  run_stress(10, "lru", /*jitter=*/true, /*tiles=*/true, /*local_copies=*/false, /*channels=*/4);
  run_stress(11, "random", /*jitter=*/false, /*tiles=*/false, /*local_copies=*/true, /*channels=*/3);
}

TEST(L2Tile, RandomTrafficWithTilesIsSequentiallyConsistentInAcceptanceOrder) {
  run_stress(5, "lru", /*jitter=*/false, /*tiles=*/true);
  run_stress(6, "random", /*jitter=*/true, /*tiles=*/true);
}

TEST(L2, RandomTrafficWithWaitingLocalCopiesIsSequentiallyConsistentInAcceptanceOrder) {
  run_stress(7, "lru", /*jitter=*/false, /*tiles=*/false, /*local_copies=*/true);
  run_stress(8, "random", /*jitter=*/true, /*tiles=*/true, /*local_copies=*/true);
  const StressOutcome a = run_stress(9, "lru", true, true, true);
  const StressOutcome b = run_stress(9, "lru", true, true, true);
  EXPECT_EQ(a.times, b.times);
  EXPECT_EQ(a.stats, b.stats);
}

TEST(L2, IdenticalInputsGiveIdenticalRuns) {
  const StressOutcome a = run_stress(11, "random");
  const StressOutcome b = run_stress(11, "random");
  EXPECT_EQ(a.times, b.times);
  EXPECT_EQ(a.memory_log, b.memory_log);
  EXPECT_EQ(a.stats, b.stats);
}

// ---------------------------------------------------------------------------
// Configuration

ConfigError l2_config_error(const std::string& yaml) {
  const ConfigTree tree = ConfigTree::parse(yaml, "l2.yaml");
  ResolvedConfig resolved;
  try {
    read_l2_config(ConfigNode(&tree.root(), "", &resolved).child("l2"));
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a ConfigError for:\n" << yaml;
  return ConfigError({}, "", "");
}

TEST(L2Config, DefaultsAreTable1AndUnitsAreRead) {
  const L2Config d;
  EXPECT_EQ(d.size_bytes, 16u << 20);
  EXPECT_EQ(d.banks, 64u);
  EXPECT_EQ(d.clock_hz, 1'400'000'000u);
  EXPECT_EQ(d.sets_per_bank(), 128u);

  const ConfigTree tree = ConfigTree::parse(
      "l2:\n  size: 8MiB\n  banks: 32\n  line_size: 64\n  assoc: 8\n  clock: 1.5GHz\n  hit_latency: 90\n"
      "  bank_bytes_per_cycle: 32\n  max_transactions: 100\n  hub_transactions: 64\n  max_outstanding_misses: 300\n"
      "  replacement: random\n",
      "l2.yaml");
  ResolvedConfig resolved;
  const L2Config c = read_l2_config(ConfigNode(&tree.root(), "", &resolved).child("l2"));
  EXPECT_EQ(c.size_bytes, 8u << 20);
  EXPECT_EQ(c.banks, 32u);
  EXPECT_EQ(c.line_bytes, 64u);
  EXPECT_EQ(c.assoc, 8u);
  EXPECT_EQ(c.clock_hz, 1'500'000'000u);
  EXPECT_EQ(c.hit_latency, 90u);
  EXPECT_EQ(c.bank_bytes_per_cycle, 32u);
  EXPECT_EQ(c.max_transactions, 100u);
  EXPECT_EQ(c.hub_transactions, 64u);
  EXPECT_EQ(c.max_outstanding_misses, 300u);
  EXPECT_EQ(c.replacement, "random");
  EXPECT_EQ(resolved.json()["l2"]["size"], "8MiB");

  const ConfigTree empty = ConfigTree::parse("other: 1\n", "empty.yaml");
  const L2Config e = read_l2_config(ConfigNode(&empty.root(), "", &resolved).child("l2"));
  EXPECT_EQ(e.size_bytes, d.size_bytes);
  EXPECT_EQ(e.replacement, "lru");
  EXPECT_EQ(e.hub_transactions, 0u) << "the hub shares the SMs' room unless a system says otherwise";
  EXPECT_TRUE(e.bypass_uncached) << "T3 §4.3: uncached goes around the L2 by default";
  const ConfigTree side = ConfigTree::parse("l2:\n  uncached: cache\n", "side.yaml");
  EXPECT_FALSE(read_l2_config(ConfigNode(&side.root(), "", &resolved).child("l2")).bypass_uncached);
}

// Sets per bank that are not a power of two (H100/H200: 50 MB, 400 sets per bank in
// 64 banks of 16 ways): the set index is taken modulo the count, so a working set of
// exactly the capacity fits (every line of it hits on a second pass) and one a set's
// worth larger does not.
TEST(L2, ACapacityOfSetsThatAreNoPowerOfTwoHoldsExactlyItsLines) {
  L2Config c = small_config();
  c.size_bytes = 3 * 8 * 4 * kLine * 8;  // 8 banks x 4 ways x 24 sets per bank
  ASSERT_EQ(c.sets_per_bank(), 24u);
  Harness h(c);
  const std::uint64_t lines = c.size_bytes / kLine;
  for (int pass = 0; pass < 2; ++pass)
    for (std::uint64_t l = 0; l < lines; ++l) h.run_one(read(l * kLine, kLine));
  EXPECT_EQ(h.stat("misses.compute"), lines);
  EXPECT_EQ(h.stat("hits.compute"), lines);
  EXPECT_EQ(h.stat("evictions"), 0u);
  const ConfigTree tree = ConfigTree::parse("l2:\n  size: 50MiB\n", "l2.yaml");
  ResolvedConfig resolved;
  EXPECT_EQ(read_l2_config(ConfigNode(&tree.root(), "", &resolved).child("l2")).sets_per_bank(), 400u);
}

TEST(L2Config, EachBadValueIsOneErrorAtItsKey) {
  EXPECT_STREQ(l2_config_error("l2:\n  banks: 48\n").what(), "l2.yaml:2: l2.banks: 48 is not a power of two");
  EXPECT_STREQ(l2_config_error("l2:\n  assoc: 4\n  line_size: 96\n").what(),
               "l2.yaml:3: l2.line_size: 96 is not a power of two");
  EXPECT_STREQ(l2_config_error("l2:\n  size: 1000000\n").what(),
               "l2.yaml:2: l2.size: 1MB is not a multiple of line_size x assoc x banks = 128 x 16 x 64 = "
               "131072 B");
  EXPECT_THAT(l2_config_error("l2:\n  asoc: 8\n").what(), HasSubstr("l2.yaml:2: l2.asoc: unknown key (did you mean 'assoc'?)"));
  EXPECT_THAT(l2_config_error("l2:\n  replacement: fifo\n").what(), HasSubstr("l2.yaml:2: l2.replacement:"));
  EXPECT_THAT(l2_config_error("l2:\n  clock: fast\n").what(), HasSubstr("l2.yaml:2: l2.clock:"));
  EXPECT_THAT(l2_config_error("l2:\n  uncached: cached\n").what(),
              HasSubstr("l2.yaml:2: l2.uncached:"));
  EXPECT_THAT(l2_config_error("l2:\n  local_copy_priority: sms_first\n").what(),
              HasSubstr("l2.yaml:2: l2.local_copy_priority:"));
  EXPECT_THAT(l2_config_error("l2:\n  hub_transactions: -1\n").what(), HasSubstr("l2.yaml:2: l2.hub_transactions:"));
  EXPECT_THAT(l2_config_error("l2:\n  hub_transaction: 8\n").what(),
              HasSubstr("l2.yaml:2: l2.hub_transaction: unknown key (did you mean 'hub_transactions'?)"));
  EXPECT_THAT(l2_config_error("l2:\n  max_outstanding_misses: 0\n").what(),
              HasSubstr("l2.yaml:2: l2.max_outstanding_misses:"));
  EXPECT_THAT(l2_config_error("l2:\n  size: 16MiB\n  bank_bytes_per_cycle: 0\n").what(),
              HasSubstr("l2.yaml:3: l2.bank_bytes_per_cycle:"));
}

TEST(L2Config, ConstructorRejectsWhatTheReaderWould) {
  Simulator sim;
  Component top(sim, "gpu0");
  Harness ok;  // a valid one builds
  FakeMemory mem(top, Tick::ns(1));
  L2Config c = small_config();
  c.banks = 6;
  EXPECT_THROW(L2Cache(top, "bad_banks", c, mem), std::invalid_argument);
  c = small_config();
  c.value_granule = 96;
  EXPECT_THROW(L2Cache(top, "bad_granule", c, mem), std::invalid_argument);
}

}  // namespace
}  // namespace t3sim
