#include "sim/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace t3sim {

namespace {

__extension__ using u128 = unsigned __int128;

std::string join_path(std::string_view prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  return fmt::format("{}.{}", prefix, key);
}

std::vector<std::string> split_path(std::string_view dotted) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = dotted.find('.', start);
    parts.emplace_back(dotted.substr(start, dot == std::string_view::npos ? dotted.npos : dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "'abc'", "a list", ...: the "got ..." part of a type error.
std::string describe(const ConfigValue& v) {
  switch (v.kind) {
    case ConfigValue::Kind::kScalar: return fmt::format("'{}'", v.scalar);
    case ConfigValue::Kind::kList: return "a list";
    case ConfigValue::Kind::kMap: return "a mapping";
    case ConfigValue::Kind::kNull: break;
  }
  return "nothing";
}

std::string join_names(const std::vector<std::string>& names) {
  return fmt::format("{}", fmt::join(names, ", "));
}

// ---------------------------------------------------------------------------
// YAML -> ConfigValue

SourceLocation mark_location(const YAML::Mark& mark, const std::string& file) {
  return SourceLocation{file, mark.line + 1, mark.column + 1};
}

// Values one document may hold once its aliases are expanded. A system or workload
// has hundreds; the limit stops an alias bomb (a few lines expanding to billions of
// values, issue 21, C06) with a clear error instead of exhausting memory.
constexpr std::uint64_t kMaxValuesPerDocument = 1'000'000;

// YAML is Unicode text (YAML 1.2, 5.1: printable characters only). A key or scalar
// holding bytes that are not UTF-8 or control characters would not read back as
// written: a sweep value applied as `--set key=value` whose first bytes look like a
// byte-order mark is decoded as UTF-16, one with a NUL byte stops early, and the
// resolved config and CSVs would carry replacement characters. "" when `text` is fine,
// else what is wrong with it.
std::string text_problem(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::uint32_t cp = lead;
    std::size_t length = 1;
    if (lead >= 0x80) {
      if ((lead & 0xE0) == 0xC0) {
        cp = lead & 0x1Fu;
        length = 2;
      } else if ((lead & 0xF0) == 0xE0) {
        cp = lead & 0x0Fu;
        length = 3;
      } else if ((lead & 0xF8) == 0xF0) {
        cp = lead & 0x07u;
        length = 4;
      } else {
        return fmt::format("byte 0x{:02x} at offset {} is not UTF-8", lead, i);
      }
      if (i + length > text.size()) return fmt::format("a UTF-8 sequence is cut at offset {}", i);
      for (std::size_t k = 1; k < length; ++k) {
        const auto next = static_cast<unsigned char>(text[i + k]);
        if ((next & 0xC0) != 0x80) return fmt::format("byte 0x{:02x} at offset {} is not UTF-8", lead, i);
        cp = (cp << 6) | (next & 0x3Fu);
      }
      const bool overlong = (length == 2 && cp < 0x80) || (length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000);
      if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return fmt::format("byte 0x{:02x} at offset {} is not UTF-8", lead, i);
    }
    const bool control = (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0x7F ||
                         (cp >= 0x80 && cp <= 0x9F && cp != 0x85) || cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF;
    if (control) return fmt::format("control character U+{:04X} at offset {}", cp, i);
    i += length;
  }
  return "";
}

// With `use_marks` false every node gets `fallback` (values parsed from --set).
// `budget`: values the document may still hold.
ConfigValue convert(const YAML::Node& node, const std::string& file, const std::string& path,
                    const SourceLocation& fallback, bool use_marks, std::uint64_t& budget) {
  ConfigValue v;
  if (budget == 0)
    throw ConfigError(SourceLocation{file, 0, 0}, path,
                      fmt::format("more than {} values (YAML aliases expanding without end?)", kMaxValuesPerDocument));
  --budget;
  const YAML::Mark mark = node.Mark();
  v.where = use_marks && mark.line >= 0 ? mark_location(mark, file) : fallback;
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      // yaml-cpp marks an empty value at the next token; the key's line is clearer.
      v.where = fallback;
      break;
    case YAML::NodeType::Scalar:
      v.kind = ConfigValue::Kind::kScalar;
      v.scalar = node.Scalar();
      if (const std::string why = text_problem(v.scalar); !why.empty())
        throw ConfigError(v.where, path, fmt::format("not text: {} (expected UTF-8 without control characters)", why));
      break;
    case YAML::NodeType::Sequence:
      v.kind = ConfigValue::Kind::kList;
      for (std::size_t i = 0; i < node.size(); ++i) {
        v.list.push_back(convert(node[i], file, fmt::format("{}[{}]", path, i), v.where, use_marks, budget));
      }
      break;
    case YAML::NodeType::Map:
      v.kind = ConfigValue::Kind::kMap;
      for (auto it = node.begin(); it != node.end(); ++it) {
        const SourceLocation key_where =
            use_marks && it->first.Mark().line >= 0 ? mark_location(it->first.Mark(), file) : fallback;
        if (!it->first.IsScalar()) {
          throw ConfigError(key_where, path, "mapping keys must be plain strings");
        }
        const std::string& key = it->first.Scalar();
        if (const std::string why = text_problem(key); !why.empty())
          throw ConfigError(key_where, path,
                            fmt::format("a key is not text: {} (expected UTF-8 without control characters)", why));
        if (const ConfigValue* first = v.find(key)) {
          throw ConfigError(key_where, join_path(path, key),
                            fmt::format("duplicate key (first written at line {})", first->key_where.line));
        }
        ConfigValue child = convert(it->second, file, join_path(path, key), key_where, use_marks, budget);
        child.key_where = key_where;
        v.map.emplace_back(key, std::move(child));
      }
      break;
  }
  return v;
}

// Later sources override: maps merge key by key, anything else replaces. An empty
// value (`gpu:` with every line commented out) does not erase a base's mapping.
void merge_into(ConfigValue& dst, ConfigValue src) {
  if (dst.kind == ConfigValue::Kind::kMap && src.kind == ConfigValue::Kind::kNull) return;
  if (dst.kind != ConfigValue::Kind::kMap || src.kind != ConfigValue::Kind::kMap) {
    dst = std::move(src);
    return;
  }
  dst.where = src.where;
  dst.key_where = src.key_where;
  for (auto& [key, value] : src.map) {
    if (ConfigValue* existing = dst.find(key)) {
      merge_into(*existing, std::move(value));
    } else {
      dst.map.emplace_back(key, std::move(value));
    }
  }
}

// Loads documents and follows `base:` chains, keeping the chain for cycle detection.
class Loader {
 public:
  ConfigValue load_file(const std::string& display, const SourceLocation* included_from) {
    const std::string id = identity(display);
    for (std::size_t i = 0; i < chain_.size(); ++i) {
      if (chain_[i].id != id) continue;
      std::vector<std::string> names;
      for (std::size_t j = i; j < chain_.size(); ++j) names.push_back(chain_[j].display);
      names.push_back(display);
      throw ConfigError(*included_from, "base",
                        fmt::format("include cycle: {}", fmt::join(names, " -> ")));
    }
    // A chain of bases this deep is a mistake (the recursion would otherwise exhaust
    // the stack: issue 21, C12); so are directories, devices and huge files (C07).
    constexpr std::size_t kMaxBaseDepth = 64;
    constexpr std::uintmax_t kMaxConfigBytes = 16u << 20;
    const auto where = [&] { return included_from != nullptr ? *included_from : SourceLocation{display, 0, 0}; };
    const char* key = included_from != nullptr ? "base" : "";
    if (chain_.size() >= kMaxBaseDepth)
      throw ConfigError(where(), key, fmt::format("'base:' chains more than {} files deep", kMaxBaseDepth));
    std::error_code ec;
    if (std::filesystem::exists(display, ec) && !std::filesystem::is_regular_file(display, ec))
      throw ConfigError(where(), key, fmt::format("'{}' is not a regular file", display));
    if (const std::uintmax_t size = std::filesystem::file_size(display, ec); !ec && size > kMaxConfigBytes)
      throw ConfigError(where(), key,
                        fmt::format("'{}' is {} bytes; a config file is at most {} bytes", display, size, kMaxConfigBytes));
    std::ifstream in(display, std::ios::binary);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    if (!in || in.bad()) {
      if (included_from != nullptr) {
        throw ConfigError(*included_from, "base", fmt::format("cannot open '{}'", display));
      }
      throw ConfigError(SourceLocation{display, 0, 0}, "", "cannot open file");
    }
    return load_text(text.str(), display);
  }

  ConfigValue load_text(const std::string& text, const std::string& display) {
    chain_.push_back({identity(display), display});
    ConfigValue root = parse_document(text, display);
    resolve_bases(root, display);
    chain_.pop_back();
    return root;
  }

 private:
  struct Frame {
    std::string id;       // canonical path, to recognise a file reached twice
    std::string display;  // as the user (or the including file) wrote it
  };

  static std::string identity(const std::string& display) {
    std::error_code ec;
    std::filesystem::path p = std::filesystem::weakly_canonical(display, ec);
    if (ec) p = std::filesystem::path(display).lexically_normal();
    return p.string();
  }

  static ConfigValue parse_document(const std::string& text, const std::string& display) {
    YAML::Node doc;
    try {
      doc = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw ConfigError(mark_location(e.mark, display), "", e.msg);
    }
    // A second document ('---', or content after '...') is an error instead of being
    // silently ignored (issue 45, D8). Found by the text: a marker is a line starting
    // with it at column 0, which no scalar may hold. (yaml-cpp's LoadAll, which would
    // tell, loops on some malformed input: the config fuzzer's timeout, stop 40.)
    {
      int line = 0;
      bool content = false, ended = false;
      std::istringstream lines(text);
      for (std::string l; std::getline(lines, l);) {
        ++line;
        const auto marker = [&l](std::string_view m) {
          return l.starts_with(m) && (l.size() == m.size() || l[m.size()] == ' ' || l[m.size()] == '\t' ||
                                      l[m.size()] == '\r');
        };
        const bool second = (marker("---") && (content || ended)) ||
                            (ended && l.find_first_not_of(" \t\r") != std::string::npos && l[0] != '#');
        if (second)
          throw ConfigError(SourceLocation{display, line, 1}, "",
                            "a second YAML document ('---'): a t3sim file holds one document");
        if (marker("...")) {
          ended = true;
        } else if (!marker("---") && l.find_first_not_of(" \t\r") != std::string::npos &&
                   l[l.find_first_not_of(" \t\r")] != '#') {
          content = true;
        }
      }
    }
    const SourceLocation top{display, 1, 1};
    std::uint64_t budget = kMaxValuesPerDocument;
    ConfigValue root = convert(doc, display, "", top, true, budget);
    if (root.kind == ConfigValue::Kind::kNull) {  // an empty file is an empty mapping
      root.kind = ConfigValue::Kind::kMap;
      root.where = top;
    }
    return root;
  }

  // `base:` may appear in any mapping, not only at the top: `hbm: {base: hbm2.yaml}`
  // pulls a preset into one section. Inner mappings resolve first, so a section's own
  // keys override its base's, and paths are relative to the file that names them.
  void resolve_bases(ConfigValue& v, const std::string& display) {
    if (v.kind == ConfigValue::Kind::kList) {
      for (ConfigValue& item : v.list) resolve_bases(item, display);
      return;
    }
    if (v.kind != ConfigValue::Kind::kMap) return;
    for (auto& entry : v.map) {
      if (entry.first != "base") resolve_bases(entry.second, display);
    }
    auto base = std::find_if(v.map.begin(), v.map.end(),
                             [](const auto& entry) { return entry.first == "base"; });
    if (base == v.map.end()) return;
    ConfigValue base_value = std::move(base->second);
    v.map.erase(base);
    const SourceLocation where = v.where, key_where = v.key_where;
    v = apply_bases(base_value, display, std::move(v));
    v.where = where;
    v.key_where = key_where;
  }

  ConfigValue apply_bases(const ConfigValue& base, const std::string& display, ConfigValue own) {
    std::vector<const ConfigValue*> paths;
    if (base.kind == ConfigValue::Kind::kScalar) paths.push_back(&base);
    if (base.kind == ConfigValue::Kind::kList) {
      for (const ConfigValue& item : base.list) paths.push_back(&item);
    }
    const bool all_scalars = std::all_of(paths.begin(), paths.end(), [](const ConfigValue* p) {
      return p->kind == ConfigValue::Kind::kScalar;
    });
    if (paths.empty() || !all_scalars) {
      throw ConfigError(base.where, "base",
                        fmt::format("expected a file path or a list of file paths, got {}", describe(base)));
    }
    const std::filesystem::path dir = std::filesystem::path(display).parent_path();
    ConfigValue merged;
    merged.kind = ConfigValue::Kind::kMap;
    for (const ConfigValue* p : paths) {
      const std::string included = (dir / p->scalar).lexically_normal().string();
      merge_into(merged, load_file(included, &p->where));
    }
    merge_into(merged, std::move(own));
    return merged;
  }

  std::vector<Frame> chain_;
};

// yaml-cpp writes a plain scalar with a stray control character (a lone carriage
// return, say) as is, and reading it back drops or breaks at it: such text goes
// double-quoted, where the emitter escapes it.
void emit_text(YAML::Emitter& out, const std::string& text) {
  const bool control = std::any_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
  if (control) out << YAML::DoubleQuoted;
  out << text;
}

void emit(YAML::Emitter& out, const ConfigValue& v) {
  switch (v.kind) {
    case ConfigValue::Kind::kNull:
      out << YAML::Null;
      break;
    case ConfigValue::Kind::kScalar:
      emit_text(out, v.scalar);
      break;
    case ConfigValue::Kind::kList: {
      // Short lists of scalars read better on one line.
      const bool flat = std::all_of(v.list.begin(), v.list.end(), [](const ConfigValue& item) {
        return item.kind == ConfigValue::Kind::kScalar || item.kind == ConfigValue::Kind::kNull;
      });
      if (flat) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const ConfigValue& item : v.list) emit(out, item);
      out << YAML::EndSeq;
      break;
    }
    case ConfigValue::Kind::kMap:
      if (v.map.empty()) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& [key, value] : v.map) {
        out << YAML::Key;
        emit_text(out, key);
        out << YAML::Value;
        emit(out, value);
      }
      out << YAML::EndMap;
      break;
  }
}

nlohmann::json to_json(const ConfigValue& v) {
  switch (v.kind) {
    case ConfigValue::Kind::kScalar: return v.scalar;
    case ConfigValue::Kind::kList: {
      nlohmann::json list = nlohmann::json::array();
      for (const ConfigValue& item : v.list) list.push_back(to_json(item));
      return list;
    }
    case ConfigValue::Kind::kMap: {
      nlohmann::json map = nlohmann::json::object();
      for (const auto& [key, value] : v.map) map[key] = to_json(value);
      return map;
    }
    case ConfigValue::Kind::kNull: break;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// Numbers with units, parsed exactly: "1.4GHz" is 1'400'000'000 Hz, not a double.

[[noreturn]] void bad_value(std::string_view expected, std::string_view text,
                            std::string_view reason = {}) {
  if (reason.empty()) throw std::invalid_argument(fmt::format("expected {}, got '{}'", expected, text));
  throw std::invalid_argument(fmt::format("expected {}, got '{}' ({})", expected, text, reason));
}

// A non-negative decimal number followed by an optional unit: "1.5 us".
struct Quantity {
  std::string_view integer;   // digits, leading zeros stripped
  std::string_view fraction;  // digits, trailing zeros stripped
  std::string_view unit;
};

Quantity split_quantity(std::string_view text, std::string_view expected) {
  const std::string_view s = trim(text);
  if (s.size() > 1 && s[0] == '-' && (std::isdigit(static_cast<unsigned char>(s[1])) || s[1] == '.')) {
    bad_value(expected, text, "negative");
  }
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0;
  while (i < s.size() && is_digit(s[i])) ++i;
  if (i == 0) bad_value(expected, text);
  Quantity q;
  q.integer = s.substr(0, i);
  if (i < s.size() && s[i] == '.') {
    const std::size_t start = ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == start) bad_value(expected, text);
    q.fraction = s.substr(start, i - start);
  }
  while (!q.integer.empty() && q.integer.front() == '0') q.integer.remove_prefix(1);
  while (!q.fraction.empty() && q.fraction.back() == '0') q.fraction.remove_suffix(1);
  while (i < s.size() && s[i] == ' ') ++i;  // "1.5 us" is fine
  q.unit = s.substr(i);
  return q;
}

// q * multiplier / divisor as an exact integer, or an error naming `whole_unit`.
std::uint64_t exact_value(const Quantity& q, std::uint64_t multiplier, std::uint64_t divisor,
                          std::string_view expected, std::string_view text, std::string_view whole_unit) {
  // Bounds keep every intermediate inside 128 bits (multiplier <= 2^40).
  if (q.integer.size() > 25) bad_value(expected, text, "too large");
  if (q.fraction.size() > 24) bad_value(expected, text, fmt::format("not a whole number of {}", whole_unit));
  auto digits = [](std::string_view d) {
    u128 v = 0;
    for (char c : d) v = v * 10 + static_cast<unsigned>(c - '0');
    return v;
  };
  u128 scale = 1;
  for (std::size_t i = 0; i < q.fraction.size(); ++i) scale *= 10;
  u128 total = digits(q.integer) * multiplier;
  const u128 fraction = digits(q.fraction) * multiplier;
  if (fraction % scale != 0 || (total + fraction / scale) % divisor != 0) {
    bad_value(expected, text, fmt::format("not a whole number of {}", whole_unit));
  }
  total = (total + fraction / scale) / divisor;
  if (total > std::numeric_limits<std::uint64_t>::max()) bad_value(expected, text, "too large");
  return static_cast<std::uint64_t>(total);
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Multiplier of an SI ("K", "M", ...) or binary ("Ki", "Mi", ...) prefix; "" is 1.
std::optional<std::uint64_t> prefix_multiplier(std::string_view prefix) {
  static constexpr std::pair<std::string_view, std::uint64_t> kPrefixes[] = {
      {"", 1},
      {"K", 1'000},
      {"k", 1'000},
      {"M", 1'000'000},
      {"G", 1'000'000'000},
      {"T", 1'000'000'000'000},
      {"Ki", 1ULL << 10},
      {"Mi", 1ULL << 20},
      {"Gi", 1ULL << 30},
      {"Ti", 1ULL << 40},
  };
  for (const auto& [name, multiplier] : kPrefixes) {
    if (name == prefix) return multiplier;
  }
  return std::nullopt;
}

bool is_bare_prefix(std::string_view unit) {
  return unit == "K" || unit == "k" || unit == "M" || unit == "G" || unit == "T";
}

std::string ambiguous(std::string_view number, std::string_view prefix, std::string_view suffix) {
  const std::string upper = prefix == "k" ? "K" : std::string(prefix);
  return fmt::format("ambiguous: write {0}{1}B{2} or {0}{1}iB{2}", number, upper, suffix);
}

// Number part of the text as written, for suggestions ("16M" -> "16").
std::string_view number_text(std::string_view text, const Quantity& q) {
  const std::string_view s = trim(text);
  return trim(s.substr(0, s.size() - q.unit.size()));
}

// The largest unit that divides `value` exactly: 1'500'000ps -> "1500ns".
std::string format_scaled(std::uint64_t value,
                          std::initializer_list<std::pair<std::uint64_t, std::string_view>> units) {
  for (const auto& [size, name] : units) {
    if (value != 0 && value % size == 0) return fmt::format("{}{}", value / size, name);
  }
  return fmt::format("{}{}", value, std::data(units)[units.size() - 1].second);
}

// Bytes-like values: whichever of the SI and binary prefixes is larger and exact.
std::string format_prefixed(std::uint64_t value, std::string_view unit) {
  static constexpr std::string_view kSi[] = {"", "K", "M", "G", "T"};
  static constexpr std::string_view kBinary[] = {"", "Ki", "Mi", "Gi", "Ti"};
  int si = 0, binary = 0;
  std::uint64_t si_value = value, binary_value = value;
  while (value != 0 && si < 4 && si_value % 1000 == 0) si_value /= 1000, ++si;
  while (value != 0 && binary < 4 && binary_value % 1024 == 0) binary_value /= 1024, ++binary;
  if (binary > si) return fmt::format("{}{}{}", binary_value, kBinary[binary], unit);
  return fmt::format("{}{}{}", si_value, kSi[si], unit);
}

// ---------------------------------------------------------------------------
// Scalar getters share one shape: parse, check the range, record, return.

template <class T>
struct ValueType {
  std::string_view expected;  // "an unsigned integer", "a time like '500ns'"
  T (*parse)(std::string_view);
  std::string (*show)(T);     // for range messages
  nlohmann::json (*json)(T);  // for the resolved config
  T lowest;                   // bounds that need not be mentioned in range messages
  T highest;
};

template <class T>
std::string range_message(const ValueType<T>& type, T value, T min, T max) {
  const std::string shown = type.show(value);
  if (min <= type.lowest) return fmt::format("{} is greater than the maximum {}", shown, type.show(max));
  if (max >= type.highest) return fmt::format("{} is less than the minimum {}", shown, type.show(min));
  return fmt::format("{} is out of range [{}, {}]", shown, type.show(min), type.show(max));
}

template <class T>
T parse_scalar(const ValueType<T>& type, const ConfigValue& v, const std::string& path, T min, T max) {
  if (v.kind != ConfigValue::Kind::kScalar) {
    throw ConfigError(v.where, path, fmt::format("expected {}, got {}", type.expected, describe(v)));
  }
  T value;
  try {
    value = type.parse(v.scalar);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(v.where, path, e.what());
  }
  if (value < min || value > max) throw ConfigError(v.where, path, range_message(type, value, min, max));
  return value;
}

void record(ResolvedConfig* resolved, const std::string& path, nlohmann::json value) {
  if (resolved != nullptr) resolved->record(path, std::move(value));
}

// The value of an optional key (`v` null: absent), recorded in the resolved config.
template <class T>
T resolve(const ValueType<T>& type, const ConfigValue* v, const std::string& path, T def, T min, T max,
          ResolvedConfig* resolved) {
  const T value = v != nullptr ? parse_scalar(type, *v, path, min, max) : def;
  record(resolved, path, type.json(value));
  return value;
}

template <class T>
T parse_integer(std::string_view text, std::string_view expected) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) bad_value(expected, text, "too large");
  if (ec != std::errc() || end != text.data() + text.size()) bad_value(expected, text);
  return value;
}

const ValueType<std::uint64_t> kUint{
    "an unsigned integer",
    [](std::string_view s) { return parse_integer<std::uint64_t>(s, "an unsigned integer"); },
    [](std::uint64_t v) { return std::to_string(v); },
    [](std::uint64_t v) { return nlohmann::json(v); },
    0, UINT64_MAX};

const ValueType<std::int64_t> kInt{
    "an integer", [](std::string_view s) { return parse_integer<std::int64_t>(s, "an integer"); },
    [](std::int64_t v) { return std::to_string(v); },
    [](std::int64_t v) { return nlohmann::json(v); },
    INT64_MIN, INT64_MAX};

const ValueType<double> kDouble{
    "a number",
    [](std::string_view s) {
      double value = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
      if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) bad_value("a number", s);
      return value;
    },
    [](double v) { return fmt::format("{}", v); },
    [](double v) { return nlohmann::json(v); },
    -1e300, 1e300};

// Strict: only true/false (YAML 1.1's yes/no/on/off are too easy to write by accident).
const ValueType<bool> kBool{
    "true or false",
    [](std::string_view s) {
      if (s == "true") return true;
      if (s == "false") return false;
      bad_value("true or false", s);
    },
    [](bool v) { return std::string(v ? "true" : "false"); },
    [](bool v) { return nlohmann::json(v); },
    false, true};

const ValueType<Tick> kTime{
    "a time like '500ns'", parse_time, format_time,
    [](Tick v) { return nlohmann::json(format_time(v)); }, Tick::zero(), Tick::max()};

const ValueType<std::uint64_t> kFrequency{
    "a frequency like '1.4GHz'", parse_frequency_hz, format_frequency,
    [](std::uint64_t v) { return nlohmann::json(format_frequency(v)); }, 0, UINT64_MAX};

const ValueType<Bandwidth> kBandwidth{
    "a bandwidth like '75GB/s'", parse_bandwidth, format_bandwidth,
    [](Bandwidth v) { return nlohmann::json(format_bandwidth(v)); }, Bandwidth(0), Bandwidth(UINT64_MAX)};

const ValueType<std::uint64_t> kBytes{
    "a size like '16MiB'", parse_bytes, format_bytes,
    [](std::uint64_t v) { return nlohmann::json(format_bytes(v)); }, 0, UINT64_MAX};

// List elements may be plain integers or sizes ("4KiB").
std::uint64_t parse_uint_or_size(std::string_view s) {
  try {
    return parse_bytes(s);
  } catch (const std::invalid_argument&) {
    bad_value("an unsigned integer or a size like '16MiB'", s);
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// ConfigValue / ConfigTree

const ConfigValue* ConfigValue::find(std::string_view key) const {
  for (const auto& [name, value] : map) {
    if (name == key) return &value;
  }
  return nullptr;
}

ConfigValue* ConfigValue::find(std::string_view key) {
  return const_cast<ConfigValue*>(std::as_const(*this).find(key));
}

ConfigTree::ConfigTree() { root_.kind = ConfigValue::Kind::kMap; }

ConfigTree ConfigTree::load_file(const std::filesystem::path& path) {
  ConfigTree tree;
  tree.root_ = Loader().load_file(path.string(), nullptr);
  // Nothing but comments or blank lines is a mistake (a wrong file, a truncated one),
  // not a request for every default (issue 15). (The loader checked it is a regular
  // file of at most 16 MiB.)
  if (tree.root_.kind != ConfigValue::Kind::kScalar && tree.root_.map.empty() && tree.root_.list.empty()) {
    std::ifstream in(path);
    std::string line;
    bool content = false;
    while (!content && std::getline(in, line)) {
      const std::string_view text = trim(line);
      content = !text.empty() && text.front() != '#';
    }
    if (!content)
      throw ConfigError(SourceLocation{path.string(), 0, 0}, "", "the file is empty (expected a YAML mapping of keys)");
  }
  return tree;
}

ConfigTree ConfigTree::parse(std::string_view yaml_text, std::string origin) {
  ConfigTree tree;
  tree.root_ = Loader().load_text(std::string(yaml_text), origin);
  return tree;
}

void ConfigTree::set_section(std::string_view section, ConfigTree other) {
  if (root_.kind != ConfigValue::Kind::kMap) root_ = ConfigTree().root_;
  other.root_.key_where = other.root_.where;
  if (ConfigValue* existing = root_.find(section)) {
    *existing = std::move(other.root_);
  } else {
    root_.map.emplace_back(std::string(section), std::move(other.root_));
  }
}

void ConfigTree::apply_override(std::string_view assignment) {
  const SourceLocation command_line{"command line", 0, 0};
  auto malformed = [&](std::string_view why) {
    return ConfigError(command_line, "--set",
                       fmt::format("expected the form key.path=value, got '{}' ({})", assignment, why));
  };
  const std::size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) throw malformed("no '='");
  const std::string_view key = trim(assignment.substr(0, eq));
  if (key.empty()) throw malformed("empty key");
  for (const std::string& segment : split_path(key)) {
    if (segment.empty()) throw malformed("empty path segment");
  }
  set(key, trim(assignment.substr(eq + 1)), SourceLocation{fmt::format("--set {}", assignment), 0, 0});
}

void ConfigTree::set(std::string_view dotted_path, std::string_view yaml_value, SourceLocation origin) {
  const std::vector<std::string> segments = split_path(dotted_path);
  for (const std::string& segment : segments) {
    if (segment.empty()) {
      throw ConfigError(origin, std::string(dotted_path), "expected a dotted key path like 'a.b.c'");
    }
  }
  if (const std::string why = text_problem(dotted_path); !why.empty())
    throw ConfigError(origin, std::string(dotted_path),
                      fmt::format("the key is not text: {} (expected UTF-8 without control characters)", why));
  ConfigValue value;
  try {
    const YAML::Node parsed = YAML::Load(std::string(yaml_value));
    std::uint64_t budget = kMaxValuesPerDocument;
    value = convert(parsed, origin.file, std::string(dotted_path), origin, false, budget);
  } catch (const YAML::Exception& e) {
    throw ConfigError(origin, std::string(dotted_path), fmt::format("invalid YAML value: {}", e.msg));
  }
  value.key_where = origin;

  // A segment may index a list: `generators[1]` (sweeps over one generator's key).
  struct Segment {
    std::string key;
    std::optional<std::size_t> item;
  };
  auto parse_segment = [&](const std::string& text) {
    Segment seg{text, std::nullopt};
    const std::size_t open = text.find('[');
    if (open == std::string::npos) return seg;
    const std::string digits = text.substr(open + 1, text.size() - open - 2);
    if (open == 0 || text.back() != ']' || digits.empty() ||
        digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) {
      throw ConfigError(origin, std::string(dotted_path),
                        fmt::format("expected a list index like 'name[0]', got '{}'", text));
    }
    seg.key = text.substr(0, open);
    seg.item = std::stoul(digits);
    return seg;
  };
  auto list_item = [&](ConfigValue* list, const Segment& seg, const std::string& at) -> ConfigValue* {
    if (list->kind != ConfigValue::Kind::kList) {
      throw ConfigError(origin, std::string(dotted_path),
                        fmt::format("'{}' is {} (from {}), not a list", at, describe(*list), list->where.str()));
    }
    if (*seg.item >= list->list.size()) {
      throw ConfigError(origin, std::string(dotted_path),
                        fmt::format("'{}' has {} items; index {} is out of range", at, list->list.size(), *seg.item));
    }
    return &list->list[*seg.item];
  };

  ConfigValue* node = &root_;
  std::string prefix;
  for (std::size_t i = 0; i + 1 < segments.size(); ++i) {
    const Segment seg = parse_segment(segments[i]);
    prefix = join_path(prefix, seg.key);
    if (node->kind == ConfigValue::Kind::kNull) node->kind = ConfigValue::Kind::kMap;
    ConfigValue* next = node->find(seg.key);
    if (seg.item) {
      if (next == nullptr) {
        throw ConfigError(origin, std::string(dotted_path), fmt::format("there is no list '{}' to index", prefix));
      }
      next = list_item(next, seg, prefix);
      prefix += fmt::format("[{}]", *seg.item);
    }
    if (next == nullptr) {
      ConfigValue fresh;
      fresh.kind = ConfigValue::Kind::kMap;
      fresh.where = fresh.key_where = origin;
      node->map.emplace_back(seg.key, std::move(fresh));
      next = &node->map.back().second;
    } else if (next->kind == ConfigValue::Kind::kScalar || next->kind == ConfigValue::Kind::kList) {
      throw ConfigError(origin, std::string(dotted_path),
                        fmt::format("cannot set a key inside '{}', which is {} (from {}), not a mapping",
                                    prefix, describe(*next), next->where.str()));
    }
    node = next;
  }
  const Segment last = parse_segment(segments.back());
  if (node->kind == ConfigValue::Kind::kNull) node->kind = ConfigValue::Kind::kMap;
  if (last.item) {
    ConfigValue* list = node->find(last.key);
    if (list == nullptr) {
      throw ConfigError(origin, std::string(dotted_path),
                        fmt::format("there is no list '{}' to index", join_path(prefix, last.key)));
    }
    *list_item(list, last, join_path(prefix, last.key)) = std::move(value);
    return;
  }
  if (ConfigValue* existing = node->find(last.key)) {
    *existing = std::move(value);
  } else {
    node->map.emplace_back(last.key, std::move(value));
  }
}

std::string ConfigTree::to_yaml() const {
  YAML::Emitter out;
  emit(out, root_);
  return std::string(out.c_str()) + "\n";
}

// ---------------------------------------------------------------------------
// ResolvedConfig

void ResolvedConfig::record(const std::string& dotted_path, nlohmann::json value) {
  nlohmann::json* node = &json_;
  for (const std::string& segment : split_path(dotted_path)) {
    if (!node->is_object()) *node = nlohmann::json::object();
    node = &(*node)[segment];
  }
  *node = std::move(value);
}

// ---------------------------------------------------------------------------
// ConfigNode

ConfigNode::ConfigNode(const ConfigValue* value, std::string path, ResolvedConfig* resolved)
    : value_(value),
      path_(std::move(path)),
      resolved_(resolved),
      known_(std::make_shared<std::vector<std::string>>()) {
  if (value_ == nullptr) return;
  where_ = value_->key_where.file.empty() ? value_->where : value_->key_where;
  if (value_->kind == ConfigValue::Kind::kScalar || value_->kind == ConfigValue::Kind::kList) {
    throw ConfigError(where_, path_, fmt::format("expected a mapping, got {}", describe(*value_)));
  }
}

bool ConfigNode::has(std::string_view key) const {
  return value_ != nullptr && value_->find(key) != nullptr;
}

SourceLocation ConfigNode::location(std::string_view key) const {
  const ConfigValue* v = value_ != nullptr ? value_->find(key) : nullptr;
  return v != nullptr ? v->key_where : where_;
}

void ConfigNode::fail(std::string_view key, const std::string& message) const {
  throw ConfigError(location(key), key_path(key), message);
}

const ConfigValue* ConfigNode::lookup(std::string_view key) {
  if (std::find(known_->begin(), known_->end(), key) == known_->end()) known_->emplace_back(key);
  return value_ != nullptr ? value_->find(key) : nullptr;
}

std::string ConfigNode::key_path(std::string_view key) const { return join_path(path_, key); }

std::uint64_t ConfigNode::get_uint(std::string_view key, std::uint64_t def, std::uint64_t min,
                                   std::uint64_t max) {
  return resolve(kUint, lookup(key), key_path(key), def, min, max, resolved_);
}

std::uint64_t ConfigNode::get_uint(std::string_view key, std::uint64_t min, std::uint64_t max, Required) {
  if (lookup(key) == nullptr) throw ConfigError(where_, key_path(key), "required key missing");
  return resolve(kUint, lookup(key), key_path(key), std::uint64_t{0}, min, max, resolved_);
}

std::int64_t ConfigNode::get_int(std::string_view key, std::int64_t def, std::int64_t min, std::int64_t max) {
  return resolve(kInt, lookup(key), key_path(key), def, min, max, resolved_);
}

double ConfigNode::get_double(std::string_view key, double def, double min, double max) {
  return resolve(kDouble, lookup(key), key_path(key), def, min, max, resolved_);
}

bool ConfigNode::get_bool(std::string_view key, bool def) {
  return resolve(kBool, lookup(key), key_path(key), def, false, true, resolved_);
}

std::string ConfigNode::get_string(std::string_view key, std::string def) {
  const ConfigValue* v = lookup(key);
  if (v != nullptr) {
    if (v->kind != ConfigValue::Kind::kScalar) {
      throw ConfigError(v->where, key_path(key), fmt::format("expected a string, got {}", describe(*v)));
    }
    def = v->scalar;
  }
  record(resolved_, key_path(key), def);
  return def;
}

std::string ConfigNode::get_string(std::string_view key, Required) {
  if (lookup(key) == nullptr) throw ConfigError(where_, key_path(key), "required key missing");
  return get_string(key, std::string());
}

std::string ConfigNode::get_enum(std::string_view key, std::string def,
                                 std::initializer_list<std::string_view> allowed) {
  return get_enum(key, std::move(def), std::vector<std::string>(allowed.begin(), allowed.end()));
}

std::string ConfigNode::get_enum(std::string_view key, std::string def, const std::vector<std::string>& allowed) {
  const ConfigValue* v = lookup(key);
  if (v != nullptr) {
    const bool ok = v->kind == ConfigValue::Kind::kScalar &&
                    std::find(allowed.begin(), allowed.end(), v->scalar) != allowed.end();
    if (!ok) {
      std::string message = fmt::format("expected one of {}; got {}", join_names(allowed), describe(*v));
      if (v->kind == ConfigValue::Kind::kScalar) {
        const std::string suggestion = closest_match(v->scalar, allowed);
        if (!suggestion.empty()) message += fmt::format(" (did you mean '{}'?)", suggestion);
      }
      throw ConfigError(v->where, key_path(key), message);
    }
    def = v->scalar;
  }
  record(resolved_, key_path(key), def);
  return def;
}

Tick ConfigNode::get_time(std::string_view key, Tick def, Tick min, Tick max) {
  return resolve(kTime, lookup(key), key_path(key), def, min, max, resolved_);
}

std::uint64_t ConfigNode::get_frequency_hz(std::string_view key, std::uint64_t def, std::uint64_t min,
                                           std::uint64_t max) {
  return resolve(kFrequency, lookup(key), key_path(key), def, min, max, resolved_);
}

Bandwidth ConfigNode::get_bandwidth(std::string_view key, Bandwidth def, Bandwidth min, Bandwidth max) {
  return resolve(kBandwidth, lookup(key), key_path(key), def, min, max, resolved_);
}

std::uint64_t ConfigNode::get_bytes(std::string_view key, std::uint64_t def, std::uint64_t min,
                                    std::uint64_t max) {
  return resolve(kBytes, lookup(key), key_path(key), def, min, max, resolved_);
}

std::vector<std::uint64_t> ConfigNode::get_uint_list(std::string_view key, std::vector<std::uint64_t> def,
                                                     std::uint64_t min, std::uint64_t max) {
  const ConfigValue* v = lookup(key);
  if (v != nullptr) {
    if (v->kind != ConfigValue::Kind::kList) {
      throw ConfigError(v->where, key_path(key),
                        fmt::format("expected a list of unsigned integers, got {}", describe(*v)));
    }
    const ValueType<std::uint64_t> element{"an unsigned integer", parse_uint_or_size, kUint.show,
                                           kUint.json,            0,                 UINT64_MAX};
    def.clear();
    for (std::size_t i = 0; i < v->list.size(); ++i) {
      def.push_back(parse_scalar(element, v->list[i], fmt::format("{}[{}]", key_path(key), i), min, max));
    }
  }
  record(resolved_, key_path(key), def);
  return def;
}

ConfigNode ConfigNode::child(std::string_view key) {
  const ConfigValue* v = lookup(key);
  if (v == nullptr || v->kind == ConfigValue::Kind::kNull) {
    ConfigNode empty(nullptr, key_path(key), resolved_);
    empty.where_ = v != nullptr ? v->key_where : where_;
    return empty;
  }
  if (v->kind != ConfigValue::Kind::kMap) {
    throw ConfigError(v->key_where, key_path(key), fmt::format("expected a mapping, got {}", describe(*v)));
  }
  return ConfigNode(v, key_path(key), resolved_);
}

const ConfigValue* ConfigNode::raw(std::string_view key) {
  const ConfigValue* v = lookup(key);
  if (v != nullptr) record(resolved_, key_path(key), to_json(*v));
  return v;
}

std::vector<std::string> ConfigNode::keys() const {
  std::vector<std::string> names;
  if (value_ != nullptr) {
    for (const auto& entry : value_->map) names.push_back(entry.first);
  }
  return names;
}

void ConfigNode::finish() const {
  if (value_ == nullptr) return;
  for (const auto& [key, value] : value_->map) {
    if (std::find(known_->begin(), known_->end(), key) != known_->end()) continue;
    const std::string suggestion = closest_match(key, *known_);
    std::string message;
    if (!suggestion.empty()) {
      message = fmt::format("unknown key (did you mean '{}'?)", suggestion);
    } else if (known_->empty()) {
      message = "unknown key (no keys are expected here)";
    } else {
      message = fmt::format("unknown key (known keys: {})", join_names(*known_));
    }
    throw ConfigError(value.key_where, key_path(key), message);
  }
}

// ---------------------------------------------------------------------------
// Units

Tick parse_time(std::string_view text) {
  constexpr std::string_view kExpected = "a time like '500ns'";
  static constexpr std::pair<std::string_view, std::uint64_t> kUnits[] = {
      {"ps", 1}, {"ns", 1'000}, {"us", 1'000'000}, {"ms", 1'000'000'000}, {"s", 1'000'000'000'000}};
  const Quantity q = split_quantity(text, kExpected);
  if (q.unit.empty()) bad_value(kExpected, text, "missing unit: ps, ns, us, ms or s");
  for (const auto& [name, ps] : kUnits) {
    if (q.unit == name) return Tick(exact_value(q, ps, 1, kExpected, text, "picoseconds"));
  }
  bad_value(kExpected, text);
}

std::uint64_t parse_frequency_hz(std::string_view text) {
  constexpr std::string_view kExpected = "a frequency like '1.4GHz'";
  static constexpr std::pair<std::string_view, std::uint64_t> kUnits[] = {
      {"", 1},           {"Hz", 1},
      {"kHz", 1'000},    {"MHz", 1'000'000},
      {"GHz", 1'000'000'000}, {"THz", 1'000'000'000'000}};
  const Quantity q = split_quantity(text, kExpected);
  for (const auto& [name, hz] : kUnits) {
    if (iequals(q.unit, name)) return exact_value(q, hz, 1, kExpected, text, "Hz");
  }
  bad_value(kExpected, text);
}

Bandwidth parse_bandwidth(std::string_view text) {
  constexpr std::string_view kExpected = "a bandwidth like '75GB/s'";
  const Quantity q = split_quantity(text, kExpected);
  if (q.unit.empty()) {
    // 0 is unlimited in any unit; any other bare number is refused rather than read as
    // bytes per second (issue 45, D8: `bandwidth: 75` was 75 B/s).
    const Bandwidth bare(exact_value(q, 1, 1, kExpected, text, "bytes per second"));
    if (bare.bytes_per_second() != 0) bad_value(kExpected, text, "missing unit: B/s, KB/s, MB/s, GB/s or TB/s");
    return bare;
  }
  std::string_view unit = q.unit;
  if (unit.ends_with("/s") || unit.ends_with("ps")) {
    unit.remove_suffix(2);
  } else {
    bad_value(kExpected, text, "missing '/s'");
  }
  if (is_bare_prefix(unit)) bad_value(kExpected, text, ambiguous(number_text(text, q), unit, "/s"));
  if (unit.empty() || (unit.back() != 'B' && unit.back() != 'b')) bad_value(kExpected, text);
  const std::uint64_t bits_divisor = unit.back() == 'b' ? 8 : 1;  // Gb/s, Gbps: bits
  unit.remove_suffix(1);
  const std::optional<std::uint64_t> multiplier = prefix_multiplier(unit);
  if (!multiplier) bad_value(kExpected, text);
  return Bandwidth(exact_value(q, *multiplier, bits_divisor, kExpected, text, "bytes per second"));
}

std::uint64_t parse_bytes(std::string_view text) {
  constexpr std::string_view kExpected = "a size like '16MiB'";
  const Quantity q = split_quantity(text, kExpected);
  std::string_view unit = q.unit;
  if (is_bare_prefix(unit)) bad_value(kExpected, text, ambiguous(number_text(text, q), unit, ""));
  if (!unit.empty()) {
    if (unit.back() != 'B') bad_value(kExpected, text);
    unit.remove_suffix(1);
  }
  const std::optional<std::uint64_t> multiplier = prefix_multiplier(unit);
  if (!multiplier) bad_value(kExpected, text);
  return exact_value(q, *multiplier, 1, kExpected, text, "bytes");
}

std::string format_time(Tick t) {
  return format_scaled(t.ps(), {{1'000'000'000'000, "s"}, {1'000'000'000, "ms"}, {1'000'000, "us"},
                                {1'000, "ns"}, {1, "ps"}});
}

std::string format_frequency(std::uint64_t hz) {
  return format_scaled(hz, {{1'000'000'000'000, "THz"}, {1'000'000'000, "GHz"}, {1'000'000, "MHz"},
                            {1'000, "kHz"}, {1, "Hz"}});
}

std::string format_bandwidth(Bandwidth bw) { return format_prefixed(bw.bytes_per_second(), "B/s"); }

std::string format_bytes(std::uint64_t bytes) { return format_prefixed(bytes, "B"); }

// ---------------------------------------------------------------------------
// Did-you-mean

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];  // row[i-1][j-1]
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  const std::string* best = nullptr;
  std::size_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    const std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) best = &candidate, best_distance = d;
  }
  return best != nullptr ? *best : std::string();
}

namespace {
void append_canonical(const ConfigValue& v, const std::vector<std::string>& except, std::string& out) {
  switch (v.kind) {
    case ConfigValue::Kind::kNull: out += "~"; return;
    case ConfigValue::Kind::kScalar:
      out += '"';
      for (const char c : v.scalar) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
      }
      out += '"';
      return;
    case ConfigValue::Kind::kList:
      out += '[';
      for (const ConfigValue& e : v.list) {
        append_canonical(e, {}, out);
        out += ',';
      }
      out += ']';
      return;
    case ConfigValue::Kind::kMap: {
      std::vector<const std::pair<std::string, ConfigValue>*> entries;
      for (const auto& e : v.map)
        if (std::find(except.begin(), except.end(), e.first) == except.end()) entries.push_back(&e);
      std::sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (const auto* e : entries) {
        out += e->first;
        out += ':';
        append_canonical(e->second, {}, out);
        out += ',';
      }
      out += '}';
      return;
    }
  }
}
}  // namespace

std::string canonical_text(const ConfigValue& value, const std::vector<std::string>& except) {
  std::string out;
  append_canonical(value, except, out);
  return out;
}

}  // namespace t3sim
