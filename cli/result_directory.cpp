#include "cli/result_directory.h"

#include <atomic>
#include <fstream>

#include <unistd.h>

#include <fmt/format.h>

#include "sim/hash.h"

namespace t3sim {
namespace {

// The checksum an entry carries: FNV-1a of its JSON without the checksum itself
// (nlohmann::json keeps an object's keys sorted, so the text is canonical).
std::uint64_t checksum(nlohmann::json j) {
  j.erase("checksum");
  return fnv1a(j.dump());
}

}  // namespace

std::filesystem::path ResultDirectory::file(const std::string& key) const {
  return dir_ / fmt::format("{:016x}.json", fnv1a(key));
}

std::optional<nlohmann::json> ResultDirectory::load(const std::string& key, std::string& why) {
  why.clear();
  const std::filesystem::path path = file(key);
  auto untrusted = [&](const char* what) {
    why = fmt::format("{}: {}", path.string(), what);
    return std::nullopt;
  };
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || st.type() == std::filesystem::file_type::not_found) return std::nullopt;
  if (st.type() != std::filesystem::file_type::regular) return untrusted("not a regular file");
  constexpr std::uintmax_t kMaxBytes = 1 << 20;  // an entry is a few hundred bytes
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return untrusted("unreadable");
  if (size > kMaxBytes) return untrusted("larger than any entry");
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return untrusted("not a JSON object (torn or damaged)");
  if (!j.contains("key") || !j.at("key").is_string()) return untrusted("no key");
  if (j.at("key").get<std::string>() != key) return std::nullopt;  // another key's entry
  if (!j.contains("checksum") || !j.at("checksum").is_number_unsigned() ||
      j.at("checksum").get<std::uint64_t>() != checksum(j))
    return untrusted("its checksum does not match its contents (edited or damaged)");
  j.erase("key");
  j.erase("checksum");
  return j;
}

void ResultDirectory::save(const std::string& key, const nlohmann::json& entry) {
  nlohmann::json j = entry;
  j["key"] = key;
  j["checksum"] = checksum(j);
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const std::filesystem::path path = file(key);
  // A file of its own per save: a sweep's workers may keep the same entry at once (an
  // ideal bound's point that missed it and the sequential point), each renaming a whole
  // file into place.
  static std::atomic<std::uint64_t> saves{0};
  const std::filesystem::path tmp = path.string() + fmt::format(".tmp{}.{}", ::getpid(), saves++);
  {
    std::ofstream out(tmp);
    out << j.dump() << "\n";
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);  // a store that cannot be written is only slower
}

}  // namespace t3sim
