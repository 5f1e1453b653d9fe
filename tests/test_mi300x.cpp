// The MI300X-like node (configs/systems/mi300x.yaml, issue 16 items 5 and 6): the
// library's channel count and the Infinity Fabric timings as the YAML sources them, and
// the ring all-gather at those settings on 8 GPUs run through the CLI's run path.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cli/run.h"
#include "models/gpu/gpu.h"
#include "models/net/net_config.h"
#include "sim/config.h"

namespace t3sim {
namespace {

const std::string kSource = T3SIM_SOURCE_DIR;
const std::string kSystem = kSource + "/configs/systems/mi300x.yaml";

std::string metric(const RunOutcome& out, const std::string& name) {
  for (const auto& [key, value] : out.metrics)
    if (key == name) return value;
  ADD_FAILURE() << "no metric " << name;
  return "0";
}

RunOutcome run_ring_all_gather(std::vector<std::string> overrides) {
  RunRequest req;
  req.system = kSystem;
  req.workload = kSource + "/configs/workloads/collectives/ring_rs.yaml";
  req.overrides = {"workload.collective=ring-ag"};
  req.overrides.insert(req.overrides.end(), overrides.begin(), overrides.end());
  req.timeline = false;
  return run_simulation(req);
}

// RCCL's ring channels on 8 x MI300X (64: ../seeds/003 Figure 5, RCCL's rome_models.cc;
// the sources are in the YAML) and the measured xGMI link (46.55 GB/s per direction of
// the rated 64).
TEST(Mi300x, SystemFilePinsRcclsChannelCountAndTheMeasuredLink) {
  ConfigTree tree = ConfigTree::load_file(kSystem);
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  EXPECT_EQ(read_gpu_config(root.child("gpu"), root.child("memory")).collective_channels, 64u);
  const NetConfig net = read_net_config(root.child("net"));
  EXPECT_EQ(net.link.bandwidth.bytes_per_second(), 46'550'000'000ULL);
  EXPECT_EQ(net.topology, "fully-connected");
}

// A workload that gives no `channels` runs the system's 64: the same run as one asking
// for 64, and not the one-per-CU default (304) a system without the key would give.
TEST(Mi300x, RingAllGatherDefaultsToTheSystemsChannels) {
  const std::vector<std::string> timing = {"workload.size=8MiB", "workload.functional=off", "run.mode=homogeneous"};
  const RunOutcome by_default = run_ring_all_gather(timing);
  std::vector<std::string> asked = timing;
  asked.push_back("workload.channels=64");
  EXPECT_EQ(metric(run_ring_all_gather(asked), "time_ps"), metric(by_default, "time_ps"));
  std::vector<std::string> per_cu = timing;
  per_cu.push_back("workload.channels=304");
  EXPECT_NE(metric(run_ring_all_gather(per_cu), "time_ps"), metric(by_default, "time_ps"));
}

// Every GPU simulated (full mode) at the default channels, values checked on each.
TEST(Mi300x, RingAllGatherValuesCheckOnEveryGpu) {
  const RunOutcome out = run_ring_all_gather({"workload.size=1MiB", "workload.functional=values"});
  EXPECT_EQ(metric(out, "functional_check"), "passed");
  EXPECT_EQ(metric(out, "num_gpus"), "8");
}

// A large ring all-gather at RCCL's 64 channels keeps its rings' links busy: its
// time is within 10 % of the link bound (N-1)/N x S / (R x B) + (N-1) x latency, R = 4
// rings (strides 1, 7, 3, 5: 4 of each GPU's 7 links; NodeCollective). The latency
// term is the unpipelined one, so the bound holds to 0.1 %. Timing only, GPU 0
// simulated with its peers mirrored (the rings are shift-invariant).
TEST(Mi300x, LargeRingAllGatherReachesItsLinkBound) {
  const RunOutcome out =
      run_ring_all_gather({"workload.size=64MiB", "workload.functional=off", "run.mode=homogeneous"});
  const double time = std::stod(metric(out, "time_ps"));
  const double bound = std::stod(metric(out, "analytical_ps"));
  EXPECT_GE(time, 0.999 * bound) << "faster than the links allow";
  EXPECT_LE(time, 1.10 * bound) << "time " << time * 1e-6 << " us, bound " << bound * 1e-6 << " us";
}

}  // namespace
}  // namespace t3sim
