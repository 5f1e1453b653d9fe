#pragma once
// Implementations chosen by name (Ramulator 2's registration, in spirit): each
// implementation's file registers itself with one T3SIM_REGISTER line, so adding one
// is one new file and its test, and its name is written once, there. The readers at
// the edge take the names from the registry (config errors list them and suggest the
// nearest), and `t3sim list` prints every registry with its one-line descriptions.
//
//   // models/net/impl/ring.cpp
//   T3SIM_REGISTER(topologies, "ring", "bidirectional ring: a link to each neighbour, ...",
//                  [](std::uint32_t n, const NetConfig& cfg) { return std::make_unique<RingTopology>(n, cfg); })
//
// Registration runs at static initialization; the libraries holding registered
// implementations are linked whole (CMakeLists.txt) so no registration is dropped.

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace t3sim {

// The name and description of one registered implementation, for listings.
struct RegistryEntry {
  std::string name;
  std::string description;
};

// Throws a UserError: "unknown <what> '<name>' (registered: a, b, c)".
[[noreturn]] void unknown_registered_name(std::string_view what, std::string_view name,
                                          const std::vector<std::string>& names);

// `Interface`'s implementations by name; each is made by a factory taking `Args`.
template <class Interface, class... Args>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Interface>(Args...)>;
  struct Entry {
    std::string name;
    std::string description;
    Factory make;
  };

  // Contract: `name` is not registered yet (a duplicate is a bug: the process stops
  // at start-up, before any input is read). Returns true, for static initializers.
  bool add(std::string name, std::string description, Factory make) {
    if (find(name) != nullptr) std::terminate();
    const auto at = std::lower_bound(entries_.begin(), entries_.end(), name,
                                     [](const Entry& e, const std::string& n) { return e.name < n; });
    entries_.insert(at, Entry{std::move(name), std::move(description), std::move(make)});
    return true;
  }
  const Entry* find(std::string_view name) const {
    for (const Entry& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }
  // The entry named `name`; unknown: a UserError naming `what` ("DRAM scheduler") and
  // listing the registered names.
  const Entry& get(std::string_view name, std::string_view what) const {
    if (const Entry* e = find(name)) return *e;
    unknown_registered_name(what, name, names());
  }
  // Sorted by name.
  const std::vector<Entry>& entries() const { return entries_; }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Entry& e : entries_) out.push_back(e.name);
    return out;
  }
  std::vector<RegistryEntry> listing() const {
    std::vector<RegistryEntry> out;
    for (const Entry& e : entries_) out.push_back({e.name, e.description});
    return out;
  }

 private:
  std::vector<Entry> entries_;
};

}  // namespace t3sim

// Registers `factory` (a callable taking the registry's Args and returning the
// implementation) as `name` in the registry that `registry()` returns (a
// function-local static, so it exists before any registration uses it).
#define T3SIM_REGISTER(registry, name, description, factory)                              \
  namespace {                                                                           \
  [[maybe_unused]] const bool T3SIM_REGISTRY_CONCAT(t3sim_registered_, __COUNTER__) =       \
      registry().add(name, description, factory);                                        \
  }
#define T3SIM_REGISTRY_CONCAT_(a, b) a##b
#define T3SIM_REGISTRY_CONCAT(a, b) T3SIM_REGISTRY_CONCAT_(a, b)
