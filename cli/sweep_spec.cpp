// A sweep's spec: the sweep file (system, workload, parameter axes, fixed overrides)
// and --set, checked at the edge; its points, their keys and run requests; shards.

#include <algorithm>
#include <cctype>
#include <optional>

#include <fmt/format.h>

#include "cli/sweep.h"
#include "cli/sweep_text.h"
#include "sim/config.h"

namespace t3sim {

namespace fs = std::filesystem;

namespace {

using sweep_text::join;
using sweep_text::parse_unsigned;

constexpr std::string_view kRunConfig = "run.config";
constexpr std::string_view kRunMode = "run.mode";
constexpr std::string_view kRunSeed = "run.seed";

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

// A scalar that YAML would read as something else (a list, a map, a comment, ...)
// must be quoted to survive being applied as "key=value" or put inside a flow list.
bool needs_yaml_quotes(std::string_view text) {
  if (text.empty() || text != trim(text)) return true;
  if (text.find_first_of(",[]{}#&*!|>'\"%@`\n\r\t") != std::string_view::npos) return true;
  // Plain, these read back as null (the value was a quoted string).
  if (text == "~" || text == "null" || text == "Null" || text == "NULL") return true;
  if (text.find(": ") != std::string_view::npos || text.back() == ':') return true;
  // A value that starts like a document marker ends or restarts the document once
  // applied as key=value ("..." read back as null: fuzz finding S4).
  if (text.starts_with("---") || text.starts_with("...")) return true;
  return text == "-" || text.starts_with("- ") || text.starts_with("? ");
}

std::string yaml_quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";  // a line break inside double quotes would fold into a space
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out + "\"";
}

// One sweep value as YAML flow text: scalars as written, lists and maps in flow style.
std::string yaml_flow_text(const ConfigValue& value) {
  switch (value.kind) {
    case ConfigValue::Kind::kNull:
      return "~";
    case ConfigValue::Kind::kScalar:
      return needs_yaml_quotes(value.scalar) ? yaml_quote(value.scalar) : value.scalar;
    case ConfigValue::Kind::kList: {
      std::vector<std::string> items;
      for (const ConfigValue& item : value.list) items.push_back(yaml_flow_text(item));
      return "[" + join(items, ", ") + "]";
    }
    case ConfigValue::Kind::kMap: {
      std::vector<std::string> items;
      for (const auto& [key, item] : value.map)
        items.push_back((needs_yaml_quotes(key) ? yaml_quote(key) : key) + ": " + yaml_flow_text(item));
      return "{" + join(items, ", ") + "}";
    }
  }
  return {};
}

// Sweep keys address the composed configuration (system.*, workload.*) or the run itself.
void check_key(std::string_view key, const SourceLocation& where, const std::string& shown_key) {
  // A point's values are applied as "key=value" overrides: an '=' would split the key.
  if (key.find('=') != std::string_view::npos)
    throw ConfigError(where, shown_key, "a sweep key cannot contain '=' (points apply it as key=value)");
  // Nor begin or end with blanks: key=value trims them, so the point would set another key.
  if (!key.empty() && (std::isspace(static_cast<unsigned char>(key.front())) != 0 ||
                       std::isspace(static_cast<unsigned char>(key.back())) != 0))
    throw ConfigError(where, shown_key,
                      "a sweep key cannot begin or end with blanks (points apply it as key=value, which trims them)");
  if (key.starts_with("system.") || key.starts_with("workload.")) return;
  if (!key.starts_with("run.")) {
    throw ConfigError(where, shown_key, "a sweep key must start with 'system.', 'workload.' or 'run.'");
  }
  // The run keys a point may set; the others (threads, limits, outputs) are the sweep's own.
  static const std::vector<std::string> kPointRunKeys = {
      std::string(kRunConfig), std::string(kRunSeed), std::string(kRunMode), "run.sampling", "run.sampling_window",
      "run.sampling_tolerance", "run.sampling_tail", "run.sampling_period"};
  if (std::find(kPointRunKeys.begin(), kPointRunKeys.end(), key) != kPointRunKeys.end()) return;
  const std::string suggestion = closest_match(key, kPointRunKeys);
  throw ConfigError(where, shown_key,
                    suggestion.empty()
                        ? "unknown run key (expected run.config, run.mode, run.seed or run.sampling[_window, "
                          "_tolerance, _tail])"
                        : fmt::format("unknown run key (did you mean '{}'?)", suggestion));
}

void check_value(std::string_view key, std::string_view value, const SourceLocation& where,
                 const std::string& shown_key) {
  if (key == kRunSeed && !parse_unsigned(value)) {
    throw ConfigError(where, shown_key, fmt::format("expected an unsigned integer seed, got '{}'", value));
  }
  if (key == kRunConfig && value.empty()) {
    throw ConfigError(where, shown_key, "expected a configuration name");
  }
}

std::pair<std::string, std::string> split_assignment(std::string_view assignment,
                                                     const SourceLocation& where) {
  const auto equals = assignment.find('=');
  if (equals == std::string_view::npos || trim(assignment.substr(0, equals)).empty()) {
    throw ConfigError(where, "", fmt::format("expected key=value, got '{}'", assignment));
  }
  return {std::string(trim(assignment.substr(0, equals))),
          std::string(trim(assignment.substr(equals + 1)))};
}

// The values of one axis, checked: at least one, no repeats (a repeat would make two
// points with the same key, which resume could not tell apart).
std::vector<std::string> axis_values(const ConfigValue& list, std::string_view key,
                                     const SourceLocation& where, const std::string& shown_key) {
  if (list.list.empty()) {
    throw ConfigError(where, shown_key, "empty list: a sweep parameter needs at least one value");
  }
  std::vector<std::string> values;
  for (const ConfigValue& item : list.list) {
    std::string text = yaml_flow_text(item);
    check_value(key, text, item.where.file.empty() ? where : item.where, shown_key);
    if (std::find(values.begin(), values.end(), text) != values.end()) {
      throw ConfigError(where, shown_key, fmt::format("value '{}' is listed twice", text));
    }
    values.push_back(std::move(text));
  }
  return values;
}

fs::path resolve_relative(const std::string& text, const SourceLocation& where,
                          const fs::path& fallback_file) {
  const fs::path path(text);
  if (path.is_absolute()) return path;
  const fs::path base = where.file.empty() ? fallback_file : fs::path(where.file);
  return base.parent_path() / path;
}

}  // namespace

// --- Spec -----------------------------------------------------------------------------

SweepSpec load_sweep_spec(const fs::path& sweep_file) {
  ConfigTree tree = ConfigTree::load_file(sweep_file);
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  SweepSpec spec;

  const auto path_of = [&root, &sweep_file](std::string_view key) {
    const std::string text = root.get_string(key, "");
    return text.empty() ? fs::path() : resolve_relative(text, root.location(key), sweep_file);
  };
  spec.system = path_of("system");
  spec.workload = path_of("workload");

  ConfigNode parameters = root.child("parameters");
  for (const std::string& key : parameters.keys()) {
    const SourceLocation where = parameters.location(key);
    const std::string shown_key = "parameters." + key;
    check_key(key, where, shown_key);
    const ConfigValue* value = parameters.raw(key);
    if (value->kind != ConfigValue::Kind::kList) {
      throw ConfigError(where, shown_key, "expected a list of values, like [2, 4, 8]");
    }
    spec.parameters.push_back({key, axis_values(*value, key, where, shown_key), where});
  }
  parameters.finish();

  if (const ConfigValue* set = root.raw("set")) {
    const SourceLocation set_where = root.location("set");
    std::vector<const ConfigValue*> items;
    if (set->kind == ConfigValue::Kind::kList) {
      for (const ConfigValue& item : set->list) items.push_back(&item);
    } else {
      items.push_back(set);
    }
    for (const ConfigValue* item : items) {
      const SourceLocation where = item->where.file.empty() ? set_where : item->where;
      if (item->kind != ConfigValue::Kind::kScalar) {
        throw ConfigError(where, "set", "expected a list of key=value overrides");
      }
      const auto [key, value] = split_assignment(item->scalar, where);
      check_key(key, where, "set: " + key);
      check_value(key, value, where, "set: " + key);
      spec.fixed.push_back(key + "=" + value);
    }
  }
  root.finish();
  return spec;
}

void apply_command_line_set(SweepSpec& spec, std::string_view assignment) {
  const SourceLocation where{"--set", 0, 0};
  const auto [key, value] = split_assignment(assignment, where);
  check_key(key, where, key);
  const ConfigTree parsed = ConfigTree::parse(value, "--set " + std::string(assignment));
  auto axis = std::find_if(spec.parameters.begin(), spec.parameters.end(),
                           [&wanted = key](const SweepParameter& p) { return p.key == wanted; });
  if (parsed.root().kind == ConfigValue::Kind::kList) {
    SweepParameter parameter{key, axis_values(parsed.root(), key, where, key), where};
    if (axis != spec.parameters.end()) {
      *axis = std::move(parameter);
    } else {
      spec.parameters.push_back(std::move(parameter));
    }
    return;
  }
  check_value(key, value, where, key);
  if (axis != spec.parameters.end()) spec.parameters.erase(axis);
  spec.fixed.push_back(key + "=" + value);
}

std::vector<SweepPoint> enumerate_points(const SweepSpec& spec) {
  // Every point is enumerated up front: a product past a million is a mistake, not a
  // sweep that could ever finish (and an overflowing one would wrap).
  constexpr std::size_t kMaxPoints = 1'000'000;
  std::size_t count = 1;
  for (const SweepParameter& parameter : spec.parameters) {
    if (__builtin_mul_overflow(count, parameter.values.size(), &count) || count > kMaxPoints)
      throw ConfigError(parameter.where, parameter.key,
                        fmt::format("the sweep would have more than {} points (the product of its axes' lengths)",
                                    kMaxPoints));
  }
  std::vector<SweepPoint> points(count);
  for (std::size_t index = 0; index < count; ++index) {
    SweepPoint& point = points[index];
    point.index = index;
    point.values.resize(spec.parameters.size());
    // Mixed-radix digits of the index, the last parameter the fastest digit.
    std::size_t rest = index;
    for (std::size_t p = spec.parameters.size(); p-- > 0;) {
      const std::vector<std::string>& values = spec.parameters[p].values;
      point.values[p] = values[rest % values.size()];
      rest /= values.size();
    }
  }
  return points;
}

std::string point_key(const SweepSpec& spec, const SweepPoint& point) {
  std::vector<std::string> parts;
  for (std::size_t p = 0; p < spec.parameters.size(); ++p) {
    parts.push_back(spec.parameters[p].key + "=" + point.values[p]);
  }
  return join(parts, ";");
}

RunRequest make_run_request(const SweepSpec& spec, const SweepPoint& point) {
  RunRequest request;
  request.system = spec.system;
  request.workload = spec.workload;
  request.timeline = false;
  // Points run in parallel already (-j): one host thread each, unless the spec sets
  // run.threads (fixed or as an axis), which then applies.
  request.threads = 1;
  const auto apply = [&request](const std::string& key, const std::string& value) {
    if (key == kRunConfig) {
      request.configuration = value;
    } else if (key == kRunSeed) {
      const auto seed = parse_unsigned(value);
      if (!seed) throw UserError(fmt::format("run.seed: expected an unsigned integer, got '{}'", value));
      request.seed = *seed;
    } else {
      request.overrides.push_back(key + "=" + value);
    }
  };
  for (const std::string& assignment : spec.fixed) {
    const auto [key, value] = split_assignment(assignment, SourceLocation{"sweep", 0, 0});
    apply(key, value);
  }
  for (std::size_t p = 0; p < spec.parameters.size(); ++p) {
    apply(spec.parameters[p].key, point.values[p]);
  }
  for (const std::string& o : request.overrides)
    if (o.starts_with("run.threads=")) request.threads = 0;
  return request;
}

Shard parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  const auto index = parse_unsigned(text.substr(0, slash));
  const auto count =
      slash == std::string_view::npos ? std::nullopt : parse_unsigned(text.substr(slash + 1));
  if (!index || !count || *index >= *count) {
    throw UserError(fmt::format("--shard: expected i/n with 0 <= i < n, got '{}'", text));
  }
  return Shard{static_cast<std::size_t>(*index), static_cast<std::size_t>(*count)};
}

// --- The `sweep` command ----------------------------------------------------------------

SweepSpec build_sweep_spec(const SweepCommandLine& command_line) {
  SweepSpec spec =
      command_line.sweep_file.empty() ? SweepSpec{} : load_sweep_spec(command_line.sweep_file);
  if (!command_line.system.empty()) spec.system = command_line.system;
  if (!command_line.workload.empty()) spec.workload = command_line.workload;
  for (const std::string& assignment : command_line.sets) apply_command_line_set(spec, assignment);
  if (spec.system.empty()) {
    throw UserError("sweep: no system: give a sweep file with 'system:' or --system FILE");
  }
  if (spec.workload.empty()) {
    throw UserError("sweep: no workload: give a sweep file with 'workload:' or --workload FILE");
  }
  return spec;
}
}  // namespace t3sim
