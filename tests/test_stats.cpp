#include "sim/stats.h"

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace t3sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Counter, CountsAndDumps) {
  StatsRegistry reg;
  Counter& c = reg.counter("gpu0.link.bytes", "B", "bytes sent");
  EXPECT_EQ(c.value(), 0u);
  c += 100;
  ++c;
  EXPECT_EQ(c.value(), 101u);
  const json j = c.to_json(Tick::zero());
  EXPECT_EQ(j["kind"], "counter");
  EXPECT_EQ(j["unit"], "B");
  EXPECT_EQ(j["description"], "bytes sent");
  EXPECT_EQ(j["value"], 101);
}

// A bound counter reads its owner's count (dumps included) and keeps the final one
// when unbound, as a controller does before its state goes away.
TEST(Counter, BoundCounterReadsItsOwnersCountAndKeepsItOnUnbind) {
  StatsRegistry reg;
  Counter& c = reg.counter("gpu0.mem.mc0.write_drains", "drains", "write drains");
  std::uint64_t owner = 0;
  c.bind(&owner);
  owner = 7;
  EXPECT_EQ(c.value(), 7u);
  EXPECT_EQ(c.to_json(Tick::zero())["value"], 7);
  owner = 9;
  c.unbind();
  owner = 1000;  // no longer read
  EXPECT_EQ(c.value(), 9u);
  EXPECT_EQ(c.to_json(Tick::zero())["value"], 9);
}

TEST(Scalar, HoldsValue) {
  StatsRegistry reg;
  Scalar& s = reg.scalar("util", "", "utilization");
  s.set(0.25);
  EXPECT_EQ(s.to_json(Tick::zero())["value"], 0.25);
}

TEST(Average, EmptyReportsZeros) {
  StatsRegistry reg;
  const Average& a = reg.average("lat", "ns", "latency");
  EXPECT_EQ(a.count(), 0u);
  EXPECT_EQ(a.mean(), 0.0);
  EXPECT_EQ(a.min(), 0.0);
  EXPECT_EQ(a.max(), 0.0);
  const json j = a.to_json(Tick::zero());
  EXPECT_EQ(j["min"], 0.0);
  EXPECT_EQ(j["max"], 0.0);
}

TEST(Average, MeanMinMax) {
  StatsRegistry reg;
  Average& a = reg.average("lat", "ns", "latency");
  a.sample(4);
  a.sample(-2);
  a.sample(10);
  EXPECT_EQ(a.count(), 3u);
  EXPECT_DOUBLE_EQ(a.mean(), 4.0);
  EXPECT_EQ(a.min(), -2.0);
  EXPECT_EQ(a.max(), 10.0);
}

TEST(Histogram, EmptyIsAllZero) {
  StatsRegistry reg;
  const Histogram& h = reg.histogram("h", "ns", "d", 10, 4);
  EXPECT_EQ(h.buckets().size(), 5u);
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.percentile(0.5), 0.0);
  EXPECT_EQ(h.percentile(0.99), 0.0);
}

TEST(Histogram, BucketsAndOverflow) {
  StatsRegistry reg;
  Histogram& h = reg.histogram("h", "ns", "d", 10, 4);  // [0,10) .. [30,40), overflow
  h.sample(0);
  h.sample(9);
  h.sample(10);
  h.sample(39);
  h.sample(40);
  h.sample(1000, 2);
  EXPECT_THAT(h.buckets(), ElementsAre(2u, 1u, 0u, 1u, 3u));
  EXPECT_EQ(h.count(), 7u);
  EXPECT_EQ(h.max(), 1000u);
  EXPECT_DOUBLE_EQ(h.mean(), (0 + 9 + 10 + 39 + 40 + 2000) / 7.0);
}

TEST(Histogram, PercentilesAreBucketUpperEdges) {
  StatsRegistry reg;
  Histogram& h = reg.histogram("h", "ns", "d", 10, 10);
  for (std::uint64_t v = 0; v < 100; ++v) h.sample(v);  // 10 per bucket
  EXPECT_EQ(h.percentile(0.0), 10.0);   // first non-empty bucket
  EXPECT_EQ(h.percentile(0.10), 10.0);  // exactly 10 samples in [0,10)
  EXPECT_EQ(h.percentile(0.11), 20.0);
  EXPECT_EQ(h.percentile(0.50), 50.0);
  EXPECT_EQ(h.percentile(0.07), 10.0);  // 0.07*100 rounds to 7.000000000000001
  EXPECT_EQ(h.percentile(0.90), 90.0);
  EXPECT_EQ(h.percentile(0.99), 100.0);
  EXPECT_EQ(h.percentile(1.0), 100.0);
}

TEST(Histogram, PercentileInOverflowReportsMax) {
  StatsRegistry reg;
  Histogram& h = reg.histogram("h", "ns", "d", 10, 2);
  h.sample(5);
  h.sample(500);
  h.sample(777);
  EXPECT_EQ(h.percentile(0.3), 10.0);
  EXPECT_EQ(h.percentile(0.5), 777.0);
  EXPECT_EQ(h.percentile(1.0), 777.0);
}

TEST(Histogram, SkipsEmptyLeadingBuckets) {
  StatsRegistry reg;
  Histogram& h = reg.histogram("h", "ns", "d", 10, 10);
  h.sample(55);
  EXPECT_EQ(h.percentile(0.0), 60.0);
  EXPECT_EQ(h.percentile(0.5), 60.0);
}

TEST(Histogram, RejectsBadArguments) {
  StatsRegistry reg;
  EXPECT_THROW(reg.histogram("zero", "ns", "d", 0, 4), std::logic_error);
  Histogram& h = reg.histogram("h", "ns", "d", 10, 4);
  EXPECT_THROW(h.percentile(1.5), std::logic_error);
  EXPECT_THROW(h.percentile(-0.1), std::logic_error);
}

TEST(Histogram, Json) {
  StatsRegistry reg;
  Histogram& h = reg.histogram("h", "ns", "d", 10, 3);
  h.sample(1);
  h.sample(15);
  h.sample(99);
  const json j = h.to_json(Tick::zero());
  EXPECT_EQ(j["kind"], "histogram");
  EXPECT_EQ(j["count"], 3);
  EXPECT_EQ(j["max"], 99);
  EXPECT_DOUBLE_EQ(j["mean"].get<double>(), 115.0 / 3.0);
  EXPECT_EQ(j["p50"], 20.0);
  EXPECT_EQ(j["p90"], 99.0);
  EXPECT_EQ(j["p99"], 99.0);
  EXPECT_EQ(j["bucket_width"], 10);
  EXPECT_EQ(j["buckets"], json({1, 1, 0, 1}));
}

TEST(TimeWeighted, MeanMatchesHandComputation) {
  StatsRegistry reg;
  TimeWeighted& q = reg.time_weighted("q", "entries", "queue occupancy", 2, 3);
  // level 0 on [0,10), 3 on [10,30), 1 on [30,35), 6 on [35,50) (open at the end).
  q.set(Tick(10), 3);
  q.set(Tick(30), 1);
  q.add(Tick(35), 5);
  EXPECT_EQ(q.level(), 6);
  EXPECT_EQ(q.max(), 6);
  const double area = 0 * 10 + 3 * 20 + 1 * 5 + 6 * 15;
  EXPECT_DOUBLE_EQ(q.mean(Tick(50)), area / 50);

  // Buckets of width 2: [0,2) holds levels 0 and 1 (15 ps), [2,4) level 3 (20 ps),
  // [4,6) nothing, overflow level 6 (15 ps).
  const json j = q.to_json(Tick(50));
  EXPECT_EQ(j["kind"], "time_weighted");
  EXPECT_DOUBLE_EQ(j["mean"].get<double>(), area / 50);
  EXPECT_EQ(j["max"], 6);
  EXPECT_EQ(j["level"], 6);
  EXPECT_EQ(j["bucket_width"], 2);
  const std::vector<double> fractions = j["time_fraction"];
  ASSERT_EQ(fractions.size(), 4u);
  EXPECT_DOUBLE_EQ(fractions[0], 15.0 / 50);
  EXPECT_DOUBLE_EQ(fractions[1], 20.0 / 50);
  EXPECT_DOUBLE_EQ(fractions[2], 0.0);
  EXPECT_DOUBLE_EQ(fractions[3], 15.0 / 50);
}

TEST(TimeWeighted, ZeroEndAndRepeatedTimes) {
  StatsRegistry reg;
  TimeWeighted& q = reg.time_weighted("q", "", "d");
  EXPECT_EQ(q.mean(Tick::zero()), 0.0);
  q.set(Tick(0), 5);  // zero-length interval at level 0
  q.set(Tick(0), 2);
  EXPECT_EQ(q.max(), 5);
  EXPECT_DOUBLE_EQ(q.mean(Tick(4)), 2.0);
  const json j = q.to_json(Tick::zero());
  EXPECT_EQ(j["mean"], 0.0);
  for (const auto& f : j["time_fraction"]) EXPECT_EQ(f, 0.0);
}

TEST(TimeWeighted, ContractViolationsThrow) {
  StatsRegistry reg;
  TimeWeighted& q = reg.time_weighted("gpu0.q", "", "d");
  try {
    q.set(Tick(1), -1);
    FAIL() << "negative level accepted";
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("gpu0.q"));
  }
  q.set(Tick(10), 1);
  EXPECT_THROW(q.set(Tick(5), 2), std::logic_error);
  EXPECT_THROW(q.mean(Tick(5)), std::logic_error);
}

TEST(StatsRegistry, DuplicateNameIsLogicErrorNamingTheStat) {
  StatsRegistry reg;
  reg.counter("gpu1.mc0.reads", "", "d");
  try {
    reg.average("gpu1.mc0.reads", "", "d");
    FAIL() << "duplicate accepted";
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("gpu1.mc0.reads"));
  }
  EXPECT_EQ(reg.size(), 1u);
}

TEST(StatsRegistry, FindAndStableReferences) {
  StatsRegistry reg;
  Counter& first = reg.counter("a", "", "d");
  for (int i = 0; i < 1000; ++i) reg.counter(fmt::format("c{}", i), "", "d");
  first += 7;
  EXPECT_EQ(reg.find("a"), &first);
  EXPECT_EQ(reg.find("missing"), nullptr);
  EXPECT_EQ(reg.size(), 1001u);
  // Every name is still found, and still a duplicate, after the table has grown.
  for (int i = 0; i < 1000; i += 37) {
    const std::string name = fmt::format("c{}", i);
    ASSERT_NE(reg.find(name), nullptr) << name;
    EXPECT_EQ(reg.find(name)->name(), name);
    EXPECT_THROW(reg.scalar(name, "", "d"), std::logic_error) << name;
  }
  EXPECT_EQ(StatsRegistry().find("a"), nullptr);
  EXPECT_EQ(reg.size(), 1001u);
}

TEST(StatsRegistry, JsonKeyedAndSortedByName) {
  StatsRegistry reg;
  reg.counter("z.bytes", "B", "d") += 3;
  reg.scalar("a.util", "", "d").set(0.5);
  reg.time_weighted("m.q", "", "d").set(Tick(10), 4);
  const json j = reg.to_json(Tick(20));
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  EXPECT_THAT(keys, ElementsAre("a.util", "m.q", "z.bytes"));
  EXPECT_EQ(j["z.bytes"]["value"], 3);
  EXPECT_EQ(j["a.util"]["value"], 0.5);
  EXPECT_DOUBLE_EQ(j["m.q"]["mean"].get<double>(), 2.0);
  // Round trip through text.
  EXPECT_EQ(json::parse(j.dump()), j);
}

TEST(StatsRegistry, CsvHeaderRowsAndQuoting) {
  StatsRegistry reg;
  reg.counter("b.bytes", "B", "bytes, \"payload\" only") += 12345678901;
  reg.scalar("a.util", "", "plain").set(0.1);
  Histogram& h = reg.histogram("c.lat", "ns", "latency", 10, 1);
  h.sample(3);
  h.sample(25);
  std::ostringstream out;
  reg.write_csv(out, Tick(1));
  EXPECT_THAT(lines_of(out.str()),
              ElementsAre("name,kind,unit,field,value,description",
                          "a.util,scalar,,value,0.1,plain",
                          "b.bytes,counter,B,value,12345678901,\"bytes, \"\"payload\"\" only\"",
                          "c.lat,histogram,ns,count,2,latency",
                          "c.lat,histogram,ns,mean,14,latency",
                          "c.lat,histogram,ns,max,25,latency",
                          "c.lat,histogram,ns,p50,10,latency",
                          "c.lat,histogram,ns,p90,25,latency",
                          "c.lat,histogram,ns,p99,25,latency",
                          "c.lat,histogram,ns,bucket_width,10,latency",
                          "c.lat,histogram,ns,bucket_0_10,1,latency",
                          "c.lat,histogram,ns,bucket_overflow,1,latency"));
}

TEST(StatsRegistry, CsvTimeWeightedAndAverageFields) {
  StatsRegistry reg;
  reg.time_weighted("q", "", "d", 1, 2).set(Tick(1), 1);
  reg.average("avg", "", "d").sample(1.0 / 3.0);
  std::ostringstream out;
  reg.write_csv(out, Tick(4));
  EXPECT_THAT(lines_of(out.str()),
              ElementsAre("name,kind,unit,field,value,description",
                          "avg,average,,count,1,d",
                          "avg,average,,mean,0.3333333333333333,d",
                          "avg,average,,min,0.3333333333333333,d",
                          "avg,average,,max,0.3333333333333333,d",
                          "q,time_weighted,,mean,0.75,d",
                          "q,time_weighted,,max,1,d",
                          "q,time_weighted,,level,1,d",
                          "q,time_weighted,,bucket_width,1,d",
                          "q,time_weighted,,time_fraction_0_1,0.25,d",
                          "q,time_weighted,,time_fraction_1_2,0.75,d"));  // zero fractions omitted
}

}  // namespace
}  // namespace t3sim
