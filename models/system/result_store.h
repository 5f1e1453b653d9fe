#pragma once
// Where an experiment keeps the results of runs it would otherwise repeat, by key: kind
// c3's isolated runs, which a sweep's c3_base, c3_sp and CU-partitioned points of one
// case share. The model layer only asks for and hands over entries (JSON objects it
// writes and checks itself); how and where they are kept is the front end's
// (cli/result_directory.h keeps them as files), so no model does file I/O.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace t3sim {

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

}  // namespace t3sim
