#include "models/system/result_store.h"

#include <fstream>

#include <fmt/format.h>

#include "sim/config.h"

namespace t3sim {

std::uint64_t cached_count(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) throw BadCacheEntry{fmt::format("no '{}'", key)};
  const nlohmann::json& v = j.at(key);
  // nlohmann::json reads a non-negative integer as unsigned, a negative one as signed.
  if (!v.is_number_unsigned())
    throw BadCacheEntry{fmt::format("'{}' is {}, expected a non-negative integer", key, v.dump())};
  return v.get<std::uint64_t>();
}

Tick cached_time(const nlohmann::json& j, const char* key) {
  const std::uint64_t ps = cached_count(j, key);
  if (ps > static_cast<std::uint64_t>(Tick::max().ps())) throw BadCacheEntry{fmt::format("'{}' out of range", key)};
  return Tick(static_cast<std::int64_t>(ps));
}

const nlohmann::json& cached_object(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_object())
    throw BadCacheEntry{fmt::format("no object '{}'", key)};
  return j.at(key);
}

std::uint64_t executable_hash() {
  static const std::uint64_t hash = [] {
    std::ifstream in("/proc/self/exe", std::ios::binary);
    std::uint64_t h = 0xCBF29CE484222325ULL;
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      for (std::streamsize i = 0; i < in.gcount(); ++i) {
        h ^= static_cast<unsigned char>(buf[i]);
        h *= 0x100000001B3ULL;
      }
    }
    return h;
  }();
  return hash;
}

std::string chained_run_key(const std::string& head, const std::string& mode, std::uint64_t seed,
                            const std::vector<std::string>& extra, const ConfigNode& system,
                            const ConfigNode& workload, const std::vector<std::string>& except) {
  std::string key = fmt::format("{}\nbinary {:016x}\nmode {}\nseed {}\n", head, executable_hash(), mode, seed);
  for (const std::string& line : extra) key += line + "\n";
  key += fmt::format("system {}\nworkload {}", system.value() ? canonical_text(*system.value()) : "~",
                     workload.value() ? canonical_text(*workload.value(), except) : "~");
  return key;
}

}  // namespace t3sim
