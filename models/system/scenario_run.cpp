#include "models/system/scenario_run.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/collectives/i_collective.h"
#include "sim/error.h"

namespace t3sim {

ScenarioRun::ScenarioRun(Simulator& sim, const NodeConfig& node, std::string what)
    : sim_(sim), what_(std::move(what)), node_(std::make_unique<Node>(sim, node)) {
  const std::uint32_t n = node_->simulated_gpus();
  start_.resize(n);
  end_.resize(n);
  begun_.resize(n);
  done_.resize(n);
  open_.assign(n, 0);
  began_.assign(n, 0);
  last_end_.assign(n, Tick());
}

ScenarioRun::~ScenarioRun() = default;

ScenarioRun::Task ScenarioRun::add_task(std::string name) {
  tasks_.push_back(std::move(name));
  chained_start_.emplace_back();
  after_.emplace_back();
  waiting_.emplace_back();
  for (std::uint32_t g = 0; g < start_.size(); ++g) {
    start_[g].push_back(Tick());
    end_[g].push_back(Tick());
    begun_[g].push_back(0);
    done_[g].push_back(0);
  }
  return static_cast<Task>(tasks_.size() - 1);
}

void ScenarioRun::chain_task(Task t, std::vector<Dependency> after, TaskStart start) {
  if (t >= tasks_.size())
    internal_error(sim_.now(), what_, fmt::format("task #{} is chained but was never declared", t), __FILE__,
                   __LINE__);
  for (const Dependency& d : after)
    if (d.task >= tasks_.size())
      internal_error(sim_.now(), what_,
                     fmt::format("task {} is chained after task #{}, which was never declared", tasks_[t], d.task),
                     __FILE__, __LINE__);
  for (const Dependency& d : after) waiting_[d.task].push_back(t);
  after_[t] = std::move(after);
  chained_start_[t] = std::move(start);
}

void ScenarioRun::check_chain() const {
  for (Task t = 0; t < tasks_.size(); ++t)
    if (!chained_start_[t])
      internal_error(sim_.now(), what_,
                     fmt::format("the chained procedure has no start for task {} (chain_task)", tasks_[t]), __FILE__,
                     __LINE__);
  dependency_order();
}

std::vector<ScenarioRun::Task> ScenarioRun::dependency_order() const {
  // Kahn's order: what never becomes ready is on a dependency cycle, or waits for one.
  std::vector<std::size_t> unmet(tasks_.size());
  std::vector<Task> ready;
  for (Task t = 0; t < tasks_.size(); ++t)
    if ((unmet[t] = after_[t].size()) == 0) ready.push_back(t);
  for (std::size_t i = 0; i < ready.size(); ++i)
    for (const Task w : waiting_[ready[i]])
      if (--unmet[w] == 0) ready.push_back(w);
  if (ready.size() == tasks_.size()) return ready;
  std::vector<std::string> stuck;
  for (Task t = 0; t < tasks_.size(); ++t)
    if (unmet[t] > 0) stuck.push_back(tasks_[t]);
  internal_error(sim_.now(), what_,
                 fmt::format("tasks {} could never start: a dependency cycle among them or before them",
                             fmt::join(stuck, ", ")),
                 __FILE__, __LINE__);
}

Tick ScenarioRun::critical_path(const std::vector<Tick>& alone) const {
  if (alone.size() != tasks_.size())
    internal_error(sim_.now(), what_,
                   fmt::format("the critical path needs a time for each of the {} tasks, not {}", tasks_.size(),
                               alone.size()),
                   __FILE__, __LINE__);
  std::vector<Tick> finish(tasks_.size());
  Tick longest;
  for (const Task t : dependency_order()) {
    Tick begin;
    for (const Dependency& d : after_[t])
      if (d.kind == Dependency::Kind::kData) begin = std::max(begin, finish[d.task]);
    finish[t] = begin + alone[t];
    longest = std::max(longest, finish[t]);
  }
  return longest;
}

void ScenarioRun::begin_procedure(Procedure procedure) {
  // Every partition may check at once: the check only reads the declarations.
  if (procedure_.load() == Procedure::kUnstarted) check_chain();
  procedure_.store(procedure);
}

void ScenarioRun::start_chained(std::uint32_t g) {
  begin_procedure(Procedure::kChained);
  for (Task t = 0; t < tasks_.size(); ++t)
    if (after_[t].empty()) start_chained_task(g, t);
}

namespace {
bool needs_another(const std::vector<ScenarioRun::Dependency>& after) {
  return std::any_of(after.begin(), after.end(),
                     [](const ScenarioRun::Dependency& d) { return d.kind == ScenarioRun::Dependency::Kind::kData; });
}
}  // namespace

void ScenarioRun::start_overlapped(std::uint32_t g, const std::vector<Task>& first) {
  begin_procedure(Procedure::kOverlapped);
  for (const Task t : first)
    if (t >= tasks_.size() || needs_another(after_[t]))
      internal_error(sim_.now(), what_,
                     fmt::format("the overlapped procedure cannot start task {} first: {}",
                                 t < tasks_.size() ? tasks_[t] : fmt::format("#{}", t),
                                 t < tasks_.size() ? "it needs another task's result" : "it was never declared"),
                     __FILE__, __LINE__);
  for (const Task t : first)
    if (begun_[g][t] == 0) start_chained_task(g, t);
  for (Task t = 0; t < tasks_.size(); ++t)
    if (!needs_another(after_[t]) && begun_[g][t] == 0) start_chained_task(g, t);
}

void ScenarioRun::start_dependents(std::uint32_t g, Task t) {
  const Procedure procedure = procedure_.load();
  if (procedure == Procedure::kUnstarted) return;
  for (const Task w : waiting_[t]) {
    const bool ready = std::all_of(after_[w].begin(), after_[w].end(), [&](const Dependency& d) {
      return done_[g][d.task] != 0 || (procedure == Procedure::kOverlapped && d.kind == Dependency::Kind::kOrder);
    });
    if (ready && begun_[g][w] == 0) start_chained_task(g, w);
  }
}

void ScenarioRun::start_chained_task(std::uint32_t g, Task t) {
  chained_start_[t](g);
  if (begun_[g][t] == 0)
    internal_error(sim_.now(), what_, fmt::format("GPU {}'s start of task {} did not begin it", g, tasks_[t]),
                   __FILE__, __LINE__);
}

void ScenarioRun::task_begins(std::uint32_t g, Task t) {
  if (begun_[g][t] != 0)
    internal_error(sim_.now(), what_, fmt::format("GPU {} began its {} twice", g, tasks_[t]), __FILE__, __LINE__);
  begun_[g][t] = 1;
  start_[g][t] = sim_.reported_now();
  work_begins(g);
}

void ScenarioRun::task_ends(std::uint32_t g, Task t, Tick at) {
  if (begun_[g][t] == 0 || done_[g][t] != 0)
    internal_error(sim_.now(), what_,
                   fmt::format("GPU {}'s {} ended {}", g, tasks_[t], done_[g][t] ? "twice" : "before it began"),
                   __FILE__, __LINE__);
  done_[g][t] = 1;
  end_[g][t] = at;
  work_ends(g, at);
}

void ScenarioRun::work_ends(std::uint32_t g, Tick at) {
  if (open_[g] == 0)
    internal_error(sim_.now(), what_, fmt::format("GPU {}: more work ended than began", g), __FILE__, __LINE__);
  --open_[g];
  last_end_[g] = std::max(last_end_[g], at);
}

std::uint32_t ScenarioRun::launch_kernel(std::uint32_t g, std::optional<Task> t, KernelLaunch k,
                                         std::function<void()> then) {
  Gpu& gpu = node_->gpu(g);
  k.on_done = [this, g, t, then = std::move(then)] {
    node_->gpu(g).memory().kernel_end();
    if (t)
      task_ends(g, *t);
    else
      work_ends(g, sim_.reported_now());
    if (then) then();
    if (t) start_dependents(g, *t);
  };
  if (t)
    task_begins(g, *t);
  else
    work_begins(g);
  gpu.memory().kernel_begin();
  return gpu.launch(std::move(k));
}

void ScenarioRun::start_collective(std::uint32_t g, Task t, Collective& c, std::function<void(std::uint32_t)> then) {
  task_begins(g, t);
  c.start(g, [this, t, then = std::move(then)](std::uint32_t h) {
    task_ends(h, t);
    if (then) then(h);
    start_dependents(h, t);
  });
}

void ScenarioRun::simulate(Tick max_time) {
  const Simulator::StopReason stop = sim_.run(max_time);
  for (std::uint32_t g = 0; g < open_.size(); ++g) {
    std::uint32_t finished = 0;
    for (Task t = 0; t < tasks_.size(); ++t) finished += done_[g][t];
    if (finished == tasks_.size() && open_[g] == 0 && began_[g] != 0) continue;
    const std::string progress =
        fmt::format("{} of {} tasks ended, {} parts of work open", finished, tasks_.size(), open_[g]);
    std::string why = stop == Simulator::StopReason::kTimeLimit
                          ? fmt::format("run.max_time ({}) reached before {} finished on GPU {} ({})",
                                        to_string(max_time), what_, g, progress)
                          : fmt::format("{} did not finish on GPU {} ({}) although nothing was left to simulate", what_,
                                        g, progress);
    why += "; in flight:";
    for (const std::string& line : sim_.in_flight_report()) why += "\n  " + line;
    throw SimulationError(why);
  }
}

Tick ScenarioRun::start(Task t) const {
  Tick at;
  for (const auto& per_gpu : start_) at = std::max(at, per_gpu[t]);
  return at;
}

Tick ScenarioRun::end(Task t) const {
  Tick at;
  for (const auto& per_gpu : end_) at = std::max(at, per_gpu[t]);
  return at;
}

Tick ScenarioRun::end() const { return *std::max_element(last_end_.begin(), last_end_.end()); }

double ScenarioRun::skew() const {
  const auto [lo, hi] = std::minmax_element(last_end_.begin(), last_end_.end());
  return hi->ps() > 0 ? static_cast<double>((*hi - *lo).ps()) / static_cast<double>(hi->ps()) : 0.0;
}

}  // namespace t3sim
