#include "models/system/configuration.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/system/sublayer_configuration.h"

namespace t3sim {

const char* to_string(ConfigurationFamily family) {
  switch (family) {
    case ConfigurationFamily::kSublayer: return "sub-layer";
    case ConfigurationFamily::kC3: return "c3";
    case ConfigurationFamily::kOverlap: return "overlap";
  }
  return "?";
}

bool Configuration::runs(ConfigurationFamily family) const {
  switch (procedure()) {
    case Procedure::kChained:
    case Procedure::kCriticalPath: return true;
    // The sub-layer's RS and an overlap op's collective take their compute's output:
    // only c3's tasks are independent.
    case Procedure::kOverlapped: return family == ConfigurationFamily::kC3;
    case Procedure::kOwn:
      if (family == ConfigurationFamily::kSublayer) return sublayer() != nullptr;
      return family == ConfigurationFamily::kOverlap && runs_fused_form();
  }
  return false;
}

std::unique_ptr<SublayerConfiguration> Configuration::sublayer() const { return nullptr; }

Configurations& configurations() {
  static Configurations registry;
  return registry;
}

std::vector<RegistryEntry> configuration_listing(ConfigurationFamily family) {
  std::vector<RegistryEntry> out;
  for (const Configurations::Entry& e : configurations().entries())
    if (e.make()->runs(family)) out.push_back({e.name, e.description});
  return out;
}

std::vector<std::string> configuration_names(ConfigurationFamily family) {
  std::vector<std::string> out;
  for (const RegistryEntry& e : configuration_listing(family)) out.push_back(e.name);
  return out;
}

std::vector<std::string> configuration_names() { return configurations().names(); }

std::unique_ptr<Configuration> make_configuration(std::string_view name, ConfigurationFamily family) {
  const Configurations::Entry* e = configurations().find(name);
  std::unique_ptr<Configuration> c = e != nullptr ? e->make() : nullptr;
  if (c == nullptr || !c->runs(family))
    unknown_registered_name(std::string(to_string(family)) + " configuration", name, configuration_names(family));
  return c;
}

std::unique_ptr<SublayerConfiguration> make_sublayer_configuration(std::string_view name) {
  const std::unique_ptr<Configuration> c = make_configuration(name, ConfigurationFamily::kSublayer);
  if (std::unique_ptr<SublayerConfiguration> own = c->sublayer()) return own;
  return sublayer_form(c->procedure());
}

bool takes_chained_run(std::string_view name) {
  const Configurations::Entry* e = configurations().find(name);
  if (e == nullptr) return false;
  const std::unique_ptr<Configuration> c = e->make();
  switch (c->procedure()) {
    case Procedure::kChained: return false;
    case Procedure::kCriticalPath:
    case Procedure::kOverlapped: return true;
    // fused takes the overlap kinds' sequential run too, but a sweep does not hold its
    // points back: the sub-layer's fused (none to take) is a sweep's longest point, and
    // started last it would lengthen the sweep (the T3 reproduction: 138 -> 174 s of
    // wall time on 16 cores). A fused point that starts beside its case's sequential
    // one simulates the run itself.
    case Procedure::kOwn: return false;
  }
  return false;
}

std::string reserved_cus_note(std::uint32_t reserved_cus) {
  return reserved_cus > 0 ? fmt::format(", the last {} CUs reserved for the collective", reserved_cus) : std::string();
}

}  // namespace t3sim
