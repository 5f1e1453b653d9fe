#include "sim/host_cpu.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace t3sim {

unsigned host_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

unsigned procs_running_in(std::string_view proc_stat) {
  constexpr std::string_view kKey = "procs_running ";
  std::size_t at = 0;
  while (at < proc_stat.size()) {
    const std::size_t end = std::min(proc_stat.find('\n', at), proc_stat.size());
    const std::string_view line = proc_stat.substr(at, end - at);
    if (line.substr(0, kKey.size()) == kKey) {
      unsigned n = 0;
      const std::string_view digits = line.substr(kKey.size());
      if (std::from_chars(digits.data(), digits.data() + digits.size(), n).ec == std::errc()) return n;
      return 0;
    }
    at = end + 1;
  }
  return 0;
}

unsigned host_cores_free() {
  const unsigned cores = host_cores();
  std::ifstream in("/proc/stat");
  if (!in) return cores;
  std::ostringstream text;
  text << in.rdbuf();
  const unsigned running = procs_running_in(text.str());
  const unsigned others = running > 0 ? running - 1 : 0;  // the caller is running
  return others >= cores ? 1u : cores - others;
}

}  // namespace t3sim
