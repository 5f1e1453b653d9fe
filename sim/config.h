#pragma once
// Configuration is data, validated at the edge.
//
// A ConfigTree is a YAML document loaded into our own tree, where every node keeps
// the file and line it came from (through `base:` inheritance and `--set`
// overrides). A ConfigNode is a read cursor over one mapping of that tree: model
// code asks it for typed values with defaults and ranges, it records which keys
// were read (and the resolved value, for results.json), and finish() rejects the
// keys nobody read:
//
//   sys.yaml:14: system.gpu.l2.asoc: unknown key (did you mean 'assoc'?)
//
// Models never see YAML: a `read_config(ConfigNode&)` function next to each model
// fills its plain Config struct.
//
// Values carry units: times ("500ns", "1.5us", "2ms", "100ps", "1s"), frequencies
// ("1.4GHz", "800MHz"), bandwidths ("75GB/s", "1TB/s", "900MiB/s"), sizes ("16MiB",
// "4KB", "192MB", "64"). Decimal prefixes (K, M, G, T) are powers of 1000 and binary
// ones (Ki, Mi, Gi, Ti) powers of 1024. A plain number is the base unit (ps, Hz,
// bytes/s, bytes) for a non-time quantity; a time must carry its unit.
//
// Details of the contract:
//  - Locations: lines and columns are 1-based; a `--set` value's location is the
//    assignment itself ("--set a.b=1", line 0). Included files are named by joining
//    the `base:` path to the including file's directory.
//  - Numbers are parsed exactly, never through a double: "0.5ns" is 500ps, "1.4GHz"
//    1'400'000'000Hz; a value that is not a whole number of the base unit is an error.
//    Bandwidths also take bit rates ("100Gb/s", "100Gbps" = 12.5GB/s). A bare prefix
//    ("16M", "75G/s") is ambiguous and rejected. Integers are plain decimal digits.
//  - Booleans are strictly `true` or `false` (not YAML 1.1's yes/no/on/off).
//  - An empty value (`gpu:` with nothing after it) reads as an absent section for
//    child(), and does not erase a base file's mapping when merged.
//  - The resolved config records integers, doubles and booleans as JSON numbers and
//    booleans, strings and enums as strings, raw() values as JSON (scalars as
//    strings), and quantities with units as canonical strings in the largest unit
//    that keeps them integral ("1500ns", "1400MHz", "75GB/s", "900MiB/s", "16MiB",
//    see format_time() and friends); each such string parses back to the same value.

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/error.h"
#include "sim/time.h"

namespace t3sim {

// One node of a loaded configuration document.
struct ConfigValue {
  enum class Kind { kNull, kScalar, kMap, kList };
  // Declared (not implicit) so that clang with libstdc++ 12 (the fuzz build) accepts
  // the vector of pairs of this still incomplete type below.
  ConfigValue() = default;
  Kind kind = Kind::kNull;
  std::string scalar;                                     // kScalar: the text as written
  std::vector<std::pair<std::string, ConfigValue>> map;   // kMap: in document order
  std::vector<ConfigValue> list;                          // kList
  SourceLocation where;                                   // where this node was written
  SourceLocation key_where;                               // kMap entries: where the key was written

  const ConfigValue* find(std::string_view key) const;
  ConfigValue* find(std::string_view key);
};

// `value` as one line of text with map keys sorted (scalars as written), leaving out
// the top-level keys in `except`: equal texts mean equal configurations (a cache key).
std::string canonical_text(const ConfigValue& value, const std::vector<std::string>& except = {});

// A whole document (or a composition of documents under top-level sections).
class ConfigTree {
 public:
  ConfigTree();
  // Load a YAML file. A top-level `base:` key (a path or a list of paths, relative
  // to the including file) loads those files first; this file's keys then override
  // theirs (maps merge key by key, scalars and lists replace). Include cycles and
  // missing files are ConfigErrors naming the including file and line.
  static ConfigTree load_file(const std::filesystem::path& path);
  // Parse YAML text (for tests and generated configs); `origin` names it in errors.
  static ConfigTree parse(std::string_view yaml_text, std::string origin);

  // Put `other` under top-level key `section` (e.g. "system", "workload").
  void set_section(std::string_view section, ConfigTree other);

  // Apply `a.b.c=value` (value parsed as YAML, so lists like [1,2] work). Creates
  // missing intermediate maps. A malformed assignment is a ConfigError naming
  // "--set". The value's location is "--set a.b.c=value".
  void apply_override(std::string_view assignment);
  // Set a scalar at a dotted path programmatically (sweeps use this).
  void set(std::string_view dotted_path, std::string_view yaml_value, SourceLocation origin);

  const ConfigValue& root() const { return root_; }
  ConfigValue& root() { return root_; }

  // Emit back as YAML text (for dumps and for the sweep to record a point).
  std::string to_yaml() const;

 private:
  ConfigValue root_;
};

// Everything the readers resolved (defaults included), as one JSON object that
// mirrors the key paths; written into results.json.
class ResolvedConfig {
 public:
  void record(const std::string& dotted_path, nlohmann::json value);
  const nlohmann::json& json() const { return json_; }

 private:
  nlohmann::json json_ = nlohmann::json::object();
};

// Tag for required getters: node.get_uint("num_gpus", 2, 1024, Required{}).
struct Required {};

// A read cursor over one mapping. Cheap to copy; refers to the tree and the
// ResolvedConfig, which must outlive it.
class ConfigNode {
 public:
  // `path` is the dotted path of `value` ("" for the root). `value` may be null
  // (an absent section): every getter then returns its default.
  ConfigNode(const ConfigValue* value, std::string path, ResolvedConfig* resolved);

  const std::string& path() const { return path_; }
  // The node's value as loaded (null for an absent section), without marking anything read.
  const ConfigValue* value() const { return value_; }
  bool has(std::string_view key) const;
  // Where `key` was written (or this node, if absent).
  SourceLocation location(std::string_view key) const;
  // A ConfigError at `key` of this node: for checks only the model can make
  // (e.g. "must be a power of two").
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;

  // Typed getters. Each marks `key` as known and read, records the resolved value,
  // and throws ConfigError (file:line, full key path, what was expected) for a
  // wrong type, a bad unit or an out-of-range value. The overloads without a
  // default make the key required.
  std::uint64_t get_uint(std::string_view key, std::uint64_t def,
                         std::uint64_t min = 0, std::uint64_t max = UINT64_MAX);
  std::uint64_t get_uint(std::string_view key, std::uint64_t min, std::uint64_t max, Required);
  std::int64_t get_int(std::string_view key, std::int64_t def,
                       std::int64_t min = INT64_MIN, std::int64_t max = INT64_MAX);
  double get_double(std::string_view key, double def, double min = -1e300, double max = 1e300);
  bool get_bool(std::string_view key, bool def);
  std::string get_string(std::string_view key, std::string def);
  std::string get_string(std::string_view key, Required);
  // One of `allowed`; the error lists them. (The vector form takes names kept in a
  // registry, sim/registry.h.)
  std::string get_enum(std::string_view key, std::string def,
                       std::initializer_list<std::string_view> allowed);
  std::string get_enum(std::string_view key, std::string def, const std::vector<std::string>& allowed);
  Tick get_time(std::string_view key, Tick def, Tick min = Tick::zero(), Tick max = Tick::max());
  std::uint64_t get_frequency_hz(std::string_view key, std::uint64_t def,
                                 std::uint64_t min = 1, std::uint64_t max = 1'000'000'000'000ULL);
  Bandwidth get_bandwidth(std::string_view key, Bandwidth def,
                          Bandwidth min = Bandwidth(1), Bandwidth max = Bandwidth(UINT64_MAX));
  std::uint64_t get_bytes(std::string_view key, std::uint64_t def,
                          std::uint64_t min = 0, std::uint64_t max = UINT64_MAX);
  // A list of unsigned integers / byte sizes (e.g. a sweep's values).
  std::vector<std::uint64_t> get_uint_list(std::string_view key, std::vector<std::uint64_t> def,
                                           std::uint64_t min = 0, std::uint64_t max = UINT64_MAX);

  // A sub-mapping (an absent key gives an empty node whose getters return
  // defaults; a non-mapping is a ConfigError).
  ConfigNode child(std::string_view key);
  // The raw value of `key` (marks it read), for callers that interpret it themselves
  // (e.g. the sweep's parameter lists). nullptr if absent.
  const ConfigValue* raw(std::string_view key);
  // Keys present in this mapping, in document order.
  std::vector<std::string> keys() const;

  // Reject keys that were never read: the first one is a ConfigError, with a
  // did-you-mean suggestion among the keys that were asked for.
  void finish() const;

 private:
  const ConfigValue* lookup(std::string_view key);  // marks known + read
  std::string key_path(std::string_view key) const;

  const ConfigValue* value_;
  SourceLocation where_;  // this mapping (or, if absent, its parent): for missing keys
  std::string path_;
  ResolvedConfig* resolved_;
  std::shared_ptr<std::vector<std::string>> known_;  // keys asked for, shared by copies
};

// Unit parsing, also used by the CLI. Each throws std::invalid_argument with a
// message saying what was expected ("expected a time like '500ns'").
Tick parse_time(std::string_view text);
std::uint64_t parse_frequency_hz(std::string_view text);
Bandwidth parse_bandwidth(std::string_view text);
std::uint64_t parse_bytes(std::string_view text);

// Canonical text for a quantity, in the largest unit that keeps it an integer
// ("1500ns", "1400MHz", "75GB/s", "900MiB/s", "16MiB"); the parse_* functions read
// it back exactly. Used for the resolved config and for messages.
std::string format_time(Tick t);
std::string format_frequency(std::uint64_t hz);
std::string format_bandwidth(Bandwidth bandwidth);
std::string format_bytes(std::uint64_t bytes);

// Levenshtein distance, for did-you-mean.
std::size_t edit_distance(std::string_view a, std::string_view b);
// The closest candidate if it is close enough to be a plausible typo, else "".
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace t3sim
