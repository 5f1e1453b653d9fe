#include "cli/run.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/result_directory.h"
#include "models/system/experiment.h"
#include "models/system/configuration.h"
#include "models/system/sublayer_configuration.h"
#include "sim/config.h"
#include "sim/error.h"
#include "sim/host_cpu.h"
#include "sim/host_memory.h"
#include "sim/output.h"
#include "sim/simulator.h"
#include "sim/version.h"

namespace t3sim {

namespace {

// `t3sim run`'s progress on stderr (issue 45): once a run has taken 2 s of wall time, the
// simulated time reached, the events so far and their rate, redrawn in place every
// 0.5 s on a terminal, a plain line every 10 s otherwise; cleared at the end. A kind
// that knows how much of its work is done (Experiment::progress: a GEMM alone, by its
// WGs) adds the percentage and an ETA, the wall time so far scaled by what is left;
// the others cannot (a run's simulated end time is not known before it gets there). A
// kind that runs several simulators (c3's isolated runs, then the concurrent one) shows
// each in turn.
class ProgressLine final : public ProgressObserver {
 public:
  ProgressLine() : tty_(::isatty(::fileno(stderr)) != 0), start_(Clock::now()), last_(start_) {
    // T3SIM_PROGRESS_AFTER_S: the wall time after which the line shows (tests set 0).
    if (const char* after = std::getenv("T3SIM_PROGRESS_AFTER_S")) after_s_ = std::atof(after);
    // T3SIM_PROGRESS_EVERY_S: the period of the plain lines (tests set it short).
    if (const char* every = std::getenv("T3SIM_PROGRESS_EVERY_S")) every_s_ = std::atof(every);
    Simulator::set_progress_observer_default(this);
  }
  ~ProgressLine() override {
    Simulator::set_progress_observer_default(nullptr);
    if (drawn_ && tty_) {
      std::fputs("\r\033[K", stderr);
      std::fflush(stderr);
    }
  }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  // Where the fraction of the work done comes from (negative: unknown, no ETA).
  void set_fraction(std::function<double()> fraction) { fraction_ = std::move(fraction); }

  void on_progress(Tick reached, std::uint64_t events) override {
    const Clock::time_point now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (elapsed < after_s_) return;
    const double since = std::chrono::duration<double>(now - last_).count();
    if (drawn_ && since < (tty_ ? 0.5 : every_s_)) return;
    // Events per second over the last period (a new simulator starts from zero).
    const double rate = drawn_ && events >= last_events_ && since > 0
                            ? static_cast<double>(events - last_events_) / since
                            : static_cast<double>(events) / elapsed;
    std::string eta;
    if (fraction_) {
      const double done = fraction_();
      if (done > 0.0 && done < 1.0)
        eta = fmt::format(", {:.0f} % done, ETA {:.0f} s", 100.0 * done, elapsed * (1.0 - done) / done);
    }
    std::fprintf(stderr, "%ssimulated %s, %.1f M events (%.2f M events/s), %.0f s%s%s", tty_ ? "\r\033[K" : "",
                 to_string(reached).c_str(), static_cast<double>(events) / 1e6, rate / 1e6, elapsed, eta.c_str(),
                 tty_ ? "" : "\n");
    std::fflush(stderr);
    drawn_ = true;
    last_ = now;
    last_events_ = events;
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool tty_;
  Clock::time_point start_, last_;
  std::uint64_t last_events_ = 0;
  bool drawn_ = false;
  double after_s_ = 2.0;
  double every_s_ = 10.0;
  std::function<double()> fraction_;
};

// "12 s", "4.2 min", "3.1 h": a CPU-time estimate at the precision it has.
std::string format_cpu_time(double seconds) {
  if (seconds < 120.0) return fmt::format("{:.2g} s", seconds);
  if (seconds < 7200.0) return fmt::format("{:.2g} min", seconds / 60.0);
  return fmt::format("{:.2g} h", seconds / 3600.0);
}

// "  simulation  N events in S s (R M events/s)"; a partitioned run also says how it
// ran: "..., 8 partitions on 2 threads".
std::string simulation_line(std::uint64_t events, double wall, const Simulator& sim) {
  const std::string parallel =
      sim.partitions() > 1 ? fmt::format(", {} partitions on {} threads", sim.partitions(), sim.threads()) : "";
  return fmt::format("  simulation         {} events in {:.3f} s ({:.2f} M events/s{})\n", events, wall,
                     wall > 0 ? static_cast<double>(events) / wall / 1e6 : 0.0, parallel);
}

}  // namespace

RunOutcome run_simulation(const RunRequest& req) {
  // ---- configuration: system and workload files under their sections, then overrides
  ConfigTree tree;
  tree.set_section("system", ConfigTree::load_file(req.system));
  tree.set_section("workload", ConfigTree::load_file(req.workload));
  if (!req.configuration.empty())
    tree.set("run.config", req.configuration, SourceLocation{"--config", 0, 0});
  for (const auto& o : req.overrides) tree.apply_override(o);

  ResolvedConfig resolved;
  ConfigNode top(&tree.root(), "", &resolved);
  ConfigNode run = top.child("run");
  ConfigNode workload = top.child("workload");
  const std::string kind = workload.get_enum("kind", "collective", workload_kinds().names());
  RunOptions options;
  if (run.has("config")) {
    options.configuration_where = run.location("config");
    options.configuration = run.get_enum("config", "", configuration_names());
  }
  const std::uint64_t seed = run.get_uint("seed", req.seed);
  options.seed = seed;
  WatchdogConfig watchdog;
  watchdog.stall_limit = run.get_time("watchdog_stall_limit", watchdog.stall_limit);
  const Tick max_time = run.get_time("max_time", Tick::max(), Tick(1));
  const std::uint64_t timeline_max = run.get_uint("timeline_max_events", 1'000'000, 0);
  // full: every GPU simulated; homogeneous: GPU 0 only, its peers mirrored (T3 §5.1.1).
  options.mode = parse_net_mode(run.get_enum("mode", "full", {"full", "homogeneous"}));
  // Host threads for a full-mode node run, whose GPUs are simulated in partitions of
  // their own; results do not depend on it. 0: one per core.
  const auto threads_key = static_cast<unsigned>(run.get_uint("threads", 0, 0, 1024));
  // The host memory the run may allocate (0: what the host has available); a run whose
  // estimate exceeds it is refused before it is built (sim/host_memory.h).
  const std::uint64_t host_memory = run.get_bytes("host_memory", 0, 0, UINT64_MAX);
  options.host_memory = host_memory > 0 ? host_memory : host_memory_available();
  options.host_memory_source = host_memory > 0 ? "run.host_memory" : "on this host; run.host_memory sets a budget";
  options.locate = [&tree](const std::string& dotted) {
    const ConfigValue* v = &tree.root();
    SourceLocation where;
    for (std::size_t start = 0; v != nullptr && start <= dotted.size();) {
      const std::size_t dot = std::min(dotted.find('.', start), dotted.size());
      const ConfigValue* next = v->find(std::string_view(dotted).substr(start, dot - start));
      if (next == nullptr) return SourceLocation{};  // a default
      where = next->where;
      v = next;
      start = dot + 1;
    }
    return where;
  };
  // run.sampling: off | on, and its window, tolerance, tail and probe period
  // (models/gpu/stage_sampler.h).
  if (run.has("sampling")) options.sampling_where = run.location("sampling");
  options.sampling.enabled = run.get_enum("sampling", "off", {"off", "on"}) == "on";
  options.sampling.window =
      static_cast<std::uint32_t>(run.get_uint("sampling_window", options.sampling.window, 2, 1000));
  options.sampling.tolerance = run.get_double("sampling_tolerance", options.sampling.tolerance, 0.0, 1.0);
  options.sampling.tail = static_cast<std::uint32_t>(run.get_uint("sampling_tail", options.sampling.tail, 1, 1000));
  options.sampling.period = run.get_time("sampling_period", options.sampling.period, Tick::ns(10), Tick::ms(1));
  // run.isolated_cache: a directory where c3 keeps its isolated runs (a sweep's own
  // cache directory if the request names one and the run does not).
  if (const std::string dir = run.get_string("isolated_cache", req.isolated_cache.string()); !dir.empty())
    options.isolated_store = std::make_shared<ResultDirectory>(dir);
  const unsigned threads = req.threads > 0     ? req.threads
                           : threads_key > 0 ? threads_key
                                             : host_cores_free();
  run.finish();

  ConfigNode system = top.child("system");
  top.finish();

  // ---- the output directory, before anything is built or simulated (a run that
  // cannot keep its results says so at once): writable, and room for about a node
  // run's stats (a few MB) plus the timeline's events at ~64 B each.
  if (req.output_dir && !req.validate_only)
    check_output_directory(*req.output_dir,
                           (8ULL << 20) + (req.timeline ? timeline_max * 64 : std::uint64_t{0}));

  // ---- build: the kind's experiment reads the system and workload and builds the model
  // (--debug-shuffle-ties reaches every simulator the run builds, its own and the kind's)
  struct ShuffleTies {
    explicit ShuffleTies(std::uint64_t seed) { Simulator::set_shuffle_ties_default(seed); }
    ~ShuffleTies() { Simulator::set_shuffle_ties_default(0); }
  } shuffle_ties(req.shuffle_ties);
  std::optional<ProgressLine> progress;
  if (req.progress && !req.validate_only) progress.emplace();
  Simulator sim(seed, watchdog);
  sim.set_threads(threads);
  if (req.output_dir && req.timeline && timeline_max > 0) sim.timeline().enable(timeline_max);
  const std::unique_ptr<Experiment> experiment = workload_kinds().find(kind)->make(sim, system, workload, options);
  if (progress) progress->set_fraction([e = experiment.get()] { return e->progress(); });
  if (options.sampling.enabled && !experiment->samples())
    options.reject_sampling(fmt::format("kind {} does not sample (gemm alone, c3 and DMA collectives in homogeneous "
                                        "mode do): "
                                        "set run.sampling: off",
                                        kind));
  RunOutcome out;
  if (req.validate_only) {
    out.summary = experiment->validated();
    if (options.estimated_host_memory > 0) {
      out.summary += fmt::format("  host memory: about {} estimated, {} available ({})\n",
                                 format_host_bytes(options.estimated_host_memory),
                                 format_host_bytes(options.host_memory), options.host_memory_source);
      // A budget given above what the host has: allowed, but the run would swap.
      const std::uint64_t free_now = host_memory_available();
      if (options.estimated_host_memory > free_now)
        out.summary += fmt::format("  warning: the estimate is above the {} this host has available now\n",
                                   format_host_bytes(free_now));
    }
    // The cost in events and CPU time (issue 45): an order of magnitude, from what the
    // kind says it will move (Experiment::work, experiment.cpp's constants).
    const WorkEstimate work = experiment->work();
    if (work.known()) {
      const double cpu = work.cpu_seconds();
      const double events = work.events();
      out.summary += fmt::format("  cost: about {} events, about {} of CPU time at this machine's typical rate{}\n",
                                 events < 1e9 ? fmt::format("{:.3g} M", events / 1e6)
                                              : fmt::format("{:.3g} G", events / 1e9),
                                 format_cpu_time(cpu),
                                 work.caveat.empty() ? "" : " (" + work.caveat + ")");
      if (cpu > 3600.0)
        out.summary += "  warning: above an hour of CPU time; run.sampling or a smaller size shortens it\n";
    } else {
      out.summary += fmt::format("  cost: not estimated for kind {}\n", kind);
    }
    return out;
  }

  // ---- run
  const auto wall_start = std::chrono::steady_clock::now();
  ExperimentResult result = experiment->run(max_time);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const std::uint64_t events = sim.dispatched() + result.extra_events;

  // ---- outputs: results.json, stats.csv, timeline.json and run_info.json
  if (req.output_dir) {
    RunMetadata meta;
    meta.configuration = result.label;
    meta.seed = seed;
    meta.resolved_config = resolved.json();
    meta.wall_seconds = wall;
    meta.events = sim.dispatched();
    meta.partitions = sim.partitions();
    meta.threads = sim.threads();
    meta.simulated_time = sim.now();
    meta.peak_rss_bytes = peak_rss_bytes();
    meta.command_line = fmt::format("system={} workload={}", req.system.string(), req.workload.string());
    write_run_outputs(*req.output_dir, meta, result.json, sim.stats(), sim.timeline(), sim.now());
  }
  out.summary = fmt::format("t3sim {} ({})\n", kVersion, kGitRevision) + result.summary +
                simulation_line(events, wall, sim);
  if (req.output_dir) out.summary += fmt::format("  outputs            {}\n", req.output_dir->string());
  out.metrics = std::move(result.metrics);
  out.metrics.emplace_back("events", std::to_string(events));
  out.metrics.emplace_back("wall_s", fmt::format("{:.3f}", wall));
  return out;
}

}  // namespace t3sim
