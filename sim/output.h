#pragma once
// The result files of one run, written the same way by `t3sim run` and by every
// sweep point:
//
//   <dir>/results.json   {"metadata": {...}, "results": {...}, "stats": {...}}
//   <dir>/stats.csv      every stat, one row per field
//   <dir>/timeline.json  Chrome trace (only if the timeline is enabled)
//   <dir>/run_info.json  wall-clock time, event rate, host
//
// results.json is deterministic: identical inputs give a byte-identical file, so runs
// can be compared with cmp. Anything that varies between identical runs (wall time,
// host) goes to run_info.json instead. Every file is written under a temporary name
// and renamed into place, results.json last: a directory holding results.json is
// complete.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/stats.h"
#include "sim/time.h"
#include "sim/timeline.h"
#include "sim/version.h"

namespace t3sim {

struct RunMetadata {
  // Filled in from the build (sim/version.h); callers normally leave them alone.
  std::string version = kVersion;
  std::string git_revision = kGitRevision;
  std::string command_line;
  std::string configuration;
  std::uint64_t seed = 0;
  nlohmann::json resolved_config;
  double wall_seconds = 0;  // run_info.json only: it differs between identical runs
  std::uint32_t partitions = 1;  // run_info.json: the simulator's partitions ...
  unsigned threads = 1;          // ... and the host threads that ran them (results do not depend on it)
  std::uint64_t events = 0;
  Tick simulated_time;
  std::uint64_t peak_rss_bytes = 0;  // run_info.json: the process's peak resident memory
};

// Before a run (issue 45, D4: fail before the work, not after): creates `dir`, writes
// and removes a probe file in it, and checks that its file system has `bytes_needed`
// free. Throws UserError naming the directory and what is wrong, so a run that cannot
// keep its results says so before it simulates.
void check_output_directory(const std::filesystem::path& dir, std::uint64_t bytes_needed);

// Writes the files above into `dir`, creating it. A results.json (and, if the
// timeline is disabled, a timeline.json) left in `dir` by an earlier run is removed
// first, so the directory never mixes two runs. Throws UserError if the directory
// can't be created or a file can't be written.
void write_run_outputs(const std::filesystem::path& dir, const RunMetadata& metadata,
                       const nlohmann::json& results, const StatsRegistry& stats,
                       const Timeline& timeline, Tick end);

// Writes `path` via a temporary file in the same directory and a rename, so readers
// see either the old file or the complete new one. Throws UserError on failure and
// leaves no temporary file behind.
void write_file_atomically(const std::filesystem::path& path, const std::string& content);
// The same, streaming: `write_content` writes the file's content to the stream. An
// exception from it is passed on after the temporary file is removed.
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write_content);

}  // namespace t3sim
