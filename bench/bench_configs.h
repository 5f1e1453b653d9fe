#pragma once
// Where the benchmarks find configs/ (issue 20: a benchmark must not depend on the
// source tree it was built from still being there).
//
// In order: `--configs DIR` on the command line (taken out before Google Benchmark sees
// the arguments), the T3SIM_CONFIGS environment variable, then configs/ in a parent of
// the binary's directory (build/bench/bench_x finds SOURCE/configs when the build tree
// is inside the source tree), then the source tree it was built from. If none holds
// configs/systems/table1.yaml, the first benchmark that asks prints what was tried
// and exits 2.

#include <string>

namespace t3sim::bench {

// The configs directory (set up by the benchmarks' main before any benchmark runs).
const std::string& configs_dir();
// configs_dir() + "/" + relative.
std::string config_path(const std::string& relative);

}  // namespace t3sim::bench
