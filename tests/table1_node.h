#pragma once
// T3 Table 1's node (configs/systems/table1.yaml) for tests, with `--set`-style
// overrides relative to the system file ("net.topology=fully-connected").
#include <string>
#include <vector>

#include "models/node/node.h"
#include "sim/config.h"

namespace t3sim {

inline NodeConfig table1(std::uint32_t gpus, NetMode mode = NetMode::kFull,
                         const std::vector<std::string>& overrides = {}) {
  ConfigTree tree = ConfigTree::load_file(std::string(T3SIM_SOURCE_DIR) + "/configs/systems/table1.yaml");
  for (const auto& o : overrides) tree.apply_override(o);
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  NodeConfig cfg = read_node_config(root, mode);
  cfg.num_gpus = gpus;
  return cfg;
}

}  // namespace t3sim
