#include "sim/config.h"

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace t3sim {
namespace {

using ::testing::HasSubstr;

const std::string kDataDir = std::string(T3SIM_SOURCE_DIR) + "/tests/data/config";

std::string fixture(const std::string& name) { return kDataDir + "/" + name; }

// The ConfigError `fn` throws (a test failure if it throws none).
ConfigError config_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a ConfigError";
  return ConfigError({}, "", "");
}

// The message of the std::invalid_argument `fn` throws.
std::string unit_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return "";
}

// Structural equality, ignoring locations.
bool same_tree(const ConfigValue& a, const ConfigValue& b) {
  if (a.kind != b.kind || a.scalar != b.scalar || a.map.size() != b.map.size() ||
      a.list.size() != b.list.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.map.size(); ++i) {
    if (a.map[i].first != b.map[i].first || !same_tree(a.map[i].second, b.map[i].second)) return false;
  }
  for (std::size_t i = 0; i < a.list.size(); ++i) {
    if (!same_tree(a.list[i], b.list[i])) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Units

TEST(Units, Times) {
  EXPECT_EQ(parse_time("500ns"), Tick(500'000));
  EXPECT_EQ(parse_time("100ps"), Tick(100));
  EXPECT_EQ(parse_time("1.5us"), Tick(1'500'000));
  EXPECT_EQ(parse_time("0.5ns"), Tick(500));
  EXPECT_EQ(parse_time("2ms"), Tick(2'000'000'000));
  EXPECT_EQ(parse_time("1s"), Tick(1'000'000'000'000));
  EXPECT_EQ(parse_time("0.000000000001s"), Tick(1));
  EXPECT_EQ(parse_time("1.250000ns"), Tick(1'250));  // trailing zeros are harmless
  EXPECT_EQ(parse_time("007ns"), Tick(7'000));
  EXPECT_EQ(parse_time("5 ns"), Tick(5'000));
  EXPECT_EQ(parse_time("0ps"), Tick::zero());
  EXPECT_EQ(parse_time("18446744073709551615ps"), Tick::max());
  EXPECT_EQ(parse_time("18446744.073709551615s"), Tick::max());
}

TEST(Units, BadTimes) {
  EXPECT_EQ(unit_error([] { parse_time("5 parsecs"); }), "expected a time like '500ns', got '5 parsecs'");
  EXPECT_EQ(unit_error([] { parse_time("500"); }),
            "expected a time like '500ns', got '500' (missing unit: ps, ns, us, ms or s)");
  EXPECT_EQ(unit_error([] { parse_time("0.5ps"); }),
            "expected a time like '500ns', got '0.5ps' (not a whole number of picoseconds)");
  EXPECT_EQ(unit_error([] { parse_time("1.0001ns"); }),
            "expected a time like '500ns', got '1.0001ns' (not a whole number of picoseconds)");
  EXPECT_EQ(unit_error([] { parse_time("-5ns"); }), "expected a time like '500ns', got '-5ns' (negative)");
  EXPECT_EQ(unit_error([] { parse_time("18446744073709551616ps"); }),
            "expected a time like '500ns', got '18446744073709551616ps' (too large)");
  EXPECT_EQ(unit_error([] { parse_time("20000000s"); }),
            "expected a time like '500ns', got '20000000s' (too large)");
  EXPECT_EQ(unit_error([] { parse_time("99999999999999999999999999999s"); }),
            "expected a time like '500ns', got '99999999999999999999999999999s' (too large)");
  for (const char* bad : {"", "ns", ".5ns", "5.ns", "1e3ns", "5NS", "5 n s", "+5ns", "0x10ns", "5ns5", "1,5ns"}) {
    EXPECT_EQ(unit_error([&] { parse_time(bad); }), std::string("expected a time like '500ns', got '") + bad + "'")
        << bad;
  }
}

TEST(Units, Frequencies) {
  EXPECT_EQ(parse_frequency_hz("1.4GHz"), 1'400'000'000u);
  EXPECT_EQ(parse_frequency_hz("800MHz"), 800'000'000u);
  EXPECT_EQ(parse_frequency_hz("800mhz"), 800'000'000u);
  EXPECT_EQ(parse_frequency_hz("2.5 kHz"), 2'500u);
  EXPECT_EQ(parse_frequency_hz("100Hz"), 100u);
  EXPECT_EQ(parse_frequency_hz("100"), 100u);
  EXPECT_EQ(parse_frequency_hz("1THz"), 1'000'000'000'000u);
  EXPECT_EQ(unit_error([] { parse_frequency_hz("1.5Hz"); }),
            "expected a frequency like '1.4GHz', got '1.5Hz' (not a whole number of Hz)");
  EXPECT_EQ(unit_error([] { parse_frequency_hz("fast"); }), "expected a frequency like '1.4GHz', got 'fast'");
  EXPECT_EQ(unit_error([] { parse_frequency_hz("1.4G"); }), "expected a frequency like '1.4GHz', got '1.4G'");
  EXPECT_EQ(unit_error([] { parse_frequency_hz("-1GHz"); }),
            "expected a frequency like '1.4GHz', got '-1GHz' (negative)");
}

TEST(Units, Bandwidths) {
  EXPECT_EQ(parse_bandwidth("75GB/s"), Bandwidth(75'000'000'000));
  EXPECT_EQ(parse_bandwidth("1TB/s"), Bandwidth(1'000'000'000'000));
  EXPECT_EQ(parse_bandwidth("900MiB/s"), Bandwidth(900ULL << 20));
  EXPECT_EQ(parse_bandwidth("1.5KiB/s"), Bandwidth(1'536));
  EXPECT_EQ(parse_bandwidth("2kB/s"), Bandwidth(2'000));
  EXPECT_EQ(parse_bandwidth("64B/s"), Bandwidth(64));
  // A bare number is not a bandwidth (issue 45, D8: `bandwidth: 75` was read as 75 B/s),
  // but 0, unlimited in any unit.
  EXPECT_THROW(parse_bandwidth("64"), std::invalid_argument);
  EXPECT_THROW(parse_bandwidth("75"), std::invalid_argument);
  EXPECT_EQ(parse_bandwidth("0"), Bandwidth());
  EXPECT_EQ(parse_bandwidth("100Gb/s"), Bandwidth(12'500'000'000));
  EXPECT_EQ(parse_bandwidth("100Gbps"), Bandwidth(12'500'000'000));
  EXPECT_EQ(parse_bandwidth("25GBps"), Bandwidth(25'000'000'000));
  EXPECT_EQ(parse_bandwidth("12.5 GB/s"), Bandwidth(12'500'000'000));
  EXPECT_EQ(unit_error([] { parse_bandwidth("75G/s"); }),
            "expected a bandwidth like '75GB/s', got '75G/s' (ambiguous: write 75GB/s or 75GiB/s)");
  EXPECT_EQ(unit_error([] { parse_bandwidth("75GB"); }),
            "expected a bandwidth like '75GB/s', got '75GB' (missing '/s')");
  EXPECT_EQ(unit_error([] { parse_bandwidth("12b/s"); }),
            "expected a bandwidth like '75GB/s', got '12b/s' (not a whole number of bytes per second)");
  EXPECT_EQ(unit_error([] { parse_bandwidth("0.5B/s"); }),
            "expected a bandwidth like '75GB/s', got '0.5B/s' (not a whole number of bytes per second)");
  EXPECT_EQ(unit_error([] { parse_bandwidth("20000000TB/s"); }),
            "expected a bandwidth like '75GB/s', got '20000000TB/s' (too large)");
  EXPECT_EQ(unit_error([] { parse_bandwidth("75XB/s"); }), "expected a bandwidth like '75GB/s', got '75XB/s'");
  EXPECT_EQ(unit_error([] { parse_bandwidth("fast"); }), "expected a bandwidth like '75GB/s', got 'fast'");
  EXPECT_EQ(unit_error([] { parse_bandwidth("-1GB/s"); }),
            "expected a bandwidth like '75GB/s', got '-1GB/s' (negative)");
}

TEST(Units, Bytes) {
  EXPECT_EQ(parse_bytes("16MiB"), 16ULL << 20);
  EXPECT_EQ(parse_bytes("4KB"), 4'000u);
  EXPECT_EQ(parse_bytes("4kB"), 4'000u);
  EXPECT_EQ(parse_bytes("192MB"), 192'000'000u);
  EXPECT_EQ(parse_bytes("2GiB"), 2ULL << 30);
  EXPECT_EQ(parse_bytes("1TiB"), 1ULL << 40);
  EXPECT_EQ(parse_bytes("1TB"), 1'000'000'000'000u);
  EXPECT_EQ(parse_bytes("64"), 64u);
  EXPECT_EQ(parse_bytes("64B"), 64u);
  EXPECT_EQ(parse_bytes("0.5KiB"), 512u);
  EXPECT_EQ(parse_bytes("1.5 MB"), 1'500'000u);
  EXPECT_EQ(unit_error([] { parse_bytes("16M"); }),
            "expected a size like '16MiB', got '16M' (ambiguous: write 16MB or 16MiB)");
  EXPECT_EQ(unit_error([] { parse_bytes("4k"); }),
            "expected a size like '16MiB', got '4k' (ambiguous: write 4KB or 4KiB)");
  EXPECT_EQ(unit_error([] { parse_bytes("0.3KiB"); }),
            "expected a size like '16MiB', got '0.3KiB' (not a whole number of bytes)");
  EXPECT_EQ(unit_error([] { parse_bytes("1.5"); }),
            "expected a size like '16MiB', got '1.5' (not a whole number of bytes)");
  EXPECT_EQ(unit_error([] { parse_bytes("-4KB"); }), "expected a size like '16MiB', got '-4KB' (negative)");
  EXPECT_EQ(unit_error([] { parse_bytes("20000000TiB"); }),
            "expected a size like '16MiB', got '20000000TiB' (too large)");
  for (const char* bad : {"16Mb", "16MIB", "16 MiBs", "KiB", "big", "16Mi"}) {
    EXPECT_EQ(unit_error([&] { parse_bytes(bad); }), std::string("expected a size like '16MiB', got '") + bad + "'")
        << bad;
  }
}

TEST(Units, FormatRoundTrips) {
  EXPECT_EQ(format_time(Tick(1'500'000)), "1500ns");
  EXPECT_EQ(format_time(Tick(2'000'000'000'000)), "2s");
  EXPECT_EQ(format_time(Tick(123)), "123ps");
  EXPECT_EQ(format_time(Tick::zero()), "0ps");
  EXPECT_EQ(format_frequency(1'400'000'000), "1400MHz");
  EXPECT_EQ(format_frequency(2'000'000'000), "2GHz");
  EXPECT_EQ(format_bandwidth(Bandwidth(75'000'000'000)), "75GB/s");
  EXPECT_EQ(format_bandwidth(Bandwidth(900ULL << 20)), "900MiB/s");
  EXPECT_EQ(format_bandwidth(Bandwidth(1'000)), "1KB/s");
  EXPECT_EQ(format_bandwidth(Bandwidth(1'024)), "1KiB/s");
  EXPECT_EQ(format_bytes(16ULL << 20), "16MiB");
  EXPECT_EQ(format_bytes(192'000'000), "192MB");
  EXPECT_EQ(format_bytes(1'000'000'000'000'000), "1000TB");
  EXPECT_EQ(format_bytes(0), "0B");
  EXPECT_EQ(format_bytes(1'536), "1536B");  // 1.5KiB: keep it integral
  for (std::uint64_t ps : std::vector<std::uint64_t>{1, 999, 1'500'000, 7'000'000'000'000, UINT64_MAX}) {
    EXPECT_EQ(parse_time(format_time(Tick(ps))), Tick(ps));
  }
  for (std::uint64_t b : std::vector<std::uint64_t>{1, 1'536, 3ULL << 40, 5'000'000'000'000, UINT64_MAX}) {
    EXPECT_EQ(parse_bytes(format_bytes(b)), b);
    EXPECT_EQ(parse_bandwidth(format_bandwidth(Bandwidth(b))), Bandwidth(b));
  }
}

// ---------------------------------------------------------------------------
// Did-you-mean

TEST(DidYouMean, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("asoc", "assoc"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("flaw", "lawn"), 2u);
  EXPECT_EQ(edit_distance("ring", "ring"), 0u);
}

TEST(DidYouMean, ClosestMatch) {
  const std::vector<std::string> keys = {"size", "assoc", "latency", "bandwidth", "num_gpus"};
  EXPECT_EQ(closest_match("asoc", keys), "assoc");
  EXPECT_EQ(closest_match("bandwith", keys), "bandwidth");
  EXPECT_EQ(closest_match("num_gpu", keys), "num_gpus");
  EXPECT_EQ(closest_match("latnecy", keys), "latency");  // a transposition is two edits: 7/3 = 2
  EXPECT_EQ(closest_match("colour", keys), "");
  EXPECT_EQ(closest_match("sz", keys), "");
  EXPECT_EQ(closest_match("rng", {"ring", "fully-connected", "switch"}), "ring");
  EXPECT_EQ(closest_match("x", {}), "");
  // Ties go to the first candidate.
  EXPECT_EQ(closest_match("cat", {"bat", "hat"}), "bat");
  EXPECT_EQ(closest_match("cat", {"hat", "bat"}), "hat");
}

// ---------------------------------------------------------------------------
// Loading

TEST(Load, ScalarsKeepTextAndLocations) {
  const std::string file = fixture("system.yaml");
  const ConfigTree tree = ConfigTree::load_file(file);
  const ConfigValue* system = tree.root().find("system");
  ASSERT_NE(system, nullptr);
  EXPECT_EQ(system->kind, ConfigValue::Kind::kMap);
  EXPECT_EQ(system->key_where.file, file);
  EXPECT_EQ(system->key_where.line, 2);
  const ConfigValue* l2 = system->find("gpu")->find("l2");
  ASSERT_NE(l2, nullptr);
  EXPECT_EQ(l2->key_where.line, 7);
  EXPECT_EQ(l2->key_where.column, 5);
  const ConfigValue* size = l2->find("size");
  ASSERT_NE(size, nullptr);
  EXPECT_EQ(size->kind, ConfigValue::Kind::kScalar);
  EXPECT_EQ(size->scalar, "16MiB");
  EXPECT_EQ(size->where.line, 8);
  EXPECT_EQ(size->where.column, 13);
  EXPECT_EQ(size->key_where.column, 7);
  EXPECT_EQ(size->where.str(), file + ":8");
  EXPECT_EQ(system->find("missing"), nullptr);
}

TEST(Load, PathIsKeptAsGiven) {
  const std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(T3SIM_SOURCE_DIR);
  const ConfigTree tree = ConfigTree::load_file("tests/data/config/inherit/derived.yaml");
  std::filesystem::current_path(previous);
  const ConfigValue* l2 = tree.root().find("system")->find("gpu")->find("l2");
  EXPECT_EQ(l2->find("size")->where.str(), "tests/data/config/inherit/derived.yaml:6");
  EXPECT_EQ(l2->find("assoc")->where.str(), "tests/data/config/inherit/base_gpu.yaml:8");
}

TEST(Load, MissingFile) {
  const ConfigError e = config_error([] { ConfigTree::load_file(fixture("nope.yaml")); });
  EXPECT_EQ(std::string(e.what()), fixture("nope.yaml") + ": cannot open file");
}

// Inputs that would exhaust the stack or memory are clear errors (issue 21, C06, C07,
// C12): a device or directory as a config or a base, a base chain past 64 files, an
// alias bomb.
TEST(Load, OddFilesDeepChainsAndAliasBombsAreErrors) {
  EXPECT_NE(std::string(config_error([] { ConfigTree::load_file("/dev/zero"); }).what()).find(
                "'/dev/zero' is not a regular file"),
            std::string::npos);
  const auto dir = std::filesystem::temp_directory_path() / "t3sim_config_odd";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_NE(std::string(config_error([&] { ConfigTree::load_file(dir); }).what()).find("is not a regular file"),
            std::string::npos);
  std::ofstream(dir / "dev.yaml") << "base: /dev/zero\n";
  const ConfigError dev = config_error([&] { ConfigTree::load_file(dir / "dev.yaml"); });
  EXPECT_EQ(dev.key(), "base");
  EXPECT_EQ(dev.where().line, 1);
  for (int i = 0; i < 100; ++i) std::ofstream(dir / fmt::format("d{}.yaml", i)) << fmt::format("base: d{}.yaml\n", i + 1);
  std::ofstream(dir / "d100.yaml") << "num_gpus: 4\n";
  EXPECT_NE(std::string(config_error([&] { ConfigTree::load_file(dir / "d0.yaml"); }).what())
                .find("'base:' chains more than 64 files deep"),
            std::string::npos);
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    bomb += fmt::format("a{}: &a{} [", i, i);
    for (int k = 0; k < 10; ++k) bomb += fmt::format("{}*a{}", k ? ", " : "", i - 1);
    bomb += "]\n";
  }
  std::ofstream(dir / "bomb.yaml") << bomb;
  EXPECT_NE(std::string(config_error([&] { ConfigTree::load_file(dir / "bomb.yaml"); }).what())
                .find("more than 1000000 values (YAML aliases expanding without end?)"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Load, SyntaxError) {
  const ConfigError e = config_error([] { ConfigTree::load_file(fixture("syntax_error.yaml")); });
  EXPECT_EQ(e.where().file, fixture("syntax_error.yaml"));
  EXPECT_EQ(e.where().line, 3);
  EXPECT_THAT(e.what(), HasSubstr("syntax_error.yaml:3: end of sequence flow not found"));
}

TEST(Load, DuplicateKey) {
  const ConfigError e = config_error([] { ConfigTree::load_file(fixture("duplicate_key.yaml")); });
  EXPECT_EQ(std::string(e.what()),
            fixture("duplicate_key.yaml") + ":5: gpu.l2.size: duplicate key (first written at line 3)");
}

TEST(Load, ParseTextAndNonStringKeys) {
  const ConfigTree tree = ConfigTree::parse("a:\n  - 1\n  - [2, 3]\nb: ~\n", "inline.yaml");
  const ConfigValue* a = tree.root().find("a");
  ASSERT_EQ(a->kind, ConfigValue::Kind::kList);
  ASSERT_EQ(a->list.size(), 2u);
  EXPECT_EQ(a->list[1].kind, ConfigValue::Kind::kList);
  EXPECT_EQ(a->list[1].list[1].scalar, "3");
  EXPECT_EQ(a->list[1].where.str(), "inline.yaml:3");
  EXPECT_EQ(tree.root().find("b")->kind, ConfigValue::Kind::kNull);
  EXPECT_EQ(tree.root().find("b")->where.str(), "inline.yaml:4");

  const ConfigError e = config_error([] { ConfigTree::parse("x:\n  [1, 2]: 3\n", "keys.yaml"); });
  EXPECT_EQ(std::string(e.what()), "keys.yaml:2: x: mapping keys must be plain strings");
  EXPECT_EQ(ConfigTree::parse("", "empty.yaml").root().kind, ConfigValue::Kind::kMap);
  // One document per file (issue 45, D8): a second is an error at its marker's line;
  // a leading marker and a comment after '...' are fine.
  EXPECT_EQ(config_error([] { ConfigTree::parse("a: 1\n---\nb: 2\n", "two.yaml"); }).where().line, 2);
  EXPECT_EQ(config_error([] { ConfigTree::parse("a: 1\n...\nb: 2\n", "ended.yaml"); }).where().line, 3);
  EXPECT_EQ(ConfigTree::parse("---\na: 1\n...\n# done\n", "one.yaml").root().map.size(), 1u);
  // The config fuzzer's input on which yaml-cpp's LoadAll did not return (stop 40):
  // read as one document, it loads at once.
  std::ifstream in(std::string(T3SIM_SOURCE_DIR) + "/tests/data/config/fuzz_loadall_timeout.yaml", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  try {
    (void)ConfigTree::parse(text, "fuzz.yaml");
  } catch (const ConfigError&) {
    // a clear error is as good an answer
  }
}

// Found by fuzz/fuzz_sweep: a sweep value starting with the bytes FE FF was taken as a
// UTF-16 byte-order mark once applied as `--set key=value`, so the point ran another
// value than its CSV row says. Keys and scalars must be UTF-8 text.
TEST(Load, BytesThatAreNotUtf8AndControlCharactersAreErrors) {
  const ConfigError bom = config_error([] { ConfigTree::parse("w:\n  preset: [a, \xfe\xff palm]\n", "sweep.yaml"); });
  EXPECT_EQ(std::string(bom.what()),
            "sweep.yaml:2: w.preset[1]: not text: byte 0xfe at offset 0 is not UTF-8 "
            "(expected UTF-8 without control characters)");
  EXPECT_THAT(config_error([] { ConfigTree::parse("a: \"x\\0y\"\n", "nul.yaml"); }).what(),
              HasSubstr("nul.yaml:1: a: not text: control character U+0000 at offset 1"));
  EXPECT_THAT(config_error([] { ConfigTree::parse("a: b\xc3\n", "cut.yaml"); }).what(),
              HasSubstr("a: not text: a UTF-8 sequence is cut at offset 1"));
  EXPECT_THAT(config_error([] { ConfigTree::parse("a: \xc0\xaf\n", "overlong.yaml"); }).what(),
              HasSubstr("not UTF-8"));
  EXPECT_THAT(config_error([] { ConfigTree::parse("g:\n  \"k\\x01\": 1\n", "key.yaml"); }).what(),
              HasSubstr("key.yaml:2: g: a key is not text: control character U+0001 at offset 1"));
  ConfigTree tree;
  EXPECT_THAT(config_error([&] { tree.apply_override("system.name=\xff" "x"); }).what(),
              HasSubstr("system.name: not text: byte 0xff at offset 0 is not UTF-8"));
  // Found by fuzz/fuzz_config: a --set key path was not checked, so to_yaml() wrote a
  // key that no longer read back.
  EXPECT_THAT(config_error([&] { tree.apply_override("system.n\x8d" "a=1"); }).what(),
              HasSubstr("system.n\x8d" "a: the key is not text: byte 0x8d at offset 8 is not UTF-8"));
  // UTF-8 text, tabs and line breaks are fine.
  const ConfigTree ok = ConfigTree::parse("name: \"Gr\xc3\xa4" "fe \xe2\x86\x92 \xf0\x9f\x9a\x80\\tx\\ny\"\n", "ok.yaml");
  EXPECT_EQ(ok.root().find("name")->scalar, "Gr\xc3\xa4" "fe \xe2\x86\x92 \xf0\x9f\x9a\x80\tx\ny");
}

// ---------------------------------------------------------------------------
// base: inheritance

TEST(Base, OverridesMergeAndReplace) {
  const ConfigTree tree = ConfigTree::load_file(fixture("inherit/derived.yaml"));
  EXPECT_EQ(tree.root().find("base"), nullptr);
  const ConfigValue* system = tree.root().find("system");
  ASSERT_NE(system, nullptr);
  // base_link (second) overrides base_gpu (first).
  EXPECT_EQ(system->find("num_gpus")->scalar, "16");
  EXPECT_EQ(system->find("num_gpus")->where.str(), fixture("inherit/base_link.yaml") + ":2");
  EXPECT_EQ(system->find("topology")->scalar, "ring");
  // Maps merge key by key, through several levels.
  const ConfigValue* gpu = system->find("gpu");
  EXPECT_EQ(gpu->find("clock")->scalar, "1GHz");
  EXPECT_EQ(gpu->find("l2")->find("size")->scalar, "32MiB");
  EXPECT_EQ(gpu->find("l2")->find("size")->where.str(), fixture("inherit/derived.yaml") + ":6");
  EXPECT_EQ(gpu->find("l2")->find("assoc")->scalar, "16");
  EXPECT_EQ(system->find("link")->find("bandwidth")->scalar, "50GB/s");
  EXPECT_EQ(system->find("link")->find("latency")->scalar, "1us");
  // Lists replace.
  const ConfigValue* sizes = system->find("sizes");
  ASSERT_EQ(sizes->list.size(), 2u);
  EXPECT_EQ(sizes->list[0].scalar, "4");
  EXPECT_EQ(sizes->list[1].scalar, "5");
  // Base keys come first, in the bases' order.
  std::vector<std::string> keys;
  for (const auto& entry : system->map) keys.push_back(entry.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"num_gpus", "topology", "gpu", "sizes", "link"}));
}

TEST(Base, SingleBaseAndRelativePath) {
  const ConfigTree single = ConfigTree::load_file(fixture("inherit/single.yaml"));
  EXPECT_EQ(single.root().find("system")->find("num_gpus")->scalar, "2");
  EXPECT_EQ(single.root().find("system")->find("topology")->scalar, "switch");
  EXPECT_EQ(single.root().find("system")->find("gpu")->find("clock")->scalar, "1GHz");

  const ConfigTree nested = ConfigTree::load_file(fixture("inherit/sub/nested.yaml"));
  const ConfigValue* gpu = nested.root().find("system")->find("gpu");
  EXPECT_EQ(gpu->find("clock")->scalar, "2GHz");
  // "sub/../base_gpu.yaml" is shown normalised.
  EXPECT_EQ(gpu->find("l2")->find("size")->where.str(), fixture("inherit/base_gpu.yaml") + ":7");
}

TEST(Base, InsideASection) {
  // `base:` inside a mapping merges a preset into that mapping only.
  const ConfigTree tree = ConfigTree::load_file(fixture("inherit/section_base.yaml"));
  const ConfigValue* hbm = tree.root().find("memory")->find("hbm");
  ASSERT_NE(hbm, nullptr);
  EXPECT_EQ(hbm->find("base"), nullptr);
  EXPECT_EQ(hbm->find("tRCD")->scalar, "12");
  EXPECT_EQ(hbm->find("tRCD")->where.str(), fixture("inherit/section_preset.yaml") + ":2");
  EXPECT_EQ(hbm->find("tRP")->scalar, "14");  // the section's own key wins
  EXPECT_EQ(hbm->find("tRP")->where.str(), fixture("inherit/section_base.yaml") + ":5");
  EXPECT_EQ(hbm->find("bank_groups")->scalar, "4");
  EXPECT_EQ(tree.root().find("num_gpus")->scalar, "8");
}

TEST(Base, EmptyValueDoesNotEraseBaseMapping) {
  const ConfigTree tree = ConfigTree::load_file(fixture("inherit/empty_override.yaml"));
  const ConfigValue* gpu = tree.root().find("system")->find("gpu");
  ASSERT_EQ(gpu->kind, ConfigValue::Kind::kMap);
  EXPECT_EQ(gpu->find("clock")->scalar, "1GHz");
}

TEST(Base, Cycle) {
  const ConfigError e = config_error([] { ConfigTree::load_file(fixture("inherit/cycle_a.yaml")); });
  EXPECT_EQ(std::string(e.what()), fixture("inherit/cycle_b.yaml") + ":2: base: include cycle: " +
                                         fixture("inherit/cycle_a.yaml") + " -> " +
                                         fixture("inherit/cycle_b.yaml") + " -> " +
                                         fixture("inherit/cycle_a.yaml"));
  // A file that only leads into the cycle is not part of the reported chain.
  const ConfigError entry = config_error([] { ConfigTree::load_file(fixture("inherit/into_cycle.yaml")); });
  EXPECT_EQ(std::string(entry.what()), std::string(e.what()));
  const ConfigError self = config_error([] { ConfigTree::load_file(fixture("inherit/self_cycle.yaml")); });
  EXPECT_EQ(self.where().line, 1);
  EXPECT_EQ(self.message(), "include cycle: " + fixture("inherit/self_cycle.yaml") + " -> " +
                                fixture("inherit/self_cycle.yaml"));
}

// An empty file, or one of comments only, is an error naming it (issue 15), not every
// default; an empty file as a base adds nothing (its includer has keys).
TEST(Load, AnEmptyFileIsAnError) {
  const std::string dir = ::testing::TempDir();
  for (const char* text : {"", "# only a comment\n\n"}) {
    const std::string path = dir + "/t3sim_empty.yaml";
    std::ofstream(path) << text;
    const ConfigError e = config_error([&] { ConfigTree::load_file(path); });
    EXPECT_EQ(std::string(e.what()), path + ": the file is empty (expected a YAML mapping of keys)");
  }
}

TEST(Base, MissingBaseNamesTheIncludingLine) {
  const ConfigError e = config_error([] { ConfigTree::load_file(fixture("inherit/missing_base.yaml")); });
  EXPECT_EQ(std::string(e.what()), fixture("inherit/missing_base.yaml") + ":4: base: cannot open '" +
                                         fixture("inherit/no_such_file.yaml") + "'");
  EXPECT_EQ(e.where().column, 23);
}

TEST(Base, BadBaseValue) {
  const ConfigError e = config_error([] { ConfigTree::load_file(fixture("inherit/bad_base.yaml")); });
  EXPECT_EQ(e.where().line, 2);
  EXPECT_EQ(e.key(), "base");
  EXPECT_EQ(e.message(), "expected a file path or a list of file paths, got a mapping");
}

// ---------------------------------------------------------------------------
// Overrides and sections

TEST(Override, SetsNewAndExistingKeys) {
  ConfigTree tree = ConfigTree::load_file(fixture("system.yaml"));
  tree.apply_override("system.link.bandwidth=100GB/s");
  tree.apply_override("system.gpu.l3.size=64MiB");  // creates the missing map
  tree.apply_override("workload.sizes=[1, 2, 4]");
  tree.apply_override("top=x=y");  // only the first '=' splits
  const ConfigValue* bw = tree.root().find("system")->find("link")->find("bandwidth");
  EXPECT_EQ(bw->scalar, "100GB/s");
  EXPECT_EQ(bw->where.str(), "--set system.link.bandwidth=100GB/s");
  EXPECT_EQ(bw->where.line, 0);
  EXPECT_EQ(bw->key_where.str(), "--set system.link.bandwidth=100GB/s");
  EXPECT_EQ(tree.root().find("system")->find("link")->find("latency")->scalar, "500ns");  // untouched
  EXPECT_EQ(tree.root().find("system")->find("gpu")->find("l3")->find("size")->scalar, "64MiB");
  const ConfigValue* sizes = tree.root().find("workload")->find("sizes");
  ASSERT_EQ(sizes->kind, ConfigValue::Kind::kList);
  ASSERT_EQ(sizes->list.size(), 3u);
  EXPECT_EQ(sizes->list[2].scalar, "4");
  EXPECT_EQ(sizes->list[2].where.str(), "--set workload.sizes=[1, 2, 4]");
  EXPECT_EQ(tree.root().find("top")->scalar, "x=y");
}

TEST(Override, ReplacesAMappingWithAValue) {
  ConfigTree tree = ConfigTree::load_file(fixture("system.yaml"));
  tree.apply_override("system.gpu.l2={size: 1MiB}");
  const ConfigValue* l2 = tree.root().find("system")->find("gpu")->find("l2");
  EXPECT_EQ(l2->map.size(), 1u);
  EXPECT_EQ(l2->find("size")->scalar, "1MiB");
}

TEST(Override, Malformed) {
  ConfigTree tree;
  const ConfigError no_eq = config_error([&] { tree.apply_override("system.num_gpus"); });
  EXPECT_EQ(no_eq.key(), "--set");
  EXPECT_EQ(no_eq.message(), "expected the form key.path=value, got 'system.num_gpus' (no '=')");
  EXPECT_EQ(std::string(no_eq.what()),
            "command line: --set: expected the form key.path=value, got 'system.num_gpus' (no '=')");
  EXPECT_EQ(config_error([&] { tree.apply_override("=5"); }).message(),
            "expected the form key.path=value, got '=5' (empty key)");
  EXPECT_EQ(config_error([&] { tree.apply_override("a..b=5"); }).message(),
            "expected the form key.path=value, got 'a..b=5' (empty path segment)");
  EXPECT_EQ(config_error([&] { tree.apply_override(".a=5"); }).message(),
            "expected the form key.path=value, got '.a=5' (empty path segment)");
  const ConfigError yaml = config_error([&] { tree.apply_override("a=[1, 2"); });
  EXPECT_EQ(yaml.key(), "a");
  EXPECT_THAT(yaml.message(), HasSubstr("invalid YAML value"));
  EXPECT_EQ(yaml.where().str(), "--set a=[1, 2");
}

TEST(Override, IntoAScalarIsAnError) {
  ConfigTree tree = ConfigTree::load_file(fixture("system.yaml"));
  const ConfigError e = config_error([&] { tree.apply_override("system.num_gpus.x=1"); });
  EXPECT_EQ(std::string(e.what()), "--set system.num_gpus.x=1: system.num_gpus.x: cannot set a key inside "
                                   "'system.num_gpus', which is '8' (from " +
                                       fixture("system.yaml") + ":3), not a mapping");
}

TEST(Override, IndexesIntoLists) {
  ConfigTree tree = ConfigTree::parse("gens:\n  - {name: a, n: 1}\n  - {name: b, n: 2}\nxs: [1, 2]\n", "w.yaml");
  tree.apply_override("gens[1].n=5");
  tree.apply_override("gens[0].extra=yes");
  tree.apply_override("xs[0]=7");
  EXPECT_EQ(tree.root().find("gens")->list[1].find("n")->scalar, "5");
  EXPECT_EQ(tree.root().find("gens")->list[1].find("n")->where.str(), "--set gens[1].n=5");
  EXPECT_EQ(tree.root().find("gens")->list[0].find("extra")->scalar, "yes");
  EXPECT_EQ(tree.root().find("xs")->list[0].scalar, "7");
  EXPECT_EQ(tree.root().find("gens")->list[0].find("n")->scalar, "1");

  auto error = [&](const std::string& o) {
    try {
      tree.apply_override(o);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error("gens[2].n=1"), HasSubstr("gens[2].n: 'gens' has 2 items; index 2 is out of range"));
  EXPECT_THAT(error("gens[x].n=1"), HasSubstr("expected a list index like 'name[0]', got 'gens[x]'"));
  EXPECT_THAT(error("nope[0].n=1"), HasSubstr("there is no list 'nope' to index"));
  EXPECT_THAT(error("gens[0].n[0]=1"), HasSubstr("'gens[0].n' is '1' (from w.yaml:2), not a list"));
}

TEST(Override, ProgrammaticSet) {
  ConfigTree tree;
  tree.set("sweep.point", "3", SourceLocation{"sweep point 3", 0, 0});
  EXPECT_EQ(tree.root().find("sweep")->find("point")->scalar, "3");
  EXPECT_EQ(tree.root().find("sweep")->find("point")->where.str(), "sweep point 3");
  EXPECT_THROW(tree.set("a..b", "1", SourceLocation{"x", 0, 0}), ConfigError);
}

TEST(Sections, SetSectionComposesTrees) {
  ConfigTree run;
  run.set_section("system", ConfigTree::load_file(fixture("system.yaml")));
  run.set_section("workload", ConfigTree::parse("kind: allreduce\n", "wl.yaml"));
  run.set_section("workload", ConfigTree::parse("kind: allgather\n", "wl2.yaml"));  // replaces
  ASSERT_EQ(run.root().map.size(), 2u);
  EXPECT_EQ(run.root().find("system")->find("system")->find("num_gpus")->scalar, "8");
  EXPECT_EQ(run.root().find("workload")->find("kind")->scalar, "allgather");
  EXPECT_EQ(run.root().find("workload")->find("kind")->where.str(), "wl2.yaml:1");
}

TEST(ToYaml, ScalarsWithControlCharactersGoQuoted) {
  // Found by fuzz/fuzz_config: "flops: 1024\r   # comment" keeps the carriage return
  // in the plain scalar; written plain, the text read back as "1024".
  const ConfigTree tree = ConfigTree::parse("flops: 1024\r   # FLOPs\n\"k\\tey\": x\n", "cr.yaml");
  ASSERT_EQ(tree.root().find("flops")->scalar, "1024\r");
  const std::string yaml = tree.to_yaml();
  const ConfigTree again = ConfigTree::parse(yaml, "dump.yaml");
  EXPECT_TRUE(same_tree(tree.root(), again.root())) << yaml;
  EXPECT_EQ(again.root().find("flops")->scalar, "1024\r");
  EXPECT_EQ(again.root().find("k\tey")->scalar, "x");
}

TEST(ToYaml, RoundTrips) {
  ConfigTree tree = ConfigTree::load_file(fixture("inherit/derived.yaml"));
  tree.apply_override("odd.empty=''");
  tree.apply_override("odd.null_text='null'");
  tree.apply_override("odd.colon='a: b'");
  tree.apply_override("odd.nothing=");
  tree.apply_override("odd.nested=[[1, 2], {k: v}, []]");
  tree.apply_override("odd.empty_map={}");
  const std::string yaml = tree.to_yaml();
  const ConfigTree again = ConfigTree::parse(yaml, "dump.yaml");
  EXPECT_TRUE(same_tree(tree.root(), again.root())) << yaml;
  EXPECT_EQ(again.to_yaml(), yaml);
  EXPECT_EQ(again.root().find("odd")->find("null_text")->kind, ConfigValue::Kind::kScalar);
  EXPECT_EQ(again.root().find("odd")->find("nothing")->kind, ConfigValue::Kind::kNull);
  EXPECT_THAT(yaml, HasSubstr("sizes: [4, 5]"));
  EXPECT_THAT(yaml, Not(HasSubstr("base")));
}

// ---------------------------------------------------------------------------
// ConfigNode getters

class Getters : public ::testing::Test {
 protected:
  Getters() : tree_(ConfigTree::load_file(fixture("system.yaml"))) {}
  ConfigNode root() { return ConfigNode(&tree_.root(), "", &resolved_); }

  ConfigTree tree_;
  ResolvedConfig resolved_;
};

TEST_F(Getters, ReadValuesAndRecordThem) {
  ConfigNode system = root().child("system");
  EXPECT_EQ(system.path(), "system");
  EXPECT_EQ(system.get_uint("num_gpus", 1, 1024, Required{}), 8u);
  EXPECT_EQ(system.get_enum("topology", "switch", {"ring", "fully-connected", "switch"}), "ring");
  ConfigNode gpu = system.child("gpu");
  EXPECT_EQ(gpu.get_frequency_hz("clock", 1'000'000'000), 1'400'000'000u);
  ConfigNode l2 = gpu.child("l2");
  EXPECT_EQ(l2.path(), "system.gpu.l2");
  EXPECT_EQ(l2.get_bytes("size", 0), 16ULL << 20);
  EXPECT_EQ(l2.get_time("latency", Tick::ns(1)), Tick::ns(120));
  EXPECT_EQ(l2.get_uint("ways", 8), 8u);  // default
  ConfigNode link = system.child("link");
  EXPECT_EQ(link.get_bandwidth("bandwidth", Bandwidth(1)), Bandwidth(75'000'000'000));
  EXPECT_EQ(link.get_time("latency", Tick::zero()), Tick::ns(500));
  EXPECT_EQ(link.get_double("efficiency", 0.9, 0, 1), 0.9);
  EXPECT_EQ(link.get_bool("duplex", true), true);
  EXPECT_EQ(link.get_string("name", "nvlink"), "nvlink");
  EXPECT_EQ(link.get_int("offset", -3), -3);
  EXPECT_EQ(link.get_uint_list("lanes", {1, 2}), (std::vector<std::uint64_t>{1, 2}));

  const nlohmann::json expected = nlohmann::json::parse(R"({
    "system": {
      "num_gpus": 8, "topology": "ring",
      "gpu": {"clock": "1400MHz", "l2": {"size": "16MiB", "latency": "120ns", "ways": 8}},
      "link": {"bandwidth": "75GB/s", "latency": "500ns", "efficiency": 0.9, "duplex": true,
               "name": "nvlink", "offset": -3, "lanes": [1, 2]}
    }})");
  EXPECT_EQ(resolved_.json(), expected) << resolved_.json().dump(2);
}

TEST_F(Getters, AbsentSectionGivesDefaults) {
  ConfigNode cache = root().child("system").child("gpu").child("l1");
  EXPECT_EQ(cache.path(), "system.gpu.l1");
  EXPECT_FALSE(cache.has("size"));
  EXPECT_TRUE(cache.keys().empty());
  EXPECT_EQ(cache.get_bytes("size", 128 * 1024), 128u * 1024);
  EXPECT_EQ(resolved_.json()["system"]["gpu"]["l1"]["size"], "128KiB");
  cache.finish();  // nothing to reject
  // A required key in an absent section is reported at the nearest written parent.
  const ConfigError e = config_error([&] { cache.get_uint("ways", 1, 64, Required{}); });
  EXPECT_EQ(std::string(e.what()), fixture("system.yaml") + ":5: system.gpu.l1.ways: required key missing");
}

TEST_F(Getters, RequiredKeyMissing) {
  ConfigNode l2 = root().child("system").child("gpu").child("l2");
  const ConfigError e = config_error([&] { l2.get_uint("ways", 1, 64, Required{}); });
  EXPECT_EQ(std::string(e.what()), fixture("system.yaml") + ":7: system.gpu.l2.ways: required key missing");
  const ConfigError s = config_error([&] { l2.get_string("policy", Required{}); });
  EXPECT_EQ(s.where().line, 7);
  EXPECT_EQ(s.key(), "system.gpu.l2.policy");
  EXPECT_EQ(root().child("system").get_string("topology", Required{}), "ring");
}

TEST_F(Getters, FinishSuggestsAKnownKey) {
  ConfigNode l2 = root().child("system").child("gpu").child("l2");
  l2.get_bytes("size", 0);
  l2.get_uint("assoc", 8);  // absent, but asked for: a suggestion
  l2.get_time("latency", Tick::zero());
  const ConfigError e = config_error([&] { l2.finish(); });
  EXPECT_EQ(std::string(e.what()),
            fixture("system.yaml") + ":9: system.gpu.l2.asoc: unknown key (did you mean 'assoc'?)");
  EXPECT_EQ(e.where().column, 7);
}

TEST_F(Getters, FinishListsKnownKeysWhenNothingIsClose) {
  ConfigNode l2 = root().child("system").child("gpu").child("l2");
  l2.get_bytes("size", 0);
  l2.get_time("latency", Tick::zero());
  l2.get_string("policy", "lru");
  const ConfigError e = config_error([&] { l2.finish(); });
  EXPECT_EQ(e.key(), "system.gpu.l2.asoc");
  EXPECT_EQ(e.message(), "unknown key (known keys: size, latency, policy)");

  ConfigNode link = root().child("system").child("link");
  EXPECT_EQ(config_error([&] { link.finish(); }).message(), "unknown key (no keys are expected here)");
}

TEST_F(Getters, FinishChecksOnlyItsOwnKeys) {
  ConfigNode system = root().child("system");
  system.get_uint("num_gpus", 1);
  system.get_string("topology", "ring");
  system.child("gpu");  // never finished: its keys are its own business
  system.raw("link");
  system.finish();
  // Copies share what was read.
  ConfigNode copy = system;
  copy.finish();
  // has() and keys() do not count as reading.
  ConfigNode gpu = root().child("system").child("gpu");
  EXPECT_TRUE(gpu.has("clock"));
  EXPECT_EQ(gpu.keys(), (std::vector<std::string>{"clock", "l2"}));
  EXPECT_EQ(config_error([&] { gpu.finish(); }).key(), "system.gpu.clock");
}

TEST_F(Getters, RawRecordsAndReturnsTheValue) {
  ConfigNode system = root().child("system");
  const ConfigValue* link = system.raw("link");
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->find("latency")->scalar, "500ns");
  EXPECT_EQ(system.raw("absent"), nullptr);
  EXPECT_EQ(resolved_.json()["system"]["link"], (nlohmann::json{{"bandwidth", "75GB/s"}, {"latency", "500ns"}}));
  EXPECT_FALSE(resolved_.json()["system"].contains("absent"));
}

TEST_F(Getters, LocationAndFail) {
  ConfigNode l2 = root().child("system").child("gpu").child("l2");
  EXPECT_EQ(l2.location("size").str(), fixture("system.yaml") + ":8");
  EXPECT_EQ(l2.location("absent").str(), fixture("system.yaml") + ":7");
  const ConfigError e = config_error([&] { l2.fail("size", "must be a power of two"); });
  EXPECT_EQ(std::string(e.what()), fixture("system.yaml") + ":8: system.gpu.l2.size: must be a power of two");
}

TEST(ResolvedConfigTest, RecordsNestedPaths) {
  ResolvedConfig resolved;
  resolved.record("a.b.c", 1);
  resolved.record("a.b.d", "x");
  resolved.record("e", true);
  resolved.record("e.f", 2);  // a scalar becomes a section when something is recorded under it
  EXPECT_EQ(resolved.json(), nlohmann::json::parse(R"({"a": {"b": {"c": 1, "d": "x"}}, "e": {"f": 2}})"));
}

// ---------------------------------------------------------------------------
// Getter errors, each at the line of the bad value in bad_values.yaml

class GetterErrors : public ::testing::Test {
 protected:
  GetterErrors() : tree_(ConfigTree::load_file(fixture("bad_values.yaml"))) {}

  // The error for reading `key` with `read`, checked to be at `line` and `key`.
  std::string message(int line, const std::string& key, const std::function<void(ConfigNode&)>& read) {
    ConfigNode node(&tree_.root(), "", &resolved_);
    const ConfigError e = config_error([&] { read(node); });
    EXPECT_EQ(e.where().file, fixture("bad_values.yaml")) << key;
    EXPECT_EQ(e.where().line, line) << key;
    EXPECT_EQ(e.key(), key);
    return e.message();
  }

  ConfigTree tree_;
  ResolvedConfig resolved_;
};

TEST_F(GetterErrors, Integers) {
  EXPECT_EQ(message(1, "uint_word", [](ConfigNode& n) { n.get_uint("uint_word", 0); }),
            "expected an unsigned integer, got 'abc'");
  EXPECT_EQ(message(2, "uint_float", [](ConfigNode& n) { n.get_uint("uint_float", 0); }),
            "expected an unsigned integer, got '1.5'");
  EXPECT_EQ(message(3, "uint_exp", [](ConfigNode& n) { n.get_uint("uint_exp", 0); }),
            "expected an unsigned integer, got '1e3'");
  EXPECT_EQ(message(4, "uint_negative", [](ConfigNode& n) { n.get_uint("uint_negative", 0); }),
            "expected an unsigned integer, got '-3'");
  EXPECT_EQ(message(5, "uint_huge", [](ConfigNode& n) { n.get_uint("uint_huge", 0); }),
            "expected an unsigned integer, got '99999999999999999999' (too large)");
  EXPECT_EQ(message(6, "small", [](ConfigNode& n) { n.get_uint("small", 4, 2, 1024); }),
            "1 is out of range [2, 1024]");
  EXPECT_EQ(message(6, "small", [](ConfigNode& n) { n.get_uint("small", 4, 2); }),
            "1 is less than the minimum 2");
  EXPECT_EQ(message(25, "int_low", [](ConfigNode& n) { n.get_int("int_low", 0, -10, 10); }),
            "-20 is out of range [-10, 10]");
  EXPECT_EQ(message(2, "uint_float", [](ConfigNode& n) { n.get_int("uint_float", 0); }),
            "expected an integer, got '1.5'");
  EXPECT_EQ(message(15, "section_list", [](ConfigNode& n) { n.get_uint("section_list", 0); }),
            "expected an unsigned integer, got a list");
  EXPECT_EQ(message(26, "empty", [](ConfigNode& n) { n.get_uint("empty", 0); }),
            "expected an unsigned integer, got nothing");
}

TEST_F(GetterErrors, Doubles) {
  EXPECT_EQ(message(22, "double_bad", [](ConfigNode& n) { n.get_double("double_bad", 0); }),
            "expected a number, got '1.2.3'");
  EXPECT_EQ(message(23, "double_high", [](ConfigNode& n) { n.get_double("double_high", 0, 0, 1); }),
            "2.5 is out of range [0, 1]");
  EXPECT_EQ(message(23, "double_high", [](ConfigNode& n) { n.get_double("double_high", 0, -1e300, 1); }),
            "2.5 is greater than the maximum 1");
  ConfigNode node(&tree_.root(), "", &resolved_);
  EXPECT_EQ(node.get_double("uint_exp", 0), 1000.0);
  EXPECT_EQ(node.get_double("small", 0), 1.0);
}

TEST_F(GetterErrors, Units) {
  EXPECT_EQ(message(7, "time_bad", [](ConfigNode& n) { n.get_time("time_bad", Tick::zero()); }),
            "expected a time like '500ns', got '5 parsecs'");
  EXPECT_EQ(message(8, "time_no_unit", [](ConfigNode& n) { n.get_time("time_no_unit", Tick::zero()); }),
            "expected a time like '500ns', got '500' (missing unit: ps, ns, us, ms or s)");
  EXPECT_EQ(message(9, "time_fraction", [](ConfigNode& n) { n.get_time("time_fraction", Tick::zero()); }),
            "expected a time like '500ns', got '0.5ps' (not a whole number of picoseconds)");
  EXPECT_EQ(message(10, "time_low",
                    [](ConfigNode& n) { n.get_time("time_low", Tick::ns(5), Tick::ns(1), Tick::ms(1'000)); }),
            "0ps is out of range [1ns, 1s]");
  EXPECT_EQ(message(10, "time_low", [](ConfigNode& n) { n.get_time("time_low", Tick::ns(5), Tick::ns(1)); }),
            "0ps is less than the minimum 1ns");
  EXPECT_EQ(message(19, "bandwidth_bad", [](ConfigNode& n) { n.get_bandwidth("bandwidth_bad", Bandwidth(1)); }),
            "expected a bandwidth like '75GB/s', got '75G/s' (ambiguous: write 75GB/s or 75GiB/s)");
  EXPECT_EQ(message(20, "bytes_bad", [](ConfigNode& n) { n.get_bytes("bytes_bad", 0); }),
            "expected a size like '16MiB', got '16M' (ambiguous: write 16MB or 16MiB)");
  EXPECT_EQ(message(6, "small", [](ConfigNode& n) { n.get_bytes("small", 0, 4096, 1ULL << 30); }),
            "1B is out of range [4KiB, 1GiB]");
  EXPECT_EQ(message(21, "freq_bad", [](ConfigNode& n) { n.get_frequency_hz("freq_bad", 1); }),
            "expected a frequency like '1.4GHz', got 'fast'");
  EXPECT_EQ(message(6, "small", [](ConfigNode& n) { n.get_frequency_hz("small", 1, 1'000'000); }),
            "1Hz is out of range [1MHz, 1THz]");
  // A bare number is no bandwidth (issue 45, D8); with its unit it meets the range check.
  EXPECT_EQ(message(6, "small",
                    [](ConfigNode& n) { n.get_bandwidth("small", Bandwidth(1), Bandwidth(1'000'000'000)); }),
            "expected a bandwidth like '75GB/s', got '1' (missing unit: B/s, KB/s, MB/s, GB/s or TB/s)");
  EXPECT_EQ(message(16, "section_scalar", [](ConfigNode& n) { n.get_time("section_scalar", Tick::zero()); }),
            "expected a time like '500ns', got 'hello'");
}

TEST_F(GetterErrors, BoolsStringsEnums) {
  EXPECT_EQ(message(11, "bool_bad", [](ConfigNode& n) { n.get_bool("bool_bad", false); }),
            "expected true or false, got 'maybe'");
  EXPECT_EQ(message(12, "bool_yes", [](ConfigNode& n) { n.get_bool("bool_yes", false); }),
            "expected true or false, got 'yes'");
  EXPECT_EQ(message(24, "string_list", [](ConfigNode& n) { n.get_string("string_list", ""); }),
            "expected a string, got a list");
  EXPECT_EQ(message(13, "topology",
                    [](ConfigNode& n) { n.get_enum("topology", "ring", {"ring", "fully-connected", "switch"}); }),
            "expected one of ring, fully-connected, switch; got 'rng' (did you mean 'ring'?)");
  EXPECT_EQ(message(14, "mode", [](ConfigNode& n) { n.get_enum("mode", "fast", {"fast", "accurate"}); }),
            "expected one of fast, accurate; got 'xyz'");
  EXPECT_EQ(message(15, "section_list", [](ConfigNode& n) { n.get_enum("section_list", "a", {"a", "b"}); }),
            "expected one of a, b; got a list");
}

TEST_F(GetterErrors, SectionsAndLists) {
  EXPECT_EQ(message(15, "section_list", [](ConfigNode& n) { n.child("section_list"); }),
            "expected a mapping, got a list");
  EXPECT_EQ(message(16, "section_scalar", [](ConfigNode& n) { n.child("section_scalar"); }),
            "expected a mapping, got 'hello'");
  EXPECT_EQ(message(17, "list_bad[1]", [](ConfigNode& n) { n.get_uint_list("list_bad", {}); }),
            "expected an unsigned integer or a size like '16MiB', got 'two'");
  EXPECT_EQ(message(15, "section_list[1]", [](ConfigNode& n) { n.get_uint_list("section_list", {}, 0, 1); }),
            "2 is greater than the maximum 1");
  EXPECT_EQ(message(18, "list_scalar", [](ConfigNode& n) { n.get_uint_list("list_scalar", {}); }),
            "expected a list of unsigned integers, got '5'");
  ConfigNode node(&tree_.root(), "", &resolved_);
  ConfigNode empty = node.child("empty");  // `empty:` with nothing: an absent section
  EXPECT_EQ(empty.get_uint("x", 7), 7u);
  EXPECT_EQ(node.get_uint_list("section_list", {}), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(resolved_.json()["section_list"], (nlohmann::json{1, 2}));
}

TEST(ConfigNodeRoot, NonMappingRootIsAnError) {
  const ConfigTree tree = ConfigTree::parse("- 1\n- 2\n", "list.yaml");
  ResolvedConfig resolved;
  const ConfigError e = config_error([&] { ConfigNode(&tree.root(), "", &resolved); });
  EXPECT_EQ(std::string(e.what()), "list.yaml:1: expected a mapping, got a list");
}

TEST(ConfigNodeRoot, ListOfSizes) {
  const ConfigTree tree = ConfigTree::parse("sizes: [64, 4KiB, 1MB]\n", "sizes.yaml");
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  EXPECT_EQ(root.get_uint_list("sizes", {}), (std::vector<std::uint64_t>{64, 4096, 1'000'000}));
  root.finish();
}

}  // namespace
}  // namespace t3sim
