#include "sim/timeline.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/error.h"

namespace t3sim {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::HasSubstr;

class TimelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("t3sim_test_timeline_" + std::string(info->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  json write_and_parse(const Timeline& t) {
    const fs::path path = dir_ / "timeline.json";
    t.write(path);
    return json::parse(read(path));
  }
  // The events that are not metadata, in file order.
  static json events_of(const json& doc) {
    json events = json::array();
    for (const auto& e : doc["traceEvents"]) {
      if (e["ph"] != "M") events.push_back(e);
    }
    return events;
  }

  fs::path dir_;
};

TEST_F(TimelineTest, TrackNumbering) {
  Timeline t;
  const auto link = t.track("gpu3.link.next");
  const auto mc = t.track("gpu3.mc0");
  t.track("host");
  t.track("gpu0.sm1");
  EXPECT_EQ(t.track("gpu3.link.next"), link);  // same name, same id
  EXPECT_NE(link, mc);
  t.enable();
  const json doc = write_and_parse(t);

  json metadata = json::array();
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M") metadata.push_back(e);
  }
  ASSERT_EQ(metadata.size(), 7u);  // 3 processes + 4 threads
  EXPECT_EQ(metadata[0], json::parse(R"({"ph":"M","name":"process_name","pid":1,"args":{"name":"gpu3"}})"));
  EXPECT_EQ(metadata[1],
            json::parse(R"({"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"link.next"}})"));
  EXPECT_EQ(metadata[2],
            json::parse(R"({"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"mc0"}})"));
  EXPECT_EQ(metadata[3], json::parse(R"({"ph":"M","name":"process_name","pid":2,"args":{"name":"host"}})"));
  EXPECT_EQ(metadata[4],
            json::parse(R"({"ph":"M","name":"thread_name","pid":2,"tid":1,"args":{"name":"host"}})"));
  EXPECT_EQ(metadata[5], json::parse(R"({"ph":"M","name":"process_name","pid":3,"args":{"name":"gpu0"}})"));
  EXPECT_EQ(metadata[6],
            json::parse(R"({"ph":"M","name":"thread_name","pid":3,"tid":1,"args":{"name":"sm1"}})"));
}

TEST_F(TimelineTest, EventsWithExactMicrosecondTimestamps) {
  Timeline t;
  t.enable();
  const auto link = t.track("gpu1.link");
  t.slice(link, "send", Tick(1'234'567), Tick(3'234'568));
  t.instant(link, "drop", Tick(2'000'000));
  t.counter(link, "occupancy", Tick(5), 3.5);
  EXPECT_EQ(t.recorded(), 3u);

  const fs::path path = dir_ / "timeline.json";
  t.write(path);
  const std::string text = read(path);
  // Written from the integer picoseconds: no rounding, trailing zeros dropped.
  EXPECT_THAT(text, HasSubstr(R"("ts":1.234567,"dur":2.000001)"));
  EXPECT_THAT(text, HasSubstr(R"("ts":2})"));
  EXPECT_THAT(text, HasSubstr(R"("ts":0.000005)"));

  const json doc = json::parse(text);
  EXPECT_EQ(doc["displayTimeUnit"], "ns");
  EXPECT_EQ(doc["otherData"]["dropped_events"], 0);
  EXPECT_EQ(doc["otherData"]["time_unit"], "us");
  const json events = events_of(doc);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0]["ph"], "X");
  EXPECT_EQ(events[0]["name"], "send");
  EXPECT_EQ(events[0]["pid"], 1);
  EXPECT_EQ(events[0]["tid"], 1);
  EXPECT_EQ(events[0]["ts"].get<double>(), 1.234567);
  EXPECT_EQ(events[0]["dur"].get<double>(), 2.000001);
  EXPECT_EQ(events[1]["ph"], "i");
  EXPECT_EQ(events[1]["name"], "drop");
  EXPECT_EQ(events[1]["ts"].get<double>(), 2.0);
  EXPECT_EQ(events[2]["ph"], "C");
  EXPECT_EQ(events[2]["name"], "link.occupancy");
  EXPECT_EQ(events[2]["pid"], 1);
  EXPECT_EQ(events[2]["ts"].get<double>(), 5e-6);
  EXPECT_EQ(events[2]["args"], json::parse(R"({"occupancy":3.5})"));
}

TEST_F(TimelineTest, NamesAreEscaped) {
  Timeline t;
  t.enable();
  const auto tr = t.track("gpu0.a\"b");
  t.slice(tr, "x\\y\n", Tick(0), Tick(1));
  const json doc = write_and_parse(t);
  EXPECT_EQ(events_of(doc)[0]["name"], "x\\y\n");
}

TEST_F(TimelineTest, DisabledRecordsNothing) {
  Timeline t;
  const auto tr = t.track("gpu0.x");
  t.slice(tr, "s", Tick(0), Tick(1));
  t.counter(tr, "c", Tick(0), 1);
  t.instant(tr, "i", Tick(0));
  EXPECT_FALSE(t.enabled());
  EXPECT_EQ(t.recorded(), 0u);
  EXPECT_EQ(t.dropped(), 0u);
}

TEST_F(TimelineTest, EventsBeyondMaxAreDroppedAndCounted) {
  Timeline t;
  t.enable(3);
  const auto tr = t.track("gpu0.x");
  for (int i = 0; i < 10; ++i) t.slice(tr, "s", Tick(i), Tick(i + 1));
  t.instant(tr, "late", Tick(20));
  EXPECT_EQ(t.recorded(), 3u);
  EXPECT_EQ(t.dropped(), 8u);
  const json doc = write_and_parse(t);
  EXPECT_EQ(events_of(doc).size(), 3u);
  EXPECT_EQ(doc["otherData"]["dropped_events"], 8);
}

TEST_F(TimelineTest, MisuseIsLogicError) {
  Timeline t;
  t.enable();
  const auto tr = t.track("gpu0.x");
  EXPECT_THROW(t.slice(tr, "backwards", Tick(10), Tick(5)), std::logic_error);
  EXPECT_THROW(t.slice(tr + 1, "no such track", Tick(0), Tick(1)), std::logic_error);
  EXPECT_THROW(t.counter(tr, "nan", Tick(0), std::nan("")), std::logic_error);
}

TEST_F(TimelineTest, AtomicWriteLeavesOnlyTheFile) {
  Timeline t;
  t.enable();
  const auto tr = t.track("gpu0.x");
  for (int i = 0; i < 50'000; ++i) t.slice(tr, fmt::format("s{}", i % 7), Tick(i), Tick(i + 1));
  const json doc = write_and_parse(t);
  EXPECT_EQ(events_of(doc).size(), 50'000u);
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir_)) files.push_back(entry.path().filename().string());
  EXPECT_THAT(files, ::testing::ElementsAre("timeline.json"));
}

TEST_F(TimelineTest, UnwritablePathIsUserError) {
  Timeline t;
  t.enable();
  EXPECT_THROW(t.write(dir_ / "no_such_dir" / "timeline.json"), UserError);
}

TEST_F(TimelineTest, WriteIsDeterministic) {
  const auto build = [] {
    Timeline t;
    t.enable();
    const auto a = t.track("gpu0.a");
    const auto b = t.track("gpu1.b");
    t.slice(a, "s", Tick(1), Tick(2));
    t.counter(b, "c", Tick(3), 0.1);
    return t;
  };
  build().write(dir_ / "one.json");
  build().write(dir_ / "two.json");
  EXPECT_EQ(read(dir_ / "one.json"), read(dir_ / "two.json"));
}

}  // namespace
}  // namespace t3sim
