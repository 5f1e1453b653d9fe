#pragma once
// One simulation run, as the CLI's `run` command and each sweep point perform it:
// load and validate the configs, build the system, simulate, check, and (if an
// output directory is given) write results.json, stats.csv and timeline.json.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace t3sim {

struct RunRequest {
  std::filesystem::path system;    // system YAML
  std::filesystem::path workload;  // workload YAML
  std::string configuration;       // "" = the workload's default
  std::vector<std::string> overrides;  // "a.b.c=value", applied in order after loading
  std::optional<std::filesystem::path> output_dir;  // nullopt: write no files
  std::uint64_t seed = 1;
  bool timeline = true;            // write timeline.json (if output_dir)
  bool validate_only = false;      // stop after building the system
  // Host threads of a partitioned (full-mode node) run; 0: run.threads, whose
  // default is one per core. Results do not depend on it.
  unsigned threads = 0;
  // Where c3 keeps and reuses its isolated runs (run.isolated_cache overrides); empty: none.
  std::filesystem::path isolated_cache;
  // Debug (`--debug-shuffle-ties`): insert same-time events in a random order with this
  // seed (sim/event_queue.h); the canonical event order makes the results identical.
  std::uint64_t shuffle_ties = 0;
  // Show the run's progress on stderr (`t3sim run`, unless --quiet; sweeps never).
  bool progress = false;
};

struct RunOutcome {
  // Ordered (name, value) pairs: the row a sweep appends to its CSV. Names and
  // their order depend only on the workload kind, not on the values.
  std::vector<std::pair<std::string, std::string>> metrics;
  // The human summary printed on stdout by `t3sim run`.
  std::string summary;
};

// Throws UserError (bad input: exit 2) or SimulationError (exit 1).
RunOutcome run_simulation(const RunRequest& request);

}  // namespace t3sim
