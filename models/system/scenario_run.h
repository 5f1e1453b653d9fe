#pragma once
// One simulation of a scenario on a node: what every multi-GPU driver (the sub-layer,
// c3 and the overlap kinds; configuration.h) shares, so that each keeps only what its
// workload adds. It owns the node and keeps, per simulated GPU, the ledger of the
// scenario's tasks (a kernel or a collective each GPU runs once: "gemm", "collective",
// "reduce_scatter"...): when each started and ended, and how much work is still open. It
// launches kernels and starts collectives as tasks (the memory's kernel boundaries told,
// the ledger kept), runs the simulator, and tells a run that reached its time limit from
// one that is stuck, with the in-flight report either way.
//
// Times are reported times (Simulator::reported_now(): with the stages sampling skipped;
// the simulated time when nothing is sampled). A task's time over the node is the max
// over GPUs of its ends minus the max of its starts (T3 §5.3's phases; seed 003's
// kernels).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/gpu/gpu.h"
#include "models/node/node.h"
#include "sim/simulator.h"

namespace t3sim {

class Collective;

class ScenarioRun {
 public:
  // A task, as add_task() numbered it.
  using Task = std::uint32_t;

  // Builds the node. `what`: what the scenario runs, for errors ("the sub-layer").
  ScenarioRun(Simulator& sim, const NodeConfig& node, std::string what);
  virtual ~ScenarioRun();
  ScenarioRun(const ScenarioRun&) = delete;
  ScenarioRun& operator=(const ScenarioRun&) = delete;

  Node& node() { return *node_; }
  const Node& node() const { return *node_; }
  Simulator& sim() { return sim_; }
  std::uint64_t seed() const { return sim_.seed(); }
  std::uint32_t simulated_gpus() const { return node_->simulated_gpus(); }
  std::uint64_t events() const { return sim_.dispatched(); }

  // Declares a task every GPU runs once (before the run).
  Task add_task(std::string name);
  const std::string& task_name(Task t) const { return tasks_.at(t); }
  std::size_t task_count() const { return tasks_.size(); }

  // ---- the chained procedure (every kind's sequential one): a task starts on a GPU
  // when every task it depends on has ended on that GPU
  // How task t starts on GPU g (called in g's partition): it must begin t there at
  // once, through launch_kernel or start_collective, whose ends continue the chain.
  using TaskStart = std::function<void(std::uint32_t g)>;
  // What a task waits for, and why: the chained procedure waits for both kinds; an
  // ideal overlap (critical_path) keeps only kData.
  struct Dependency {
    enum class Kind {
      // It needs the other's whole result, or overwrites what the other wrote (the
      // sub-layer's AG: the RS's reduced chunks, gathered over the GEMM's output).
      kData,
      // The procedure runs it after the other only so each runs alone, in the
      // library's bulk-synchronous order; an overlap may run the two together,
      // because they are independent (c3's GEMM and collective) or because it takes
      // the other's output piece by piece as it is written (the sub-layer's RS after
      // the GEMM as T3 §5.3's ideal treats it; the overlap kinds' two phases).
      kOrder,
    };
    Task task;
    Kind kind;
  };
  static Dependency needs(Task t) { return {t, Dependency::Kind::kData}; }
  static Dependency only_after(Task t) { return {t, Dependency::Kind::kOrder}; }
  // Task t runs in the chained procedure: started by `start` once every task of `after`
  // has ended on the GPU, or at the procedure's start when `after` is empty.
  // InternalError for an undeclared task.
  void chain_task(Task t, std::vector<Dependency> after, TaskStart start);
  // Starts the chained procedure on GPU g (the caller is in g's partition): the tasks
  // without dependencies, in declaration order; from then on, as a task ends on a GPU
  // (after its own end callback, in the same event, so nothing moves in time), the
  // tasks waiting for it whose dependencies have all ended there, in declaration
  // order. The first call checks the declarations: InternalError naming a task without
  // a start, or the tasks of a dependency cycle.
  void start_chained(std::uint32_t g);
  // Starts the overlapped procedure on GPU g (every kind's concurrent one): the same
  // declarations with the order-only dependencies dropped. Every task without a data
  // dependency starts now, those of `first` in that order (a configuration's launch
  // order: c3's comm-first starts the collective first), then the others in
  // declaration order; from then on each task waits for its data dependencies only, as
  // in the chained procedure. The first call checks the declarations as
  // start_chained's does; InternalError for a task of `first` that needs another.
  void start_overlapped(std::uint32_t g, const std::vector<Task>& first);
  // The declared tasks overlapped as far as their data dependencies allow, without
  // contention: the longest path through them over the kData dependencies only (the
  // order-only ones dropped), task t weighing alone[t] (its time run alone). The ideal
  // configurations' time (ideal-overlap, ideal-rs-nmc, ideal). InternalError unless
  // there is one time per task, or for a dependency cycle (naming its tasks).
  Tick critical_path(const std::vector<Tick>& alone) const;

  // ---- the ledger (in GPU g's partition)
  // Task t starts on GPU g now: it is open work until task_ends.
  void task_begins(std::uint32_t g, Task t);
  // Task t ended on GPU g at `at` (now, or earlier for one whose end is known later).
  void task_ends(std::uint32_t g, Task t, Tick at);
  void task_ends(std::uint32_t g, Task t) { task_ends(g, t, sim_.reported_now()); }
  // Work that is no task of its own (a fused form's transfers): open until work_ends.
  void work_begins(std::uint32_t g) {
    ++open_[g];
    began_[g] = 1;
  }
  void work_ends(std::uint32_t g, Tick at);

  // Launches a kernel on GPU g now as task t (none: untracked work), with the memory's
  // kernel boundaries (MCA's kernel profile, the L2's write-back of its output);
  // `then` runs at its end, after the ledger, and then, in the chained procedure, the
  // tasks waiting for t. Returns the kernel's id on GPU g.
  std::uint32_t launch_kernel(std::uint32_t g, std::optional<Task> t, KernelLaunch k,
                              std::function<void()> then = {});
  // Starts GPU g's part of collective c now as task t; then(h) runs when GPU h's part
  // ends (after the ledger), and then, in the chained procedure, the tasks waiting for t.
  void start_collective(std::uint32_t g, Task t, Collective& c, std::function<void(std::uint32_t)> then = {});

  // Runs the simulator to completion. Throws SimulationError, with the in-flight report,
  // when run.max_time is reached or nothing is left to simulate before every GPU has
  // begun something, ended every declared task and closed its other work.
  void simulate(Tick max_time);

  // ---- after the run
  Tick started(std::uint32_t g, Task t) const { return start_[g][t]; }
  Tick ended(std::uint32_t g, Task t) const { return end_[g][t]; }
  // Over the node: the max over GPUs of its starts / of its ends, and end - start.
  Tick start(Task t) const;
  Tick end(Task t) const;
  Tick time(Task t) const { return end(t) - start(t); }
  // The last end of anything on GPU g / on any GPU.
  Tick last_end(std::uint32_t g) const { return last_end_[g]; }
  Tick end() const;
  // (max - min) / max over the simulated GPUs of each one's last end (seed 000 Figure
  // 14's execution-time skew; 0 with one simulated GPU).
  double skew() const;

 private:
  // Which procedure runs the declared tasks: none yet (their starts are the driver's), the
  // chained or the overlapped one.
  enum class Procedure : std::uint8_t { kUnstarted, kChained, kOverlapped };
  // The chained or overlapped procedure: on GPU g, starts the tasks waiting for t
  // whose dependencies (the data ones, overlapped) have all ended there (no-op before
  // either procedure started).
  void start_dependents(std::uint32_t g, Task t);
  void start_chained_task(std::uint32_t g, Task t);
  // `procedure` runs the declared tasks; the declarations checked on the first call.
  void begin_procedure(Procedure procedure);
  // Every chained task has a start and no dependency cycle (start_chained's first call).
  void check_chain() const;
  // The tasks, each after every task it waits for; InternalError naming the tasks a
  // dependency cycle keeps from ever starting.
  std::vector<Task> dependency_order() const;

  Simulator& sim_;
  std::string what_;
  std::unique_ptr<Node> node_;
  std::vector<std::string> tasks_;
  std::vector<TaskStart> chained_start_;           // [task]: unset for a task outside the chain
  std::vector<std::vector<Dependency>> after_;  // [task]: what it waits for
  std::vector<std::vector<Task>> waiting_;      // [task]: what waits for it
  // Set by start_chained / start_overlapped on any GPU: the partitions start their GPUs
  // on their own threads.
  std::atomic<Procedure> procedure_ = Procedure::kUnstarted;
  std::vector<std::vector<Tick>> start_, end_;        // [gpu][task]
  std::vector<std::vector<std::uint8_t>> begun_, done_;  // [gpu][task] (bytes: GPUs may run on different threads)
  std::vector<std::uint32_t> open_;
  std::vector<std::uint8_t> began_;  // per GPU: anything began
  std::vector<Tick> last_end_;
};

}  // namespace t3sim
