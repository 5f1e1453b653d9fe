// Implementations chosen by name (sim/registry.h), and the proof that a configuration
// is one file: this test file registers a configuration of its own, which then runs
// through the same driver, CLI-facing registry and error messages as the shipped ones.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "models/system/c3/c3_system.h"
#include "models/system/configuration.h"
#include "models/system/overlap/overlap_system.h"
#include "models/system/experiment.h"
#include "models/system/sublayer_configuration.h"
#include "models/system/sublayer_system.h"
#include "sim/error.h"
#include "sim/registry.h"
#include "tests/table1_node.h"

namespace t3sim {
namespace {

struct Shape {
  virtual ~Shape() = default;
  virtual int sides() const = 0;
};
struct Triangle final : Shape {
  int sides() const override { return 3; }
};
struct Polygon final : Shape {
  explicit Polygon(int n) : n_(n) {}
  int sides() const override { return n_; }
  int n_;
};

TEST(Registry, KeepsEntriesSortedAndMakesThemWithTheirArguments) {
  Registry<Shape, int> shapes;
  shapes.add("triangle", "three sides", [](int) { return std::make_unique<Triangle>(); });
  shapes.add("polygon", "n sides", [](int n) { return std::make_unique<Polygon>(n); });
  EXPECT_EQ(shapes.names(), (std::vector<std::string>{"polygon", "triangle"}));
  ASSERT_NE(shapes.find("polygon"), nullptr);
  EXPECT_EQ(shapes.find("polygon")->make(7)->sides(), 7);
  EXPECT_EQ(shapes.find("triangle")->make(0)->sides(), 3);
  EXPECT_EQ(shapes.find("square"), nullptr);
  EXPECT_EQ(shapes.listing()[1].description, "three sides");
}

TEST(Registry, TheShippedImplementationsAreRegistered) {
  for (const char* name : {"sequential", "t3", "t3-mca", "ideal-overlap", "ideal-rs-nmc"})
    EXPECT_NE(make_sublayer_configuration(name), nullptr) << name;
  for (const char* name : {"memory", "gemm", "collective"}) EXPECT_NE(workload_kinds().find(name), nullptr) << name;
  for (const auto& e : configurations().listing()) EXPECT_FALSE(e.description.empty()) << e.name;
}

// One registry: a configuration is registered once, whatever the kinds it runs (`sequential`
// all three; `fused` and `ideal-overlap` the sub-layer's and the overlap kinds'; `c3`
// only C3's). A name that does not run a family is refused naming the family's ones.
// Issue 44 item 2: a configuration is one class whatever the kind: `sequential` says its
// procedure (chained) and runs every family; each family's driver runs it.
TEST(Registry, AConfigurationIsRegisteredOnceAndRunsEveryFamilyItsProcedureAllows) {
  const std::vector<std::string> all = configuration_names();
  EXPECT_EQ(std::count(all.begin(), all.end(), "sequential"), 1);
  for (const ConfigurationFamily family :
       {ConfigurationFamily::kSublayer, ConfigurationFamily::kC3, ConfigurationFamily::kOverlap})
    EXPECT_EQ(make_configuration("sequential", family)->procedure(), Procedure::kChained) << to_string(family);
  EXPECT_NE(make_sublayer_configuration("sequential"), nullptr);
  // A sweep runs the critical-path and overlapped configurations' points after
  // sequential's, whose chained run they take from the store; not the own procedures'.
  EXPECT_FALSE(takes_chained_run("sequential"));
  for (const char* taker : {"ideal-overlap", "ideal-rs-nmc", "ideal", "c3", "c3-priority", "conccl"})
    EXPECT_TRUE(takes_chained_run(taker)) << taker;
  EXPECT_FALSE(takes_chained_run("fused"));
  EXPECT_FALSE(takes_chained_run("t3"));
  EXPECT_FALSE(takes_chained_run("t3-mca"));
  EXPECT_FALSE(takes_chained_run("no-such-configuration"));
  // An overlapped configuration runs kind c3 only (the other kinds' tasks depend on
  // each other's output); conccl's launch puts the collective on the DMA engines, the
  // GEMM first.
  EXPECT_EQ(make_configuration("conccl", ConfigurationFamily::kC3)->procedure(), Procedure::kOverlapped);
  EXPECT_TRUE(make_configuration("conccl", ConfigurationFamily::kC3)->launch().collective_on_dma);
  EXPECT_EQ(make_configuration("conccl", ConfigurationFamily::kC3)->launch().collective_first, false);
  EXPECT_EQ(make_configuration("c3-priority", ConfigurationFamily::kC3)->launch().collective_priority, 1u);
  EXPECT_FALSE(make_configuration("c3", ConfigurationFamily::kC3)->launch().collective_first.has_value());
  EXPECT_EQ(configuration_names(ConfigurationFamily::kOverlap),
            (std::vector<std::string>{"fused", "ideal-overlap", "sequential"}));
  EXPECT_EQ(configuration_names(ConfigurationFamily::kC3),
            (std::vector<std::string>{"c3", "c3-priority", "conccl", "ideal", "sequential"}));
  try {
    make_configuration("t3", ConfigurationFamily::kC3);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("unknown c3 configuration 't3'"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("c3, c3-priority, conccl, ideal, sequential"));
  }
}

// A configuration written here, in one file, as CONTRIBUTING.md's worked example
// describes: the GEMM, then straight to the all-gather (no reduce-scatter at all).
// Not a configuration anyone should study; it exists to show the seams.
class GemmThenAllGather final : public SublayerProcedure {
 public:
  void build(SublayerSystem& s) override {
    ag_ = s.make_ring_collective(CollectiveKind::named("ring-ag"), /*uncached=*/false, /*values=*/false);
  }
  void start(SublayerSystem& s, std::uint32_t g) override { s.launch_gemm(g, KernelLaunch{}); }
  void on_gemm_end(SublayerSystem& s, std::uint32_t g) override {
    s.rs_ended(g, s.node().gpu(g).now());
    s.start_all_gather(g, *ag_);
  }
  std::uint64_t verify(SublayerSystem&, std::string&) override { return 0; }
  std::string rs_label(const SublayerSystem&) const override { return "none"; }

 private:
  std::unique_ptr<NodeCollective> ag_;
};

class GemmThenAllGatherConfiguration final : public Configuration {
 public:
  Procedure procedure() const override { return Procedure::kOwn; }
  std::unique_ptr<SublayerConfiguration> sublayer() const override { return std::make_unique<GemmThenAllGather>(); }
};

T3SIM_REGISTER(configurations, "test-gemm-then-ag", "the GEMM, then the AG (a test's own)",
               [] { return std::make_unique<GemmThenAllGatherConfiguration>(); })

TEST(Registry, AConfigurationInOneFileRunsThroughTheDriver) {
  const NodeConfig cfg = table1(4);
  Simulator sim(3);
  SublayerOptions opt;
  opt.functional = "off";
  SublayerSystem sys(sim, cfg, small_gemm(cfg), opt, "test-gemm-then-ag", 3);
  const SublayerResult r = sys.run();
  EXPECT_EQ(r.rs, Tick::zero());  // the RS "ended" when the GEMM did
  EXPECT_GT(r.gemm, Tick::zero());
  EXPECT_GT(r.ag, Tick::zero());
  EXPECT_EQ(r.total, r.gemm + r.ag);
  EXPECT_EQ(r.json["configuration"], "test-gemm-then-ag");
  EXPECT_NE(sys.summary(r).find("reduce-scatter     0.0000 ms (none)"), std::string::npos) << sys.summary(r);
}

TEST(Registry, AnUnknownConfigurationListsTheRegisteredOnes) {
  const NodeConfig cfg = table1(4);
  Simulator sim(3);
  try {
    SublayerSystem sys(sim, cfg, small_gemm(cfg), SublayerOptions{}, "pipelined", 3);
    FAIL() << "no error";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("configuration 'pipelined'"), std::string::npos) << what;
    EXPECT_NE(what.find("sequential, t3, t3-mca, test-gemm-then-ag"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace t3sim
