#pragma once
// The one driver every multi-GPU workload kind runs through (issue 44 item 2): it takes
// a configuration's procedure (configuration.h) and makes the simulations it needs, on
// the simulators they need, keeping or taking the chained run through the isolated-run
// store. A kind is a Scenario: it declares its tasks on a ScenarioRun (scenario_run.h),
// builds and simulates its runs when the driver asks, and reports its results from what
// the driver hands back. So the kinds keep what differs (their tasks, their numbers) and
// the procedure, the simulators and the store live once, here:
//
//   the chained run    the tasks each alone, after what they depend on (sequential's
//                      run; c3's isolated times; an overlap op's isolated phases).
//                      Made when the procedure needs it (Scenario::runs_chained): the
//                      chained and critical-path ones always, an own or overlapped one
//                      where the kind compares with it (c3's slowdowns, an overlap op's
//                      speedup; not the sub-layer's t3 or fused)
//   a run of its own   the overlapped or own procedure's (Scenario::runs_own), on the
//                      main simulator, after the chained run's node is gone (one node in
//                      memory at a time)
//
// The chained run is on the main simulator when it is the only run (its stats and
// timeline are the run's), else on a simulator of its own, whose events the driver
// reports apart (ScenarioRuns::extra_events). With a store (share_chained_run):
//
//   keep   a chained run simulated here is kept under the key, with its event count
//   take   every procedure but the chained one takes a kept run instead of simulating
//          it (sequential simulates its run, so that its stats are its own): nothing is
//          simulated for it here, and its events are the kept count
//
// A kept entry that fails a check is simulated again, with a warning; one that ended
// past this run's time limit is simulated again, to fail as it must. The results are the
// same either way: the runs are deterministic, and the key covers what they depend on.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "models/system/configuration.h"
#include "models/system/result_store.h"
#include "sim/error.h"
#include "sim/simulator.h"
#include "sim/time.h"

namespace t3sim {

// What a workload kind gives the driver. `Chained` is its chained run's result.
template <class Chained>
class Scenario {
 public:
  virtual ~Scenario() = default;
  // The kind's name, for warnings ("sublayer", "c3", "overlap").
  virtual const char* scenario_name() const = 0;
  // Whether `procedure` needs the chained run / makes a run of its own.
  virtual bool runs_chained(Procedure procedure) const = 0;
  virtual bool runs_own(Procedure procedure) const = 0;

  // Builds the chained run on `sim` (at the driver's construction, so that `t3sim
  // validate` meets what cannot be built), or the run of its own (then too when there is
  // no chained run, else once the chained run is dropped). UserError for what the node
  // cannot run.
  virtual void build_chained(Simulator& sim) = 0;
  virtual void build_own(Simulator& sim) = 0;
  // Simulates the run built and checks it; throws SimulationError (a deadlock, the time
  // limit, a failed check).
  virtual Chained simulate_chained(Tick max_time) = 0;
  virtual void simulate_own(Tick max_time) = 0;
  // Drops the chained run (its node), simulated or not, before a run of its own is built
  // and the chained run's simulator is gone (also from the driver's destructor: the
  // driver is the scenario's last member, so the run is still there).
  virtual void drop_chained() = 0;

  // The store's form of a chained result and back: the same numbers (the driver adds the
  // event count). chained_from_entry throws BadCacheEntry for a field that fails its check.
  virtual nlohmann::json chained_entry(const Chained& r) const = 0;
  virtual Chained chained_from_entry(const nlohmann::json& entry) const = 0;
  // When the chained run ended (a kept one past max_time is simulated again).
  virtual Tick chained_end(const Chained& r) const = 0;
};

// What the driver's runs gave.
template <class Chained>
struct ScenarioRuns {
  std::optional<Chained> chained;  // the chained run's result, where the procedure needs it
  bool chained_taken = false;      // taken from the store: nothing simulated for it here
  // Events not on the main simulator: the chained run's when it ran on a simulator of
  // its own, or its kept count when it was taken.
  std::uint64_t extra_events = 0;
  bool own_ran = false;
};

// The store half, shared by every kind (scenario_driver.cpp).
namespace scenario_store {
// The entry under `key`; nullopt for a miss, or, with a warning naming `scenario`, for
// one that cannot be trusted.
std::optional<nlohmann::json> load(ResultStore& store, const std::string& key, const char* scenario);
// Warns that `scenario`'s kept entry under the store failed a check (`why`).
void warn_bad(const char* scenario, const std::string& why);
// The kept events of `entry` (BadCacheEntry if missing).
std::uint64_t events(const nlohmann::json& entry);
// Says (info, stderr) that `scenario` took its chained run from the store.
void note_taken(const char* scenario);
}  // namespace scenario_store

template <class Chained>
class ScenarioDriver {
 public:
  // Builds the first run the procedure makes (the chained one, on a simulator of its own
  // when a run of its own follows; else the run of its own, on `main`).
  ScenarioDriver(Simulator& main, Scenario<Chained>& scenario, Procedure procedure, std::uint64_t seed)
      : main_(main), scenario_(scenario), procedure_(procedure) {
    chained_ = scenario_.runs_chained(procedure_);
    own_ = scenario_.runs_own(procedure_);
    if (chained_) {
      if (own_) own_sim_ = std::make_unique<Simulator>(seed);
      scenario_.build_chained(own_sim_ ? *own_sim_ : main_);
    } else if (own_) {
      scenario_.build_own(main_);
      own_built_ = true;
    }
  }

  // A chained run built on the driver's simulator and never run (validate) goes first: its
  // node refers to that simulator.
  ~ScenarioDriver() {
    if (own_sim_) scenario_.drop_chained();
  }
  ScenarioDriver(const ScenarioDriver&) = delete;
  ScenarioDriver& operator=(const ScenarioDriver&) = delete;

  Procedure procedure() const { return procedure_; }
  // The simulations run() makes (validate's work estimate).
  int simulations() const { return (chained_ ? 1 : 0) + (own_ ? 1 : 0); }

  // Keep the chained run in `store` (which must outlive the run) under `key`, everything
  // it depends on, and take it from there (above). Null: none.
  void share_chained_run(ResultStore* store, std::string key) {
    store_ = store;
    key_ = std::move(key);
  }

  // Makes the runs, once.
  ScenarioRuns<Chained> run(Tick max_time) {
    if (ran_) throw InternalError(std::string(scenario_.scenario_name()) + ": run() called twice");
    ran_ = true;
    ScenarioRuns<Chained> out;
    if (chained_) {
      if (store_ != nullptr && procedure_ != Procedure::kChained) take(out, max_time);
      if (!out.chained) {
        Simulator& sim = own_sim_ ? *own_sim_ : main_;
        out.chained = scenario_.simulate_chained(max_time);
        if (own_sim_) out.extra_events = sim.dispatched();
        if (store_ != nullptr) {
          nlohmann::json entry = scenario_.chained_entry(*out.chained);
          entry["events"] = sim.dispatched();
          store_->save(key_, entry);
        }
      }
      if (own_) {
        scenario_.drop_chained();
        own_sim_.reset();
      }
    }
    if (own_) {
      if (!own_built_) scenario_.build_own(main_);
      scenario_.simulate_own(max_time);
      out.own_ran = true;
    }
    return out;
  }

 private:
  void take(ScenarioRuns<Chained>& out, Tick max_time) {
    const std::optional<nlohmann::json> entry = scenario_store::load(*store_, key_, scenario_.scenario_name());
    if (!entry) return;
    try {
      Chained r = scenario_.chained_from_entry(*entry);
      const std::uint64_t events = scenario_store::events(*entry);
      if (scenario_.chained_end(r) > max_time) return;  // simulated, to fail as it must
      out.chained = std::move(r);
      out.chained_taken = true;
      out.extra_events = events;
      scenario_store::note_taken(scenario_.scenario_name());
    } catch (const BadCacheEntry& bad) {
      scenario_store::warn_bad(scenario_.scenario_name(), bad.why);
    }
  }

  Simulator& main_;
  Scenario<Chained>& scenario_;
  Procedure procedure_;
  bool chained_ = false, own_ = false, own_built_ = false, ran_ = false;
  std::unique_ptr<Simulator> own_sim_;  // the chained run's when a run of its own follows
  ResultStore* store_ = nullptr;
  std::string key_;
};

}  // namespace t3sim
