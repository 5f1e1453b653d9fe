// Fuzz target: the YAML config reader (sim/config.h).
//
// Input sections (fuzz_common.h; separator lines start with "#@@"):
//   0  a config file, written as configs/systems/fuzz.yaml beside the shipped systems
//   1  configs/systems/fuzz_base.yaml       (reach it with `base: fuzz_base.yaml`)
//   2  configs/systems/inc/fuzz_inc.yaml    (`base: inc/fuzz_inc.yaml`; it may say
//                                            `base: ../table1.yaml` or `../fuzz_base.yaml`)
//   3  `--set` overrides, one `system.a.b=value` per line
// An absent section removes its file. Shipped files resolve too (`base: table1.yaml`,
// `base: ../memory/hbm2.yaml`).
//
// What runs: ConfigTree::parse of section 0; ConfigTree::load_file of the config with
// its `base:` chain; the overrides on the tree composed under `system:`; every key of
// the result through every typed getter of ConfigNode (units, ranges, lists) and
// finish(). Properties checked beyond "no crash, only UserError":
//   - a composed tree written with to_yaml() parses back to the same tree;
//   - every scalar that parses as a time, frequency, bandwidth or size formats to
//     canonical text that parses back to the same value (config.h's contract).

#include <cstddef>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "fuzz/fuzz_common.h"
#include "sim/config.h"

namespace {

using namespace t3sim;
using t3sim_fuzz::expect_user_error;
using t3sim_fuzz::property_failed;

bool has_base_key(const ConfigValue& v) {
  for (const ConfigValue& item : v.list)
    if (has_base_key(item)) return true;
  for (const auto& [key, value] : v.map)
    if (key == "base" || has_base_key(value)) return true;
  return false;
}

// A unit parser's canonical text must read back to the same value.
template <typename Parse, typename Format>
void check_unit_round_trip(const std::string& scalar, const char* what, Parse parse, Format format) {
  decltype(parse(scalar)) value{};
  try {
    value = parse(scalar);
  } catch (const std::invalid_argument&) {
    return;  // not such a quantity: the documented answer
  }
  // Anything else escaping a parse_* is a finding (expect_user_error reports it).
  std::string text;
  expect_user_error([&] { text = format(value); }, false);
  decltype(parse(scalar)) again{};
  try {
    again = parse(text);
  } catch (const std::exception& e) {
    property_failed(fmt::format("{} '{}' formats as '{}', which does not parse back: {}", what, scalar, text, e.what()));
  }
  if (!(again == value))
    property_failed(fmt::format("{} '{}' formats as '{}', which parses to a different value", what, scalar, text));
}

void check_scalars(const ConfigValue& v, int budget_depth = 0) {
  if (budget_depth > 256) return;
  switch (v.kind) {
    case ConfigValue::Kind::kScalar:
      if (v.scalar.size() > 64) return;  // quantities are short; keep the target fast
      check_unit_round_trip(v.scalar, "time", parse_time, format_time);
      check_unit_round_trip(v.scalar, "frequency", parse_frequency_hz, format_frequency);
      check_unit_round_trip(v.scalar, "bandwidth", parse_bandwidth, format_bandwidth);
      check_unit_round_trip(v.scalar, "size", parse_bytes, format_bytes);
      return;
    case ConfigValue::Kind::kList:
      for (const ConfigValue& item : v.list) check_scalars(item, budget_depth + 1);
      return;
    case ConfigValue::Kind::kMap:
      for (const auto& entry : v.map) check_scalars(entry.second, budget_depth + 1);
      return;
    case ConfigValue::Kind::kNull: return;
  }
}

// Every key through every getter; sub-mappings recursively; then finish().
void read_everything(ConfigNode node, int depth = 0) {
  if (depth > 64) return;
  for (const std::string& key : node.keys()) {
    expect_user_error([&] { node.get_uint(key, 0); });
    expect_user_error([&] { node.get_uint(key, 1, 1024, Required{}); });
    expect_user_error([&] { node.get_int(key, -1, -100, 100); });
    expect_user_error([&] { node.get_double(key, 0.5, 0.0, 1.0); });
    expect_user_error([&] { node.get_bool(key, false); });
    expect_user_error([&] { node.get_string(key, ""); });
    expect_user_error([&] { node.get_enum(key, "ring", {"ring", "switch", "fully-connected"}); });
    expect_user_error([&] { node.get_time(key, Tick::zero()); });
    expect_user_error([&] { node.get_time(key, Tick::ns(1), Tick::ns(1), Tick::ms(1)); });
    expect_user_error([&] { node.get_frequency_hz(key, 1'000'000'000); });
    expect_user_error([&] { node.get_bandwidth(key, Bandwidth(1)); });
    expect_user_error([&] { node.get_bytes(key, 0, 1, 1ULL << 40); });
    expect_user_error([&] { node.get_uint_list(key, {}, 0, 1ULL << 32); });
    expect_user_error([&] { (void)node.location(key); });
    expect_user_error([&] {
      const ConfigValue* raw = node.raw(key);
      if (raw != nullptr && raw->kind == ConfigValue::Kind::kMap) read_everything(node.child(key), depth + 1);
    });
  }
  expect_user_error([&] { node.child("absent_section").finish(); });
  expect_user_error([&] { node.finish(); });
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  t3sim_fuzz::quiet();
  t3sim_fuzz::Scratch::get();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string> sections = t3sim_fuzz::split_sections(data, size);
  auto& scratch = t3sim_fuzz::Scratch::get();
  const auto section = [&](std::size_t i) { return i < sections.size() ? sections[i] : std::string(); };
  scratch.put("configs/systems/fuzz.yaml", section(0));
  scratch.put("configs/systems/fuzz_base.yaml", section(1), sections.size() > 1);
  scratch.put("configs/systems/inc/fuzz_inc.yaml", section(2), sections.size() > 2);

  // The text alone, as tests and generated configs use it.
  expect_user_error([&] { (void)ConfigTree::parse(section(0), "fuzz.yaml"); }, false);

  ConfigTree top;
  const bool loaded = expect_user_error(
      [&] { top.set_section("system", ConfigTree::load_file(scratch.path("configs/systems/fuzz.yaml"))); }, false);
  if (!loaded) return 0;
  for (const std::string& assignment : t3sim_fuzz::lines_of(section(3)))
    expect_user_error([&] { top.apply_override(assignment); }, false);

  // Written back as YAML, the tree reads back the same (unless a --set made a key
  // called `base`, which parsing would take as an include).
  if (!has_base_key(top.root())) {
    std::string yaml;
    expect_user_error([&] { yaml = top.to_yaml(); }, false);
    ConfigTree again;
    try {
      again = ConfigTree::parse(yaml, "to_yaml");
    } catch (const std::exception& e) {
      property_failed(fmt::format("to_yaml() text does not parse back: {}\n--- text:\n{}", e.what(), yaml));
    }
    if (const std::string diff = t3sim_fuzz::first_difference(top.root(), again.root()); !diff.empty())
      property_failed(fmt::format("to_yaml() text parses back to a different tree at {}\n--- text:\n{}", diff, yaml));
  }

  check_scalars(top.root());

  ResolvedConfig resolved;
  read_everything(ConfigNode(&top.root(), "", &resolved));
  // As results.json writes it (sim/output.cpp): invalid UTF-8 replaced, never an exception.
  (void)resolved.json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
