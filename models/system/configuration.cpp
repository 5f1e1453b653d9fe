#include "models/system/configuration.h"

#include <algorithm>

#include "models/system/c3/c3_system.h"
#include "models/system/overlap/overlap_system.h"
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
  switch (family) {
    case ConfigurationFamily::kSublayer: return static_cast<bool>(sublayer);
    case ConfigurationFamily::kC3: return static_cast<bool>(c3);
    case ConfigurationFamily::kOverlap: return static_cast<bool>(overlap);
  }
  return false;
}

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

namespace {

// The registered configuration `name`, which must run `family`.
std::unique_ptr<Configuration> configuration_for(std::string_view name, ConfigurationFamily family) {
  const Configurations::Entry* e = configurations().find(name);
  std::unique_ptr<Configuration> c = e != nullptr ? e->make() : nullptr;
  if (c == nullptr || !c->runs(family))
    unknown_registered_name(std::string(to_string(family)) + " configuration", name, configuration_names(family));
  return c;
}

}  // namespace

std::unique_ptr<SublayerConfiguration> make_sublayer_configuration(std::string_view name) {
  return configuration_for(name, ConfigurationFamily::kSublayer)->sublayer();
}

std::unique_ptr<C3Configuration> make_c3_configuration(std::string_view name) {
  return configuration_for(name, ConfigurationFamily::kC3)->c3();
}

std::unique_ptr<OverlapConfiguration> make_overlap_configuration(std::string_view name) {
  return configuration_for(name, ConfigurationFamily::kOverlap)->overlap();
}

bool takes_sequential_run(std::string_view name) {
  const Configurations::Entry* e = configurations().find(name);
  if (e == nullptr) return false;
  const std::unique_ptr<Configuration> c = e->make();
  return c->sublayer && c->sublayer()->sequential_run() == SequentialRunUse::kTake;
}

}  // namespace t3sim
