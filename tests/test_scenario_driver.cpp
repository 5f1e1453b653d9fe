// The one driver every kind runs through (models/system/scenario_driver.h), with a fake
// scenario: which runs each procedure makes, on which simulator, in what order, and how
// the chained run is kept in and taken from the isolated-run store.

#include "models/system/scenario_driver.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/event_queue.h"

namespace t3sim {
namespace {

// A chained run's result: when it ended and a number it computed.
struct FakeChained {
  Tick end;
  std::uint64_t value = 0;
};

// Keeps entries in memory.
class MemoryStore final : public ResultStore {
 public:
  std::optional<nlohmann::json> load(const std::string& key, std::string& why) override {
    ++loads;
    const auto it = entries.find(key);
    if (it == entries.end()) return std::nullopt;
    if (!it->second.is_object()) {
      why = "is damaged";
      return std::nullopt;
    }
    return it->second;
  }
  void save(const std::string& key, const nlohmann::json& entry) override {
    ++saves;
    entries[key] = entry;
  }
  std::map<std::string, nlohmann::json> entries;
  int loads = 0, saves = 0;
};

// Each run schedules `events` events one picosecond apart on the simulator it was built
// on; the chained run's value is the number of events it saw. It records what the
// driver asked of it, in order.
class FakeScenario final : public Scenario<FakeChained> {
 public:
  FakeScenario(bool chained, bool own) : chained_(chained), own_(own) {}

  const char* scenario_name() const override { return "fake"; }
  bool runs_chained(Procedure procedure) const override { return chained_ || procedure != Procedure::kOwn; }
  bool runs_own(Procedure procedure) const override { return own_ && procedure == Procedure::kOwn; }
  void build_chained(Simulator& sim) override {
    calls.push_back("build_chained");
    chained_sim = &sim;
    chained_run = std::make_unique<Ticks>(sim, 5);
  }
  void build_own(Simulator& sim) override {
    calls.push_back("build_own");
    own_sim = &sim;
    own_run = std::make_unique<Ticks>(sim, 3);
  }
  FakeChained simulate_chained(Tick max_time) override {
    calls.push_back("simulate_chained");
    chained_run->sim.run(max_time);
    chained_events = chained_run->sim.dispatched();
    return FakeChained{chained_run->last, chained_run->fired};
  }
  void simulate_own(Tick max_time) override {
    calls.push_back("simulate_own");
    own_run->sim.run(max_time);
    own_events = own_run->sim.dispatched();
  }
  void drop_chained() override {
    calls.push_back("drop_chained");
    chained_run.reset();
  }
  nlohmann::json chained_entry(const FakeChained& r) const override {
    return {{"end_ps", r.end.ps()}, {"value", r.value}};
  }
  FakeChained chained_from_entry(const nlohmann::json& j) const override {
    return FakeChained{cached_time(j, "end_ps"), cached_count(j, "value")};
  }
  Tick chained_end(const FakeChained& r) const override { return r.end; }

  // `n` events one picosecond apart, counted.
  struct Ticks {
    Ticks(Simulator& s, int n) : sim(s) {
      for (int i = 0; i < n; ++i) {
        events.push_back(std::make_unique<CallbackEvent>(EventSource{}, "tick", [this] {
          ++fired;
          last = sim.now();
        }));
        sim.schedule(*events.back(), Tick(i + 1));
      }
    }
    Simulator& sim;
    std::vector<std::unique_ptr<CallbackEvent>> events;
    std::uint64_t fired = 0;
    Tick last;
  };

  std::vector<std::string> calls;
  Simulator* chained_sim = nullptr;
  Simulator* own_sim = nullptr;
  std::unique_ptr<Ticks> chained_run, own_run;
  // Each simulation's events (its ticks and the simulator's watchdog check).
  std::uint64_t chained_events = 0, own_events = 0;

 private:
  bool chained_, own_;
};

using Calls = std::vector<std::string>;

// The chained procedure: one run, on the main simulator; no run of its own.
TEST(ScenarioDriver, TheChainedProcedureRunsTheChainedRunOnTheMainSimulator) {
  Simulator main(1);
  FakeScenario s(true, true);
  ScenarioDriver<FakeChained> driver(main, s, Procedure::kChained, 1);
  EXPECT_EQ(driver.simulations(), 1);
  EXPECT_EQ(s.chained_sim, &main);
  const ScenarioRuns<FakeChained> runs = driver.run(Tick::max());
  ASSERT_TRUE(runs.chained.has_value());
  EXPECT_EQ(runs.chained->value, 5u);
  EXPECT_EQ(runs.chained->end, Tick(5));
  EXPECT_FALSE(runs.chained_taken);
  EXPECT_FALSE(runs.own_ran);
  EXPECT_EQ(runs.extra_events, 0u);  // the main simulator's own
  EXPECT_EQ(main.dispatched(), s.chained_events);
  EXPECT_EQ(s.calls, (Calls{"build_chained", "simulate_chained"}));
  EXPECT_THROW(driver.run(Tick::max()), InternalError);  // once
}

// A run of its own after the chained one: the chained run on a simulator of its own,
// dropped before the own run is built on the main one; its events reported apart.
TEST(ScenarioDriver, ARunOfItsOwnFollowsTheChainedRunBuiltOnASimulatorOfItsOwn) {
  Simulator main(1);
  FakeScenario s(true, true);
  ScenarioDriver<FakeChained> driver(main, s, Procedure::kOwn, 1);
  EXPECT_EQ(driver.simulations(), 2);
  ASSERT_NE(s.chained_sim, nullptr);
  EXPECT_NE(s.chained_sim, &main);
  EXPECT_EQ(s.own_sim, nullptr);  // built once the chained run is gone
  const ScenarioRuns<FakeChained> runs = driver.run(Tick::max());
  EXPECT_EQ(s.calls, (Calls{"build_chained", "simulate_chained", "drop_chained", "build_own", "simulate_own"}));
  EXPECT_EQ(s.own_sim, &main);
  EXPECT_TRUE(runs.own_ran);
  EXPECT_EQ(runs.chained->value, 5u);
  EXPECT_GE(s.chained_events, 5u);
  EXPECT_EQ(runs.extra_events, s.chained_events);
  EXPECT_EQ(main.dispatched(), s.own_events);
}

// Without a chained run, the own run is built at construction, on the main simulator.
TEST(ScenarioDriver, WithoutAChainedRunTheOwnRunIsBuiltAtConstruction) {
  Simulator main(1);
  FakeScenario s(false, true);
  ScenarioDriver<FakeChained> driver(main, s, Procedure::kOwn, 1);
  EXPECT_EQ(driver.simulations(), 1);
  EXPECT_EQ(s.calls, (Calls{"build_own"}));
  const ScenarioRuns<FakeChained> runs = driver.run(Tick::max());
  EXPECT_FALSE(runs.chained.has_value());
  EXPECT_TRUE(runs.own_ran);
  EXPECT_EQ(s.calls, (Calls{"build_own", "simulate_own"}));
}

// A chained run built on the driver's simulator and never run (validate) is dropped
// before that simulator goes.
TEST(ScenarioDriver, AnUnrunChainedRunIsDroppedBeforeItsSimulator) {
  Simulator main(1);
  FakeScenario s(true, true);
  {
    ScenarioDriver<FakeChained> driver(main, s, Procedure::kOwn, 1);
  }
  EXPECT_EQ(s.calls, (Calls{"build_chained", "drop_chained"}));
  EXPECT_EQ(s.chained_run, nullptr);
}

// The store: sequential (chained) keeps and never takes; the others take what was kept,
// simulating nothing for it and reporting the kept events; a damaged entry, or one that
// ended past this run's limit, is simulated again.
TEST(ScenarioDriver, TheChainedRunIsKeptAndTakenByEveryProcedureButTheChainedOne) {
  MemoryStore store;
  std::uint64_t kept_events = 0;
  {
    Simulator main(1);
    FakeScenario s(true, true);
    ScenarioDriver<FakeChained> driver(main, s, Procedure::kChained, 1);
    driver.share_chained_run(&store, "case");
    (void)driver.run(Tick::max());
    EXPECT_EQ(store.loads, 0);  // sequential simulates its own run
    ASSERT_EQ(store.entries.count("case"), 1u);
    EXPECT_EQ(store.entries["case"]["events"], s.chained_events);
    EXPECT_EQ(store.entries["case"]["value"], 5u);
    kept_events = s.chained_events;
  }
  for (const Procedure p : {Procedure::kCriticalPath, Procedure::kOwn}) {
    Simulator main(1);
    FakeScenario s(true, true);
    ScenarioDriver<FakeChained> driver(main, s, p, 1);
    driver.share_chained_run(&store, "case");
    const ScenarioRuns<FakeChained> runs = driver.run(Tick::max());
    EXPECT_TRUE(runs.chained_taken);
    EXPECT_EQ(runs.chained->value, 5u);
    EXPECT_EQ(runs.chained->end, Tick(5));
    EXPECT_EQ(runs.extra_events, kept_events);  // the kept count
    EXPECT_EQ(std::count(s.calls.begin(), s.calls.end(), "simulate_chained"), 0);
    EXPECT_EQ(main.dispatched(), s.own_events);  // nothing for the chained run
  }
  // Past this run's limit: simulated, to fail or end as a run of that limit does.
  {
    Simulator main(1);
    FakeScenario s(true, false);
    ScenarioDriver<FakeChained> driver(main, s, Procedure::kCriticalPath, 1);
    driver.share_chained_run(&store, "case");
    const ScenarioRuns<FakeChained> runs = driver.run(Tick(3));
    EXPECT_FALSE(runs.chained_taken);
    EXPECT_EQ(runs.chained->value, 3u);
  }
  // Damaged (no events; then not an object): simulated again and kept again.
  for (const nlohmann::json& damaged : {nlohmann::json{{"end_ps", 5u}, {"value", 5u}}, nlohmann::json("torn")}) {
    store.entries["case"] = damaged;
    Simulator main(1);
    FakeScenario s(true, false);
    ScenarioDriver<FakeChained> driver(main, s, Procedure::kCriticalPath, 1);
    driver.share_chained_run(&store, "case");
    const ScenarioRuns<FakeChained> runs = driver.run(Tick::max());
    EXPECT_FALSE(runs.chained_taken);
    EXPECT_EQ(runs.chained->value, 5u);
    EXPECT_EQ(main.dispatched(), s.chained_events);
    EXPECT_EQ(store.entries["case"]["events"], s.chained_events);
  }
}

}  // namespace
}  // namespace t3sim
