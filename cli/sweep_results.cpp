// The sweep's results CSV: its cells and lines, reading and writing a table, the file a
// running sweep appends to (sweep_results_file.h), and merging shards.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "cli/sweep.h"
#include "cli/sweep_results_file.h"
#include "cli/sweep_text.h"
#include "sim/output.h"

namespace t3sim {

namespace fs = std::filesystem;

namespace {

using sweep_text::join;
using sweep_text::parse_unsigned;


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

}  // namespace

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

// --- The file a running sweep appends to ------------------------------------------------

ResultsFile::ResultsFile(fs::path path, std::vector<std::string> parameter_keys, bool retry_errors)
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

ResultsFile::~ResultsFile() {
  if (fd_ >= 0) ::close(fd_);
}

void ResultsFile::append(ResultsTable::Row row, const std::vector<std::pair<std::string, std::string>>& metrics) {
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

void ResultsFile::ensure_header() {
  std::lock_guard lock(mutex_);
  if (!header_on_disk_) write_durably(csv_line(header_of(table_)));
  header_on_disk_ = true;
}

void ResultsFile::load_existing(bool retry_errors) {
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

void ResultsFile::open_for_append() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw UserError(fmt::format("cannot open '{}': {}", path_.string(), std::strerror(errno)));
}

void ResultsFile::write_durably(std::string_view text) {
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

}  // namespace t3sim
