#include "sim/host_memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

namespace t3sim {

namespace {

std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}

// A number from the first line of a small text file ("max" or missing: none).
std::uint64_t read_limit_file(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::numeric_limits<std::uint64_t>::max();
  try {
    return std::stoull(word);
  } catch (...) {
    return std::numeric_limits<std::uint64_t>::max();
  }
}

}  // namespace

void HostMemoryEstimate::add(std::string key, std::string what, std::uint64_t count, std::uint64_t bytes_each) {
  terms_.push_back(Term{std::move(key), std::move(what), saturating_mul(count, bytes_each)});
}

std::uint64_t HostMemoryEstimate::total() const {
  std::uint64_t sum = 0;
  for (const Term& t : terms_) sum = saturating_add(sum, t.bytes);
  return sum;
}

void HostMemoryEstimate::check(std::uint64_t budget, const std::string& budget_source,
                               const std::function<SourceLocation(const std::string&)>& locate) const {
  const std::uint64_t need = total();
  if (need <= budget || terms_.empty()) return;
  const Term& largest = *std::max_element(terms_.begin(), terms_.end(),
                                          [](const Term& a, const Term& b) { return a.bytes < b.bytes; });
  throw ConfigError(locate(largest.key), largest.key,
                    fmt::format("the run would need about {} of host memory, {} of it for {}; {} is available ({})",
                                format_host_bytes(need), format_host_bytes(largest.bytes), largest.what,
                                format_host_bytes(budget), budget_source));
}

std::uint64_t host_memory_available() {
  std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    std::uint64_t kib = 0;
    if (fields >> kib) limit = std::min(limit, saturating_mul(kib, 1024));
    break;
  }
  // cgroup v2: the limit less what the group already uses.
  const std::uint64_t cgroup_max = read_limit_file("/sys/fs/cgroup/memory.max");
  if (cgroup_max != std::numeric_limits<std::uint64_t>::max()) {
    const std::uint64_t used = read_limit_file("/sys/fs/cgroup/memory.current");
    limit = std::min(limit, used < cgroup_max ? cgroup_max - used : 0);
  }
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    limit = std::min<std::uint64_t>(limit, as.rlim_cur);
  return limit;
}

std::uint64_t peak_rss_bytes() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

std::string format_host_bytes(std::uint64_t bytes) {
  if (bytes == std::numeric_limits<std::uint64_t>::max()) return "more than 16 EiB";
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.{}f} {}", v, v < 10 ? 2 : v < 100 ? 1 : 0, kUnits[u]);
}

}  // namespace t3sim
