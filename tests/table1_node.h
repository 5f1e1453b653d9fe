#pragma once
// T3 Table 1's node (configs/systems/table1.yaml) for tests, with `--set`-style
// overrides relative to the system file ("net.topology=fully-connected").
#include <string>
#include <vector>

#include "models/node/node.h"
#include "models/system/gemm_system.h"
#include "sim/config.h"

namespace t3sim {

// A system file of configs/systems/ ("mi300x.yaml") read as a node, with overrides.
inline NodeConfig system_node(const std::string& file, NetMode mode = NetMode::kFull,
                              const std::vector<std::string>& overrides = {}) {
  ConfigTree tree = ConfigTree::load_file(std::string(T3SIM_SOURCE_DIR) + "/configs/systems/" + file);
  for (const auto& o : overrides) tree.apply_override(o);
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  return read_node_config(root, mode);
}

inline NodeConfig table1(std::uint32_t gpus, NetMode mode = NetMode::kFull,
                         const std::vector<std::string>& overrides = {}) {
  NodeConfig cfg = system_node("table1.yaml", mode, overrides);
  cfg.num_gpus = gpus;
  return cfg;
}

// A 1024 x 1024 x 512 FP16 GEMM (32 WGs, one stage) for sub-layer tests on that node.
inline GemmWorkload small_gemm(const NodeConfig& cfg) {
  GemmParams g;
  g.m = 1024;
  g.n = 1024;
  g.k = 512;
  g.flops_per_cycle = cfg.gpu.cu.flops_per_cycle;
  GemmWorkload wl;
  wl.trace = make_gemm_trace(g);
  wl.params = g;
  wl.description = "1024x1024x512";
  return wl;
}

}  // namespace t3sim
