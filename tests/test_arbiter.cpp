// Arbitration policies decided on hand-built queue states (T3 §4.5): a policy sees
// only an ArbiterView, so each decision is a plain function call here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "models/mc/i_arbiter.h"
#include "models/mc/impl/mca.h"
#include "sim/config.h"
#include "sim/error.h"
#include "sim/simulator.h"

namespace t3sim {
namespace {

using ::testing::HasSubstr;
constexpr Stream kC = Stream::kCompute;
constexpr Stream kM = Stream::kCommunication;
constexpr std::uint32_t kUnlimited = ArbiterConfig::kUnlimited;

// A queue state: how many wait per stream, whether their heads fit, when they came.
struct State {
  std::uint64_t now = 100;
  std::uint32_t compute = 0, comm = 0;
  std::uint64_t compute_arrival = 0, comm_arrival = 0;
  std::uint32_t occupancy = 0, capacity = 64;
  bool compute_fits = true, comm_fits = true;
  std::uint32_t comm_in_queue = 0;
};

ArbiterView view(const State& s) {
  ArbiterView v;
  v.now = Cycles(s.now);
  v.occupancy = s.occupancy;
  v.capacity = s.capacity;
  v[kC] = StreamQueueState{s.compute, s.compute > 0 && s.compute_fits, Cycles(s.compute_arrival), 0};
  v[kM] = StreamQueueState{s.comm, s.comm > 0 && s.comm_fits, Cycles(s.comm_arrival), s.comm_in_queue};
  return v;
}

class ArbiterTest : public ::testing::Test {
 protected:
  std::unique_ptr<Arbiter> make(const std::string& type, ArbiterConfig cfg = {}) {
    cfg.type = type;
    return make_arbiter(mc_, cfg);
  }
  // choose() and, like the controller, report the admission.
  std::optional<Stream> admit(Arbiter& a, const State& s) {
    const ArbiterView v = view(s);
    a.observe(v);
    const auto choice = a.choose(v);
    if (choice) a.on_admit(*choice, v);
    return choice;
  }
  Simulator sim_{1};
  Component mc_{sim_, "mc"};
};

TEST_F(ArbiterTest, NothingWaitingOrNothingFitsAdmitsNothing) {
  for (const RegistryEntry& entry : arbiter_types()) {
    const std::string& type = entry.name;
    auto a = make(type);
    EXPECT_EQ(a->choose(view({})), std::nullopt) << type;
    EXPECT_EQ(a->choose(view({.compute = 3, .comm = 2, .compute_fits = false, .comm_fits = false})),
              std::nullopt)
        << type;
  }
}

TEST_F(ArbiterTest, RegistryNamesEachPolicyOnceWithADescription) {
  std::vector<std::string> names;
  for (const RegistryEntry& entry : arbiter_types()) {
    names.push_back(entry.name);
    EXPECT_FALSE(entry.description.empty()) << entry.name;
    EXPECT_EQ(entry.description.find('\n'), std::string::npos) << entry.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"compute-first", "fr-fcfs", "mca", "round-robin"}));
  try {
    make("lottery");
    ADD_FAILURE() << "an unknown arbiter was made";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown arbiter type 'lottery' (registered: compute-first, fr-fcfs, mca, round-robin)");
  }
}

TEST_F(ArbiterTest, FrFcfsIsStreamBlindOldestFirst) {
  auto a = make("fr-fcfs");
  EXPECT_EQ(a->choose(view({.compute = 1, .comm = 1, .compute_arrival = 50, .comm_arrival = 40})), kM);
  EXPECT_EQ(a->choose(view({.compute = 1, .comm = 1, .compute_arrival = 40, .comm_arrival = 50})), kC);
  EXPECT_EQ(a->choose(view({.compute = 1, .comm = 1, .compute_arrival = 40, .comm_arrival = 40})), kC);
  // An older head that does not fit does not block a younger one that does.
  EXPECT_EQ(a->choose(view({.compute = 1, .comm = 1, .compute_arrival = 50, .comm_arrival = 40,
                            .comm_fits = false})),
            kC);
  // Occupancy does not matter to it.
  EXPECT_EQ(a->choose(view({.comm = 1, .occupancy = 63})), kM);
}

TEST_F(ArbiterTest, RoundRobinAlternatesAndFallsBack) {
  auto a = make("round-robin");
  const State both{.compute = 5, .comm = 5};
  std::vector<Stream> order;
  for (int i = 0; i < 4; ++i) order.push_back(*admit(*a, both));
  EXPECT_EQ(order, (std::vector<Stream>{kC, kM, kC, kM}));
  // Falls back to the only stream with work, repeatedly.
  EXPECT_EQ(admit(*a, {.comm = 5}), kM);  // compute preferred but empty
  EXPECT_EQ(admit(*a, {.comm = 5}), kM);
  EXPECT_EQ(admit(*a, both), kC);
  // The preferred stream's head does not fit: the other goes.
  EXPECT_EQ(admit(*a, {.compute = 5, .comm = 5, .compute_fits = false}), kM);
  // No matter how full the DRAM queues, round-robin lets communication in: the
  // behaviour T3 §6.1.2 shows stalling the GEMM's reads.
  EXPECT_EQ(admit(*a, {.compute = 5, .comm = 5, .occupancy = 60}), kC);
  EXPECT_EQ(admit(*a, {.compute = 5, .comm = 5, .occupancy = 61}), kM);
}

TEST_F(ArbiterTest, ComputeFirstAlwaysPrefersCompute) {
  auto a = make("compute-first");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(admit(*a, {.compute = 5, .comm = 5, .comm_arrival = 0}), kC);
  EXPECT_EQ(admit(*a, {.comm = 5, .occupancy = 63}), kM);  // no occupancy limit
  EXPECT_EQ(admit(*a, {.compute = 5, .comm = 5, .compute_fits = false}), kM);
}

ArbiterConfig mca(std::uint32_t threshold, std::uint64_t starvation = 1000) {
  ArbiterConfig c;
  c.threshold = threshold;
  c.starvation_limit = starvation;
  return c;
}

TEST_F(ArbiterTest, McaComputeFirstAndCommunicationBelowThreshold) {
  auto a = make("mca", mca(10));
  EXPECT_EQ(admit(*a, {.compute = 1, .comm = 1, .comm_arrival = 99}), kC);
  // Communication alone: only while occupancy < threshold.
  EXPECT_EQ(admit(*a, {.comm = 1, .comm_arrival = 99, .occupancy = 9}), kM);
  EXPECT_EQ(a->choose(view({.comm = 1, .comm_arrival = 99, .occupancy = 10})), std::nullopt);
  EXPECT_EQ(a->choose(view({.comm = 1, .comm_arrival = 99, .occupancy = 40})), std::nullopt);
  // A compute head that does not fit does not hold communication back below the threshold.
  EXPECT_EQ(a->choose(view({.compute = 1, .comm = 1, .comm_arrival = 99, .occupancy = 5,
                            .compute_fits = false})),
            kM);
}

TEST_F(ArbiterTest, McaUnlimitedThresholdNeverHoldsCommunication) {
  auto a = make("mca", mca(kUnlimited));
  EXPECT_EQ(a->choose(view({.comm = 1, .occupancy = 63})), kM);
  EXPECT_EQ(a->choose(view({.compute = 1, .comm = 1, .occupancy = 63})), kC);
}

TEST_F(ArbiterTest, McaStarvationLimitForcesCommunication) {
  auto a = make("mca", mca(4, 500));
  // Held since cycle 1000 (its arrival; no communication admitted yet).
  State held{.now = 1499, .compute = 8, .comm = 3, .comm_arrival = 1000, .occupancy = 30};
  EXPECT_EQ(a->choose(view(held)), kC);
  EXPECT_EQ(a->next_change(view(held)), Cycles(1500));
  held.now = 1500;
  EXPECT_EQ(admit(*a, held), kM);  // forced, ahead of compute
  // The clock restarts at the forced admission.
  held.now = 1501;
  EXPECT_EQ(admit(*a, held), kC);
  EXPECT_EQ(a->next_change(view(held)), Cycles(2000));
  held.now = 2000;
  EXPECT_EQ(admit(*a, held), kM);
  // Without a waiting communication request there is no timer.
  EXPECT_EQ(a->next_change(view({.now = 2100, .compute = 8})), std::nullopt);
}

TEST_F(ArbiterTest, McaDrainsCommunicationAtTheKernelBoundary) {
  auto a = make("mca", mca(5));
  const State full{.comm = 10, .comm_arrival = 99, .occupancy = 50};
  EXPECT_EQ(a->choose(view(full)), std::nullopt);
  a->on_kernel_end(Cycles(100));
  EXPECT_EQ(a->choose(view(full)), kM);
  a->on_kernel_begin(Cycles(200));
  EXPECT_EQ(a->choose(view(full)), std::nullopt);
}

TEST_F(ArbiterTest, McaDynamicRulePicksSmallerThresholdsForMemoryIntensiveKernels) {
  const std::vector<std::uint32_t> set{5, 10, 30, kUnlimited};
  // Leave room in the queues for the compute occupancy observed: capacity - occupancy.
  EXPECT_EQ(McaArbiter::pick_threshold(set, 0.0, 64), kUnlimited);
  EXPECT_EQ(McaArbiter::pick_threshold(set, 20.0, 64), 30u);
  EXPECT_EQ(McaArbiter::pick_threshold(set, 34.0, 64), 30u);
  EXPECT_EQ(McaArbiter::pick_threshold(set, 34.5, 64), 10u);
  EXPECT_EQ(McaArbiter::pick_threshold(set, 50.0, 64), 10u);
  EXPECT_EQ(McaArbiter::pick_threshold(set, 55.0, 64), 5u);
  EXPECT_EQ(McaArbiter::pick_threshold(set, 63.0, 64), 5u);  // none fits: the smallest
  // Monotone: more memory-intensive never gets a larger threshold.
  std::uint32_t previous = kUnlimited;
  for (double occ = 0; occ <= 64; occ += 0.5) {
    const std::uint32_t t = McaArbiter::pick_threshold(set, occ, 64);
    EXPECT_LE(t, previous) << occ;
    previous = t;
  }
}

TEST_F(ArbiterTest, McaDynamicProfilesTheKernelAloneThenChooses) {
  ArbiterConfig cfg = mca(10);
  cfg.dynamic = true;
  cfg.profile_cycles = 1000;
  auto a = make("mca", cfg);
  auto& m = dynamic_cast<McaArbiter&>(*a);
  a->on_kernel_begin(Cycles(0));
  EXPECT_TRUE(m.profiling());
  // Compute alone holds 50 of 64 entries for 400 cycles, then 40 for 100 cycles.
  a->observe(view({.now = 0, .compute = 4, .occupancy = 50}));
  a->observe(view({.now = 400, .compute = 4, .occupancy = 40}));
  EXPECT_TRUE(m.profiling());
  EXPECT_EQ(a->next_change(view({.now = 400, .compute = 4, .occupancy = 40})), Cycles(1000));
  // Communication shows up at cycle 500: the profile ends. Mean = (50*400 + 40*100)/500 = 48.
  a->observe(view({.now = 500, .compute = 4, .comm = 1, .comm_arrival = 500, .occupancy = 40}));
  EXPECT_FALSE(m.profiling());
  EXPECT_EQ(m.threshold(), 10u);  // 64 - 48 = 16 of room: 10 fits, 30 does not

  // A light kernel (occupancy 2) on the next kernel start gets 30; one that leaves
  // the queues empty gets no limit.
  a->on_kernel_begin(Cycles(10'000));
  a->observe(view({.now = 10'000, .compute = 1, .occupancy = 2}));
  a->observe(view({.now = 11'000, .compute = 1, .occupancy = 2}));  // profile window over
  EXPECT_FALSE(m.profiling());
  EXPECT_EQ(m.threshold(), 30u);
  a->on_kernel_begin(Cycles(20'000));
  a->observe(view({.now = 20'000, .occupancy = 0}));
  a->observe(view({.now = 21'000, .occupancy = 0}));
  EXPECT_EQ(m.threshold(), kUnlimited);
}

// ---------------------------------------------------------------------------
// Reading `arbiter:`

ArbiterConfig read(const std::string& yaml) {
  ConfigTree tree = ConfigTree::parse(yaml, "sys.yaml");
  ResolvedConfig resolved;
  ConfigNode top(&tree.root(), "", &resolved);
  return read_arbiter_config(top.child("arbiter"));
}

std::string read_error(const std::string& yaml) {
  try {
    read(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ArbiterConfigTest, ReadsEachPolicy) {
  EXPECT_EQ(read("arbiter: {type: round-robin}\n").type, "round-robin");
  EXPECT_EQ(read("arbiter: {}\n").type, "fr-fcfs");
  const ArbiterConfig m = read("arbiter: {type: mca, threshold: 30, starvation_limit: 800}\n");
  EXPECT_EQ(m.type, "mca");
  EXPECT_EQ(m.threshold, 30u);
  EXPECT_EQ(m.starvation_limit, 800u);
  EXPECT_EQ(read("arbiter: {type: mca, threshold: unlimited}\n").threshold, kUnlimited);
  const ArbiterConfig d = read("arbiter: {type: mca, dynamic: true, thresholds: [5, 20, unlimited]}\n");
  EXPECT_TRUE(d.dynamic);
  EXPECT_EQ(d.thresholds, (std::vector<std::uint32_t>{5, 20, kUnlimited}));
}

TEST(ArbiterConfigTest, BadInputNamesFileLineAndKey) {
  EXPECT_EQ(read_error("arbiter:\n  type: mcaa\n"),
            "sys.yaml:2: arbiter.type: expected one of compute-first, fr-fcfs, mca, round-robin; got 'mcaa' "
            "(did you mean 'mca'?)");
  EXPECT_EQ(read_error("arbiter:\n  type: round-robin\n  threshold: 5\n"),
            "sys.yaml:3: arbiter.threshold: unknown key (known keys: type)");
  EXPECT_EQ(read_error("arbiter:\n  type: mca\n  threshold: -3\n"),
            "sys.yaml:3: arbiter.threshold: expected a number of requests (>= 1) or 'unlimited', got '-3'");
  EXPECT_THAT(read_error("arbiter:\n  type: mca\n  thresholds: [5, 10]\n"),
              HasSubstr("sys.yaml:3: arbiter.thresholds: only used with dynamic: true"));
  EXPECT_THAT(read_error("arbiter:\n  type: mca\n  treshold: 5\n"),
              HasSubstr("arbiter.treshold: unknown key (did you mean 'threshold'?)"));
}

}  // namespace
}  // namespace t3sim
