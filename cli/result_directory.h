#pragma once
// A ResultStore (models/system/result_store.h) as a directory of JSON files, one per
// key (run.isolated_cache; a sweep keeps one beside its CSV).

#include <filesystem>

#include "models/system/result_store.h"

namespace t3sim {

class ResultDirectory final : public ResultStore {
 public:
  explicit ResultDirectory(std::filesystem::path dir) : dir_(std::move(dir)) {}
  // Reads `<dir>/<fnv1a(key) in hex>.json`. Trusted only if it is a regular file (a
  // FIFO would block the run) of at most 1 MiB holding a JSON object whose key is
  // `key` (another key's is a hash collision: a miss) and whose checksum matches its
  // contents.
  std::optional<nlohmann::json> load(const std::string& key, std::string& why) override;
  // Written whole under a temporary name, then renamed: a reader never sees half.
  void save(const std::string& key, const nlohmann::json& entry) override;
  std::filesystem::path file(const std::string& key) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace t3sim
