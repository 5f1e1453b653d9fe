// The benchmarks' main: finds configs/ (bench_configs.h), then runs Google Benchmark.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "bench/bench_configs.h"

namespace t3sim::bench {
namespace {

std::string g_configs;
std::vector<std::string> g_tried;
std::string g_program = "bench";

bool holds_configs(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir / "systems" / "table1.yaml", ec);
}

std::filesystem::path binary_dir() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : self.parent_path();
}

// Returns an empty string (and lists what it tried) when nothing holds configs/.
std::string find_configs(const std::string& flag, std::vector<std::string>& tried) {
  if (!flag.empty()) {
    tried.push_back(flag + " (--configs)");
    return holds_configs(flag) ? flag : std::string();
  }
  if (const char* env = std::getenv("T3SIM_CONFIGS"); env != nullptr && *env != '\0') {
    tried.push_back(std::string(env) + " (T3SIM_CONFIGS)");
    return holds_configs(env) ? std::string(env) : std::string();
  }
  for (std::filesystem::path dir = binary_dir(); !dir.empty(); dir = dir.parent_path()) {
    tried.push_back((dir / "configs").string());
    if (holds_configs(dir / "configs")) return (dir / "configs").string();
    if (dir == dir.parent_path()) break;
  }
  const std::filesystem::path built_from = std::filesystem::path(T3SIM_SOURCE_DIR) / "configs";
  tried.push_back(built_from.string() + " (the source tree it was built from)");
  return holds_configs(built_from) ? built_from.string() : std::string();
}

}  // namespace

const std::string& configs_dir() {
  if (g_configs.empty()) {
    // Exit 2 (bad set-up), not an abort: the benchmark cannot run without its configs.
    std::cerr << g_program << ": error: no configs directory (one holding systems/table1.yaml); tried:\n";
    for (const std::string& t : g_tried) std::cerr << "  " << t << "\n";
    std::cerr << "give one with --configs DIR or T3SIM_CONFIGS=DIR\n";
    std::exit(2);
  }
  return g_configs;
}
std::string config_path(const std::string& relative) { return configs_dir() + "/" + relative; }

}  // namespace t3sim::bench

int main(int argc, char** argv) {
  std::string flag;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--configs") == 0 && i + 1 < argc) {
      flag = argv[++i];
    } else if (std::strncmp(argv[i], "--configs=", 10) == 0) {
      flag = argv[i] + 10;
    } else {
      rest.push_back(argv[i]);
    }
  }
  // Found now, checked when a benchmark first asks (bench_event_queue needs none).
  t3sim::bench::g_program = argv[0];
  t3sim::bench::g_configs = t3sim::bench::find_configs(flag, t3sim::bench::g_tried);
  int rest_argc = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
