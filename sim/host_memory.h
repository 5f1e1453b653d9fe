#pragma once
// The host memory a run needs, estimated before the model is built, against what the
// host can give: inputs whose product would exhaust it (a GPU count, an L2 size, an
// array checked by value) are refused with one clear error naming the key that costs
// most, instead of ending in std::bad_alloc after minutes of set-up (issue 15).
//
// Estimates are per structure, from its element count times a host cost per element
// measured on this implementation (peak RSS of `t3sim validate` while one key grows;
// the constants are next to the models' estimate functions). They aim within 2x: a
// guard, not an accounting.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/error.h"

namespace t3sim {

class HostMemoryEstimate {
 public:
  struct Term {
    std::string key;       // "system.memory.l2.size"
    std::string what;      // "L2 tags of 8 GPUs"
    std::uint64_t bytes = 0;
  };
  // Adds count x bytes_each (saturating).
  void add(std::string key, std::string what, std::uint64_t count, std::uint64_t bytes_each);
  std::uint64_t total() const;
  const std::vector<Term>& terms() const { return terms_; }

  // Throws ConfigError at the most expensive term's key (where `locate` says it was
  // written) when total() > budget.
  void check(std::uint64_t budget, const std::string& budget_source,
             const std::function<SourceLocation(const std::string&)>& locate) const;

 private:
  std::vector<Term> terms_;
};

// What this process may allocate: the smallest of /proc/meminfo's MemAvailable, the
// cgroup's memory.max and RLIMIT_AS (UINT64_MAX when none is known).
std::uint64_t host_memory_available();

// The process's peak resident set so far (getrusage), in bytes.
std::uint64_t peak_rss_bytes();

// "1.50 GiB", "512 MiB", "12 KiB", "100 B".
std::string format_host_bytes(std::uint64_t bytes);

}  // namespace t3sim
