#include "models/system/c3/c3_presets.h"

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/error.h"

namespace t3sim {

namespace {
constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kGiB = 1ULL << 30;
}  // namespace

const std::vector<C3Gemm>& c3_gemms() {
  // ../shared/seeds/003 Table I.
  static const std::vector<C3Gemm> gemms = {
      {"cb1", 8192, 8192, 8192, "LLaMA-70B", true},
      {"cb2", 16384, 8192, 16384, "LLaMA-405B", true},
      {"cb3", 16384, 16384, 8192, "LLaMA-405B", true},
      {"cb4", 18432, 8192, 16384, "LLaMA-405B", true},
      {"cb5", 106496, 8192, 16384, "LLaMA-405B", true},
      {"mb1", 8192, 57344, 8192, "LLaMA-70B", false},
      {"mb2", 16384, 106496, 8192, "LLaMA-405B", false},
  };
  return gemms;
}

const std::vector<C3Case>& c3_cases() {
  // ../shared/seeds/003 Table II, in its order (G-long, C-long, GC-equal).
  static const std::vector<C3Case> cases = {
      {"mb1_896M", "mb1", 896 * kMiB, "G-long", "LLaMA-70B"},
      {"mb2_3.25G", "mb2", 13 * kGiB / 4, "G-long", "LLaMA-405B"},
      {"mb1_4G", "mb1", 4 * kGiB, "G-long", "synthetic"},
      {"mb1_6G", "mb1", 6 * kGiB, "G-long", "synthetic"},
      {"cb3_512M", "cb3", 512 * kMiB, "G-long", "LLaMA-405B"},
      {"cb4_512M", "cb4", 512 * kMiB, "G-long", "LLaMA-405B"},
      // 1.63G: cb5's 106496 x 8192 FP16 = 1.625 GiB.
      {"cb5_1.63G", "cb5", 13 * kGiB / 8, "G-long", "LLaMA-405B"},
      {"cb4_1G", "cb4", 1 * kGiB, "G-long", "synthetic"},
      {"mb1_13G", "mb1", 13 * kGiB, "C-long", "synthetic"},
      {"cb2_3.25G", "cb2", 13 * kGiB / 4, "C-long", "LLaMA-405B"},
      {"cb4_2.5G", "cb4", 5 * kGiB / 2, "C-long", "synthetic"},
      {"cb1_896M", "cb1", 896 * kMiB, "C-long", "LLaMA-70B"},
      {"cb5_20G", "cb5", 20 * kGiB, "C-long", "synthetic"},
      {"mb2_26.5G", "mb2", 53 * kGiB / 2, "GC-equal", "synthetic"},
      {"cb5_13G", "cb5", 13 * kGiB, "GC-equal", "synthetic"},
  };
  return cases;
}

namespace {

// The entry of `table` whose name (`name_of`) is `name`; otherwise a UserError naming
// `what`, with a did-you-mean and the names of `source`.
template <class Entry, class NameOf>
const Entry& find_named(const std::vector<Entry>& table, std::string_view name, NameOf name_of,
                        std::string_view what, std::string_view source) {
  std::vector<std::string> names;
  for (const Entry& e : table) {
    if (name_of(e) == name) return e;
    names.push_back(name_of(e));
  }
  const std::string best = closest_match(name, names);
  throw UserError(fmt::format("unknown {} '{}'{} ({}: {})", what, name,
                              best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best), source,
                              fmt::join(names, ", ")));
}

}  // namespace

const C3Gemm& find_c3_gemm(std::string_view tag) {
  return find_named(c3_gemms(), tag, [](const C3Gemm& g) { return g.tag; }, "C3 GEMM", "seed 003 Table I");
}

const C3Case& find_c3_case(std::string_view name) {
  return find_named(c3_cases(), name, [](const C3Case& c) { return c.name; }, "C3 case", "seed 003 Table II");
}

}  // namespace t3sim
