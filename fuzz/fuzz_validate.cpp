// Fuzz target: a whole `t3sim validate SYSTEM WORKLOAD [--set ...]` (cli/run.h,
// run_simulation with validate_only): the composed configuration read by the
// workload kind's experiment, which builds the whole model without simulating.
//
// Input: an optional header line, then sections (fuzz_common.h; separator lines
// start with "#@@"):
//   #! system=table1 workload=gemm/small      (optional, first line)
//   0  the system file     (configs/systems/fuzz_own.yaml, beside the shipped systems)
//   1  the workload file   (configs/workloads/fuzz_own.yaml)
//   2  a trace, as <scratch>/fuzz.trace (`trace: $SCRATCH/fuzz.trace`: the target puts
//      the scratch directory for $SCRATCH, since `trace:` is relative to the working
//      directory, not to the workload file; `$SCRATCH/traces/` has the shipped ones)
//   3  `--set` overrides, one per line (system.x=..., workload.x=..., run.config=t3)
// A header naming a shipped system (or workload) makes the file validated one that
// derives from it, `base: [table1.yaml, fuzz_own.yaml]`, so mutations of a few keys
// reach the deep validation of a real system however the text is mangled. The
// sections may also say `base: table1.yaml` themselves.
//
// Outcomes: UserError and std::invalid_argument (exit 2 in the CLI) are normal. Any
// other exception is a finding, SimulationError included: validate simulates
// nothing, so an InternalError here is a check no reader made. Known open issues
// (issue 15 item 4, fixed separately): inputs whose sizes exhaust host memory
// before any check (huge `functional: values` arrays, thousands of GPUs, GEMMs of
// 10^8 x 10^8) end as libFuzzer out-of-memory reports (-rss_limit_mb /
// -malloc_limit_mb): see fuzz/README.md.

#include <cstddef>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "cli/run.h"
#include "fuzz/fuzz_common.h"

namespace {

using namespace t3sim;
using t3sim_fuzz::expect_user_error;

// Shipped files a header may name: "table1" -> configs/systems/table1.yaml,
// "gemm/small" -> configs/workloads/gemm/small.yaml.
std::set<std::string> shipped(const std::string& folder) {
  std::set<std::string> names;
  const std::filesystem::path root = std::filesystem::path(T3SIM_SOURCE_DIR) / "configs" / folder;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      names.insert(entry.path().lexically_relative(root).replace_extension().string());
  }
  return names;
}

const std::set<std::string>& systems() {
  static const std::set<std::string> names = shipped("systems");
  return names;
}
const std::set<std::string>& workloads() {
  static const std::set<std::string> names = shipped("workloads");
  return names;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  t3sim_fuzz::quiet();
  t3sim_fuzz::Scratch::get();
  systems();
  workloads();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string system_base, workload_base;
  std::size_t skip = 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (text.starts_with("#!")) {
    const std::size_t eol = text.find('\n');
    skip = eol == std::string_view::npos ? size : eol + 1;
    std::istringstream words(std::string(text.substr(2, skip - 2)));
    for (std::string word; words >> word;) {
      if (word.starts_with("system=") && systems().count(word.substr(7))) system_base = word.substr(7);
      if (word.starts_with("workload=") && workloads().count(word.substr(9))) workload_base = word.substr(9);
    }
  }
  const std::vector<std::string> sections = t3sim_fuzz::split_sections(data + skip, size - skip);
  auto& scratch = t3sim_fuzz::Scratch::get();
  const auto section = [&](std::size_t i) { return i < sections.size() ? sections[i] : std::string(); };
  scratch.put("configs/systems/fuzz_own.yaml", section(0));
  std::string workload = section(1);
  for (std::size_t at = workload.find("$SCRATCH"); at != std::string::npos; at = workload.find("$SCRATCH", at))
    workload.replace(at, 8, scratch.root().string());
  scratch.put("configs/workloads/fuzz_own.yaml", workload);
  scratch.put("fuzz.trace", section(2), sections.size() > 2);

  RunRequest request;
  request.system = scratch.path("configs/systems/fuzz_own.yaml");
  request.workload = scratch.path("configs/workloads/fuzz_own.yaml");
  if (!system_base.empty()) {
    scratch.put("configs/systems/fuzz.yaml", fmt::format("base: [{}.yaml, fuzz_own.yaml]\n", system_base));
    request.system = scratch.path("configs/systems/fuzz.yaml");
  }
  if (!workload_base.empty()) {
    scratch.put("configs/workloads/fuzz.yaml", fmt::format("base: [{}.yaml, fuzz_own.yaml]\n", workload_base));
    request.workload = scratch.path("configs/workloads/fuzz.yaml");
  }
  request.overrides = t3sim_fuzz::lines_of(section(3));
  request.validate_only = true;
  request.timeline = false;
  request.threads = 1;
  expect_user_error([&] { (void)run_simulation(request); });
  return 0;
}
