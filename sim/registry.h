#pragma once
// Registries of implementations chosen by name in the configuration (a memory
// controller's arbiter and DRAM scheduler, the L2's replacement policy, ...): each
// is a list of rows deriving from RegistryEntry (adding its factory), kept in one
// place, so a name exists once. The config readers check names against it
// (ConfigNode::get_enum with registered_names()), the factories look rows up with
// find_registered(), and `t3sim list` prints every entry's name and description.

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace t3sim {

struct RegistryEntry {
  std::string name;         // as written in the configuration
  std::string description;  // one line
};

// The names of `entries`, in registry order.
std::vector<std::string> registered_names(const std::vector<RegistryEntry>& entries);

// Throws a UserError: "unknown <what> '<name>' (registered: a, b, c)".
[[noreturn]] void unknown_registered_name(std::string_view what, std::string_view name,
                                          const std::vector<std::string>& names);

// The entry of `rows` named `name`; unknown: a UserError naming `what` (e.g. "DRAM
// scheduler") and listing the registered names.
template <class Row>
const Row& find_registered(const std::vector<Row>& rows, std::string_view name, std::string_view what) {
  static_assert(std::is_base_of_v<RegistryEntry, Row>);
  for (const Row& row : rows) {
    if (row.name == name) return row;
  }
  std::vector<std::string> names;
  for (const Row& row : rows) names.push_back(row.name);
  unknown_registered_name(what, name, names);
}

// The entries of `rows` without their factories (what a registry exposes).
template <class Row>
std::vector<RegistryEntry> registry_entries(const std::vector<Row>& rows) {
  static_assert(std::is_base_of_v<RegistryEntry, Row>);
  return std::vector<RegistryEntry>(rows.begin(), rows.end());
}

}  // namespace t3sim
