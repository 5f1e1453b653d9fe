#include "cli/sweep.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/output.h"

namespace t3sim {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kRunConfig = "run.config";
constexpr std::string_view kRunMode = "run.mode";
constexpr std::string_view kRunSeed = "run.seed";

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

std::optional<std::uint64_t> parse_unsigned(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
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

// --- CSV ----------------------------------------------------------------------------

constexpr std::size_t kFixedLeadingColumns = 1;  // point
constexpr std::size_t kFixedTrailingColumns = 2;  // status, error

std::optional<PointStatus> status_from_name(std::string_view name) {
  for (PointStatus status : {PointStatus::kOk, PointStatus::kUserError, PointStatus::kSimError}) {
    if (status_name(status) == name) return status;
  }
  return std::nullopt;
}

std::vector<std::string> header_of(const ResultsTable& table) {
  std::vector<std::string> header{"point"};
  header.insert(header.end(), table.parameter_keys.begin(), table.parameter_keys.end());
  header.push_back("status");
  header.push_back("error");
  header.insert(header.end(), table.metric_names.begin(), table.metric_names.end());
  return header;
}

std::vector<std::string> cells_of(const ResultsTable::Row& row) {
  std::vector<std::string> cells{std::to_string(row.index)};
  cells.insert(cells.end(), row.values.begin(), row.values.end());
  cells.emplace_back(status_name(row.status));
  cells.push_back(row.error);
  cells.insert(cells.end(), row.metrics.begin(), row.metrics.end());
  return cells;
}

std::string table_text(const ResultsTable& table) {
  std::string text = csv_line(header_of(table));
  for (const ResultsTable::Row& row : table.rows) text += csv_line(cells_of(row));
  return text;
}

std::string read_whole_file(const fs::path& path) {
  // A CSV is a regular file: a device (/dev/zero) would be read without end (issue 21, C07).
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))
    throw UserError(fmt::format("'{}' is not a regular file (expected a sweep CSV)", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("cannot read '{}': {}", path.string(), std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct ParsedResults {
  ResultsTable table;
  std::size_t complete_bytes = 0;
};

// nullopt when `text` has no complete header line (an empty file, or one cut while
// its first line was being written).
std::optional<ParsedResults> parse_results(std::string_view text, const std::string& name) {
  CsvText csv = parse_csv(text);
  if (csv.records.empty()) return std::nullopt;
  ParsedResults parsed;
  parsed.complete_bytes = csv.complete_bytes;
  ResultsTable& table = parsed.table;
  table.dropped_torn_line = csv.complete_bytes < text.size();

  const std::vector<std::string>& header = csv.records.front();
  const auto status_column = std::find(header.begin(), header.end(), "status");
  if (header.empty() || header.front() != "point" || status_column == header.end() ||
      status_column + 1 == header.end() || *(status_column + 1) != "error") {
    throw UserError(fmt::format(
        "{}:1: not a sweep results file: expected the header point,<parameters...>,status,error,"
        "<metrics...>, found '{}'",
        name, join(header, ",")));
  }
  table.parameter_keys.assign(header.begin() + kFixedLeadingColumns, status_column);
  table.metric_names.assign(status_column + kFixedTrailingColumns, header.end());

  const std::size_t parameters = table.parameter_keys.size();
  for (std::size_t r = 1; r < csv.records.size(); ++r) {
    const std::vector<std::string>& cells = csv.records[r];
    const std::size_t line = csv.lines[r];
    if (cells.size() != header.size()) {
      throw UserError(fmt::format("{}:{}: expected {} cells as in the header, found {}", name, line,
                                  header.size(), cells.size()));
    }
    ResultsTable::Row row;
    const auto index = parse_unsigned(cells[0]);
    if (!index) throw UserError(fmt::format("{}:{}: bad point index '{}'", name, line, cells[0]));
    row.index = static_cast<std::size_t>(*index);
    row.values.assign(cells.begin() + kFixedLeadingColumns,
                      cells.begin() + static_cast<std::ptrdiff_t>(kFixedLeadingColumns + parameters));
    const std::string& status = cells[kFixedLeadingColumns + parameters];
    const auto parsed_status = status_from_name(status);
    if (!parsed_status) {
      throw UserError(fmt::format("{}:{}: bad status '{}' (expected ok, user_error or sim_error)",
                                  name, line, status));
    }
    row.status = *parsed_status;
    row.error = cells[kFixedLeadingColumns + parameters + 1];
    row.metrics.assign(cells.begin() + static_cast<std::ptrdiff_t>(header.size() -
                                                                   table.metric_names.size()),
                       cells.end());
    table.rows.push_back(std::move(row));
  }
  return parsed;
}

// Puts `metrics` into `row.metrics` in the order of `metric_names`, adding names not
// seen before to its end. Returns whether names were added.
bool place_metrics(const std::vector<std::pair<std::string, std::string>>& metrics,
                   std::vector<std::string>& metric_names, ResultsTable::Row& row) {
  bool added = false;
  row.metrics.assign(metric_names.size(), "");
  for (const auto& [name, value] : metrics) {
    auto it = std::find(metric_names.begin(), metric_names.end(), name);
    if (it == metric_names.end()) {
      metric_names.push_back(name);
      row.metrics.push_back(value);
      added = true;
    } else {
      row.metrics[static_cast<std::size_t>(it - metric_names.begin())] = value;
    }
  }
  return added;
}

void pad_metrics(ResultsTable& table) {
  for (ResultsTable::Row& row : table.rows) row.metrics.resize(table.metric_names.size());
}

// The sweep's output CSV, opened for appending. Every append is one write(2) of a
// whole line followed by fsync, so a crash leaves at most a torn last line, which the
// next run drops. Thread-safe.
class ResultsFile {
 public:
  ResultsFile(fs::path path, std::vector<std::string> parameter_keys, bool retry_errors)
      : path_(std::move(path)) {
    table_.parameter_keys = std::move(parameter_keys);
    // -o names the CSV file; anything else there (a directory, a device) is bad input.
    std::error_code ec;
    if (fs::exists(path_, ec) && !fs::is_regular_file(path_, ec))
      throw UserError(fmt::format("'{}' is not a regular file: -o names the CSV file the sweep writes",
                                  path_.string()));
    if (fs::exists(path_)) load_existing(retry_errors);
    open_for_append();
  }
  ~ResultsFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;

  const ResultsTable& table() const { return table_; }

  void append(ResultsTable::Row row, const std::vector<std::pair<std::string, std::string>>& metrics) {
    std::lock_guard lock(mutex_);
    const bool new_metrics = place_metrics(metrics, table_.metric_names, row);
    table_.rows.push_back(std::move(row));
    if (new_metrics && header_on_disk_) {
      // The header gains columns: rewrite the whole file (rare: once per new metric set).
      pad_metrics(table_);
      ::close(fd_);
      fd_ = -1;
      write_file_atomically(path_, table_text(table_));
      open_for_append();
      return;
    }
    pad_metrics(table_);
    std::string text;
    if (!header_on_disk_) text = csv_line(header_of(table_));
    text += csv_line(cells_of(table_.rows.back()));
    write_durably(text);
    header_on_disk_ = true;
  }

  // A sweep whose rows were all skipped (or that had no points) still leaves a CSV.
  void ensure_header() {
    std::lock_guard lock(mutex_);
    if (!header_on_disk_) write_durably(csv_line(header_of(table_)));
    header_on_disk_ = true;
  }

 private:
  void load_existing(bool retry_errors) {
    const std::string text = read_whole_file(path_);
    std::optional<ParsedResults> parsed = parse_results(text, path_.string());
    if (!parsed) {  // empty, or only a torn header: start afresh
      fs::resize_file(path_, 0);
      return;
    }
    if (parsed->table.parameter_keys != table_.parameter_keys) {
      throw UserError(fmt::format(
          "'{}' holds results of other parameters ({}) than this sweep's ({}); resume needs the "
          "same parameters in the same order: write to another file with -o",
          path_.string(), join(parsed->table.parameter_keys, ", "), join(table_.parameter_keys, ", ")));
    }
    table_ = std::move(parsed->table);
    header_on_disk_ = true;
    if (table_.dropped_torn_line) fs::resize_file(path_, parsed->complete_bytes);
    if (retry_errors) {
      const auto failed = std::erase_if(
          table_.rows, [](const ResultsTable::Row& row) { return row.status != PointStatus::kOk; });
      if (failed > 0) write_file_atomically(path_, table_text(table_));
    }
  }

  void open_for_append() {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw UserError(fmt::format("cannot open '{}': {}", path_.string(), std::strerror(errno)));
  }

  void write_durably(std::string_view text) {
    while (!text.empty()) {
      const ssize_t written = ::write(fd_, text.data(), text.size());
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) {
        throw UserError(fmt::format("cannot write '{}': {}", path_.string(), std::strerror(errno)));
      }
      text.remove_prefix(static_cast<std::size_t>(written));
    }
    ::fsync(fd_);
  }

  fs::path path_;
  ResultsTable table_;
  bool header_on_disk_ = false;
  int fd_ = -1;
  std::mutex mutex_;
};

// Progress on stderr. Called under one lock by the workers.
class ProgressReporter {
 public:
  ProgressReporter(std::FILE* out, ProgressStyle style, std::size_t total, std::size_t done,
                   std::size_t failed)
      : out_(style == ProgressStyle::kNone ? nullptr : out),
        style_(style),
        total_(total),
        done_(done),
        failed_(failed),
        start_(std::chrono::steady_clock::now()) {
    if (out_ && style_ == ProgressStyle::kInPlace) draw();
  }

  void point_finished(const std::string& key, const ResultsTable::Row& row) {
    ++done_;
    ++finished_here_;
    if (row.status != PointStatus::kOk) ++failed_;
    if (!out_) return;
    std::string note;
    if (row.status != PointStatus::kOk) {
      const std::string_view first_line = std::string_view(row.error).substr(0, row.error.find('\n'));
      note = fmt::format("point {} ({}) failed: {}: {}", row.index, key, status_name(row.status),
                         first_line);
    }
    if (style_ == ProgressStyle::kInPlace) {
      if (!note.empty()) std::fprintf(out_, "\r\033[K%s\n", note.c_str());
      draw();
    } else {
      std::fprintf(out_, "%s  [point %zu %s: %s]\n", bar().c_str(), row.index, key.c_str(),
                   std::string(status_name(row.status)).c_str());
      if (!note.empty()) std::fprintf(out_, "%s\n", note.c_str());
    }
    std::fflush(out_);
  }

  void finish() {
    if (out_ && style_ == ProgressStyle::kInPlace) {
      std::fputc('\n', out_);
      std::fflush(out_);
    }
  }

 private:
  std::string bar() const {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double eta = finished_here_ == 0
                           ? -1.0
                           : elapsed / static_cast<double>(finished_here_) *
                                 static_cast<double>(total_ - done_);
    return format_progress(done_, total_, failed_, elapsed, eta);
  }
  void draw() {
    std::fprintf(out_, "\r\033[K%s", bar().c_str());
    std::fflush(out_);
  }

  std::FILE* out_;
  ProgressStyle style_;
  std::size_t total_;
  std::size_t done_;      // includes points already in the CSV
  std::size_t failed_;
  std::size_t finished_here_ = 0;  // points run by this process: the rate for the ETA
  std::chrono::steady_clock::time_point start_;
};

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

// --- CSV ------------------------------------------------------------------------------

std::string_view status_name(PointStatus status) {
  switch (status) {
    case PointStatus::kOk:
      return "ok";
    case PointStatus::kUserError:
      return "user_error";
    case PointStatus::kSimError:
      return "sim_error";
  }
  return "?";
}

std::string csv_quote(std::string_view cell) {
  if (cell.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(cell);
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += ',';
    line += csv_quote(cells[i]);
  }
  return line + "\n";
}

CsvText parse_csv(std::string_view text) {
  CsvText out;
  std::vector<std::string> record;
  std::string cell;
  bool in_quotes = false;
  std::size_t line = 1;
  std::size_t record_line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (in_quotes) {
      if (c != '"') {
        cell += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else {
        in_quotes = false;
      }
      continue;
    }
    if (c == '"') {
      in_quotes = true;
    } else if (c == ',') {
      record.push_back(std::move(cell));
      cell.clear();
    } else if (c == '\n') {
      record.push_back(std::move(cell));
      cell.clear();
      const bool blank = record.size() == 1 && record.front().empty();
      if (!blank) {
        out.records.push_back(std::move(record));
        out.lines.push_back(record_line);
      }
      record.clear();
      out.complete_bytes = i + 1;
      record_line = line;
    } else if (c != '\r' || i + 1 >= text.size() || text[i + 1] != '\n') {
      cell += c;  // a CR is dropped only as part of a CRLF line end
    }
  }
  return out;
}

ResultsTable read_results(const fs::path& path) {
  if (!fs::exists(path)) throw UserError(fmt::format("'{}': no such file", path.string()));
  std::optional<ParsedResults> parsed = parse_results(read_whole_file(path), path.string());
  if (!parsed) throw UserError(fmt::format("'{}': empty, no header line", path.string()));
  return std::move(parsed->table);
}

void write_results_atomically(const fs::path& path, const ResultsTable& table) {
  write_file_atomically(path, table_text(table));
}

// --- Running --------------------------------------------------------------------------

std::string format_duration(double seconds) {
  if (seconds < 0) return "--";
  const auto total = static_cast<std::uint64_t>(seconds + 0.5);
  const std::uint64_t hours = total / 3600;
  const std::uint64_t minutes = total / 60 % 60;
  const std::uint64_t secs = total % 60;
  if (hours > 0) return fmt::format("{}h{:02}m{:02}s", hours, minutes, secs);
  if (minutes > 0) return fmt::format("{}m{:02}s", minutes, secs);
  return fmt::format("{}s", secs);
}

std::string format_progress(std::size_t done, std::size_t total, std::size_t failed,
                            double elapsed_seconds, double eta_seconds) {
  constexpr std::size_t kWidth = 20;
  std::string bar(kWidth, ' ');
  if (total == 0 || done >= total) {
    bar.assign(kWidth, '=');
  } else {
    const std::size_t filled = done * kWidth / total;
    std::fill_n(bar.begin(), filled, '=');
    bar[filled] = '>';
  }
  return fmt::format("[{}] {}/{} points, {} failed, elapsed {}, ETA {}", bar, done, total, failed,
                     format_duration(elapsed_seconds), format_duration(eta_seconds));
}

std::string SweepSummary::line(const fs::path& output) const {
  std::string text = fmt::format("{} points: {} ok, {} failed, {} skipped (already done)", total, ok,
                                 failed, skipped);
  if (not_run > 0) text += fmt::format(", {} not run (--fail-fast)", not_run);
  return text + fmt::format("; results in {}", output.string());
}

SweepValidation validate_sweep(const SweepSpec& spec, const Shard& shard, const SweepRunner& runner) {
  if (shard.count == 0 || shard.index >= shard.count)
    throw UserError(fmt::format("--shard: expected i/n with 0 <= i < n, got '{}/{}'", shard.index, shard.count));
  SweepValidation v;
  for (const SweepPoint& point : enumerate_points(spec)) {
    if (!shard.contains(point)) continue;
    ++v.points;
    try {
      RunRequest request = make_run_request(spec, point);
      request.validate_only = true;
      (void)runner(request);
    } catch (const UserError& e) {
      v.errors.push_back(fmt::format("point {} ({}): {}", point.index, point_key(spec, point), e.what()));
    } catch (const std::invalid_argument& e) {  // a parameter combination a model rejects
      v.errors.push_back(fmt::format("point {} ({}): {}", point.index, point_key(spec, point), e.what()));
    }
  }
  return v;
}

SweepSummary run_sweep(const SweepSpec& spec, const SweepOptions& options,
                       const SweepRunner& runner) {
  if (options.shard.count == 0 || options.shard.index >= options.shard.count) {
    throw UserError(fmt::format("--shard: expected i/n with 0 <= i < n, got '{}/{}'",
                                options.shard.index, options.shard.count));
  }
  std::vector<std::string> parameter_keys;
  for (const SweepParameter& parameter : spec.parameters) parameter_keys.push_back(parameter.key);
  ResultsFile results(options.output, parameter_keys, options.retry_errors);

  // What the CSV already holds, by parameter values (an ok row wins over a failed one).
  std::map<std::vector<std::string>, PointStatus> done;
  for (const ResultsTable::Row& row : results.table().rows) {
    auto [it, inserted] = done.emplace(row.values, row.status);
    if (!inserted && row.status == PointStatus::kOk) it->second = PointStatus::kOk;
  }

  SweepSummary summary;
  std::vector<SweepPoint> todo;
  for (SweepPoint& point : enumerate_points(spec)) {
    if (!options.shard.contains(point)) continue;
    ++summary.total;
    const auto it = done.find(point.values);
    if (it == done.end()) {
      todo.push_back(std::move(point));
      continue;
    }
    ++summary.skipped;
    ++(it->second == PointStatus::kOk ? summary.ok : summary.failed);
  }

  ProgressReporter progress(options.progress, options.progress_style, summary.total,
                            summary.skipped, summary.failed);
  std::mutex mutex;  // guards summary, progress and first_exception
  std::exception_ptr first_exception;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};

  const auto work = [&] {
    try {
      while (!stop) {
        const std::size_t i = next++;
        if (i >= todo.size()) return;
        const SweepPoint& point = todo[i];
        ResultsTable::Row row{point.index, point.values, PointStatus::kOk, "", {}};
        std::vector<std::pair<std::string, std::string>> metrics;
        {
          std::lock_guard lock(mutex);
          ++summary.runs;
        }
        try {
          RunRequest request = make_run_request(spec, point);
          // Points of one case share their isolated runs (c3: c3_base, c3_sp and the
          // CU-partitioned points), kept beside the CSV for this sweep and the next.
          request.isolated_cache = options.output.parent_path() / "isolated-cache";
          metrics = runner(request).metrics;
        } catch (const UserError& e) {
          row.status = PointStatus::kUserError;
          row.error = e.what();
        } catch (const SimulationError& e) {
          row.status = PointStatus::kSimError;
          row.error = e.what();
        } catch (const std::invalid_argument& e) {
          // Models reject parameter combinations only they can judge this way (as in
          // `t3sim run`, where it is a usage error).
          row.status = PointStatus::kUserError;
          row.error = e.what();
        } catch (const std::bad_alloc&) {
          // A point too large for this host fails alone; the sweep goes on (as `t3sim run`).
          row.status = PointStatus::kSimError;
          row.error = "out of host memory while setting up the run";
        } catch (const std::exception& e) {
          row.status = PointStatus::kSimError;
          row.error = fmt::format("internal error: {}", e.what());
        }
        results.append(row, metrics);
        std::lock_guard lock(mutex);
        ++(row.status == PointStatus::kOk ? summary.ok : summary.failed);
        progress.point_finished(point_key(spec, point), row);
        if (row.status != PointStatus::kOk && options.fail_fast) stop = true;
      }
    } catch (...) {
      // Not a point failure (a bug, a full disk): stop the sweep, keep finished rows.
      stop = true;
      std::lock_guard lock(mutex);
      if (!first_exception) first_exception = std::current_exception();
    }
  };

  const unsigned jobs = options.jobs > 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  {
    std::vector<std::jthread> workers;
    for (std::size_t w = 0; w < std::min<std::size_t>(jobs, todo.size()); ++w) workers.emplace_back(work);
  }
  progress.finish();
  if (first_exception) std::rethrow_exception(first_exception);
  results.ensure_header();
  summary.not_run = summary.total - summary.ok - summary.failed;
  return summary;
}

// --- Merge ----------------------------------------------------------------------------

std::string MergeSummary::line(const fs::path& output) const {
  return fmt::format("merged {} files: {} points, {} duplicates dropped; results in {}", files, rows,
                     duplicates, output.string());
}

MergeSummary merge_results(const std::vector<fs::path>& inputs, const fs::path& output) {
  if (inputs.empty()) throw UserError("merge: no input files");
  ResultsTable merged;
  std::map<std::vector<std::string>, std::size_t> row_of_point;  // into merged.rows
  MergeSummary summary;
  for (const fs::path& input : inputs) {
    ResultsTable table = read_results(input);
    if (summary.files == 0) {
      merged.parameter_keys = table.parameter_keys;
    } else if (table.parameter_keys != merged.parameter_keys) {
      throw UserError(fmt::format(
          "'{}': its parameter columns ({}) differ from those of '{}' ({}): only results of the "
          "same sweep can be merged",
          input.string(), join(table.parameter_keys, ", "), inputs.front().string(),
          join(merged.parameter_keys, ", ")));
    }
    ++summary.files;
    for (ResultsTable::Row& row : table.rows) {
      std::vector<std::pair<std::string, std::string>> metrics;
      for (std::size_t m = 0; m < table.metric_names.size(); ++m) {
        if (!row.metrics[m].empty()) metrics.emplace_back(table.metric_names[m], row.metrics[m]);
      }
      place_metrics(metrics, merged.metric_names, row);
      const auto [it, inserted] = row_of_point.emplace(row.values, merged.rows.size());
      if (inserted) {
        merged.rows.push_back(std::move(row));
        continue;
      }
      ++summary.duplicates;
      ResultsTable::Row& kept = merged.rows[it->second];
      if (kept.status != PointStatus::kOk && row.status == PointStatus::kOk) kept = std::move(row);
    }
  }
  pad_metrics(merged);
  std::sort(merged.rows.begin(), merged.rows.end(),
            [](const ResultsTable::Row& a, const ResultsTable::Row& b) {
              return std::tie(a.index, a.values) < std::tie(b.index, b.values);
            });
  summary.rows = merged.rows.size();
  write_results_atomically(output, merged);
  return summary;
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
