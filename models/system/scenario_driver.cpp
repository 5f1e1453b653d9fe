#include "models/system/scenario_driver.h"

#include "sim/log.h"

namespace t3sim::scenario_store {

std::optional<nlohmann::json> load(ResultStore& store, const std::string& key, const char* scenario) {
  std::string why;
  std::optional<nlohmann::json> entry = store.load(key, why);
  if (!entry && !why.empty()) warn_bad(scenario, why);
  return entry;
}

void warn_bad(const char* scenario, const std::string& why) {
  make_logger(scenario)->warn("isolated-run cache entry {}; simulating the chained run again", why);
}

std::uint64_t events(const nlohmann::json& entry) { return cached_count(entry, "events"); }

void note_taken(const char* scenario) {
  make_logger(scenario)->info("the chained run taken from the isolated-run cache: nothing simulated for it");
}

}  // namespace t3sim::scenario_store
