#pragma once
// Where an experiment keeps the results of runs it would otherwise repeat, by key: kind
// c3's isolated runs, which a sweep's c3_base, c3_sp and CU-partitioned points of one
// case share, and a sub-layer's sequential run, which its ideal bounds (ideal-overlap,
// ideal-rs-nmc) complete differently but simulate identically. The model layer only asks for and hands over entries (JSON objects it
// writes and checks itself); how and where they are kept is the front end's
// (cli/result_directory.h keeps them as files), so no model does file I/O.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/time.h"

namespace t3sim {

class ConfigNode;

class ResultStore {
 public:
  virtual ~ResultStore() = default;
  // The entry kept under `key`; nullopt if there is none. An entry the store cannot
  // trust (damaged, edited, unreadable) is none too, with `why` saying what was wrong
  // and where (empty for a plain miss).
  virtual std::optional<nlohmann::json> load(const std::string& key, std::string& why) = 0;
  // Keeps `entry` under `key`, replacing any. A store that cannot keep it drops it
  // (a missing entry only costs the run again).
  virtual void save(const std::string& key, const nlohmann::json& entry) = 0;
};

// Reading an entry back (issue 45, D7: an entry is data from outside, checked field by
// field). A field that fails its check throws BadCacheEntry saying what was wrong; the
// caller warns and simulates again.
struct BadCacheEntry {
  std::string why;
};
// Field `key` of `j`: a non-negative integer.
std::uint64_t cached_count(const nlohmann::json& j, const char* key);
// Field `key` of `j`: a time in picoseconds, within Tick's range.
Tick cached_time(const nlohmann::json& j, const char* key);
// Field `key` of `j`: an object.
const nlohmann::json& cached_object(const nlohmann::json& j, const char* key);

// FNV-1a of this executable's bytes, for a store key: results kept by one build are
// never taken for another's (a model change that keeps the version string included).
std::uint64_t executable_hash();

// A chained run's store key (scenario_driver.h): `head` (the kind and its entry's
// version: "c3 isolated v1"), this binary's hash, the mode and the seed, `extra` (more
// of what the run depends on, one "name value" line each), then the system and the
// workload as given, in canonical text, but for the workload keys of `except` (those
// that shape only the kind's other run: c3's order).
std::string chained_run_key(const std::string& head, const std::string& mode, std::uint64_t seed,
                            const std::vector<std::string>& extra, const ConfigNode& system,
                            const ConfigNode& workload, const std::vector<std::string>& except = {});

}  // namespace t3sim
